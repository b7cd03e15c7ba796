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

use super::bounded::BoundedSchedule;

/// The backpressure schedule: start whenever the transport has room, up to the safety cap.
pub type BackpressureSchedule = BoundedSchedule;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Window;
    use crate::engine::pool::{PoolNext, PoolSchedule};

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
