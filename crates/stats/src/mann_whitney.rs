//! The two-sided Mann-Whitney U test (Wilcoxon rank-sum test).
//!
//! It asks whether one set of repetitions tends to be larger than the other without assuming any
//! distribution, which is why benchstat uses it for benchmark results. Its resolution is limited by
//! the number of ways to split the values between the two sides: with 3 repetitions per side
//! there are C(6, 3) = 20 splits, the most extreme two of them give p = 2/20 = 0.1, and so three
//! repetitions can never show a difference at alpha = 0.05 (see [`min_two_sided_p`]).

use serde::Serialize;

use crate::error::{StatsError, check_finite, check_len};

/// Exact p-values are computed when there are no ties and at most this many values in all.
/// C(100, 50) ≈ 1.0·10²⁹ split counts still fit an `i128`, and at this size the normal
/// approximation already agrees with the exact p to about 10⁻³. (scipy switches earlier, above 8
/// values per side; here the exact count is cheap, so it is used as long as it fits.)
pub const EXACT_MAX_TOTAL: usize = 100;

/// How a p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PValueMethod {
    /// From the exact distribution of U under the null hypothesis (no ties, small samples).
    Exact,
    /// From the normal approximation with tie correction and continuity correction.
    Normal,
}

/// Result of a two-sided Mann-Whitney U test of `x` against `y`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (xᵢ, yⱼ) with xᵢ > yⱼ, ties counting ½. It
    /// ranges from 0 to n_x·n_y; `u / (n_x·n_y)` estimates P(X > Y).
    pub u: f64,
    /// Two-sided p-value, in (0, 1].
    pub p: f64,
    /// Whether `p` is exact or approximate.
    pub method: PValueMethod,
}

/// Two-sided Mann-Whitney U test of `x` against `y`.
///
/// The p-value is exact (from the distribution of U over all C(n_x + n_y, n_x) splits) when
/// there are no ties and n_x + n_y ≤ [`EXACT_MAX_TOTAL`]; otherwise it comes from the normal
/// approximation with tie correction and continuity correction, as in scipy's `mannwhitneyu`.
/// When every value is equal there is no evidence either way and p = 1. One value per side is
/// accepted and gives p = 1.
///
/// Errors: [`StatsError::TooFew`] if either side is empty; [`StatsError::NonFinite`] for NaN or
/// infinite values.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Result<MannWhitney, StatsError> {
    check_len("Mann-Whitney first sample", x, 1)?;
    check_len("Mann-Whitney second sample", y, 1)?;
    check_finite("Mann-Whitney first sample", x)?;
    check_finite("Mann-Whitney second sample", y)?;

    let ranked = midranks(x, y);
    let (n1, n2) = (x.len(), y.len());
    let u = ranked.rank_sum_x - (n1 * (n1 + 1)) as f64 / 2.0;

    if ranked.tie_term == 0.0 && n1 + n2 <= EXACT_MAX_TOTAL {
        // Without ties U is an integer; rounding only removes floating error from the rank sum.
        let p = exact_two_sided_p(n1, n2, u.round() as usize);
        return Ok(MannWhitney {
            u,
            p,
            method: PValueMethod::Exact,
        });
    }

    // With few values the approximation can fall below what any split of them allows (three
    // tied values a side gave 0.047 where the permutation test cannot go below 0.1): the
    // exact test's floor holds with ties too, since the observed split and its mirror are
    // among the C(n1 + n2, n1) equally likely ones.
    let p = normal_two_sided_p(u, n1, n2, ranked.tie_term).max(min_two_sided_p(n1, n2));
    Ok(MannWhitney {
        u,
        p,
        method: PValueMethod::Normal,
    })
}

/// The smallest two-sided p-value an exact Mann-Whitney test can reach with `n1` and `n2` values,
/// reached when every value of one side lies beyond every value of the other:
/// min(1, 2 / C(n1 + n2, n1)). If it is not below alpha, no outcome can be significant: it is
/// 0.1 for 3 + 3 values, 0.057 for 3 + 4 and 0.029 for 4 + 4. Returns 1 when either side is
/// empty.
pub fn min_two_sided_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // C(n, k) as a running product in f64: exact while it stays below 2^53 and close after.
    let k = n1.min(n2);
    let n = n1 + n2;
    let splits = (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    (2.0 / splits).min(1.0)
}

/// Two-sided p-value of U = `u` from the normal approximation, with the tie correction of the
/// variance and a continuity correction of ½.
fn normal_two_sided_p(u: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        // Every value tied (or one value in all): the ranks carry no information.
        return 1.0;
    }
    // The continuity correction moves |U − mean| half a step towards the mean; clamping at 0
    // keeps U = mean at p = 1 instead of above it.
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    libm::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

struct Ranked {
    rank_sum_x: f64,
    /// Σ (t³ − t) over groups of t tied values; 0 when there are no ties.
    tie_term: f64,
}

/// Ranks the pooled values, giving tied values the mean of the ranks they span.
fn midranks(x: &[f64], y: &[f64]) -> Ranked {
    let mut pooled: Vec<(f64, bool)> = x
        .iter()
        .map(|&v| (v, true))
        .chain(y.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));

    let mut rank_sum_x = 0.0;
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < pooled.len() {
        // `==` rather than `total_cmp` so that −0.0 and +0.0 tie.
        let end = start
            + pooled[start..]
                .iter()
                .take_while(|p| p.0 == pooled[start].0)
                .count();
        let t = (end - start) as f64;
        // Ranks start + 1 ..= end, 1-based.
        let midrank = (start + 1 + end) as f64 / 2.0;
        rank_sum_x += midrank * pooled[start..end].iter().filter(|p| p.1).count() as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    Ranked {
        rank_sum_x,
        tie_term,
    }
}

/// Two-sided p-value of U = `u` from the exact null distribution: twice the smaller tail,
/// including the observed value, at most 1.
fn exact_two_sided_p(n1: usize, n2: usize, u: usize) -> f64 {
    let counts = u_counts(n1, n2);
    let total: i128 = counts.iter().sum();
    // The distribution is symmetric about n1·n2/2, so the smaller tail is the lower tail of the
    // value nearer 0.
    let k = u.min(n1 * n2 - u);
    let tail: i128 = counts[..=k].iter().sum();
    (2.0 * tail as f64 / total as f64).min(1.0)
}

/// Number of splits of n1 + n2 distinct values into sides of n1 and n2 for each U = 0 ..= n1·n2.
///
/// These are the coefficients of the Gaussian binomial [n1 + n2 choose m]_q with m = min(n1, n2),
/// built as Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i) with n = max(n1, n2): multiply by the numerator
/// factor, then divide by the denominator with a running sum. Each step leaves the Gaussian
/// binomial [n + i choose i]_q, whose coefficients are counts; only the intermediate product
/// may be negative, hence `i128`.
fn u_counts(n1: usize, n2: usize) -> Vec<i128> {
    let (m, n) = (n1.min(n2), n1.max(n2));
    let mut c = vec![0i128; m * n + 1];
    c[0] = 1;
    for i in 1..=m {
        let shift = n + i;
        // Degree before this step is (i − 1)·n; after it, i·n.
        for k in (shift..=i * n).rev() {
            c[k] -= c[k - shift];
        }
        for k in i..=i * n {
            c[k] += c[k - i];
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binomial(n: u32, k: u32) -> i128 {
        (0..k).fold(1i128, |c, i| c * (n - i) as i128 / (i + 1) as i128)
    }

    #[test]
    fn three_per_side_can_never_reach_five_percent() {
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(r.u, 0.0);
        assert_eq!(r.method, PValueMethod::Exact);
        assert!((r.p - 0.1).abs() < 1e-15, "{}", r.p);
        let r = mann_whitney(&[40.0, 50.0, 60.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(r.u, 9.0);
        assert!((r.p - 0.1).abs() < 1e-15);
        assert!((min_two_sided_p(3, 3) - 0.1).abs() < 1e-15);
    }

    #[test]
    fn scipy_documentation_example() {
        // scipy.stats.mannwhitneyu docs: U = 17, exact p = 0.1111111111111111 (= 14/126),
        // asymptotic p = 0.11134688653314041.
        let males = [19.0, 22.0, 16.0, 29.0, 24.0];
        let females = [20.0, 11.0, 17.0, 12.0];
        let r = mann_whitney(&males, &females).unwrap();
        assert_eq!(r.u, 17.0);
        assert_eq!(r.method, PValueMethod::Exact);
        assert!((r.p - 0.1111111111111111).abs() < 1e-15, "{}", r.p);
        // libm's erfc (FreeBSD msun) agrees with scipy's to about 1e-11 here.
        let p = normal_two_sided_p(17.0, 5, 4, 0.0);
        assert!((p - 0.11134688653314041).abs() < 1e-10, "{p}");
    }

    #[test]
    fn exact_distribution_counts() {
        // Every split counted once.
        for (n1, n2) in [(1, 1), (3, 3), (4, 7), (10, 10), (50, 50)] {
            let c = u_counts(n1, n2);
            assert_eq!(c.len(), n1 * n2 + 1);
            assert_eq!(
                c.iter().sum::<i128>(),
                binomial((n1 + n2) as u32, n1 as u32)
            );
            assert!(c.iter().all(|&v| v > 0));
            // Symmetric about n1·n2 / 2.
            assert!(c.iter().eq(c.iter().rev()));
        }
        // n1 = n2 = 3: the classic table 1 1 2 3 3 3 3 2 1 1.
        assert_eq!(u_counts(3, 3), vec![1, 1, 2, 3, 3, 3, 3, 2, 1, 1]);
    }

    #[test]
    fn exact_p_against_enumeration() {
        // From tests/reference.py, which enumerates all C(n1 + n2, n1) splits.
        let cases: [(&[f64], &[f64], f64, f64); 3] = [
            (
                &[1.1, 2.2, 3.3, 4.4],
                &[0.5, 5.5, 6.6, 7.7, 8.8],
                4.0,
                0.19047619047619047,
            ),
            (
                &[10.0, 12.0, 14.0, 16.0, 18.0, 20.0],
                &[11.0, 21.0, 22.0, 23.0, 24.0, 25.0],
                5.0,
                0.04112554112554113,
            ),
            (&[3.0, 1.0], &[2.0], 1.0, 1.0),
        ];
        for (x, y, u, p) in cases {
            let r = mann_whitney(x, y).unwrap();
            assert_eq!(r.method, PValueMethod::Exact);
            assert_eq!(r.u, u);
            assert!((r.p - p).abs() < 1e-12, "{x:?} vs {y:?}: {} != {p}", r.p);
        }
    }

    #[test]
    fn normal_approximation_with_ties() {
        // From tests/reference.py (tie-corrected normal approximation with continuity correction,
        // evaluated with math.erfc).
        let x = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0];
        let y = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0];
        let r = mann_whitney(&x, &y).unwrap();
        assert_eq!(r.method, PValueMethod::Normal);
        assert_eq!(r.u, 3.5);
        assert!((r.p - 0.012999854364387314).abs() < 1e-12, "{}", r.p);
    }

    #[test]
    fn tied_sides_never_go_below_the_smallest_exact_p() {
        // Three tied values a side, every one of x below every one of y: the approximation
        // alone gives about 0.047, which no split of six values can reach.
        let r = mann_whitney(&[1.0; 3], &[2.0; 3]).unwrap();
        assert_eq!(r.method, PValueMethod::Normal);
        assert!(normal_two_sided_p(r.u, 3, 3, 48.0) < 0.05);
        assert!((r.p - 0.1).abs() < 1e-12, "{}", r.p);
        // Six a side: 2 / C(12, 6).
        let r = mann_whitney(&[1.0; 6], &[2.0; 6]).unwrap();
        assert!((r.p - 2.0 / 924.0).abs() < 1e-12, "{}", r.p);
    }

    #[test]
    fn normal_approximation_for_large_samples() {
        // 101 values without ties: too many for the exact path. Reference from tests/reference.py.
        let x: Vec<f64> = (0..60).map(|i| f64::from(i) * 2.0).collect();
        let y: Vec<f64> = (0..41).map(|i| f64::from(i) * 2.0 + 41.0).collect();
        let r = mann_whitney(&x, &y).unwrap();
        assert_eq!(r.method, PValueMethod::Normal);
        assert_eq!(r.u, 780.0);
        assert!((r.p - 0.0018803141134387483).abs() < 1e-12, "{}", r.p);
    }

    #[test]
    fn exact_matches_normal_roughly_at_the_size_limit() {
        // 50 + 50 values is the largest exact case; both methods should agree to about 1e-3.
        let x: Vec<f64> = (0..50).map(|i| f64::from(i) * 2.0).collect();
        let y: Vec<f64> = (0..50).map(|i| f64::from(i) * 2.0 + 11.0).collect();
        let exact = mann_whitney(&x, &y).unwrap();
        assert_eq!(exact.method, PValueMethod::Exact);
        let normal = normal_two_sided_p(exact.u, 50, 50, 0.0);
        assert!((exact.p - normal).abs() < 1e-3, "{} vs {normal}", exact.p);
    }

    #[test]
    fn all_equal_and_tiny_samples() {
        let r = mann_whitney(&[5.0; 4], &[5.0; 4]).unwrap();
        assert_eq!((r.u, r.p, r.method), (8.0, 1.0, PValueMethod::Normal));
        let r = mann_whitney(&[1.0], &[2.0]).unwrap();
        assert_eq!((r.u, r.p), (0.0, 1.0));
        assert!(matches!(
            mann_whitney(&[], &[1.0]),
            Err(StatsError::TooFew { got: 0, .. })
        ));
        assert!(mann_whitney(&[1.0], &[]).is_err());
        assert!(mann_whitney(&[1.0, f64::NAN], &[1.0]).is_err());
    }

    #[test]
    fn minimum_p_values() {
        assert!((min_two_sided_p(3, 4) - 2.0 / 35.0).abs() < 1e-15);
        assert!((min_two_sided_p(4, 4) - 2.0 / 70.0).abs() < 1e-15);
        assert_eq!(min_two_sided_p(1, 1), 1.0);
        assert_eq!(min_two_sided_p(0, 5), 1.0);
        assert!(min_two_sided_p(60, 60) > 0.0);
    }
}
