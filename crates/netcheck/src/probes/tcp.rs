//! TCP bulk transfers: goodput over the emulated link and through the plain forwarder.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rpcarena_netem::timing::mono_ns;
use rpcarena_netem::{Side, Topology};

use super::{SECOND, TCP_PORT, phase_error};
use crate::error::NetcheckError;

/// Goodput of one TCP bulk transfer.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TcpOutcome {
    /// Payload bytes received inside the measurement window.
    pub bytes: u64,
    /// Length of the measurement window, s.
    pub seconds: f64,
}

impl TcpOutcome {
    pub fn goodput_bps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 * 8.0 / self.seconds
        } else {
            0.0
        }
    }
}

/// Client sends to server as fast as TCP allows for `duration_ns`; goodput is measured at the
/// server after `warmup_ns` (slow start).
pub(crate) fn tcp_bulk(
    topo: &Topology,
    duration_ns: u64,
    warmup_ns: u64,
) -> Result<TcpOutcome, NetcheckError> {
    let (client, mut server) = connect(topo)?;
    let stop = AtomicBool::new(false);
    let start = mono_ns();
    let end = start + duration_ns;
    Ok(std::thread::scope(|scope| {
        scope.spawn(|| send_until(client, end, &stop));
        let outcome = receive(&mut server, start + warmup_ns, end);
        stop.store(true, Ordering::Relaxed);
        outcome
    }))
}

/// A connection from the client's namespace to the server's: (client end, server end), the
/// server end blocking with a 200 ms read timeout.
fn connect(topo: &Topology) -> Result<(TcpStream, TcpStream), NetcheckError> {
    let phase = "tcp";
    let server_addr = SocketAddrV4::new(topo.address(Side::Server), TCP_PORT);
    let listener = topo
        .run_in(Side::Server, move || TcpListener::bind(server_addr))?
        .map_err(|e| phase_error(phase, format!("listening on {server_addr}: {e}")))?;
    let client = topo
        .run_in(Side::Client, move || {
            TcpStream::connect_timeout(&server_addr.into(), Duration::from_secs(5))
        })?
        .map_err(|e| phase_error(phase, format!("connecting to {server_addr}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| phase_error(phase, e))?;
    let accept_deadline = mono_ns() + 5 * SECOND;
    let server = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && mono_ns() < accept_deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(phase_error(phase, format!("accepting: {e}"))),
        }
    };
    server
        .set_nonblocking(false)
        .and_then(|()| server.set_read_timeout(Some(Duration::from_millis(200))))
        .map_err(|e| phase_error(phase, e))?;
    Ok((client, server))
}

/// Writes as fast as TCP takes it until `end` or `stop`, then shuts the sending side.
fn send_until(mut client: TcpStream, end: u64, stop: &AtomicBool) {
    let _ = client.set_write_timeout(Some(Duration::from_millis(200)));
    let chunk = vec![0x5au8; 256 * 1024];
    while mono_ns() < end && !stop.load(Ordering::Relaxed) {
        match client.write(&chunk) {
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    let _ = client.shutdown(Shutdown::Write);
}

/// Reads until the sender shuts down (or 10 s past `end`), counting the bytes that arrive
/// between `window_start` and `end`.
fn receive(server: &mut TcpStream, window_start: u64, end: u64) -> TcpOutcome {
    let mut buf = vec![0u8; 256 * 1024];
    let mut window_bytes = 0u64;
    let mut first_in_window = None;
    let mut last_in_window = window_start;
    let hard_stop = end + 10 * SECOND;
    loop {
        let now = mono_ns();
        if now > hard_stop {
            break;
        }
        match server.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let t = mono_ns();
                if t >= window_start && t <= end {
                    // Bytes of the first read arrived before the window opened.
                    if first_in_window.is_none() {
                        first_in_window = Some(t);
                    } else {
                        window_bytes += n as u64;
                    }
                    last_in_window = t;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    let seconds = first_in_window.map_or(0.0, |f| (last_in_window.max(f) - f) as f64 / 1e9);
    TcpOutcome {
        bytes: window_bytes,
        seconds,
    }
}
