//! The latency figures of one histogram: [`LatencySummary`].
//!
//! Every latency rpcarena reports (an operation's, an emulator release's) is kept in an
//! HdrHistogram and summarized here, so a p99 means the same thing everywhere: the upper bound of
//! the HdrHistogram bucket that holds the 99th percentile, at most one bucket width (0.1% with
//! three significant digits) above any value recorded in it.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Count, mean and percentiles of a latency histogram, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest value.
    pub max_ns: u64,
}

impl LatencySummary {
    /// Summarizes a histogram; an empty one gives all zeros.
    pub fn of(histogram: &Histogram<u64>) -> LatencySummary {
        LatencySummary {
            mean_ns: if histogram.is_empty() {
                0.0
            } else {
                histogram.mean()
            },
            ..LatencySummary::percentiles_of(histogram)
        }
    }

    /// The same without the mean (left at 0): the percentiles take one pass over the buckets,
    /// the mean another, several times slower, so a caller that does not use it skips it.
    pub fn percentiles_of(histogram: &Histogram<u64>) -> LatencySummary {
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        let mut quantiles = quantiles_ns(histogram, &[0.50, 0.90, 0.99, 0.999]).into_iter();
        let mut next = || quantiles.next().unwrap_or_default();
        LatencySummary {
            count: histogram.len(),
            mean_ns: 0.0,
            p50_ns: next(),
            p90_ns: next(),
            p99_ns: next(),
            p999_ns: next(),
            max_ns: histogram.max(),
        }
    }
}

/// The values at `quantiles` (each in [0, 1], in ascending order), in one pass over the buckets:
/// each the upper bound of the bucket that holds it, as [`LatencySummary`] reports them. Every
/// percentile rpcarena shows of a histogram comes from here (a sample's p99, a per-second
/// interval's, a percentile curve's points). An empty histogram gives zeros; a quantile below
/// its predecessor ends the list early (hdrhistogram's rule), so the result may be shorter.
pub fn quantiles_ns(histogram: &Histogram<u64>, quantiles: &[f64]) -> Vec<u64> {
    if histogram.is_empty() {
        return vec![0; quantiles.len()];
    }
    histogram
        .value_at_quantiles(quantiles.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_bucket_upper_bounds() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v * 1_000).unwrap();
        }
        let s = LatencySummary::of(&h);
        assert_eq!(s.count, 10_000);
        // p50 of 1..10000 us is 5000 us, reported as its bucket's upper bound (within 0.1%)
        assert!(s.p50_ns >= 5_000_000 && s.p50_ns <= 5_005_000, "{s:?}");
        assert!(s.p99_ns >= 9_900_000 && s.p99_ns <= 9_910_000, "{s:?}");
        assert!(s.max_ns >= 10_000_000 && s.max_ns <= 10_010_000, "{s:?}");
        assert!((s.mean_ns / 5_000_500.0 - 1.0).abs() < 1e-3, "{s:?}");
    }

    #[test]
    fn percentiles_alone_are_the_same_percentiles() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 1..=50_000u64 {
            h.record(v * 37 % 1_000_003 + 1).unwrap();
        }
        let full = LatencySummary::of(&h);
        let percentiles = LatencySummary::percentiles_of(&h);
        assert_eq!(
            LatencySummary {
                mean_ns: full.mean_ns,
                ..percentiles
            },
            full
        );
        assert_eq!(full.p99_ns, h.value_at_quantile(0.99));
        assert_eq!(full.p999_ns, h.value_at_quantile(0.999));
    }

    #[test]
    fn quantiles_in_one_pass_are_each_quantile_alone() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 1..=20_000u64 {
            h.record(v * v % 7_000_001 + 1).unwrap();
        }
        // The points of the report's percentile curve: p0 to p99.99 on a log scale.
        let qs: Vec<f64> = (0..=40)
            .map(|k| 1.0 - 10f64.powf(-f64::from(k) / 10.0))
            .collect();
        let alone: Vec<u64> = qs.iter().map(|&q| h.value_at_quantile(q)).collect();
        assert_eq!(quantiles_ns(&h, &qs), alone);
        assert_eq!(
            quantiles_ns(&Histogram::<u64>::new(2).unwrap(), &qs),
            vec![0; 41]
        );
    }

    #[test]
    fn an_empty_histogram_gives_zeros() {
        let h = Histogram::<u64>::new(2).unwrap();
        assert_eq!(LatencySummary::of(&h), LatencySummary::default());
    }
}
