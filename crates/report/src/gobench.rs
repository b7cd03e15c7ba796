//! The report's table in `go test -bench -benchmem`'s shape (cockroachdb/rpc-bench, compared
//! with benchstat): time/op, MB/s, B/op and allocs/op of every configuration that has them. The
//! figures come from `rpcarena_model::gocolumns`, one sample at a time; this module only lays
//! out their medians.

use crate::aggregate::{Row, Stat};
use std::fmt::Write as _;

/// What the table says about its columns, above it.
const INTRO: &str = "### Per operation, as `go test -bench -benchmem` reports it

time/op is the window divided by the completed operations (by the exchanges for `pingpong`, as rpc-bench's `Stream` benchmarks count them): the inverse of throughput, not a latency. ±% is the largest distance of a repetition from the median, in percent of the median (benchstat's ± after it drops outliers; rpcarena drops none). MB/s is payload bytes both ways over the window (10^6 bytes). B/op and allocs/op are the client process's over its window, the server process's between its `WINDOW START` and `WINDOW END` answers, and their sum (rpc-bench runs client and server in one process and reports only the sum); `-` where a peer does not count them (its `capabilities` `allocations`). Medians over repetitions.
";

/// Writes the table when a peer of the run counts allocations (a run of peers that count
/// none keeps its report as it was: time/op and MB/s are ops/s and payload rates restated).
pub(crate) fn write(out: &mut String, rows: &[Row]) {
    let counted = rows.iter().any(|r| {
        r.metrics
            .as_ref()
            .and_then(|m| m.go.as_ref())
            .is_some_and(|g| {
                g.bytes_per_op
                    .iter()
                    .chain(&g.allocs_per_op)
                    .any(Option::is_some)
            })
    });
    let lines: Vec<String> = rows.iter().filter_map(line).collect();
    if !counted || lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "{INTRO}");
    let _ = writeln!(
        out,
        "| name | time/op | ±% | MB/s | client B/op | server B/op | B/op | client allocs/op | server allocs/op | allocs/op |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    out.push('\n');
}

/// A row's line, when it has the columns.
fn line(row: &Row) -> Option<String> {
    let go = row.metrics.as_ref()?.go.as_ref()?;
    let count = |s: &Option<Stat>| s.map_or("-".to_string(), |s| format!("{:.0}", s.median));
    let [cb, sb, b] = &go.bytes_per_op;
    let [ca, sa, a] = &go.allocs_per_op;
    Some(format!(
        "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} |",
        name(row),
        time(go.ns_per_op.median),
        plus_minus(&go.ns_per_op),
        go.mb_per_s.median,
        count(cb),
        count(sb),
        count(b),
        count(ca),
        count(sa),
        count(a)
    ))
}

/// benchstat's name: `cell/shape/size/c`, the load model when it is not the closed loop.
fn name(row: &Row) -> String {
    let c = &row.config;
    let mut name = format!(
        "{}/{}/{}B/c{}",
        c.cell, c.shape, c.request_size, c.concurrency
    );
    if c.response_size != c.request_size {
        name.push_str(&format!("-{}B", c.response_size));
    }
    if c.load.to_string() != "closed" {
        name.push_str(&format!("/{}", c.load));
    }
    name
}

/// Nanoseconds as `go test` prints them, in the unit that keeps three or more digits.
pub(crate) fn time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// The largest distance of a repetition from the median, in percent of the median.
fn plus_minus(stat: &Stat) -> String {
    if stat.median <= 0.0 {
        return "-".into();
    }
    let far = (stat.max - stat.median).max(stat.median - stat.min);
    format!("{:.0}%", 100.0 * far / stat.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_go_test_units() {
        assert_eq!(time(812.4), "812ns");
        assert_eq!(time(58_640.0), "58.64µs");
        assert_eq!(time(2_500_000.0), "2.50ms");
    }

    #[test]
    fn plus_minus_is_the_farther_side() {
        let stat = Stat {
            median: 100.0,
            min: 97.0,
            max: 110.0,
            spread: None,
            interval: None,
        };
        assert_eq!(plus_minus(&stat), "10%");
    }
}
