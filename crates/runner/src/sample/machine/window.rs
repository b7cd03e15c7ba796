//! The server's view of the window (revision 1.2): the machine sends `WINDOW START` right after
//! the client's `START` and `WINDOW END` right after its `sample`, and keeps the differences of
//! the server's two `window` answers as `server.window` in the record. An answer that never
//! comes fails the sample on `timeouts.window`; counters that go backwards, an answer for the
//! wrong edge or a second answer fail it with a reason that names the field.

use super::{Nanos, SampleMachine, Wait};
use crate::sample::machine::Action;
use rpcarena_model::record::{SampleRecord, ServerWindow};
use rpcarena_protocol::event::{Command, Edge, Role, WindowReport};

/// The server's answers so far, and what they came to.
#[derive(Debug, Default)]
pub(super) struct Answers {
    /// Whether the server was told the window (it follows revision 1.2).
    told: bool,
    start: Option<WindowReport>,
    end: Option<WindowReport>,
    /// The differences, once both answers are in and checked.
    result: Option<ServerWindow>,
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

    /// A `window` event from the server.
    pub(super) fn on_window(&mut self, now: Nanos, answer: WindowReport) {
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
        if self.window.told && self.window.end.is_none() {
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
                Ok(window) => self.window.result = Some(window),
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
