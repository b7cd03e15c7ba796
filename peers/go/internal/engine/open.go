package engine

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"rpcarena/peers/go/internal/protocol"
)

// OpenConfig is the open model's arguments.
type OpenConfig struct {
	Rate    float64
	Poisson bool
	Seed    uint64
}

// Arrivals yields the intended starts of the open model, in order, before the deadline:
// constant arrivals t0 + floor(i x 1e9 / R), computed from i (not by adding gaps); Poisson
// arrivals t0 and then exponential gaps of mean 1/R, gap = -ln(1 - U) / R with U uniform in
// [0, 1) from Go's ChaCha8 generator (math/rand/v2) seeded with --seed as 8 little-endian bytes
// followed by 24 zero bytes. A pure core: it reads no clock.
type Arrivals struct {
	t0, deadline Nanos
	gapNs        float64
	poisson      bool
	rng          *rand.ChaCha8
	index        uint64
	offsetNs     float64
	done         bool
}

// NewArrivals is the schedule of config over w.
func NewArrivals(config OpenConfig, w Window) *Arrivals {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:8], config.Seed)
	return &Arrivals{
		t0: w.T0, deadline: w.Deadline,
		gapNs:   1e9 / config.Rate,
		poisson: config.Poisson,
		rng:     rand.NewChaCha8(seed),
	}
}

// Next is the next operation's index and intended start, or false once they reach the deadline.
func (a *Arrivals) Next() (uint64, Nanos, bool) {
	if a.done {
		return 0, 0, false
	}
	offset := a.offsetNs
	if !a.poisson {
		offset = float64(a.index) * a.gapNs
	}
	if math.IsInf(offset, 0) || math.IsNaN(offset) || offset >= float64(a.deadline-a.t0) {
		a.done = true
		return 0, 0, false
	}
	intended := a.t0 + Nanos(offset)
	if intended >= a.deadline {
		a.done = true
		return 0, 0, false
	}
	if a.poisson {
		u := float64(a.rng.Uint64()>>11) / (1 << 53)
		a.offsetNs += -math.Log(1-u) * a.gapNs
	}
	index := a.index
	a.index++
	return index, intended, true
}

// Pacing: the generator hands each start to a lane up to LeadNs before its intended time (the
// lane waits for the exact moment itself, so waking it is not part of the send lag), and
// reaches the hand-over time by sleeping until SpinNs before it, then spinning. Above 1,000
// ops/s both shrink with the gap so that pacing takes at most PacingBudget of a core.
const (
	LeadNs       = 150_000
	SpinNs       = 50_000
	PacingBudget = 0.2
	// FellBehindLagNs is the send-lag p99 above which the generator fell behind.
	FellBehindLagNs = 1_000_000
)

// PacingFor is the lead and spin at rate.
func PacingFor(rate float64) (lead, spin Nanos) {
	gap := 1e9 / rate
	return Nanos(math.Min(gap*PacingBudget*0.75, LeadNs)), Nanos(math.Min(gap*PacingBudget*0.25, SpinNs))
}

// Pace is what the generator does next to reach target.
type Pace int

// Paces.
const (
	Go Pace = iota
	Spin
	Sleep
)

// PaceFor says whether to go, spin or sleep (until target - spin) at now.
func PaceFor(now, target, spin Nanos) Pace {
	switch {
	case now >= target:
		return Go
	case target-now > spin:
		return Sleep
	}
	return Spin
}

// OpenStart is one start handed to the lanes.
type OpenStart struct {
	Seq      uint64
	Intended Nanos
}

// Sleeper sleeps until a clock reading; the generator's is precise (see sleeper_linux.go).
type Sleeper interface {
	SleepUntil(at Nanos)
}

// Generate keeps the schedule: for each arrival it waits for its hand-over time and puts the
// start on starts (waiting there when every lane is busy and the queue is full; the wait shows
// in the send lag). It returns how many intended starts there were before the deadline,
// counting those it never handed over because ctx ended.
func Generate(ctx context.Context, arrivals *Arrivals, clock Clock, sleeper Sleeper, lead, spin Nanos, starts chan<- OpenStart) uint64 {
	defer close(starts)
	var offered uint64
	remaining := func() uint64 {
		for _, _, ok := arrivals.Next(); ok; _, _, ok = arrivals.Next() {
			offered++
		}
		return offered
	}
	for {
		seq, intended, ok := arrivals.Next()
		if !ok {
			return offered
		}
		offered++
		handover := intended - lead
		for done := false; !done; {
			if ctx.Err() != nil {
				return remaining()
			}
			now := clock.Now()
			switch PaceFor(now, handover, spin) {
			case Go:
				done = true
			case Spin:
			case Sleep:
				sleeper.SleepUntil(handover - spin)
			}
		}
		select {
		case starts <- OpenStart{Seq: seq, Intended: intended}:
		case <-ctx.Done():
			return remaining()
		}
	}
}

// RunOpen runs the open model: a generator goroutine locked to its own OS thread keeps the
// schedule; `lanes` goroutines (at most --concurrency operations in flight) take starts in
// order, wait for the intended moment, and run them. Latency runs from the intended start
// (corrected for coordinated omission); the uncorrected histogram from the actual start, read on
// the lane just before the operation begins; the send lag is actual minus intended. A start
// taken at or after the deadline is dropped (admission).
func RunOpen(ctx context.Context, lanes []Lane, config OpenConfig, clock MonoClock, w Window, bound string) *Totals {
	// The generator keeps its P while it sleeps in clock_nanosleep (Go hands a P in a system call
	// to another thread only when sysmon notices, 20 us to 10 ms later): with a single P, a lane
	// just handed a start would wait for sysmon. Two Ps at least, even on one CPU, leave the
	// lanes one while the generator sleeps, as the Rust peer's generator thread leaves tokio's
	// workers theirs.
	if procs := runtime.GOMAXPROCS(0); procs < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(procs)
	}
	starts := make(chan OpenStart, 1<<16)
	genCtx, stopGenerator := context.WithCancel(ctx)
	defer stopGenerator()
	offered := make(chan uint64, 1)
	lead, spin := PacingFor(config.Rate)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		offered <- Generate(genCtx, NewArrivals(config, w), clock, newPreciseSleeper(clock), lead, spin, starts)
	}()
	var (
		group   sync.WaitGroup
		started atomic.Uint64
		depth   inFlight
	)
	tallies := make([]*Tally, len(lanes))
	for i, lane := range lanes {
		tally := newOpenTally(w.T0)
		tallies[i] = tally
		group.Go(func() {
			for {
				var start OpenStart
				var ok bool
				select {
				case start, ok = <-starts:
				case <-ctx.Done():
				}
				if !ok {
					return
				}
				for clock.Now() < start.Intended {
					runtime.Gosched()
				}
				actual := clock.Now()
				if actual >= w.Deadline {
					continue
				}
				started.Add(1)
				depth.start()
				outcome, err := lane.Call(ctx, start.Seq)
				end := clock.Now()
				depth.end()
				protocol.Record(tally.SendLag, actual-start.Intended)
				if err == nil && end < w.HardDeadline {
					protocol.Record(tally.Uncorrected, end-actual)
				}
				tally.finish(w, start.Intended, actual, end, outcome, err, bound)
			}
		})
	}
	group.Wait()
	stopGenerator()
	total := <-offered
	merged := Merge(w.T0, tallies)
	lagP99 := merged.SendLag.ValueAtPercentile(99)
	return &Totals{
		Tally:       *merged,
		Load:        "open",
		Offered:     ptr(total),
		TargetRate:  ptr(config.Rate),
		FellBehind:  ptr(started.Load() < total || lagP99 > FellBehindLagNs),
		MaxInFlight: ptr(depth.most.Load()),
	}
}
