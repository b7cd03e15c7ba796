//! What the shell tells the machine: the [`Input`]s, and the peers' stdout lines they carry
//! (a reader thread per peer sends [`Message`]s; `crate::process` reads and parses them).

use crate::procstat::WindowUsage;
use rpcarena_netem_core::{LinkStats, SampleCheck};
use rpcarena_protocol::event::{Event, Role};
use std::process::ExitStatus;

/// One line of a peer's stdout, or its end.
// A handful of lines per sample: boxing the large event would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Line {
    /// A valid v1 event.
    Event(Event),
    /// A line that is not one.
    Malformed {
        /// The line (its first 200 characters).
        text: String,
        /// Why it was refused.
        error: String,
    },
    /// stdout closed: the peer exited (or closed it).
    Closed,
}

/// A line and who printed it.
#[derive(Debug, Clone)]
pub struct Message {
    /// Which peer.
    pub role: Role,
    /// What it printed.
    pub line: Line,
}

/// What happened, as the shell saw it.
#[derive(Debug)]
pub(crate) enum Input {
    /// A peer process started.
    Spawned(Role),
    /// A peer process could not be started.
    SpawnFailed {
        /// Which.
        role: Role,
        /// Why.
        error: String,
    },
    /// A line of a peer's stdout, or its end.
    Line(Message),
    /// A command could not be written to a peer's stdin.
    SendFailed {
        /// Which.
        role: Role,
        /// Why.
        error: String,
    },
    /// The answer to [`Action::AwaitExit`]: the leader's exit status, `None` if still running.
    Exit {
        /// Which.
        role: Role,
        /// How it ended.
        status: Option<ExitStatus>,
    },
    /// The answer to [`Action::StartSampler`]: the emulator's counters as the window opens
    /// (`None` without an emulated link).
    SamplerStarted(Option<LinkStats>),
    /// The answer to [`Action::StopSampler`]: the /proc readings over the window and the
    /// emulator's counters as it closes.
    Readings {
        /// CPU and memory of both groups, or why there are none.
        usage: Result<WindowUsage, String>,
        /// The emulator's counters now.
        link: Option<LinkStats>,
    },
    /// The answer to [`Action::KillGroups`]: processes that survived.
    TornDown(Vec<String>),
    /// The answer to [`Action::CheckNetwork`]: the counters, or why the sample is invalid.
    Network(Result<Option<SampleCheck>, String>),
    /// A stop signal arrived, named ("SIGTERM"): the controller is killing the peers.
    Interrupted(String),
}
