package workload

import (
	"fmt"

	pb "rpcarena/peers/go/internal/benchpb"
)

// CallCheck is a server's check of the requests of one call (docs/peer-protocol.md "Validation
// duties"): the payload of each request, its ranges (a command's response_size is 0), and
// within a stream the sequence numbers
// and that kind, payload length and response_size stay those of the first request. It also
// builds the client stream's summary. One per call; not safe for concurrent use.
type CallCheck struct {
	shape    Shape
	count    uint64
	bytes    uint64
	lastSeq  uint64
	kind     Kind
	size     uint64
	respSize uint32
}

// NewCallCheck starts checking a call of shape.
func NewCallCheck(shape Shape) *CallCheck { return &CallCheck{shape: shape} }

// Count is the number of requests accepted so far.
func (c *CallCheck) Count() uint64 { return c.count }

// Add checks the next request of the call; an error is the reason to answer INVALID_ARGUMENT.
func (c *CallCheck) Add(request *pb.Request) error {
	index := c.count
	kind, err := KindOf(request)
	if err != nil {
		return c.fail(index, err.Error())
	}
	if request.ResponseSize > MaxPayload {
		return c.fail(index, fmt.Sprintf("response_size %d is above the maximum %d", request.ResponseSize, MaxPayload))
	}
	if err := kind.CheckSize(request.ResponseSize); err != nil {
		return c.fail(index, "response_size: "+err.Error())
	}
	if c.shape == Send && request.ResponseSize != 0 {
		return c.fail(index, fmt.Sprintf("response_size %d in a command; a command has no response payload, so it must be 0", request.ResponseSize))
	}
	if c.shape == ServerStream && (request.ResponseMessages < 1 || request.ResponseMessages > MaxMessages) {
		return c.fail(index, fmt.Sprintf("response_messages %d is outside 1..=%d", request.ResponseMessages, MaxMessages))
	}
	if c.shape.StreamsRequests() && request.Seq != index {
		return c.fail(index, fmt.Sprintf("seq %d, expected %d", request.Seq, index))
	}
	length := PayloadLen(request.Payload, request.Body)
	if kind == Zeros {
		if request.Body != nil {
			return c.fail(index, "a structured body in a zeros request")
		}
		if err := checkZeros("request", request.Payload, uint32(len(request.Payload))); err != nil {
			return c.fail(index, err.Error())
		}
	} else {
		if len(request.Payload) != 0 {
			return c.fail(index, fmt.Sprintf("%d payload bytes in a structured request", len(request.Payload)))
		}
		if length == 1 || length == 2 {
			return c.fail(index, fmt.Sprintf("a structured body of %d bytes cannot be generated", length))
		}
		if err := CheckStructured("request", request.Body, request.Seq, uint32(length)); err != nil {
			return c.fail(index, err.Error())
		}
	}
	if index == 0 {
		c.kind, c.size, c.respSize = kind, length, request.ResponseSize
	} else {
		switch {
		case kind != c.kind:
			return c.fail(index, fmt.Sprintf("payload kind %s, but the stream began with %s", kind, c.kind))
		case length != c.size:
			return c.fail(index, fmt.Sprintf("payload length %d, but the stream began with %d", length, c.size))
		case request.ResponseSize != c.respSize:
			return c.fail(index, fmt.Sprintf("response_size %d, but the stream began with %d", request.ResponseSize, c.respSize))
		}
	}
	c.count++
	c.bytes += length
	c.lastSeq = request.Seq
	return nil
}

func (c *CallCheck) fail(index uint64, reason string) error {
	return &Invalid{Reason: fmt.Sprintf("request %d: %s", index, reason)}
}

// Kind is the payload kind of the call (that of its first request).
func (c *CallCheck) Kind() Kind { return c.kind }

// Summary is the client stream's answer: what arrived, with the payload the first request asked
// for, built from last_seq. Call it only after at least one request was accepted.
func (c *CallCheck) Summary() *pb.Summary {
	summary := &pb.Summary{Count: c.count, PayloadBytes: c.bytes, LastSeq: c.lastSeq}
	if c.kind == Structured {
		summary.Body = NewStructured(c.lastSeq, c.respSize)
	} else {
		summary.Payload = ZeroBytes(c.respSize)
	}
	return summary
}

// EmptyStream is the reason to refuse a client stream or bidi call that carried no request.
const EmptyStream = "a client stream carries at least one request"
