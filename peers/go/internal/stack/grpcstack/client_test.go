package grpcstack

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestStatusesMapToTheProtocolsCodes(t *testing.T) {
	cases := map[string]struct {
		err  error
		code string
	}{
		"deadline":           {status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "timeout"},
		"context":            {context.DeadlineExceeded, "timeout"},
		"sent by server":     {status.Error(codes.InvalidArgument, "request 5: seq 7, expected 5"), "rpc"},
		"server internal":    {status.Error(codes.Internal, "boom"), "rpc"},
		"server unavailable": {status.Error(codes.Unavailable, "overloaded"), "rpc"},
		"broken connection":  {status.Error(codes.Unavailable, "error reading from server: EOF"), "connect"},
		"connection error":   {status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing"`), "connect"},
		"reset stream":       {status.Error(codes.Internal, "stream terminated by RST_STREAM with error code: PROTOCOL_ERROR"), "connect"},
		"no message":         {status.Error(codes.Internal, "cardinality violation: received no response message from non-streaming RPC"), "invalid"},
		"extra message":      {status.Error(codes.Internal, "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message"), "invalid"},
		"undecodable":        {status.Error(codes.Internal, "grpc: failed to unmarshal the received message: proto: cannot parse invalid wire-format data"), "invalid"},
		"plain error":        {errors.New("something"), "rpc"},
	}
	for name, c := range cases {
		if got := statusError(c.err); got.Code != c.code {
			t.Errorf("%s: %s, want %s", name, got.Code, c.code)
		}
	}
}
