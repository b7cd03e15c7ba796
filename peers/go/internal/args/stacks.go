package args

import (
	"fmt"
	"slices"
	"strings"

	"rpcarena/peers/go/internal/workload"
)

// The stacks only this peer offers (docs/stacks.md), beside grpc, quic and tcp.
const (
	GrpcServeHTTP Stack = "grpc-servehttp"
	NetrpcGob     Stack = "netrpc-gob"
	NetrpcProto   Stack = "netrpc-proto"
	HTTP1Proto    Stack = "http1-proto"
	HTTP2Proto    Stack = "http2-proto"
)

// Stacks lists every stack, in the order capabilities prints them.
var Stacks = []Stack{Grpc, Quic, Tcp, GrpcServeHTTP, NetrpcGob, NetrpcProto, HTTP1Proto, HTTP2Proto}

// Carries is what a stack can carry: the shapes both roles offer, the load models its client
// runs, why it carries no more, and whether it implements the conformance fault modes.
type Carries struct {
	Shapes []workload.Shape
	Loads  []Load
	// Limit says why shapes or load models are missing ("" when it carries them all).
	Limit string
	// NoSend says why the stack cannot carry the one-way shape send ("" when it can):
	// capabilities' not_offered (1.3).
	NoSend string
	// Plaintext: the stack runs with --tls off too (1.3; quic has TLS inside).
	Plaintext bool
	// Faults: --conformance-fault works on this stack in both roles.
	Faults bool
}

// nativeShapes are the shapes of the native framing: all but send.
var nativeShapes = []workload.Shape{workload.Unary, workload.ClientStream, workload.ServerStream, workload.Bidi, workload.Pingpong}

// unaryLoads are the models of a stack with one reply per call and no transport readiness to
// wait for: backpressure needs one, send-saturation needs client streams.
var unaryLoads = []Load{Closed, Window, Open}

// The reasons a stack carries only unary calls and no backpressure.
const (
	netrpcLimit = "net/rpc carries one request and one reply per call (no streams), and its client queues every call on its one connection without a readiness to wait for (no backpressure)"
	httpLimit   = "one POST carries one protobuf request body and one response body (no streams), and net/http's client gives no readiness to wait for (no backpressure)"
)

// Why a stack cannot carry the one-way shape send.
const (
	nativeNoSend = "the native framing answers every request with a STATUS frame; a one-way command would need a frame type it does not have"
	netrpcNoSend = "net/rpc answers every call with a reply (a one-way command would still wait for one), so it has no one-way message"
	httpNoSend   = "every HTTP request gets a response (a one-way command would still wait for one), so HTTP has no one-way message"
)

var carried = map[Stack]Carries{
	Grpc:          {Shapes: workload.Shapes, Loads: LoadModels, Faults: true, Plaintext: true},
	Quic:          {Shapes: nativeShapes, Loads: LoadModels, NoSend: nativeNoSend},
	Tcp:           {Shapes: nativeShapes, Loads: LoadModels, NoSend: nativeNoSend, Plaintext: true},
	GrpcServeHTTP: {Shapes: workload.Shapes, Loads: LoadModels, Faults: true, Plaintext: true},
	NetrpcGob:     {Shapes: []workload.Shape{workload.Unary}, Loads: unaryLoads, Faults: true, Limit: netrpcLimit, NoSend: netrpcNoSend, Plaintext: true},
	NetrpcProto:   {Shapes: []workload.Shape{workload.Unary}, Loads: unaryLoads, Faults: true, Limit: netrpcLimit, NoSend: netrpcNoSend, Plaintext: true},
	HTTP1Proto:    {Shapes: []workload.Shape{workload.Unary}, Loads: unaryLoads, Faults: true, Limit: httpLimit, NoSend: httpNoSend, Plaintext: true},
	HTTP2Proto:    {Shapes: []workload.Shape{workload.Unary}, Loads: unaryLoads, Faults: true, Limit: httpLimit, NoSend: httpNoSend, Plaintext: true},
}

// Carried is what stack s carries.
func Carried(s Stack) Carries { return carried[s] }

func stackNames() []string {
	names := make([]string, len(Stacks))
	for i, s := range Stacks {
		names[i] = string(s)
	}
	return names
}

// checkCarried refuses a shape or load model the client's stack cannot carry, naming the reason.
func checkCarried(c *Client) error {
	offer := Carried(c.Stack)
	if c.Workload.Shape == workload.Send && offer.NoSend != "" {
		return fmt.Errorf("--shape send: the %s stack cannot carry one-way commands: %s", c.Stack, offer.NoSend)
	}
	if !slices.Contains(offer.Shapes, c.Workload.Shape) {
		names := make([]string, len(offer.Shapes))
		for i, shape := range offer.Shapes {
			names[i] = shape.String()
		}
		return fmt.Errorf("--shape %s: the %s stack carries only %s: %s", c.Workload.Shape, c.Stack, strings.Join(names, ", "), offer.Limit)
	}
	if !slices.Contains(offer.Loads, c.Load) {
		loads := make([]string, len(offer.Loads))
		for i, load := range offer.Loads {
			loads[i] = string(load)
		}
		return fmt.Errorf("--load %s: the %s stack runs only %s: %s", c.Load, c.Stack, strings.Join(loads, ", "), offer.Limit)
	}
	return nil
}

// checkFaultStack refuses --conformance-fault on a stack that does not implement the modes.
func checkFaultStack(s Stack) error {
	if Carried(s).Faults {
		return nil
	}
	return fmt.Errorf("--conformance-fault is not implemented for --stack %s in this peer (the Rust peer offers it there)", s)
}
