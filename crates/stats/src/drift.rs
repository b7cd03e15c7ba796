//! Drift within one measurement window: did the system change its speed while being measured?
//!
//! A window whose second half runs markedly faster than its first was not measured at steady
//! state (caches, JIT, CPU frequency, a background job ending), and its single number hides that.
//! The reference benchmark warns above 3%.

use serde::Serialize;

use crate::error::{StatsError, check_finite, check_len};

/// Relative change between the halves above which a window is flagged.
pub const DEFAULT_DRIFT_THRESHOLD: f64 = 0.03;

/// Comparison of the first and second half of a window's interval values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Drift {
    /// Intervals in each half; an odd middle interval belongs to neither.
    pub half_len: usize,
    /// Mean of the first half.
    pub first_half_mean: f64,
    /// Mean of the second half.
    pub second_half_mean: f64,
    /// `second_half_mean / first_half_mean − 1`: positive when the second half is higher.
    pub change: f64,
    /// The threshold `flagged` was judged against.
    pub threshold: f64,
    /// `|change| > threshold`, in either direction: a window that slows down is as unsteady as
    /// one that speeds up.
    pub flagged: bool,
}

/// Relative change between the mean of the first and the second half of `intervals`, the values
/// of consecutive equal intervals in time order (e.g. operations completed in each second).
///
/// With an odd count the middle interval is left out so that both halves cover equal time. Pass
/// only complete intervals: a partial last second would read as a slowdown.
///
/// Errors: [`StatsError::TooFew`] for fewer than 2 intervals; [`StatsError::NonFinite`] for NaN
/// or infinite values; [`StatsError::NonPositiveMean`] if the first half's mean is 0 or negative
/// (a window that completed nothing in its first half has no meaningful relative change);
/// [`StatsError::OutOfRange`] unless `threshold` is finite and ≥ 0.
pub fn drift(intervals: &[f64], threshold: f64) -> Result<Drift, StatsError> {
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(StatsError::OutOfRange {
            name: "drift threshold",
            value: threshold,
            range: "[0, ∞)",
        });
    }
    check_len("drift intervals", intervals, 2)?;
    check_finite("drift intervals", intervals)?;
    let half_len = intervals.len() / 2;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let first_half_mean = mean(&intervals[..half_len]);
    let second_half_mean = mean(&intervals[intervals.len() - half_len..]);
    if first_half_mean <= 0.0 {
        return Err(StatsError::NonPositiveMean {
            what: "first-half mean of the drift intervals",
            value: first_half_mean,
        });
    }
    let change = second_half_mean / first_half_mean - 1.0;
    Ok(Drift {
        half_len,
        first_half_mean,
        second_half_mean,
        change,
        threshold,
        flagged: change.abs() > threshold,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_window_is_not_flagged() {
        let d = drift(&[1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0], 0.03).unwrap();
        assert_eq!(d.half_len, 3);
        assert_eq!((d.first_half_mean, d.second_half_mean), (1000.0, 1000.0));
        assert_eq!(d.change, 0.0);
        assert!(!d.flagged);
    }

    #[test]
    fn speed_up_and_slow_down_are_flagged() {
        let d = drift(&[100.0, 100.0, 104.0, 104.0], DEFAULT_DRIFT_THRESHOLD).unwrap();
        assert!((d.change - 0.04).abs() < 1e-12);
        assert!(d.flagged);
        let d = drift(&[100.0, 100.0, 96.0, 96.0], DEFAULT_DRIFT_THRESHOLD).unwrap();
        assert!((d.change + 0.04).abs() < 1e-12);
        assert!(d.flagged);
        // 2% is within the default threshold.
        let d = drift(&[100.0, 100.0, 102.0, 102.0], DEFAULT_DRIFT_THRESHOLD).unwrap();
        assert!(!d.flagged);
    }

    #[test]
    fn odd_count_leaves_out_the_middle() {
        let d = drift(&[10.0, 20.0, 1e9, 20.0, 10.0], 0.03).unwrap();
        assert_eq!(d.half_len, 2);
        assert_eq!((d.first_half_mean, d.second_half_mean), (15.0, 15.0));
        assert!(!d.flagged);
    }

    #[test]
    fn too_few_and_degenerate_input() {
        assert_eq!(
            drift(&[5.0], 0.03),
            Err(StatsError::TooFew {
                what: "drift intervals",
                needed: 2,
                got: 1
            })
        );
        assert!(drift(&[], 0.03).is_err());
        assert!(matches!(
            drift(&[0.0, 0.0, 5.0, 5.0], 0.03),
            Err(StatsError::NonPositiveMean { value: 0.0, .. })
        ));
        assert!(drift(&[1.0, f64::NAN], 0.03).is_err());
        assert!(drift(&[1.0, 1.0], -0.01).is_err());
        assert!(drift(&[1.0, 1.0], f64::NAN).is_err());
        let d = drift(&[7.0, 7.0], 0.0).unwrap();
        assert_eq!((d.change, d.flagged), (0.0, false));
    }
}
