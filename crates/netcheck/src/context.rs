//! What the phases share: fresh topologies of the checked backend, the prologue and epilogue of
//! every measurement (build a topology, run probes through it, check its devices, keep its
//! release lateness, tear it down), and the constants of the probes' packets.

use rpcarena_netem::{NetworkRequest, Topology, TopologyConfig};
use rpcarena_netem_core::{
    BackendKind, DelaySampler, DirectionSpec, EmulatorChoice, EmulatorInfo, LatencyHistogram,
    LinkProfile, LinkStats, ThreadPriority,
};
use rpcarena_stats::LatencySummary;

use crate::error::NetcheckError;
use crate::options::NetcheckOptions;
use crate::probes::{self, StreamConfig, StreamOutcome, TcpOutcome};

pub(crate) const MS: f64 = 1e6;
pub(crate) const SECOND: f64 = 1e9;
/// UDP echo payload: the probe header only. IP packet = 20 + 8 + 32 bytes.
pub(crate) const ECHO_PAYLOAD: usize = 32;
pub(crate) const UDP_IP_HEADERS: usize = 28;
/// TCP/IP headers with the timestamp option.
pub(crate) const TCP_IP_HEADERS: usize = 52;

/// The state of one netcheck run across its phases.
pub(crate) struct Context<'a> {
    pub options: &'a NetcheckOptions,
    emulator: EmulatorChoice,
    topologies_made: u64,
    lateness: LatencyHistogram,
    lateness_by_phase: Vec<(String, LatencySummary)>,
    device_problems: Vec<String>,
    emulator_info: Option<EmulatorInfo>,
    /// Marks this run's probe packets (stale ones of another run are ignored).
    pub run: u32,
}

impl<'a> Context<'a> {
    /// A run checking `backend` (netcheck checks a resolved backend, never `auto`).
    pub fn new(options: &'a NetcheckOptions, backend: BackendKind) -> Context<'a> {
        Context {
            options,
            emulator: match backend {
                BackendKind::Kernel => EmulatorChoice::Kernel,
                _ => EmulatorChoice::Userspace,
            },
            topologies_made: 0,
            lateness: LatencyHistogram::new(),
            lateness_by_phase: Vec::new(),
            device_problems: Vec::new(),
            emulator_info: None,
            run: (options.seed as u32) ^ std::process::id().rotate_left(16),
        }
    }

    /// Probe threads run like the forwarders, one level below when those are real-time.
    pub fn probe_priority(&self) -> ThreadPriority {
        match self.options.timing.priority {
            ThreadPriority::Realtime { priority } => ThreadPriority::Realtime {
                priority: priority.saturating_sub(1).max(1),
            },
            other => other,
        }
    }

    /// A fresh topology of `profile`, seeded differently from every other of this run.
    pub fn topology(&mut self, profile: &LinkProfile) -> Result<Topology, NetcheckError> {
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
    pub fn finish(&mut self, phase: &str, mut topo: Topology, keep_lateness: bool) {
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
            eprintln!("rpcarena-netcheck: {phase}: teardown: {e}");
        }
    }

    /// The shared prologue of the one-way phases: a topology of `profile`, one UDP stream
    /// through it, the emulator's counters, the device check and teardown.
    pub fn udp_stream(
        &mut self,
        phase: &str,
        profile: &LinkProfile,
        config: StreamConfig,
        keep_lateness: bool,
    ) -> Result<(StreamOutcome, Option<LinkStats>), NetcheckError> {
        let topo = self.topology(profile)?;
        let outcome = probes::udp_stream(&topo, config, self.run, self.probe_priority());
        let stats = topo.stats();
        self.finish(phase, topo, keep_lateness);
        Ok((outcome?, stats))
    }

    /// The same for the TCP phases: one bulk transfer of `duration_ns`, measured after
    /// `warmup_ns`.
    pub fn tcp_bulk(
        &mut self,
        phase: &str,
        profile: &LinkProfile,
        duration_ns: u64,
        warmup_ns: u64,
    ) -> Result<(TcpOutcome, Option<LinkStats>), NetcheckError> {
        let topo = self.topology(profile)?;
        let outcome = probes::tcp_bulk(&topo, duration_ns, warmup_ns);
        let stats = topo.stats();
        self.finish(phase, topo, false);
        Ok((outcome?, stats))
    }

    /// Whether a phase kept release lateness.
    pub fn saw_lateness(&self) -> bool {
        !self.lateness_by_phase.is_empty()
    }

    /// Release lateness over every phase that kept it.
    pub fn lateness(&self) -> LatencySummary {
        self.lateness.summary()
    }

    /// The worst release lateness of each phase that kept it.
    pub fn lateness_by_phase(&self) -> &[(String, LatencySummary)] {
        &self.lateness_by_phase
    }

    /// Devices that dropped packets on their own, one line per phase.
    pub fn device_problems(&self) -> &[String] {
        &self.device_problems
    }

    /// The emulator of the first topology built.
    pub fn emulator_info(&self) -> Option<EmulatorInfo> {
        self.emulator_info.clone()
    }
}

/// The 1-minute load average, recorded before and after the check.
pub(crate) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Delays a packet can see at most in one direction, ns: the largest draw plus a full queue.
pub(crate) fn max_one_way_ns(spec: &DirectionSpec, ip_len: usize) -> u64 {
    let (_, hi) = DelaySampler::new(spec.delay_ns, spec.jitter_ns, spec.distribution).range();
    let queue = spec.serialization_ns(ip_len).unwrap_or(0) * spec.limit_packets as u64;
    hi.max(0) as u64 + queue
}
