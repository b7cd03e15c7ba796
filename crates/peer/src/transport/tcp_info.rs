//! `getsockopt(TCP_INFO)`: the kernel's statistics of one TCP socket.
//!
//! The struct is the kernel's `struct tcp_info` (include/uapi/linux/tcp.h) up to
//! `tcpi_total_rto_time` (Linux 6.7). glibc's and the libc crate's copies stop earlier, so it is
//! declared here. The kernel copies `min(asked, its own size)` bytes and says how many, so an
//! older kernel fills a prefix and the fields past it are reported as absent.
#![allow(unsafe_code)]

use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, BorrowedFd};

/// The kernel's `struct tcp_info`, through `tcpi_total_rto_time`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct RawTcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub app_limited_bits: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, microseconds.
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    /// Minimum RTT, microseconds.
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    /// Bytes per second.
    pub delivery_rate: u64,
    /// Microseconds.
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time: u32,
}

/// `TCP_CA_Recovery` and `TCP_CA_Loss` of `tcpi_ca_state`: the sender has cut its window.
pub const CA_RECOVERY: u8 = 3;
/// See [`CA_RECOVERY`].
pub const CA_LOSS: u8 = 4;

/// One socket's statistics, with how many bytes the kernel filled.
#[derive(Debug, Clone, Copy)]
pub struct TcpInfo {
    pub raw: RawTcpInfo,
    filled: usize,
}

impl TcpInfo {
    /// Whether the kernel filled the field at `offset` of `len` bytes.
    pub fn has(&self, offset: usize, len: usize) -> bool {
        offset + len <= self.filled
    }

    /// `tcpi_busy_time` and the two limited times exist (Linux 4.10).
    pub fn has_limited_times(&self) -> bool {
        self.has(offset_of!(RawTcpInfo, sndbuf_limited), 8)
    }

    /// `tcpi_bytes_sent` exists (Linux 4.19).
    pub fn has_bytes_sent(&self) -> bool {
        self.has(offset_of!(RawTcpInfo, bytes_sent), 8)
    }

    /// `tcpi_total_rto` exists (Linux 6.7).
    pub fn has_total_rto(&self) -> bool {
        self.has(offset_of!(RawTcpInfo, total_rto), 2)
    }

    /// `tcpi_delivery_rate` exists (Linux 4.9).
    pub fn has_delivery_rate(&self) -> bool {
        self.has(offset_of!(RawTcpInfo, delivery_rate), 8)
    }
}

/// Reads `TCP_INFO` of the TCP socket `fd`.
pub fn read(fd: BorrowedFd<'_>) -> std::io::Result<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let mut len = size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: `raw` is a plain-old-data repr(C) struct of `len` bytes that outlives the call; the
    // kernel writes at most `len` bytes into it and stores the count in `len`. `fd` is a live
    // descriptor borrowed for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(TcpInfo {
        raw,
        filled: len as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_the_kernels() {
        // Offsets from include/uapi/linux/tcp.h (x86_64 and aarch64 alike).
        assert_eq!(offset_of!(RawTcpInfo, rto), 8);
        assert_eq!(offset_of!(RawTcpInfo, total_retrans), 100);
        assert_eq!(offset_of!(RawTcpInfo, pacing_rate), 104);
        assert_eq!(offset_of!(RawTcpInfo, segs_out), 136);
        assert_eq!(offset_of!(RawTcpInfo, delivery_rate), 160);
        assert_eq!(offset_of!(RawTcpInfo, bytes_sent), 200);
        assert_eq!(offset_of!(RawTcpInfo, snd_wnd), 228);
        assert_eq!(offset_of!(RawTcpInfo, total_rto), 240);
        assert_eq!(size_of::<RawTcpInfo>(), 248);
    }

    #[test]
    fn a_loopback_connection_reports_what_it_sent() {
        use std::io::{Read, Write};
        use std::os::fd::AsFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(&[7u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        server.read_exact(&mut got).unwrap();
        let info = read(client.as_fd()).unwrap();
        assert_eq!(info.raw.state, 1, "TCP_ESTABLISHED");
        assert!(info.raw.snd_cwnd > 0 && info.raw.snd_mss > 0);
        assert!(info.raw.segs_out >= 2, "{:?}", info.raw);
        if info.has_bytes_sent() {
            assert!(info.raw.bytes_sent >= 100_000, "{:?}", info.raw);
        }
        assert!(read(server.as_fd()).unwrap().raw.bytes_received >= 100_000);
    }
}
