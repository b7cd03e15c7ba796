//! Statistics for rpcarena's benchmark results: what one configuration's repetitions say, and
//! whether two configurations really differ.
//!
//! A campaign repeats every configuration once per round. For each configuration this crate
//! gives a [`Summary`] (median, min–max, spread, Tukey outliers), a distribution-free
//! [`median_interval`] when there are enough repetitions, and [`percentile`] for small vectors.
//! Against a baseline measured in the same rounds, [`compare()`] gives the ratio of medians with a
//! seeded bootstrap interval, a two-sided [`mann_whitney()`] test and a [`Verdict`]: a change is
//! significant only when p < alpha *and* it exceeds a noise threshold, as benchstat and criterion
//! decide; [`Comparison::disagreement`] says why a within-noise verdict stands beside a ratio
//! interval that excludes 1. Where the test cannot decide (too few repetitions), [`range_rule`]
//! applies the published reports' rule: medians, and whether the min-max ranges overlap.
//! [`drift()`] checks one window for a change of speed between its halves, and
//! [`LatencySummary`] and [`quantiles_ns`] give the percentiles of a latency histogram.
//!
//! The crate is pure: no I/O, no clock, and the one randomized method takes its seed from the
//! caller, so every number can be recomputed from the artifacts. Results derive
//! `serde::Serialize` for JSON and CSV exports. Inputs that are too small are not errors where a
//! statistic can say something honest about them: the interval reports why it is missing, and a
//! comparison carries [`Warning`]s. NaN or infinite values are always errors ([`StatsError`]).
//!
//! # Example
//!
//! ```
//! use rpcarena_stats::{CompareOptions, MetricKind, Summary, Verdict, compare, median_interval};
//!
//! // Throughput (operations per second) of two stacks, one value per round.
//! let grpc = [41_200.0, 40_800.0, 41_900.0, 40_500.0, 41_000.0, 41_300.0];
//! let quic = [45_100.0, 44_700.0, 45_900.0, 44_200.0, 45_400.0, 45_000.0];
//!
//! let summary = Summary::of(&grpc)?;
//! assert_eq!(summary.median, 41_100.0);
//! let interval = median_interval(&grpc, 0.95)?;
//! assert_eq!(interval.bounds(), Some((40_500.0, 41_900.0)));
//!
//! let c = compare(&grpc, &quic, &CompareOptions::new(MetricKind::Rate, 2024))?;
//! assert!(c.ratio > 1.09 && c.ratio < 1.10);
//! assert!(c.mann_whitney.p < 0.01);
//! assert_eq!(c.verdict.to_string(), "faster");
//! assert!(c.warnings.is_empty());
//!
//! // Three rounds can never show a difference at alpha = 0.05: the smallest p is 0.1.
//! let c = compare(&grpc[..3], &quic[..3], &CompareOptions::new(MetricKind::Rate, 2024))?;
//! assert_eq!(c.verdict, Verdict::WithinNoise);
//! assert!(!c.warnings.is_empty());
//! # Ok::<(), rpcarena_stats::StatsError>(())
//! ```

pub mod compare;
pub mod disagreement;
pub mod drift;
mod error;
pub mod interval;
pub mod latency;
pub mod mann_whitney;
pub mod ranges;
pub mod summary;

pub use compare::{
    Change, CompareOptions, Comparison, MetricKind, RatioInterval, Side, Verdict, Warning, compare,
    paired_ratio_median,
};
pub use disagreement::Disagreement;
pub use drift::{DEFAULT_DRIFT_THRESHOLD, Drift, drift};
pub use error::StatsError;
pub use interval::{DEFAULT_CONFIDENCE, MedianInterval, median_interval};
pub use latency::{LatencySummary, quantiles_ns};
pub use mann_whitney::{MannWhitney, PValueMethod, mann_whitney, min_two_sided_p};
pub use ranges::{RangeRule, RangeVerdict, range_rule};
pub use summary::{Outliers, Summary, median, percentile};
