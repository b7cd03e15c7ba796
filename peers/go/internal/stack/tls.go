package stack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ALPN identifiers: h2 for grpc, rpcarena/1 for the native framing (quic and tcp).
const (
	ALPNH2     = "h2"
	ALPNNative = "rpcarena/1"
)

// base is the TLS configuration of every stack (docs/stacks.md, "TLS"): TLS 1.3 only, X25519
// only, no session tickets or resumption, no 0-RTT (crypto/tls never sends early data over TCP,
// and the QUIC stack never dials with 0-RTT nor accepts it). crypto/tls does not let the TLS
// 1.3 cipher suites be chosen: it prefers AES-128-GCM (a declared deviation).
func base(alpn string) *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		MaxVersion:       tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{tls.X25519},
		NextProtos:       []string{alpn},
	}
}

// ServerTLS loads --cert (PEM chain, leaf first) and --key (PEM PKCS#8).
func ServerTLS(certFile, keyFile, alpn string) (*tls.Config, error) {
	certificate, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--cert %s and --key %s do not form a usable PEM certificate chain and private key: %w", certFile, keyFile, err)
	}
	config := base(alpn)
	config.Certificates = []tls.Certificate{certificate}
	config.SessionTicketsDisabled = true
	return config, nil
}

// ClientTLS trusts only the certificates of --ca and verifies the server's certificate against
// serverName (a DNS name or an IP address matched against the SAN). No ClientSessionCache: no
// resumption.
func ClientTLS(caFile, serverName, alpn string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca %s: %w", caFile, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca %s: no PEM certificate found (expected -----BEGIN CERTIFICATE-----)", caFile)
	}
	config := base(alpn)
	config.RootCAs = roots
	config.ServerName = serverName
	return config, nil
}

// HandshakeMessage is the `tls` error message (the words rustls's peer uses, with Go's cause).
func HandshakeMessage(server, serverName string, cause error) string {
	return fmt.Sprintf("TLS handshake with %s failed (TLS certificate/handshake error): %v; check that --ca is the CA that signed the server certificate and that --server-name %s matches its subject alternative name", server, cause, serverName)
}
