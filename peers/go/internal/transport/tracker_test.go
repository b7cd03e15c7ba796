package transport

import (
	"encoding/json"
	"testing"

	"rpcarena/peers/go/internal/protocol"
)

func tcp(id, sent, retrans, cwnd uint64, recovering bool) ConnReading {
	state := NotRecovering
	if recovering {
		state = Recovering
	}
	return ConnReading{ID: id, PacketsSent: Some(sent), Retransmitted: Some(retrans), Recovery: state,
		CwndBytes: cwnd, SrttNs: 30_000_000, BusyNs: Some(sent * 1000)}
}

// get is an optional field's value, or -1 when it is left out.
func get(c *protocol.Counter) int64 {
	if c == nil {
		return -1
	}
	return int64(*c)
}

func TestCountersAreWindowDifferencesSummedOverConnections(t *testing.T) {
	tr := NewTracker("tcp", []ConnReading{tcp(0, 100, 1, 10_000, false), tcp(1, 50, 0, 10_000, false)})
	tr.Observe([]ConnReading{tcp(0, 150, 1, 8_000, false), tcp(1, 60, 0, 12_000, false)})
	s := tr.Finish([]ConnReading{tcp(0, 300, 3, 14_000, false), tcp(1, 80, 2, 14_000, false)})
	if s.Transport != "tcp" || s.Connections != 2 {
		t.Fatalf("%+v", s)
	}
	for name, c := range map[string]struct{ got, want int64 }{
		"packets_sent":    {get(s.PacketsSent), 200 + 30},
		"retransmitted":   {get(s.Retransmitted), 2 + 2},
		"busy_ns":         {get(s.BusyNs), 230_000},
		"polls":           {get(s.Polls), 2},
		"cwnd_bytes":      {get(s.CwndBytes), 28_000},
		"cwnd_min_bytes":  {get(s.CwndMinBytes), 20_000},
		"cwnd_mean_bytes": {get(s.CwndMeanBytes), 24_000},
		"srtt_ns":         {get(s.SrttNs), 30_000_000},
		"lost":            {get(s.Lost), -1}, // TCP reports no lost packets
		"datagrams_sent":  {get(s.DatagramsSent), -1},
		"congestion":      {get(s.CongestionEvents), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", name, c.got, c.want)
		}
	}
}

func TestTCPCongestionEventsAreEntriesIntoRecovery(t *testing.T) {
	tr := NewTracker("tcp", []ConnReading{tcp(0, 0, 0, 1, true)})
	// Already recovering at START: not an entry. Leaves, enters, stays, leaves, enters.
	for _, recovering := range []bool{true, false, true, true, false, true} {
		tr.Observe([]ConnReading{tcp(0, 0, 0, 1, recovering)})
	}
	// A connection that appears during the window, recovering.
	tr.Observe([]ConnReading{tcp(0, 0, 0, 1, true), tcp(7, 0, 0, 1, true)})
	s := tr.Finish([]ConnReading{tcp(0, 0, 0, 1, false), tcp(7, 0, 0, 1, false)})
	if got := get(s.CongestionEvents); got != 3 {
		t.Fatalf("congestion_events = %d, want 3", got)
	}
}

func TestQUICFiguresComeFromTheLibrary(t *testing.T) {
	q := func(sent, lost, cwnd uint64) ConnReading {
		return ConnReading{PacketsSent: Some(sent), BytesSent: Some(sent * 1200), Lost: Some(lost),
			CwndBytes: cwnd, SrttNs: 31_000_000, MinRttNs: Some(30_000_000)}
	}
	tr := NewTracker("quic", []ConnReading{q(10, 0, 12_000)})
	s := tr.Finish([]ConnReading{q(110, 2, 30_000)})
	if get(s.PacketsSent) != 100 || get(s.BytesSent) != 120_000 || get(s.Lost) != 2 || get(s.MinRttNs) != 30_000_000 {
		t.Fatalf("%+v", s)
	}
	// Nothing quic-go does not count is reported, not even as zero.
	for name, c := range map[string]*protocol.Counter{"retransmitted": s.Retransmitted, "timeouts": s.Timeouts,
		"congestion_events": s.CongestionEvents, "datagrams_sent": s.DatagramsSent, "send_calls": s.SendCalls,
		"busy_ns": s.BusyNs, "delivery_rate_bps": s.DeliveryRateBps} {
		if c != nil {
			t.Errorf("%s = %d, want it left out", name, *c)
		}
	}
	if get(s.CwndMinBytes) != 30_000 || get(s.CwndBytes) != 30_000 || get(s.Polls) != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestACounterOneConnectionLacksIsLeftOut(t *testing.T) {
	b := tcp(1, 10, 0, 1, false)
	b.BusyNs = Opt{}
	s := NewTracker("tcp", nil).Finish([]ConnReading{tcp(0, 10, 0, 1, false), b})
	if s.BusyNs != nil {
		t.Fatalf("busy_ns = %d, want it left out", *s.BusyNs)
	}
	if get(s.PacketsSent) != 20 {
		t.Fatalf("packets_sent = %d: connections new in the window count from zero", get(s.PacketsSent))
	}
}

func TestACounterThatWentBackwardsCountsZero(t *testing.T) {
	q := func(lost uint64) ConnReading { return ConnReading{Lost: Some(lost)} }
	s := NewTracker("quic", []ConnReading{q(5)}).Finish([]ConnReading{q(3)})
	if get(s.Lost) != 0 {
		t.Fatalf("lost = %d", get(s.Lost))
	}
}

func TestTheObjectIsDecimalStringsWithoutAbsentFields(t *testing.T) {
	s := NewTracker("tcp", nil).Finish([]ConnReading{tcp(0, 12, 1, 14_480, false)})
	line, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"transport":"tcp","connections":"1","polls":"1","packets_sent":"12","retransmitted":"1",` +
		`"congestion_events":"0","cwnd_bytes":"14480","cwnd_min_bytes":"14480","cwnd_mean_bytes":"14480",` +
		`"srtt_ns":"30000000","busy_ns":"12000"}`
	if string(line) != want {
		t.Fatalf("got  %s\nwant %s", line, want)
	}
}
