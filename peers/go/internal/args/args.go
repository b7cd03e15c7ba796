// Package args parses the command line of docs/peer-protocol.md "Commands": `capabilities`,
// `server` and `client`, arguments in `--name value` pairs in any order. Unknown, missing,
// repeated and out-of-range arguments are refused with a message that names the argument (the
// caller prints it as an `error` event, phase startup, code config, and exits 2).
package args

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"

	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/workload"
)

// Limits of the arguments.
const (
	MaxConcurrency = 10_000
	MaxInFlight    = 100_000
	MaxCap         = 1_000_000
	MaxStreams     = 10_000
	MaxRate        = 10_000_000.0
	maxMillis      = math.MaxUint32
)

// Stack is a transport stack.
type Stack string

// The stacks every peer may offer (docs/stacks.md); stacks.go lists the others.
const (
	Grpc Stack = "grpc"
	Quic Stack = "quic"
	Tcp  Stack = "tcp"
)

// Load is a load model.
type Load string

// The load models (docs/peer-protocol.md "Load models").
const (
	Closed         Load = "closed"
	Window         Load = "window"
	Backpressure   Load = "backpressure"
	SendSaturation Load = "send-saturation"
	Open           Load = "open"
)

// LoadModels lists every model, in the order capabilities prints them.
var LoadModels = []Load{Closed, Window, Backpressure, SendSaturation, Open}

// Server holds the `server` arguments.
type Server struct {
	Stack  Stack
	Listen string
	// Plaintext is --tls off (1.3): no TLS, so no --cert and --key.
	Plaintext bool
	Cert      string
	Key       string
	// Fault is the hidden --conformance-fault mode ("" when measuring).
	Fault fault.Server
}

// Client holds the `client` arguments.
type Client struct {
	Stack  Stack
	Server string
	// Plaintext is --tls off (1.3): no TLS, so no --server-name and --ca.
	Plaintext   bool
	ServerName  string
	CA          string
	Workload    workload.Workload
	Concurrency uint32
	Load        Load
	InFlight    uint32  // window
	MaxInFlight uint32  // backpressure
	Streams     uint32  // send-saturation
	SettleMs    uint64  // send-saturation
	Rate        float64 // open
	Poisson     bool    // open
	Seed        uint64  // open
	WarmupMs    uint64
	WindowMs    uint64
	DrainMs     uint64
	// Fault is the hidden --conformance-fault mode ("" when measuring).
	Fault fault.Client
}

// Lanes is the number of lanes the model runs: --in-flight for window, --streams for
// send-saturation, --concurrency otherwise.
func (c *Client) Lanes() uint32 {
	switch c.Load {
	case Window:
		return c.InFlight
	case SendSaturation:
		return c.Streams
	}
	return c.Concurrency
}

// Command is what the peer was asked to do: exactly one field is set, or Capabilities.
type Command struct {
	Capabilities bool
	Server       *Server
	Client       *Client
}

// Parse reads the command line without the program name.
func Parse(argv []string) (Command, error) {
	if len(argv) == 0 {
		return Command{}, fmt.Errorf("no command given; expected capabilities, server or client")
	}
	values, err := pairs(argv[1:])
	if err != nil {
		return Command{}, err
	}
	switch argv[0] {
	case "capabilities":
		if len(argv) > 1 {
			return Command{}, fmt.Errorf("capabilities takes no arguments, got %q", argv[1])
		}
		return Command{Capabilities: true}, nil
	case "server":
		server, err := parseServer(values)
		return Command{Server: server}, err
	case "client":
		client, err := parseClient(values)
		return Command{Client: client}, err
	}
	return Command{}, fmt.Errorf("unknown command %q; expected capabilities, server or client", argv[0])
}

// pairs reads `--name value` pairs, refusing a repeated name and a name without a value.
func pairs(argv []string) (map[string]string, error) {
	values := map[string]string{}
	for i := 0; i < len(argv); i += 2 {
		name := argv[i]
		if !strings.HasPrefix(name, "--") || len(name) == 2 {
			return nil, fmt.Errorf("unexpected argument %q; arguments come as --name value pairs", name)
		}
		if i+1 == len(argv) {
			return nil, fmt.Errorf("%s needs a value", name)
		}
		if _, repeated := values[name]; repeated {
			return nil, fmt.Errorf("%s is given more than once", name)
		}
		values[name] = argv[i+1]
	}
	return values, nil
}

// reader takes arguments out of a map, remembering the first error.
type reader struct {
	values map[string]string
	err    error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// take removes name and says whether it was given.
func (r *reader) take(name string) (string, bool) {
	value, ok := r.values[name]
	delete(r.values, name)
	return value, ok
}

func (r *reader) required(name string) string {
	value, ok := r.take(name)
	if !ok {
		r.fail("missing %s", name)
	}
	return value
}

var digits = regexp.MustCompile(`^[0-9]+$`)

// number parses a whole decimal number within [low, high].
func (r *reader) number(name, text string, low, high uint64) uint64 {
	if r.err != nil {
		return 0
	}
	value, err := strconv.ParseUint(text, 10, 64)
	if !digits.MatchString(text) || err != nil || value < low || value > high {
		r.fail("%s %q is not a whole number from %d to %d", name, text, low, high)
	}
	return value
}

func (r *reader) requiredNumber(name string, low, high uint64) uint64 {
	text := r.required(name)
	return r.number(name, text, low, high)
}

func (r *reader) oneOf(name, text string, choices ...string) string {
	for _, choice := range choices {
		if text == choice {
			return text
		}
	}
	if r.err == nil {
		r.fail("%s %q is not one of %s", name, text, strings.Join(choices, ", "))
	}
	return ""
}

func (r *reader) hostPort(name, text string) string {
	host, port, err := net.SplitHostPort(text)
	if err == nil && host != "" {
		if _, perr := strconv.ParseUint(port, 10, 16); perr == nil && digits.MatchString(port) {
			return text
		}
	}
	r.fail("%s %q is not HOST:PORT (an IPv6 address in brackets: [::1]:4000)", name, text)
	return ""
}

// tls reads the optional --tls (1.3; default on) and says whether it is off. QUIC has TLS
// inside and refuses off.
func (r *reader) tls(s Stack) bool {
	text, given := r.take("--tls")
	if !given || r.oneOf("--tls", text, "on", "off") != "off" {
		return false
	}
	if s == Quic {
		r.fail("QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic")
	}
	return true
}

// secured reads the arguments only TLS takes: required with --tls on (nil if any is missing),
// refused with --tls off (nil).
func (r *reader) secured(plaintext bool, names ...string) []string {
	values := make([]string, len(names))
	for i, name := range names {
		if !plaintext {
			values[i] = r.required(name)
		} else if _, given := r.take(name); given {
			r.fail("%s does not apply to --tls off (plaintext has no certificates); leave it out or use --tls on", name)
		}
	}
	if plaintext || r.err != nil {
		return nil
	}
	return values
}

// payload reads the optional --payload (default zeros). dated (1.4) is the JSON stacks'
// procedure, which no stack of this peer carries: refused naming why and what to give instead.
func (r *reader) payload(s Stack) workload.Kind {
	text, given := r.take("--payload")
	if !given || r.err != nil {
		return workload.Zeros
	}
	if text == "dated" {
		r.fail("--payload dated: no stack of this peer carries it, --stack %s included: dated (1.4) is the JSON "+
			"stacks' procedure (nested.procedure_1, whose response carries a date; docs/peer-protocol.md \"Payload "+
			"kinds\") and this peer's stacks carry protobuf messages only; give --payload zeros or structured", s)
		return workload.Zeros
	}
	kind, err := workload.ParseKind(text)
	if err != nil {
		r.fail("--payload: %v", err)
	}
	return kind
}

// clientMode reads the optional --client-mode (1.4; default official). Every client of this
// peer is the library's own and takes official only; replay (a lean client resending the
// official client's captured request) and unknown values are refused naming what to give.
func (r *reader) clientMode(s Stack) {
	text, given := r.take("--client-mode")
	switch {
	case !given || r.err != nil || text == "official":
	case text == "replay":
		r.fail("--client-mode replay: the %s client of this peer takes official only (its capabilities list no "+
			"client_modes): replay (1.4) resends a JSON library client's captured HTTP or WebSocket request with a "+
			"lean client, and no stack of this peer has one; leave --client-mode out or give official", s)
	default:
		r.fail("--client-mode %q is not a client mode (official or replay, docs/peer-protocol.md \"Client modes\"); "+
			"the %s client of this peer takes official only: leave --client-mode out or give official", text, s)
	}
}

// rest refuses whatever was not taken.
func (r *reader) rest(command string) {
	for name := range r.values {
		r.fail("unknown argument %s for %s", name, command)
	}
}

func parseServer(values map[string]string) (*Server, error) {
	r := &reader{values: values}
	server := &Server{
		Stack: Stack(r.oneOf("--stack", r.required("--stack"), stackNames()...)),
	}
	server.Listen = r.hostPort("--listen", r.required("--listen"))
	server.Plaintext = r.tls(server.Stack)
	if files := r.secured(server.Plaintext, "--cert", "--key"); files != nil {
		server.Cert, server.Key = files[0], files[1]
	}
	if text, ok := r.take("--conformance-fault"); ok && r.err == nil {
		mode, err := fault.ParseServer(text)
		if err == nil {
			err = checkFaultStack(server.Stack)
		}
		if err != nil {
			r.fail("%v", err)
		}
		server.Fault = mode
	}
	r.rest("server")
	return server, r.err
}

var decimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func parseClient(values map[string]string) (*Client, error) {
	r := &reader{values: values}
	c := &Client{}
	c.Stack = Stack(r.oneOf("--stack", r.required("--stack"), stackNames()...))
	c.Server = r.hostPort("--server", r.required("--server"))
	c.Plaintext = r.tls(c.Stack)
	if values := r.secured(c.Plaintext, "--server-name", "--ca"); values != nil {
		c.ServerName, c.CA = values[0], values[1]
		if r.err == nil && (c.ServerName == "" || strings.ContainsAny(c.ServerName, " /\t")) {
			r.fail("--server-name %q is not a DNS name or an IP address", c.ServerName)
		}
	}
	shapeText := r.required("--shape")
	if shape, err := workload.ParseShape(shapeText); err == nil {
		c.Workload.Shape = shape
	} else if r.err == nil {
		r.fail("--shape: %v", err)
	}
	c.Concurrency = uint32(r.requiredNumber("--concurrency", 1, MaxConcurrency))
	c.Workload.RequestSize = uint32(r.requiredNumber("--request-size", 0, workload.MaxPayload))
	c.Workload.ResponseSize = uint32(r.requiredNumber("--response-size", 0, workload.MaxPayload))
	c.Workload.Messages = uint32(r.requiredNumber("--messages-per-stream", 1, workload.MaxMessages))
	c.Load = Load(r.oneOf("--load", r.required("--load"), "closed", "window", "backpressure", "send-saturation", "open"))
	c.Workload.Kind = r.payload(c.Stack)
	r.clientMode(c.Stack)
	c.WarmupMs = r.requiredNumber("--warmup-ms", 0, maxMillis)
	c.WindowMs = r.requiredNumber("--window-ms", 1, maxMillis)
	c.DrainMs = r.requiredNumber("--drain-ms", 0, maxMillis)
	modelArguments(r, c)
	faultText, faulty := r.take("--conformance-fault")
	r.rest("client")
	if r.err != nil {
		return nil, r.err
	}
	if c.Workload.Shape == workload.Send {
		// A command asks for no response: --response-size is ignored (docs/peer-protocol.md,
		// "Shapes"), and every command carries response_size 0.
		c.Workload.ResponseSize = 0
	}
	for name, size := range map[string]uint32{"--request-size": c.Workload.RequestSize, "--response-size": c.Workload.ResponseSize} {
		if err := c.Workload.Kind.CheckSize(size); err != nil {
			return nil, fmt.Errorf("%s %d with --payload %s: %v", name, size, c.Workload.Kind, err)
		}
	}
	if c.Load == SendSaturation && c.Workload.Shape != workload.ClientStream && c.Workload.Shape != workload.Send {
		return nil, fmt.Errorf("--load send-saturation runs client streams or one-way commands only (--shape client_stream or send), not --shape %s", c.Workload.Shape)
	}
	if err := checkCarried(c); err != nil {
		return nil, err
	}
	if faulty {
		if err := clientFault(c, faultText); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// clientFault reads --conformance-fault for the client: a client mode that applies to the
// workload, on a stack that implements the modes.
func clientFault(c *Client, text string) error {
	mode, err := fault.ParseClient(text)
	if err != nil {
		return err
	}
	if err := mode.Check(c.Workload); err != nil {
		return err
	}
	if err := checkFaultStack(c.Stack); err != nil {
		return err
	}
	c.Fault = mode
	return nil
}

// modelArguments reads each model's own arguments: required by that model (--arrival and --seed
// are optional) and refused with any other, so that a controller mistake cannot go unnoticed.
func modelArguments(r *reader, c *Client) {
	specific := []struct {
		name     string
		owner    Load
		required bool
		read     func(text string)
	}{
		{"--in-flight", Window, true, func(t string) { c.InFlight = uint32(r.number("--in-flight", t, 1, MaxInFlight)) }},
		{"--max-in-flight", Backpressure, true, func(t string) { c.MaxInFlight = uint32(r.number("--max-in-flight", t, 1, MaxCap)) }},
		{"--streams", SendSaturation, true, func(t string) { c.Streams = uint32(r.number("--streams", t, 1, MaxStreams)) }},
		{"--settle-ms", SendSaturation, true, func(t string) { c.SettleMs = r.number("--settle-ms", t, 0, maxMillis) }},
		{"--rate", Open, true, func(t string) { c.Rate = rate(r, t) }},
		{"--arrival", Open, false, func(t string) { c.Poisson = r.oneOf("--arrival", t, "constant", "poisson") == "poisson" }},
		{"--seed", Open, false, func(t string) { c.Seed = r.number("--seed", t, 0, math.MaxUint64) }},
	}
	for _, argument := range specific {
		text, given := r.take(argument.name)
		switch {
		case given && argument.owner != c.Load:
			r.fail("%s does not apply to --load %s", argument.name, c.Load)
		case !given && argument.required && argument.owner == c.Load:
			r.fail("--load %s needs %s", c.Load, argument.name)
		case given:
			argument.read(text)
		}
	}
}

func rate(r *reader, text string) float64 {
	value, err := strconv.ParseFloat(text, 64)
	if !decimal.MatchString(text) || err != nil || !(value > 0) || value > MaxRate {
		r.fail("--rate %q is not a decimal number above 0 and at most %.0f operations per second", text, MaxRate)
	}
	return value
}
