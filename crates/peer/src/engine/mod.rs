//! The load engine: runs operations on lanes through an admission window and measures them.
//!
//! The engine knows nothing about stacks or sockets. A stack hands it one [`Lane`] per unit of
//! concurrency (a lane owns whatever it needs: a cloned gRPC channel, a QUIC connection handle, a
//! TCP connection) and the engine calls [`Lane::call`] for each operation.
//!
//! Scheduling is split the way quinn splits quinn-proto from quinn: the load model's decisions
//! are a sans-IO core ([`LaneSchedule`], e.g. [`closed::ClosedLane`]) that is told the time and
//! outcomes and answers "start now", "wait until" or "stop"; the thin async shell ([`drive`],
//! [`run_window`]) reads the clock, awaits operations and timers and records results in a
//! per-lane [`tally::LaneTally`]. New load models (window, backpressure, open loop with intended
//! start times) add a schedule variant; the shell and the stacks stay as they are.
//!
//! ```text
//! run_window ── spawns one task per lane ──> drive: loop { poll_next(now) -> Start | Wait | Stop
//!                                                         Start: call(seq) -> tally }
//!            <── (lane, tally) per lane ──── bounded by the window's hard deadline (drain)
//! ```

pub mod closed;
pub mod tally;

use rpcarena_protocol::event::code;
use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};
use tally::{LaneTally, Totals};

/// Nanoseconds on the engine's clock (since the clock's epoch).
pub type Nanos = u64;

/// What a completed operation carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpOutcome {
    /// Request messages sent.
    pub requests: u64,
    /// Response messages received (a client stream's summary counts as one).
    pub responses: u64,
    /// Request payload bytes sent.
    pub request_bytes: u64,
    /// Response payload bytes received.
    pub response_bytes: u64,
}

/// Why an operation failed, with the protocol error code it is counted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    /// One of [`rpcarena_protocol::event::code`].
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl OpError {
    /// An error counted under `code`.
    pub fn new(code: &'static str, message: impl Into<String>) -> OpError {
        OpError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for OpError {}

/// One unit of concurrency of a stack: performs one operation at a time.
///
/// `&mut self` lets a lane own its connection state (the tcp stack's connection, buffers) without
/// any lock; lanes that share a connection (grpc, quic) hold cheap clones of its handle.
pub trait Lane: Send + 'static {
    /// Performs one whole operation: builds and encodes the requests, sends them, receives,
    /// decodes and validates every response and reads the terminal status.
    fn call(&mut self, seq: u64) -> impl Future<Output = Result<OpOutcome, OpError>> + Send;
}

/// A monotonic clock in nanoseconds, and a way to sleep on it.
pub trait Clock: Clone + Send + Sync + 'static {
    /// Now.
    fn now(&self) -> Nanos;
    /// Completes at or after `until`.
    fn sleep_until(&self, until: Nanos) -> impl Future<Output = ()> + Send;
}

/// The real clock: `std::time::Instant` (CLOCK_MONOTONIC) since the process armed it.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    epoch: Instant,
}

impl MonotonicClock {
    /// A clock whose zero is now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            epoch: Instant::now(),
        }
    }

    /// The tokio instant of `at`, for timers.
    pub fn instant(&self, at: Nanos) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.epoch + Duration::from_nanos(at))
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Nanos {
        // u64 nanoseconds last 584 years.
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn sleep_until(&self, until: Nanos) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(self.instant(until))
    }
}

/// One admission window: operations start in `[t0, deadline)` and must end by `hard_deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// When the window opened.
    pub t0: Nanos,
    /// No operation starts at or after this.
    pub deadline: Nanos,
    /// `deadline + drain`: admitted operations still running now are failed as `timeout`.
    pub hard_deadline: Nanos,
}

impl Window {
    /// A window opening at `t0`, `length` long, with `drain` for admitted operations to finish.
    pub fn new(t0: Nanos, length: Nanos, drain: Nanos) -> Window {
        let deadline = t0.saturating_add(length);
        Window {
            t0,
            deadline,
            hard_deadline: deadline.saturating_add(drain),
        }
    }
}

/// What a lane does next, as decided by its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Start an operation now.
    Start,
    /// Nothing to do until this time (open-loop models; closed never waits).
    #[expect(
        dead_code,
        reason = "the open-loop model of the next issue waits for intended start times"
    )]
    Wait(Nanos),
    /// The lane is done.
    Stop,
}

/// The load models (peer protocol `--load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadModel {
    /// Each lane keeps one operation in flight.
    Closed,
}

impl LoadModel {
    /// The schedule of one lane in `window`.
    pub fn lane_schedule(&self, window: &Window) -> LaneSchedule {
        match self {
            LoadModel::Closed => LaneSchedule::Closed(closed::ClosedLane::new(window)),
        }
    }
}

/// A lane's sans-IO schedule, one variant per load model.
#[derive(Debug, Clone)]
pub enum LaneSchedule {
    /// See [`closed::ClosedLane`].
    Closed(closed::ClosedLane),
}

impl LaneSchedule {
    /// What the lane does at `now`.
    pub fn poll_next(&mut self, now: Nanos) -> Next {
        match self {
            LaneSchedule::Closed(lane) => lane.poll_next(now),
        }
    }

    /// The operation started last has finished (`ok` if it completed and validated).
    pub fn handle_finished(&mut self, ok: bool) {
        match self {
            LaneSchedule::Closed(lane) => lane.handle_finished(ok),
        }
    }
}

/// Runs one lane until its schedule says stop. `index` and `lanes` make sequence numbers unique
/// across lanes (operation k of lane i has seq `i + k * lanes`).
///
/// The latency of an operation runs from the clock reading that admitted it (taken just before
/// the lane builds its first request) to the return of `call` (just after the terminal status
/// was read and checked).
pub async fn drive<L: Lane, C: Clock>(
    lane: &mut L,
    index: u64,
    lanes: u64,
    schedule: &mut LaneSchedule,
    tally: &mut LaneTally,
    clock: &C,
) {
    let mut seq = index;
    loop {
        let now = clock.now();
        match schedule.poll_next(now) {
            Next::Stop => return,
            Next::Wait(until) => clock.sleep_until(until).await,
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

/// Runs every lane through `window` on its own task and merges their tallies.
///
/// Each lane is raced against the window's hard deadline: an operation still in flight then is
/// dropped (cancelled) and counted as failed with code `timeout`. The lanes come back for the
/// next phase (or for closing); a lane whose operation was cancelled may have a broken
/// connection, which is fine because a failure ends the sample's usefulness anyway.
pub async fn run_window<L: Lane>(
    lanes: Vec<L>,
    model: LoadModel,
    clock: MonotonicClock,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<L>, Totals), OpError> {
    let count = lanes.len() as u64;
    let mut tasks = Vec::with_capacity(lanes.len());
    for (index, mut lane) in lanes.into_iter().enumerate() {
        let mut schedule = model.lane_schedule(&window);
        tasks.push(tokio::spawn(async move {
            let mut tally = LaneTally::new();
            let hard_deadline = tokio::time::sleep_until(clock.instant(window.hard_deadline));
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
    Ok((lanes, Totals::merge(tallies)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A lane whose operations sleep for real; records when each one started.
    struct SleepyLane {
        op: Duration,
        hang_after: Option<usize>,
        starts: Arc<Mutex<Vec<Instant>>>,
    }

    impl Lane for SleepyLane {
        async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
            let k = {
                let mut starts = self.starts.lock().expect("not poisoned");
                starts.push(Instant::now());
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_shell_admits_before_the_deadline_and_times_out_at_the_bound() {
        let clock = MonotonicClock::new();
        let starts = Arc::new(Mutex::new(Vec::new()));
        let lanes = vec![
            SleepyLane {
                op: Duration::from_millis(2),
                hang_after: None,
                starts: starts.clone(),
            },
            SleepyLane {
                op: Duration::from_millis(2),
                hang_after: Some(1),
                starts: Arc::new(Mutex::new(Vec::new())),
            },
        ];
        let window = Window::new(clock.now(), 40_000_000, 20_000_000);
        let began = Instant::now();
        let (lanes, totals) = run_window(lanes, LoadModel::Closed, clock, window, "the drain")
            .await
            .expect("lanes do not panic");
        assert_eq!(lanes.len(), 2);
        // the hanging lane completed one operation, then its second hit the bound
        assert_eq!(totals.tally.failed, 1);
        assert_eq!(totals.tally.failures.get(code::TIMEOUT), Some(&1));
        assert!(totals.tally.completed >= 2);
        assert_eq!(totals.tally.histogram.len(), totals.tally.completed);
        // no operation of the healthy lane started after the deadline
        let deadline = began + Duration::from_millis(40);
        let starts = starts.lock().expect("not poisoned");
        assert!(
            starts
                .iter()
                .all(|s| *s < deadline + Duration::from_millis(1))
        );
        assert!(began.elapsed() >= Duration::from_millis(60));
        let report = totals.report(&window).expect("encodes");
        assert!(report.drain_ns >= 20_000_000, "{}", report.drain_ns);
    }
}
