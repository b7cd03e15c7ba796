package native

import (
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/workload"
)

// gRPC status codes of the native STATUS frame.
const (
	StatusOK              = 0
	StatusInvalidArgument = 3
	StatusUnimplemented   = 12
)

// Next says whether a connection can carry another call after one ended.
type Next bool

// After a call: Again (the connection is in step for the next call) or Closed.
const (
	Again  Next = true
	Closed Next = false
)

// rejection is a well-framed but unacceptable call: answered with code once the client's END
// has been read; the connection stays in step.
type rejection struct {
	code    uint32
	message string
	endSeen bool
}

// broken is a broken frame sequence: answered with INVALID_ARGUMENT where possible, then the
// transport is closed.
type broken struct{ message string }

// gone is a transport that failed or a client that went away: nothing to answer.
type gone struct{}

// ServeCall serves one call on c: reads HEADER, dispatches on the method, checks every request
// (docs/peer-protocol.md "Validation duties"), answers, and ends with STATUS. A rejected call is
// counted in counters.Rejected.
func ServeCall(c Conn, counters *stack.Counters) Next {
	kind, body, err := c.R.Next()
	switch {
	case errors.Is(err, io.EOF):
		return Closed
	case err != nil:
		var framing *FramingError
		if errors.As(err, &framing) {
			tally := &stack.CallTally{}
			tally.Reject("a malformed frame: %s", framing.Reason)
			tally.Done(counters)
			return reply(c, StatusInvalidArgument, framing.Reason, Closed)
		}
		return Closed
	}
	tally := &stack.CallTally{}
	var failure any
	if kind != Header {
		failure = broken{fmt.Sprintf("a call must start with a HEADER frame, not %s", FrameName(kind))}
	} else if shape, ok := workload.ShapeOfMethod(body); ok && shape != workload.Send {
		failure = serveShape(c, shape, tally)
	} else if ok {
		failure = rejection{code: StatusUnimplemented, message: fmt.Sprintf("method %q is not carried by the native framing: it answers every request, so it has no one-way command", body)}
	} else {
		failure = rejection{code: StatusUnimplemented, message: fmt.Sprintf("unknown method %q", body)}
	}
	code, message, next, answer := verdict(c, failure, tally)
	// The call is counted before its STATUS goes out: a client that has read STATUS (and the
	// controller's WINDOW END after it) must find the call in the server's counters.
	tally.Done(counters)
	if !answer {
		return Closed
	}
	return reply(c, code, message, next)
}

// verdict is how a served call ends: the STATUS code and message, whether the connection can
// carry the next call, and whether there is anyone to answer (false when the transport failed).
func verdict(c Conn, failure any, tally *stack.CallTally) (code uint32, message string, next Next, answer bool) {
	switch f := failure.(type) {
	case nil:
		return StatusOK, "", Again, true
	case rejection:
		tally.Reject("a call answered with status %d: %s", f.code, f.message)
		logf("rejected a call with status %d: %s", f.code, f.message)
		next := Closed
		if f.endSeen || skipToEnd(c.R) {
			next = Again
		}
		return f.code, f.message, next, true
	case broken:
		tally.Reject("a malformed call: %s", f.message)
		logf("closing a malformed call: %s", f.message)
		return StatusInvalidArgument, f.message, Closed, true
	}
	return 0, "", Closed, false
}

func serveShape(c Conn, shape workload.Shape, tally *stack.CallTally) any {
	check := workload.NewCallCheck(shape)
	switch shape {
	case workload.Unary, workload.ServerStream:
		request, failure := nextRequest(c.R, shape)
		if failure != nil {
			return failure
		}
		if request == nil {
			return rejection{code: StatusInvalidArgument, message: fmt.Sprintf("a %s call carries one request, got none", shape), endSeen: true}
		}
		tally.Requests++
		more, failure := nextRequest(c.R, shape)
		if failure != nil {
			return failure
		}
		if more != nil {
			return rejection{code: StatusInvalidArgument, message: fmt.Sprintf("a %s call carries exactly one request, got more", shape)}
		}
		if err := check.Add(request); err != nil {
			return rejection{code: StatusInvalidArgument, message: err.Error(), endSeen: true}
		}
		kind, _ := workload.KindOf(request)
		if shape == workload.Unary {
			if err := c.W.Message(Message, workload.Response(kind, request.Seq, request.ResponseSize)); err != nil {
				return gone{}
			}
			tally.Responses++
			return nil
		}
		for index := uint64(0); index < uint64(request.ResponseMessages); index++ {
			if err := c.W.Message(Message, workload.Response(kind, index, request.ResponseSize)); err != nil {
				return gone{}
			}
			tally.Responses++
		}
	case workload.ClientStream, workload.Bidi:
		for {
			request, failure := nextRequest(c.R, shape)
			if failure != nil {
				return failure
			}
			if request == nil {
				break
			}
			tally.Requests++
			if err := check.Add(request); err != nil {
				return rejection{code: StatusInvalidArgument, message: err.Error()}
			}
			if shape == workload.Bidi {
				if err := c.W.Message(Message, workload.Response(check.Kind(), request.Seq, request.ResponseSize)); err != nil {
					return gone{}
				}
				tally.Responses++
				// Answer each request as it arrives: flush unless more input is already here.
				if !c.R.HasCompleteFrame() && c.W.Flush() != nil {
					return gone{}
				}
			}
		}
		if check.Count() == 0 {
			return rejection{code: StatusInvalidArgument, message: workload.EmptyStream, endSeen: true}
		}
		if shape == workload.ClientStream {
			if err := c.W.Message(Message, check.Summary()); err != nil {
				return gone{}
			}
			tally.Responses++
		}
	}
	return nil
}

// nextRequest is the next request of a call, or nil at END.
func nextRequest(r *Reader, shape workload.Shape) (*pb.Request, any) {
	kind, body, err := r.Next()
	if err != nil {
		var framing *FramingError
		if errors.As(err, &framing) {
			return nil, broken{framing.Reason}
		}
		return nil, gone{}
	}
	switch kind {
	case End:
		return nil, nil
	case Message:
		request := &pb.Request{}
		if err := proto.Unmarshal(body, request); err != nil {
			return nil, rejection{code: StatusInvalidArgument, message: fmt.Sprintf("the request is not a valid rpcarena.bench.v1.Request: %v", err)}
		}
		return request, nil
	}
	return nil, broken{fmt.Sprintf("unexpected %s frame in a %s call", FrameName(kind), shape)}
}

// skipToEnd drops frames up to the client's END so the connection stays in step; false if the
// framing or the transport broke first.
func skipToEnd(r *Reader) bool {
	for {
		kind, _, err := r.Next()
		if err != nil {
			return false
		}
		if kind != Message {
			return kind == End
		}
	}
}

// reply sends STATUS, flushes, ends the call's send side, and returns next (Closed if the
// transport failed).
func reply(c Conn, code uint32, message string, next Next) Next {
	if c.W.Message(Status, &pb.Status{Code: code, Message: message}) != nil || c.W.Flush() != nil {
		return Closed
	}
	if c.FinishSend != nil && c.FinishSend() != nil {
		return Closed
	}
	return next
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rpcarena-peer-go: "+format+"\n", args...)
}
