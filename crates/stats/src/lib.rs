//! Statistics for rpcarena's benchmark samples. Pure: no I/O, no clock; randomized methods take a
//! seed from the caller.

pub mod compare;
pub mod drift;
mod error;
pub mod interval;
pub mod mann_whitney;
pub mod summary;

pub use compare::{
    Change, CompareOptions, Comparison, MetricKind, RatioInterval, Side, Verdict, Warning, compare,
    paired_ratio_median,
};
pub use drift::{DEFAULT_DRIFT_THRESHOLD, Drift, drift};
pub use error::StatsError;
pub use interval::{DEFAULT_CONFIDENCE, MedianInterval, median_interval};
pub use mann_whitney::{MannWhitney, PValueMethod, mann_whitney, min_two_sided_p};
pub use summary::{Outliers, Summary, median, percentile};
