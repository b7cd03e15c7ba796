//! Traffic for netcheck: paced UDP echoes, paced one-way UDP streams and TCP bulk transfers.
//!
//! Sockets are created on threads inside the topology's namespaces and then used from plain
//! threads. Times in payloads are `CLOCK_REALTIME`, the clock of the kernel's `SO_TIMESTAMPNS`
//! receive timestamps, so one-way delays need no clock sync (both ends are on this host) and
//! no application wake-up latency enters the receive side. Every loop ends by count or by
//! deadline.

mod echo;
mod stream;
mod tcp;

use std::io::IoSliceMut;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrIn, SockaddrLike, recvmsg, setsockopt, sockopt,
};
use nix::sys::time::TimeSpec;
use rpcarena_netem::timing::{realtime_ns, set_precise_timer_slack};
use rpcarena_netem::{Side, Topology};
use rpcarena_netem_core::ThreadPriority;

use crate::error::NetcheckError;

pub(crate) use echo::{EchoOutcome, udp_echo};
pub(crate) use stream::{StreamConfig, StreamOutcome, udp_stream};
pub(crate) use tcp::{TcpOutcome, tcp_bulk};

const MAGIC: u32 = 0x5250_4131;
const HEADER_LEN: usize = 32;
const ECHO_PORT: u16 = 7101;
const STREAM_PORT: u16 = 7102;
const TCP_PORT: u16 = 7103;
const SECOND: u64 = 1_000_000_000;

fn phase_error(phase: &str, detail: impl std::fmt::Display) -> NetcheckError {
    NetcheckError::Phase {
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
fn udp_socket(topo: &Topology, side: Side, port: u16) -> Result<UdpSocket, NetcheckError> {
    let addr = SocketAddrV4::new(topo.address(side), port);
    topo.run_in(side, move || -> std::io::Result<UdpSocket> {
        let socket = UdpSocket::bind(addr)?;
        setsockopt(&socket, sockopt::RcvBufForce, &(32 << 20))?;
        setsockopt(&socket, sockopt::SndBufForce, &(8 << 20))?;
        setsockopt(&socket, sockopt::ReceiveTimestampns, &true)?;
        socket.set_nonblocking(true)?;
        Ok(socket)
    })?
    .map_err(|source| NetcheckError::Io {
        what: format!("opening a UDP socket on {addr} in the {side:?} namespace"),
        source,
    })
}

/// Offload granularity: the sender sends UDP GSO bundles of `segment`-byte segments
/// (`UDP_SEGMENT`, as quinn and quiche do per send) and the receiver takes them whole
/// (`UDP_GRO`), with room for many 64 KiB bundles in its buffer.
fn enable_udp_offload(
    sender: &UdpSocket,
    receiver: &UdpSocket,
    segment: usize,
) -> std::io::Result<()> {
    setsockopt(sender, sockopt::UdpGsoSegment, &(segment as i32))?;
    setsockopt(receiver, sockopt::UdpGroSegment, &true)?;
    setsockopt(receiver, sockopt::RcvBufForce, &(256 << 20))?;
    Ok(())
}

/// Timer slack 1 ns and the forwarders' priority (one real-time level below) for a probe
/// thread, so that probes are not delayed behind unrelated work any more than the forwarders
/// are. Probe threads never spin, so a real-time priority cannot starve the machine.
fn prepare_thread(priority: ThreadPriority) {
    set_precise_timer_slack();
    let _ = rpcarena_netem::sched::apply(priority);
}

/// Waits until `fd` is readable or `timeout_ns` passes.
fn wait_readable(fd: BorrowedFd<'_>, timeout_ns: u64) {
    let ts = TimeSpec::new((timeout_ns / SECOND) as i64, (timeout_ns % SECOND) as i64);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let _ = ppoll(&mut fds, Some(ts), None);
}

/// One received datagram.
struct Datagram {
    len: usize,
    /// Kernel receive time, REALTIME ns.
    rx_ns: u64,
    from: Option<SocketAddrV4>,
    /// Segment size when `UDP_GRO` delivered several segments as one datagram.
    gro_size: Option<usize>,
}

/// One datagram with its kernel receive time and sender; `None` when none waits.
fn recv_timestamped(socket: &UdpSocket, buf: &mut [u8]) -> std::io::Result<Option<Datagram>> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!(TimeSpec, i32);
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
    let mut gro_size = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            match c {
                ControlMessageOwned::ScmTimestampns(t) => {
                    rx_ns = t.tv_sec() as u64 * SECOND + t.tv_nsec() as u64;
                }
                ControlMessageOwned::UdpGroSegments(size) => gro_size = Some(size.max(0) as usize),
                _ => {}
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
    Ok(Some(Datagram {
        len: msg.bytes,
        rx_ns,
        from,
        gro_size,
    }))
}
