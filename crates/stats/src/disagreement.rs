//! Why a comparison is within noise although the interval of its ratio excludes 1.
//!
//! The bootstrap interval of the ratio and the Mann-Whitney verdict answer different questions,
//! and with few repetitions they part ways: three values per side can put every resampled ratio
//! above 1 while the test cannot reach p < 0.05 whatever was measured. A report that printed
//! "within noise" beside an interval of 2.86-4.07 without saying so would contradict itself;
//! [`Comparison::disagreement`] names the reason, so the reader sees which rule said what.

use std::fmt;

use serde::Serialize;

use crate::compare::{Comparison, Verdict};
use crate::mann_whitney::min_two_sided_p;

/// Why a within-noise verdict stands beside a ratio interval that excludes 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Disagreement {
    /// The repetitions cannot reach p < alpha, whatever was measured.
    CannotReach {
        /// Lower end of the ratio interval.
        lo: f64,
        /// Upper end of the ratio interval.
        hi: f64,
        /// Repetitions of the baseline.
        n_baseline: usize,
        /// Repetitions of the candidate.
        n_candidate: usize,
        /// The smallest p these counts allow.
        min_p: f64,
        /// The significance level.
        alpha: f64,
    },
    /// The test could have reached alpha but did not.
    NotSignificant {
        /// Lower end of the ratio interval.
        lo: f64,
        /// Upper end of the ratio interval.
        hi: f64,
        /// The p-value found.
        p: f64,
        /// The significance level.
        alpha: f64,
    },
    /// p < alpha, but the ratio is within the noise threshold of 1.
    WithinThreshold {
        /// Lower end of the ratio interval.
        lo: f64,
        /// Upper end of the ratio interval.
        hi: f64,
        /// The ratio of medians.
        ratio: f64,
        /// The noise threshold.
        threshold: f64,
    },
}

impl Comparison {
    /// Why this comparison is within noise although its ratio interval excludes 1, judged with
    /// the `alpha` and `noise_threshold` it was made with; `None` when the two agree (the verdict
    /// is significant, or the interval holds 1).
    pub fn disagreement(&self, alpha: f64, noise_threshold: f64) -> Option<Disagreement> {
        let (lo, hi) = (self.ratio_interval.lo, self.ratio_interval.hi);
        if self.verdict != Verdict::WithinNoise || (lo <= 1.0 && hi >= 1.0) {
            return None;
        }
        let min_p = min_two_sided_p(self.n_baseline, self.n_candidate);
        Some(if min_p >= alpha {
            Disagreement::CannotReach {
                lo,
                hi,
                n_baseline: self.n_baseline,
                n_candidate: self.n_candidate,
                min_p,
                alpha,
            }
        } else if self.mann_whitney.p >= alpha {
            Disagreement::NotSignificant {
                lo,
                hi,
                p: self.mann_whitney.p,
                alpha,
            }
        } else {
            Disagreement::WithinThreshold {
                lo,
                hi,
                ratio: self.ratio,
                threshold: noise_threshold,
            }
        })
    }
}

impl Disagreement {
    /// The reason alone, without the interval: "Mann-Whitney with 3 and 3 repetitions cannot
    /// reach p < 0.05 (the smallest possible p is 0.100)".
    pub fn reason(&self) -> String {
        match *self {
            Disagreement::CannotReach {
                n_baseline,
                n_candidate,
                min_p,
                alpha,
                ..
            } => format!(
                "Mann-Whitney with {n_baseline} and {n_candidate} repetitions cannot reach p < {alpha} (the smallest possible p is {min_p:.3})"
            ),
            Disagreement::NotSignificant { p, alpha, .. } => {
                format!("Mann-Whitney gives p = {p:.3}, not below {alpha}")
            }
            Disagreement::WithinThreshold {
                ratio, threshold, ..
            } => format!(
                "the change ({:.1}%) is within the {}% noise threshold",
                (ratio - 1.0).abs() * 100.0,
                threshold * 100.0
            ),
        }
    }
}

/// "the interval of the ratio 2.86-4.07 excludes 1, but Mann-Whitney with 3 and 3 repetitions
/// cannot reach p < 0.05 (the smallest possible p is 0.100)".
impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Disagreement::CannotReach { lo, hi, .. }
        | Disagreement::NotSignificant { lo, hi, .. }
        | Disagreement::WithinThreshold { lo, hi, .. }) = *self;
        write!(
            f,
            "the interval of the ratio {lo:.2}-{hi:.2} excludes 1, but {}",
            self.reason()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare;
    use crate::compare::{CompareOptions, DEFAULT_ALPHA, DEFAULT_NOISE_THRESHOLD, MetricKind};

    fn disagreement(baseline: &[f64], candidate: &[f64]) -> Option<Disagreement> {
        compare(
            baseline,
            candidate,
            &CompareOptions::new(MetricKind::Rate, 5),
        )
        .unwrap()
        .disagreement(DEFAULT_ALPHA, DEFAULT_NOISE_THRESHOLD)
    }

    #[test]
    fn three_far_apart_repetitions_cannot_reach_the_level_and_say_so() {
        let d = disagreement(&[100.0, 101.0, 102.0], &[300.0, 310.0, 320.0]).unwrap();
        assert!(
            matches!(d, Disagreement::CannotReach { n_baseline: 3, n_candidate: 3, min_p, .. } if (min_p - 0.1).abs() < 1e-12),
            "{d:?}"
        );
        assert_eq!(
            d.to_string(),
            "the interval of the ratio 2.94-3.20 excludes 1, but Mann-Whitney with 3 and 3 repetitions cannot reach p < 0.05 (the smallest possible p is 0.100)"
        );
    }

    #[test]
    fn a_reachable_level_that_is_missed_names_its_p() {
        // Fifteen per side: the middle of the candidate lies above the middle of the baseline,
        // so nearly every resampled median does too, but each side has three values beyond the
        // other's, and the ranks (U = 144 of 225) are far from extreme.
        let mut baseline: Vec<f64> = (0..12).map(|i| 90.0 + 0.5 * f64::from(i)).collect();
        baseline.extend([200.0, 201.0, 202.0]);
        let mut candidate: Vec<f64> = (0..12).map(|i| 96.0 + 0.1 * f64::from(i)).collect();
        candidate.extend([10.0, 11.0, 12.0]);
        let d = disagreement(&baseline, &candidate).unwrap();
        let Disagreement::NotSignificant { lo, p, .. } = d else {
            panic!("{d:?}")
        };
        assert!(lo > 1.0 && p > 0.05, "{d:?}");
        assert_eq!(
            d.reason(),
            format!("Mann-Whitney gives p = {p:.3}, not below 0.05")
        );
    }

    #[test]
    fn a_significant_p_within_the_threshold_names_the_threshold() {
        let base = [100.0, 100.1, 100.2, 100.3, 100.4, 100.5];
        // Every candidate value above every baseline value (p = 2/924), by 0.6%.
        let shifted: Vec<f64> = base.iter().map(|v| v + 0.6).collect();
        let d = disagreement(&base, &shifted).unwrap();
        assert_eq!(
            d.reason(),
            "the change (0.6%) is within the 1% noise threshold",
            "{d:?}"
        );
    }

    #[test]
    fn agreement_gives_none() {
        // Significant: five per side, far apart.
        assert_eq!(
            disagreement(
                &[100.0, 101.0, 102.0, 103.0, 104.0],
                &[200.0, 201.0, 202.0, 203.0, 204.0]
            ),
            None
        );
        // Within noise with an interval that holds 1.
        assert_eq!(
            disagreement(&[100.0, 110.0, 90.0], &[105.0, 95.0, 100.0]),
            None
        );
    }
}
