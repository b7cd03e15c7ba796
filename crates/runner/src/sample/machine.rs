//! One sample as a sans-IO state machine: this is where a sample's fate is decided.
//!
//! The machine never spawns, reads, writes, sleeps or reads a clock. The shell (`super`) feeds
//! it [`Input`]s (a peer's stdout line or its end, a spawn that failed, an exit status, the
//! sampler's readings, the teardown's and the network check's results, a stop signal) with the
//! time they happened, calls [`SampleMachine::handle_timeout`] when [`SampleMachine::deadline`]
//! passes, and carries out the [`Action`]s it returns (spawn, send START or SHUTDOWN, close a
//! peer's stdin, wait for an exit, start or stop the sampler, kill both groups, check the
//! network, record). Every transition, the fault paths included, is tested on a fake clock
//! below.
//!
//! The protocol, step by step, each wait bounded by a campaign timeout:
//!
//! ```text
//! spawn server -> `ready` -> spawn client -> `armed` -> sampler, START -> `sample`
//!   -> sampler stops -> SHUTDOWN client -> `stopped` -> close stdin -> end of output -> exit 0
//!   -> SHUTDOWN server -> `stopped` -> close stdin -> end of output -> exit 0
//!   -> kill both groups -> network check -> record
//! ```
//!
//! While the machine waits for one peer's event, whatever arrives first decides: the awaited
//! event, or an anomaly (an `error` event, another event, a malformed line, a peer's output
//! ending). An anomaly or a timeout fails the sample: the machine listens 300 ms more for what
//! else the peers say (for the reason), then kills both groups.

use super::outcome::{self, Context};
use crate::launcher::Launcher;
use crate::noise::PinPlan;
use crate::process::describe_exit;
use crate::procstat::WindowUsage;
use nix::sys::signal::Signal;
use rpcarena_model::campaign::{Timeouts, Timing};
use rpcarena_model::duration;
use rpcarena_model::invocation::{self, ServerTarget};
use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{Noise, SampleRecord, SampleStatus, ServerResult};
use rpcarena_model::schedule::Slot;
use rpcarena_netem_core::LinkStats;
use rpcarena_protocol::event::{Armed, Command, Edge, Event, Role, SampleReport};
use std::collections::{BTreeMap, VecDeque};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

mod input;
mod window;
pub(crate) use input::Input;
pub use input::{Line, Message};

/// Nanoseconds on the shell's clock, from the start of the sample (the load gate included).
pub(crate) type Nanos = u64;

/// How long the machine listens after an anomaly for what else the peers say.
const AFTERMATH: Duration = Duration::from_millis(300);
/// How long it waits for a peer whose output ended unexpectedly to exit, for the reason.
const EXIT_NOTE_WAIT: Duration = Duration::from_secs(1);
/// The same during the aftermath.
const AFTERMATH_EXIT_WAIT: Duration = Duration::from_millis(100);

/// Most problems a reason lists (a peer printing a million bad lines makes one reason, not a
/// 13 MB one); the rest are counted.
const MAX_PROBLEMS: usize = 8;
/// Longest problem kept in a reason, in bytes (a peer's error message can be long).
const MAX_PROBLEM_BYTES: usize = 1024;

/// `d` in nanoseconds, saturated (a `u64` of nanoseconds is 584 years).
fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

/// `text` cut to at most `max` bytes at a character boundary, with a marker.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(" [cut]");
    }
    text
}

/// What the load gate did before the sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Gate {
    /// How long it held the sample back.
    pub waited: Duration,
    /// The 1-minute load average when it let the sample go.
    pub load_avg: f64,
    /// Whether it gave up.
    pub timed_out: bool,
}

/// How to start the client once the server's address is known.
#[derive(Debug, Clone)]
pub(crate) struct ClientLaunch {
    /// Where the client runs.
    pub launcher: Launcher,
    /// The client peer's command (resolved).
    pub command: Vec<String>,
    /// The name in the server's certificate.
    pub server_name: String,
    /// The CA certificate the client trusts.
    pub ca: PathBuf,
    /// Seed of the open model's Poisson arrivals.
    pub seed: u64,
}

/// Everything one sample needs to decide its fate.
#[derive(Debug, Clone)]
pub(crate) struct SampleSpec {
    /// Sample id (also the raw directory name).
    pub id: String,
    /// Where in the schedule.
    pub slot: Slot,
    /// What to measure.
    pub config: SampleConfig,
    /// Peer languages, for the record.
    pub client_language: String,
    /// Peer languages, for the record.
    pub server_language: String,
    /// Warmup, window, drain.
    pub timing: Timing,
    /// Step timeouts.
    pub timeouts: Timeouts,
    /// CPU pinning of the peers and the emulator.
    pub pins: PinPlan,
    /// CPUs this process may use.
    pub cpus: usize,
    /// The campaign's drift threshold.
    pub drift_threshold: f64,
    /// Whether the peers talk through an emulated link (a delay that bounds latency from below).
    pub emulated: bool,
    /// The raw directory, relative to the run directory.
    pub raw_rel: String,
    /// UTC start time (RFC 3339).
    pub started_at: String,
    /// What the load gate did.
    pub gate: Gate,
    /// The server's whole argument vector.
    pub server_argv: Vec<String>,
    /// How to start the client.
    pub client: ClientLaunch,
    /// The server follows revision 1.2: it is told the window (`WINDOW START`, `WINDOW END`).
    pub server_window: bool,
}

/// What the shell must do.
#[derive(Debug)]
pub(crate) enum Action {
    /// Start a peer as a process-group leader; answer [`Input::Spawned`] or
    /// [`Input::SpawnFailed`].
    Spawn {
        /// Which.
        role: Role,
        /// Its whole argument vector.
        argv: Vec<String>,
    },
    /// Write a command to a peer's stdin; answer [`Input::SendFailed`] if that fails.
    Send {
        /// To whom.
        role: Role,
        /// What.
        command: Command,
    },
    /// Close a peer's stdin.
    CloseStdin(Role),
    /// Wait up to `within` for a peer to exit; answer [`Input::Exit`].
    AwaitExit {
        /// Which.
        role: Role,
        /// How long at most.
        within: Duration,
    },
    /// Start the /proc sampler on both groups (client first) and read the emulator's
    /// counters; answer [`Input::SamplerStarted`].
    StartSampler,
    /// Stop it and read the emulator's counters again; answer [`Input::Readings`].
    StopSampler,
    /// Kill both groups, reap, check nothing survived; answer [`Input::TornDown`].
    KillGroups,
    /// Check the network's counters; answer [`Input::Network`].
    CheckNetwork,
    /// Show a warning (stderr).
    Warn(String),
    /// The sample is over: append its record.
    Record(Box<SampleRecord>),
}

/// An event the machine waits for, with the timeout that bounds the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Ready,
    Armed,
    Sample,
    Stopped(Role),
    EndOfOutput(Role),
    /// The server's answer to `WINDOW END` (revision 1.2).
    WindowEnd,
    /// A settle poll's answer, or the next poll (send-saturation on `send`, revision 1.3).
    Settle(Edge),
}

impl Wait {
    fn role(self) -> Role {
        match self {
            Wait::Ready | Wait::WindowEnd | Wait::Settle(_) => Role::Server,
            Wait::Armed | Wait::Sample => Role::Client,
            Wait::Stopped(role) | Wait::EndOfOutput(role) => role,
        }
    }

    /// The event's name as the reason shows it.
    fn kind(self) -> &'static str {
        match self {
            Wait::Ready => "ready",
            Wait::Armed => "armed",
            Wait::Sample => "sample",
            Wait::Stopped(_) => "stopped",
            Wait::EndOfOutput(_) => "end of output",
            Wait::WindowEnd | Wait::Settle(_) => "window",
        }
    }

    /// The `[timeouts]` field that bounds the wait.
    fn timeout_field(self) -> &'static str {
        match self {
            Wait::Ready => "ready",
            Wait::Armed => "armed",
            Wait::Sample => "sample",
            Wait::Stopped(_) | Wait::EndOfOutput(_) => "shutdown",
            Wait::WindowEnd | Wait::Settle(_) => "window",
        }
    }

    fn phase(self) -> &'static str {
        match self {
            Wait::Ready => "server start-up",
            Wait::Armed => "connect and warmup",
            Wait::Sample => "measure",
            Wait::Stopped(_) | Wait::EndOfOutput(_) => "shutdown",
            Wait::WindowEnd => "the window's end (after WINDOW END)",
            Wait::Settle(Edge::Start) => "the settle before START (the server's command count)",
            Wait::Settle(Edge::End) => "the settle after the window (the server's command count)",
        }
    }

    fn timeout(self, timing: &Timing, timeouts: &Timeouts) -> Duration {
        match self {
            Wait::Ready => timeouts.ready,
            Wait::Armed => timing.warmup.saturating_add(timeouts.armed),
            Wait::Sample => timing
                .window
                .saturating_add(timing.drain)
                .saturating_add(timeouts.sample),
            Wait::Stopped(_) | Wait::EndOfOutput(_) => timeouts.shutdown,
            Wait::WindowEnd | Wait::Settle(_) => timeouts.window,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not started.
    Idle,
    /// A spawn was asked for; its answer comes next.
    Spawning(Role),
    /// Waiting for an event (or the end of a peer's output).
    Waiting(Wait),
    /// The sample event arrived; the sampler's readings come next.
    Readings,
    /// A peer's output ended after `stopped`; its exit status comes next.
    Exiting(Role),
    /// A peer's output ended unexpectedly while the machine waited for `Wait`; its exit status
    /// comes next.
    UnexpectedExit(Role, Wait),
    /// The sample failed; listening until the deadline for what else the peers say.
    Aftermath,
    /// The same, waiting for the exit status of a peer whose output ended.
    AftermathExit(Role),
    /// Both groups are being killed.
    Teardown,
    /// The network is being checked.
    NetworkCheck,
    /// Recorded.
    Done,
}

/// One sample's life, step by step.
#[derive(Debug)]
pub(crate) struct SampleMachine {
    spec: SampleSpec,
    record: SampleRecord,
    stage: Stage,
    deadline: Option<Nanos>,
    actions: VecDeque<Action>,
    /// Why the sample fails, in the order found.
    problems: Vec<String>,
    /// What the checks found in the client's report (reported once the peers shut down).
    checks: Vec<String>,
    armed: Option<Armed>,
    report: Option<SampleReport>,
    sampler_running: bool,
    /// The emulator's counters when the window opened (from [`Input::SamplerStarted`]).
    link_at_start: Option<LinkStats>,
    /// The server's `window` answers (revision 1.2), and its figures over the window.
    window: window::Answers,
    /// The signal that stopped the run, once the shell said so.
    interrupted: Option<String>,
    /// Problems past [`MAX_PROBLEMS`], counted, not kept.
    untold: usize,
}

impl SampleMachine {
    /// A sample ready to start; nothing happens before [`SampleMachine::start`].
    pub fn new(spec: SampleSpec) -> SampleMachine {
        let record = SampleRecord {
            sample: spec.id.clone(),
            round: spec.slot.round,
            position: spec.slot.position,
            config: spec.config.clone(),
            status: SampleStatus::Failed,
            reason: None,
            started_at: spec.started_at.clone(),
            elapsed_ms: 0,
            client_language: spec.client_language.clone(),
            server_language: spec.server_language.clone(),
            client: None,
            metrics: None,
            client_process: None,
            server_process: None,
            server_counters: BTreeMap::new(),
            server: None,
            noise: Some(Noise {
                client_cpus: spec.pins.client.clone(),
                server_cpus: spec.pins.server.clone(),
                emulator_cpus: spec.pins.emulator.clone(),
                load_avg_1m: spec.gate.load_avg,
                load_gate_wait_ms: spec.gate.waited.as_millis() as u64,
                ..Noise::default()
            }),
            network: None,
            network_window: None,
            raw: spec.raw_rel.clone(),
        };
        SampleMachine {
            spec,
            record,
            stage: Stage::Idle,
            deadline: None,
            actions: VecDeque::new(),
            problems: Vec::new(),
            checks: Vec::new(),
            armed: None,
            report: None,
            sampler_running: false,
            link_at_start: None,
            window: window::Answers::default(),
            interrupted: None,
            untold: 0,
        }
    }

    /// Starts the server.
    pub fn start(&mut self) {
        self.spawn(Role::Server, self.spec.server_argv.clone());
    }

    /// The next thing to do, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`SampleMachine::handle_timeout`] is due, if the machine waits for anything.
    pub fn deadline(&self) -> Option<Nanos> {
        self.deadline
    }

    /// Whether the record was handed out.
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// The deadline passed.
    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.deadline.is_none_or(|d| now < d) {
            return;
        }
        self.deadline = None;
        match self.stage {
            Stage::Waiting(Wait::EndOfOutput(role)) => {
                let timeout = self.spec.timeouts.shutdown;
                self.fail(
                    now,
                    format!(
                        "{role} printed `stopped` but its stdout was still open {} later \
                         (timeouts.shutdown): the peer did not exit, or a process it started \
                         holds its stdout",
                        duration::format(&timeout)
                    ),
                );
            }
            Stage::Waiting(Wait::Settle(_)) if !self.settle_pending() => self.poll_settle(now),
            Stage::Waiting(wait) => {
                let timeout = wait.timeout(&self.spec.timing, &self.spec.timeouts);
                self.fail(
                    now,
                    format!(
                        "{} did not print `{}` within {} (timeouts.{}) during {}",
                        wait.role(),
                        wait.kind(),
                        duration::format(&timeout),
                        wait.timeout_field(),
                        wait.phase()
                    ),
                );
            }
            Stage::Aftermath => self.teardown(),
            _ => {}
        }
    }

    /// Something happened at `now`.
    pub fn handle(&mut self, now: Nanos, input: Input) {
        match input {
            Input::Interrupted(signal) => self.on_interrupt(now, signal),
            Input::Spawned(role) => self.on_spawned(now, role),
            Input::SpawnFailed { role, error } => {
                if self.stage == Stage::Spawning(role) {
                    self.fail(now, error);
                }
            }
            Input::Line(message) => self.on_line(now, message),
            Input::SendFailed { role, error } => {
                if matches!(self.stage, Stage::Waiting(wait) if wait.role() == role) {
                    self.fail(now, error);
                }
            }
            Input::Exit { role, status } => self.on_exit(now, role, status),
            Input::SamplerStarted(link) => self.link_at_start = link,
            Input::Readings { usage, link } => self.on_readings(now, usage, link),
            Input::TornDown(survivors) => {
                if self.stage == Stage::Teardown {
                    for problem in survivors {
                        self.note(problem);
                    }
                    self.stage = Stage::NetworkCheck;
                    self.actions.push_back(Action::CheckNetwork);
                }
            }
            Input::Network(result) => {
                if self.stage == Stage::NetworkCheck {
                    match result {
                        Ok(counters) => self.record.network = counters,
                        Err(reason) => self.note(reason),
                    }
                    self.finish(now);
                }
            }
        }
    }

    /// A stop signal: the handler killed the peers that were alive then; a sample still starting,
    /// running or waiting for an exit stops waiting now (the record says why: the controller's
    /// stop, not the peers' deaths it caused), and the teardown kills the rest.
    fn on_interrupt(&mut self, now: Nanos, signal: String) {
        self.interrupted = Some(signal);
        if matches!(
            self.stage,
            Stage::Spawning(_) | Stage::Waiting(_) | Stage::Exiting(_) | Stage::UnexpectedExit(..)
        ) {
            self.stop_sampler();
            self.stage = Stage::Aftermath;
            self.deadline = Some(now.saturating_add(nanos(AFTERMATH)));
        }
    }

    fn spawn(&mut self, role: Role, argv: Vec<String>) {
        self.stage = Stage::Spawning(role);
        self.deadline = None;
        self.actions.push_back(Action::Spawn { role, argv });
    }

    fn wait(&mut self, now: Nanos, wait: Wait) {
        let timeout = wait.timeout(&self.spec.timing, &self.spec.timeouts);
        self.stage = Stage::Waiting(wait);
        self.deadline = Some(now.saturating_add(nanos(timeout)));
    }

    fn on_spawned(&mut self, now: Nanos, role: Role) {
        match (self.stage, role) {
            (Stage::Spawning(Role::Server), Role::Server) => self.wait(now, Wait::Ready),
            (Stage::Spawning(Role::Client), Role::Client) => self.wait(now, Wait::Armed),
            _ => {}
        }
    }

    fn on_line(&mut self, now: Nanos, Message { role: from, line }: Message) {
        match self.stage {
            Stage::Waiting(wait) => self.on_line_while_waiting(now, wait, from, line),
            Stage::Aftermath => match line {
                Line::Event(Event::Error(e)) => self.note(format!(
                    "{from} then reported {} error during {}: {}",
                    with_article(&e.code),
                    e.phase,
                    e.message
                )),
                Line::Malformed { text, .. } => {
                    self.note(format!("{from} then printed a malformed line: {text}"))
                }
                Line::Closed => {
                    self.stage = Stage::AftermathExit(from);
                    self.actions.push_back(Action::AwaitExit {
                        role: from,
                        within: AFTERMATH_EXIT_WAIT,
                    });
                }
                Line::Event(_) => {}
            },
            // Lines after the verdict (teardown, network check) change nothing.
            _ => {}
        }
    }

    /// Whatever arrives first decides: the awaited event, or an anomaly.
    fn on_line_while_waiting(&mut self, now: Nanos, wait: Wait, from: Role, line: Line) {
        let phase = wait.phase();
        let awaited = wait.role();
        match line {
            Line::Event(event) if from == awaited && event.name() == wait.kind() => {
                self.on_event(now, event);
            }
            Line::Event(Event::Window(answer)) if from == Role::Server && self.window.expected() => {
                self.on_window(now, answer);
            }
            Line::Closed if from == awaited && wait == Wait::EndOfOutput(awaited) => {
                self.stage = Stage::Exiting(awaited);
                self.deadline = None;
                self.actions.push_back(Action::AwaitExit {
                    role: awaited,
                    within: self.spec.timeouts.shutdown,
                });
            }
            Line::Event(Event::Error(e)) => self.fail(
                now,
                format!(
                    "{from} reported {} error during {}: {}",
                    with_article(&e.code),
                    e.phase,
                    e.message
                ),
            ),
            Line::Event(event) => self.fail(
                now,
                format!(
                    "{from} printed an unexpected `{}` event during {phase} (waiting for the {awaited}'s `{}`)",
                    event.name(),
                    wait.kind()
                ),
            ),
            Line::Malformed { text, error } => self.fail(
                now,
                format!("{from} printed a malformed event during {phase}: {error}; line: {text}"),
            ),
            Line::Closed => {
                // The reason says how it ended: wait a moment for its exit status.
                self.stage = Stage::UnexpectedExit(from, wait);
                self.deadline = None;
                self.actions.push_back(Action::AwaitExit {
                    role: from,
                    within: EXIT_NOTE_WAIT,
                });
            }
        }
    }

    /// The awaited event.
    fn on_event(&mut self, now: Nanos, event: Event) {
        match event {
            Event::Ready(ready) => {
                let client = &self.spec.client;
                let args = invocation::client_args(
                    &self.spec.config,
                    &self.spec.timing,
                    ServerTarget {
                        address: &ready.address,
                        server_name: &client.server_name,
                        ca: &client.ca,
                    },
                    client.seed,
                );
                let argv = client.launcher.argv(&client.command, args);
                self.spawn(Role::Client, argv);
            }
            Event::Armed(armed) => {
                self.armed = Some(armed);
                if self.settle_time().is_some() {
                    self.begin_settle(now, Edge::Start);
                } else {
                    self.start_window(now);
                }
            }
            Event::Sample(report) => {
                self.report = Some(report);
                self.stage = Stage::Readings;
                self.deadline = None;
                if self.settle_time().is_none() {
                    self.tell_server_window(Command::WindowEnd);
                }
                self.stop_sampler();
            }
            Event::Window(answer) => self.on_window(now, answer),
            Event::Stopped(stopped) => {
                let Stage::Waiting(Wait::Stopped(role)) = self.stage else {
                    return;
                };
                if role == Role::Server {
                    // The server's transport object is checked as the client's is
                    // (outcome::transport_problems); the sample fails when it is malformed.
                    let problems =
                        outcome::transport_problems("server", stopped.transport.as_deref());
                    self.checks.extend(problems);
                    (self.record.server_counters, self.record.server) =
                        ServerResult::from_stopped(stopped);
                    self.window.keep(&mut self.record);
                }
                self.actions.push_back(Action::CloseStdin(role));
                // After `stopped` the peer closes stdout and exits; nothing else may come first.
                self.wait(now, Wait::EndOfOutput(role));
            }
            Event::Capabilities(_) | Event::Error(_) => {}
        }
    }

    /// The client is armed (and a settling server quiet): START, the sampler, WINDOW START.
    fn start_window(&mut self, now: Nanos) {
        self.wait(now, Wait::Sample);
        self.sampler_running = true;
        self.actions.push_back(Action::StartSampler);
        self.actions.push_back(Action::Send {
            role: Role::Client,
            command: Command::Start,
        });
        if self.window.start.is_none() {
            self.tell_server_window(Command::WindowStart);
        }
    }

    fn on_readings(
        &mut self,
        now: Nanos,
        usage: Result<WindowUsage, String>,
        link: Option<LinkStats>,
    ) {
        // The window's emulator counters go with the /proc readings: both cover START to the
        // client's `sample` event.
        if let (Some(start), Some(end)) = (self.link_at_start.take(), link) {
            self.record.network_window = Some(end.since(&start));
        }
        if self.stage != Stage::Readings {
            return; // the sampler of a failed sample: its readings are not used
        }
        let (Some(armed), Some(report)) = (self.armed.take(), self.report.take()) else {
            return;
        };
        let context = Context {
            window: self.spec.timing.window,
            drain: match self.spec.config.load {
                LoadSpec::SendSaturation { settle, .. } => settle.min(self.spec.timing.drain),
                _ => self.spec.timing.drain,
            },
            pins: &self.spec.pins,
            cpus: self.spec.cpus,
            drift_threshold: self.spec.drift_threshold,
            emulated: self.spec.emulated,
            gate_timed_out: self.spec.gate.timed_out,
        };
        let (checks, warnings) = outcome::apply(&mut self.record, armed, report, usage, &context);
        self.checks = checks;
        self.actions.extend(warnings.into_iter().map(Action::Warn));
        self.after_readings(now);
    }

    fn shut_down(&mut self, now: Nanos, role: Role) {
        self.wait(now, Wait::Stopped(role));
        self.actions.push_back(Action::Send {
            role,
            command: Command::Shutdown,
        });
    }

    fn on_exit(&mut self, now: Nanos, role: Role, status: Option<ExitStatus>) {
        match self.stage {
            Stage::Exiting(exiting) if exiting == role => match status {
                Some(status) if status.success() => {
                    if role == Role::Client {
                        self.shut_down(now, Role::Server);
                    } else if self.checks.is_empty() {
                        self.teardown();
                    } else {
                        let checks = std::mem::take(&mut self.checks).join("; ");
                        self.fail(now, checks);
                    }
                }
                Some(status) => self.fail(
                    now,
                    format!(
                        "{role} exited with {} after `stopped`",
                        describe_exit(status)
                    ),
                ),
                None => self.fail(
                    now,
                    format!(
                        "{role} did not exit within {} of `stopped` (timeouts.shutdown)",
                        duration::format(&self.spec.timeouts.shutdown)
                    ),
                ),
            },
            Stage::UnexpectedExit(exited, wait) if exited == role => {
                let reason = match status {
                    None => format!(
                        "{role} closed its stdout during {} but is still running \
                         (a peer prints events until it exits); see {role}.stderr",
                        wait.phase()
                    ),
                    Some(status) if wait == Wait::Stopped(role) => format!(
                        "{role} ended its output without printing `stopped` after SHUTDOWN ({}); `stopped` expected before the exit; see {role}.stderr",
                        describe_exit(status)
                    ),
                    Some(status) => format!(
                        "{role} exited unexpectedly during {} ({}); see {role}.stderr",
                        wait.phase(),
                        describe_exit(status)
                    ),
                };
                self.fail(now, reason);
            }
            // After a stop signal the controller killed the peers itself: no news.
            Stage::AftermathExit(exited)
                if exited == role
                    && self.interrupted.is_some()
                    && status.is_some_and(|s| s.signal() == Some(Signal::SIGKILL as i32)) =>
            {
                self.stage = Stage::Aftermath;
            }
            Stage::AftermathExit(exited) if exited == role => {
                self.note(match status {
                    Some(status) => format!("{role} then exited ({})", describe_exit(status)),
                    None => format!("{role} then closed its stdout but is still running"),
                });
                self.stage = Stage::Aftermath;
            }
            _ => {}
        }
    }

    fn stop_sampler(&mut self) {
        if self.sampler_running {
            self.sampler_running = false;
            self.actions.push_back(Action::StopSampler);
        }
    }

    /// Adds a problem to the reason, within its bounds: at most [`MAX_PROBLEMS`] problems of
    /// at most [`MAX_PROBLEM_BYTES`] each; the rest are counted.
    fn note(&mut self, problem: String) {
        if self.problems.len() >= MAX_PROBLEMS {
            self.untold += 1;
        } else {
            self.problems.push(cut(problem, MAX_PROBLEM_BYTES));
        }
    }

    /// The sample failed for `reason`: listen a little longer, then tear down.
    fn fail(&mut self, now: Nanos, reason: String) {
        self.note(reason);
        self.stop_sampler();
        self.stage = Stage::Aftermath;
        self.deadline = Some(now.saturating_add(nanos(AFTERMATH)));
    }

    fn teardown(&mut self) {
        self.stop_sampler();
        self.stage = Stage::Teardown;
        self.deadline = None;
        self.actions.push_back(Action::KillGroups);
    }

    fn finish(&mut self, now: Nanos) {
        if let Some(signal) = &self.interrupted {
            self.problems.insert(
                0,
                format!(
                    "interrupted: the controller received {signal} and stopped the run, \
                     killing the peers (not a failure of theirs)"
                ),
            );
        }
        let mut record = self.record.clone();
        record.status = if self.problems.is_empty() {
            SampleStatus::Ok
        } else {
            SampleStatus::Failed
        };
        if self.untold > 0 {
            self.problems.push(format!(
                "and {} more problems (the peers' output is in {})",
                self.untold, self.spec.raw_rel
            ));
        }
        record.reason = (!self.problems.is_empty()).then(|| self.problems.join("; "));
        record.elapsed_ms = now / 1_000_000;
        self.stage = Stage::Done;
        self.deadline = None;
        self.actions.push_back(Action::Record(Box::new(record)));
    }
}

/// "an invalid", "a timeout": the code with its article, for reasons read as sentences.
fn with_article(code: &str) -> String {
    let vowel = code
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {code}", if vowel { "an" } else { "a" })
}

#[cfg(test)]
mod tests;
