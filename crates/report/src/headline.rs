//! The headline: which stack won which same-shape comparison, and by how much.
//!
//! Pairs are formed within a language first, as the published report compares stacks: a cell is
//! compared with the cell of the same language (client and server) that runs the baseline cell's
//! stack on the same workload. A cell with no such partner (another language, or mixed client
//! and server languages) is compared with the baseline cell itself. A comparison counts as a win
//! or a loss only when `rpcarena_stats::compare` calls it significant (Mann-Whitney p < 0.05 and
//! a change beyond 1%); every other one is named as within noise.

use crate::aggregate::{Row, fnv1a, same_workload};
use rpcarena_stats::{Change, CompareOptions, Comparison, MetricKind, Verdict, compare};
use std::fmt::Write;

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
}

/// Every pair of rows the headline compares, in row order. Rows of loads that do not complete
/// whole operations, and rows without good samples, take no part.
pub fn pairs<'a>(rows: &'a [Row], baseline: &str, seed: u64) -> Vec<Pair<'a>> {
    let usable = |r: &Row| r.metrics.is_some() && r.config.load.whole_operations();
    let reference_stack = rows
        .iter()
        .find(|r| r.config.cell == baseline)
        .map(|r| r.config.stack.clone());
    let mut out = Vec::new();
    for candidate in rows.iter().filter(|r| usable(r)) {
        let same_language = |r: &&Row| {
            r.client_language == candidate.client_language
                && r.server_language == candidate.server_language
        };
        let partner = rows.iter().filter(|r| usable(r)).find(|r| {
            Some(&r.config.stack) == reference_stack.as_ref()
                && same_language(r)
                && same_workload(&r.config, &candidate.config)
        });
        let reference = partner.or_else(|| {
            rows.iter()
                .filter(|r| usable(r))
                .find(|r| r.config.cell == baseline && same_workload(&r.config, &candidate.config))
        });
        let Some(reference) = reference else { continue };
        if reference.config.cell == candidate.config.cell
            || reference.config.stack == candidate.config.stack && partner.is_some()
        {
            continue;
        }
        let key_seed = seed ^ fnv1a(&candidate.config.key) ^ fnv1a(&reference.config.key);
        let values = |r: &Row, f: fn(&crate::aggregate::SampleFigures) -> f64| {
            r.samples.iter().map(f).collect::<Vec<f64>>()
        };
        let throughput = compare(
            &values(reference, |s| s.ops_per_s),
            &values(candidate, |s| s.ops_per_s),
            &CompareOptions::new(MetricKind::Rate, key_seed),
        );
        let p99 = compare(
            &values(reference, |s| s.p99_us),
            &values(candidate, |s| s.p99_us),
            &CompareOptions::new(MetricKind::Duration, key_seed ^ 1),
        );
        if let (Ok(throughput), Ok(p99)) = (throughput, p99) {
            out.push(Pair {
                reference,
                candidate,
                throughput,
                p99,
            });
        }
    }
    out
}

fn is(c: &Comparison, change: Change) -> bool {
    c.verdict == Verdict::Significant { change }
}

/// "rust-quic (quic, rust) on unary c4 closed".
fn label(pair: &Pair<'_>) -> String {
    let c = &pair.candidate.config;
    format!(
        "{} against {} on {} c{} {}",
        c.cell,
        pair.reference.config.cell,
        c.shape.title().to_lowercase(),
        c.concurrency,
        c.load
    )
}

/// The headline paragraphs (Markdown; plain sentences, so the HTML report uses them as they are).
pub fn paragraphs(pairs: &[Pair<'_>], repetitions: Option<u32>) -> Vec<String> {
    if pairs.is_empty() {
        return vec![
            "There is nothing to compare: no two cells ran the same workload with good samples."
                .to_string(),
        ];
    }
    let mut groups: Vec<(&str, &str, Vec<&Pair<'_>>)> = Vec::new();
    for pair in pairs {
        let (c, r) = (
            pair.candidate.config.cell.as_str(),
            pair.reference.config.cell.as_str(),
        );
        match groups.iter_mut().find(|g| g.0 == c && g.1 == r) {
            Some(g) => g.2.push(pair),
            None => groups.push((c, r, vec![pair])),
        }
    }
    let mut out = Vec::new();
    for (candidate, reference, group) in &groups {
        let count = |f: &dyn Fn(&Pair<'_>) -> bool| group.iter().filter(|p| f(p)).count();
        let n = group.len();
        let faster = count(&|p| is(&p.throughput, Change::Faster));
        let slower = count(&|p| is(&p.throughput, Change::Slower));
        let lower_p99 = count(&|p| is(&p.p99, Change::Faster));
        let higher_p99 = count(&|p| is(&p.p99, Change::Slower));
        let both = count(&|p| is(&p.throughput, Change::Faster) && is(&p.p99, Change::Faster));
        out.push(format!(
            "{candidate} against {reference} ({} {} against {}): of {n} same-shape comparison{}, {candidate} had significantly higher median throughput in {faster} and lower in {slower} ({} within noise); significantly lower median p99 in {lower_p99} and higher in {higher_p99} ({} within noise); it won both in {both}.",
            group[0].candidate.language(),
            group[0].candidate.config.stack,
            group[0].reference.config.stack,
            if n == 1 { "" } else { "s" },
            n - faster - slower,
            n - lower_p99 - higher_p99,
        ));
    }
    out.push(extremes(pairs));
    if let Some(reps) = repetitions
        && reps < 4
    {
        out.push(format!(
            "With {reps} repetition(s) per configuration no difference can reach significance (a two-sided Mann-Whitney test at alpha 0.05 needs at least 4 per side), so every comparison above is within noise and the ratios in the tables are descriptive."
        ));
    }
    out.push("Ratios are candidate over reference of independently aggregated medians: a throughput ratio above 1 and a p99 ratio below 1 favour the candidate.".to_string());
    out
}

/// The largest significant gains and regressions in throughput, with their ratios.
fn extremes(pairs: &[Pair<'_>]) -> String {
    let mut gains: Vec<&Pair<'_>> = pairs
        .iter()
        .filter(|p| is(&p.throughput, Change::Faster))
        .collect();
    gains.sort_by(|a, b| b.throughput.ratio.total_cmp(&a.throughput.ratio));
    let mut losses: Vec<&Pair<'_>> = pairs
        .iter()
        .filter(|p| is(&p.throughput, Change::Slower))
        .collect();
    losses.sort_by(|a, b| a.throughput.ratio.total_cmp(&b.throughput.ratio));
    let list = |ps: &[&Pair<'_>]| {
        ps.iter()
            .take(3)
            .map(|p| {
                format!(
                    "{} at {:.2}x (p = {:.3})",
                    label(p),
                    p.throughput.ratio,
                    p.throughput.mann_whitney.p
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = String::new();
    if gains.is_empty() {
        text.push_str("No throughput gain is significant");
    } else {
        let _ = write!(text, "The largest throughput gains were {}", list(&gains));
    }
    if losses.is_empty() {
        text.push_str("; no throughput regression is significant.");
    } else {
        let _ = write!(text, "; the largest regressions were {}.", list(&losses));
    }
    if gains.is_empty() && losses.is_empty() {
        let widest = pairs
            .iter()
            .max_by(|a, b| {
                (a.throughput.ratio.ln().abs()).total_cmp(&b.throughput.ratio.ln().abs())
            })
            .map(|p| {
                format!(
                    " The widest ratio, within noise, was {} at {:.2}x.",
                    label(p),
                    p.throughput.ratio
                )
            })
            .unwrap_or_default();
        text.push_str(&widest);
    }
    text
}
