// Command rpcarena-peer-go is the Go peer of rpcarena (docs/peer-protocol.md, revision 1.4):
//
//	rpcarena-peer-go capabilities
//	rpcarena-peer-go server --stack S --listen HOST:PORT [--tls on] --cert FILE --key FILE
//	rpcarena-peer-go server --stack S --listen HOST:PORT --tls off
//
// where S is grpc, quic, tcp, grpc-servehttp, netrpc-gob, netrpc-proto, http1-proto or
// http2-proto, and:
//
//	rpcarena-peer-go client --stack S --server HOST:PORT [--tls on] --server-name NAME --ca FILE
//	    (or --tls off, without --server-name and --ca) --shape SHAPE --concurrency N
//	    --request-size B --response-size B --messages-per-stream N --load MODEL
//	    [MODEL ARGUMENTS] [--payload zeros|structured] [--client-mode official]
//	    --warmup-ms MS --window-ms MS --drain-ms MS
//
// stdout carries only events; every failure ends as one `error` event and a non-zero exit.
package main

import (
	"os"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/peer"
	"rpcarena/peers/go/internal/protocol"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	command, err := args.Parse(argv)
	if err != nil {
		return peerFinish(&peer.Failure{Phase: protocol.PhaseStartup, Code: protocol.CodeConfig, Message: err.Error()})
	}
	switch {
	case command.Capabilities:
		protocol.Stdout.Emit("capabilities", peer.Capabilities())
		return 0
	case command.Server != nil:
		return peer.RunServer(command.Server, protocol.ReadCommands(os.Stdin), protocol.Stdout)
	}
	return peer.RunClient(command.Client, protocol.ReadCommands(os.Stdin), protocol.Stdout)
}

func peerFinish(f *peer.Failure) int {
	os.Stderr.WriteString("rpcarena-peer-go: " + f.Error() + "\n")
	protocol.Stdout.Emit("error", protocol.Error{Phase: f.Phase, Code: f.Code, Message: f.Message})
	return f.ExitCode()
}
