//! Conformance faults: deliberate misbehaviour for `rpcarena conformance`, never for measuring.
//!
//! The conformance kit (docs/peer-protocol.md, "Conformance") checks another peer's validation
//! duty by pairing it with a Rust peer that breaks the protocol in exactly one way. The modes are
//! not in `capabilities` and not in `--help`; they are switched on only by the explicit argument
//! `--conformance-fault MODE` (no environment variable, no campaign setting can do it), and a
//! peer running one says so on stderr.
//!
//! # Server modes (`server ... --conformance-fault MODE`)
//!
//! The server misbehaves on **every** call, on every stack (grpc, quic, tcp) and shape, so the
//! client under test must fail its validation operation (phase `validate`) with the code given
//! here (docs/peer-protocol.md, "Error codes"). It still checks every request first (except in
//! `skip-validation`). It reads a call's whole request stream before it answers, except a bidi
//! call, which it answers request by request as each arrives ([`bidi_request`], [`bidi_end`]):
//! a pingpong client (revision 1.2) sends request i+1 only after response i, and a server cannot
//! tell its call from a bidi call. So on bidi the modes that take a response away or end the call
//! early do it at the first request, as the table says.
//!
//! | mode | what the server does | client's code |
//! |---|---|---|
//! | `wrong-seq` | every response's `seq` is one more than it should be (client stream: the summary's `last_seq`) | `invalid` |
//! | `short-payload` | every response payload is one byte short (zeros: one zero byte fewer; structured: the title one letter shorter); an empty payload gets one byte instead | `invalid` |
//! | `nonzero-byte` | zeros: the last payload byte of every response is 0x01 (an empty payload becomes the one byte 0x01); structured: a payload byte 0x01 beside the body | `invalid` |
//! | `wrong-summary` | client stream: the summary's `count` is one more than received; other shapes: status INTERNAL saying the mode applies to client streams only | `invalid` (`rpc` for other shapes) |
//! | `missing-message` | one response fewer: none for unary, no summary for a client stream, N-1 for server streams; bidi: status OK instead of the first response | `invalid` |
//! | `extra-message` | one response more: a unary response or a summary twice, a server stream's response N, bidi's response with the last seq + 1 (after the client's END); then status OK | `invalid` |
//! | `early-status` | quic, tcp: STATUS OK before the last response, which follows the STATUS (data after STATUS; bidi: before the first response). grpc: the trailers (status OK) end the stream, so nothing can follow them: the last response is left out, as with `missing-message` | `invalid` |
//! | `error-status` | status INTERNAL (13) instead of any response (bidi: at the first request) | `rpc` |
//! | `corrupt-structured` | structured: one field of every body changed, its size kept (`created_unix_ms` + 1, or the title's first letter; an empty body becomes a 3-byte one); zeros: a structured body beside the zero bytes (the wrong kind) | `invalid` |
//! | (shape `send`) | grpc's `Command`: `error-status` answers INTERNAL, every other mode the usual `Empty` (there is nothing to corrupt); zmq: nothing is answered, so only `skip-validation` applies | `rpc` (error-status), else none |
//! | `skip-validation` | answers correctly but checks no request: the server that skips its validation duty, which the kit must catch with the client modes below (they then fail with `invalid`) | none: a well-formed client passes |
//!
//! # Client modes (`client ... --conformance-fault MODE`)
//!
//! The client connects as usual, then runs **only** its validation operation as one malformed
//! call on its first lane, expecting the server to refuse it; then one well-formed call of the
//! configured workload on the same lane (the same connection, for tcp), which must succeed, to
//! show that the server keeps serving. No warmup, no `armed`, no `sample`; stdin is read as usual
//! (SHUTDOWN or end of stdin while connecting stops the client with `stopped`). With `--shape
//! pingpong` the malformed call goes out as a bidi call does (every request, then END, without
//! waiting: a native server may answer a malformed call only once it has read END,
//! docs/stacks.md), and the well-formed call after it runs in lock-step.
//!
//! | mode | the malformed call | shapes |
//! |---|---|---|
//! | `nonzero-byte` | zeros: the last payload byte of every request is 0x01 (an empty payload becomes the byte 0x01); structured: a payload byte 0x01 beside the body | all |
//! | `corrupt-structured` | one field of every request's structured body changed, its size kept (needs `--payload structured`) | all |
//! | `seq-order` | the requests carry seq 0, 2, 1, 3, 4, ... (one request: seq 1) | client_stream, bidi, pingpong |
//! | `length-change` | request 1 (the second; two are sent even if N is 1) has a payload one byte shorter (an empty payload: longer) | client_stream, bidi, pingpong |
//! | `response-size-too-large` | `response_size` 16,777,217 (16 MiB + 1) in every request | all |
//! | `response-messages-zero` | `response_messages` 0 | server_stream |
//! | `empty-stream` | the request stream ends before any request | client_stream, bidi, pingpong |
//!
//! A mode given with a shape or payload it does not apply to is refused like any bad argument
//! (`error` phase `startup`, code `config`, exit 2).
//!
//! **Outcome**, read from the client's events and exit code:
//!
//! - pass: the server answered the malformed call with INVALID_ARGUMENT (3) and then served the
//!   well-formed call: `stopped`, exit 0;
//! - the server accepted the malformed call (status OK): `error` phase `validate`, code
//!   `invalid`, a message naming the mode and what was malformed, exit 1;
//! - the server answered another status: `error` phase `validate`, code `rpc`, with the status
//!   received and INVALID_ARGUMENT expected, exit 1;
//! - the transport failed during either call, or the well-formed call failed: `error` phase
//!   `validate` with that failure's code ("Error codes"), exit 1.
//!
//! This module holds the pure parts: which requests a client mode sends and which answer a server
//! mode gives. The stacks run them (crate::stacks).

use crate::args::MAX_PAYLOAD;
use crate::stacks::{Verdict, Workload};
use clap::ValueEnum;
use rpcarena_protocol::event::code;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{
    Payload, Shape, SummaryBuilder, request, response_to, structured,
};

/// gRPC's INTERNAL, the status of `error-status`.
pub const INTERNAL: u32 = 13;
/// gRPC's INVALID_ARGUMENT, what a server must answer a malformed call with.
pub const INVALID_ARGUMENT: u32 = 3;

/// How a server misbehaves on every call (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerFault {
    /// Every response's seq (a summary's last_seq) is one more than it should be.
    WrongSeq,
    /// Every response payload is one byte short.
    ShortPayload,
    /// A payload byte that is not zero in every response.
    NonzeroByte,
    /// A client stream's summary counts one message more than received.
    WrongSummary,
    /// One response fewer.
    MissingMessage,
    /// One response more.
    ExtraMessage,
    /// Status OK before the last response.
    EarlyStatus,
    /// Status INTERNAL instead of the answer.
    ErrorStatus,
    /// One field of every structured body changed.
    CorruptStructured,
    /// Correct answers, but no request is checked.
    SkipValidation,
}

/// The malformed call a client sends to check a server's validation (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientFault {
    /// A payload byte that is not zero.
    NonzeroByte,
    /// One field of every structured body changed.
    CorruptStructured,
    /// Stream requests with seq 0, 2, 1, ...
    SeqOrder,
    /// The second request of a stream with another payload length.
    LengthChange,
    /// response_size 16 MiB + 1.
    ResponseSizeTooLarge,
    /// A server stream asking for 0 responses.
    ResponseMessagesZero,
    /// A client stream or bidi call without requests.
    EmptyStream,
}

/// The mode's name as given on the command line.
fn name(mode: impl ValueEnum) -> String {
    mode.to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_default()
}

impl ServerFault {
    /// The name on the command line, e.g. `wrong-seq`.
    pub fn name(self) -> String {
        name(self)
    }

    /// Whether the server still does its validation duty in this mode.
    pub fn validates(self) -> bool {
        self != ServerFault::SkipValidation
    }
}

/// How a fault server ends a call after its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Status OK after every message.
    Ok,
    /// Status OK, then the last message (data after the terminal status).
    OkBeforeLast,
    /// A non-OK status (gRPC code and message) after the messages.
    Status(u32, String),
}

/// What a fault server sends for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<M> {
    /// The response messages, in order.
    pub messages: Vec<M>,
    /// How the call ends.
    pub ending: Ending,
}

/// A message a fault server answers with: a [`pb::Response`] (unary, server stream, bidi) or a
/// [`pb::Summary`] (client stream).
pub trait Answer: Sized + Clone + Send + Sync + 'static {
    /// The correct answer to a call of `shape` with these requests (already validated: at least
    /// one, within the ranges).
    fn correct(shape: Shape, requests: &[pb::Request]) -> Vec<Self>;
    /// One message more after `messages`, as `extra-message` sends it.
    fn extra(shape: Shape, requests: &[pb::Request], messages: &[Self]) -> Option<Self>;
    /// Applies a per-message fault.
    fn corrupt(&mut self, fault: ServerFault);
}

impl Answer for pb::Response {
    fn correct(shape: Shape, requests: &[pb::Request]) -> Vec<pb::Response> {
        let Some(first) = requests.first() else {
            return Vec::new();
        };
        match shape {
            Shape::ServerStream => (0..u64::from(first.response_messages))
                .map(|index| response_to(first, index))
                .collect(),
            Shape::Bidi | Shape::Pingpong => {
                requests.iter().map(|r| response_to(r, r.seq)).collect()
            }
            Shape::Unary | Shape::ClientStream | Shape::Send => {
                vec![response_to(first, first.seq)]
            }
        }
    }

    fn extra(shape: Shape, requests: &[pb::Request], messages: &[Self]) -> Option<Self> {
        let first = requests.first()?;
        match shape {
            Shape::ServerStream => Some(response_to(first, u64::from(first.response_messages))),
            Shape::Bidi | Shape::Pingpong => requests
                .last()
                .map(|last| response_to(last, last.seq.wrapping_add(1))),
            Shape::Unary | Shape::ClientStream | Shape::Send => messages.last().cloned(),
        }
    }

    fn corrupt(&mut self, fault: ServerFault) {
        match fault {
            ServerFault::WrongSeq => self.seq = self.seq.wrapping_add(1),
            _ => corrupt_payload(fault, &mut self.payload, &mut self.body, self.seq),
        }
    }
}

/// A command's acknowledgement (shape `send` on grpc).
impl Answer for pb::Empty {
    fn correct(_: Shape, _: &[pb::Request]) -> Vec<pb::Empty> {
        vec![pb::Empty {}]
    }

    fn extra(_: Shape, _: &[pb::Request], _: &[Self]) -> Option<Self> {
        None
    }

    fn corrupt(&mut self, _: ServerFault) {}
}

impl Answer for pb::Summary {
    fn correct(_: Shape, requests: &[pb::Request]) -> Vec<pb::Summary> {
        let mut summary = SummaryBuilder::default();
        for request in requests {
            summary.add(request);
        }
        vec![summary.finish()]
    }

    fn extra(_: Shape, _: &[pb::Request], messages: &[Self]) -> Option<Self> {
        messages.last().cloned()
    }

    fn corrupt(&mut self, fault: ServerFault) {
        match fault {
            ServerFault::WrongSeq => self.last_seq = self.last_seq.wrapping_add(1),
            ServerFault::WrongSummary => self.count += 1,
            _ => corrupt_payload(fault, &mut self.payload, &mut self.body, self.last_seq),
        }
    }
}

/// What a server running `fault` answers to a call of `shape` with `requests`, all of them (a
/// bidi call's answer is its steps' together: [`bidi_request`]).
pub fn plan<M: Answer>(fault: ServerFault, shape: Shape, requests: &[pb::Request]) -> Plan<M> {
    if shape.rpc() == Shape::Bidi {
        return bidi_plan(fault, requests);
    }
    if shape.is_one_way() {
        return command_plan(fault, requests);
    }
    let mut messages = M::correct(shape, requests);
    let mut ending = Ending::Ok;
    match fault {
        ServerFault::WrongSeq
        | ServerFault::ShortPayload
        | ServerFault::NonzeroByte
        | ServerFault::CorruptStructured => {
            messages.iter_mut().for_each(|m| m.corrupt(fault));
        }
        ServerFault::WrongSummary if shape == Shape::ClientStream => {
            messages.iter_mut().for_each(|m| m.corrupt(fault));
        }
        ServerFault::WrongSummary | ServerFault::ErrorStatus => {
            messages.clear();
            ending = internal(fault);
        }
        ServerFault::MissingMessage => {
            messages.pop();
        }
        ServerFault::ExtraMessage => {
            messages.extend(M::extra(shape, requests, &messages));
        }
        ServerFault::EarlyStatus => ending = Ending::OkBeforeLast,
        ServerFault::SkipValidation => {}
    }
    Plan { messages, ending }
}

/// A command's answer (shape `send`, grpc's `Empty`): there is nothing to corrupt, so only
/// `error-status` differs (INTERNAL); every other mode acknowledges as usual.
fn command_plan<M: Answer>(fault: ServerFault, requests: &[pb::Request]) -> Plan<M> {
    if fault == ServerFault::ErrorStatus {
        return Plan {
            messages: Vec::new(),
            ending: internal(fault),
        };
    }
    Plan {
        messages: M::correct(Shape::Send, requests),
        ending: Ending::Ok,
    }
}

/// The status INTERNAL of `error-status`, and of `wrong-summary` on a shape other than a client
/// stream.
fn internal(fault: ServerFault) -> Ending {
    let message = if fault == ServerFault::WrongSummary {
        "conformance fault wrong-summary applies to client_stream calls only"
    } else {
        "conformance fault error-status: INTERNAL instead of the answer"
    };
    Ending::Status(INTERNAL, message.to_string())
}

/// What a fault server sends at one point of a bidi call, which it answers as requests arrive.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<M> {
    /// The response messages to send now.
    pub messages: Vec<M>,
    /// How the call ends here, or `None`: the server reads the next request. An ending at a
    /// request comes before the client's END.
    pub ending: Option<Ending>,
}

/// What a server running `fault` answers to `request` of a bidi call, at once: the one
/// response, misshapen as the mode says, or (`missing-message`, `early-status`, `error-status`,
/// `wrong-summary`) the call's ending, which never leaves a lock-step client waiting.
pub fn bidi_request<M: Answer>(fault: ServerFault, request: &pb::Request) -> Step<M> {
    let mut messages = M::correct(Shape::Bidi, std::slice::from_ref(request));
    let ending = match fault {
        ServerFault::WrongSeq
        | ServerFault::ShortPayload
        | ServerFault::NonzeroByte
        | ServerFault::CorruptStructured => {
            messages.iter_mut().for_each(|m| m.corrupt(fault));
            None
        }
        ServerFault::SkipValidation | ServerFault::ExtraMessage => None,
        ServerFault::MissingMessage => {
            messages.clear();
            Some(Ending::Ok)
        }
        ServerFault::EarlyStatus => Some(Ending::OkBeforeLast),
        ServerFault::WrongSummary | ServerFault::ErrorStatus => {
            messages.clear();
            Some(internal(fault))
        }
    };
    Step { messages, ending }
}

/// What a server running `fault` sends when a bidi call's request stream ends after `last`:
/// `extra-message`'s response with the last seq + 1, then status OK.
pub fn bidi_end<M: Answer>(fault: ServerFault, last: Option<&pb::Request>) -> Step<M> {
    let messages = match (fault, last) {
        (ServerFault::ExtraMessage, Some(last)) => {
            M::extra(Shape::Bidi, std::slice::from_ref(last), &[])
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    };
    Step {
        messages,
        ending: Some(Ending::Ok),
    }
}

/// A bidi call's whole answer: its steps, up to the first that ends it.
fn bidi_plan<M: Answer>(fault: ServerFault, requests: &[pb::Request]) -> Plan<M> {
    let mut messages = Vec::new();
    let steps = requests
        .iter()
        .map(|request| bidi_request::<M>(fault, request))
        .chain(std::iter::once_with(|| bidi_end(fault, requests.last())));
    for step in steps {
        messages.extend(step.messages);
        if let Some(ending) = step.ending {
            return Plan { messages, ending };
        }
    }
    // bidi_end always ends the call
    Plan {
        messages,
        ending: Ending::Ok,
    }
}

/// The payload faults, on a message's zero bytes or structured body built from `seq`.
fn corrupt_payload(
    fault: ServerFault,
    payload: &mut Vec<u8>,
    body: &mut Option<pb::Structured>,
    seq: u64,
) {
    match (fault, body.as_mut()) {
        (ServerFault::ShortPayload, None) => {
            if payload.is_empty() {
                payload.push(0);
            } else {
                payload.pop();
            }
        }
        (ServerFault::ShortPayload, Some(body)) => {
            if body.title.is_empty() {
                *body = structured(seq, 3);
            } else {
                body.title.pop();
            }
        }
        (ServerFault::NonzeroByte, None) => match payload.last_mut() {
            Some(last) => *last = 1,
            None => payload.push(1),
        },
        (ServerFault::NonzeroByte, Some(_)) => payload.push(1),
        (ServerFault::CorruptStructured, None) => *body = Some(structured(seq, 3)),
        (ServerFault::CorruptStructured, Some(body)) => corrupt_structured(body, seq),
        _ => {}
    }
}

/// Changes one field of a structured body and keeps its encoded size (an empty body cannot keep
/// it and becomes a wrong 3-byte body).
pub fn corrupt_structured(body: &mut pb::Structured, seq: u64) {
    if body.created_unix_ms != 0 {
        // 1.7e12 + seq mod 1e9 + 1 stays a 6-byte varint.
        body.created_unix_ms += 1;
        return;
    }
    if body.title.is_empty() {
        *body = structured(seq, 3);
    }
    let first = body.title.as_bytes().first().copied().unwrap_or(b'a');
    let other = char::from(b'a' + (first.wrapping_sub(b'a') % 26 + 1) % 26);
    body.title
        .replace_range(0..1, other.encode_utf8(&mut [0; 4]));
}

impl ClientFault {
    /// The name on the command line, e.g. `seq-order`.
    pub fn name(self) -> String {
        name(self)
    }

    /// Whether the mode applies to `workload`; the error names the argument that does not fit.
    pub fn check(self, workload: &Workload) -> Result<(), String> {
        let shapes: &[Shape] = match self {
            ClientFault::SeqOrder | ClientFault::LengthChange | ClientFault::EmptyStream => {
                &[Shape::ClientStream, Shape::Bidi, Shape::Pingpong]
            }
            ClientFault::ResponseMessagesZero => &[Shape::ServerStream],
            _ => &Shape::EVERY,
        };
        if !shapes.contains(&workload.shape) {
            let names: Vec<&str> = shapes.iter().map(Shape::as_str).collect();
            return Err(format!(
                "--conformance-fault {} applies to --shape {}, not {}",
                self.name(),
                names.join(" or "),
                workload.shape
            ));
        }
        if self == ClientFault::CorruptStructured && workload.payload != Payload::Structured {
            return Err(format!(
                "--conformance-fault {} needs --payload structured",
                self.name()
            ));
        }
        Ok(())
    }

    /// What the malformed call is, for messages: "a payload byte 0x01 in every request".
    pub fn describe(self) -> &'static str {
        match self {
            ClientFault::NonzeroByte => "a payload byte 0x01 in every request",
            ClientFault::CorruptStructured => {
                "a structured body with one field changed in every request"
            }
            ClientFault::SeqOrder => "requests with seq 0, 2, 1, ... (out of order)",
            ClientFault::LengthChange => {
                "a second request whose payload length differs from the first's"
            }
            ClientFault::ResponseSizeTooLarge => "response_size 16777217, above the 16 MiB maximum",
            ClientFault::ResponseMessagesZero => "response_messages 0 in a server stream",
            ClientFault::EmptyStream => "a request stream that ends before any request",
        }
    }

    /// The requests of the malformed call for `workload` (the validation operation's seq 0).
    pub fn requests(self, workload: &Workload) -> Vec<pb::Request> {
        let Workload {
            shape,
            request_size,
            response_size,
            messages,
            payload,
        } = *workload;
        let response_messages = if shape == Shape::ServerStream {
            messages
        } else {
            0
        };
        let count = match (self, shape.streams_requests()) {
            (ClientFault::EmptyStream, _) => 0,
            (ClientFault::LengthChange, _) => messages.max(2),
            (_, true) => messages,
            (_, false) => 1,
        };
        let build = |index: u32| {
            let seq = match self {
                ClientFault::SeqOrder => swapped(u64::from(index), count),
                _ => u64::from(index),
            };
            let size = match (self, index) {
                (ClientFault::LengthChange, 1) => other_length(payload, request_size),
                _ => request_size,
            };
            // a command asks for no response (shape send)
            let response_size = if shape.is_one_way() { 0 } else { response_size };
            request(payload, seq, size, response_size, response_messages)
        };
        let mut requests: Vec<pb::Request> = (0..count).map(build).collect();
        for request in &mut requests {
            match self {
                ClientFault::NonzeroByte if payload == Payload::Zeros => {
                    match request.payload.last_mut() {
                        Some(last) => *last = 1,
                        None => request.payload.push(1),
                    }
                }
                ClientFault::NonzeroByte => request.payload.push(1),
                ClientFault::CorruptStructured => {
                    let seq = request.seq;
                    corrupt_structured(request.body.get_or_insert_with(Default::default), seq);
                }
                ClientFault::ResponseSizeTooLarge => request.response_size = MAX_PAYLOAD + 1,
                ClientFault::ResponseMessagesZero => request.response_messages = 0,
                _ => {}
            }
        }
        requests
    }
}

/// How a server's answer to a conformance fault's malformed call fails the check; `call` names
/// the fault and what the call carried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misjudged {
    /// The server accepted the malformed call: status OK (code `invalid`).
    #[error(
        "the server accepted a malformed call ({call}) and ended it with status OK after \
         {responses} response message(s); it must answer INVALID_ARGUMENT (3)"
    )]
    Accepted {
        /// The fault and its call.
        call: String,
        /// Response messages the server sent before the status.
        responses: u64,
    },
    /// The server refused it with another status than INVALID_ARGUMENT (code `rpc`).
    #[error(
        "the server answered a malformed call ({call}) with status {status} ({message:?}); \
         expected INVALID_ARGUMENT (3)"
    )]
    WrongStatus {
        /// The fault and its call.
        call: String,
        /// The gRPC status code it sent.
        status: u32,
        /// The status message it sent.
        message: String,
    },
}

impl Misjudged {
    /// The protocol error code the client fails its validation with.
    pub fn code(&self) -> &'static str {
        match self {
            Misjudged::Accepted { .. } => code::INVALID,
            Misjudged::WrongStatus { .. } => code::RPC,
        }
    }
}

/// Whether a server's answer to the malformed call of `fault` passes: INVALID_ARGUMENT does;
/// status OK (the server accepted it) fails with code `invalid`, another status with `rpc`.
pub fn judge(fault: ClientFault, verdict: &Verdict) -> Result<(), Misjudged> {
    let call = format!("--conformance-fault {}: {}", fault.name(), fault.describe());
    match verdict.code {
        INVALID_ARGUMENT => Ok(()),
        0 => Err(Misjudged::Accepted {
            call,
            responses: verdict.responses,
        }),
        status => Err(Misjudged::WrongStatus {
            call,
            status,
            message: verdict.message.clone(),
        }),
    }
}

/// seq of request `index` in `seq-order`: 0, 2, 1, 3, 4, ... (a single request carries 1).
fn swapped(index: u64, count: u32) -> u64 {
    match (index, count) {
        (0, 1) => 1,
        (1, _) => 2,
        (2, _) => 1,
        _ => index,
    }
}

/// A payload length other than `size` that `kind` can build: one byte less, or more when that
/// is impossible (0, or structured sizes 1 and 2).
fn other_length(kind: Payload, size: u32) -> u32 {
    match (kind, size) {
        (Payload::Zeros, 0) => 1,
        (Payload::Zeros, size) => size - 1,
        (Payload::Structured, 0) => 3,
        (Payload::Structured, 3) => 4,
        (Payload::Structured, size) => size - 1,
        // Refused by the arguments: no stack of this peer carries dated.
        (Payload::Dated, size) => size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::validate::RequestCheck;
    use rpcarena_protocol::workload::{check_response, check_summary};

    fn workload(shape: Shape, payload: Payload) -> Workload {
        Workload {
            shape,
            request_size: 64,
            response_size: 100,
            messages: 4,
            payload,
        }
    }

    fn checked(shape: Shape, requests: &[pb::Request]) -> Result<(), String> {
        RequestCheck::check_call(shape, requests)
    }

    #[test]
    fn every_client_mode_builds_a_call_the_server_check_refuses() {
        let modes = ClientFault::value_variants();
        for &mode in modes {
            for shape in Shape::ALL {
                for kind in Payload::ALL {
                    let workload = workload(shape, kind);
                    if mode.check(&workload).is_err() {
                        continue;
                    }
                    let requests = mode.requests(&workload);
                    let refusal = checked(shape, &requests)
                        .expect_err(&format!("{} {shape} {kind} passed", mode.name()));
                    assert!(!refusal.is_empty());
                }
            }
        }
        // and the same workloads without a fault pass
        for shape in Shape::ALL {
            let good: Vec<_> = (0..shape.requests_per_op(4))
                .map(|i| request(Payload::Structured, i, 64, 100, 4))
                .collect();
            assert_eq!(checked(shape, &good), Ok(()), "{shape}");
        }
    }

    #[test]
    fn client_modes_refuse_shapes_they_do_not_apply_to() {
        let unary = workload(Shape::Unary, Payload::Zeros);
        for mode in [
            ClientFault::SeqOrder,
            ClientFault::LengthChange,
            ClientFault::EmptyStream,
            ClientFault::ResponseMessagesZero,
            ClientFault::CorruptStructured,
        ] {
            let error = mode.check(&unary).unwrap_err();
            assert!(error.contains("--conformance-fault"), "{error}");
        }
        assert!(ClientFault::NonzeroByte.check(&unary).is_ok());
        assert_eq!(
            ClientFault::SeqOrder
                .requests(&Workload {
                    messages: 5,
                    ..workload(Shape::Bidi, Payload::Zeros)
                })
                .iter()
                .map(|r| r.seq)
                .collect::<Vec<_>>(),
            vec![0, 2, 1, 3, 4]
        );
        let single = Workload {
            messages: 1,
            ..workload(Shape::ClientStream, Payload::Zeros)
        };
        assert_eq!(ClientFault::SeqOrder.requests(&single)[0].seq, 1);
        assert_eq!(ClientFault::LengthChange.requests(&single).len(), 2);
    }

    #[test]
    fn every_server_mode_answers_something_the_client_check_refuses() {
        let misbehaving = ServerFault::value_variants()
            .iter()
            .filter(|fault| fault.validates());
        for &fault in misbehaving {
            for kind in Payload::ALL {
                let w = workload(Shape::Unary, kind);
                let stream: Vec<_> = (0..4).map(|i| request(kind, i, 64, 100, 0)).collect();
                let single = [request(kind, 7, 64, 100, 4)];
                // unary, server stream, bidi: responses
                for (shape, requests) in [
                    (Shape::Unary, &single[..]),
                    (Shape::ServerStream, &single[..]),
                    (Shape::Bidi, &stream[..]),
                ] {
                    let answer: Plan<pb::Response> = plan(fault, shape, requests);
                    let expected: Vec<u64> = match shape {
                        Shape::Unary => vec![7],
                        _ => (0..4).collect(),
                    };
                    assert!(
                        refused_responses(&answer, &expected, kind, w.response_size),
                        "{} {shape} {kind}: {answer:?}",
                        fault.name()
                    );
                }
                let answer: Plan<pb::Summary> = plan(fault, Shape::ClientStream, &stream);
                let accepted = answer.ending == Ending::Ok
                    && answer.messages.len() == 1
                    && check_summary(&answer.messages[0], kind, 4, 64, 100).is_ok();
                assert!(
                    !accepted,
                    "{} client_stream {kind}: {answer:?}",
                    fault.name()
                );
            }
        }
    }

    /// Whether a client expecting responses with `seqs` would refuse `plan`.
    fn refused_responses(
        plan: &Plan<pb::Response>,
        seqs: &[u64],
        kind: Payload,
        size: u32,
    ) -> bool {
        plan.ending != Ending::Ok
            || plan.messages.len() != seqs.len()
            || plan
                .messages
                .iter()
                .zip(seqs)
                .any(|(m, &seq)| check_response(m, kind, seq, size).is_err())
    }

    #[test]
    fn a_bidi_fault_answers_every_request_at_once_or_ends_the_call() {
        // a lock-step (pingpong) client waits for each answer: no step may leave it waiting
        for &fault in ServerFault::value_variants() {
            for kind in Payload::ALL {
                let first = request(kind, 0, 64, 100, 0);
                let step: Step<pb::Response> = bidi_request(fault, &first);
                assert!(
                    !step.messages.is_empty() || step.ending.is_some(),
                    "{} {kind}: {step:?}",
                    fault.name()
                );
                // and the modes that go on answer one message per request
                if step.ending.is_none() {
                    assert_eq!(step.messages.len(), 1, "{}", fault.name());
                }
            }
        }
        let early: Step<pb::Response> = bidi_request(
            ServerFault::MissingMessage,
            &request(Payload::Zeros, 0, 8, 8, 0),
        );
        assert_eq!((early.messages.len(), early.ending), (0, Some(Ending::Ok)));
        // extra-message's extra response comes after the client's END; others add nothing there
        let last = request(Payload::Zeros, 3, 8, 8, 0);
        let end: Step<pb::Response> = bidi_end(ServerFault::ExtraMessage, Some(&last));
        let seqs: Vec<u64> = end.messages.iter().map(|m| m.seq).collect();
        assert_eq!((seqs, end.ending), (vec![4], Some(Ending::Ok)));
        let plain: Step<pb::Response> = bidi_end(ServerFault::WrongSeq, Some(&last));
        assert!(plain.messages.is_empty());
        // the whole answer of a bidi call is its steps: pingpong's plan is bidi's
        let stream: Vec<_> = (0..4)
            .map(|i| request(Payload::Zeros, i, 8, 8, 0))
            .collect();
        for &fault in ServerFault::value_variants() {
            let bidi: Plan<pb::Response> = plan(fault, Shape::Bidi, &stream);
            let pingpong: Plan<pb::Response> = plan(fault, Shape::Pingpong, &stream);
            assert_eq!(bidi, pingpong, "{}", fault.name());
        }
    }

    #[test]
    fn skipping_validation_answers_correctly() {
        let requests: Vec<_> = (0..4)
            .map(|i| request(Payload::Structured, i, 64, 100, 0))
            .collect();
        let answer: Plan<pb::Response> = plan(ServerFault::SkipValidation, Shape::Bidi, &requests);
        assert_eq!(answer.ending, Ending::Ok);
        assert!(!refused_responses(
            &answer,
            &[0, 1, 2, 3],
            Payload::Structured,
            100
        ));
        // and answers even a call the check refuses
        let empty: Plan<pb::Summary> = plan(ServerFault::SkipValidation, Shape::ClientStream, &[]);
        assert_eq!(empty.messages[0].count, 0);
    }

    #[test]
    fn only_invalid_argument_passes_a_malformed_call() {
        let verdict = |code| Verdict {
            code,
            message: "request 1: seq 2, expected 1".to_string(),
            responses: 1,
        };
        assert_eq!(judge(ClientFault::SeqOrder, &verdict(3)), Ok(()));
        let accepted = judge(ClientFault::SeqOrder, &verdict(0)).unwrap_err();
        assert!(matches!(accepted, Misjudged::Accepted { responses: 1, .. }));
        assert_eq!(accepted.code(), "invalid");
        let message = accepted.to_string();
        assert!(
            message.contains("accepted") && message.contains("seq-order"),
            "{message}"
        );
        let refused = judge(ClientFault::EmptyStream, &verdict(13)).unwrap_err();
        assert!(matches!(refused, Misjudged::WrongStatus { status: 13, .. }));
        assert_eq!(refused.code(), "rpc");
        let message = refused.to_string();
        assert!(message.contains("status 13"), "{message}");
    }

    #[test]
    fn corrupting_a_structured_body_keeps_its_size() {
        use prost::Message;
        for size in [3u32, 10, 19, 20, 64, 300] {
            let mut body = structured(5, size);
            corrupt_structured(&mut body, 5);
            assert_eq!(body.encoded_len(), size as usize, "{size}");
            assert_ne!(body, structured(5, size));
        }
    }
}
