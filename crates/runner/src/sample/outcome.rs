//! What a sample's `sample` event and the /proc sampler's readings add to its record: the
//! client's result, its figures (`rpcarena_model::metrics`), the checks, CPU and memory of both
//! peers, and the noise flags. Pure: the state machine calls it with what the shell gathered.

use crate::checks::{Asked, check_report};
use crate::noise::{self, Observed, PinPlan};
use crate::procstat::{self, GroupUsage, WindowUsage};
use rpcarena_model::metrics::{self, Detail, measure};
use rpcarena_model::record::{ClientResult, Metrics, ProcessStats, SampleRecord};
use rpcarena_protocol::event::{Armed, SampleReport, TransportStats};
use std::time::Duration;

/// What the outcome needs besides the events.
pub(crate) struct Context<'a> {
    /// The window asked for.
    pub window: Duration,
    /// The drain bound the client was given (send-saturation: the settle bound when shorter).
    pub drain: Duration,
    /// Where the peers were pinned.
    pub pins: &'a PinPlan,
    /// CPUs this process may use (the peers' share when not pinned).
    pub cpus: usize,
    /// The drift threshold of the campaign.
    pub drift_threshold: f64,
    /// Whether the load gate gave up before the sample.
    pub gate_timed_out: bool,
    /// Whether the peers talk through an emulated link.
    pub emulated: bool,
}

/// The problems of a peer's transport statistics (the client's in `sample`, the server's in
/// `stopped`), named for `who`; one check for both (docs/peer-protocol.md, "Transport
/// statistics"). An absent object is no problem.
pub(crate) fn transport_problems(who: &str, transport: Option<&TransportStats>) -> Vec<String> {
    transport.map_or_else(Vec::new, |t| {
        t.problems()
            .into_iter()
            .map(|p| format!("the {who}'s {p}"))
            .collect()
    })
}

/// Fills the record from the client's events and the sampler's readings; returns the problems
/// the checks found (the sample fails for them once the peers shut down cleanly) and the
/// warnings to show (a sampler that gave nothing).
pub(crate) fn apply(
    record: &mut SampleRecord,
    armed: Armed,
    report: SampleReport,
    usage: Result<WindowUsage, String>,
    context: &Context<'_>,
) -> (Vec<String>, Vec<String>) {
    let transport = transport_problems("client", report.transport.as_deref());
    let result = ClientResult::from((armed, report));
    let measured = measure(&result, Detail::Record);
    let asked = Asked {
        window_ns: context.window.as_nanos() as u64,
        drain_ns: context.drain.as_nanos() as u64,
    };
    let mut problems = check_report(&record.config, asked, &result, &measured);
    problems.extend(transport);
    record.metrics = measured.ok().map(|m| m.metrics);
    let mut warnings = Vec::new();
    let usage = match usage {
        Ok(usage) if usage.groups.len() == 2 => usage,
        Ok(usage) => {
            warnings.push(format!(
                "sample {}: the /proc sampler read {} of 2 process groups; CPU and memory of this sample are not recorded",
                record.sample,
                usage.groups.len()
            ));
            WindowUsage::default()
        }
        Err(reason) => {
            warnings.push(format!(
                "sample {}: {reason}; CPU and memory of this sample are not recorded",
                record.sample
            ));
            WindowUsage::default()
        }
    };
    if let [client, server] = usage.groups[..] {
        record.client_process = Some(process_stats(client, result.completed));
        record.server_process = Some(process_stats(server, result.completed));
    }
    if let Some(noise) = record.noise.as_mut() {
        let observed = observe(&usage, &result, record.metrics.as_ref(), context);
        noise.steal_pct = observed.steal_pct;
        noise.client_cores = observed.client_cores;
        noise.server_cores = observed.server_cores;
        noise.client_busiest_thread_cores = observed.client_busiest_thread_cores;
        noise.server_busiest_thread_cores = observed.server_busiest_thread_cores;
        noise::flags(&observed, context.pins, context.drift_threshold, noise);
    }
    record.client = Some(result);
    (problems, warnings)
}

fn process_stats(usage: GroupUsage, completed: u64) -> ProcessStats {
    ProcessStats {
        cpu_us: usage.cpu_us,
        cpu_us_per_op: metrics::per_op(usage.cpu_us, completed),
        peak_rss_mib: metrics::mib(usage.peak_rss_bytes),
        readings: usage.readings,
        processes: usage.processes,
    }
}

/// What the window looked like to the /proc sampler and the client, for the noise flags.
fn observe(
    usage: &WindowUsage,
    result: &ClientResult,
    metrics: Option<&Metrics>,
    context: &Context<'_>,
) -> Observed {
    let elapsed_us = (usage.elapsed_s * 1e6).max(1.0);
    let cores = |i: usize| usage.groups.get(i).map_or(0.0, |g| g.cpu_us / elapsed_us);
    let busiest = |i: usize| {
        usage
            .groups
            .get(i)
            .map_or(0.0, |g| g.busiest_thread_cpu_us / elapsed_us)
    };
    let count = |pinned: &Vec<usize>| {
        if pinned.is_empty() {
            context.cpus
        } else {
            pinned.len()
        }
    };
    // Throughput per full second of the window, from the intervals (a partial last second is
    // left out: it would look like a slowdown).
    let full = Duration::from_secs(1).as_nanos() as u64;
    let window_ns = context.window.as_nanos() as u64;
    let per_second = result
        .intervals
        .iter()
        .filter(|i| i.offset_ns + full <= window_ns)
        .map(|i| i.completed as f64)
        .collect();
    Observed {
        client_cores: cores(0),
        server_cores: cores(1),
        client_busiest_thread_cores: busiest(0),
        server_busiest_thread_cores: busiest(1),
        client_cpu_count: count(&context.pins.client),
        server_cpu_count: count(&context.pins.server),
        steal_pct: usage.steal_pct,
        per_second,
        generator_behind: result.fell_behind == Some(true),
        gate_timed_out: context.gate_timed_out,
        emulated: context.emulated,
        cpu_per_op_floor_us: cpu_per_op_floor(usage, result.completed, procstat::tick_us()),
        p50_us: metrics.map(|m| m.p50_ns as f64 / 1e3),
        start_error_p99_us: metrics
            .and_then(|m| m.send_lag_p99_ns)
            .map(|ns| ns as f64 / 1e3),
        submit_cores: result
            .submit_cpu_ns
            .filter(|_| result.window_ns > 0)
            .map(|ns| ns as f64 / (result.window_ns + result.drain_ns) as f64),
        warmup_segments: result.warmup_segments.clone(),
        window_ns: result.window_ns,
        drain_ns: result.drain_ns,
        completed: result.completed,
    }
}

/// Client and server CPU per operation over the window, each lowered by what its reading cannot
/// resolve (two clock ticks per process: the first and the last reading each round down), so a
/// flag built on it never rests on rounding; `None` without both groups' readings or operations.
fn cpu_per_op_floor(usage: &WindowUsage, completed: u64, tick_us: f64) -> Option<(f64, f64)> {
    let [client, server] = usage.groups[..] else {
        return None;
    };
    if completed == 0 {
        return None;
    }
    let floor = |g: GroupUsage| {
        (g.cpu_us - 2.0 * tick_us * f64::from(g.processes.max(1))).max(0.0) / completed as f64
    };
    Some((floor(client), floor(server)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(cpu_us: f64, processes: u32) -> GroupUsage {
        GroupUsage {
            cpu_us,
            processes,
            ..GroupUsage::default()
        }
    }

    #[test]
    fn cpu_per_op_floor_takes_off_two_ticks_per_process() {
        let usage = WindowUsage {
            elapsed_s: 5.0,
            steal_pct: 0.0,
            groups: vec![group(1_120_000.0, 1), group(1_020_000.0, 2)],
        };
        // 560 operations; 10 ms ticks: the client loses 20 ms, the server (two processes) 40 ms.
        let (c, s) = cpu_per_op_floor(&usage, 560, 10_000.0).unwrap();
        assert!((c - 1_100_000.0 / 560.0).abs() < 1e-9, "{c}");
        assert!((s - 980_000.0 / 560.0).abs() < 1e-9, "{s}");
        // Less CPU than the resolution: zero, never negative.
        let idle = WindowUsage {
            groups: vec![group(10_000.0, 1), group(0.0, 1)],
            ..usage.clone()
        };
        assert_eq!(cpu_per_op_floor(&idle, 560, 10_000.0), Some((0.0, 0.0)));
        assert_eq!(cpu_per_op_floor(&usage, 0, 10_000.0), None);
        let one = WindowUsage {
            groups: vec![group(1.0, 1)],
            ..usage
        };
        assert_eq!(cpu_per_op_floor(&one, 560, 10_000.0), None);
    }
}
