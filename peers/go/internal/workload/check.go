package workload

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

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
// Structured(seq, size), compared field by field with the generation rule (without building
// the expected message). A missing body is the empty message.
func CheckStructured(what string, body *pb.Structured, seq uint64, size uint32) error {
	if body == nil {
		body = &pb.Structured{}
	}
	if n := EncodedSize(body); n != int(size) {
		return invalidf("%s: structured payload encodes to %d bytes but %d was requested", what, n, size)
	}
	if size < 3 {
		return nil // the empty message, and its size matched
	}
	if field := differs(body, seq, layoutOf(seq, size)); field != "" {
		return invalidf("%s: structured payload differs from the one generated for seq %d and %d bytes in %s", what, seq, size, field)
	}
	return nil
}

// differs names the first field of body that is not that of layout l for seq, or "".
func differs(body *pb.Structured, seq uint64, l layout) string {
	if len(body.Title) != l.title {
		return "title"
	}
	for j := 0; j < l.title; j++ {
		if body.Title[j] != titleByte(seq, j) {
			return "title"
		}
	}
	created := int64(0)
	if l.base {
		created = int64(StructuredEpochMs + seq%1_000_000_000)
	}
	if body.CreatedUnixMs != created {
		return "created_unix_ms"
	}
	if l.base {
		if len(body.Attributes) != 1 || body.Attributes["seq"] != string(l.seq[:l.digits]) {
			return "attributes"
		}
	} else if len(body.Attributes) != 0 {
		return "attributes"
	}
	if uint64(len(body.Items)) != l.items {
		return fmt.Sprintf("items (%d, expected %d)", len(body.Items), l.items)
	}
	var name, tag [32]byte
	for k, got := range body.Items {
		k := uint64(k)
		if got.Id != k+1 || got.Score != float64(k+1)*0.25 || len(got.Tags) != 2 || got.Tags[0] != "bench" ||
			got.Name != string(strconv.AppendUint(append(name[:0], "item-"...), k, 10)) ||
			got.Tags[1] != string(strconv.AppendUint(append(tag[:0], "tag"...), k%10, 10)) {
			return fmt.Sprintf("items[%d]", k)
		}
	}
	return ""
}

// EncodedSize is the length of body's protobuf encoding, computed from its fields (what
// proto.Size says, without the reflection; unknown fields count as received).
func EncodedSize(body *pb.Structured) int {
	size := len(body.ProtoReflect().GetUnknown())
	if body.Title != "" {
		size += fieldCost(len(body.Title))
	}
	if body.CreatedUnixMs != 0 {
		size += 1 + protowire.SizeVarint(uint64(body.CreatedUnixMs))
	}
	for _, it := range body.Items {
		size += fieldCost(encodedItemSize(it))
	}
	for key, value := range body.Attributes {
		// Go's encoder writes both fields of every map entry.
		size += fieldCost(fieldCost(len(key)) + fieldCost(len(value)))
	}
	return size
}

func encodedItemSize(it *pb.Item) int {
	size := len(it.ProtoReflect().GetUnknown())
	if it.Id != 0 {
		size += 1 + protowire.SizeVarint(it.Id)
	}
	if it.Name != "" {
		size += fieldCost(len(it.Name))
	}
	if it.Score != 0 {
		size += 1 + 8
	}
	for _, tag := range it.Tags {
		size += fieldCost(len(tag))
	}
	return size
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
