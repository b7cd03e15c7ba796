//! The native framing of the `quic` and `tcp` stacks (docs/stacks.md, "Native framing").
//!
//! ```text
//! frame = type (1 byte) | length (4 bytes, big-endian, of the body) | body (length bytes)
//! 0x01 HEADER   client, first frame of a call: UTF-8 method path, e.g.
//!               /rpcarena.bench.v1.BenchService/Unary
//! 0x02 MESSAGE  a protobuf message (client: Request; server: Response or Summary)
//! 0x03 END      client: no more requests in this call; empty body
//! 0x04 STATUS   server, last frame of a call: rpcarena.bench.v1.Status (code 0 = OK)
//! ```
//!
//! A call is `HEADER MESSAGE* END` from the client and `MESSAGE* STATUS` from the server. A body
//! longer than [`MAX_BODY`] or an unknown type is a protocol error that ends the connection (QUIC:
//! the stream), because the reader cannot tell where the next frame starts.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::Shape;
use std::io;
use tokio_util::codec::{Decoder, Encoder};

/// Bytes before a frame's body: type and length.
pub const PREFIX_LEN: usize = 5;

/// Largest body accepted: a 16 MiB payload plus room for the message's other fields.
pub const MAX_BODY: usize = super::MAX_MESSAGE;

/// The frame types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameType {
    /// 0x01: client, first frame of a call: the method path.
    Header = 0x01,
    /// 0x02: one protobuf message.
    Message = 0x02,
    /// 0x03: client, end of requests; empty body.
    End = 0x03,
    /// 0x04: server, terminal status of the call.
    Status = 0x04,
}

impl FrameType {
    fn from_byte(byte: u8) -> Option<FrameType> {
        match byte {
            0x01 => Some(FrameType::Header),
            0x02 => Some(FrameType::Message),
            0x03 => Some(FrameType::End),
            0x04 => Some(FrameType::Status),
            _ => None,
        }
    }
}

/// One received frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Its type.
    pub kind: FrameType,
    /// Its body.
    pub body: Bytes,
}

/// A frame to send; messages are encoded straight into the write buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing<M> {
    /// HEADER with a method path.
    Header(&'static str),
    /// MESSAGE with a protobuf message.
    Message(M),
    /// END.
    End,
    /// STATUS.
    Status(pb::Status),
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The transport failed.
    #[error("transport error: {0}")]
    Io(io::Error),
    /// A type byte that is not 0x01 to 0x04.
    #[error("unknown frame type {0:#04x} (expected 0x01 to 0x04)")]
    UnknownType(u8),
    /// A body longer than [`MAX_BODY`].
    #[error("frame body of {0} bytes is above the maximum {MAX_BODY}")]
    Oversized(usize),
    /// The stream ended inside a frame.
    #[error("the stream ended inside a frame ({0} bytes of it received)")]
    Truncated(usize),
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// Encodes and decodes frames (tokio-util codec, used with `FramedRead`/`FramedWrite`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameCodec;

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let Some(len) = body_len(src)? else {
            return Ok(None);
        };
        if src.len() < PREFIX_LEN + len {
            // Make room for the whole frame at once rather than growing step by step.
            src.reserve(PREFIX_LEN + len - src.len());
            return Ok(None);
        }
        let kind = FrameType::from_byte(src[0]).ok_or(FrameError::UnknownType(src[0]))?;
        src.advance(PREFIX_LEN);
        let body = src.split_to(len).freeze();
        Ok(Some(Frame { kind, body }))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => Err(FrameError::Truncated(src.len())),
        }
    }
}

/// The body length announced by the frame at the start of `src`, once its prefix is complete.
fn body_len(src: &[u8]) -> Result<Option<usize>, FrameError> {
    if src.len() < PREFIX_LEN {
        return Ok(None);
    }
    if FrameType::from_byte(src[0]).is_none() {
        return Err(FrameError::UnknownType(src[0]));
    }
    let len = u32::from_be_bytes([src[1], src[2], src[3], src[4]]) as usize;
    if len > MAX_BODY {
        return Err(FrameError::Oversized(len));
    }
    Ok(Some(len))
}

/// Whether `buffered` already holds a complete frame (so reading it needs no I/O). A server uses
/// this to flush its answers only when it would otherwise wait for input.
pub fn has_complete_frame(buffered: &[u8]) -> bool {
    matches!(body_len(buffered), Ok(Some(len)) if buffered.len() >= PREFIX_LEN + len)
        || body_len(buffered).is_err()
}

impl<M: Message> Encoder<Outgoing<M>> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, item: Outgoing<M>, dst: &mut BytesMut) -> Result<(), FrameError> {
        match item {
            Outgoing::Header(path) => put_frame(dst, FrameType::Header, path.as_bytes()),
            Outgoing::End => put_frame(dst, FrameType::End, &[]),
            Outgoing::Message(message) => put_message(dst, FrameType::Message, &message),
            Outgoing::Status(status) => put_message(dst, FrameType::Status, &status),
        }
    }
}

fn put_frame(dst: &mut BytesMut, kind: FrameType, body: &[u8]) -> Result<(), FrameError> {
    if body.len() > MAX_BODY {
        return Err(FrameError::Oversized(body.len()));
    }
    dst.reserve(PREFIX_LEN + body.len());
    dst.put_u8(kind as u8);
    dst.put_u32(body.len() as u32);
    dst.put_slice(body);
    Ok(())
}

fn put_message(
    dst: &mut BytesMut,
    kind: FrameType,
    message: &impl Message,
) -> Result<(), FrameError> {
    let len = message.encoded_len();
    if len > MAX_BODY {
        return Err(FrameError::Oversized(len));
    }
    dst.reserve(PREFIX_LEN + len);
    dst.put_u8(kind as u8);
    dst.put_u32(len as u32);
    // BytesMut grows on demand and was reserved above, so encoding cannot run out of room.
    message
        .encode(dst)
        .map_err(|e| FrameError::Io(io::Error::other(e)))
}

/// The method path of a shape, as gRPC names it.
pub fn method_path(shape: Shape) -> &'static str {
    match shape {
        Shape::Unary => "/rpcarena.bench.v1.BenchService/Unary",
        Shape::ClientStream => "/rpcarena.bench.v1.BenchService/ClientStream",
        Shape::ServerStream => "/rpcarena.bench.v1.BenchService/ServerStream",
        // pingpong drives the Bidi RPC in lock-step
        Shape::Bidi | Shape::Pingpong => "/rpcarena.bench.v1.BenchService/Bidi",
        Shape::Send => "/rpcarena.bench.v1.BenchService/Command",
    }
}

/// The shape of a method path, if it names one: one of the four RPC shapes (a server cannot tell
/// a pingpong call from a bidi call, and answers both alike).
pub fn shape_of_path(path: &[u8]) -> Option<Shape> {
    Shape::ALL
        .into_iter()
        .find(|shape| method_path(*shape).as_bytes() == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(item: Outgoing<pb::Request>) -> BytesMut {
        let mut buf = BytesMut::new();
        FrameCodec.encode(item, &mut buf).expect("encodes");
        buf
    }

    #[test]
    fn frames_have_a_type_a_big_endian_length_and_a_body() {
        let header = encode(Outgoing::Header("/x"));
        assert_eq!(&header[..], &[0x01, 0, 0, 0, 2, b'/', b'x']);
        assert_eq!(&encode(Outgoing::End)[..], &[0x03, 0, 0, 0, 0]);
        let request = pb::Request {
            seq: 1,
            ..Default::default()
        };
        let message = encode(Outgoing::Message(request.clone()));
        assert_eq!(&message[..], &[0x02, 0, 0, 0, 2, 0x08, 0x01]);
        let status = encode(Outgoing::Status(pb::Status {
            code: 3,
            message: String::new(),
        }));
        assert_eq!(&status[..], &[0x04, 0, 0, 0, 2, 0x08, 0x03]);
    }

    #[test]
    fn frames_round_trip_and_split_reads_wait_for_the_whole_frame() {
        let mut wire = BytesMut::new();
        wire.extend_from_slice(&encode(Outgoing::Header(method_path(Shape::Bidi))));
        let request = rpcarena_protocol::workload::request(
            rpcarena_protocol::workload::Payload::Zeros,
            7,
            300,
            10,
            0,
        );
        wire.extend_from_slice(&encode(Outgoing::Message(request.clone())));
        wire.extend_from_slice(&encode(Outgoing::End));
        let mut codec = FrameCodec;
        let mut input = BytesMut::new();
        let mut frames = Vec::new();
        // feed one byte at a time: every prefix must either decode a frame or ask for more
        for byte in wire.iter() {
            input.put_u8(*byte);
            while let Some(frame) = codec.decode(&mut input).expect("valid") {
                frames.push(frame);
            }
        }
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0].kind, FrameType::Header);
        assert_eq!(shape_of_path(&frames[0].body), Some(Shape::Bidi));
        assert_eq!(frames[1].kind, FrameType::Message);
        assert_eq!(
            pb::Request::decode(frames[1].body.clone()).expect("decodes"),
            request
        );
        assert_eq!(
            frames[2],
            Frame {
                kind: FrameType::End,
                body: Bytes::new()
            }
        );
        assert!(input.is_empty());
    }

    #[test]
    fn truncated_frames_are_errors_at_end_of_stream() {
        let mut codec = FrameCodec;
        let mut input = BytesMut::from(&[0x02, 0, 0, 0, 9, 1, 2][..]);
        assert!(
            codec
                .decode(&mut input)
                .expect("incomplete is fine")
                .is_none()
        );
        assert!(matches!(
            codec.decode_eof(&mut input),
            Err(FrameError::Truncated(7))
        ));
        let mut prefix_only = BytesMut::from(&[0x02, 0][..]);
        assert!(matches!(
            codec.decode_eof(&mut prefix_only),
            Err(FrameError::Truncated(2))
        ));
        let mut empty = BytesMut::new();
        assert!(codec.decode_eof(&mut empty).expect("clean end").is_none());
    }

    #[test]
    fn oversized_and_unknown_frames_are_refused_before_their_body_arrives() {
        let mut codec = FrameCodec;
        let too_long = (MAX_BODY as u32 + 1).to_be_bytes();
        let mut input =
            BytesMut::from(&[0x02, too_long[0], too_long[1], too_long[2], too_long[3]][..]);
        assert!(matches!(
            codec.decode(&mut input),
            Err(FrameError::Oversized(_))
        ));
        let mut input = BytesMut::from(&[0x09, 0, 0, 0, 0][..]);
        assert!(matches!(
            codec.decode(&mut input),
            Err(FrameError::UnknownType(0x09))
        ));
        // the largest legal body is accepted (announced length only; nothing allocated yet)
        let max = (MAX_BODY as u32).to_be_bytes();
        let mut input = BytesMut::from(&[0x02, max[0], max[1], max[2], max[3]][..]);
        assert!(codec.decode(&mut input).expect("legal length").is_none());
    }

    #[test]
    fn complete_frames_are_detected_without_consuming() {
        assert!(!has_complete_frame(&[]));
        assert!(!has_complete_frame(&[0x02, 0, 0, 0, 2, 8]));
        assert!(has_complete_frame(&[0x02, 0, 0, 0, 2, 8, 1]));
        assert!(has_complete_frame(&[0x03, 0, 0, 0, 0]));
        // a broken prefix counts as "ready": reading it reports the error without waiting
        assert!(has_complete_frame(&[0x07, 0, 0, 0, 0]));
    }

    #[test]
    fn every_shape_has_a_grpc_method_path() {
        for shape in Shape::EVERY {
            assert_eq!(
                shape_of_path(method_path(shape).as_bytes()),
                Some(shape.rpc())
            );
        }
        assert_eq!(
            method_path(Shape::Pingpong),
            "/rpcarena.bench.v1.BenchService/Bidi"
        );
        assert_eq!(shape_of_path(b"/rpcarena.bench.v1.BenchService/Nope"), None);
    }
}
