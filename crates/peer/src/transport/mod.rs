//! Transport statistics of the client's connections over the window (the `sample` event's
//! optional `transport` object, docs/peer-protocol.md "Transport statistics").
//!
//! A [`Probe`] reads every connection of a stack: `TCP_INFO` of each socket for the grpc and tcp
//! stacks ([`tcp_info`]), quinn's `ConnectionStats` for quic. A [`Tracker`] (pure) turns a reading
//! at `START`, the polls during the window and a reading at its end into [`TransportStats`]:
//! counters are end minus start per connection, summed; the congestion window is summed over
//! connections at each poll (its minimum and mean over the polls); RTTs are means over
//! connections at the end. [`Poller`] is the thin async shell that polls every
//! [`POLL_INTERVAL`].
//!
//! A server (the `stopped` event's `transport`) reports the same figures over its whole life,
//! warmup, window and drain included: [`ServerConnections`] registers each connection as it is
//! accepted and keeps the last reading of those that close, [`ServerPoller`] polls them from the
//! server's start to `SHUTDOWN` through the same [`Tracker`].

pub mod tcp_info;

use rpcarena_protocol::event::TransportStats;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the gauges are polled during the window: well under one round trip of the
/// emulated WANs (30 ms and more), so a loss recovery is rarely missed; a poll costs one
/// `getsockopt` per TCP connection or one lock of quinn's connection state.
pub const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// One connection at one moment: its cumulative counters and its gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConnReading {
    /// Stable id of the connection within the probe (its registration order).
    pub id: u64,
    pub packets_sent: u64,
    pub bytes_sent: Option<u64>,
    pub retransmitted: Option<u64>,
    pub lost: Option<u64>,
    pub timeouts: Option<u64>,
    /// Cumulative congestion events, where the library counts them (QUIC).
    pub congestion_events: Option<u64>,
    /// TCP: whether the sender is in loss recovery or the loss state right now.
    pub in_recovery: Option<bool>,
    pub cwnd_bytes: u64,
    pub srtt_ns: u64,
    pub min_rtt_ns: Option<u64>,
    pub delivery_rate_bps: Option<u64>,
    pub busy_ns: Option<u64>,
    pub rwnd_limited_ns: Option<u64>,
    pub sndbuf_limited_ns: Option<u64>,
    pub datagrams_sent: Option<u64>,
    pub send_calls: Option<u64>,
}

/// What the polls add up to while the window runs (pure).
#[derive(Debug, Clone)]
pub struct Tracker {
    transport: &'static str,
    start: Vec<ConnReading>,
    polls: u64,
    cwnd_min: Option<u64>,
    cwnd_sum: u128,
    /// Per connection id: whether the last poll saw it in recovery.
    recovering: Vec<(u64, bool)>,
    recovery_entries: u64,
}

impl Tracker {
    /// Starts from the reading at `START`.
    pub fn new(transport: &'static str, start: Vec<ConnReading>) -> Tracker {
        let recovering = start
            .iter()
            .map(|c| (c.id, c.in_recovery.unwrap_or(false)))
            .collect();
        Tracker {
            transport,
            start,
            polls: 0,
            cwnd_min: None,
            cwnd_sum: 0,
            recovering,
            recovery_entries: 0,
        }
    }

    /// One poll during the window.
    pub fn observe(&mut self, reading: &[ConnReading]) {
        let cwnd: u64 = reading.iter().map(|c| c.cwnd_bytes).sum();
        self.polls += 1;
        self.cwnd_sum += u128::from(cwnd);
        self.cwnd_min = Some(self.cwnd_min.map_or(cwnd, |m| m.min(cwnd)));
        for c in reading {
            let Some(now) = c.in_recovery else { continue };
            match self.recovering.iter_mut().find(|(id, _)| *id == c.id) {
                Some((_, was)) => {
                    if now && !*was {
                        self.recovery_entries += 1;
                    }
                    *was = now;
                }
                None => {
                    self.recovering.push((c.id, now));
                    self.recovery_entries += u64::from(now);
                }
            }
        }
    }

    /// The window's statistics, from the reading at its end (which also counts as a poll).
    pub fn finish(mut self, end: &[ConnReading]) -> TransportStats {
        self.observe(end);
        self.summarize(end)
    }

    /// A server's statistics over its life: `live` is the reading at `SHUTDOWN` of the
    /// connections still open (a poll when there are any), `retired` the last reading of each
    /// connection that closed before; the gauges at the end are each connection's last.
    pub fn finish_lifetime(
        mut self,
        live: &[ConnReading],
        retired: &[ConnReading],
    ) -> TransportStats {
        if !live.is_empty() {
            self.observe(live);
        }
        let all: Vec<ConnReading> = retired.iter().chain(live).copied().collect();
        self.summarize(&all)
    }

    fn summarize(&self, end: &[ConnReading]) -> TransportStats {
        let start = |id: u64| self.start.iter().find(|c| c.id == id);
        // Sum of end-minus-start per connection of an optional counter; absent if any
        // connection lacks it.
        let delta = |f: fn(&ConnReading) -> Option<u64>| -> Option<u64> {
            end.iter().try_fold(0u64, |sum, c| {
                let before = start(c.id).map_or(Some(0), f)?;
                Some(sum + f(c)?.saturating_sub(before))
            })
        };
        let sum = |f: fn(&ConnReading) -> Option<u64>| -> Option<u64> {
            end.iter().try_fold(0u64, |sum, c| Some(sum + f(c)?))
        };
        let mean = |f: fn(&ConnReading) -> Option<u64>| -> Option<u64> {
            let n = end.len() as u64;
            sum(f).filter(|_| n > 0).map(|s| s / n)
        };
        let tcp = end.iter().all(|c| c.in_recovery.is_some()) && !end.is_empty();
        TransportStats {
            transport: self.transport.to_string(),
            connections: end.len() as u64,
            polls: Some(self.polls),
            packets_sent: delta(|c| Some(c.packets_sent)),
            bytes_sent: delta(|c| c.bytes_sent),
            retransmitted: delta(|c| c.retransmitted),
            lost: delta(|c| c.lost),
            timeouts: delta(|c| c.timeouts),
            congestion_events: if tcp {
                Some(self.recovery_entries)
            } else {
                delta(|c| c.congestion_events)
            },
            cwnd_bytes: sum(|c| Some(c.cwnd_bytes)),
            cwnd_min_bytes: self.cwnd_min,
            cwnd_mean_bytes: (self.polls > 0).then(|| (self.cwnd_sum / self.polls as u128) as u64),
            srtt_ns: mean(|c| Some(c.srtt_ns)),
            min_rtt_ns: mean(|c| c.min_rtt_ns),
            delivery_rate_bps: sum(|c| c.delivery_rate_bps),
            busy_ns: delta(|c| c.busy_ns),
            rwnd_limited_ns: delta(|c| c.rwnd_limited_ns),
            sndbuf_limited_ns: delta(|c| c.sndbuf_limited_ns),
            datagrams_sent: delta(|c| c.datagrams_sent),
            send_calls: delta(|c| c.send_calls),
        }
    }
}

/// Duplicates of the client's TCP sockets, registered as connections open (a duplicate
/// descriptor reads the same socket). The probe must be dropped before the connections close,
/// or the duplicates keep the sockets open.
#[derive(Debug, Clone, Default)]
pub struct TcpSockets(Arc<Mutex<Vec<OwnedFd>>>);

impl TcpSockets {
    /// Registers a duplicate of `socket`; a failed duplication only costs its statistics.
    pub fn register(&self, socket: &impl AsFd) {
        match socket.as_fd().try_clone_to_owned() {
            Ok(fd) => {
                if let Ok(mut fds) = self.0.lock() {
                    fds.push(fd);
                }
            }
            Err(e) => eprintln!("rpcarena-peer-rust: no TCP statistics for a connection: {e}"),
        }
    }

    /// Closes every duplicate (before the connections close).
    pub fn clear(&self) {
        if let Ok(mut fds) = self.0.lock() {
            fds.clear();
        }
    }

    fn read(&self) -> Vec<ConnReading> {
        let Ok(fds) = self.0.lock() else {
            return Vec::new();
        };
        fds.iter()
            .enumerate()
            .filter_map(|(i, fd)| {
                tcp_info::read(fd.as_fd())
                    .ok()
                    .map(|t| tcp_reading(i as u64, &t))
            })
            .collect()
    }
}

/// A server's connections over its life, registered as they are accepted: duplicates of the
/// TCP sockets, handles of the QUIC connections. Each registration returns a [`Registration`]
/// that the connection's owner keeps with the connection: when it is dropped (the connection
/// ended) the connection is read one last time and let go, so a duplicate never holds a socket
/// open past its connection. [`Self::finish`] reads the rest at `SHUTDOWN` and lets go of
/// everything before the server closes its connections.
#[derive(Debug, Clone, Default)]
pub struct ServerConnections(Arc<Mutex<Lifetime>>);

#[derive(Debug, Default)]
struct Lifetime {
    next_id: u64,
    live: Vec<(u64, Live)>,
    retired: Vec<ConnReading>,
    finished: bool,
}

#[derive(Debug)]
enum Live {
    Tcp(OwnedFd),
    Quic(quinn::Connection),
}

impl Live {
    fn read(&self, id: u64) -> Option<ConnReading> {
        match self {
            Live::Tcp(fd) => tcp_info::read(fd.as_fd())
                .ok()
                .map(|info| tcp_reading(id, &info)),
            Live::Quic(connection) => Some(quic_reading(id, &connection.stats())),
        }
    }
}

/// Keep it with the connection: dropping it reads the connection one last time and lets go
/// of it (see [`ServerConnections`]).
#[must_use = "dropping the registration retires the connection at once"]
#[derive(Debug)]
pub struct Registration {
    connections: ServerConnections,
    id: Option<u64>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.connections.retire(id);
        }
    }
}

impl ServerConnections {
    fn add(&self, live: Option<Live>) -> Registration {
        let id = live.and_then(|live| {
            let mut l = self.0.lock().ok()?;
            if l.finished {
                return None;
            }
            let id = l.next_id;
            l.next_id += 1;
            l.live.push((id, live));
            Some(id)
        });
        Registration {
            connections: self.clone(),
            id,
        }
    }

    /// Registers an accepted TCP connection (a duplicate of its socket; a failed duplication
    /// only costs its statistics).
    pub fn register_tcp(&self, socket: &impl AsFd) -> Registration {
        let fd = socket
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| eprintln!("rpcarena-peer-rust: no TCP statistics for a connection: {e}"))
            .ok();
        self.add(fd.map(Live::Tcp))
    }

    /// Registers an accepted QUIC connection.
    pub fn register_quic(&self, connection: &quinn::Connection) -> Registration {
        self.add(Some(Live::Quic(connection.clone())))
    }

    /// Reads a connection that ended one last time, and lets go of it.
    fn retire(&self, id: u64) {
        let Ok(mut l) = self.0.lock() else { return };
        if let Some(at) = l.live.iter().position(|(i, _)| *i == id) {
            let (id, live) = l.live.swap_remove(at);
            if let Some(reading) = live.read(id) {
                l.retired.push(reading);
            }
        }
    }

    /// Reads every open connection.
    pub fn poll(&self) -> Vec<ConnReading> {
        let Ok(l) = self.0.lock() else {
            return Vec::new();
        };
        l.live
            .iter()
            .filter_map(|(id, live)| live.read(*id))
            .collect()
    }

    /// At `SHUTDOWN`: the open connections' readings and the ended ones' last readings; lets
    /// go of every connection and registers none after.
    fn finish(&self) -> (Vec<ConnReading>, Vec<ConnReading>) {
        let Ok(mut l) = self.0.lock() else {
            return (Vec::new(), Vec::new());
        };
        let open = l
            .live
            .iter()
            .filter_map(|(id, live)| live.read(*id))
            .collect();
        l.finished = true;
        l.live.clear();
        (open, std::mem::take(&mut l.retired))
    }
}

/// One TCP socket's reading.
pub fn tcp_reading(id: u64, info: &tcp_info::TcpInfo) -> ConnReading {
    let r = &info.raw;
    let us = |v: u64| v.saturating_mul(1000);
    let limited = info.has_limited_times();
    ConnReading {
        id,
        packets_sent: u64::from(r.segs_out),
        bytes_sent: info.has_bytes_sent().then_some(r.bytes_sent),
        retransmitted: Some(u64::from(r.total_retrans)),
        lost: None,
        timeouts: info.has_total_rto().then_some(u64::from(r.total_rto)),
        congestion_events: None,
        in_recovery: Some(matches!(
            r.ca_state,
            tcp_info::CA_RECOVERY | tcp_info::CA_LOSS
        )),
        cwnd_bytes: u64::from(r.snd_cwnd) * u64::from(r.snd_mss),
        srtt_ns: us(u64::from(r.rtt)),
        min_rtt_ns: Some(us(u64::from(r.min_rtt))),
        delivery_rate_bps: info
            .has_delivery_rate()
            .then_some(r.delivery_rate.saturating_mul(8)),
        busy_ns: limited.then_some(us(r.busy_time)),
        rwnd_limited_ns: limited.then_some(us(r.rwnd_limited)),
        sndbuf_limited_ns: limited.then_some(us(r.sndbuf_limited)),
        datagrams_sent: None,
        send_calls: None,
    }
}

/// One QUIC connection's reading.
pub fn quic_reading(id: u64, stats: &quinn::ConnectionStats) -> ConnReading {
    let path = &stats.path;
    ConnReading {
        id,
        packets_sent: path.sent_packets,
        bytes_sent: Some(stats.udp_tx.bytes),
        retransmitted: None,
        lost: Some(path.lost_packets),
        timeouts: None,
        congestion_events: Some(path.congestion_events),
        in_recovery: None,
        cwnd_bytes: path.cwnd,
        srtt_ns: path.rtt.as_nanos() as u64,
        min_rtt_ns: None,
        delivery_rate_bps: None,
        busy_ns: None,
        rwnd_limited_ns: None,
        sndbuf_limited_ns: None,
        datagrams_sent: Some(stats.udp_tx.datagrams),
        send_calls: Some(stats.udp_tx.ios),
    }
}

/// Reads every connection of a client stack.
#[derive(Debug, Clone)]
pub enum Probe {
    /// The grpc and tcp stacks' sockets.
    Tcp(TcpSockets),
    /// The quic stack's connection.
    Quic(quinn::Connection),
}

impl Probe {
    /// The `transport` name of its statistics.
    pub fn transport(&self) -> &'static str {
        match self {
            Probe::Tcp(_) => "tcp",
            Probe::Quic(_) => "quic",
        }
    }

    /// Every connection now.
    pub fn read(&self) -> Vec<ConnReading> {
        match self {
            Probe::Tcp(sockets) => sockets.read(),
            Probe::Quic(connection) => vec![quic_reading(0, &connection.stats())],
        }
    }
}

/// Whether a poll that reads no connection counts as a poll.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Empty {
    Counts,
    Skipped,
}

/// The polling task of [`Poller`] and [`ServerPoller`]: `read` every [`POLL_INTERVAL`] into
/// `tracker`, until aborted.
fn poll_every_interval(
    tracker: Arc<Mutex<Tracker>>,
    read: impl Fn() -> Vec<ConnReading> + Send + 'static,
    empty: Empty,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(POLL_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let reading = read();
            if reading.is_empty() && empty == Empty::Skipped {
                continue;
            }
            if let Ok(mut t) = tracker.lock() {
                t.observe(&reading);
            }
        }
    })
}

/// Polls a probe through the window on a task of its own.
pub struct Poller {
    probe: Probe,
    tracker: Arc<Mutex<Tracker>>,
    task: tokio::task::JoinHandle<()>,
}

impl Poller {
    /// Reads the start and begins polling (call it when `START` arrives).
    pub fn start(probe: Probe) -> Poller {
        let tracker = Arc::new(Mutex::new(Tracker::new(probe.transport(), probe.read())));
        let task = {
            let probe = probe.clone();
            poll_every_interval(tracker.clone(), move || probe.read(), Empty::Counts)
        };
        Poller {
            probe,
            tracker,
            task,
        }
    }

    /// Stops polling and reads the end.
    pub fn finish(self) -> Option<TransportStats> {
        self.task.abort();
        let end = self.probe.read();
        let tracker = self.tracker.lock().ok()?.clone();
        Some(tracker.finish(&end))
    }
}

/// Polls a server's connections from its start to `SHUTDOWN` on a task of its own (polls with
/// no connection open are not counted).
pub struct ServerPoller {
    connections: ServerConnections,
    tracker: Arc<Mutex<Tracker>>,
    task: tokio::task::JoinHandle<()>,
}

impl ServerPoller {
    /// Begins polling `connections`, whose statistics are named `transport`.
    pub fn start(transport: &'static str, connections: ServerConnections) -> ServerPoller {
        let tracker = Arc::new(Mutex::new(Tracker::new(transport, Vec::new())));
        let task = {
            let connections = connections.clone();
            poll_every_interval(tracker.clone(), move || connections.poll(), Empty::Skipped)
        };
        ServerPoller {
            connections,
            tracker,
            task,
        }
    }

    /// Stops polling, reads the end and lets go of every connection; `None` when the server
    /// never had a connection.
    pub fn finish(self) -> Option<TransportStats> {
        self.task.abort();
        let (open, retired) = self.connections.finish();
        if open.is_empty() && retired.is_empty() {
            return None;
        }
        let tracker = self.tracker.lock().ok()?.clone();
        Some(tracker.finish_lifetime(&open, &retired))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(id: u64, sent: u64, retrans: u64, cwnd: u64, recovering: bool) -> ConnReading {
        ConnReading {
            id,
            packets_sent: sent,
            retransmitted: Some(retrans),
            in_recovery: Some(recovering),
            cwnd_bytes: cwnd,
            srtt_ns: 30_000_000,
            busy_ns: Some(sent * 1000),
            ..ConnReading::default()
        }
    }

    #[test]
    fn counters_are_window_differences_summed_over_connections() {
        let mut t = Tracker::new(
            "tcp",
            vec![tcp(0, 100, 1, 10_000, false), tcp(1, 50, 0, 10_000, false)],
        );
        t.observe(&[tcp(0, 150, 1, 8_000, false), tcp(1, 60, 0, 12_000, false)]);
        let s = t.finish(&[tcp(0, 300, 3, 14_000, false), tcp(1, 80, 2, 14_000, false)]);
        assert_eq!(s.transport, "tcp");
        assert_eq!(s.connections, 2);
        assert_eq!(s.packets_sent, Some(200 + 30));
        assert_eq!(s.retransmitted, Some(2 + 2));
        assert_eq!(s.busy_ns, Some(230_000));
        assert_eq!(s.polls, Some(2));
        assert_eq!(s.cwnd_bytes, Some(28_000));
        assert_eq!(s.cwnd_min_bytes, Some(20_000));
        assert_eq!(s.cwnd_mean_bytes, Some(24_000));
        assert_eq!(s.srtt_ns, Some(30_000_000));
        assert_eq!(s.lost, None, "TCP reports no lost packets");
        assert_eq!(s.datagrams_sent, None);
    }

    #[test]
    fn tcp_congestion_events_are_entries_into_recovery() {
        let mut t = Tracker::new("tcp", vec![tcp(0, 0, 0, 1, true)]);
        // Already recovering at START: not an entry. Leaves, enters, stays, leaves, enters.
        for recovering in [true, false, true, true, false, true] {
            t.observe(&[tcp(0, 0, 0, 1, recovering)]);
        }
        // A connection that appears during the window, recovering.
        t.observe(&[tcp(0, 0, 0, 1, true), tcp(7, 0, 0, 1, true)]);
        let s = t.finish(&[tcp(0, 0, 0, 1, false), tcp(7, 0, 0, 1, false)]);
        assert_eq!(s.congestion_events, Some(3));
    }

    #[test]
    fn quic_congestion_events_come_from_the_library() {
        let q = |sent, lost, events, cwnd| ConnReading {
            packets_sent: sent,
            lost: Some(lost),
            congestion_events: Some(events),
            cwnd_bytes: cwnd,
            datagrams_sent: Some(sent),
            send_calls: Some(sent / 2),
            ..ConnReading::default()
        };
        let t = Tracker::new("quic", vec![q(10, 0, 1, 12_000)]);
        let s = t.finish(&[q(110, 2, 3, 30_000)]);
        assert_eq!(
            (
                s.packets_sent,
                s.lost,
                s.congestion_events,
                s.datagrams_sent,
                s.send_calls
            ),
            (Some(100), Some(2), Some(2), Some(100), Some(50))
        );
        assert_eq!(s.retransmitted, None);
        assert_eq!(
            (s.cwnd_min_bytes, s.cwnd_bytes),
            (Some(30_000), Some(30_000))
        );
    }

    #[test]
    fn a_counter_one_connection_lacks_is_absent() {
        let mut b = tcp(1, 10, 0, 1, false);
        b.busy_ns = None;
        let t = Tracker::new("tcp", vec![]);
        let s = t.finish(&[tcp(0, 10, 0, 1, false), b]);
        assert_eq!(s.busy_ns, None);
        assert_eq!(
            s.packets_sent,
            Some(20),
            "connections new in the window count from zero"
        );
    }

    #[test]
    fn a_servers_lifetime_sums_closed_and_open_connections() {
        // Connection 0 closed before SHUTDOWN (its last reading), connection 1 is still open.
        let mut t = Tracker::new("tcp", Vec::new());
        t.observe(&[tcp(0, 100, 1, 10_000, false)]);
        t.observe(&[tcp(0, 200, 2, 30_000, true), tcp(1, 10, 0, 14_000, false)]);
        let s = t.finish_lifetime(
            &[tcp(1, 50, 1, 20_000, false)],
            &[tcp(0, 250, 3, 40_000, false)],
        );
        assert_eq!(s.connections, 2);
        assert_eq!(
            s.packets_sent,
            Some(300),
            "counters from zero: the server's life"
        );
        assert_eq!(s.retransmitted, Some(4));
        assert_eq!(s.congestion_events, Some(1));
        assert_eq!(s.polls, Some(3));
        assert_eq!(s.cwnd_min_bytes, Some(10_000));
        assert_eq!(s.cwnd_mean_bytes, Some((10_000 + 44_000 + 20_000) / 3));
        assert_eq!(
            s.cwnd_bytes,
            Some(60_000),
            "each connection's last window, summed"
        );
        // Nothing open at SHUTDOWN: the end is not a poll.
        let s = Tracker::new("tcp", Vec::new()).finish_lifetime(&[], &[tcp(0, 5, 0, 1, false)]);
        assert_eq!((s.polls, s.cwnd_min_bytes), (Some(0), None));
        assert_eq!(s.packets_sent, Some(5));
    }

    #[test]
    fn a_server_keeps_the_last_reading_of_ended_connections() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut accepted, _) = listener.accept().unwrap();
        let connections = ServerConnections::default();
        let registration = connections.register_tcp(&accepted);
        accepted.write_all(&[1u8; 10_000]).unwrap();
        let mut got = vec![0u8; 10_000];
        client.read_exact(&mut got).unwrap();
        let open = connections.poll();
        assert_eq!(open.len(), 1);
        assert!(open[0].packets_sent >= 1, "{open:?}");
        // The connection ends: its last reading is kept and the duplicate let go, so the
        // client sees the server's close.
        drop(accepted);
        drop(registration);
        assert!(connections.poll().is_empty());
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(client.read(&mut got).unwrap(), 0, "the server's FIN");
        // A second connection still open at SHUTDOWN.
        let _second = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let registration = connections.register_tcp(&accepted);
        let (open, retired) = connections.finish();
        assert_eq!((open.len(), retired.len()), (1, 1));
        assert!(
            retired[0].bytes_sent.is_none_or(|b| b >= 10_000),
            "{retired:?}"
        );
        // After SHUTDOWN nothing is registered any more, and a late retirement is harmless.
        drop(registration);
        let _late = connections.register_tcp(&accepted);
        assert!(connections.poll().is_empty());
    }

    #[test]
    fn registered_sockets_are_read_and_cleared() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let sockets = TcpSockets::default();
        sockets.register(&client);
        let probe = Probe::Tcp(sockets.clone());
        let reading = probe.read();
        assert_eq!(reading.len(), 1);
        assert!(reading[0].cwnd_bytes > 0);
        sockets.clear();
        assert!(probe.read().is_empty());
    }
}
