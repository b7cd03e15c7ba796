// Package httpstack holds the http1-proto and http2-proto stacks: a unary call is one POST of a
// protobuf rpcarena.bench.v1.Request to /rpcarena.bench.v1.BenchService/Unary, answered with a
// protobuf Response body, over net/http on TLS 1.3: HTTP/1.1 with one connection per lane, or
// HTTP/2 with one connection multiplexing every lane (net/http's client with ForceAttemptHTTP2,
// as rpc-bench does).
package httpstack

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/workload"
)

// ContentType of every request and response body, as rpc-bench sends it.
const ContentType = "application/x-protobuf"

// Path is the one route: the gRPC method path of the unary call.
var Path = workload.Unary.Method()

// handler answers POST Path (docs/stacks.md, "http1-proto and http2-proto"): 200 with the
// Response; 400 with a text body saying what was wrong for a request that fails validation or
// cannot be decoded (INVALID_ARGUMENT); 404 for another path, 405 for another method, 500 for
// the conformance faults' INTERNAL.
type handler struct {
	counters *stack.Counters
	fault    fault.Server
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		h.refuse(w, http.StatusNotFound, fmt.Sprintf("unknown path %q; the only one is POST %s", r.URL.Path, Path))
		return
	}
	if r.Method != http.MethodPost {
		h.refuse(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s; %s takes POST", r.Method, Path))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, workload.MaxMessage))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.refuse(w, http.StatusBadRequest, fmt.Sprintf("request body above the maximum %d bytes", workload.MaxMessage))
		return
	case err != nil:
		return // the client went away
	}
	request := &pb.Request{}
	if err := proto.Unmarshal(body, request); err != nil {
		h.refuse(w, http.StatusBadRequest, fmt.Sprintf("the request is not a valid rpcarena.bench.v1.Request: %v", err))
		return
	}
	answer := stack.AnswerUnary(request, h.fault, h.counters)
	switch answer.Code {
	case fault.OK:
	case fault.InvalidArgument:
		http.Error(w, answer.Message, http.StatusBadRequest)
		return
	default:
		http.Error(w, answer.Message, http.StatusInternalServerError)
		return
	}
	var reply []byte
	for _, m := range answer.Messages { // one; a conformance fault may send none or two
		if reply, err = (proto.MarshalOptions{}).MarshalAppend(reply, m); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", ContentType)
	_, _ = w.Write(reply)
}

// refuse answers a call that never reached the service, counted as a rejected call.
func (h *handler) refuse(w http.ResponseWriter, status int, message string) {
	tally := &stack.CallTally{}
	tally.Reject("HTTP %d: %s", status, message)
	tally.Done(h.counters)
	http.Error(w, message, status)
}

// Serve binds exactly address and serves until Stop: HTTP/2 when http2, else HTTP/1.1;
// misbehaving as f says when it is set.
func Serve(address string, config *tls.Config, counters *stack.Counters, http2 bool, f fault.Server) (*stack.HTTPServer, error) {
	return stack.ServeHTTP(address, config, &handler{counters: counters, fault: f}, http2)
}
