package engine

import (
	"context"
	"testing"
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
