//! A distribution-free confidence interval for the median, from order statistics.
//!
//! Whatever the distribution (as long as it is continuous), each value falls below the true median
//! with probability ½, so the number of values below it is Binomial(n, ½). The interval between the
//! l-th smallest and the l-th largest value therefore covers the median with probability
//! 1 − 2·P(X ≤ l − 1). This is the interval benchstat reports; it needs no assumption of
//! normality, which benchmark repetitions on shared machines rarely satisfy. Its price is that
//! small n gives no interval at all: even [min, max] covers the median only with probability
//! 1 − 2/2ⁿ, which reaches 95% at n = 6.

use serde::Serialize;

use crate::error::{StatsError, check_finite, check_unit_open, sorted};

/// The confidence level used when the caller has no reason to choose another.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// A confidence interval of the median, or the reason there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MedianInterval {
    /// The interval [`lo`, `hi`] between two order statistics.
    Available {
        /// The `lo_rank`-th smallest value.
        lo: f64,
        /// The `hi_rank`-th smallest value.
        hi: f64,
        /// 1-based rank of `lo` in sorted order.
        lo_rank: usize,
        /// 1-based rank of `hi` in sorted order; always `n + 1 - lo_rank`.
        hi_rank: usize,
        /// The confidence actually achieved, at least the one requested. Order statistics move in
        /// discrete steps, so it is usually higher (0.96875 for n = 6 at 95%).
        confidence: f64,
    },
    /// Too few values: even [min, max] would cover the median with less than the requested
    /// confidence.
    TooFew {
        /// Number of values given.
        n: usize,
        /// The smallest n that gives an interval at the requested confidence.
        needed: usize,
        /// The confidence requested.
        requested: f64,
    },
}

impl MedianInterval {
    /// `(lo, hi)` when an interval is available.
    pub fn bounds(&self) -> Option<(f64, f64)> {
        match *self {
            MedianInterval::Available { lo, hi, .. } => Some((lo, hi)),
            MedianInterval::TooFew { .. } => None,
        }
    }

    /// Why there is no interval, in a sentence for a report; `None` when there is one.
    pub fn reason(&self) -> Option<String> {
        match *self {
            MedianInterval::Available { .. } => None,
            MedianInterval::TooFew {
                n,
                needed,
                requested,
            } => Some(format!(
                "no {}% interval of the median from {n} value(s): the widest one, [min, max], \
                 covers the median with probability {:.1}%; {needed} values are needed",
                requested * 100.0,
                coverage_of_extremes(n) * 100.0,
            )),
        }
    }
}

/// Confidence interval of the median of `values` (in any order) at `confidence`, e.g.
/// [`DEFAULT_CONFIDENCE`].
///
/// Chooses the narrowest symmetric pair of order statistics whose coverage is at least
/// `confidence`. Returns [`MedianInterval::TooFew`] when there are too few values, including
/// none (n < 6 at 95%, n < 8 at 99%). Ties are allowed; the coverage is then conservative.
///
/// Errors: [`StatsError::OutOfRange`] unless `0 < confidence < 1`; [`StatsError::NonFinite`] for
/// NaN or infinite values.
pub fn median_interval(values: &[f64], confidence: f64) -> Result<MedianInterval, StatsError> {
    check_unit_open("confidence", confidence)?;
    check_finite("median interval", values)?;
    let n = values.len();
    let Some((lo_rank, achieved)) = lower_rank(n, confidence) else {
        return Ok(MedianInterval::TooFew {
            n,
            needed: needed_for(confidence),
            requested: confidence,
        });
    };
    let s = sorted(values);
    let hi_rank = n + 1 - lo_rank;
    Ok(MedianInterval::Available {
        lo: s[lo_rank - 1],
        hi: s[hi_rank - 1],
        lo_rank,
        hi_rank,
        confidence: achieved,
    })
}

/// The smallest number of values that gives an interval of the median at `confidence`: the
/// smallest n with 1 − 2/2ⁿ ≥ `confidence` (6 at 95%).
pub fn needed_for(confidence: f64) -> usize {
    // Bounded: 2^-n underflows to 0 near n = 1075, where every confidence below 1 is met.
    (1..=1100)
        .find(|&n| coverage_of_extremes(n) >= confidence - TOLERANCE)
        .unwrap_or(1100)
}

/// Lets a requested confidence equal to an achievable one (0.96875 at n = 6) select it despite
/// rounding in the binomial sums.
const TOLERANCE: f64 = 1e-12;

fn coverage_of_extremes(n: usize) -> f64 {
    1.0 - 2.0 * 0.5f64.powi(n as i32)
}

/// The largest lower rank l whose interval [x(l), x(n+1−l)] has coverage ≥ `confidence`, with
/// that coverage; `None` if even l = 1 falls short.
fn lower_rank(n: usize, confidence: f64) -> Option<(usize, f64)> {
    // Binomial(n, ½) probabilities in log space: 2^-n underflows for n > 1074.
    let mut ln_pmf = -(n as f64) * std::f64::consts::LN_2;
    let mut tail = 0.0; // P(X ≤ k)
    let mut best = None;
    for k in 0..n {
        tail += ln_pmf.exp();
        let l = k + 1;
        let coverage = 1.0 - 2.0 * tail;
        if coverage < confidence - TOLERANCE || 2 * l > n {
            break;
        }
        best = Some((l, coverage));
        ln_pmf += ((n - k) as f64).ln() - ((k + 1) as f64).ln();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(n: usize, confidence: f64) -> Option<(usize, usize, f64)> {
        let values: Vec<f64> = (1..=n).map(|i| i as f64).collect();
        match median_interval(&values, confidence).unwrap() {
            MedianInterval::Available {
                lo,
                hi,
                lo_rank,
                hi_rank,
                confidence,
            } => {
                assert_eq!((lo, hi), (lo_rank as f64, hi_rank as f64));
                Some((lo_rank, hi_rank, confidence))
            }
            MedianInterval::TooFew { .. } => None,
        }
    }

    #[test]
    fn known_ranks_and_coverage() {
        // Exact values from sums of C(n, k) / 2^n (tests/reference.py); n = 20 and n = 100 match
        // published tables of median confidence intervals.
        let cases = [
            (6, 0.95, (1, 6, 0.96875)),
            (10, 0.95, (2, 9, 0.978515625)),
            (20, 0.95, (6, 15, 0.9586105346679688)),
            (100, 0.95, (40, 61, 0.9647997997822951)),
            (8, 0.99, (1, 8, 0.9921875)),
            (5, 0.90, (1, 5, 0.9375)),
        ];
        for (n, c, (l, h, achieved)) in cases {
            let (lo, hi, got) = ranks(n, c).unwrap();
            assert_eq!((lo, hi), (l, h), "n = {n}, confidence = {c}");
            assert!(
                (got - achieved).abs() < 1e-12,
                "n = {n}: {got} vs {achieved}"
            );
        }
    }

    #[test]
    fn too_few_values() {
        assert_eq!(ranks(5, 0.95), None);
        assert_eq!(ranks(7, 0.99), None);
        assert_eq!(ranks(4, 0.90), None);
        let iv = median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], DEFAULT_CONFIDENCE).unwrap();
        assert_eq!(
            iv,
            MedianInterval::TooFew {
                n: 5,
                needed: 6,
                requested: 0.95
            }
        );
        assert_eq!(iv.bounds(), None);
        let reason = iv.reason().unwrap();
        assert!(
            reason.contains("93.8%") && reason.contains("6 values"),
            "{reason}"
        );
        for n in [0, 1] {
            let values = vec![1.0; n];
            assert!(matches!(
                median_interval(&values, 0.95).unwrap(),
                MedianInterval::TooFew { needed: 6, .. }
            ));
        }
    }

    #[test]
    fn needed_counts() {
        assert_eq!(needed_for(0.95), 6);
        assert_eq!(needed_for(0.99), 8);
        assert_eq!(needed_for(0.90), 5);
        // Exactly achievable confidence is accepted despite rounding.
        assert_eq!(needed_for(0.96875), 6);
        assert_eq!(ranks(6, 0.96875).map(|r| r.0), Some(1));
    }

    #[test]
    fn unsorted_input_and_ties() {
        let iv = median_interval(&[9.0, 1.0, 5.0, 5.0, 5.0, 3.0, 7.0], 0.95).unwrap();
        assert_eq!(iv.bounds(), Some((1.0, 9.0)));
        let iv = median_interval(&[4.0; 10], 0.95).unwrap();
        assert_eq!(iv.bounds(), Some((4.0, 4.0)));
    }

    #[test]
    fn large_n_does_not_underflow() {
        let (lo, hi, c) = ranks(5000, 0.95).unwrap();
        // Exact from tests/reference.py; the normal approximation says 2500 − 1.96·√5000/2 ≈ 2431.
        assert_eq!(lo, 2431);
        assert_eq!(hi, 5001 - lo);
        assert!((0.95..0.96).contains(&c), "{c}");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(
            median_interval(&[1.0; 6], 1.0),
            Err(StatsError::OutOfRange { .. })
        ));
        assert!(median_interval(&[1.0; 6], 0.0).is_err());
        assert!(median_interval(&[1.0, f64::NAN], 0.95).is_err());
    }

    #[test]
    fn serializes_with_status_tag() {
        let iv = median_interval(&[1.0, 2.0], 0.95).unwrap();
        assert_eq!(
            serde_json::to_string(&iv).unwrap(),
            r#"{"status":"too_few","n":2,"needed":6,"requested":0.95}"#
        );
    }
}
