package grpcstack

import (
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/workload"
)

// faultService answers every call wrongly in one conformance fault mode (package fault). Every
// method is registered as a stream handler, so that a unary call can be answered with no
// message or with two, as the modes need. Unary, server-stream and client-stream calls are read
// whole before they are answered; bidi calls are answered request by request, so that a
// lock-step (pingpong) client never waits for an answer the server holds back.
type faultService struct {
	counters *stack.Counters
	fault    fault.Server
}

// register serves the BenchService methods with s.
func (s *faultService) register(server *grpc.Server) {
	handler := func(shape workload.Shape) grpc.StreamHandler {
		return func(_ any, stream grpc.ServerStream) error { return s.serve(shape, stream) }
	}
	desc := grpc.ServiceDesc{ServiceName: "rpcarena.bench.v1.BenchService", HandlerType: (*any)(nil), Metadata: "rpcarena/bench/v1/bench.proto"}
	for _, shape := range workload.Methods {
		name := shape.Method()[strings.LastIndexByte(shape.Method(), '/')+1:]
		desc.Streams = append(desc.Streams, grpc.StreamDesc{StreamName: name, Handler: handler(shape),
			ClientStreams: shape.StreamsRequests(), ServerStreams: shape.StreamsResponses()})
	}
	server.RegisterService(&desc, s)
}

func (s *faultService) serve(shape workload.Shape, stream grpc.ServerStream) error {
	tally := &stack.CallTally{}
	defer tally.Done(s.counters)
	err := s.answer(shape, stream, tally)
	if code := status.Code(err); code != codes.OK && !tally.Rejected {
		tally.Reject("%s answered %s (conformance fault %s): %s", shape.Method(), code, s.fault, status.Convert(err).Message())
	}
	return err
}

func (s *faultService) answer(shape workload.Shape, stream grpc.ServerStream, tally *stack.CallTally) error {
	check := workload.NewCallCheck(shape)
	if !s.fault.Validates() {
		check = nil
	}
	if shape == workload.Bidi {
		return s.bidi(stream, check, tally)
	}
	// the whole call first (one request for unary, server streams and commands)
	var requests []*pb.Request
	if err := receive(stream, shape, check, tally, func(request *pb.Request) error {
		requests = append(requests, request)
		return nil
	}); err != nil {
		return err
	}
	switch shape {
	case workload.ClientStream:
		return send(stream, fault.Summaries(s.fault, requests), tally)
	case workload.Send:
		return s.command(stream, tally)
	}
	return send(stream, fault.Responses(s.fault, shape, requests), tally)
}

// command answers a one-way command (docs/stacks.md, "zmq", on grpc's send): error-status
// answers INTERNAL, every other mode Empty, since an Empty has nothing to corrupt.
func (s *faultService) command(stream grpc.ServerStream, tally *stack.CallTally) error {
	if ending := fault.CommandEnding(s.fault); ending.Code != fault.OK {
		return endWith(ending)
	}
	if err := stream.SendMsg(&pb.Empty{}); err != nil {
		return err
	}
	tally.Responses++
	tally.Command = true
	return nil
}

// errEndOK ends a bidi call with status OK before its first response.
var errEndOK = errors.New("status OK at the first request")

// bidi answers each request as it arrives: the per-message modes change each response; the
// modes that end a call early end it at the first request (fault.FirstRequestEnding); an extra
// message follows the last response.
func (s *faultService) bidi(stream grpc.ServerStream, check *workload.CallCheck, tally *stack.CallTally) error {
	var last *pb.Request
	err := receive(stream, workload.Bidi, check, tally, func(request *pb.Request) error {
		if ending, ends := fault.FirstRequestEnding(s.fault); ends {
			if ending.Code == fault.OK {
				return errEndOK
			}
			return endWith(ending)
		}
		response := fault.ResponseTo(request, request.Seq)
		fault.CorruptResponse(response, s.fault)
		if err := stream.SendMsg(response); err != nil {
			return err
		}
		tally.Responses++
		last = request
		return nil
	})
	switch {
	case errors.Is(err, errEndOK):
		return nil
	case err != nil:
		return err
	case last != nil && s.fault == fault.ExtraMessage:
		tally.Responses++
		return stream.SendMsg(fault.ResponseTo(last, last.Seq+1))
	}
	return nil
}

// send sends a plan's messages and ends with its status. The trailers end a gRPC stream, so
// nothing can follow them: a message planned after status OK is left out.
func send[M any](stream grpc.ServerStream, plan fault.Plan[M], tally *stack.CallTally) error {
	for i, m := range plan.Messages {
		if plan.End.OKBeforeLast && i == len(plan.Messages)-1 {
			break
		}
		if err := stream.SendMsg(m); err != nil {
			return err
		}
		tally.Responses++
	}
	return endWith(plan.End)
}

// endWith is the status of an ending.
func endWith(e fault.Ending) error {
	if e.Code == fault.OK {
		return nil
	}
	return status.Error(codes.Code(e.Code), e.Message)
}
