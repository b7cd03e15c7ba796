//! The workload contract: the four RPC shapes and pingpong, the messages they carry, and
//! validation.
//!
//! Validation is part of every measured operation: a client checks the sequence number, length
//! and contents (all zero) of every response, and the summary of a client stream. The server side
//! builds its answers here too, so that every Rust stack answers identically.

use crate::pb;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The shapes of an operation: the four RPCs of `BenchService`, and (revision 1.2) `pingpong`,
/// which drives the `Bidi` RPC in lock-step.
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
    /// Revision 1.2: N request/response exchanges in lock-step on one `Bidi` stream: request i
    /// is sent only after response i-1 arrived and validated.
    Pingpong,
    /// Revision 1.3: one one-way command (`Command` returning `Empty` on gRPC, a message with no
    /// reply on zmq); the server validates and counts it.
    Send,
}

impl Shape {
    /// The four RPC shapes of `BenchService`, one per method, in report order: what every peer
    /// of revisions 1.0 and 1.1 offers and a campaign's default. It leaves out
    /// [`Shape::Pingpong`], a way of driving `Bidi` (no method of its own), so code that walks
    /// the RPCs (method paths, the server's handlers) keeps walking four; code that lists every
    /// shape a peer may offer or a report may show uses [`Shape::EVERY`].
    pub const ALL: [Shape; 4] = [
        Shape::Unary,
        Shape::ClientStream,
        Shape::ServerStream,
        Shape::Bidi,
    ];

    /// Every shape, in report order: [`Shape::ALL`], then `pingpong` (revision 1.2) and `send`
    /// (revision 1.3).
    pub const EVERY: [Shape; 6] = [
        Shape::Unary,
        Shape::ClientStream,
        Shape::ServerStream,
        Shape::Bidi,
        Shape::Pingpong,
        Shape::Send,
    ];

    /// The RPC an operation of this shape calls: the shape itself, and `Bidi` for pingpong.
    pub fn rpc(&self) -> Shape {
        match self {
            Shape::Pingpong => Shape::Bidi,
            other => *other,
        }
    }

    /// The name used in campaigns, arguments and artifacts.
    pub fn as_str(&self) -> &'static str {
        match self {
            Shape::Unary => "unary",
            Shape::ClientStream => "client_stream",
            Shape::ServerStream => "server_stream",
            Shape::Bidi => "bidi",
            Shape::Pingpong => "pingpong",
            Shape::Send => "send",
        }
    }

    /// A title for reports.
    pub fn title(&self) -> &'static str {
        match self {
            Shape::Unary => "Unary",
            Shape::ClientStream => "Client stream",
            Shape::ServerStream => "Server stream",
            Shape::Bidi => "Bidirectional stream",
            Shape::Pingpong => "Ping-pong stream",
            Shape::Send => "One-way send",
        }
    }

    /// Whether the client sends a stream of requests (pingpong: one at a time).
    pub fn streams_requests(&self) -> bool {
        matches!(self, Shape::ClientStream | Shape::Bidi | Shape::Pingpong)
    }

    /// Whether the server sends a stream of responses (pingpong: one per request).
    pub fn streams_responses(&self) -> bool {
        matches!(self, Shape::ServerStream | Shape::Bidi | Shape::Pingpong)
    }

    /// Whether an operation is a one-way command, which has no response message of its own
    /// (gRPC's `Empty` acknowledges it; zmq answers nothing).
    pub fn is_one_way(&self) -> bool {
        matches!(self, Shape::Send)
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
        Shape::EVERY
            .into_iter()
            .find(|shape| shape.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown shape {s:?}; expected one of unary, client_stream, server_stream, bidi, pingpong, send"
                )
            })
    }
}

/// The kind of payload every message of a sample carries (`--payload`).
#[derive(
    Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// `payload` holds the configured number of zero bytes (the published reference's workload).
    #[default]
    Zeros,
    /// `body` holds a [`pb::Structured`] message of exactly the configured encoded size, built
    /// by [`structured`], so that encoding, decoding and validation of nested messages, strings
    /// and repeated fields are part of every operation.
    Structured,
    /// (1.4) The oRPC benchmarks' procedure, `nested.procedure_1("hello world")`, whose response
    /// carries a date: JSON stacks only (docs/peer-protocol.md "Payload kinds"), unary, sizes 0.
    /// It has no protobuf form: protobuf stacks do not list it and their peers refuse it.
    Dated,
}

impl Payload {
    /// Every kind, in report order.
    pub const ALL: [Payload; 3] = [Payload::Zeros, Payload::Structured, Payload::Dated];
    /// The kinds with a protobuf form, which every protobuf stack may carry.
    pub const PROTOBUF: [Payload; 2] = [Payload::Zeros, Payload::Structured];

    /// The name used in campaigns, arguments and capabilities.
    pub fn as_str(&self) -> &'static str {
        match self {
            Payload::Zeros => "zeros",
            Payload::Structured => "structured",
            Payload::Dated => "dated",
        }
    }

    /// Whether the kind has a protobuf form (`Request.payload_kind`): all but `dated`.
    pub fn is_protobuf(&self) -> bool {
        *self != Payload::Dated
    }

    /// Whether the workload's request and response sizes apply (`dated`'s procedure is fixed).
    pub fn takes_sizes(&self) -> bool {
        *self != Payload::Dated
    }

    /// The wire value of `Request.payload_kind`.
    pub fn to_pb(self) -> pb::PayloadKind {
        match self {
            Payload::Zeros => pb::PayloadKind::Zeros,
            Payload::Structured => pb::PayloadKind::Structured,
            Payload::Dated => unreachable!("{}", NOT_PROTOBUF),
        }
    }

    /// The kind a request asks for; an unknown wire value is refused.
    pub fn of_request(request: &pb::Request) -> Result<Payload, String> {
        match pb::PayloadKind::try_from(request.payload_kind) {
            Ok(pb::PayloadKind::Zeros) => Ok(Payload::Zeros),
            Ok(pb::PayloadKind::Structured) => Ok(Payload::Structured),
            Err(_) => Err(format!(
                "unknown payload_kind {}; expected 0 (zeros) or 1 (structured)",
                request.payload_kind
            )),
        }
    }

    /// Whether a payload of `size` bytes can be built: every size for zeros; 0 or at least 3 for
    /// structured (no message of its fields encodes to 1 or 2 bytes).
    pub fn check_size(&self, size: u32) -> Result<(), String> {
        match self {
            Payload::Structured if size == 1 || size == 2 => Err(format!(
                "a structured payload of {size} bytes cannot be built; use 0 or at least 3"
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Payload {
    type Err = String;
    fn from_str(s: &str) -> Result<Payload, String> {
        Payload::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown payload {s:?}; expected zeros, structured or dated"))
    }
}

/// (1.4) What sends a client's calls (`--client-mode`, docs/peer-protocol.md "Client modes").
#[derive(
    Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum ClientMode {
    /// Every call through the library's official client (the default).
    #[default]
    Official,
    /// The official client's captured request sent as-is by a lean client on every lane.
    Replay,
}

impl ClientMode {
    /// Both modes, official first.
    pub const ALL: [ClientMode; 2] = [ClientMode::Official, ClientMode::Replay];

    /// The name used in campaigns, arguments and capabilities.
    pub fn as_str(&self) -> &'static str {
        match self {
            ClientMode::Official => "official",
            ClientMode::Replay => "replay",
        }
    }

    /// Whether this is the default, which the controller never passes (1.3 peers still run).
    pub fn is_official(&self) -> bool {
        *self == ClientMode::Official
    }
}

impl fmt::Display for ClientMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClientMode {
    type Err = String;
    fn from_str(s: &str) -> Result<ClientMode, String> {
        ClientMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown client mode {s:?}; expected official or replay"))
    }
}

/// Why no protobuf message is ever built or checked for `dated`: the peers of protobuf stacks
/// refuse `--payload dated` before they connect.
const NOT_PROTOBUF: &str =
    "payload dated has no protobuf form: a peer refuses --payload dated on a protobuf stack";

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
    if let Some(pos) = first_nonzero(payload) {
        return Err(Invalid(format!(
            "{what}: payload byte {pos} is {:#04x}, expected zero",
            payload[pos]
        )));
    }
    Ok(())
}

/// The position of the first byte that is not zero. Every payload byte of every message is
/// checked by both sides, so the common case (all zero) ORs 8-byte words of 256-byte blocks,
/// which the compiler vectorizes (about 7 ns for 256 bytes and 0.2 us for 16 KiB here, 15 to 25
/// times faster than a byte-wise fold), and only a part that is not zero is searched byte by
/// byte.
pub fn first_nonzero(bytes: &[u8]) -> Option<usize> {
    const BLOCK: usize = 256;
    let (blocks, _) = bytes.as_chunks::<BLOCK>();
    let clean = blocks
        .iter()
        .take_while(|block| all_zero(block.as_slice()))
        .count()
        * BLOCK;
    let rest = &bytes[clean..];
    if all_zero(rest) {
        None
    } else {
        rest.iter().position(|&b| b != 0).map(|pos| clean + pos)
    }
}

/// Whether every byte is zero, a word at a time.
fn all_zero(bytes: &[u8]) -> bool {
    let (words, tail) = bytes.as_chunks::<8>();
    words
        .iter()
        .fold(0u64, |acc, word| acc | u64::from_ne_bytes(*word))
        == 0
        && tail.iter().all(|&b| b == 0)
}

/// `created_unix_ms` of a structured payload is this plus `seq mod 1e9` (a 6-byte varint for
/// every seq, like a real timestamp of our decade).
pub const STRUCTURED_EPOCH_MS: i64 = 1_700_000_000_000;

/// Bytes a length-delimited field with a body of `len` bytes takes: tag, length varint, body.
fn field_cost(len: usize) -> usize {
    1 + prost::encoding::encoded_len_varint(len as u64) + len
}

/// Item `k` of every structured payload.
fn item(k: u64) -> pb::Item {
    pb::Item {
        id: k + 1,
        name: format!("item-{k}"),
        score: (k + 1) as f64 * 0.25,
        tags: vec!["bench".to_string(), format!("tag{}", k % 10)],
    }
}

/// The structured payload of message `seq` whose encoding is exactly `size` bytes (for `size`
/// 0 or at least 3; 1 and 2 give the empty message, see [`Payload::check_size`]).
///
/// The rule is in bench.proto ("Structured generation") so that every language builds the same
/// message: base fields when they fit, then items while they fit with room for a title of at
/// least one character, then a title that fills the rest exactly.
pub fn structured(seq: u64, size: u32) -> pb::Structured {
    use prost::Message;
    let size = size as usize;
    let mut message = pb::Structured::default();
    if size < 3 {
        return message;
    }
    let seq_text = seq.to_string();
    let created = STRUCTURED_EPOCH_MS + (seq % 1_000_000_000) as i64;
    // tag + 6-byte varint, and the map entry: tag, length, key "seq" and value fields.
    let base = 1
        + prost::encoding::encoded_len_varint(created as u64)
        + field_cost(5 + 2 + seq_text.len());
    let mut used = 0;
    if base + 3 <= size {
        message.created_unix_ms = created;
        message.attributes.insert("seq".to_string(), seq_text);
        used = base;
        for k in 0.. {
            let next = item(k);
            let cost = field_cost(next.encoded_len());
            if used + cost + 3 > size {
                break;
            }
            used += cost;
            message.items.push(next);
        }
    }
    // 3 <= rest <= 128: a title of rest - 2 characters has a one-byte length prefix.
    let rest = size - used;
    message.title = (0..rest - 2)
        .map(|j| char::from(b'a' + ((seq % 26 + j as u64 % 26) % 26) as u8))
        .collect();
    debug_assert_eq!(message.encoded_len(), size);
    message
}

/// The encoding of `structured(1, 64)` in field-number order, as docs/peer-protocol.md quotes it:
/// title "bcdefghijkl", created_unix_ms, one item, attributes {"seq": "1"}.
pub const STRUCTURED_1_64_HEX: &str = "0a0b62636465666768696a6b6c1081d095ffbc311a20080112066974656d2d3019000000000000d03f220562656e636822047461673022080a03736571120131";

/// Checks a structured payload: its encoded size and every field against [`structured`].
pub fn check_structured(
    what: &str,
    body: Option<&pb::Structured>,
    seq: u64,
    size: u32,
) -> Result<(), Invalid> {
    use prost::Message;
    let empty = pb::Structured::default();
    let body = body.unwrap_or(&empty);
    let len = body.encoded_len();
    if len != size as usize {
        return Err(Invalid(format!(
            "{what}: structured payload encodes to {len} bytes but {size} was requested"
        )));
    }
    let expected = structured(seq, size);
    if *body == expected {
        return Ok(());
    }
    let field = if body.title != expected.title {
        "title".to_string()
    } else if body.created_unix_ms != expected.created_unix_ms {
        "created_unix_ms".to_string()
    } else if body.attributes != expected.attributes {
        "attributes".to_string()
    } else {
        let k = body
            .items
            .iter()
            .zip(&expected.items)
            .position(|(got, want)| got != want)
            .unwrap_or(body.items.len().min(expected.items.len()));
        format!("items[{k}]")
    };
    Err(Invalid(format!(
        "{what}: structured payload differs from the one generated for seq {seq} and {size} bytes in {field}"
    )))
}

/// The payload length of a message: its zero bytes plus the encoded length of its structured
/// body (one of the two is empty).
pub fn payload_len(payload: &[u8], body: Option<&pb::Structured>) -> u64 {
    use prost::Message;
    payload.len() as u64 + body.map_or(0, |b| b.encoded_len() as u64)
}

/// The payload length of a request as the summary counts it (see [`payload_len`]).
pub fn request_payload_len(request: &pb::Request) -> u64 {
    payload_len(&request.payload, request.body.as_ref())
}

/// Checks one response: its sequence number and payload.
pub fn check_response(
    response: &pb::Response,
    kind: Payload,
    expected_seq: u64,
    response_size: u32,
) -> Result<(), Invalid> {
    if response.seq != expected_seq {
        return Err(Invalid(format!(
            "response seq {} but {expected_seq} was expected",
            response.seq
        )));
    }
    check_body(
        "response",
        kind,
        &response.payload,
        response.body.as_ref(),
        expected_seq,
        response_size,
    )
}

fn check_body(
    what: &str,
    kind: Payload,
    payload: &[u8],
    body: Option<&pb::Structured>,
    seq: u64,
    size: u32,
) -> Result<(), Invalid> {
    match kind {
        Payload::Zeros => {
            if body.is_some() {
                return Err(Invalid(format!(
                    "{what}: a structured body where zero bytes were requested"
                )));
            }
            check_payload(what, payload, size)
        }
        Payload::Structured => {
            if !payload.is_empty() {
                return Err(Invalid(format!(
                    "{what}: {} payload bytes where a structured body was requested",
                    payload.len()
                )));
            }
            check_structured(what, body, seq, size)
        }
        Payload::Dated => Err(Invalid(format!("{what}: {NOT_PROTOBUF}"))),
    }
}

/// Checks a client stream's summary against what the client sent.
pub fn check_summary(
    summary: &pb::Summary,
    kind: Payload,
    messages: u32,
    request_size: u32,
    response_size: u32,
) -> Result<(), Invalid> {
    check_stream_summary(
        summary,
        kind,
        u64::from(messages),
        request_size,
        response_size,
    )
}

/// [`check_summary`] for a stream of any length (send-saturation streams send until the
/// deadline, so their count is only known at the end).
pub fn check_stream_summary(
    summary: &pb::Summary,
    kind: Payload,
    messages: u64,
    request_size: u32,
    response_size: u32,
) -> Result<(), Invalid> {
    check_summary_counts(summary, messages, request_size)?;
    check_body(
        "summary",
        kind,
        &summary.payload,
        summary.body.as_ref(),
        summary.last_seq,
        response_size,
    )
}

/// Checks a summary's count, payload bytes and last seq against `messages` requests of
/// `request_size` with seq 0..messages-1.
pub fn check_summary_counts(
    summary: &pb::Summary,
    messages: u64,
    request_size: u32,
) -> Result<(), Invalid> {
    let expected_bytes = messages * u64::from(request_size);
    if summary.count != messages {
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
    if messages > 0 && summary.last_seq != messages - 1 {
        return Err(Invalid(format!(
            "summary last seq {} but {} was sent last",
            summary.last_seq,
            messages - 1
        )));
    }
    Ok(())
}

/// A request message with a payload of `kind`.
pub fn request(
    kind: Payload,
    seq: u64,
    request_size: u32,
    response_size: u32,
    response_messages: u32,
) -> pb::Request {
    let (payload, body) = match kind {
        Payload::Zeros => (payload(request_size), None),
        Payload::Structured => (Vec::new(), Some(structured(seq, request_size))),
        Payload::Dated => unreachable!("{}", NOT_PROTOBUF),
    };
    pb::Request {
        seq,
        response_size,
        response_messages,
        payload,
        body,
        payload_kind: kind.to_pb() as i32,
    }
}

/// The server's answer to a unary or bidi request, or the `index`-th message of a server stream,
/// with a payload of the kind the request asks for (zeros if it names an unknown kind; servers
/// refuse those earlier).
pub fn response_to(request: &pb::Request, seq: u64) -> pb::Response {
    match Payload::of_request(request).unwrap_or_default() {
        Payload::Zeros => pb::Response {
            seq,
            payload: payload(request.response_size),
            body: None,
        },
        Payload::Structured => pb::Response {
            seq,
            payload: Vec::new(),
            body: Some(structured(seq, request.response_size)),
        },
        Payload::Dated => unreachable!("of_request never gives dated: {}", NOT_PROTOBUF),
    }
}

/// The server's running tally of a client stream.
#[derive(Debug, Default, Clone)]
pub struct SummaryBuilder {
    count: u64,
    payload_bytes: u64,
    last_seq: u64,
    response_size: u32,
    kind: Payload,
}

impl SummaryBuilder {
    /// Adds one received request.
    pub fn add(&mut self, request: &pb::Request) {
        if self.count == 0 {
            self.response_size = request.response_size;
            self.kind = Payload::of_request(request).unwrap_or_default();
        }
        self.count += 1;
        self.payload_bytes += request_payload_len(request);
        self.last_seq = request.seq;
    }

    /// Requests added so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The summary to send when the stream ends.
    pub fn finish(&self) -> pb::Summary {
        let (payload, body) = match self.kind {
            Payload::Zeros => (payload(self.response_size), None),
            Payload::Structured => (
                Vec::new(),
                Some(structured(self.last_seq, self.response_size)),
            ),
            Payload::Dated => unreachable!("of_request never gives dated: {}", NOT_PROTOBUF),
        };
        pb::Summary {
            count: self.count,
            payload_bytes: self.payload_bytes,
            last_seq: self.last_seq,
            payload,
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_count_messages() {
        for shape in Shape::EVERY {
            assert_eq!(shape.as_str().parse::<Shape>(), Ok(shape));
            let json = serde_json::to_string(&shape).unwrap();
            assert_eq!(json, format!("\"{shape}\""));
        }
        assert_eq!(Shape::EVERY[..4], Shape::ALL);
        assert!(!Shape::ALL.contains(&Shape::Pingpong));
        assert!(
            "ping_pong"
                .parse::<Shape>()
                .unwrap_err()
                .contains("pingpong")
        );
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
        // pingpong's accounting is bidi's, on bidi's RPC
        assert_eq!(Shape::Pingpong.requests_per_op(7), 7);
        assert_eq!(Shape::Pingpong.responses_per_op(7), 7);
        assert_eq!(Shape::Pingpong.rpc(), Shape::Bidi);
        for shape in Shape::ALL {
            assert_eq!(shape.rpc(), shape);
        }
    }

    #[test]
    fn responses_are_checked_for_seq_length_and_contents() {
        let req = request(Payload::Zeros, 5, 16, 32, 0);
        let good = response_to(&req, 5);
        assert_eq!(check_response(&good, Payload::Zeros, 5, 32), Ok(()));
        assert!(
            check_response(&good, Payload::Zeros, 6, 32)
                .unwrap_err()
                .0
                .contains("seq 5")
        );
        assert!(
            check_response(&good, Payload::Zeros, 5, 31)
                .unwrap_err()
                .0
                .contains("length 32")
        );
        let mut dirty = good.clone();
        dirty.payload[7] = 1;
        assert!(
            check_response(&dirty, Payload::Zeros, 5, 32)
                .unwrap_err()
                .0
                .contains("byte 7")
        );
    }

    #[test]
    fn the_first_nonzero_byte_is_found_in_blocks_and_in_the_remainder() {
        assert_eq!(first_nonzero(&[]), None);
        for len in [1usize, 7, 63, 64, 65, 200, 255, 256, 257, 600, 4096] {
            assert_eq!(first_nonzero(&vec![0; len]), None, "{len}");
            for pos in [0, len / 2, len - 1] {
                let mut bytes = vec![0; len];
                bytes[pos] = 0x80;
                if pos + 1 < len {
                    bytes[len - 1] = 1;
                }
                assert_eq!(first_nonzero(&bytes), Some(pos), "{len} {pos}");
            }
        }
    }

    #[test]
    fn summaries_are_checked() {
        let mut tally = SummaryBuilder::default();
        for seq in 0..4 {
            tally.add(&request(Payload::Zeros, seq, 10, 3, 0));
        }
        let summary = tally.finish();
        assert_eq!(check_summary(&summary, Payload::Zeros, 4, 10, 3), Ok(()));
        assert!(check_summary(&summary, Payload::Zeros, 5, 10, 3).is_err());
        assert!(check_summary(&summary, Payload::Zeros, 4, 11, 3).is_err());
        assert!(check_summary(&summary, Payload::Zeros, 4, 10, 4).is_err());
    }

    #[test]
    fn payload_kinds_parse_and_refuse_unbuildable_sizes() {
        for kind in Payload::ALL {
            assert_eq!(kind.as_str().parse::<Payload>(), Ok(kind));
        }
        assert!(
            "json"
                .parse::<Payload>()
                .unwrap_err()
                .contains("structured")
        );
        assert!(Payload::Zeros.check_size(1).is_ok());
        assert!(Payload::Structured.check_size(0).is_ok());
        assert!(Payload::Structured.check_size(1).is_err());
        assert!(Payload::Structured.check_size(2).is_err());
        assert!(Payload::Structured.check_size(3).is_ok());
        let mut req = request(Payload::Structured, 1, 10, 10, 0);
        assert_eq!(Payload::of_request(&req), Ok(Payload::Structured));
        req.payload_kind = 7;
        assert!(
            Payload::of_request(&req)
                .unwrap_err()
                .contains("payload_kind 7")
        );
    }

    #[test]
    fn structured_payloads_encode_to_exactly_the_requested_size() {
        use prost::Message;
        let sizes = (0..600u32)
            .chain([1_000, 4_096, 16_384, 65_536, 1 << 20])
            .filter(|s| *s != 1 && *s != 2);
        for size in sizes {
            for seq in [0, 7, 123_456_789, u64::MAX] {
                let body = structured(seq, size);
                assert_eq!(body.encoded_len(), size as usize, "seq {seq} size {size}");
                assert_eq!(check_structured("x", Some(&body), seq, size), Ok(()));
            }
        }
        // the largest payload, 16 MiB, too
        let big = structured(3, 16 * 1024 * 1024);
        assert_eq!(big.encoded_len(), 16 * 1024 * 1024);
        assert!(big.items.len() > 100_000);
    }

    #[test]
    fn structured_generation_follows_the_documented_rule() {
        let body = structured(27, 200);
        // base: created_unix_ms and attributes {"seq": "27"}
        assert_eq!(body.created_unix_ms, 1_700_000_000_027);
        assert_eq!(body.attributes.get("seq").map(String::as_str), Some("27"));
        assert_eq!(body.items[0].id, 1);
        assert_eq!(body.items[0].name, "item-0");
        assert_eq!(body.items[0].score, 0.25);
        assert_eq!(body.items[0].tags, vec!["bench", "tag0"]);
        assert_eq!(body.items[3].name, "item-3");
        assert_eq!(body.items[3].score, 1.0);
        // the title starts at letter 27 mod 26 = 'b'
        assert!(body.title.starts_with("bcde"), "{}", body.title);
        assert!(!body.title.is_empty() && body.title.len() <= 126);
        // too small for the base: a title alone (3 bytes: tag, length, one letter)
        let tiny = structured(0, 3);
        assert_eq!(tiny.title, "a");
        assert!(tiny.items.is_empty() && tiny.attributes.is_empty());
        assert_eq!(structured(9, 0), pb::Structured::default());
        // the exact bytes of a small one are fixed (Go and JavaScript peers test against them)
        use prost::Message;
        let bytes = structured(1, 64).encode_to_vec();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, STRUCTURED_1_64_HEX);
    }

    #[test]
    fn structured_responses_are_validated_exactly() {
        let req = request(Payload::Structured, 42, 64, 300, 0);
        assert!(req.payload.is_empty());
        let good = response_to(&req, 42);
        assert_eq!(check_response(&good, Payload::Structured, 42, 300), Ok(()));
        // a response generated for another seq has the right size but other contents
        let other = response_to(&req, 43);
        let err = check_response(
            &pb::Response { seq: 42, ..other },
            Payload::Structured,
            42,
            300,
        )
        .unwrap_err();
        assert!(err.0.contains("differs"), "{err}");
        let mut tampered = good.clone();
        if let Some(body) = tampered.body.as_mut() {
            body.items[1].score += 1.0;
        }
        let err = check_response(&tampered, Payload::Structured, 42, 300).unwrap_err();
        assert!(err.0.contains("items[1]"), "{err}");
        let mut renamed = good.clone();
        if let Some(body) = renamed.body.as_mut() {
            body.title.replace_range(0..1, "z");
        }
        let err = check_response(&renamed, Payload::Structured, 42, 300).unwrap_err();
        assert!(err.0.contains("title"), "{err}");
        // zero bytes where a structured body was asked for, and the reverse
        let zeros = response_to(&request(Payload::Zeros, 42, 1, 300, 0), 42);
        assert!(check_response(&zeros, Payload::Structured, 42, 300).is_err());
        assert!(check_response(&good, Payload::Zeros, 42, 300).is_err());
        // a truncated body reports its size
        let mut short = good.clone();
        if let Some(body) = short.body.as_mut() {
            body.items.pop();
        }
        let err = check_response(&short, Payload::Structured, 42, 300).unwrap_err();
        assert!(err.0.contains("encodes to"), "{err}");
    }

    #[test]
    fn structured_summaries_count_encoded_lengths() {
        let mut tally = SummaryBuilder::default();
        for seq in 0..5 {
            tally.add(&request(Payload::Structured, seq, 100, 50, 0));
        }
        let summary = tally.finish();
        assert_eq!(summary.payload_bytes, 500);
        assert_eq!(
            check_summary(&summary, Payload::Structured, 5, 100, 50),
            Ok(())
        );
        assert!(check_summary(&summary, Payload::Zeros, 5, 100, 50).is_err());
    }
}
