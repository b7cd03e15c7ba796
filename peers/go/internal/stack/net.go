package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Congestion is the congestion control of every TCP socket (grpc and tcp stacks): Cubic, the
// family the QUIC stacks use, so that hosts defaulting to BBR do not compare congestion
// controllers instead of stacks.
const Congestion = "cubic"

// UDPBuffer is the UDP socket receive and send buffer size asked for.
const UDPBuffer = 8 * 1024 * 1024

var warnCongestion sync.Once

// tuneTCP is a Control function for every TCP socket, dialled or listening (accepted sockets
// inherit the listener's congestion control): TCP_CONGESTION cubic. TCP_NODELAY is Go's
// default for every TCP connection. A kernel that refuses cubic (unprivileged and not in
// net.ipv4.tcp_allowed_congestion_control) keeps the host default and stderr says so once.
func tuneTCP(_, _ string, raw syscall.RawConn) error {
	var err error
	if cerr := raw.Control(func(fd uintptr) {
		err = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, Congestion)
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		warnCongestion.Do(func() {
			fmt.Fprintf(os.Stderr, "rpcarena-peer-go: cannot set TCP congestion control %s (%v); keeping the host default; run as root or add it to net.ipv4.tcp_allowed_congestion_control\n", Congestion, err)
		})
	}
	return nil
}

// DialTCP opens a tuned TCP connection to address.
func DialTCP(ctx context.Context, address string) (net.Conn, error) {
	dialer := net.Dialer{Control: tuneTCP}
	return dialer.DialContext(ctx, "tcp", address)
}

// ListenTCP binds a tuned TCP listener on exactly address.
func ListenTCP(address string) (net.Listener, error) {
	config := net.ListenConfig{Control: tuneTCP}
	return config.Listen(context.Background(), "tcp", address)
}

// SocketCongestion reads a TCP connection's congestion control (tests, diagnostics).
func SocketCongestion(conn syscall.Conn) (string, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return name, gerr
}

// ListenUDP binds a UDP socket on exactly address with UDPBuffer receive and send buffers, set
// before the socket is used: SO_RCVBUFFORCE/SO_SNDBUFFORCE when privileged (they ignore
// net.core.rmem_max/wmem_max), else SO_RCVBUF/SO_SNDBUF (capped by those limits). It returns
// the smaller of the two sizes obtained; stderr warns when that is below UDPBuffer.
func ListenUDP(address string) (*net.UDPConn, int, error) {
	config := net.ListenConfig{Control: func(_, _ string, raw syscall.RawConn) error {
		return raw.Control(func(fd uintptr) {
			for _, options := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
				if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, options[0], UDPBuffer) != nil {
					_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, options[1], UDPBuffer)
				}
			}
		})
	}}
	packet, err := config.ListenPacket(context.Background(), "udp", address)
	if err != nil {
		return nil, 0, err
	}
	conn := packet.(*net.UDPConn)
	obtained := udpBuffers(conn)
	if obtained < UDPBuffer {
		fmt.Fprintf(os.Stderr, "rpcarena-peer-go: UDP buffers are only %d bytes, below %d; raise net.core.rmem_max and net.core.wmem_max or run as root\n", obtained, UDPBuffer)
	}
	return conn, obtained, nil
}

// udpBuffers is the smaller of the receive and send buffer sizes (Linux reports twice what was
// set, its bookkeeping overhead included; halved here).
func udpBuffers(conn *net.UDPConn) int {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0
	}
	smallest := 0
	_ = raw.Control(func(fd uintptr) {
		received, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		sent, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		smallest = min(received, sent) / 2
	})
	return smallest
}

// LocalAddressFor is the local address the kernel routes to server: a QUIC client binds its UDP
// socket there (port 0), never to the wildcard.
func LocalAddressFor(server *net.UDPAddr) (net.IP, error) {
	probe, err := net.DialUDP("udp", nil, server)
	if err != nil {
		return nil, fmt.Errorf("no route to %s: %w", server, err)
	}
	defer probe.Close()
	return probe.LocalAddr().(*net.UDPAddr).IP, nil
}
