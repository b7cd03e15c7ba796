//! Descriptive statistics of one configuration's repetitions: [`Summary`], [`median`] and
//! [`percentile`].

use serde::Serialize;

use crate::error::{StatsError, check_finite, check_len, sorted};

/// Descriptive statistics of a small set of repetitions (typically one value per round).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Middle value; for an even count, the mean of the two middle values.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (denominator n − 1); `None` when n = 1.
    pub sd: Option<f64>,
    /// `(max − min) / |median|`, the spread measure of the reference report; `None` when the
    /// median is 0.
    pub spread: Option<f64>,
    /// Tukey outlier counts. Outliers are reported, never removed: on a shared machine they are
    /// part of what was measured.
    pub outliers: Outliers,
}

/// Counts of Tukey outliers, classified as criterion does.
///
/// With quartiles Q1 and Q3 (linear interpolation between order statistics, the default of R and
/// NumPy) and IQR = Q3 − Q1, a value below Q1 − 3·IQR is a low severe outlier, else below
/// Q1 − 1.5·IQR a low mild one; symmetrically above Q3. With fewer than 4 values no value can be
/// an outlier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Outliers {
    /// Values below Q1 − 3·IQR.
    pub low_severe: usize,
    /// Values in [Q1 − 3·IQR, Q1 − 1.5·IQR).
    pub low_mild: usize,
    /// Values in (Q3 + 1.5·IQR, Q3 + 3·IQR].
    pub high_mild: usize,
    /// Values above Q3 + 3·IQR.
    pub high_severe: usize,
}

impl Outliers {
    /// All outliers, mild and severe, on both sides.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }

    fn classify(sorted: &[f64]) -> Outliers {
        let q1 = quantile_linear(sorted, 0.25);
        let q3 = quantile_linear(sorted, 0.75);
        let iqr = q3 - q1;
        let mut o = Outliers::default();
        for &x in sorted {
            if x < q1 - 3.0 * iqr {
                o.low_severe += 1;
            } else if x < q1 - 1.5 * iqr {
                o.low_mild += 1;
            } else if x > q3 + 3.0 * iqr {
                o.high_severe += 1;
            } else if x > q3 + 1.5 * iqr {
                o.high_mild += 1;
            }
        }
        o
    }
}

impl Summary {
    /// Summarizes `values`, in any order.
    ///
    /// Returns [`StatsError::TooFew`] for an empty slice and [`StatsError::NonFinite`] if a value
    /// is NaN or infinite. One value is enough: then min = max = median = mean, `sd` is `None`
    /// and `spread` is 0 (or `None` if the value is 0).
    pub fn of(values: &[f64]) -> Result<Summary, StatsError> {
        check_len("summary", values, 1)?;
        check_finite("summary", values)?;
        let s = sorted(values);
        let n = s.len();
        let median = median_sorted(&s);
        let (min, max) = (s[0], s[n - 1]);
        let mean = s.iter().sum::<f64>() / n as f64;
        // Two passes (mean first) avoid the cancellation of the sum-of-squares formula when the
        // values are large and close together, which is the normal case for throughputs.
        let sd = (n > 1).then(|| {
            let ss: f64 = s.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let spread = (median != 0.0).then(|| (max - min) / median.abs());
        Ok(Summary {
            n,
            median,
            min,
            max,
            mean,
            sd,
            spread,
            outliers: Outliers::classify(&s),
        })
    }
}

/// Median of `values`, in any order; for an even count the mean of the two middle values.
///
/// Returns [`StatsError::TooFew`] for an empty slice and [`StatsError::NonFinite`] for NaN or
/// infinite values.
pub fn median(values: &[f64]) -> Result<f64, StatsError> {
    check_len("median", values, 1)?;
    check_finite("median", values)?;
    Ok(median_sorted(&sorted(values)))
}

/// Nearest-rank percentile: the smallest value such that at least `p` percent of the values are
/// less than or equal to it, i.e. the value of rank ⌈p/100 · n⌉ (1-based) in sorted order, with
/// rank 1 for `p = 0`.
///
/// It always returns one of the values (no interpolation), which is what a small vector of
/// repetitions can honestly say. For `p = 50` and an even count it returns the lower middle value,
/// unlike [`median`]. A rank within 10⁻⁹ of an integer is taken as that integer, so that
/// percentiles such as 2.5 computed in floating point hit the rank they denote.
///
/// Returns [`StatsError::TooFew`] for an empty slice, [`StatsError::NonFinite`] for NaN or
/// infinite values and [`StatsError::OutOfRange`] unless `0 <= p <= 100`.
pub fn percentile(values: &[f64], p: f64) -> Result<f64, StatsError> {
    check_len("percentile", values, 1)?;
    check_finite("percentile", values)?;
    if !(0.0..=100.0).contains(&p) {
        return Err(StatsError::OutOfRange {
            name: "percentile",
            value: p,
            range: "[0, 100]",
        });
    }
    Ok(percentile_sorted(&sorted(values), p))
}

pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let x = p / 100.0 * n as f64;
    let rank = if (x - x.round()).abs() < 1e-9 {
        x.round()
    } else {
        x.ceil()
    };
    let rank = (rank as usize).clamp(1, n);
    sorted[rank - 1]
}

pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Quantile by linear interpolation between order statistics (Hyndman & Fan type 7).
fn quantile_linear(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    match sorted.get(lo + 1) {
        Some(next) => sorted[lo] + (h - lo as f64) * (next - sorted[lo]),
        None => sorted[lo],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!((s.min, s.median, s.max, s.mean), (1.0, 3.0, 5.0, 3.0));
        // Sample variance of 1..=5 is 2.5.
        assert!((s.sd.unwrap() - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((s.spread.unwrap() - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.outliers.total(), 0);
    }

    #[test]
    fn even_count_median_is_mean_of_middle_pair() {
        assert_eq!(median(&[10.0, 1.0, 3.0, 2.0]).unwrap(), 2.5);
        assert_eq!(Summary::of(&[2.0, 1.0]).unwrap().median, 1.5);
    }

    #[test]
    fn empty_and_single_value() {
        assert_eq!(
            Summary::of(&[]),
            Err(StatsError::TooFew {
                what: "summary",
                needed: 1,
                got: 0
            })
        );
        assert!(median(&[]).is_err());
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!(
            (s.n, s.median, s.min, s.max, s.mean),
            (1, 7.0, 7.0, 7.0, 7.0)
        );
        assert_eq!(s.sd, None);
        assert_eq!(s.spread, Some(0.0));
    }

    #[test]
    fn all_equal_values() {
        let s = Summary::of(&[3.0; 8]).unwrap();
        assert_eq!(s.sd, Some(0.0));
        assert_eq!(s.spread, Some(0.0));
        assert_eq!(s.outliers, Outliers::default());
    }

    #[test]
    fn zero_median_has_no_spread() {
        let s = Summary::of(&[-1.0, 0.0, 1.0]).unwrap();
        assert_eq!(s.spread, None);
    }

    #[test]
    fn rejects_non_finite() {
        assert!(matches!(
            Summary::of(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
        assert!(matches!(
            median(&[f64::INFINITY]),
            Err(StatsError::NonFinite { index: 0, .. })
        ));
    }

    #[test]
    fn tukey_classification() {
        // Q1 = 1.25 and Q3 = 5.75 (type 7), IQR = 4.5: low fences -5.5 (mild), -12.25 (severe).
        let values = [-20.0, -6.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let s = sorted(&values);
        assert_eq!(quantile_linear(&s, 0.25), 1.25);
        assert_eq!(quantile_linear(&s, 0.75), 5.75);
        let o = Summary::of(&values).unwrap().outliers;
        assert_eq!(
            o,
            Outliers {
                low_severe: 1,
                low_mild: 1,
                high_mild: 0,
                high_severe: 0
            }
        );

        // Q1 = 3.25 and Q3 = 7.75, IQR = 4.5: high fences 14.5 (mild), 21.25 (severe).
        let o = Summary::of(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 14.0, 30.0])
            .unwrap()
            .outliers;
        assert_eq!((o.high_mild, o.high_severe, o.total()), (0, 1, 1));
        let o = Summary::of(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 15.0, 30.0])
            .unwrap()
            .outliers;
        assert_eq!((o.high_mild, o.high_severe, o.total()), (1, 1, 2));
    }

    #[test]
    fn fewer_than_four_values_have_no_outliers() {
        assert_eq!(Summary::of(&[1.0, 2.0, 1e9]).unwrap().outliers.total(), 0);
    }

    #[test]
    fn serializes_missing_values_as_null() {
        let json = serde_json::to_value(Summary::of(&[0.0]).unwrap()).unwrap();
        assert_eq!(json["n"], 1);
        assert!(json["sd"].is_null() && json["spread"].is_null());
        assert_eq!(json["outliers"]["high_severe"], 0);
    }

    #[test]
    fn nearest_rank_percentile() {
        let v = [15.0, 20.0, 35.0, 40.0, 50.0];
        // The textbook example of the nearest-rank method.
        assert_eq!(percentile(&v, 5.0).unwrap(), 15.0);
        assert_eq!(percentile(&v, 30.0).unwrap(), 20.0);
        assert_eq!(percentile(&v, 40.0).unwrap(), 20.0);
        assert_eq!(percentile(&v, 50.0).unwrap(), 35.0);
        assert_eq!(percentile(&v, 100.0).unwrap(), 50.0);
        assert_eq!(percentile(&v, 0.0).unwrap(), 15.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0).unwrap(), 2.0);
        assert_eq!(percentile(&[9.0], 99.0).unwrap(), 9.0);
        // 2.5 % of 10,000 is rank 250 exactly even though (1 - 0.95) / 2 * 100 is not 2.5.
        let many: Vec<f64> = (1..=10_000).map(f64::from).collect();
        assert_eq!(
            percentile(&many, (1.0 - 0.95) / 2.0 * 100.0).unwrap(),
            250.0
        );
        assert!(percentile(&v, 101.0).is_err());
        assert!(percentile(&v, -1.0).is_err());
        assert!(percentile(&[], 50.0).is_err());
    }
}
