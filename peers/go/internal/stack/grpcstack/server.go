package grpcstack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/workload"
)

// service answers the four shapes and the one-way Command, checking every request
// (docs/peer-protocol.md "Validation duties"); a request that fails is answered with
// INVALID_ARGUMENT.
type service struct {
	pb.UnimplementedBenchServiceServer
	counters *stack.Counters
}

// newServer is a grpc-go server answering the service with the 16 MiB + 1 KiB message limits, or
// misbehaving as conformance fault mode f says when it is set.
func newServer(counters *stack.Counters, f fault.Server, options ...grpc.ServerOption) *grpc.Server {
	options = append(options, grpc.MaxRecvMsgSize(workload.MaxMessage), grpc.MaxSendMsgSize(workload.MaxMessage))
	server := grpc.NewServer(options...)
	if f == "" {
		pb.RegisterBenchServiceServer(server, &service{counters: counters})
	} else {
		(&faultService{counters: counters, fault: f}).register(server)
	}
	return server
}

// rejected answers INVALID_ARGUMENT for a request of shape's method that failed its check.
func rejected(tally *stack.CallTally, shape workload.Shape, err error) error {
	tally.Reject("%s answered INVALID_ARGUMENT: %v", shape.Method(), err)
	return status.Error(codes.InvalidArgument, err.Error())
}

func (s *service) Unary(_ context.Context, request *pb.Request) (*pb.Response, error) {
	tally := &stack.CallTally{Requests: 1}
	defer tally.Done(s.counters)
	if err := workload.NewCallCheck(workload.Unary).Add(request); err != nil {
		return nil, rejected(tally, workload.Unary, err)
	}
	kind, _ := workload.KindOf(request)
	tally.Responses++
	return workload.Response(kind, request.Seq, request.ResponseSize), nil
}

// Command is the one-way command (shape send): the request is checked as a unary one whose
// response_size must be 0, counted in `commands`, and answered with Empty.
func (s *service) Command(_ context.Context, request *pb.Request) (*pb.Empty, error) {
	tally := &stack.CallTally{Requests: 1, Command: true}
	defer tally.Done(s.counters)
	if err := workload.NewCallCheck(workload.Send).Add(request); err != nil {
		return nil, rejected(tally, workload.Send, err)
	}
	tally.Responses++
	return &pb.Empty{}, nil
}

// receive checks every request of a streamed call of shape and hands it to each; a call
// without any request is refused. A nil check checks nothing (the conformance fault
// skip-validation).
func receive(stream grpc.ServerStream, shape workload.Shape, check *workload.CallCheck, tally *stack.CallTally, each func(*pb.Request) error) error {
	for {
		request := &pb.Request{}
		err := stream.RecvMsg(request)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		tally.Requests++
		if check != nil {
			if err := check.Add(request); err != nil {
				return rejected(tally, shape, err)
			}
		}
		if err := each(request); err != nil {
			return err
		}
	}
	if check != nil && check.Count() == 0 {
		return rejected(tally, shape, errors.New(workload.EmptyStream))
	}
	return nil
}

func (s *service) ClientStream(stream grpc.ClientStreamingServer[pb.Request, pb.Summary]) error {
	tally := &stack.CallTally{}
	defer tally.Done(s.counters)
	check := workload.NewCallCheck(workload.ClientStream)
	if err := receive(stream, workload.ClientStream, check, tally, func(*pb.Request) error { return nil }); err != nil {
		return err
	}
	tally.Responses++
	return stream.SendAndClose(check.Summary())
}

func (s *service) ServerStream(request *pb.Request, stream grpc.ServerStreamingServer[pb.Response]) error {
	tally := &stack.CallTally{Requests: 1}
	defer tally.Done(s.counters)
	if err := workload.NewCallCheck(workload.ServerStream).Add(request); err != nil {
		return rejected(tally, workload.ServerStream, err)
	}
	kind, _ := workload.KindOf(request)
	for index := uint64(0); index < uint64(request.ResponseMessages); index++ {
		if err := stream.Send(workload.Response(kind, index, request.ResponseSize)); err != nil {
			return err
		}
		tally.Responses++
	}
	return nil
}

func (s *service) Bidi(stream grpc.BidiStreamingServer[pb.Request, pb.Response]) error {
	tally := &stack.CallTally{}
	defer tally.Done(s.counters)
	check := workload.NewCallCheck(workload.Bidi)
	return receive(stream, workload.Bidi, check, tally, func(request *pb.Request) error {
		if err := stream.Send(workload.Response(check.Kind(), request.Seq, request.ResponseSize)); err != nil {
			return err
		}
		tally.Responses++
		return nil
	})
}

// Server is a grpc-go server on a tuned TCP listener.
type Server struct {
	server   *grpc.Server
	listener net.Listener
	failed   chan error
}

// Serve binds exactly address and serves with (*grpc.Server).Serve until Stop; config nil is
// plaintext (--tls off: insecure credentials, HTTP/2 with prior knowledge).
func Serve(address string, config *tls.Config, counters *stack.Counters, f fault.Server) (*Server, error) {
	listener, err := stack.ListenTCP(address)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: cannot bind TCP: %w", address, err)
	}
	creds := insecure.NewCredentials()
	if config != nil {
		creds = credentials.NewTLS(config)
	}
	server := newServer(counters, f,
		grpc.Creds(creds),
		grpc.InitialWindowSize(stack.FlowWindow),
		grpc.InitialConnWindowSize(stack.FlowWindow),
		grpc.MaxConcurrentStreams(stack.MaxConcurrentStreams),
		grpc.ConnectionTimeout(stack.HandshakeTimeout),
	)
	s := &Server{server: server, listener: listener, failed: make(chan error, 1)}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.failed <- fmt.Errorf("the gRPC server failed: %w", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Failed delivers an error if the server stops on its own.
func (s *Server) Failed() <-chan error { return s.failed }

// Stop closes the listener and every connection; calls in progress are cut.
func (s *Server) Stop() { s.server.Stop() }

// ServeHTTP binds exactly address and serves grpc-servehttp until Stop: the same grpc-go
// service, served by (*grpc.Server).ServeHTTP as the handler of net/http's HTTP/2 server
// (stack.ServeHTTP: windows, stream limit and TLS are net/http's, the message limits grpc-go's).
// config nil is plaintext: net/http's own unencrypted HTTP/2 (http.Protocols
// SetUnencryptedHTTP2, Go 1.24+), not golang.org/x/net/http2/h2c.
func ServeHTTP(address string, config *tls.Config, counters *stack.Counters, f fault.Server) (*stack.HTTPServer, error) {
	return stack.ServeHTTP(address, config, newServer(counters, f), true)
}
