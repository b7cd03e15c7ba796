//! What netcheck measures and how thoroughly.

use rpcarena_netem_core::{EmulatorChoice, TimingOptions};
use serde::{Deserialize, Serialize};

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
