//! Per-configuration aggregates over repetitions, and comparisons with the baseline cell.
//!
//! Records arrive one at a time ([`Aggregator::add`]), as `samples.jsonl` is read, and each is
//! reduced at once to what the report needs: its figures, recomputed by
//! `rpcarena_model::metrics` from the histograms and counts it holds, and its latency histogram
//! merged into its configuration's. Memory grows with configurations (and a few numbers per
//! sample), not with the size of the records. Failed samples are counted and left out of every
//! figure. Figures enter the statistics in round order, so the seeded bootstrap gives the same
//! interval every time the report is made.

use crate::transport::{TransportFigures, TransportSummary, summarize};
use hdrhistogram::Histogram;
use rpcarena_model::gocolumns::{self, GoColumns};
use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::metrics::{self, Detail, Measured};
use rpcarena_model::record::{Noise, SampleRecord, SampleStatus};
use rpcarena_protocol::histogram::new_latency_histogram;
use rpcarena_stats::{
    CompareOptions, Comparison, DEFAULT_CONFIDENCE, LatencySummary, MedianInterval, MetricKind,
    Summary, compare, median_interval,
};
use std::collections::{BTreeMap, HashMap};

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
    /// Every good sample's latency histogram merged (nanoseconds), for distributions.
    pub latency: Histogram<u64>,
    /// Good samples without /proc readings (their CPU and memory are left out).
    pub without_process: usize,
    /// Transport and emulator figures, medians over good samples that have them.
    pub transport: Option<TransportSummary>,
    /// Each good sample's own figures, in round order (for comparisons of other pairs than
    /// the baseline's, and for the HTML report's per-sample views).
    pub samples: Vec<SampleFigures>,
}

impl Row {
    /// The peers' language: `rust`, or `go -> rust` when client and server differ.
    pub fn language(&self) -> String {
        if self.client_language == self.server_language {
            self.client_language.clone()
        } else {
            format!("{} -> {}", self.client_language, self.server_language)
        }
    }
}

/// One good sample's figures that comparisons and the per-second charts use.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleFigures {
    /// Sample id.
    pub sample: String,
    /// Round and position in the round.
    pub order: (u32, u32),
    /// Operations per second.
    pub ops_per_s: f64,
    /// p99 latency, microseconds.
    pub p99_us: f64,
    /// Request messages per second.
    pub requests_per_s: f64,
    /// Response messages per second.
    pub responses_per_s: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// p99.9 latency, microseconds.
    pub p999_us: f64,
    /// Client CPU per operation, microseconds (absent without /proc readings).
    pub client_cpu_us_per_op: Option<f64>,
    /// Server CPU per operation, microseconds.
    pub server_cpu_us_per_op: Option<f64>,
    /// Client peak RSS, MiB.
    pub client_rss_mib: Option<f64>,
    /// Server peak RSS, MiB.
    pub server_rss_mib: Option<f64>,
    /// The admission window as run, seconds.
    pub window_s: f64,
    /// Per-second intervals of the window, as the client reported them (may be empty).
    pub intervals: Vec<IntervalPoint>,
    /// rpc-bench's columns of the sample.
    pub go: Option<GoColumns>,
}

/// One second of a sample's window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalPoint {
    /// Start of the interval from the window's start, seconds.
    pub offset_s: f64,
    /// Operations that started in it and completed.
    pub completed: u64,
    /// Their p99 latency, microseconds (absent when the histogram does not decode or is empty).
    pub p99_us: Option<f64>,
}

impl IntervalPoint {
    fn of(interval: &rpcarena_model::record::IntervalRecord) -> IntervalPoint {
        let p99_us = rpcarena_protocol::histogram::decode(&interval.histogram)
            .ok()
            .filter(|h| !h.is_empty())
            .map(|h| LatencySummary::percentiles_of(&h).p99_ns as f64 / 1e3);
        IntervalPoint {
            offset_s: interval.offset_ns as f64 / 1e9,
            completed: interval.completed,
            p99_us,
        }
    }
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
    /// Client CPU per operation (absent when no sample has /proc readings).
    pub client_cpu_us_per_op: Option<Stat>,
    /// Server CPU per operation.
    pub server_cpu_us_per_op: Option<Stat>,
    /// Most good samples counted less than one clock tick of client CPU, so the median is an
    /// upper bound ("one tick per completed operations"), not a measurement.
    pub client_cpu_below_resolution: bool,
    /// The same for the server.
    pub server_cpu_below_resolution: bool,
    /// Client peak RSS.
    pub client_rss_mib: Option<Stat>,
    /// Server peak RSS.
    pub server_rss_mib: Option<Stat>,
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
    /// rpc-bench's columns (`go test -bench -benchmem`), medians over repetitions.
    pub go: Option<GoStats>,
}

/// `go test -bench -benchmem`'s columns of a row: each a [`Stat`] over the repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoStats {
    /// Nanoseconds of window per operation (per exchange for pingpong).
    pub ns_per_op: Stat,
    /// Payload MB/s, both directions.
    pub mb_per_s: Stat,
    /// Client, server and summed bytes allocated per operation.
    pub bytes_per_op: [Option<Stat>; 3],
    /// Client, server and summed heap allocations per operation.
    pub allocs_per_op: [Option<Stat>; 3],
}

impl GoStats {
    fn of(good: &[Figures]) -> Option<GoStats> {
        let go = |f: fn(&GoColumns) -> Option<f64>| stat(good, |x| x.go.as_ref().and_then(f));
        Some(GoStats {
            ns_per_op: go(|g| Some(g.ns_per_op))?,
            mb_per_s: go(|g| Some(g.mb_per_s))?,
            bytes_per_op: [
                go(|g| g.client_bytes_per_op),
                go(|g| g.server_bytes_per_op),
                go(GoColumns::bytes_per_op),
            ],
            allocs_per_op: [
                go(|g| g.client_allocs_per_op),
                go(|g| g.server_allocs_per_op),
                go(GoColumns::allocs_per_op),
            ],
        })
    }
}

impl RowMetrics {
    /// Client CPU and server CPU per operation (3 decimals), client and server peak RSS (2),
    /// medians as the detail tables show them; "n/a" without /proc readings.
    pub fn process_medians(&self) -> [String; 4] {
        [
            median_or_na(self.client_cpu_us_per_op, 3),
            median_or_na(self.server_cpu_us_per_op, 3),
            median_or_na(self.client_rss_mib, 2),
            median_or_na(self.server_rss_mib, 2),
        ]
    }
}

/// The payload column of the report's tables: the sizes (one when request and response are the
/// same) and the payload kind, as `1024B zeros` or `256B/64B structured`. A campaign with several
/// sizes has one row per size, and the rows must say which is which.
///
/// A one-way command has no response, so its label has one size; a plaintext row (`tls = false`,
/// revision 1.3) says so here, beside every figure of the row: `1024B zeros, plaintext`. The
/// oRPC benchmarks' procedure (1.4) has no sizes (`dated procedure`), and replayed requests say
/// so too (`dated procedure, replay`): the client's share differs from the official client's.
pub fn payload_label(c: &SampleConfig) -> String {
    let mut label = if !c.payload.takes_sizes() {
        format!("{} procedure", c.payload)
    } else if c.request_size == c.response_size || c.shape.is_one_way() {
        format!("{}B {}", c.request_size, c.payload)
    } else {
        format!("{}B/{}B {}", c.request_size, c.response_size, c.payload)
    };
    if !c.tls {
        label.push_str(", plaintext");
    }
    if !c.client_mode.is_official() {
        label.push_str(&format!(", {}", c.client_mode));
    }
    label
}

/// The median with `digits` decimals, or "n/a" when there is no figure.
pub fn median_or_na(stat: Option<Stat>, digits: usize) -> String {
    stat.map_or("n/a".to_string(), |s| format!("{:.digits$}", s.median))
}

/// A row against the baseline row with the same workload.
#[derive(Debug, Clone)]
pub struct Versus {
    /// Throughput (higher is better).
    pub throughput: Comparison,
    /// p99 latency (lower is better).
    pub p99: Comparison,
}

/// One good sample reduced to what the report uses.
#[derive(Debug, Clone)]
struct Figures {
    order: (u32, u32),
    sample: String,
    window_s: f64,
    intervals: Vec<IntervalPoint>,
    ops_per_s: f64,
    requests_per_s: f64,
    responses_per_s: f64,
    p50_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    client_cpu_us_per_op: Option<f64>,
    server_cpu_us_per_op: Option<f64>,
    /// Less than one clock tick of CPU was counted: the figure is that bound.
    client_cpu_below: bool,
    server_cpu_below: bool,
    client_rss_mib: Option<f64>,
    server_rss_mib: Option<f64>,
    connect_ns: Option<u64>,
    uncorrected_p50_ns: Option<u64>,
    uncorrected_p99_ns: Option<u64>,
    send_lag_p99_ns: Option<u64>,
    received_per_s: Option<f64>,
    max_in_flight: Option<u64>,
    transport: TransportFigures,
    go: Option<GoColumns>,
}

impl Figures {
    fn of(record: &SampleRecord, measured: &Measured, completed: u64) -> Figures {
        let m = &measured.metrics;
        let cpu = |p: Option<rpcarena_model::record::ProcessStats>| {
            p.map(|p| metrics::cpu_per_op(p.cpu_us, completed))
        };
        let client = record.client.as_ref();
        Figures {
            order: (record.round, record.position),
            sample: record.sample.clone(),
            window_s: client.map_or(0.0, |c| c.window_ns as f64 / 1e9),
            intervals: client
                .map(|c| c.intervals.iter().map(IntervalPoint::of).collect())
                .unwrap_or_default(),
            ops_per_s: m.ops_per_s,
            requests_per_s: m.requests_per_s,
            responses_per_s: m.responses_per_s,
            p50_ns: m.p50_ns,
            p99_ns: m.p99_ns,
            p999_ns: m.p999_ns,
            client_cpu_us_per_op: cpu(record.client_process).map(|c| c.0),
            server_cpu_us_per_op: cpu(record.server_process).map(|c| c.0),
            client_cpu_below: cpu(record.client_process).is_some_and(|c| c.1),
            server_cpu_below: cpu(record.server_process).is_some_and(|c| c.1),
            client_rss_mib: record.client_process.map(|p| p.peak_rss_mib),
            server_rss_mib: record.server_process.map(|p| p.peak_rss_mib),
            connect_ns: client.and_then(|c| c.connect_ns),
            uncorrected_p50_ns: m.uncorrected_p50_ns,
            uncorrected_p99_ns: m.uncorrected_p99_ns,
            send_lag_p99_ns: m.send_lag_p99_ns,
            received_per_s: m.received_per_s,
            max_in_flight: client.and_then(|c| c.max_in_flight),
            transport: TransportFigures::of(record),
            go: gocolumns::of(record),
        }
    }
}

/// What one configuration's samples add up to while the records stream in.
struct Group {
    config: SampleConfig,
    client_language: String,
    server_language: String,
    first_order: (u32, u32),
    good: Vec<Figures>,
    failed: usize,
    flags: BTreeMap<String, usize>,
    latency: Histogram<u64>,
    without_process: usize,
}

/// A failed sample, for the report's table.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedSample {
    /// Sample id.
    pub sample: String,
    /// Configuration key.
    pub key: String,
    /// Why it failed.
    pub reason: String,
}

/// Noise controls and flags over every sample that recorded them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoiseSummary {
    /// The first such sample's controls (placement is the same for the whole run).
    pub first: Option<Noise>,
    /// Samples with noise records.
    pub samples: usize,
    /// Samples the load gate held back, and how long in all (ms).
    pub gated: usize,
    /// Total wait at the gate, milliseconds.
    pub gate_wait_ms: u64,
    /// Highest 1-minute load average at a sample's start.
    pub max_load: f64,
    /// Highest steal during a window, percent.
    pub max_steal_pct: f64,
    /// Flag -> samples flagged.
    pub flags: BTreeMap<String, usize>,
}

impl NoiseSummary {
    fn add(&mut self, noise: &Noise) {
        if self.first.is_none() {
            self.first = Some(noise.clone());
        }
        self.samples += 1;
        if noise.load_gate_wait_ms > 0 {
            self.gated += 1;
            self.gate_wait_ms += noise.load_gate_wait_ms;
        }
        self.max_load = self.max_load.max(noise.load_avg_1m);
        self.max_steal_pct = self.max_steal_pct.max(noise.steal_pct);
        for flag in &noise.flags {
            *self.flags.entry(flag.clone()).or_insert(0) += 1;
        }
    }
}

/// Samples whose record says ok but whose latency histogram does not decode: counted as failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unreadable {
    /// How many.
    pub count: usize,
    /// The first one's id and why.
    pub first: Option<(String, String)>,
}

/// Collects records one by one.
#[derive(Default)]
pub struct Aggregator {
    groups: Vec<Group>,
    index: HashMap<String, usize>,
    failures: Vec<FailedSample>,
    noise: NoiseSummary,
    unreadable: Unreadable,
    first_cell: Option<String>,
}

/// Everything aggregated, in report order.
pub struct Aggregates {
    /// One row per configuration.
    pub rows: Vec<Row>,
    /// Failed samples in file order.
    pub failures: Vec<FailedSample>,
    /// Noise over every sample.
    pub noise: NoiseSummary,
    /// Ok samples whose histogram could not be read.
    pub unreadable: Unreadable,
}

impl Aggregator {
    /// An empty aggregate.
    pub fn new() -> Aggregator {
        Aggregator::default()
    }

    /// The cell of the first record (the baseline when the campaign no longer parses).
    pub fn first_cell(&self) -> Option<&str> {
        self.first_cell.as_deref()
    }

    /// Adds one record (in file order).
    pub fn add(&mut self, record: &SampleRecord) {
        self.first_cell
            .get_or_insert_with(|| record.config.cell.clone());
        if let Some(noise) = &record.noise {
            self.noise.add(noise);
        }
        if record.status == SampleStatus::Failed {
            self.failures.push(FailedSample {
                sample: record.sample.clone(),
                key: record.config.key.clone(),
                reason: record.reason.clone().unwrap_or_else(|| "unknown".into()),
            });
        }
        let index = match self.index.get(&record.config.key) {
            Some(&i) => i,
            None => {
                self.index
                    .insert(record.config.key.clone(), self.groups.len());
                self.groups.push(Group {
                    config: record.config.clone(),
                    client_language: record.client_language.clone(),
                    server_language: record.server_language.clone(),
                    first_order: (record.round, record.position),
                    good: Vec::new(),
                    failed: 0,
                    flags: BTreeMap::new(),
                    latency: merged_histogram(),
                    without_process: 0,
                });
                self.groups.len() - 1
            }
        };
        let measured = match (&record.status, &record.client) {
            (SampleStatus::Ok, Some(client)) => match metrics::measure(client, Detail::Aggregate) {
                Ok(m) => Some((m, client.completed)),
                Err(e) => {
                    self.unreadable.count += 1;
                    self.unreadable
                        .first
                        .get_or_insert_with(|| (record.sample.clone(), e.to_string()));
                    None
                }
            },
            _ => None,
        };
        let group = &mut self.groups[index];
        // The row describes its earliest sample's peers, as the schedule ran them.
        if (record.round, record.position) < group.first_order {
            group.first_order = (record.round, record.position);
            group.config = record.config.clone();
            group.client_language = record.client_language.clone();
            group.server_language = record.server_language.clone();
        }
        let Some((measured, completed)) = measured else {
            group.failed += 1;
            return;
        };
        group.good.push(Figures::of(record, &measured, completed));
        if record.client_process.is_none() || record.server_process.is_none() {
            group.without_process += 1;
        }
        for flag in record.noise.iter().flat_map(|n| n.flags.iter()) {
            *group.flags.entry(flag.clone()).or_insert(0) += 1;
        }
        // The merged histogram grows to whatever range a peer's histograms cover, so adding
        // cannot fail.
        let _ = group.latency.add(&measured.latency);
    }

    /// Rows in `order` (keys not in `order` follow, sorted), each compared with the row of
    /// `baseline_cell` on the same workload. `seed` seeds the bootstrap (each comparison derives
    /// its own from the configuration key).
    pub fn finish(self, order: &[String], baseline_cell: &str, seed: u64) -> Aggregates {
        let mut groups = self.groups;
        let rank = |key: &str| order.iter().position(|k| k == key);
        groups.sort_by(|a, b| match (rank(&a.config.key), rank(&b.config.key)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.config.key.cmp(&b.config.key),
        });
        for group in &mut groups {
            group.good.sort_by_key(|f| f.order);
        }
        let mut rows: Vec<Row> = groups.iter().map(row).collect();
        for i in 0..rows.len() {
            if rows[i].config.cell == baseline_cell {
                continue;
            }
            let Some(b) = baseline_index(&rows, &rows[i], baseline_cell) else {
                continue;
            };
            let key_seed = seed ^ fnv1a(&rows[i].config.key);
            rows[i].versus = versus(&groups[b].good, &groups[i].good, key_seed);
        }
        Aggregates {
            rows,
            failures: self.failures,
            noise: self.noise,
            unreadable: self.unreadable,
        }
    }
}

/// An empty histogram with the protocol's precision that grows to any peer's range.
fn merged_histogram() -> Histogram<u64> {
    let mut histogram = new_latency_histogram();
    histogram.auto(true);
    histogram
}

fn row(group: &Group) -> Row {
    Row {
        config: group.config.clone(),
        client_language: group.client_language.clone(),
        server_language: group.server_language.clone(),
        ok: group.good.len(),
        failed: group.failed,
        metrics: row_metrics(&group.good, &group.config),
        flags: group.flags.clone(),
        versus: None,
        latency: group.latency.clone(),
        without_process: group.without_process,
        samples: group
            .good
            .iter()
            .map(|f| SampleFigures {
                sample: f.sample.clone(),
                order: f.order,
                ops_per_s: f.ops_per_s,
                p99_us: f.p99_ns as f64 / 1e3,
                requests_per_s: f.requests_per_s,
                responses_per_s: f.responses_per_s,
                p50_us: f.p50_ns as f64 / 1e3,
                p999_us: f.p999_ns as f64 / 1e3,
                client_cpu_us_per_op: f.client_cpu_us_per_op,
                server_cpu_us_per_op: f.server_cpu_us_per_op,
                client_rss_mib: f.client_rss_mib,
                server_rss_mib: f.server_rss_mib,
                window_s: f.window_s,
                intervals: f.intervals.clone(),
                go: f.go,
            })
            .collect(),
        transport: summarize(&group.good.iter().map(|f| f.transport).collect::<Vec<_>>()),
    }
}

fn stat(good: &[Figures], f: impl Fn(&Figures) -> Option<f64>) -> Option<Stat> {
    let values: Vec<f64> = good.iter().filter_map(f).collect();
    Stat::of(&values)
}

/// Whether more than half of the samples that have the figure say `true`.
fn mostly(good: &[Figures], f: impl Fn(&Figures) -> Option<bool>) -> bool {
    let values: Vec<bool> = good.iter().filter_map(f).collect();
    values.iter().filter(|&&b| b).count() * 2 > values.len()
}

fn row_metrics(good: &[Figures], config: &SampleConfig) -> Option<RowMetrics> {
    let us = |ns: Option<u64>| ns.map(|v| v as f64 / 1e3);
    Some(RowMetrics {
        ops_per_s: stat(good, |f| Some(f.ops_per_s))?,
        requests_per_s: stat(good, |f| Some(f.requests_per_s))?,
        responses_per_s: stat(good, |f| Some(f.responses_per_s))?,
        p50_us: stat(good, |f| Some(f.p50_ns as f64 / 1e3))?,
        p99_us: stat(good, |f| Some(f.p99_ns as f64 / 1e3))?,
        p999_us: stat(good, |f| Some(f.p999_ns as f64 / 1e3))?,
        client_cpu_us_per_op: stat(good, |f| f.client_cpu_us_per_op),
        server_cpu_us_per_op: stat(good, |f| f.server_cpu_us_per_op),
        client_cpu_below_resolution: mostly(good, |f| {
            f.client_cpu_us_per_op.map(|_| f.client_cpu_below)
        }),
        server_cpu_below_resolution: mostly(good, |f| {
            f.server_cpu_us_per_op.map(|_| f.server_cpu_below)
        }),
        client_rss_mib: stat(good, |f| f.client_rss_mib),
        server_rss_mib: stat(good, |f| f.server_rss_mib),
        connect_ms: stat(good, |f| f.connect_ns.map(|ns| ns as f64 / 1e6)),
        uncorrected_p50_us: stat(good, |f| us(f.uncorrected_p50_ns)),
        uncorrected_p99_us: stat(good, |f| us(f.uncorrected_p99_ns)),
        send_lag_p99_us: stat(good, |f| us(f.send_lag_p99_ns)),
        target_rate: match &config.load {
            LoadSpec::Open { rate, .. } => Some(*rate),
            _ => None,
        },
        received_per_s: stat(good, |f| f.received_per_s),
        max_in_flight: stat(good, |f| f.max_in_flight.map(|v| v as f64)),
        go: GoStats::of(good),
    })
}

fn versus(baseline: &[Figures], candidate: &[Figures], seed: u64) -> Option<Versus> {
    let ops = |fs: &[Figures]| fs.iter().map(|f| f.ops_per_s).collect::<Vec<_>>();
    let p99 = |fs: &[Figures]| fs.iter().map(|f| f.p99_ns as f64).collect::<Vec<_>>();
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
    rows.iter()
        .position(|b| b.config.cell == baseline_cell && same_workload(&b.config, &row.config))
}

/// Whether two configurations run the same workload (everything but the cell).
pub fn same_workload(a: &SampleConfig, b: &SampleConfig) -> bool {
    a.shape == b.shape
        && a.concurrency == b.concurrency
        && a.request_size == b.request_size
        && a.response_size == b.response_size
        && a.messages_per_stream == b.messages_per_stream
        && a.payload == b.payload
        && a.load == b.load
}

/// FNV-1a: a stable hash, so that seeds derived from keys never change between builds.
pub(crate) fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod label_tests {
    use super::*;
    use rpcarena_model::campaign::Campaign;
    use rpcarena_model::matrix;

    #[test]
    fn labels_say_sizes_kind_plaintext_and_replay() {
        let text = rpcarena_fixtures::campaign("t", 1)
            .key("tls = false")
            .peer("p", &["p"])
            .cell("a", "p", "p", "orpc-http")
            .cell_line("payload = [\"zeros\", \"dated\"]")
            .cell_line("client_mode = \"replay\"")
            .section("[workload]\nshapes = [\"unary\"]\nconcurrency = [1]\nresponse_size = [64]")
            .build();
        let labels: Vec<String> = matrix::expand(&Campaign::parse(&text, "t.toml").unwrap())
            .iter()
            .map(payload_label)
            .collect();
        assert_eq!(
            labels,
            [
                "256B/64B zeros, plaintext, replay",
                "dated procedure, plaintext, replay"
            ]
        );
    }
}
