package engine

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock that only moves when told to (or by a fixed step per reading).
type fakeClock struct {
	now  atomic.Int64
	step int64
}

func (c *fakeClock) Now() Nanos             { return c.now.Add(c.step) }
func (c *fakeClock) advance(d Nanos)        { c.now.Add(d) }
func (c *fakeClock) SleepUntil(at Nanos)    { c.now.Store(max(c.now.Load(), at)) }
func newFakeClock(at Nanos) *fakeClock      { c := &fakeClock{}; c.now.Store(at); return c }
func ok() Outcome                           { return Outcome{Requests: 2, Responses: 3, RequestBytes: 20, ResponseBytes: 30} }
func window(t0, length, drain Nanos) Window { return NewWindow(t0, length, drain) }
func background() context.Context           { return context.Background() }
func (t *Tally) count() (uint64, uint64)    { return t.Completed, t.Failed }
func histogramCount(t *Tally) int64         { return t.Histogram.TotalCount() }
func intervalsTotal(t *Tally) (total int64) {
	for _, h := range t.Intervals {
		if h != nil {
			total += h.TotalCount()
		}
	}
	return total
}

// fakeLane takes `duration` of fake time per call and fails call number failAt.
type fakeLane struct {
	clock    *fakeClock
	duration Nanos
	failAt   int
	seqs     []uint64
	starts   []Nanos
}

func (l *fakeLane) Call(_ context.Context, seq uint64) (Outcome, *OpError) {
	l.seqs = append(l.seqs, seq)
	l.starts = append(l.starts, l.clock.now.Load())
	l.clock.advance(l.duration)
	if len(l.seqs)-1 == l.failAt {
		return Outcome{}, Errorf("rpc", "op %d failed", l.failAt)
	}
	return ok(), nil
}

func TestClosedLanesStartOnlyBeforeTheDeadlineAndAdmittedOnesFinish(t *testing.T) {
	clock := newFakeClock(1_000)
	lane := &fakeLane{clock: clock, duration: 30, failAt: -1}
	totals := RunLanes(background(), []Lane{lane}, clock, window(1_000, 100, 50), false, "the drain")
	if got := lane.starts; len(got) != 4 || got[0] != 1_000 || got[3] != 1_090 {
		t.Fatalf("starts %v", got)
	}
	if c, f := totals.count(); c != 4 || f != 0 || histogramCount(&totals.Tally) != 4 || intervalsTotal(&totals.Tally) != 4 {
		t.Fatalf("completed %d failed %d", c, f)
	}
	if totals.LastEnd != 1_120 || totals.Requests != 8 || totals.ResponseBytes != 120 || totals.Load != "closed" || totals.MaxInFlight != nil {
		t.Fatalf("%+v", totals)
	}
}

func TestSequenceNumbersInterleaveLanesAndAFailureStopsTheLane(t *testing.T) {
	clock := newFakeClock(0)
	// Each lane stops at its own failure (closed: the other lane runs on): lane 0 at its first
	// call, lane 1 at its fourth; lane 1's operations are 1, 3, 5, 7 (i + k x 2).
	first := &fakeLane{clock: clock, failAt: 0}
	second := &fakeLane{clock: clock, failAt: 3}
	totals := RunLanes(background(), []Lane{first, second}, clock, window(0, 1<<40, 0), false, "the drain")
	if len(first.seqs) != 1 || first.seqs[0] != 0 {
		t.Fatalf("lane 0 went on after its failure: %v", first.seqs)
	}
	if len(second.seqs) != 4 || second.seqs[0] != 1 || second.seqs[1] != 3 || second.seqs[3] != 7 {
		t.Fatalf("seqs %v, want 1, 3, 5, 7", second.seqs)
	}
	if totals.Completed != 3 || totals.Failed != 2 || totals.First.Code != "rpc" {
		t.Fatalf("%+v", totals.Tally)
	}
}

func TestAWindowFailureStopsEveryLane(t *testing.T) {
	clock := newFakeClock(0)
	lane := &fakeLane{clock: clock, duration: 10, failAt: 2}
	totals := RunLanes(background(), []Lane{lane}, clock, window(0, 1_000, 0), true, "the drain")
	if totals.Completed != 2 || totals.Failed != 1 || totals.Load != "window" || *totals.MaxInFlight != 1 {
		t.Fatalf("%+v", totals)
	}
}

// Send-saturation on one-way commands runs its lanes as the closed model and reports what was
// sent (completed and failed alike), the lanes, and no received count (the server has it).
func TestCommandSaturationReportsSentAndNoReceived(t *testing.T) {
	clock := newFakeClock(0)
	// Each lane stops at its own failure (closed lanes), so the counts do not depend on how the
	// lanes' goroutines interleave: 4 + 1 completed, 2 failed, 7 sent.
	first := &fakeLane{clock: clock, failAt: 4}
	second := &fakeLane{clock: clock, failAt: 1}
	totals := RunCommandSaturation(background(), []Lane{first, second}, clock, window(0, 1<<40, 0), "the settle bound")
	if totals.Load != "send-saturation" || *totals.MaxInFlight != 2 || totals.Received != nil || *totals.Sent != 7 ||
		totals.Completed != 5 || totals.Failed != 2 || len(first.seqs)+len(second.seqs) != 7 {
		t.Fatalf("%+v sent %d received %v, lanes %v %v", totals.Tally, *totals.Sent, totals.Received, first.seqs, second.seqs)
	}
	if histogramCount(&totals.Tally) != 5 || intervalsTotal(&totals.Tally) != 5 {
		t.Fatal("one latency and one interval entry per completed command")
	}
}

// slowLane returns only after the hard deadline.
type slowLane struct{ clock *fakeClock }

func (l slowLane) Call(context.Context, uint64) (Outcome, *OpError) {
	l.clock.advance(1_000)
	return ok(), nil
}

func TestAnOperationPastTheDrainBoundIsATimeoutEndingAtTheBound(t *testing.T) {
	clock := newFakeClock(0)
	w := window(0, 100, 50)
	totals := RunLanes(background(), []Lane{slowLane{clock}}, clock, w, false, "the drain bound")
	if c, f := totals.count(); c != 0 || f != 1 || totals.Failures["timeout"] != 1 || totals.LastEnd != 150 {
		t.Fatalf("%+v", totals.Tally)
	}
	sample, err := totals.Report(w)
	if err != nil {
		t.Fatal(err)
	}
	if sample.DrainNs != 50 || sample.FirstFailure == nil || sample.Failures["timeout"] != 1 {
		t.Fatalf("%+v", sample)
	}
}

func TestReportHasOneIntervalPerStartedSecondIncludingEmptyOnes(t *testing.T) {
	tally := NewTally(0)
	tally.Complete(0, 5, ok())
	tally.Complete(2_500_000_000, 7, ok())
	totals := &Totals{Tally: *Merge(0, []*Tally{tally}), Load: "closed"}
	sample, err := totals.Report(window(0, 3_000_000_001, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(sample.Intervals) != 4 {
		t.Fatalf("%d intervals, want ceil(3.000000001) = 4", len(sample.Intervals))
	}
	counts := []uint64{1, 0, 1, 0}
	for i, entry := range sample.Intervals {
		if uint64(entry.Completed) != counts[i] || uint64(entry.OffsetNs) != uint64(i)*IntervalNs || entry.Histogram == "" {
			t.Fatalf("interval %d: %+v", i, entry)
		}
	}
	if sample.FirstFailure != nil || sample.Failures != nil || sample.DrainNs != 0 {
		t.Fatalf("%+v", sample)
	}
}

func TestMergeAddsCountsAndKeepsTheEarliestFailure(t *testing.T) {
	a, b := NewTally(0), NewTally(0)
	a.Complete(0, 100, ok())
	a.Fail(300, 1, "rpc", "late")
	b.Complete(0, 50, ok())
	b.Fail(120, 2, "invalid", "early")
	total := Merge(0, []*Tally{a, b})
	if total.Completed != 2 || total.Failed != 3 || total.First.Message != "early" || total.Failures["invalid"] != 2 {
		t.Fatalf("%+v", total)
	}
}

func TestStreamSenderAdmitsUntilTheDeadline(t *testing.T) {
	sender := NewStreamSender(window(0, 100, 50))
	if _, ok := sender.Next(0); ok {
		t.Fatal("a stream that did not open sends nothing")
	}
	if !sender.Open(10) {
		t.Fatal("opens before the deadline")
	}
	seq, ok := sender.Next(200) // the first message was admitted by Open
	if !ok || seq != 0 {
		t.Fatal("the first message is always sent")
	}
	sender.Accepted(210, 100)
	if _, ok := sender.Next(200); ok {
		t.Fatal("no message starts after the deadline")
	}
	sender.SummaryReceived(220, 5)
	if sender.Sent() != 1 || sender.tally.Completed != 1 || sender.tally.Responses != 1 || sender.tally.LastEnd != 220 {
		t.Fatalf("%+v", sender.tally)
	}
	if NewStreamSender(window(0, 100, 50)).Open(100) {
		t.Fatal("no stream opens at the deadline")
	}
}

func TestConstantArrivalsAreT0PlusIOverRateAndStopBeforeTheDeadline(t *testing.T) {
	collect := func(config OpenConfig, w Window) (starts []Nanos) {
		arrivals := NewArrivals(config, w)
		for i, at, ok := arrivals.Next(); ok; i, at, ok = arrivals.Next() {
			if i != uint64(len(starts)) {
				t.Fatalf("index %d", i)
			}
			starts = append(starts, at)
		}
		return starts
	}
	starts := collect(OpenConfig{Rate: 1000}, window(5_000, 10_000_000, 0))
	if len(starts) != 10 || starts[0] != 5_000 || starts[9] != 5_000+9_000_000 {
		t.Fatalf("%v", starts)
	}
	thirds := collect(OpenConfig{Rate: 3}, window(0, 10_000_000_000, 0))
	if len(thirds) != 30 || thirds[29] != 9_666_666_666 {
		t.Fatalf("%d starts, last %d", len(thirds), thirds[len(thirds)-1])
	}
	a := collect(OpenConfig{Rate: 1000, Poisson: true, Seed: 42}, window(0, 100_000_000_000, 0))
	b := collect(OpenConfig{Rate: 1000, Poisson: true, Seed: 42}, window(0, 100_000_000_000, 0))
	c := collect(OpenConfig{Rate: 1000, Poisson: true, Seed: 43}, window(0, 100_000_000_000, 0))
	if len(a) != len(b) || a[500] != b[500] || a[500] == c[500] || a[0] != 0 {
		t.Fatal("Poisson arrivals repeat with their seed and only with it; the first is t0")
	}
	if len(a) < 98_500 || len(a) > 101_500 {
		t.Fatalf("%d arrivals in 100 s at 1000/s", len(a))
	}
	short := 0
	for i := 1; i < len(a); i++ {
		if a[i] < a[i-1] {
			t.Fatal("not in order")
		}
		if a[i]-a[i-1] < 1_000_000 {
			short++
		}
	}
	// P(gap < mean) = 1 - 1/e = 0.632 for exponential gaps
	if share := float64(short) / float64(len(a)-1); math.Abs(share-0.632) > 0.01 {
		t.Fatalf("share of gaps below the mean %.3f", share)
	}
}

func TestPacingStaysWithinItsBudget(t *testing.T) {
	if lead, spin := PacingFor(1_000); lead != LeadNs || spin != SpinNs {
		t.Fatal(lead, spin)
	}
	if lead, spin := PacingFor(5_000); lead != 30_000 || spin != 10_000 {
		t.Fatal(lead, spin)
	}
	for _, rate := range []float64{500, 5_000, 40_000, 1e6} {
		lead, spin := PacingFor(rate)
		if share := float64(lead+spin) * rate / 1e9; share > PacingBudget+1e-9 {
			t.Fatalf("%v: %.3f of a core", rate, share)
		}
	}
	if PaceFor(0, 1_000, 100) != Sleep || PaceFor(900, 1_000, 100) != Spin || PaceFor(1_000, 1_000, 100) != Go {
		t.Fatal("sleep, then spin, then go")
	}
}

func TestTheGeneratorHandsEveryStartOverInOrderNotBeforeItsLead(t *testing.T) {
	clock := newFakeClock(0)
	clock.step = 1_000 // each reading advances 1 us: spinning makes progress
	w := window(0, 20_000_000, 0)
	starts := make(chan OpenStart, 100)
	offered := Generate(background(), NewArrivals(OpenConfig{Rate: 2_000}, w), clock, clock, LeadNs, SpinNs, starts)
	if offered != 40 {
		t.Fatalf("offered %d", offered)
	}
	var released []OpenStart
	for start := range starts {
		released = append(released, start)
	}
	if len(released) != 40 || released[3].Seq != 3 || released[3].Intended != 1_500_000 {
		t.Fatalf("%v", released)
	}
	ctx, cancel := context.WithCancel(background())
	cancel()
	if offered := Generate(ctx, NewArrivals(OpenConfig{Rate: 2_000}, w), clock, clock, LeadNs, SpinNs, make(chan OpenStart)); offered != 40 {
		t.Fatalf("a stopped generator still counts every intended start: %d", offered)
	}
}

type sleepyLane time.Duration

func (l sleepyLane) Call(context.Context, uint64) (Outcome, *OpError) {
	time.Sleep(time.Duration(l))
	return ok(), nil
}

func TestASaturatedOpenLaneMakesStartsWaitAndTheWaitCounts(t *testing.T) {
	clock := NewMonoClock()
	w := window(clock.Now(), 50_000_000, 2_000_000_000)
	totals := RunOpen(background(), []Lane{sleepyLane(10 * time.Millisecond)}, OpenConfig{Rate: 1_000}, clock, w, "the drain")
	if *totals.Offered != 50 || !*totals.FellBehind || *totals.MaxInFlight != 1 || totals.Failed != 0 {
		t.Fatalf("offered %d, fell behind %v, max in flight %d, failed %d", *totals.Offered, *totals.FellBehind, *totals.MaxInFlight, totals.Failed)
	}
	if totals.Completed < 2 || totals.Completed > 7 {
		t.Fatalf("completed %d", totals.Completed)
	}
	corrected, uncorrected := totals.Histogram.Max(), totals.Uncorrected.Max()
	if corrected < uncorrected+20_000_000 {
		t.Fatalf("corrected %d vs uncorrected %d", corrected, uncorrected)
	}
	if totals.SendLag.TotalCount() != int64(totals.Completed) || totals.Uncorrected.TotalCount() != int64(totals.Completed) {
		t.Fatal("one send lag and one uncorrected latency per completed operation")
	}
}

// An open loop whose lanes are always free starts every intended start. Starts still waiting at
// the deadline are (rightly) not started, so a generator descheduled near the end of the 200 ms
// window misses some: on this project's shared 2-vCPU machines, with the other packages' test
// binaries running beside it, one run in a few did (62 and 91 of 100). Three attempts; one
// that keeps the whole schedule passes.
func TestAnOpenLoopWithinItsMeansKeepsItsSchedule(t *testing.T) {
	var attempts []string
	for range 3 {
		clock := NewMonoClock()
		w := window(clock.Now(), 200_000_000, 1_000_000_000)
		lanes := []Lane{sleepyLane(0), sleepyLane(0), sleepyLane(0), sleepyLane(0)}
		totals := RunOpen(background(), lanes, OpenConfig{Rate: 500}, clock, w, "the drain")
		lag := totals.SendLag.ValueAtPercentile(50)
		if *totals.Offered == 100 && totals.Completed == 100 && totals.Failed == 0 && lag <= 5_000_000 { // loose: the machine may be busy
			return
		}
		if totals.Completed+totals.Failed < *totals.Offered && !*totals.FellBehind {
			t.Fatalf("%d of %d intended starts not started, but fell_behind is false", *totals.Offered-totals.Completed-totals.Failed, *totals.Offered)
		}
		attempts = append(attempts, fmt.Sprintf("offered %d completed %d failed %d send lag p50 %d ns", *totals.Offered, totals.Completed, totals.Failed, lag))
	}
	t.Fatalf("no attempt kept the schedule: %v", attempts)
}

// fakeSubmitter accepts until its transport runs out of credit.
type fakeSubmitter struct {
	clock   *fakeClock
	credits int
}

type fakeTicket struct{ clock *fakeClock }

func (s *fakeSubmitter) Ready(context.Context) (Ticket, *OpError) {
	if s.credits == 0 {
		return nil, Errorf("connect", "no more credit")
	}
	s.credits--
	return fakeTicket{s.clock}, nil
}

func (t fakeTicket) Call(context.Context, uint64) (Outcome, *OpError) { return ok(), nil }
func (t fakeTicket) Abandon()                                         {}

func TestBackpressureStopsAtTheFirstFailure(t *testing.T) {
	clock := NewMonoClock()
	w := window(clock.Now(), 5_000_000_000, 1_000_000_000)
	totals := RunBackpressure(background(), &fakeSubmitter{credits: 5}, 2, clock, w, "the drain")
	if totals.Completed != 5 || totals.Failed != 1 || totals.Failures["connect"] != 1 || *totals.MaxInFlight > 2 {
		t.Fatalf("completed %d failed %d max %d", totals.Completed, totals.Failed, *totals.MaxInFlight)
	}
}
