//! What the artifacts lacked or no longer say. Each becomes a line under "Notes" in
//! `report.md`, and the binary prints it as a warning: a report never degrades silently.

use crate::aggregate::Aggregates;
use rpcarena_model::campaign::Campaign;
use rpcarena_model::record::Manifest;

/// The notes of a report, in a fixed order.
pub(crate) fn notes(
    manifest: &Manifest,
    campaign: &Result<Campaign, String>,
    aggregates: &Aggregates,
    baseline: &str,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Err(e) = campaign {
        notes.push(format!(
            "The campaign text kept in manifest.json no longer parses ({}), so rows follow the \
             sorted configuration keys, the baseline is the first sample's cell `{baseline}`, and \
             the workload, timing and repetition lines are left out.",
            e.trim().replace('\n', "; ")
        ));
    }
    if let Some(check) = &manifest.network.setup_check {
        notes.push(sentence(check));
    }
    let good: usize = aggregates.rows.iter().map(|r| r.ok).sum();
    let without: usize = aggregates.rows.iter().map(|r| r.without_process).sum();
    if without > 0 {
        notes.push(format!(
            "{without} of {good} good samples have no /proc readings (the sampler failed): their \
             CPU and memory are left out of the medians, and a configuration without any shows \
             n/a."
        ));
    }
    let unreadable = &aggregates.unreadable;
    if let Some((sample, why)) = &unreadable.first {
        notes.push(format!(
            "{} samples recorded as ok have a latency histogram that cannot be read (the first, \
             {sample}: {why}); they are counted as failed.",
            unreadable.count
        ));
    }
    notes
}

/// A run whose manifest has no end time did not finish (the controller was killed, or still
/// runs): the report says so, and its counts come from `samples.jsonl`.
pub(crate) fn incomplete(manifest: &Manifest) -> Option<String> {
    manifest.finished_at.is_none().then(|| {
        let s = &manifest.samples;
        format!(
            "This run is incomplete: manifest.json has no end time (the controller was killed, \
             or is still running). {} of {} planned samples are in samples.jsonl ({} ok, {} \
             failed); the counts here come from samples.jsonl, and the manifest is not sealed.",
            s.ok + s.failed,
            s.planned,
            s.ok,
            s.failed
        )
    })
}

/// A torn last line of `samples.jsonl`, if reading found one.
pub(crate) fn torn(read: &crate::SamplesRead) -> Option<String> {
    read.torn_last_line.map(|(line, bytes)| {
        format!(
            "samples.jsonl ends with a torn line (line {line}, {bytes} bytes without a newline: \
             the run stopped while writing it, e.g. on a full disk); it is skipped and every \
             record before it is reported."
        )
    })
}

/// `text` with a capital first letter and a full stop.
fn sentence(text: &str) -> String {
    let mut chars = text.trim().chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}
