package peer

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/protocol"
	"rpcarena/peers/go/internal/testpki"
	"rpcarena/peers/go/internal/workload"
)

// role runs a role in the background: commands go in, events come out as decoded lines.
type role struct {
	inputs chan protocol.Input
	events chan map[string]any
	exit   chan int
}

func start(t *testing.T, run func(<-chan protocol.Input, *protocol.Output) int) *role {
	t.Helper()
	reader, writer := io.Pipe()
	r := &role{inputs: make(chan protocol.Input, 4), events: make(chan map[string]any, 16), exit: make(chan int, 1)}
	go func() {
		scanner := bufio.NewScanner(reader)
		for scanner.Scan() {
			var event map[string]any
			if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
				t.Errorf("not a JSON event: %q", scanner.Text())
			}
			r.events <- event
		}
	}()
	go func() {
		code := run(r.inputs, protocol.NewOutput(writer))
		writer.Close()
		r.exit <- code
	}()
	return r
}

func (r *role) next(t *testing.T, kind string) map[string]any {
	t.Helper()
	select {
	case event := <-r.events:
		if event["event"] != kind {
			t.Fatalf("got %v, want a %s event", event, kind)
		}
		return event
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s event", kind)
	}
	return nil
}

func (r *role) exited(t *testing.T, want int) {
	t.Helper()
	select {
	case code := <-r.exit:
		if code != want {
			t.Fatalf("exit %d, want %d", code, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not exit")
	}
}

func serve(t *testing.T, pki testpki.Files, stack args.Stack) (*role, string) {
	return serveWith(t, &args.Server{Stack: stack, Listen: "127.0.0.1:0", Cert: pki.Cert, Key: pki.Key})
}

func serveWith(t *testing.T, a *args.Server) (*role, string) {
	server := start(t, func(inputs <-chan protocol.Input, out *protocol.Output) int { return RunServer(a, inputs, out) })
	ready := server.next(t, "ready")
	return server, ready["address"].(string)
}

// plaintextClient is clientArgs with --tls off (no --server-name, no --ca).
func plaintextClient(stack args.Stack, server string) *args.Client {
	a := clientArgs(stack, server, "")
	a.Plaintext, a.ServerName = true, ""
	return a
}

func clientArgs(stack args.Stack, server, ca string) *args.Client {
	return &args.Client{Stack: stack, Server: server, ServerName: "localhost", CA: ca, Concurrency: 2, Load: args.Closed,
		Workload: workload.Workload{Shape: workload.Unary, RequestSize: 32, ResponseSize: 32, Messages: 1},
		WarmupMs: 50, WindowMs: 1200, DrainMs: 1000}
}

func runClient(t *testing.T, a *args.Client) *role {
	return start(t, func(inputs <-chan protocol.Input, out *protocol.Output) int { return RunClient(a, inputs, out) })
}

func TestASampleEndToEndOnEveryStack(t *testing.T) {
	pki := testpki.Write(t)
	for _, stack := range args.Stacks {
		server, address := serve(t, pki, stack)
		client := runClient(t, clientArgs(stack, address, pki.CA))
		armed := client.next(t, "armed")
		if armed["lanes"] != 2.0 || armed["warmup_completed"] == "0" {
			t.Fatalf("%s: %v", stack, armed)
		}
		// the server's window opens before the client's, so it covers every measured call
		opened := window(t, server, protocol.EdgeStart)
		client.inputs <- protocol.Input{Command: protocol.Start}
		sample := client.next(t, "sample")
		if sample["failed"] != "0" || sample["completed"] == "0" || sample["window_ns"] != "1200000000" || len(sample["intervals"].([]any)) != 2 {
			t.Fatalf("%s: %v", stack, sample)
		}
		if count(t, sample, "allocations") < count(t, sample, "completed") || count(t, sample, "allocated_bytes") < 32*count(t, sample, "completed") {
			t.Fatalf("%s: the client's allocations cannot be below one per operation: %v", stack, sample)
		}
		closed := window(t, server, protocol.EdgeEnd)
		served := count(t, closed["counters"].(map[string]any), "rpcs") - count(t, opened["counters"].(map[string]any), "rpcs")
		if served < count(t, sample, "completed") || count(t, closed, "allocations") <= count(t, opened, "allocations") {
			t.Fatalf("%s: the server's window %v to %v does not cover the sample %v", stack, opened, closed, sample)
		}
		client.inputs <- protocol.Input{Command: protocol.Start}
		failure := client.next(t, "error")
		if failure["phase"] != "shutdown" || failure["code"] != "protocol" {
			t.Fatalf("a second START: %v", failure)
		}
		client.exited(t, 1)
		close(server.inputs) // end of stdin is SHUTDOWN
		stopped := server.next(t, "stopped")
		counters := stopped["counters"].(map[string]any)
		if counters["rpcs"] == "0" || counters["rejected"] != "0" || count(t, stopped, "allocated_bytes") < count(t, closed, "allocated_bytes") {
			t.Fatalf("%s: %v", stack, stopped)
		}
		server.exited(t, 0)
	}
}

// window sends a server a window command and returns its answer, checked for its edge.
func window(t *testing.T, server *role, edge string) map[string]any {
	t.Helper()
	server.inputs <- protocol.Input{Command: protocol.Window, Line: "WINDOW " + strings.ToUpper(edge), Edge: edge}
	answer := server.next(t, "window")
	if answer["edge"] != edge {
		t.Fatalf("answered WINDOW %s with %v", strings.ToUpper(edge), answer)
	}
	return answer
}

// count reads a counter field (a decimal string) of an event.
func count(t *testing.T, event map[string]any, field string) uint64 {
	t.Helper()
	text, ok := event[field].(string)
	value, err := strconv.ParseUint(text, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s is not a decimal string in %v", field, event)
	}
	return value
}

func TestShutdownAndUnknownCommandsInEveryClientState(t *testing.T) {
	pki := testpki.Write(t)
	server, address := serve(t, pki, args.Quic)
	defer close(server.inputs)

	// SHUTDOWN while connecting or warming up: stopped at once, no armed
	long := clientArgs(args.Quic, address, pki.CA)
	long.WarmupMs = 60_000
	client := runClient(t, long)
	client.inputs <- protocol.Input{Command: protocol.Shutdown}
	client.next(t, "stopped")
	client.exited(t, 0)

	// START before armed is a protocol error of the current phase
	client = runClient(t, long)
	time.Sleep(300 * time.Millisecond)
	client.inputs <- protocol.Input{Command: protocol.Start}
	failure := client.next(t, "error")
	if failure["code"] != "protocol" || (failure["phase"] != "warmup" && failure["phase"] != "connect" && failure["phase"] != "validate") {
		t.Fatalf("%v", failure)
	}
	client.exited(t, 1)

	// armed: an unknown line is an error of phase armed; SHUTDOWN stops without a sample
	client = runClient(t, clientArgs(args.Quic, address, pki.CA))
	client.next(t, "armed")
	client.inputs <- protocol.Input{Command: protocol.Unknown, Line: "GO"}
	failure = client.next(t, "error")
	if failure["phase"] != "armed" || !strings.Contains(failure["message"].(string), `"GO"`) {
		t.Fatalf("%v", failure)
	}
	client.exited(t, 1)
	client = runClient(t, clientArgs(args.Quic, address, pki.CA))
	client.next(t, "armed")
	client.inputs <- protocol.Input{Command: protocol.Window, Line: "WINDOW START", Edge: protocol.EdgeStart}
	failure = client.next(t, "error")
	if failure["phase"] != "armed" || failure["code"] != "protocol" || !strings.Contains(failure["message"].(string), `"WINDOW START"`) {
		t.Fatalf("a window command sent to a client: %v", failure)
	}
	client.exited(t, 1)
	client = runClient(t, clientArgs(args.Quic, address, pki.CA))
	client.next(t, "armed")
	close(client.inputs)
	client.next(t, "stopped")
	client.exited(t, 0)

	// SHUTDOWN during the window: stopped without a sample, at once
	slow := clientArgs(args.Quic, address, pki.CA)
	slow.WindowMs = 60_000
	client = runClient(t, slow)
	client.next(t, "armed")
	client.inputs <- protocol.Input{Command: protocol.Start}
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	client.inputs <- protocol.Input{Command: protocol.Shutdown}
	client.next(t, "stopped")
	client.exited(t, 0)
	if waited := time.Since(began); waited > time.Second {
		t.Fatalf("stopping took %v", waited)
	}
}

func TestFailuresBeforeTheWindow(t *testing.T) {
	pki := testpki.Write(t)
	server, address := serve(t, pki, args.Tcp)
	defer close(server.inputs)
	wrongCA := clientArgs(args.Tcp, address, pki.OtherCA)
	client := runClient(t, wrongCA)
	failure := client.next(t, "error")
	if failure["phase"] != "connect" || failure["code"] != "tls" {
		t.Fatalf("%v", failure)
	}
	client.exited(t, 1)

	missing := clientArgs(args.Tcp, address, "/nonexistent/ca.pem")
	client = runClient(t, missing)
	failure = client.next(t, "error")
	if failure["phase"] != "startup" || failure["code"] != "config" {
		t.Fatalf("%v", failure)
	}
	client.exited(t, 2)
}

func TestAServerRefusesStartAndABadListenAddress(t *testing.T) {
	pki := testpki.Write(t)
	server, _ := serve(t, pki, args.Grpc)
	server.inputs <- protocol.Input{Command: protocol.Start}
	failure := server.next(t, "error")
	if failure["phase"] != "serve" || failure["code"] != "protocol" {
		t.Fatalf("%v", failure)
	}
	server.exited(t, 1)

	bad := start(t, func(inputs <-chan protocol.Input, out *protocol.Output) int {
		return RunServer(&args.Server{Stack: args.Tcp, Listen: "192.0.2.1:0", Cert: pki.Cert, Key: pki.Key}, inputs, out)
	})
	failure = bad.next(t, "error")
	if failure["phase"] != "listen" || failure["code"] != "config" {
		t.Fatalf("%v", failure)
	}
	bad.exited(t, 1)

	unreadable := start(t, func(inputs <-chan protocol.Input, out *protocol.Output) int {
		return RunServer(&args.Server{Stack: args.Quic, Listen: "127.0.0.1:0", Cert: pki.CA, Key: pki.CA}, inputs, out)
	})
	failure = unreadable.next(t, "error")
	if failure["phase"] != "startup" || failure["code"] != "config" {
		t.Fatalf("%v", failure)
	}
	unreadable.exited(t, 2)
}

func TestCapabilitiesDeclareEveryStackAndItsSettings(t *testing.T) {
	line, err := protocol.Line("capabilities", Capabilities())
	if err != nil {
		t.Fatal(err)
	}
	var capabilities struct {
		Revision    string
		Allocations protocol.AllocationSource
		Roles       struct{ Client, Server []protocol.StackOffer }
	}
	if err := json.Unmarshal(line, &capabilities); err != nil || capabilities.Revision != "1.4" {
		t.Fatal(err, capabilities.Revision)
	}
	if capabilities.Allocations != protocol.GoAllocations || !capabilities.Allocations.Counts || !capabilities.Allocations.Bytes {
		t.Fatalf("allocations: %+v", capabilities.Allocations)
	}
	if len(capabilities.Roles.Client) != len(args.Stacks) || len(capabilities.Roles.Server) != len(args.Stacks) || strings.Contains(string(line), "null") {
		t.Fatalf("%s", line)
	}
	for i, offer := range capabilities.Roles.Client {
		carried := args.Carried(args.Stack(offer.Stack))
		for _, key := range []string{"tls_versions", "tls_groups", "alpn", "max_message_bytes", "congestion_control", "connections", "compression", "runtime"} {
			if _, ok := offer.Settings[key]; !ok {
				t.Errorf("%s: no %s", offer.Stack, key)
			}
		}
		if len(offer.LoadModels) != len(carried.Loads) || len(offer.Shapes) != len(carried.Shapes) || len(offer.Deviations) == 0 {
			t.Errorf("%s: %v %v %v", offer.Stack, offer.Shapes, offer.LoadModels, offer.Deviations)
		}
		server := capabilities.Roles.Server[i]
		if server.Stack != offer.Stack || len(server.LoadModels) != 0 || server.ConformanceFaults != carried.Faults || offer.ConformanceFaults != carried.Faults {
			t.Errorf("%s: server %+v", offer.Stack, server)
		}
		// 1.3: --tls off everywhere but quic; send on the gRPC stacks only, the others say why not
		wantTLS := map[bool]string{true: "on off", false: "on"}[offer.Stack != "quic"]
		grpc := offer.Stack == "grpc" || offer.Stack == "grpc-servehttp"
		for _, o := range []protocol.StackOffer{offer, server} {
			if strings.Join(o.TLS, " ") != wantTLS || slices.Contains(o.Shapes, "send") != grpc || (o.NotOffered["send"] == "") != grpc {
				t.Errorf("%s: tls %v, shapes %v, not_offered %v", o.Stack, o.TLS, o.Shapes, o.NotOffered)
			}
			if strings.Join(o.Payloads, " ") != "zeros structured" {
				t.Errorf("%s: payloads %v", o.Stack, o.Payloads)
			}
		}
	}
	// 1.4: no stack carries dated, and no client lists client_modes (absent: official only)
	if strings.Contains(string(line), "dated") || strings.Contains(string(line), "client_modes") {
		t.Errorf("dated or client_modes declared: %s", line)
	}
	if !strings.Contains(string(line), `"stack":"http2-proto","shapes":["unary"],"load_models":["closed","window","open"]`) {
		t.Errorf("http2-proto's offer: %s", line)
	}
}

// A --conformance-fault client against a validating server prints `stopped` and exits 0 without
// `armed`; against a server that skips validation it fails its validation phase with `invalid`.
func TestAConformanceFaultClientProbesInsteadOfMeasuring(t *testing.T) {
	pki := testpki.Write(t)
	for _, serverFault := range []fault.Server{"", fault.SkipValidation} {
		server := start(t, func(inputs <-chan protocol.Input, out *protocol.Output) int {
			return RunServer(&args.Server{Stack: args.NetrpcProto, Listen: "127.0.0.1:0", Cert: pki.Cert, Key: pki.Key, Fault: serverFault}, inputs, out)
		})
		address := server.next(t, "ready")["address"].(string)
		a := clientArgs(args.NetrpcProto, address, pki.CA)
		a.Fault = fault.ResponseSizeTooLarge
		client := runClient(t, a)
		if serverFault == "" {
			client.next(t, "stopped")
			client.exited(t, 0)
		} else {
			failure := client.next(t, "error")
			if failure["phase"] != "validate" || failure["code"] != "invalid" || !strings.Contains(failure["message"].(string), "response-size-too-large") {
				t.Fatalf("%v", failure)
			}
			client.exited(t, 1)
		}
		close(server.inputs)
		stopped := server.next(t, "stopped")
		if rejected := stopped["counters"].(map[string]any)["rejected"]; (serverFault == "") != (rejected == "1") {
			t.Fatalf("server in mode %q: %v", serverFault, stopped)
		}
		server.exited(t, 0)
	}
}

// measured runs one sample of client a against server (WINDOW START before START, WINDOW END
// after the sample, as the controller does) and returns the sample and both window answers.
func measured(t *testing.T, server *role, a *args.Client) (sample, opened, closed map[string]any) {
	t.Helper()
	client := runClient(t, a)
	client.next(t, "armed")
	opened = window(t, server, protocol.EdgeStart)
	client.inputs <- protocol.Input{Command: protocol.Start}
	sample = client.next(t, "sample")
	closed = window(t, server, protocol.EdgeEnd)
	close(client.inputs)
	client.next(t, "stopped")
	client.exited(t, 0)
	if sample["failed"] != "0" || sample["completed"] == "0" {
		t.Fatalf("%s %s: %v", a.Stack, a.Workload.Shape, sample)
	}
	return sample, opened, closed
}

// served is a server counter's growth over the window.
func served(t *testing.T, opened, closed map[string]any, counter string) uint64 {
	return count(t, closed["counters"].(map[string]any), counter) - count(t, opened["counters"].(map[string]any), counter)
}

// Every stack that takes --tls off runs a whole sample in plaintext, server and client built
// from the arguments; on the gRPC stacks send runs closed and as send-saturation, counted by the
// server in commands.
func TestPlaintextSamplesAndSendOnEveryStack(t *testing.T) {
	for _, stack := range args.Stacks {
		if !args.Carried(stack).Plaintext {
			continue
		}
		server, address := serveWith(t, &args.Server{Stack: stack, Listen: "127.0.0.1:0", Plaintext: true})
		a := plaintextClient(stack, address)
		a.WindowMs = 300
		sample, opened, closed := measured(t, server, a)
		if served(t, opened, closed, "rpcs") < count(t, sample, "completed") {
			t.Fatalf("%s: %v served %v..%v", stack, sample, opened, closed)
		}
		if slices.Contains(args.Carried(stack).Shapes, workload.Send) {
			sendSamples(t, server, plaintextClient(stack, address))
		}
		close(server.inputs)
		stopped := server.next(t, "stopped")
		if stopped["counters"].(map[string]any)["rejected"] != "0" || stopped["first_rejection"] != nil {
			t.Fatalf("%s: %v", stack, stopped)
		}
		server.exited(t, 0)
	}
}

func sendSamples(t *testing.T, server *role, a *args.Client) {
	a.Workload.Shape, a.Workload.ResponseSize, a.WindowMs = workload.Send, 0, 300
	sample, opened, closed := measured(t, server, a)
	if sample["responses"] != sample["completed"] || sample["response_bytes"] != "0" || sample["load"] != "closed" ||
		served(t, opened, closed, "commands") < count(t, sample, "completed") {
		t.Fatalf("%s send closed: %v served %v..%v", a.Stack, sample, opened, closed)
	}
	a.Load, a.Streams, a.SettleMs = args.SendSaturation, 3, 200
	sample, opened, closed = measured(t, server, a)
	if sample["load"] != "send-saturation" || sample["max_in_flight"] != "3" || sample["sent"] != sample["completed"] ||
		sample["received"] != nil || served(t, opened, closed, "commands") < count(t, sample, "sent") {
		t.Fatalf("%s send-saturation on send: %v served %v..%v", a.Stack, sample, opened, closed)
	}
}

// A malformed command is rejected, and from then on the server's window and stopped events
// carry the first rejection's message; the well-formed command after it counts in commands.
func TestARejectedCommandIsExplainedInWindowAndStopped(t *testing.T) {
	for _, stack := range []args.Stack{args.Grpc, args.GrpcServeHTTP} {
		server, address := serveWith(t, &args.Server{Stack: stack, Listen: "127.0.0.1:0", Plaintext: true})
		if before := window(t, server, protocol.EdgeStart); before["first_rejection"] != nil {
			t.Fatalf("%s: a first rejection before any call: %v", stack, before)
		}
		a := plaintextClient(stack, address)
		a.Workload.Shape, a.Workload.ResponseSize, a.Fault = workload.Send, 0, fault.ClientNonzeroByte
		client := runClient(t, a)
		client.next(t, "stopped")
		client.exited(t, 0)
		after := window(t, server, protocol.EdgeEnd)
		counters := after["counters"].(map[string]any)
		first, _ := after["first_rejection"].(string)
		if counters["rejected"] != "1" || counters["commands"] != "1" || !strings.Contains(first, "Command answered INVALID_ARGUMENT") ||
			!strings.Contains(first, "expected zero") || strings.Contains(first, "\n") {
			t.Fatalf("%s: %v", stack, after)
		}
		close(server.inputs)
		if stopped := server.next(t, "stopped"); stopped["first_rejection"] != first {
			t.Fatalf("%s: %v, want first_rejection %q", stack, stopped, first)
		}
		server.exited(t, 0)
	}
}
