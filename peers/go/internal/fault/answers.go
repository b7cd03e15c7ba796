package fault

import (
	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/workload"
)

// Ending is how a fault server ends a call after its messages: status Code (0 = OK) with
// Message; OKBeforeLast sends status OK before the last message (data after the terminal
// status, which only the native framing can carry).
type Ending struct {
	Code         uint32
	Message      string
	OKBeforeLast bool
}

// Plan is what a fault server sends for one call.
type Plan[M any] struct {
	Messages []M
	End      Ending
}

// Messages of the statuses the modes send instead of an answer.
const (
	wrongSummaryMessage = "conformance fault wrong-summary applies to client_stream calls only"
	errorStatusMessage  = "conformance fault error-status: INTERNAL instead of the answer"
)

// ResponseTo is the correct response with seq to request (its payload kind and response_size;
// an unknown kind answers zeros, as a server that skips validation would).
func ResponseTo(request *pb.Request, seq uint64) *pb.Response {
	kind, _ := workload.KindOf(request)
	return workload.Response(kind, seq, request.ResponseSize)
}

// Responses is what a server in mode f answers to a call of shape (unary, server stream, bidi)
// that carried requests (already checked, unless f skips validation), the call read whole
// first. (A bidi call answered request by request uses CorruptResponse and FirstRequestEnding.)
func Responses(f Server, shape workload.Shape, requests []*pb.Request) Plan[*pb.Response] {
	var correct []*pb.Response
	if len(requests) > 0 {
		first := requests[0]
		switch shape {
		case workload.ServerStream:
			for index := range uint64(first.ResponseMessages) {
				correct = append(correct, ResponseTo(first, index))
			}
		case workload.Bidi:
			for _, request := range requests {
				correct = append(correct, ResponseTo(request, request.Seq))
			}
		default:
			correct = []*pb.Response{ResponseTo(first, first.Seq)}
		}
	}
	extra := func(messages []*pb.Response) (*pb.Response, bool) {
		switch {
		case len(requests) == 0:
			return nil, false
		case shape == workload.ServerStream:
			return ResponseTo(requests[0], uint64(requests[0].ResponseMessages)), true
		case shape == workload.Bidi:
			last := requests[len(requests)-1]
			return ResponseTo(last, last.Seq+1), true
		case len(messages) > 0:
			return messages[len(messages)-1], true
		}
		return nil, false
	}
	return plan(f, false, correct, extra, CorruptResponse)
}

// Summaries is what a server in mode f answers to a client stream that carried requests.
func Summaries(f Server, requests []*pb.Request) Plan[*pb.Summary] {
	correct := []*pb.Summary{summaryOf(requests)}
	extra := func(messages []*pb.Summary) (*pb.Summary, bool) { return messages[len(messages)-1], true }
	return plan(f, true, correct, extra, corruptSummary)
}

// Single is the answer of a stack whose call has exactly one reply (net/rpc, HTTP): the unary
// answer, with the modes about message counts mapped onto the one reply (docs/stacks.md): no
// message for missing-message and early-status (a single reply cannot carry anything after its
// status), and for extra-message the reply followed by the one a stream would send next (seq +
// 1), so that a protobuf body holding both decodes to their merge, which a client refuses.
func Single(f Server, request *pb.Request) Plan[*pb.Response] {
	switch f {
	case EarlyStatus:
		f = MissingMessage
	case ExtraMessage:
		return Plan[*pb.Response]{Messages: []*pb.Response{ResponseTo(request, request.Seq), ResponseTo(request, request.Seq+1)}}
	}
	return Responses(f, workload.Unary, []*pb.Request{request})
}

// FirstRequestEnding is how a bidi call answered request by request ends at its first request
// in mode f, if it does: error-status and wrong-summary answer INTERNAL; missing-message and
// early-status end with status OK before the first response (a lock-step client waits for each
// response, so a server that held back a later one would wait with it forever).
func FirstRequestEnding(f Server) (Ending, bool) {
	switch f {
	case ErrorStatus:
		return Ending{Code: Internal, Message: errorStatusMessage}, true
	case WrongSummary:
		return Ending{Code: Internal, Message: wrongSummaryMessage}, true
	case MissingMessage, EarlyStatus:
		return Ending{}, true
	}
	return Ending{}, false
}

// CommandEnding is how a server in mode f ends a one-way command (shape send), which has
// nothing but its status to get wrong: error-status answers INTERNAL, every other mode OK with
// Empty (docs/stacks.md, "Conformance faults on zmq": grpc's send behaves as unary).
func CommandEnding(f Server) Ending {
	if f == ErrorStatus {
		return Ending{Code: Internal, Message: errorStatusMessage}
	}
	return Ending{}
}

// plan applies mode f to the correct messages of a call.
func plan[M any](f Server, summary bool, messages []M, extra func([]M) (M, bool), corrupt func(M, Server)) Plan[M] {
	p := Plan[M]{Messages: messages}
	switch f {
	case WrongSeq, ShortPayload, NonzeroByte, CorruptStructured:
		for _, m := range messages {
			corrupt(m, f)
		}
	case WrongSummary:
		if !summary {
			return Plan[M]{End: Ending{Code: Internal, Message: wrongSummaryMessage}}
		}
		for _, m := range messages {
			corrupt(m, f)
		}
	case MissingMessage:
		if len(messages) > 0 {
			p.Messages = messages[:len(messages)-1]
		}
	case ExtraMessage:
		if m, ok := extra(messages); ok {
			p.Messages = append(p.Messages, m)
		}
	case EarlyStatus:
		p.End.OKBeforeLast = true
	case ErrorStatus:
		return Plan[M]{End: Ending{Code: Internal, Message: errorStatusMessage}}
	}
	return p
}

// CorruptResponse applies a per-message mode to a response (other modes leave it alone).
func CorruptResponse(r *pb.Response, f Server) {
	if f == WrongSeq {
		r.Seq++
		return
	}
	r.Payload, r.Body = corruptPayload(f, r.Payload, r.Body, r.Seq)
}

func corruptSummary(s *pb.Summary, f Server) {
	switch f {
	case WrongSeq:
		s.LastSeq++
	case WrongSummary:
		s.Count++
	default:
		s.Payload, s.Body = corruptPayload(f, s.Payload, s.Body, s.LastSeq)
	}
}

// summaryOf is the correct summary of requests, checked or not: what arrived, with the payload
// the first request asks for, built from the last seq.
func summaryOf(requests []*pb.Request) *pb.Summary {
	summary := &pb.Summary{}
	if len(requests) == 0 {
		return summary
	}
	for _, request := range requests {
		summary.Count++
		summary.PayloadBytes += workload.PayloadLen(request.Payload, request.Body)
	}
	summary.LastSeq = requests[len(requests)-1].Seq
	response := ResponseTo(requests[0], summary.LastSeq)
	summary.Payload, summary.Body = response.Payload, response.Body
	return summary
}

// corruptPayload applies a payload mode to zero bytes (body nil) or a structured body built from
// seq. Zero payloads are shared and read-only, so a changed one is a copy.
func corruptPayload(f Server, payload []byte, body *pb.Structured, seq uint64) ([]byte, *pb.Structured) {
	switch {
	case f == ShortPayload && body == nil && len(payload) == 0:
		return []byte{0}, nil
	case f == ShortPayload && body == nil:
		return payload[:len(payload)-1], nil
	case f == ShortPayload && body.Title == "":
		return payload, workload.NewStructured(seq, 3)
	case f == ShortPayload:
		body.Title = body.Title[:len(body.Title)-1]
	case f == NonzeroByte:
		return nonzero(payload, body == nil), body
	case f == CorruptStructured && body == nil:
		return payload, workload.NewStructured(seq, 3)
	case f == CorruptStructured:
		CorruptBody(body, seq)
	}
	return payload, body
}

// CorruptBody changes one field of a structured body and keeps its encoded size
// (created_unix_ms + 1, or the title's first letter); an empty body cannot keep it and gets a
// 3-byte title instead.
func CorruptBody(body *pb.Structured, seq uint64) {
	if body.CreatedUnixMs != 0 {
		// 1.7e12 + seq mod 1e9 + 1 stays a 6-byte varint.
		body.CreatedUnixMs++
		return
	}
	if body.Title == "" {
		body.Title = workload.NewStructured(seq, 3).Title
	}
	title := []byte(body.Title)
	title[0] = 'a' + ((title[0]-'a')%26+1)%26
	body.Title = string(title)
}
