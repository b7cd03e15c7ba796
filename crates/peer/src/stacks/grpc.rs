//! `grpc`: tonic, gRPC over HTTP/2 over TLS over TCP, with this crate's own rustls configs
//! (crate::tls) instead of tonic's TLS features so that every stack's TLS is identical.
//!
//! Client: one `Channel`, i.e. one HTTP/2 connection, shared by every lane, as gRPC clients are
//! meant to be used. Server: tonic's `Server` over a stream of TLS connections accepted here.
//! HTTP/2 settings are set explicitly and equally on both ends (docs/stacks.md, "grpc").

use super::framing::method_path;
use super::tcp::{accept_tcp, accept_tls, connect_tls};
use super::validate::RequestCheck;
use super::{
    CallTally, ClientSettings, ClientStack, FLOW_WINDOW, MAX_CONCURRENT_STREAMS, MAX_MESSAGE,
    RawCall, RunningServer, ServerError, ServerState, TCP_NODELAY, Verdict, Workload,
    resolve_server,
};
use crate::engine::pool::{Submitter, Ticket};
use crate::engine::saturation::{SharedSender, StreamSender};
use crate::engine::{Clock, Lane, OpError, OpOutcome};
use crate::failure::Failure;
use crate::service::bench_service_server::{BenchService, BenchServiceServer};
use crate::transport::{Probe, TcpSockets};
use futures::{Stream, StreamExt, stream};
use hyper_util::rt::TokioIo;
use rpcarena_protocol::event::{Setting, code};
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{Shape, SummaryBuilder, response_to};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tonic::transport::server::Connected;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status, Streaming};

/// HTTP/2 frame size, both ends: the protocol's default (16 KiB), set explicitly so it is visible.
pub const MAX_FRAME_SIZE: u32 = 16 * 1024;

/// HTTP/2 adaptive windows (BDP probing), both ends: off, so the windows stay fixed and equal,
/// like QUIC's.
pub const BDP_PROBING: bool = false;

/// Connections per client: one `Channel`, one HTTP/2 connection, shared by every lane.
pub const CONNECTIONS: u32 = 1;

/// The stack's own settings as `capabilities` declares them (docs/stacks.md, "Settings every
/// peer declares"), from the constants both ends are configured with.
pub fn declared() -> Vec<(&'static str, Setting)> {
    vec![
        ("stream_window", u64::from(FLOW_WINDOW).into()),
        ("connection_window", u64::from(FLOW_WINDOW).into()),
        ("bdp_probing", BDP_PROBING.into()),
        (
            "max_concurrent_streams",
            u64::from(MAX_CONCURRENT_STREAMS).into(),
        ),
        ("max_message_bytes", (MAX_MESSAGE as u64).into()),
        ("max_frame_size", u64::from(MAX_FRAME_SIZE).into()),
        ("tcp_nodelay", TCP_NODELAY.into()),
        ("connections", u64::from(CONNECTIONS).into()),
    ]
}

// ---------------------------------------------------------------------------------------------
// Client

/// The client: one channel (one HTTP/2 connection).
pub struct GrpcClient {
    channel: Channel,
    sockets: TcpSockets,
    workload: Workload,
}

/// A lane: a gRPC client on a clone of the channel (a cheap handle on the shared connection).
///
/// Every shape runs on tonic's streaming call, which is what all four are on the wire: tonic's
/// unary and client-streaming helpers would silently drop a second response message and turn a
/// missing one into a status of their own, and the client must count them (docs/peer-protocol.md,
/// "Validation duties"). The helpers do exactly this work otherwise (`ready`, `streaming`, read
/// the message, read the trailers), so the cost per call is the same.
pub struct GrpcLane {
    grpc: tonic::client::Grpc<Channel>,
    workload: Workload,
}

/// The tower connector tonic calls to open its connection: TCP (with TCP_NODELAY) plus our TLS.
#[derive(Clone)]
struct TlsTcpConnector {
    addr: SocketAddr,
    settings: Arc<ClientSettings>,
    /// Every connection it opens, for the transport statistics.
    sockets: TcpSockets,
}

impl tower::Service<http::Uri> for TlsTcpConnector {
    type Response = TokioIo<tokio_rustls::client::TlsStream<TcpStream>>;
    type Error = OpError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, OpError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), OpError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: http::Uri) -> Self::Future {
        let connector = self.clone();
        Box::pin(async move {
            let stream = connect_tls(connector.addr, &connector.settings).await?;
            connector.sockets.register(stream.get_ref().0);
            Ok(TokioIo::new(stream))
        })
    }
}

/// The [`OpError`] our connector returned, if it is in `error`'s source chain.
fn connector_error(error: &(dyn std::error::Error + 'static)) -> Option<OpError> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(op) = e.downcast_ref::<OpError>() {
            return Some(op.clone());
        }
        current = e.source();
    }
    None
}

/// A gRPC client on `channel` with the message limits every lane uses.
fn bench_client(channel: Channel) -> tonic::client::Grpc<Channel> {
    tonic::client::Grpc::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}

/// What the channel's readiness failure means: our connector's own error (`tls` or `connect`)
/// when it failed to reconnect, else `connect`.
fn channel_error(error: tonic::transport::Error) -> OpError {
    connector_error(&error)
        .unwrap_or_else(|| OpError::new(code::CONNECT, format!("the gRPC channel failed: {error}")))
}

impl ClientStack for GrpcClient {
    type Lane = GrpcLane;
    type Submitter = GrpcSubmitter;

    fn submitter(&self, lanes: Vec<GrpcLane>) -> GrpcSubmitter {
        GrpcSubmitter {
            channel: self.channel.clone(),
            pending: None,
            workload: self.workload,
            lanes,
        }
    }

    fn lanes_back(submitter: GrpcSubmitter) -> Vec<GrpcLane> {
        submitter.lanes
    }

    async fn connect(settings: &ClientSettings) -> Result<(GrpcClient, Vec<GrpcLane>), OpError> {
        let addr = resolve_server(settings).await?;
        let endpoint = Endpoint::from_shared(format!("https://{}", settings.server))
            .map_err(|e| {
                OpError::new(
                    code::CONFIG,
                    format!(
                        "--server {}: not a usable URI authority: {e}",
                        settings.server
                    ),
                )
            })?
            .initial_stream_window_size(FLOW_WINDOW)
            .initial_connection_window_size(FLOW_WINDOW)
            .http2_adaptive_window(BDP_PROBING)
            .max_frame_size(MAX_FRAME_SIZE)
            .tcp_nodelay(TCP_NODELAY)
            // The channel's request queue must hold every lane's request, or lanes queue in tonic.
            .buffer_size(settings.lanes.max(1024) as usize);
        let sockets = TcpSockets::default();
        let connector = TlsTcpConnector {
            addr,
            settings: Arc::new(settings.clone()),
            sockets: sockets.clone(),
        };
        let channel = endpoint
            .connect_with_connector(connector)
            .await
            .map_err(|e| {
                connector_error(&e).unwrap_or_else(|| {
                    OpError::new(
                        code::CONNECT,
                        format!("HTTP/2 connection to {addr} failed: {e}"),
                    )
                })
            })?;
        let grpc = bench_client(channel.clone());
        let lanes = (0..settings.lanes)
            .map(|_| GrpcLane {
                grpc: grpc.clone(),
                workload: settings.workload,
            })
            .collect();
        let client = GrpcClient {
            channel,
            sockets,
            workload: settings.workload,
        };
        Ok((client, lanes))
    }

    fn connections(&self) -> u32 {
        CONNECTIONS
    }

    fn transport_probe(&self) -> Option<Probe> {
        Some(Probe::Tcp(self.sockets.clone()))
    }

    async fn close(self, lanes: Vec<GrpcLane>) {
        // The duplicates would keep the socket open.
        self.sockets.clear();
        // The connection closes when the last handle on the channel is dropped.
        drop(lanes);
        drop(self);
    }
}

/// Whether the server sent `status` (in trailers or a trailers-only response) rather than tonic
/// making it from a transport error, which it attaches as the status's source.
fn server_sent(status: &Status) -> bool {
    std::error::Error::source(status).is_none()
}

/// The code of a failed call (docs/peer-protocol.md, "Error codes"): our connector's `tls` or
/// `connect` when reconnecting failed; `timeout` for DEADLINE_EXCEEDED; `connect` for any other
/// status tonic made from a transport error (a broken connection, a reset stream); `rpc` for a
/// status the server sent.
fn status_error(status: Status) -> OpError {
    if let Some(from_connector) = connector_error(&status) {
        return from_connector;
    }
    let code = if status.code() == Code::DeadlineExceeded {
        code::TIMEOUT
    } else if server_sent(&status) {
        code::RPC
    } else {
        code::CONNECT
    };
    OpError::new(
        code,
        format!("gRPC status {:?}: {}", status.code(), status.message()),
    )
}

/// Reads exactly one response message and then the trailers with status OK.
async fn read_one<M>(mut responses: Streaming<M>) -> Result<M, OpError> {
    let Some(message) = responses.message().await.map_err(status_error)? else {
        return Err(OpError::new(
            code::INVALID,
            "the server ended the call with status OK but no response message",
        ));
    };
    if responses.message().await.map_err(status_error)?.is_some() {
        return Err(OpError::new(
            code::INVALID,
            "the server sent more than the one response message of the call",
        ));
    }
    Ok(message)
}

/// Reads a response stream to its end (trailers included): exactly N (`workload.messages`)
/// responses, the k-th with seq k, checked as they arrive; then status OK. Returns their payload
/// bytes. A message that fails ends the read, and dropping the stream cancels the call.
async fn read_stream(
    mut responses: Streaming<pb::Response>,
    workload: &Workload,
) -> Result<u64, OpError> {
    let n = workload.messages;
    let mut received: u32 = 0;
    let mut bytes = 0u64;
    // `message()` returns None only after trailers with status OK; a non-OK status is an error.
    while let Some(message) = responses.message().await.map_err(status_error)? {
        if received == n {
            return Err(OpError::new(
                code::INVALID,
                format!("the server sent more than the {n} responses asked for"),
            ));
        }
        bytes += workload.checked_response(&message, u64::from(received))?;
        received += 1;
    }
    if received != n {
        return Err(OpError::new(
            code::INVALID,
            format!("the server ended the call with status OK after {received} of {n} responses"),
        ));
    }
    Ok(bytes)
}

impl GrpcLane {
    /// Waits until the channel can take a call (a no-op when the backpressure submitter has
    /// already made this clone ready).
    async fn ready(&mut self) -> Result<(), OpError> {
        self.grpc.ready().await.map_err(channel_error)
    }

    /// Starts one call of `shape` with a request stream and returns its response stream once the
    /// response headers arrived.
    async fn start<M: prost::Message + Default + Send + 'static>(
        &mut self,
        shape: Shape,
        requests: impl Stream<Item = pb::Request> + Send + 'static,
    ) -> Result<Streaming<M>, Status> {
        let codec = tonic_prost::ProstCodec::<pb::Request, M>::default();
        let path = http::uri::PathAndQuery::from_static(method_path(shape));
        Ok(self
            .grpc
            .streaming(Request::new(requests), path, codec)
            .await?
            .into_inner())
    }
}

/// The terminal status of a call whose responses are only counted.
async fn verdict<M>(started: Result<Streaming<M>, Status>) -> Result<Verdict, OpError> {
    let end = |status: Status, responses| {
        if server_sent(&status) {
            Ok(Verdict {
                code: status.code() as u32,
                message: status.message().to_string(),
                responses,
            })
        } else {
            Err(status_error(status))
        }
    };
    let mut responses = match started {
        Ok(responses) => responses,
        Err(status) => return end(status, 0),
    };
    let mut received = 0;
    loop {
        match responses.message().await {
            Ok(Some(_)) => received += 1,
            Ok(None) => {
                return Ok(Verdict {
                    code: 0,
                    message: String::new(),
                    responses: received,
                });
            }
            Err(status) => return end(status, received),
        }
    }
}

impl RawCall for GrpcLane {
    async fn raw_call(
        &mut self,
        shape: Shape,
        requests: Vec<pb::Request>,
    ) -> Result<Verdict, OpError> {
        self.ready().await?;
        let requests = stream::iter(requests);
        match shape {
            Shape::ClientStream => verdict(self.start::<pb::Summary>(shape, requests).await).await,
            _ => verdict(self.start::<pb::Response>(shape, requests).await).await,
        }
    }
}

impl Lane for GrpcLane {
    /// Send-saturation: tonic pulls the request stream from its own task as HTTP/2 flow control
    /// allows; each pull after the first marks the previous message accepted.
    async fn saturate<C: Clock>(
        &mut self,
        clock: &C,
        sender: &mut StreamSender,
    ) -> Result<(), OpError> {
        let workload = self.workload;
        let request_bytes = u64::from(workload.request_size);
        // The stream moves into tonic, so it works on a shared copy of the sender (locked once
        // per message, by one task at a time), which comes back when the call ends or is
        // cancelled at the settle bound.
        let lent = SharedSender::lend(sender);
        let requests = stream::unfold(
            (lent.shared(), clock.clone(), false),
            move |(shared, clock, started)| async move {
                let seq = {
                    let mut sender = shared.lock().unwrap_or_else(|p| p.into_inner());
                    let now = clock.now();
                    if started {
                        sender.accepted(now, request_bytes);
                    }
                    sender.next_message(now)
                }?;
                Some((workload.request(seq, 0), (shared, clock, true)))
            },
        );
        let result = match self.ready().await {
            Ok(()) => match self.start(Shape::ClientStream, requests).await {
                Ok(responses) => read_one::<pb::Summary>(responses).await,
                Err(status) => Err(status_error(status)),
            },
            Err(e) => Err(e),
        };
        drop(lent);
        let bytes = workload.checked_stream_summary(&result?, sender.sent())?;
        sender.summary_received(clock.now(), bytes);
        Ok(())
    }

    async fn call(&mut self, seq: u64) -> Result<OpOutcome, OpError> {
        let workload = self.workload;
        let shape = workload.shape;
        let n = u64::from(workload.messages);
        // Requests are built lazily, as tonic pulls them, inside the measured operation.
        let one = move |response_messages| {
            stream::once(async move { workload.request(seq, response_messages) })
        };
        let requests = move || stream::iter((0..n).map(move |i| workload.request(i, 0)));
        self.ready().await?;
        match shape {
            Shape::Send => Err(OpError::new(
                code::INTERNAL,
                "shape send is not offered by this peer yet",
            )),
            Shape::Unary => {
                let responses = self.start(shape, one(0)).await.map_err(status_error)?;
                let response: pb::Response = read_one(responses).await?;
                Ok(workload.outcome(1, 1, workload.checked_response(&response, seq)?))
            }
            Shape::ClientStream => {
                let responses = self.start(shape, requests()).await.map_err(status_error)?;
                let summary: pb::Summary = read_one(responses).await?;
                Ok(workload.outcome(n, 1, workload.checked_summary(&summary)?))
            }
            Shape::ServerStream | Shape::Bidi => {
                // Bidi: tonic sends the request stream from its own task as HTTP/2 flow control
                // allows, while this task reads responses: full duplex, no waiting in between.
                let (requests_sent, responses) = if shape == Shape::Bidi {
                    let started = self.start(shape, requests()).await;
                    (n, started.map_err(status_error)?)
                } else {
                    let started = self.start(shape, one(workload.messages)).await;
                    (1, started.map_err(status_error)?)
                };
                let response_bytes = read_stream(responses, &workload).await?;
                Ok(workload.outcome(requests_sent, n, response_bytes))
            }
            Shape::Pingpong => Ok(workload.outcome(n, n, self.ping_pong().await?)),
        }
    }
}

impl GrpcLane {
    /// Pingpong: N exchanges in lock-step on one `Bidi` call. Request i goes into the call's
    /// request stream only after response i-1 arrived and validated (tonic sends each as soon as
    /// it is there); after response N-1 the request stream ends (half-close), and the call must
    /// end with status OK and no further message. Returns the responses' payload bytes.
    async fn ping_pong(&mut self) -> Result<u64, OpError> {
        let workload = self.workload;
        let n = workload.messages;
        let (requests, queue) = tokio::sync::mpsc::channel(1);
        // Request 0 waits in the channel while the call starts (the channel is empty, so it fits).
        let _ = requests.try_send(workload.request(0, 0));
        let queue = tokio_stream::wrappers::ReceiverStream::new(queue);
        let mut responses = self
            .start::<pb::Response>(Shape::Pingpong, queue)
            .await
            .map_err(status_error)?;
        let mut bytes = 0;
        for index in 0..u64::from(n) {
            if index > 0 {
                // A closed request stream means the call has ended: reading its status below
                // says how.
                let _ = requests.send(workload.request(index, 0)).await;
            }
            let Some(response) = responses.message().await.map_err(status_error)? else {
                return Err(OpError::new(
                    code::INVALID,
                    format!(
                        "the server ended the call with status OK after {index} of {n} responses"
                    ),
                ));
            };
            bytes += workload.checked_response(&response, index)?;
        }
        drop(requests);
        if responses.message().await.map_err(status_error)?.is_some() {
            return Err(OpError::new(
                code::INVALID,
                format!("the server sent more than the {n} responses asked for"),
            ));
        }
        Ok(bytes)
    }
}

/// The backpressure submitter: ready when the channel is (`tower::Service::poll_ready`: tonic's
/// request buffer has a slot and hyper's HTTP/2 connection can take another stream).
pub struct GrpcSubmitter {
    channel: Channel,
    /// A clone whose readiness is being awaited: a permit it acquired stays with it, so a
    /// cancelled `ready` loses nothing.
    pending: Option<Channel>,
    workload: Workload,
    lanes: Vec<GrpcLane>,
}

impl Submitter for GrpcSubmitter {
    type Ticket = GrpcLane;

    async fn ready(&mut self) -> Result<GrpcLane, OpError> {
        let channel = self.pending.get_or_insert_with(|| self.channel.clone());
        tower::ServiceExt::<http::Request<tonic::body::Body>>::ready(channel)
            .await
            .map_err(channel_error)?;
        // The ready clone carries its buffer slot into the call (tonic's own `ready` inside the
        // call then returns at once).
        let channel = self
            .pending
            .take()
            .ok_or_else(|| OpError::new(code::INTERNAL, "no channel was made ready"))?;
        Ok(GrpcLane {
            grpc: bench_client(channel),
            workload: self.workload,
        })
    }
}

impl Ticket for GrpcLane {
    async fn call(mut self, seq: u64) -> Result<OpOutcome, OpError> {
        Lane::call(&mut self, seq).await
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// The service: checks every request ("Validation duties"), answers every shape as bench.proto
/// says and counts what it handled.
struct GrpcService {
    state: Arc<ServerState>,
}

type ResponseStream = Pin<Box<dyn Stream<Item = Result<pb::Response, Status>> + Send>>;

impl GrpcService {
    /// INVALID_ARGUMENT with the validation's message, counted as a rejected call.
    fn refuse(&self, message: String) -> Status {
        refuse(&self.state, message)
    }
}

/// INVALID_ARGUMENT with `message`, counted as a rejected call.
fn refuse(state: &ServerState, message: String) -> Status {
    state.reject();
    Status::invalid_argument(message)
}

#[tonic::async_trait]
impl BenchService for GrpcService {
    async fn unary(&self, request: Request<pb::Request>) -> Result<Response<pb::Response>, Status> {
        let mut tally = CallTally::new(&self.state);
        let request = request.into_inner();
        tally.request();
        RequestCheck::new(Shape::Unary)
            .check(&request)
            .map_err(|m| self.refuse(m))?;
        let response = response_to(&request, request.seq);
        self.state.hold().await;
        tally.response();
        Ok(Response::new(response))
    }

    async fn client_stream(
        &self,
        request: Request<Streaming<pb::Request>>,
    ) -> Result<Response<pb::Summary>, Status> {
        let mut tally = CallTally::new(&self.state);
        let mut requests = request.into_inner();
        let mut check = RequestCheck::new(Shape::ClientStream);
        let mut summary = SummaryBuilder::default();
        while let Some(request) = requests.message().await? {
            tally.request();
            check.check(&request).map_err(|m| self.refuse(m))?;
            summary.add(&request);
        }
        check.finish().map_err(|m| self.refuse(m))?;
        let summary = summary.finish();
        self.state.hold().await;
        tally.response();
        Ok(Response::new(summary))
    }

    async fn command(&self, _request: Request<pb::Request>) -> Result<Response<pb::Empty>, Status> {
        Err(Status::unimplemented(
            "Command (shape send, protocol 1.3) is not served by this Rust peer yet",
        ))
    }

    type ServerStreamStream = ResponseStream;

    async fn server_stream(
        &self,
        request: Request<pb::Request>,
    ) -> Result<Response<ResponseStream>, Status> {
        let mut tally = CallTally::new(&self.state);
        let request = request.into_inner();
        tally.request();
        RequestCheck::new(Shape::ServerStream)
            .check(&request)
            .map_err(|m| self.refuse(m))?;
        // Responses are built as hyper pulls them; the tally moves into the stream and adds its
        // counts when the stream is dropped (finished or cancelled).
        let responses = stream::iter(0..u64::from(request.response_messages)).map(move |index| {
            tally.response();
            Ok(response_to(&request, index))
        });
        Ok(Response::new(stalled(Box::pin(responses), &self.state)))
    }

    type BidiStream = ResponseStream;

    async fn bidi(
        &self,
        request: Request<Streaming<pb::Request>>,
    ) -> Result<Response<ResponseStream>, Status> {
        Ok(Response::new(stalled(
            Box::pin(bidi_responses(request.into_inner(), self.state.clone())),
            &self.state,
        )))
    }
}

/// Bidi: each request checked and answered as it arrives, with the same seq; a request that
/// fails, or a stream that ends without any, ends the call with INVALID_ARGUMENT (responses
/// already sent stay sent).
fn bidi_responses(
    requests: Streaming<pb::Request>,
    state: Arc<ServerState>,
) -> impl Stream<Item = Result<pb::Response, Status>> + Send {
    struct Call {
        requests: Streaming<pb::Request>,
        check: RequestCheck,
        tally: CallTally,
        state: Arc<ServerState>,
        ended: bool,
    }
    let call = Call {
        requests,
        check: RequestCheck::new(Shape::Bidi),
        tally: CallTally::new(&state),
        state,
        ended: false,
    };
    stream::unfold(call, |mut call| async move {
        if call.ended {
            return None;
        }
        let answer = match call.requests.message().await {
            Ok(Some(request)) => {
                call.tally.request();
                match call.check.check(&request) {
                    Ok(()) => {
                        call.tally.response();
                        Ok(response_to(&request, request.seq))
                    }
                    Err(message) => Err(refuse(&call.state, message)),
                }
            }
            Ok(None) => match call.check.finish() {
                Ok(()) => return None,
                Err(message) => Err(refuse(&call.state, message)),
            },
            Err(status) => Err(status),
        };
        call.ended = answer.is_err();
        Some((answer, call))
    })
}

/// The response stream, holding each message through a diagnostic stall when one is configured
/// (without one, the stream is left as it is).
fn stalled(responses: ResponseStream, state: &Arc<ServerState>) -> ResponseStream {
    if state.stall.is_none() {
        return responses;
    }
    let state = state.clone();
    Box::pin(responses.then(move |item| {
        let state = state.clone();
        async move {
            state.hold().await;
            item
        }
    }))
}

/// An accepted TLS connection, as tonic's server wants it (tonic's own `Connected` impl for TLS
/// streams needs its TLS features, which would bring a second TLS configuration path), with its
/// registration for the server's transport statistics (read one last time when it ends).
struct TlsConnection {
    stream: tokio_rustls::server::TlsStream<TcpStream>,
    _registration: crate::transport::Registration,
}

impl Connected for TlsConnection {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Binds `addr` and serves until stopped.
pub async fn serve(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    state: Arc<ServerState>,
) -> Result<RunningServer, Failure> {
    let (listener, local_addr) = super::bind_tcp(addr).await?;
    let (connections, incoming) = tokio::sync::mpsc::channel::<io::Result<TlsConnection>>(1024);
    let acceptor = TlsAcceptor::from(tls);
    let registry = state.connections.clone();
    let accept_loop = tokio::spawn(async move {
        loop {
            let (tcp, remote) = accept_tcp(&listener).await;
            // Each handshake on its own task, so one slow handshake never blocks another.
            let acceptor = acceptor.clone();
            let connections = connections.clone();
            let registration = registry.register_tcp(&tcp);
            tokio::spawn(async move {
                if let Some(stream) = accept_tls(tcp, remote, &acceptor).await {
                    let connection = TlsConnection {
                        stream,
                        _registration: registration,
                    };
                    let _ = connections.send(Ok(connection)).await;
                }
            });
        }
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut builder = Server::builder()
        .initial_stream_window_size(FLOW_WINDOW)
        .initial_connection_window_size(FLOW_WINDOW)
        .http2_adaptive_window(Some(BDP_PROBING))
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_frame_size(MAX_FRAME_SIZE)
        .tcp_nodelay(TCP_NODELAY);
    let router = match state.fault {
        None => builder.add_service(
            BenchServiceServer::new(GrpcService { state })
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
        ),
        Some(fault) => builder.add_service(super::grpc_fault::FaultService::new(state, fault)),
    };
    let server = router.serve_with_incoming_shutdown(
        tokio_stream::wrappers::ReceiverStream::new(incoming),
        async {
            let _ = stopped.await;
        },
    );
    let task = tokio::spawn(async move {
        let result = server.await.map_err(ServerError::Grpc);
        accept_loop.abort();
        result
    });
    Ok(RunningServer::new(local_addr, stop, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made_by_tonic(
        mut status: Status,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Status {
        status.set_source(Arc::new(cause));
        status
    }

    #[test]
    fn statuses_map_to_the_protocols_codes() {
        // sent by the server: rpc, whatever the status
        for status in [
            Status::invalid_argument("request 1: seq 2, expected 1"),
            Status::unavailable("the server says it is unavailable"),
            Status::internal("boom"),
            Status::cancelled("the server cancelled"),
        ] {
            assert_eq!(status_error(status).code, code::RPC);
        }
        // deadlines: timeout
        assert_eq!(
            status_error(Status::deadline_exceeded("late")).code,
            code::TIMEOUT
        );
        // made by tonic from a broken transport: connect
        let reset = made_by_tonic(Status::unavailable("reset"), io::Error::other("reset"));
        assert_eq!(status_error(reset).code, code::CONNECT);
        let cancelled = made_by_tonic(Status::cancelled("h2"), io::Error::other("RST_STREAM"));
        assert_eq!(status_error(cancelled).code, code::CONNECT);
        // made by tonic when our connector failed to reconnect: the connector's code
        let tls = made_by_tonic(
            Status::unavailable("connection error"),
            OpError::new(code::TLS, "TLS handshake with 127.0.0.1:1 failed"),
        );
        let error = status_error(tls);
        assert_eq!(error.code, code::TLS);
        assert!(error.message.contains("TLS handshake"), "{error}");
    }
}
