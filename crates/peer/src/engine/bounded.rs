//! The core shared by the window and backpressure models: at most a limit of operations in
//! flight while the window is open (see [`super::window`] and [`super::backpressure`]).
//!
//! Sans-IO like the other cores: told the time, starts and completions; answers what to do next.

use super::pool::{PoolNext, PoolSchedule};
use super::{Nanos, Window};

/// At most `limit` operations in flight until the deadline: the window model keeps exactly that
/// many outstanding (its lanes start again at once), the backpressure model lets the transport
/// decide below it (the limit is its safety cap). One core, two models.
#[derive(Debug, Clone)]
pub struct BoundedSchedule {
    deadline: Nanos,
    cap: u64,
    in_flight: u64,
    max_in_flight: u64,
    capped: u64,
    stopped: bool,
}

impl BoundedSchedule {
    /// Admits until `window.deadline`, at most `max_in_flight` at once.
    pub fn new(window: &Window, max_in_flight: u32) -> BoundedSchedule {
        BoundedSchedule {
            deadline: window.deadline,
            cap: u64::from(max_in_flight.max(1)),
            in_flight: 0,
            max_in_flight: 0,
            capped: 0,
            stopped: false,
        }
    }

    /// How many times the limit (for backpressure: the safety cap, not the transport) made a start
    /// wait.
    pub fn times_capped(&self) -> u64 {
        self.capped
    }
}

impl PoolSchedule for BoundedSchedule {
    fn poll_next(&mut self, now: Nanos) -> PoolNext {
        if self.stopped || now >= self.deadline {
            self.stopped = true;
            PoolNext::Stop
        } else if self.in_flight < self.cap {
            // The transport decides: the shell awaits the submitter's readiness next.
            PoolNext::Start
        } else {
            self.capped += 1;
            PoolNext::WaitForCompletion
        }
    }

    fn handle_started(&mut self) {
        self.in_flight += 1;
        self.max_in_flight = self.max_in_flight.max(self.in_flight);
    }

    fn handle_finished(&mut self, ok: bool) {
        self.in_flight = self.in_flight.saturating_sub(1);
        // As in the closed model: after a failure nothing new starts, so a dead server does not
        // become a busy loop of instant failures.
        if !ok {
            self.stopped = true;
        }
    }

    fn in_flight(&self) -> u64 {
        self.in_flight
    }

    fn max_in_flight(&self) -> u64 {
        self.max_in_flight
    }
}
