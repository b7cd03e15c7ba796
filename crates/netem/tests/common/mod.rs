//! Helpers shared by the integration tests. They need root and /dev/net/tun (CI runs as root);
//! elsewhere each test prints why it skips (`privileges::required_by_test`), and under CI=true
//! it fails instead.

#![allow(dead_code)]

use std::net::{SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use rpcarena_netem::{Side, Topology};

/// A UDP socket bound inside one side's namespace.
pub fn udp(topo: &Topology, side: Side, port: u16) -> UdpSocket {
    let addr = SocketAddrV4::new(topo.address(side), port);
    let socket = topo
        .run_in(side, move || UdpSocket::bind(addr))
        .expect("enter namespace")
        .expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    socket
}

/// Sends `count` echoes one at a time (bounded by a 500 ms timeout each) and returns the RTTs
/// of those that came back, in seconds.
pub fn echo_rtts(topo: &Topology, count: usize, gap: Duration) -> Vec<f64> {
    let server = udp(topo, Side::Server, 9100);
    let client = udp(topo, Side::Client, 0);
    client
        .connect(SocketAddrV4::new(topo.address(Side::Server), 9100))
        .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut buf = [0u8; 2048];
            let deadline = Instant::now() + Duration::from_secs(60);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                if let Ok((n, from)) = server.recv_from(&mut buf) {
                    let _ = server.send_to(&buf[..n], from);
                }
            }
        });
        let mut rtts = Vec::new();
        let mut buf = [0u8; 2048];
        for i in 0..count as u64 {
            let sent = Instant::now();
            client.send(&i.to_le_bytes()).unwrap();
            // Skip stale replies of earlier, timed-out probes.
            while let Ok(n) = client.recv(&mut buf) {
                if n == 8 && buf[..8] == i.to_le_bytes() {
                    rtts.push(sent.elapsed().as_secs_f64());
                    break;
                }
            }
            std::thread::sleep(gap);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        rtts
    })
}

/// Namespaces under /run/netns with our prefix.
pub fn rpa_namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("rpa-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Threads of this process whose name starts with `rpa-`.
pub fn rpa_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .map(|c| c.starts_with("rpa-"))
                        .unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}
