//! Statistics for rpcarena's benchmark samples. Pure: no I/O, no clock; randomized methods take a
//! seed from the caller.

mod error;
pub mod interval;
pub mod summary;

pub use error::StatsError;
pub use interval::{DEFAULT_CONFIDENCE, MedianInterval, median_interval};
pub use summary::{Outliers, Summary, median, percentile};
