//! Per-configuration aggregates over repetitions: median, min and max of every reported metric.
//! Failed samples are counted and left out of the figures.

use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_stats::Summary;

/// Median, min and max of one metric over a configuration's good samples.
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
}

impl Stat {
    fn of(values: &[f64]) -> Option<Stat> {
        let s = Summary::of(values).ok()?;
        Some(Stat {
            median: s.median,
            min: s.min,
            max: s.max,
            spread: s.spread,
        })
    }
}

/// Everything aggregated for one configuration.
#[derive(Debug, Clone, PartialEq)]
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
}

/// Groups records by configuration key in `order` (keys not in `order` follow, sorted).
pub fn aggregate(records: &[SampleRecord], order: &[String]) -> Vec<Row> {
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
    keys.iter()
        .filter_map(|key| {
            let group: Vec<&SampleRecord> =
                records.iter().filter(|r| &r.config.key == key).collect();
            let first = group.first()?;
            let good: Vec<&SampleRecord> = group
                .iter()
                .copied()
                .filter(|r| r.status == SampleStatus::Ok && r.metrics.is_some())
                .collect();
            Some(Row {
                config: first.config.clone(),
                client_language: first.client_language.clone(),
                server_language: first.server_language.clone(),
                ok: good.len(),
                failed: group.len() - good.len(),
                metrics: row_metrics(&good),
            })
        })
        .collect()
}

fn row_metrics(good: &[&SampleRecord]) -> Option<RowMetrics> {
    let pick = |f: &dyn Fn(&SampleRecord) -> Option<f64>| -> Option<Stat> {
        let values: Vec<f64> = good.iter().filter_map(|r| f(r)).collect();
        Stat::of(&values)
    };
    let m = |r: &SampleRecord| r.metrics;
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
    })
}

/// The row of `baseline_cell` with the same workload as `row` (same shape, concurrency, sizes,
/// load), if measured.
pub fn baseline_of<'a>(rows: &'a [Row], row: &Row, baseline_cell: &str) -> Option<&'a Row> {
    rows.iter().find(|b| {
        b.config.cell == baseline_cell
            && b.config.shape == row.config.shape
            && b.config.concurrency == row.config.concurrency
            && b.config.request_size == row.config.request_size
            && b.config.response_size == row.config.response_size
            && b.config.messages_per_stream == row.config.messages_per_stream
            && b.config.load == row.config.load
    })
}
