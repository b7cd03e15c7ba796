package netrpcstack

import (
	"errors"
	"fmt"
	"io"
	"net/rpc"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"rpcarena/peers/go/internal/stack/native"
)

// The protobuf codec of netrpc-proto (docs/stacks.md, "netrpc-proto"): every request and every
// reply is two frames of the native framing's prefix (type byte, 4-byte big-endian length): a
// HEADER frame (0x01) holding net/rpc's header as a protobuf message written by hand,
//
//	1: service_method (string)   2: seq (uint64)   3: error (string, replies only)
//
// then a MESSAGE frame (0x02) holding the rpcarena.bench.v1.Request or Response (empty when the
// reply carries an error). Frames are buffered and flushed once per request or reply.

// protoCodec is the shared half of both codecs: framing over one connection.
type protoCodec struct {
	conn io.ReadWriteCloser
	r    *native.Reader
	w    *native.Writer
}

func newProtoCodec(conn io.ReadWriteCloser) protoCodec {
	return protoCodec{conn: conn, r: native.NewReader(conn), w: native.NewWriter(conn)}
}

// write sends one header and one body (nil: an empty body), and flushes.
func (c *protoCodec) write(method string, seq uint64, errText string, body proto.Message) error {
	header := protowire.AppendTag(nil, 1, protowire.BytesType)
	header = protowire.AppendString(header, method)
	header = protowire.AppendTag(header, 2, protowire.VarintType)
	header = protowire.AppendVarint(header, seq)
	if errText != "" {
		header = protowire.AppendTag(header, 3, protowire.BytesType)
		header = protowire.AppendString(header, errText)
	}
	if err := c.w.Frame(native.Header, header); err != nil {
		return err
	}
	var err error
	if body == nil {
		err = c.w.Frame(native.Message, nil)
	} else {
		err = c.w.Message(native.Message, body)
	}
	if err != nil {
		return err
	}
	return c.w.Flush()
}

// readHeader reads a HEADER frame: the method, the seq and the error text.
func (c *protoCodec) readHeader() (method string, seq uint64, errText string, err error) {
	body, err := c.frame(native.Header)
	if err != nil {
		return "", 0, "", err
	}
	for len(body) > 0 {
		number, kind, n := protowire.ConsumeTag(body)
		if n < 0 {
			return "", 0, "", fmt.Errorf("malformed net/rpc header: %v", protowire.ParseError(n))
		}
		body = body[n:]
		switch {
		case number == 1 && kind == protowire.BytesType:
			method, n = protowire.ConsumeString(body)
		case number == 2 && kind == protowire.VarintType:
			seq, n = protowire.ConsumeVarint(body)
		case number == 3 && kind == protowire.BytesType:
			errText, n = protowire.ConsumeString(body)
		default:
			n = protowire.ConsumeFieldValue(number, kind, body)
		}
		if n < 0 {
			return "", 0, "", fmt.Errorf("malformed net/rpc header: %v", protowire.ParseError(n))
		}
		body = body[n:]
	}
	return method, seq, errText, nil
}

// frame reads the next frame, which must be of type kind. io.EOF between frames stays io.EOF
// (net/rpc's clean end of a connection).
func (c *protoCodec) frame(kind byte) ([]byte, error) {
	got, body, err := c.r.Next()
	switch {
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case err != nil:
		return nil, err
	case got != kind:
		return nil, fmt.Errorf("expected a %s frame, got %s", native.FrameName(kind), native.FrameName(got))
	}
	return body, nil
}

// decode reads a MESSAGE frame into body (nil: discard the frame); decoding failures are
// wrapped by what (nil: as they are).
func (c *protoCodec) decode(body any, what func(error) error) error {
	frame, err := c.frame(native.Message)
	if err != nil || body == nil {
		return err
	}
	message, ok := body.(proto.Message)
	if !ok {
		return fmt.Errorf("the netrpc-proto codec carries protobuf messages, not %T", body)
	}
	if err := proto.Unmarshal(frame, message); err != nil {
		return what(err)
	}
	return nil
}

func (c *protoCodec) Close() error { return c.conn.Close() }

// clientCodec is net/rpc's ClientCodec for netrpc-proto.
type clientCodec struct{ protoCodec }

// NewClientCodec frames net/rpc requests and replies on conn.
func NewClientCodec(conn io.ReadWriteCloser) rpc.ClientCodec {
	return &clientCodec{newProtoCodec(conn)}
}

func (c *clientCodec) WriteRequest(request *rpc.Request, body any) error {
	message, ok := body.(proto.Message)
	if !ok {
		return fmt.Errorf("the netrpc-proto codec carries protobuf messages, not %T", body)
	}
	return c.write(request.ServiceMethod, request.Seq, "", message)
}

func (c *clientCodec) ReadResponseHeader(response *rpc.Response) error {
	var err error
	response.ServiceMethod, response.Seq, response.Error, err = c.readHeader()
	return err
}

func (c *clientCodec) ReadResponseBody(body any) error {
	return c.decode(body, func(err error) error { return err })
}

// serverCodec is net/rpc's ServerCodec for netrpc-proto.
type serverCodec struct{ protoCodec }

// NewServerCodec frames net/rpc requests and replies on conn.
func NewServerCodec(conn io.ReadWriteCloser) rpc.ServerCodec {
	return &serverCodec{newProtoCodec(conn)}
}

func (c *serverCodec) ReadRequestHeader(request *rpc.Request) error {
	var err error
	request.ServiceMethod, request.Seq, _, err = c.readHeader()
	return err
}

// ReadRequestBody decodes the request; net/rpc answers a failure with its text, so an
// undecodable request is refused as INVALID_ARGUMENT.
func (c *serverCodec) ReadRequestBody(body any) error {
	return c.decode(body, func(err error) error {
		return fmt.Errorf("%sthe request is not a valid rpcarena.bench.v1.Request: %v", InvalidPrefix, err)
	})
}

func (c *serverCodec) WriteResponse(response *rpc.Response, body any) error {
	message, _ := body.(proto.Message)
	if response.Error != "" {
		message = nil // net/rpc passes an empty struct with an error
	}
	return c.write(response.ServiceMethod, response.Seq, response.Error, message)
}
