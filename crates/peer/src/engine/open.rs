//! The open model's sans-IO cores: when each operation is meant to start ([`Arrivals`]), and how
//! the generator thread waits for that moment ([`Pacer`]).
//!
//! In an open loop the schedule does not depend on how fast the server answers: operation `i`
//! has an intended start time fixed in advance, and its latency is measured from that time
//! (what wrk2 calls correcting for coordinated omission). Constant arrivals are `t0 + i / R`;
//! Poisson arrivals have exponential gaps of mean `1 / R` drawn from a ChaCha8 generator seeded
//! with `--seed`, so a run can be repeated exactly. Neither core reads a clock.

use super::{Nanos, Window};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How intended start times are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Exactly `1 / rate` apart.
    Constant,
    /// Exponential gaps with mean `1 / rate` (a Poisson process).
    Poisson,
}

impl Arrival {
    /// The name used in arguments.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// The open model's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenConfig {
    /// Target rate, operations per second.
    pub rate: f64,
    /// How starts are spaced.
    pub arrival: Arrival,
    /// Seed of the Poisson gaps (unused by constant arrivals).
    pub seed: u64,
}

/// The intended start times of one window, in order.
#[derive(Debug, Clone)]
pub struct Arrivals {
    t0: Nanos,
    deadline: Nanos,
    gap_ns: f64,
    arrival: Arrival,
    rng: ChaCha8Rng,
    index: u64,
    offset_ns: f64,
    done: bool,
}

impl Arrivals {
    /// The arrivals of `config` in `window`.
    pub fn new(config: &OpenConfig, window: &Window) -> Arrivals {
        Arrivals {
            t0: window.t0,
            deadline: window.deadline,
            gap_ns: 1e9 / config.rate,
            arrival: config.arrival,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            index: 0,
            offset_ns: 0.0,
            done: false,
        }
    }
}

impl Iterator for Arrivals {
    /// (operation number, intended start).
    type Item = (u64, Nanos);

    /// The next intended start, or `None` once it would be at or after the deadline (no
    /// operation is meant to start after the window).
    fn next(&mut self) -> Option<(u64, Nanos)> {
        if self.done {
            return None;
        }
        let offset = match self.arrival {
            // From the index, not by adding gaps, so rounding never accumulates.
            Arrival::Constant => self.index as f64 * self.gap_ns,
            Arrival::Poisson => self.offset_ns,
        };
        let intended = self.t0.saturating_add(offset as Nanos);
        if intended >= self.deadline || !offset.is_finite() {
            self.done = true;
            return None;
        }
        if self.arrival == Arrival::Poisson {
            // Inverse transform: -ln(1 - U) is exponential with mean 1 for U uniform in [0, 1).
            let u: f64 = self.rng.random();
            self.offset_ns += -(1.0 - u).ln() * self.gap_ns;
        }
        let item = (self.index, intended);
        self.index += 1;
        Some(item)
    }
}

/// What the generator thread does to reach a target time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Sleep (clock_nanosleep, absolute) until this time, then ask again.
    Sleep(Nanos),
    /// Spin: the target is closer than a sleep's wake-up error.
    Spin,
    /// The target is reached: hand the start over now.
    Go,
}

/// How the generator waits: sleep until `spin_ns` before the target, then spin.
///
/// A sleep wakes up late by tens of microseconds even with a timer slack of 1 ns (on this
/// project's machines p50 61 µs, p99 146 µs for a 200 µs sleep; docs/peer-protocol.md), so the
/// last stretch is spun, which is exact but costs CPU for its length once per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    /// How long before a target the sleep ends and the spin begins.
    pub spin_ns: Nanos,
}

impl Pacer {
    /// What to do at `now` to reach `target`.
    pub fn pace(&self, now: Nanos, target: Nanos) -> Pace {
        if now >= target {
            Pace::Go
        } else if target - now > self.spin_ns {
            Pace::Sleep(target - self.spin_ns)
        } else {
            Pace::Spin
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rate: f64, arrival: Arrival, seed: u64) -> OpenConfig {
        OpenConfig {
            rate,
            arrival,
            seed,
        }
    }

    #[test]
    fn constant_arrivals_are_t0_plus_i_over_r_and_stop_before_the_deadline() {
        let window = Window::new(5_000, 10_000_000, 0);
        let starts: Vec<(u64, Nanos)> =
            Arrivals::new(&config(1_000.0, Arrival::Constant, 0), &window).collect();
        // 10 ms at 1000/s: 0, 1, ..., 9 ms after t0; the one at 10 ms is at the deadline
        assert_eq!(starts.len(), 10);
        assert_eq!(starts[0], (0, 5_000));
        assert_eq!(starts[9], (9, 5_000 + 9_000_000));
        // a rate that does not divide a second keeps exact positions (no accumulated rounding)
        let thirds: Vec<Nanos> = Arrivals::new(
            &config(3.0, Arrival::Constant, 0),
            &Window::new(0, 10_000_000_000, 0),
        )
        .map(|(_, t)| t)
        .collect();
        assert_eq!(thirds.len(), 30);
        assert_eq!(thirds[29], 9_666_666_666);
    }

    #[test]
    fn poisson_arrivals_repeat_with_the_seed_and_average_the_rate() {
        let window = Window::new(0, 100_000_000_000, 0);
        let a: Vec<Nanos> = Arrivals::new(&config(1_000.0, Arrival::Poisson, 42), &window)
            .map(|(_, t)| t)
            .collect();
        let b: Vec<Nanos> = Arrivals::new(&config(1_000.0, Arrival::Poisson, 42), &window)
            .map(|(_, t)| t)
            .collect();
        let c: Vec<Nanos> = Arrivals::new(&config(1_000.0, Arrival::Poisson, 43), &window)
            .map(|(_, t)| t)
            .collect();
        assert_eq!(a, b, "the same seed gives the same schedule");
        assert_ne!(a[1..10], c[1..10], "another seed another");
        assert_eq!(a[0], 0, "the first arrival is at t0");
        // the fixed seed's first gaps (ChaCha8, rand 0.9's f64 in [0, 1))
        assert_eq!(&a[..4], &FIRST_POISSON_42);
        // 100 s at 1000/s: about 100000 arrivals (sd about 316)
        assert!((98_500..101_500).contains(&a.len()), "{}", a.len());
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // exponential gaps: about 63.2% are shorter than the mean
        let short = a.windows(2).filter(|w| w[1] - w[0] < 1_000_000).count();
        let share = short as f64 / (a.len() - 1) as f64;
        assert!((0.62..0.645).contains(&share), "{share}");
    }

    const FIRST_POISSON_42: [Nanos; 4] = [0, 1_145_377, 4_146_633, 4_704_404];

    #[test]
    fn the_pacer_sleeps_then_spins_then_goes() {
        let pacer = Pacer { spin_ns: 100 };
        assert_eq!(pacer.pace(0, 1_000), Pace::Sleep(900));
        assert_eq!(pacer.pace(900, 1_000), Pace::Spin);
        assert_eq!(pacer.pace(999, 1_000), Pace::Spin);
        assert_eq!(pacer.pace(1_000, 1_000), Pace::Go);
        assert_eq!(pacer.pace(5_000, 1_000), Pace::Go);
    }
}
