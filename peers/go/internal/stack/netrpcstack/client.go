package netrpcstack

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"
	"strings"
	"time"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/fault"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// Client is one net/rpc client on one TLS (or, with --tls off, TCP) connection, shared by
// every lane.
type Client struct {
	rpc     *rpc.Client
	conn    net.Conn
	lanes   []engine.Lane
	sockets *transport.TCPSockets
}

// Connect opens the connection (TLS handshake included) and starts net/rpc's client on it.
func Connect(ctx context.Context, settings stack.ClientSettings, codec Codec) (*Client, *engine.OpError) {
	conn, err := stack.Dial(ctx, settings)
	if err != nil {
		return nil, err
	}
	sockets := &transport.TCPSockets{}
	sockets.Register(stack.RawConn(conn))
	client := &Client{conn: conn, sockets: sockets}
	if codec == Gob {
		client.rpc = rpc.NewClient(conn)
	} else {
		client.rpc = rpc.NewClientWithCodec(NewClientCodec(conn))
	}
	for range settings.Lanes {
		client.lanes = append(client.lanes, &lane{client: client.rpc, workload: settings.Workload})
	}
	return client, nil
}

// Lanes share the client.
func (c *Client) Lanes() []engine.Lane { return c.lanes }

// Connections is 1.
func (c *Client) Connections() uint32 { return 1 }

// TransportProbe reads TCP_INFO of the connection.
func (c *Client) TransportProbe() transport.Probe { return c.sockets }

// Submitter is never asked for: the stack does not offer the backpressure model (args.Carried).
func (c *Client) Submitter(context.Context) engine.Submitter { return nil }

// Close closes the connection; calls still pending fail with rpc.ErrShutdown.
func (c *Client) Close() {
	_ = c.conn.SetDeadline(time.Now().Add(stack.CloseGrace))
	_ = c.rpc.Close()
}

type lane struct {
	client   *rpc.Client
	workload workload.Workload
}

// call sends request and waits for its reply, or for ctx (the drain bound, or SHUTDOWN): net/rpc
// cannot cancel a call, so one given up on is left to finish into a reply nobody reads.
func (l *lane) call(ctx context.Context, request *pb.Request) (*pb.Response, error) {
	reply := &pb.Response{}
	call := l.client.Go(Method, request, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return reply, call.Error
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *lane) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	wl := l.workload
	reply, err := l.call(ctx, workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, 0))
	if err != nil {
		return engine.Outcome{}, callError(err)
	}
	if err := workload.CheckResponse(reply, wl.Kind, seq, wl.ResponseSize); err != nil {
		return engine.Outcome{}, engine.Errorf("invalid", "%v", err)
	}
	return engine.Outcome{Requests: 1, Responses: 1, RequestBytes: uint64(wl.RequestSize),
		ResponseBytes: workload.PayloadLen(reply.Payload, reply.Body)}, nil
}

// RawCall sends a conformance fault's malformed call (one request: net/rpc calls are unary)
// and reports how the server ended it.
func (l *lane) RawCall(ctx context.Context, _ workload.Shape, requests []*pb.Request) (fault.Verdict, *engine.OpError) {
	_, err := l.call(ctx, requests[0])
	var server rpc.ServerError
	switch {
	case err == nil:
		return fault.Verdict{Code: fault.OK, Responses: 1}, nil
	case errors.As(err, &server):
		code, message := statusOf(string(server))
		return fault.Verdict{Code: code, Message: message}, nil
	}
	return fault.Verdict{}, callError(err)
}

// callError maps a failed net/rpc call to a code of docs/peer-protocol.md "Error codes". net/rpc
// gives error values, not statuses, so the code follows the best evidence: an error text the
// server sent (rpc.ServerError) is `rpc`; the context's end is `timeout`; a closed or broken
// connection is `connect`; a reply net/rpc could not decode ("reading body ...", or a codec error
// that ended the connection) is `invalid`.
func callError(err error) *engine.OpError {
	var server rpc.ServerError
	var netErr net.Error
	text := err.Error()
	switch {
	case errors.As(err, &server):
		return engine.Errorf("rpc", "the net/rpc server answered with an error: %s", string(server))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return engine.Errorf("timeout", "net/rpc call not answered in time: %v", err)
	case errors.Is(err, rpc.ErrShutdown), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &netErr), strings.Contains(text, "use of closed network connection"), strings.Contains(text, "transport error"):
		return engine.Errorf("connect", "the net/rpc connection failed: %v", err)
	}
	return engine.Errorf("invalid", "net/rpc could not decode the reply: %v", err)
}
