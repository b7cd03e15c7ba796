package stack

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
)

// HTTP2Config is the HTTP/2 configuration of net/http's bundled HTTP/2 server and client
// (grpc-servehttp, http2-proto): 16 MiB stream and connection receive windows (net/http never
// probes the bandwidth-delay product, so they stay fixed) and, for servers, 10,000 concurrent
// streams. net/http's documentation still says windows must stay below 4 MiB; the code it
// bundles accepts up to 2^31 - 1 (h2_bundle.go, http2setConfigDefaults).
func HTTP2Config() *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:          MaxConcurrentStreams,
		MaxReceiveBufferPerConnection: FlowWindow,
		MaxReceiveBufferPerStream:     FlowWindow,
	}
}

// HTTPServer is a net/http server on a Listener speaking exactly one protocol: HTTP/1.1 (ALPN
// http/1.1) or HTTP/2 (ALPN h2); in plaintext HTTP/1.1 or HTTP/2 with prior knowledge (h2c).
type HTTPServer struct {
	server   *http.Server
	listener *Listener
	failed   chan error
}

// Protocols is the one protocol of an HTTP server or client: HTTP/1.1, HTTP/2 over TLS, or
// (plaintext) HTTP/2 with prior knowledge, net/http's UnencryptedHTTP2 (Go 1.24+: the
// connection starts with the HTTP/2 preface, no Upgrade, no ALPN).
func Protocols(http2, plaintext bool) *http.Protocols {
	protocols := &http.Protocols{}
	protocols.SetHTTP1(!http2)
	protocols.SetHTTP2(http2 && !plaintext)
	protocols.SetUnencryptedHTTP2(http2 && plaintext)
	return protocols
}

// ServeHTTP binds exactly address and serves handler over HTTP/2 (http2) or HTTP/1.1 until
// Stop. config's ALPN must name the same protocol; config nil is plaintext (--tls off).
func ServeHTTP(address string, config *tls.Config, handler http.Handler, http2 bool) (*HTTPServer, error) {
	listener, err := Listen(address, config)
	if err != nil {
		return nil, err
	}
	protocols := Protocols(http2, config == nil)
	server := &http.Server{
		Handler: handler,
		// net/http sets up HTTP/2 on Serve when its ALPN lists h2 (nil: plaintext), and then
		// writes to TLSConfig (NextProtos, PreferServerCipherSuites): a copy, so that it never
		// races the listener's handshakes, which read the original.
		TLSConfig: config.Clone(),
		Protocols: protocols,
		HTTP2:     HTTP2Config(),
		ErrorLog:  log.New(os.Stderr, "rpcarena-peer-go: net/http: ", 0),
	}
	s := &HTTPServer{server: server, listener: listener, failed: make(chan error, 1)}
	go func() {
		if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
			s.failed <- fmt.Errorf("the net/http server stopped: %w", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *HTTPServer) Addr() net.Addr { return s.listener.Addr() }

// Failed delivers an error if the server stops on its own.
func (s *HTTPServer) Failed() <-chan error { return s.failed }

// Stop closes the listener and every connection; requests in progress are cut.
func (s *HTTPServer) Stop() { _ = s.server.Close() }
