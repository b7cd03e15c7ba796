package workload

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
)

func TestStructuredTestVector(t *testing.T) {
	message := NewStructured(1, 64)
	encoded, err := proto.MarshalOptions{Deterministic: true}.Marshal(message)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(encoded); got != Structured1x64Hex {
		t.Fatalf("Structured(1, 64) encodes to\n%s\nwant\n%s", got, Structured1x64Hex)
	}
	if message.Title != "bcdefghijkl" || len(message.Items) != 1 || message.Items[0].Name != "item-0" {
		t.Fatalf("unexpected fields: %v", message)
	}
}

func TestStructuredSizesAreExact(t *testing.T) {
	check := func(seq uint64, size uint32) {
		if size == 1 || size == 2 {
			return
		}
		if got := proto.Size(NewStructured(seq, size)); got != int(size) {
			t.Fatalf("Structured(%d, %d) encodes to %d bytes", seq, size, got)
		}
	}
	for _, seq := range []uint64{0, 1, 9, 10, 12345, 1<<64 - 1} {
		for size := uint32(0); size <= 600; size++ {
			check(seq, size)
		}
	}
	for _, size := range []uint32{4096, 65536, 1 << 20, MaxPayload} {
		check(7, size)
	}
}

func TestItemSizeMatchesTheEncoder(t *testing.T) {
	for _, k := range []uint64{0, 9, 10, 126, 127, 128, 99999, 1 << 40} {
		if got, want := itemSize(k), proto.Size(item(k)); got != want {
			t.Fatalf("itemSize(%d) = %d, proto.Size = %d", k, got, want)
		}
	}
}

func isInvalid(err error) bool {
	var invalid *Invalid
	return errors.As(err, &invalid)
}

func TestClientChecksResponses(t *testing.T) {
	if err := CheckResponse(Response(Zeros, 5, 100), Zeros, 5, 100); err != nil {
		t.Fatal(err)
	}
	if err := CheckResponse(Response(Structured, 5, 100), Structured, 5, 100); err != nil {
		t.Fatal(err)
	}
	wrongSeq := Response(Zeros, 6, 100)
	short := Response(Zeros, 5, 99)
	dirty := &pb.Response{Seq: 5, Payload: append(make([]byte, 99), 1)}
	corrupted := Response(Structured, 5, 100)
	corrupted.Body.Title = strings.ToUpper(corrupted.Body.Title)
	withBody := Response(Structured, 5, 100)
	withBody.Payload = []byte{0}
	for name, response := range map[string]*pb.Response{"seq": wrongSeq, "short": short, "dirty": dirty} {
		if err := CheckResponse(response, Zeros, 5, 100); !isInvalid(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, response := range map[string]*pb.Response{"corrupted": corrupted, "payload": withBody, "zeros": Response(Zeros, 5, 100)} {
		if err := CheckResponse(response, Structured, 5, 100); !isInvalid(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := CheckResponse(dirty, Zeros, 5, 100); !strings.Contains(err.Error(), "byte 99 is 0x01") {
		t.Errorf("the reason names the byte: %v", err)
	}
}

func TestClientChecksSummaries(t *testing.T) {
	check := NewCallCheck(ClientStream)
	for seq := uint64(0); seq < 4; seq++ {
		if err := check.Add(Request(Structured, seq, 50, 70, 0)); err != nil {
			t.Fatal(err)
		}
	}
	summary := check.Summary()
	if err := CheckSummary(summary, Structured, 4, 50, 70); err != nil {
		t.Fatal(err)
	}
	if err := CheckSummary(summary, Structured, 5, 50, 70); !isInvalid(err) {
		t.Fatal("a missing message must fail")
	}
	summary.PayloadBytes++
	if err := CheckSummary(summary, Structured, 4, 50, 70); !isInvalid(err) {
		t.Fatal("wrong payload bytes must fail")
	}
}

func TestServerChecksRequests(t *testing.T) {
	accept := func(shape Shape, requests ...*pb.Request) error {
		check := NewCallCheck(shape)
		for _, request := range requests {
			if err := check.Add(request); err != nil {
				return err
			}
		}
		return nil
	}
	zeros := func(seq uint64, size uint32) *pb.Request { return Request(Zeros, seq, size, 10, 0) }
	if err := accept(Unary, zeros(77, 10)); err != nil {
		t.Fatal(err)
	}
	if err := accept(Bidi, zeros(0, 10), zeros(1, 10), zeros(2, 10)); err != nil {
		t.Fatal(err)
	}
	if err := accept(ServerStream, Request(Zeros, 3, 10, 10, 5)); err != nil {
		t.Fatal(err)
	}
	dirty := zeros(0, 10)
	dirty.Payload = []byte{0, 0, 3}
	corrupted := Request(Structured, 0, 100, 10, 0)
	corrupted.Body.CreatedUnixMs++
	unknownKind := zeros(0, 1)
	unknownKind.PayloadKind = 9
	refused := map[string]func() error{
		"non-zero byte":        func() error { return accept(Unary, dirty) },
		"corrupted structured": func() error { return accept(Unary, corrupted) },
		"seq out of order":     func() error { return accept(ClientStream, zeros(0, 10), zeros(2, 10)) },
		"length changes":       func() error { return accept(Bidi, zeros(0, 10), zeros(1, 11)) },
		"response_size large":  func() error { return accept(Unary, Request(Zeros, 0, 1, MaxPayload+1, 0)) },
		"response_messages 0":  func() error { return accept(ServerStream, Request(Zeros, 0, 1, 1, 0)) },
		"structured size 2":    func() error { return accept(Unary, Request(Structured, 0, 3, 2, 0)) },
		"unknown kind":         func() error { return accept(Unary, unknownKind) },
	}
	for name, call := range refused {
		err := call()
		if !isInvalid(err) || !strings.HasPrefix(err.Error(), "request ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestZeroBytesAreSharedAndGrow(t *testing.T) {
	small := ZeroBytes(10)
	large := ZeroBytes(1 << 20)
	if len(small) != 10 || len(large) != 1<<20 || ZeroBytes(0) != nil {
		t.Fatal("wrong lengths")
	}
	for _, b := range large {
		if b != 0 {
			t.Fatal("not zero")
		}
	}
}

func TestEncodedSizeMatchesTheEncoder(t *testing.T) {
	for size := uint32(0); size <= 300; size += 7 {
		message := NewStructured(uint64(size)*31, size)
		if got, want := EncodedSize(message), proto.Size(message); got != want {
			t.Fatalf("size %d: EncodedSize %d, proto.Size %d", size, got, want)
		}
	}
	odd := &pb.Structured{
		Attributes: map[string]string{"": "", "k": "v"},
		Items:      []*pb.Item{{}, {Id: 1 << 40, Score: -1, Tags: []string{""}}},
	}
	encoded, _ := proto.Marshal(odd)
	withUnknown := &pb.Structured{}
	if err := proto.Unmarshal(append(encoded, 0x78, 0x05), withUnknown); err != nil { // field 15, varint 5
		t.Fatal(err)
	}
	for _, message := range []*pb.Structured{odd, withUnknown} {
		if got, want := EncodedSize(message), proto.Size(message); got != want {
			t.Fatalf("%v: EncodedSize %d, proto.Size %d", message, got, want)
		}
	}
	if err := CheckStructured("x", withUnknown, 0, uint32(proto.Size(withUnknown))); !isInvalid(err) {
		t.Fatal("a body with unknown fields is not the generated one")
	}
}

func TestACommandIsCheckedAsUnaryWithResponseSizeZero(t *testing.T) {
	for _, kind := range []Kind{Zeros, Structured} {
		if err := NewCallCheck(Send).Add(Request(kind, 7, 64, 0, 0)); err != nil {
			t.Errorf("%s: a well-formed command refused: %v", kind, err)
		}
		err := NewCallCheck(Send).Add(Request(kind, 7, 64, 64, 0))
		var invalid *Invalid
		if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "response_size 64 in a command") {
			t.Errorf("%s: response_size 64 in a command: %v", kind, err)
		}
		if err := NewCallCheck(Unary).Add(Request(kind, 7, 64, 64, 0)); err != nil {
			t.Errorf("%s: unary with response_size 64: %v", kind, err)
		}
	}
	dirty := Request(Zeros, 1, 8, 0, 0)
	dirty.Payload = []byte{0, 1}
	if NewCallCheck(Send).Add(dirty) == nil {
		t.Error("a command with a non-zero byte passed")
	}
	shape, err := ParseShape("send")
	if err != nil || shape != Send || shape.Method() != "/rpcarena.bench.v1.BenchService/Command" || shape.Wire() != Send ||
		shape.StreamsRequests() || shape.StreamsResponses() {
		t.Errorf("send: %v %v %s", shape, err, shape.Method())
	}
	if found, ok := ShapeOfMethod([]byte(Send.Method())); !ok || found != Send {
		t.Errorf("the Command method is not send's: %v %v", found, ok)
	}
}
