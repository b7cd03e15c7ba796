//! `grpc`: tonic, gRPC over HTTP/2 over TLS over TCP, with this crate's own rustls configs
//! (crate::tls) instead of tonic's TLS features so that every stack's TLS is identical.
//!
//! Client: one `Channel`, i.e. one HTTP/2 connection, shared by every lane, as gRPC clients are
//! meant to be used. Server: tonic's `Server` over a stream of TLS connections accepted here.
//! HTTP/2 settings are set explicitly and equally on both ends (docs/stacks.md, "grpc").

use super::tcp::connect_tls;
use super::{
    CallTally, ClientSettings, ClientStack, FLOW_WINDOW, HANDSHAKE_TIMEOUT, MAX_CONCURRENT_STREAMS,
    MAX_MESSAGE, RunningServer, ServerState, Workload, check_request, resolve, tune_tcp,
};
use crate::engine::pool::{Submitter, Ticket};
use crate::engine::saturation::StreamSender;
use crate::engine::{Clock, Lane, OpError, OpOutcome};
use crate::failure::Failure;
use crate::service::bench_service_client::BenchServiceClient;
use crate::service::bench_service_server::{BenchService, BenchServiceServer};
use anyhow::Context as _;
use futures::{Stream, StreamExt, stream};
use hyper_util::rt::TokioIo;
use rpcarena_protocol::event::code;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{
    Payload, Shape, SummaryBuilder, check_response, check_stream_summary, check_summary,
    payload_len, request, response_to,
};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tonic::transport::server::Connected;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Response, Status, Streaming};

/// HTTP/2 frame size, both ends: the protocol's default (16 KiB), set explicitly so it is visible.
pub const MAX_FRAME_SIZE: u32 = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Client

/// The client: one channel (one HTTP/2 connection).
pub struct GrpcClient {
    channel: Channel,
}

/// A lane: a clone of the client (a cheap handle on the shared channel).
pub struct GrpcLane {
    client: BenchServiceClient<Channel>,
    workload: Workload,
}

/// The tower connector tonic calls to open its connection: TCP (with TCP_NODELAY) plus our TLS.
#[derive(Clone)]
struct TlsTcpConnector {
    addr: SocketAddr,
    settings: Arc<ClientSettings>,
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
            connect_tls(connector.addr, &connector.settings)
                .await
                .map(TokioIo::new)
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
fn bench_client(channel: Channel) -> BenchServiceClient<Channel> {
    BenchServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}

impl ClientStack for GrpcClient {
    type Lane = GrpcLane;
    type Submitter = GrpcSubmitter;

    fn submitter(&self, lanes: Vec<GrpcLane>) -> GrpcSubmitter {
        GrpcSubmitter {
            channel: self.channel.clone(),
            pending: None,
            workload: lanes.first().map(|l| l.workload),
            lanes,
        }
    }

    fn lanes_back(submitter: GrpcSubmitter) -> Vec<GrpcLane> {
        submitter.lanes
    }

    async fn connect(settings: &ClientSettings) -> Result<(GrpcClient, Vec<GrpcLane>), OpError> {
        let addr = resolve(&settings.server)
            .await
            .map_err(|e| OpError::new(code::CONNECT, format!("{e:#}")))?;
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
            .http2_adaptive_window(false)
            .max_frame_size(MAX_FRAME_SIZE)
            .tcp_nodelay(true)
            // The channel's request queue must hold every lane's request, or lanes queue in tonic.
            .buffer_size(settings.lanes.max(1024) as usize);
        let connector = TlsTcpConnector {
            addr,
            settings: Arc::new(settings.clone()),
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
        let client = bench_client(channel.clone());
        let lanes = (0..settings.lanes)
            .map(|_| GrpcLane {
                client: client.clone(),
                workload: settings.workload,
            })
            .collect();
        Ok((GrpcClient { channel }, lanes))
    }

    fn connections(&self) -> u32 {
        1
    }

    async fn close(self, lanes: Vec<GrpcLane>) {
        // The connection closes when the last handle on the channel is dropped.
        drop(lanes);
        drop(self);
    }
}

/// A non-OK status: `rpc` when the server sent it, `connect` when tonic made it from a transport
/// error (those carry the error as their source).
fn status_error(status: Status) -> OpError {
    let from_transport = std::error::Error::source(&status).is_some();
    OpError::new(
        if from_transport {
            code::CONNECT
        } else {
            code::RPC
        },
        format!("gRPC status {:?}: {}", status.code(), status.message()),
    )
}

fn invalid(e: rpcarena_protocol::workload::Invalid) -> OpError {
    OpError::new(code::INVALID, e.0)
}

/// Reads a response stream to its end (trailers included) and validates it.
async fn read_responses(
    mut responses: Streaming<pb::Response>,
    n: u32,
    response_size: u32,
    payload: Payload,
) -> Result<u64, OpError> {
    let mut received: u32 = 0;
    let mut bytes = 0u64;
    // `message()` returns None only after trailers with status OK; a non-OK status is an error.
    while let Some(response) = responses.message().await.map_err(status_error)? {
        if received == n {
            return Err(OpError::new(
                code::INVALID,
                format!("the server sent more than the {n} responses asked for"),
            ));
        }
        check_response(&response, payload, u64::from(received), response_size).map_err(invalid)?;
        bytes += payload_len(&response.payload, response.body.as_ref());
        received += 1;
    }
    if received != n {
        return Err(OpError::new(
            code::INVALID,
            format!("the server ended the call after {received} of {n} responses"),
        ));
    }
    Ok(bytes)
}

impl Lane for GrpcLane {
    /// Send-saturation: tonic pulls the request stream from its own task as HTTP/2 flow control
    /// allows; each pull after the first marks the previous message accepted.
    async fn saturate<C: Clock>(
        &mut self,
        clock: &C,
        sender: &mut StreamSender,
    ) -> Result<(), OpError> {
        if !sender.open(clock.now()) {
            return Ok(());
        }
        let Workload {
            request_size,
            response_size,
            payload,
            ..
        } = self.workload;
        // The stream moves into tonic, so it works on a shared copy of the sender (locked once
        // per message, by one task at a time), which comes back when the call ends.
        let placeholder = || StreamSender::new(&crate::engine::Window::new(0, 0, 0));
        let shared = Arc::new(Mutex::new(std::mem::replace(sender, placeholder())));
        let requests = stream::unfold(
            (shared.clone(), clock.clone(), false),
            move |(shared, clock, started)| async move {
                let seq = {
                    let mut sender = shared.lock().unwrap_or_else(|p| p.into_inner());
                    let now = clock.now();
                    if started {
                        sender.accepted(now, u64::from(request_size));
                    }
                    sender.next_message(now)
                }?;
                let message = request(payload, seq, request_size, response_size, 0);
                Some((message, (shared, clock, true)))
            },
        );
        let result = self.client.client_stream(requests).await;
        *sender = std::mem::replace(
            &mut *shared.lock().unwrap_or_else(|p| p.into_inner()),
            placeholder(),
        );
        let summary = result.map_err(status_error)?.into_inner();
        check_stream_summary(
            &summary,
            payload,
            sender.sent(),
            request_size,
            response_size,
        )
        .map_err(invalid)?;
        sender.summary_received(
            clock.now(),
            payload_len(&summary.payload, summary.body.as_ref()),
        );
        Ok(())
    }

    async fn call(&mut self, seq: u64) -> Result<OpOutcome, OpError> {
        let Workload {
            shape,
            request_size,
            response_size,
            messages,
            payload,
        } = self.workload;
        let n = u64::from(messages);
        // Streams build their requests lazily, as tonic pulls them, inside the measured operation.
        let requests = move || {
            stream::iter((0..n).map(move |i| request(payload, i, request_size, response_size, 0)))
        };
        match shape {
            Shape::Unary => {
                let response = self
                    .client
                    .unary(request(payload, seq, request_size, response_size, 0))
                    .await
                    .map_err(status_error)?
                    .into_inner();
                check_response(&response, payload, seq, response_size).map_err(invalid)?;
                Ok(OpOutcome {
                    requests: 1,
                    responses: 1,
                    request_bytes: u64::from(request_size),
                    response_bytes: payload_len(&response.payload, response.body.as_ref()),
                })
            }
            Shape::ClientStream => {
                let summary = self
                    .client
                    .client_stream(requests())
                    .await
                    .map_err(status_error)?
                    .into_inner();
                check_summary(&summary, payload, messages, request_size, response_size)
                    .map_err(invalid)?;
                Ok(OpOutcome {
                    requests: n,
                    responses: 1,
                    request_bytes: n * u64::from(request_size),
                    response_bytes: payload_len(&summary.payload, summary.body.as_ref()),
                })
            }
            Shape::ServerStream => {
                let responses = self
                    .client
                    .server_stream(request(payload, seq, request_size, response_size, messages))
                    .await
                    .map_err(status_error)?
                    .into_inner();
                let response_bytes =
                    read_responses(responses, messages, response_size, payload).await?;
                Ok(OpOutcome {
                    requests: 1,
                    responses: n,
                    request_bytes: u64::from(request_size),
                    response_bytes,
                })
            }
            Shape::Bidi => {
                // tonic sends the request stream from its own task as HTTP/2 flow control allows,
                // while this task reads responses: full duplex, no waiting between requests.
                let responses = self
                    .client
                    .bidi(requests())
                    .await
                    .map_err(status_error)?
                    .into_inner();
                let response_bytes =
                    read_responses(responses, messages, response_size, payload).await?;
                Ok(OpOutcome {
                    requests: n,
                    responses: n,
                    request_bytes: n * u64::from(request_size),
                    response_bytes,
                })
            }
        }
    }
}

/// The backpressure submitter: ready when the channel is (`tower::Service::poll_ready`: tonic's
/// request buffer has a slot and hyper's HTTP/2 connection can take another stream).
pub struct GrpcSubmitter {
    channel: Channel,
    /// A clone whose readiness is being awaited: a permit it acquired stays with it, so a
    /// cancelled `ready` loses nothing.
    pending: Option<Channel>,
    workload: Option<Workload>,
    lanes: Vec<GrpcLane>,
}

impl Submitter for GrpcSubmitter {
    type Ticket = GrpcLane;

    async fn ready(&mut self) -> Result<GrpcLane, OpError> {
        let workload = self
            .workload
            .ok_or_else(|| OpError::new(code::INTERNAL, "a submitter without lanes"))?;
        let channel = self.pending.get_or_insert_with(|| self.channel.clone());
        tower::ServiceExt::<http::Request<tonic::body::Body>>::ready(channel)
            .await
            .map_err(|e| OpError::new(code::CONNECT, format!("the gRPC channel failed: {e}")))?;
        // The ready clone carries its buffer slot into the call (tonic's own `ready` inside the
        // call then returns at once).
        let channel = self
            .pending
            .take()
            .ok_or_else(|| OpError::new(code::INTERNAL, "no channel was made ready"))?;
        Ok(GrpcLane {
            client: bench_client(channel),
            workload,
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

/// The service: answers every shape as bench.proto says and counts what it handled.
struct GrpcService {
    state: Arc<ServerState>,
}

type ResponseStream = Pin<Box<dyn Stream<Item = Result<pb::Response, Status>> + Send>>;

#[tonic::async_trait]
impl BenchService for GrpcService {
    async fn unary(&self, request: Request<pb::Request>) -> Result<Response<pb::Response>, Status> {
        let mut tally = CallTally::new(&self.state);
        let request = request.into_inner();
        tally.request();
        check_request(&request, Shape::Unary).map_err(Status::invalid_argument)?;
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
        let mut summary = SummaryBuilder::default();
        while let Some(request) = requests.message().await? {
            tally.request();
            check_request(&request, Shape::ClientStream).map_err(Status::invalid_argument)?;
            summary.add(&request);
        }
        if tally.requests() == 0 {
            return Err(Status::invalid_argument(
                "a client stream carries at least one request",
            ));
        }
        let summary = summary.finish();
        self.state.hold().await;
        tally.response();
        Ok(Response::new(summary))
    }

    type ServerStreamStream = ResponseStream;

    async fn server_stream(
        &self,
        request: Request<pb::Request>,
    ) -> Result<Response<ResponseStream>, Status> {
        let mut tally = CallTally::new(&self.state);
        let request = request.into_inner();
        tally.request();
        check_request(&request, Shape::ServerStream).map_err(Status::invalid_argument)?;
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
        let mut tally = CallTally::new(&self.state);
        // Each request is answered as it arrives, with the same seq.
        let responses = request.into_inner().map(move |request| {
            let request = request?;
            tally.request();
            check_request(&request, Shape::Bidi).map_err(Status::invalid_argument)?;
            tally.response();
            Ok(response_to(&request, request.seq))
        });
        Ok(Response::new(stalled(Box::pin(responses), &self.state)))
    }
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
/// streams needs its TLS features, which would bring a second TLS configuration path).
struct TlsConnection(tokio_rustls::server::TlsStream<TcpStream>);

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
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
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
    let accept_loop = tokio::spawn(async move {
        loop {
            let (tcp, remote) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    eprintln!("rpcarena-peer-rust: accepting a TCP connection failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            // Each handshake on its own task, so one slow handshake never blocks another.
            let acceptor = acceptor.clone();
            let connections = connections.clone();
            tokio::spawn(async move {
                if let Err(e) = tune_tcp(&tcp) {
                    eprintln!("rpcarena-peer-rust: cannot set TCP_NODELAY for {remote}: {e}");
                }
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        let _ = connections.send(Ok(TlsConnection(stream))).await;
                    }
                    Ok(Err(e)) => {
                        eprintln!("rpcarena-peer-rust: TLS handshake with {remote} failed: {e}")
                    }
                    Err(_) => {
                        eprintln!("rpcarena-peer-rust: TLS handshake with {remote} timed out")
                    }
                }
            });
        }
    });
    let service = BenchServiceServer::new(GrpcService { state })
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = Server::builder()
        .initial_stream_window_size(FLOW_WINDOW)
        .initial_connection_window_size(FLOW_WINDOW)
        .http2_adaptive_window(Some(false))
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_frame_size(MAX_FRAME_SIZE)
        .tcp_nodelay(true)
        .add_service(service)
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::ReceiverStream::new(incoming),
            async {
                let _ = stopped.await;
            },
        );
    let task = tokio::spawn(async move {
        let result = server.await.context("the gRPC server failed");
        accept_loop.abort();
        result
    });
    Ok(RunningServer::new(local_addr, stop, task))
}
