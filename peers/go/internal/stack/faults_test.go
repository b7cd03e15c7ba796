package stack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"rpcarena/peers/go/internal/args"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/testpki"
	"rpcarena/peers/go/internal/workload"
)

var kinds = []workload.Kind{workload.Zeros, workload.Structured}

// faultStacks are the stacks with conformance faults, in both roles.
func faultStacks() (names []args.Stack) {
	for _, name := range args.Stacks {
		if args.Carried(name).Faults {
			names = append(names, name)
		}
	}
	return names
}

// expectedCode is what a client must fail its call with against a server in mode f: "" for a
// command, which has nothing but its status to get wrong, in every mode but error-status.
func expectedCode(f fault.Server, shape workload.Shape) string {
	switch {
	case f == fault.ErrorStatus, f == fault.WrongSummary && shape != workload.ClientStream && shape != workload.Send:
		return "rpc"
	case shape == workload.Send:
		return ""
	}
	return "invalid"
}

// Every server mode makes this peer's own client fail the call with the code the kit expects,
// on every shape and payload kind the stack carries, with TLS and in plaintext.
func TestEveryServerFaultFailsTheClientWithItsCode(t *testing.T) {
	pki := testpki.Write(t)
	for _, name := range faultStacks() {
		for _, sec := range securities(pki, name) {
			for _, mode := range fault.ServerModes {
				if mode.Validates() {
					serverFaultFails(t, name, sec, mode)
				}
			}
		}
	}
}

func serverFaultFails(t *testing.T, name args.Stack, sec security, mode fault.Server) {
	s := stacks[name]
	server := sec.start(t, s, &stack.Counters{}, mode)
	defer server.Stop()
	for _, shape := range args.Carried(name).Shapes {
		for _, kind := range kinds {
			wl := testWorkload(shape, kind, 64, 64, 4)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			client, opErr := s.connect(ctx, sec.settings(t, s, server.Addr().String(), wl))
			if opErr != nil {
				t.Fatalf("%s %s: %v", name, sec, opErr)
			}
			_, opErr = client.Lanes()[0].Call(ctx, 0)
			code := ""
			if opErr != nil {
				code = opErr.Code
			}
			if want := expectedCode(mode, shape); code != want {
				t.Errorf("%s %s %s %s %s: %v, want code %q", name, sec, mode, shape, kind, opErr, want)
			}
			client.Close()
			cancel()
		}
	}
}

// probe sends client mode f's malformed call and then a well-formed one, as the peer's
// --conformance-fault client does; it returns the judge's failure or the second call's.
func probe(t *testing.T, s stackUnderTest, sec security, address string, mode fault.Client, wl workload.Workload) (fault.Verdict, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, opErr := s.connect(ctx, sec.settings(t, s, address, wl))
	if opErr != nil {
		t.Fatal(opErr)
	}
	defer client.Close()
	lane := client.Lanes()[0]
	verdict, opErr := lane.(stack.RawCaller).RawCall(ctx, wl.Shape, mode.Requests(wl))
	if opErr == nil {
		opErr = fault.Judge(mode, verdict)
	}
	if opErr == nil {
		_, opErr = lane.Call(ctx, 0)
	}
	if opErr != nil {
		return verdict, opErr.Code
	}
	return verdict, ""
}

// Every server refuses every malformed call of the client modes with INVALID_ARGUMENT (400,
// "invalid argument: ..."), then serves a well-formed call; a server that skips validation is
// caught (the judge fails with `invalid`). With TLS and in plaintext; the first rejection's
// message is kept for first_rejection.
func TestEveryServerRefusesEveryMalformedCallAndGoesOn(t *testing.T) {
	pki := testpki.Write(t)
	for _, name := range faultStacks() {
		for _, sec := range securities(pki, name) {
			malformedRefused(t, name, sec)
		}
	}
}

func malformedRefused(t *testing.T, name args.Stack, sec security) {
	s := stacks[name]
	counters := &stack.Counters{}
	server := sec.start(t, s, counters, "")
	lax := sec.start(t, s, &stack.Counters{}, fault.SkipValidation)
	refused, commands := uint64(0), uint64(0)
	for _, mode := range fault.ClientModes {
		for _, shape := range args.Carried(name).Shapes {
			for _, kind := range kinds {
				wl := testWorkload(shape, kind, 64, 64, 4)
				if mode.Check(wl) != nil {
					continue
				}
				refused++
				if shape == workload.Send {
					commands++ // the well-formed command after the malformed one
				}
				if verdict, code := probe(t, s, sec, server.Addr().String(), mode, wl); code != "" || verdict.Message == "" {
					t.Errorf("%s %s %s %s %s: %q, verdict %+v", name, sec, mode, shape, kind, code, verdict)
				}
				if mode == fault.ResponseSizeTooLarge && kind == workload.Structured && shape != workload.Send {
					continue // the lax server would build a 16 MiB structured answer: seconds, nothing new
				}
				if _, code := probe(t, s, sec, lax.Addr().String(), mode, wl); code != "invalid" {
					t.Errorf("%s %s %s %s %s: a server that skips validation passed (%q)", name, sec, mode, shape, kind, code)
				}
			}
		}
	}
	server.Stop()
	lax.Stop()
	if refused == 0 || counters.Rejected.Load() != refused || counters.Commands.Load() != commands ||
		!strings.Contains(counters.FirstRejection(), "INVALID_ARGUMENT") {
		t.Errorf("%s %s: %d calls rejected (first: %q), %d malformed sent; %d commands, %d well-formed sent", name, sec,
			counters.Rejected.Load(), counters.FirstRejection(), refused, counters.Commands.Load(), commands)
	}
}
