package grpcstack

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/testpki"
	"rpcarena/peers/go/internal/workload"
)

// faulty answers every shape wrongly in one way.
type faulty struct {
	pb.UnimplementedBenchServiceServer
	fault string
}

func (f *faulty) response(seq uint64, size uint32) *pb.Response {
	response := workload.Response(workload.Zeros, seq, size)
	switch f.fault {
	case "wrong seq":
		response.Seq++
	case "short payload":
		response.Payload = response.Payload[1:]
	case "non-zero byte":
		response.Payload = append(append([]byte{}, response.Payload[1:]...), 7)
	}
	return response
}

func (f *faulty) Unary(_ context.Context, request *pb.Request) (*pb.Response, error) {
	if f.fault == "non-OK status" {
		return nil, status.Error(codes.ResourceExhausted, "no")
	}
	return f.response(request.Seq, request.ResponseSize), nil
}

func (f *faulty) ClientStream(stream grpc.ClientStreamingServer[pb.Request, pb.Summary]) error {
	check := workload.NewCallCheck(workload.ClientStream)
	for {
		request, err := stream.Recv()
		if err != nil {
			break
		}
		_ = check.Add(request)
	}
	summary := check.Summary()
	if f.fault == "wrong summary" {
		summary.Count--
	}
	return stream.SendAndClose(summary)
}

func (f *faulty) ServerStream(request *pb.Request, stream grpc.ServerStreamingServer[pb.Response]) error {
	n := uint64(request.ResponseMessages)
	switch f.fault {
	case "missing message":
		n--
	case "extra message":
		n++
	case "early OK":
		n = 0
	}
	for i := uint64(0); i < n; i++ {
		if err := stream.Send(f.response(i, request.ResponseSize)); err != nil {
			return err
		}
	}
	return nil
}

func TestTheClientFailsEveryFaultyAnswer(t *testing.T) {
	pki := testpki.Write(t)
	serverTLS, err := stack.ServerTLS(pki.Cert, pki.Key, stack.ALPNH2)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		fault string
		shape workload.Shape
		code  string
	}{
		{"wrong seq", workload.Unary, "invalid"},
		{"short payload", workload.Unary, "invalid"},
		{"non-zero byte", workload.ServerStream, "invalid"},
		{"wrong summary", workload.ClientStream, "invalid"},
		{"missing message", workload.ServerStream, "invalid"},
		{"extra message", workload.ServerStream, "invalid"},
		{"early OK", workload.ServerStream, "invalid"},
		{"non-OK status", workload.Unary, "rpc"},
	}
	for _, c := range cases {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		server := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
		pb.RegisterBenchServiceServer(server, &faulty{fault: c.fault})
		go server.Serve(listener)
		clientTLS, err := stack.ClientTLS(pki.CA, "localhost", stack.ALPNH2)
		if err != nil {
			t.Fatal(err)
		}
		wl := workload.Workload{Shape: c.shape, RequestSize: 8, ResponseSize: 8, Messages: 4}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		client, opErr := Connect(ctx, stack.ClientSettings{Server: listener.Addr().String(), TLS: clientTLS, Workload: wl, Lanes: 1})
		if opErr != nil {
			t.Fatal(opErr)
		}
		_, opErr = client.Lanes()[0].Call(ctx, 3)
		if opErr == nil || opErr.Code != c.code {
			t.Errorf("%s (%s): %v, want code %s", c.fault, c.shape, opErr, c.code)
		}
		// the backpressure path (grpc-go's generic streams) checks the same
		ticket, opErr := client.Submitter(ctx).Ready(ctx)
		if opErr != nil {
			t.Fatal(opErr)
		}
		if _, opErr = ticket.Call(ctx, 3); opErr == nil || opErr.Code != c.code {
			t.Errorf("%s (%s) through a ticket: %v, want code %s", c.fault, c.shape, opErr, c.code)
		}
		cancel()
		client.Close()
		server.Stop()
	}
}
