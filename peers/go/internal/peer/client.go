// Package peer is the lifecycle of each role (docs/peer-protocol.md "Lifecycle"): the client's
// connect, validate, warmup, armed, measure and sampled states, the server's listen and serve,
// and what SHUTDOWN, START, end of stdin and unknown lines do in each of them.
package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/protocol"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/grpcstack"
	"rpcarena/peers/go/internal/stack/httpstack"
	"rpcarena/peers/go/internal/stack/netrpcstack"
	"rpcarena/peers/go/internal/stack/quicstack"
	"rpcarena/peers/go/internal/stack/tcpstack"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// Safety bounds of the phases before the window (the controller has its own, usually shorter,
// timeouts).
const (
	ConnectBound  = 30 * time.Second
	ValidateBound = 120 * time.Second
)

// Failure ends the peer with an `error` event.
type Failure struct {
	Phase, Code, Message string
}

func (f *Failure) Error() string { return f.Phase + "/" + f.Code + ": " + f.Message }

// ExitCode is 2 for a startup configuration error, 1 for any other.
func (f *Failure) ExitCode() int {
	if f.Phase == protocol.PhaseStartup && f.Code == protocol.CodeConfig {
		return 2
	}
	return 1
}

func fail(phase, code, format string, a ...any) *Failure {
	return &Failure{Phase: phase, Code: code, Message: fmt.Sprintf(format, a...)}
}

func opFailure(phase string, err *engine.OpError) *Failure {
	return &Failure{Phase: phase, Code: err.Code, Message: err.Message}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "rpcarena-peer-go: "+format+"\n", a...)
}

// ALPN is the stack's protocol identifier (docs/stacks.md).
func ALPN(s args.Stack) string {
	switch s {
	case args.Grpc, args.GrpcServeHTTP, args.HTTP2Proto:
		return stack.ALPNH2
	case args.HTTP1Proto:
		return httpstack.ALPNHTTP1
	case args.NetrpcGob:
		return netrpcstack.ALPNGob
	case args.NetrpcProto:
		return netrpcstack.ALPNProto
	}
	return stack.ALPNNative
}

// connect opens the stack's connections (grpc-servehttp's client is the grpc client: the
// difference is the server's).
func connect(ctx context.Context, a *args.Client, settings stack.ClientSettings) (stack.Client, *engine.OpError) {
	switch a.Stack {
	case args.Grpc, args.GrpcServeHTTP:
		return orNil(grpcstack.Connect(ctx, settings))
	case args.Quic:
		return orNil(quicstack.Connect(ctx, settings))
	case args.NetrpcGob:
		return orNil(netrpcstack.Connect(ctx, settings, netrpcstack.Gob))
	case args.NetrpcProto:
		return orNil(netrpcstack.Connect(ctx, settings, netrpcstack.Proto))
	case args.HTTP1Proto:
		return orNil(httpstack.Connect(ctx, settings, false))
	case args.HTTP2Proto:
		return orNil(httpstack.Connect(ctx, settings, true))
	}
	return orNil(tcpstack.Connect(ctx, settings))
}

// orNil keeps a typed nil pointer out of the interface.
func orNil[C stack.Client](client C, err *engine.OpError) (stack.Client, *engine.OpError) {
	if err != nil {
		return nil, err
	}
	return client, nil
}

// runModel runs the client's load model through w on the stack's lanes.
func runModel(ctx context.Context, a *args.Client, client stack.Client, clock engine.MonoClock, w engine.Window, bound string) *engine.Totals {
	ctx, cancel := context.WithDeadline(ctx, clock.Time(w.HardDeadline))
	defer cancel()
	lanes := client.Lanes()
	switch a.Load {
	case args.Window:
		return engine.RunLanes(ctx, lanes, clock, w, true, bound)
	case args.Backpressure:
		return engine.RunBackpressure(ctx, client.Submitter(ctx), a.MaxInFlight, clock, w, bound)
	case args.SendSaturation:
		if a.Workload.Shape == workload.Send {
			return engine.RunCommandSaturation(ctx, lanes, clock, w, bound)
		}
		streams := make([]engine.Saturator, len(lanes))
		for i, lane := range lanes {
			streams[i] = lane.(engine.Saturator)
		}
		return engine.RunSaturation(ctx, streams, clock, w, bound)
	case args.Open:
		return engine.RunOpen(ctx, lanes, engine.OpenConfig{Rate: a.Rate, Poisson: a.Poisson, Seed: a.Seed}, clock, w, bound)
	}
	return engine.RunLanes(ctx, lanes, clock, w, false, bound)
}

// prepared is what the client has once it is ready to arm.
type prepared struct {
	client          stack.Client
	connectNs       engine.Nanos
	warmupCompleted uint64
}

// prepare connects, runs the validation operation and the warmup. phase tells the lifecycle
// which state the client is in.
func prepare(ctx context.Context, a *args.Client, settings stack.ClientSettings, clock engine.MonoClock, phase *atomic.Value, opened chan<- stack.Client) (*prepared, *Failure) {
	phase.Store(protocol.PhaseConnect)
	began := clock.Now()
	connectCtx, cancel := context.WithTimeout(ctx, ConnectBound)
	client, err := connect(connectCtx, a, settings)
	cancel()
	if err != nil {
		return nil, opFailure(protocol.PhaseConnect, err)
	}
	opened <- client
	result := &prepared{client: client, connectNs: clock.Now() - began}
	if a.Fault != "" {
		phase.Store(protocol.PhaseValidate)
		return result, probe(ctx, a, client)
	}

	phase.Store(protocol.PhaseValidate)
	validateCtx, cancel := context.WithTimeout(ctx, ValidateBound)
	_, err = client.Lanes()[0].Call(validateCtx, 0)
	cancel()
	if err != nil {
		return nil, opFailure(protocol.PhaseValidate, err)
	}

	if a.WarmupMs > 0 {
		phase.Store(protocol.PhaseWarmup)
		w := engine.NewWindow(clock.Now(), engine.Nanos(a.WarmupMs)*1e6, engine.Nanos(a.DrainMs)*1e6)
		totals := runModel(ctx, a, client, clock, w, "the warmup's drain bound (--drain-ms)")
		if totals.First != nil {
			return nil, fail(protocol.PhaseWarmup, totals.First.Code, "%d of the warmup operations failed; the first: %s", totals.Failed, totals.First.Message)
		}
		result.warmupCompleted = totals.Completed
	}
	return result, nil
}

// probe is a conformance fault client (package fault): the malformed call on the first lane must
// be refused with INVALID_ARGUMENT, then a well-formed call on the same lane must succeed.
func probe(ctx context.Context, a *args.Client, client stack.Client) *Failure {
	logf("CONFORMANCE FAULT %s: sending %s instead of measuring", a.Fault, a.Fault.Describe())
	lane := client.Lanes()[0]
	raw, ok := lane.(stack.RawCaller)
	if !ok {
		return fail(protocol.PhaseValidate, protocol.CodeInternal, "--stack %s cannot send a malformed call", a.Stack)
	}
	ctx, cancel := context.WithTimeout(ctx, ValidateBound)
	defer cancel()
	verdict, err := raw.RawCall(ctx, a.Workload.Shape, a.Fault.Requests(a.Workload))
	if err == nil {
		err = fault.Judge(a.Fault, verdict)
	}
	if err != nil {
		return opFailure(protocol.PhaseValidate, err)
	}
	logf("the server refused the malformed call with INVALID_ARGUMENT: %s", verdict.Message)
	if _, err := lane.Call(ctx, 0); err != nil {
		return fail(protocol.PhaseValidate, err.Code, "the server refused the malformed call but then failed a well-formed one: %s", err.Message)
	}
	return nil
}

// RunClient runs the client through one sample and returns its exit code: prepared (connect,
// validate, warmup) while watching stdin, armed, started, measured, sampled, shut down.
func RunClient(a *args.Client, inputs <-chan protocol.Input, out *protocol.Output) int {
	var config *tls.Config // nil: plaintext
	if !a.Plaintext {
		var err error
		if config, err = stack.ClientTLS(a.CA, a.ServerName, ALPN(a.Stack)); err != nil {
			return finish(out, fail(protocol.PhaseStartup, protocol.CodeConfig, "%v", err))
		}
	}
	settings := stack.ClientSettings{Server: a.Server, TLS: config, Workload: a.Workload, Lanes: int(a.Lanes())}
	clock := engine.NewMonoClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	ready, end := awaitPrepared(ctx, cancel, a, settings, clock, inputs)
	if end != nil {
		return end.report(out)
	}
	client := ready.client
	if a.Fault != "" {
		client.Close()
		return stopped(out, nil)
	}
	emitArmed(out, a, ready)
	if end := awaitStart(inputs); end != nil {
		client.Close()
		return end.report(out)
	}
	sample, end := measure(ctx, cancel, a, client, clock, inputs)
	if end != nil {
		client.Close()
		return end.report(out)
	}
	out.Emit("sample", sample)

	input := <-inputs
	client.Close()
	if input.Command != protocol.Shutdown {
		return finish(out, misplaced(protocol.PhaseShutdown, input))
	}
	return stopped(out, nil)
}

// clientEnd is how a client ends before its sample's SHUTDOWN: with a failure, or stopped by
// SHUTDOWN (or end of stdin) when failure is nil.
type clientEnd struct{ failure *Failure }

// report prints the end's event (`error` or `stopped`) and returns the exit code.
func (e *clientEnd) report(out *protocol.Output) int {
	if e.failure == nil {
		return stopped(out, nil)
	}
	return finish(out, e.failure)
}

// interrupted is the end of a client that read input while busy in phase: SHUTDOWN (or end of
// stdin) stops it, anything else is misplaced. Either way the work in flight is cancelled.
func interrupted(phase string, input protocol.Input, cancel context.CancelFunc, shutdownLog string) *clientEnd {
	if input.Command == protocol.Shutdown {
		logf("%s", shutdownLog)
		cancel()
		return &clientEnd{}
	}
	cancel()
	return &clientEnd{failure: misplaced(phase, input)}
}

// awaitPrepared connects, validates and warms up, racing the controller: SHUTDOWN or end of
// stdin stops the client at once, and a client that connected meanwhile is closed.
func awaitPrepared(ctx context.Context, cancel context.CancelFunc, a *args.Client, settings stack.ClientSettings, clock engine.MonoClock, inputs <-chan protocol.Input) (*prepared, *clientEnd) {
	var phase atomic.Value
	phase.Store(protocol.PhaseConnect)
	opened := make(chan stack.Client, 1)
	type outcome struct {
		ready   *prepared
		failure *Failure
	}
	done := make(chan outcome, 1)
	go func() {
		ready, failure := prepare(ctx, a, settings, clock, &phase, opened)
		done <- outcome{ready, failure}
	}()
	select {
	case result := <-done:
		if result.failure != nil {
			closeOpened(opened)
			return nil, &clientEnd{failure: result.failure}
		}
		return result.ready, nil
	case input := <-inputs:
		current := phase.Load().(string)
		end := interrupted(current, input, cancel, fmt.Sprintf("SHUTDOWN (or end of stdin) during %s; stopping", current))
		closeOpened(opened)
		return nil, end
	}
}

// emitArmed tells the controller the client is ready for START.
func emitArmed(out *protocol.Output, a *args.Client, ready *prepared) {
	out.Emit("armed", protocol.Armed{
		Lanes:           a.Lanes(),
		Connections:     ready.client.Connections(),
		ConnectNs:       protocol.Counter(ready.connectNs),
		WarmupCompleted: protocol.Counter(ready.warmupCompleted),
	})
}

// awaitStart waits for START; SHUTDOWN (or end of stdin) or an unknown line ends the client.
func awaitStart(inputs <-chan protocol.Input) *clientEnd {
	switch input := <-inputs; input.Command {
	case protocol.Shutdown:
		return &clientEnd{}
	case protocol.Unknown, protocol.Window:
		return &clientEnd{failure: misplaced(protocol.PhaseArmed, input)}
	}
	return nil
}

// measure runs the window (with its drain, or its settle for send saturation) while watching
// stdin, with the transport statistics read at START, polled through the window and read after
// the drain, and returns the `sample` event.
func measure(ctx context.Context, cancel context.CancelFunc, a *args.Client, client stack.Client, clock engine.MonoClock, inputs <-chan protocol.Input) (protocol.Sample, *clientEnd) {
	allocated := protocol.ReadAllocations()
	poller := transport.Start(client.TransportProbe())
	defer poller.Stop()
	w := engine.NewWindow(clock.Now(), engine.Nanos(a.WindowMs)*1e6, engine.Nanos(a.DrainMs)*1e6)
	bound := "the drain bound (--drain-ms)"
	if a.Load == args.SendSaturation {
		bound = "the settle bound (--settle-ms, at most --drain-ms)"
		w.HardDeadline = w.Deadline + min(engine.Nanos(a.SettleMs), engine.Nanos(a.DrainMs))*1e6
	}
	measured := make(chan *engine.Totals, 1)
	go func() { measured <- runModel(ctx, a, client, clock, w, bound) }()
	var totals *engine.Totals
	select {
	case totals = <-measured:
	case input := <-inputs:
		return protocol.Sample{}, interrupted(protocol.PhaseMeasure, input, cancel,
			"SHUTDOWN (or end of stdin) during the window; stopping without a sample")
	}
	allocations := protocol.ReadAllocations().Since(allocated)
	stats := poller.Finish()
	sample, err := totals.Report(w)
	if err != nil {
		return protocol.Sample{}, &clientEnd{failure: fail(protocol.PhaseMeasure, protocol.CodeInternal, "%v", err)}
	}
	sample.Transport = stats
	sample.Allocations, sample.AllocatedBytes = &allocations.Count, &allocations.Bytes
	return sample, nil
}

// closeOpened closes a client that connected before the lifecycle gave up on it.
func closeOpened(opened <-chan stack.Client) {
	select {
	case client := <-opened:
		client.Close()
	default:
	}
}

// misplaced is the protocol error for START or an unknown line where it is not valid.
func misplaced(phase string, input protocol.Input) *Failure {
	if input.Command == protocol.Start {
		if phase == protocol.PhaseShutdown {
			return fail(phase, protocol.CodeProtocol, "a second START: one sample per client")
		}
		return fail(phase, protocol.CodeProtocol, "START arrived during %s; it is only valid once, after `armed`", phase)
	}
	if input.Command == protocol.Window {
		return fail(phase, protocol.CodeProtocol, "%q sent to a client; window commands go to servers, a client expects START or SHUTDOWN", input.Line)
	}
	return fail(phase, protocol.CodeProtocol, "unknown command %q on stdin; expected START or SHUTDOWN", input.Line)
}

// finish prints the failure as an `error` event and returns its exit code.
func finish(out *protocol.Output, f *Failure) int {
	logf("%s", f.Error())
	out.Emit("error", protocol.Error{Phase: f.Phase, Code: f.Code, Message: f.Message})
	return f.ExitCode()
}

func stopped(out *protocol.Output, counters map[string]protocol.Counter) int {
	out.Emit("stopped", protocol.Stopped{Counters: counters})
	return 0
}
