package stack

import (
	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/workload"
)

// Answer is a single-reply stack's answer to one unary request (net/rpc, HTTP): a status code
// of docs/stacks.md's native STATUS numbering (0 OK, 3 INVALID_ARGUMENT, 13 INTERNAL) with its
// message, and the reply's response messages (exactly one when measuring; a conformance fault
// may give none or two, see fault.Single).
type Answer struct {
	Code     uint32
	Message  string
	Messages []*pb.Response
}

// Reply is the one response message a stack that cannot carry several sends: the message, the
// empty message when there is none, and the merge of all when there are more (what a protobuf
// body holding their encodings one after another decodes to).
func (a Answer) Reply() *pb.Response {
	switch len(a.Messages) {
	case 0:
		return &pb.Response{}
	case 1:
		return a.Messages[0]
	}
	merged := proto.Clone(a.Messages[0]).(*pb.Response)
	for _, m := range a.Messages[1:] {
		proto.Merge(merged, m)
	}
	return merged
}

// AnswerUnary checks request (docs/peer-protocol.md "Validation duties") and answers it, the
// way conformance fault mode f says when it is set, and counts the call in counters.
func AnswerUnary(request *pb.Request, f fault.Server, counters *Counters) Answer {
	tally := &CallTally{Requests: 1}
	defer tally.Done(counters)
	if f.Validates() {
		if err := workload.NewCallCheck(workload.Unary).Add(request); err != nil {
			tally.Reject("a unary call answered INVALID_ARGUMENT: %v", err)
			return Answer{Code: fault.InvalidArgument, Message: err.Error()}
		}
	}
	if f == "" {
		tally.Responses = 1
		return Answer{Messages: []*pb.Response{fault.ResponseTo(request, request.Seq)}}
	}
	plan := fault.Single(f, request)
	tally.Responses = uint64(len(plan.Messages))
	if plan.End.Code != fault.OK {
		tally.Reject("a unary call answered with status %d: %s", plan.End.Code, plan.End.Message)
	}
	return Answer{Code: plan.End.Code, Message: plan.End.Message, Messages: plan.Messages}
}
