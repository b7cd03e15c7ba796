//! Paced one-way UDP streams: loss, rate, reordering and queue delay. A send is one datagram,
//! or in offload granularity one UDP GSO bundle whose segments each carry their own header
//! (crate::bundle).

use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rpcarena_netem::timing::{mono_ns, realtime_ns, sleep_until};
use rpcarena_netem::{Side, Topology};
use rpcarena_netem_core::ThreadPriority;

use super::{
    Datagram, HEADER_LEN, SECOND, STREAM_PORT, enable_udp_offload, phase_error, prepare_thread,
    read_header, recv_timestamped, udp_socket, wait_readable, write_header,
};
use crate::bundle::{BundleTally, SeqSet, Unit, segment_ranges, tally_bundles};
use crate::error::NetcheckError;

/// One-way stream settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamConfig {
    pub from: Side,
    /// Segments (datagrams) to send.
    pub count: u64,
    /// Segments per second.
    pub pps: f64,
    /// What one send carries: a datagram, or a bundle of segments.
    pub unit: Unit,
    /// Keep (seq, tx, rx) of every packet received.
    pub record: bool,
    /// How long a packet may take at most (delay plus queue).
    pub max_delay_ns: u64,
}

/// What a one-way stream saw.
#[derive(Debug, Default)]
pub(crate) struct StreamOutcome {
    /// Segments sent.
    pub sent: u64,
    /// Sends (datagrams, or bundles) that succeeded.
    pub units_sent: u64,
    pub send_errors: u64,
    /// REALTIME of the first and last send.
    pub first_send_ns: u64,
    pub last_send_ns: u64,
    /// Segments received.
    pub received: u64,
    /// Datagrams the receiving socket returned (a bundle received whole is one).
    pub datagrams: u64,
    /// Bundles (single datagrams in packet mode) received whole, partly or not at all.
    pub tally: BundleTally,
    /// Packets that arrived with a lower sequence number than one already seen.
    pub reordered: u64,
    pub duplicates: u64,
    /// (seq, tx_ns, rx_ns), when recorded.
    pub records: Vec<(u64, u64, u64)>,
}

/// Sends `count` segments at `pps`, as `config.unit`s (virtual-time pacing: a late wake-up
/// sends the units that fell due at once), and receives them on the other side.
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
    let unit = config.unit;
    if unit.is_bundle() {
        enable_udp_offload(&sender, &receiver, unit.payload).map_err(|e| {
            phase_error(
                phase,
                format!("enabling UDP_SEGMENT / UDP_GRO (needs Linux 5.0 or later): {e}"),
            )
        })?;
    }
    let interval = (SECOND as f64 * unit.segments as f64 / config.pps.max(1.0)) as u64;
    let units = unit.units_for(config.count);
    let send_time = units * interval;
    let deadline = mono_ns() + send_time + config.max_delay_ns + 10 * SECOND;
    let sending_done_at = AtomicU64::new(0);

    std::thread::scope(|scope| {
        let rx = scope.spawn(|| {
            prepare_thread(rt);
            stream_receiver(&receiver, config, run, &sending_done_at, deadline)
        });
        let mut out = StreamOutcome::default();
        prepare_thread(rt);
        let payload = unit.payload.max(HEADER_LEN);
        let mut buf = vec![0u8; payload * unit.segments];
        let start = mono_ns();
        out.first_send_ns = realtime_ns();
        for u in 0..units {
            let due = start + u * interval;
            let now = mono_ns();
            if now > deadline {
                break;
            }
            // Sleep only when the next packet is far enough away to be worth a timer; never
            // spin (these threads may run real-time, and pacing only needs to be approximate).
            if due > now + 30_000 {
                sleep_until(due, 0);
            }
            let first = u * unit.segments as u64;
            let segments = (config.count - first).min(unit.segments as u64) as usize;
            let tx = realtime_ns();
            for (i, segment) in buf.chunks_mut(payload).take(segments).enumerate() {
                write_header(segment, run, first + i as u64, tx, 0);
            }
            match sender.send(&buf[..segments * payload]) {
                Ok(_) => {
                    out.sent += segments as u64;
                    out.units_sent += 1;
                }
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
        out.datagrams = received.datagrams;
        out.tally = received.tally;
        out.reordered = received.reordered;
        out.duplicates = received.duplicates;
        out.records = received.records;
        Ok(out)
    })
}

#[derive(Default)]
struct Received {
    received: u64,
    datagrams: u64,
    tally: BundleTally,
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
    let mut seen = SeqSet::new(config.count);
    // With bundles every datagram needs its UDP_GRO segment size, so always use recvmsg.
    let use_recvmsg = config.record || config.unit.is_bundle();
    let mut max_seq: Option<u64> = None;
    let mut buf = vec![0u8; 65_536];
    let mut last_rx = mono_ns();
    loop {
        let mut got_any = false;
        loop {
            let (n, rx_ns, gro_size) = if use_recvmsg {
                match recv_timestamped(socket, &mut buf)? {
                    Some(Datagram {
                        len,
                        rx_ns,
                        gro_size,
                        ..
                    }) => (len, rx_ns, gro_size),
                    None => break,
                }
            } else {
                match socket.recv(&mut buf) {
                    Ok(n) => (n, 0, None),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            };
            out.datagrams += 1;
            for segment in segment_ranges(n, gro_size) {
                let Some((seq, tx, _)) = read_header(&buf[segment], run) else {
                    continue;
                };
                if seq >= config.count {
                    continue;
                }
                got_any = true;
                if !seen.insert(seq) {
                    out.duplicates += 1;
                    continue;
                }
                out.received += 1;
                if max_seq.is_some_and(|m| seq < m) {
                    out.reordered += 1;
                }
                max_seq = Some(max_seq.map_or(seq, |m| m.max(seq)));
                if config.record {
                    out.records.push((seq, tx, rx_ns));
                }
            }
        }
        let now = mono_ns();
        if got_any {
            last_rx = now;
        }
        if out.received >= config.count || now > deadline {
            out.tally = tally_bundles(config.unit, config.count, |s| seen.contains(s));
            return Ok(out);
        }
        let done = sending_done_at.load(Ordering::Acquire);
        // After the last send, wait for the slowest possible packet and a quiet spell.
        if done > 0 && now > done + config.max_delay_ns && now > last_rx + 300_000_000 {
            out.tally = tally_bundles(config.unit, config.count, |s| seen.contains(s));
            return Ok(out);
        }
        wait_readable(socket.as_fd(), 20_000_000);
    }
}
