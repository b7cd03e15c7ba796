package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// shards are tallies of operations that run in goroutines of their own: operation seq records
// into shard seq % len, each behind its own mutex, so no lock is shared by every operation.
type shards struct {
	locks   []sync.Mutex
	tallies []*Tally
}

func newShards(t0 Nanos) *shards {
	n := 4 * runtime.GOMAXPROCS(0)
	s := &shards{locks: make([]sync.Mutex, n), tallies: make([]*Tally, n)}
	for i := range s.tallies {
		s.tallies[i] = NewTally(t0)
	}
	return s
}

func (s *shards) with(seq uint64, record func(*Tally)) {
	i := seq % uint64(len(s.tallies))
	s.locks[i].Lock()
	record(s.tallies[i])
	s.locks[i].Unlock()
}

// RunBackpressure runs the backpressure model: a submitter starts a new operation whenever the
// transport accepts one (submitter.Ready returns), at most maxInFlight at once, while the clock
// is before the deadline, and nothing after the first failure. Each operation runs in its own
// goroutine; its latency runs from the moment the transport accepted it.
func RunBackpressure(ctx context.Context, submitter Submitter, maxInFlight uint32, clock MonoClock, w Window, bound string) *Totals {
	var (
		group   sync.WaitGroup
		stopped atomic.Bool
		depth   inFlight
		capped  uint64
	)
	tallies := newShards(w.T0)
	slots := make(chan struct{}, maxInFlight)
	deadline := time.NewTimer(time.Until(clock.Time(w.Deadline)))
	defer deadline.Stop()
	// Waiting for the transport ends at the deadline: nothing starts after it.
	readyCtx, cancel := context.WithDeadline(ctx, clock.Time(w.Deadline))
	defer cancel()
	for seq := uint64(0); ctx.Err() == nil && !stopped.Load(); seq++ {
		select {
		case slots <- struct{}{}:
		default:
			capped++
			select {
			case slots <- struct{}{}:
			case <-deadline.C:
			case <-ctx.Done():
			}
		}
		if clock.Now() >= w.Deadline || ctx.Err() != nil {
			break
		}
		ticket, err := submitter.Ready(readyCtx)
		start := clock.Now()
		if err != nil {
			if start < w.Deadline {
				tallies.with(seq, func(t *Tally) { t.finish(w, start, start, start, Outcome{}, err, bound) })
				stopped.Store(true)
			}
			<-slots
			break
		}
		if start >= w.Deadline {
			ticket.Abandon()
			<-slots
			break
		}
		depth.start()
		group.Go(func() {
			outcome, err := ticket.Call(ctx, seq)
			end := clock.Now()
			depth.end()
			tallies.with(seq, func(t *Tally) { t.finish(w, start, start, end, outcome, err, bound) })
			if err != nil {
				stopped.Store(true)
			}
			<-slots
		})
	}
	group.Wait()
	if capped > 0 {
		logf("backpressure: the safety cap --max-in-flight %d held the submitter back %d times; the transport did not push back below it", maxInFlight, capped)
	}
	return &Totals{Tally: *Merge(w.T0, tallies.tallies), Load: "backpressure", MaxInFlight: ptr(depth.most.Load())}
}
