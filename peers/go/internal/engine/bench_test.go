package engine

import (
	"context"
	"testing"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/workload"
)

type noopLane struct{}

func (noopLane) Call(context.Context, uint64) (Outcome, *OpError) { return ok(), nil }

// BenchmarkClosedLane is the engine's cost per operation of a closed lane on the real clock:
// two clock readings, a histogram and an interval-histogram record, counters.
func BenchmarkClosedLane(b *testing.B) {
	clock := NewMonoClock()
	b.ReportAllocs()
	b.ResetTimer()
	w := window(clock.Now(), 1<<62, 0)
	tally := NewTally(w.T0)
	lane := noopLane{}
	for i := 0; i < b.N; i++ {
		start := clock.Now()
		outcome, err := lane.Call(context.Background(), uint64(i))
		end := clock.Now()
		tally.finish(w, start, start, end, outcome, err, "")
	}
}

func BenchmarkTallyComplete(b *testing.B) {
	tally := NewTally(0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tally.Complete(int64(i), int64(50_000+i%20_000), ok())
	}
}

// The harness's own share of an operation's allocations, for comparing allocs/op with rpc-bench
// (whose figures hold client, server and harness in one process): what the peer adds around the
// RPC library, which does the encoding, decoding and I/O. The server's CallTally adds four
// atomic additions per call and allocates nothing (package stack, not importable here).

var harnessCases = []struct {
	name string
	kind workload.Kind
	size uint32
}{{"zeros1K", workload.Zeros, 1 << 10}, {"zeros64K", workload.Zeros, 64 << 10}, {"structured1K", workload.Structured, 1 << 10}}

// BenchmarkHarnessClientUnary is a client's unary operation without the stack: the engine's
// clock readings and records, building the request, checking the response.
func BenchmarkHarnessClientUnary(b *testing.B) {
	for _, c := range harnessCases {
		b.Run(c.name, func(b *testing.B) {
			clock := NewMonoClock()
			w := window(clock.Now(), 1<<62, 0)
			tally := NewTally(w.T0)
			responses := []*pb.Response{workload.Response(c.kind, 0, c.size), workload.Response(c.kind, 1, c.size)}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				start := clock.Now()
				request := workload.Request(c.kind, uint64(i&1), c.size, c.size, 0)
				if err := workload.CheckResponse(responses[i&1], c.kind, request.Seq, c.size); err != nil {
					b.Fatal(err)
				}
				tally.finish(w, start, start, clock.Now(), ok(), nil, "")
			}
		})
	}
}

// BenchmarkHarnessServerUnary is a server's unary call without the stack: checking the request
// and building the response.
func BenchmarkHarnessServerUnary(b *testing.B) {
	for _, c := range harnessCases {
		b.Run(c.name, func(b *testing.B) {
			request := workload.Request(c.kind, 7, c.size, c.size, 0)
			b.ReportAllocs()
			for b.Loop() {
				if err := workload.NewCallCheck(workload.Unary).Add(request); err != nil {
					b.Fatal(err)
				}
				_ = workload.Response(c.kind, request.Seq, request.ResponseSize)
			}
		})
	}
}

// BenchmarkHarnessPingpongExchange is one exchange of a pingpong stream without the stack, both
// sides: the client builds request i and checks response i, the server checks request i in the
// stream's CallCheck and builds response i. (The engine's per-operation cost is spread over the
// stream's N exchanges; BenchmarkHarnessClientUnary gives it.)
func BenchmarkHarnessPingpongExchange(b *testing.B) {
	for _, c := range harnessCases {
		for _, side := range []string{"client", "server"} {
			b.Run(c.name+"/"+side, func(b *testing.B) {
				responses := []*pb.Response{workload.Response(c.kind, 0, c.size), workload.Response(c.kind, 1, c.size)}
				requests := []*pb.Request{workload.Request(c.kind, 0, c.size, c.size, 0), workload.Request(c.kind, 1, c.size, c.size, 0)}
				check := workload.NewCallCheck(workload.Bidi)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if side == "client" {
						_ = workload.Request(c.kind, uint64(i&1), c.size, c.size, 0)
						if err := workload.CheckResponse(responses[i&1], c.kind, uint64(i&1), c.size); err != nil {
							b.Fatal(err)
						}
						continue
					}
					if i&1 == 0 {
						check = workload.NewCallCheck(workload.Bidi) // a stream of two exchanges
					}
					if err := check.Add(requests[i&1]); err != nil {
						b.Fatal(err)
					}
					_ = workload.Response(c.kind, uint64(i&1), c.size)
				}
			})
		}
	}
}
