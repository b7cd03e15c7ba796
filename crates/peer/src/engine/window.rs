//! The window model: N operations always outstanding.
//!
//! Sans-IO: a [`WindowSchedule`] is told the time and when operations start and finish, and
//! answers whether one more starts now, must wait for a completion, or nothing starts any more.
//! The shell runs N lanes that share it ([`super::lanes::SharedWindow`]; grpc and quic: N calls
//! multiplexed on the one connection; tcp: N connections, because a native tcp connection carries
//! one call at a time): every completion is followed at once by the next start on the same lane,
//! so N stay in flight until the deadline.

use super::bounded::BoundedSchedule;

/// The window schedule: keep `in_flight` operations outstanding while the window is open.
pub type WindowSchedule = BoundedSchedule;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Window;
    use crate::engine::pool::{PoolNext, PoolSchedule};

    #[test]
    fn the_window_fills_to_n_and_refills_after_each_completion() {
        let window = Window::new(0, 100, 10);
        let mut schedule = WindowSchedule::new(&window, 3);
        for _ in 0..3 {
            assert_eq!(schedule.poll_next(0), PoolNext::Start);
            schedule.handle_started();
        }
        assert_eq!(schedule.poll_next(1), PoolNext::WaitForCompletion);
        schedule.handle_finished(true);
        assert_eq!(schedule.poll_next(2), PoolNext::Start);
        schedule.handle_started();
        assert_eq!(schedule.in_flight(), 3);
        assert_eq!(schedule.max_in_flight(), 3);
        // the deadline stops admission; in-flight operations still finish
        assert_eq!(schedule.poll_next(100), PoolNext::Stop);
        schedule.handle_finished(true);
        assert_eq!(schedule.poll_next(50), PoolNext::Stop);
    }

    #[test]
    fn a_failure_stops_new_starts() {
        let mut schedule = WindowSchedule::new(&Window::new(0, 100, 10), 2);
        schedule.handle_started();
        schedule.handle_finished(false);
        assert_eq!(schedule.poll_next(1), PoolNext::Stop);
    }
}
