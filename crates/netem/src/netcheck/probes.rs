//! Traffic for netcheck: paced UDP echoes, paced one-way UDP streams and TCP bulk transfers.
//!
//! Sockets are created on threads inside the topology's namespaces and then used from plain
//! threads. Times in payloads are `CLOCK_REALTIME`, the clock of the kernel's `SO_TIMESTAMPNS`
//! receive timestamps, so one-way delays need no clock sync (both ends are on this host) and
//! no application wake-up latency enters the receive side. Every loop ends by count or by
//! deadline.

use std::io::{IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrIn, SockaddrLike, recvmsg, setsockopt, sockopt,
};
use nix::sys::time::TimeSpec;

use crate::error::NetemError;
use crate::shell::timing::{mono_ns, realtime_ns, set_precise_timer_slack, sleep_until};
use crate::shell::{Side, ThreadPriority, Topology};

const MAGIC: u32 = 0x5250_4131;
const HEADER_LEN: usize = 32;
const ECHO_PORT: u16 = 7101;
const STREAM_PORT: u16 = 7102;
const TCP_PORT: u16 = 7103;
const SECOND: u64 = 1_000_000_000;

fn phase_error(phase: &str, detail: impl std::fmt::Display) -> NetemError {
    NetemError::Netcheck {
        phase: phase.to_string(),
        detail: detail.to_string(),
    }
}

fn write_header(buf: &mut [u8], run: u32, seq: u64, tx_ns: u64, aux: u64) {
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    buf[4..8].copy_from_slice(&run.to_le_bytes());
    buf[8..16].copy_from_slice(&seq.to_le_bytes());
    buf[16..24].copy_from_slice(&tx_ns.to_le_bytes());
    buf[24..32].copy_from_slice(&aux.to_le_bytes());
}

fn read_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// (seq, tx_ns, aux) of one of our packets from this run, `None` for anything else.
fn read_header(buf: &[u8], run: u32) -> Option<(u64, u64, u64)> {
    if buf.len() < HEADER_LEN || buf[0..4] != MAGIC.to_le_bytes() || buf[4..8] != run.to_le_bytes()
    {
        return None;
    }
    Some((read_u64(buf, 8), read_u64(buf, 16), read_u64(buf, 24)))
}

/// A UDP socket bound inside one side's namespace, with big buffers (forced: we are root)
/// and kernel receive timestamps.
fn udp_socket(topo: &Topology, side: Side, port: u16) -> Result<UdpSocket, NetemError> {
    let addr = SocketAddrV4::new(topo.address(side), port);
    topo.run_in(side, move || -> std::io::Result<UdpSocket> {
        let socket = UdpSocket::bind(addr)?;
        setsockopt(&socket, sockopt::RcvBufForce, &(32 << 20))?;
        setsockopt(&socket, sockopt::SndBufForce, &(8 << 20))?;
        setsockopt(&socket, sockopt::ReceiveTimestampns, &true)?;
        socket.set_nonblocking(true)?;
        Ok(socket)
    })?
    .map_err(|e| {
        NetemError::io(
            format!("opening a UDP socket on {addr} in the {side:?} namespace"),
            e,
        )
    })
}

/// Timer slack 1 ns and the forwarders' priority (one real-time level below) for a probe
/// thread, so that probes are not delayed behind unrelated work any more than the forwarders
/// are. Probe threads never spin, so a real-time priority cannot starve the machine.
fn prepare_thread(priority: ThreadPriority) {
    set_precise_timer_slack();
    let _ = crate::shell::sched::apply(priority);
}

/// Waits until `fd` is readable or `timeout_ns` passes.
fn wait_readable(fd: BorrowedFd<'_>, timeout_ns: u64) {
    let ts = TimeSpec::new((timeout_ns / SECOND) as i64, (timeout_ns % SECOND) as i64);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let _ = ppoll(&mut fds, Some(ts), None);
}

/// One datagram with its kernel receive time (REALTIME ns) and sender; `None` when none waits.
fn recv_timestamped(
    socket: &UdpSocket,
    buf: &mut [u8],
) -> std::io::Result<Option<(usize, u64, Option<SocketAddrV4>)>> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!(TimeSpec);
    let msg = match recvmsg::<SockaddrIn>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::MSG_DONTWAIT,
    ) {
        Ok(msg) => msg,
        Err(nix::errno::Errno::EAGAIN) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut rx_ns = 0;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let ControlMessageOwned::ScmTimestampns(t) = c {
                rx_ns = t.tv_sec() as u64 * SECOND + t.tv_nsec() as u64;
            }
        }
    }
    if rx_ns == 0 {
        // No timestamp (should not happen with SO_TIMESTAMPNS): fall back to now.
        rx_ns = realtime_ns();
    }
    let from = msg
        .address
        .filter(|a| a.len() > 0)
        .map(|a| SocketAddrV4::new(a.ip(), a.port()));
    Ok(Some((msg.bytes, rx_ns, from)))
}

/// Result of a paced echo run.
#[derive(Debug, Default)]
pub(crate) struct EchoOutcome {
    pub sent: u64,
    /// Round-trip times without the echo server's turnaround, ns.
    pub rtts_ns: Vec<f64>,
}

/// Sends `count` echoes `spacing_ns` apart (at least: a late send delays the next one rather
/// than bunching them), each carrying its send time; the server writes its own turnaround
/// (kernel receive to its send) into the reply, which is subtracted.
pub(crate) fn udp_echo(
    topo: &Topology,
    count: u64,
    spacing_ns: u64,
    payload: usize,
    max_rtt_ns: u64,
    run: u32,
    rt: ThreadPriority,
) -> Result<EchoOutcome, NetemError> {
    let phase = "rtt";
    let payload = payload.max(HEADER_LEN);
    let server = udp_socket(topo, Side::Server, ECHO_PORT)?;
    let client = udp_socket(topo, Side::Client, 0)?;
    client
        .connect(SocketAddrV4::new(topo.address(Side::Server), ECHO_PORT))
        .map_err(|e| phase_error(phase, format!("connecting the echo client: {e}")))?;
    let deadline = mono_ns() + count * spacing_ns + max_rtt_ns + 5 * SECOND;
    let stop = AtomicBool::new(false);

    std::thread::scope(|scope| {
        scope.spawn(|| {
            prepare_thread(rt);
            echo_server(&server, run, &stop, deadline)
        });
        prepare_thread(rt);
        let outcome = echo_client(
            &client, count, spacing_ns, payload, max_rtt_ns, run, deadline,
        );
        stop.store(true, Ordering::Relaxed);
        outcome.map_err(|e| phase_error(phase, format!("echo client: {e}")))
    })
}

fn echo_server(socket: &UdpSocket, run: u32, stop: &AtomicBool, deadline: u64) {
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) && mono_ns() < deadline {
        wait_readable(socket.as_fd(), 20_000_000);
        while let Ok(Some((n, rx_ns, Some(from)))) = recv_timestamped(socket, &mut buf) {
            if let Some((seq, tx, _)) = read_header(&buf[..n], run) {
                let turnaround = realtime_ns().saturating_sub(rx_ns);
                write_header(&mut buf[..n], run, seq, tx, turnaround);
                let _ = socket.send_to(&buf[..n], from);
            }
        }
    }
}

fn echo_client(
    socket: &UdpSocket,
    count: u64,
    spacing_ns: u64,
    payload: usize,
    max_rtt_ns: u64,
    run: u32,
    deadline: u64,
) -> std::io::Result<EchoOutcome> {
    let mut out = EchoOutcome::default();
    let mut seen = vec![false; count as usize];
    let mut tx_buf = vec![0u8; payload];
    let mut rx_buf = vec![0u8; 65_536];
    let mut next_send = mono_ns();
    let mut last_send = 0;
    loop {
        let now = mono_ns();
        if out.sent < count && now >= next_send {
            write_header(&mut tx_buf, run, out.sent, realtime_ns(), 0);
            socket.send(&tx_buf)?;
            out.sent += 1;
            last_send = mono_ns();
            next_send = last_send + spacing_ns;
        }
        while let Some((n, rx_ns, _)) = recv_timestamped(socket, &mut rx_buf)? {
            if let Some((seq, tx, turnaround)) = read_header(&rx_buf[..n], run)
                && (seq as usize) < seen.len()
                && !seen[seq as usize]
            {
                seen[seq as usize] = true;
                out.rtts_ns
                    .push(rx_ns.saturating_sub(tx).saturating_sub(turnaround) as f64);
            }
        }
        let now = mono_ns();
        let done_sending = out.sent >= count;
        if done_sending
            && (out.rtts_ns.len() as u64 >= count || now > last_send + max_rtt_ns + SECOND)
        {
            return Ok(out);
        }
        if now > deadline {
            return Ok(out);
        }
        let wait = if done_sending {
            20_000_000
        } else {
            next_send.saturating_sub(now)
        };
        if wait > 0 {
            wait_readable(socket.as_fd(), wait);
        }
    }
}

/// One-way stream settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamConfig {
    pub from: Side,
    pub count: u64,
    pub pps: f64,
    /// UDP payload bytes.
    pub payload: usize,
    /// Keep (seq, tx, rx) of every packet received.
    pub record: bool,
    /// How long a packet may take at most (delay plus queue).
    pub max_delay_ns: u64,
}

/// What a one-way stream saw.
#[derive(Debug, Default)]
pub(crate) struct StreamOutcome {
    pub sent: u64,
    pub send_errors: u64,
    /// REALTIME of the first and last send.
    pub first_send_ns: u64,
    pub last_send_ns: u64,
    pub received: u64,
    /// Packets that arrived with a lower sequence number than one already seen.
    pub reordered: u64,
    pub duplicates: u64,
    /// (seq, tx_ns, rx_ns), when recorded.
    pub records: Vec<(u64, u64, u64)>,
}

/// Sends `count` datagrams at `pps` (virtual-time pacing: a late wake-up sends the packets
/// that fell due at once) and receives them on the other side.
pub(crate) fn udp_stream(
    topo: &Topology,
    config: StreamConfig,
    run: u32,
    rt: ThreadPriority,
) -> Result<StreamOutcome, NetemError> {
    let phase = "udp stream";
    let to = match config.from {
        Side::Client => Side::Server,
        Side::Server => Side::Client,
    };
    let receiver = udp_socket(topo, to, STREAM_PORT)?;
    let sender = udp_socket(topo, config.from, 0)?;
    sender
        .connect(SocketAddrV4::new(topo.address(to), STREAM_PORT))
        .and_then(|()| sender.set_nonblocking(false))
        .map_err(|e| phase_error(phase, format!("setting up the sender: {e}")))?;
    let interval = (SECOND as f64 / config.pps.max(1.0)) as u64;
    let send_time = config.count * interval;
    let deadline = mono_ns() + send_time + config.max_delay_ns + 10 * SECOND;
    let sending_done_at = AtomicU64::new(0);

    std::thread::scope(|scope| {
        let rx = scope.spawn(|| {
            prepare_thread(rt);
            stream_receiver(&receiver, config, run, &sending_done_at, deadline)
        });
        let mut out = StreamOutcome::default();
        prepare_thread(rt);
        let mut buf = vec![0u8; config.payload.max(HEADER_LEN)];
        let start = mono_ns();
        out.first_send_ns = realtime_ns();
        for seq in 0..config.count {
            let due = start + seq * interval;
            let now = mono_ns();
            if now > deadline {
                break;
            }
            // Sleep only when the next packet is far enough away to be worth a timer; never
            // spin (these threads may run real-time, and pacing only needs to be approximate).
            if due > now + 30_000 {
                sleep_until(due, 0);
            }
            write_header(&mut buf, run, seq, realtime_ns(), 0);
            match sender.send(&buf) {
                Ok(_) => out.sent += 1,
                Err(_) => out.send_errors += 1,
            }
        }
        out.last_send_ns = realtime_ns();
        sending_done_at.store(mono_ns(), Ordering::Release);
        let received = rx
            .join()
            .map_err(|_| phase_error(phase, "the receiver thread panicked"))?;
        let received = received.map_err(|e| phase_error(phase, format!("receiving: {e}")))?;
        out.received = received.received;
        out.reordered = received.reordered;
        out.duplicates = received.duplicates;
        out.records = received.records;
        Ok(out)
    })
}

#[derive(Default)]
struct Received {
    received: u64,
    reordered: u64,
    duplicates: u64,
    records: Vec<(u64, u64, u64)>,
}

fn stream_receiver(
    socket: &UdpSocket,
    config: StreamConfig,
    run: u32,
    sending_done_at: &AtomicU64,
    deadline: u64,
) -> std::io::Result<Received> {
    let mut out = Received::default();
    let mut seen = vec![0u64; (config.count as usize).div_ceil(64)];
    let mut max_seq: Option<u64> = None;
    let mut buf = vec![0u8; 65_536];
    let mut last_rx = mono_ns();
    loop {
        let mut got_any = false;
        loop {
            let (n, rx_ns) = if config.record {
                match recv_timestamped(socket, &mut buf)? {
                    Some((n, rx, _)) => (n, rx),
                    None => break,
                }
            } else {
                match socket.recv(&mut buf) {
                    Ok(n) => (n, 0),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            };
            let Some((seq, tx, _)) = read_header(&buf[..n], run) else {
                continue;
            };
            if seq >= config.count {
                continue;
            }
            got_any = true;
            let (word, bit) = ((seq / 64) as usize, seq % 64);
            if seen[word] & (1 << bit) != 0 {
                out.duplicates += 1;
                continue;
            }
            seen[word] |= 1 << bit;
            out.received += 1;
            if max_seq.is_some_and(|m| seq < m) {
                out.reordered += 1;
            }
            max_seq = Some(max_seq.map_or(seq, |m| m.max(seq)));
            if config.record {
                out.records.push((seq, tx, rx_ns));
            }
        }
        let now = mono_ns();
        if got_any {
            last_rx = now;
        }
        if out.received >= config.count || now > deadline {
            return Ok(out);
        }
        let done = sending_done_at.load(Ordering::Acquire);
        // After the last send, wait for the slowest possible packet and a quiet spell.
        if done > 0 && now > done + config.max_delay_ns && now > last_rx + 300_000_000 {
            return Ok(out);
        }
        wait_readable(socket.as_fd(), 20_000_000);
    }
}

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
) -> Result<TcpOutcome, NetemError> {
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
    let mut server = loop {
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
    let stop = Arc::new(AtomicBool::new(false));
    let start = mono_ns();
    let end = start + duration_ns;

    std::thread::scope(|scope| {
        let stop_tx = stop.clone();
        let mut client = client;
        scope.spawn(move || {
            let _ = client.set_write_timeout(Some(Duration::from_millis(200)));
            let chunk = vec![0x5au8; 256 * 1024];
            while mono_ns() < end && !stop_tx.load(Ordering::Relaxed) {
                match client.write(&chunk) {
                    Ok(_) => {}
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            || e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
            let _ = client.shutdown(Shutdown::Write);
        });
        let mut buf = vec![0u8; 256 * 1024];
        let mut window_bytes = 0u64;
        let window_start = start + warmup_ns;
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
        stop.store(true, Ordering::Relaxed);
        let seconds = first_in_window.map_or(0.0, |f| (last_in_window.max(f) - f) as f64 / 1e9);
        Ok(TcpOutcome {
            bytes: window_bytes,
            seconds,
        })
    })
}
