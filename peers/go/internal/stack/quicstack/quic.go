// Package quicstack is the quic stack: the native framing on quic-go, one QUIC connection per
// client multiplexing every lane, one bidirectional stream per RPC (client: HEADER MESSAGE* END,
// then FIN; server: MESSAGE* STATUS, then FIN), as docs/stacks.md "Native framing" specifies.
package quicstack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/native"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// Transport settings (docs/stacks.md, "quic").
const (
	IdleTimeout = 30 * time.Second
	KeepAlive   = 10 * time.Second
)

// Config is the quic-go configuration of both ends. Receive windows are fixed at 16 MiB
// (initial = maximum, so quic-go's window auto-tuning has nothing to grow); quic-go has no send
// window. Unidirectional streams are refused. A client allows no server-initiated stream.
func Config(server bool) *quic.Config {
	incoming := int64(stack.MaxConcurrentStreams)
	if !server {
		incoming = -1
	}
	return &quic.Config{
		MaxIdleTimeout:                 IdleTimeout,
		KeepAlivePeriod:                KeepAlive,
		InitialStreamReceiveWindow:     stack.FlowWindow,
		MaxStreamReceiveWindow:         stack.FlowWindow,
		InitialConnectionReceiveWindow: stack.FlowWindow,
		MaxConnectionReceiveWindow:     stack.FlowWindow,
		MaxIncomingStreams:             incoming,
		MaxIncomingUniStreams:          -1,
	}
}

// isTLSError says whether a connection error is a TLS failure: QUIC carries TLS alerts as
// CRYPTO_ERROR transport codes 0x100 to 0x1ff, whichever side detected them.
func isTLSError(err error) bool {
	var transport *quic.TransportError
	return errors.As(err, &transport) && transport.ErrorCode.IsCryptoError()
}

// finishSend sends FIN. A server that read the whole request up to END may stop reading before
// the FIN arrives (STOP_SENDING, as quinn does when it drops a finished call's receive side):
// the request is complete, so that is not a failure of the call; its answer decides.
func finishSend(stream *quic.Stream) error {
	err := stream.Close()
	if err == nil {
		return nil
	}
	if stopped(context.Cause(stream.Context())) {
		return nil
	}
	return err
}

// stopped says whether cause is the peer's STOP_SENDING.
func stopped(cause error) bool {
	var streamErr *quic.StreamError
	return errors.As(cause, &streamErr) && streamErr.Remote
}

// streamConn is the native framing over one stream.
func streamConn(stream *quic.Stream, reader *native.Reader, writer *native.Writer) native.Conn {
	reader.Reset(stream)
	writer.Reset(stream)
	return native.Conn{
		R: reader, W: writer,
		FinishSend: func() error { return finishSend(stream) },
		OneCall:    true,
		Abort: func() {
			stream.CancelWrite(0)
			stream.CancelRead(0)
		},
	}
}

// ---------------------------------------------------------------------------------------------
// Client

// Client is one endpoint and one connection for every lane.
type Client struct {
	transport *quic.Transport
	conn      *quic.Conn
	workload  workload.Workload
	lanes     []engine.Lane
}

// Connect opens the connection: a UDP socket bound to the local address that routes to the
// server (never the wildcard), then the QUIC handshake (1-RTT; 0-RTT is never used).
func Connect(ctx context.Context, settings stack.ClientSettings) (*Client, *engine.OpError) {
	if settings.Plaintext() {
		return nil, engine.Errorf("config", "%s", NoPlaintext)
	}
	server, err := net.ResolveUDPAddr("udp", settings.Server)
	if err != nil {
		return nil, engine.Errorf("connect", "cannot resolve %s: %v", settings.Server, err)
	}
	local, err := stack.LocalAddressFor(server)
	if err != nil {
		return nil, engine.Errorf("connect", "%v", err)
	}
	udp, _, err := stack.ListenUDP(net.JoinHostPort(local.String(), "0"))
	if err != nil {
		return nil, engine.Errorf("connect", "cannot bind a UDP socket on %s: %v", local, err)
	}
	transport := &quic.Transport{Conn: udp}
	conn, err := transport.Dial(ctx, server, settings.TLS, Config(false))
	if err != nil {
		transport.Close()
		udp.Close()
		if isTLSError(err) {
			return nil, engine.Errorf("tls", "%s", stack.HandshakeMessage(settings.Server, settings.TLS.ServerName, err))
		}
		return nil, engine.Errorf("connect", "QUIC connection to %s failed: %v", settings.Server, err)
	}
	client := &Client{transport: transport, conn: conn, workload: settings.Workload}
	for range settings.Lanes {
		client.lanes = append(client.lanes, &lane{conn: conn, workload: settings.Workload})
	}
	return client, nil
}

// Lanes are handles on the shared connection.
func (c *Client) Lanes() []engine.Lane { return c.lanes }

// Connections is 1.
func (c *Client) Connections() uint32 { return 1 }

// TransportProbe reads quic-go's statistics of the connection.
func (c *Client) TransportProbe() transport.Probe { return transport.QUICConn{Conn: c.conn} }

// Close closes the connection with an application CONNECTION_CLOSE, code 0, reason "done".
func (c *Client) Close() {
	_ = c.conn.CloseWithError(0, "done")
	_ = c.transport.Close()
	_ = c.transport.Conn.Close()
}

// Submitter is ready when a stream opens, i.e. when the server's stream credit allows one more.
func (c *Client) Submitter(context.Context) engine.Submitter {
	return &submitter{conn: c.conn, workload: c.workload}
}

// lane opens a stream per call; the call borrows a reader and a writer from a pool, so idle
// lanes (a window of thousands) hold no buffers.
type lane struct {
	conn     *quic.Conn
	workload workload.Workload
}

// call runs f on a new stream with pooled buffers.
func (l *lane) call(ctx context.Context, f func(native.Conn) *engine.OpError) *engine.OpError {
	stream, err := l.conn.OpenStreamSync(ctx)
	if err != nil {
		return openError(err)
	}
	t := buffers.Get().(*ticket)
	defer buffers.Put(t)
	return f(prepared(ctx, stream, t.reader, t.writer))
}

// prepared sets the stream's deadline to the phase's (the drain bound) and frames it.
func prepared(ctx context.Context, stream *quic.Stream, reader *native.Reader, writer *native.Writer) native.Conn {
	if deadline, ok := ctx.Deadline(); ok {
		_ = stream.SetDeadline(deadline)
	}
	return streamConn(stream, reader, writer)
}

func openError(err error) *engine.OpError {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return engine.Errorf("timeout", "cannot open a QUIC stream: %v", err)
	}
	return engine.Errorf("connect", "cannot open a QUIC stream: %v", err)
}

func (l *lane) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	var outcome engine.Outcome
	err := l.call(ctx, func(c native.Conn) *engine.OpError {
		var err *engine.OpError
		outcome, err = native.Call(c, l.workload, seq)
		return err
	})
	return outcome, err
}

func (l *lane) Saturate(ctx context.Context, clock engine.Clock, sender *engine.StreamSender) *engine.OpError {
	if !sender.Open(clock.Now()) {
		return nil
	}
	return l.call(ctx, func(c native.Conn) *engine.OpError {
		return native.Saturate(c, l.workload, clock, sender)
	})
}

type submitter struct {
	conn     *quic.Conn
	workload workload.Workload
}

// buffers keeps the readers and writers of backpressure operations for reuse.
var buffers = sync.Pool{New: func() any { return &ticket{reader: native.NewReader(nil), writer: native.NewWriter(nil)} }}

type ticket struct {
	stream   *quic.Stream
	workload workload.Workload
	reader   *native.Reader
	writer   *native.Writer
}

func (s *submitter) Ready(ctx context.Context) (engine.Ticket, *engine.OpError) {
	stream, err := s.conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, openError(err)
	}
	t := buffers.Get().(*ticket)
	t.stream, t.workload = stream, s.workload
	return t, nil
}

func (t *ticket) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	defer buffers.Put(t)
	return native.Call(prepared(ctx, t.stream, t.reader, t.writer), t.workload, seq)
}

func (t *ticket) Abandon() {
	t.stream.CancelWrite(0)
	t.stream.CancelRead(0)
	buffers.Put(t)
}

// ---------------------------------------------------------------------------------------------
// Server

// Server serves calls on every stream of every connection.
type Server struct {
	transport *quic.Transport
	listener  *quic.Listener
	counters  *stack.Counters
	failed    chan error
	stop      context.CancelFunc
	ctx       context.Context
	mu        sync.Mutex
	conns     map[*quic.Conn]struct{}
	group     sync.WaitGroup
}

// NoPlaintext is why the quic stack refuses --tls off.
const NoPlaintext = "QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic"

// Serve binds exactly address and serves until Stop.
func Serve(address string, config *tls.Config, counters *stack.Counters) (*Server, error) {
	if config == nil {
		return nil, errors.New(NoPlaintext)
	}
	udp, _, err := stack.ListenUDP(address)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: cannot bind UDP: %w", address, err)
	}
	transport := &quic.Transport{Conn: udp}
	listener, err := transport.Listen(config, Config(true))
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("cannot start a QUIC listener on %s: %w", address, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{transport: transport, listener: listener, counters: counters, failed: make(chan error, 1),
		stop: stop, ctx: ctx, conns: map[*quic.Conn]struct{}{}}
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	for {
		conn, err := s.listener.Accept(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				s.failed <- fmt.Errorf("the QUIC listener stopped accepting: %w", err)
			}
			return
		}
		s.mu.Lock()
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		s.group.Go(func() { s.serveConn(conn) })
	}
}

func (s *Server) serveConn(conn *quic.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	for {
		stream, err := conn.AcceptStream(s.ctx)
		if err != nil {
			var app *quic.ApplicationError
			if s.ctx.Err() == nil && !errors.As(err, &app) {
				fmt.Fprintf(os.Stderr, "rpcarena-peer-go: QUIC connection from %s ended: %v\n", conn.RemoteAddr(), err)
			}
			return
		}
		go s.serveStream(stream)
	}
}

func (s *Server) serveStream(stream *quic.Stream) {
	t := buffers.Get().(*ticket)
	defer buffers.Put(t)
	conn := streamConn(stream, t.reader, t.writer)
	if native.ServeCall(conn, s.counters) == native.Again {
		// Read the client's FIN (it follows END) so the stream closes without STOP_SENDING.
		_ = stream.SetReadDeadline(time.Now().Add(stack.CloseGrace))
		if _, _, err := conn.R.Next(); err == nil {
			stream.CancelRead(0) // data after END: not a well-formed call
		}
		return
	}
	// The call's framing or transport broke: stop reading (the STATUS, if sent, stays sent).
	stream.CancelRead(0)
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Failed delivers an error if the listener stops on its own.
func (s *Server) Failed() <-chan error { return s.failed }

// Stop closes every connection with CONNECTION_CLOSE code 0, reason "shutdown", and the
// listener.
func (s *Server) Stop() {
	s.stop()
	s.mu.Lock()
	for conn := range s.conns {
		_ = conn.CloseWithError(0, "shutdown")
	}
	s.mu.Unlock()
	_ = s.listener.Close()
	_ = s.transport.Close()
	_ = s.transport.Conn.Close()
}
