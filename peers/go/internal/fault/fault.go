// Package fault holds the conformance fault modes (docs/stacks.md, "Conformance faults"; the
// Rust peer's crates/peer/src/fault.rs is the reference of every mode): deliberate misbehaviour
// for `rpcarena conformance`, never for measuring. A server started with `--conformance-fault
// MODE` answers every call wrongly in one way; a client started with it sends one malformed
// call, expects INVALID_ARGUMENT, then one well-formed call, and ends with `stopped` (pass) or
// `error` (fail) instead of measuring. The modes are hidden from `capabilities`; a peer running
// one says so on stderr.
//
// This package is the pure part: the modes, which requests a client mode sends, which answer a
// server mode gives, and how a client judges the server's answer. The stacks run them.
package fault

import (
	"fmt"
	"slices"
	"strings"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/workload"
)

// gRPC status codes the modes use (the native framing, net/rpc and HTTP stacks map them).
const (
	OK              = 0
	InvalidArgument = 3
	Internal        = 13
)

// Server is how a server misbehaves on every call.
type Server string

// The server modes (fault.rs, "Server modes").
const (
	WrongSeq          Server = "wrong-seq"
	ShortPayload      Server = "short-payload"
	NonzeroByte       Server = "nonzero-byte"
	WrongSummary      Server = "wrong-summary"
	MissingMessage    Server = "missing-message"
	ExtraMessage      Server = "extra-message"
	EarlyStatus       Server = "early-status"
	ErrorStatus       Server = "error-status"
	CorruptStructured Server = "corrupt-structured"
	SkipValidation    Server = "skip-validation"
)

// ServerModes lists every server mode.
var ServerModes = []Server{WrongSeq, ShortPayload, NonzeroByte, WrongSummary, MissingMessage,
	ExtraMessage, EarlyStatus, ErrorStatus, CorruptStructured, SkipValidation}

// Client is the malformed call a client sends.
type Client string

// The client modes (fault.rs, "Client modes").
const (
	ClientNonzeroByte       Client = "nonzero-byte"
	ClientCorruptStructured Client = "corrupt-structured"
	SeqOrder                Client = "seq-order"
	LengthChange            Client = "length-change"
	ResponseSizeTooLarge    Client = "response-size-too-large"
	ResponseMessagesZero    Client = "response-messages-zero"
	EmptyStream             Client = "empty-stream"
)

// ClientModes lists every client mode.
var ClientModes = []Client{ClientNonzeroByte, ClientCorruptStructured, SeqOrder, LengthChange,
	ResponseSizeTooLarge, ResponseMessagesZero, EmptyStream}

// ParseServer reads a server mode.
func ParseServer(text string) (Server, error) {
	if slices.Contains(ServerModes, Server(text)) {
		return Server(text), nil
	}
	return "", fmt.Errorf("--conformance-fault %q is not a server mode; expected one of %s", text, joined(ServerModes))
}

// ParseClient reads a client mode.
func ParseClient(text string) (Client, error) {
	if slices.Contains(ClientModes, Client(text)) {
		return Client(text), nil
	}
	return "", fmt.Errorf("--conformance-fault %q is not a client mode; expected one of %s", text, joined(ClientModes))
}

func joined[M ~string](modes []M) string {
	names := make([]string, len(modes))
	for i, mode := range modes {
		names[i] = string(mode)
	}
	return strings.Join(names, ", ")
}

// Validates says whether the server still does its validation duty in this mode.
func (f Server) Validates() bool { return f != SkipValidation }

// Check says whether the client mode applies to wl; the error names the argument that does not
// fit. Pingpong counts as bidi (it is the Bidi RPC).
func (f Client) Check(wl workload.Workload) error {
	shapes := workload.Shapes
	switch f {
	case SeqOrder, LengthChange, EmptyStream:
		shapes = []workload.Shape{workload.ClientStream, workload.Bidi, workload.Pingpong}
	case ResponseMessagesZero:
		shapes = []workload.Shape{workload.ServerStream}
	}
	if !slices.Contains(shapes, wl.Shape) {
		names := make([]string, len(shapes))
		for i, shape := range shapes {
			names[i] = shape.String()
		}
		return fmt.Errorf("--conformance-fault %s applies to --shape %s, not %s", f, strings.Join(names, " or "), wl.Shape)
	}
	if f == ClientCorruptStructured && wl.Kind != workload.Structured {
		return fmt.Errorf("--conformance-fault %s needs --payload structured", f)
	}
	return nil
}

// Describe says what the malformed call is, for messages.
func (f Client) Describe() string {
	return map[Client]string{
		ClientNonzeroByte:       "a payload byte 0x01 in every request",
		ClientCorruptStructured: "a structured body with one field changed in every request",
		SeqOrder:                "requests with seq 0, 2, 1, ... (out of order)",
		LengthChange:            "a second request whose payload length differs from the first's",
		ResponseSizeTooLarge:    "response_size 16777217, above the 16 MiB maximum",
		ResponseMessagesZero:    "response_messages 0 in a server stream",
		EmptyStream:             "a request stream that ends before any request",
	}[f]
}

// Requests are the requests of the malformed call for wl (the validation operation's seq 0).
func (f Client) Requests(wl workload.Workload) []*pb.Request {
	responseMessages := uint32(0)
	if wl.Shape == workload.ServerStream {
		responseMessages = wl.Messages
	}
	count := uint32(1)
	switch {
	case f == EmptyStream:
		count = 0
	case f == LengthChange:
		count = max(wl.Messages, 2)
	case wl.Shape.StreamsRequests():
		count = wl.Messages
	}
	requests := make([]*pb.Request, count)
	for index := range count {
		seq, size := uint64(index), wl.RequestSize
		if f == SeqOrder {
			seq = swapped(seq, count)
		}
		if f == LengthChange && index == 1 {
			size = otherLength(wl.Kind, size)
		}
		request := workload.Request(wl.Kind, seq, size, wl.ResponseSize, responseMessages)
		switch f {
		case ClientNonzeroByte:
			request.Payload = nonzero(request.Payload, request.Body == nil)
		case ClientCorruptStructured:
			if request.Body == nil {
				request.Body = &pb.Structured{}
			}
			CorruptBody(request.Body, request.Seq)
		case ResponseSizeTooLarge:
			request.ResponseSize = workload.MaxPayload + 1
		case ResponseMessagesZero:
			request.ResponseMessages = 0
		}
		requests[index] = request
	}
	return requests
}

// swapped is the seq of request index in seq-order: 0, 2, 1, 3, 4, ... (a single request: 1).
func swapped(index uint64, count uint32) uint64 {
	switch {
	case index == 0 && count == 1:
		return 1
	case index == 1:
		return 2
	case index == 2:
		return 1
	}
	return index
}

// otherLength is a payload length other than size that kind can build: one byte less, or more
// where that is impossible (0, or structured 3).
func otherLength(kind workload.Kind, size uint32) uint32 {
	switch {
	case kind == workload.Zeros && size == 0:
		return 1
	case kind == workload.Structured && size == 0:
		return 3
	case kind == workload.Structured && size == 3:
		return 4
	}
	return size - 1
}

// nonzero is payload with its last byte 0x01 (zeros; an empty payload becomes the one byte), or
// with a byte 0x01 added beside a structured body. It copies: zero payloads are shared.
func nonzero(payload []byte, zeros bool) []byte {
	changed := append([]byte{}, payload...)
	if zeros && len(changed) > 0 {
		changed[len(changed)-1] = 1
		return changed
	}
	return append(changed, 1)
}

// Verdict is how a server ended a malformed call: its status code (0 = OK) and message, and the
// response messages it sent before.
type Verdict struct {
	Code      uint32
	Message   string
	Responses uint64
}

// Judge passes INVALID_ARGUMENT; status OK (the server accepted the malformed call) fails with
// code `invalid`, any other status with `rpc`.
func Judge(f Client, v Verdict) *engine.OpError {
	call := fmt.Sprintf("--conformance-fault %s: %s", f, f.Describe())
	switch v.Code {
	case InvalidArgument:
		return nil
	case OK:
		return engine.Errorf("invalid", "the server accepted a malformed call (%s) and ended it with status OK after %d response message(s); it must answer INVALID_ARGUMENT (3)", call, v.Responses)
	}
	return engine.Errorf("rpc", "the server answered a malformed call (%s) with status %d (%q); expected INVALID_ARGUMENT (3)", call, v.Code, v.Message)
}
