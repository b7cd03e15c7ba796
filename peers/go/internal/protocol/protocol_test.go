package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestHistogramsEncodeAsV2CompressedWithTheCookie(t *testing.T) {
	h := NewHistogram()
	for v := int64(1); v <= 10_000; v++ {
		Record(h, v*1_000)
	}
	Record(h, 0)            // clamped to 1 ns
	Record(h, 10*HighestNs) // clamped to one hour
	text, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "HISTFAAA") {
		t.Fatalf("not the V2 compressed encoding: %s", text[:16])
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		t.Fatal(err)
	}
	if cookie := binary.BigEndian.Uint32(raw); cookie != 0x1c849314 {
		t.Fatalf("cookie %#x, want 0x1c849314", cookie)
	}
	back, err := hdr.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if back.TotalCount() != 10_002 || back.LowestTrackableValue() != LowestNs || back.HighestTrackableValue() != HighestNs || back.SignificantFigures() != SignificantDigits {
		t.Fatalf("decoded %d values, bounds %d..%d, %d digits", back.TotalCount(), back.LowestTrackableValue(), back.HighestTrackableValue(), back.SignificantFigures())
	}
	if p50 := back.ValueAtQuantile(50); p50 < 4_995_000 || p50 > 5_010_000 {
		t.Fatalf("p50 %d", p50)
	}
}

func TestEventsAreOneLineWithCountersAsStringsAndNoNulls(t *testing.T) {
	var out bytes.Buffer
	output := NewOutput(&out)
	output.Emit("ready", Ready{Address: "127.0.0.1:1", Pid: 7})
	output.Emit("stopped", Stopped{})
	output.Emit("sample", Sample{Completed: 1 << 60, Load: "closed", Intervals: []Interval{}})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%q", out.String())
	}
	if lines[0] != `{"protocol":1,"event":"ready","role":"server","address":"127.0.0.1:1","pid":7}` {
		t.Fatal(lines[0])
	}
	if lines[1] != `{"protocol":1,"event":"stopped"}` {
		t.Fatal(lines[1])
	}
	if strings.Contains(lines[2], "null") || !strings.Contains(lines[2], `"completed":"1152921504606846976"`) {
		t.Fatal(lines[2])
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &decoded); err != nil || decoded["protocol"] != 1.0 {
		t.Fatal(err, decoded)
	}
}

func TestCommandsEndOfStdinIsShutdown(t *testing.T) {
	inputs := ReadCommands(strings.NewReader(" START \n\nfoo\n WINDOW START\nWINDOW END \nWINDOW  END\nSHUTDOWN\n"))
	var got []Input
	for input := range inputs {
		got = append(got, input)
	}
	want := []Input{{Command: Start}, {Command: Unknown, Line: "foo"},
		{Command: Window, Line: "WINDOW START", Edge: EdgeStart}, {Command: Window, Line: "WINDOW END", Edge: EdgeEnd},
		{Command: Unknown, Line: "WINDOW  END"}, {Command: Shutdown}, {Command: Shutdown}}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%d: %v, want %v", i, got[i], want[i])
		}
	}
	var closed Input
	if closed.Command != Shutdown {
		t.Fatal("a closed channel must read as SHUTDOWN")
	}
}
