// Package transport is the client's transport statistics over the window: the `sample` event's
// optional `transport` object (docs/peer-protocol.md, "Transport statistics").
//
// A Probe reads every connection of a client stack: TCP_INFO of each socket for the grpc and tcp
// stacks (tcpinfo.go), quic-go's ConnectionStats for quic (quic.go). A Tracker (pure, no I/O)
// turns the reading at START, the polls during the window and the reading at its end into the
// object: counters are end minus start per connection, summed over connections; the congestion
// window is summed over connections at each poll (its minimum and mean over the polls); RTTs are
// means over connections at the end. Poller (poller.go) is the thin shell that polls a probe
// every PollInterval on one goroutine, only while the window runs. The Rust peer's
// crates/peer/src/transport is the reference; the two compute the same figures from the same
// readings.
package transport

import "rpcarena/peers/go/internal/protocol"

// Opt is a figure a transport may not give (an older kernel, a library without the counter):
// absent figures are left out of the sample, never reported as zero.
type Opt struct {
	V  uint64
	OK bool
}

// Some is a figure the transport gave.
func Some(v uint64) Opt { return Opt{V: v, OK: true} }

// Recovery says whether a TCP sender is in loss recovery (TCP_CA_Recovery or TCP_CA_Loss)
// at a reading; QUIC readings leave it Unknown (quic counts congestion events itself).
type Recovery uint8

// Recovery states.
const (
	Unknown Recovery = iota
	NotRecovering
	Recovering
)

// ConnReading is one connection at one moment: its cumulative counters and its gauges.
type ConnReading struct {
	// ID is stable for a connection within its probe (its registration order).
	ID               uint64
	PacketsSent      Opt
	BytesSent        Opt
	Retransmitted    Opt
	Lost             Opt
	Timeouts         Opt
	CongestionEvents Opt // cumulative, where the library counts them
	Recovery         Recovery
	CwndBytes        uint64
	SrttNs           uint64
	MinRttNs         Opt
	DeliveryRateBps  Opt
	BusyNs           Opt
	RwndLimitedNs    Opt
	SndbufLimitedNs  Opt
	DatagramsSent    Opt
	SendCalls        Opt
}

// Tracker adds up the polls of one window.
type Tracker struct {
	transport string
	start     map[uint64]ConnReading
	polls     uint64
	cwndMin   Opt
	// cwndSum is the sum over polls of the summed window: below 2^64 for any window this
	// harness runs (a 1 GB window polled every 5 ms for a day is ~1.7e16).
	cwndSum uint64
	// recovering is, per connection, whether the last reading saw it in recovery.
	recovering      map[uint64]bool
	recoveryEntries uint64
}

// NewTracker starts from the reading at START; transport is `tcp` or `quic`.
func NewTracker(transport string, start []ConnReading) *Tracker {
	t := &Tracker{transport: transport, start: map[uint64]ConnReading{}, recovering: map[uint64]bool{}}
	for _, c := range start {
		t.start[c.ID] = c
		if c.Recovery != Unknown {
			t.recovering[c.ID] = c.Recovery == Recovering
		}
	}
	return t
}

// Observe is one poll during the window.
func (t *Tracker) Observe(reading []ConnReading) {
	var cwnd uint64
	for _, c := range reading {
		cwnd += c.CwndBytes
		if c.Recovery == Unknown {
			continue
		}
		now := c.Recovery == Recovering
		if was, seen := t.recovering[c.ID]; now && (!seen || !was) {
			// A connection first seen recovering during the window entered recovery in it.
			t.recoveryEntries++
		}
		t.recovering[c.ID] = now
	}
	t.polls++
	t.cwndSum += cwnd
	if !t.cwndMin.OK || cwnd < t.cwndMin.V {
		t.cwndMin = Some(cwnd)
	}
}

// Finish is the window's statistics from the reading at its end (which also counts as a poll).
func (t *Tracker) Finish(end []ConnReading) protocol.Transport {
	t.Observe(end)
	// delta sums end minus start per connection of a counter; absent when any connection lacks
	// it. A connection opened during the window counts from zero; a counter that went backwards
	// (quic-go's losses can, when a packet declared lost arrives after all) counts zero.
	delta := func(f func(ConnReading) Opt) Opt {
		var sum uint64
		for _, c := range end {
			before := Some(0)
			if s, ok := t.start[c.ID]; ok {
				before = f(s)
			}
			after := f(c)
			if !before.OK || !after.OK {
				return Opt{}
			}
			if after.V > before.V {
				sum += after.V - before.V
			}
		}
		return Some(sum)
	}
	sum := func(f func(ConnReading) Opt) Opt {
		var total uint64
		for _, c := range end {
			v := f(c)
			if !v.OK {
				return Opt{}
			}
			total += v.V
		}
		return Some(total)
	}
	mean := func(f func(ConnReading) Opt) Opt {
		s := sum(f)
		if !s.OK || len(end) == 0 {
			return Opt{}
		}
		return Some(s.V / uint64(len(end)))
	}
	tcp := len(end) > 0
	for _, c := range end {
		tcp = tcp && c.Recovery != Unknown
	}
	congestion := delta(func(c ConnReading) Opt { return c.CongestionEvents })
	if tcp {
		congestion = Some(t.recoveryEntries)
	}
	cwndMean := Opt{}
	if t.polls > 0 {
		cwndMean = Some(t.cwndSum / t.polls)
	}
	return protocol.Transport{
		Transport:        t.transport,
		Connections:      protocol.Counter(len(end)),
		Polls:            counter(Some(t.polls)),
		PacketsSent:      counter(delta(func(c ConnReading) Opt { return c.PacketsSent })),
		BytesSent:        counter(delta(func(c ConnReading) Opt { return c.BytesSent })),
		Retransmitted:    counter(delta(func(c ConnReading) Opt { return c.Retransmitted })),
		Lost:             counter(delta(func(c ConnReading) Opt { return c.Lost })),
		Timeouts:         counter(delta(func(c ConnReading) Opt { return c.Timeouts })),
		CongestionEvents: counter(congestion),
		CwndBytes:        counter(sum(func(c ConnReading) Opt { return Some(c.CwndBytes) })),
		CwndMinBytes:     counter(t.cwndMin),
		CwndMeanBytes:    counter(cwndMean),
		SrttNs:           counter(mean(func(c ConnReading) Opt { return Some(c.SrttNs) })),
		MinRttNs:         counter(mean(func(c ConnReading) Opt { return c.MinRttNs })),
		DeliveryRateBps:  counter(sum(func(c ConnReading) Opt { return c.DeliveryRateBps })),
		BusyNs:           counter(delta(func(c ConnReading) Opt { return c.BusyNs })),
		RwndLimitedNs:    counter(delta(func(c ConnReading) Opt { return c.RwndLimitedNs })),
		SndbufLimitedNs:  counter(delta(func(c ConnReading) Opt { return c.SndbufLimitedNs })),
		DatagramsSent:    counter(delta(func(c ConnReading) Opt { return c.DatagramsSent })),
		SendCalls:        counter(delta(func(c ConnReading) Opt { return c.SendCalls })),
	}
}

// counter is an optional field of the event: nil (left out) when absent.
func counter(v Opt) *protocol.Counter {
	if !v.OK {
		return nil
	}
	c := protocol.Counter(v.V)
	return &c
}
