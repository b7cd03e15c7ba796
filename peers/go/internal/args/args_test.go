package args

import (
	"slices"
	"strings"
	"testing"

	"rpcarena/peers/go/internal/workload"
)

func client(extra ...string) []string {
	base := []string{"client", "--stack", "quic", "--server", "127.0.0.1:4000", "--server-name", "localhost",
		"--ca", "/tmp/ca.pem", "--shape", "bidi", "--concurrency", "4", "--request-size", "256",
		"--response-size", "0", "--messages-per-stream", "16", "--warmup-ms", "0", "--window-ms", "1000",
		"--drain-ms", "5000"}
	return append(base, extra...)
}

func TestAValidClientLineParses(t *testing.T) {
	command, err := Parse(client("--load", "open", "--rate", "2.5", "--arrival", "poisson", "--seed", "18446744073709551615", "--payload", "structured"))
	if err != nil {
		t.Fatal(err)
	}
	c := command.Client
	if c.Stack != Quic || c.Workload.Shape != workload.Bidi || c.Workload.Kind != workload.Structured ||
		c.Rate != 2.5 || !c.Poisson || c.Seed != 1<<64-1 || c.Lanes() != 4 || c.WindowMs != 1000 {
		t.Fatalf("%+v", c)
	}
	command, err = Parse(client("--load", "window", "--in-flight", "100"))
	if err != nil || command.Client.Lanes() != 100 {
		t.Fatalf("%v %+v", err, command.Client)
	}
}

func TestTheServerLineParses(t *testing.T) {
	command, err := Parse([]string{"server", "--stack", "grpc", "--listen", "[::1]:0", "--cert", "c", "--key", "k"})
	if err != nil || command.Server.Listen != "[::1]:0" {
		t.Fatalf("%v %+v", err, command.Server)
	}
}

func TestTheNewStacksAndConformanceFaultsParse(t *testing.T) {
	command, err := Parse(replace(replace(client("--load", "open", "--rate", "5", "--conformance-fault", "response-size-too-large"), "--stack", "http1-proto"), "--shape", "unary"))
	if err != nil || command.Client.Stack != HTTP1Proto || command.Client.Fault != "response-size-too-large" {
		t.Fatalf("%v %+v", err, command.Client)
	}
	command, err = Parse(replace(client("--load", "closed"), "--shape", "pingpong"))
	if err != nil || command.Client.Workload.Shape != workload.Pingpong {
		t.Fatalf("%v %+v", err, command.Client)
	}
	for _, s := range Stacks {
		command, err := Parse([]string{"server", "--stack", string(s), "--listen", "127.0.0.1:0", "--cert", "c", "--key", "k", "--conformance-fault", "early-status"})
		switch {
		case Carried(s).Faults && (err != nil || command.Server.Fault != "early-status"):
			t.Errorf("%s: %v %+v", s, err, command.Server)
		case !Carried(s).Faults && (err == nil || !strings.Contains(err.Error(), "not implemented for --stack "+string(s))):
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := Parse([]string{"server", "--stack", "grpc", "--listen", "127.0.0.1:0", "--cert", "c", "--key", "k", "--conformance-fault", "seq-order"}); err == nil || !strings.Contains(err.Error(), "not a server mode") {
		t.Errorf("a client mode given to a server: %v", err)
	}
}

func TestBadArgumentsAreRefusedNamingTheArgument(t *testing.T) {
	cases := map[string]struct {
		argv []string
		want string
	}{
		"unknown":              {client("--load", "closed", "--verbose", "1"), "unknown argument --verbose"},
		"missing":              {client(), "missing --load"},
		"repeated":             {client("--load", "closed", "--concurrency", "2"), "--concurrency is given more than once"},
		"concurrency 0":        {replace(client("--load", "closed"), "--concurrency", "0"), "--concurrency"},
		"concurrency negative": {replace(client("--load", "closed"), "--concurrency", "-1"), "--concurrency"},
		"size too large":       {replace(client("--load", "closed"), "--request-size", "16777217"), "--request-size"},
		"window 0":             {replace(client("--load", "closed"), "--window-ms", "0"), "--window-ms"},
		"model argument":       {client("--load", "closed", "--rate", "10"), "--rate does not apply to --load closed"},
		"model needs":          {client("--load", "window"), "--load window needs --in-flight"},
		"rate":                 {client("--load", "open", "--rate", "0"), "--rate"},
		"rate inf":             {client("--load", "open", "--rate", "inf"), "--rate"},
		"saturation shape":     {client("--load", "send-saturation", "--streams", "2", "--settle-ms", "10"), "client streams or one-way commands only"},
		"structured size":      {replace(client("--load", "closed", "--payload", "structured"), "--request-size", "2"), "--request-size 2"},
		"shape":                {replace(client("--load", "closed"), "--shape", "nope"), "--shape"},
		"stack":                {replace(client("--load", "closed"), "--stack", "h3"), "--stack"},
		"server address":       {replace(client("--load", "closed"), "--server", "localhost"), "--server"},
		"no value":             {append(client("--load", "closed"), "--payload"), "--payload needs a value"},
		"stack shape":          {replace(client("--load", "closed"), "--stack", "netrpc-gob"), "--shape bidi: the netrpc-gob stack carries only unary: net/rpc carries one request and one reply per call"},
		"stack load":           {replace(replace(client("--load", "backpressure", "--max-in-flight", "8"), "--stack", "http2-proto"), "--shape", "unary"), "--load backpressure: the http2-proto stack runs only closed, window, open"},
		"fault mode":           {client("--load", "closed", "--conformance-fault", "wrong-seq"), `--conformance-fault "wrong-seq" is not a client mode`},
		"fault shape":          {replace(client("--load", "closed", "--conformance-fault", "seq-order"), "--shape", "unary"), "--conformance-fault seq-order applies to --shape"},
		"fault stack":          {client("--load", "closed", "--conformance-fault", "nonzero-byte"), "--conformance-fault is not implemented for --stack quic"},
		"send stack":           {replace(client("--load", "closed"), "--shape", "send"), "--shape send: the quic stack cannot carry one-way commands: the native framing answers every request"},
		"send netrpc":          {replace(replace(client("--load", "closed"), "--shape", "send"), "--stack", "netrpc-proto"), "--shape send: the netrpc-proto stack cannot carry one-way commands: net/rpc"},
		"send fault":           {replace(replace(client("--load", "closed", "--conformance-fault", "seq-order"), "--shape", "send"), "--stack", "grpc"), "--conformance-fault seq-order applies to --shape"},
		"command":              {[]string{"serve"}, "unknown command"},
		"nothing":              {nil, "no command"},
	}
	for name, c := range cases {
		_, err := Parse(c.argv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %q", name, err, c.want)
		}
	}
}

func replace(argv []string, name, value string) []string {
	out := append([]string(nil), argv...)
	for i := range out {
		if out[i] == name {
			out[i+1] = value
		}
	}
	return out
}

// without is argv without the named arguments and their values.
func without(argv []string, names ...string) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		if slices.Contains(names, argv[i]) {
			i++
			continue
		}
		out = append(out, argv[i])
	}
	return out
}

// plaintext is a client line of stack with --tls off and without --server-name and --ca.
func plaintext(stack string, extra ...string) []string {
	return append(without(replace(client(extra...), "--stack", stack), "--server-name", "--ca"), "--tls", "off")
}

func TestTLSOffTakesNoCertificatesAndTLSOnNeedsThem(t *testing.T) {
	command, err := Parse(plaintext("tcp", "--load", "closed"))
	if err != nil || !command.Client.Plaintext || command.Client.CA != "" {
		t.Fatalf("client --tls off: %v %+v", err, command.Client)
	}
	command, err = Parse([]string{"server", "--stack", "grpc", "--listen", "127.0.0.1:0", "--tls", "off"})
	if err != nil || !command.Server.Plaintext {
		t.Fatalf("server --tls off: %v %+v", err, command.Server)
	}
	command, err = Parse(replace(client("--load", "closed", "--tls", "on"), "--stack", "grpc"))
	if err != nil || command.Client.Plaintext || command.Client.CA != "/tmp/ca.pem" {
		t.Fatalf("client --tls on: %v %+v", err, command.Client)
	}
	server := func(extra ...string) []string {
		return append([]string{"server", "--stack", "tcp", "--listen", "127.0.0.1:0"}, extra...)
	}
	cases := map[string]struct {
		argv []string
		want string
	}{
		"client ca":          {append(plaintext("tcp", "--load", "closed"), "--ca", "/tmp/ca.pem"), "--ca does not apply to --tls off"},
		"client server name": {append(plaintext("grpc", "--load", "closed"), "--server-name", "localhost"), "--server-name does not apply to --tls off"},
		"server cert":        {server("--tls", "off", "--cert", "c"), "--cert does not apply to --tls off"},
		"server key":         {server("--tls", "off", "--key", "k"), "--key does not apply to --tls off"},
		"on needs ca":        {without(client("--load", "closed", "--tls", "on"), "--ca"), "missing --ca"},
		"on needs name":      {without(client("--load", "closed"), "--server-name"), "missing --server-name"},
		"on needs key":       {server("--tls", "on", "--cert", "c"), "missing --key"},
		"default needs cert": {server("--key", "k"), "missing --cert"},
		"quic client":        {plaintext("quic", "--load", "closed"), "QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic"},
		"quic server":        {[]string{"server", "--stack", "quic", "--listen", "127.0.0.1:0", "--tls", "off"}, "--tls off does not apply to --stack quic"},
		"value":              {server("--tls", "none"), `--tls "none" is not one of on, off`},
		"repeated":           {server("--tls", "off", "--tls", "off"), "--tls is given more than once"},
	}
	for name, c := range cases {
		_, err := Parse(c.argv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %q", name, err, c.want)
		}
	}
}

func TestSendIgnoresTheResponseSizeAndRunsEveryModelOnGRPC(t *testing.T) {
	for _, load := range [][]string{{"--load", "closed"}, {"--load", "window", "--in-flight", "3"},
		{"--load", "backpressure", "--max-in-flight", "9"}, {"--load", "open", "--rate", "100"},
		{"--load", "send-saturation", "--streams", "8", "--settle-ms", "200"}} {
		for _, stack := range []string{"grpc", "grpc-servehttp"} {
			argv := replace(replace(replace(client(load...), "--stack", stack), "--shape", "send"), "--response-size", "2")
			command, err := Parse(append(argv, "--payload", "structured"))
			if err != nil {
				t.Fatalf("%s %v: %v", stack, load, err)
			}
			c := command.Client
			if c.Workload.Shape != workload.Send || c.Workload.ResponseSize != 0 {
				t.Errorf("%s %v: %+v", stack, load, c.Workload)
			}
			if c.Load == SendSaturation && c.Lanes() != 8 {
				t.Errorf("send-saturation on send runs %d lanes, want --streams 8", c.Lanes())
			}
		}
	}
}

// 1.4: no stack of this peer carries the payload kind dated or takes --client-mode replay; each
// is refused naming the argument, the stack and what to give instead. official, the default, is
// accepted and changes nothing.
func TestDatedAndReplayAreRefusedAndOfficialIsTheDefault(t *testing.T) {
	for _, s := range Stacks {
		line := replace(replace(client("--load", "closed"), "--stack", string(s)), "--shape", "unary")
		cases := map[string]struct {
			argv []string
			want []string
		}{
			"dated":         {append(line, "--payload", "dated"), []string{"--payload dated: no stack of this peer carries it, --stack " + string(s), "give --payload zeros or structured"}},
			"dated sizes 0": {append(replace(line, "--request-size", "0"), "--payload", "dated"), []string{"--payload dated", "JSON"}},
			"replay":        {append(line, "--client-mode", "replay"), []string{"--client-mode replay: the " + string(s) + " client of this peer takes official only", "leave --client-mode out or give official"}},
			"unknown mode":  {append(line, "--client-mode", "lean"), []string{`--client-mode "lean" is not a client mode (official or replay`, "the " + string(s) + " client"}},
			"empty mode":    {append(line, "--client-mode", ""), []string{`--client-mode "" is not a client mode`}},
			"repeated":      {append(line, "--client-mode", "official", "--client-mode", "official"), []string{"--client-mode is given more than once"}},
		}
		for name, c := range cases {
			_, err := Parse(c.argv)
			for _, want := range c.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s %s: got %v, want an error naming %q", s, name, err, want)
				}
			}
		}
		plain, err := Parse(line)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		official, err := Parse(append(line, "--client-mode", "official"))
		if err != nil || *official.Client != *plain.Client {
			t.Errorf("%s --client-mode official: %v %+v, want %+v", s, err, official.Client, plain.Client)
		}
	}
	// a server takes neither (it learns the payload kind from each request)
	for _, extra := range [][]string{{"--payload", "dated"}, {"--client-mode", "official"}} {
		argv := append([]string{"server", "--stack", "grpc", "--listen", "127.0.0.1:0", "--cert", "c", "--key", "k"}, extra...)
		if _, err := Parse(argv); err == nil || !strings.Contains(err.Error(), "unknown argument "+extra[0]+" for server") {
			t.Errorf("server %v: %v", extra, err)
		}
	}
}
