package engine

import (
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"rpcarena/peers/go/internal/protocol"
)

// IntervalNs is the length of one interval of a sample.
const IntervalNs = 1_000_000_000

// Failure is the first failure of a tally.
type Failure struct {
	At      Nanos
	Code    string
	Message string
}

// Tally is what one lane measured. Not safe for concurrent use: one lane, one tally.
type Tally struct {
	t0          Nanos
	Histogram   *hdr.PackedHistogram
	Uncorrected *hdr.PackedHistogram // open model only
	SendLag     *hdr.PackedHistogram // open model only
	// Intervals[k] holds the latencies of completed operations that started in second k.
	Intervals []*hdr.PackedHistogram

	Completed, Failed                                uint64
	Requests, Responses, RequestBytes, ResponseBytes uint64
	Failures                                         map[string]uint64
	First                                            *Failure
	// LastEnd is when the last operation ended (-1: none did).
	LastEnd Nanos
}

// NewTally is an empty tally of a window that opened at t0.
func NewTally(t0 Nanos) *Tally {
	return &Tally{t0: t0, Histogram: protocol.NewHistogram(), LastEnd: -1}
}

// newOpenTally also keeps the open model's uncorrected and send-lag histograms.
func newOpenTally(t0 Nanos) *Tally {
	t := NewTally(t0)
	t.Uncorrected = protocol.NewHistogram()
	t.SendLag = protocol.NewHistogram()
	return t
}

func (t *Tally) ended(at Nanos) {
	t.LastEnd = max(t.LastEnd, at)
}

// Complete records a completed operation that started at start and took latency.
func (t *Tally) Complete(start, latency Nanos, outcome Outcome) {
	protocol.Record(t.Histogram, latency)
	index := int((start - t.t0) / IntervalNs)
	if start < t.t0 {
		index = 0
	}
	for len(t.Intervals) <= index {
		t.Intervals = append(t.Intervals, nil)
	}
	if t.Intervals[index] == nil {
		t.Intervals[index] = protocol.NewHistogram()
	}
	protocol.Record(t.Intervals[index], latency)
	t.Completed++
	t.Requests += outcome.Requests
	t.Responses += outcome.Responses
	t.RequestBytes += outcome.RequestBytes
	t.ResponseBytes += outcome.ResponseBytes
}

// Fail records count failed operations, the first failure at `at` with its code and message.
func (t *Tally) Fail(at Nanos, count uint64, code, message string) {
	t.Failed += count
	if t.Failures == nil {
		t.Failures = map[string]uint64{}
	}
	t.Failures[code] += count
	if t.First == nil || at < t.First.At {
		t.First = &Failure{At: at, Code: code, Message: message}
	}
}

// finish records the end of an operation that began at started and whose latency runs from
// from (the open model's intended start; else started): a completion, recorded in the interval
// of started, or a failure. One that ended at or after the hard deadline is a timeout that ends
// at the bound, whatever the stack said.
func (t *Tally) finish(w Window, from, started, end Nanos, outcome Outcome, err *OpError, bound string) {
	if end >= w.HardDeadline {
		err = timeoutError(end-started, bound)
		end = w.HardDeadline
	}
	t.ended(end)
	if err != nil {
		t.Fail(end, 1, err.Code, err.Message)
		return
	}
	t.Complete(started, end-from, outcome)
}

func timeoutError(running Nanos, bound string) *OpError {
	return Errorf("timeout", "an operation started %.3f ms earlier was still running at %s", float64(running)/1e6, bound)
}

// Merge adds every tally into one.
func Merge(t0 Nanos, tallies []*Tally) *Tally {
	total := NewTally(t0)
	for _, tally := range tallies {
		if tally == nil {
			continue
		}
		total.Histogram.Merge(tally.Histogram)
		for _, pair := range []struct{ into, from **hdr.PackedHistogram }{
			{&total.Uncorrected, &tally.Uncorrected},
			{&total.SendLag, &tally.SendLag},
		} {
			if *pair.from != nil {
				if *pair.into == nil {
					*pair.into = protocol.NewHistogram()
				}
				(*pair.into).Merge(*pair.from)
			}
		}
		for index, slot := range tally.Intervals {
			if slot == nil {
				continue
			}
			for len(total.Intervals) <= index {
				total.Intervals = append(total.Intervals, nil)
			}
			if total.Intervals[index] == nil {
				total.Intervals[index] = protocol.NewHistogram()
			}
			total.Intervals[index].Merge(slot)
		}
		total.Completed += tally.Completed
		total.Failed += tally.Failed
		total.Requests += tally.Requests
		total.Responses += tally.Responses
		total.RequestBytes += tally.RequestBytes
		total.ResponseBytes += tally.ResponseBytes
		for code, count := range tally.Failures {
			if total.Failures == nil {
				total.Failures = map[string]uint64{}
			}
			total.Failures[code] += count
		}
		if tally.First != nil && (total.First == nil || tally.First.At < total.First.At) {
			total.First = tally.First
		}
		total.LastEnd = max(total.LastEnd, tally.LastEnd)
	}
	return total
}

// Report renders the totals of the measured window as a `sample` event: its counters, its
// histograms and its one-second intervals.
func (t *Totals) Report(w Window) (protocol.Sample, error) {
	sample := t.counters(w)
	if err := t.histograms(&sample); err != nil {
		return protocol.Sample{}, err
	}
	intervals, err := t.intervals(w.Deadline - w.T0)
	if err != nil {
		return protocol.Sample{}, err
	}
	sample.Intervals = intervals
	return sample, nil
}

// encode is a histogram in the event's text form.
func encode(h *hdr.PackedHistogram) (string, error) {
	text, err := protocol.EncodeHistogram(h)
	if err != nil {
		return "", fmt.Errorf("encoding a histogram: %w", err)
	}
	return text, nil
}

// counters is the sample with every count, the window and drain, the load model's fields and
// the failures; no histogram yet.
func (t *Totals) counters(w Window) protocol.Sample {
	drain := Nanos(0)
	if t.LastEnd > w.Deadline {
		drain = min(t.LastEnd, w.HardDeadline) - w.Deadline
	}
	sample := protocol.Sample{
		Completed:     protocol.Counter(t.Completed),
		Failed:        protocol.Counter(t.Failed),
		Requests:      protocol.Counter(t.Requests),
		Responses:     protocol.Counter(t.Responses),
		RequestBytes:  protocol.Counter(t.RequestBytes),
		ResponseBytes: protocol.Counter(t.ResponseBytes),
		WindowNs:      protocol.Counter(w.Deadline - w.T0),
		DrainNs:       protocol.Counter(drain),
		Load:          t.Load,
		TargetRate:    t.TargetRate,
		FellBehind:    t.FellBehind,
	}
	if len(t.Failures) > 0 {
		sample.Failures = map[string]protocol.Counter{}
		for code, count := range t.Failures {
			sample.Failures[code] = protocol.Counter(count)
		}
	}
	if t.First != nil {
		sample.FirstFailure = ptr(t.First.Message)
	}
	counter := func(v *uint64) *protocol.Counter {
		if v == nil {
			return nil
		}
		return ptr(protocol.Counter(*v))
	}
	sample.MaxInFlight = counter(t.MaxInFlight)
	sample.Offered = counter(t.Offered)
	sample.Sent = counter(t.Sent)
	sample.Received = counter(t.Received)
	return sample
}

// histograms encodes the window's histogram and the optional uncorrected and send-lag ones
// into the sample.
func (t *Totals) histograms(sample *protocol.Sample) error {
	histogram, err := encode(t.Histogram)
	if err != nil {
		return err
	}
	sample.Histogram = histogram
	for _, pair := range []struct {
		h    *hdr.PackedHistogram
		into **string
	}{{t.Uncorrected, &sample.UncorrectedHistogram}, {t.SendLag, &sample.SendLagHistogram}} {
		if pair.h != nil {
			text, err := encode(pair.h)
			if err != nil {
				return err
			}
			*pair.into = &text
		}
	}
	return nil
}

// intervals is exactly ceil(window / 1 s) entries, empty seconds included.
func (t *Totals) intervals(windowNs Nanos) ([]protocol.Interval, error) {
	count := int((windowNs + IntervalNs - 1) / IntervalNs)
	empty, err := encode(protocol.NewHistogram())
	if err != nil {
		return nil, err
	}
	intervals := make([]protocol.Interval, count)
	for index := range intervals {
		entry := protocol.Interval{OffsetNs: protocol.Counter(index * IntervalNs), Histogram: empty}
		if index < len(t.Intervals) && t.Intervals[index] != nil {
			entry.Completed = protocol.Counter(t.Intervals[index].TotalCount())
			if entry.Histogram, err = encode(t.Intervals[index]); err != nil {
				return nil, err
			}
		}
		intervals[index] = entry
	}
	return intervals, nil
}
