//! `tcp`: the native framing over TLS over TCP, the floor without HTTP/2. One connection per
//! lane; a connection carries its lane's calls one after another (after STATUS, the next HEADER).
//! With `--tls off` (revision 1.3) the frames go straight onto the TCP socket.

use super::conn::{ClientConn, MaybeTls, OverTcp, ServerConn};
use super::native::{self, CallEnd, Reader, Writer};
use super::{
    ClientSettings, ClientStack, HANDSHAKE_TIMEOUT, RawCall, RunningServer, ServerState,
    TCP_NODELAY, Verdict, Workload, resolve_server, tune_tcp,
};
use crate::engine::pool::LanePool;
use crate::engine::saturation::StreamSender;
use crate::engine::{Clock, Lane, OpError, OpOutcome};
use crate::failure::Failure;
use crate::transport::{Probe, TcpSockets};
use rpcarena_protocol::event::{Setting, code};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::{TlsAcceptor, TlsConnector};

type ClientStream = ClientConn;

/// The stack's own settings as `capabilities` declares them (docs/stacks.md, "Settings every
/// peer declares"): no windows of its own (the kernel's TCP windows, autotuned), one connection
/// per lane.
pub fn declared() -> Vec<(&'static str, Setting)> {
    vec![
        ("max_message_bytes", (super::MAX_MESSAGE as u64).into()),
        ("tcp_nodelay", TCP_NODELAY.into()),
        ("connections", "1 per lane".into()),
        ("write_batch_bytes", (native::WRITE_BATCH as u64).into()),
    ]
}

/// How long closing a connection may take.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Opens a TCP connection with TCP_NODELAY and performs the TLS handshake (none with `--tls
/// off`); errors carry code `connect` or `tls`. Shared with the gRPC connector so both TCP stacks
/// connect identically.
pub async fn connect_tls(
    addr: SocketAddr,
    settings: &ClientSettings,
) -> Result<ClientStream, OpError> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| {
        OpError::new(
            code::CONNECT,
            format!("TCP connection to {addr} failed: {e}"),
        )
    })?;
    tune_tcp(&tcp)
        .map_err(|e| OpError::new(code::CONNECT, format!("cannot set TCP_NODELAY: {e}")))?;
    let (Some(tls), Some(server_name)) = (&settings.tls, &settings.server_name) else {
        return Ok(MaybeTls::Plain(tcp));
    };
    TlsConnector::from(tls.clone())
        .connect(server_name.clone(), tcp)
        .await
        .map(MaybeTls::Tls)
        .map_err(|e| {
            OpError::new(
                code::TLS,
                crate::tls::handshake_error_message(&e, &settings.server, &server_name.to_str()),
            )
        })
}

/// The next connection on a server's listener, shared with the gRPC server like
/// [`connect_tls`]. A failed accept (e.g. EMFILE) is reported and retried shortly, so the server
/// keeps serving the connections it has.
pub async fn accept_tcp(listener: &TcpListener) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) => {
                eprintln!("rpcarena-peer-rust: accepting a TCP connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// The server's side of an accepted connection: TCP_NODELAY (a socket that refuses it is
/// reported and served as it is), then the TLS handshake within [`HANDSHAKE_TIMEOUT`] (none
/// without an acceptor, `--tls off`). A failed or late handshake is reported on stderr and gives
/// `None`.
pub async fn accept_tls(
    tcp: TcpStream,
    remote: SocketAddr,
    acceptor: Option<&TlsAcceptor>,
) -> Option<ServerConn> {
    if let Err(e) = tune_tcp(&tcp) {
        eprintln!("rpcarena-peer-rust: cannot set TCP_NODELAY for {remote}: {e}");
    }
    let Some(acceptor) = acceptor else {
        return Some(MaybeTls::Plain(tcp));
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => Some(MaybeTls::Tls(stream)),
        Ok(Err(e)) => {
            eprintln!("rpcarena-peer-rust: TLS handshake with {remote} failed: {e}");
            None
        }
        Err(_) => {
            eprintln!("rpcarena-peer-rust: TLS handshake with {remote} timed out");
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client

/// The client: nothing shared, every lane owns its connection.
pub struct TcpClient {
    connections: u32,
    sockets: TcpSockets,
}

/// A lane: its own TLS connection, split into frame reader and writer.
pub struct TcpLane {
    reader: Reader<ReadHalf<ClientStream>>,
    writer: Writer<WriteHalf<ClientStream>>,
    workload: Workload,
}

impl ClientStack for TcpClient {
    type Lane = TcpLane;
    // A tcp connection carries one call at a time, so the transport accepts a new operation
    // exactly when one of the pool's connections is free.
    type Submitter = LanePool<TcpLane>;

    fn submitter(&self, lanes: Vec<TcpLane>) -> LanePool<TcpLane> {
        LanePool::new(lanes)
    }

    fn lanes_back(submitter: LanePool<TcpLane>) -> Vec<TcpLane> {
        submitter.into_lanes()
    }

    async fn connect(settings: &ClientSettings) -> Result<(TcpClient, Vec<TcpLane>), OpError> {
        let addr = resolve_server(settings).await?;
        // All lanes connect at once, as they would after a deploy; connect_ns covers them all.
        let streams =
            futures::future::try_join_all((0..settings.lanes).map(|_| connect_tls(addr, settings)))
                .await?;
        let sockets = TcpSockets::default();
        let lanes = streams
            .into_iter()
            .map(|stream| {
                sockets.register(stream.tcp());
                let (read, write) = tokio::io::split(stream);
                TcpLane {
                    reader: native::reader(read),
                    writer: native::writer(write),
                    workload: settings.workload,
                }
            })
            .collect();
        Ok((
            TcpClient {
                connections: settings.lanes,
                sockets,
            },
            lanes,
        ))
    }

    fn connections(&self) -> u32 {
        self.connections
    }

    fn transport_probe(&self) -> Option<Probe> {
        Some(Probe::Tcp(self.sockets.clone()))
    }

    async fn close(self, lanes: Vec<TcpLane>) {
        // The duplicates would keep the sockets open.
        self.sockets.clear();
        // close_notify and FIN on every connection, concurrently and bounded.
        let closing = lanes.into_iter().map(|mut lane| async move {
            let _ = tokio::time::timeout(CLOSE_GRACE, native::close(&mut lane.writer)).await;
        });
        futures::future::join_all(closing).await;
    }
}

impl Lane for TcpLane {
    async fn call(&mut self, seq: u64) -> Result<OpOutcome, OpError> {
        native::call(&mut self.reader, &mut self.writer, &self.workload, seq).await
    }

    async fn saturate<C: Clock>(
        &mut self,
        clock: &C,
        sender: &mut StreamSender,
    ) -> Result<(), OpError> {
        native::saturate(
            &mut self.reader,
            &mut self.writer,
            &self.workload,
            clock,
            sender,
        )
        .await
    }
}

impl RawCall for TcpLane {
    async fn raw_call(
        &mut self,
        shape: rpcarena_protocol::workload::Shape,
        requests: Vec<rpcarena_protocol::pb::Request>,
    ) -> Result<Verdict, OpError> {
        native::raw_call(&mut self.reader, &mut self.writer, shape, requests).await
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// Binds `addr` and serves until stopped: one task per connection (handshake included, so a
/// slow handshake never delays another connection).
pub async fn serve(
    addr: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    state: Arc<ServerState>,
) -> Result<RunningServer, Failure> {
    let (listener, local_addr) = super::bind_tcp(addr).await?;
    let acceptor = tls.map(TlsAcceptor::from);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // Dropping the set at the end aborts every connection task.
        let mut connections = JoinSet::new();
        let accept = async {
            loop {
                let (tcp, remote) = accept_tcp(&listener).await;
                connections.spawn(serve_connection(
                    tcp,
                    remote,
                    acceptor.clone(),
                    state.clone(),
                ));
                // Reap finished connection tasks so the set does not grow forever.
                while connections.try_join_next().is_some() {}
            }
        };
        tokio::select! {
            () = accept => {}
            _ = stopped => {}
        }
        Ok(())
    });
    Ok(RunningServer::new(local_addr, stop, task))
}

async fn serve_connection(
    tcp: TcpStream,
    remote: SocketAddr,
    acceptor: Option<TlsAcceptor>,
    state: Arc<ServerState>,
) {
    let _registration = state.connections.register_tcp(&tcp);
    let Some(stream) = accept_tls(tcp, remote, acceptor.as_ref()).await else {
        return;
    };
    let (read, write) = tokio::io::split(stream);
    let mut reader = native::reader(read);
    let mut writer = native::writer(write);
    while native::serve_call(&mut reader, &mut writer, &state).await == CallEnd::Next {}
    let _ = tokio::time::timeout(CLOSE_GRACE, native::close(&mut writer)).await;
}
