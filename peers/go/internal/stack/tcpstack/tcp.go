// Package tcpstack is the tcp stack: the native framing over TLS 1.3 over TCP (or straight on
// TCP with --tls off), one connection per lane opened concurrently at start, calls one after another on a connection (after STATUS
// the connection carries the next call).
package tcpstack

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/native"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

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
			conn, err := stack.Dial(ctx, settings)
			if err != nil {
				errs[i] = err
				return
			}
			sockets.Register(stack.RawConn(conn))
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

// Close sends TLS close_notify (with TLS) and closes every connection.
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
	conn     net.Conn
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

// Server serves each connection in its own goroutine, after its TLS handshake (if any).
type Server struct {
	listener *stack.Listener
	counters *stack.Counters
	conns    stack.ConnSet
	failed   chan error
}

// Serve binds exactly address and serves until Stop; config nil is plaintext (--tls off).
func Serve(address string, config *tls.Config, counters *stack.Counters) (*Server, error) {
	listener, err := stack.Listen(address, config)
	if err != nil {
		return nil, err
	}
	s := &Server{listener: listener, counters: counters, failed: make(chan error, 1)}
	go listener.Serve(&s.conns, s.failed, s.serveConn)
	return s, nil
}

// serveConn serves one call after another until the connection ends or breaks.
func (s *Server) serveConn(conn net.Conn) {
	c := native.Conn{R: native.NewReader(conn), W: native.NewWriter(conn)}
	for native.ServeCall(c, s.counters) == native.Again {
	}
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Failed delivers an error if the listener stops on its own.
func (s *Server) Failed() <-chan error { return s.failed }

// Stop closes the listener and every connection.
func (s *Server) Stop() {
	_ = s.listener.Close()
	s.conns.CloseAll()
}
