//! RPCs over the native framing, written once for any `AsyncRead`/`AsyncWrite` pair: the client
//! side of one operation ([`call`]) and the server side of one call ([`serve_call`]). The `quic`
//! stack runs them on one QUIC stream per call, the `tcp` stack on one TLS connection per lane.
//!
//! Writes are batched like HTTP/2 implementations batch them: frames go into a write buffer that
//! is flushed when it passes [`WRITE_BATCH`], when the client has sent END, or when the server has
//! answered everything it has already received and would otherwise wait for input. So a unary
//! call is one write (HEADER, MESSAGE, END) each way, and a bidi stream still flows in both
//! directions at once.

use super::framing::{
    Frame, FrameCodec, FrameError, FrameType, Outgoing, has_complete_frame, method_path,
    shape_of_path,
};
use super::validate::RequestCheck;
use super::{CallTally, ServerState, Verdict, Workload, status};
use crate::engine::saturation::StreamSender;
use crate::engine::{Clock, OpError, OpOutcome};
use crate::fault::{self, Ending, Plan, ServerFault};
use futures::{SinkExt, StreamExt};
use prost::Message;
use rpcarena_protocol::event::code;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{Shape, SummaryBuilder, response_to};
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{FramedRead, FramedWrite};

/// Frames are flushed once this many bytes are buffered (tonic's encoder yields at 32 KiB too).
pub const WRITE_BATCH: usize = 32 * 1024;

/// Initial read buffer; a larger frame reserves its whole size when its prefix arrives.
pub const READ_BUFFER: usize = 16 * 1024;

/// Frames in.
pub type Reader<R> = FramedRead<R, FrameCodec>;
/// Frames out.
pub type Writer<W> = FramedWrite<W, FrameCodec>;

/// The receiving half of a transport that carries native calls.
pub trait RecvHalf: AsyncRead + Unpin + Send {
    /// Whether the half carries exactly one call and then ends (a QUIC stream), rather than the
    /// next call (a TCP connection).
    const ONE_CALL: bool;
}

/// The sending half of a transport that carries native calls.
pub trait SendHalf: AsyncWrite + Unpin + Send {
    /// Ends the send direction after a call's last frame where the transport has one per call
    /// (QUIC: finish the stream); a no-op on a connection that carries the next call.
    fn finish_call(&mut self) -> io::Result<()>;
}

impl<T: AsyncRead + AsyncWrite + Send> RecvHalf for tokio::io::ReadHalf<T> {
    const ONE_CALL: bool = false;
}

impl<T: AsyncRead + AsyncWrite + Send> SendHalf for tokio::io::WriteHalf<T> {
    fn finish_call(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A frame reader over `inner`.
pub fn reader<R: RecvHalf>(inner: R) -> Reader<R> {
    FramedRead::with_capacity(inner, FrameCodec, READ_BUFFER)
}

/// A frame writer over `inner`, batching up to [`WRITE_BATCH`].
pub fn writer<W: SendHalf>(inner: W) -> Writer<W> {
    let mut writer = FramedWrite::new(inner, FrameCodec);
    writer.set_backpressure_boundary(WRITE_BATCH);
    writer
}

/// Shuts the send direction down (TLS: close_notify, then FIN). Every call flushes its frames
/// before it returns, so nothing is left in the write buffer.
pub async fn close<W: SendHalf>(writer: &mut Writer<W>) -> io::Result<()> {
    use tokio::io::AsyncWriteExt;
    writer.get_mut().shutdown().await
}

// ---------------------------------------------------------------------------------------------
// Client

/// One whole operation of `workload` on a call's reader and writer: requests are built, encoded
/// and sent, every response is decoded and validated, and the terminal STATUS is read and checked.
pub async fn call<R: RecvHalf, W: SendHalf>(
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    workload: &Workload,
    seq: u64,
) -> Result<OpOutcome, OpError> {
    let shape = workload.shape;
    let n = u64::from(workload.messages);
    let outcome = match shape {
        Shape::Send => {
            return Err(OpError::new(
                code::INTERNAL,
                "the native framing has no one-way command (shape send)",
            ));
        }
        Shape::Unary => {
            let requests = std::iter::once_with(|| workload.request(seq, 0));
            send_requests(writer, shape, requests).await?;
            let response: pb::Response = read_one(reader).await?;
            workload.outcome(1, 1, workload.checked_response(&response, seq)?)
        }
        Shape::ClientStream => {
            let requests = (0..n).map(|i| workload.request(i, 0));
            send_requests(writer, shape, requests).await?;
            let summary: pb::Summary = read_one(reader).await?;
            workload.outcome(n, 1, workload.checked_summary(&summary)?)
        }
        Shape::ServerStream => {
            let requests = std::iter::once_with(|| workload.request(seq, workload.messages));
            send_requests(writer, shape, requests).await?;
            workload.outcome(1, n, read_responses(reader, workload).await?)
        }
        Shape::Bidi => {
            // Full duplex: all N requests go out without waiting while responses are read.
            let requests = (0..n).map(|i| workload.request(i, 0));
            let ((), response_bytes) = tokio::try_join!(
                send_requests(writer, shape, requests),
                read_responses(reader, workload)
            )?;
            workload.outcome(n, n, response_bytes)
        }
        Shape::Pingpong => workload.outcome(n, n, ping_pong(reader, writer, workload).await?),
    };
    if R::ONE_CALL {
        expect_end_of_stream(reader).await?;
    }
    Ok(outcome)
}

/// Pingpong: N exchanges in lock-step on one `Bidi` call. Request i is built and sent (flushed;
/// the first one with the HEADER) only after response i-1 arrived and validated; after response
/// N-1 come END and then STATUS OK, with nothing between. Returns the responses' payload bytes.
async fn ping_pong<R: RecvHalf, W: SendHalf>(
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    workload: &Workload,
) -> Result<u64, OpError> {
    let n = workload.messages;
    writer
        .feed(Outgoing::<pb::Request>::Header(method_path(
            Shape::Pingpong,
        )))
        .await
        .map_err(send_error)?;
    let mut bytes = 0;
    for index in 0..u64::from(n) {
        writer
            .send(Outgoing::Message(workload.request(index, 0)))
            .await
            .map_err(send_error)?;
        let frame = next_frame(reader).await?;
        match frame.kind {
            FrameType::Message => {
                let response = pb::Response::decode(frame.body)
                    .map_err(|e| invalid_text(format!("undecodable response message: {e}")))?;
                bytes += workload.checked_response(&response, index)?;
            }
            FrameType::Status => {
                check_status(&frame.body)?;
                return Err(invalid_text(format!(
                    "the server ended the call with STATUS OK after {index} of {n} responses"
                )));
            }
            other => return Err(unexpected(other)),
        }
    }
    end_requests(writer).await?;
    let frame = next_frame(reader).await?;
    match frame.kind {
        FrameType::Status => check_status(&frame.body).map(|()| bytes),
        FrameType::Message => Err(invalid_text(format!(
            "the server sent more than the {n} responses asked for"
        ))),
        other => Err(unexpected(other)),
    }
}

/// Send-saturation: one client stream on a call's reader and writer. The caller has opened
/// `sender` (admitting the first message); messages go out while it admits them, each timed from
/// its start to the frame writer taking it (which flushes, and so waits for the transport, when
/// its buffer passes [`WRITE_BATCH`]); then END, and the summary must confirm every message.
pub async fn saturate<R: RecvHalf, W: SendHalf, C: Clock>(
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    workload: &Workload,
    clock: &C,
    sender: &mut StreamSender,
) -> Result<(), OpError> {
    writer
        .feed(Outgoing::<pb::Request>::Header(method_path(
            Shape::ClientStream,
        )))
        .await
        .map_err(send_error)?;
    while let Some(seq) = sender.next_message(clock.now()) {
        writer
            .feed(Outgoing::Message(workload.request(seq, 0)))
            .await
            .map_err(send_error)?;
        sender.accepted(clock.now(), u64::from(workload.request_size));
        // The writer only waits when the transport pushes back (quinn's 16 MiB send window takes
        // long to fill), so a stream could keep its worker thread and the other streams of the
        // window would not even open: give the worker back every time tokio's budget runs out.
        tokio::task::coop::consume_budget().await;
    }
    end_requests(writer).await?;
    let summary: pb::Summary = read_one(reader).await?;
    let bytes = workload.checked_stream_summary(&summary, sender.sent())?;
    if R::ONE_CALL {
        expect_end_of_stream(reader).await?;
    }
    sender.summary_received(clock.now(), bytes);
    Ok(())
}

/// One call carrying `requests` as they are, whose responses are only counted: the terminal
/// STATUS is the [`Verdict`] (crate::fault's malformed calls). Requests are sent while the
/// answer is read, as bidi does, so a server that answers early cannot stall the call. A
/// pingpong call is sent the same way: docs/stacks.md lets a native server answer a malformed
/// call once it has read END, which a lock-step call would never send (the well-formed pingpong
/// call after the malformed one runs in lock-step).
pub async fn raw_call<R: RecvHalf, W: SendHalf>(
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    shape: Shape,
    requests: Vec<pb::Request>,
) -> Result<Verdict, OpError> {
    let read = async {
        let mut responses = 0;
        loop {
            if let Some(verdict) = raw_frame(reader, &mut responses).await? {
                return Ok(verdict);
            }
        }
    };
    let sent = send_requests(writer, shape, requests.into_iter());
    let ((), verdict) = tokio::try_join!(sent, read)?;
    if R::ONE_CALL {
        expect_end_of_stream(reader).await?;
    }
    Ok(verdict)
}

/// The next frame of a call whose responses are only counted: a MESSAGE adds to `responses`,
/// a STATUS is the verdict.
async fn raw_frame<R: RecvHalf>(
    reader: &mut Reader<R>,
    responses: &mut u64,
) -> Result<Option<Verdict>, OpError> {
    let frame = next_frame(reader).await?;
    match frame.kind {
        FrameType::Message => {
            *responses += 1;
            Ok(None)
        }
        FrameType::Status => {
            let status = pb::Status::decode(frame.body)
                .map_err(|e| invalid_text(format!("undecodable STATUS frame: {e}")))?;
            Ok(Some(Verdict {
                code: status.code,
                message: status.message,
                responses: *responses,
            }))
        }
        other => Err(unexpected(other)),
    }
}

/// HEADER, one MESSAGE per request (built lazily, inside the measured operation), END; flushed.
async fn send_requests<W: SendHalf>(
    writer: &mut Writer<W>,
    shape: Shape,
    requests: impl Iterator<Item = pb::Request>,
) -> Result<(), OpError> {
    writer
        .feed(Outgoing::<pb::Request>::Header(method_path(shape)))
        .await
        .map_err(send_error)?;
    for request in requests {
        writer
            .feed(Outgoing::Message(request))
            .await
            .map_err(send_error)?;
    }
    end_requests(writer).await
}

/// END after the last request, flushed, and the send direction finished where the transport has
/// one per call.
async fn end_requests<W: SendHalf>(writer: &mut Writer<W>) -> Result<(), OpError> {
    writer
        .feed(Outgoing::<pb::Request>::End)
        .await
        .map_err(send_error)?;
    SinkExt::<Outgoing<pb::Request>>::flush(writer)
        .await
        .map_err(send_error)?;
    writer
        .get_mut()
        .finish_call()
        .map_err(|e| OpError::new(code::CONNECT, format!("cannot end the request stream: {e}")))
}

/// Exactly one MESSAGE, then STATUS OK.
async fn read_one<M: Message + Default, R: RecvHalf>(reader: &mut Reader<R>) -> Result<M, OpError> {
    let frame = next_frame(reader).await?;
    match frame.kind {
        FrameType::Message => {
            let message = M::decode(frame.body)
                .map_err(|e| invalid_text(format!("undecodable response message: {e}")))?;
            let frame = next_frame(reader).await?;
            match frame.kind {
                FrameType::Status => check_status(&frame.body).map(|()| message),
                FrameType::Message => Err(invalid_text(
                    "the server sent more than one response message".to_string(),
                )),
                other => Err(unexpected(other)),
            }
        }
        FrameType::Status => {
            check_status(&frame.body)?;
            Err(invalid_text(
                "the server ended the call with STATUS OK but no response message".to_string(),
            ))
        }
        other => Err(unexpected(other)),
    }
}

/// Exactly N (`workload.messages`) responses with seq 0..N-1, then STATUS OK; returns their
/// payload bytes.
async fn read_responses<R: RecvHalf>(
    reader: &mut Reader<R>,
    workload: &Workload,
) -> Result<u64, OpError> {
    let n = workload.messages;
    let mut received: u32 = 0;
    let mut bytes: u64 = 0;
    loop {
        let frame = next_frame(reader).await?;
        match frame.kind {
            FrameType::Message => {
                if received == n {
                    return Err(invalid_text(format!(
                        "the server sent more than the {n} responses asked for"
                    )));
                }
                let response = pb::Response::decode(frame.body)
                    .map_err(|e| invalid_text(format!("undecodable response message: {e}")))?;
                bytes += workload.checked_response(&response, u64::from(received))?;
                received += 1;
            }
            FrameType::Status => {
                check_status(&frame.body)?;
                if received != n {
                    return Err(invalid_text(format!(
                        "the server ended the call with STATUS OK after {received} of {n} responses"
                    )));
                }
                return Ok(bytes);
            }
            other => return Err(unexpected(other)),
        }
    }
}

/// After STATUS a one-call stream must end (QUIC: the server finished the stream).
async fn expect_end_of_stream<R: RecvHalf>(reader: &mut Reader<R>) -> Result<(), OpError> {
    match reader.next().await {
        None => Ok(()),
        Some(Ok(frame)) => Err(invalid_text(format!(
            "the server sent a {:?} frame after STATUS",
            frame.kind
        ))),
        Some(Err(e)) => Err(receive_error(e)),
    }
}

async fn next_frame<R: RecvHalf>(reader: &mut Reader<R>) -> Result<Frame, OpError> {
    match reader.next().await {
        Some(Ok(frame)) => Ok(frame),
        Some(Err(e)) => Err(receive_error(e)),
        None => Err(OpError::new(
            code::CONNECT,
            "the server closed the stream before sending STATUS",
        )),
    }
}

fn check_status(body: &[u8]) -> Result<(), OpError> {
    let status = pb::Status::decode(body)
        .map_err(|e| invalid_text(format!("undecodable STATUS frame: {e}")))?;
    if status.code == status::OK {
        Ok(())
    } else {
        Err(OpError::new(
            code::RPC,
            format!(
                "the server ended the call with status {}: {}",
                status.code, status.message
            ),
        ))
    }
}

fn send_error(e: FrameError) -> OpError {
    match e {
        FrameError::Io(e) => {
            OpError::new(code::CONNECT, format!("sending to the server failed: {e}"))
        }
        other => OpError::new(
            code::INTERNAL,
            format!("cannot encode a request frame: {other}"),
        ),
    }
}

fn receive_error(e: FrameError) -> OpError {
    match e {
        FrameError::Io(e) => OpError::new(
            code::CONNECT,
            format!("receiving from the server failed: {e}"),
        ),
        other => invalid_text(format!("malformed frame from the server: {other}")),
    }
}

fn unexpected(kind: FrameType) -> OpError {
    invalid_text(format!("the server sent an unexpected {kind:?} frame"))
}

fn invalid_text(message: String) -> OpError {
    OpError::new(code::INVALID, message)
}

// ---------------------------------------------------------------------------------------------
// Server

/// What the connection can do after a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEnd {
    /// The call ended cleanly (OK or a rejection); the connection may carry the next call.
    Next,
    /// The peer closed, the transport failed or the framing broke: stop reading.
    Closed,
}

/// How serving a call went wrong.
enum CallError {
    /// A well-framed but unacceptable call: answered with `code` once the client's END is read.
    Rejected {
        code: u32,
        message: String,
        end_seen: bool,
    },
    /// The frame sequence is broken: answered with INVALID_ARGUMENT (best effort), then closed.
    Broken(String),
    /// The transport failed or the client went away: nothing to answer.
    Transport,
}

/// Serves one call: reads HEADER, dispatches on the method, answers, and ends with STATUS.
/// A malformed call is answered with a non-OK status; nothing a client sends can panic this.
pub async fn serve_call<R: RecvHalf, W: SendHalf>(
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    state: &Arc<ServerState>,
) -> CallEnd {
    let header = match reader.next().await {
        None => return CallEnd::Closed,
        Some(Ok(frame)) => frame,
        Some(Err(FrameError::Io(_))) => return CallEnd::Closed,
        Some(Err(e)) => {
            state.reject();
            return reply(
                writer,
                status::INVALID_ARGUMENT,
                e.to_string(),
                CallEnd::Closed,
            )
            .await;
        }
    };
    let result = if header.kind != FrameType::Header {
        Err(CallError::Broken(format!(
            "a call must start with a HEADER frame, not {:?}",
            header.kind
        )))
    } else if let Some(shape) = shape_of_path(&header.body) {
        let mut tally = CallTally::new(state);
        match state.fault {
            None => serve_shape(shape, reader, writer, &mut tally, state)
                .await
                .map(|()| None),
            Some(fault) => serve_fault(fault, shape, reader, writer, &mut tally)
                .await
                .map(Some),
        }
    } else {
        Err(CallError::Rejected {
            code: status::UNIMPLEMENTED,
            message: format!("unknown method {:?}", String::from_utf8_lossy(&header.body)),
            end_seen: false,
        })
    };
    match result {
        Ok(None) => reply(writer, status::OK, String::new(), CallEnd::Next).await,
        Ok(Some(end)) => end,
        Err(CallError::Rejected {
            code,
            message,
            end_seen,
        }) => {
            state.reject();
            eprintln!("rpcarena-peer-rust: rejected a call with status {code}: {message}");
            let end = if end_seen || skip_to_end(reader).await {
                CallEnd::Next
            } else {
                CallEnd::Closed
            };
            reply(writer, code, message, end).await
        }
        Err(CallError::Broken(message)) => {
            state.reject();
            eprintln!("rpcarena-peer-rust: closing a malformed call: {message}");
            reply(writer, status::INVALID_ARGUMENT, message, CallEnd::Closed).await
        }
        Err(CallError::Transport) => CallEnd::Closed,
    }
}

/// Serves one call of `shape`: every request is checked ("Validation duties") before it is
/// answered; a request that fails ends the call with INVALID_ARGUMENT (responses already sent
/// stay sent).
async fn serve_shape<R: RecvHalf, W: SendHalf>(
    shape: Shape,
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    tally: &mut CallTally,
    state: &ServerState,
) -> Result<(), CallError> {
    let mut check = RequestCheck::new(shape);
    match shape {
        Shape::Unary | Shape::ServerStream | Shape::Send => {
            let request = read_request(reader, shape).await?;
            tally.request();
            expect_end(reader, shape).await?;
            check.check(&request).map_err(|m| rejected(m, true))?;
            if shape == Shape::Unary {
                state.hold().await;
                feed(writer, response_to(&request, request.seq)).await?;
                tally.response();
            } else {
                for index in 0..u64::from(request.response_messages) {
                    state.hold().await;
                    feed(writer, response_to(&request, index)).await?;
                    tally.response();
                }
            }
        }
        Shape::ClientStream => {
            let mut summary = SummaryBuilder::default();
            while let Some(request) = next_request(reader, shape).await? {
                tally.request();
                check.check(&request).map_err(|m| rejected(m, false))?;
                summary.add(&request);
            }
            check.finish().map_err(|m| rejected(m, true))?;
            state.hold().await;
            feed(writer, summary.finish()).await?;
            tally.response();
        }
        // pingpong is bidi to a server: the same RPC, each request answered as it arrives
        Shape::Bidi | Shape::Pingpong => {
            while let Some(request) = next_request(reader, shape).await? {
                tally.request();
                check.check(&request).map_err(|m| rejected(m, false))?;
                state.hold().await;
                feed(writer, response_to(&request, request.seq)).await?;
                tally.response();
                // Answer each request as it arrives: flush unless more input is already here.
                if !has_complete_frame(reader.read_buffer()) {
                    SinkExt::<Outgoing<pb::Response>>::flush(writer)
                        .await
                        .map_err(|_| CallError::Transport)?;
                }
            }
            check.finish().map_err(|m| rejected(m, true))?;
        }
    }
    Ok(())
}

/// Serves one call of `shape` the way `fault` misbehaves (crate::fault): reads and checks every
/// request up to END, then sends the fault's plan; a bidi call is answered as its requests
/// arrive ([`serve_fault_bidi`]). Returns how the connection goes on (the call has been ended
/// here, its STATUS included).
async fn serve_fault<R: RecvHalf, W: SendHalf>(
    fault: ServerFault,
    shape: Shape,
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    tally: &mut CallTally,
) -> Result<CallEnd, CallError> {
    if shape.rpc() == Shape::Bidi {
        return serve_fault_bidi(fault, reader, writer, tally).await;
    }
    let mut check = RequestCheck::new(shape);
    let mut requests = Vec::new();
    while let Some(request) = next_request(reader, shape).await? {
        tally.request();
        if fault.validates() {
            check.check(&request).map_err(|m| rejected(m, false))?;
        }
        requests.push(request);
    }
    if fault.validates() {
        check.finish().map_err(|m| rejected(m, true))?;
    }
    if !shape.streams_requests() && requests.len() != 1 {
        return Err(rejected(
            format!(
                "a {shape} call carries exactly one request, got {}",
                requests.len()
            ),
            true,
        ));
    }
    if shape == Shape::ClientStream {
        let plan = fault::plan::<pb::Summary>(fault, shape, &requests);
        send_plan(reader, writer, plan, tally, true).await
    } else {
        let plan = fault::plan::<pb::Response>(fault, shape, &requests);
        send_plan(reader, writer, plan, tally, true).await
    }
}

/// A fault's bidi call: each request checked and answered as it arrives (flushed unless more
/// input is already here), as the normal server does, with the fault's steps.
async fn serve_fault_bidi<R: RecvHalf, W: SendHalf>(
    fault: ServerFault,
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    tally: &mut CallTally,
) -> Result<CallEnd, CallError> {
    let mut check = RequestCheck::new(Shape::Bidi);
    let mut last = None;
    while let Some(request) = next_request(reader, Shape::Bidi).await? {
        tally.request();
        if fault.validates() {
            check.check(&request).map_err(|m| rejected(m, false))?;
        }
        let step = fault::bidi_request::<pb::Response>(fault, &request);
        if let Some(ending) = step.ending {
            let plan = Plan {
                messages: step.messages,
                ending,
            };
            return send_plan(reader, writer, plan, tally, false).await;
        }
        for message in step.messages {
            feed(writer, message).await?;
            tally.response();
        }
        if !has_complete_frame(reader.read_buffer()) {
            SinkExt::<Outgoing<pb::Response>>::flush(writer)
                .await
                .map_err(|_| CallError::Transport)?;
        }
        last = Some(request);
    }
    if fault.validates() {
        check.finish().map_err(|m| rejected(m, true))?;
    }
    let step = fault::bidi_end::<pb::Response>(fault, last.as_ref());
    let plan = Plan {
        messages: step.messages,
        ending: step.ending.unwrap_or(Ending::Ok),
    };
    send_plan(reader, writer, plan, tally, true).await
}

/// Sends a fault's messages and ending, the STATUS included. `end_seen`: the client's END has
/// been read; if not, the STATUS goes out first (a lock-step client sends nothing more until it
/// has an answer) and the rest of the call is read and dropped afterwards, so that a tcp
/// connection stays in step.
async fn send_plan<R: RecvHalf, W: SendHalf, M: Message>(
    reader: &mut Reader<R>,
    writer: &mut Writer<W>,
    plan: Plan<M>,
    tally: &mut CallTally,
    end_seen: bool,
) -> Result<CallEnd, CallError> {
    let mut messages = plan.messages;
    let (code, text, after_status) = match plan.ending {
        Ending::Ok => (status::OK, String::new(), None),
        Ending::Status(code, message) => {
            tally.reject();
            (code, message, None)
        }
        Ending::OkBeforeLast => (status::OK, String::new(), Some(messages.pop())),
    };
    for message in messages {
        feed(writer, message).await?;
        tally.response();
    }
    let Some(last) = after_status else {
        let end = reply(writer, code, text, CallEnd::Next).await;
        return Ok(
            if end_seen || end == CallEnd::Closed || skip_to_end(reader).await {
                end
            } else {
                CallEnd::Closed
            },
        );
    };
    // STATUS OK, then the last message: data after STATUS. The connection is out of step now.
    let status = pb::Status {
        code: status::OK,
        message: String::new(),
    };
    let sent = async {
        writer.feed(Outgoing::<M>::Status(status)).await?;
        if let Some(last) = last {
            writer.feed(Outgoing::Message(last)).await?;
            tally.response();
        }
        SinkExt::<Outgoing<M>>::flush(writer).await?;
        writer.get_mut().finish_call().map_err(FrameError::Io)
    };
    sent.await.map_err(|_| CallError::Transport)?;
    Ok(CallEnd::Closed)
}

/// The next request of a streaming call, or `None` at END.
async fn next_request<R: RecvHalf>(
    reader: &mut Reader<R>,
    shape: Shape,
) -> Result<Option<pb::Request>, CallError> {
    let frame = server_frame(reader).await?;
    match frame.kind {
        FrameType::Message => decode_request(frame.body).map(Some),
        FrameType::End => Ok(None),
        other => Err(CallError::Broken(format!(
            "unexpected {other:?} frame in a {shape} call"
        ))),
    }
}

/// The single request of a unary or server-stream call.
async fn read_request<R: RecvHalf>(
    reader: &mut Reader<R>,
    shape: Shape,
) -> Result<pb::Request, CallError> {
    next_request(reader, shape).await?.ok_or_else(|| {
        rejected(
            format!("a {shape} call carries one request, got none"),
            true,
        )
    })
}

/// END after the single request of a unary or server-stream call.
async fn expect_end<R: RecvHalf>(reader: &mut Reader<R>, shape: Shape) -> Result<(), CallError> {
    match next_request(reader, shape).await? {
        None => Ok(()),
        Some(_) => Err(rejected(
            format!("a {shape} call carries exactly one request, got more"),
            false,
        )),
    }
}

fn decode_request(body: bytes::Bytes) -> Result<pb::Request, CallError> {
    pb::Request::decode(body).map_err(|e| {
        rejected(
            format!("the request is not a valid rpcarena.bench.v1.Request: {e}"),
            false,
        )
    })
}

/// Reads and drops frames up to the client's END, so that the connection stays in step for the
/// next call. Returns false if that is impossible (broken framing or transport).
async fn skip_to_end<R: RecvHalf>(reader: &mut Reader<R>) -> bool {
    loop {
        match reader.next().await {
            Some(Ok(frame)) if frame.kind == FrameType::Message => continue,
            Some(Ok(frame)) => return frame.kind == FrameType::End,
            _ => return false,
        }
    }
}

async fn server_frame<R: RecvHalf>(reader: &mut Reader<R>) -> Result<Frame, CallError> {
    match reader.next().await {
        Some(Ok(frame)) => Ok(frame),
        Some(Err(FrameError::Io(_))) | None => Err(CallError::Transport),
        Some(Err(e)) => Err(CallError::Broken(e.to_string())),
    }
}

async fn feed<W: SendHalf, M: Message>(
    writer: &mut Writer<W>,
    message: M,
) -> Result<(), CallError> {
    writer
        .feed(Outgoing::Message(message))
        .await
        .map_err(|_| CallError::Transport)
}

/// Sends the terminal STATUS, flushes and ends the call's send side; returns `end`, or
/// `Closed` if the transport failed.
async fn reply<W: SendHalf>(
    writer: &mut Writer<W>,
    code: u32,
    message: String,
    end: CallEnd,
) -> CallEnd {
    let status = pb::Status { code, message };
    let sent = async {
        writer.feed(Outgoing::<pb::Status>::Status(status)).await?;
        SinkExt::<Outgoing<pb::Status>>::flush(writer).await?;
        writer.get_mut().finish_call().map_err(FrameError::Io)
    };
    match sent.await {
        Ok(()) => end,
        Err(_) => CallEnd::Closed,
    }
}

fn rejected(message: String, end_seen: bool) -> CallError {
    CallError::Rejected {
        code: status::INVALID_ARGUMENT,
        message,
        end_seen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::workload::{Payload, request};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    type Half<T> = (
        Reader<tokio::io::ReadHalf<T>>,
        Writer<tokio::io::WriteHalf<T>>,
    );

    fn framed(stream: DuplexStream) -> Half<DuplexStream> {
        let (read, write) = tokio::io::split(stream);
        (reader(read), writer(write))
    }

    /// A server on one end of an in-memory pipe, serving calls until the pipe closes.
    fn server(state: Arc<ServerState>) -> Half<DuplexStream> {
        let (client, server) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let (mut reader, mut writer) = framed(server);
            while serve_call(&mut reader, &mut writer, &state).await == CallEnd::Next {}
        });
        framed(client)
    }

    fn workload(shape: Shape) -> Workload {
        Workload {
            shape,
            request_size: 100,
            response_size: 200,
            messages: 16,
            payload: Payload::Zeros,
        }
    }

    #[tokio::test]
    async fn every_shape_round_trips_and_a_connection_carries_many_calls() {
        let state = Arc::new(ServerState::default());
        let (mut reader, mut writer) = server(state.clone());
        for shape in Shape::EVERY {
            for seq in 0..3 {
                let outcome = call(&mut reader, &mut writer, &workload(shape), seq)
                    .await
                    .unwrap_or_else(|e| panic!("{shape}: {e}"));
                let n = 16;
                let expected = OpOutcome {
                    requests: shape.requests_per_op(n),
                    responses: shape.responses_per_op(n),
                    request_bytes: shape.requests_per_op(n) * 100,
                    response_bytes: shape.responses_per_op(n) * 200,
                };
                assert_eq!(outcome, expected, "{shape}");
            }
        }
        drop((reader, writer));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        // 3 calls of each shape: requests 1 + 16 + 1 + 16 + 16, responses 1 + 1 + 16 + 16 + 16
        assert_eq!(state.counters.snapshot(), (15, 3 * 50, 3 * 50, 0));
    }

    #[tokio::test]
    async fn a_pingpong_call_sends_each_request_only_after_the_previous_response() {
        // a server that, before it answers a request, checks that nothing else arrived: a
        // client that sent the next request without waiting (bidi) fails it
        let (client, server_end) = tokio::io::duplex(1 << 20);
        let server = tokio::spawn(async move {
            let (mut reader, mut writer) = framed(server_end);
            let header = reader.next().await.expect("a frame").expect("well formed");
            assert_eq!(&header.body[..], method_path(Shape::Bidi).as_bytes());
            let mut answered = 0;
            loop {
                let frame = reader.next().await.expect("a frame").expect("well formed");
                if frame.kind == FrameType::End {
                    break;
                }
                let request = pb::Request::decode(frame.body).expect("a request");
                assert_eq!(request.seq, answered);
                let wait = std::time::Duration::from_millis(20);
                let early = tokio::time::timeout(wait, reader.next()).await;
                assert!(early.is_err(), "a frame before response {answered}");
                let response = response_to(&request, request.seq);
                writer
                    .send(Outgoing::Message(response))
                    .await
                    .expect("sent");
                answered += 1;
            }
            let ok = pb::Status {
                code: status::OK,
                message: String::new(),
            };
            writer
                .send(Outgoing::<pb::Response>::Status(ok))
                .await
                .expect("sent");
            answered
        });
        let (mut reader, mut writer) = framed(client);
        let outcome = call(&mut reader, &mut writer, &workload(Shape::Pingpong), 0)
            .await
            .expect("a lock-step call");
        assert_eq!((outcome.requests, outcome.responses), (16, 16));
        assert_eq!(server.await.expect("the server's checks hold"), 16);
    }

    #[tokio::test]
    async fn every_fault_fails_a_bidi_and_a_pingpong_call_by_its_check_without_a_stall() {
        use clap::ValueEnum;
        for &fault in ServerFault::value_variants() {
            for shape in [Shape::Bidi, Shape::Pingpong] {
                let state = Arc::new(ServerState {
                    fault: Some(fault),
                    ..ServerState::default()
                });
                let (mut reader, mut writer) = server(state);
                let workload = workload(shape);
                let called = call(&mut reader, &mut writer, &workload, 0);
                let wait = std::time::Duration::from_secs(5);
                let result = tokio::time::timeout(wait, called)
                    .await
                    .unwrap_or_else(|_| panic!("{} {shape}: the call stalled", fault.name()));
                let expected = match fault {
                    ServerFault::SkipValidation => None,
                    ServerFault::ErrorStatus | ServerFault::WrongSummary => Some(code::RPC),
                    _ => Some(code::INVALID),
                };
                assert_eq!(
                    result.as_ref().err().map(|e| e.code),
                    expected,
                    "{} {shape}: {result:?}",
                    fault.name()
                );
            }
        }
    }

    async fn raw_call(frames: &[u8]) -> Vec<u8> {
        let state = Arc::new(ServerState::default());
        let (mut client, server_end) = tokio::io::duplex(1 << 16);
        let task = tokio::spawn(async move {
            let (mut reader, mut writer) = framed(server_end);
            while serve_call(&mut reader, &mut writer, &state).await == CallEnd::Next {}
        });
        client.write_all(frames).await.expect("pipe open");
        client.shutdown().await.expect("pipe open");
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.expect("pipe open");
        task.await.expect("the server never panics");
        answer
    }

    fn frames(items: Vec<Outgoing<pb::Request>>) -> Vec<u8> {
        use tokio_util::codec::Encoder;
        let mut buf = bytes::BytesMut::new();
        for item in items {
            FrameCodec.encode(item, &mut buf).expect("encodes");
        }
        buf.to_vec()
    }

    fn statuses(answer: &[u8]) -> Vec<u32> {
        use tokio_util::codec::Decoder;
        let mut buf = bytes::BytesMut::from(answer);
        let mut codes = Vec::new();
        while let Ok(Some(frame)) = FrameCodec.decode(&mut buf) {
            if frame.kind == FrameType::Status {
                codes.push(pb::Status::decode(frame.body).expect("valid status").code);
            }
        }
        codes
    }

    #[tokio::test]
    async fn malformed_calls_get_a_non_ok_status_and_the_connection_stays_in_step() {
        let bad_then_good = frames(vec![
            Outgoing::Header("/rpcarena.bench.v1.BenchService/Nope"),
            Outgoing::Message(request(Payload::Zeros, 0, 1, 1, 0)),
            Outgoing::End,
            Outgoing::Header(method_path(Shape::ServerStream)),
            Outgoing::Message(request(Payload::Zeros, 0, 1, 1, 0)), // response_messages 0
            Outgoing::End,
            Outgoing::Header(method_path(Shape::Unary)),
            Outgoing::Message(request(
                Payload::Zeros,
                0,
                1,
                crate::args::MAX_PAYLOAD + 1,
                0,
            )),
            Outgoing::End,
            Outgoing::Header(method_path(Shape::Unary)),
            Outgoing::End, // no request
            Outgoing::Header(method_path(Shape::Unary)),
            Outgoing::Message(request(Payload::Zeros, 5, 1, 1, 0)),
            Outgoing::End,
        ]);
        assert_eq!(
            statuses(&raw_call(&bad_then_good).await),
            vec![12, 3, 3, 3, 0]
        );
    }

    #[tokio::test]
    async fn broken_framing_is_answered_and_closed_without_panicking() {
        // garbage protobuf in a MESSAGE: rejected, connection kept
        let mut garbage = frames(vec![Outgoing::Header(method_path(Shape::Unary))]);
        garbage.extend_from_slice(&[0x02, 0, 0, 0, 3, 0xff, 0xff, 0xff]);
        garbage.extend_from_slice(&frames(vec![Outgoing::End]));
        assert_eq!(statuses(&raw_call(&garbage).await), vec![3]);
        // a call that does not start with HEADER
        assert_eq!(
            statuses(&raw_call(&frames(vec![Outgoing::End])).await),
            vec![3]
        );
        // an unknown frame type, an oversized frame, a truncated frame
        assert_eq!(statuses(&raw_call(&[0x09, 0, 0, 0, 0]).await), vec![3]);
        assert_eq!(
            statuses(&raw_call(&[0x01, 0xff, 0xff, 0xff, 0xff]).await),
            vec![3]
        );
        let mut truncated = frames(vec![Outgoing::Header(method_path(Shape::Unary))]);
        truncated.extend_from_slice(&[0x02, 0, 0, 0, 9, 1]);
        assert_eq!(statuses(&raw_call(&truncated).await), vec![3]);
        // a client that hangs up mid-call gets nothing and the server just closes
        let hang_up = frames(vec![Outgoing::Header(method_path(Shape::Bidi))]);
        assert!(statuses(&raw_call(&hang_up).await).is_empty());
    }

    #[tokio::test]
    async fn the_client_fails_a_call_with_a_non_ok_status_or_a_missing_status() {
        // a fake server that answers every call with INTERNAL
        let (client, server_end) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            let (mut reader, mut writer) = framed(server_end);
            while let Some(Ok(frame)) = reader.next().await {
                if frame.kind == FrameType::End {
                    let status = pb::Status {
                        code: 13,
                        message: "boom".into(),
                    };
                    let _ = writer.send(Outgoing::<pb::Status>::Status(status)).await;
                }
            }
        });
        let (mut reader, mut writer) = framed(client);
        let error = call(&mut reader, &mut writer, &workload(Shape::Unary), 1)
            .await
            .expect_err("status 13");
        assert_eq!(error.code, code::RPC);
        assert!(error.message.contains("boom"), "{error}");

        // fake servers that answer with an unknown frame type, an oversized frame, or a frame
        // only a client may send: invalid
        for answer in [
            vec![0x09, 0, 0, 0, 0],
            vec![0x02, 0xff, 0xff, 0xff, 0xff],
            vec![0x03, 0, 0, 0, 0],
        ] {
            let (client, mut server_end) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let mut request = vec![0; 1024];
                let _ = server_end.read(&mut request).await;
                let _ = server_end.write_all(&answer).await;
                let _ = server_end.shutdown().await;
                let _ = server_end.read_to_end(&mut request).await;
            });
            let (mut reader, mut writer) = framed(client);
            let error = call(&mut reader, &mut writer, &workload(Shape::Unary), 1)
                .await
                .expect_err("a malformed answer");
            assert_eq!(error.code, code::INVALID, "{error}");
        }

        // a fake server that hangs up without STATUS
        let (client, server_end) = tokio::io::duplex(1 << 16);
        drop(server_end);
        let (mut reader, mut writer) = framed(client);
        let error = call(&mut reader, &mut writer, &workload(Shape::Bidi), 1)
            .await
            .expect_err("no status");
        assert_eq!(error.code, code::CONNECT);
    }
}
