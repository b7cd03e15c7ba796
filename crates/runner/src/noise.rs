//! Noise controls: CPU pinning, the load-average gate, and the flags that say when a sample
//! describes the machine or the load generator rather than the stack under test.

use rpcarena_model::campaign::{NoiseControls, Pinning};
use rpcarena_model::record::Noise;
use rpcarena_stats::drift;
use std::time::{Duration, Instant};

/// Where the client, the server and the emulator run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinPlan {
    /// Client CPUs (empty: not pinned).
    pub client: Vec<usize>,
    /// Server CPUs.
    pub server: Vec<usize>,
    /// Emulator CPUs.
    pub emulator: Vec<usize>,
    /// Why the plan is not ideal, if it is not.
    pub warnings: Vec<String>,
}

/// The pinning for `cpus` (the CPUs this process may use) under `policy`.
///
/// The server gets exactly one CPU, so server throughput is single-core throughput whatever the
/// machine; with four or more CPUs the first stays free for the OS and the controller; the
/// emulator (when there is one) gets its own CPU; the client gets the rest.
pub fn plan(cpus: &[usize], policy: Pinning, emulated: bool) -> PinPlan {
    let mut p = PinPlan::default();
    if policy == Pinning::Off {
        return p;
    }
    match cpus.len() {
        0 | 1 => p.warnings.push(
            "only one CPU: client, server and emulator share it; nothing is pinned".to_string(),
        ),
        2 => {
            p.client = vec![cpus[0]];
            p.server = vec![cpus[1]];
            if emulated {
                p.warnings.push(format!(
                    "2 CPUs: the emulator's threads share CPUs {} and {} with the peers",
                    cpus[0], cpus[1]
                ));
            }
        }
        3 => {
            p.server = vec![cpus[1]];
            if emulated {
                p.emulator = vec![cpus[0]];
                p.client = vec![cpus[2]];
            } else {
                p.client = vec![cpus[0], cpus[2]];
            }
        }
        n => {
            p.server = vec![cpus[1]];
            if emulated {
                p.emulator = vec![cpus[2]];
                p.client = cpus[3..n].to_vec();
            } else {
                p.client = cpus[2..n].to_vec();
            }
        }
    }
    p
}

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// The 1-minute load average.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// The default gate: 1.5 x the CPU count. The 1-minute average decays slowly and still holds
/// the previous sample's own peers (up to about one runnable thread per CPU plus the emulator), so
/// a gate at the CPU count would mostly wait for rpcarena itself; 1.5 x catches a machine that is
/// busy with something else.
pub fn default_max_load(cpus: usize) -> f64 {
    1.5 * cpus as f64
}

/// Waits until the 1-minute load average is at most the limit (default: [`default_max_load`]) or the
/// gate's timeout passes; returns (waited, load average at the end, timed out). Stops early
/// when `stop()` says so (a signal).
pub fn load_gate(
    controls: &NoiseControls,
    cpus: usize,
    stop: impl Fn() -> bool,
) -> (Duration, f64, bool) {
    let limit = controls.max_load.unwrap_or_else(|| default_max_load(cpus));
    let start = Instant::now();
    loop {
        let load = load_average();
        if limit <= 0.0 || load <= limit {
            return (start.elapsed(), load, false);
        }
        if start.elapsed() >= controls.gate_timeout || stop() {
            return (start.elapsed(), load, true);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// What was measured around one window, for [`flags`].
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Client group CPU, cores.
    pub client_cores: f64,
    /// Server group CPU, cores.
    pub server_cores: f64,
    /// Client's busiest thread, cores.
    pub client_busiest_thread_cores: f64,
    /// Server's busiest thread, cores.
    pub server_busiest_thread_cores: f64,
    /// CPUs the client may use.
    pub client_cpu_count: usize,
    /// CPUs the server may use.
    pub server_cpu_count: usize,
    /// Steal, percent.
    pub steal_pct: f64,
    /// Operations completed per full second of the window, in order.
    pub per_second: Vec<f64>,
    /// The open model's generator fell behind.
    pub generator_behind: bool,
    /// The open model's start error (actual minus intended start) at p99, microseconds
    /// (`send_lag_histogram`); `None` for the other models.
    pub start_error_p99_us: Option<f64>,
    /// The load gate timed out.
    pub gate_timed_out: bool,
    /// The peers talk through an emulated link, so the latency has a network floor.
    pub emulated: bool,
    /// Client and server CPU per operation, microseconds, each lowered by its reading's
    /// resolution; `None` without readings or operations.
    pub cpu_per_op_floor_us: Option<(f64, f64)>,
    /// Median latency, microseconds.
    pub p50_us: Option<f64>,
    /// Revision 1.3: the submitting thread's CPU over the window, in cores (`submit_cpu_ns`,
    /// nanosecond resolution); when present it decides `client-bound` (ceiling: one core).
    pub submit_cores: Option<f64>,
    /// Revision 1.3: operations completed in each tenth of the warmup.
    pub warmup_segments: Vec<u64>,
    /// The window and the drain after it, nanoseconds, and the operations completed.
    pub window_ns: u64,
    /// See `window_ns`.
    pub drain_ns: u64,
    /// See `window_ns`.
    pub completed: u64,
}

/// A drain longer than this share of the window is flagged (the reference's rule, seed 004):
/// the row's rate then says how fast work was admitted, not how fast it was consumed.
pub const LONG_DRAIN: f64 = 0.10;
/// A warmup whose last three tenths complete this much more than the three before is flagged.
pub const RISING_WARMUP: f64 = 0.10;

/// Near this share of its CPUs a process is considered saturated.
pub const SATURATED: f64 = 0.9;
/// Full seconds of window needed before drift is flagged.
pub const MIN_DRIFT_SECONDS: usize = 4;
/// On an emulated link, peers' CPU per operation (client + server) at or above this share of
/// the median latency is flagged: the processing on an operation's path is then large enough to
/// move the row by as much as the tolerance users compare rows with (5 %), so the row is not
/// the network's alone (a JIT still compiling, a library that costs milliseconds per call).
pub const CPU_IN_LATENCY: f64 = 0.05;
/// Steal above this percentage is flagged.
pub const STEAL_PCT: f64 = 2.0;
/// The open model's start error p99 above this is flagged (docs/methodology.md, "Load models":
/// the generator hands each start to its lane early and the lane waits for the exact moment, so
/// a quiet machine keeps p99 under it at up to 1,000 ops/s).
pub const START_ERROR_P99_US: f64 = 50.0;

/// Whether the halves' operation counts differ by more than three standard deviations of their
/// difference under a steady rate (counts are near-Poisson: variance about the count). At 17
/// ops/s a 5 s window's halves hold ~40 operations each and differ by 20% by chance alone; at
/// 20,000 ops/s the 3% threshold decides.
fn beyond_counting_noise(d: &rpcarena_stats::Drift) -> bool {
    let n1 = d.first_half_mean * d.half_len as f64;
    let n2 = d.second_half_mean * d.half_len as f64;
    (n2 - n1).abs() > 3.0 * (n1 + n2).sqrt()
}

/// Why the client is the bottleneck, if it is: its submitting thread near one core (when the
/// client reports it in ns), else its process or busiest thread near its CPUs (clock ticks).
fn client_bound(o: &Observed) -> Option<String> {
    if let Some(cores) = o.submit_cores {
        return (cores >= SATURATED).then(|| {
            format!(
                "the client's submitting thread used {cores:.3} of one core (submit_cpu_ns): the figure describes the load generator, not the stack"
            )
        });
    }
    let busy = o.client_busiest_thread_cores >= SATURATED
        || o.client_cores >= SATURATED * o.client_cpu_count.max(1) as f64;
    busy.then(|| {
        format!(
            "the client used {:.2} cores (busiest thread {:.2}) of {}: the figure describes the load generator, not the stack",
            o.client_cores, o.client_busiest_thread_cores, o.client_cpu_count
        )
    })
}

/// Flags and warnings for one sample (pure).
pub fn flags(o: &Observed, plan: &PinPlan, drift_threshold: f64, noise: &mut Noise) {
    let mut flag = |name: &str, warning: String| {
        noise.flags.push(name.to_string());
        noise.warnings.push(warning);
    };
    if let Some(warning) = client_bound(o) {
        flag("client-bound", warning);
    }
    if o.server_cores >= SATURATED * o.server_cpu_count.max(1) as f64 {
        flag(
            "server-saturated",
            format!(
                "the server used {:.2} cores of {}: it ran at its limit",
                o.server_cores, o.server_cpu_count
            ),
        );
    }
    if let (true, Some((client_us, server_us)), Some(p50_us)) =
        (o.emulated, o.cpu_per_op_floor_us, o.p50_us)
        && p50_us > 0.0
        && client_us + server_us >= CPU_IN_LATENCY * p50_us
    {
        flag(
            "cpu-in-latency",
            format!(
                "the peers used at least {:.2} ms (client) + {:.2} ms (server) of CPU per operation, {:.0}% of the {:.2} ms median latency: part of the latency may be processing (a JIT still compiling, a costly library), not the network",
                client_us / 1e3,
                server_us / 1e3,
                100.0 * (client_us + server_us) / p50_us,
                p50_us / 1e3
            ),
        );
    }
    if let Ok(d) = drift(&o.per_second, drift_threshold) {
        noise.drift = Some(d.change);
        // Halves of one or two seconds wobble by more than 3% on their own (Poisson arrivals,
        // scheduler ticks): the change is recorded, but only judged on windows of 4 s or more.
        if d.flagged && o.per_second.len() >= MIN_DRIFT_SECONDS && beyond_counting_noise(&d) {
            flag(
                "drift",
                format!(
                    "throughput changed {:+.1}% between the window's halves (threshold {:.0}%)",
                    d.change * 100.0,
                    drift_threshold * 100.0
                ),
            );
        }
    }
    if o.gate_timed_out {
        flag(
            "load-gate-timeout",
            format!(
                "the load average was still {:.2} when the gate gave up",
                noise.load_avg_1m
            ),
        );
    }
    if o.steal_pct > STEAL_PCT {
        flag(
            "steal",
            format!(
                "the hypervisor stole {:.1}% of CPU time during the window",
                o.steal_pct
            ),
        );
    }
    if o.generator_behind {
        flag(
            "generator-behind",
            "open-loop operations could not start on schedule (the generator lagged, or every in-flight slot was busy): the offered load was lower than the target".to_string(),
        );
    }
    if let Some(warning) = start_late(o) {
        flag("start-late", warning);
    }
    noise.placement_notes = plan.warnings.clone();
    reading_rules(o, noise);
}

/// Why open-loop starts were late, if their p99 passed [`START_ERROR_P99_US`]: the figure with
/// what else the window showed (steal, the client's CPU, the load gate), so the row's other flags
/// can be read as the cause.
fn start_late(o: &Observed) -> Option<String> {
    let p99 = o.start_error_p99_us.filter(|&us| us > START_ERROR_P99_US)?;
    Some(format!(
        "open-loop operations started late: start error p99 {p99:.1} us (target {START_ERROR_P99_US:.0} us); during the window steal was {:.1}%, the client used {:.2} cores (busiest thread {:.2}) of {}{}",
        o.steal_pct,
        o.client_cores,
        o.client_busiest_thread_cores,
        o.client_cpu_count,
        if o.gate_timed_out {
            ", and the load gate had timed out before the sample"
        } else {
            ""
        }
    ))
}

/// The reference's reading rules (seed 004, revision 1.3): a warmup still rising at its end,
/// and a drain longer than a tenth of the window, read with its length and the consumption rate.
fn reading_rules(o: &Observed, noise: &mut Noise) {
    if let [.., a, b, c, d, e, f] = o.warmup_segments[..]
        && o.warmup_segments.len() == 10
    {
        let (before, last) = ((a + b + c) as f64, (d + e + f) as f64);
        if last > before * (1.0 + RISING_WARMUP) && last - before > 3.0 * (last + before).sqrt() {
            noise.flags.push("warmup-rising".to_string());
            noise.warnings.push(format!(
                "the warmup was still rising at its end: its last three tenths completed {last:.0} operations, the three before {before:.0} ({:+.0}%)",
                100.0 * (last / before.max(1.0) - 1.0)
            ));
        }
    }
    if o.window_ns > 0 && o.drain_ns as f64 > LONG_DRAIN * o.window_ns as f64 {
        let consumed = o.completed as f64 / ((o.window_ns + o.drain_ns) as f64 / 1e9);
        noise.flags.push("long-drain".to_string());
        noise.warnings.push(format!(
            "the drain took {:.0} ms, {:.0}% of the {:.0} ms window: read the row with its consumption rate, {consumed:.0} operations/s over window and drain",
            o.drain_ns as f64 / 1e6,
            100.0 * o.drain_ns as f64 / o.window_ns as f64,
            o.window_ns as f64 / 1e6
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_by_cpu_count() {
        let p = plan(&[0, 1], Pinning::Auto, false);
        assert_eq!((p.client.clone(), p.server.clone()), (vec![0], vec![1]));
        assert!(p.warnings.is_empty());
        let p = plan(&[0, 1], Pinning::Auto, true);
        assert!(p.emulator.is_empty() && p.warnings[0].contains("share"));
        let mut noise = Noise::default();
        flags(
            &Observed {
                client_cpu_count: 1,
                server_cpu_count: 1,
                ..Observed::default()
            },
            &p,
            0.03,
            &mut noise,
        );
        assert!(noise.flags.is_empty() && noise.placement_notes == p.warnings);
        let p = plan(&[0, 1, 2, 3, 4, 5], Pinning::Auto, true);
        assert_eq!(
            (p.server, p.emulator, p.client),
            (vec![1], vec![2], vec![3, 4, 5])
        );
        let p = plan(&[0, 1, 2], Pinning::Auto, false);
        assert_eq!((p.server, p.client), (vec![1], vec![0, 2]));
        assert_eq!(plan(&[0, 1, 2, 3], Pinning::Off, true), PinPlan::default());
        assert!(plan(&[0], Pinning::Auto, false).warnings[0].contains("one CPU"));
    }

    #[test]
    fn the_submitting_thread_decides_client_bound_and_the_reading_rules_flag() {
        let judge = |o: Observed| {
            let mut noise = Noise::default();
            let o = Observed {
                client_cpu_count: 1,
                server_cpu_count: 1,
                ..o
            };
            flags(&o, &PinPlan::default(), 0.03, &mut noise);
            noise
        };
        // clock ticks say the process was busy, the submitting thread in ns says it was not
        let busy = Observed {
            client_cores: 0.95,
            client_busiest_thread_cores: 0.95,
            submit_cores: Some(0.4),
            ..Observed::default()
        };
        assert!(judge(busy.clone()).flags.is_empty());
        let bound = judge(Observed {
            submit_cores: Some(0.97),
            ..busy
        });
        assert_eq!(bound.flags, ["client-bound"]);
        assert!(
            bound.warnings[0].contains("0.970 of one core"),
            "{:?}",
            bound.warnings
        );
        // a warmup still rising: 3 x 1000 then 3 x 1300
        let rising = judge(Observed {
            warmup_segments: vec![500, 700, 800, 900, 1000, 1000, 1000, 1300, 1300, 1300],
            ..Observed::default()
        });
        assert_eq!(rising.flags, ["warmup-rising"]);
        let steady = judge(Observed {
            warmup_segments: vec![500, 700, 800, 900, 1000, 1000, 1000, 1010, 990, 1020],
            ..Observed::default()
        });
        assert!(steady.flags.is_empty(), "{:?}", steady.warnings);
        // a 600 ms drain after a 5 s window: 12% of it
        let drained = judge(Observed {
            window_ns: 5_000_000_000,
            drain_ns: 600_000_000,
            completed: 56_000,
            ..Observed::default()
        });
        assert_eq!(drained.flags, ["long-drain"]);
        assert!(
            drained.warnings[0].contains("600 ms, 12% of the 5000 ms window")
                && drained.warnings[0].contains("10000 operations/s"),
            "{:?}",
            drained.warnings
        );
    }

    #[test]
    fn cpu_in_latency_only_on_an_emulated_link_and_above_five_percent() {
        let judge = |emulated: bool, cpu: Option<(f64, f64)>| {
            let o = Observed {
                client_cpu_count: 1,
                server_cpu_count: 1,
                emulated,
                cpu_per_op_floor_us: cpu,
                // a 31 ms round trip plus processing
                p50_us: Some(35_000.0),
                ..Observed::default()
            };
            let mut noise = Noise::default();
            flags(&o, &PinPlan::default(), 0.03, &mut noise);
            noise
        };
        // JavaScript QUIC on the regional WAN: about 2 ms per call on each side.
        let slow = judge(true, Some((2_000.0, 1_800.0)));
        assert_eq!(slow.flags, ["cpu-in-latency"]);
        assert!(slow.warnings[0].contains("2.00 ms (client) + 1.80 ms (server)"));
        assert!(slow.warnings[0].contains("11% of the 35.00 ms"));
        // Rust gRPC: tens of microseconds, far below 5% of the latency.
        assert!(judge(true, Some((60.0, 55.0))).flags.is_empty());
        // Just below the threshold (1,749 us of 35,000), and just above it.
        assert!(judge(true, Some((1_000.0, 749.0))).flags.is_empty());
        assert_eq!(
            judge(true, Some((1_000.0, 752.0))).flags,
            ["cpu-in-latency"]
        );
        // On loopback processing is all the latency there is: never flagged.
        assert!(judge(false, Some((2_000.0, 1_800.0))).flags.is_empty());
        // No readings: nothing to judge.
        assert!(judge(true, None).flags.is_empty());
    }

    #[test]
    fn flags_say_what_they_saw() {
        let o = Observed {
            client_cores: 0.95,
            server_cores: 0.5,
            client_busiest_thread_cores: 0.6,
            server_busiest_thread_cores: 0.3,
            client_cpu_count: 1,
            server_cpu_count: 1,
            steal_pct: 5.0,
            // four full seconds, and a 10% drop far beyond counting noise at 1000 ops/s
            per_second: vec![1000.0, 1000.0, 900.0, 900.0],
            generator_behind: true,
            start_error_p99_us: Some(67.5),
            gate_timed_out: false,
            ..Observed::default()
        };
        let mut noise = Noise::default();
        flags(&o, &PinPlan::default(), 0.03, &mut noise);
        assert_eq!(
            noise.flags,
            [
                "client-bound",
                "drift",
                "steal",
                "generator-behind",
                "start-late"
            ]
        );
        let late = noise.warnings.last().unwrap();
        assert!(
            late.contains("p99 67.5 us (target 50 us)") && late.contains("steal was 5.0%"),
            "{late}"
        );
        // At the target, or without an open model, no flag.
        for p99 in [Some(50.0), None] {
            let mut quiet = Noise::default();
            let o = Observed {
                start_error_p99_us: p99,
                client_cpu_count: 1,
                server_cpu_count: 1,
                ..Observed::default()
            };
            flags(&o, &PinPlan::default(), 0.03, &mut quiet);
            assert!(quiet.flags.is_empty(), "{:?}", quiet.flags);
        }
        assert!((noise.drift.unwrap() + 0.1).abs() < 1e-9);
        // The same 10% drop at 10 ops/s is within counting noise: recorded, not flagged.
        let slow = Observed {
            per_second: vec![10.0, 10.0, 9.0, 9.0],
            client_cpu_count: 1,
            server_cpu_count: 1,
            ..Observed::default()
        };
        let mut quiet_slow = Noise::default();
        flags(&slow, &PinPlan::default(), 0.03, &mut quiet_slow);
        assert!(quiet_slow.flags.is_empty() && quiet_slow.drift.is_some());
        let mut quiet = Noise::default();
        let o = Observed {
            client_cpu_count: 2,
            server_cpu_count: 1,
            per_second: vec![100.0, 101.0],
            ..Observed::default()
        };
        flags(&o, &PinPlan::default(), 0.03, &mut quiet);
        assert!(quiet.flags.is_empty(), "{quiet:?}");
    }
}
