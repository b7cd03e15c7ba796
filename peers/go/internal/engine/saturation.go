package engine

import (
	"context"
	"sync"
)

// StreamSender is one send-saturation stream's admission of messages and its measurements: the
// stream opens before the deadline (which admits its first message), later messages start only
// before the deadline, and each is timed from the moment the sender could start it to the moment
// the transport accepted it. Not safe for concurrent use.
type StreamSender struct {
	deadline Nanos
	opened   bool
	start    Nanos // start of the current message, -1 when none
	sent     uint64
	tally    *Tally
}

// NewStreamSender is a stream of window w.
func NewStreamSender(w Window) *StreamSender {
	return &StreamSender{deadline: w.Deadline, start: -1, tally: NewTally(w.T0)}
}

// Open says whether the stream may open at now; opening admits the first message.
func (s *StreamSender) Open(now Nanos) bool {
	if now >= s.deadline {
		return false
	}
	s.opened = true
	s.start = now
	return true
}

// Next gives the seq of the next message if it may start at now, else false: end the stream.
func (s *StreamSender) Next(now Nanos) (uint64, bool) {
	if !s.opened {
		return 0, false
	}
	if s.start < 0 {
		if now >= s.deadline {
			return 0, false
		}
		s.start = now
	}
	return s.sent, true
}

// Accepted records that the transport took the current message (of bytes payload bytes) at now.
func (s *StreamSender) Accepted(now Nanos, bytes uint64) {
	start := s.start
	if start < 0 {
		start = now
	}
	s.start = -1
	s.sent++
	s.tally.Complete(start, now-start, Outcome{Requests: 1, RequestBytes: bytes})
}

// SummaryReceived records the server's summary, which confirmed every message, at now.
func (s *StreamSender) SummaryReceived(now Nanos, bytes uint64) {
	s.tally.Responses++
	s.tally.ResponseBytes += bytes
	s.tally.ended(now)
}

// Sent is the number of messages the transport accepted.
func (s *StreamSender) Sent() uint64 { return s.sent }

// RunSaturation runs one stream per lane through w, whose hard deadline is the settle bound.
// An operation is one message: completed streams count the messages their summaries confirmed;
// a failed stream counts what it sent (at least one) as failed.
func RunSaturation(ctx context.Context, lanes []Saturator, clock Clock, w Window, bound string) *Totals {
	type result struct {
		sender *StreamSender
		err    *OpError
		end    Nanos
	}
	results := make([]result, len(lanes))
	var group sync.WaitGroup
	for i, lane := range lanes {
		group.Go(func() {
			sender := NewStreamSender(w)
			err := lane.Saturate(ctx, clock, sender)
			results[i] = result{sender: sender, err: err, end: clock.Now()}
		})
	}
	group.Wait()
	failed := NewTally(w.T0)
	tallies := []*Tally{failed}
	var opened, sent, received uint64
	for _, r := range results {
		if !r.sender.opened {
			continue
		}
		opened++
		sent += r.sender.sent
		err, end := r.err, r.end
		if err != nil && end >= w.HardDeadline {
			err = Errorf("timeout", "a stream that sent %d messages had no summary at %s", r.sender.sent, bound)
			end = w.HardDeadline
		}
		if err != nil {
			failed.ended(end)
			failed.Fail(end, max(r.sender.sent, 1), err.Code, err.Message)
			continue
		}
		received += r.sender.sent
		tallies = append(tallies, r.sender.tally)
	}
	return &Totals{
		Tally:       *Merge(w.T0, tallies),
		Load:        "send-saturation",
		MaxInFlight: ptr(opened),
		Sent:        ptr(sent),
		Received:    ptr(received),
	}
}

// RunCommandSaturation runs send-saturation on one-way commands (1.3, --shape send): S lanes,
// each with one command in flight, starting the next the moment the previous one ended, while
// the clock is before the deadline, recorded as in the closed model; w's hard deadline is the
// settle bound. It reports `sent` (commands started, completed or failed: each went to the
// transport) and `max_in_flight` S, and no `received`: only the server knows what arrived.
func RunCommandSaturation(ctx context.Context, lanes []Lane, clock Clock, w Window, bound string) *Totals {
	totals := RunLanes(ctx, lanes, clock, w, false, bound)
	totals.Load = "send-saturation"
	totals.MaxInFlight = ptr(uint64(len(lanes)))
	totals.Sent = ptr(totals.Completed + totals.Failed)
	return totals
}
