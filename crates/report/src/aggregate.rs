//! Per-configuration aggregates over repetitions, and comparisons with the baseline cell.
//!
//! Failed samples are counted and left out of every figure. Values enter the statistics in
//! round order, so the seeded bootstrap gives the same interval every time the report is made.

use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_stats::{
    CompareOptions, Comparison, DEFAULT_CONFIDENCE, MedianInterval, MetricKind, Summary, compare,
    median_interval,
};
use std::collections::BTreeMap;

/// Median, min, max, spread and (with enough repetitions) a confidence interval of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// (max - min) / median, when the median is not zero.
    pub spread: Option<f64>,
    /// Distribution-free 95% interval of the median, when n >= 6.
    pub interval: Option<(f64, f64)>,
}

impl Stat {
    fn of(values: &[f64]) -> Option<Stat> {
        let s = Summary::of(values).ok()?;
        let interval = median_interval(values, DEFAULT_CONFIDENCE)
            .ok()
            .and_then(|i| match i {
                MedianInterval::Available { lo, hi, .. } => Some((lo, hi)),
                MedianInterval::TooFew { .. } => None,
            });
        Some(Stat {
            median: s.median,
            min: s.min,
            max: s.max,
            spread: s.spread,
            interval,
        })
    }
}

/// Everything aggregated for one configuration.
#[derive(Debug, Clone)]
pub struct Row {
    /// The configuration.
    pub config: SampleConfig,
    /// Client peer language.
    pub client_language: String,
    /// Server peer language.
    pub server_language: String,
    /// Good samples.
    pub ok: usize,
    /// Failed samples.
    pub failed: usize,
    /// Metrics over good samples; `None` when there is none.
    pub metrics: Option<RowMetrics>,
    /// Noise flags over good samples: flag -> samples flagged.
    pub flags: BTreeMap<String, usize>,
    /// Against the baseline cell on the same workload (absent for the baseline itself).
    pub versus: Option<Versus>,
}

/// The aggregated metrics of a row. Latencies in microseconds, memory in MiB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowMetrics {
    /// Operations per second.
    pub ops_per_s: Stat,
    /// Request messages per second.
    pub requests_per_s: Stat,
    /// Response messages per second.
    pub responses_per_s: Stat,
    /// Median latency.
    pub p50_us: Stat,
    /// 99th percentile latency.
    pub p99_us: Stat,
    /// 99.9th percentile latency.
    pub p999_us: Stat,
    /// Client CPU per operation.
    pub client_cpu_us_per_op: Stat,
    /// Server CPU per operation.
    pub server_cpu_us_per_op: Stat,
    /// Client peak RSS.
    pub client_rss_mib: Stat,
    /// Server peak RSS.
    pub server_rss_mib: Stat,
    /// Connection set-up time (all connections, TLS included), milliseconds.
    pub connect_ms: Option<Stat>,
    /// Open model: median latency from the actual start.
    pub uncorrected_p50_us: Option<Stat>,
    /// Open model: p99 from the actual start.
    pub uncorrected_p99_us: Option<Stat>,
    /// Open model: p99 start lag.
    pub send_lag_p99_us: Option<Stat>,
    /// Open model: target rate.
    pub target_rate: Option<f64>,
    /// Send-saturation: messages received per second.
    pub received_per_s: Option<Stat>,
    /// Backpressure: depth reached.
    pub max_in_flight: Option<Stat>,
}

/// A row against the baseline row with the same workload.
#[derive(Debug, Clone)]
pub struct Versus {
    /// Throughput (higher is better).
    pub throughput: Comparison,
    /// p99 latency (lower is better).
    pub p99: Comparison,
}

/// Groups records by configuration key in `order` (keys not in `order` follow, sorted), and
/// compares every row with the row of `baseline_cell` on the same workload. `seed` seeds the
/// bootstrap (each comparison derives its own from the configuration key).
pub fn aggregate(
    records: &[SampleRecord],
    order: &[String],
    baseline_cell: &str,
    seed: u64,
) -> Vec<Row> {
    let mut keys: Vec<String> = order
        .iter()
        .filter(|k| records.iter().any(|r| &r.config.key == *k))
        .cloned()
        .collect();
    let mut extra: Vec<String> = records
        .iter()
        .map(|r| r.config.key.clone())
        .filter(|k| !keys.contains(k))
        .collect();
    extra.sort();
    extra.dedup();
    keys.extend(extra);
    let groups: Vec<Vec<&SampleRecord>> = keys
        .iter()
        .map(|key| {
            let mut group: Vec<&SampleRecord> =
                records.iter().filter(|r| &r.config.key == key).collect();
            group.sort_by_key(|r| (r.round, r.position));
            group
        })
        .collect();
    let mut rows: Vec<Row> = groups.iter().map(|g| row(g)).collect();
    for i in 0..rows.len() {
        if rows[i].config.cell == baseline_cell {
            continue;
        }
        let Some(b) = baseline_index(&rows, &rows[i], baseline_cell) else {
            continue;
        };
        let key_seed = seed ^ fnv1a(&rows[i].config.key);
        rows[i].versus = versus(&good(&groups[b]), &good(&groups[i]), key_seed);
    }
    rows
}

fn good<'a>(group: &[&'a SampleRecord]) -> Vec<&'a SampleRecord> {
    group
        .iter()
        .copied()
        .filter(|r| r.status == SampleStatus::Ok && r.metrics.is_some())
        .collect()
}

fn row(group: &[&SampleRecord]) -> Row {
    let first = group[0];
    let good = good(group);
    let mut flags = BTreeMap::new();
    for r in &good {
        for f in r.noise.iter().flat_map(|n| n.flags.iter()) {
            *flags.entry(f.clone()).or_insert(0) += 1;
        }
    }
    Row {
        config: first.config.clone(),
        client_language: first.client_language.clone(),
        server_language: first.server_language.clone(),
        ok: good.len(),
        failed: group.len() - good.len(),
        metrics: row_metrics(&good),
        flags,
        versus: None,
    }
}

fn values(good: &[&SampleRecord], f: impl Fn(&SampleRecord) -> Option<f64>) -> Vec<f64> {
    good.iter().filter_map(|r| f(r)).collect()
}

fn row_metrics(good: &[&SampleRecord]) -> Option<RowMetrics> {
    let pick = |f: &dyn Fn(&SampleRecord) -> Option<f64>| Stat::of(&values(good, f));
    let m = |r: &SampleRecord| r.metrics;
    let us = |ns: Option<u64>| ns.map(|v| v as f64 / 1e3);
    Some(RowMetrics {
        ops_per_s: pick(&|r| m(r).map(|m| m.ops_per_s))?,
        requests_per_s: pick(&|r| m(r).map(|m| m.requests_per_s))?,
        responses_per_s: pick(&|r| m(r).map(|m| m.responses_per_s))?,
        p50_us: pick(&|r| m(r).map(|m| m.p50_ns as f64 / 1e3))?,
        p99_us: pick(&|r| m(r).map(|m| m.p99_ns as f64 / 1e3))?,
        p999_us: pick(&|r| m(r).map(|m| m.p999_ns as f64 / 1e3))?,
        client_cpu_us_per_op: pick(&|r| r.client_process.map(|p| p.cpu_us_per_op))?,
        server_cpu_us_per_op: pick(&|r| r.server_process.map(|p| p.cpu_us_per_op))?,
        client_rss_mib: pick(&|r| r.client_process.map(|p| p.peak_rss_mib))?,
        server_rss_mib: pick(&|r| r.server_process.map(|p| p.peak_rss_mib))?,
        connect_ms: pick(&|r| {
            r.client
                .as_ref()
                .and_then(|c| c.connect_ns)
                .map(|ns| ns as f64 / 1e6)
        }),
        uncorrected_p50_us: pick(&|r| us(m(r).and_then(|m| m.uncorrected_p50_ns))),
        uncorrected_p99_us: pick(&|r| us(m(r).and_then(|m| m.uncorrected_p99_ns))),
        send_lag_p99_us: pick(&|r| us(m(r).and_then(|m| m.send_lag_p99_ns))),
        target_rate: match &good.first()?.config.load {
            LoadSpec::Open { rate, .. } => Some(*rate),
            _ => None,
        },
        received_per_s: pick(&|r| m(r).and_then(|m| m.received_per_s)),
        max_in_flight: pick(&|r| {
            r.client
                .as_ref()
                .and_then(|c| c.max_in_flight)
                .map(|v| v as f64)
        }),
    })
}

fn versus(baseline: &[&SampleRecord], candidate: &[&SampleRecord], seed: u64) -> Option<Versus> {
    let ops = |rs: &[&SampleRecord]| values(rs, |r| r.metrics.map(|m| m.ops_per_s));
    let p99 = |rs: &[&SampleRecord]| values(rs, |r| r.metrics.map(|m| m.p99_ns as f64));
    Some(Versus {
        throughput: compare(
            &ops(baseline),
            &ops(candidate),
            &CompareOptions::new(MetricKind::Rate, seed),
        )
        .ok()?,
        p99: compare(
            &p99(baseline),
            &p99(candidate),
            &CompareOptions::new(MetricKind::Duration, seed ^ 1),
        )
        .ok()?,
    })
}

fn baseline_index(rows: &[Row], row: &Row, baseline_cell: &str) -> Option<usize> {
    rows.iter().position(|b| {
        b.config.cell == baseline_cell
            && b.config.shape == row.config.shape
            && b.config.concurrency == row.config.concurrency
            && b.config.request_size == row.config.request_size
            && b.config.response_size == row.config.response_size
            && b.config.messages_per_stream == row.config.messages_per_stream
            && b.config.payload == row.config.payload
            && b.config.load == row.config.load
    })
}

/// FNV-1a: a stable hash, so that seeds derived from keys never change between builds.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
