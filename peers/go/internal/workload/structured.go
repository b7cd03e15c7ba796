package workload

import (
	"strconv"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"

	pb "rpcarena/peers/go/internal/benchpb"
)

// StructuredEpochMs is the base of created_unix_ms: a 6-byte varint for every seq, like a real
// timestamp of our decade.
const StructuredEpochMs = 1_700_000_000_000

// Structured1x64Hex is the encoding of NewStructured(1, 64) in field-number order, the test
// vector of docs/peer-protocol.md.
const Structured1x64Hex = "0a0b62636465666768696a6b6c1081d095ffbc311a20080112066974656d2d3019000000000000d03f220562656e636822047461673022080a03736571120131"

// fieldCost is what a length-delimited field with a body of n bytes takes: tag, length, body.
func fieldCost(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// item is Item(k) of every structured payload.
func item(k uint64) *pb.Item {
	return &pb.Item{
		Id:    k + 1,
		Name:  "item-" + strconv.FormatUint(k, 10),
		Score: float64(k+1) * 0.25,
		Tags:  []string{"bench", "tag" + strconv.FormatUint(k%10, 10)},
	}
}

// itemSize is the encoded size of Item(k), computed from its fields (what proto.Size would say,
// without the reflection).
func itemSize(k uint64) int {
	digits := len(strconv.FormatUint(k, 10))
	return 1 + protowire.SizeVarint(k+1) + // id
		fieldCost(5+digits) + // name "item-k"
		1 + 8 + // score (fixed64)
		fieldCost(5) + // tag "bench"
		fieldCost(4) // tag "tagD"
}

// layout is the shape of Structured(seq, size): whether the base fields are set, how many
// items follow, and the title's length. NewStructured builds it and CheckStructured compares
// against it, so both follow the one generation rule.
type layout struct {
	base   bool
	items  uint64
	title  int
	seq    [20]byte // decimal(seq)
	digits int
}

func layoutOf(seq uint64, size uint32) layout {
	var l layout
	l.digits = len(strconv.AppendUint(l.seq[:0], seq, 10))
	total := int(size)
	if total < 3 {
		return l
	}
	created := uint64(StructuredEpochMs + seq%1_000_000_000)
	// created: tag + varint; attributes: one map entry {1: "seq", 2: decimal(seq)}.
	base := 1 + protowire.SizeVarint(created) + fieldCost(5+2+l.digits)
	used := 0
	if base+3 <= total {
		l.base = true
		used = base
		for {
			cost := fieldCost(itemSize(l.items))
			if used+cost+3 > total {
				break
			}
			used += cost
			l.items++
		}
	}
	// 3 <= rest <= 128: a title of rest - 2 characters has a one-byte length prefix.
	l.title = total - used - 2
	return l
}

// titleByte is character j of the title of message seq.
func titleByte(seq uint64, j int) byte { return byte('a' + (seq%26+uint64(j)%26)%26) }

// NewStructured builds Structured(seq, size) by the generation rule of docs/peer-protocol.md:
// the base fields when they fit, items while they fit with room for a title of at least one
// character, then a title that fills the rest exactly. size must be 0 or at least 3 (see
// Kind.CheckSize); 1 and 2 give the empty message.
func NewStructured(seq uint64, size uint32) *pb.Structured {
	message := &pb.Structured{}
	if size < 3 {
		return message
	}
	l := layoutOf(seq, size)
	if l.base {
		message.CreatedUnixMs = int64(StructuredEpochMs + seq%1_000_000_000)
		message.Attributes = map[string]string{"seq": string(l.seq[:l.digits])}
		message.Items = make([]*pb.Item, l.items)
		for k := range l.items {
			message.Items[k] = item(k)
		}
	}
	title := make([]byte, l.title)
	for j := range title {
		title[j] = titleByte(seq, j)
	}
	message.Title = string(title)
	return message
}

// zeros is a shared read-only buffer of zero bytes, grown on demand; payloads are slices of it
// (encoding copies them), so building a zeros payload allocates nothing.
var zeros atomic.Pointer[[]byte]

// ZeroBytes is a read-only slice of n zero bytes. Callers must never write to it.
func ZeroBytes(n uint32) []byte {
	if n == 0 {
		return nil
	}
	if current := zeros.Load(); current != nil && len(*current) >= int(n) {
		return (*current)[:n]
	}
	size := 64 * 1024
	for size < int(n) {
		size *= 2
	}
	grown := make([]byte, size)
	zeros.Store(&grown)
	return grown[:n]
}
