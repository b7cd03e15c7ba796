//! What netcheck should measure, computed from the profile alone; and the statistics it
//! judges measurements with. Pure functions.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use rpcarena_netem_core::{DelayDistribution, DelaySampler, DirectionSpec};

/// Expected round-trip figures for echoes of `ip_len`-byte packets on an unloaded link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RttExpectation {
    /// Mean, ns.
    pub mean_ns: f64,
    /// Standard deviation, ns.
    pub sd_ns: f64,
    /// 1st, 50th and 99th percentiles, ns.
    pub p1_ns: f64,
    /// Median, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
}

/// RTT = delay there + delay back + serialization both ways. With uniform jitter the sum of
/// the two delays is a trapezoid (a triangle when both jitters are equal): mean `2 mu`,
/// sd `sqrt(sigma1^2 / 3 + sigma2^2 / 3)`. Table distributions use exact moments and seeded
/// Monte Carlo percentiles.
pub fn rtt_expectation(
    there: &DirectionSpec,
    back: &DirectionSpec,
    ip_len: usize,
) -> RttExpectation {
    let s1 = DelaySampler::new(there.delay_ns, there.jitter_ns, there.distribution);
    let s2 = DelaySampler::new(back.delay_ns, back.jitter_ns, back.distribution);
    let ser = there.serialization_ns(ip_len).unwrap_or(0) as f64
        + back.serialization_ns(ip_len).unwrap_or(0) as f64;
    // Delays below zero are sent at once: clip as the emulator does.
    let (m1, v1) = s1.moments();
    let (m2, v2) = s2.moments();
    let uniform = there.distribution == DelayDistribution::Uniform
        && back.distribution == DelayDistribution::Uniform
        && s1.range().0 >= 0
        && s2.range().0 >= 0;
    if uniform {
        let (lo1, hi1) = s1.range();
        let (lo2, hi2) = s2.range();
        // Continuous approximation of the discrete uniforms: widths 2 sigma.
        let w1 = (hi1 - lo1 + 1) as f64 * (there.jitter_ns > 0) as u8 as f64;
        let w2 = (hi2 - lo2 + 1) as f64 * (back.jitter_ns > 0) as u8 as f64;
        let base = lo1 as f64 + lo2 as f64 + ser;
        let q = |p: f64| base + uniform_sum_quantile(w1, w2, p);
        RttExpectation {
            mean_ns: m1 + m2 + ser,
            sd_ns: (v1 + v2).sqrt(),
            p1_ns: q(0.01),
            p50_ns: q(0.50),
            p99_ns: q(0.99),
        }
    } else {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5254_5421);
        let mut draws: Vec<f64> = (0..200_000)
            .map(|_| (s1.sample(&mut rng).max(0) + s2.sample(&mut rng).max(0)) as f64 + ser)
            .collect();
        draws.sort_by(f64::total_cmp);
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        let q = |p: f64| draws[((draws.len() - 1) as f64 * p).round() as usize];
        // Exact moments where no clipping happens, else the Monte Carlo ones.
        let clipped = s1.range().0 < 0 || s2.range().0 < 0;
        RttExpectation {
            mean_ns: if clipped { mean } else { m1 + m2 + ser },
            sd_ns: if clipped {
                var.sqrt()
            } else {
                (v1 + v2).sqrt()
            },
            p1_ns: q(0.01),
            p50_ns: q(0.50),
            p99_ns: q(0.99),
        }
    }
}

/// CDF of X + Y, X ~ U[0, w1), Y ~ U[0, w2).
fn uniform_sum_cdf(w1: f64, w2: f64, z: f64) -> f64 {
    let (a, b) = if w1 <= w2 { (w1, w2) } else { (w2, w1) };
    if z <= 0.0 {
        return 0.0;
    }
    if z >= a + b {
        return 1.0;
    }
    if a == 0.0 {
        return if b == 0.0 { 1.0 } else { z / b };
    }
    if z <= a {
        z * z / (2.0 * a * b)
    } else if z <= b {
        (z - a / 2.0) / b
    } else {
        1.0 - (a + b - z).powi(2) / (2.0 * a * b)
    }
}

/// Quantile of X + Y by bisection on the CDF.
pub fn uniform_sum_quantile(w1: f64, w2: f64, p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, w1 + w2);
    if hi == 0.0 {
        return 0.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if uniform_sum_cdf(w1, w2, mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Probe spacing (ns) at which consecutive echoes cannot interact through the rate's
/// `max()` rule in either direction, so that the measured RTT is the unloaded one.
///
/// Going out, probe n meets probe n-1 in the queue only if the spacing is below the spread
/// of the outbound delay plus serialization. Coming back, echoes leave the server spaced by
/// the probe spacing minus the outbound spread, and must still exceed the return spread plus
/// serialization. Without a rate, delays are independent and any spacing works.
pub fn non_interacting_spacing_ns(
    there: &DirectionSpec,
    back: &DirectionSpec,
    ip_len: usize,
) -> u64 {
    const GUARD_NS: u64 = 200_000;
    if there.rate_bps.is_none() && back.rate_bps.is_none() {
        return GUARD_NS;
    }
    let spread = |s: &DirectionSpec| {
        let (lo, hi) = DelaySampler::new(s.delay_ns, s.jitter_ns, s.distribution).range();
        (hi - lo).max(0) as u64
    };
    spread(there)
        + spread(back)
        + there.serialization_ns(ip_len).unwrap_or(0)
        + back.serialization_ns(ip_len).unwrap_or(0)
        + GUARD_NS
}

/// Wilson score interval for `k` successes in `n` trials at normal quantile `z`.
pub fn wilson_interval(k: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The two-sided 99 % normal quantile.
pub const Z99: f64 = 2.575_829_303_549;

/// Mathis et al.: TCP Reno throughput bound `MSS / RTT * sqrt(3 / 2) / sqrt(p)`, bit/s.
pub fn mathis_bps(mss: f64, rtt_s: f64, loss: f64) -> Option<f64> {
    (loss > 0.0 && rtt_s > 0.0).then(|| mss * 8.0 / rtt_s * (1.5f64).sqrt() / loss.sqrt())
}

/// Mean, standard deviation and excess-free kurtosis (`m4 / m2^2`) of samples.
pub fn moments(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len() as f64;
    if n == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let mean = values.iter().sum::<f64>() / n;
    let m2 = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let m4 = values.iter().map(|v| (v - mean).powi(4)).sum::<f64>() / n;
    let kurtosis = if m2 > 0.0 { m4 / (m2 * m2) } else { 0.0 };
    (mean, m2.sqrt(), kurtosis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_netem_core::profile_by_name;

    #[test]
    fn regional_wan_rtt_is_triangular_around_30_ms() {
        let p = profile_by_name("regional-wan").unwrap();
        let e = rtt_expectation(&p.client_to_server, &p.server_to_client, 60);
        // 2 * 15 ms plus 2 * (60 + 14) * 80 ns of serialization.
        assert!(
            (e.mean_ns - (30e6 + 2.0 * 5920.0 - 1.0)).abs() < 1.0,
            "{e:?}"
        );
        assert!((e.sd_ns - 1_632_993.2).abs() < 1.0, "{e:?}");
        // Triangular on [26, 34) ms: p1 = 26 + 8 * sqrt(0.005) ms.
        let p1 = 26e6 + 8e6 * 0.005f64.sqrt() + 2.0 * 5920.0;
        assert!((e.p1_ns - p1).abs() < 10.0, "{e:?}");
        assert!((e.p50_ns - (30e6 + 11_840.0)).abs() < 10.0);
    }

    #[test]
    fn uniform_sum_quantiles() {
        assert!((uniform_sum_quantile(0.0, 10.0, 0.3) - 3.0).abs() < 1e-9);
        assert!((uniform_sum_quantile(4.0, 4.0, 0.5) - 4.0).abs() < 1e-9);
        assert!((uniform_sum_quantile(2.0, 6.0, 0.5) - 4.0).abs() < 1e-9);
        assert_eq!(uniform_sum_quantile(0.0, 0.0, 0.5), 0.0);
    }

    #[test]
    fn spacing_covers_both_spreads() {
        let p = profile_by_name("regional-wan").unwrap();
        let g = non_interacting_spacing_ns(&p.client_to_server, &p.server_to_client, 60);
        assert!(g > 8_000_000 && g < 8_300_000, "{g}");
        let free = DirectionSpec {
            delay_ns: 1_000_000,
            jitter_ns: 500_000,
            ..Default::default()
        };
        assert_eq!(non_interacting_spacing_ns(&free, &free, 60), 200_000);
    }

    #[test]
    fn wilson_contains_the_truth() {
        let (lo, hi) = wilson_interval(1000, 1_000_000, Z99);
        assert!(lo < 0.001 && hi > 0.001);
        assert!(hi - lo < 0.0002);
        let (lo, hi) = wilson_interval(0, 100, Z99);
        assert_eq!(lo, 0.0);
        assert!(hi > 0.0 && hi < 0.1);
    }

    #[test]
    fn mathis_for_regional_wan() {
        let bps = mathis_bps(1448.0, 0.030, 0.002).unwrap();
        assert!((bps / 1e6 - 10.6).abs() < 0.2, "{bps}");
        assert!(mathis_bps(1448.0, 0.03, 0.0).is_none());
    }
}
