package args

import (
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
		"saturation shape":     {client("--load", "send-saturation", "--streams", "2", "--settle-ms", "10"), "client streams only"},
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
