//! `rpcarena compare A B`: two runs' configurations side by side, as benchstat shows two sets
//! of benchmark results. Per configuration and metric: the old and new median with an interval
//! (the 95% interval of the median with at least 6 samples, else min-max), the change in
//! percent, the Mann-Whitney p-value, and `~` in place of the change when the statistics do not
//! call it significant; then the geometric mean over the configurations both runs measured.
//!
//! Runs of different workloads are refused unless the caller forces it: a comparison of
//! different work would read as a change of speed. Pure: the caller reads the directories.

use crate::aggregate::{Aggregates, Row, SampleFigures, fnv1a};
use rpcarena_model::campaign::Campaign;
use rpcarena_model::record::Manifest;
use rpcarena_stats::{
    CompareOptions, Comparison, DEFAULT_CONFIDENCE, MedianInterval, MetricKind, Summary, Verdict,
    compare, median_interval,
};
use serde::Serialize;
use std::fmt::Write;

/// A metric `compare` can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Operations per second.
    Ops,
    /// Request messages per second.
    Requests,
    /// Response messages per second.
    Responses,
    /// Median latency.
    P50,
    /// p99 latency.
    P99,
    /// p99.9 latency.
    P999,
    /// Client CPU per operation.
    ClientCpu,
    /// Server CPU per operation.
    ServerCpu,
    /// Client peak RSS.
    ClientRss,
    /// Server peak RSS.
    ServerRss,
    /// rpc-bench's time/op: window over operations (exchanges for pingpong).
    TimeOp,
    /// Payload MB/s, both directions.
    MbS,
    /// Bytes allocated per operation, client and server together.
    BOp,
    /// Heap allocations per operation, client and server together.
    AllocsOp,
}

impl Metric {
    /// Every metric, with its command-line name.
    pub const ALL: [(Metric, &'static str); 14] = [
        (Metric::Ops, "ops"),
        (Metric::Requests, "requests"),
        (Metric::Responses, "responses"),
        (Metric::P50, "p50"),
        (Metric::P99, "p99"),
        (Metric::P999, "p999"),
        (Metric::ClientCpu, "client-cpu"),
        (Metric::ServerCpu, "server-cpu"),
        (Metric::ClientRss, "client-rss"),
        (Metric::ServerRss, "server-rss"),
        (Metric::TimeOp, "time-op"),
        (Metric::MbS, "mb-s"),
        (Metric::BOp, "b-op"),
        (Metric::AllocsOp, "allocs-op"),
    ];

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Result<Metric, String> {
        Metric::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(m, _)| *m)
            .ok_or_else(|| {
                format!(
                    "unknown metric `{name}`; use one of {}",
                    Metric::ALL.map(|(_, n)| n).join(", ")
                )
            })
    }

    /// Heading with unit.
    pub fn heading(self) -> &'static str {
        match self {
            Metric::Ops => "ops/s",
            Metric::Requests => "request msg/s",
            Metric::Responses => "response msg/s",
            Metric::P50 => "p50 us",
            Metric::P99 => "p99 us",
            Metric::P999 => "p99.9 us",
            Metric::ClientCpu => "client CPU us/op",
            Metric::ServerCpu => "server CPU us/op",
            Metric::ClientRss => "client peak RSS MiB",
            Metric::ServerRss => "server peak RSS MiB",
            Metric::TimeOp => "time/op ns",
            Metric::MbS => "MB/s",
            Metric::BOp => "B/op (client + server)",
            Metric::AllocsOp => "allocs/op (client + server)",
        }
    }

    fn kind(self) -> MetricKind {
        match self {
            Metric::Ops | Metric::Requests | Metric::Responses | Metric::MbS => MetricKind::Rate,
            Metric::ClientRss | Metric::ServerRss | Metric::BOp | Metric::AllocsOp => {
                MetricKind::Other
            }
            _ => MetricKind::Duration,
        }
    }

    fn value(self, s: &SampleFigures) -> Option<f64> {
        match self {
            Metric::Ops => Some(s.ops_per_s),
            Metric::Requests => Some(s.requests_per_s),
            Metric::Responses => Some(s.responses_per_s),
            Metric::P50 => Some(s.p50_us),
            Metric::P99 => Some(s.p99_us),
            Metric::P999 => Some(s.p999_us),
            Metric::ClientCpu => s.client_cpu_us_per_op,
            Metric::ServerCpu => s.server_cpu_us_per_op,
            Metric::ClientRss => s.client_rss_mib,
            Metric::ServerRss => s.server_rss_mib,
            Metric::TimeOp => s.go.map(|g| g.ns_per_op),
            Metric::MbS => s.go.map(|g| g.mb_per_s),
            Metric::BOp => s.go.and_then(|g| g.bytes_per_op()),
            Metric::AllocsOp => s.go.and_then(|g| g.allocs_per_op()),
        }
    }
}

/// One side of a comparison: its manifest and aggregates.
pub struct Run<'a> {
    /// Where it came from, for messages.
    pub name: &'a str,
    /// Its manifest.
    pub manifest: &'a Manifest,
    /// Its aggregates.
    pub aggregates: &'a Aggregates,
}

/// A median with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// Median.
    pub median: f64,
    /// Interval low end.
    pub lo: f64,
    /// Interval high end.
    pub hi: f64,
    /// Whether the interval is the 95% interval of the median (else min-max).
    pub confidence_interval: bool,
    /// Samples.
    pub n: usize,
}

/// One configuration and metric.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// Configuration key.
    pub key: String,
    /// Old run.
    pub old: Estimate,
    /// New run.
    pub new: Estimate,
    /// `new / old - 1`, percent.
    pub delta_pct: f64,
    /// The statistics behind the verdict.
    pub comparison: Comparison,
    /// Whether the change is significant.
    pub significant: bool,
}

/// One metric over every configuration both runs measured.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// The metric.
    pub metric: Metric,
    /// Lines in the old run's order.
    pub lines: Vec<Line>,
    /// Geometric mean of the old and new medians, and its change in percent.
    pub geomean: Option<(f64, f64, f64)>,
}

/// Everything `compare` shows.
#[derive(Debug, Clone, Serialize)]
pub struct RunComparison {
    /// Differences of workload, timing or network (empty when the runs are comparable).
    pub differences: Vec<String>,
    /// Configurations only the old run has.
    pub only_old: Vec<String>,
    /// Configurations only the new run has.
    pub only_new: Vec<String>,
    /// One table per metric.
    pub tables: Vec<Table>,
}

/// Why two runs measure different work, one sentence each (empty: same work).
pub fn workload_differences(old: &Manifest, new: &Manifest) -> Vec<String> {
    let parse = |m: &Manifest| Campaign::parse(&m.campaign.text, &m.campaign.file).ok();
    let mut out = Vec::new();
    match (parse(old), parse(new)) {
        (Some(a), Some(b)) => {
            if a.workload != b.workload {
                out.push("the campaigns' [workload] tables differ".to_string());
            }
            if a.timing != b.timing {
                out.push(
                    "the campaigns' [timing] tables differ (warmup, window or drain)".to_string(),
                );
            }
        }
        _ => out.push(
            "a campaign text kept in manifest.json no longer parses, so the workloads cannot be checked".to_string(),
        ),
    }
    let network = |m: &Manifest| {
        let profile = m.network.topology.as_ref().and_then(|t| t.profile.clone());
        (m.network.backend, profile)
    };
    if network(old) != network(new) {
        out.push("the networks differ (backend or link profile)".to_string());
    }
    out
}

fn estimate(values: &[f64]) -> Option<Estimate> {
    let s = Summary::of(values).ok()?;
    let interval = median_interval(values, DEFAULT_CONFIDENCE).ok();
    let (lo, hi, ci) = match interval {
        Some(MedianInterval::Available { lo, hi, .. }) => (lo, hi, true),
        _ => (s.min, s.max, false),
    };
    Some(Estimate {
        median: s.median,
        lo,
        hi,
        confidence_interval: ci,
        n: values.len(),
    })
}

fn values(row: &Row, metric: Metric) -> Vec<f64> {
    row.samples.iter().filter_map(|s| metric.value(s)).collect()
}

/// Compares `new` with `old` on `metrics`. `seed` seeds the bootstrap intervals.
pub fn compare_runs(old: &Run<'_>, new: &Run<'_>, metrics: &[Metric], seed: u64) -> RunComparison {
    let differences = workload_differences(old.manifest, new.manifest);
    let find = |rows: &'_ [Row], key: &str| -> Option<usize> {
        rows.iter()
            .position(|r| r.config.key == key && r.metrics.is_some())
    };
    let old_rows = &old.aggregates.rows;
    let new_rows = &new.aggregates.rows;
    let only_old = old_rows
        .iter()
        .filter(|r| find(new_rows, &r.config.key).is_none())
        .map(|r| r.config.key.clone())
        .collect();
    let only_new = new_rows
        .iter()
        .filter(|r| find(old_rows, &r.config.key).is_none())
        .map(|r| r.config.key.clone())
        .collect();
    let mut tables = Vec::new();
    for &metric in metrics {
        let mut lines = Vec::new();
        for a in old_rows.iter().filter(|r| r.metrics.is_some()) {
            let Some(b) = find(new_rows, &a.config.key).map(|i| &new_rows[i]) else {
                continue;
            };
            let (va, vb) = (values(a, metric), values(b, metric));
            let (Some(ea), Some(eb)) = (estimate(&va), estimate(&vb)) else {
                continue;
            };
            let options = CompareOptions::new(metric.kind(), seed ^ fnv1a(&a.config.key));
            let Ok(comparison) = compare(&va, &vb, &options) else {
                continue;
            };
            lines.push(Line {
                key: a.config.key.clone(),
                old: ea,
                new: eb,
                delta_pct: (eb.median / ea.median - 1.0) * 100.0,
                significant: comparison.verdict != Verdict::WithinNoise,
                comparison,
            });
        }
        let geomean = geomean(&lines);
        tables.push(Table {
            metric,
            lines,
            geomean,
        });
    }
    RunComparison {
        differences,
        only_old,
        only_new,
        tables,
    }
}

fn geomean(lines: &[Line]) -> Option<(f64, f64, f64)> {
    let positive: Vec<&Line> = lines
        .iter()
        .filter(|l| l.old.median > 0.0 && l.new.median > 0.0)
        .collect();
    if positive.is_empty() {
        return None;
    }
    let n = positive.len() as f64;
    let g = |f: fn(&Line) -> f64| (positive.iter().map(|l| f(l).ln()).sum::<f64>() / n).exp();
    let (a, b) = (g(|l| l.old.median), g(|l| l.new.median));
    Some((a, b, (b / a - 1.0) * 100.0))
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn estimate_text(e: &Estimate) -> String {
    format!(
        "{} [{} {}] n={}",
        number(e.median),
        number(e.lo),
        number(e.hi),
        e.n
    )
}

/// The comparison as benchstat-style text.
pub fn render_text(c: &RunComparison, old: &str, new: &str) -> String {
    let mut out = String::new();
    for table in &c.tables {
        let mut rows = vec![[
            table.metric.heading().to_string(),
            old.to_string(),
            new.to_string(),
            "delta".to_string(),
            "p".to_string(),
        ]];
        for l in &table.lines {
            let delta = if l.significant {
                format!("{:+.2}%", l.delta_pct)
            } else {
                "~".to_string()
            };
            rows.push([
                l.key.clone(),
                estimate_text(&l.old),
                estimate_text(&l.new),
                delta,
                format!("p={:.3}", l.comparison.mann_whitney.p),
            ]);
        }
        if let Some((a, b, d)) = table.geomean {
            rows.push([
                "geomean".to_string(),
                number(a),
                number(b),
                format!("{d:+.2}%"),
                String::new(),
            ]);
        }
        let widths: Vec<usize> = (0..5)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let mut line = String::new();
            for (i, cell) in r.iter().enumerate() {
                let _ = write!(line, "{cell:<w$}  ", w = widths[i]);
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out.push('\n');
    }
    out.push_str("Intervals: 95% confidence interval of the median with at least 6 samples, else min-max. `~`: not significant (two-sided Mann-Whitney p >= 0.05, or a change within 1%).\n");
    for key in &c.only_old {
        let _ = writeln!(out, "only in {old}: {key}");
    }
    for key in &c.only_new {
        let _ = writeln!(out, "only in {new}: {key}");
    }
    out
}
