//! The closed load model: each lane has one operation in flight and starts the next one as soon
//! as the previous finished, while the admission window is open.
//!
//! Sans-IO: a [`ClosedLane`] is told the time and the outcome of each operation and answers what
//! the lane does next; it never reads a clock or touches a socket, so the admission rule is tested
//! on a fake clock below.

use super::{LaneSchedule, Nanos, Next, Window};

/// The closed-loop schedule of one lane.
#[derive(Debug, Clone)]
pub struct ClosedLane {
    deadline: Nanos,
    stopped: bool,
}

impl ClosedLane {
    /// A lane admitting operations until `window.deadline`.
    pub fn new(window: &Window) -> ClosedLane {
        ClosedLane {
            deadline: window.deadline,
            stopped: false,
        }
    }
}

impl LaneSchedule for ClosedLane {
    /// What the lane does at `now`: start an operation while the window is open (strictly before
    /// the deadline, so no operation starts at or after it), else stop.
    fn poll_next(&mut self, now: Nanos) -> Next {
        if self.stopped || now >= self.deadline {
            self.stopped = true;
            Next::Stop
        } else {
            Next::Start
        }
    }

    /// The operation started last has finished. A failure stops the lane, so that a dead server
    /// does not turn the lane into a busy loop of instant failures.
    fn handle_finished(&mut self, ok: bool) {
        if !ok {
            self.stopped = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::{FakeClock, run_ready};
    use crate::engine::lanes::drive;
    use crate::engine::tally::LaneTally;
    use crate::engine::{Clock, Lane, OpError, OpOutcome};
    use rpcarena_protocol::event::code;

    /// Operation k takes `durations[k]` (the last one repeats) and fails if `k == fail_at`.
    struct FakeLane {
        clock: FakeClock,
        durations: Vec<Nanos>,
        fail_at: Option<usize>,
        starts: Vec<(Nanos, u64)>,
    }

    impl Lane for FakeLane {
        async fn call(&mut self, seq: u64) -> Result<OpOutcome, OpError> {
            let k = self.starts.len();
            self.starts.push((self.clock.now(), seq));
            let duration = self.durations[k.min(self.durations.len() - 1)];
            self.clock.advance(duration);
            if self.fail_at == Some(k) {
                return Err(OpError::new(code::RPC, format!("op {k} failed")));
            }
            Ok(OpOutcome {
                requests: 2,
                responses: 3,
                request_bytes: 20,
                response_bytes: 30,
            })
        }
    }

    fn run(window: Window, durations: Vec<Nanos>, fail_at: Option<usize>) -> (FakeLane, LaneTally) {
        let clock = FakeClock::at(window.t0);
        let mut lane = FakeLane {
            clock: clock.clone(),
            durations,
            fail_at,
            starts: Vec::new(),
        };
        let mut schedule = ClosedLane::new(&window);
        let mut tally = LaneTally::new();
        // The fake lane and clock never pend, so one poll runs the lane to its end.
        run_ready(drive(&mut lane, 1, 4, &mut schedule, &mut tally, &clock));
        (lane, tally)
    }

    #[test]
    fn operations_start_only_before_the_deadline_and_admitted_ones_finish() {
        let window = Window::new(1_000, 100, 50);
        let (lane, tally) = run(window, vec![30], None);
        // starts at t0 + 0, 30, 60, 90; the one at 90 is admitted and ends at 120 (in the drain)
        let starts: Vec<Nanos> = lane.starts.iter().map(|(t, _)| t - 1_000).collect();
        assert_eq!(starts, vec![0, 30, 60, 90]);
        assert_eq!(tally.completed, 4);
        assert_eq!(tally.failed, 0);
        assert_eq!(tally.histogram.len(), 4);
        assert_eq!(tally.last_end, Some(1_120));
        assert_eq!((tally.requests, tally.responses), (8, 12));
        assert_eq!((tally.request_bytes, tally.response_bytes), (80, 120));
    }

    #[test]
    fn no_operation_starts_exactly_at_the_deadline() {
        let window = Window::new(0, 100, 0);
        let (lane, tally) = run(window, vec![25], None);
        let starts: Vec<Nanos> = lane.starts.iter().map(|(t, _)| *t).collect();
        assert_eq!(starts, vec![0, 25, 50, 75]);
        assert_eq!(tally.completed, 4);
    }

    #[test]
    fn sequence_numbers_interleave_lanes() {
        let (lane, _) = run(Window::new(0, 100, 0), vec![40], None);
        // lane 1 of 4: operations 0, 1, 2 get seq 1, 5, 9
        let seqs: Vec<u64> = lane.starts.iter().map(|(_, s)| *s).collect();
        assert_eq!(seqs, vec![1, 5, 9]);
    }

    #[test]
    fn a_lane_stops_after_its_first_failure() {
        let window = Window::new(0, 1_000, 0);
        let (lane, tally) = run(window, vec![10], Some(1));
        assert_eq!(lane.starts.len(), 2);
        assert_eq!((tally.completed, tally.failed), (1, 1));
        assert_eq!(tally.failures.get(code::RPC), Some(&1));
        assert_eq!(tally.first_failure.as_ref().map(|(t, _, _)| *t), Some(20));
        assert_eq!(tally.histogram.len(), 1);
    }

    #[test]
    fn latency_covers_the_whole_operation() {
        let (_, tally) = run(Window::new(0, 1, 0), vec![1_234_567], None);
        assert_eq!(tally.completed, 1);
        let recorded = tally.histogram.value_at_quantile(1.0);
        assert!(tally.histogram.equivalent(recorded, 1_234_567));
    }

    #[test]
    fn the_schedule_alone_refuses_after_the_deadline_and_after_failure() {
        let mut lane = ClosedLane::new(&Window::new(0, 10, 5));
        assert_eq!(lane.poll_next(0), Next::Start);
        assert_eq!(lane.poll_next(9), Next::Start);
        assert_eq!(lane.poll_next(10), Next::Stop);
        let mut lane = ClosedLane::new(&Window::new(0, 10, 5));
        lane.handle_finished(false);
        assert_eq!(lane.poll_next(1), Next::Stop);
    }
}
