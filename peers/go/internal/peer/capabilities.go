package peer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/protocol"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/stack/quicstack"
	"rpcarena/peers/go/internal/workload"
)

// Name and version of this peer.
const (
	Name    = "rpcarena-peer-go"
	Version = "0.1.0"
)

// modules lists the modules that implement each stack, for `libraries`.
var modules = map[args.Stack][]string{
	args.Grpc:          {"google.golang.org/grpc", "golang.org/x/net", "google.golang.org/protobuf"},
	args.GrpcServeHTTP: {"google.golang.org/grpc", "golang.org/x/net", "google.golang.org/protobuf"},
	args.Quic:          {"github.com/quic-go/quic-go", "google.golang.org/protobuf"},
	args.Tcp:           {"google.golang.org/protobuf"},
	args.NetrpcGob:     {"google.golang.org/protobuf"}, // the generated message types
	args.NetrpcProto:   {"google.golang.org/protobuf"},
	args.HTTP1Proto:    {"google.golang.org/protobuf"},
	args.HTTP2Proto:    {"google.golang.org/protobuf"},
}

// standard lists the packages of Go's standard library that implement each stack beside
// crypto/tls (their version is the toolchain's).
var standard = map[args.Stack][]string{
	args.GrpcServeHTTP: {"net/http"},
	args.NetrpcGob:     {"net/rpc", "encoding/gob"},
	args.NetrpcProto:   {"net/rpc"},
	args.HTTP1Proto:    {"net/http"},
	args.HTTP2Proto:    {"net/http"},
}

// Capabilities describes the peer: both roles offer every stack with the shapes it can carry
// and both payload kinds; the client runs the load models the stack can carry (args.Carried).
// It opens no socket: what it declares about the host (the congestion control a TCP socket
// gets, the UDP buffers a socket gets) comes from privileges and /proc/sys.
func Capabilities() protocol.Capabilities {
	build, versions := buildInfo()
	var files []string
	if executable, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(executable); err == nil {
			executable = resolved
		}
		files = append(files, executable)
	}
	capabilities := protocol.Capabilities{
		Peer: Name, Language: "go", Version: Version, Revision: protocol.Revision,
		Build: build, Files: files, Allocations: &protocol.GoAllocations,
	}
	for _, s := range args.Stacks {
		client, server := offers(s, versions)
		capabilities.Roles.Client = append(capabilities.Roles.Client, client)
		capabilities.Roles.Server = append(capabilities.Roles.Server, server)
	}
	return capabilities
}

// buildInfo is the toolchain, flags and runtime the binary was built with, and the versions of
// the modules linked in.
func buildInfo() (map[string]string, map[string]string) {
	info, _ := debug.ReadBuildInfo()
	versions := map[string]string{}
	build := map[string]string{"toolchain": runtime.Version(), "runtime": fmt.Sprintf("goroutines, GOMAXPROCS=%d", runtime.GOMAXPROCS(0))}
	if info == nil {
		return build, versions
	}
	for _, dep := range info.Deps {
		versions[dep.Path] = dep.Version
	}
	var flags []string
	for _, setting := range info.Settings {
		switch setting.Key {
		case "-trimpath", "-ldflags", "-gcflags", "-tags", "CGO_ENABLED", "GOAMD64", "-buildmode":
			flags = append(flags, setting.Key+"="+setting.Value)
		}
	}
	build["flags"] = strings.Join(flags, " ")
	build["module_go"] = info.GoVersion
	return build, versions
}

// offers is stack s's entry in each role.
func offers(s args.Stack, versions map[string]string) (protocol.StackOffer, protocol.StackOffer) {
	carried := args.Carried(s)
	libraries := map[string]string{"crypto/tls": runtime.Version()}
	for _, module := range modules[s] {
		libraries[module] = versions[module]
	}
	for _, pkg := range standard[s] {
		libraries[pkg] = runtime.Version()
	}
	shapes := make([]string, len(carried.Shapes))
	for i, shape := range carried.Shapes {
		shapes[i] = shape.String()
	}
	models := make([]string, len(carried.Loads))
	for i, model := range carried.Loads {
		models[i] = string(model)
	}
	offer := protocol.StackOffer{
		Stack: string(s), Shapes: shapes, LoadModels: models, Payloads: []string{"zeros", "structured"},
		Libraries: libraries, ConformanceFaults: carried.Faults, Settings: Settings(s), Deviations: Deviations(s),
		TLS: []string{"on"},
	}
	if carried.Plaintext {
		offer.TLS = []string{"on", "off"}
	}
	if carried.NoSend != "" {
		offer.NotOffered = map[string]string{workload.Send.String(): carried.NoSend}
	}
	server := offer
	server.LoadModels = []string{}
	return offer, server
}

// Go's TLS 1.3 suites in its preference order on hardware with AES support (crypto/tls does not
// let them be configured).
var tlsCiphers = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// Settings is what the stack really uses, keyed as docs/stacks.md "Settings every peer declares".
func Settings(s args.Stack) map[string]any {
	settings := map[string]any{
		"tls_versions":      []string{"1.3"},
		"tls_groups":        []string{"x25519"},
		"tls_ciphers":       tlsCiphers,
		"tls_resumption":    false,
		"alpn":              ALPN(s),
		"max_message_bytes": workload.MaxMessage,
		"compression":       "none",
		"runtime":           fmt.Sprintf("goroutines, GOMAXPROCS=%d", runtime.GOMAXPROCS(0)),
	}
	switch s {
	case args.Grpc, args.GrpcServeHTTP, args.HTTP2Proto:
		settings["stream_window"] = stack.FlowWindow
		settings["connection_window"] = stack.FlowWindow
		settings["bdp_probing"] = false
		settings["max_concurrent_streams"] = stack.MaxConcurrentStreams
		settings["connections"] = 1
	case args.Quic:
		settings["stream_window"] = stack.FlowWindow
		settings["connection_window"] = stack.FlowWindow
		settings["max_concurrent_streams"] = stack.MaxConcurrentStreams
		settings["congestion_control"] = "newreno"
		settings["udp_buffer_bytes"] = udpBuffers()
		settings["idle_timeout_ms"] = quicstack.IdleTimeout.Milliseconds()
		settings["keep_alive_ms"] = quicstack.KeepAlive.Milliseconds()
		settings["connections"] = 1
	case args.Tcp, args.HTTP1Proto:
		settings["connections"] = "1 per lane"
	case args.NetrpcGob, args.NetrpcProto:
		settings["connections"] = 1
	}
	if s != args.Quic {
		settings["tcp_nodelay"] = true
		settings["congestion_control"] = tcpCongestion()
	}
	for key, value := range stackNotes[s] {
		settings[key] = value
	}
	return settings
}

// stackNotes are the settings that say how the stacks beside grpc, quic and tcp are built.
var stackNotes = map[args.Stack]map[string]any{
	args.GrpcServeHTTP: {
		"server": "(*grpc.Server).ServeHTTP as the handler of net/http's HTTP/2 server (bundled golang.org/x/net/http2), windows and stream limit set by http.HTTP2Config",
		"client": "grpc-go's own HTTP/2 client, as the grpc stack",
	},
	args.NetrpcGob: {
		"codec":             "encoding/gob (net/rpc's own)",
		"max_message_bytes": 8 << 30, // encoding/gob's limit on 64-bit platforms
	},
	args.NetrpcProto: {"codec": "protobuf bodies in native frames, header by hand (docs/stacks.md)"},
	args.HTTP1Proto:  {"http_version": "1.1", "keep_alive": true},
	args.HTTP2Proto:  {"http_version": "2", "client": "net/http Transport with ForceAttemptHTTP2, as rpc-bench"},
}

// Deviations names, one sentence each, every "should match" setting of docs/stacks.md this
// peer cannot set as required.
func Deviations(s args.Stack) []string {
	deviations := []string{
		"TLS cipher suites: the client preferring TLS_AES_256_GCM_SHA384 required; Go's crypto/tls does not let TLS 1.3 suites be configured and prefers TLS_AES_128_GCM_SHA256, so AES-128-GCM is negotiated whenever this peer is one end",
	}
	switch s {
	case args.Quic:
		deviations = append(deviations,
			"QUIC congestion control: Cubic required; quic-go v0.65.0 runs NewReno (its congestion sender is hard-wired to Reno mode and offers no setting)",
			"QUIC send window: 16777216 required; quic-go has no send-window setting (sending is bounded by the peer's flow-control credit and the congestion window)")
		if buffers := udpBuffers(); buffers < stack.UDPBuffer {
			deviations = append(deviations, fmt.Sprintf("UDP socket buffers: %d required; this unprivileged process gets %d (net.core.rmem_max/wmem_max)", stack.UDPBuffer, buffers))
		}
	default:
		if congestion := tcpCongestion(); congestion != stack.Congestion {
			deviations = append(deviations, "TCP congestion control: cubic required; the kernel refuses it to this unprivileged process, so the host default is used")
		}
	}
	return deviations
}

// tcpCongestion is what a TCP socket of this process gets: cubic when root or when the kernel
// allows it to anyone, else the host default.
func tcpCongestion() string {
	if os.Geteuid() == 0 {
		return stack.Congestion
	}
	allowed, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	if slices.Contains(strings.Fields(string(allowed)), stack.Congestion) {
		return stack.Congestion
	}
	return "host default"
}

// udpBuffers is what a UDP socket of this process gets: 8 MiB when root (SO_*BUFFORCE), else
// capped by net.core.rmem_max and wmem_max.
func udpBuffers() int {
	if os.Geteuid() == 0 {
		return stack.UDPBuffer
	}
	smallest := stack.UDPBuffer
	for _, path := range []string{"/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max"} {
		text, err := os.ReadFile(path)
		value, perr := strconv.Atoi(strings.TrimSpace(string(text)))
		if err != nil || perr != nil {
			return 0
		}
		smallest = min(smallest, value)
	}
	return smallest
}
