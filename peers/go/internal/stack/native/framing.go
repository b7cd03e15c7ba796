// Package native is the native framing of the quic and tcp stacks (docs/stacks.md, "Native
// framing"), byte for byte, and the RPCs on top of it: the client side of one operation and
// the server side of one call, written once over io.Reader/io.Writer halves so that the quic
// stack runs them on one QUIC stream per call and the tcp stack on one TLS connection per lane.
//
//	frame = type (1 byte) | length (4 bytes, big-endian, of the body) | body
//	0x01 HEADER  client: the method path     0x02 MESSAGE  both: one protobuf message
//	0x03 END     client: no more requests     0x04 STATUS   server: rpcarena.bench.v1.Status
package native

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"rpcarena/peers/go/internal/workload"
)

// Frame types.
const (
	Header  byte = 0x01
	Message byte = 0x02
	End     byte = 0x03
	Status  byte = 0x04
)

// Sizes of the framing.
const (
	// PrefixLen is the bytes before a frame's body: type and length.
	PrefixLen = 5
	// MaxBody is the largest body accepted: a 16 MiB payload plus 1 KiB.
	MaxBody = workload.MaxMessage
	// WriteBatch: frames are buffered and flushed once this many bytes are buffered (the batch
	// HTTP/2 implementations use), after a client's END, and when a server has answered all it
	// has received.
	WriteBatch = 32 * 1024
	// ReadBuffer is the read buffer; a larger frame is read in one piece into its own buffer.
	ReadBuffer = 16 * 1024
)

var frameNames = map[byte]string{Header: "HEADER", Message: "MESSAGE", End: "END", Status: "STATUS"}

// FrameName names a frame type.
func FrameName(kind byte) string {
	if name, ok := frameNames[kind]; ok {
		return name
	}
	return fmt.Sprintf("%#02x", kind)
}

// FramingError is a malformed frame: the reader cannot find the next one, so the transport
// (tcp: the connection, quic: the stream) cannot be used further.
type FramingError struct{ Reason string }

func (e *FramingError) Error() string { return e.Reason }

// TransportError is a failure of the transport underneath (reset, closed, deadline).
type TransportError struct{ Err error }

func (e *TransportError) Error() string { return "transport error: " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// Reader reads frames. The body it returns is valid until the next call.
type Reader struct {
	in   *bufio.Reader
	body []byte
}

// NewReader reads frames from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{in: bufio.NewReaderSize(r, ReadBuffer)}
}

// Reset makes the reader read from r, keeping its buffers.
func (r *Reader) Reset(in io.Reader) { r.in.Reset(in) }

// Next reads the next frame. At a clean end between frames it returns io.EOF; an end inside a
// frame, an unknown type or an oversized length is a *FramingError; a transport failure a
// *TransportError.
func (r *Reader) Next() (byte, []byte, error) {
	var prefix [PrefixLen]byte
	if n, err := io.ReadFull(r.in, prefix[:]); err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return 0, nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return 0, nil, &FramingError{fmt.Sprintf("the stream ended inside a frame (%d bytes of it received)", n)}
		}
		return 0, nil, &TransportError{err}
	}
	kind, length, err := parsePrefix(prefix[:])
	if err != nil {
		return 0, nil, err
	}
	if cap(r.body) < length {
		r.body = make([]byte, length)
	}
	body := r.body[:length]
	if n, err := io.ReadFull(r.in, body); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, &FramingError{fmt.Sprintf("the stream ended inside a frame (%d bytes of it received)", PrefixLen+n)}
		}
		return 0, nil, &TransportError{err}
	}
	return kind, body, nil
}

func parsePrefix(prefix []byte) (byte, int, error) {
	kind := prefix[0]
	if kind < Header || kind > Status {
		return 0, 0, &FramingError{fmt.Sprintf("unknown frame type %#02x (expected 0x01 to 0x04)", kind)}
	}
	length := binary.BigEndian.Uint32(prefix[1:])
	if length > MaxBody {
		return 0, 0, &FramingError{fmt.Sprintf("frame body of %d bytes is above the maximum %d", length, MaxBody)}
	}
	return kind, int(length), nil
}

// HasCompleteFrame says whether the buffered input already holds a whole frame (or a broken
// prefix), so reading it needs no I/O. A server flushes its answers only when it would
// otherwise wait for input.
func (r *Reader) HasCompleteFrame() bool {
	buffered := r.in.Buffered()
	if buffered < PrefixLen {
		return false
	}
	prefix, _ := r.in.Peek(PrefixLen)
	_, length, err := parsePrefix(prefix)
	return err != nil || buffered >= PrefixLen+length
}

// Writer writes frames through a WriteBatch buffer.
type Writer struct {
	out     *bufio.Writer
	scratch []byte
}

// NewWriter writes frames to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{out: bufio.NewWriterSize(w, WriteBatch)}
}

// Reset makes the writer write to w, dropping anything unflushed.
func (w *Writer) Reset(out io.Writer) { w.out.Reset(out) }

// Frame writes a frame with a raw body.
func (w *Writer) Frame(kind byte, body []byte) error {
	if len(body) > MaxBody {
		return &FramingError{fmt.Sprintf("frame body of %d bytes is above the maximum %d", len(body), MaxBody)}
	}
	var prefix [PrefixLen]byte
	prefix[0] = kind
	binary.BigEndian.PutUint32(prefix[1:], uint32(len(body)))
	if _, err := w.out.Write(prefix[:]); err != nil {
		return &TransportError{err}
	}
	if _, err := w.out.Write(body); err != nil {
		return &TransportError{err}
	}
	return nil
}

// Message writes a frame of kind whose body is message, encoded in place after the prefix.
func (w *Writer) Message(kind byte, message proto.Message) error {
	encoded, err := proto.MarshalOptions{}.MarshalAppend(append(w.scratch[:0], 0, 0, 0, 0, 0), message)
	if err != nil {
		return fmt.Errorf("cannot encode a %s frame: %w", FrameName(kind), err)
	}
	w.scratch = encoded
	length := len(encoded) - PrefixLen
	if length > MaxBody {
		return &FramingError{fmt.Sprintf("frame body of %d bytes is above the maximum %d", length, MaxBody)}
	}
	encoded[0] = kind
	binary.BigEndian.PutUint32(encoded[1:], uint32(length))
	if _, err := w.out.Write(encoded); err != nil {
		return &TransportError{err}
	}
	return nil
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if err := w.out.Flush(); err != nil {
		return &TransportError{err}
	}
	return nil
}
