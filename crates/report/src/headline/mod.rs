//! The headline: which stack won which same-shape comparison, and by how much.
//!
//! Pairs are formed within a language first, as the published report compares stacks: a cell is
//! compared with the cell of the same language (client and server) that runs the baseline cell's
//! stack on the same workload. A cell with no such partner (another language, or mixed client
//! and server languages) is compared with the baseline cell itself.
//!
//! A comparison counts as a win or a loss when `rpcarena_stats::compare` calls it significant
//! (Mann-Whitney p < 0.05 and a change beyond 1%); every other one is named as within noise.
//! Where the repetitions are too few for the test to decide at all (fewer than 4 per side), the
//! headline counts by the range rule of published benchmark reports instead
//! (`rpcarena_stats::range_rule`: medians, and whether the min-max ranges overlap), names that
//! rule, and says what it is worth. The wording is in [`text`].

mod text;

pub use text::{noise_note, paragraphs, ranges_cell};

use crate::aggregate::{Row, SampleFigures, fnv1a, same_workload};
use rpcarena_stats::compare::DEFAULT_ALPHA;
use rpcarena_stats::{
    CompareOptions, Comparison, MetricKind, RangeRule, compare, min_two_sided_p, range_rule,
};

/// One candidate row against its reference row on the same workload.
pub struct Pair<'a> {
    /// The row compared against (the language's baseline-stack cell, or the baseline cell).
    pub reference: &'a Row,
    /// The row compared.
    pub candidate: &'a Row,
    /// Median throughput, candidate against reference (higher is better).
    pub throughput: Comparison,
    /// Median p99, candidate against reference (lower is better).
    pub p99: Comparison,
    /// The range rule on the samples' throughput.
    pub throughput_ranges: RangeRule,
    /// The range rule on the samples' p99.
    pub p99_ranges: RangeRule,
}

impl Pair<'_> {
    /// Whether the test cannot decide this pair whatever was measured: a side has too few good
    /// repetitions for any outcome to reach p < 0.05.
    pub fn undecidable(&self) -> bool {
        min_two_sided_p(self.throughput.n_baseline, self.throughput.n_candidate) >= DEFAULT_ALPHA
    }
}

/// Every pair of rows the headline compares, in row order. Rows of loads that do not complete
/// whole operations, and rows without good samples, take no part.
pub fn pairs<'a>(rows: &'a [Row], baseline: &str, seed: u64) -> Vec<Pair<'a>> {
    let reference_stack = rows
        .iter()
        .find(|r| r.config.cell == baseline)
        .map(|r| r.config.stack.as_str());
    rows.iter()
        .filter(|r| usable(r))
        .filter_map(|candidate| {
            let reference = reference_of(rows, candidate, reference_stack, baseline)?;
            compared(reference, candidate, seed)
        })
        .collect()
}

fn usable(r: &Row) -> bool {
    r.metrics.is_some() && r.config.load.whole_operations()
}

/// The row `candidate` is compared against: its language's row on the baseline's stack, else
/// the baseline cell's; none when that is the candidate itself, or its own stack.
fn reference_of<'a>(
    rows: &'a [Row],
    candidate: &Row,
    reference_stack: Option<&str>,
    baseline: &str,
) -> Option<&'a Row> {
    let comparable = |r: &Row| usable(r) && same_workload(&r.config, &candidate.config);
    let partner = rows.iter().find(|r| {
        comparable(r)
            && Some(r.config.stack.as_str()) == reference_stack
            && r.client_language == candidate.client_language
            && r.server_language == candidate.server_language
    });
    let reference = partner.or_else(|| {
        rows.iter()
            .find(|r| comparable(r) && r.config.cell == baseline)
    })?;
    let same_cell = reference.config.cell == candidate.config.cell;
    let same_stack = partner.is_some() && reference.config.stack == candidate.config.stack;
    (!same_cell && !same_stack).then_some(reference)
}

/// Both comparisons and both range rules of one pair; none when a side has no usable values.
fn compared<'a>(reference: &'a Row, candidate: &'a Row, seed: u64) -> Option<Pair<'a>> {
    let key_seed = seed ^ fnv1a(&candidate.config.key) ^ fnv1a(&reference.config.key);
    let values =
        |r: &Row, f: fn(&SampleFigures) -> f64| r.samples.iter().map(f).collect::<Vec<_>>();
    let ops = (
        values(reference, |s| s.ops_per_s),
        values(candidate, |s| s.ops_per_s),
    );
    let p99 = (
        values(reference, |s| s.p99_us),
        values(candidate, |s| s.p99_us),
    );
    Some(Pair {
        reference,
        candidate,
        throughput: compare(
            &ops.0,
            &ops.1,
            &CompareOptions::new(MetricKind::Rate, key_seed),
        )
        .ok()?,
        p99: compare(
            &p99.0,
            &p99.1,
            &CompareOptions::new(MetricKind::Duration, key_seed ^ 1),
        )
        .ok()?,
        throughput_ranges: range_rule(&ops.0, &ops.1, MetricKind::Rate).ok()?,
        p99_ranges: range_rule(&p99.0, &p99.1, MetricKind::Duration).ok()?,
    })
}
