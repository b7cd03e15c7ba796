package transport

import (
	"net"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpi_ca_state values of a sender that has cut its window (include/net/tcp.h, enum tcp_ca_state).
const (
	caRecovery = 3
	caLoss     = 4
)

// TCPInfo is one socket's TCP_INFO and how many bytes of it the kernel filled. x/sys's
// unix.TCPInfo is the kernel's struct tcp_info up to Linux 6.18's fields (the layout is checked
// against include/uapi/linux/tcp.h by the tests); the kernel copies min(asked, its own size)
// bytes and says how many, so an older kernel fills a prefix and the fields past it are absent.
// unix.GetsockoptTCPInfo drops that count, hence the direct getsockopt.
type TCPInfo struct {
	Raw    unix.TCPInfo
	Filled uintptr
}

// has says whether the kernel filled the size bytes at offset.
func (t *TCPInfo) has(offset, size uintptr) bool { return offset+size <= t.Filled }

// ReadTCPInfo reads TCP_INFO of the TCP socket fd.
func ReadTCPInfo(fd uintptr) (TCPInfo, error) {
	var info TCPInfo
	size := uint32(unsafe.Sizeof(info.Raw))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(&info.Raw)), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return TCPInfo{}, errno
	}
	info.Filled = uintptr(size)
	return info, nil
}

// TCPReading is one TCP socket's reading: tcpi_segs_out, tcpi_bytes_sent (payload,
// retransmissions included), tcpi_total_retrans, tcpi_total_rto (Linux 6.7), tcpi_ca_state,
// tcpi_snd_cwnd x tcpi_snd_mss, tcpi_rtt and tcpi_min_rtt (microseconds), tcpi_delivery_rate
// (bytes/s) and tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited (microseconds).
func TCPReading(id uint64, info *TCPInfo) ConnReading {
	r := &info.Raw
	field := func(offset, size uintptr, v uint64) Opt {
		if !info.has(offset, size) {
			return Opt{}
		}
		return Some(v)
	}
	micros := func(offset uintptr, v uint64) Opt { return field(offset, 8, v*1000) }
	recovery := NotRecovering
	if r.Ca_state == caRecovery || r.Ca_state == caLoss {
		recovery = Recovering
	}
	return ConnReading{
		ID:              id,
		PacketsSent:     field(unsafe.Offsetof(r.Segs_out), 4, uint64(r.Segs_out)),
		BytesSent:       field(unsafe.Offsetof(r.Bytes_sent), 8, r.Bytes_sent),
		Retransmitted:   Some(uint64(r.Total_retrans)),
		Timeouts:        field(unsafe.Offsetof(r.Total_rto), 2, uint64(r.Total_rto)),
		Recovery:        recovery,
		CwndBytes:       uint64(r.Snd_cwnd) * uint64(r.Snd_mss),
		SrttNs:          uint64(r.Rtt) * 1000,
		MinRttNs:        field(unsafe.Offsetof(r.Min_rtt), 4, uint64(r.Min_rtt)*1000),
		DeliveryRateBps: field(unsafe.Offsetof(r.Delivery_rate), 8, r.Delivery_rate*8),
		BusyNs:          micros(unsafe.Offsetof(r.Busy_time), r.Busy_time),
		RwndLimitedNs:   micros(unsafe.Offsetof(r.Rwnd_limited), r.Rwnd_limited),
		SndbufLimitedNs: micros(unsafe.Offsetof(r.Sndbuf_limited), r.Sndbuf_limited),
	}
}

// TCPSockets is the probe of the grpc and tcp stacks: every client TCP socket, registered as
// it opens. It holds each socket's syscall.RawConn, whose Control runs under the descriptor's
// reference count, so a poll never reads a descriptor number reused after a close; a closed
// socket's read fails and the socket drops out of the reading (as in the Rust peer).
type TCPSockets struct {
	mu    sync.Mutex
	conns []syscall.RawConn
}

// Register adds conn (a *net.TCPConn, or anything giving its socket); a socket that cannot be
// read only costs its statistics.
func (s *TCPSockets) Register(conn net.Conn) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, raw)
	s.mu.Unlock()
}

// Transport is `tcp`.
func (s *TCPSockets) Transport() string { return "tcp" }

// Read reads every registered socket still open: one getsockopt each.
func (s *TCPSockets) Read() []ConnReading {
	s.mu.Lock()
	defer s.mu.Unlock()
	reading := make([]ConnReading, 0, len(s.conns))
	for i, raw := range s.conns {
		var info TCPInfo
		var err error
		if cerr := raw.Control(func(fd uintptr) { info, err = ReadTCPInfo(fd) }); cerr != nil || err != nil {
			continue
		}
		reading = append(reading, TCPReading(uint64(i), &info))
	}
	return reading
}
