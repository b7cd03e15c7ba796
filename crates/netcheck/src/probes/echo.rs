//! Paced UDP echoes: the RTT distribution.

use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

use rpcarena_netem::timing::{mono_ns, realtime_ns};
use rpcarena_netem::{Side, Topology};
use rpcarena_netem_core::ThreadPriority;

use super::{
    Datagram, ECHO_PORT, HEADER_LEN, SECOND, phase_error, prepare_thread, read_header,
    recv_timestamped, udp_socket, wait_readable, write_header,
};
use crate::error::NetcheckError;

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
) -> Result<EchoOutcome, NetcheckError> {
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
        while let Ok(Some(Datagram {
            len: n,
            rx_ns,
            from: Some(from),
            ..
        })) = recv_timestamped(socket, &mut buf)
        {
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
        while let Some(Datagram { len: n, rx_ns, .. }) = recv_timestamped(socket, &mut rx_buf)? {
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
