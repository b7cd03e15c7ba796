// Package workload is the rpcarena workload contract (proto/rpcarena/bench/v1/bench.proto and
// docs/peer-protocol.md "Payload kinds" and "Validation duties"): the four shapes, the two
// payload kinds, how requests and responses are built, and how each side checks what it
// receives. It does no I/O; every stack builds and checks its messages here, so that they all do
// the same work.
package workload

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
)

// Limits of the protocol.
const (
	// MaxPayload is the largest request or response payload, 16 MiB.
	MaxPayload = 16 * 1024 * 1024
	// MaxMessage is the largest encoded message: a payload plus 1 KiB for the other fields.
	MaxMessage = MaxPayload + 1024
	// MaxMessages is the largest number of messages in one streamed direction.
	MaxMessages = 1_000_000
)

// Shape is one of the four RPC shapes of BenchService, pingpong (1.2): the Bidi RPC driven in
// lock-step, each request sent only after the previous response arrived, or send (1.3): a
// one-way command, the Command RPC answered with Empty (response_size 0).
type Shape int

// The shapes, in report order.
const (
	Unary Shape = iota
	ClientStream
	ServerStream
	Bidi
	Pingpong
	Send
)

// Shapes lists every shape.
var Shapes = []Shape{Unary, ClientStream, ServerStream, Bidi, Pingpong, Send}

// Methods lists the shapes that are RPCs of their own (pingpong is the Bidi RPC; send is
// Command).
var Methods = []Shape{Unary, ClientStream, ServerStream, Bidi, Send}

var shapeNames = [...]string{"unary", "client_stream", "server_stream", "bidi", "pingpong", "send"}
var methodNames = [...]string{"Unary", "ClientStream", "ServerStream", "Bidi", "Bidi", "Command"}

// String is the name used in arguments and events.
func (s Shape) String() string { return shapeNames[s] }

// Method is the gRPC method path of the shape, also the native framing's HEADER body. Pingpong
// calls the Bidi method, send the Command method.
func (s Shape) Method() string { return "/rpcarena.bench.v1.BenchService/" + methodNames[s] }

// Wire is the RPC the shape calls: Bidi for pingpong, the shape itself otherwise.
func (s Shape) Wire() Shape {
	if s == Pingpong {
		return Bidi
	}
	return s
}

// StreamsRequests says whether the client sends N requests.
func (s Shape) StreamsRequests() bool { return s == ClientStream || s == Bidi || s == Pingpong }

// StreamsResponses says whether the server sends N responses.
func (s Shape) StreamsResponses() bool { return s == ServerStream || s == Bidi || s == Pingpong }

// ParseShape reads a shape name.
func ParseShape(text string) (Shape, error) {
	for i, name := range shapeNames {
		if name == text {
			return Shape(i), nil
		}
	}
	return 0, fmt.Errorf("unknown shape %q; expected one of unary, client_stream, server_stream, bidi, pingpong, send", text)
}

// ShapeOfMethod finds the shape of a method path (never Pingpong: a server sees the Bidi RPC).
func ShapeOfMethod(path []byte) (Shape, bool) {
	for _, shape := range Methods {
		if string(path) == shape.Method() {
			return shape, true
		}
	}
	return 0, false
}

// Kind is a payload kind.
type Kind int

// The payload kinds.
const (
	Zeros Kind = iota
	Structured
)

// String is the name used in arguments and capabilities.
func (k Kind) String() string {
	if k == Structured {
		return "structured"
	}
	return "zeros"
}

// ParseKind reads a payload kind name.
func ParseKind(text string) (Kind, error) {
	switch text {
	case "zeros":
		return Zeros, nil
	case "structured":
		return Structured, nil
	}
	return 0, fmt.Errorf("unknown payload %q; expected zeros or structured", text)
}

func (k Kind) wire() pb.PayloadKind {
	if k == Structured {
		return pb.PayloadKind_PAYLOAD_KIND_STRUCTURED
	}
	return pb.PayloadKind_PAYLOAD_KIND_ZEROS
}

// KindOf reads a request's payload_kind; an unknown value is refused.
func KindOf(request *pb.Request) (Kind, error) {
	switch request.GetPayloadKind() {
	case pb.PayloadKind_PAYLOAD_KIND_ZEROS:
		return Zeros, nil
	case pb.PayloadKind_PAYLOAD_KIND_STRUCTURED:
		return Structured, nil
	}
	return 0, fmt.Errorf("unknown payload_kind %d; expected 0 (zeros) or 1 (structured)", request.GetPayloadKind())
}

// CheckSize says whether a payload of size bytes can be built: any size for zeros, 0 or at
// least 3 for structured (no message of its fields encodes to 1 or 2 bytes).
func (k Kind) CheckSize(size uint32) error {
	if k == Structured && (size == 1 || size == 2) {
		return fmt.Errorf("a structured payload of %d bytes cannot be built; use 0 or at least 3", size)
	}
	return nil
}

// Workload is what every operation of a sample does.
type Workload struct {
	Shape        Shape
	RequestSize  uint32
	ResponseSize uint32
	// Messages is N, the messages in each streamed direction.
	Messages uint32
	Kind     Kind
}

// RequestsPerOp is the number of request messages of one operation.
func (w Workload) RequestsPerOp() uint64 {
	if w.Shape.StreamsRequests() {
		return uint64(w.Messages)
	}
	return 1
}

// ResponsesPerOp is the number of response messages of one operation (a summary is one, and so
// is the Empty that acknowledges a command).
func (w Workload) ResponsesPerOp() uint64 {
	if w.Shape.StreamsResponses() {
		return uint64(w.Messages)
	}
	return 1
}

// Request builds request seq of kind with a payload of requestSize bytes.
func Request(kind Kind, seq uint64, requestSize, responseSize, responseMessages uint32) *pb.Request {
	request := &pb.Request{
		Seq:              seq,
		ResponseSize:     responseSize,
		ResponseMessages: responseMessages,
		PayloadKind:      kind.wire(),
	}
	if kind == Structured {
		request.Body = NewStructured(seq, requestSize)
	} else {
		request.Payload = ZeroBytes(requestSize)
	}
	return request
}

// Response builds the response with sequence number seq that request asks for.
func Response(kind Kind, seq uint64, size uint32) *pb.Response {
	if kind == Structured {
		return &pb.Response{Seq: seq, Body: NewStructured(seq, size)}
	}
	return &pb.Response{Seq: seq, Payload: ZeroBytes(size)}
}

// PayloadLen is a message's payload length: its zero bytes, or the encoded length of its
// structured body (one of the two is empty).
func PayloadLen(payload []byte, body *pb.Structured) uint64 {
	if body != nil {
		return uint64(len(payload)) + uint64(proto.Size(body))
	}
	return uint64(len(payload))
}
