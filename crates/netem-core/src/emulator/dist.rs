//! Delay distributions exactly as `sch_netem.c` draws them.
//!
//! netem draws uniform jitter as `(rnd % (2 sigma)) + mu - sigma` and the other distributions
//! from tables of 4096 signed 16-bit values scaled by `NETEM_DIST_SCALE` (8192), which
//! iproute2 generates with `normal.c` and `pareto.c`. We regenerate the same tables with the
//! same arithmetic so that the shapes (including the clipping at +-4 sd) match.

use std::sync::OnceLock;

use rand::RngCore;

use crate::profile::DelayDistribution;

/// netem's fixed-point scale for distribution tables.
pub const NETEM_DIST_SCALE: i64 = 8192;

const TABLESIZE: usize = 16384;

/// iproute2 `normal.c`: the x whose rounded CDF position is i, sampled every 4th slot.
fn build_normal_table() -> Vec<i16> {
    let mut table = vec![0.0f64; TABLESIZE + 1];
    // The same accumulating loop as the C generator, so rounding lands on the same slots.
    let mut x = -10.0f64;
    while x < 10.05 {
        let cdf = 0.5 + 0.5 * libm::erf(x / std::f64::consts::SQRT_2);
        let i = (TABLESIZE as f64 * cdf).round_ties_even() as usize;
        table[i.min(TABLESIZE)] = x;
        x += 0.00005;
    }
    (0..TABLESIZE)
        .step_by(4)
        .map(|i| {
            let value = (table[i] * NETEM_DIST_SCALE as f64).round_ties_even();
            value.clamp(i16::MIN as f64, i16::MAX as f64) as i16
        })
        .collect()
}

/// iproute2 `pareto.c`: shape 3, shifted by its mean 1.5 and scaled by 4/3.
fn build_pareto_table() -> Vec<i16> {
    let a = 3.0f64;
    let mut out = Vec::with_capacity(4096);
    let mut i = 65536i64;
    while i > 0 {
        let u = i as f64 / 65536.0;
        let mut v = 1.0 / u.powf(1.0 / a);
        v -= 1.5;
        v *= (4.0 / 3.0) * NETEM_DIST_SCALE as f64;
        if v > 32767.0 {
            v = 32767.0;
        }
        out.push(v.round_ties_even() as i16);
        i -= 16;
    }
    out
}

/// The table netem would load for `distribution`, `None` for uniform.
pub fn table(distribution: DelayDistribution) -> Option<&'static [i16]> {
    static NORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETO: OnceLock<Vec<i16>> = OnceLock::new();
    match distribution {
        DelayDistribution::Uniform => None,
        DelayDistribution::Normal => Some(NORMAL.get_or_init(build_normal_table)),
        DelayDistribution::Pareto => Some(PARETO.get_or_init(build_pareto_table)),
    }
}

/// Draws one-way delays (before any rate) in nanoseconds.
#[derive(Debug, Clone)]
pub struct DelaySampler {
    mu: i64,
    sigma: i64,
    table: Option<&'static [i16]>,
}

impl DelaySampler {
    /// `sigma` must fit netem's signed 32-bit jitter (profile validation guarantees it).
    pub fn new(mu_ns: u64, sigma_ns: u64, distribution: DelayDistribution) -> Self {
        DelaySampler {
            mu: mu_ns.min(i64::MAX as u64) as i64,
            sigma: sigma_ns.min(i32::MAX as u64) as i64,
            table: table(distribution),
        }
    }

    /// netem's `tabledist()`; may be negative when jitter exceeds the delay.
    pub fn sample(&self, rng: &mut impl RngCore) -> i64 {
        if self.sigma == 0 {
            return self.mu;
        }
        let rnd = rng.next_u32();
        self.value_for(rnd)
    }

    fn value_for(&self, rnd: u32) -> i64 {
        match self.table {
            None => {
                // 2 sigma <= 2^32 - 2, so the modulus fits u32 as in the kernel.
                let span = 2 * self.sigma as u32;
                (rnd % span) as i64 + self.mu - self.sigma
            }
            Some(table) => self.table_value(table[rnd as usize % table.len()] as i64),
        }
    }

    fn table_value(&self, t: i64) -> i64 {
        // Fixed-point scaling with rounding, integer division truncating toward zero as in C.
        let mut x = (self.sigma % NETEM_DIST_SCALE) * t;
        if x >= 0 {
            x += NETEM_DIST_SCALE / 2;
        } else {
            x -= NETEM_DIST_SCALE / 2;
        }
        x / NETEM_DIST_SCALE + (self.sigma / NETEM_DIST_SCALE) * t + self.mu
    }

    /// Exact mean and variance (ns, ns^2) of the drawn delay, over all equally likely outcomes.
    pub fn moments(&self) -> (f64, f64) {
        if self.sigma == 0 {
            return (self.mu as f64, 0.0);
        }
        match self.table {
            None => {
                // Discrete uniform on mu - sigma .. mu + sigma - 1.
                let n = 2.0 * self.sigma as f64;
                let mean = self.mu as f64 - 0.5;
                (mean, (n * n - 1.0) / 12.0)
            }
            Some(table) => {
                let values: Vec<f64> = table
                    .iter()
                    .map(|&t| self.table_value(t as i64) as f64)
                    .collect();
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                let var =
                    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
                (mean, var)
            }
        }
    }

    /// Smallest and largest delay this sampler can return, ns.
    pub fn range(&self) -> (i64, i64) {
        if self.sigma == 0 {
            return (self.mu, self.mu);
        }
        match self.table {
            None => (self.mu - self.sigma, self.mu + self.sigma - 1),
            Some(table) => {
                let lo = table.iter().copied().min().unwrap_or(0) as i64;
                let hi = table.iter().copied().max().unwrap_or(0) as i64;
                (self.table_value(lo), self.table_value(hi))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_netem_shape() {
        let normal = table(DelayDistribution::Normal).unwrap();
        assert_eq!(normal.len(), 4096);
        // Sorted ascending, clipped at -4 sd, symmetric around 0 within a few table steps.
        assert!(normal.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(normal[0], i16::MIN);
        let mean: f64 = normal.iter().map(|&v| v as f64).sum::<f64>() / 4096.0;
        assert!(mean.abs() < 20.0, "normal table mean {mean}");
        let sd = (normal
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / 4096.0)
            .sqrt();
        assert!((sd / 8192.0 - 1.0).abs() < 0.01, "normal table sd {sd}");

        let pareto = table(DelayDistribution::Pareto).unwrap();
        assert_eq!(pareto.len(), 4096);
        assert_eq!(pareto[0], -5461);
        assert_eq!(*pareto.last().unwrap(), 32767);
        assert!(pareto.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn uniform_moments_and_range() {
        let s = DelaySampler::new(15_000_000, 2_000_000, DelayDistribution::Uniform);
        let (mean, var) = s.moments();
        assert!((mean - 15_000_000.0).abs() < 1.0);
        let sd = var.sqrt();
        assert!((sd - 2_000_000.0 / 3f64.sqrt()).abs() < 1.0);
        assert_eq!(s.range(), (13_000_000, 16_999_999));
        assert_eq!(s.value_for(0), 13_000_000);
        assert_eq!(s.value_for(3_999_999), 16_999_999);
        assert_eq!(s.value_for(4_000_000), 13_000_000);
    }

    #[test]
    fn table_scaling_matches_kernel_arithmetic() {
        let s = DelaySampler::new(10_000, 8192 * 3 + 5, DelayDistribution::Normal);
        // t = 8192 means +1 sd: 3*8192 + 5 plus rounding of 5*8192/8192.
        assert_eq!(s.table_value(8192), 10_000 + 8192 * 3 + 5);
        assert_eq!(s.table_value(-8192), 10_000 - 8192 * 3 - 5);
        assert_eq!(s.table_value(0), 10_000);
    }
}
