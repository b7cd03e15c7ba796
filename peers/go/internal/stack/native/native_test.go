package native

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/engine"
	"rpcarena/peers/go/internal/stack"
	"rpcarena/peers/go/internal/workload"
)

func frames(t *testing.T, write func(w *Writer)) []byte {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out)
	write(w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The example of docs/stacks.md: a unary call with an empty payload, seq 1, response_size 0.
func TestTheDocumentedUnaryCallIsByteForByte(t *testing.T) {
	client := frames(t, func(w *Writer) {
		_ = w.Frame(Header, []byte(workload.Unary.Method()))
		_ = w.Message(Message, &pb.Request{Seq: 1})
		_ = w.Frame(End, nil)
	})
	want := "0100000025" + hex.EncodeToString([]byte("/rpcarena.bench.v1.BenchService/Unary")) + "02000000020801" + "0300000000"
	if got := hex.EncodeToString(client); got != want {
		t.Fatalf("client frames\n%s\nwant\n%s", got, want)
	}
	server := frames(t, func(w *Writer) {
		_ = w.Message(Message, &pb.Response{Seq: 1})
		_ = w.Message(Status, &pb.Status{})
	})
	if got := hex.EncodeToString(server); got != "02000000020801"+"0400000000" {
		t.Fatalf("server frames %s", got)
	}
	status := frames(t, func(w *Writer) { _ = w.Message(Status, &pb.Status{Code: 3}) })
	if !bytes.Equal(status, []byte{0x04, 0, 0, 0, 2, 0x08, 0x03}) {
		t.Fatalf("%x", status)
	}
}

func TestFramesSplitAcrossReadsWaitForTheWholeFrame(t *testing.T) {
	wire := frames(t, func(w *Writer) {
		_ = w.Frame(Header, []byte(workload.Bidi.Method()))
		_ = w.Message(Message, workload.Request(workload.Zeros, 7, 300, 10, 0))
		_ = w.Frame(End, nil)
	})
	r := NewReader(io.MultiReader(oneByteAtATime(wire)...))
	var kinds []byte
	for {
		kind, body, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, kind)
		if kind == Message {
			request := &pb.Request{}
			if err := proto.Unmarshal(body, request); err != nil || request.Seq != 7 || len(request.Payload) != 300 {
				t.Fatalf("%v %v", err, request)
			}
		}
	}
	if !bytes.Equal(kinds, []byte{Header, Message, End}) {
		t.Fatalf("%v", kinds)
	}
}

func oneByteAtATime(wire []byte) []io.Reader {
	var readers []io.Reader
	for i := range wire {
		readers = append(readers, bytes.NewReader(wire[i:i+1]))
	}
	return readers
}

func TestMalformedFramesAreFramingErrors(t *testing.T) {
	for name, wire := range map[string][]byte{
		"truncated body":   {0x02, 0, 0, 0, 9, 1, 2},
		"truncated prefix": {0x02, 0},
		"unknown type":     {0x09, 0, 0, 0, 0},
		"oversized":        {0x01, 0x01, 0, 0x04, 0x01},
	} {
		_, _, err := NewReader(bytes.NewReader(wire)).Next()
		var framing *FramingError
		if !errors.As(err, &framing) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := NewReader(bytes.NewReader(nil)).Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("a clean end is io.EOF: %v", err)
	}
	r := NewReader(bytes.NewReader([]byte{0x02, 0, 0, 0, 2, 8}))
	_, _ = r.in.Peek(6)
	if r.HasCompleteFrame() {
		t.Fatal("a frame missing its last byte is not complete")
	}
	r = NewReader(bytes.NewReader([]byte{0x07, 0, 0, 0, 0}))
	_, _ = r.in.Peek(5)
	if !r.HasCompleteFrame() {
		t.Fatal("a broken prefix counts as ready: reading it reports the error")
	}
}

// pair is a loopback TCP connection: a native server on one end.
func pair(t *testing.T, serve func(conn net.Conn)) net.Conn {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		serve(conn)
	}()
	conn, err := net.Dial("tcp", listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func server(counters *stack.Counters) func(net.Conn) {
	return func(conn net.Conn) {
		c := Conn{R: NewReader(conn), W: NewWriter(conn)}
		for ServeCall(c, counters) == Again {
		}
	}
}

func TestEveryShapeRoundTripsAndAConnectionCarriesManyCalls(t *testing.T) {
	counters := &stack.Counters{}
	conn := pair(t, server(counters))
	c := Conn{R: NewReader(conn), W: NewWriter(conn)}
	for _, kind := range []workload.Kind{workload.Zeros, workload.Structured} {
		for _, shape := range workload.Shapes {
			wl := workload.Workload{Shape: shape, RequestSize: 100, ResponseSize: 200, Messages: 16, Kind: kind}
			if shape == workload.Send {
				if _, err := Call(c, wl, 0); err == nil {
					t.Fatal("the native framing ran a one-way command")
				}
				continue
			}
			for seq := uint64(0); seq < 3; seq++ {
				outcome, err := Call(c, wl, seq)
				if err != nil {
					t.Fatalf("%s %s: %v", kind, shape, err)
				}
				want := engine.Outcome{Requests: wl.RequestsPerOp(), Responses: wl.ResponsesPerOp(),
					RequestBytes: wl.RequestsPerOp() * 100, ResponseBytes: wl.ResponsesPerOp() * 200}
				if outcome != want {
					t.Fatalf("%s %s: %+v, want %+v", kind, shape, outcome, want)
				}
			}
		}
	}
	conn.Close()
	// 3 calls of each shape and kind: requests 1 + 16 + 1 + 16 + 16, responses 1 + 1 + 16 + 16 + 16
	for deadline := time.Now().Add(5 * time.Second); counters.RPCs.Load() != 30 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if counters.Requests.Load() != 6*50 || counters.Responses.Load() != 6*50 || counters.Rejected.Load() != 0 {
		t.Fatalf("requests %d responses %d", counters.Requests.Load(), counters.Responses.Load())
	}
}

// rawCall writes wire to a server, half-closes, and returns the STATUS codes it answered.
func rawCall(t *testing.T, wire []byte) []uint32 {
	t.Helper()
	conn := pair(t, server(&stack.Counters{}))
	if _, err := conn.Write(wire); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	answer, _ := io.ReadAll(conn)
	r := NewReader(bytes.NewReader(answer))
	var codes []uint32
	for {
		kind, body, err := r.Next()
		if err != nil {
			return codes
		}
		if kind == Status {
			status := &pb.Status{}
			if err := proto.Unmarshal(body, status); err != nil {
				t.Fatal(err)
			}
			codes = append(codes, status.Code)
		}
	}
}

func call(w *Writer, shape workload.Shape, requests ...*pb.Request) {
	_ = w.Frame(Header, []byte(shape.Method()))
	for _, request := range requests {
		_ = w.Message(Message, request)
	}
	_ = w.Frame(End, nil)
}

func TestTheServerRefusesMalformedCallsAndStaysInStep(t *testing.T) {
	zeros := func(seq uint64, size, responseSize, messages uint32) *pb.Request {
		return workload.Request(workload.Zeros, seq, size, responseSize, messages)
	}
	dirty := zeros(0, 10, 1, 0)
	dirty.Payload = []byte{0, 0, 1}
	corrupted := workload.Request(workload.Structured, 0, 100, 1, 0)
	corrupted.Body.Title = strings.ToUpper(corrupted.Body.Title)
	wire := frames(t, func(w *Writer) {
		_ = w.Frame(Header, []byte("/rpcarena.bench.v1.BenchService/Nope"))
		_ = w.Message(Message, zeros(0, 1, 1, 0))
		_ = w.Frame(End, nil)
		call(w, workload.ServerStream, zeros(0, 1, 1, 0))                    // response_messages 0
		call(w, workload.Unary, zeros(0, 1, workload.MaxPayload+1, 0))       // response_size too large
		call(w, workload.Unary)                                              // no request
		call(w, workload.Unary, dirty)                                       // a non-zero byte
		call(w, workload.Unary, corrupted)                                   // a corrupted structured body
		call(w, workload.ClientStream, zeros(0, 5, 1, 0), zeros(2, 5, 1, 0)) // seq out of order
		call(w, workload.Bidi, zeros(0, 5, 1, 0), zeros(1, 6, 1, 0))         // length changes
		call(w, workload.ClientStream)                                       // an empty client stream
		call(w, workload.Send, zeros(0, 1, 0, 0))                            // a command: not carried
		call(w, workload.Unary, zeros(5, 1, 1, 0))                           // well-formed
	})
	want := []uint32{12, 3, 3, 3, 3, 3, 3, 3, 3, 12, 0}
	if got := rawCall(t, wire); len(got) != len(want) || !equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
}

func equal(a, b []uint32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestBrokenFramingIsAnsweredAndClosed(t *testing.T) {
	header := frames(t, func(w *Writer) { _ = w.Frame(Header, []byte(workload.Unary.Method())) })
	garbage := append(append([]byte{}, header...), 0x02, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0x03, 0, 0, 0, 0)
	for name, c := range map[string]struct {
		wire []byte
		want []uint32
	}{
		"garbage protobuf": {garbage, []uint32{3}},
		"no HEADER first":  {[]byte{0x03, 0, 0, 0, 0}, []uint32{3}},
		"unknown type":     {[]byte{0x09, 0, 0, 0, 0}, []uint32{3}},
		"oversized":        {[]byte{0x01, 0xff, 0xff, 0xff, 0xff}, []uint32{3}},
		"truncated":        {append(append([]byte{}, header...), 0x02, 0, 0, 0, 9, 1), []uint32{3}},
		"hang up":          {frames(t, func(w *Writer) { _ = w.Frame(Header, []byte(workload.Bidi.Method())) }), nil},
	} {
		if got := rawCall(t, c.wire); !equal(got, c.want) {
			t.Errorf("%s: statuses %v, want %v", name, got, c.want)
		}
	}
}

// fakeServer answers every call with what answer writes, after reading up to END.
func fakeServer(answer func(w *Writer)) func(net.Conn) {
	return func(conn net.Conn) {
		r, w := NewReader(conn), NewWriter(conn)
		for {
			kind, _, err := r.Next()
			if err != nil {
				return
			}
			if kind == End {
				answer(w)
				_ = w.Flush()
				return
			}
		}
	}
}

func TestTheClientFailsEveryBadAnswerWithItsCode(t *testing.T) {
	wl := workload.Workload{Shape: workload.Unary, RequestSize: 10, ResponseSize: 10, Messages: 1}
	good := workload.Response(workload.Zeros, 1, 10)
	cases := map[string]struct {
		answer func(w *Writer)
		code   string
	}{
		"non-OK status": {func(w *Writer) { _ = w.Message(Status, &pb.Status{Code: 13, Message: "boom"}) }, "rpc"},
		"no status":     {func(w *Writer) { _ = w.Message(Message, good) }, "connect"},
		"early OK":      {func(w *Writer) { _ = w.Message(Status, &pb.Status{}) }, "invalid"},
		"wrong seq": {func(w *Writer) {
			_ = w.Message(Message, workload.Response(workload.Zeros, 2, 10))
			_ = w.Message(Status, &pb.Status{})
		}, "invalid"},
		"short payload": {func(w *Writer) {
			_ = w.Message(Message, workload.Response(workload.Zeros, 1, 9))
			_ = w.Message(Status, &pb.Status{})
		}, "invalid"},
		"extra message": {func(w *Writer) {
			_ = w.Message(Message, good)
			_ = w.Message(Message, good)
			_ = w.Message(Status, &pb.Status{})
		}, "invalid"},
		"unknown frame":   {func(w *Writer) { _ = w.Frame(0x09, nil) }, "invalid"},
		"undecodable":     {func(w *Writer) { _ = w.Frame(Message, []byte{0xff}) }, "invalid"},
		"frame from peer": {func(w *Writer) { _ = w.Frame(End, nil) }, "invalid"},
	}
	for name, c := range cases {
		conn := pair(t, fakeServer(c.answer))
		_, err := Call(Conn{R: NewReader(conn), W: NewWriter(conn)}, wl, 1)
		if err == nil || err.Code != c.code {
			t.Errorf("%s: %v, want code %s", name, err, c.code)
		}
	}
	// a one-call stream must end after STATUS
	conn := pair(t, fakeServer(func(w *Writer) {
		_ = w.Message(Message, good)
		_ = w.Message(Status, &pb.Status{})
		_ = w.Message(Status, &pb.Status{})
	}))
	if _, err := Call(Conn{R: NewReader(conn), W: NewWriter(conn), OneCall: true}, wl, 1); err == nil || err.Code != "invalid" {
		t.Errorf("data after STATUS: %v", err)
	}
}

// A pingpong call sends request i+1 only after response i arrived: a server that answers each
// request 2 ms late never finds the next request already waiting (a bidi client, which sends
// every request at once, fails this).
func TestPingpongWaitsForEachResponse(t *testing.T) {
	if ahead := requestsAhead(t, workload.Pingpong); slices.Contains(ahead, true) {
		t.Fatalf("requests waiting while the server answered: %v", ahead)
	}
	if ahead := requestsAhead(t, workload.Bidi); !slices.Contains(ahead, true) {
		t.Fatalf("the check cannot tell bidi from pingpong: %v", ahead)
	}
}

// requestsAhead runs a call of shape against a slow server and says, per request, whether the
// next one had already arrived when the server answered it.
func requestsAhead(t *testing.T, shape workload.Shape) []bool {
	client, server := net.Pipe()
	defer client.Close()
	seen := make(chan []bool, 1)
	go func() {
		defer server.Close()
		r, w := NewReader(server), NewWriter(server)
		var ahead []bool
		for {
			kind, body, err := r.Next()
			if err != nil || kind == End {
				break
			}
			if kind != Message {
				continue
			}
			request := &pb.Request{}
			_ = proto.Unmarshal(body, request)
			time.Sleep(2 * time.Millisecond)
			ahead = append(ahead, r.in.Buffered() > 0)
			_ = w.Message(Message, workload.Response(workload.Zeros, request.Seq, request.ResponseSize))
			_ = w.Flush()
		}
		_ = w.Message(Status, &pb.Status{})
		_ = w.Flush()
		seen <- ahead
	}()
	wl := workload.Workload{Shape: shape, RequestSize: 10, ResponseSize: 20, Messages: 5}
	if _, err := Call(Conn{R: NewReader(client), W: NewWriter(client)}, wl, 0); err != nil {
		t.Fatal(err)
	}
	return <-seen
}
