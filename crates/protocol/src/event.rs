//! Events a peer writes to stdout, and commands the controller writes to its stdin.
//!
//! Every event is one line of JSON with two envelope fields, `protocol` (the version, always
//! first) and `event` (the kind). Unknown fields are ignored so that a later minor addition does
//! not break an older controller; a different `protocol` value is refused with a message that
//! says which side to rebuild.

use crate::PROTOCOL_VERSION;
use crate::counter;
use crate::counter::Counter;
use crate::fields::wire_structs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The role a peer process plays in one sample.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Runs the load against a server and reports the sample.
    Client,
    /// Serves the workload until it is told to shut down.
    Server,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Client => "client",
            Role::Server => "server",
        })
    }
}

/// One event on a peer's stdout.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Answer to the `capabilities` command.
    Capabilities(Capabilities),
    /// A server listens and accepts connections.
    Ready(Ready),
    /// A client is connected, validated, warmed up, and waits for `START`.
    Armed(Armed),
    /// A client's measurement.
    Sample(SampleReport),
    /// Something went wrong; the peer exits non-zero after it.
    Error(PeerError),
    /// The peer shut down cleanly after `SHUTDOWN` (or end of stdin) and is about to exit 0.
    Stopped(Stopped),
    /// Revision 1.2: a server's answer to `WINDOW START` or `WINDOW END`.
    Window(WindowReport),
}

impl Event {
    /// The event's name as it appears in the `event` field.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Capabilities(_) => "capabilities",
            Event::Ready(_) => "ready",
            Event::Armed(_) => "armed",
            Event::Sample(_) => "sample",
            Event::Error(_) => "error",
            Event::Stopped(_) => "stopped",
            Event::Window(_) => "window",
        }
    }

    /// The event as one line of JSON (without the newline), `protocol` first.
    pub fn to_line(&self) -> String {
        // Serializing our own plain data types cannot fail.
        let body = serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"event":"error","phase":"internal","code":"internal","message":"{e}"}}"#)
        });
        format!(r#"{{"protocol":{PROTOCOL_VERSION},{}"#, &body[1..])
    }
}

/// What a peer offers, per role.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Capabilities {
    /// The peer's name, e.g. `rpcarena-peer-rust`.
    pub peer: String,
    /// Implementation language, e.g. `rust`, `go`, `javascript`.
    pub language: String,
    /// The peer's own version.
    pub version: String,
    /// Revision 1.1: the revision of docs/peer-protocol.md the peer follows (`"1.1"`); absent
    /// means 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Revision 1.1: how the peer was built and what runs it (toolchain, flags, runtime), string
    /// to string.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub build: BTreeMap<String, String>,
    /// Revision 1.1: absolute paths of the files and directories the peer runs from, which the
    /// controller hashes into the manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Revision 1.2: what the process can count of its heap allocations; absent means neither
    /// counts nor bytes, and then no event carries `allocations` or `allocated_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<AllocationCounters>,
    /// Revision 1.5: the profiler `rpcarena profile` may use on this peer (`"perf"`: Linux perf
    /// attached from outside, for native code); absent means none, and the peer is not profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler: Option<String>,
    /// Stacks offered when acting as a client and as a server.
    pub roles: Roles,
}

/// Revision 1.5: the profilers a peer may declare in `capabilities` (`profiler`).
pub const PROFILERS: [&str; 1] = ["perf"];

/// Revision 1.2: the heap allocation counters a peer reports (capabilities `allocations`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct AllocationCounters {
    /// `allocations` (heap allocations) is reported in `sample`, `window` and `stopped`.
    pub counts: bool,
    /// `allocated_bytes` (bytes allocated) is reported in `sample`, `window` and `stopped`.
    pub bytes: bool,
    /// What counts them, e.g. `runtime.ReadMemStats Mallocs and TotalAlloc`.
    pub source: String,
}

/// Capabilities per role.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Roles {
    /// Stacks this peer can drive as a client.
    #[serde(default)]
    pub client: Vec<StackCapability>,
    /// Stacks this peer can serve.
    #[serde(default)]
    pub server: Vec<StackCapability>,
}

impl Roles {
    /// The capability for `stack` in `role`, if offered.
    pub fn stack(&self, role: Role, stack: &str) -> Option<&StackCapability> {
        let list = match role {
            Role::Client => &self.client,
            Role::Server => &self.server,
        };
        list.iter().find(|s| s.stack == stack)
    }
}

/// One stack a peer offers in one role.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct StackCapability {
    /// Stack name: `grpc`, `quic`, `tcp` or (1.2) another stack of docs/stacks.md.
    pub stack: String,
    /// Revision 1.2: this role of this stack implements docs/stacks.md's "Conformance faults"
    /// (`--conformance-fault MODE`), so the conformance kit may use it as the misbehaving
    /// partner of another peer. Absent means `false`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub conformance_faults: bool,
    /// Shapes offered: `unary`, `client_stream`, `server_stream`, `bidi`, (1.2) `pingpong`.
    pub shapes: Vec<String>,
    /// Load models offered (clients only): `closed`, `window`, `backpressure`,
    /// `send-saturation`, `open` (see [`load`]).
    #[serde(default)]
    pub load_models: Vec<String>,
    /// Payload kinds offered: `zeros`, `structured`. Empty (an older peer) means zeros only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub payloads: Vec<String>,
    /// Library name to version, e.g. `{"tonic": "0.14.9"}`.
    #[serde(default)]
    pub libraries: BTreeMap<String, String>,
    /// Revision 1.1: the transport settings the peer really uses for this stack, keyed as in
    /// docs/stacks.md ("Settings every peer declares").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, Setting>,
    /// Revision 1.1: one sentence per setting of docs/stacks.md the peer cannot match; present
    /// and empty means none, absent means the peer does not say (1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviations: Option<Vec<String>>,
    /// Revision 1.3: the `--tls` values this role of the stack takes (`on`, `off`); empty (absent)
    /// means `["on"]`. See [`StackCapability::takes_tls`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tls: Vec<String>,
    /// Revision 1.3: shape name to the reason this stack cannot carry it, for the report.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_offered: BTreeMap<String, String>,
    /// Revision 1.4, clients: the `--client-mode` values this stack's client takes (`official`,
    /// `replay`); empty (absent) means `["official"]`. See [`StackCapability::takes_client_mode`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_modes: Vec<String>,
}

impl StackCapability {
    /// Whether this stack runs with `--tls on` (`tls` true) or `--tls off` (false).
    pub fn takes_tls(&self, tls: bool) -> bool {
        let wanted = if tls { "on" } else { "off" };
        if self.tls.is_empty() {
            tls
        } else {
            self.tls.iter().any(|value| value == wanted)
        }
    }

    /// Whether this stack's client takes `--client-mode mode` (`official` when none is listed).
    pub fn takes_client_mode(&self, mode: crate::workload::ClientMode) -> bool {
        if self.client_modes.is_empty() {
            mode == crate::workload::ClientMode::Official
        } else {
            self.client_modes.iter().any(|m| m == mode.as_str())
        }
    }
}

/// Whether `flag` is `false`: a default-`false` field is left out then.
fn is_false(flag: &bool) -> bool {
    !*flag
}

/// The value of one declared stack setting: a JSON string, number, boolean or array of strings
/// (never `null`, which no variant accepts).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum Setting {
    /// `true` or `false`, e.g. `tcp_nodelay`.
    Flag(bool),
    /// A number, e.g. `stream_window` in bytes.
    Number(serde_json::Number),
    /// A string, e.g. `congestion_control`.
    Text(String),
    /// An array of strings, e.g. `tls_versions`.
    List(Vec<String>),
}

impl From<bool> for Setting {
    fn from(value: bool) -> Setting {
        Setting::Flag(value)
    }
}

impl From<u64> for Setting {
    fn from(value: u64) -> Setting {
        Setting::Number(value.into())
    }
}

impl From<&str> for Setting {
    fn from(value: &str) -> Setting {
        Setting::Text(value.to_string())
    }
}

impl From<String> for Setting {
    fn from(value: String) -> Setting {
        Setting::Text(value)
    }
}

impl From<Vec<String>> for Setting {
    fn from(value: Vec<String>) -> Setting {
        Setting::List(value)
    }
}

/// A server is listening.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Ready {
    /// Always `server` in v1.
    pub role: Role,
    /// `host:port` the server accepts connections on (the port it actually bound).
    pub address: String,
    /// The peer's process id.
    pub pid: u32,
}

// `Armed`, `SampleReport`, `TransportStats` and `Interval`: their fields are listed once, in
// `crate::fields`, which also gives `model` their record forms.
crate::client_fields!(wire_structs);
crate::transport_fields!(wire_structs);

/// Values of [`TransportStats::transport`].
pub const TRANSPORTS: [&str; 2] = ["tcp", "quic"];

impl TransportStats {
    /// What the page requires of the object beyond the types parsing already checked, for the
    /// client's (`sample`) and the server's (`stopped`) alike; empty when it is well formed.
    /// Only what holds for every peer's way of counting: a known `transport`, no more
    /// retransmitted segments than packets sent (a retransmission is a packet sent), and the
    /// smallest polled congestion window no larger than the mean over the same polls.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !TRANSPORTS.contains(&self.transport.as_str()) {
            problems.push(format!(
                "transport.transport is {:?}; expected one of {TRANSPORTS:?}",
                self.transport
            ));
        }
        if let (Some(retransmitted), Some(sent)) = (self.retransmitted, self.packets_sent)
            && retransmitted > sent
        {
            problems.push(format!(
                "transport.retransmitted ({retransmitted}) exceeds transport.packets_sent ({sent}), which counts retransmissions too"
            ));
        }
        if let (Some(min), Some(mean)) = (self.cwnd_min_bytes, self.cwnd_mean_bytes)
            && min > mean
        {
            problems.push(format!(
                "transport.cwnd_min_bytes ({min}) exceeds transport.cwnd_mean_bytes ({mean}) over the same polls"
            ));
        }
        problems
    }
}

crate::interval_fields!(wire_structs);

/// Names of the load models (`--load`, capabilities `load_models`, sample `load`).
pub mod load {
    /// `--concurrency` lanes, one operation in flight each.
    pub const CLOSED: &str = "closed";
    /// `--in-flight N` operations always outstanding.
    pub const WINDOW: &str = "window";
    /// A new operation whenever the transport accepts one, up to `--max-in-flight`.
    pub const BACKPRESSURE: &str = "backpressure";
    /// `--streams S` client streams of one-way messages sent as fast as the transport accepts.
    pub const SEND_SATURATION: &str = "send-saturation";
    /// Operations at intended start times (`--rate`, `--arrival`, `--seed`).
    pub const OPEN: &str = "open";
    /// Every model, in report order.
    pub const ALL: [&str; 5] = [CLOSED, WINDOW, BACKPRESSURE, SEND_SATURATION, OPEN];
}

/// An error a peer reports before exiting non-zero.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PeerError {
    /// Where it happened: see [`phase`].
    pub phase: String,
    /// What kind of error: see [`code`].
    pub code: String,
    /// Human-readable detail.
    pub message: String,
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} error during {}: {}",
            self.code, self.phase, self.message
        )
    }
}

/// The peer is shutting down cleanly.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Stopped {
    /// Counters the peer wants to report: a server's `rpcs` handled, `requests` and `responses`
    /// (messages) and, from revision 1.1, `rejected` (calls answered with a non-OK status).
    #[serde(
        default,
        with = "counter::map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub counters: BTreeMap<String, u64>,
    /// A server's transport statistics summed over its connections from its start to
    /// `SHUTDOWN` (warmup, window and drain), the same object as the client's in `sample`
    /// (optional and additive; see docs/peer-protocol.md, "Transport statistics").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Box<TransportStats>>,
    /// Revision 1.2: heap allocations over the process's whole life (a server's; a client
    /// prints none here, its `sample` has the window's), when `capabilities` declares them.
    #[serde(
        default,
        with = "counter::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub allocations: Option<u64>,
    /// Revision 1.2: bytes allocated over the process's whole life, the same way.
    #[serde(
        default,
        with = "counter::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub allocated_bytes: Option<u64>,
    /// Revision 1.3: the message of the first call, command or frame the server rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rejection: Option<String>,
}

/// Revision 1.2: which edge of the window a `window` event answers.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Edge {
    /// The answer to `WINDOW START`.
    Start,
    /// The answer to `WINDOW END`.
    End,
}

impl Edge {
    /// The name in the `edge` field.
    pub fn as_str(&self) -> &'static str {
        match self {
            Edge::Start => "start",
            Edge::End => "end",
        }
    }

    /// The command this edge answers.
    pub fn command(&self) -> Command {
        match self {
            Edge::Start => Command::WindowStart,
            Edge::End => Command::WindowEnd,
        }
    }
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Revision 1.2: a server's figures when `WINDOW START` or `WINDOW END` arrived, each cumulative
/// since the process started; the controller subtracts the start from the end.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WindowReport {
    /// The command answered.
    pub edge: Edge,
    /// The same counters as `stopped`'s (`rpcs`, `requests`, `responses`, `rejected`), so far.
    #[serde(with = "counter::map")]
    pub counters: BTreeMap<String, u64>,
    /// Heap allocations so far, when `capabilities` declares them.
    #[serde(
        default,
        with = "counter::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub allocations: Option<u64>,
    /// Bytes allocated so far, when `capabilities` declares them.
    #[serde(
        default,
        with = "counter::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub allocated_bytes: Option<u64>,
    /// Revision 1.3: the message of the first call, command or frame the server rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rejection: Option<String>,
}

/// Values of [`PeerError::phase`].
pub mod phase {
    /// Parsing arguments, loading certificates.
    pub const STARTUP: &str = "startup";
    /// Binding and listening (server).
    pub const LISTEN: &str = "listen";
    /// Connecting and handshaking (client).
    pub const CONNECT: &str = "connect";
    /// The single validation RPC before warmup.
    pub const VALIDATE: &str = "validate";
    /// The untimed warmup.
    pub const WARMUP: &str = "warmup";
    /// Waiting for `START`.
    pub const ARMED: &str = "armed";
    /// The admission window.
    pub const MEASURE: &str = "measure";
    /// Draining admitted operations after the window.
    pub const DRAIN: &str = "drain";
    /// Serving (server).
    pub const SERVE: &str = "serve";
    /// After `SHUTDOWN`.
    pub const SHUTDOWN: &str = "shutdown";
}

/// Values of [`PeerError::code`] and keys of [`SampleReport::failures`].
pub mod code {
    /// Bad arguments or unsupported configuration.
    pub const CONFIG: &str = "config";
    /// A TLS handshake or certificate verification failed.
    pub const TLS: &str = "tls";
    /// A transport connection could not be made or broke.
    pub const CONNECT: &str = "connect";
    /// The RPC returned a non-OK status.
    pub const RPC: &str = "rpc";
    /// A response had the wrong sequence, length, contents or count.
    pub const INVALID: &str = "invalid";
    /// An operation did not finish within its bound.
    pub const TIMEOUT: &str = "timeout";
    /// The controller sent something the peer did not understand.
    pub const PROTOCOL: &str = "protocol";
    /// A bug or unexpected condition in the peer.
    pub const INTERNAL: &str = "internal";
}

/// Why an event line was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EventError {
    /// The line is not a JSON object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// The `protocol` field is missing.
    #[error(
        "event has no \"protocol\" field; every event of peer protocol v{PROTOCOL_VERSION} must carry \"protocol\":{PROTOCOL_VERSION}"
    )]
    MissingVersion,
    /// Another protocol version.
    #[error(
        "peer speaks protocol version {found} but this controller speaks version {PROTOCOL_VERSION}; rebuild the peer against docs/peer-protocol.md v{PROTOCOL_VERSION} or use a matching rpcarena"
    )]
    WrongVersion {
        /// The version the peer sent.
        found: String,
    },
    /// The `event` field is missing or names no known event.
    #[error(
        "unknown event {0:?}; v1 events are capabilities, ready, armed, sample, error, stopped and (revision 1.2) window"
    )]
    UnknownEvent(String),
    /// A known event with missing or malformed fields.
    #[error("malformed {event} event: {detail}")]
    Malformed {
        /// The event kind.
        event: String,
        /// What serde said.
        detail: String,
    },
}

/// Parses one stdout line into an event, checking the protocol version first.
pub fn parse_event(line: &str) -> Result<Event, EventError> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| EventError::NotJson(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| EventError::NotJson(format!("expected an object, got {value}")))?;
    match object.get("protocol") {
        None => return Err(EventError::MissingVersion),
        Some(v) if v.as_u64() == Some(u64::from(PROTOCOL_VERSION)) => {}
        Some(v) => {
            return Err(EventError::WrongVersion {
                found: v.to_string(),
            });
        }
    }
    let name = match object.get("event").and_then(|e| e.as_str()) {
        Some(n) => n.to_string(),
        None => return Err(EventError::UnknownEvent(String::new())),
    };
    if !EVENT_NAMES.contains(&name.as_str()) {
        return Err(EventError::UnknownEvent(name));
    }
    if let Some(path) = null_path(&value, String::new()) {
        return Err(EventError::Malformed {
            event: name,
            detail: format!(
                "`{path}` is null; the protocol never uses null (leave a field that does not apply out)"
            ),
        });
    }
    event_of(&name, value).map_err(|e| EventError::Malformed {
        event: name,
        detail: e.to_string(),
    })
}

/// The names of the events, as the `event` field carries them.
pub const EVENT_NAMES: [&str; 7] = [
    "capabilities",
    "ready",
    "armed",
    "sample",
    "error",
    "stopped",
    "window",
];

/// The event `name` from its JSON object (the envelope fields are ignored as unknown fields).
/// Each kind is read as its own type through `serde_path_to_error`, so an error names the field
/// it is about (`allocations: counter "-1" ...`, `intervals[1].completed: ...`), which serde's
/// internally tagged enum cannot do.
fn event_of(
    name: &str,
    value: serde_json::Value,
) -> Result<Event, serde_path_to_error::Error<serde_json::Error>> {
    fn read<T: serde::de::DeserializeOwned>(
        value: serde_json::Value,
        wrap: fn(T) -> Event,
    ) -> Result<Event, serde_path_to_error::Error<serde_json::Error>> {
        serde_path_to_error::deserialize(value).map(wrap)
    }
    match name {
        "capabilities" => read(value, Event::Capabilities),
        "ready" => read(value, Event::Ready),
        "armed" => read(value, Event::Armed),
        "sample" => read(value, Event::Sample),
        "error" => read(value, Event::Error),
        "stopped" => read(value, Event::Stopped),
        // `parse_event` let only EVENT_NAMES through
        _ => read(value, Event::Window),
    }
}

/// The path of the first `null` in `value` (`intervals[1].histogram`), if any.
fn null_path(value: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::Null => Some(if path.is_empty() {
            "(the event)".into()
        } else {
            path
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| null_path(v, format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            let inner = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            null_path(v, inner)
        }),
        _ => None,
    }
}

/// A command on a peer's stdin, one per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Client: begin the admission window now.
    Start,
    /// Both: stop, emit `stopped`, exit 0. End of stdin means the same.
    Shutdown,
    /// Revision 1.2, server: the window starts; answer with a `window` event, edge `start`.
    WindowStart,
    /// Revision 1.2, server: the window ended; answer with a `window` event, edge `end`.
    WindowEnd,
}

impl Command {
    /// Every command.
    pub const ALL: [Command; 4] = [
        Command::Start,
        Command::Shutdown,
        Command::WindowStart,
        Command::WindowEnd,
    ];

    /// The line to write, without the newline.
    pub fn as_str(&self) -> &'static str {
        match self {
            Command::Start => "START",
            Command::Shutdown => "SHUTDOWN",
            Command::WindowStart => "WINDOW START",
            Command::WindowEnd => "WINDOW END",
        }
    }

    /// The edge of the `window` event that answers this command, for the window commands.
    pub fn edge(&self) -> Option<Edge> {
        match self {
            Command::WindowStart => Some(Edge::Start),
            Command::WindowEnd => Some(Edge::End),
            Command::Start | Command::Shutdown => None,
        }
    }

    /// Parses a stdin line: surrounding whitespace is ignored, the two words of a window command
    /// are separated by exactly one space, and case matters.
    pub fn parse(line: &str) -> Result<Command, String> {
        let line = line.trim();
        Command::ALL
            .into_iter()
            .find(|command| command.as_str() == line)
            .ok_or_else(|| {
                format!(
                    "unknown command {line:?}; expected START, SHUTDOWN, WINDOW START or WINDOW END"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SampleReport {
        SampleReport {
            completed: 9_007_199_254_740_993,
            failed: 0,
            requests: 10,
            responses: 10,
            request_bytes: 2560,
            response_bytes: 2560,
            window_ns: 5_000_000_000,
            drain_ns: 1_000,
            histogram: "HISTFAAAA".into(),
            failures: BTreeMap::new(),
            first_failure: None,
            ..SampleReport::default()
        }
    }

    fn open_sample() -> SampleReport {
        SampleReport {
            load: Some(load::OPEN.into()),
            uncorrected_histogram: Some("HISTFAAAB".into()),
            send_lag_histogram: Some("HISTFAAAC".into()),
            offered: Some(9_007_199_254_740_995),
            target_rate: Some(1234.5),
            fell_behind: Some(false),
            max_in_flight: Some(4),
            sent: Some(11),
            received: Some(10),
            intervals: vec![
                Interval {
                    offset_ns: 0,
                    completed: 6,
                    histogram: "HISTFAAAD".into(),
                },
                Interval {
                    offset_ns: 1_000_000_000,
                    completed: 4,
                    histogram: "HISTFAAAE".into(),
                },
            ],
            ..sample()
        }
    }

    #[test]
    fn events_round_trip_with_version_first_and_counters_as_strings() {
        let line = Event::Sample(sample()).to_line();
        assert!(
            line.starts_with(r#"{"protocol":1,"event":"sample","#),
            "{line}"
        );
        assert!(line.contains(r#""completed":"9007199254740993""#), "{line}");
        assert_eq!(parse_event(&line), Ok(Event::Sample(sample())));
    }

    #[test]
    fn every_event_kind_round_trips() {
        let events = vec![
            Event::Capabilities(Capabilities {
                peer: "p".into(),
                language: "rust".into(),
                version: "1".into(),
                roles: Roles {
                    client: vec![StackCapability {
                        stack: "grpc".into(),
                        shapes: vec!["unary".into()],
                        load_models: vec!["closed".into()],
                        payloads: vec!["zeros".into(), "structured".into()],
                        libraries: BTreeMap::from([("tonic".into(), "0.14".into())]),
                        ..StackCapability::default()
                    }],
                    server: vec![],
                },
                ..Capabilities::default()
            }),
            Event::Ready(Ready {
                role: Role::Server,
                address: "127.0.0.1:1".into(),
                pid: 3,
            }),
            Event::Armed(Armed {
                lanes: 4,
                connections: 1,
                connect_ns: Some(5),
                warmup_completed: 6,
                warmup_segments: [0, 0, 1, 0, 1, 1, 0, 1, 1, 1].map(Counter).to_vec(),
            }),
            Event::Error(PeerError {
                phase: phase::CONNECT.into(),
                code: code::TLS.into(),
                message: "bad".into(),
            }),
            Event::Stopped(Stopped {
                counters: BTreeMap::from([("rpcs".into(), 12)]),
                ..Stopped::default()
            }),
            Event::Stopped(Stopped {
                transport: Some(Box::new(TransportStats {
                    transport: "tcp".into(),
                    connections: 1,
                    packets_sent: Some(9),
                    retransmitted: Some(1),
                    ..TransportStats::default()
                })),
                ..Stopped::default()
            }),
            Event::Window(window(Edge::Start)),
        ];
        for event in events {
            assert_eq!(parse_event(&event.to_line()).as_ref(), Ok(&event));
        }
    }

    #[test]
    fn warmup_segments_are_a_list_of_counter_strings() {
        let line = r#"{"protocol":1,"event":"armed","lanes":1,"connections":2,"warmup_completed":"3","warmup_segments":["0","1","2"]}"#;
        let Ok(Event::Armed(armed)) = parse_event(line) else {
            panic!("{line} did not parse as armed");
        };
        assert_eq!(armed.warmup_segments, [0, 1, 2].map(Counter).to_vec());
        assert!(
            Event::Armed(armed)
                .to_line()
                .contains(r#""warmup_segments":["0","1","2"]"#)
        );
        let numbers = line.replace(r#"["0","1","2"]"#, "[0,1,2]");
        assert!(
            parse_event(&numbers).is_err(),
            "numbers accepted: {numbers}"
        );
    }

    #[test]
    fn the_new_sample_fields_round_trip_as_strings_numbers_and_booleans() {
        let line = Event::Sample(open_sample()).to_line();
        for part in [
            r#""load":"open""#,
            r#""offered":"9007199254740995""#,
            r#""target_rate":1234.5"#,
            r#""fell_behind":false"#,
            r#""max_in_flight":"4""#,
            r#""sent":"11""#,
            r#""received":"10""#,
            r#""intervals":[{"offset_ns":"0","completed":"6","histogram":"HISTFAAAD"}"#,
        ] {
            assert!(line.contains(part), "{part} missing in {line}");
        }
        assert_eq!(parse_event(&line), Ok(Event::Sample(open_sample())));
    }

    #[test]
    fn an_older_peers_sample_and_capabilities_still_parse() {
        // what a closed-loop peer of the first release printed: none of the new fields
        let line = r#"{"protocol":1,"event":"sample","completed":"5","failed":"0","requests":"5","responses":"5","request_bytes":"0","response_bytes":"0","window_ns":"10","drain_ns":"0","histogram":"H"}"#;
        let Ok(Event::Sample(report)) = parse_event(line) else {
            panic!("an old sample must parse");
        };
        assert_eq!(report.load, None);
        assert!(report.intervals.is_empty());
        assert_eq!(report.offered, None);
        // and a closed sample prints none of them
        let printed = Event::Sample(sample()).to_line();
        for absent in ["load", "offered", "intervals", "fell_behind", "target_rate"] {
            assert!(!printed.contains(absent), "{absent} in {printed}");
        }
        let caps = r#"{"protocol":1,"event":"capabilities","peer":"p","language":"go","version":"1","roles":{"client":[{"stack":"grpc","shapes":["unary"],"load_models":["closed"]}]}}"#;
        let Ok(Event::Capabilities(caps)) = parse_event(caps) else {
            panic!("old capabilities must parse");
        };
        assert!(caps.roles.client[0].payloads.is_empty());
        // counters inside intervals are strings too
        let bad = line.replace(
            r#""histogram":"H""#,
            r#""histogram":"H","intervals":[{"offset_ns":0,"completed":"1","histogram":"H"}]"#,
        );
        assert!(matches!(
            parse_event(&bad),
            Err(EventError::Malformed { .. })
        ));
    }

    fn capabilities_1_1() -> Capabilities {
        let settings = BTreeMap::from([
            (
                "tls_versions".to_string(),
                Setting::from(vec!["1.3".to_string()]),
            ),
            ("stream_window".to_string(), Setting::from(16_777_216u64)),
            ("bdp_probing".to_string(), Setting::from(false)),
            ("congestion_control".to_string(), Setting::from("cubic")),
        ]);
        let entry = StackCapability {
            stack: "quic".into(),
            shapes: vec!["unary".into()],
            load_models: vec![],
            payloads: vec!["zeros".into()],
            libraries: BTreeMap::from([("quinn".into(), "0.11.12".into())]),
            settings,
            deviations: Some(vec![]),
            conformance_faults: false,
            tls: vec!["on".into()],
            not_offered: BTreeMap::from([("send".into(), "no one-way frame".into())]),
            client_modes: vec![],
        };
        Capabilities {
            peer: "p".into(),
            language: "rust".into(),
            version: "1".into(),
            revision: Some("1.1".into()),
            build: BTreeMap::from([("toolchain".into(), "rustc 1.95.0".into())]),
            files: vec!["/usr/local/bin/p".into()],
            allocations: None,
            profiler: None,
            roles: Roles {
                client: vec![],
                server: vec![entry],
            },
        }
    }

    #[test]
    fn client_modes_default_to_official() {
        use crate::workload::ClientMode;
        let mut entry = StackCapability::default();
        assert!(entry.takes_client_mode(ClientMode::Official));
        assert!(!entry.takes_client_mode(ClientMode::Replay));
        entry = serde_json::from_str(
            r#"{"stack":"trpc-ws","shapes":["unary"],"client_modes":["official","replay"]}"#,
        )
        .unwrap();
        assert!(entry.takes_client_mode(ClientMode::Replay));
        let text = serde_json::to_string(&entry).unwrap();
        assert!(
            text.contains(r#""client_modes":["official","replay"]"#),
            "{text}"
        );
    }

    #[test]
    fn revision_1_1_capabilities_round_trip_with_settings_and_deviations() {
        let caps = capabilities_1_1();
        let line = Event::Capabilities(caps.clone()).to_line();
        for part in [
            r#""revision":"1.1""#,
            r#""build":{"toolchain":"rustc 1.95.0"}"#,
            r#""files":["/usr/local/bin/p"]"#,
            r#""settings":{"bdp_probing":false,"congestion_control":"cubic","stream_window":16777216,"tls_versions":["1.3"]}"#,
            r#""deviations":[]"#,
        ] {
            assert!(line.contains(part), "{part} missing in {line}");
        }
        assert_eq!(parse_event(&line), Ok(Event::Capabilities(caps)));
        // a 1.0 peer prints none of them, and its line parses with them absent
        let mut old = capabilities_1_1();
        old.revision = None;
        old.build.clear();
        old.files.clear();
        old.roles.server[0].settings.clear();
        old.roles.server[0].deviations = None;
        let line = Event::Capabilities(old.clone()).to_line();
        for absent in ["revision", "build", "files", "settings", "deviations"] {
            assert!(!line.contains(absent), "{absent} in {line}");
        }
        assert_eq!(parse_event(&line), Ok(Event::Capabilities(old)));
        // null is no setting value, and neither is an object
        for bad in [r#"null"#, r#"{"a":1}"#, r#"[1]"#] {
            let line = Event::Capabilities(capabilities_1_1())
                .to_line()
                .replace(r#""bdp_probing":false"#, &format!(r#""bdp_probing":{bad}"#));
            assert!(
                matches!(parse_event(&line), Err(EventError::Malformed { .. })),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn a_servers_transport_parses_and_is_checked_like_the_clients() {
        let line = r#"{"protocol":1,"event":"stopped","counters":{"rpcs":"3"},"transport":{"transport":"quic","connections":"1","polls":"40","packets_sent":"120","lost":"2","cwnd_bytes":"30000","cwnd_min_bytes":"14720","cwnd_mean_bytes":"20000"}}"#;
        let Ok(Event::Stopped(stopped)) = parse_event(line) else {
            panic!("a server's transport must parse: {:?}", parse_event(line));
        };
        let t = stopped.transport.expect("transport kept");
        assert_eq!((t.packets_sent, t.lost), (Some(120), Some(2)));
        assert!(t.problems().is_empty(), "{:?}", t.problems());
        // an older server's `stopped` has none, and prints none
        let Ok(Event::Stopped(old)) =
            parse_event(r#"{"protocol":1,"event":"stopped","counters":{"rpcs":"3"}}"#)
        else {
            panic!("an old stopped must parse");
        };
        assert_eq!(old.transport, None);
        assert!(!Event::Stopped(old).to_line().contains("transport"));
        // counters are strings here as in the sample, and null is refused
        for bad in [
            line.replace(r#""packets_sent":"120""#, r#""packets_sent":120"#),
            line.replace(r#""lost":"2""#, r#""lost":null"#),
        ] {
            assert!(
                matches!(parse_event(&bad), Err(EventError::Malformed { .. })),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn transport_problems_name_the_field() {
        let good = TransportStats {
            transport: "tcp".into(),
            connections: 2,
            packets_sent: Some(10),
            retransmitted: Some(10),
            cwnd_min_bytes: Some(5),
            cwnd_mean_bytes: Some(5),
            ..TransportStats::default()
        };
        assert!(good.problems().is_empty());
        let bad = TransportStats {
            transport: "udp".into(),
            retransmitted: Some(11),
            cwnd_min_bytes: Some(6),
            ..good
        };
        let problems = bad.problems().join("; ");
        for part in [
            "transport.transport is \"udp\"",
            "transport.retransmitted (11) exceeds transport.packets_sent (10)",
            "transport.cwnd_min_bytes (6) exceeds transport.cwnd_mean_bytes (5)",
        ] {
            assert!(problems.contains(part), "{part} missing in {problems}");
        }
    }

    #[test]
    fn other_versions_are_refused_with_a_clear_message() {
        let err = parse_event(r#"{"protocol":2,"event":"ready"}"#).unwrap_err();
        assert!(matches!(err, EventError::WrongVersion { .. }));
        assert!(err.to_string().contains("protocol version 2"));
        assert_eq!(
            parse_event(r#"{"event":"ready"}"#),
            Err(EventError::MissingVersion)
        );
    }

    #[test]
    fn malformed_lines_are_named() {
        assert!(matches!(parse_event("hello"), Err(EventError::NotJson(_))));
        assert!(matches!(
            parse_event(r#"{"protocol":1,"event":"bogus"}"#),
            Err(EventError::UnknownEvent(_))
        ));
        // a counter as a JSON number is refused: the protocol says decimal string
        let err = parse_event(
            r#"{"protocol":1,"event":"armed","lanes":1,"connections":1,"warmup_completed":5}"#,
        )
        .unwrap_err();
        assert!(matches!(err, EventError::Malformed { .. }), "{err}");
    }

    #[test]
    fn null_is_refused_anywhere_with_its_path() {
        let base = Event::Sample(open_sample()).to_line();
        for (from, to, path) in [
            (
                r#""histogram":"HISTFAAAA""#,
                r#""histogram":"HISTFAAAA","first_failure":null"#,
                "`first_failure` is null",
            ),
            (
                r#""histogram":"HISTFAAAE""#,
                r#""histogram":null"#,
                "`intervals[1].histogram` is null",
            ),
            (
                r#""fell_behind":false"#,
                r#""fell_behind":null"#,
                "`fell_behind` is null",
            ),
            // an unknown field is ignored, but not when it is null
            (
                r#""load":"open""#,
                r#""load":"open","extra":{"a":[1,null]}"#,
                "`extra.a[1]` is null",
            ),
        ] {
            let line = base.replacen(from, to, 1);
            assert_ne!(line, base, "{from} not in the line");
            let err = parse_event(&line).unwrap_err().to_string();
            assert!(err.contains(path), "{err}");
        }
    }

    #[test]
    fn unknown_fields_are_ignored_for_forward_compatibility() {
        let line = r#"{"protocol":1,"event":"ready","role":"server","address":"a:1","pid":1,"extra":true}"#;
        assert!(matches!(parse_event(line), Ok(Event::Ready(_))));
    }

    #[test]
    fn commands_parse_and_refuse_others() {
        assert_eq!(Command::parse("START\n"), Ok(Command::Start));
        assert_eq!(Command::parse(" SHUTDOWN "), Ok(Command::Shutdown));
        assert!(Command::parse("start").is_err());
    }

    #[test]
    fn window_commands_parse_print_and_name_their_edge() {
        assert_eq!(Command::parse("WINDOW START"), Ok(Command::WindowStart));
        assert_eq!(Command::parse("  WINDOW END\r\n"), Ok(Command::WindowEnd));
        for command in Command::ALL {
            assert_eq!(Command::parse(command.as_str()), Ok(command));
            if let Some(edge) = command.edge() {
                assert_eq!(edge.command(), command);
            }
        }
        assert_eq!(Command::Start.edge(), None);
        // one space between the words, upper case, nothing else
        for bad in [
            "WINDOW  START",
            "WINDOW\tEND",
            "window start",
            "WINDOW",
            "WINDOW STOP",
        ] {
            let error = Command::parse(bad).unwrap_err();
            assert!(
                error.contains("WINDOW START or WINDOW END"),
                "{bad}: {error}"
            );
        }
    }

    fn window(edge: Edge) -> WindowReport {
        WindowReport {
            edge,
            counters: BTreeMap::from([("rpcs".into(), 1285), ("rejected".into(), 0)]),
            allocations: Some(902_211),
            allocated_bytes: Some(18_446_744_073_709_551_615),
            first_rejection: Some("unparsable frame of 2 bytes: 0a ff".into()),
        }
    }

    #[test]
    fn window_events_round_trip_with_counters_as_strings() {
        let line = Event::Window(window(Edge::Start)).to_line();
        assert_eq!(
            line,
            r#"{"protocol":1,"event":"window","edge":"start","counters":{"rejected":"0","rpcs":"1285"},"allocations":"902211","allocated_bytes":"18446744073709551615","first_rejection":"unparsable frame of 2 bytes: 0a ff"}"#
        );
        assert_eq!(parse_event(&line), Ok(Event::Window(window(Edge::Start))));
        // the page's example, and a window without allocation counters
        let page = r#"{"protocol":1,"event":"window","edge":"end","counters":{"rpcs":"1285","requests":"1285","responses":"1285","rejected":"0"}}"#;
        let Ok(Event::Window(end)) = parse_event(page) else {
            panic!("the page's window event must parse");
        };
        assert_eq!((end.edge, end.allocations), (Edge::End, None));
        assert_eq!(end.counters["requests"], 1285);
        assert!(!Event::Window(end).to_line().contains("allocations"));
    }

    #[test]
    fn bad_window_fields_are_refused_naming_the_field() {
        let good = Event::Window(window(Edge::End)).to_line();
        for (from, to, named) in [
            (r#""edge":"end","#, "", "missing field `edge`"),
            (
                r#""edge":"end""#,
                r#""edge":"middle""#,
                "edge: unknown variant `middle`",
            ),
            (
                r#""counters":{"rejected":"0","rpcs":"1285"},"#,
                "",
                "missing field `counters`",
            ),
            (
                r#""allocations":"902211""#,
                r#""allocations":"-1""#,
                "allocations: expected a decimal string",
            ),
            (
                r#""allocations":"902211""#,
                r#""allocations":902211"#,
                "allocations: invalid type",
            ),
            (
                r#""allocated_bytes":"18446744073709551615""#,
                r#""allocated_bytes":"18446744073709551616""#,
                "allocated_bytes: counter \"18446744073709551616\" does not fit in 64 bits",
            ),
            (
                r#""rpcs":"1285""#,
                r#""rpcs":"12x""#,
                "counters: expected a decimal string",
            ),
        ] {
            let line = good.replacen(from, to, 1);
            assert_ne!(line, good, "{from} not in the line");
            let error = parse_event(&line).unwrap_err();
            assert!(matches!(error, EventError::Malformed { .. }), "{error}");
            let text = error.to_string();
            assert!(text.starts_with("malformed window event: "), "{text}");
            assert!(text.contains(named), "{named} not in {text}");
        }
    }

    #[test]
    fn allocation_counters_in_sample_and_stopped_round_trip_and_name_the_field() {
        let with = SampleReport {
            allocations: Some(12),
            allocated_bytes: Some(3456),
            ..sample()
        };
        let line = Event::Sample(with.clone()).to_line();
        assert!(
            line.ends_with(r#""allocations":"12","allocated_bytes":"3456"}"#),
            "{line}"
        );
        assert_eq!(parse_event(&line), Ok(Event::Sample(with)));
        let negative = line.replace(r#""allocations":"12""#, r#""allocations":"-12""#);
        let error = parse_event(&negative).unwrap_err().to_string();
        assert!(
            error.contains("allocations: expected a decimal string"),
            "{error}"
        );
        // a sample without them prints neither
        let plain = Event::Sample(sample()).to_line();
        assert!(!plain.contains("alloc"), "{plain}");

        let stopped = Stopped {
            counters: BTreeMap::from([("rpcs".into(), 3)]),
            allocations: Some(u64::MAX),
            allocated_bytes: Some(0),
            ..Stopped::default()
        };
        let line = Event::Stopped(stopped.clone()).to_line();
        assert!(line.contains(r#""allocations":"18446744073709551615","allocated_bytes":"0""#));
        assert_eq!(parse_event(&line), Ok(Event::Stopped(stopped)));
        let over = line.replace("18446744073709551615", "18446744073709551616");
        let error = parse_event(&over).unwrap_err().to_string();
        assert!(error.contains("allocations: counter"), "{error}");
        assert!(
            !Event::Stopped(Stopped::default())
                .to_line()
                .contains("alloc")
        );
    }

    #[test]
    fn a_nested_bad_counter_is_named_by_its_path() {
        let line = Event::Sample(open_sample()).to_line().replacen(
            r#""completed":"4""#,
            r#""completed":"+4""#,
            1,
        );
        let error = parse_event(&line).unwrap_err().to_string();
        assert!(
            error.contains("intervals[1].completed: expected a decimal"),
            "{error}"
        );
        let missing = r#"{"protocol":1,"event":"armed","lanes":1,"connections":1}"#;
        let error = parse_event(missing).unwrap_err().to_string();
        assert!(
            error.contains("missing field `warmup_completed`"),
            "{error}"
        );
    }

    #[test]
    fn revision_1_2_capabilities_declare_allocations_and_conformance_faults() {
        let mut caps = capabilities_1_1();
        caps.revision = Some("1.2".into());
        caps.allocations = Some(AllocationCounters {
            counts: true,
            bytes: false,
            source: "ThreadMXBean".into(),
        });
        caps.roles.server[0].conformance_faults = true;
        caps.roles.server[0].shapes.push("pingpong".into());
        let line = Event::Capabilities(caps.clone()).to_line();
        for part in [
            r#""allocations":{"counts":true,"bytes":false,"source":"ThreadMXBean"}"#,
            r#""conformance_faults":true"#,
            r#""shapes":["unary","pingpong"]"#,
        ] {
            assert!(line.contains(part), "{part} missing in {line}");
        }
        assert_eq!(parse_event(&line), Ok(Event::Capabilities(caps)));
        // absent: no allocation counters, and no faults (the default)
        let old = Event::Capabilities(capabilities_1_1()).to_line();
        assert!(!old.contains("allocations") && !old.contains("conformance_faults"));
        let Ok(Event::Capabilities(parsed)) = parse_event(&old) else {
            panic!("1.1 capabilities must parse");
        };
        assert_eq!(parsed.allocations, None);
        assert!(!parsed.roles.server[0].conformance_faults);
        // a partial declaration is refused with the field's path
        let partial = line.replace(r#""bytes":false,"#, "");
        let error = parse_event(&partial).unwrap_err().to_string();
        assert!(
            error.contains("allocations: missing field `bytes`"),
            "{error}"
        );
        let wrong = line.replace(
            r#""conformance_faults":true"#,
            r#""conformance_faults":"yes""#,
        );
        let error = parse_event(&wrong).unwrap_err().to_string();
        assert!(
            error.contains("roles.server[0].conformance_faults: invalid type"),
            "{error}"
        );
    }
}
