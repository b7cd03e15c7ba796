//! `quic`: the native framing on quinn. One QUIC connection per client multiplexes every lane;
//! each RPC is one bidirectional stream (client: HEADER MESSAGE* END, then finish; server:
//! MESSAGE* STATUS, then finish).

use super::native::{self, CallEnd, RecvHalf, SendHalf};
use super::{
    ClientSettings, ClientStack, FLOW_WINDOW, ListenError, MAX_CONCURRENT_STREAMS, RawCall,
    RunningServer, ServerError, ServerState, Verdict, Workload, resolve_server,
};
use crate::engine::pool::{Submitter, Ticket};
use crate::engine::saturation::StreamSender;
use crate::engine::{Clock, Lane, OpError, OpOutcome};
use crate::failure::{FailExt, Failure};
use futures::StreamExt;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{ConnectionError, Endpoint, EndpointConfig, TransportConfig, VarInt};
use rpcarena_protocol::event::{Setting, code, phase};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// UDP socket receive and send buffers: the kernel default (208 KiB) drops packets in bursts on
/// emulated lossy paths, which QUIC then has to recover as losses that TCP never sees.
pub const UDP_BUFFER: usize = 8 * 1024 * 1024;

/// Idle timeout; keep-alives every [`KEEP_ALIVE`] keep an armed client's connection open while
/// it waits for START.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Keep-alive interval (well under the idle timeout).
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Connections per client: one, shared by every lane, one bidirectional stream per call.
pub const CONNECTIONS: u32 = 1;

/// Congestion controller of both ends, set explicitly ([`transport_config`]).
pub const CONGESTION: &str = "cubic";

/// The stack's own settings as `capabilities` declares them (docs/stacks.md, "Settings every
/// peer declares"), from the constants both ends are configured with; `udp_buffer_bytes` is what
/// the kernel grants this process on a UDP socket that is never bound.
pub fn declared() -> Vec<(&'static str, Setting)> {
    let udp_buffer = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .map(|socket| {
            let (received, sent) = raise_buffers(&socket);
            received.min(sent)
        })
        .unwrap_or(0);
    vec![
        ("stream_window", u64::from(FLOW_WINDOW).into()),
        ("connection_window", u64::from(FLOW_WINDOW).into()),
        ("send_window", u64::from(FLOW_WINDOW).into()),
        (
            "max_concurrent_streams",
            u64::from(MAX_CONCURRENT_STREAMS).into(),
        ),
        ("max_message_bytes", (super::MAX_MESSAGE as u64).into()),
        ("congestion_control", CONGESTION.into()),
        ("udp_buffer_bytes", (udp_buffer as u64).into()),
        ("idle_timeout_ms", (IDLE_TIMEOUT.as_millis() as u64).into()),
        ("keep_alive_ms", (KEEP_ALIVE.as_millis() as u64).into()),
        ("connections", u64::from(CONNECTIONS).into()),
    ]
}

/// How long closing waits for the peer to acknowledge.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

impl RecvHalf for quinn::RecvStream {
    const ONE_CALL: bool = true;
}

impl SendHalf for quinn::SendStream {
    fn finish_call(&mut self) -> io::Result<()> {
        self.finish().map_err(io::Error::other)
    }
}

/// The transport settings of both ends (docs/stacks.md, "quic").
pub fn transport_config() -> TransportConfig {
    let mut transport = TransportConfig::default();
    transport
        .stream_receive_window(VarInt::from_u32(FLOW_WINDOW))
        .receive_window(VarInt::from_u32(FLOW_WINDOW))
        .send_window(u64::from(FLOW_WINDOW))
        .max_concurrent_bidi_streams(VarInt::from_u32(MAX_CONCURRENT_STREAMS))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        // CONGESTION names this controller in capabilities.
        .congestion_controller_factory(Arc::new(quinn::congestion::CubicConfig::default()))
        .keep_alive_interval(Some(KEEP_ALIVE));
    // 30 s fits a VarInt of milliseconds, so this conversion cannot fail.
    if let Ok(idle) = IDLE_TIMEOUT.try_into() {
        transport.max_idle_timeout(Some(idle));
    }
    transport
}

/// Why a QUIC endpoint's UDP socket cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum UdpError {
    /// The kernel refuses a UDP socket.
    #[error("cannot create a UDP socket")]
    Create(#[source] io::Error),
    /// The socket cannot bind the address.
    #[error("cannot bind UDP {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the kernel said.
        source: io::Error,
    },
}

/// A UDP socket bound to `addr` with large buffers, ready for quinn.
fn udp_socket(addr: SocketAddr) -> Result<std::net::UdpSocket, UdpError> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(UdpError::Create)?;
    let (received, sent) = raise_buffers(&socket);
    if received < UDP_BUFFER || sent < UDP_BUFFER {
        eprintln!(
            "rpcarena-peer-rust: UDP buffers are only {received} (receive) and {sent} (send) \
             bytes, below {UDP_BUFFER}; raise net.core.rmem_max and net.core.wmem_max or run as \
             root"
        );
    }
    socket
        .bind(&addr.into())
        .map_err(|source| UdpError::Bind { addr, source })?;
    Ok(socket.into())
}

/// Raises SO_RCVBUF/SO_SNDBUF to [`UDP_BUFFER`]: with the *FORCE variants when privileged (they
/// ignore net.core.rmem_max/wmem_max), else the normal options, which the kernel caps at those
/// limits. Returns the (receive, send) sizes obtained; never fails (small buffers are a warning,
/// not an error).
fn raise_buffers(socket: &Socket) -> (usize, usize) {
    use nix::sys::socket::{setsockopt, sockopt};
    let size = UDP_BUFFER;
    if setsockopt(socket, sockopt::RcvBufForce, &size).is_err() {
        let _ = socket.set_recv_buffer_size(size);
    }
    if setsockopt(socket, sockopt::SndBufForce, &size).is_err() {
        let _ = socket.set_send_buffer_size(size);
    }
    // Linux reports twice the value set (it counts its bookkeeping overhead).
    (
        socket.recv_buffer_size().unwrap_or(0) / 2,
        socket.send_buffer_size().unwrap_or(0) / 2,
    )
}

/// The local address the kernel routes to `server`, with port 0: what a QUIC client binds
/// (docs/peer-protocol.md, "Addresses"), never the unspecified address, so the client's packets
/// leave from the interface a namespace's routes choose. A UDP socket connected to the server
/// (which sends nothing) reports it.
pub fn local_address_for(server: SocketAddr) -> io::Result<SocketAddr> {
    let any: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let probe = std::net::UdpSocket::bind(any)?;
    probe.connect(server)?;
    Ok(SocketAddr::new(probe.local_addr()?.ip(), 0))
}

fn endpoint(
    socket: std::net::UdpSocket,
    server: Option<quinn::ServerConfig>,
) -> io::Result<Endpoint> {
    Endpoint::new(
        EndpointConfig::default(),
        server,
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// Whether a connection error is a TLS failure (QUIC carries TLS alerts as CRYPTO_ERROR codes
/// 0x100 to 0x1ff, whichever side detected it).
fn is_tls_error(error: &ConnectionError) -> bool {
    let code = match error {
        ConnectionError::TransportError(e) => u64::from(e.code),
        ConnectionError::ConnectionClosed(close) => u64::from(close.error_code),
        _ => return false,
    };
    code & !0xff == 0x100
}

// ---------------------------------------------------------------------------------------------
// Client

/// The client: one endpoint and one connection for all lanes.
pub struct QuicClient {
    endpoint: Endpoint,
    connection: quinn::Connection,
    workload: Workload,
}

/// A lane: a handle on the shared connection; each call opens its own stream.
pub struct QuicLane {
    connection: quinn::Connection,
    workload: Workload,
}

impl ClientStack for QuicClient {
    type Lane = QuicLane;
    type Submitter = QuicSubmitter;

    fn submitter(&self, lanes: Vec<QuicLane>) -> QuicSubmitter {
        QuicSubmitter {
            connection: self.connection.clone(),
            workload: self.workload,
            lanes,
        }
    }

    fn lanes_back(submitter: QuicSubmitter) -> Vec<QuicLane> {
        submitter.lanes
    }

    async fn connect(settings: &ClientSettings) -> Result<(QuicClient, Vec<QuicLane>), OpError> {
        let server = resolve_server(settings).await?;
        let local = local_address_for(server).map_err(|e| {
            OpError::new(
                code::CONNECT,
                format!("no local address routes to {server}: {e}"),
            )
        })?;
        let socket = udp_socket(local)
            .map_err(|e| OpError::new(code::CONNECT, crate::failure::chain(&e)))?;
        let endpoint = endpoint(socket, None).map_err(|e| {
            OpError::new(code::CONNECT, format!("cannot start a QUIC endpoint: {e}"))
        })?;
        // args.rs refuses --tls off for quic, so both are there.
        let (Some(tls), Some(server_name)) = (&settings.tls, &settings.server_name) else {
            return Err(OpError::new(
                code::CONFIG,
                "QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic",
            ));
        };
        let crypto = QuicClientConfig::try_from(tls.clone()).map_err(|e| {
            OpError::new(
                code::INTERNAL,
                format!("TLS configuration unusable for QUIC: {e}"),
            )
        })?;
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        config.transport_config(Arc::new(transport_config()));
        let name = server_name.to_str();
        let connecting = endpoint
            .connect_with(config, server, &name)
            .map_err(|e| OpError::new(code::CONFIG, format!("cannot connect to {server}: {e}")))?;
        // 1-RTT only: `into_0rtt` is never used and the TLS config disables early data.
        let connection = connecting.await.map_err(|e| {
            if is_tls_error(&e) {
                OpError::new(
                    code::TLS,
                    crate::tls::handshake_message(&e.to_string(), &settings.server, &name),
                )
            } else {
                OpError::new(
                    code::CONNECT,
                    format!("QUIC connection to {server} failed: {e}"),
                )
            }
        })?;
        let lanes = (0..settings.lanes)
            .map(|_| QuicLane {
                connection: connection.clone(),
                workload: settings.workload,
            })
            .collect();
        Ok((
            QuicClient {
                endpoint,
                connection,
                workload: settings.workload,
            },
            lanes,
        ))
    }

    fn connections(&self) -> u32 {
        CONNECTIONS
    }

    fn transport_probe(&self) -> Option<crate::transport::Probe> {
        Some(crate::transport::Probe::Quic(self.connection.clone()))
    }

    async fn close(self, lanes: Vec<QuicLane>) {
        drop(lanes);
        self.connection.close(VarInt::from_u32(0), b"done");
        let _ = tokio::time::timeout(CLOSE_GRACE, self.endpoint.wait_idle()).await;
    }
}

fn open_error(e: ConnectionError) -> OpError {
    OpError::new(code::CONNECT, format!("cannot open a QUIC stream: {e}"))
}

impl Lane for QuicLane {
    async fn call(&mut self, seq: u64) -> Result<OpOutcome, OpError> {
        let (send, recv) = self.connection.open_bi().await.map_err(open_error)?;
        QuicTicket {
            send,
            recv,
            workload: self.workload,
        }
        .call(seq)
        .await
    }

    async fn saturate<C: Clock>(
        &mut self,
        clock: &C,
        sender: &mut StreamSender,
    ) -> Result<(), OpError> {
        let (send, recv) = self.connection.open_bi().await.map_err(open_error)?;
        let mut writer = native::writer(send);
        let mut reader = native::reader(recv);
        native::saturate(&mut reader, &mut writer, &self.workload, clock, sender).await
    }
}

impl RawCall for QuicLane {
    async fn raw_call(
        &mut self,
        shape: rpcarena_protocol::workload::Shape,
        requests: Vec<rpcarena_protocol::pb::Request>,
    ) -> Result<Verdict, OpError> {
        let (send, recv) = self.connection.open_bi().await.map_err(open_error)?;
        let mut writer = native::writer(send);
        let mut reader = native::reader(recv);
        native::raw_call(&mut reader, &mut writer, shape, requests).await
    }
}

/// The backpressure submitter: ready when quinn's `open_bi()` resolves, i.e. when the server's
/// stream credit (max_concurrent_bidi_streams, 10,000) allows one more stream.
pub struct QuicSubmitter {
    connection: quinn::Connection,
    workload: Workload,
    lanes: Vec<QuicLane>,
}

/// One opened stream, ready for one call.
pub struct QuicTicket {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    workload: Workload,
}

impl Submitter for QuicSubmitter {
    type Ticket = QuicTicket;

    async fn ready(&mut self) -> Result<QuicTicket, OpError> {
        // Cancel-safe: quinn allocates the stream only when the future completes.
        let (send, recv) = self.connection.open_bi().await.map_err(open_error)?;
        Ok(QuicTicket {
            send,
            recv,
            workload: self.workload,
        })
    }
}

impl Ticket for QuicTicket {
    async fn call(self, seq: u64) -> Result<OpOutcome, OpError> {
        let mut writer = native::writer(self.send);
        let mut reader = native::reader(self.recv);
        native::call(&mut reader, &mut writer, &self.workload, seq).await
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// Binds `addr` and serves until stopped.
pub async fn serve(
    addr: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    state: Arc<ServerState>,
) -> Result<RunningServer, Failure> {
    let crypto = QuicServerConfig::try_from(tls)
        .map_err(ListenError::QuicTls)
        .fail(phase::LISTEN, code::INTERNAL)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport_config()));
    let socket = udp_socket(addr)
        .map_err(|source| ListenError::Udp { addr, source })
        .fail(phase::LISTEN, code::CONFIG)?;
    let endpoint = endpoint(socket, Some(config))
        .map_err(ListenError::QuicEndpoint)
        .fail(phase::LISTEN, code::INTERNAL)?;
    let local_addr = endpoint
        .local_addr()
        .map_err(ListenError::BoundAddress)
        .fail(phase::LISTEN, code::INTERNAL)?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let accept = async {
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(serve_connection(incoming, state.clone()));
            }
        };
        tokio::select! {
            () = accept => return Err(ServerError::QuicStoppedAccepting),
            _ = stopped => {}
        }
        endpoint.close(VarInt::from_u32(0), b"shutdown");
        let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
        Ok(())
    });
    Ok(RunningServer::new(local_addr, stop, task))
}

async fn serve_connection(incoming: quinn::Incoming, state: Arc<ServerState>) {
    let remote = incoming.remote_address();
    let connection = match incoming.await {
        Ok(connection) => connection,
        Err(e) => {
            eprintln!("rpcarena-peer-rust: QUIC handshake with {remote} failed: {e}");
            return;
        }
    };
    let _registration = state.connections.register_quic(&connection);
    loop {
        match connection.accept_bi().await {
            Ok((send, recv)) => {
                tokio::spawn(serve_stream(send, recv, state.clone()));
            }
            Err(ConnectionError::ApplicationClosed(_) | ConnectionError::LocallyClosed) => return,
            Err(e) => {
                eprintln!("rpcarena-peer-rust: QUIC connection from {remote} ended: {e}");
                return;
            }
        }
    }
}

async fn serve_stream(send: quinn::SendStream, recv: quinn::RecvStream, state: Arc<ServerState>) {
    let mut writer = native::writer(send);
    let mut reader = native::reader(recv);
    if native::serve_call(&mut reader, &mut writer, &state).await == CallEnd::Next {
        // Read the client's FIN (it follows END) so the stream closes without STOP_SENDING.
        let _ = tokio::time::timeout(CLOSE_GRACE, reader.next()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_binds_the_address_that_routes_to_the_server() {
        let server: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        assert_eq!(
            local_address_for(server).unwrap(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap()
        );
        let declared: std::collections::BTreeMap<_, _> = declared().into_iter().collect();
        assert!(matches!(declared["udp_buffer_bytes"], Setting::Number(_)));
        // another loopback address routes from itself
        let other: SocketAddr = "127.0.0.2:4433".parse().unwrap();
        assert!(local_address_for(other).unwrap().ip().is_loopback());
        // IPv6 where the host has it
        let v6: SocketAddr = "[::1]:4433".parse().unwrap();
        if let Ok(local) = local_address_for(v6) {
            assert_eq!(local, "[::1]:0".parse::<SocketAddr>().unwrap());
        }
    }
}
