package stack_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/grpcstack"
	"rpcarena/peers/go/internal/stack/quicstack"
	"rpcarena/peers/go/internal/stack/tcpstack"
	"rpcarena/peers/go/internal/testpki"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// stacks lists each stack's server and client constructors.
var stacks = map[string]struct {
	alpn    string
	serve   func(address string, pki testpki.Files, counters *stack.Counters) (stack.Server, error)
	connect func(ctx context.Context, settings stack.ClientSettings) (stack.Client, *engine.OpError)
}{
	"grpc": {stack.ALPNH2,
		func(address string, pki testpki.Files, counters *stack.Counters) (stack.Server, error) {
			config, err := stack.ServerTLS(pki.Cert, pki.Key, stack.ALPNH2)
			if err != nil {
				return nil, err
			}
			return grpcstack.Serve(address, config, counters)
		},
		func(ctx context.Context, settings stack.ClientSettings) (stack.Client, *engine.OpError) {
			client, err := grpcstack.Connect(ctx, settings)
			if err != nil {
				return nil, err
			}
			return client, nil
		}},
	"quic": {stack.ALPNNative,
		func(address string, pki testpki.Files, counters *stack.Counters) (stack.Server, error) {
			config, err := stack.ServerTLS(pki.Cert, pki.Key, stack.ALPNNative)
			if err != nil {
				return nil, err
			}
			return quicstack.Serve(address, config, counters)
		},
		func(ctx context.Context, settings stack.ClientSettings) (stack.Client, *engine.OpError) {
			client, err := quicstack.Connect(ctx, settings)
			if err != nil {
				return nil, err
			}
			return client, nil
		}},
	"tcp": {stack.ALPNNative,
		func(address string, pki testpki.Files, counters *stack.Counters) (stack.Server, error) {
			config, err := stack.ServerTLS(pki.Cert, pki.Key, stack.ALPNNative)
			if err != nil {
				return nil, err
			}
			return tcpstack.Serve(address, config, counters)
		},
		func(ctx context.Context, settings stack.ClientSettings) (stack.Client, *engine.OpError) {
			client, err := tcpstack.Connect(ctx, settings)
			if err != nil {
				return nil, err
			}
			return client, nil
		}},
}

func settings(t *testing.T, server, ca, name, alpn string, wl workload.Workload) stack.ClientSettings {
	config, err := stack.ClientTLS(ca, name, alpn)
	if err != nil {
		t.Fatal(err)
	}
	return stack.ClientSettings{Server: server, TLS: config, Workload: wl, Lanes: 2}
}

func TestEveryStackServesEveryShapeAndPayload(t *testing.T) {
	pki := testpki.Write(t)
	for name, s := range stacks {
		counters := &stack.Counters{}
		server, err := s.serve("127.0.0.1:0", pki, counters)
		if err != nil {
			t.Fatal(name, err)
		}
		for _, kind := range []workload.Kind{workload.Zeros, workload.Structured} {
			for _, shape := range workload.Shapes {
				wl := workload.Workload{Shape: shape, RequestSize: 64, ResponseSize: 3000, Messages: 8, Kind: kind}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				client, opErr := s.connect(ctx, settings(t, server.Addr().String(), pki.CA, "127.0.0.1", s.alpn, wl))
				if opErr != nil {
					t.Fatalf("%s: %v", name, opErr)
				}
				for seq, lane := range client.Lanes() {
					outcome, opErr := lane.Call(ctx, uint64(seq))
					if opErr != nil || outcome.ResponseBytes != wl.ResponsesPerOp()*3000 {
						t.Fatalf("%s %s %s: %v %+v", name, kind, shape, opErr, outcome)
					}
				}
				client.Close()
				cancel()
			}
		}
		server.Stop()
		if counters.RPCs.Load() == 0 || counters.Rejected.Load() != 0 {
			t.Fatalf("%s: %d calls, %d rejected", name, counters.RPCs.Load(), counters.Rejected.Load())
		}
	}
}

func TestEveryStackReportsWhatItsConnectionsSent(t *testing.T) {
	pki := testpki.Write(t)
	wl := workload.Workload{Shape: workload.ClientStream, RequestSize: 32 * 1024, ResponseSize: 64, Messages: 4, Kind: workload.Zeros}
	for name, s := range stacks {
		server, err := s.serve("127.0.0.1:0", pki, &stack.Counters{})
		if err != nil {
			t.Fatal(name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		client, opErr := s.connect(ctx, settings(t, server.Addr().String(), pki.CA, "127.0.0.1", s.alpn, wl))
		if opErr != nil {
			t.Fatalf("%s: %v", name, opErr)
		}
		poller := transport.Start(client.TransportProbe())
		for seq, lane := range client.Lanes() {
			if _, opErr := lane.Call(ctx, uint64(seq)); opErr != nil {
				t.Fatalf("%s: %v", name, opErr)
			}
		}
		time.Sleep(3 * transport.PollInterval)
		stats := poller.Finish()
		client.Close()
		server.Stop()
		cancel()
		want := map[string]string{"grpc": "tcp", "tcp": "tcp", "quic": "quic"}[name]
		if stats == nil || stats.Transport != want || uint32(stats.Connections) != client.Connections() {
			t.Fatalf("%s: %+v", name, stats)
		}
		sent := uint64(len(client.Lanes())) * uint64(wl.Messages) * uint64(wl.RequestSize)
		if stats.BytesSent == nil || uint64(*stats.BytesSent) < sent || stats.PacketsSent == nil || *stats.PacketsSent == 0 ||
			stats.CwndBytes == nil || *stats.CwndBytes == 0 || stats.Polls == nil || *stats.Polls < 2 || stats.SrttNs == nil {
			t.Fatalf("%s: %+v after sending %d bytes", name, stats, sent)
		}
		if (name == "quic") != (stats.Lost != nil) || (name == "quic") == (stats.Retransmitted != nil) {
			t.Fatalf("%s: lost (QUIC) and retransmitted (TCP) mixed up: %+v", name, stats)
		}
	}
}

func TestAWrongCAOrNameFailsAsTLS(t *testing.T) {
	pki := testpki.Write(t)
	wl := workload.Workload{Shape: workload.Unary, Messages: 1}
	for name, s := range stacks {
		server, err := s.serve("127.0.0.1:0", pki, &stack.Counters{})
		if err != nil {
			t.Fatal(name, err)
		}
		for what, c := range map[string][2]string{"wrong CA": {pki.OtherCA, "localhost"}, "wrong name": {pki.CA, "example.org"}} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			client, opErr := s.connect(ctx, settings(t, server.Addr().String(), c[0], c[1], s.alpn, wl))
			cancel()
			if opErr == nil {
				client.Close()
				t.Fatalf("%s %s: connected", name, what)
			}
			t.Logf("%s %s: %v", name, what, opErr)
			if opErr.Code != "tls" || !strings.Contains(opErr.Message, "TLS handshake with") {
				t.Errorf("%s %s: %v", name, what, opErr)
			}
		}
		server.Stop()
	}
}

func TestAClosedPortFailsAsConnect(t *testing.T) {
	pki := testpki.Write(t)
	listener, _ := net.Listen("tcp", "127.0.0.1:0")
	address := listener.Addr().String()
	listener.Close()
	for _, name := range []string{"grpc", "tcp"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, opErr := stacks[name].connect(ctx, settings(t, address, pki.CA, "localhost", stacks[name].alpn, workload.Workload{Messages: 1}))
		cancel()
		if opErr == nil || opErr.Code != "connect" {
			t.Errorf("%s: %v", name, opErr)
		}
	}
}

func TestTCPSocketsGetCubicAndUDPSocketsLargeBuffers(t *testing.T) {
	listener, err := stack.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	conn, err := stack.DialTCP(context.Background(), listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	accepted, err := listener.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	if os.Geteuid() == 0 {
		for _, c := range []net.Conn{conn, accepted} {
			if congestion, err := stack.SocketCongestion(c.(*net.TCPConn)); err != nil || congestion != stack.Congestion {
				t.Fatalf("congestion control %q (%v)", congestion, err)
			}
		}
	}
	udp, obtained, err := stack.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	if os.Geteuid() == 0 && obtained < stack.UDPBuffer {
		t.Fatalf("UDP buffers %d as root", obtained)
	}
	local, err := stack.LocalAddressFor(udp.LocalAddr().(*net.UDPAddr))
	if err != nil || !local.IsLoopback() || local.IsUnspecified() {
		t.Fatalf("local address for a loopback server: %v %v", local, err)
	}
}
