//! netcheck: measures an emulated path on this host and compares every figure with what the
//! profile implies, so that a run's network can be trusted (or its limits stated).
//!
//! Phases, each on fresh topologies of the requested backend:
//!
//! 1. **RTT** from paced UDP echoes with send times in the payload and kernel receive
//!    timestamps. With a rate, netem's `max()` rule couples packets that meet in the queue, so
//!    probes are spaced by the spread of both delays plus serialization, which keeps the
//!    distribution the unloaded one the profile describes; several links run side by side to
//!    collect 20,000 echoes in about 20 s.
//! 2. **Loss** from 10^6 one-way probes on the profile's loss model (delay and rate removed, the
//!    queue unbounded, so that only the loss decision acts), judged against the 99 % interval.
//! 3. **UDP rate** with loss off, the sender 2 % above the link rate: payload rate at the
//!    receiver and reordering.
//! 4. **TCP goodput** over the profile as is (informative; judged only against the line rate).
//! 5. **Overfilled queue**: 1.5x the link rate; one-way delay settles at `limit` packets of
//!    serialization and the excess is dropped.
//! 6. **Release lateness** of the userspace emulator during phases 1, 3 and 5.
//! 7. **Plain forwarding**: TCP goodput through the emulator with no delay, rate or loss.

mod expect;
mod probes;

use std::fmt;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::NetemError;
use crate::profile::{DirectionSpec, LinkProfile, LossModel};
use crate::shell::timing::LatencyHistogram;
use crate::shell::{
    BackendKind, EmulatorChoice, EmulatorInfo, NetworkRequest, Side, ThreadPriority, TimingOptions,
    Topology, TopologyConfig,
};

pub use expect::{RttExpectation, rtt_expectation, wilson_interval};

/// The measurements netcheck can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// RTT distribution from UDP echoes.
    Rtt,
    /// One-way loss from 10^6 probes.
    Loss,
    /// UDP payload rate with loss off, and reordering.
    Rate,
    /// TCP goodput over the profile.
    Tcp,
    /// Delay and drops of an overfilled queue.
    Overfill,
    /// TCP goodput through the emulator with no delay, rate or loss.
    Forwarding,
}

impl Phase {
    /// Every phase, in the order netcheck runs them.
    pub const ALL: [Phase; 6] = [
        Phase::Rtt,
        Phase::Loss,
        Phase::Rate,
        Phase::Tcp,
        Phase::Overfill,
        Phase::Forwarding,
    ];
}

/// How thorough netcheck is and which emulator it checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetcheckOptions {
    /// Emulator to check. Default userspace.
    pub emulator: EmulatorChoice,
    /// Marks the report as a quick run (smaller samples, tolerances widened to 4 standard
    /// errors where the sample is too small for the stated ones).
    pub quick: bool,
    /// Master seed; each topology derives its own.
    pub seed: u64,
    /// Echoes to collect (at least this many are sent after expected losses). Default 20,000.
    pub rtt_echoes: u64,
    /// Aim for the RTT phase to take about this long, s, by running links side by side.
    pub rtt_target_secs: f64,
    /// Most links run side by side in the RTT phase. Default 8.
    pub max_parallel_links: u32,
    /// One-way loss probes. Default 10^6.
    pub loss_probes: u64,
    /// Probe rate for the loss phase, packets/s. Default 100,000.
    pub loss_pps: f64,
    /// Length of the UDP rate phase, s (shortened if the queue would overflow).
    pub rate_secs: f64,
    /// Length of the TCP goodput phase, s.
    pub tcp_secs: f64,
    /// Length of the overfilled-queue phase, s.
    pub overfill_secs: f64,
    /// Length of the plain forwarding phase, s.
    pub forwarding_secs: f64,
    /// Forwarder timing.
    pub timing: TimingOptions,
    /// Phases to run (release lateness is reported from whichever ran). Default all.
    pub phases: Vec<Phase>,
    /// When set, raw RTT samples (ns, one per line) are written to `DIR/rtt_ns.txt`.
    pub dump_dir: Option<std::path::PathBuf>,
}

impl Default for NetcheckOptions {
    fn default() -> Self {
        Self::full()
    }
}

impl NetcheckOptions {
    /// The full check (about a minute for regional-wan).
    pub fn full() -> Self {
        NetcheckOptions {
            emulator: EmulatorChoice::Userspace,
            quick: false,
            seed: 1,
            rtt_echoes: 20_000,
            rtt_target_secs: 20.0,
            max_parallel_links: 8,
            loss_probes: 1_000_000,
            loss_pps: 100_000.0,
            rate_secs: 2.5,
            tcp_secs: 4.0,
            overfill_secs: 3.0,
            forwarding_secs: 3.0,
            timing: TimingOptions::default(),
            phases: Phase::ALL.to_vec(),
            dump_dir: None,
        }
    }

    /// A few seconds per phase, for tests and smoke checks.
    pub fn quick() -> Self {
        NetcheckOptions {
            quick: true,
            rtt_echoes: 400,
            rtt_target_secs: 2.0,
            max_parallel_links: 2,
            loss_probes: 20_000,
            loss_pps: 40_000.0,
            rate_secs: 0.8,
            tcp_secs: 1.0,
            overfill_secs: 1.0,
            forwarding_secs: 1.0,
            ..Self::full()
        }
    }
}

/// How a figure came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// Within tolerance.
    Pass,
    /// Outside tolerance.
    Fail,
    /// Reported, not judged.
    Info,
}

/// One line of the report: expected against measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// What was measured.
    pub name: String,
    /// Unit of `expected` and `measured`.
    pub unit: String,
    /// What the profile implies, when it implies a number.
    pub expected: Option<f64>,
    /// What was measured, when the phase produced a number.
    pub measured: Option<f64>,
    /// The tolerance in words (`+-0.100`, `<= 100`, `in [0.0925, 0.1083]`).
    pub tolerance: String,
    /// The verdict.
    pub judgement: Judgement,
    /// Anything the reader needs to interpret it.
    pub note: String,
}

/// Everything netcheck measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetcheckReport {
    /// The profile checked.
    pub profile: LinkProfile,
    /// Backend checked.
    pub backend: BackendKind,
    /// Emulator kind and version.
    pub emulator: EmulatorInfo,
    /// Kernel release of this host.
    pub kernel: String,
    /// CPUs available.
    pub cpus: usize,
    /// Whether this was a quick run.
    pub quick: bool,
    /// Master seed.
    pub seed: u64,
    /// Wall time of the whole check, s.
    pub seconds: f64,
    /// 1-minute load average before and after the check: timing figures degrade when other
    /// work competes for the CPUs, and this says how much there was.
    pub load_average: (f64, f64),
    /// The figures, in phase order.
    pub figures: Vec<Figure>,
}

impl NetcheckReport {
    /// True when no judged figure failed.
    pub fn passed(&self) -> bool {
        self.figures.iter().all(|f| f.judgement != Judgement::Fail)
    }

    /// The figures that failed.
    pub fn failures(&self) -> Vec<&Figure> {
        self.figures
            .iter()
            .filter(|f| f.judgement == Judgement::Fail)
            .collect()
    }
}

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if v.abs() < 1e-12 => "0".to_string(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.3}"),
        Some(v) => format!("{v:.4}"),
    }
}

impl fmt::Display for NetcheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "netcheck {}", self.profile)?;
        writeln!(
            f,
            "backend {} ({}), linux {}, {} CPUs, load {:.2} -> {:.2}, seed {}, {:.1} s{}",
            self.backend,
            self.emulator.version,
            self.kernel,
            self.cpus,
            self.load_average.0,
            self.load_average.1,
            self.seed,
            self.seconds,
            if self.quick { ", QUICK run" } else { "" }
        )?;
        writeln!(
            f,
            "{:<38} {:>12} {:>12}  {:<26} verdict",
            "figure", "expected", "measured", "tolerance"
        )?;
        for fig in &self.figures {
            let name = format!("{} [{}]", fig.name, fig.unit);
            let verdict = match fig.judgement {
                Judgement::Pass => "pass",
                Judgement::Fail => "FAIL",
                Judgement::Info => "info",
            };
            writeln!(
                f,
                "{:<38} {:>12} {:>12}  {:<26} {}",
                name,
                fmt_value(fig.expected),
                fmt_value(fig.measured),
                fig.tolerance,
                verdict
            )?;
            if !fig.note.is_empty() {
                writeln!(f, "    {}", fig.note)?;
            }
        }
        let judged = self
            .figures
            .iter()
            .filter(|f| f.judgement != Judgement::Info)
            .count();
        let failed = self.failures().len();
        writeln!(
            f,
            "result: {} ({judged} judged figures, {failed} outside tolerance)",
            if failed == 0 { "PASS" } else { "FAIL" }
        )
    }
}

struct Figures(Vec<Figure>);

impl Figures {
    /// `values` is (expected, measured); `verdict` is (tolerance text, judgement).
    fn push(
        &mut self,
        name: &str,
        unit: &str,
        values: (Option<f64>, Option<f64>),
        verdict: (String, Judgement),
        note: impl Into<String>,
    ) {
        let ((expected, measured), (tolerance, judgement)) = (values, verdict);
        self.0.push(Figure {
            name: name.to_string(),
            unit: unit.to_string(),
            expected,
            measured,
            tolerance,
            judgement,
            note: note.into(),
        });
    }

    fn info(
        &mut self,
        name: &str,
        unit: &str,
        expected: Option<f64>,
        measured: Option<f64>,
        note: impl Into<String>,
    ) {
        self.push(
            name,
            unit,
            (expected, measured),
            ("-".to_string(), Judgement::Info),
            note,
        );
    }

    fn within(
        &mut self,
        name: &str,
        unit: &str,
        expected: f64,
        measured: f64,
        tol: f64,
        note: impl Into<String>,
    ) {
        let ok = (measured - expected).abs() <= tol;
        self.push(
            name,
            unit,
            (Some(expected), Some(measured)),
            (format!("+-{}", fmt_value(Some(tol))), pass_if(ok)),
            note,
        );
    }

    fn failed_phase(&mut self, name: &str, error: &NetemError) {
        self.push(
            name,
            "-",
            (None, None),
            ("-".to_string(), Judgement::Fail),
            format!("phase failed: {error}"),
        );
    }
}

fn pass_if(ok: bool) -> Judgement {
    if ok { Judgement::Pass } else { Judgement::Fail }
}

const MS: f64 = 1e6;
const SECOND: f64 = 1e9;
/// UDP echo payload: the probe header only. IP packet = 20 + 8 + 32 bytes.
const ECHO_PAYLOAD: usize = 32;
const UDP_IP_HEADERS: usize = 28;
/// TCP/IP headers with the timestamp option.
const TCP_IP_HEADERS: usize = 52;

struct Context<'a> {
    options: &'a NetcheckOptions,
    emulator: EmulatorChoice,
    topologies_made: u64,
    lateness: LatencyHistogram,
    lateness_by_phase: Vec<(String, crate::shell::LatencySummary)>,
    device_problems: Vec<String>,
    emulator_info: Option<EmulatorInfo>,
    run: u32,
}

impl Context<'_> {
    /// Probe threads run like the forwarders, one level below when those are real-time.
    fn probe_priority(&self) -> ThreadPriority {
        match self.options.timing.priority {
            ThreadPriority::Realtime { priority } => ThreadPriority::Realtime {
                priority: priority.saturating_sub(1).max(1),
            },
            other => other,
        }
    }

    fn topology(&mut self, profile: &LinkProfile) -> Result<Topology, NetemError> {
        self.topologies_made += 1;
        let topo = Topology::create(&TopologyConfig {
            network: NetworkRequest::Emulated {
                profile: profile.clone(),
                emulator: self.emulator,
            },
            seed: self
                .options
                .seed
                .wrapping_mul(1_000_003)
                .wrapping_add(self.topologies_made),
            timing: self.options.timing.clone(),
        })?;
        self.emulator_info
            .get_or_insert_with(|| topo.info().emulator.clone());
        Ok(topo)
    }

    /// Device drop check after a phase; `keep_lateness` adds the topology's lateness.
    fn finish(&mut self, phase: &str, mut topo: Topology, keep_lateness: bool) {
        if let Err(e) = topo.check_after_sample() {
            self.device_problems.push(format!("{phase}: {e}"));
        }
        if keep_lateness {
            let h = topo.lateness_histogram();
            self.lateness.merge(&h);
            match self.lateness_by_phase.iter_mut().find(|(p, _)| p == phase) {
                // Several topologies per phase: keep the worst p99.
                Some((_, s)) if s.p99_ns >= h.summary().p99_ns => {}
                Some((_, s)) => *s = h.summary(),
                None => self
                    .lateness_by_phase
                    .push((phase.to_string(), h.summary())),
            }
        }
        if let Err(e) = topo.shutdown() {
            eprintln!("rpcarena-netem: netcheck {phase}: teardown: {e}");
        }
    }
}

/// Runs netcheck for `profile`. Fails only when no topology can be built at all; a phase that
/// fails becomes a failed figure.
pub fn netcheck(
    profile: &LinkProfile,
    options: &NetcheckOptions,
) -> Result<NetcheckReport, NetemError> {
    profile.validate()?;
    let backend = options.emulator.resolve()?;
    let emulator = match backend {
        BackendKind::Kernel => EmulatorChoice::Kernel,
        _ => EmulatorChoice::Userspace,
    };
    let started = Instant::now();
    let load_before = load_average();
    let mut ctx = Context {
        options,
        emulator,
        topologies_made: 0,
        lateness: LatencyHistogram::new(),
        lateness_by_phase: Vec::new(),
        device_problems: Vec::new(),
        emulator_info: None,
        run: (options.seed as u32) ^ std::process::id().rotate_left(16),
    };
    let mut figures = Figures(Vec::new());

    // Prove a topology can be built before spending a minute on phases.
    let probe = ctx.topology(profile)?;
    drop(probe);

    type PhaseFn = fn(&mut Context<'_>, &LinkProfile, &mut Figures) -> Result<(), NetemError>;
    let phases: [(Phase, &str, PhaseFn); 5] = [
        (Phase::Rtt, "rtt", rtt_phase),
        (Phase::Loss, "one-way loss", loss_phase),
        (Phase::Rate, "udp rate", rate_phase),
        (Phase::Tcp, "tcp goodput", tcp_phase),
        (Phase::Overfill, "overfilled queue", overfill_phase),
    ];
    for (phase, name, run) in phases {
        if options.phases.contains(&phase)
            && let Err(e) = run(&mut ctx, profile, &mut figures)
        {
            figures.failed_phase(name, &e);
        }
    }
    if !ctx.lateness_by_phase.is_empty() {
        lateness_figures(&ctx, backend, &mut figures);
    }
    if options.phases.contains(&Phase::Forwarding)
        && let Err(e) = forwarding_phase(&mut ctx, profile, &mut figures)
    {
        figures.failed_phase("plain forwarding", &e);
    }
    figures.push(
        "device drops outside the model",
        "phases",
        (Some(0.0), Some(ctx.device_problems.len() as f64)),
        ("= 0".to_string(), pass_if(ctx.device_problems.is_empty())),
        ctx.device_problems.join("; "),
    );

    Ok(NetcheckReport {
        profile: profile.clone(),
        backend,
        emulator: ctx.emulator_info.clone().unwrap_or(EmulatorInfo {
            kind: backend.to_string(),
            version: String::new(),
        }),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        quick: options.quick,
        seed: options.seed,
        seconds: started.elapsed().as_secs_f64(),
        load_average: (load_before, load_average()),
        figures: figures.0,
    })
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Delays a packet can see at most in one direction, ns: the largest draw plus a full queue.
fn max_one_way_ns(spec: &DirectionSpec, ip_len: usize) -> u64 {
    let (_, hi) =
        crate::core::DelaySampler::new(spec.delay_ns, spec.jitter_ns, spec.distribution).range();
    let queue = spec.serialization_ns(ip_len).unwrap_or(0) * spec.limit_packets as u64;
    hi.max(0) as u64 + queue
}

fn rtt_phase(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetemError> {
    let opts = ctx.options;
    let there = &profile.client_to_server;
    let back = &profile.server_to_client;
    let ip_len = ECHO_PAYLOAD + UDP_IP_HEADERS;
    let expected = rtt_expectation(there, back, ip_len);
    let spacing = expect::non_interacting_spacing_ns(there, back, ip_len);
    let survive = (1.0 - there.loss.mean_loss()) * (1.0 - back.loss.mean_loss());
    let to_send = ((opts.rtt_echoes as f64 / survive.max(0.01)) * 1.003).ceil() as u64 + 5;
    let links = ((to_send as f64 * spacing as f64) / (opts.rtt_target_secs * SECOND))
        .ceil()
        .clamp(1.0, opts.max_parallel_links.max(1) as f64) as u64;
    let per_link = to_send.div_ceil(links);
    let max_rtt = max_one_way_ns(there, ip_len) + max_one_way_ns(back, ip_len) + 500_000_000;

    let topologies = (0..links)
        .map(|_| ctx.topology(profile))
        .collect::<Result<Vec<_>, _>>()?;
    let run = ctx.run;
    let rt = ctx.probe_priority();
    let outcomes: Vec<Result<probes::EchoOutcome, NetemError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = topologies
            .iter()
            .map(|topo| {
                scope.spawn(move || {
                    probes::udp_echo(topo, per_link, spacing, ECHO_PAYLOAD, max_rtt, run, rt)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(NetemError::ThreadPanicked {
                        what: "running UDP echoes".to_string(),
                    })
                })
            })
            .collect()
    });
    for topo in topologies {
        ctx.finish("rtt", topo, true);
    }
    let mut rtts = Vec::new();
    let mut sent = 0;
    for outcome in outcomes {
        let outcome = outcome?;
        sent += outcome.sent;
        rtts.extend(outcome.rtts_ns);
    }
    if rtts.is_empty() {
        return Err(NetemError::Netcheck {
            phase: "rtt".to_string(),
            detail: format!("none of {sent} echoes came back"),
        });
    }
    if let Some(dir) = &opts.dump_dir {
        let text: String = rtts.iter().map(|r| format!("{r}\n")).collect();
        if let Err(e) = std::fs::write(dir.join("rtt_ns.txt"), text) {
            eprintln!("rpcarena-netem: netcheck: writing rtt_ns.txt: {e}");
        }
    }
    let (mean, sd, kurtosis) = expect::moments(&rtts);
    rtts.sort_by(f64::total_cmp);
    let n = rtts.len() as f64;
    // Tolerances as stated (0.1 ms, 5 %), widened to 4 standard errors for small samples.
    let mean_tol = (0.1 * MS).max(4.0 * sd / n.sqrt());
    let sd_rel_se = ((kurtosis - 1.0).max(0.0) / (4.0 * n)).sqrt();
    // Without jitter the expected sd is 0 and 5 % of it means nothing: the path's own noise
    // (wake-ups, a few tens of microseconds) is then allowed up to 0.05 ms.
    let sd_tol = (0.05 * expected.sd_ns)
        .max(4.0 * sd_rel_se * expected.sd_ns)
        .max(0.05 * MS);
    let note = format!(
        "{} echoes received of {sent} sent over {links} parallel link(s), {:.2} ms apart per link \
         (unloaded: probes never meet in the queue); echo server turnaround subtracted",
        rtts.len(),
        spacing as f64 / MS
    );
    figures.within(
        "rtt mean",
        "ms",
        expected.mean_ns / MS,
        mean / MS,
        mean_tol / MS,
        note,
    );
    figures.within(
        "rtt sd",
        "ms",
        expected.sd_ns / MS,
        sd / MS,
        sd_tol / MS,
        "",
    );
    for (name, q, e) in [
        ("rtt p1", 0.01, expected.p1_ns),
        ("rtt p50", 0.50, expected.p50_ns),
        ("rtt p99", 0.99, expected.p99_ns),
    ] {
        figures.info(
            name,
            "ms",
            Some(e / MS),
            Some(expect::percentile(&rtts, q) / MS),
            "",
        );
    }
    // The path's own cost (TUN hops, forwarder wake-ups, socket paths): the same base delays
    // without jitter, rate or loss, where every echo should take exactly their sum. The
    // forwarders sleep between packets as in the main test, so the wake-ups cost the same.
    let fixed = |d: &DirectionSpec| DirectionSpec {
        delay_ns: d.delay_ns,
        ..DirectionSpec::passthrough()
    };
    let floor_profile = LinkProfile {
        name: Some("fixed-delay".to_string()),
        mtu: profile.mtu,
        client_to_server: fixed(there),
        server_to_client: fixed(back),
    };
    let floor_topo = ctx.topology(&floor_profile)?;
    let floor_count = (opts.rtt_echoes / 10).clamp(100, 2000);
    let floor = probes::udp_echo(
        &floor_topo,
        floor_count,
        2_000_000,
        ECHO_PAYLOAD,
        max_rtt,
        run,
        rt,
    );
    ctx.finish("rtt", floor_topo, false);
    let base = (there.delay_ns + back.delay_ns) as f64;
    let mut excess: Vec<f64> = floor?.rtts_ns.iter().map(|r| r - base).collect();
    excess.sort_by(f64::total_cmp);
    figures.info(
        "rtt path overhead (fixed delay) p50",
        "ms",
        Some(0.0),
        Some(expect::percentile(&excess, 0.5) / MS),
        format!(
            "{} echoes with the base delays only: measured minus {:.3} ms, p1 {:.3} ms, p99 \
             {:.3} ms; the TUN path's own cost, included in every RTT above",
            excess.len(),
            base / MS,
            expect::percentile(&excess, 0.01) / MS,
            expect::percentile(&excess, 0.99) / MS
        ),
    );
    figures.push(
        "rtt echoes received",
        "count",
        (Some(opts.rtt_echoes as f64), Some(n)),
        (
            format!(">= {}", opts.rtt_echoes),
            pass_if(rtts.len() as u64 >= opts.rtt_echoes),
        ),
        "",
    );
    Ok(())
}

fn loss_phase(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetemError> {
    let opts = ctx.options;
    let model = profile.client_to_server.loss;
    // Only the loss decision acts: no delay, rate or reordering, and a queue that never fills.
    let mut probe_profile = LinkProfile::symmetric(
        Some("loss-probe"),
        profile.mtu,
        DirectionSpec::passthrough(),
    );
    probe_profile.client_to_server.loss = model;
    probe_profile.client_to_server.limit_packets = 1_000_000;
    let topo = ctx.topology(&probe_profile)?;
    let outcome = probes::udp_stream(
        &topo,
        probes::StreamConfig {
            from: Side::Client,
            count: opts.loss_probes,
            pps: opts.loss_pps,
            payload: 32,
            record: false,
            max_delay_ns: 200_000_000,
        },
        ctx.run,
        ctx.probe_priority(),
    );
    let emulator = topo.stats().map(|s| s.client_to_server.counters);
    ctx.finish("loss", topo, false);
    let outcome = outcome?;
    let sent = outcome.sent;
    let lost = sent.saturating_sub(outcome.received);
    let measured = lost as f64 / sent.max(1) as f64;
    let expected = model.mean_loss();
    let (lo, hi) = match model {
        LossModel::GilbertElliott { .. } => {
            // Losses come in bursts: widen by the chain's variance, not the binomial one.
            let half = expect::Z99 * (model.asymptotic_variance() / sent.max(1) as f64).sqrt();
            ((measured - half).max(0.0), (measured + half).min(1.0))
        }
        _ => wilson_interval(lost, sent, expect::Z99),
    };
    figures.push(
        "one-way loss",
        "%",
        (Some(expected * 100.0), Some(measured * 100.0)),
        (
            format!("99% CI [{:.4}, {:.4}]", lo * 100.0, hi * 100.0),
            pass_if(lo <= expected && expected <= hi),
        ),
        format!(
            "{lost} of {sent} probes lost client->server ({} model{})",
            match model {
                LossModel::None => "no loss",
                LossModel::Random { .. } => "random",
                LossModel::GilbertElliott { .. } => "Gilbert-Elliott",
            },
            if matches!(model, LossModel::GilbertElliott { .. }) {
                ", interval widened for burst correlation"
            } else {
                ", Wilson interval"
            }
        ),
    );
    if let Some(c) = emulator {
        let elsewhere = lost.saturating_sub(c.lost + c.queue_dropped);
        figures.push(
            "probes lost outside the emulator",
            "count",
            (Some(0.0), Some(elsewhere as f64)),
            ("= 0".to_string(), pass_if(elsewhere == 0)),
            format!(
                "emulator saw {} probes, lost {}, queue-dropped {}, released {}",
                c.arrived, c.lost, c.queue_dropped, c.released
            ),
        );
    }
    Ok(())
}

fn rate_phase(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetemError> {
    let opts = ctx.options;
    let lossless = profile.map_directions(|d| d.loss = LossModel::None);
    let spec = &lossless.client_to_server;
    let Some(rate) = spec.rate_bps else {
        figures.info(
            "udp payload rate",
            "Mbit/s",
            None,
            None,
            "no rate configured: skipped",
        );
        return Ok(());
    };
    let mtu = profile.mtu as usize;
    let payload = mtu - UDP_IP_HEADERS;
    let link_pps = spec.packets_per_second(mtu).unwrap_or(1.0);
    let over = 1.02;
    let (_, hi) =
        crate::core::DelaySampler::new(spec.delay_ns, spec.jitter_ns, spec.distribution).range();
    let in_flight = link_pps * hi.max(0) as f64 / SECOND;
    let free = spec.limit_packets as f64 - in_flight;
    let secs = opts
        .rate_secs
        .min(0.8 * free.max(0.0) / ((over - 1.0) * link_pps));
    let count = (link_pps * over * secs) as u64;
    if count < 100 {
        figures.info(
            "udp payload rate",
            "Mbit/s",
            None,
            None,
            "queue limit too small to saturate without drops: skipped",
        );
        return Ok(());
    }
    let topo = ctx.topology(&lossless)?;
    let outcome = probes::udp_stream(
        &topo,
        probes::StreamConfig {
            from: Side::Client,
            count,
            pps: link_pps * over,
            payload,
            record: true,
            max_delay_ns: max_one_way_ns(spec, mtu) + 500_000_000,
        },
        ctx.run,
        ctx.probe_priority(),
    );
    let queue_dropped = topo
        .stats()
        .map(|s| s.client_to_server.counters.queue_dropped);
    ctx.finish("udp rate", topo, true);
    let outcome = outcome?;
    let records = &outcome.records;
    // The first 30 % of packets build the backlog; after that the link never idles.
    let window = &records[records.len() * 3 / 10..];
    let expected = rate as f64 * payload as f64 / (mtu as f64 + spec.overhead_bytes as f64);
    if window.len() < 10 {
        return Err(NetemError::Netcheck {
            phase: "udp rate".to_string(),
            detail: format!("only {} packets received", records.len()),
        });
    }
    let first = window.first().map_or(0, |r| r.2);
    let last = window.last().map_or(0, |r| r.2);
    let measured =
        (window.len() - 1) as f64 * payload as f64 * 8.0 / ((last - first) as f64 / SECOND);
    figures.within(
        "udp payload rate (loss off)",
        "Mbit/s",
        expected / 1e6,
        measured / 1e6,
        0.01 * expected / 1e6,
        format!(
            "{}-byte datagrams at {:.0} % of the link rate for {:.1} s; rate over the last {} \
             arrivals (kernel receive timestamps); {} of {} received, {} queue drops",
            payload,
            over * 100.0,
            secs,
            window.len(),
            outcome.received,
            outcome.sent,
            queue_dropped.map_or("?".to_string(), |q| q.to_string()),
        ),
    );
    figures.push(
        "udp reordering (with rate)",
        "packets",
        (Some(0.0), Some(outcome.reordered as f64)),
        ("= 0".to_string(), pass_if(outcome.reordered == 0)),
        "",
    );
    Ok(())
}

fn tcp_phase(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetemError> {
    let opts = ctx.options;
    let topo = ctx.topology(profile)?;
    let duration = (opts.tcp_secs * SECOND) as u64;
    let outcome = probes::tcp_bulk(&topo, duration, duration / 4);
    ctx.finish("tcp", topo, false);
    let outcome = outcome?;
    let spec = &profile.client_to_server;
    let mtu = profile.mtu as f64;
    let ceiling = spec
        .rate_bps
        .map(|r| r as f64 * (mtu - TCP_IP_HEADERS as f64) / (mtu + spec.overhead_bytes as f64));
    let rtt = rtt_expectation(spec, &profile.server_to_client, 1500).mean_ns / SECOND;
    let mathis = expect::mathis_bps(mtu - TCP_IP_HEADERS as f64, rtt, spec.loss.mean_loss());
    let measured = outcome.goodput_bps();
    let note = format!(
        "client->server bulk for {:.1} s, measured after {:.1} s of slow start{}",
        opts.tcp_secs,
        opts.tcp_secs / 4.0,
        mathis.map_or(String::new(), |m| format!(
            "; Reno/Mathis loss model predicts ~{:.1} Mbit/s (CUBIC does better)",
            m / 1e6
        ))
    );
    match ceiling {
        Some(c) => figures.push(
            "tcp goodput",
            "Mbit/s",
            (Some(c / 1e6), Some(measured / 1e6)),
            ("<= line rate".to_string(), pass_if(measured <= c * 1.01)),
            note,
        ),
        None => figures.info("tcp goodput", "Mbit/s", None, Some(measured / 1e6), note),
    }
    Ok(())
}

fn overfill_phase(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetemError> {
    let opts = ctx.options;
    let spec = &profile.client_to_server;
    if spec.rate_bps.is_none() {
        figures.info(
            "overfilled queue delay",
            "ms",
            None,
            None,
            "no rate configured: skipped",
        );
        return Ok(());
    }
    let mtu = profile.mtu as usize;
    let payload = mtu - UDP_IP_HEADERS;
    let link_pps = spec.packets_per_second(mtu).unwrap_or(1.0);
    let offered = 1.5 * link_pps;
    // The queue fills after the first packets have waited out their delay; measure only what
    // is sent once it is full (with a margin), and send long enough for a second of that.
    let delay_s = spec.delay_ns as f64 / SECOND;
    let fill_s = if offered * delay_s >= spec.limit_packets as f64 {
        spec.limit_packets as f64 / offered
    } else {
        delay_s + (spec.limit_packets as f64 - offered * delay_s) / (offered - link_pps)
    };
    let steady_from_s = fill_s * 1.2 + 0.1;
    let secs = opts.overfill_secs.max(steady_from_s + 1.0);
    let count = (offered * secs) as u64;
    let steady_from_seq = (offered * steady_from_s) as u64;
    let topo = ctx.topology(profile)?;
    let outcome = probes::udp_stream(
        &topo,
        probes::StreamConfig {
            from: Side::Client,
            count,
            pps: offered,
            payload,
            record: true,
            max_delay_ns: max_one_way_ns(spec, mtu) + 500_000_000,
        },
        ctx.run,
        ctx.probe_priority(),
    );
    ctx.finish("overfill", topo, true);
    let outcome = outcome?;
    // Steady state: packets sent once the queue was full.
    let half = steady_from_seq.min(outcome.sent / 2);
    let delays: Vec<f64> = outcome
        .records
        .iter()
        .filter(|r| r.0 >= half)
        .map(|r| r.2.saturating_sub(r.1) as f64)
        .collect();
    if delays.is_empty() {
        return Err(NetemError::Netcheck {
            phase: "overfill".to_string(),
            detail: "no packet sent after the queue filled arrived".to_string(),
        });
    }
    let ser = spec.serialization_ns(mtu).unwrap_or(0) as f64;
    let expected_delay = spec.limit_packets as f64 * ser;
    let (mean, _, _) = expect::moments(&delays);
    let mut sorted = delays.clone();
    sorted.sort_by(f64::total_cmp);
    let send_secs = outcome.last_send_ns.saturating_sub(outcome.first_send_ns) as f64 / SECOND;
    let offered_actual = outcome.sent as f64 / send_secs.max(1e-9);
    let expected_drop = (1.0 - link_pps / offered_actual).max(0.0);
    let steady_sent = outcome.sent - half;
    let drop = 1.0 - delays.len() as f64 / steady_sent.max(1) as f64;
    figures.within(
        "overfilled queue one-way delay",
        "ms",
        expected_delay / MS,
        mean / MS,
        0.02 * expected_delay / MS,
        format!(
            "{payload}-byte datagrams at 150 % of the link rate; limit {} packets x {:.1} us; \
             p50 {:.2} ms, p99 {:.2} ms over packets sent after {:.2} s (queue full)",
            spec.limit_packets,
            ser / 1e3,
            expect::percentile(&sorted, 0.5) / MS,
            expect::percentile(&sorted, 0.99) / MS,
            half as f64 / offered
        ),
    );
    figures.within(
        "overfilled queue drop fraction",
        "%",
        expected_drop * 100.0,
        drop * 100.0,
        1.0,
        format!(
            "offered {:.0} packets/s against {:.0} the link carries",
            offered_actual, link_pps
        ),
    );
    Ok(())
}

fn lateness_figures(ctx: &Context<'_>, backend: BackendKind, figures: &mut Figures) {
    if backend == BackendKind::Kernel {
        figures.info(
            "release lateness",
            "us",
            None,
            None,
            "kernel netem: not observable from userspace",
        );
        return;
    }
    let s = ctx.lateness.summary();
    let note = format!(
        "actual minus scheduled send time over {} releases (rtt, udp rate and overfill phases); \
         p90 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        s.count,
        s.p90_ns as f64 / 1e3,
        s.p999_ns as f64 / 1e3,
        s.max_ns as f64 / 1e3
    );
    figures.info(
        "release lateness p50",
        "us",
        None,
        Some(s.p50_ns as f64 / 1e3),
        note,
    );
    let per_phase = ctx
        .lateness_by_phase
        .iter()
        .map(|(phase, s)| {
            format!(
                "{phase}: p50 {:.1} p99 {:.1} max {:.1}",
                s.p50_ns as f64 / 1e3,
                s.p99_ns as f64 / 1e3,
                s.max_ns as f64 / 1e3
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    figures.push(
        "release lateness p99",
        "us",
        (Some(100.0), Some(s.p99_ns as f64 / 1e3)),
        (
            "<= 100".to_string(),
            pass_if(s.count > 0 && s.p99_ns <= 100_000),
        ),
        format!("per phase (us): {per_phase}"),
    );
}

fn forwarding_phase(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetemError> {
    let opts = ctx.options;
    let plain = LinkProfile::symmetric(
        Some("plain-forwarding"),
        profile.mtu,
        DirectionSpec::passthrough(),
    );
    let topo = ctx.topology(&plain)?;
    let duration = (opts.forwarding_secs * SECOND) as u64;
    let outcome = probes::tcp_bulk(&topo, duration, duration / 10);
    let stats = topo.stats();
    ctx.finish("plain forwarding", topo, false);
    let outcome = outcome?;
    let gbps = outcome.goodput_bps() / 1e9;
    figures.push(
        "plain forwarding tcp goodput",
        "Gbit/s",
        (Some(1.0), Some(gbps)),
        (">= 1".to_string(), pass_if(gbps >= 1.0)),
        format!(
            "no delay, rate or loss; MTU {}; {} packets forwarded client->server",
            profile.mtu,
            stats.map_or(0, |s| s.client_to_server.counters.released)
        ),
    );
    Ok(())
}
