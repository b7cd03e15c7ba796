package workload

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
)

// Invalid is a message that does not match what was asked for: a client fails the operation with
// code `invalid`, a server answers INVALID_ARGUMENT.
type Invalid struct{ Reason string }

func (e *Invalid) Error() string { return e.Reason }

func invalidf(format string, args ...any) error {
	return &Invalid{Reason: fmt.Sprintf(format, args...)}
}

// checkZeros checks a zeros payload: its length and that every byte is zero.
func checkZeros(what string, payload []byte, size uint32) error {
	if len(payload) != int(size) {
		return invalidf("%s: payload length %d but %d was requested", what, len(payload), size)
	}
	const chunk = 64 * 1024
	zero := ZeroBytes(chunk)
	for offset := 0; offset < len(payload); offset += chunk {
		part := payload[offset:min(offset+chunk, len(payload))]
		if !bytes.Equal(part, zero[:len(part)]) {
			position := offset + slices.IndexFunc(part, func(b byte) bool { return b != 0 })
			return invalidf("%s: payload byte %d is %#02x, expected zero", what, position, payload[position])
		}
	}
	return nil
}

// CheckStructured checks a structured body: its encoded size and every field against
// NewStructured(seq, size). A missing body is the empty message.
func CheckStructured(what string, body *pb.Structured, seq uint64, size uint32) error {
	if body == nil {
		body = &pb.Structured{}
	}
	if n := proto.Size(body); n != int(size) {
		return invalidf("%s: structured payload encodes to %d bytes but %d was requested", what, n, size)
	}
	expected := NewStructured(seq, size)
	field := ""
	switch {
	case body.Title != expected.Title:
		field = "title"
	case body.CreatedUnixMs != expected.CreatedUnixMs:
		field = "created_unix_ms"
	case !maps.Equal(body.Attributes, expected.Attributes):
		field = "attributes"
	case len(body.Items) != len(expected.Items):
		field = fmt.Sprintf("items (%d, expected %d)", len(body.Items), len(expected.Items))
	default:
		for k, got := range body.Items {
			want := expected.Items[k]
			if got.Id != want.Id || got.Name != want.Name || got.Score != want.Score || !slices.Equal(got.Tags, want.Tags) {
				field = fmt.Sprintf("items[%d]", k)
				break
			}
		}
	}
	if field != "" {
		return invalidf("%s: structured payload differs from the one generated for seq %d and %d bytes in %s", what, seq, size, field)
	}
	return nil
}

// checkBody checks a message's payload of kind: zeros (no body) or structured (no zero bytes).
func checkBody(what string, kind Kind, payload []byte, body *pb.Structured, seq uint64, size uint32) error {
	if kind == Zeros {
		if body != nil {
			return invalidf("%s: a structured body where zero bytes were requested", what)
		}
		return checkZeros(what, payload, size)
	}
	if len(payload) != 0 {
		return invalidf("%s: %d payload bytes where a structured body was requested", what, len(payload))
	}
	return CheckStructured(what, body, seq, size)
}

// CheckResponse is the client's check of one response: its sequence number and payload.
func CheckResponse(response *pb.Response, kind Kind, seq uint64, size uint32) error {
	if response.Seq != seq {
		return invalidf("response seq %d but %d was expected", response.Seq, seq)
	}
	return checkBody("response", kind, response.Payload, response.Body, seq, size)
}

// CheckSummary is the client's check of a client stream's summary after it sent `messages`
// requests of requestSize bytes: counts, last seq, and the payload built from last_seq.
func CheckSummary(summary *pb.Summary, kind Kind, messages uint64, requestSize, responseSize uint32) error {
	if summary.Count != messages {
		return invalidf("summary counts %d messages but %d were sent", summary.Count, messages)
	}
	if want := messages * uint64(requestSize); summary.PayloadBytes != want {
		return invalidf("summary counts %d payload bytes but %d were sent", summary.PayloadBytes, want)
	}
	if messages > 0 && summary.LastSeq != messages-1 {
		return invalidf("summary last seq %d but %d was sent last", summary.LastSeq, messages-1)
	}
	return checkBody("summary", kind, summary.Payload, summary.Body, summary.LastSeq, responseSize)
}
