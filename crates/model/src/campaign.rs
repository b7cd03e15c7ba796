//! Campaign files: what to compare, on which workload, how often.
//!
//! A campaign is TOML (see `campaigns/quick.toml` and the README). Parsing goes in two steps, both
//! pure: serde reads the structure (unknown keys and wrong types are refused with their field
//! path), then [`Campaign::validate`] checks the meaning (ids, references, ranges) and reports
//! every problem at once, each with its field path.

pub use crate::command::CommandSpec;
use crate::duration;
pub use crate::load::{Arrival, LoadSpec, Payload};
pub use crate::network::{Network, NetworkBackend};
use rpcarena_protocol::workload::{ClientMode, Shape};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// A validated campaign.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// Short name, used in the default output directory and the report title.
    pub name: String,
    /// One paragraph for the report: the question this campaign answers.
    #[serde(default)]
    pub description: String,
    /// Seed of the schedule's random order (and of anything else random in a run).
    pub seed: u64,
    /// Repetition rounds; each round runs every sample configuration once.
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Most samples a run may plan (repetitions x configurations); more is refused with an
    /// estimate of how long it would take. Raise it for a campaign that really is that large.
    #[serde(default = "default_max_samples")]
    pub max_samples: u64,
    /// The cell every other cell is compared with in the report (default: the first cell).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Whether the TCP-based stacks run over TLS 1.3 (the default) or in plaintext (`false`,
    /// revision 1.3: `--tls off`). `quic` needs TLS; `zmq` has none.
    #[serde(default = "default_tls")]
    pub tls: bool,
    /// Where client and server talk.
    #[serde(default)]
    pub network: Network,
    /// Peer executables (none in a campaign of commands only).
    #[serde(default)]
    pub peers: Vec<Peer>,
    /// What is compared: a client peer, a server peer and a stack.
    #[serde(default)]
    pub cells: Vec<Cell>,
    /// Commands timed in the same rounds as the cells (see [`crate::command`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandSpec>,
    /// The workload every cell runs (required when there are cells).
    #[serde(default = "Workload::absent")]
    pub workload: Workload,
    /// Warmup, window and drain.
    #[serde(default)]
    pub timing: Timing,
    /// Bounds on every step of a sample.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// CPU pinning, the load gate and the drift threshold.
    #[serde(default)]
    pub noise: NoiseControls,
}

/// What rpcarena does against noise from the machine, and what it flags.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NoiseControls {
    /// `auto`: client, server and emulator on separate CPUs where there are enough (a warning is
    /// recorded where they must share); `off`: let the scheduler place them.
    #[serde(default)]
    pub pinning: Pinning,
    /// Before each sample, wait until the 1-minute load average is at most this (default: 1.5 x
    /// the number of CPUs, because the average still holds the previous sample's own peers).
    /// 0 disables the gate.
    #[serde(default)]
    pub max_load: Option<f64>,
    /// Longest wait at the load gate; a sample that starts after it is flagged.
    #[serde(default = "default_gate_timeout", with = "duration")]
    pub gate_timeout: Duration,
    /// Relative change of throughput between the window's halves above which a sample is
    /// flagged for drift.
    #[serde(default = "default_drift_threshold")]
    pub drift_threshold: f64,
}

/// CPU pinning policy.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Pinning {
    /// Pin where the machine has CPUs for it.
    #[default]
    Auto,
    /// No pinning.
    Off,
}

fn default_gate_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_drift_threshold() -> f64 {
    0.03
}

impl Default for NoiseControls {
    fn default() -> NoiseControls {
        NoiseControls {
            pinning: Pinning::Auto,
            max_load: None,
            gate_timeout: default_gate_timeout(),
            drift_threshold: default_drift_threshold(),
        }
    }
}

fn default_tls() -> bool {
    true
}

fn default_repetitions() -> u32 {
    3
}

fn default_max_samples() -> u64 {
    DEFAULT_MAX_SAMPLES
}

/// The default of `max_samples`: about a week of 5-second samples.
pub const DEFAULT_MAX_SAMPLES: u64 = 100_000;
/// Longest duration a campaign may give any step: a day. Longer is a typo (`"100000000000years"`
/// overflowed the arithmetic that adds them up).
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// A peer executable and how to start it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    /// Identifier referenced by cells.
    pub id: String,
    /// Argument vector; the role and its arguments are appended. A bare program name is looked
    /// up next to the `rpcarena` executable first, then on `PATH`; a relative path is relative to
    /// the campaign file. Absent: the peer of `peers/<id>/peer.toml`, or the Rust peer for id
    /// `rust` (see [`crate::peerdir`]); an explicit empty vector is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

/// One compared implementation: who is client, who is server, over which stack.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// Identifier, used in sample ids and reports.
    pub id: String,
    /// Peer id of the client.
    pub client: String,
    /// Peer id of the server.
    pub server: String,
    /// Stack name as peers advertise it: `grpc`, `quic`, `tcp`, or another of docs/stacks.md.
    pub stack: String,
    /// The shapes of this cell, in place of `workload.shapes` (a stack without streams, such as
    /// Go's `netrpc-gob`, runs `["unary"]` in a campaign whose other cells also run `pingpong`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Vec<Shape>>,
    /// The load models of this cell, in place of `workload.load` (the messaging campaign runs
    /// its `send` cells only with send-saturation, its request cells with the other three).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::load::deserialize_some_loads"
    )]
    pub load: Option<Vec<LoadSpec>>,
    /// This cell's warmup, in place of `timing.warmup`: libraries reach full speed at different
    /// times (the oRPC benchmarks warm tRPC for 30 s, oRPC and Hono over REST for 10 s), and a
    /// campaign that compares them should not make every cell wait for the slowest.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::duration::option"
    )]
    pub warmup: Option<Duration>,
    /// The payload kinds of this cell, in place of `workload.payload` (the Node.js campaign
    /// runs the oRPC benchmarks' `dated` procedure on the JSON stacks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Vec<Payload>>,
    /// (1.4) What sends this cell's calls, in place of `workload.client_mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_mode: Option<ClientMode>,
}

impl Cell {
    /// The payload kinds this cell runs: its own, else the workload's.
    pub fn payloads<'a>(&'a self, workload: &'a Workload) -> &'a [Payload] {
        self.payload.as_deref().unwrap_or(&workload.payload)
    }

    /// What sends this cell's calls: its own mode, else the workload's.
    pub fn client_mode(&self, workload: &Workload) -> ClientMode {
        self.client_mode.unwrap_or(workload.client_mode)
    }

    /// The shapes this cell runs: its own, else the workload's.
    pub fn shapes<'a>(&'a self, workload: &'a Workload) -> &'a [Shape] {
        self.shapes.as_deref().unwrap_or(&workload.shapes)
    }

    /// The load models this cell runs: its own, else the workload's.
    pub fn loads<'a>(&'a self, workload: &'a Workload) -> &'a [LoadSpec] {
        self.load.as_deref().unwrap_or(&workload.load)
    }
}

/// Stacks whose transport decides TLS for them: `quic` always has it, `zmq` never; the
/// controller refuses a campaign that asks otherwise (`tls`), before any peer is asked.
pub fn tls_refusal(stack: &str, tls: bool) -> Option<&'static str> {
    match (stack, tls) {
        ("quic", false) => Some(
            "quic cannot run with tls = false: QUIC has TLS 1.3 inside (put quic cells in a campaign with TLS)",
        ),
        ("zmq", true) => Some(
            "zmq has no TLS (ZeroMQ's CurveZMQ is another protocol): set tls = false at the top of the campaign",
        ),
        _ => None,
    }
}

/// The workload matrix: every combination of the listed values is a sample configuration.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// RPC shapes (default: all four).
    #[serde(default = "all_shapes")]
    pub shapes: Vec<Shape>,
    /// Concurrency levels (lanes).
    pub concurrency: Vec<u32>,
    /// Request payload sizes in bytes.
    #[serde(default = "default_size")]
    pub request_size: Vec<u32>,
    /// Response payload sizes in bytes.
    #[serde(default = "default_size")]
    pub response_size: Vec<u32>,
    /// `true`: the k-th request size goes with the k-th response size only (1 KiB both ways,
    /// 64 KiB both ways), instead of every combination; both lists then have the same length.
    #[serde(default)]
    pub paired_sizes: bool,
    /// Messages in each streamed direction of a streaming operation.
    #[serde(default = "default_messages_per_stream")]
    pub messages_per_stream: u32,
    /// Payload kinds: `zeros` (default), `structured` and (1.4, JSON stacks) `dated`.
    #[serde(default = "default_payload")]
    pub payload: Vec<Payload>,
    /// (1.4) What sends the calls: `official` (the default) or `replay` (docs/peer-protocol.md
    /// "Client modes"); a cell may give its own.
    #[serde(default, skip_serializing_if = "ClientMode::is_official")]
    pub client_mode: ClientMode,
    /// Load models (see [`crate::load`]).
    #[serde(
        default = "default_load",
        deserialize_with = "crate::load::deserialize_loads"
    )]
    pub load: Vec<LoadSpec>,
}

impl Workload {
    /// The workload of a campaign without a `[workload]` table: no concurrency, so a campaign
    /// with cells is told to give one.
    fn absent() -> Workload {
        Workload {
            shapes: all_shapes(),
            concurrency: Vec::new(),
            request_size: default_size(),
            response_size: default_size(),
            paired_sizes: false,
            messages_per_stream: default_messages_per_stream(),
            payload: default_payload(),
            client_mode: ClientMode::Official,
            load: default_load(),
        }
    }

    /// The (request, response) sizes the matrix runs: every combination, or the pairs.
    pub fn size_pairs(&self) -> Vec<(u32, u32)> {
        if self.paired_sizes {
            return self
                .request_size
                .iter()
                .copied()
                .zip(self.response_size.iter().copied())
                .collect();
        }
        let mut pairs = Vec::new();
        for &request in &self.request_size {
            for &response in &self.response_size {
                pairs.push((request, response));
            }
        }
        pairs
    }

    /// Lists of unique values, load models and shapes that fit together, ranges.
    fn validate(&self, problems: &mut Problems) {
        non_empty_unique(problems, "workload.shapes", &self.shapes);
        non_empty_unique(problems, "workload.concurrency", &self.concurrency);
        non_empty_unique(problems, "workload.request_size", &self.request_size);
        non_empty_unique(problems, "workload.response_size", &self.response_size);
        if self.paired_sizes && self.request_size.len() != self.response_size.len() {
            problems.add(
                "workload.paired_sizes",
                format!(
                    "paired sizes need as many response sizes as request sizes ({} and {})",
                    self.request_size.len(),
                    self.response_size.len()
                ),
            );
        }
        non_empty_unique(problems, "workload.load", &self.load);
        non_empty_unique(problems, "workload.payload", &self.payload);
        for (i, load) in self.load.iter().enumerate() {
            for (path, message) in load.validate(&format!("workload.load[{i}]")) {
                problems.add(path, message);
            }
        }
        for (i, &c) in self.concurrency.iter().enumerate() {
            if !(1..=10_000).contains(&c) {
                problems.add(
                    format!("workload.concurrency[{i}]"),
                    format!("expected 1 to 10000 lanes, got {c}"),
                );
            }
        }
        for (field, sizes) in [
            ("request_size", &self.request_size),
            ("response_size", &self.response_size),
        ] {
            for (i, &s) in sizes.iter().enumerate() {
                if s > MAX_PAYLOAD {
                    problems.add(
                        format!("workload.{field}[{i}]"),
                        format!("expected at most {MAX_PAYLOAD} bytes (16 MiB), got {s}"),
                    );
                }
            }
        }
        if self.payload.contains(&Payload::Structured) {
            for (field, sizes) in [
                ("request_size", &self.request_size),
                ("response_size", &self.response_size),
            ] {
                for (i, &s) in sizes.iter().enumerate() {
                    if s == 1 || s == 2 {
                        problems.add(
                            format!("workload.{field}[{i}]"),
                            format!(
                                "a structured payload is 0 or at least 3 bytes (docs/peer-protocol.md), got {s}; \
                                 every peer refuses it"
                            ),
                        );
                    }
                }
            }
        }
        if !(1..=1_000_000).contains(&self.messages_per_stream) {
            problems.add(
                "workload.messages_per_stream",
                format!("expected 1 to 1000000, got {}", self.messages_per_stream),
            );
        }
    }
}

fn all_shapes() -> Vec<Shape> {
    Shape::ALL.to_vec()
}
fn default_size() -> Vec<u32> {
    vec![256]
}
fn default_messages_per_stream() -> u32 {
    128
}
fn default_load() -> Vec<LoadSpec> {
    vec![LoadSpec::Closed]
}
fn default_payload() -> Vec<Payload> {
    vec![Payload::Zeros]
}

/// Warmup, admission window and drain bound.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Untimed warmup after connecting.
    #[serde(default = "default_warmup", with = "duration")]
    pub warmup: Duration,
    /// Fixed admission window: no operation starts after it.
    #[serde(default = "default_window", with = "duration")]
    pub window: Duration,
    /// How long admitted operations may take to finish after the window.
    #[serde(default = "default_drain", with = "duration")]
    pub drain: Duration,
}

fn default_warmup() -> Duration {
    Duration::from_secs(1)
}
fn default_window() -> Duration {
    Duration::from_secs(5)
}
fn default_drain() -> Duration {
    Duration::from_secs(5)
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            warmup: default_warmup(),
            window: default_window(),
            drain: default_drain(),
        }
    }
}

/// Bounds on every step of a sample; a peer that misses one fails the sample and is killed.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// From spawning the server to its `ready` event.
    #[serde(default = "default_ready", with = "duration")]
    pub ready: Duration,
    /// From spawning the client to its `armed` event, on top of the warmup.
    #[serde(default = "default_armed", with = "duration")]
    pub armed: Duration,
    /// From `START` to the `sample` event, on top of window and drain.
    #[serde(default = "default_sample", with = "duration")]
    pub sample: Duration,
    /// From `SHUTDOWN` to `stopped` and exit.
    #[serde(default = "default_shutdown", with = "duration")]
    pub shutdown: Duration,
    /// From `WINDOW START` or `WINDOW END` to the server's `window` answer (revision 1.2).
    #[serde(default = "default_window_answer", with = "duration")]
    pub window: Duration,
}

fn default_ready() -> Duration {
    Duration::from_secs(10)
}
fn default_armed() -> Duration {
    Duration::from_secs(30)
}
fn default_sample() -> Duration {
    Duration::from_secs(10)
}
fn default_window_answer() -> Duration {
    Duration::from_secs(5)
}
fn default_shutdown() -> Duration {
    Duration::from_secs(5)
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            ready: default_ready(),
            armed: default_armed(),
            sample: default_sample(),
            shutdown: default_shutdown(),
            window: default_window_answer(),
        }
    }
}

/// One problem in a campaign, at a field path such as `cells[1].client`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted field path with indices.
    pub path: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// The problems found so far, in the order found.
#[derive(Debug, Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }
}

/// Why a campaign file was refused.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The file is not valid TOML, or a field has the wrong type or name.
    #[error("{origin}:{line}:{column}: {path}: {message}")]
    Syntax {
        /// The file the text came from.
        origin: String,
        /// 1-based line of the offending text (0 when unknown).
        line: usize,
        /// 1-based column.
        column: usize,
        /// Field path (`.` at the top level).
        path: String,
        /// What the parser expected.
        message: String,
    },
    /// The structure is fine but the meaning is not; every problem is listed.
    #[error("{}", render_problems(origin, problems))]
    Invalid {
        /// The file the text came from.
        origin: String,
        /// Every problem found.
        problems: Vec<Problem>,
    },
}

fn render_problems(origin: &str, problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("{origin}: {}: {}", p.path, p.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Campaign bytes as text: TOML is UTF-8, and a file that is not is refused with the line and
/// column of its first invalid byte.
pub fn decode(bytes: &[u8], origin: &str) -> Result<String, CampaignError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            // Everything before the bad byte is valid UTF-8.
            let before = std::str::from_utf8(good).unwrap_or_default();
            let (line, column) = line_column(before, before.len());
            Err(CampaignError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                path: ".".to_string(),
                message: format!(
                    "the file is not UTF-8 (invalid byte 0x{:02x}); save it as UTF-8",
                    bytes[e.valid_up_to()]
                ),
            })
        }
    }
}

impl Campaign {
    /// Parses and validates campaign text; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Campaign, CampaignError> {
        let syntax = |path: String, err: toml::de::Error| {
            let (line, column) = err.span().map_or((0, 0), |s| line_column(text, s.start));
            CampaignError::Syntax {
                origin: origin.to_string(),
                line,
                column,
                path,
                message: err.message().trim().to_string(),
            }
        };
        let deserializer =
            toml::Deserializer::parse(text).map_err(|e| syntax(".".to_string(), e))?;
        let campaign: Campaign = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let path = e.path().to_string();
            syntax(path, e.into_inner())
        })?;
        let problems = campaign.validate();
        if problems.is_empty() {
            Ok(campaign)
        } else {
            Err(CampaignError::Invalid {
                origin: origin.to_string(),
                problems,
            })
        }
    }

    /// Checks ids, references and ranges; returns every problem found, in file order.
    pub fn validate(&self) -> Vec<Problem> {
        let mut problems = Problems::default();
        if !is_id(&self.name) {
            problems.add("name", id_expectation(&self.name));
        }
        if self.repetitions == 0 || self.repetitions > 1000 {
            problems.add(
                "repetitions",
                format!("expected 1 to 1000 rounds, got {}", self.repetitions),
            );
        }
        problems.0.extend(self.network.validate());
        let commands_only = self.cells.is_empty() && !self.commands.is_empty();
        if !commands_only {
            self.validate_peers(&mut problems);
            self.validate_cells(&mut problems);
            self.workload.validate(&mut problems);
        }
        self.validate_commands(&mut problems);
        self.validate_bounds(&mut problems);
        problems.0
    }

    fn validate_peers(&self, problems: &mut Problems) {
        if self.peers.is_empty() {
            problems.add(
                "peers",
                "expected at least one [[peers]] entry (or a campaign of [[commands]] only)",
            );
        }
        for (i, peer) in self.peers.iter().enumerate() {
            if !is_id(&peer.id) {
                problems.add(format!("peers[{i}].id"), id_expectation(&peer.id));
            }
            if self.peers[..i].iter().any(|p| p.id == peer.id) {
                problems.add(
                    format!("peers[{i}].id"),
                    format!("duplicate peer id {:?}", peer.id),
                );
            }
            match peer.command.as_deref() {
                Some([]) => problems.add(
                    format!("peers[{i}].command"),
                    format!(
                        "peer {:?} has command = [], an empty argument vector: give the program and its arguments, e.g. [\"rpcarena-peer-rust\"], or leave command out to run the peer of peers/{}/",
                        peer.id, peer.id
                    ),
                ),
                Some([first, ..]) if first.trim().is_empty() => problems.add(
                    format!("peers[{i}].command"),
                    "expected a non-empty first element, e.g. [\"rpcarena-peer-rust\"] (or no command: the peer of peers/<id>/)",
                ),
                _ => {}
            }
        }
    }

    /// Cells: plain unique ids, defined peers, a plain stack name; and the baseline names one.
    fn validate_cells(&self, problems: &mut Problems) {
        let peer_ids: Vec<&str> = self.peers.iter().map(|p| p.id.as_str()).collect();
        if self.cells.is_empty() {
            problems.add(
                "cells",
                "expected at least one [[cells]] entry, or [[commands]] to time",
            );
        }
        for (i, cell) in self.cells.iter().enumerate() {
            if !is_id(&cell.id) {
                problems.add(format!("cells[{i}].id"), id_expectation(&cell.id));
            }
            if self.cells[..i].iter().any(|c| c.id == cell.id) {
                problems.add(
                    format!("cells[{i}].id"),
                    format!("duplicate cell id {:?}", cell.id),
                );
            }
            for (field, peer) in [("client", &cell.client), ("server", &cell.server)] {
                if !peer_ids.contains(&peer.as_str()) {
                    problems.add(
                        format!("cells[{i}].{field}"),
                        format!(
                            "peer {peer:?} is not defined; expected one of the [[peers]] ids: {}",
                            peer_ids.join(", ")
                        ),
                    );
                }
            }
            if !is_id(&cell.stack) {
                problems.add(format!("cells[{i}].stack"), id_expectation(&cell.stack));
            }
            if let Some(shapes) = &cell.shapes {
                non_empty_unique(problems, &format!("cells[{i}].shapes"), shapes);
            }
            if let Some(loads) = &cell.load {
                non_empty_unique(problems, &format!("cells[{i}].load"), loads);
                for (j, load) in loads.iter().enumerate() {
                    for (path, message) in load.validate(&format!("cells[{i}].load[{j}]")) {
                        problems.add(path, message);
                    }
                }
            }
            if let Some(payloads) = &cell.payload {
                non_empty_unique(problems, &format!("cells[{i}].payload"), payloads);
            }
            self.validate_cell_loads(i, cell, problems);
            self.validate_cell_payloads(i, cell, problems);
            if let Some(why) = tls_refusal(&cell.stack, self.tls) {
                problems.add(format!("cells[{i}].stack"), why);
            }
        }
        if let Some(baseline) = &self.baseline
            && !self.cells.iter().any(|c| &c.id == baseline)
        {
            problems.add(
                "baseline",
                format!(
                    "cell {baseline:?} is not defined; expected one of: {}",
                    self.cells
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }

    /// The timing of the samples of cell `id`: the campaign's, with the cell's own warmup if it
    /// gives one (an unknown id gets the campaign's).
    pub fn timing_of(&self, id: &str) -> Timing {
        let mut timing = self.timing.clone();
        if let Some(warmup) = self
            .cells
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.warmup)
        {
            timing.warmup = warmup;
        }
        timing
    }

    /// The warmups of every cell, labelled as campaign fields (`timing.warmup`,
    /// `cells[i].warmup`), for the checks that every duration gets.
    fn warmups(&self) -> Vec<(String, Duration)> {
        let own = self.cells.iter().enumerate();
        std::iter::once(("timing.warmup".to_string(), self.timing.warmup))
            .chain(own.filter_map(|(i, c)| c.warmup.map(|w| (format!("cells[{i}].warmup"), w))))
            .collect()
    }

    /// Commands: plain unique ids, not shared with a cell, and each entry's own checks.
    fn validate_commands(&self, problems: &mut Problems) {
        for (i, command) in self.commands.iter().enumerate() {
            let path = format!("commands[{i}]");
            if !is_id(&command.id) {
                problems.add(format!("{path}.id"), id_expectation(&command.id));
            }
            if self.commands[..i].iter().any(|c| c.id == command.id)
                || self.cells.iter().any(|c| c.id == command.id)
            {
                problems.add(
                    format!("{path}.id"),
                    format!(
                        "duplicate id {:?} (commands and cells share the report's names): rename it",
                        command.id
                    ),
                );
            }
            for (path, message) in command.validate(&path) {
                problems.add(path, message);
            }
        }
    }

    /// Send-saturation sends one-way messages: on client streams or as `send` commands, so every
    /// shape it runs with must be one of those two.
    fn validate_cell_loads(&self, i: usize, cell: &Cell, problems: &mut Problems) {
        let (shapes, loads) = (cell.shapes(&self.workload), cell.loads(&self.workload));
        let load_path = |j: usize| match cell.load {
            Some(_) => format!("cells[{i}].load[{j}]"),
            None => format!("workload.load[{j}]"),
        };
        for (j, load) in loads.iter().enumerate() {
            let other = shapes
                .iter()
                .find(|s| !matches!(s, Shape::ClientStream | Shape::Send));
            if let (LoadSpec::SendSaturation { .. }, Some(other)) = (load, other) {
                problems.add(
                    load_path(j),
                    format!(
                        "send-saturation sends one-way messages (on client streams, or as send commands), so cell {:?} cannot run it with shape {other}: give the cell shapes = [\"client_stream\"] or [\"send\"], or its own load = [...] without send-saturation",
                        cell.id
                    ),
                );
            }
        }
    }

    /// `dated` is the oRPC benchmarks' unary procedure: every shape its cell runs must be unary.
    fn validate_cell_payloads(&self, i: usize, cell: &Cell, problems: &mut Problems) {
        let payloads = cell.payloads(&self.workload);
        let Some(j) = payloads.iter().position(|p| *p == Payload::Dated) else {
            return;
        };
        if let Some(other) = cell
            .shapes(&self.workload)
            .iter()
            .find(|s| **s != Shape::Unary)
        {
            let path = match cell.payload {
                Some(_) => format!("cells[{i}].payload[{j}]"),
                None => format!("workload.payload[{j}]"),
            };
            problems.add(
                path,
                format!(
                    "payload dated is the oRPC benchmarks' unary procedure, so cell {:?} cannot run it with shape {other}: give the cell shapes = [\"unary\"], or its own payload = [...] without dated",
                    cell.id
                ),
            );
        }
    }

    /// Noise controls, the window and every timeout.
    fn validate_bounds(&self, problems: &mut Problems) {
        if self
            .noise
            .max_load
            .is_some_and(|l| !(l >= 0.0 && l.is_finite()))
        {
            problems.add(
                "noise.max_load",
                "expected a load average of 0 or more (0 disables the gate)",
            );
        }
        if !(self.noise.drift_threshold > 0.0 && self.noise.drift_threshold < 1.0) {
            problems.add(
                "noise.drift_threshold",
                format!(
                    "expected a fraction between 0 and 1, e.g. 0.03, got {}",
                    self.noise.drift_threshold
                ),
            );
        }
        if self.timing.window < Duration::from_millis(1) {
            problems.add(
                "timing.window",
                format!(
                    "expected a window of at least 1ms (peers take whole milliseconds), got {}",
                    duration::format(&self.timing.window)
                ),
            );
        }
        // Peers take warmup, window and drain in whole milliseconds: refuse what would be cut.
        for (field, value) in self.warmups().into_iter().chain([
            ("timing.window".to_string(), self.timing.window),
            ("timing.drain".to_string(), self.timing.drain),
        ]) {
            if value.subsec_nanos() % 1_000_000 != 0 {
                problems.add(
                    field,
                    format!(
                        "expected whole milliseconds (peers take milliseconds), got {}; \
                         {} would be cut to {}",
                        duration::format(&value),
                        duration::format(&value),
                        duration::format(&Duration::from_millis(value.as_millis() as u64))
                    ),
                );
            }
        }
        self.validate_timeouts(problems);
        self.validate_size(problems);
    }

    /// Every duration at most a day; every timeout longer than zero.
    fn validate_timeouts(&self, problems: &mut Problems) {
        let timeouts = [
            ("timeouts.ready", self.timeouts.ready),
            ("timeouts.armed", self.timeouts.armed),
            ("timeouts.sample", self.timeouts.sample),
            ("timeouts.shutdown", self.timeouts.shutdown),
            ("timeouts.window", self.timeouts.window),
        ];
        let timeouts = timeouts.map(|(f, v)| (f.to_string(), v));
        for (field, value) in self.warmups().into_iter().chain(
            [
                ("timing.window".to_string(), self.timing.window),
                ("timing.drain".to_string(), self.timing.drain),
                ("noise.gate_timeout".to_string(), self.noise.gate_timeout),
            ]
            .into_iter()
            .chain(timeouts.clone()),
        ) {
            if value > MAX_DURATION {
                problems.add(
                    field,
                    format!(
                        "expected at most {} (a day), got {}",
                        duration::format(&MAX_DURATION),
                        duration::format(&value)
                    ),
                );
            }
        }
        for (field, value) in timeouts {
            if value.is_zero() {
                problems.add(field, "expected a timeout longer than zero");
            }
        }
    }

    /// How many samples a run plans: repetitions x configurations, counted without expanding
    /// the matrix (so an absurd one costs nothing to refuse). Saturates.
    pub fn planned_samples(&self) -> u64 {
        let w = &self.workload;
        let per_load = |loads: &[LoadSpec]| -> u64 {
            loads
                .iter()
                .map(|l| match l.fixed_concurrency() {
                    Some(_) => 1,
                    None => w.concurrency.len() as u64,
                })
                .fold(0u64, u64::saturating_add)
        };
        // Each cell: its shapes times its load models (its own or the workload's).
        let per_cell: u64 = self
            .cells
            .iter()
            .map(|c| (c.shapes(w).len() as u64).saturating_mul(per_load(c.loads(w))))
            .fold(0u64, u64::saturating_add);
        let peer_samples = [
            per_cell,
            w.size_pairs().len() as u64,
            w.payload.len() as u64,
            u64::from(self.repetitions),
        ]
        .into_iter()
        .fold(1u64, u64::saturating_mul);
        let command_samples =
            (self.commands.len() as u64).saturating_mul(u64::from(self.repetitions));
        peer_samples.saturating_add(command_samples)
    }

    /// A rough length of one sample: warmup, window, and a second of start and teardown.
    pub fn sample_estimate(&self) -> Duration {
        self.timing
            .warmup
            .saturating_add(self.timing.window)
            .saturating_add(Duration::from_secs(1))
    }

    /// The cap on planned samples.
    fn validate_size(&self, problems: &mut Problems) {
        if self.max_samples == 0 {
            problems.add("max_samples", "expected at least 1");
            return;
        }
        let planned = self.planned_samples();
        if planned > self.max_samples {
            let total = u32::try_from(planned)
                .ok()
                .and_then(|n| self.sample_estimate().checked_mul(n));
            problems.add(
                "max_samples",
                format!(
                    "the campaign plans {planned} samples (cells x shapes x loads x concurrency x \
                     sizes x payloads x repetitions), more than max_samples = {}; at about {} \
                     per sample that is {}. Shrink the matrix, or raise max_samples if you mean it",
                    self.max_samples,
                    duration::format(&self.sample_estimate()),
                    total.map_or("more than a century".to_string(), |t| duration::format(
                        &Duration::from_secs(t.as_secs())
                    ))
                ),
            );
        }
    }

    /// The baseline cell: the named one, else the first.
    pub fn baseline_cell(&self) -> &str {
        self.baseline
            .as_deref()
            .or_else(|| self.cells.first().map(|c| c.id.as_str()))
            .unwrap_or("")
    }

    /// The peer with this id.
    pub fn peer(&self, id: &str) -> Option<&Peer> {
        self.peers.iter().find(|p| p.id == id)
    }
}

/// Largest payload a campaign may ask for.
pub const MAX_PAYLOAD: u32 = 16 * 1024 * 1024;

/// Ids become parts of file names and CSV cells: keep them plain.
fn is_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !text.starts_with('.')
}

fn id_expectation(text: &str) -> String {
    format!(
        "expected 1 to 64 characters of letters, digits, '-', '_' or '.' (not starting with '.'), got {text:?}"
    )
}

fn non_empty_unique<T: PartialEq + fmt::Debug>(problems: &mut Problems, path: &str, values: &[T]) {
    if values.is_empty() {
        problems.add(path, "expected at least one value");
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            problems.add(format!("{path}[{i}]"), format!("duplicate value {v:?}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One peer, one cell, two concurrencies: every test below varies it.
    static GOOD: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        rpcarena_fixtures::campaign("t", 7)
            .peer("rust", &["rpcarena-peer-rust"])
            .cells("rust", &["grpc"])
            .section("[workload]\nconcurrency = [1, 4]")
            .build()
    });

    #[test]
    fn parses_with_defaults() {
        let c = Campaign::parse(&GOOD, "t.toml").unwrap();
        assert_eq!(c.repetitions, 3);
        assert_eq!(c.workload.shapes, Shape::ALL.to_vec());
        assert_eq!(c.workload.request_size, vec![256]);
        assert_eq!(c.workload.messages_per_stream, 128);
        assert_eq!(c.timing.window, Duration::from_secs(5));
        assert_eq!(c.network.backend, NetworkBackend::Loopback);
        assert_eq!(c.baseline_cell(), "rust-grpc");
    }

    #[test]
    fn network_as_name_or_table() {
        let c = Campaign::parse(&format!("network = \"loopback\"\n{}", *GOOD), "t").unwrap();
        assert_eq!(c.network.backend, NetworkBackend::Loopback);
        let text = format!("{}\n[network]\nbackend = \"loopback\"\n", *GOOD);
        assert_eq!(
            Campaign::parse(&text, "t").unwrap().network.backend,
            NetworkBackend::Loopback
        );
        let err = Campaign::parse(&format!("network = \"emulated\"\n{}", *GOOD), "t").unwrap_err();
        assert!(
            err.to_string()
                .contains("t: network.profile: expected a link profile name"),
            "{err}"
        );
        let err = Campaign::parse(&format!("network = \"wan\"\n{}", *GOOD), "t").unwrap_err();
        assert!(err.to_string().contains("network"), "{err}");
    }

    #[test]
    fn type_errors_name_file_line_and_path() {
        let text = GOOD.replace("concurrency = [1, 4]", "concurrency = [1, \"four\"]");
        let err = Campaign::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:12:19: "), "{err}");
        assert!(err.contains("workload.concurrency[1]"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused_with_their_path() {
        let text = GOOD.replace("seed = 7", "seed = 7\nrepetition = 5");
        let err = Campaign::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(err.contains("unknown field `repetition`"), "{err}");
    }

    #[test]
    fn bad_durations_and_shapes_explain_themselves() {
        let text = format!("{}\n[timing]\nwindow = \"5\"\n", *GOOD);
        let err = Campaign::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(
            err.contains("timing.window") && err.contains("\"2s\""),
            "{err}"
        );
        let text = GOOD.replace(
            "concurrency = [1, 4]",
            "concurrency = [1]\nshapes = [\"stream\"]",
        );
        let err = Campaign::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(
            err.contains("workload.shapes[0]") && err.contains("client_stream"),
            "{err}"
        );
    }

    #[test]
    fn meaning_errors_are_all_listed_with_paths() {
        let text = GOOD
            .replace("server = \"rust\"", "server = \"go\"")
            .replace("concurrency = [1, 4]", "concurrency = [0, 4, 4]")
            .replace("seed = 7", "seed = 7\nbaseline = \"nope\"\nrepetitions = 0");
        let err = Campaign::parse(&text, "c.toml").unwrap_err();
        let CampaignError::Invalid { problems, .. } = &err else {
            panic!("{err}")
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "repetitions",
                "cells[0].server",
                "baseline",
                "workload.concurrency[2]",
                "workload.concurrency[0]"
            ]
        );
        assert!(
            err.to_string()
                .contains("c.toml: cells[0].server: peer \"go\" is not defined")
        );
    }

    #[test]
    fn ids_must_be_plain() {
        let text = GOOD.replace("id = \"rust-grpc\"", "id = \"rust grpc/1\"");
        let err = Campaign::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(err.contains("cells[0].id"), "{err}");
    }

    fn problems_of(text: &str) -> Vec<Problem> {
        match Campaign::parse(text, "c.toml") {
            Err(CampaignError::Invalid { problems, .. }) => problems,
            other => panic!("expected problems, got {other:?}"),
        }
    }

    #[test]
    fn absurd_durations_are_refused_not_overflowed() {
        // Before the fix: `validate` panicked "overflow when multiplying duration by scalar".
        let text = format!(
            "{}\n[timing]\nwindow = \"100000000000years\"\n[timeouts]\nshutdown = \"500000000000years\"\n",
            GOOD.replace("seed = 7", "seed = 7\nrepetitions = 10")
        );
        let problems = problems_of(&text);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert!(paths.contains(&"timing.window"), "{problems:?}");
        assert!(paths.contains(&"timeouts.shutdown"), "{problems:?}");
        assert!(problems[0].message.contains("at most 1day"), "{problems:?}");
    }

    #[test]
    fn sub_millisecond_timing_is_refused_not_truncated() {
        // Before the fix: 1500us ran as 1 ms, and 500us as a zero window every peer refuses.
        for (value, path) in [("1500us", "timing.warmup"), ("500us", "timing.window")] {
            let field = path.trim_start_matches("timing.");
            let text = format!("{}\n[timing]\n{field} = \"{value}\"\n", *GOOD);
            let problems = problems_of(&text);
            assert!(
                problems.iter().any(|p| p.path == path),
                "{value}: {problems:?}"
            );
        }
        let text = format!("{}\n[timing]\nwindow = \"1500us\"\n", *GOOD);
        let problems = problems_of(&text);
        assert!(
            problems[0].message.contains("would be cut to 1ms"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_cells_own_warmup_replaces_the_campaigns_and_is_checked_as_it() {
        let own =
            |w: &str| GOOD.replacen("[[cells]]\n", &format!("[[cells]]\nwarmup = \"{w}\"\n"), 1);
        let c = Campaign::parse(&own("30s"), "t.toml").unwrap();
        assert_eq!(c.timing_of("rust-grpc").warmup, Duration::from_secs(30));
        assert_eq!(c.timing_of("rust-grpc").window, c.timing.window);
        assert_eq!(c.timing_of("elsewhere").warmup, c.timing.warmup);
        let problems = problems_of(&own("1500us"));
        assert!(
            problems.iter().any(|p| p.path == "cells[0].warmup"),
            "{problems:?}"
        );
        let problems = problems_of(&own("2d"));
        assert!(
            problems.iter().any(|p| p.path == "cells[0].warmup"),
            "{problems:?}"
        );
    }

    #[test]
    fn what_run_or_every_peer_refuses_is_refused_by_validate() {
        // An unknown profile name: `run` refused it after validate had said "valid".
        let text = format!(
            "{}\n[network]\nbackend = \"emulated\"\nprofile = \"moon\"\n",
            *GOOD
        );
        let problems = problems_of(&text);
        assert_eq!(problems[0].path, "network.profile", "{problems:?}");
        // Structured payloads of 1 or 2 bytes: every peer refuses them.
        let text = GOOD.replace(
            "concurrency = [1, 4]",
            "concurrency = [1]\npayload = [\"structured\"]\nrequest_size = [0, 2]\nresponse_size = [1]",
        );
        let paths: Vec<String> = problems_of(&text).into_iter().map(|p| p.path).collect();
        assert_eq!(
            paths,
            ["workload.request_size[1]", "workload.response_size[0]"]
        );
    }

    #[test]
    fn an_explicit_empty_peer_command_is_refused_an_absent_one_is_the_peer_folder() {
        // Before the fix `command = []` read as an absent command and `validate` said "valid".
        let line = "command = [\"rpcarena-peer-rust\"]\n";
        assert!(GOOD.contains(line), "{}", *GOOD);
        let err = Campaign::parse(&GOOD.replace(line, "command = []\n"), "c.toml").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("c.toml") && text.contains("peers[0].command"),
            "{text}"
        );
        assert!(text.contains("peer \"rust\" has command = []"), "{text}");
        assert!(text.contains("leave command out"), "{text}");
        let absent = Campaign::parse(&GOOD.replace(line, ""), "c.toml").unwrap();
        assert_eq!(absent.peers[0].command, None);
        let given = Campaign::parse(&GOOD, "c.toml").unwrap();
        assert_eq!(
            given.peers[0].command.as_deref(),
            Some(&["rpcarena-peer-rust".to_string()][..])
        );
    }

    #[test]
    fn tls_and_the_stacks_that_decide_it_themselves_are_checked_with_paths() {
        let campaign = |tls: &str, stacks: &[&str]| {
            rpcarena_fixtures::campaign("t", 7)
                .key(tls)
                .peer("rust", &["rpcarena-peer-rust"])
                .cells("rust", stacks)
                .section("[workload]\nconcurrency = [1]\nshapes = [\"unary\"]")
                .build()
        };
        let c = Campaign::parse(&campaign("tls = false", &["grpc", "zmq"]), "t").unwrap();
        assert!(!c.tls);
        assert!(crate::matrix::expand(&c).iter().all(|config| !config.tls));
        assert!(Campaign::parse(&campaign("", &["grpc"]), "t").unwrap().tls);
        let problems = problems_of(&campaign("", &["grpc", "zmq"]));
        assert_eq!(problems[0].path, "cells[1].stack", "{problems:?}");
        assert!(
            problems[0].message.contains("zmq has no TLS"),
            "{problems:?}"
        );
        let problems = problems_of(&campaign("tls = false", &["quic"]));
        assert_eq!(problems[0].path, "cells[0].stack", "{problems:?}");
        assert!(
            problems[0].message.contains("QUIC has TLS 1.3 inside"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_cell_runs_its_own_load_models_and_send_saturation_takes_send() {
        let text = rpcarena_fixtures::campaign("t", 7)
            .peer("rust", &["rpcarena-peer-rust"])
            .cell("req", "rust", "rust", "grpc")
            .cell("cmd", "rust", "rust", "grpc")
            .cell_line("shapes = [\"send\"]\nload = [{ model = \"send-saturation\", streams = 8 }]")
            .section("[workload]\nconcurrency = [1]\nshapes = [\"unary\"]\nload = [\"closed\", \"window\"]")
            .build();
        let c = Campaign::parse(&text, "t").unwrap();
        let keys: Vec<String> = crate::matrix::expand(&c)
            .into_iter()
            .map(|c| c.key)
            .collect();
        assert_eq!(
            keys,
            [
                "req/unary/c1/256B-256B/zeros/closed",
                "req/unary/c100/256B-256B/zeros/window-100",
                "cmd/send/c8/256B-256B/zeros/send-saturation-8"
            ]
        );
        assert_eq!(c.planned_samples(), 3 * u64::from(c.repetitions));
        // send-saturation with a request shape: refused at the cell's own load
        let bad = text.replace("shapes = [\"send\"]", "shapes = [\"unary\"]");
        let problems = problems_of(&bad);
        assert_eq!(problems[0].path, "cells[1].load[0]", "{problems:?}");
        assert!(
            problems[0]
                .message
                .contains("cannot run it with shape unary"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_non_utf8_campaign_is_refused_with_its_line() {
        let mut bytes = GOOD.as_bytes().to_vec();
        let at = GOOD.find("[workload]").unwrap();
        bytes.insert(at + 1, 0xff);
        let err = decode(&bytes, "c.toml").unwrap_err().to_string();
        // Before the fix: "stream did not contain valid UTF-8", no line.
        assert!(err.starts_with("c.toml:11:2: "), "{err}");
        assert!(err.contains("not UTF-8"), "{err}");
    }

    #[test]
    fn too_many_samples_are_refused_with_an_estimate_and_the_cap_is_configurable() {
        let sizes: Vec<String> = (1..=300).map(|n| n.to_string()).collect();
        let sizes = sizes.join(", ");
        let text = GOOD
            .replace("seed = 7", "seed = 7\nrepetitions = 1000")
            .replace(
                "concurrency = [1, 4]",
                &format!("concurrency = [1]\nrequest_size = [{sizes}]\nresponse_size = [{sizes}]"),
            );
        // Before the fix: accepted (90 million samples), and `run` allocated 1.44 GB.
        let problems = problems_of(&text);
        assert_eq!(problems[0].path, "max_samples");
        assert!(
            problems[0].message.contains("plans 360000000 samples"),
            "{problems:?}"
        );
        assert!(
            problems[0].message.contains("per sample that is"),
            "{problems:?}"
        );
        let small = GOOD.replace("seed = 7", "seed = 7\nmax_samples = 7");
        // 1 cell x 4 shapes x 2 concurrencies x 3 repetitions = 24.
        assert_eq!(problems_of(&small)[0].path, "max_samples");
        let raised = GOOD.replace("seed = 7", "seed = 7\nmax_samples = 24");
        assert_eq!(Campaign::parse(&raised, "c").unwrap().planned_samples(), 24);
    }

    /// A campaign of commands only: no peers, cells or workload.
    const COMMANDS: &str = "name = \"c\"\nseed = 1\n[[commands]]\nid = \"tsc-orpc\"\ncommand = [\"node\", \"--version\"]\n";

    #[test]
    fn a_campaign_may_have_only_commands() {
        let c = Campaign::parse(COMMANDS, "c.toml").unwrap();
        assert_eq!(c.commands[0].command, ["node", "--version"]);
        assert_eq!(c.commands[0].timeout, Duration::from_secs(600));
        assert_eq!(c.planned_samples(), 3, "one command x three rounds");
        let with_cells =
            format!("{}\n{COMMANDS}", GOOD.as_str()).replacen("name = \"c\"\nseed = 1\n", "", 1);
        let both = Campaign::parse(&with_cells, "c.toml").unwrap();
        assert_eq!(both.planned_samples(), 24 + 3);
    }

    #[test]
    fn an_unknown_parser_names_its_path_and_the_known_ones() {
        let text = format!("{COMMANDS}parser = \"tsc\"\n");
        let err = Campaign::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(err.contains("commands[0].parser"), "{err}");
        assert!(err.contains("tsc-extended-diagnostics"), "{err}");
        let good = format!("{COMMANDS}parser = \"tsc-extended-diagnostics\"\n");
        assert!(Campaign::parse(&good, "c.toml").is_ok());
    }

    #[test]
    fn a_command_entry_missing_a_field_or_with_a_bad_value_is_refused_with_its_path() {
        let missing = "name = \"c\"\nseed = 1\n[[commands]]\nid = \"x\"\n";
        let err = Campaign::parse(missing, "c.toml").unwrap_err().to_string();
        assert!(
            err.contains("commands[0]") && err.contains("missing field `command`"),
            "{err}"
        );
        let bad = COMMANDS.replace("[\"node\", \"--version\"]", "[]").replace(
            "id = \"tsc-orpc\"",
            "id = \"a b\"\ntimeout = \"0s\"\nsetup = [\"\"]",
        );
        let paths: Vec<String> = problems_of(&bad).into_iter().map(|p| p.path).collect();
        assert_eq!(
            paths,
            [
                "commands[0].id",
                "commands[0].command",
                "commands[0].setup",
                "commands[0].timeout"
            ]
        );
        let unknown = format!("{COMMANDS}shell = true\n");
        let err = Campaign::parse(&unknown, "c.toml").unwrap_err().to_string();
        assert!(err.contains("unknown field `shell`"), "{err}");
    }

    #[test]
    fn nothing_to_run_and_cells_without_a_workload_are_refused() {
        let empty = problems_of("name = \"c\"\nseed = 1\n");
        assert!(
            empty
                .iter()
                .any(|p| p.path == "cells" && p.message.contains("[[commands]]")),
            "{empty:?}"
        );
        let no_workload = GOOD.replace("[workload]\nconcurrency = [1, 4]", "");
        let problems = problems_of(&no_workload);
        assert!(
            problems.iter().any(|p| p.path == "workload.concurrency"),
            "{problems:?}"
        );
        let twice = format!("{COMMANDS}[[commands]]\nid = \"tsc-orpc\"\ncommand = [\"true\"]\n");
        assert_eq!(problems_of(&twice)[0].path, "commands[1].id");
    }
}
