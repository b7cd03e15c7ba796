//! The three transport stacks (docs/stacks.md), each with a client side (lanes for the engine)
//! and a server side.
//!
//! - [`grpc`]: tonic, gRPC over HTTP/2 over TLS over TCP, one connection for all lanes;
//! - [`quic`]: the native framing on quinn, one QUIC connection, one bidirectional stream per RPC;
//! - [`tcp`]: the native framing over TLS over TCP, one connection per lane.
//!
//! [`framing`] is the native wire format and [`native`] the RPC logic on top of it, written once
//! over `AsyncRead`/`AsyncWrite` and shared by `quic` and `tcp`. [`validate`] is the server's
//! validation duty, one core for every stack, so that all stacks check requests identically.
//! [`grpc_fault`] is the gRPC server of a conformance fault (crate::fault); the native stacks run
//! faults in [`native`].

pub mod conn;
pub mod framing;
pub mod grpc;
pub mod grpc_fault;
pub mod native;
pub mod quic;
pub mod tcp;
pub mod validate;
pub mod workload;
pub mod zmq;
pub mod zmq_client;
pub mod zmq_server;
pub mod zmq_wire;

pub use workload::Workload;

use crate::args::MAX_PAYLOAD;
use crate::engine::pool::Submitter;
use crate::engine::{Lane, OpError};
use crate::fault::ServerFault;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::Shape;
use rustls_pki_types::ServerName;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Flow-control windows of every stack (HTTP/2 stream and connection windows, QUIC stream and
/// connection receive windows and send window): 16 MiB, above the largest bandwidth-delay product
/// we emulate (1 Gbit/s x 80 ms = 10 MB), so no stack is window-limited.
pub const FLOW_WINDOW: u32 = 16 * 1024 * 1024;

/// Concurrent streams a server allows per connection (HTTP/2 and QUIC): above the largest
/// concurrency (10000), so no RPC waits for a stream credit.
pub const MAX_CONCURRENT_STREAMS: u32 = 10_000;

/// Largest encoded message: the largest payload plus room for the other fields.
pub const MAX_MESSAGE: usize = MAX_PAYLOAD as usize + 1024;

/// How long a TLS handshake of an accepted connection may take before the server drops it.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Congestion control of every TCP socket (grpc and tcp stacks): Cubic, the algorithm the quic
/// stack uses, so that the comparison is between stacks and not between congestion controllers
/// (hosts may default to another, e.g. BBR).
pub const TCP_CONGESTION: &str = "cubic";

/// TCP_NODELAY on every TCP socket (grpc and tcp stacks, both ends): small messages must leave
/// at once, not wait for Nagle's algorithm.
pub const TCP_NODELAY: bool = true;

/// Compression of messages on every stack: none.
pub const COMPRESSION: &str = "none";

/// Sets [`TCP_CONGESTION`] on a TCP socket.
fn set_congestion(socket: &impl std::os::fd::AsFd) -> nix::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    setsockopt(socket, sockopt::TcpCongestion, &TCP_CONGESTION.into())
}

/// The congestion controller this process's TCP sockets get, for `capabilities`: [`TCP_CONGESTION`]
/// when the kernel lets this process set it, else `host default (NAME)`. It asks on a TCP socket
/// that is never bound or connected.
pub fn tcp_congestion_in_use() -> String {
    use nix::sys::socket::{getsockopt, sockopt};
    let socket = match socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None) {
        Ok(socket) => socket,
        Err(e) => return format!("unknown (no TCP socket: {e})"),
    };
    if set_congestion(&socket).is_ok() {
        return TCP_CONGESTION.to_string();
    }
    match getsockopt(&socket, sockopt::TcpCongestion) {
        Ok(name) => format!(
            "host default ({})",
            name.to_string_lossy().trim_end_matches('\0')
        ),
        Err(e) => format!("host default (unknown: {e})"),
    }
}

/// Worker threads of the peer's tokio runtime: one per CPU the process may use (docs/stacks.md,
/// "Runtime"). main.rs builds the runtime with it and `capabilities` declares it.
pub fn runtime_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The runtime as `capabilities` declares it.
pub fn runtime_description() -> String {
    format!("tokio multi-thread, {} workers", runtime_workers())
}

/// Tunes a TCP socket of either TCP stack, client or server side: [`TCP_NODELAY`] and
/// [`TCP_CONGESTION`]. A congestion controller the kernel refuses (unprivileged and not in
/// net.ipv4.tcp_allowed_congestion_control) is reported once on stderr and the host's default is
/// kept.
pub fn tune_tcp(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    static WARNED: std::sync::Once = std::sync::Once::new();
    stream.set_nodelay(TCP_NODELAY)?;
    if let Err(e) = set_congestion(stream) {
        WARNED.call_once(|| {
            eprintln!(
                "rpcarena-peer-rust: cannot set TCP congestion control {TCP_CONGESTION} ({e}); \
                 keeping the host default; run as root or add it to \
                 net.ipv4.tcp_allowed_congestion_control"
            )
        });
    }
    Ok(())
}

/// What a client stack needs to connect.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `--server` as given (HOST:PORT).
    pub server: String,
    /// `--server-name`, parsed (`None` with `--tls off`).
    pub server_name: Option<ServerName<'static>>,
    /// The client TLS configuration (crate::tls), with the stack's ALPN (`None` with `--tls
    /// off`: plaintext).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The workload.
    pub workload: Workload,
    /// Number of lanes.
    pub lanes: u32,
}

/// How a call whose answer is not checked ended: its terminal status, and the response messages
/// that came before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// gRPC status code (0 = OK), as the server sent it.
    pub code: u32,
    /// The status message.
    pub message: String,
    /// Response messages received before the status.
    pub responses: u64,
}

/// Sends one call with the given requests, as they are, and reports how the server ended it
/// without checking the responses: the conformance kit's malformed calls (crate::fault).
pub trait RawCall {
    /// One call of `shape` carrying `requests` (possibly none). Transport failures are errors
    /// with their code; any status the server sent is a [`Verdict`].
    fn raw_call(
        &mut self,
        shape: Shape,
        requests: Vec<pb::Request>,
    ) -> impl Future<Output = Result<Verdict, OpError>> + Send;
}

/// A stack's client side: opens its connections and hands out lanes.
pub trait ClientStack: Sized + Send + 'static {
    /// One lane of this stack.
    type Lane: Lane + RawCall;
    /// The backpressure model's submitter: ready when the transport accepts one more operation.
    type Submitter: Submitter;

    /// The submitter for the backpressure model over `lanes` (tcp: a pool of its connections;
    /// grpc and quic keep the lanes and submit on the shared connection).
    fn submitter(&self, lanes: Vec<Self::Lane>) -> Self::Submitter;

    /// The lanes back from a submitter, for the next phase or for closing.
    fn lanes_back(submitter: Self::Submitter) -> Vec<Self::Lane>;

    /// Opens the connections (TLS handshakes included) and returns one lane per unit of
    /// concurrency. Errors carry code `tls`, `connect` or `config`.
    fn connect(
        settings: &ClientSettings,
    ) -> impl Future<Output = Result<(Self, Vec<Self::Lane>), OpError>> + Send;

    /// Transport connections opened.
    fn connections(&self) -> u32;

    /// Reads the transport statistics of every connection (crate::transport); `None` where the
    /// stack cannot.
    fn transport_probe(&self) -> Option<crate::transport::Probe> {
        None
    }

    /// The CPU time so far of the thread that submits every operation (revision 1.3,
    /// `submit_cpu_ns`), where the stack has one (zmq's socket thread).
    fn submit_cpu_ns(&self) -> impl Future<Output = Option<u64>> + Send {
        async { None }
    }

    /// Closes every connection (bounded in time).
    fn close(self, lanes: Vec<Self::Lane>) -> impl Future<Output = ()> + Send;
}

/// Why a running server stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// tonic's server ended with an error.
    #[error("the gRPC server failed")]
    Grpc(#[source] tonic::transport::Error),
    /// quinn's endpoint stopped handing out connections.
    #[error("the QUIC endpoint stopped accepting")]
    QuicStoppedAccepting,
    /// The server task ended without an error, which only [`RunningServer::stop`] should make
    /// it do.
    #[error("the server stopped accepting connections unexpectedly")]
    Stopped,
    /// The server task panicked or was cancelled.
    #[error("the server task failed: {0}")]
    Task(tokio::task::JoinError),
}

/// A running server: its bound address, and how to stop it.
pub struct RunningServer {
    /// The address actually bound (port 0 resolved).
    pub local_addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServerError>>,
}

impl RunningServer {
    /// A server whose `task` finishes after `stop` fires (or on a fatal error).
    pub fn new(
        local_addr: SocketAddr,
        stop: oneshot::Sender<()>,
        task: JoinHandle<Result<(), ServerError>>,
    ) -> RunningServer {
        RunningServer {
            local_addr,
            stop,
            task,
        }
    }

    /// Completes if the server task ends on its own, which only a fatal error makes it do.
    pub async fn failed(&mut self) -> ServerError {
        match (&mut self.task).await {
            Ok(Ok(())) => ServerError::Stopped,
            Ok(Err(e)) => e,
            Err(e) => ServerError::Task(e),
        }
    }

    /// Stops accepting, closes connections, and waits for that at most `grace`.
    pub async fn stop(mut self, grace: Duration) {
        let _ = self.stop.send(());
        match tokio::time::timeout(grace, &mut self.task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => eprintln!(
                "rpcarena-peer-rust: server stopped with an error: {}",
                crate::failure::chain(&e)
            ),
            Ok(Err(e)) => eprintln!("rpcarena-peer-rust: server task failed: {e}"),
            Err(_) => {
                eprintln!(
                    "rpcarena-peer-rust: server did not close within {grace:?}; dropping connections"
                );
                self.task.abort();
            }
        }
    }
}

/// A server's counters, reported in `stopped`: RPCs handled, messages received and sent, and
/// calls answered with a non-OK status; revision 1.3: one-way commands received and validated
/// (shape `send`) and replies dropped at a high-water mark (zmq).
#[derive(Debug, Default)]
pub struct Counters {
    rpcs: AtomicU64,
    requests: AtomicU64,
    responses: AtomicU64,
    rejected: AtomicU64,
    commands: AtomicU64,
    dropped: AtomicU64,
}

impl Counters {
    /// (rpcs, requests, responses, rejected).
    pub fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.rpcs.load(Ordering::Relaxed),
            self.requests.load(Ordering::Relaxed),
            self.responses.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
        )
    }

    /// One-way commands received and validated (shape `send`).
    pub fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    /// Replies dropped because the client's queue was at its high-water mark (zmq).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Adds to the counters at once (the zmq server counts on its own thread and adds in
    /// batches): rpcs, requests, responses, commands, dropped.
    pub fn add(&self, rpcs: u64, requests: u64, responses: u64, commands: u64, dropped: u64) {
        for (counter, n) in [
            (&self.rpcs, rpcs),
            (&self.requests, requests),
            (&self.responses, responses),
            (&self.commands, commands),
            (&self.dropped, dropped),
        ] {
            if n > 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

/// What every connection of a server shares: its counters and, for diagnostics and the
/// conformance kit, a stall or a fault.
#[derive(Debug, Default)]
pub struct ServerState {
    /// RPCs and messages handled.
    pub counters: Counters,
    /// `--stall-every-ms`/`--stall-ms`: periodic stalls of every response (not in the protocol).
    pub stall: Option<Stall>,
    /// `--conformance-fault`: how the server misbehaves on every call (crate::fault).
    pub fault: Option<ServerFault>,
    /// Every accepted connection, for the `stopped` event's transport statistics.
    pub connections: crate::transport::ServerConnections,
    /// Whether the stack counts `dropped` (zmq), which `window` and `stopped` then print.
    pub counts_dropped: bool,
    /// Revision 1.3: the message of the first call, command or frame rejected, for `window` and
    /// `stopped`.
    pub first_rejection: std::sync::OnceLock<String>,
}

impl ServerState {
    /// One call was answered with a non-OK status (a rare path: one shared atomic addition).
    pub fn reject(&self) {
        self.counters.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// One call, command or frame was rejected for `why`: counted, and `why` kept (on one line)
    /// if it is the first.
    pub fn reject_with(&self, why: &str) {
        self.reject();
        self.note_rejection(why);
    }

    /// Keeps `why` as the first rejection if none was kept yet (the counter is the caller's).
    pub fn note_rejection(&self, why: &str) {
        if self.first_rejection.get().is_none() {
            let line = why.split_whitespace().collect::<Vec<_>>().join(" ");
            let _ = self.first_rejection.set(line);
        }
    }

    /// One command (shape `send`) received and validated.
    pub fn command(&self) {
        self.counters.commands.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits out a stall in progress, if any, before a response message is sent.
    pub async fn hold(&self) {
        if let Some(stall) = &self.stall {
            let wait = stall.remaining(stall.epoch.elapsed());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// A diagnostic server stall: for `length` out of every `every`, counted from the server's
/// start, the server holds every response it is about to send until the stall ends, as a
/// garbage-collection pause or a blocked disk would. It shows what an open-loop client measures
/// that a closed loop hides (docs/stacks.md, "Diagnostic stalls").
#[derive(Debug, Clone, Copy)]
pub struct Stall {
    /// When the first stall began.
    pub epoch: std::time::Instant,
    /// Period: a stall begins every this long.
    pub every: Duration,
    /// How long each stall lasts (shorter than `every`).
    pub length: Duration,
}

impl Stall {
    /// How long a response about to be sent `since_epoch` after the first stall must wait: the
    /// rest of the stall in progress, or zero between stalls.
    pub fn remaining(&self, since_epoch: Duration) -> Duration {
        let every = self.every.as_nanos().max(1);
        let phase = Duration::from_nanos((since_epoch.as_nanos() % every) as u64);
        self.length.saturating_sub(phase)
    }
}

/// Counts one RPC's messages locally and adds them to the shared [`Counters`] once, when the RPC
/// ends (also when it is cancelled), so the shared atomics are touched three times per RPC and
/// not per message.
#[derive(Debug)]
pub struct CallTally {
    state: Arc<ServerState>,
    requests: u64,
    responses: u64,
}

impl CallTally {
    /// Starts counting one RPC.
    pub fn new(state: &Arc<ServerState>) -> CallTally {
        CallTally {
            state: state.clone(),
            requests: 0,
            responses: 0,
        }
    }

    /// One request message received.
    pub fn request(&mut self) {
        self.requests += 1;
    }

    /// One response message sent.
    pub fn response(&mut self) {
        self.responses += 1;
    }

    /// The call was answered with a non-OK status.
    pub fn reject(&self) {
        self.state.reject();
    }

    /// The call was answered with a non-OK status for `why` (kept if it is the first).
    pub fn reject_with(&self, why: &str) {
        self.state.reject_with(why);
    }
}

impl Drop for CallTally {
    fn drop(&mut self) {
        let counters = &self.state.counters;
        counters.rpcs.fetch_add(1, Ordering::Relaxed);
        counters
            .requests
            .fetch_add(self.requests, Ordering::Relaxed);
        counters
            .responses
            .fetch_add(self.responses, Ordering::Relaxed);
    }
}

/// Why a server cannot listen.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// `--listen` does not resolve.
    #[error("--listen")]
    Resolve(#[source] ResolveError),
    /// The TCP listener cannot bind (grpc, tcp).
    #[error("--listen {addr}: cannot bind TCP")]
    BindTcp {
        /// The address asked for.
        addr: SocketAddr,
        /// What the kernel said.
        source: io::Error,
    },
    /// The UDP socket cannot be made or bound (quic).
    #[error("--listen {addr}")]
    Udp {
        /// The address asked for.
        addr: SocketAddr,
        /// What went wrong.
        source: quic::UdpError,
    },
    /// The rustls configuration is unusable for QUIC.
    #[error("TLS configuration unusable for QUIC")]
    QuicTls(#[source] quinn::crypto::rustls::NoInitialCipherSuite),
    /// quinn cannot start its endpoint on the socket.
    #[error("cannot start a QUIC endpoint")]
    QuicEndpoint(#[source] io::Error),
    /// The address actually bound cannot be read back.
    #[error("cannot read the bound address")]
    BoundAddress(#[source] io::Error),
}

/// Binds a TCP listener for a server stack and reads the address actually bound (port 0 becomes
/// a real port), with the protocol's phase and codes on failure.
pub async fn bind_tcp(
    addr: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), crate::failure::Failure> {
    use crate::failure::FailExt;
    use rpcarena_protocol::event::{code, phase};
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError::BindTcp { addr, source })
        .fail(phase::LISTEN, code::CONFIG)?;
    let local_addr = listener
        .local_addr()
        .map_err(ListenError::BoundAddress)
        .fail(phase::LISTEN, code::INTERNAL)?;
    Ok((listener, local_addr))
}

/// Why HOST:PORT gives no address.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The lookup failed.
    #[error("cannot resolve {host_port}")]
    Lookup {
        /// What was looked up.
        host_port: String,
        /// What the resolver said.
        source: io::Error,
    },
    /// The lookup found nothing.
    #[error("{host_port} resolves to no address")]
    NoAddress {
        /// What was looked up.
        host_port: String,
    },
}

/// Resolves a client's `--server` for its connections: a failure is the operation error
/// `connect`.
pub async fn resolve_server(settings: &ClientSettings) -> Result<SocketAddr, OpError> {
    resolve(&settings.server).await.map_err(|e| {
        OpError::new(
            rpcarena_protocol::event::code::CONNECT,
            crate::failure::chain(&e),
        )
    })
}

/// Resolves HOST:PORT (an IP address or a name) to its first address.
pub async fn resolve(host_port: &str) -> Result<SocketAddr, ResolveError> {
    tokio::net::lookup_host(host_port)
        .await
        .map_err(|source| ResolveError::Lookup {
            host_port: host_port.to_string(),
            source,
        })?
        .next()
        .ok_or_else(|| ResolveError::NoAddress {
            host_port: host_port.to_string(),
        })
}

/// gRPC status codes used by the native framing (same numbers as gRPC).
pub mod status {
    /// Success.
    pub const OK: u32 = 0;
    /// The request is malformed or out of range.
    pub const INVALID_ARGUMENT: u32 = 3;
    /// Unknown method.
    pub const UNIMPLEMENTED: u32 = 12;
}

#[cfg(test)]
mod tests {
    use super::*;
    #[tokio::test]
    async fn tcp_sockets_get_nodelay_and_the_congestion_controller() {
        use nix::sys::socket::{getsockopt, sockopt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        tune_tcp(&stream).unwrap();
        assert!(stream.nodelay().unwrap());
        let congestion = getsockopt(&stream, sockopt::TcpCongestion).unwrap();
        // where the kernel refuses cubic (unprivileged), the host default stays
        if nix::unistd::geteuid().is_root() {
            assert_eq!(
                congestion.to_string_lossy().trim_end_matches('\0'),
                TCP_CONGESTION
            );
        }
    }

    #[test]
    fn the_declared_congestion_controller_is_the_one_sockets_get() {
        let declared = tcp_congestion_in_use();
        if nix::unistd::geteuid().is_root() {
            assert_eq!(declared, TCP_CONGESTION);
        } else {
            assert!(declared == TCP_CONGESTION || declared.starts_with("host default ("));
        }
        assert!(runtime_description().ends_with(&format!("{} workers", runtime_workers())));
    }

    #[test]
    fn call_tallies_add_once_when_dropped() {
        let state = Arc::new(ServerState::default());
        {
            let mut tally = CallTally::new(&state);
            tally.request();
            tally.request();
            tally.response();
            assert_eq!(state.counters.snapshot(), (0, 0, 0, 0));
        }
        state.reject();
        assert_eq!(state.counters.snapshot(), (1, 2, 1, 1));
    }

    #[test]
    fn a_stall_holds_responses_for_the_rest_of_it_and_none_between() {
        let stall = Stall {
            epoch: std::time::Instant::now(),
            every: Duration::from_millis(500),
            length: Duration::from_millis(100),
        };
        let ms = Duration::from_millis;
        assert_eq!(stall.remaining(ms(0)), ms(100));
        assert_eq!(stall.remaining(ms(30)), ms(70));
        assert_eq!(stall.remaining(ms(100)), ms(0));
        assert_eq!(stall.remaining(ms(499)), ms(0));
        assert_eq!(stall.remaining(ms(520)), ms(80));
    }
}
