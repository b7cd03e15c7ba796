// Package protocol is the peer's side of docs/peer-protocol.md: the events it prints on stdout
// (one JSON object per line, flushed per line), the commands it reads on stdin, the error codes
// and phases, and the histogram encoding.
package protocol

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
)

// Version is the `protocol` field of every event.
const Version = 1

// Revision is the revision of docs/peer-protocol.md this peer follows.
const Revision = "1.4"

// Error codes (docs/peer-protocol.md, "Error codes").
const (
	CodeConfig   = "config"
	CodeTLS      = "tls"
	CodeConnect  = "connect"
	CodeRPC      = "rpc"
	CodeInvalid  = "invalid"
	CodeTimeout  = "timeout"
	CodeProtocol = "protocol"
	CodeInternal = "internal"
)

// Phases of an `error` event.
const (
	PhaseStartup  = "startup"
	PhaseListen   = "listen"
	PhaseConnect  = "connect"
	PhaseValidate = "validate"
	PhaseWarmup   = "warmup"
	PhaseArmed    = "armed"
	PhaseMeasure  = "measure"
	PhaseServe    = "serve"
	PhaseShutdown = "shutdown"
)

// Counter is a count printed as a decimal string (JSON numbers lose exactness above 2^53).
type Counter uint64

// MarshalJSON writes the counter as a JSON string of decimal digits.
func (c Counter) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 22)
	out = append(out, '"')
	out = strconv.AppendUint(out, uint64(c), 10)
	return append(out, '"'), nil
}

// Ready is the server's `ready` event.
type Ready struct {
	Address string `json:"address"`
	Pid     int    `json:"pid"`
}

// Armed is the client's `armed` event.
type Armed struct {
	Lanes           uint32  `json:"lanes"`
	Connections     uint32  `json:"connections"`
	ConnectNs       Counter `json:"connect_ns"`
	WarmupCompleted Counter `json:"warmup_completed"`
}

// Interval is one second of a sample's window.
type Interval struct {
	OffsetNs  Counter `json:"offset_ns"`
	Completed Counter `json:"completed"`
	Histogram string  `json:"histogram"`
}

// Sample is the client's `sample` event. Optional fields are pointers or omitted when empty:
// a field that does not apply is left out, never null.
type Sample struct {
	Completed            Counter            `json:"completed"`
	Failed               Counter            `json:"failed"`
	Requests             Counter            `json:"requests"`
	Responses            Counter            `json:"responses"`
	RequestBytes         Counter            `json:"request_bytes"`
	ResponseBytes        Counter            `json:"response_bytes"`
	WindowNs             Counter            `json:"window_ns"`
	DrainNs              Counter            `json:"drain_ns"`
	Histogram            string             `json:"histogram"`
	Failures             map[string]Counter `json:"failures,omitempty"`
	FirstFailure         *string            `json:"first_failure,omitempty"`
	Load                 string             `json:"load"`
	Intervals            []Interval         `json:"intervals"`
	MaxInFlight          *Counter           `json:"max_in_flight,omitempty"`
	Offered              *Counter           `json:"offered,omitempty"`
	TargetRate           *float64           `json:"target_rate,omitempty"`
	FellBehind           *bool              `json:"fell_behind,omitempty"`
	UncorrectedHistogram *string            `json:"uncorrected_histogram,omitempty"`
	SendLagHistogram     *string            `json:"send_lag_histogram,omitempty"`
	Sent                 *Counter           `json:"sent,omitempty"`
	Received             *Counter           `json:"received,omitempty"`
	Transport            *Transport         `json:"transport,omitempty"`
	Allocations          *Counter           `json:"allocations,omitempty"`
	AllocatedBytes       *Counter           `json:"allocated_bytes,omitempty"`
}

// Transport is the sample's optional `transport` object (docs/peer-protocol.md, "Transport
// statistics"): what the client's connections did during the window, summed over them. Every
// field but Transport and Connections is left out when the transport does not give it.
type Transport struct {
	Transport        string   `json:"transport"`
	Connections      Counter  `json:"connections"`
	Polls            *Counter `json:"polls,omitempty"`
	PacketsSent      *Counter `json:"packets_sent,omitempty"`
	BytesSent        *Counter `json:"bytes_sent,omitempty"`
	Retransmitted    *Counter `json:"retransmitted,omitempty"`
	Lost             *Counter `json:"lost,omitempty"`
	Timeouts         *Counter `json:"timeouts,omitempty"`
	CongestionEvents *Counter `json:"congestion_events,omitempty"`
	CwndBytes        *Counter `json:"cwnd_bytes,omitempty"`
	CwndMinBytes     *Counter `json:"cwnd_min_bytes,omitempty"`
	CwndMeanBytes    *Counter `json:"cwnd_mean_bytes,omitempty"`
	SrttNs           *Counter `json:"srtt_ns,omitempty"`
	MinRttNs         *Counter `json:"min_rtt_ns,omitempty"`
	DeliveryRateBps  *Counter `json:"delivery_rate_bps,omitempty"`
	BusyNs           *Counter `json:"busy_ns,omitempty"`
	RwndLimitedNs    *Counter `json:"rwnd_limited_ns,omitempty"`
	SndbufLimitedNs  *Counter `json:"sndbuf_limited_ns,omitempty"`
	DatagramsSent    *Counter `json:"datagrams_sent,omitempty"`
	SendCalls        *Counter `json:"send_calls,omitempty"`
}

// Error is the `error` event.
type Error struct {
	Phase   string `json:"phase"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Stopped is the `stopped` event; a server adds its lifetime allocations (1.2) and, once it
// rejected a call, the first rejection's message (1.3).
type Stopped struct {
	Counters       map[string]Counter `json:"counters,omitempty"`
	FirstRejection string             `json:"first_rejection,omitempty"`
	Allocations    *Counter           `json:"allocations,omitempty"`
	AllocatedBytes *Counter           `json:"allocated_bytes,omitempty"`
}

// WindowEvent is the server's answer to `WINDOW START` and `WINDOW END` (1.2): its counters and
// allocations so far.
type WindowEvent struct {
	Edge     string             `json:"edge"`
	Counters map[string]Counter `json:"counters"`
	// FirstRejection (1.3): the message of the first call rejected, once one was.
	FirstRejection string  `json:"first_rejection,omitempty"`
	Allocations    Counter `json:"allocations"`
	AllocatedBytes Counter `json:"allocated_bytes"`
}

// AllocationSource is the `allocations` object of `capabilities` (1.2).
type AllocationSource struct {
	Counts bool   `json:"counts"`
	Bytes  bool   `json:"bytes"`
	Source string `json:"source"`
}

// Allocations is a reading of the process's heap allocation counters.
type Allocations struct {
	Count Counter
	Bytes Counter
}

// ReadAllocations reads runtime.ReadMemStats' Mallocs and TotalAlloc, exactly what
// `go test -benchmem` reads (tiny allocations included). It stops the world briefly, so it is
// read only at a window's edges.
func ReadAllocations() Allocations {
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return Allocations{Count: Counter(stats.Mallocs), Bytes: Counter(stats.TotalAlloc)}
}

// Since is the allocations from start to a.
func (a Allocations) Since(start Allocations) Allocations {
	return Allocations{Count: a.Count - start.Count, Bytes: a.Bytes - start.Bytes}
}

// GoAllocations is what this peer declares it counts.
var GoAllocations = AllocationSource{Counts: true, Bytes: true, Source: "runtime.ReadMemStats Mallocs and TotalAlloc"}

// Capabilities is the answer to `capabilities`.
type Capabilities struct {
	Peer     string            `json:"peer"`
	Language string            `json:"language"`
	Version  string            `json:"version"`
	Revision string            `json:"revision"`
	Build    map[string]string `json:"build"`
	Files    []string          `json:"files"`
	// Allocations (1.2) declares the allocation counters this peer prints.
	Allocations *AllocationSource `json:"allocations,omitempty"`
	Roles       Roles             `json:"roles"`
}

// Roles lists the stacks offered per role.
type Roles struct {
	Client []StackOffer `json:"client"`
	Server []StackOffer `json:"server"`
}

// StackOffer is one stack of one role.
type StackOffer struct {
	Stack      string            `json:"stack"`
	Shapes     []string          `json:"shapes"`
	LoadModels []string          `json:"load_models"`
	Payloads   []string          `json:"payloads"`
	Libraries  map[string]string `json:"libraries"`
	// ConformanceFaults (1.2) says this role of this stack implements the conformance faults.
	ConformanceFaults bool           `json:"conformance_faults,omitempty"`
	Settings          map[string]any `json:"settings"`
	Deviations        []string       `json:"deviations"`
	// TLS (1.3) lists the --tls values this role of the stack takes; absent means ["on"].
	TLS []string `json:"tls,omitempty"`
	// NotOffered (1.3) names each shape the stack cannot carry, with why.
	NotOffered map[string]string `json:"not_offered,omitempty"`
}

// Line renders one event as its JSON line (without the newline): the common fields first.
func Line(kind string, event any) ([]byte, error) {
	body, err := json.Marshal(event)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s event: %w", kind, err)
	}
	head := fmt.Sprintf(`{"protocol":%d,"event":%q`, Version, kind)
	if kind == "ready" {
		head += `,"role":"server"`
	}
	if len(body) == 2 { // "{}"
		return []byte(head + "}"), nil
	}
	return append([]byte(head+","), body[1:]...), nil
}

// Output writes events, one line each, with a single write per line.
type Output struct {
	mu sync.Mutex
	w  io.Writer
}

// Stdout is where events go.
var Stdout = &Output{w: os.Stdout}

// NewOutput writes events to w (tests).
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

// Emit prints one event. A controller that went away (stdout closed) ends the process: nothing
// is left to report to.
func (o *Output) Emit(kind string, event any) {
	line, err := Line(kind, event)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rpcarena-peer-go: %v\n", err)
		line, _ = Line("error", Error{Phase: PhaseShutdown, Code: CodeInternal, Message: err.Error()})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.w.Write(append(line, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "rpcarena-peer-go: cannot write the %s event to stdout (%v); the controller is gone, exiting\n", kind, err)
		os.Exit(1)
	}
}
