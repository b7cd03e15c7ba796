package engine

import (
	"context"
	"sync"
	"sync/atomic"
)

// inFlight counts operations in flight across lanes and the most at once.
type inFlight struct {
	now, most atomic.Uint64
}

func (f *inFlight) start() {
	depth := f.now.Add(1)
	for {
		most := f.most.Load()
		if depth <= most || f.most.CompareAndSwap(most, depth) {
			return
		}
	}
}

func (f *inFlight) end() { f.now.Add(^uint64(0)) }

// RunLanes runs the closed model (window = false) or the window model (window = true) over
// lanes: one goroutine per lane, each starting its next operation as soon as the previous one
// finished, while the clock is before the deadline. Operation k of lane i has seq i + k x lanes.
// A closed lane stops after its first failure; in the window model a failure stops every lane
// from starting more (the other lanes still finish what they started).
func RunLanes(ctx context.Context, lanes []Lane, clock Clock, w Window, window bool, bound string) *Totals {
	tallies := make([]*Tally, len(lanes))
	var (
		group   sync.WaitGroup
		stopped atomic.Bool
		depth   inFlight
	)
	n := uint64(len(lanes))
	for i, lane := range lanes {
		tally := NewTally(w.T0)
		tallies[i] = tally
		group.Go(func() {
			for k := uint64(0); ctx.Err() == nil; k++ {
				start := clock.Now()
				if start >= w.Deadline || (window && stopped.Load()) {
					return
				}
				if window {
					depth.start()
				}
				outcome, err := lane.Call(ctx, uint64(i)+k*n)
				end := clock.Now()
				if window {
					depth.end()
				}
				tally.finish(w, start, start, end, outcome, err, bound)
				if err != nil {
					stopped.Store(true)
					return
				}
			}
		})
	}
	group.Wait()
	totals := &Totals{Tally: *Merge(w.T0, tallies), Load: "closed"}
	if window {
		totals.Load = "window"
		totals.MaxInFlight = ptr(depth.most.Load())
	}
	return totals
}
