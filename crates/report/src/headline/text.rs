//! The headline's sentences: counts of wins by the test (or, where it cannot decide, by the
//! range rule), the largest gains and regressions, and what the repetitions allow.

use super::Pair;
use rpcarena_stats::compare::{DEFAULT_ALPHA, DEFAULT_NOISE_THRESHOLD};
use rpcarena_stats::{
    Change, Comparison, Disagreement, RangeRule, RangeVerdict, Verdict, min_two_sided_p,
};
use std::fmt::Write;

/// How the headline names the range rule wherever it counts by it.
const RANGE_RULE: &str = "the range rule of the reference reports (medians; a difference counts only where the min-max ranges of the two cells do not overlap, else it is within noise)";

/// The change the test found significant.
fn by_test(c: &Comparison) -> Option<Change> {
    match c.verdict {
        Verdict::Significant { change } => Some(change),
        Verdict::WithinNoise => None,
    }
}

/// The change whose ranges are apart.
fn by_ranges(r: &RangeRule) -> Option<Change> {
    match r.verdict {
        RangeVerdict::Apart { change } => Some(change),
        RangeVerdict::Overlap => None,
    }
}

/// "apart: faster", "overlap": the range rule's verdict for a table cell.
pub fn ranges_cell(r: &RangeRule) -> String {
    match r.verdict {
        RangeVerdict::Apart { change } => format!("apart: {change}"),
        RangeVerdict::Overlap => "overlap".to_string(),
    }
}

/// Why a within-noise verdict stands beside a ratio interval that excludes 1, short enough for
/// a table cell ("3+3 reps cannot reach p < 0.05"); `p_shown` leaves out a p the cell already
/// shows. `None` when the verdict and the interval agree.
pub fn noise_note(c: &Comparison, p_shown: bool) -> Option<String> {
    Some(
        match c.disagreement(DEFAULT_ALPHA, DEFAULT_NOISE_THRESHOLD)? {
            Disagreement::CannotReach {
                n_baseline,
                n_candidate,
                alpha,
                ..
            } => format!("{n_baseline}+{n_candidate} reps cannot reach p < {alpha}"),
            Disagreement::NotSignificant { alpha, .. } if p_shown => format!("not below {alpha}"),
            Disagreement::NotSignificant { p, alpha, .. } => {
                format!("p = {p:.3}, not below {alpha}")
            }
            Disagreement::WithinThreshold { threshold, .. } => {
                format!("change within {}%", threshold * 100.0)
            }
        },
    )
}

/// Wins and losses of a group of pairs by one rule.
struct Tally {
    n: usize,
    faster: usize,
    slower: usize,
    lower_p99: usize,
    higher_p99: usize,
    both: usize,
}

impl Tally {
    fn of(
        pairs: &[&Pair<'_>],
        throughput: impl Fn(&Pair<'_>) -> Option<Change>,
        p99: impl Fn(&Pair<'_>) -> Option<Change>,
    ) -> Tally {
        let count = |f: &dyn Fn(&Pair<'_>) -> bool| pairs.iter().filter(|p| f(p)).count();
        let faster = |p: &Pair<'_>| throughput(p) == Some(Change::Faster);
        let lower_p99 = |p: &Pair<'_>| p99(p) == Some(Change::Faster);
        Tally {
            n: pairs.len(),
            faster: count(&faster),
            slower: count(&|p| throughput(p) == Some(Change::Slower)),
            lower_p99: count(&lower_p99),
            higher_p99: count(&|p| p99(p) == Some(Change::Slower)),
            both: count(&|p| faster(p) && lower_p99(p)),
        }
    }

    /// "significantly higher median throughput in 1 and lower in 0 (1 within noise); ...".
    fn sentence(&self, adverb: &str) -> String {
        format!(
            "{adverb}higher median throughput in {} and lower in {} ({} within noise); {adverb}lower median p99 in {} and higher in {} ({} within noise); it won both in {}",
            self.faster,
            self.slower,
            self.n - self.faster - self.slower,
            self.lower_p99,
            self.higher_p99,
            self.n - self.lower_p99 - self.higher_p99,
            self.both
        )
    }
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
    let mut out: Vec<String> = groups
        .iter()
        .map(|(candidate, reference, group)| group_paragraph(candidate, reference, group))
        .collect();
    out.push(extremes(pairs));
    if let Some(reps) = repetitions
        && min_two_sided_p(reps as usize, reps as usize) >= DEFAULT_ALPHA
    {
        out.push(too_few(reps));
    }
    out.push("Ratios are candidate over reference of independently aggregated medians: a throughput ratio above 1 and a p99 ratio below 1 favour the candidate.".to_string());
    out
}

/// One candidate against one reference over every shape they share.
fn group_paragraph(candidate: &str, reference: &str, group: &[&Pair<'_>]) -> String {
    let n = group.len();
    let lead = format!(
        "{candidate} against {reference} ({} {} against {}): of {n} same-shape comparison{}",
        group[0].candidate.language(),
        group[0].candidate.config.stack,
        group[0].reference.config.stack,
        if n == 1 { "" } else { "s" },
    );
    let undecidable: Vec<&Pair<'_>> = group.iter().copied().filter(|p| p.undecidable()).collect();
    let ranges = Tally::of(
        &undecidable,
        |p| by_ranges(&p.throughput_ranges),
        |p| by_ranges(&p.p99_ranges),
    );
    if undecidable.len() == n {
        return format!(
            "{lead}, by {RANGE_RULE}, {candidate} had {}. The Mann-Whitney test cannot decide any of them with these repetitions.",
            ranges.sentence("")
        );
    }
    let test = Tally::of(group, |p| by_test(&p.throughput), |p| by_test(&p.p99));
    let mut text = format!(
        "{lead}, {candidate} had {}.",
        test.sentence("significantly ")
    );
    if !undecidable.is_empty() {
        let _ = write!(
            text,
            " {} of them had too few good repetitions for the test to decide; of those, by {RANGE_RULE}, {candidate} had {}.",
            undecidable.len(),
            ranges.sentence("")
        );
    }
    text
}

/// "rust-quic against rust-grpc on unary c4 closed".
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

/// Up to three pairs, `describe`d, joined.
fn list(pairs: &[&Pair<'_>], describe: &impl Fn(&Pair<'_>) -> String) -> String {
    pairs
        .iter()
        .take(3)
        .map(|p| describe(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pairs whose throughput changed `change`-wards by `rule`, largest change first.
fn largest<'p, 'a>(
    pairs: impl Iterator<Item = &'p Pair<'a>>,
    rule: impl Fn(&Pair<'_>) -> Option<Change>,
    change: Change,
) -> Vec<&'p Pair<'a>> {
    let mut found: Vec<&Pair<'_>> = pairs.filter(|p| rule(p) == Some(change)).collect();
    found.sort_by(|a, b| match change {
        Change::Slower => a.throughput.ratio.total_cmp(&b.throughput.ratio),
        _ => b.throughput.ratio.total_cmp(&a.throughput.ratio),
    });
    found
}

/// The largest significant gains and regressions in throughput, with their ratios; where the
/// test cannot decide, the largest by the range rule.
fn extremes(pairs: &[Pair<'_>]) -> String {
    let test = |p: &Pair<'_>| by_test(&p.throughput);
    let gains = largest(pairs.iter(), test, Change::Faster);
    let losses = largest(pairs.iter(), test, Change::Slower);
    let significant = |p: &Pair<'_>| {
        format!(
            "{} at {:.2}x (p = {:.3})",
            label(p),
            p.throughput.ratio,
            p.throughput.mann_whitney.p
        )
    };
    let mut text = gains_and_losses(
        &gains,
        &losses,
        significant,
        [
            "no throughput gain is significant",
            "no throughput regression is significant",
        ],
    );
    // A sentence of its own: its first letter is a capital.
    text.replace_range(..1, &text[..1].to_uppercase());
    if gains.is_empty() && losses.is_empty() {
        text.push_str(&widest(pairs));
    }
    text.push_str(&range_extremes(pairs));
    text
}

/// " The widest ratio, within noise, was ... at 3.79x: the interval of the ratio 2.86-4.07
/// excludes 1, but ..." (the reason whenever the interval excludes 1).
fn widest(pairs: &[Pair<'_>]) -> String {
    let Some(p) = pairs
        .iter()
        .max_by(|a, b| (a.throughput.ratio.ln().abs()).total_cmp(&b.throughput.ratio.ln().abs()))
    else {
        return String::new();
    };
    let t = &p.throughput;
    let why = match t.disagreement(DEFAULT_ALPHA, DEFAULT_NOISE_THRESHOLD) {
        Some(d) => format!(": {d}"),
        None => format!(
            " (interval of the ratio {:.2}-{:.2})",
            t.ratio_interval.lo, t.ratio_interval.hi
        ),
    };
    format!(
        " The widest ratio, within noise, was {} at {:.2}x{why}.",
        label(p),
        t.ratio
    )
}

/// " By the range rule, the largest throughput gains were ..." over the pairs the test cannot
/// decide; empty when there are none.
fn range_extremes(pairs: &[Pair<'_>]) -> String {
    let undecidable = || pairs.iter().filter(|p| p.undecidable());
    if undecidable().next().is_none() {
        return String::new();
    }
    let rule = |p: &Pair<'_>| by_ranges(&p.throughput_ranges);
    let gains = largest(undecidable(), rule, Change::Faster);
    let losses = largest(undecidable(), rule, Change::Slower);
    let apart = |p: &Pair<'_>| {
        let r = &p.throughput_ranges;
        format!(
            "{} at {:.2}x (ops/s {:.1}-{:.1} against {:.1}-{:.1})",
            label(p),
            p.throughput.ratio,
            r.candidate_range.0,
            r.candidate_range.1,
            r.baseline_range.0,
            r.baseline_range.1
        )
    };
    format!(
        " By the range rule, {}",
        gains_and_losses(
            &gains,
            &losses,
            apart,
            [
                "no throughput gain has its range apart",
                "no throughput regression has its range apart",
            ],
        )
    )
}

/// "the largest throughput gains were A, B; the largest regressions were C.", each list up to
/// three pairs `describe`d, with `none` said for an empty one.
fn gains_and_losses(
    gains: &[&Pair<'_>],
    losses: &[&Pair<'_>],
    describe: impl Fn(&Pair<'_>) -> String,
    none: [&str; 2],
) -> String {
    let gains = if gains.is_empty() {
        none[0].to_string()
    } else {
        format!(
            "the largest throughput gains were {}",
            list(gains, &describe)
        )
    };
    let losses = if losses.is_empty() {
        none[1].to_string()
    } else {
        format!("the largest regressions were {}", list(losses, &describe))
    };
    format!("{gains}; {losses}.")
}

/// What `reps` repetitions cannot show, and what the range rule's counts are worth instead.
fn too_few(reps: u32) -> String {
    let min_p = min_two_sided_p(reps as usize, reps as usize);
    let worth = if min_p >= 1.0 {
        "with one repetition any two different values are apart, so the range rule says nothing either".to_string()
    } else {
        format!(
            "values drawn from one and the same distribution have their ranges apart by chance with probability {min_p:.3} at {reps} per side, so a win by that rule is a result at that level, not at 0.05"
        )
    };
    format!(
        "With {reps} repetition(s) per configuration no difference can reach significance: a two-sided Mann-Whitney test at alpha 0.05 needs at least 4 per side (with {reps}, the smallest possible p is {min_p:.3}), and 5 leave room for one stray repetition. The counts above therefore use {RANGE_RULE}; {worth}. The ratios in the tables are descriptive."
    )
}
