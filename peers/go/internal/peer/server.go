package peer

import (
	"crypto/tls"
	"os"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/protocol"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/grpcstack"
	"rpcarena/peers/go/internal/stack/httpstack"
	"rpcarena/peers/go/internal/stack/netrpcstack"
	"rpcarena/peers/go/internal/stack/quicstack"
	"rpcarena/peers/go/internal/stack/tcpstack"
)

// RunServer loads TLS (unless --tls off), binds, prints `ready`, serves until SHUTDOWN (or end
// of stdin), prints `stopped` with its counters, and returns its exit code.
func RunServer(a *args.Server, inputs <-chan protocol.Input, out *protocol.Output) int {
	var config *tls.Config // nil: plaintext
	if !a.Plaintext {
		var err error
		if config, err = stack.ServerTLS(a.Cert, a.Key, ALPN(a.Stack)); err != nil {
			return finish(out, fail(protocol.PhaseStartup, protocol.CodeConfig, "%v", err))
		}
	}
	counters := &stack.Counters{}
	if a.Fault != "" {
		logf("CONFORMANCE FAULT %s: this server misbehaves on every call; never measure with it", a.Fault)
	}
	server, err := listen(a, config, counters)
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
					FirstRejection: counters.FirstRejection(), Allocations: life.Count, AllocatedBytes: life.Bytes})
				continue
			case protocol.Shutdown:
				server.Stop()
				life := protocol.ReadAllocations()
				out.Emit("stopped", protocol.Stopped{Counters: counterMap(counters),
					FirstRejection: counters.FirstRejection(), Allocations: &life.Count, AllocatedBytes: &life.Bytes})
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

// counterMap is the server's counters so far, as `window` and `stopped` print them (every
// stack prints `commands`, 0 where it carries no send).
func counterMap(counters *stack.Counters) map[string]protocol.Counter {
	return map[string]protocol.Counter{
		"rpcs":      protocol.Counter(counters.RPCs.Load()),
		"requests":  protocol.Counter(counters.Requests.Load()),
		"responses": protocol.Counter(counters.Responses.Load()),
		"rejected":  protocol.Counter(counters.Rejected.Load()),
		"commands":  protocol.Counter(counters.Commands.Load()),
	}
}

// listen binds and starts the stack's server.
func listen(a *args.Server, config *tls.Config, counters *stack.Counters) (stack.Server, error) {
	switch a.Stack {
	case args.Grpc:
		return asServer(grpcstack.Serve(a.Listen, config, counters, a.Fault))
	case args.GrpcServeHTTP:
		return asServer(grpcstack.ServeHTTP(a.Listen, config, counters, a.Fault))
	case args.Quic:
		return asServer(quicstack.Serve(a.Listen, config, counters))
	case args.NetrpcGob:
		return asServer(netrpcstack.Serve(a.Listen, config, counters, netrpcstack.Gob, a.Fault))
	case args.NetrpcProto:
		return asServer(netrpcstack.Serve(a.Listen, config, counters, netrpcstack.Proto, a.Fault))
	case args.HTTP1Proto:
		return asServer(httpstack.Serve(a.Listen, config, counters, false, a.Fault))
	case args.HTTP2Proto:
		return asServer(httpstack.Serve(a.Listen, config, counters, true, a.Fault))
	}
	return asServer(tcpstack.Serve(a.Listen, config, counters))
}

// asServer keeps a typed nil pointer out of the interface.
func asServer[S stack.Server](server S, err error) (stack.Server, error) {
	if err != nil {
		return nil, err
	}
	return server, nil
}
