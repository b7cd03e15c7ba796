package workload

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
)

func BenchmarkServerCheckStructured256(b *testing.B) {
	request := Request(Structured, 0, 256, 256, 0)
	encoded, _ := proto.Marshal(request)
	b.ReportAllocs()
	for b.Loop() {
		decoded := &pb.Request{}
		_ = proto.Unmarshal(encoded, decoded)
		if err := NewCallCheck(Unary).Add(decoded); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildStructured256(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		NewStructured(12345, 256)
	}
}

func BenchmarkCheckZeros256(b *testing.B) {
	request := Request(Zeros, 0, 256, 256, 0)
	b.ReportAllocs()
	for b.Loop() {
		if err := NewCallCheck(Unary).Add(request); err != nil {
			b.Fatal(err)
		}
	}
}
