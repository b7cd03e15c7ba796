package stack_test

import (
	"context"
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

// expectedCode is what a client must fail its call with against a server in mode f.
func expectedCode(f fault.Server, shape workload.Shape) string {
	switch {
	case f == fault.ErrorStatus, f == fault.WrongSummary && shape != workload.ClientStream:
		return "rpc"
	}
	return "invalid"
}

// Every server mode makes this peer's own client fail the call with the code the kit expects,
// on every shape and payload kind the stack carries.
func TestEveryServerFaultFailsTheClientWithItsCode(t *testing.T) {
	pki := testpki.Write(t)
	for _, name := range faultStacks() {
		for _, mode := range fault.ServerModes {
			if !mode.Validates() {
				continue
			}
			server := stacks[name].start(t, pki, &stack.Counters{}, mode)
			for _, shape := range args.Carried(name).Shapes {
				for _, kind := range kinds {
					wl := workload.Workload{Shape: shape, RequestSize: 64, ResponseSize: 64, Messages: 4, Kind: kind}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					client, opErr := stacks[name].connect(ctx, settings(t, server.Addr().String(), pki.CA, "127.0.0.1", stacks[name].alpn, wl))
					if opErr != nil {
						t.Fatalf("%s: %v", name, opErr)
					}
					_, opErr = client.Lanes()[0].Call(ctx, 0)
					if want := expectedCode(mode, shape); opErr == nil || opErr.Code != want {
						t.Errorf("%s %s %s %s: %v, want code %s", name, mode, shape, kind, opErr, want)
					}
					client.Close()
					cancel()
				}
			}
			server.Stop()
		}
	}
}

// probe sends client mode f's malformed call and then a well-formed one, as the peer's
// --conformance-fault client does; it returns the judge's failure or the second call's.
func probe(t *testing.T, s stackUnderTest, address, ca string, mode fault.Client, wl workload.Workload) (fault.Verdict, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, opErr := s.connect(ctx, settings(t, address, ca, "127.0.0.1", s.alpn, wl))
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
// caught (the judge fails with `invalid`).
func TestEveryServerRefusesEveryMalformedCallAndGoesOn(t *testing.T) {
	pki := testpki.Write(t)
	for _, name := range faultStacks() {
		counters := &stack.Counters{}
		server := stacks[name].start(t, pki, counters, "")
		lax := stacks[name].start(t, pki, &stack.Counters{}, fault.SkipValidation)
		refused := uint64(0)
		for _, mode := range fault.ClientModes {
			for _, shape := range args.Carried(name).Shapes {
				for _, kind := range kinds {
					wl := workload.Workload{Shape: shape, RequestSize: 64, ResponseSize: 64, Messages: 4, Kind: kind}
					if mode.Check(wl) != nil {
						continue
					}
					refused++
					if verdict, code := probe(t, stacks[name], server.Addr().String(), pki.CA, mode, wl); code != "" || verdict.Message == "" {
						t.Errorf("%s %s %s %s: %q, verdict %+v", name, mode, shape, kind, code, verdict)
					}
					if mode == fault.ResponseSizeTooLarge && kind == workload.Structured {
						continue // the lax server would build a 16 MiB structured answer: seconds, nothing new
					}
					if _, code := probe(t, stacks[name], lax.Addr().String(), pki.CA, mode, wl); code != "invalid" {
						t.Errorf("%s %s %s %s: a server that skips validation passed (%q)", name, mode, shape, kind, code)
					}
				}
			}
		}
		server.Stop()
		lax.Stop()
		if refused == 0 || counters.Rejected.Load() != refused {
			t.Errorf("%s: %d calls rejected, %d malformed sent", name, counters.Rejected.Load(), refused)
		}
	}
}
