//! Clocks, precise waits and the release-lateness histogram.
//!
//! Timer facts that shaped this (2-vCPU VM, kernel 6.18): a 200 us `clock_nanosleep` wakes
//! ~35 us late at the median and up to ~90 us at p99 even with timer slack 1 ns, while sleeping
//! to 50 us before the deadline and spinning the rest brings p99 down to ~15 us. Async runtime
//! timers have millisecond granularity and never touch the packet path.

use hdrhistogram::Histogram;
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags, clock_gettime, clock_nanosleep};
use serde::{Deserialize, Serialize};

/// `CLOCK_MONOTONIC` in nanoseconds: the emulator's clock.
pub fn mono_ns() -> u64 {
    clock_ns(ClockId::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` in nanoseconds: the clock of the kernel's socket receive timestamps.
pub fn realtime_ns() -> u64 {
    clock_ns(ClockId::CLOCK_REALTIME)
}

fn clock_ns(id: ClockId) -> u64 {
    // clock_gettime on these clocks cannot fail on Linux; 0 keeps the hot path panic-free.
    clock_gettime(id)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Sets the calling thread's timer slack to 1 ns, so the kernel does not batch its wake-ups
/// (the default slack is 50 us). Best effort: returns whether it worked.
pub fn set_precise_timer_slack() -> bool {
    nix::sys::prctl::set_timerslack(1).is_ok()
}

/// How the forwarding threads wait. The defaults reach a release lateness p99 well under
/// 100 us on a 2-core VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingOptions {
    /// Sleep until this long before a release and spin the rest. Default 50 us. Larger means
    /// more punctual releases and more CPU burnt; 0 relies on the timer alone.
    pub spin_ns: u64,
    /// Longest sleep while nothing is held, so a stop request is seen even if the wake-up pipe
    /// is lost. Default 100 ms.
    pub idle_wakeup_ns: u64,
    /// TUN `tx_queue_len`, packets: how much the kernel may buffer before the forwarder reads.
    /// The TUN drops silently (counted in `tx_dropped`) when it overflows. Default 10000
    /// (the kernel's default is 500).
    pub tun_tx_queue_len: u32,
    /// Scheduling priority of the forwarding threads (and of netcheck's probe threads).
    /// Refusal (no CAP_SYS_NICE) is recorded in the topology info, not fatal.
    pub priority: ThreadPriority,
    /// Hold a zero-latency request on `/dev/cpu_dma_latency` while an emulated topology
    /// exists, so idle CPUs poll instead of halting and wake-ups take microseconds rather than
    /// tens of them. Default true. It is machine-wide (idle CPUs burn host time while held);
    /// the kernel drops it when the topology goes or the process dies.
    pub cpu_latency_request: bool,
    /// CPUs the forwarding threads may run on (empty: any). The runner's CPU pinning keeps the
    /// emulator off the peers' CPUs where the machine has enough of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            spin_ns: 50_000,
            idle_wakeup_ns: 100_000_000,
            tun_tx_queue_len: 10_000,
            priority: ThreadPriority::Realtime { priority: 10 },
            cpu_latency_request: true,
            cpus: Vec::new(),
        }
    }
}

/// How the forwarding threads are scheduled.
///
/// Measured on a 2-vCPU VM shared with compiler processes: with normal scheduling or nice
/// -20 the forwarders fell behind (release lateness p99 of milliseconds, a TUN queue of
/// 10,000 packets overflowing at 100k packets/s); `SCHED_FIFO` kept lateness p99 under
/// 100 us. When the machine is quiet nice -20 wakes slightly faster (TUN wake-up to read
/// p50 14-30 us against 18-42 us for SCHED_FIFO, whose wake-ups may be pushed to the other
/// vCPU), but peers load the CPUs during every sample, so real-time is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum ThreadPriority {
    /// Whatever the process has.
    Normal,
    /// `setpriority` to this nice value (-20..=19).
    Nice {
        /// The nice value.
        nice: i8,
    },
    /// `SCHED_FIFO` at this priority (1..=99). The spin is bounded per release and the
    /// kernel's RT throttling keeps 5 % of each CPU for others.
    Realtime {
        /// The real-time priority.
        priority: u8,
    },
}

/// Sleeps until `deadline_ns` on `CLOCK_MONOTONIC`: an absolute `clock_nanosleep` to
/// `spin_ns` before it, then a spin. Absolute sleeps keep pacing in virtual time: a late
/// wake-up shortens the next wait instead of shifting every later deadline.
pub fn sleep_until(deadline_ns: u64, spin_ns: u64) {
    let wake = deadline_ns.saturating_sub(spin_ns);
    if mono_ns() < wake {
        let ts = TimeSpec::new((wake / 1_000_000_000) as i64, (wake % 1_000_000_000) as i64);
        // EINTR only shortens the sleep; the spin below covers the rest.
        let _ = clock_nanosleep(
            ClockId::CLOCK_MONOTONIC,
            ClockNanosleepFlags::TIMER_ABSTIME,
            &ts,
        );
    }
    while mono_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

/// A latency histogram in nanoseconds with 2 significant digits (1 % resolution), from 1 ns
/// to 100 s; larger values are clamped. Two digits keep it at ~4,500 counters, so the
/// forwarders can publish (merge) it after every idle spell for a few microseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

const HIST_MAX_NS: u64 = 100_000_000_000;

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LatencyHistogram {
            inner: Histogram::new_with_bounds(1, HIST_MAX_NS, 2)
                .expect("constant histogram bounds are valid"),
        }
    }

    /// Records one value.
    pub fn record(&mut self, ns: u64) {
        let _ = self.inner.record(ns.clamp(1, HIST_MAX_NS));
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let _ = self.inner.add(&other.inner);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// Value at quantile `q` in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> u64 {
        self.inner.value_at_quantile(q)
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.inner.reset();
    }

    /// The usual percentiles.
    pub fn summary(&self) -> LatencySummary {
        if self.inner.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.inner.len(),
            mean_ns: self.inner.mean(),
            p50_ns: self.quantile(0.50),
            p90_ns: self.quantile(0.90),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.inner.max(),
        }
    }
}

/// Percentiles of a [`LatencyHistogram`], nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ns as f64 / 500_000.0 - 1.0).abs() < 0.01);
        assert!((s.p99_ns as f64 / 990_000.0 - 1.0).abs() < 0.01);
        let mut other = LatencyHistogram::new();
        other.record(5);
        h.merge(&other);
        assert_eq!(h.count(), 1001);
        assert_eq!(LatencyHistogram::new().summary().count, 0);
    }

    #[test]
    fn sleep_until_is_never_early() {
        set_precise_timer_slack();
        for _ in 0..20 {
            let deadline = mono_ns() + 200_000;
            sleep_until(deadline, 50_000);
            assert!(mono_ns() >= deadline);
        }
    }
}
