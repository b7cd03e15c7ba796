//! The emulator's release-lateness histogram: 2 significant digits, so the forwarders can
//! publish it cheaply; summarized with the same [`LatencySummary`] as every latency rpcarena
//! reports.

use hdrhistogram::Histogram;
use rpcarena_stats::LatencySummary;

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

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.inner.reset();
    }

    /// The usual percentiles.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary::of(&self.inner)
    }
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
}
