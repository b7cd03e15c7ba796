//! Every figure of one sample, computed from what `samples.jsonl` holds: the client's counts
//! and HdrHistograms, and the /proc sampler's totals.
//!
//! The runner calls [`measure`] when a sample ends and records the result; the report calls it
//! again on each line of `samples.jsonl` and aggregates what it returns, so a figure is computed
//! in one place only and `rpcarena report DIR` needs nothing but the artifacts. This is where a
//! sample's p99 is computed: [`LatencySummary::of`] its latency histogram.

use crate::record::{ClientResult, Metrics};
use hdrhistogram::Histogram;
use rpcarena_protocol::histogram::{self, HistogramError};
use rpcarena_stats::LatencySummary;

/// One sample's figures and the latency histogram they came from.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Rates and percentiles.
    pub metrics: Metrics,
    /// The latency histogram, decoded (from each operation's intended start in the open model).
    pub latency: Histogram<u64>,
    /// Optional histograms (open model) that could not be read, each with why; their figures
    /// are absent from `metrics`.
    pub problems: Vec<String>,
}

/// How much of a sample [`measure`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every figure a record keeps (the runner).
    Record,
    /// The figures the report aggregates: rates and percentiles; the mean latency, which costs
    /// more than the rest together, is left at 0.
    Aggregate,
}

/// The figures of a client's report. Fails only when the latency histogram cannot be read.
pub fn measure(result: &ClientResult, detail: Detail) -> Result<Measured, HistogramError> {
    let latency = histogram::decode(&result.histogram)?;
    let mut problems = Vec::new();
    let mut optional = |text: &Option<String>, what: &str| {
        text.as_ref().and_then(|t| match histogram::decode(t) {
            Ok(h) => Some(LatencySummary::percentiles_of(&h)),
            Err(e) => {
                problems.push(format!("{what}: {e}"));
                None
            }
        })
    };
    let uncorrected = optional(&result.uncorrected_histogram, "uncorrected_histogram");
    let lag = optional(&result.send_lag_histogram, "send_lag_histogram");
    let summary = match detail {
        Detail::Record => LatencySummary::of(&latency),
        Detail::Aggregate => LatencySummary::percentiles_of(&latency),
    };
    let seconds = result.window_ns.max(1) as f64 / 1e9;
    let metrics = Metrics {
        ops_per_s: result.completed as f64 / seconds,
        requests_per_s: result.requests as f64 / seconds,
        responses_per_s: result.responses as f64 / seconds,
        mean_ns: summary.mean_ns,
        p50_ns: summary.p50_ns,
        p90_ns: summary.p90_ns,
        p99_ns: summary.p99_ns,
        p999_ns: summary.p999_ns,
        max_ns: summary.max_ns,
        uncorrected_p50_ns: uncorrected.map(|l| l.p50_ns),
        uncorrected_p99_ns: uncorrected.map(|l| l.p99_ns),
        send_lag_p50_ns: lag.map(|l| l.p50_ns),
        send_lag_p99_ns: lag.map(|l| l.p99_ns),
        received_per_s: result.received.map(|r| r as f64 / seconds),
    };
    Ok(Measured {
        metrics,
        latency,
        problems,
    })
}

/// A total per completed operation (CPU microseconds per operation); 0 when none completed.
pub fn per_op(total: f64, completed: u64) -> f64 {
    if completed > 0 {
        total / completed as f64
    } else {
        0.0
    }
}

/// CPU time resolution of /proc: one clock tick (USER_HZ = 100 on Linux), in microseconds.
pub const CPU_TICK_US: f64 = 10_000.0;

/// CPU microseconds per operation, and whether it is below resolution: a window in which /proc
/// counted less than one clock tick of CPU gives no figure, only the bound "less than one tick
/// per completed operations" (returned, with `true`), never a 0.0 that reads as free.
pub fn cpu_per_op(cpu_us: f64, completed: u64) -> (f64, bool) {
    if completed == 0 {
        (0.0, false)
    } else if cpu_us < CPU_TICK_US {
        (CPU_TICK_US / completed as f64, true)
    } else {
        (cpu_us / completed as f64, false)
    }
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(completed: u64, window_ns: u64) -> ClientResult {
        let mut h = histogram::new_latency_histogram();
        for i in 0..completed {
            h.record(1_000_000 + i * 1_000).unwrap();
        }
        ClientResult {
            completed,
            requests: completed * 2,
            responses: completed,
            window_ns,
            histogram: histogram::encode(&h).unwrap(),
            ..ClientResult::default()
        }
    }

    #[test]
    fn rates_are_per_second_of_window_and_percentiles_come_from_the_histogram() {
        let m = measure(&result(100, 2_000_000_000), Detail::Record).unwrap();
        assert_eq!(m.metrics.ops_per_s, 50.0);
        assert_eq!(m.metrics.requests_per_s, 100.0);
        assert_eq!(m.latency.len(), 100);
        // values 1.000 ms .. 1.099 ms: p99 is the 99th value's bucket, within 0.1% above it
        assert!(
            (1_098_000..=1_099_100).contains(&m.metrics.p99_ns),
            "{:?}",
            m.metrics
        );
        assert!(m.metrics.uncorrected_p99_ns.is_none() && m.problems.is_empty());
    }

    #[test]
    fn the_aggregate_detail_leaves_out_only_the_mean() {
        let r = result(1000, 1_000_000_000);
        let record = measure(&r, Detail::Record).unwrap().metrics;
        let aggregate = measure(&r, Detail::Aggregate).unwrap().metrics;
        assert!(record.mean_ns > 1e6 && aggregate.mean_ns == 0.0);
        assert_eq!(
            Metrics {
                mean_ns: record.mean_ns,
                ..aggregate
            },
            record
        );
    }

    #[test]
    fn an_unreadable_histogram_is_an_error_and_an_optional_one_a_problem() {
        let mut r = result(10, 1_000_000_000);
        r.uncorrected_histogram = Some("no!".into());
        let m = measure(&r, Detail::Record).unwrap();
        assert!(m.metrics.uncorrected_p50_ns.is_none());
        assert!(
            m.problems[0].starts_with("uncorrected_histogram: "),
            "{:?}",
            m.problems
        );
        r.histogram = "no!".into();
        assert!(
            measure(&r, Detail::Aggregate)
                .unwrap_err()
                .to_string()
                .contains("not valid base64")
        );
    }

    #[test]
    fn per_operation_figures_never_divide_by_zero() {
        assert_eq!(per_op(1000.0, 4), 250.0);
        assert_eq!(per_op(1000.0, 0), 0.0);
        assert_eq!(mib(3 * 1024 * 1024), 3.0);
    }

    #[test]
    fn cpu_below_one_tick_is_a_bound_not_zero() {
        // Before the fix: 0 ticks over 500 operations read 0.0 us per operation.
        assert_eq!(cpu_per_op(0.0, 500), (20.0, true));
        assert_eq!(cpu_per_op(30_000.0, 500), (60.0, false));
        assert_eq!(cpu_per_op(0.0, 0), (0.0, false));
    }
}
