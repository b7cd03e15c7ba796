package transport

import (
	"io"
	"net"
	"testing"
	"time"
	"unsafe"
)

func TestTheTCPInfoLayoutIsTheKernels(t *testing.T) {
	var r TCPInfo
	// Offsets from include/uapi/linux/tcp.h (x86_64 and aarch64 alike), as the Rust peer's
	// crates/peer/src/transport/tcp_info.rs checks them.
	for name, c := range map[string]struct{ got, want uintptr }{
		"ca_state":       {unsafe.Offsetof(r.Raw.Ca_state), 1},
		"rto":            {unsafe.Offsetof(r.Raw.Rto), 8},
		"snd_mss":        {unsafe.Offsetof(r.Raw.Snd_mss), 16},
		"rtt":            {unsafe.Offsetof(r.Raw.Rtt), 68},
		"snd_cwnd":       {unsafe.Offsetof(r.Raw.Snd_cwnd), 80},
		"total_retrans":  {unsafe.Offsetof(r.Raw.Total_retrans), 100},
		"pacing_rate":    {unsafe.Offsetof(r.Raw.Pacing_rate), 104},
		"segs_out":       {unsafe.Offsetof(r.Raw.Segs_out), 136},
		"min_rtt":        {unsafe.Offsetof(r.Raw.Min_rtt), 148},
		"delivery_rate":  {unsafe.Offsetof(r.Raw.Delivery_rate), 160},
		"busy_time":      {unsafe.Offsetof(r.Raw.Busy_time), 168},
		"rwnd_limited":   {unsafe.Offsetof(r.Raw.Rwnd_limited), 176},
		"sndbuf_limited": {unsafe.Offsetof(r.Raw.Sndbuf_limited), 184},
		"bytes_sent":     {unsafe.Offsetof(r.Raw.Bytes_sent), 200},
		"snd_wnd":        {unsafe.Offsetof(r.Raw.Snd_wnd), 228},
		"total_rto":      {unsafe.Offsetof(r.Raw.Total_rto), 240},
	} {
		if c.got != c.want {
			t.Errorf("tcpi_%s at offset %d, the kernel's is %d", name, c.got, c.want)
		}
	}
}

func TestAFieldTheKernelDidNotFillIsAbsent(t *testing.T) {
	info := TCPInfo{Filled: 104} // a kernel with struct tcp_info up to tcpi_total_retrans
	info.Raw.Snd_cwnd, info.Raw.Snd_mss, info.Raw.Total_retrans, info.Raw.Ca_state = 10, 1448, 2, caLoss
	info.Raw.Segs_out, info.Raw.Busy_time = 99, 5 // beyond what was filled: must not show
	c := TCPReading(3, &info)
	if c.CwndBytes != 14_480 || c.Retransmitted != Some(2) || c.Recovery != Recovering || c.ID != 3 {
		t.Fatalf("%+v", c)
	}
	for name, v := range map[string]Opt{"packets_sent": c.PacketsSent, "bytes_sent": c.BytesSent,
		"timeouts": c.Timeouts, "min_rtt": c.MinRttNs, "delivery_rate": c.DeliveryRateBps, "busy": c.BusyNs} {
		if v.OK {
			t.Errorf("%s = %d from a field the kernel did not fill", name, v.V)
		}
	}
}

func TestRegisteredSocketsAreReadUntilTheyClose(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	received := make(chan int64, 1)
	go func() {
		server, err := listener.Accept()
		if err != nil {
			received <- -1
			return
		}
		n, _ := io.Copy(io.Discard, server)
		server.Close()
		received <- n
	}()
	client, err := net.Dial("tcp", listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sockets := &TCPSockets{}
	sockets.Register(client)
	start := sockets.Read()
	if _, err := client.Write(make([]byte, 100_000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the acknowledgements in
	end := sockets.Read()
	if len(start) != 1 || len(end) != 1 {
		t.Fatalf("%d and %d readings of one socket", len(start), len(end))
	}
	s := NewTracker(sockets.Transport(), start).Finish(end)
	// Timeouts need Linux 6.7 and may be absent on an older kernel, never above zero here.
	if get(s.PacketsSent) < 2 || get(s.BytesSent) < 100_000 || get(s.CwndBytes) <= 0 || get(s.Timeouts) > 0 ||
		get(s.Retransmitted) != 0 || get(s.MinRttNs) < 0 || get(s.BusyNs) < 0 || get(s.DeliveryRateBps) < 0 {
		t.Fatalf("%+v from %+v", s, end[0])
	}
	client.Close()
	if n := <-received; n != 100_000 {
		t.Fatalf("the server read %d bytes", n)
	}
	if got := sockets.Read(); len(got) != 0 {
		t.Fatalf("a closed socket was read: %+v", got)
	}
}
