// Package tcpstack is the tcp stack: the native framing over TLS 1.3 over TCP, one connection
// per lane opened concurrently at start, calls one after another on a connection (after STATUS
// the connection carries the next call).
package tcpstack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/native"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// DialTLS opens one tuned TCP connection and completes the TLS handshake; a handshake failure
// is `tls`, a TCP failure `connect`.
func DialTLS(ctx context.Context, settings stack.ClientSettings) (*tls.Conn, *engine.OpError) {
	raw, err := stack.DialTCP(ctx, settings.Server)
	if err != nil {
		return nil, engine.Errorf("connect", "TCP connection to %s failed: %v", settings.Server, err)
	}
	conn := tls.Client(raw, settings.TLS)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, engine.Errorf("tls", "%s", stack.HandshakeMessage(settings.Server, settings.TLS.ServerName, err))
	}
	return conn, nil
}

// Client holds one connection per lane.
type Client struct {
	lanes   []*lane
	sockets *transport.TCPSockets
}

// Connect opens every lane's connection concurrently.
func Connect(ctx context.Context, settings stack.ClientSettings) (*Client, *engine.OpError) {
	lanes := make([]*lane, settings.Lanes)
	errs := make([]*engine.OpError, settings.Lanes)
	sockets := &transport.TCPSockets{}
	var group sync.WaitGroup
	for i := range lanes {
		group.Go(func() {
			conn, err := DialTLS(ctx, settings)
			if err != nil {
				errs[i] = err
				return
			}
			sockets.Register(conn.NetConn())
			lanes[i] = &lane{conn: conn, workload: settings.Workload,
				reader: native.NewReader(conn), writer: native.NewWriter(conn)}
		})
	}
	group.Wait()
	client := &Client{sockets: sockets}
	for _, l := range lanes {
		if l != nil {
			client.lanes = append(client.lanes, l)
		}
	}
	for _, err := range errs {
		if err != nil {
			client.Close()
			return nil, err
		}
	}
	return client, nil
}

// Lanes are the connections.
func (c *Client) Lanes() []engine.Lane {
	lanes := make([]engine.Lane, len(c.lanes))
	for i, l := range c.lanes {
		lanes[i] = l
	}
	return lanes
}

// Connections is one per lane.
func (c *Client) Connections() uint32 { return uint32(len(c.lanes)) }

// TransportProbe reads TCP_INFO of every lane's socket.
func (c *Client) TransportProbe() transport.Probe { return c.sockets }

// Close sends TLS close_notify and closes every connection.
func (c *Client) Close() {
	var group sync.WaitGroup
	for _, l := range c.lanes {
		group.Go(func() {
			_ = l.conn.SetDeadline(time.Now().Add(stack.CloseGrace))
			_ = l.conn.Close()
		})
	}
	group.Wait()
}

// Submitter is a pool of the lanes' connections: ready when one is free.
func (c *Client) Submitter(context.Context) engine.Submitter {
	free := make(chan *lane, len(c.lanes))
	for _, l := range c.lanes {
		free <- l
	}
	return &pool{free: free}
}

type lane struct {
	conn     *tls.Conn
	workload workload.Workload
	reader   *native.Reader
	writer   *native.Writer
	deadline time.Time
}

// prepare sets the connection's deadline to the phase's (the drain bound), once per phase.
func (l *lane) prepare(ctx context.Context) native.Conn {
	deadline, _ := ctx.Deadline()
	if !deadline.Equal(l.deadline) {
		_ = l.conn.SetDeadline(deadline)
		l.deadline = deadline
	}
	return native.Conn{R: l.reader, W: l.writer}
}

func (l *lane) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	return native.Call(l.prepare(ctx), l.workload, seq)
}

func (l *lane) Saturate(ctx context.Context, clock engine.Clock, sender *engine.StreamSender) *engine.OpError {
	if !sender.Open(clock.Now()) {
		return nil
	}
	return native.Saturate(l.prepare(ctx), l.workload, clock, sender)
}

type pool struct{ free chan *lane }

type ticket struct {
	lane *lane
	pool *pool
}

func (p *pool) Ready(ctx context.Context) (engine.Ticket, *engine.OpError) {
	select {
	case l := <-p.free:
		return ticket{lane: l, pool: p}, nil
	case <-ctx.Done():
		return nil, engine.Errorf("timeout", "no connection of the pool became free: %v", ctx.Err())
	}
}

func (t ticket) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	defer func() { t.pool.free <- t.lane }()
	return t.lane.Call(ctx, seq)
}

func (t ticket) Abandon() { t.pool.free <- t.lane }

// ---------------------------------------------------------------------------------------------
// Server

// Server serves each connection in its own goroutine, the TLS handshake included.
type Server struct {
	listener net.Listener
	config   *tls.Config
	counters *stack.Counters
	failed   chan error
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	stopped  bool
}

// Serve binds exactly address and serves until Stop.
func Serve(address string, config *tls.Config, counters *stack.Counters) (*Server, error) {
	listener, err := stack.ListenTCP(address)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: cannot bind TCP: %w", address, err)
	}
	s := &Server{listener: listener, config: config, counters: counters, failed: make(chan error, 1), conns: map[net.Conn]struct{}{}}
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	for {
		raw, err := s.listener.Accept()
		if err != nil {
			s.mu.Lock()
			stopped := s.stopped
			s.mu.Unlock()
			if !stopped {
				s.failed <- fmt.Errorf("the TCP listener stopped accepting: %w", err)
			}
			return
		}
		if !s.track(raw, true) {
			raw.Close()
			return
		}
		go s.serveConn(raw)
	}
}

func (s *Server) track(conn net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.stopped {
			return false
		}
		s.conns[conn] = struct{}{}
	} else {
		delete(s.conns, conn)
	}
	return true
}

func (s *Server) serveConn(raw net.Conn) {
	defer s.track(raw, false)
	defer raw.Close()
	conn := tls.Server(raw, s.config)
	_ = conn.SetDeadline(time.Now().Add(stack.HandshakeTimeout))
	if err := conn.Handshake(); err != nil {
		fmt.Fprintf(os.Stderr, "rpcarena-peer-go: TLS handshake with %s failed: %v\n", raw.RemoteAddr(), err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	c := native.Conn{R: native.NewReader(conn), W: native.NewWriter(conn)}
	for native.ServeCall(c, s.counters) == native.Again {
	}
	_ = conn.Close()
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Failed delivers an error if the listener stops on its own.
func (s *Server) Failed() <-chan error { return s.failed }

// Stop closes the listener and every connection.
func (s *Server) Stop() {
	s.mu.Lock()
	s.stopped = true
	for conn := range s.conns {
		_ = conn.Close()
	}
	s.mu.Unlock()
	_ = s.listener.Close()
}
