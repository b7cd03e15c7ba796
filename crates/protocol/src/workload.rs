//! The workload contract: the four RPC shapes, the messages they carry, and validation.
//!
//! Validation is part of every measured operation: a client checks the sequence number, length
//! and contents (all zero) of every response, and the summary of a client stream. The server side
//! builds its answers here too, so that every Rust stack answers identically.

use crate::pb;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The four RPC shapes of `BenchService`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// One request, one response.
    Unary,
    /// N requests, one summary.
    ClientStream,
    /// One request, N responses.
    ServerStream,
    /// N requests and N responses, full duplex.
    Bidi,
}

impl Shape {
    /// Every shape, in report order.
    pub const ALL: [Shape; 4] = [
        Shape::Unary,
        Shape::ClientStream,
        Shape::ServerStream,
        Shape::Bidi,
    ];

    /// The name used in campaigns, arguments and artifacts.
    pub fn as_str(&self) -> &'static str {
        match self {
            Shape::Unary => "unary",
            Shape::ClientStream => "client_stream",
            Shape::ServerStream => "server_stream",
            Shape::Bidi => "bidi",
        }
    }

    /// A title for reports.
    pub fn title(&self) -> &'static str {
        match self {
            Shape::Unary => "Unary",
            Shape::ClientStream => "Client stream",
            Shape::ServerStream => "Server stream",
            Shape::Bidi => "Bidirectional stream",
        }
    }

    /// Whether the client sends a stream of requests.
    pub fn streams_requests(&self) -> bool {
        matches!(self, Shape::ClientStream | Shape::Bidi)
    }

    /// Whether the server sends a stream of responses.
    pub fn streams_responses(&self) -> bool {
        matches!(self, Shape::ServerStream | Shape::Bidi)
    }

    /// Request messages in one operation.
    pub fn requests_per_op(&self, messages_per_stream: u32) -> u64 {
        if self.streams_requests() {
            u64::from(messages_per_stream)
        } else {
            1
        }
    }

    /// Response messages in one operation (a client stream's summary counts as one).
    pub fn responses_per_op(&self, messages_per_stream: u32) -> u64 {
        if self.streams_responses() {
            u64::from(messages_per_stream)
        } else {
            1
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Shape, String> {
        Shape::ALL
            .into_iter()
            .find(|shape| shape.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown shape {s:?}; expected one of unary, client_stream, server_stream, bidi"
                )
            })
    }
}

/// A response that does not match what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// A zero-filled payload of `len` bytes.
pub fn payload(len: u32) -> Vec<u8> {
    vec![0; len as usize]
}

/// Checks a payload's length and that every byte is zero.
pub fn check_payload(what: &str, payload: &[u8], expected_len: u32) -> Result<(), Invalid> {
    if payload.len() != expected_len as usize {
        return Err(Invalid(format!(
            "{what}: payload length {} but {expected_len} was requested",
            payload.len()
        )));
    }
    if let Some(pos) = payload.iter().position(|&b| b != 0) {
        return Err(Invalid(format!(
            "{what}: payload byte {pos} is {:#04x}, expected zero",
            payload[pos]
        )));
    }
    Ok(())
}

/// Checks one response: its sequence number and payload.
pub fn check_response(
    response: &pb::Response,
    expected_seq: u64,
    response_size: u32,
) -> Result<(), Invalid> {
    if response.seq != expected_seq {
        return Err(Invalid(format!(
            "response seq {} but {expected_seq} was expected",
            response.seq
        )));
    }
    check_payload("response", &response.payload, response_size)
}

/// Checks a client stream's summary against what the client sent.
pub fn check_summary(
    summary: &pb::Summary,
    messages: u32,
    request_size: u32,
    response_size: u32,
) -> Result<(), Invalid> {
    let expected_bytes = u64::from(messages) * u64::from(request_size);
    if summary.count != u64::from(messages) {
        return Err(Invalid(format!(
            "summary counts {} messages but {messages} were sent",
            summary.count
        )));
    }
    if summary.payload_bytes != expected_bytes {
        return Err(Invalid(format!(
            "summary counts {} payload bytes but {expected_bytes} were sent",
            summary.payload_bytes
        )));
    }
    if messages > 0 && summary.last_seq != u64::from(messages - 1) {
        return Err(Invalid(format!(
            "summary last seq {} but {} was sent last",
            summary.last_seq,
            messages - 1
        )));
    }
    check_payload("summary", &summary.payload, response_size)
}

/// A request message.
pub fn request(
    seq: u64,
    request_size: u32,
    response_size: u32,
    response_messages: u32,
) -> pb::Request {
    pb::Request {
        seq,
        response_size,
        response_messages,
        payload: payload(request_size),
    }
}

/// The server's answer to a unary or bidi request, or the `index`-th message of a server stream.
pub fn response_to(request: &pb::Request, seq: u64) -> pb::Response {
    pb::Response {
        seq,
        payload: payload(request.response_size),
    }
}

/// The server's running tally of a client stream.
#[derive(Debug, Default, Clone)]
pub struct SummaryBuilder {
    count: u64,
    payload_bytes: u64,
    last_seq: u64,
    response_size: u32,
}

impl SummaryBuilder {
    /// Adds one received request.
    pub fn add(&mut self, request: &pb::Request) {
        if self.count == 0 {
            self.response_size = request.response_size;
        }
        self.count += 1;
        self.payload_bytes += request.payload.len() as u64;
        self.last_seq = request.seq;
    }

    /// The summary to send when the stream ends.
    pub fn finish(&self) -> pb::Summary {
        pb::Summary {
            count: self.count,
            payload_bytes: self.payload_bytes,
            last_seq: self.last_seq,
            payload: payload(self.response_size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_count_messages() {
        for shape in Shape::ALL {
            assert_eq!(shape.as_str().parse::<Shape>(), Ok(shape));
        }
        assert!(
            "stream"
                .parse::<Shape>()
                .unwrap_err()
                .contains("client_stream")
        );
        assert_eq!(Shape::Unary.requests_per_op(128), 1);
        assert_eq!(Shape::ClientStream.requests_per_op(128), 128);
        assert_eq!(Shape::ClientStream.responses_per_op(128), 1);
        assert_eq!(Shape::ServerStream.responses_per_op(128), 128);
        assert_eq!(Shape::Bidi.requests_per_op(7), 7);
        assert_eq!(Shape::Bidi.responses_per_op(7), 7);
    }

    #[test]
    fn responses_are_checked_for_seq_length_and_contents() {
        let req = request(5, 16, 32, 0);
        let good = response_to(&req, 5);
        assert_eq!(check_response(&good, 5, 32), Ok(()));
        assert!(
            check_response(&good, 6, 32)
                .unwrap_err()
                .0
                .contains("seq 5")
        );
        assert!(
            check_response(&good, 5, 31)
                .unwrap_err()
                .0
                .contains("length 32")
        );
        let mut dirty = good.clone();
        dirty.payload[7] = 1;
        assert!(
            check_response(&dirty, 5, 32)
                .unwrap_err()
                .0
                .contains("byte 7")
        );
    }

    #[test]
    fn summaries_are_checked() {
        let mut tally = SummaryBuilder::default();
        for seq in 0..4 {
            tally.add(&request(seq, 10, 3, 0));
        }
        let summary = tally.finish();
        assert_eq!(check_summary(&summary, 4, 10, 3), Ok(()));
        assert!(check_summary(&summary, 5, 10, 3).is_err());
        assert!(check_summary(&summary, 4, 11, 3).is_err());
        assert!(check_summary(&summary, 4, 10, 4).is_err());
    }
}
