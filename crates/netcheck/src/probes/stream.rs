//! Paced one-way UDP streams: loss, rate, reordering and queue delay.

use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rpcarena_netem::timing::{mono_ns, realtime_ns, sleep_until};
use rpcarena_netem::{Side, Topology};
use rpcarena_netem_core::ThreadPriority;

use super::{
    HEADER_LEN, SECOND, STREAM_PORT, phase_error, prepare_thread, read_header, recv_timestamped,
    udp_socket, wait_readable, write_header,
};
use crate::error::NetcheckError;

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
) -> Result<StreamOutcome, NetcheckError> {
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
