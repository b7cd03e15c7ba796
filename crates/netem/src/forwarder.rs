//! One forwarding thread per direction: read the input TUN, run the packet through the pure
//! core, write it to the output TUN when its time comes.
//!
//! Timing: the core's times to send are virtual (computed from arrival times and from each
//! other, never from when we actually woke up), so a late wake-up makes one packet late and
//! never shifts the ones after it. Waits are `ppoll` on the input device and a stop pipe with a
//! nanosecond timeout, timer slack 1 ns, ending `spin_ns` before the release and spinning the
//! rest. Release lateness (actual write time minus due time) goes into a histogram.

use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, ppoll};
use nix::sys::time::TimeSpec;
use tun_rs::SyncDevice;

use rpcarena_netem_core::vnet::{Bundle, VNET_HDR_LEN};
use rpcarena_netem_core::{
    Direction, DirectionStats, LatencyHistogram, LinkEmulator, TimingOptions, Verdict,
};

use crate::error::NetemError;
use crate::sched;
use crate::timing::{mono_ns, set_precise_timer_slack};

/// Packets read per loop turn before checking for due releases, so that a flood of arrivals
/// cannot delay releases by more than a few microseconds.
const READ_BATCH: usize = 64;
/// Publish counters at least this often while busy (and whenever the link goes idle): a
/// sample's window counters are read at START and at its end, so they are this stale at most.
const PUBLISH_EVERY_NS: u64 = 10_000_000;
/// Spare packet buffers kept for reuse.
const POOL_MAX: usize = 4096;
/// Consecutive read errors after which the thread gives up (the device is gone).
const MAX_CONSECUTIVE_ERRORS: u32 = 100;

#[derive(Default)]
struct Shared {
    stats: DirectionStats,
    lateness: LatencyHistogram,
    /// Why the loop ended, if it ended on its own.
    exit: Option<String>,
}

pub(crate) struct Forwarder {
    direction: Direction,
    stop: Arc<AtomicBool>,
    wake_tx: OwnedFd,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<()>>,
}

struct Loop {
    input: Arc<SyncDevice>,
    output: Arc<SyncDevice>,
    emulator: LinkEmulator<Vec<u8>>,
    buf_len: usize,
    /// Frames carry a virtio-net header and may be GSO bundles (granularity "offload").
    offload: bool,
    timing: TimingOptions,
    stop: Arc<AtomicBool>,
    wake_rx: OwnedFd,
    shared: Arc<Mutex<Shared>>,
    pool: Vec<Vec<u8>>,
    lateness: LatencyHistogram,
    read_errors: u64,
    write_errors: u64,
    oversize: u64,
    last_error: Option<String>,
}

impl Forwarder {
    /// Starts the thread; the second value says how its scheduling set-up went.
    pub fn spawn(
        direction: Direction,
        input: Arc<SyncDevice>,
        output: Arc<SyncDevice>,
        emulator: LinkEmulator<Vec<u8>>,
        mtu: u32,
        offload: bool,
        timing: TimingOptions,
    ) -> Result<(Forwarder, Option<String>), NetemError> {
        let (wake_rx, wake_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
            .map_err(|e| NetemError::io("creating the forwarder's wake-up pipe", e.into()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared::default()));
        if let Ok(mut s) = shared.lock() {
            s.stats.seed = emulator.seed();
        }
        let mut body = Loop {
            input,
            output,
            emulator,
            // Without offloads a TUN read never exceeds the MTU; the slack detects surprises.
            // With them a read is a virtio-net header and a GSO bundle of up to 64 KiB.
            buf_len: if offload {
                VNET_HDR_LEN + 65_536 + 256
            } else {
                mtu as usize + 256
            },
            offload,
            timing,
            stop: stop.clone(),
            wake_rx,
            shared: shared.clone(),
            pool: Vec::new(),
            lateness: LatencyHistogram::new(),
            read_errors: 0,
            write_errors: 0,
            oversize: 0,
            last_error: None,
        };
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("rpa-fwd-{}", direction.label()))
            .spawn(move || {
                let priority = body.timing.priority;
                let note = match sched::apply(priority) {
                    Ok(()) => {
                        if let Ok(mut s) = body.shared.lock() {
                            s.stats.priority = Some(priority);
                        }
                        None
                    }
                    Err(e) => Some(format!(
                        "{} forwarder: {priority:?} refused ({e}); normal scheduling",
                        direction.label()
                    )),
                };
                let note = match sched::pin(&body.timing.cpus) {
                    Ok(()) => note,
                    Err(e) => Some(format!(
                        "{}{} forwarder: pinning to CPUs {:?} refused ({e})",
                        note.map(|n| format!("{n}; ")).unwrap_or_default(),
                        direction.label(),
                        body.timing.cpus
                    )),
                };
                let _ = started_tx.send(note);
                let reason = body.run();
                body.publish();
                if let Ok(mut s) = body.shared.lock() {
                    s.exit = reason;
                }
            })
            .map_err(|e| NetemError::io("spawning a forwarding thread", e))?;
        let note = started_rx.recv().unwrap_or(None);
        Ok((
            Forwarder {
                direction,
                stop,
                wake_tx,
                shared,
                thread: Some(thread),
            },
            note,
        ))
    }

    pub fn direction(&self) -> Direction {
        self.direction
    }

    pub fn stats(&self) -> DirectionStats {
        match self.shared.lock() {
            Ok(s) => {
                let mut stats = s.stats.clone();
                stats.lateness = s.lateness.summary();
                stats
            }
            Err(_) => DirectionStats::default(),
        }
    }

    /// The full lateness histogram (netcheck merges these).
    pub fn lateness_histogram(&self) -> LatencyHistogram {
        self.shared
            .lock()
            .map(|s| s.lateness.clone())
            .unwrap_or_default()
    }

    /// `Ok` while the thread runs; otherwise why it stopped.
    pub fn check_alive(&self) -> Result<(), String> {
        match &self.thread {
            Some(t) if !t.is_finished() => Ok(()),
            Some(_) => Err(self
                .shared
                .lock()
                .ok()
                .and_then(|s| s.exit.clone())
                .unwrap_or_else(|| "the thread panicked".to_string())),
            None => Err("stopped".to_string()),
        }
    }

    /// Stops and joins the thread; safe to call twice.
    pub fn stop(&mut self) -> Result<(), NetemError> {
        self.stop.store(true, Ordering::SeqCst);
        // If the pipe is full the thread is already awake; it sees the flag either way.
        let _ = nix::unistd::write(&self.wake_tx, b"x");
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            return Err(NetemError::ThreadPanicked {
                what: format!("forwarding {}", self.direction.label()),
            });
        }
        Ok(())
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            let _ = writeln!(std::io::stderr(), "rpcarena-netem: {e}");
        }
    }
}

impl Loop {
    /// Runs until asked to stop (`None`) or until the devices fail (`Some(reason)`).
    fn run(&mut self) -> Option<String> {
        set_precise_timer_slack();
        let spin_ns = self.timing.spin_ns;
        let idle_ns = self.timing.idle_wakeup_ns.max(1_000_000);
        let mut last_publish = mono_ns();
        let mut dirty = false;
        let mut consecutive_errors = 0u32;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }

            for _ in 0..READ_BATCH {
                let mut buf = self.pool.pop().unwrap_or_else(|| vec![0u8; self.buf_len]);
                match self.input.recv(&mut buf) {
                    Ok(n) => {
                        consecutive_errors = 0;
                        dirty = true;
                        self.arrive(buf, n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        self.recycle(buf);
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                        self.recycle(buf);
                    }
                    Err(e) => {
                        self.recycle(buf);
                        consecutive_errors += 1;
                        if let Some(reason) = self.read_failed(&e, consecutive_errors) {
                            return Some(reason);
                        }
                        break;
                    }
                }
            }

            dirty |= self.release_due();

            let now = mono_ns();
            let next = self.emulator.next_release_time();
            if dirty && (next.is_none() || now.saturating_sub(last_publish) >= PUBLISH_EVERY_NS) {
                self.publish();
                last_publish = now;
                dirty = false;
            }
            let timeout_ns = match next {
                // Close to a release: spin, reading the input between checks. Yielding lets
                // another real-time forwarder on this CPU (same priority, so no preemption)
                // pick up its packet instead of waiting out our spin.
                Some(t) if t <= now + spin_ns => {
                    std::thread::yield_now();
                    continue;
                }
                Some(t) => (t - spin_ns - now).min(idle_ns),
                None => idle_ns,
            };
            self.wait(timeout_ns);
        }
    }

    /// Hands a frame of `n` bytes just read to the emulator (an oversize one is dropped).
    #[inline]
    fn arrive(&mut self, mut buf: Vec<u8>, n: usize) {
        if n >= self.buf_len {
            self.oversize += 1;
            self.recycle(buf);
            return;
        }
        // The rate charges what the bundle's segments take on the wire; loss, delay and the
        // limit act on the bundle (granularity "offload").
        let wire_len = if self.offload {
            self.bundle_wire_len(&buf[..n])
        } else {
            n
        };
        buf.truncate(n);
        match self.emulator.handle_packet(mono_ns(), wire_len, buf) {
            Verdict::Queued { .. } => {}
            Verdict::Lost(b) | Verdict::QueueFull(b) => self.recycle(b),
        }
    }

    /// Bytes an offload frame's segments take on the wire; a malformed frame counts as its IP
    /// packet and is noted as the last error.
    fn bundle_wire_len(&mut self, frame: &[u8]) -> usize {
        match Bundle::parse(frame) {
            Ok(bundle) => bundle.wire_len,
            Err(e) => {
                self.last_error = Some(format!("an offload frame: {e}"));
                frame.len().saturating_sub(VNET_HDR_LEN)
            }
        }
    }

    /// Counts a failed read; the reason to give up after too many in a row, else `None` after a
    /// pause that keeps a broken device from making a hot loop.
    #[cold]
    fn read_failed(&mut self, e: &std::io::Error, consecutive_errors: u32) -> Option<String> {
        self.read_errors += 1;
        self.last_error = Some(format!("reading the input TUN: {e}"));
        if consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
            return Some(format!(
                "{MAX_CONSECUTIVE_ERRORS} consecutive read errors, last: {e}"
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        None
    }

    /// Writes every packet due by now to the output; whether there was any.
    #[inline]
    fn release_due(&mut self) -> bool {
        let mut released = false;
        let now = mono_ns();
        while let Some(packet) = self.emulator.poll_release(now) {
            let sent_at = mono_ns();
            if let Err(e) = self.output.send(&packet.payload) {
                self.write_errors += 1;
                self.last_error = Some(format!("writing the output TUN: {e}"));
            }
            self.lateness.record(sent_at.saturating_sub(packet.due_ns));
            self.recycle(packet.payload);
            released = true;
        }
        released
    }

    /// Sleeps until input arrives, the stop pipe is written, or `timeout_ns` passes.
    fn wait(&mut self, timeout_ns: u64) {
        let timeout = TimeSpec::new(
            (timeout_ns / 1_000_000_000) as i64,
            (timeout_ns % 1_000_000_000) as i64,
        );
        let mut fds = [
            PollFd::new(self.input.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.wake_rx.as_fd(), PollFlags::POLLIN),
        ];
        // EINTR and errors just end the wait; the loop re-checks everything.
        let _ = ppoll(&mut fds, Some(timeout), None);
        let woken = fds[1]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN));
        if woken {
            let mut sink = [0u8; 64];
            let _ = nix::unistd::read(&self.wake_rx, &mut sink);
        }
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.pool.len() < POOL_MAX {
            // Buffers keep their full length; only `len` bytes of a packet are ever written.
            buf.resize(self.buf_len, 0);
            self.pool.push(buf);
        }
    }

    fn publish(&mut self) {
        if let Ok(mut s) = self.shared.lock() {
            s.stats.counters = self.emulator.counters();
            s.stats.held = self.emulator.held() as u64;
            s.stats.read_errors = self.read_errors;
            s.stats.write_errors = self.write_errors;
            s.stats.oversize = self.oversize;
            s.stats.last_error.clone_from(&self.last_error);
            s.lateness.merge(&self.lateness);
        }
        self.lateness.clear();
    }
}
