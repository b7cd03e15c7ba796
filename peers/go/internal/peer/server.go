package peer

import (
	"os"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/protocol"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/grpcstack"
	"rpcarena/peers/go/internal/stack/quicstack"
	"rpcarena/peers/go/internal/stack/tcpstack"
)

// RunServer loads TLS, binds, prints `ready`, serves until SHUTDOWN (or end of stdin), prints
// `stopped` with its counters, and returns its exit code.
func RunServer(a *args.Server, inputs <-chan protocol.Input, out *protocol.Output) int {
	config, err := stack.ServerTLS(a.Cert, a.Key, ALPN(a.Stack))
	if err != nil {
		return finish(out, fail(protocol.PhaseStartup, protocol.CodeConfig, "%v", err))
	}
	counters := &stack.Counters{}
	var server stack.Server
	switch a.Stack {
	case args.Grpc:
		server, err = asServer(grpcstack.Serve(a.Listen, config, counters))
	case args.Quic:
		server, err = asServer(quicstack.Serve(a.Listen, config, counters))
	default:
		server, err = asServer(tcpstack.Serve(a.Listen, config, counters))
	}
	if err != nil {
		return finish(out, fail(protocol.PhaseListen, protocol.CodeConfig, "%v", err))
	}
	out.Emit("ready", protocol.Ready{Address: server.Addr().String(), Pid: os.Getpid()})
	for {
		select {
		case input := <-inputs:
			switch input.Command {
			case protocol.Window:
				life := protocol.ReadAllocations()
				out.Emit("window", protocol.WindowEvent{Edge: input.Edge, Counters: counterMap(counters),
					Allocations: life.Count, AllocatedBytes: life.Bytes})
				continue
			case protocol.Shutdown:
				server.Stop()
				life := protocol.ReadAllocations()
				out.Emit("stopped", protocol.Stopped{Counters: counterMap(counters),
					Allocations: &life.Count, AllocatedBytes: &life.Bytes})
				return 0
			}
			server.Stop()
			if input.Command == protocol.Start {
				return finish(out, fail(protocol.PhaseServe, protocol.CodeProtocol, "START sent to a server; a server only serves until SHUTDOWN"))
			}
			return finish(out, misplaced(protocol.PhaseServe, input))
		case err := <-server.Failed():
			server.Stop()
			return finish(out, fail(protocol.PhaseServe, protocol.CodeInternal, "%v", err))
		}
	}
}

// counterMap is the server's counters so far, as `window` and `stopped` print them.
func counterMap(counters *stack.Counters) map[string]protocol.Counter {
	return map[string]protocol.Counter{
		"rpcs":      protocol.Counter(counters.RPCs.Load()),
		"requests":  protocol.Counter(counters.Requests.Load()),
		"responses": protocol.Counter(counters.Responses.Load()),
		"rejected":  protocol.Counter(counters.Rejected.Load()),
	}
}

// asServer keeps a typed nil pointer out of the interface.
func asServer[S stack.Server](server S, err error) (stack.Server, error) {
	if err != nil {
		return nil, err
	}
	return server, nil
}
