// Package netrpcstack holds the netrpc-gob and netrpc-proto stacks: Go's net/rpc over TLS 1.3
// over TCP (or plain TCP with --tls off), with encoding/gob (net/rpc's own codec) or with the protobuf codec of codec.go. One
// connection per client carries every lane's calls (net/rpc multiplexes them by sequence
// number); unary calls only: net/rpc has one request and one reply per call.
package netrpcstack

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"strings"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
)

// Codec is how net/rpc encodes headers and bodies.
type Codec int

// The codecs.
const (
	Gob   Codec = iota // net/rpc's own: encoding/gob
	Proto              // codec.go: protobuf bodies in native frames
)

// Method is the net/rpc name of the unary call.
const Method = "BenchService.Unary"

// ALPN identifiers: net/rpc has none of its own, so each codec gets one, and a client of one
// codec never talks to a server of the other.
const (
	ALPNGob   = "rpcarena-netrpc-gob/1"
	ALPNProto = "rpcarena-netrpc-proto/1"
)

// net/rpc carries a failed call as an error text; these prefixes name the status, so a client
// can tell INVALID_ARGUMENT from the rest.
const (
	InvalidPrefix  = "invalid argument: "
	InternalPrefix = "internal: "
)

// Service is what net/rpc calls: BenchService.Unary.
type Service struct {
	counters *stack.Counters
	fault    fault.Server
}

// Unary checks the request and fills the reply (docs/peer-protocol.md "Validation duties"); a
// request that fails is refused with an error text starting with InvalidPrefix.
func (s *Service) Unary(request *pb.Request, reply *pb.Response) error {
	answer := stack.AnswerUnary(request, s.fault, s.counters)
	switch answer.Code {
	case fault.OK:
	case fault.InvalidArgument:
		return errors.New(InvalidPrefix + answer.Message)
	default:
		return errors.New(InternalPrefix + answer.Message)
	}
	response := answer.Reply()
	reply.Seq, reply.Payload, reply.Body = response.Seq, response.Payload, response.Body
	return nil
}

// Server serves net/rpc on every secured (or, in plaintext, accepted) connection.
type Server struct {
	listener *stack.Listener
	conns    stack.ConnSet
	failed   chan error
}

// Serve binds exactly address and serves until Stop, misbehaving as f says when it is set;
// config nil is plaintext (--tls off).
func Serve(address string, config *tls.Config, counters *stack.Counters, codec Codec, f fault.Server) (*Server, error) {
	server := rpc.NewServer()
	if err := server.RegisterName("BenchService", &Service{counters: counters, fault: f}); err != nil {
		return nil, fmt.Errorf("registering the net/rpc service: %w", err)
	}
	listener, err := stack.Listen(address, config)
	if err != nil {
		return nil, err
	}
	s := &Server{listener: listener, failed: make(chan error, 1)}
	go listener.Serve(&s.conns, s.failed, func(conn net.Conn) {
		if codec == Gob {
			server.ServeConn(conn)
		} else {
			server.ServeCodec(NewServerCodec(conn))
		}
	})
	return s, nil
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

// statusOf reads the status a net/rpc error text carries: the code its prefix names, UNKNOWN (2)
// for any other text.
func statusOf(text string) (uint32, string) {
	switch {
	case strings.HasPrefix(text, InvalidPrefix):
		return fault.InvalidArgument, strings.TrimPrefix(text, InvalidPrefix)
	case strings.HasPrefix(text, InternalPrefix):
		return fault.Internal, strings.TrimPrefix(text, InternalPrefix)
	}
	return 2, text
}
