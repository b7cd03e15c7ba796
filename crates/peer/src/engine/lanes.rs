//! The shell of the closed and window models: one task per lane, each asking its schedule
//! before every operation ([`ClosedLane`] per lane; the window's [`SharedWindow`], one
//! [`WindowSchedule`] for all lanes).
//!
//! A lane starts an operation, awaits it, records it in its own [`LaneTally`] and starts the next
//! on the same task, so a lane costs no hop between tasks per operation (a spawned task per
//! operation would cost two wake-ups of parked threads, tens of microseconds on a VM).

use super::closed::ClosedLane;
use super::intervals::Intervals;
use super::pool::{PoolNext, PoolSchedule};
use super::tally::{LaneTally, Totals};
use super::window::WindowSchedule;
use super::{Clock, Lane, LaneSchedule, Next, OpError, Window};
use rpcarena_protocol::event::code;
use std::sync::{Arc, Mutex};

/// Runs one lane until its schedule says stop. `index` and `lanes` make sequence numbers unique
/// across lanes (operation k of lane i has seq `i + k * lanes`).
///
/// The latency of an operation runs from the clock reading that admitted it (taken just before
/// the lane builds its first request) to the return of `call` (just after the terminal status
/// was read and checked).
pub async fn drive<L: Lane, C: Clock, S: LaneSchedule>(
    lane: &mut L,
    index: u64,
    lanes: u64,
    schedule: &mut S,
    tally: &mut LaneTally,
    clock: &C,
) {
    let mut seq = index;
    loop {
        let now = clock.now();
        match schedule.poll_next(now) {
            Next::Stop => return,
            Next::Start => {
                tally.handle_started(now);
                let result = lane.call(seq).await;
                let end = clock.now();
                let ok = result.is_ok();
                tally.handle_finished(now, end, result);
                schedule.handle_finished(ok);
                seq = seq.wrapping_add(lanes);
            }
        }
    }
}

/// The window model's schedule as every lane sees it: one [`WindowSchedule`] behind a mutex
/// (locked twice per operation, never across an await). With as many lanes as the window's N, an
/// idle lane always finds room, so every completion is followed at once by the next start.
#[derive(Debug, Clone)]
pub struct SharedWindow(Arc<Mutex<WindowSchedule>>);

impl SharedWindow {
    /// The schedule shared by the lanes of one window.
    pub fn new(schedule: WindowSchedule) -> SharedWindow {
        SharedWindow(Arc::new(Mutex::new(schedule)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WindowSchedule> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most operations in flight at once.
    pub fn max_in_flight(&self) -> u64 {
        self.lock().max_in_flight()
    }
}

impl LaneSchedule for SharedWindow {
    fn poll_next(&mut self, now: u64) -> Next {
        let mut schedule = self.lock();
        match schedule.poll_next(now) {
            PoolNext::Start => {
                schedule.handle_started();
                Next::Start
            }
            // Only with more lanes than N, which the window model never runs.
            PoolNext::WaitForCompletion | PoolNext::Stop => Next::Stop,
        }
    }

    fn handle_finished(&mut self, ok: bool) {
        self.lock().handle_finished(ok);
    }
}

/// The closed model: every lane through `window` on its own task, one operation in flight each.
pub async fn run_closed<L: Lane, C: Clock>(
    lanes: Vec<L>,
    clock: C,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<L>, Totals), OpError> {
    run_lanes(lanes, |_| ClosedLane::new(&window), clock, window, bound).await
}

/// Runs every lane through `window` on its own task with the schedule `schedule(index)` and
/// merges their tallies.
///
/// Each lane is raced against the window's hard deadline: an operation still in flight then is
/// dropped (cancelled) and counted as failed with code `timeout`. The lanes come back for the
/// next phase (or for closing); a lane whose operation was cancelled may have a broken
/// connection, which is fine because a failure ends the sample's usefulness anyway.
pub async fn run_lanes<L: Lane, S: LaneSchedule, C: Clock>(
    lanes: Vec<L>,
    schedule: impl Fn(usize) -> S,
    clock: C,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<L>, Totals), OpError> {
    let count = lanes.len() as u64;
    let shared = Arc::new(Mutex::new(Intervals::new()));
    let mut tasks = Vec::with_capacity(lanes.len());
    for (index, mut lane) in lanes.into_iter().enumerate() {
        let mut schedule = schedule(index);
        let mut tally = LaneTally::sharing(window.t0, shared.clone());
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let hard_deadline = clock.sleep_until(window.hard_deadline);
            // biased: when an operation and the bound are ready together, the operation wins.
            let finished = tokio::select! {
                biased;
                () = drive(&mut lane, index as u64, count, &mut schedule, &mut tally, &clock) => true,
                () = hard_deadline => false,
            };
            if !finished {
                tally.handle_drain_expired(clock.now(), bound);
            }
            (lane, tally)
        }));
    }
    let mut lanes = Vec::with_capacity(tasks.len());
    let mut tallies = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (lane, tally) = task
            .await
            .map_err(|e| OpError::new(code::INTERNAL, format!("a lane task failed: {e}")))?;
        lanes.push(lane);
        tallies.push(tally);
    }
    Ok((lanes, Totals::merge(tallies, Some(&shared))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::PausedClock;
    use crate::engine::{OpError, OpOutcome};
    use rpcarena_protocol::event::code;
    use std::sync::Mutex;
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    /// A lane whose operations take `op` of (virtual) time; records when each one started.
    struct SleepyLane {
        op: Duration,
        hang_after: Option<usize>,
        clock: PausedClock,
        starts: Arc<Mutex<Vec<u64>>>,
    }

    impl Lane for SleepyLane {
        async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
            let k = {
                let mut starts = self.starts.lock().expect("not poisoned");
                starts.push(self.clock.now());
                starts.len() - 1
            };
            if self.hang_after.is_some_and(|n| k >= n) {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(self.op).await;
            Ok(OpOutcome {
                requests: 1,
                responses: 1,
                ..OpOutcome::default()
            })
        }
    }

    fn lane(clock: PausedClock, hang_after: Option<usize>) -> SleepyLane {
        SleepyLane {
            op: Duration::from_millis(2),
            hang_after,
            clock,
            starts: Arc::new(Mutex::new(Vec::new())),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_keeps_n_lanes_busy_until_the_deadline() {
        let clock = PausedClock::new();
        let lanes: Vec<SleepyLane> = (0..3).map(|_| lane(clock, None)).collect();
        let window = Window::new(clock.now(), 30 * MS, 1_000 * MS);
        let shared = SharedWindow::new(WindowSchedule::new(&window, 3));
        let (lanes, totals) = run_lanes(lanes, |_| shared.clone(), clock, window, "the drain")
            .await
            .expect("lanes do not panic");
        assert_eq!(lanes.len(), 3);
        assert_eq!(shared.max_in_flight(), 3);
        assert_eq!(totals.tally.failed, 0);
        // three lanes of 2 ms operations starting at 0, 2, ..., 28 ms of a 30 ms window
        assert_eq!(totals.tally.completed, 45);
        assert_eq!(
            clock.now(),
            30 * MS,
            "the last operation ends as the window closes"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_shell_admits_before_the_deadline_and_times_out_at_the_bound() {
        let clock = PausedClock::new();
        let healthy = lane(clock, None);
        let starts = healthy.starts.clone();
        let lanes = vec![healthy, lane(clock, Some(1))];
        let window = Window::new(clock.now(), 40 * MS, 20 * MS);
        let (lanes, totals) = run_closed(lanes, clock, window, "the drain")
            .await
            .expect("lanes do not panic");
        assert_eq!(lanes.len(), 2);
        // the hanging lane completed one operation, then its second hit the bound
        assert_eq!(totals.tally.failed, 1);
        assert_eq!(totals.tally.failures.get(code::TIMEOUT), Some(&1));
        assert_eq!(totals.tally.completed, 20 + 1);
        assert_eq!(totals.tally.histogram.len(), totals.tally.completed);
        // no operation of the healthy lane started at or after the deadline
        let starts = starts.lock().expect("not poisoned");
        assert_eq!(starts.last(), Some(&(38 * MS)));
        assert_eq!(
            clock.now(),
            60 * MS,
            "the bound ends the window: deadline + drain"
        );
        let report = totals.report(&window).expect("encodes");
        assert_eq!(report.drain_ns, 20 * MS);
    }
}
