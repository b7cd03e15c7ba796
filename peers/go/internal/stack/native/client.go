package native

import (
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/workload"
)

// Conn is one call's transport: a QUIC stream (OneCall: it carries exactly one call and ends) or
// a TLS connection (it carries the next call).
type Conn struct {
	R *Reader
	W *Writer
	// FinishSend ends the send direction after the call's last frame (QUIC: FIN); nil where the
	// transport carries the next call.
	FinishSend func() error
	// OneCall: after STATUS the stream must end.
	OneCall bool
	// Abort, if set, stops both directions of a call that failed while its requests may still
	// be going out (QUIC: reset the stream), so the sending goroutine returns.
	Abort func()
}

// Call runs one whole operation of wl: requests are built, encoded and sent, every response is
// decoded and validated, and the terminal STATUS is read and checked.
func Call(c Conn, wl workload.Workload, seq uint64) (engine.Outcome, *engine.OpError) {
	if wl.Shape == workload.Send { // refused by the arguments already (args.Carried)
		return engine.Outcome{}, engine.Errorf("internal", "the native framing has no one-way command (--shape send)")
	}
	n := uint64(wl.Messages)
	var outcome engine.Outcome
	switch wl.Shape {
	case workload.Unary, workload.ServerStream:
		messages := uint32(0)
		if wl.Shape == workload.ServerStream {
			messages = wl.Messages
		}
		if err := send(c, wl.Shape, func(yield func(*pb.Request) bool) {
			yield(workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, messages))
		}); err != nil {
			return outcome, err
		}
		outcome.Requests, outcome.RequestBytes = 1, uint64(wl.RequestSize)
		if wl.Shape == workload.Unary {
			response := &pb.Response{}
			if err := readOne(c.R, response); err != nil {
				return outcome, err
			}
			if err := workload.CheckResponse(response, wl.Kind, seq, wl.ResponseSize); err != nil {
				return outcome, invalid(err.Error())
			}
			outcome.Responses, outcome.ResponseBytes = 1, workload.PayloadLen(response.Payload, response.Body)
		} else {
			bytes, err := readResponses(c.R, wl)
			if err != nil {
				return outcome, err
			}
			outcome.Responses, outcome.ResponseBytes = n, bytes
		}
	case workload.ClientStream:
		if err := send(c, wl.Shape, requests(wl)); err != nil {
			return outcome, err
		}
		summary := &pb.Summary{}
		if err := readOne(c.R, summary); err != nil {
			return outcome, err
		}
		if err := workload.CheckSummary(summary, wl.Kind, n, wl.RequestSize, wl.ResponseSize); err != nil {
			return outcome, invalid(err.Error())
		}
		outcome = engine.Outcome{Requests: n, RequestBytes: n * uint64(wl.RequestSize), Responses: 1,
			ResponseBytes: workload.PayloadLen(summary.Payload, summary.Body)}
	case workload.Bidi:
		// Full duplex: every request goes out without waiting while responses are read.
		sent := make(chan *engine.OpError, 1)
		go func() { sent <- send(c, wl.Shape, requests(wl)) }()
		bytes, err := readResponses(c.R, wl)
		if err != nil && c.Abort != nil {
			c.Abort()
		}
		sendErr := <-sent
		if err == nil {
			err = sendErr
		}
		if err != nil {
			return outcome, err
		}
		outcome = engine.Outcome{Requests: n, RequestBytes: n * uint64(wl.RequestSize), Responses: n, ResponseBytes: bytes}
	case workload.Pingpong:
		bytes, err := pingpong(c, wl)
		if err != nil {
			return outcome, err
		}
		outcome = engine.Outcome{Requests: n, RequestBytes: n * uint64(wl.RequestSize), Responses: n, ResponseBytes: bytes}
	}
	if c.OneCall {
		if err := expectEnd(c.R); err != nil {
			return outcome, err
		}
	}
	return outcome, nil
}

// Saturate runs one send-saturation stream (the caller opened sender): request messages go out
// while the sender admits them, each accepted when the frame writer took it (which flushes, and
// so waits for the transport, whenever WriteBatch bytes are buffered); then END, and the summary
// must confirm every message.
func Saturate(c Conn, wl workload.Workload, clock engine.Clock, sender *engine.StreamSender) *engine.OpError {
	if err := c.W.Frame(Header, []byte(workload.ClientStream.Method())); err != nil {
		return sendError(err)
	}
	for seq, ok := sender.Next(clock.Now()); ok; seq, ok = sender.Next(clock.Now()) {
		if err := c.W.Message(Message, workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, 0)); err != nil {
			return sendError(err)
		}
		sender.Accepted(clock.Now(), uint64(wl.RequestSize))
	}
	if err := endRequests(c); err != nil {
		return err
	}
	summary := &pb.Summary{}
	if err := readOne(c.R, summary); err != nil {
		return err
	}
	if err := workload.CheckSummary(summary, wl.Kind, sender.Sent(), wl.RequestSize, wl.ResponseSize); err != nil {
		return invalid(err.Error())
	}
	if c.OneCall {
		if err := expectEnd(c.R); err != nil {
			return err
		}
	}
	sender.SummaryReceived(clock.Now(), workload.PayloadLen(summary.Payload, summary.Body))
	return nil
}

// pingpong runs the N exchanges of a lock-step Bidi call: request i is written and flushed, its
// response read and checked, and only then request i+1 goes out; after the last response END
// ends the requests and STATUS OK must follow. It returns the responses' payload bytes.
func pingpong(c Conn, wl workload.Workload) (uint64, *engine.OpError) {
	if err := c.W.Frame(Header, []byte(wl.Shape.Method())); err != nil {
		return 0, sendError(err)
	}
	var bytes uint64
	n := uint64(wl.Messages)
	response := &pb.Response{}
	for i := uint64(0); i < n; i++ {
		if err := c.W.Message(Message, workload.Request(wl.Kind, i, wl.RequestSize, wl.ResponseSize, 0)); err != nil {
			return bytes, sendError(err)
		}
		if err := c.W.Flush(); err != nil {
			return bytes, sendError(err)
		}
		kind, body, err := next(c.R)
		if err != nil {
			return bytes, err
		}
		switch kind {
		case Message:
		case Status:
			if err := checkStatus(body); err != nil {
				return bytes, err
			}
			return bytes, invalid(fmt.Sprintf("the server ended the call after %d of %d responses", i, n))
		default:
			return bytes, unexpected(kind)
		}
		length, err := checked(body, response, wl, i)
		if err != nil {
			return bytes, err
		}
		bytes += length
	}
	if err := endRequests(c); err != nil {
		return bytes, err
	}
	kind, body, err := next(c.R)
	switch {
	case err != nil:
		return bytes, err
	case kind == Message:
		return bytes, invalid(fmt.Sprintf("the server sent more than the %d responses asked for", n))
	case kind != Status:
		return bytes, unexpected(kind)
	}
	return bytes, checkStatus(body)
}

// requests yields the N requests of a streamed call, built one by one inside the operation.
func requests(wl workload.Workload) func(func(*pb.Request) bool) {
	return func(yield func(*pb.Request) bool) {
		for i := uint64(0); i < uint64(wl.Messages); i++ {
			if !yield(workload.Request(wl.Kind, i, wl.RequestSize, wl.ResponseSize, 0)) {
				return
			}
		}
	}
}

// send writes HEADER, one MESSAGE per request, END; flushes; and ends the send direction.
func send(c Conn, shape workload.Shape, messages func(func(*pb.Request) bool)) *engine.OpError {
	if err := c.W.Frame(Header, []byte(shape.Method())); err != nil {
		return sendError(err)
	}
	var failed error
	messages(func(request *pb.Request) bool {
		failed = c.W.Message(Message, request)
		return failed == nil
	})
	if failed != nil {
		return sendError(failed)
	}
	if err := endRequests(c); err != nil {
		return err
	}
	return nil
}

// endRequests writes END, flushes, and ends the send direction.
func endRequests(c Conn) *engine.OpError {
	if err := c.W.Frame(End, nil); err != nil {
		return sendError(err)
	}
	if err := c.W.Flush(); err != nil {
		return sendError(err)
	}
	if c.FinishSend != nil {
		if err := c.FinishSend(); err != nil {
			return engine.Errorf("connect", "cannot end the request stream: %v", err)
		}
	}
	return nil
}

// readOne reads exactly one MESSAGE into message, then STATUS OK.
func readOne(r *Reader, message proto.Message) *engine.OpError {
	kind, body, err := next(r)
	if err != nil {
		return err
	}
	switch kind {
	case Message:
		if err := proto.Unmarshal(body, message); err != nil {
			return invalid(fmt.Sprintf("undecodable response message: %v", err))
		}
		kind, body, err := next(r)
		if err != nil {
			return err
		}
		switch kind {
		case Status:
			return checkStatus(body)
		case Message:
			return invalid("the server sent more than one response message")
		}
		return unexpected(kind)
	case Status:
		if err := checkStatus(body); err != nil {
			return err
		}
		return invalid("the server ended the call with STATUS OK but no response message")
	}
	return unexpected(kind)
}

// readResponses reads exactly N responses with seq 0..N-1 (bidi: the request's seq, the same),
// then STATUS OK; it returns their payload bytes.
func readResponses(r *Reader, wl workload.Workload) (uint64, *engine.OpError) {
	var received, bytes uint64
	n := uint64(wl.Messages)
	response := &pb.Response{}
	for {
		kind, body, err := next(r)
		if err != nil {
			return bytes, err
		}
		switch kind {
		case Message:
			if received == n {
				return bytes, invalid(fmt.Sprintf("the server sent more than the %d responses asked for", n))
			}
			length, err := checked(body, response, wl, received)
			if err != nil {
				return bytes, err
			}
			bytes += length
			received++
		case Status:
			if err := checkStatus(body); err != nil {
				return bytes, err
			}
			if received != n {
				return bytes, invalid(fmt.Sprintf("the server ended the call after %d of %d responses", received, n))
			}
			return bytes, nil
		default:
			return bytes, unexpected(kind)
		}
	}
}

// checked decodes a MESSAGE body into response and checks it as response seq of wl; it returns
// its payload length.
func checked(body []byte, response *pb.Response, wl workload.Workload, seq uint64) (uint64, *engine.OpError) {
	proto.Reset(response)
	if err := proto.Unmarshal(body, response); err != nil {
		return 0, invalid(fmt.Sprintf("undecodable response message: %v", err))
	}
	if err := workload.CheckResponse(response, wl.Kind, seq, wl.ResponseSize); err != nil {
		return 0, invalid(err.Error())
	}
	return workload.PayloadLen(response.Payload, response.Body), nil
}

// expectEnd: after STATUS a one-call stream must end (no data after STATUS).
func expectEnd(r *Reader) *engine.OpError {
	kind, _, err := r.Next()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return receiveError(err)
	}
	return invalid(fmt.Sprintf("the server sent a %s frame after STATUS", FrameName(kind)))
}

func next(r *Reader) (byte, []byte, *engine.OpError) {
	kind, body, err := r.Next()
	if errors.Is(err, io.EOF) {
		return 0, nil, engine.Errorf("connect", "the server closed the stream before sending STATUS")
	}
	if err != nil {
		return 0, nil, receiveError(err)
	}
	return kind, body, nil
}

func checkStatus(body []byte) *engine.OpError {
	status := &pb.Status{}
	if err := proto.Unmarshal(body, status); err != nil {
		return invalid(fmt.Sprintf("undecodable STATUS frame: %v", err))
	}
	if status.Code != 0 {
		return engine.Errorf("rpc", "the server ended the call with status %d: %s", status.Code, status.Message)
	}
	return nil
}

func sendError(err error) *engine.OpError {
	var transport *TransportError
	if errors.As(err, &transport) {
		return transportError("sending to the server failed", transport.Err)
	}
	return engine.Errorf("internal", "cannot encode a request frame: %v", err)
}

func receiveError(err error) *engine.OpError {
	var transport *TransportError
	if errors.As(err, &transport) {
		return transportError("receiving from the server failed", transport.Err)
	}
	return invalid(fmt.Sprintf("malformed frame from the server: %v", err))
}

// transportError is `connect`, or `timeout` when a deadline (the drain bound) cut the transport.
func transportError(what string, err error) *engine.OpError {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return engine.Errorf("timeout", "%s: %v", what, err)
	}
	return engine.Errorf("connect", "%s: %v", what, err)
}

func unexpected(kind byte) *engine.OpError {
	return invalid(fmt.Sprintf("the server sent an unexpected %s frame", FrameName(kind)))
}

func invalid(message string) *engine.OpError {
	return &engine.OpError{Code: "invalid", Message: message}
}
