//! The server's validation duty (docs/peer-protocol.md, "Validation duties"), as a sans-IO core
//! every server stack feeds with the requests of one call.
//!
//! A server checks every request before it answers it, so that every peer does the same checking
//! work and a malformed request never makes a server allocate without bound:
//!
//! - the payload kind is 0 (zeros) or 1 (structured); zeros: no `body`, every `payload` byte is
//!   zero; structured: no `payload` bytes, and `body` equals `Structured(seq, L)` where L is the
//!   encoded length of the received body (not 1 or 2);
//! - streams (client stream, bidi): the k-th request has seq k, and every request has the payload
//!   kind, payload length and `response_size` of the first; at least one request arrives before
//!   the client ends its stream;
//! - ranges: `response_size` at most 16 MiB, not 1 or 2 for structured; a server stream's
//!   `response_messages` from 1 to 1,000,000.
//!
//! A request that fails is answered with INVALID_ARGUMENT and the message this module returns,
//! which names the request's index in the call and what was wrong (`request 5: seq 7, expected 5`).

use crate::args::{MAX_MESSAGES, MAX_PAYLOAD};
use prost::Message;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{Payload, Shape, check_structured, first_nonzero};

/// What every later request of a stream must repeat from the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct First {
    kind: Payload,
    len: u64,
    response_size: u32,
}

/// The checks of one call's requests, in arrival order.
#[derive(Debug, Clone)]
pub struct RequestCheck {
    shape: Shape,
    received: u64,
    first: Option<First>,
}

impl RequestCheck {
    /// A call of `shape` with no request yet.
    pub fn new(shape: Shape) -> RequestCheck {
        RequestCheck {
            shape,
            received: 0,
            first: None,
        }
    }

    /// Checks the next request of the call; the error is the status message to answer with.
    pub fn check(&mut self, request: &pb::Request) -> Result<(), String> {
        let index = self.received;
        self.received += 1;
        self.check_at(index, request)
            .map_err(|detail| format!("request {index}: {detail}"))
    }

    /// The call's request stream has ended: a client stream or bidi call must have carried at
    /// least one request (unary and server-stream framing is the transport's business).
    pub fn finish(&self) -> Result<(), String> {
        if self.received == 0 && self.shape.streams_requests() {
            Err(format!(
                "a {} call carries at least one request, got none",
                self.shape
            ))
        } else {
            Ok(())
        }
    }

    /// Checks a whole call's requests at once (tests and tools; servers check as requests
    /// arrive).
    pub fn check_call(shape: Shape, requests: &[pb::Request]) -> Result<(), String> {
        let mut check = RequestCheck::new(shape);
        for request in requests {
            check.check(request)?;
        }
        check.finish()
    }

    fn check_at(&mut self, index: u64, request: &pb::Request) -> Result<(), String> {
        let kind = Payload::of_request(request)?;
        let len = payload_len(kind, request)?;
        check_ranges(self.shape, kind, request)?;
        if !self.shape.streams_requests() {
            return Ok(());
        }
        if request.seq != index {
            return Err(format!("seq {}, expected {index}", request.seq));
        }
        let this = First {
            kind,
            len,
            response_size: request.response_size,
        };
        match self.first {
            None => self.first = Some(this),
            Some(first) if first == this => {}
            Some(first) => return Err(differs(&first, &this)),
        }
        Ok(())
    }
}

/// Checks the payload of a request of `kind` and returns its length (zero bytes, or the encoded
/// length of the structured body).
fn payload_len(kind: Payload, request: &pb::Request) -> Result<u64, String> {
    match kind {
        Payload::Zeros => {
            if request.body.is_some() {
                return Err("a structured body in a zeros request (payload_kind 0)".to_string());
            }
            if let Some(pos) = first_nonzero(&request.payload) {
                return Err(format!(
                    "payload byte {pos} is {:#04x}, expected zero",
                    request.payload[pos]
                ));
            }
            Ok(request.payload.len() as u64)
        }
        Payload::Structured => {
            if !request.payload.is_empty() {
                return Err(format!(
                    "{} payload bytes beside a structured body (payload_kind 1 carries none)",
                    request.payload.len()
                ));
            }
            let len = request.body.as_ref().map_or(0, |body| body.encoded_len());
            if len == 1 || len == 2 {
                return Err(format!(
                    "a structured body of {len} bytes, a size no generated payload has"
                ));
            }
            // The length came from the body itself, so it fits: at most one message.
            let size = u32::try_from(len).unwrap_or(u32::MAX);
            check_structured("body", request.body.as_ref(), request.seq, size).map_err(|e| e.0)?;
            Ok(len as u64)
        }
        // Payload::of_request gives only protobuf kinds.
        Payload::Dated => Err("payload_kind dated has no protobuf form".to_string()),
    }
}

/// `response_size` and `response_messages` within the protocol's ranges.
fn check_ranges(shape: Shape, kind: Payload, request: &pb::Request) -> Result<(), String> {
    if request.response_size > MAX_PAYLOAD {
        return Err(format!(
            "response_size {} is above the maximum {MAX_PAYLOAD}",
            request.response_size
        ));
    }
    kind.check_size(request.response_size)
        .map_err(|e| format!("response_size: {e}"))?;
    if shape == Shape::Send && request.response_size != 0 {
        return Err(format!(
            "response_size {}: a command (shape send) has no response, expected 0",
            request.response_size
        ));
    }
    if shape == Shape::ServerStream && !(1..=MAX_MESSAGES).contains(&request.response_messages) {
        return Err(format!(
            "response_messages {} is outside 1..={MAX_MESSAGES}",
            request.response_messages
        ));
    }
    Ok(())
}

fn differs(first: &First, this: &First) -> String {
    if this.kind != first.kind {
        format!(
            "payload kind {}, but request 0 has {}",
            this.kind, first.kind
        )
    } else if this.len != first.len {
        format!(
            "payload length {}, but request 0 has {}",
            this.len, first.len
        )
    } else {
        format!(
            "response_size {}, but request 0 has {}",
            this.response_size, first.response_size
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::workload::request;

    fn zeros(seq: u64, size: u32, response_size: u32) -> pb::Request {
        request(Payload::Zeros, seq, size, response_size, 0)
    }

    fn checked(shape: Shape, requests: &[pb::Request]) -> Result<(), String> {
        RequestCheck::check_call(shape, requests)
    }

    #[test]
    fn well_formed_calls_of_every_shape_and_kind_pass() {
        for kind in Payload::PROTOBUF {
            let stream: Vec<_> = (0..5).map(|i| request(kind, i, 64, 300, 0)).collect();
            assert_eq!(checked(Shape::ClientStream, &stream), Ok(()));
            assert_eq!(checked(Shape::Bidi, &stream), Ok(()));
            // unary and server-stream seqs are operation numbers the server only echoes
            assert_eq!(
                checked(Shape::Unary, &[request(kind, 77, 64, 300, 0)]),
                Ok(())
            );
            assert_eq!(
                checked(Shape::ServerStream, &[request(kind, 9, 0, 0, 1_000_000)]),
                Ok(())
            );
        }
        // the empty structured body (size 0) is the empty message, and an absent body is too
        let mut empty = request(Payload::Structured, 3, 0, 0, 0);
        assert_eq!(checked(Shape::Unary, std::slice::from_ref(&empty)), Ok(()));
        empty.body = None;
        assert_eq!(checked(Shape::Unary, &[empty]), Ok(()));
    }

    #[test]
    fn payload_faults_are_named_with_the_request_index() {
        let mut dirty = zeros(1, 256, 8);
        dirty.payload[200] = 1;
        let stream = [zeros(0, 256, 8), dirty];
        assert_eq!(
            checked(Shape::Bidi, &stream),
            Err("request 1: payload byte 200 is 0x01, expected zero".to_string())
        );
        let mut with_body = zeros(0, 4, 8);
        with_body.body = Some(rpcarena_protocol::workload::structured(0, 10));
        assert!(
            checked(Shape::Unary, &[with_body])
                .unwrap_err()
                .contains("structured body")
        );
        let mut unknown = zeros(0, 4, 8);
        unknown.payload_kind = 2;
        assert!(
            checked(Shape::Unary, &[unknown])
                .unwrap_err()
                .contains("payload_kind 2")
        );

        let mut corrupt = request(Payload::Structured, 4, 100, 8, 0);
        if let Some(body) = corrupt.body.as_mut() {
            body.created_unix_ms += 1;
        }
        let error = checked(Shape::Unary, &[corrupt]).unwrap_err();
        assert!(
            error.starts_with("request 0: ") && error.contains("created_unix_ms"),
            "{error}"
        );
        let mut beside = request(Payload::Structured, 0, 100, 8, 0);
        beside.payload = vec![0];
        assert!(
            checked(Shape::Unary, &[beside])
                .unwrap_err()
                .contains("beside")
        );
        // a body of 2 bytes is no generated payload
        let mut tiny = request(Payload::Structured, 0, 0, 8, 0);
        tiny.body = Some(pb::Structured {
            created_unix_ms: 1,
            ..Default::default()
        });
        assert!(
            checked(Shape::Unary, &[tiny])
                .unwrap_err()
                .contains("2 bytes")
        );
    }

    #[test]
    fn streams_must_count_from_zero_and_keep_their_first_requests_shape() {
        let out_of_order: Vec<_> = [0, 2, 1].iter().map(|&s| zeros(s, 8, 8)).collect();
        assert_eq!(
            checked(Shape::ClientStream, &out_of_order),
            Err("request 1: seq 2, expected 1".to_string())
        );
        assert_eq!(
            checked(Shape::Bidi, &[zeros(1, 8, 8)]),
            Err("request 0: seq 1, expected 0".to_string())
        );
        let longer = [zeros(0, 8, 8), zeros(1, 9, 8)];
        assert_eq!(
            checked(Shape::Bidi, &longer),
            Err("request 1: payload length 9, but request 0 has 8".to_string())
        );
        let other_response = [zeros(0, 8, 8), zeros(1, 8, 16)];
        assert!(
            checked(Shape::ClientStream, &other_response)
                .unwrap_err()
                .contains("response_size 16, but request 0 has 8")
        );
        let other_kind = [zeros(0, 8, 8), request(Payload::Structured, 1, 8, 8, 0)];
        assert!(
            checked(Shape::Bidi, &other_kind)
                .unwrap_err()
                .contains("payload kind structured, but request 0 has zeros")
        );
        for shape in [Shape::ClientStream, Shape::Bidi] {
            assert!(
                checked(shape, &[])
                    .unwrap_err()
                    .contains("at least one request")
            );
        }
        assert_eq!(RequestCheck::new(Shape::Unary).finish(), Ok(()));
    }

    #[test]
    fn ranges_are_refused() {
        let too_large = zeros(0, 1, MAX_PAYLOAD + 1);
        assert!(
            checked(Shape::Unary, &[too_large])
                .unwrap_err()
                .contains("above the maximum")
        );
        assert_eq!(checked(Shape::Unary, &[zeros(0, 1, MAX_PAYLOAD)]), Ok(()));
        let unbuildable = request(Payload::Structured, 0, 3, 2, 0);
        assert!(
            checked(Shape::Unary, &[unbuildable])
                .unwrap_err()
                .contains("response_size")
        );
        for messages in [0, MAX_MESSAGES + 1] {
            let request = request(Payload::Zeros, 0, 1, 1, messages);
            assert!(
                checked(Shape::ServerStream, &[request])
                    .unwrap_err()
                    .contains("response_messages"),
                "{messages}"
            );
        }
    }
}
