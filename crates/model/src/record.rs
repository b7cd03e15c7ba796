//! What a run writes: one [`SampleRecord`] per line of `samples.jsonl`, and the [`Manifest`].
//!
//! Both are plain data so that reports regenerate from the artifacts alone. Counters are JSON
//! numbers here (the artifacts are read by Rust, jq and spreadsheets; none reaches 2^53).

use crate::fields::record_struct;
use crate::matrix::SampleConfig;
use crate::network::NetworkDescription;
use crate::transport::TransportRecord;
use rpcarena_netem_core::{LinkWindow, SampleCheck};
use rpcarena_protocol::event::Stopped;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Whether a sample counts.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SampleStatus {
    /// Every check passed; the sample enters the aggregates.
    Ok,
    /// Something went wrong; `reason` says what. Kept for audit, left out of the aggregates.
    Failed,
}

/// One sample, as written to `samples.jsonl`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SampleRecord {
    /// Sample id, also the name of its `raw/` directory.
    pub sample: String,
    /// Round, from 1.
    pub round: u32,
    /// Position within the round, from 1.
    pub position: u32,
    /// What was measured.
    pub config: SampleConfig,
    /// Ok or failed.
    pub status: SampleStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    /// Wall time of the whole sample (spawn to teardown), milliseconds.
    pub elapsed_ms: u64,
    /// Client peer's language, from its capabilities.
    pub client_language: String,
    /// Server peer's language.
    pub server_language: String,
    /// What the client reported, when it reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientResult>,
    /// Figures derived from the client's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// The client's process group over the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_process: Option<ProcessStats>,
    /// The server's process group over the measured window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_process: Option<ProcessStats>,
    /// Counters from the server's `stopped` event.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_counters: BTreeMap<String, u64>,
    /// What else the server's `stopped` event reported, when it reported anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerResult>,
    /// Noise controls and flags of this sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
    /// The network's counters after the sample (emulator and device counters), when the
    /// campaign uses namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SampleCheck>,
    /// The emulator's counters of both directions over the window (userspace emulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_window: Option<LinkWindow>,
    /// Directory holding the peers' stdout and stderr, relative to the run directory.
    pub raw: String,
}

rpcarena_protocol::client_fields!(record_struct);

/// The server's `stopped` event beyond its counters.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ServerResult {
    /// The server's transport statistics over its life (warmup, window and drain), summed over
    /// its connections, when its peer reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportRecord>,
    /// What the server did over the window (revision 1.2): its `window` answers to `WINDOW
    /// END` minus `WINDOW START`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<ServerWindow>,
    /// Revision 1.3: the message of the first call, command or frame the server rejected in
    /// its life, from its `stopped` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rejection: Option<String>,
}

/// A server's figures over the window: the differences between its `window` answers to
/// `WINDOW END` and to `WINDOW START` (from the client's `START` to just after its `sample`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerWindow {
    /// Its counters (`rpcs`, `requests`, `responses`, `rejected`) over the window.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Heap allocations of the whole server process over the window, when it counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<u64>,
    /// Bytes it allocated over the window, when it counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_bytes: Option<u64>,
    /// Revision 1.3: the first rejection the server reported by the end of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rejection: Option<String>,
}

impl ServerResult {
    /// What a `stopped` event adds to the record; `None` when it adds nothing. Every field
    /// of the event but the counters (kept in [`SampleRecord::server_counters`]) is taken apart
    /// here, so a field added to the event does not compile until it has its place.
    pub fn from_stopped(stopped: Stopped) -> (BTreeMap<String, u64>, Option<ServerResult>) {
        let Stopped {
            counters,
            transport,
            // revision 1.2 (not kept yet: the integrator's server.life_allocations)
            allocations: _,
            allocated_bytes: _,
            first_rejection,
        } = stopped;
        let server = (transport.is_some() || first_rejection.is_some()).then(|| ServerResult {
            transport: transport.map(|t| TransportRecord::from(*t)),
            first_rejection,
            ..ServerResult::default()
        });
        (counters, server)
    }
}

rpcarena_protocol::interval_fields!(record_struct);

/// Rates and latency percentiles of one sample, computed by [`crate::metrics::measure`].
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct Metrics {
    /// Completed operations per second of window.
    pub ops_per_s: f64,
    /// Request messages per second of window.
    pub requests_per_s: f64,
    /// Response messages per second of window.
    pub responses_per_s: f64,
    /// Mean latency, nanoseconds.
    pub mean_ns: f64,
    /// Median latency (bucket upper bound), nanoseconds.
    pub p50_ns: u64,
    /// 90th percentile, nanoseconds.
    pub p90_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// 99.9th percentile, nanoseconds.
    pub p999_ns: u64,
    /// Largest latency, nanoseconds.
    pub max_ns: u64,
    /// Open model: median latency from the actual start, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_p50_ns: Option<u64>,
    /// Open model: 99th percentile from the actual start, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_p99_ns: Option<u64>,
    /// Open model: median start lag (actual minus intended), nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_p50_ns: Option<u64>,
    /// Open model: 99th percentile start lag, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_p99_ns: Option<u64>,
    /// Send-saturation: messages received per second of window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_per_s: Option<f64>,
}

/// CPU and memory of one peer's process group over the measured window, from /proc.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcessStats {
    /// User plus system CPU time over the window (reaped children included), microseconds.
    pub cpu_us: f64,
    /// `cpu_us` divided by completed operations.
    pub cpu_us_per_op: f64,
    /// Largest resident set size summed over the group, MiB.
    pub peak_rss_mib: f64,
    /// /proc readings taken.
    pub readings: u32,
    /// Most processes seen in the group at once.
    pub processes: u32,
}

/// What was done against noise, what was seen, and what it means for the sample.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Noise {
    /// CPUs the client was pinned to (empty: not pinned).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_cpus: Vec<usize>,
    /// CPUs the server was pinned to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_cpus: Vec<usize>,
    /// CPUs the emulator was pinned to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emulator_cpus: Vec<usize>,
    /// 1-minute load average when the sample started.
    pub load_avg_1m: f64,
    /// How long the load gate held the sample back, milliseconds.
    pub load_gate_wait_ms: u64,
    /// Share of CPU time the hypervisor stole during the window (from /proc/stat), percent.
    pub steal_pct: f64,
    /// Client process group CPU over the window, in cores (1.0 = one CPU busy all the time).
    pub client_cores: f64,
    /// Server process group CPU over the window, in cores.
    pub server_cores: f64,
    /// The client's busiest thread over the window, in cores.
    pub client_busiest_thread_cores: f64,
    /// The server's busiest thread over the window, in cores.
    pub server_busiest_thread_cores: f64,
    /// Throughput change between the window's halves, from the per-second intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<f64>,
    /// Why the placement is not ideal (for example too few CPUs to separate everything).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_notes: Vec<String>,
    /// What deserves a warning: `client-bound`, `server-saturated`, `drift`, `load-gate-timeout`,
    /// `steal`, `generator-behind`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// The same, explained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// `manifest.json`: what ran, where, from what, with hashes.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    /// rpcarena's version.
    pub rpcarena_version: String,
    /// Source revision rpcarena was built from (`unknown` outside a git checkout).
    pub source_revision: String,
    /// Whether the source had uncommitted changes when it was built.
    pub source_dirty: bool,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    /// UTC end time; absent while running or when interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The run stopped early (signal or `--fail-fast`).
    #[serde(default)]
    pub interrupted: bool,
    /// UTC times at which `rpcarena run --resume` continued this run, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed_at: Vec<String>,
    /// The campaign's seed.
    pub seed: u64,
    /// The campaign as run.
    pub campaign: CampaignInfo,
    /// The machine.
    pub host: HostInfo,
    /// The network as set up.
    pub network: NetworkDescription,
    /// Peers, with executable hashes and capabilities.
    pub peers: Vec<PeerInfo>,
    /// Cells restricted with `--cell`, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only_cells: Vec<String>,
    /// Sample counts.
    pub samples: SampleCounts,
    /// SHA-256 of each artifact written at the end, by path relative to the run directory
    /// (the reports, `samples.jsonl` and every `raw/<sample>/latency.hlog`).
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    /// The artifacts the run meant to write at the end and could not (a full disk), by path,
    /// with why; none of them is left on disk. A manifest listing any is not complete:
    /// `rpcarena verify` fails on each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_written: BTreeMap<String, String>,
}

/// The campaign text and its hash.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct CampaignInfo {
    /// Where it came from (a path, or `built-in quick.toml`).
    pub file: String,
    /// SHA-256 of `text`.
    pub sha256: String,
    /// The exact campaign text.
    pub text: String,
}

/// The machine a run happened on.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct HostInfo {
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// CPUs online.
    pub cpus: u32,
    /// Kernel release.
    pub kernel: String,
    /// Total memory, MiB.
    pub memory_mib: u64,
}

/// A peer as run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct PeerInfo {
    /// Peer id.
    pub id: String,
    /// The command as resolved (first element an absolute path).
    pub command: Vec<String>,
    /// SHA-256 of the executable file.
    pub sha256: String,
    /// Revision 1.1: content hash of every file and directory the peer declares in
    /// `capabilities.files` (a directory: every regular file below it, see
    /// `runner::host::sha256_tree`), by path; a path that could not be read maps to the reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// Its capabilities event.
    pub capabilities: rpcarena_protocol::event::Capabilities,
}

/// How many samples were planned and how they ended.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct SampleCounts {
    /// In the schedule.
    pub planned: u32,
    /// Passed every check.
    pub ok: u32,
    /// Failed.
    pub failed: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::{Event, parse_event};

    #[test]
    fn a_servers_transport_is_kept_as_server_transport_with_numbers() {
        let line = r#"{"protocol":1,"event":"stopped","counters":{"rpcs":"7"},"transport":{"transport":"tcp","connections":"1","packets_sent":"900","retransmitted":"4","srtt_ns":"30100000"}}"#;
        let Ok(Event::Stopped(stopped)) = parse_event(line) else {
            panic!("stopped must parse");
        };
        let (counters, server) = ServerResult::from_stopped(stopped);
        assert_eq!(counters["rpcs"], 7);
        let json = serde_json::to_string(&server).unwrap();
        assert_eq!(
            json,
            r#"{"transport":{"transport":"tcp","connections":1,"packets_sent":900,"retransmitted":4,"srtt_ns":30100000}}"#
        );
        let back: ServerResult = serde_json::from_str(&json).unwrap();
        assert_eq!(
            back.transport.unwrap().loss_per_mille(),
            Some(4.0 * 1000.0 / 900.0)
        );
        // an older server: nothing beyond the counters, so no `server` object
        let (_, none) = ServerResult::from_stopped(Stopped::default());
        assert_eq!(none, None);
    }
}
