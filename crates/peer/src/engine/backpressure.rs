//! The backpressure model: submit without an application bound until the transport pushes back.
//!
//! The shell ([`super::pool::run_pool`]) asks the stack's [`super::pool::Submitter`] for room
//! before every start: tonic's `Channel` is ready (its buffer has a slot and hyper's connection
//! can open a stream), quinn's `open_bi()` resolved (a stream credit is free), or a tcp
//! connection of the pool came back. The only bound of its own is a safety cap, so that a
//! transport that never pushes back cannot make the client allocate without limit; the depth the
//! transport allowed is reported as `max_in_flight`, and the number of times the cap (not the
//! transport) held the submitter back is kept so that a run can say which one bounded it.
//!
//! Sans-IO like the other cores: told the time, starts and completions; answers what to do next.

use super::pool::{PoolNext, PoolSchedule};
use super::{Nanos, Window};

/// The backpressure schedule: start whenever the transport has room, up to the cap.
#[derive(Debug, Clone)]
pub struct BackpressureSchedule {
    deadline: Nanos,
    cap: u64,
    in_flight: u64,
    max_in_flight: u64,
    capped: u64,
    stopped: bool,
}

impl BackpressureSchedule {
    /// Admits until `window.deadline`, at most `max_in_flight` at once.
    pub fn new(window: &Window, max_in_flight: u32) -> BackpressureSchedule {
        BackpressureSchedule {
            deadline: window.deadline,
            cap: u64::from(max_in_flight.max(1)),
            in_flight: 0,
            max_in_flight: 0,
            capped: 0,
            stopped: false,
        }
    }

    /// How many times the safety cap, not the transport, made the submitter wait.
    pub fn times_capped(&self) -> u64 {
        self.capped
    }
}

impl PoolSchedule for BackpressureSchedule {
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
        // Without a bound of its own the submitter would turn a dead server into a busy loop.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_until_the_cap_and_reports_the_depth_reached() {
        let mut schedule = BackpressureSchedule::new(&Window::new(0, 1_000, 0), 4);
        for t in 0..4 {
            assert_eq!(schedule.poll_next(t), PoolNext::Start);
            schedule.handle_started();
        }
        assert_eq!(schedule.poll_next(5), PoolNext::WaitForCompletion);
        assert_eq!(schedule.times_capped(), 1);
        schedule.handle_finished(true);
        schedule.handle_finished(true);
        assert_eq!(schedule.poll_next(6), PoolNext::Start);
        assert_eq!(schedule.max_in_flight(), 4);
        assert_eq!(schedule.in_flight(), 2);
        assert_eq!(schedule.poll_next(1_000), PoolNext::Stop);
    }
}
