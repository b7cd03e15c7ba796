package stack_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/grpcstack"
	"rpcarena/peers/go/internal/stack/httpstack"
	"rpcarena/peers/go/internal/stack/netrpcstack"
	"rpcarena/peers/go/internal/stack/quicstack"
	"rpcarena/peers/go/internal/stack/tcpstack"
	"rpcarena/peers/go/internal/testpki"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

type serveFunc func(address string, config *tls.Config, counters *stack.Counters, f fault.Server) (stack.Server, error)
type connectFunc func(ctx context.Context, settings stack.ClientSettings) (stack.Client, *engine.OpError)

// server and client keep a typed nil pointer out of the interfaces.
func server[S stack.Server](serve func(string, *tls.Config, *stack.Counters, fault.Server) (S, error)) serveFunc {
	return func(address string, config *tls.Config, counters *stack.Counters, f fault.Server) (stack.Server, error) {
		s, err := serve(address, config, counters, f)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

func client[C stack.Client](connect func(context.Context, stack.ClientSettings) (C, *engine.OpError)) connectFunc {
	return func(ctx context.Context, settings stack.ClientSettings) (stack.Client, *engine.OpError) {
		c, err := connect(ctx, settings)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

type stackUnderTest struct {
	alpn    string
	serve   serveFunc
	connect connectFunc
}

// stacks lists each stack's server (in a conformance fault mode, where the stack has them) and
// client constructors.
var stacks = map[args.Stack]stackUnderTest{
	args.Grpc:          {stack.ALPNH2, server(grpcstack.Serve), client(grpcstack.Connect)},
	args.GrpcServeHTTP: {stack.ALPNH2, server(grpcstack.ServeHTTP), client(grpcstack.Connect)},
	args.Quic: {stack.ALPNNative,
		server(func(a string, c *tls.Config, n *stack.Counters, _ fault.Server) (*quicstack.Server, error) {
			return quicstack.Serve(a, c, n)
		}),
		client(quicstack.Connect)},
	args.Tcp: {stack.ALPNNative,
		server(func(a string, c *tls.Config, n *stack.Counters, _ fault.Server) (*tcpstack.Server, error) {
			return tcpstack.Serve(a, c, n)
		}),
		client(tcpstack.Connect)},
	args.NetrpcGob: {netrpcstack.ALPNGob,
		server(func(a string, c *tls.Config, n *stack.Counters, f fault.Server) (*netrpcstack.Server, error) {
			return netrpcstack.Serve(a, c, n, netrpcstack.Gob, f)
		}),
		client(func(ctx context.Context, s stack.ClientSettings) (*netrpcstack.Client, *engine.OpError) {
			return netrpcstack.Connect(ctx, s, netrpcstack.Gob)
		})},
	args.NetrpcProto: {netrpcstack.ALPNProto,
		server(func(a string, c *tls.Config, n *stack.Counters, f fault.Server) (*netrpcstack.Server, error) {
			return netrpcstack.Serve(a, c, n, netrpcstack.Proto, f)
		}),
		client(func(ctx context.Context, s stack.ClientSettings) (*netrpcstack.Client, *engine.OpError) {
			return netrpcstack.Connect(ctx, s, netrpcstack.Proto)
		})},
	args.HTTP1Proto: {httpstack.ALPNHTTP1,
		server(func(a string, c *tls.Config, n *stack.Counters, f fault.Server) (*stack.HTTPServer, error) {
			return httpstack.Serve(a, c, n, false, f)
		}),
		client(func(ctx context.Context, s stack.ClientSettings) (*httpstack.Client, *engine.OpError) {
			return httpstack.Connect(ctx, s, false)
		})},
	args.HTTP2Proto: {httpstack.ALPNHTTP2,
		server(func(a string, c *tls.Config, n *stack.Counters, f fault.Server) (*stack.HTTPServer, error) {
			return httpstack.Serve(a, c, n, true, f)
		}),
		client(func(ctx context.Context, s stack.ClientSettings) (*httpstack.Client, *engine.OpError) {
			return httpstack.Connect(ctx, s, true)
		})},
}

// start serves stack s on loopback with the test certificate, in conformance fault mode f when
// it is set.
func (s stackUnderTest) start(t *testing.T, pki testpki.Files, counters *stack.Counters, f fault.Server) stack.Server {
	t.Helper()
	config, err := stack.ServerTLS(pki.Cert, pki.Key, s.alpn)
	if err != nil {
		t.Fatal(err)
	}
	server, err := s.serve("127.0.0.1:0", config, counters, f)
	if err != nil {
		t.Fatal(err)
	}
	return server
}

func settings(t *testing.T, server, ca, name, alpn string, wl workload.Workload) stack.ClientSettings {
	config, err := stack.ClientTLS(ca, name, alpn)
	if err != nil {
		t.Fatal(err)
	}
	return stack.ClientSettings{Server: server, TLS: config, Workload: wl, Lanes: 2}
}

// security is how a test pair runs: TLS with the test PKI, or plaintext (--tls off).
type security struct {
	plaintext bool
	pki       testpki.Files
}

func (sec security) String() string {
	return map[bool]string{true: "plaintext", false: "TLS"}[sec.plaintext]
}

// securities are the ways stack name runs: TLS, and plaintext where it takes --tls off.
func securities(pki testpki.Files, name args.Stack) []security {
	if args.Carried(name).Plaintext {
		return []security{{pki: pki}, {plaintext: true, pki: pki}}
	}
	return []security{{pki: pki}}
}

// start serves s on loopback in this security, in conformance fault mode f when it is set.
func (sec security) start(t *testing.T, s stackUnderTest, counters *stack.Counters, f fault.Server) stack.Server {
	t.Helper()
	if !sec.plaintext {
		return s.start(t, sec.pki, counters, f)
	}
	server, err := s.serve("127.0.0.1:0", nil, counters, f)
	if err != nil {
		t.Fatal(err)
	}
	return server
}

// settings are a client's of s in this security (TLS: trusting the test CA, verifying
// 127.0.0.1).
func (sec security) settings(t *testing.T, s stackUnderTest, server string, wl workload.Workload) stack.ClientSettings {
	if sec.plaintext {
		return stack.ClientSettings{Server: server, Workload: wl, Lanes: 2}
	}
	return settings(t, server, sec.pki.CA, "127.0.0.1", s.alpn, wl)
}

// testWorkload is the tests' workload of shape: a command asks for no response payload (the
// client sends response_size 0 whatever --response-size says).
func testWorkload(shape workload.Shape, kind workload.Kind, requestSize, responseSize, messages uint32) workload.Workload {
	if shape == workload.Send {
		responseSize = 0
	}
	return workload.Workload{Shape: shape, RequestSize: requestSize, ResponseSize: responseSize, Messages: messages, Kind: kind}
}

// Every stack carries every shape it offers with both payload kinds, with TLS and in plaintext
// where it takes --tls off; a command is acknowledged without payload and counted in commands.
func TestEveryStackServesEveryShapeAndPayload(t *testing.T) {
	pki := testpki.Write(t)
	for name, s := range stacks {
		for _, sec := range securities(pki, name) {
			counters := &stack.Counters{}
			server := sec.start(t, s, counters, "")
			commands := uint64(0)
			for _, kind := range []workload.Kind{workload.Zeros, workload.Structured} {
				for _, shape := range args.Carried(name).Shapes {
					wl := testWorkload(shape, kind, 64, 3000, 8)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					client, opErr := s.connect(ctx, sec.settings(t, s, server.Addr().String(), wl))
					if opErr != nil {
						t.Fatalf("%s %s: %v", name, sec, opErr)
					}
					for seq, lane := range client.Lanes() {
						outcome, opErr := lane.Call(ctx, uint64(seq))
						if opErr != nil || outcome.ResponseBytes != wl.ResponsesPerOp()*uint64(wl.ResponseSize) || outcome.Responses != wl.ResponsesPerOp() {
							t.Fatalf("%s %s %s %s: %v %+v", name, sec, kind, shape, opErr, outcome)
						}
						if shape == workload.Send {
							commands++
						}
					}
					client.Close()
					cancel()
				}
			}
			server.Stop()
			if counters.RPCs.Load() == 0 || counters.Rejected.Load() != 0 || counters.Commands.Load() != commands || counters.FirstRejection() != "" {
				t.Fatalf("%s %s: %d calls, %d rejected (%q), %d commands, %d sent", name, sec, counters.RPCs.Load(),
					counters.Rejected.Load(), counters.FirstRejection(), counters.Commands.Load(), commands)
			}
		}
	}
}

// A plaintext client never talks to a TLS server, nor a TLS client to a plaintext one: each
// fails while connecting (the server hangs up or answers bytes that are not TLS).
func TestTLSAndPlaintextDoNotMix(t *testing.T) {
	pki := testpki.Write(t)
	wl := workload.Workload{Shape: workload.Unary, Messages: 1}
	for name, s := range stacks {
		if !args.Carried(name).Plaintext {
			continue
		}
		for _, sec := range securities(pki, name) {
			server := sec.start(t, s, &stack.Counters{}, "")
			other := security{plaintext: !sec.plaintext, pki: pki}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			client, opErr := s.connect(ctx, other.settings(t, s, server.Addr().String(), wl))
			if opErr == nil {
				_, opErr = client.Lanes()[0].Call(ctx, 0)
				client.Close()
			}
			cancel()
			server.Stop()
			if opErr == nil || (opErr.Code != "tls" && opErr.Code != "connect" && opErr.Code != "invalid") {
				t.Errorf("%s: a %s client against a %s server: %v", name, other, sec, opErr)
			}
		}
	}
}

func TestEveryStackReportsWhatItsConnectionsSent(t *testing.T) {
	pki := testpki.Write(t)
	for name, s := range stacks {
		// client streams where the stack has them, else unary calls of the same bytes
		wl := workload.Workload{Shape: workload.ClientStream, RequestSize: 32 * 1024, ResponseSize: 64, Messages: 4, Kind: workload.Zeros}
		if !slices.Contains(args.Carried(name).Shapes, wl.Shape) {
			wl.Shape, wl.RequestSize = workload.Unary, 128*1024
		}
		server := s.start(t, pki, &stack.Counters{}, "")
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
		want := map[bool]string{true: "quic", false: "tcp"}[name == args.Quic]
		if stats == nil || stats.Transport != want || uint32(stats.Connections) != client.Connections() {
			t.Fatalf("%s: %+v", name, stats)
		}
		sent := uint64(len(client.Lanes())) * wl.RequestsPerOp() * uint64(wl.RequestSize)
		if stats.BytesSent == nil || uint64(*stats.BytesSent) < sent || stats.PacketsSent == nil || *stats.PacketsSent == 0 ||
			stats.CwndBytes == nil || *stats.CwndBytes == 0 || stats.Polls == nil || *stats.Polls < 2 || stats.SrttNs == nil {
			t.Fatalf("%s: %+v after sending %d bytes", name, stats, sent)
		}
		if (name == args.Quic) != (stats.Lost != nil) || (name == args.Quic) == (stats.Retransmitted != nil) {
			t.Fatalf("%s: lost (QUIC) and retransmitted (TCP) mixed up: %+v", name, stats)
		}
	}
}

func TestAWrongCAOrNameFailsAsTLS(t *testing.T) {
	pki := testpki.Write(t)
	wl := workload.Workload{Shape: workload.Unary, Messages: 1}
	for name, s := range stacks {
		server := s.start(t, pki, &stack.Counters{}, "")
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
	for _, name := range []args.Stack{args.Grpc, args.Tcp, args.NetrpcGob, args.HTTP1Proto, args.HTTP2Proto} {
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
