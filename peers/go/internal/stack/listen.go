package stack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"rpcarena/peers/go/internal/engine"
)

// Dial opens one tuned TCP connection to settings.Server and, unless the settings are plaintext
// (--tls off), completes the TLS handshake on it; a TCP failure is `connect`, a handshake
// failure `tls`. The connection is a *tls.Conn with TLS, the *net.TCPConn itself without.
func Dial(ctx context.Context, settings ClientSettings) (net.Conn, *engine.OpError) {
	raw, err := DialTCP(ctx, settings.Server)
	if err != nil {
		return nil, engine.Errorf("connect", "TCP connection to %s failed: %v", settings.Server, err)
	}
	if settings.Plaintext() {
		return raw, nil
	}
	conn := tls.Client(raw, settings.TLS)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, engine.Errorf("tls", "%s", HandshakeMessage(settings.Server, settings.TLS.ServerName, err))
	}
	return conn, nil
}

// RawConn is the TCP connection under conn (a *tls.Conn's, or conn itself in plaintext), for
// the transport statistics.
func RawConn(conn net.Conn) net.Conn {
	if secured, ok := conn.(*tls.Conn); ok {
		return secured.NetConn()
	}
	return conn
}

// Listener binds a tuned TCP listener and hands out connections whose TLS handshake has
// completed: each handshake runs in its own goroutine, bounded by HandshakeTimeout, so one slow
// or failed handshake never holds up another, and a server built on it (net/http, net/rpc, the
// native framing) only ever sees secured connections. Without a TLS configuration (--tls off)
// it hands out the accepted TCP connections as they are.
type Listener struct {
	inner  net.Listener
	config *tls.Config // nil: plaintext
	ready  chan net.Conn
	done   chan struct{}
	close  sync.Once
	mu     sync.Mutex
	err    error // why accepting stopped, if it stopped on its own (not by Close)
}

// Listen binds exactly address; config nil means plaintext (--tls off).
func Listen(address string, config *tls.Config) (*Listener, error) {
	inner, err := ListenTCP(address)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: cannot bind TCP: %w", address, err)
	}
	l := &Listener{inner: inner, config: config, ready: make(chan net.Conn), done: make(chan struct{})}
	go l.accept()
	return l, nil
}

func (l *Listener) accept() {
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.done: // closed by its owner
			default:
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
				l.Close()
			}
			return
		}
		if l.config == nil {
			l.handOut(raw)
			continue
		}
		go l.handshake(raw)
	}
}

func (l *Listener) handshake(raw net.Conn) {
	conn := tls.Server(raw, l.config)
	_ = conn.SetDeadline(time.Now().Add(HandshakeTimeout))
	if err := conn.Handshake(); err != nil {
		fmt.Fprintf(os.Stderr, "rpcarena-peer-go: TLS handshake with %s failed: %v\n", raw.RemoteAddr(), err)
		raw.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	l.handOut(conn)
}

// handOut gives conn to the next Accept, or closes it once the listener is closed.
func (l *Listener) handOut(conn net.Conn) {
	select {
	case l.ready <- conn:
	case <-l.done:
		conn.Close()
	}
}

// Accept returns the next secured (or, in plaintext, accepted) connection; after Close, net.ErrClosed; after the listener
// failed on its own, that failure.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.ready:
		return conn, nil
	case <-l.done:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	return nil, net.ErrClosed
}

// Close stops accepting; connections already handed out stay open.
func (l *Listener) Close() error {
	l.close.Do(func() {
		close(l.done)
		_ = l.inner.Close()
	})
	return nil
}

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Serve hands every connection Accept gives to serve in a goroutine of its own, tracked in conns
// and closed when serve returns, until the listener is closed; a listener that fails on its own
// reports why on failed (buffered by the caller).
func (l *Listener) Serve(conns *ConnSet, failed chan<- error, serve func(net.Conn)) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				failed <- fmt.Errorf("the TCP listener on %s stopped accepting: %w", l.Addr(), err)
			}
			return
		}
		if !conns.Add(conn) {
			return
		}
		go func() {
			defer conns.Remove(conn)
			defer conn.Close()
			serve(conn)
		}()
	}
}

// ConnSet tracks a server's open connections so that Stop can close them all.
type ConnSet struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	stopped bool
}

// Add tracks conn; false (and conn closed) once the set was closed.
func (s *ConnSet) Add(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		conn.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[conn] = struct{}{}
	return true
}

// Remove stops tracking conn.
func (s *ConnSet) Remove(conn net.Conn) {
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
}

// CloseAll closes every tracked connection and refuses new ones.
func (s *ConnSet) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for conn := range s.conns {
		_ = conn.Close()
	}
}
