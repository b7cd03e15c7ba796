//! The shell of the backpressure model: one submitter task that starts operations as its
//! schedule and the transport allow, and drives them all itself.
//!
//! The operations in flight are polled from the submitter's task (a `FuturesUnordered`), not
//! spawned: a spawned task per operation cost about 20 µs of thread wake-ups per operation on
//! this project's 2-vCPU VMs (benches/engine.rs), against a fraction of a microsecond inline.
//! The transports' own work still runs on their tasks (hyper's connection, quinn's endpoint and
//! connection drivers); what runs here is building, encoding, decoding and validating messages,
//! on one runtime worker at a time. The submitter records every completion into one
//! [`LaneTally`].
//!
//! ```text
//! loop { schedule.poll_next(now):
//!          Start             -> await submitter.ready() (or a completion, or the deadline);
//!                               admitted if now < deadline -> spawn(ticket.call(seq))
//!          WaitForCompletion -> await a completion (or the deadline)
//!          Stop              -> drain: await the rest until the hard deadline, then `timeout` }
//! ```

use super::tally::LaneTally;
use super::{Clock, Lane, Nanos, OpError, OpOutcome, Window};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rpcarena_protocol::event::code;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::mpsc;

/// What a pool-level schedule wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolNext {
    /// Start one more operation as soon as the transport has room.
    Start,
    /// Wait until an operation in flight finishes.
    WaitForCompletion,
    /// Start nothing more.
    Stop,
}

/// A sans-IO schedule of operations over a pool of transport capacity.
pub trait PoolSchedule {
    /// What to do at `now`.
    fn poll_next(&mut self, now: Nanos) -> PoolNext;
    /// An operation was admitted and started.
    fn handle_started(&mut self);
    /// An operation finished (`ok` if it completed and validated).
    fn handle_finished(&mut self, ok: bool);
    /// Operations in flight now.
    fn in_flight(&self) -> u64;
    /// The most operations in flight at once so far.
    fn max_in_flight(&self) -> u64;
}

/// Starts operations when the transport accepts one more.
pub trait Submitter: Send + 'static {
    /// The right to run one operation, handed out when the transport has room.
    type Ticket: Ticket;

    /// Completes when the transport accepts one more operation. Dropping the future before it
    /// completes must not lose capacity (every implementation here is cancel-safe).
    fn ready(&mut self) -> impl Future<Output = Result<Self::Ticket, OpError>> + Send;
}

/// One admitted operation.
pub trait Ticket: Send + 'static {
    /// Performs the operation (as [`Lane::call`]).
    fn call(self, seq: u64) -> impl Future<Output = Result<OpOutcome, OpError>> + Send;
}

/// A pool of lanes as a [`Submitter`]: ready when a lane is idle. The tcp stack's backpressure
/// submitter (its connections carry one call at a time).
pub struct LanePool<L> {
    idle: mpsc::UnboundedReceiver<L>,
    home: mpsc::UnboundedSender<L>,
}

impl<L: Lane> LanePool<L> {
    /// A pool of `lanes`, all idle.
    pub fn new(lanes: Vec<L>) -> LanePool<L> {
        let (home, idle) = mpsc::unbounded_channel();
        for lane in lanes {
            // The receiver is alive: it is in `idle`.
            let _ = home.send(lane);
        }
        LanePool { idle, home }
    }

    /// The lanes back, for the next phase or for closing. A lane whose operation was cancelled
    /// at the drain bound comes back too (its ticket returns it when dropped).
    pub fn into_lanes(mut self) -> Vec<L> {
        let mut lanes = Vec::new();
        while let Ok(lane) = self.idle.try_recv() {
            lanes.push(lane);
        }
        lanes
    }
}

impl<L: Lane> Submitter for LanePool<L> {
    type Ticket = LaneTicket<L>;

    async fn ready(&mut self) -> Result<LaneTicket<L>, OpError> {
        // `recv` is cancel-safe, and the pool holds a sender, so it never ends.
        let lane = self
            .idle
            .recv()
            .await
            .ok_or_else(|| OpError::new(code::INTERNAL, "the lane pool closed"))?;
        Ok(LaneTicket {
            lane: Some(lane),
            home: self.home.clone(),
        })
    }
}

/// An idle lane taken from a [`LanePool`]; it goes back to the pool when the ticket is dropped,
/// after its operation or when the operation is cancelled.
pub struct LaneTicket<L> {
    lane: Option<L>,
    home: mpsc::UnboundedSender<L>,
}

impl<L: Lane> Ticket for LaneTicket<L> {
    async fn call(mut self, seq: u64) -> Result<OpOutcome, OpError> {
        match self.lane.as_mut() {
            Some(lane) => lane.call(seq).await,
            None => Err(OpError::new(code::INTERNAL, "a ticket without a lane")),
        }
    }
}

impl<L> Drop for LaneTicket<L> {
    fn drop(&mut self) {
        if let Some(lane) = self.lane.take() {
            let _ = self.home.send(lane);
        }
    }
}

/// What an operation returns: its seq, its start, its end and its result.
type Finished = (u64, Nanos, Nanos, Result<OpOutcome, OpError>);

/// Runs `schedule` through `window` with `submitter`, and returns the tally of every operation.
///
/// An operation's latency runs from the clock reading that admitted it (right after the
/// transport accepted it) to the end of its call.
pub async fn run_pool<S: Submitter, P: PoolSchedule, C: Clock>(
    submitter: &mut S,
    schedule: &mut P,
    clock: C,
    window: Window,
    bound: &'static str,
) -> LaneTally {
    let mut tally = LaneTally::owning(window.t0);
    let mut ops: FuturesUnordered<Pin<Box<dyn Future<Output = Finished> + Send>>> =
        FuturesUnordered::new();
    let mut starts: BTreeMap<u64, Nanos> = BTreeMap::new();
    let mut seq: u64 = 0;
    let deadline = clock.sleep_until(window.deadline);
    tokio::pin!(deadline);
    loop {
        match schedule.poll_next(clock.now()) {
            PoolNext::Stop => break,
            PoolNext::Start => tokio::select! {
                biased;
                Some(done) = ops.next() => finish(done, &mut starts, schedule, &mut tally),
                ready = submitter.ready() => {
                    let start = clock.now();
                    match ready {
                        // Admission: the transport took long enough that the window closed.
                        Ok(ticket) if start >= window.deadline => drop(ticket),
                        Ok(ticket) => {
                            schedule.handle_started();
                            let op_seq = seq;
                            let clock = clock.clone();
                            ops.push(Box::pin(async move {
                                let result = ticket.call(op_seq).await;
                                (op_seq, start, clock.now(), result)
                            }));
                            starts.insert(seq, start);
                            seq = seq.wrapping_add(1);
                        }
                        Err(error) => {
                            // The transport refused: one failed operation, and no more.
                            schedule.handle_started();
                            schedule.handle_finished(false);
                            tally.handle_finished(start, start, Err(error));
                        }
                    }
                }
                () = &mut deadline => {}
            },
            PoolNext::WaitForCompletion => tokio::select! {
                biased;
                Some(done) = ops.next() => finish(done, &mut starts, schedule, &mut tally),
                () = &mut deadline => {}
            },
        }
    }
    let hard_deadline = clock.sleep_until(window.hard_deadline);
    tokio::pin!(hard_deadline);
    loop {
        tokio::select! {
            biased;
            done = ops.next() => match done {
                Some(done) => finish(done, &mut starts, schedule, &mut tally),
                None => break,
            },
            () = &mut hard_deadline => {
                let now = clock.now();
                for start in starts.values() {
                    tally.handle_timeout(now, *start, bound);
                }
                // Dropping the operations cancels them (a tcp ticket returns its connection).
                drop(ops);
                break;
            }
        }
    }
    tally
}

fn finish<P: PoolSchedule>(
    (seq, start, end, result): Finished,
    starts: &mut BTreeMap<u64, Nanos>,
    schedule: &mut P,
    tally: &mut LaneTally,
) {
    starts.remove(&seq);
    schedule.handle_finished(result.is_ok());
    tally.handle_finished(start, end, result);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::backpressure::BackpressureSchedule;
    use crate::engine::fake::PausedClock;
    use crate::engine::window::WindowSchedule;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    /// A lane whose operations take 2 ms of (virtual) time and count how many run at once.
    struct CountingLane {
        op: Duration,
        running: Arc<AtomicU64>,
        most: Arc<AtomicU64>,
        hang: bool,
    }

    impl Lane for CountingLane {
        async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            if self.hang {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(self.op).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(OpOutcome {
                requests: 1,
                responses: 1,
                ..OpOutcome::default()
            })
        }
    }

    fn lanes(n: usize, hang: bool) -> (Vec<CountingLane>, Arc<AtomicU64>) {
        let most = Arc::new(AtomicU64::new(0));
        let running = Arc::new(AtomicU64::new(0));
        let lanes = (0..n)
            .map(|_| CountingLane {
                op: Duration::from_millis(2),
                running: running.clone(),
                most: most.clone(),
                hang,
            })
            .collect();
        (lanes, most)
    }

    #[tokio::test(start_paused = true)]
    async fn a_pool_keeps_the_schedules_n_in_flight_and_gives_the_lanes_back() {
        let clock = PausedClock::new();
        let (lanes, most) = lanes(5, false);
        let mut pool = LanePool::new(lanes);
        let window = Window::new(clock.now(), 50 * MS, 1_000 * MS);
        let mut schedule = WindowSchedule::new(&window, 5);
        let tally = run_pool(&mut pool, &mut schedule, clock, window, "the drain").await;
        assert_eq!(tally.failed, 0);
        // five operations every 2 ms from 0 to 48 ms
        assert_eq!(tally.completed, 5 * 25);
        assert_eq!(tally.histogram.len(), tally.completed);
        assert_eq!(most.load(Ordering::SeqCst), 5);
        assert_eq!(schedule.max_in_flight(), 5);
        assert_eq!(pool.into_lanes().len(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn operations_still_running_at_the_bound_time_out_and_their_lanes_come_back() {
        let clock = PausedClock::new();
        let (lanes, _) = lanes(3, true);
        let mut pool = LanePool::new(lanes);
        let window = Window::new(clock.now(), 10 * MS, 10 * MS);
        let mut schedule = BackpressureSchedule::new(&window, 100);
        let tally = run_pool(&mut pool, &mut schedule, clock, window, "the drain").await;
        // the pool of 3 is the transport's bound here, far below the cap
        assert_eq!(schedule.max_in_flight(), 3);
        assert_eq!(tally.failed, 3);
        assert_eq!(tally.failures.get(code::TIMEOUT), Some(&3));
        assert_eq!(
            clock.now(),
            20 * MS,
            "failed at the bound: deadline + drain"
        );
        assert_eq!(pool.into_lanes().len(), 3);
    }
}
