// Package stack holds what every transport stack of the Go peer shares (docs/stacks.md): the
// settings every peer must use, the one TLS configuration, socket tuning, the client and server
// interfaces the lifecycle drives, and the server's counters.
package stack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// Settings shared by every stack (docs/stacks.md, "Shared by all stacks").
const (
	// FlowWindow is every flow-control window: HTTP/2 stream and connection, QUIC stream and
	// connection receive windows.
	FlowWindow = 16 * 1024 * 1024
	// MaxConcurrentStreams is what a server allows per connection (HTTP/2 and QUIC).
	MaxConcurrentStreams = 10_000
	// HandshakeTimeout bounds a server's TLS handshake of an accepted connection.
	HandshakeTimeout = 10 * time.Second
	// CloseGrace bounds closing a connection or waiting for a stream's end.
	CloseGrace = time.Second
)

// ClientSettings is what a client stack needs to connect.
type ClientSettings struct {
	Server string // --server, HOST:PORT
	// TLS has ServerName, RootCAs and the stack's ALPN; nil with --tls off (plaintext: the
	// stack's bytes go straight onto the TCP connection, HTTP/2 with prior knowledge).
	TLS      *tls.Config
	Workload workload.Workload
	Lanes    int
}

// Plaintext says whether the client runs without TLS (--tls off).
func (s ClientSettings) Plaintext() bool { return s.TLS == nil }

// Client is a connected client stack.
type Client interface {
	// Lanes are the lanes, one per unit of the model's concurrency.
	Lanes() []engine.Lane
	// Submitter is the backpressure model's view of the transport; ctx is the phase's.
	Submitter(ctx context.Context) engine.Submitter
	// Connections is the number of transport connections opened.
	Connections() uint32
	// TransportProbe reads the connections' transport statistics (the sample's `transport`).
	TransportProbe() transport.Probe
	// Close closes every connection (bounded in time).
	Close()
}

// Server is a running server.
type Server interface {
	// Addr is the address actually bound.
	Addr() net.Addr
	// Failed delivers an error if the server stops on its own.
	Failed() <-chan error
	// Stop closes the listener and every connection.
	Stop()
}

// Counters are a server's counts for the `window` and `stopped` events: calls, messages,
// rejected calls, (1.3) one-way commands received and validated, and the message of the first
// call rejected.
type Counters struct {
	RPCs, Requests, Responses, Rejected, Commands atomic.Uint64
	firstRejection                                atomic.Pointer[string]
}

// FirstRejection is the message of the first call the server rejected ("" while none was).
func (c *Counters) FirstRejection() string {
	if first := c.firstRejection.Load(); first != nil {
		return *first
	}
	return ""
}

// CallTally counts one call's messages and adds them to the shared counters once, at the end
// of the call, so the shared atomics are touched once per call, not per message.
type CallTally struct {
	Requests, Responses uint64
	// Command: the call was a one-way command that passed validation (shape send).
	Command  bool
	Rejected bool
	// Reason is why the call was rejected, for the server's first_rejection.
	Reason string
}

// Reject marks the call rejected because of reason (a status message, one line).
func (t *CallTally) Reject(format string, args ...any) {
	t.Rejected = true
	t.Reason = fmt.Sprintf(format, args...)
}

// Done adds the call to counters; the first rejected call's reason is kept.
func (t *CallTally) Done(counters *Counters) {
	counters.RPCs.Add(1)
	counters.Requests.Add(t.Requests)
	counters.Responses.Add(t.Responses)
	if t.Command && !t.Rejected {
		counters.Commands.Add(1)
	}
	if t.Rejected {
		if counters.firstRejection.Load() == nil {
			reason := strings.Join(strings.Fields(t.Reason), " ")
			if reason == "" {
				reason = "a call was rejected (no message)"
			}
			counters.firstRejection.CompareAndSwap(nil, &reason)
		}
		counters.Rejected.Add(1)
	}
}

// RawCaller is a lane that can send a conformance fault's malformed call (package fault): the
// requests as they are, on the shape's RPC, reporting how the server ended the call.
type RawCaller interface {
	RawCall(ctx context.Context, shape workload.Shape, requests []*pb.Request) (fault.Verdict, *engine.OpError)
}
