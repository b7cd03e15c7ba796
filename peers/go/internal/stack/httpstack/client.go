package httpstack

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// ALPN identifiers of the two protocols.
const (
	ALPNHTTP1 = "http/1.1"
	ALPNHTTP2 = "h2"
)

// dialer hands net/http's Transport the connection opened while connecting, then opens new ones
// (TLS included, unless plaintext) whenever the Transport needs one, registering each socket for
// the transport statistics.
type dialer struct {
	settings stack.ClientSettings
	sockets  *transport.TCPSockets
	mu       sync.Mutex
	opened   []net.Conn // dialled, not yet handed out
}

// open dials one connection and checks that the server agreed to the stack's protocol (with
// TLS; in plaintext there is no ALPN, and HTTP/2 is spoken with prior knowledge).
func (d *dialer) open(ctx context.Context) (net.Conn, *engine.OpError) {
	conn, err := stack.Dial(ctx, d.settings)
	if err != nil {
		return nil, err
	}
	if secured, ok := conn.(*tls.Conn); ok {
		want := d.settings.TLS.NextProtos[0]
		if protocol := secured.ConnectionState().NegotiatedProtocol; protocol != want {
			conn.Close()
			return nil, engine.Errorf("tls", "TLS handshake with %s negotiated ALPN %q, not %q: the server does not speak this stack's protocol", d.settings.Server, protocol, want)
		}
	}
	d.sockets.Register(stack.RawConn(conn))
	return conn, nil
}

// dial is the Transport's dialler (DialTLSContext with TLS, DialContext in plaintext).
func (d *dialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	d.mu.Lock()
	if n := len(d.opened); n > 0 {
		conn := d.opened[n-1]
		d.opened = d.opened[:n-1]
		d.mu.Unlock()
		return conn, nil
	}
	d.mu.Unlock()
	conn, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// newTransport is net/http's client transport over d: HTTP/2 (ForceAttemptHTTP2, which a
// Transport with its own dialler needs to speak HTTP/2 at all, as in rpc-bench; in plaintext
// Protocols with UnencryptedHTTP2 only, HTTP/2 with prior knowledge) with the 16 MiB windows,
// or HTTP/1.1 keeping exactly one connection (one per lane). No compression.
func newTransport(d *dialer, http2 bool) *http.Transport {
	t := &http.Transport{DisableCompression: true, ForceAttemptHTTP2: http2}
	if d.settings.Plaintext() {
		t.DialContext = d.dial
		t.Protocols = stack.Protocols(http2, true)
	} else {
		t.DialTLSContext = d.dial
	}
	if http2 {
		t.HTTP2 = stack.HTTP2Config()
	} else {
		t.MaxConnsPerHost, t.MaxIdleConnsPerHost = 1, 1
	}
	return t
}

// Client holds the Transports: one per lane (HTTP/1.1), or one for every lane (HTTP/2).
type Client struct {
	transports []*http.Transport
	dialers    []*dialer
	lanes      []engine.Lane
	sockets    *transport.TCPSockets
}

// Connect opens the connections, TLS included: one per lane concurrently for HTTP/1.1, one for
// HTTP/2, so a handshake failure surfaces here as `tls`. Plaintext URLs are http://.
func Connect(ctx context.Context, settings stack.ClientSettings, http2 bool) (*Client, *engine.OpError) {
	client := &Client{sockets: &transport.TCPSockets{}}
	connections := settings.Lanes
	if http2 {
		connections = 1
	}
	errs := make([]*engine.OpError, connections)
	client.dialers = make([]*dialer, connections)
	var group sync.WaitGroup
	for i := range connections {
		d := &dialer{settings: settings, sockets: client.sockets}
		client.dialers[i] = d
		group.Go(func() {
			conn, err := d.open(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			d.opened = append(d.opened, conn)
		})
	}
	group.Wait()
	for _, d := range client.dialers {
		client.transports = append(client.transports, newTransport(d, http2))
	}
	for _, err := range errs {
		if err != nil {
			client.Close()
			return nil, err
		}
	}
	scheme := "https://"
	if settings.Plaintext() {
		scheme = "http://"
	}
	url := scheme + settings.Server + Path
	for i := range settings.Lanes {
		t := client.transports[i%len(client.transports)]
		client.lanes = append(client.lanes, &lane{client: &http.Client{Transport: t}, url: url, workload: settings.Workload})
	}
	return client, nil
}

// Lanes are the lanes.
func (c *Client) Lanes() []engine.Lane { return c.lanes }

// Connections is one per lane (HTTP/1.1) or 1 (HTTP/2).
func (c *Client) Connections() uint32 { return uint32(len(c.transports)) }

// TransportProbe reads TCP_INFO of every socket opened.
func (c *Client) TransportProbe() transport.Probe { return c.sockets }

// Submitter is never asked for: the stack does not offer the backpressure model (args.Carried).
func (c *Client) Submitter(context.Context) engine.Submitter { return nil }

// Close closes every connection.
func (c *Client) Close() {
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
	for _, d := range c.dialers {
		d.mu.Lock()
		for _, conn := range d.opened {
			_ = conn.Close()
		}
		d.opened = nil
		d.mu.Unlock()
	}
}

type lane struct {
	client   *http.Client
	url      string
	workload workload.Workload
}

// post sends request and reads the whole answer: the HTTP status and the body.
func (l *lane) post(ctx context.Context, request *pb.Request) (int, []byte, *engine.OpError) {
	body, err := proto.Marshal(request)
	if err != nil {
		return 0, nil, engine.Errorf("internal", "cannot encode the request: %v", err)
	}
	post, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, engine.Errorf("internal", "cannot build the request: %v", err)
	}
	post.Header.Set("Content-Type", ContentType)
	answer, err := l.client.Do(post)
	if err != nil {
		return 0, nil, requestError(err)
	}
	defer answer.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(answer.Body, workload.MaxMessage+1))
	if err != nil {
		return 0, nil, requestError(err)
	}
	if len(reply) > workload.MaxMessage {
		return 0, nil, engine.Errorf("invalid", "the response body is above the maximum %d bytes", workload.MaxMessage)
	}
	return answer.StatusCode, reply, nil
}

func (l *lane) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	wl := l.workload
	status, body, err := l.post(ctx, workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, 0))
	if err != nil {
		return engine.Outcome{}, err
	}
	if status != http.StatusOK {
		return engine.Outcome{}, engine.Errorf("rpc", "the server answered HTTP %d: %s", status, strings.TrimSpace(string(body)))
	}
	response := &pb.Response{}
	if err := proto.Unmarshal(body, response); err != nil {
		return engine.Outcome{}, engine.Errorf("invalid", "undecodable response body: %v", err)
	}
	if err := workload.CheckResponse(response, wl.Kind, seq, wl.ResponseSize); err != nil {
		return engine.Outcome{}, engine.Errorf("invalid", "%v", err)
	}
	return engine.Outcome{Requests: 1, Responses: 1, RequestBytes: uint64(wl.RequestSize),
		ResponseBytes: workload.PayloadLen(response.Payload, response.Body)}, nil
}

// RawCall sends a conformance fault's malformed call (one request: a POST is unary) and
// reports how the server ended it: 200 is OK, 400 INVALID_ARGUMENT, 500 INTERNAL, any other
// status UNKNOWN (2).
func (l *lane) RawCall(ctx context.Context, _ workload.Shape, requests []*pb.Request) (fault.Verdict, *engine.OpError) {
	status, body, err := l.post(ctx, requests[0])
	if err != nil {
		return fault.Verdict{}, err
	}
	message := strings.TrimSpace(string(body))
	switch status {
	case http.StatusOK:
		return fault.Verdict{Code: fault.OK, Responses: 1}, nil
	case http.StatusBadRequest:
		return fault.Verdict{Code: fault.InvalidArgument, Message: message}, nil
	case http.StatusInternalServerError:
		return fault.Verdict{Code: fault.Internal, Message: message}, nil
	}
	return fault.Verdict{Code: 2, Message: fmt.Sprintf("HTTP %d: %s", status, message)}, nil
}

// requestError maps a failed request to a code of docs/peer-protocol.md "Error codes": the
// context's end (the drain bound) is `timeout`, a failed redial keeps its own code (`tls` or
// `connect`), anything else the Transport reports is a broken connection, `connect`.
func requestError(err error) *engine.OpError {
	var dialErr *engine.OpError
	switch {
	case errors.As(err, &dialErr):
		return dialErr
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return engine.Errorf("timeout", "HTTP request not answered in time: %v", err)
	}
	return engine.Errorf("connect", "the HTTP request failed: %v", err)
}
