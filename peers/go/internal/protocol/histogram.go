package protocol

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds of docs/peer-protocol.md "sample": nanoseconds from 1 to one hour, three
// significant digits.
const (
	LowestNs          = 1
	HighestNs         = 3_600_000_000_000
	SignificantDigits = 3
)

// NewHistogram is an empty latency histogram. It is hdrhistogram-go's packed (sparse)
// histogram: it grows with the buckets actually used, so that a lane, a second of the window
// and a send-saturation stream can each keep their own without 270 KB apiece, and encodes to
// the same V2 bytes as the dense one.
func NewHistogram() *hdr.PackedHistogram {
	return hdr.NewPacked(LowestNs, HighestNs, SignificantDigits)
}

// Record adds one value, clamped to [1 ns, 1 h].
func Record(h *hdr.PackedHistogram, ns int64) {
	_ = h.RecordValue(min(max(ns, LowestNs), HighestNs))
}

// EncodeHistogram is the V2 compressed encoding (cookie 0x1c849314), base64 with padding.
func EncodeHistogram(h *hdr.PackedHistogram) (string, error) {
	encoded, err := h.Encode()
	if err != nil {
		return "", err
	}
	return string(encoded), nil
}
