package grpcstack

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/workload"
)

// RawCall sends a conformance fault's malformed call, its requests as they are (possibly none),
// on the lane's channel, and reports how the server ended it without checking the responses. A
// status the server sent is the verdict; a failure of the transport is an error with its code.
func (l *lane) RawCall(ctx context.Context, shape workload.Shape, requests []*pb.Request) (fault.Verdict, *engine.OpError) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wire := shape.Wire()
	desc := &grpc.StreamDesc{ClientStreams: wire.StreamsRequests(), ServerStreams: wire.StreamsResponses()}
	stream, err := l.conn.NewStream(ctx, desc, wire.Method())
	if err != nil {
		return verdict(err, 0)
	}
	for _, request := range requests {
		if err := stream.SendMsg(request); err != nil {
			if errors.Is(err, io.EOF) {
				break // the call ended; its status comes with RecvMsg
			}
			return verdict(err, 0)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return verdict(err, 0)
	}
	var responses uint64
	for {
		var answer proto.Message = &pb.Response{}
		switch wire {
		case workload.ClientStream:
			answer = &pb.Summary{}
		case workload.Send:
			answer = &pb.Empty{}
		}
		err := stream.RecvMsg(answer)
		if errors.Is(err, io.EOF) {
			return fault.Verdict{Code: fault.OK, Responses: responses}, nil
		}
		if err != nil {
			return verdict(err, responses)
		}
		responses++
		if !desc.ServerStreams {
			// grpc-go has read the status too: a single-message call returned OK.
			return fault.Verdict{Code: fault.OK, Responses: responses}, nil
		}
	}
}

// verdict is the status the server ended the call with, or the transport failure.
func verdict(err error, responses uint64) (fault.Verdict, *engine.OpError) {
	if failure := statusError(err); failure.Code != "rpc" {
		return fault.Verdict{}, failure
	}
	s, _ := status.FromError(err)
	return fault.Verdict{Code: uint32(s.Code()), Message: s.Message(), Responses: responses}, nil
}
