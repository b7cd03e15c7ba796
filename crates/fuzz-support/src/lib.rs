//! The loop behind the parsers' fuzz tests (`crates/model/tests/fuzz_campaign.rs`,
//! `crates/protocol/tests/fuzz_events.rs`): fuzzing on stable Rust with proptest's generators,
//! for a time budget rather than a case count, so `cargo test` stays quick and a long run is one
//! environment variable away (docs/faults.md has the figures of a 10-minute run).

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Seconds each target runs: `RPCARENA_FUZZ_SECS`, default 2.
pub fn budget() -> Duration {
    let secs = std::env::var("RPCARENA_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    Duration::from_secs(secs)
}

/// Runs `check` on values of `strategy` until the budget is spent; a panic names its input.
/// `check` says whether the parser accepted the input (counted, and printed at the end).
pub fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(&S::Value) -> bool)
where
    S::Value: Debug,
{
    let mut runner = TestRunner::default();
    let started = Instant::now();
    let budget = budget();
    let (mut executions, mut accepted) = (0u64, 0u64);
    while started.elapsed() < budget {
        let value = strategy.new_tree(&mut runner).unwrap().current();
        match catch_unwind(AssertUnwindSafe(|| check(&value))) {
            Ok(ok) => accepted += u64::from(ok),
            Err(_) => panic!("{name}: panicked on input {value:?}"),
        }
        executions += 1;
    }
    println!(
        "fuzz {name}: {executions} executions ({accepted} accepted by the parser) in {:.0} s, no panic",
        started.elapsed().as_secs_f64()
    );
}
