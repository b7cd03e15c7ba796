// Package grpcstack is the grpc stack: grpc-go over HTTP/2 over TLS 1.3 over TCP (or, with
// --tls off, HTTP/2 with prior knowledge straight on TCP: insecure credentials), one ClientConn
// (one HTTP/2 connection) per client shared by every lane.
package grpcstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/transport"
	"rpcarena/peers/go/internal/workload"
)

// recorder remembers why the last connection attempt failed, so that a handshake failure
// surfaces as `tls` and a TCP failure as `connect` when the channel turns TRANSIENT_FAILURE
// (grpc-go itself only gives a status text).
type recorder struct {
	credentials.TransportCredentials
	*sink
}

type sink struct {
	server string // --server, for messages
	mu     sync.Mutex
	last   *engine.OpError
}

func (s *sink) note(err *engine.OpError) {
	s.mu.Lock()
	s.last = err
	s.mu.Unlock()
}

func (s *sink) lastError() *engine.OpError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (r *recorder) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	secured, info, err := r.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		r.note(engine.Errorf("tls", "%s", stack.HandshakeMessage(r.server, r.Info().ServerName, err)))
	}
	return secured, info, err
}

func (r *recorder) Clone() credentials.TransportCredentials {
	return &recorder{TransportCredentials: r.TransportCredentials.Clone(), sink: r.sink}
}

// Client is one ClientConn for every lane.
type Client struct {
	conn     *grpc.ClientConn
	client   pb.BenchServiceClient
	workload workload.Workload
	lanes    []engine.Lane
	sockets  *transport.TCPSockets
}

// Connect opens the channel and forces it READY, so that a TLS or TCP failure surfaces here as
// `tls` or `connect` and not in the first call.
func Connect(ctx context.Context, settings stack.ClientSettings) (*Client, *engine.OpError) {
	inner := insecure.NewCredentials()
	if !settings.Plaintext() {
		inner = credentials.NewTLS(settings.TLS)
	}
	creds := &recorder{TransportCredentials: inner, sink: &sink{server: settings.Server}}
	// Every TCP connection grpc-go opens comes through here, so its socket is registered for
	// the transport statistics (a reconnection adds a socket; a closed one drops out).
	sockets := &transport.TCPSockets{}
	dial := func(ctx context.Context, address string) (net.Conn, error) {
		conn, err := stack.DialTCP(ctx, address)
		if err != nil {
			creds.note(engine.Errorf("connect", "TCP connection to %s failed: %v", address, err))
			return conn, err
		}
		sockets.Register(conn)
		return conn, nil
	}
	conn, err := grpc.NewClient("passthrough:///"+settings.Server,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(dial),
		grpc.WithInitialWindowSize(stack.FlowWindow),
		grpc.WithInitialConnWindowSize(stack.FlowWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(workload.MaxMessage), grpc.MaxCallSendMsgSize(workload.MaxMessage)),
		grpc.WithDisableServiceConfig(),
		grpc.WithDisableRetry(),
	)
	if err != nil {
		return nil, engine.Errorf("config", "--server %s is not a usable gRPC target: %v", settings.Server, err)
	}
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if state == connectivity.TransientFailure || state == connectivity.Shutdown {
			conn.Close()
			if last := creds.lastError(); last != nil {
				return nil, last
			}
			return nil, engine.Errorf("connect", "the HTTP/2 connection to %s failed", settings.Server)
		}
		if !conn.WaitForStateChange(ctx, state) {
			conn.Close()
			return nil, engine.Errorf("timeout", "connecting to %s: %v", settings.Server, ctx.Err())
		}
	}
	client := &Client{conn: conn, client: pb.NewBenchServiceClient(conn), workload: settings.Workload, sockets: sockets}
	for range settings.Lanes {
		client.lanes = append(client.lanes, &lane{conn: conn, client: client.client, workload: settings.Workload})
	}
	return client, nil
}

// Lanes share the channel.
func (c *Client) Lanes() []engine.Lane { return c.lanes }

// Connections is 1.
func (c *Client) Connections() uint32 { return 1 }

// TransportProbe reads TCP_INFO of the channel's socket.
func (c *Client) TransportProbe() transport.Probe { return c.sockets }

// Close closes the channel.
func (c *Client) Close() { _ = c.conn.Close() }

// Submitter is ready when grpc-go created a stream: NewStream returns once the transport has a
// stream for the call (it waits while the server's MAX_CONCURRENT_STREAMS are all in use).
func (c *Client) Submitter(ctx context.Context) engine.Submitter {
	return &submitter{conn: c.conn, workload: c.workload, phase: ctx}
}

// statusError maps a grpc-go error to a code of docs/peer-protocol.md "Error codes". grpc-go
// does not say whether the server sent a status or the library made it, so the code follows the
// best evidence: deadlines and cancellations are `timeout`; INTERNAL with grpc-go's wording for
// a wrong response count or an undecodable message is `invalid`; UNAVAILABLE, and INTERNAL for a
// reset stream, with grpc-go's transport wording are `connect`; any other status is `rpc`.
func statusError(err error) *engine.OpError {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return engine.Errorf("timeout", "gRPC call ended by its deadline: %v", err)
	}
	s, _ := status.FromError(err)
	message := fmt.Sprintf("gRPC status %s: %s", s.Code(), s.Message())
	switch s.Code() {
	case codes.DeadlineExceeded, codes.Canceled:
		return engine.Errorf("timeout", "%s", message)
	case codes.Internal:
		// grpc-go's own words for a response count or message it could not accept: OK with no
		// message or a second one on a non-streaming call, an undecodable message.
		for _, marker := range invalidMarkers {
			if strings.Contains(s.Message(), marker) {
				return engine.Errorf("invalid", "%s", message)
			}
		}
		fallthrough
	case codes.Unavailable:
		for _, marker := range transportMarkers {
			if strings.Contains(s.Message(), marker) {
				return engine.Errorf("connect", "%s", message)
			}
		}
	}
	return engine.Errorf("rpc", "%s", message)
}

// invalidMarkers are the phrases of INTERNAL statuses grpc-go makes itself for a response it
// cannot accept.
var invalidMarkers = []string{"cardinality violation", "failed to unmarshal", "grpc: error unmarshalling"}

// transportMarkers are the phrases of statuses grpc-go makes itself for a failed connection.
var transportMarkers = []string{
	"connection error", "error reading from server", "transport is closing", "connection closed",
	"the connection is draining", "closing transport", "stream terminated by RST_STREAM",
	"failed to write", "connection reset",
}

func invalid(err error) *engine.OpError { return engine.Errorf("invalid", "%v", err) }

// lane runs calls through the generated client on the shared channel.
type lane struct {
	conn     *grpc.ClientConn
	client   pb.BenchServiceClient
	workload workload.Workload
}

func (l *lane) Call(ctx context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	wl := l.workload
	switch wl.Shape {
	case workload.Unary:
		response, err := l.client.Unary(ctx, workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, 0))
		if err != nil {
			return engine.Outcome{}, statusError(err)
		}
		return unaryOutcome(response, wl, seq)
	case workload.Send:
		if _, err := l.client.Command(ctx, workload.Request(wl.Kind, seq, wl.RequestSize, 0, 0)); err != nil {
			return engine.Outcome{}, statusError(err)
		}
		return commandOutcome(wl), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stream grpc.ClientStream
	var err error
	switch wl.Shape {
	case workload.ClientStream:
		stream, err = l.client.ClientStream(ctx)
	case workload.ServerStream:
		stream, err = l.client.ServerStream(ctx, workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, wl.Messages))
	case workload.Bidi, workload.Pingpong:
		stream, err = l.client.Bidi(ctx)
	}
	if err != nil {
		return engine.Outcome{}, statusError(err)
	}
	return streamCall(stream, cancel, wl, seq, wl.Shape != workload.ServerStream)
}

func unaryOutcome(response *pb.Response, wl workload.Workload, seq uint64) (engine.Outcome, *engine.OpError) {
	if err := workload.CheckResponse(response, wl.Kind, seq, wl.ResponseSize); err != nil {
		return engine.Outcome{}, invalid(err)
	}
	return engine.Outcome{Requests: 1, Responses: 1, RequestBytes: uint64(wl.RequestSize),
		ResponseBytes: workload.PayloadLen(response.Payload, response.Body)}, nil
}

// commandOutcome is a one-way command acknowledged with Empty and status OK: one request, one
// acknowledgement with no payload (docs/peer-protocol.md, "Shapes": send).
func commandOutcome(wl workload.Workload) engine.Outcome {
	return engine.Outcome{Requests: 1, Responses: 1, RequestBytes: uint64(wl.RequestSize)}
}

// streamCall runs a client-stream, server-stream or bidi operation on an open stream; for the
// server stream the request has already been sent (sendRequests false). A response that fails
// validation cancels the call.
func streamCall(stream grpc.ClientStream, cancel context.CancelFunc, wl workload.Workload, seq uint64, sendRequests bool) (engine.Outcome, *engine.OpError) {
	n := uint64(wl.Messages)
	outcome := engine.Outcome{Requests: n, RequestBytes: n * uint64(wl.RequestSize), Responses: n}
	switch wl.Shape {
	case workload.Pingpong:
		bytes, failure := pingpong(stream, wl)
		if failure != nil {
			cancel()
			return engine.Outcome{}, failure
		}
		outcome.ResponseBytes = bytes
		return outcome, nil
	case workload.ClientStream:
		if err := sendAll(stream, wl); err != nil {
			return engine.Outcome{}, statusError(err)
		}
		summary := &pb.Summary{}
		if err := stream.RecvMsg(summary); err != nil {
			return engine.Outcome{}, statusError(err)
		}
		if err := workload.CheckSummary(summary, wl.Kind, n, wl.RequestSize, wl.ResponseSize); err != nil {
			cancel()
			return engine.Outcome{}, invalid(err)
		}
		outcome.Responses, outcome.ResponseBytes = 1, workload.PayloadLen(summary.Payload, summary.Body)
		return outcome, nil
	case workload.ServerStream:
		outcome.Requests, outcome.RequestBytes = 1, uint64(wl.RequestSize)
	}
	var sent chan error
	if sendRequests {
		// Full duplex: the requests go out from their own goroutine while responses are read.
		sent = make(chan error, 1)
		go func() { sent <- sendAll(stream, wl) }()
	}
	bytes, failure := readResponses(stream, wl)
	if failure != nil {
		cancel()
	}
	if sent != nil {
		if err := <-sent; err != nil && failure == nil && !errors.Is(err, io.EOF) {
			failure = statusError(err)
		}
	}
	if failure != nil {
		return engine.Outcome{}, failure
	}
	outcome.ResponseBytes = bytes
	return outcome, nil
}

// sendAll sends the N requests of a streamed call and closes the send direction. io.EOF from
// SendMsg means the call already ended; its status comes from the receiving side.
func sendAll(stream grpc.ClientStream, wl workload.Workload) error {
	for i := uint64(0); i < uint64(wl.Messages); i++ {
		if err := stream.SendMsg(workload.Request(wl.Kind, i, wl.RequestSize, wl.ResponseSize, 0)); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return stream.CloseSend()
}

// pingpong runs the N lock-step exchanges of a Bidi call: request i is sent, response i read and
// checked, then request i+1; after the last response the send direction closes and the status
// must be OK with no further message.
func pingpong(stream grpc.ClientStream, wl workload.Workload) (uint64, *engine.OpError) {
	var bytes uint64
	n := uint64(wl.Messages)
	response := &pb.Response{}
	for i := uint64(0); i < n; i++ {
		// io.EOF from SendMsg means the call ended; RecvMsg then gives its status.
		if err := stream.SendMsg(workload.Request(wl.Kind, i, wl.RequestSize, wl.ResponseSize, 0)); err != nil && !errors.Is(err, io.EOF) {
			return bytes, statusError(err)
		}
		proto.Reset(response)
		err := stream.RecvMsg(response)
		if errors.Is(err, io.EOF) {
			return bytes, engine.Errorf("invalid", "the server ended the call after %d of %d responses", i, n)
		}
		if err != nil {
			return bytes, statusError(err)
		}
		if err := workload.CheckResponse(response, wl.Kind, i, wl.ResponseSize); err != nil {
			return bytes, invalid(err)
		}
		bytes += workload.PayloadLen(response.Payload, response.Body)
	}
	if err := stream.CloseSend(); err != nil {
		return bytes, statusError(err)
	}
	switch err := stream.RecvMsg(response); {
	case errors.Is(err, io.EOF):
		return bytes, nil
	case err != nil:
		return bytes, statusError(err)
	}
	return bytes, engine.Errorf("invalid", "the server sent more than the %d responses asked for", n)
}

// readResponses reads exactly N responses with seq 0..N-1, then the status, which must be OK.
func readResponses(stream grpc.ClientStream, wl workload.Workload) (uint64, *engine.OpError) {
	var received, bytes uint64
	n := uint64(wl.Messages)
	for {
		response := &pb.Response{}
		err := stream.RecvMsg(response)
		if errors.Is(err, io.EOF) {
			if received != n {
				return bytes, engine.Errorf("invalid", "the server ended the call after %d of %d responses", received, n)
			}
			return bytes, nil
		}
		if err != nil {
			return bytes, statusError(err)
		}
		if received == n {
			return bytes, engine.Errorf("invalid", "the server sent more than the %d responses asked for", n)
		}
		if err := workload.CheckResponse(response, wl.Kind, received, wl.ResponseSize); err != nil {
			return bytes, invalid(err)
		}
		bytes += workload.PayloadLen(response.Payload, response.Body)
		received++
	}
}

// submitter creates one stream per operation through grpc-go's generic NewStream.
type submitter struct {
	conn     *grpc.ClientConn
	workload workload.Workload
	phase    context.Context
}

type ticket struct {
	stream   grpc.ClientStream
	cancel   context.CancelFunc
	workload workload.Workload
}

func (s *submitter) Ready(context.Context) (engine.Ticket, *engine.OpError) {
	ctx, cancel := context.WithCancel(s.phase)
	shape := s.workload.Shape
	desc := &grpc.StreamDesc{ClientStreams: shape.StreamsRequests(), ServerStreams: shape.StreamsResponses()}
	stream, err := s.conn.NewStream(ctx, desc, shape.Method())
	if err != nil {
		cancel()
		return nil, statusError(err)
	}
	return &ticket{stream: stream, cancel: cancel, workload: s.workload}, nil
}

func (t *ticket) Abandon() { t.cancel() }

func (t *ticket) Call(_ context.Context, seq uint64) (engine.Outcome, *engine.OpError) {
	defer t.cancel()
	wl := t.workload
	switch wl.Shape {
	case workload.Unary, workload.ServerStream, workload.Send:
		messages, responseSize := uint32(0), wl.ResponseSize
		switch wl.Shape {
		case workload.ServerStream:
			messages = wl.Messages
		case workload.Send:
			responseSize = 0
		}
		if err := t.stream.SendMsg(workload.Request(wl.Kind, seq, wl.RequestSize, responseSize, messages)); err != nil && !errors.Is(err, io.EOF) {
			return engine.Outcome{}, statusError(err)
		}
		if err := t.stream.CloseSend(); err != nil {
			return engine.Outcome{}, statusError(err)
		}
		switch wl.Shape {
		case workload.ServerStream:
			return streamCall(t.stream, t.cancel, wl, seq, false)
		case workload.Send:
			if err := t.stream.RecvMsg(&pb.Empty{}); err != nil {
				return engine.Outcome{}, statusError(err)
			}
			return commandOutcome(wl), nil
		}
		response := &pb.Response{}
		if err := t.stream.RecvMsg(response); err != nil {
			return engine.Outcome{}, statusError(err)
		}
		return unaryOutcome(response, wl, seq)
	}
	return streamCall(t.stream, t.cancel, wl, seq, true)
}

// Saturate runs one send-saturation client stream: a message is accepted when grpc-go's Send
// returned (it waits for HTTP/2 flow control when the window is used up); at the deadline the
// stream ends and the summary must confirm every message.
func (l *lane) Saturate(ctx context.Context, clock engine.Clock, sender *engine.StreamSender) *engine.OpError {
	if !sender.Open(clock.Now()) {
		return nil
	}
	wl := l.workload
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := l.client.ClientStream(ctx)
	if err != nil {
		return statusError(err)
	}
	for seq, ok := sender.Next(clock.Now()); ok; seq, ok = sender.Next(clock.Now()) {
		if err := stream.Send(workload.Request(wl.Kind, seq, wl.RequestSize, wl.ResponseSize, 0)); err != nil {
			if errors.Is(err, io.EOF) {
				break // the call ended; its status comes with CloseAndRecv
			}
			return statusError(err)
		}
		sender.Accepted(clock.Now(), uint64(wl.RequestSize))
	}
	summary, err := stream.CloseAndRecv()
	if err != nil {
		return statusError(err)
	}
	if err := workload.CheckSummary(summary, wl.Kind, sender.Sent(), wl.RequestSize, wl.ResponseSize); err != nil {
		return invalid(err)
	}
	sender.SummaryReceived(clock.Now(), workload.PayloadLen(summary.Payload, summary.Body))
	return nil
}
