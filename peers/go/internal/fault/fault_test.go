package fault

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "rpcarena/peers/go/internal/benchpb"
	"rpcarena/peers/go/internal/workload"
)

var kinds = []workload.Kind{workload.Zeros, workload.Structured}

// serverCheck is a server's validation duty over a whole call.
func serverCheck(shape workload.Shape, requests []*pb.Request) error {
	check := workload.NewCallCheck(shape.Wire())
	for _, request := range requests {
		if err := check.Add(request); err != nil {
			return err
		}
	}
	if shape.StreamsRequests() && check.Count() == 0 {
		return errors.New(workload.EmptyStream)
	}
	return nil
}

func TestEveryClientModeBuildsACallTheServerCheckRefuses(t *testing.T) {
	for _, mode := range ClientModes {
		applied := 0
		for _, shape := range workload.Shapes {
			for _, kind := range kinds {
				wl := workload.Workload{Shape: shape, RequestSize: 64, ResponseSize: responseSize(shape), Messages: 4, Kind: kind}
				if mode.Check(wl) != nil {
					continue
				}
				applied++
				if err := serverCheck(shape, mode.Requests(wl)); err == nil {
					t.Errorf("%s %s %s: the server check accepted the malformed call", mode, shape, kind)
				}
			}
		}
		if applied == 0 || mode.Describe() == "" {
			t.Errorf("%s applies to nothing or has no description", mode)
		}
	}
	for _, shape := range workload.Shapes {
		var good []*pb.Request
		for i := range uint64(workload.Workload{Shape: shape, Messages: 4}.RequestsPerOp()) {
			good = append(good, workload.Request(workload.Structured, i, 64, responseSize(shape), 4))
		}
		if err := serverCheck(shape, good); err != nil {
			t.Errorf("%s: a well-formed call refused: %v", shape, err)
		}
	}
}

// responseSize is the response size of the tests' calls: a command asks for none (the client
// sends response_size 0 whatever --response-size says).
func responseSize(shape workload.Shape) uint32 {
	if shape == workload.Send {
		return 0
	}
	return 100
}

func TestClientModesRefuseShapesAndPayloadsTheyDoNotApplyTo(t *testing.T) {
	unary := workload.Workload{Shape: workload.Unary, Messages: 4}
	for _, mode := range []Client{SeqOrder, LengthChange, EmptyStream, ResponseMessagesZero, ClientCorruptStructured} {
		if mode.Check(unary) == nil {
			t.Errorf("%s accepted unary zeros", mode)
		}
	}
	if ClientNonzeroByte.Check(unary) != nil || SeqOrder.Check(workload.Workload{Shape: workload.Pingpong}) != nil {
		t.Error("a mode refused a shape it applies to")
	}
	seqs := func(requests []*pb.Request) (out []uint64) {
		for _, r := range requests {
			out = append(out, r.Seq)
		}
		return out
	}
	if got := seqs(SeqOrder.Requests(workload.Workload{Shape: workload.Bidi, Messages: 5})); !slices.Equal(got, []uint64{0, 2, 1, 3, 4}) {
		t.Errorf("seq-order: %v", got)
	}
	single := workload.Workload{Shape: workload.ClientStream, Messages: 1, RequestSize: 8}
	if got := SeqOrder.Requests(single); got[0].Seq != 1 {
		t.Errorf("seq-order of one request: %v", seqs(got))
	}
	if got := LengthChange.Requests(single); len(got) != 2 || len(got[1].Payload) != 7 {
		t.Errorf("length-change: %v", got)
	}
	if workload.ZeroBytes(64)[63] != 0 {
		t.Fatal("nonzero-byte wrote into the shared zero buffer")
	}
}

// refused says whether a client expecting responses with seqs would refuse p.
func refused(p Plan[*pb.Response], seqs []uint64, kind workload.Kind, size uint32) bool {
	if p.End != (Ending{}) || len(p.Messages) != len(seqs) {
		return true
	}
	for i, m := range p.Messages {
		if workload.CheckResponse(m, kind, seqs[i], size) != nil {
			return true
		}
	}
	return false
}

func TestEveryServerModeAnswersSomethingTheClientCheckRefuses(t *testing.T) {
	for _, mode := range ServerModes {
		if !mode.Validates() {
			continue
		}
		for _, kind := range kinds {
			var stream []*pb.Request
			for i := range uint64(4) {
				stream = append(stream, workload.Request(kind, i, 64, 100, 0))
			}
			single := []*pb.Request{workload.Request(kind, 7, 64, 100, 4)}
			cases := []struct {
				shape    workload.Shape
				requests []*pb.Request
				seqs     []uint64
			}{
				{workload.Unary, single, []uint64{7}},
				{workload.ServerStream, single, []uint64{0, 1, 2, 3}},
				{workload.Bidi, stream, []uint64{0, 1, 2, 3}},
			}
			for _, c := range cases {
				if p := Responses(mode, c.shape, c.requests); !refused(p, c.seqs, kind, 100) {
					t.Errorf("%s %s %s: %+v accepted", mode, c.shape, kind, p)
				}
			}
			if p := Single(mode, single[0]); !refused(merged(p), []uint64{7}, kind, 100) {
				t.Errorf("%s single reply %s: accepted", mode, kind)
			}
			p := Summaries(mode, stream)
			if p.End == (Ending{}) && len(p.Messages) == 1 && workload.CheckSummary(p.Messages[0], kind, 4, 64, 100) == nil {
				t.Errorf("%s client_stream %s: %+v accepted", mode, kind, p)
			}
		}
	}
}

// merged is a single reply as a protobuf body carries it: every message's encoding, concatenated,
// decoded as one message (none: the empty message).
func merged(p Plan[*pb.Response]) Plan[*pb.Response] {
	var body []byte
	for _, m := range p.Messages {
		encoded, _ := proto.Marshal(m)
		body = append(body, encoded...)
	}
	response := &pb.Response{}
	if err := proto.Unmarshal(body, response); err != nil {
		panic(err)
	}
	return Plan[*pb.Response]{Messages: []*pb.Response{response}, End: p.End}
}

func TestSkippingValidationAnswersCorrectly(t *testing.T) {
	var requests []*pb.Request
	for i := range uint64(4) {
		requests = append(requests, workload.Request(workload.Structured, i, 64, 100, 0))
	}
	if p := Responses(SkipValidation, workload.Bidi, requests); refused(p, []uint64{0, 1, 2, 3}, workload.Structured, 100) {
		t.Errorf("%+v", p)
	}
	if p := Summaries(SkipValidation, nil); p.Messages[0].Count != 0 {
		t.Errorf("%+v", p)
	}
	if _, ends := FirstRequestEnding(SkipValidation); ends {
		t.Error("skip-validation ends a stream early")
	}
}

func TestOnlyInvalidArgumentPassesAMalformedCall(t *testing.T) {
	if Judge(SeqOrder, Verdict{Code: InvalidArgument}) != nil {
		t.Fatal("INVALID_ARGUMENT failed")
	}
	if err := Judge(SeqOrder, Verdict{Code: OK, Responses: 1}); err == nil || err.Code != "invalid" {
		t.Fatalf("status OK: %v", err)
	}
	if err := Judge(EmptyStream, Verdict{Code: Internal, Message: "boom"}); err == nil || err.Code != "rpc" {
		t.Fatalf("INTERNAL: %v", err)
	}
}

func TestCorruptingAStructuredBodyKeepsItsSize(t *testing.T) {
	for _, size := range []uint32{3, 10, 19, 20, 64, 300} {
		body := workload.NewStructured(5, size)
		CorruptBody(body, 5)
		if proto.Size(body) != int(size) || workload.CheckStructured("body", body, 5, size) == nil {
			t.Errorf("%d: %d bytes, or still valid", size, proto.Size(body))
		}
	}
}

func TestACommandHasOnlyItsStatusToGetWrong(t *testing.T) {
	for _, mode := range ServerModes {
		ending := CommandEnding(mode)
		want := uint32(OK)
		if mode == ErrorStatus {
			want = Internal
		}
		if ending.Code != want || ending.OKBeforeLast {
			t.Errorf("%s: a command ends with %+v, want status %d", mode, ending, want)
		}
	}
}
