//! The range rule of the reference reports: medians, and whether the min-max ranges overlap.
//!
//! Published benchmark reports such as the oRPC benchmarks report a median with its min-max
//! range and mark two libraries "within noise" when their ranges overlap. The rule needs no
//! minimum number of repetitions, which is why rpcarena's report uses it where the Mann-Whitney
//! test cannot decide (fewer than 4 repetitions per side at alpha 0.05). It is not a weaker test
//! in disguise but the same evidence read at a coarser level: ranges that do not overlap are
//! exactly the most extreme outcome of the Mann-Whitney test (every value of one side beyond
//! every value of the other), which values from one continuous distribution show by chance with
//! probability [`min_two_sided_p`]: 0.1 with 3 repetitions per side, 0.33 with 2, and 1 with one
//! (a single value per side is always "apart"). [`RangeRule::chance`] carries that figure so a
//! report can print it beside the verdict.

use serde::Serialize;

use crate::compare::{Change, MetricKind};
use crate::error::{StatsError, check_finite, check_len, sorted};
use crate::mann_whitney::min_two_sided_p;
use crate::summary::median_sorted;

/// What the range rule says about a candidate against a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum RangeVerdict {
    /// The ranges do not overlap (not even at an end): every candidate value lies beyond every
    /// baseline value, in the direction `change` names.
    Apart {
        /// Which way the candidate lies.
        change: Change,
    },
    /// The ranges overlap or touch: within noise, by this rule.
    Overlap,
}

/// Medians and min-max ranges of both sides, and the range rule's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RangeRule {
    /// Median of the baseline.
    pub baseline_median: f64,
    /// Median of the candidate.
    pub candidate_median: f64,
    /// (min, max) of the baseline.
    pub baseline_range: (f64, f64),
    /// (min, max) of the candidate.
    pub candidate_range: (f64, f64),
    /// Whether the ranges are apart, and which way.
    pub verdict: RangeVerdict,
    /// Probability that the ranges are apart (either way) when both sides are drawn from one
    /// continuous distribution: [`min_two_sided_p`] of the two counts.
    pub chance: f64,
}

/// The range rule applied to `candidate` against `baseline`, one value per repetition.
///
/// Errors: [`StatsError::TooFew`] if a side is empty; [`StatsError::NonFinite`] for NaN or
/// infinite values.
pub fn range_rule(
    baseline: &[f64],
    candidate: &[f64],
    kind: MetricKind,
) -> Result<RangeRule, StatsError> {
    check_len("baseline", baseline, 1)?;
    check_len("candidate", candidate, 1)?;
    check_finite("baseline", baseline)?;
    check_finite("candidate", candidate)?;
    let (b, c) = (sorted(baseline), sorted(candidate));
    let baseline_range = (b[0], b[b.len() - 1]);
    let candidate_range = (c[0], c[c.len() - 1]);
    let verdict = if candidate_range.0 > baseline_range.1 {
        RangeVerdict::Apart {
            change: Change::of(kind, true),
        }
    } else if candidate_range.1 < baseline_range.0 {
        RangeVerdict::Apart {
            change: Change::of(kind, false),
        }
    } else {
        RangeVerdict::Overlap
    };
    Ok(RangeRule {
        baseline_median: median_sorted(&b),
        candidate_median: median_sorted(&c),
        baseline_range,
        candidate_range,
        verdict,
        chance: min_two_sided_p(b.len(), c.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mann_whitney::mann_whitney;

    #[test]
    fn ranges_far_apart_name_the_direction_of_the_metric() {
        let r = range_rule(
            &[100.0, 104.0, 102.0],
            &[205.0, 200.0, 210.0],
            MetricKind::Rate,
        )
        .unwrap();
        assert_eq!(
            r.verdict,
            RangeVerdict::Apart {
                change: Change::Faster
            }
        );
        assert_eq!((r.baseline_median, r.candidate_median), (102.0, 205.0));
        assert_eq!(
            (r.baseline_range, r.candidate_range),
            ((100.0, 104.0), (200.0, 210.0))
        );
        assert!((r.chance - 0.1).abs() < 1e-12, "{r:?}");
        // A higher latency is slower.
        let r = range_rule(&[1.0, 2.0], &[3.0, 4.0], MetricKind::Duration).unwrap();
        assert_eq!(
            r.verdict,
            RangeVerdict::Apart {
                change: Change::Slower
            }
        );
        let r = range_rule(&[3.0, 4.0], &[1.0, 2.0], MetricKind::Other).unwrap();
        assert_eq!(
            r.verdict,
            RangeVerdict::Apart {
                change: Change::Lower
            }
        );
    }

    #[test]
    fn overlapping_or_touching_ranges_are_within_noise() {
        for candidate in [[103.0, 150.0, 160.0], [104.0, 150.0, 160.0]] {
            let r = range_rule(&[100.0, 102.0, 104.0], &candidate, MetricKind::Rate).unwrap();
            assert_eq!(r.verdict, RangeVerdict::Overlap, "{candidate:?}");
        }
    }

    #[test]
    fn apart_is_the_most_extreme_mann_whitney_outcome() {
        // Whenever the ranges are apart, the exact test gives exactly the chance the rule
        // reports; whenever they overlap, a larger p.
        let base = [10.0, 11.0, 12.0, 13.0, 14.0];
        for shift in [-6.0, -4.5, -0.5, 0.5, 2.5, 4.5, 6.0] {
            let cand: Vec<f64> = base.iter().map(|v| v + shift).collect();
            let r = range_rule(&base, &cand, MetricKind::Rate).unwrap();
            let p = mann_whitney(&cand, &base).unwrap().p;
            match r.verdict {
                RangeVerdict::Apart { .. } => assert!((p - r.chance).abs() < 1e-12, "{shift}"),
                RangeVerdict::Overlap => assert!(p > r.chance, "{shift}"),
            }
        }
    }

    #[test]
    fn empty_or_non_finite_sides_are_errors() {
        assert!(range_rule(&[], &[1.0], MetricKind::Rate).is_err());
        assert!(range_rule(&[1.0], &[f64::NAN], MetricKind::Rate).is_err());
    }
}
