// Package engine runs the load models of docs/peer-protocol.md "Load models" over lanes of any
// stack and measures them: closed and window (a goroutine per lane), backpressure (a submitter
// goroutine and a goroutine per operation), send-saturation (a goroutine per stream) and open
// (a schedule-keeping goroutine on its own OS thread handing starts to lane goroutines).
//
// Every lane (stream, operation shard) keeps its own Tally: histograms, interval histograms and
// counters that nothing else touches while the phase runs, merged once at the end, so the hot
// path takes no lock shared between lanes.
package engine

import (
	"context"
	"fmt"
	"time"
)

// Nanos is a time in nanoseconds from the clock's epoch, or a duration.
type Nanos = int64

// Clock is a monotonic clock.
type Clock interface {
	Now() Nanos
}

// MonoClock reads Go's monotonic clock (CLOCK_MONOTONIC on Linux, through the vDSO).
type MonoClock struct{ epoch time.Time }

// NewMonoClock starts a clock at 0 now.
func NewMonoClock() MonoClock { return MonoClock{epoch: time.Now()} }

// Now is the time since the epoch.
func (c MonoClock) Now() Nanos { return Nanos(time.Since(c.epoch)) }

// Time converts a clock reading into a time.Time (with its monotonic reading), for deadlines.
func (c MonoClock) Time(at Nanos) time.Time { return c.epoch.Add(time.Duration(at)) }

// Window is one admission window: operations start in [T0, Deadline) and must end by
// HardDeadline (the drain bound).
type Window struct {
	T0, Deadline, HardDeadline Nanos
}

// NewWindow opens a window of length at t0 with drain after it.
func NewWindow(t0, length, drain Nanos) Window {
	return Window{T0: t0, Deadline: t0 + length, HardDeadline: t0 + length + drain}
}

// Outcome is what one completed operation carried.
type Outcome struct {
	Requests, Responses, RequestBytes, ResponseBytes uint64
}

// OpError is a failed operation: a code of docs/peer-protocol.md "Error codes" and a message.
type OpError struct {
	Code    string
	Message string
}

func (e *OpError) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an OpError.
func Errorf(code, format string, args ...any) *OpError {
	return &OpError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Lane runs one operation at a time. ctx carries the phase's hard deadline (the drain bound)
// and is cancelled at SHUTDOWN; a call must return soon after either.
type Lane interface {
	Call(ctx context.Context, seq uint64) (Outcome, *OpError)
}

// Saturator is a lane that can run one send-saturation stream.
type Saturator interface {
	Saturate(ctx context.Context, clock Clock, sender *StreamSender) *OpError
}

// Submitter is the backpressure model's view of a transport: Ready returns once the transport
// accepts one more operation (gRPC: a stream was created; QUIC: a stream was opened; tcp: a
// connection of the pool is free).
type Submitter interface {
	Ready(ctx context.Context) (Ticket, *OpError)
}

// Ticket is one accepted operation, to run once, or to abandon if it came too late.
type Ticket interface {
	Call(ctx context.Context, seq uint64) (Outcome, *OpError)
	Abandon()
}

// Model is a load model and its own arguments.
type Model struct {
	Name        string // closed, window, backpressure, send-saturation, open
	MaxInFlight uint32 // backpressure
	Open        OpenConfig
}

// Totals is everything a phase measured, merged.
type Totals struct {
	Tally
	Load        string
	MaxInFlight *uint64
	Offered     *uint64
	TargetRate  *float64
	FellBehind  *bool
	Sent        *uint64
	Received    *uint64
}

func ptr[T any](v T) *T { return &v }
