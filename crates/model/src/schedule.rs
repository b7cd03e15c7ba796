//! The schedule: repetition rounds, each running every configuration once in a seeded random
//! order (randomized multiple interleaved trials, after Abedi and Brecht: a fixed order can
//! produce false differences of tens of percent).

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One sample to run.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Round, from 1.
    pub round: u32,
    /// Position within the round, from 1.
    pub position: u32,
    /// Index into the expanded configurations.
    pub config: usize,
}

/// `rounds` rounds over `configs` configurations, each round shuffled by a ChaCha8 generator
/// seeded with `seed`; the same inputs always give the same schedule.
pub fn schedule(configs: usize, rounds: u32, seed: u64) -> Vec<Slot> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut slots = Vec::with_capacity(configs * rounds as usize);
    for round in 1..=rounds {
        let mut order: Vec<usize> = (0..configs).collect();
        order.shuffle(&mut rng);
        slots.extend(order.into_iter().enumerate().map(|(i, config)| Slot {
            round,
            position: i as u32 + 1,
            config,
        }));
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_configuration_once() {
        let slots = schedule(12, 3, 42);
        assert_eq!(slots.len(), 36);
        for round in 1..=3 {
            let mut seen: Vec<usize> = slots
                .iter()
                .filter(|s| s.round == round)
                .map(|s| s.config)
                .collect();
            seen.sort();
            assert_eq!(seen, (0..12).collect::<Vec<_>>());
        }
    }

    #[test]
    fn seeded_and_reproducible_and_not_fixed() {
        assert_eq!(schedule(12, 3, 42), schedule(12, 3, 42));
        assert_ne!(schedule(12, 3, 42), schedule(12, 3, 43));
        let slots = schedule(12, 2, 42);
        let first: Vec<usize> = slots[..12].iter().map(|s| s.config).collect();
        let second: Vec<usize> = slots[12..].iter().map(|s| s.config).collect();
        assert_ne!(first, second, "rounds are shuffled independently");
    }
}
