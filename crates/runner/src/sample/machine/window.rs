//! The server's view of the window (revision 1.2): the machine sends `WINDOW START` right after
//! the client's `START` and `WINDOW END` right after its `sample`, and keeps the differences of
//! the server's two `window` answers as `server.window` in the record. An answer that never
//! comes fails the sample on `timeouts.window`; counters that go backwards, an answer for the
//! wrong edge or a second answer fail it with a reason that names the field.
//!
//! Send-saturation on `send` (revision 1.3) reads the receiver: before `START` and after the
//! client's `sample` the machine polls the server with window commands every [`POLL`] until
//! its `commands` counter has not changed for the load model's settle time ([`Settle`]), so
//! the window's count is what arrived of what was sent in it, and the row's rate is the
//! server's count over the window.

use super::{Nanos, SampleMachine, Wait};
use crate::sample::machine::Action;
use rpcarena_model::load::LoadSpec;
use rpcarena_model::record::{SampleRecord, ServerWindow};
use rpcarena_protocol::event::{Command, Edge, Role, WindowReport};
use std::time::Duration;

/// How often the machine asks a settling server for its counters.
pub(super) const POLL: Duration = Duration::from_millis(10);

/// A quiet period being waited for on the server's `commands` counter.
#[derive(Debug)]
pub(super) struct Settle {
    edge: Edge,
    began: Nanos,
    /// The last value seen and since when it has not changed.
    last: Option<(u64, Nanos)>,
    /// A command was sent and its answer is awaited.
    pending: bool,
}

/// The server's answers so far, and what they came to.
#[derive(Debug, Default)]
pub(super) struct Answers {
    /// Whether the server was told the window (it follows revision 1.2).
    told: bool,
    pub(super) start: Option<WindowReport>,
    end: Option<WindowReport>,
    /// The differences, once both answers are in and checked.
    result: Option<ServerWindow>,
    /// The quiet period being waited for (send-saturation on `send`).
    settle: Option<Settle>,
}

impl Answers {
    /// Whether a `window` event from the server is expected now.
    pub(super) fn expected(&self) -> bool {
        self.told && self.end.is_none()
    }

    /// Puts the figures over the window into the record's server part.
    pub(super) fn keep(&self, record: &mut SampleRecord) {
        if let Some(window) = &self.result {
            record.server.get_or_insert_with(Default::default).window = Some(window.clone());
        }
    }
}

/// The server's figures over the window, `end` minus `start`, or why they cannot be trusted.
pub(crate) fn between(
    start: &WindowReport,
    end: &WindowReport,
) -> Result<ServerWindow, Vec<String>> {
    let mut problems = Vec::new();
    let mut delta = |field: &str, a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        (Some(a), Some(b)) => {
            problems.push(format!(
                "server {field} went backwards over the window: {a} at WINDOW START, {b} at WINDOW END"
            ));
            None
        }
        (None, None) => None,
        (a, _) => {
            let (has, lacks) = if a.is_some() {
                ("START", "END")
            } else {
                ("END", "START")
            };
            problems.push(format!(
                "server {field} is in its answer to WINDOW {has} but not in the one to WINDOW {lacks}"
            ));
            None
        }
    };
    let mut counters = std::collections::BTreeMap::new();
    for name in start.counters.keys().chain(end.counters.keys()) {
        let (a, b) = (start.counters.get(name), end.counters.get(name));
        if let Some(d) = delta(&format!("counters.{name}"), a.copied(), b.copied()) {
            counters.insert(name.clone(), d);
        }
    }
    let window = ServerWindow {
        counters,
        allocations: delta("allocations", start.allocations, end.allocations),
        allocated_bytes: delta(
            "allocated_bytes",
            start.allocated_bytes,
            end.allocated_bytes,
        ),
        first_rejection: end.first_rejection.clone(),
    };
    if problems.is_empty() {
        Ok(window)
    } else {
        Err(problems)
    }
}

impl SampleMachine {
    /// Sends a window command to a server that follows revision 1.2.
    pub(super) fn tell_server_window(&mut self, command: Command) {
        if !self.spec.server_window {
            return;
        }
        self.window.told = true;
        self.actions.push_back(Action::Send {
            role: Role::Server,
            command,
        });
    }

    /// The settle time when this sample reads the receiver (send-saturation on `send` with a
    /// server told the window), else `None`.
    pub(super) fn settle_time(&self) -> Option<Duration> {
        match self.spec.config.load {
            LoadSpec::SendSaturation { settle, .. }
                if self.spec.server_window && self.spec.config.shape.is_one_way() =>
            {
                Some(settle)
            }
            _ => None,
        }
    }

    /// Starts polling the server for the quiet period before `START` (`Edge::Start`) or after
    /// the client's `sample` (`Edge::End`).
    pub(super) fn begin_settle(&mut self, now: Nanos, edge: Edge) {
        self.window.told = true;
        self.window.settle = Some(Settle {
            edge,
            began: now,
            last: None,
            pending: false,
        });
        self.stage = super::Stage::Waiting(Wait::Settle(edge));
        self.poll_settle(now);
    }

    /// Sends the next window command of the settle and waits for its answer.
    pub(super) fn poll_settle(&mut self, now: Nanos) {
        let Some(settle) = self.window.settle.as_mut() else {
            return;
        };
        settle.pending = true;
        let command = settle.edge.command();
        self.actions.push_back(Action::Send {
            role: Role::Server,
            command,
        });
        self.deadline = Some(now.saturating_add(super::nanos(self.spec.timeouts.window)));
    }

    /// Whether a settle poll's answer is awaited (a timeout then fails the sample).
    pub(super) fn settle_pending(&self) -> bool {
        self.window.settle.as_ref().is_some_and(|s| s.pending)
    }

    /// An answer to a settle poll: settled (go on), still changing (poll again after
    /// [`POLL`]), or past the drain bound (after the window: take it; before: fail).
    fn on_settle_answer(&mut self, now: Nanos, answer: WindowReport) {
        let Some(quiet) = self.settle_time() else {
            return;
        };
        let Some(commands) = answer.counters.get("commands").copied() else {
            let reason = "server's window answer has no `commands` counter: a server that offers send counts commands (docs/peer-protocol.md, \"window\")";
            self.fail(now, reason.to_string());
            return;
        };
        let bound = super::nanos(self.spec.timing.drain);
        let Some(settle) = self.window.settle.as_mut() else {
            return;
        };
        settle.pending = false;
        let since = match settle.last {
            Some((value, since)) if value == commands => since,
            _ => now,
        };
        settle.last = Some((commands, since));
        let (edge, began) = (settle.edge, settle.began);
        let settled = now.saturating_sub(since) >= super::nanos(quiet);
        let out_of_time = now.saturating_sub(began) >= bound;
        if settled || (out_of_time && edge == Edge::End) {
            self.window.settle = None;
            self.settled(now, answer);
        } else if out_of_time {
            let reason = format!(
                "the server's commands counter was still changing {} after the warmup (at {commands}); it never stayed the same for {} before START (timing.drain bounds the wait)",
                rpcarena_model::duration::format(&self.spec.timing.drain),
                rpcarena_model::duration::format(&quiet)
            );
            self.fail(now, reason);
        } else {
            self.deadline = Some(now.saturating_add(super::nanos(POLL)));
        }
    }

    /// The quiet period is over: start the window, or keep the answer as the window's end.
    fn settled(&mut self, now: Nanos, answer: WindowReport) {
        match answer.edge {
            // The settled answer is the window's start: one taken after START would already
            // hold the lanes' first commands (the Go helper saw 4 of 934 counted twice).
            Edge::Start => {
                self.window.start = Some(answer);
                self.start_window(now);
            }
            Edge::End => {
                self.window.end = Some(answer);
                self.close_window(now);
            }
        }
    }

    /// What the receiver counted over the window, set into the record as `received` (and its
    /// rate), and a problem when it is short of what the client sent.
    fn read_receiver(&mut self, window: &ServerWindow) {
        let Some(quiet) = self.settle_time() else {
            return;
        };
        let received = window.counters.get("commands").copied().unwrap_or(0);
        let Some(client) = self.record.client.as_mut() else {
            return;
        };
        client.received = Some(received);
        let seconds = client.window_ns as f64 / 1e9;
        if let Some(metrics) = self.record.metrics.as_mut()
            && seconds > 0.0
        {
            metrics.received_per_s = Some(received as f64 / seconds);
        }
        if let Some(sent) = client.sent
            && received < sent
        {
            self.checks.push(format!(
                "{} of {sent} commands sent in the window never reached the server (counted until its count had not changed for {})",
                sent - received,
                rpcarena_model::duration::format(&quiet)
            ));
        }
    }

    /// A `window` event from the server.
    pub(super) fn on_window(&mut self, now: Nanos, answer: WindowReport) {
        if let super::Stage::Waiting(Wait::Settle(edge)) = self.stage
            && answer.edge == edge
        {
            self.on_settle_answer(now, answer);
            return;
        }
        let already = match answer.edge {
            Edge::Start => self.window.start.is_some(),
            Edge::End => self.window.end.is_some(),
        };
        if already {
            let edge = answer.edge.as_str().to_uppercase();
            self.fail(now, format!("server answered WINDOW {edge} twice"));
            return;
        }
        if answer.edge == Edge::End && self.window.start.is_none() {
            let reason = "server answered WINDOW END but never WINDOW START".to_string();
            self.fail(now, reason);
            return;
        }
        match answer.edge {
            Edge::Start => self.window.start = Some(answer),
            Edge::End => self.window.end = Some(answer),
        }
        if self.window.end.is_some() && self.stage == super::Stage::Waiting(Wait::WindowEnd) {
            self.close_window(now);
        }
    }

    /// The client's readings are in: wait for the server's `WINDOW END` answer if it is still
    /// to come, else shut the client down.
    pub(super) fn after_readings(&mut self, now: Nanos) {
        if self.settle_time().is_some() {
            self.begin_settle(now, Edge::End);
        } else if self.window.told && self.window.end.is_none() {
            self.wait(now, Wait::WindowEnd);
        } else {
            self.close_window(now);
        }
    }

    /// Both answers are in (or the server is not told the window): check them, keep the
    /// differences, and shut the client down.
    fn close_window(&mut self, now: Nanos) {
        if let (Some(start), Some(end)) = (&self.window.start, &self.window.end) {
            match between(start, end) {
                Ok(window) => {
                    self.read_receiver(&window);
                    self.checks.extend(refusals(&window));
                    self.window.result = Some(window);
                }
                Err(problems) => self.checks.extend(problems),
            }
        } else if self.window.told {
            self.checks.push(
                "server never answered WINDOW START (no `window` event with edge start)".into(),
            );
        }
        self.shut_down(now, Role::Client);
    }
}

/// A server that rejected a call or command, or dropped a reply, in the window fails the
/// sample (revision 1.3): a benchmark that counts refused work as work would lie.
fn refusals(window: &ServerWindow) -> Vec<String> {
    let first = window
        .first_rejection
        .as_deref()
        .map(|m| format!("; first: {m}"))
        .unwrap_or_default();
    let mut problems = Vec::new();
    for (counter, what) in [
        ("rejected", "rejected calls or commands"),
        ("dropped", "dropped replies at its high-water mark"),
    ] {
        if let Some(&n) = window.counters.get(counter)
            && n > 0
        {
            problems.push(format!("the server {what} in the window: {n}{first}"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn answer(edge: Edge, rpcs: u64, allocations: Option<u64>) -> WindowReport {
        WindowReport {
            edge,
            counters: BTreeMap::from([("rpcs".to_string(), rpcs)]),
            allocations,
            allocated_bytes: allocations.map(|a| a * 64),
            first_rejection: None,
        }
    }

    #[test]
    fn the_window_is_end_minus_start() {
        let w = between(
            &answer(Edge::Start, 10, Some(100)),
            &answer(Edge::End, 110, Some(350)),
        )
        .unwrap();
        assert_eq!(w.counters["rpcs"], 100);
        assert_eq!(w.allocations, Some(250));
        assert_eq!(w.allocated_bytes, Some(250 * 64));
    }

    #[test]
    fn counters_that_go_backwards_or_vanish_are_named() {
        let problems = between(
            &answer(Edge::Start, 10, Some(9000)),
            &answer(Edge::End, 20, Some(8000)),
        )
        .unwrap_err();
        assert_eq!(
            problems,
            [
                "server allocations went backwards over the window: 9000 at WINDOW START, 8000 at WINDOW END",
                "server allocated_bytes went backwards over the window: 576000 at WINDOW START, 512000 at WINDOW END"
            ]
        );
        let problems = between(
            &answer(Edge::Start, 10, Some(1)),
            &answer(Edge::End, 20, None),
        )
        .unwrap_err();
        assert!(
            problems[0].contains(
                "allocations is in its answer to WINDOW START but not in the one to WINDOW END"
            ),
            "{problems:?}"
        );
    }
}
