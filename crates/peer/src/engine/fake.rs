//! Test doubles for the engine's cores and shells: a clock that moves only when told, tokio's
//! clock for runtimes started paused, and a lane whose operations cost nothing. The unit tests
//! use them to run schedules and shells on virtual time, and the Criterion benchmark
//! (benches/engine.rs) to measure the engine's own cost per operation.

use super::{Clock, Lane, Nanos, OpError, OpOutcome};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

/// A clock that only moves when [`FakeClock::advance`] or [`Clock::sleep_until`] moves it.
#[derive(Debug, Clone, Default)]
pub struct FakeClock(Arc<AtomicU64>);

impl FakeClock {
    /// A clock reading `at`.
    pub fn at(at: Nanos) -> FakeClock {
        FakeClock(Arc::new(AtomicU64::new(at)))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Nanos) {
        self.0.fetch_add(by, Ordering::SeqCst);
    }

    /// Sets the clock to `at` if that is later.
    pub fn set(&self, at: Nanos) {
        self.0.fetch_max(at, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Nanos {
        self.0.load(Ordering::SeqCst)
    }

    async fn sleep_until(&self, until: Nanos) {
        self.set(until);
    }
}

/// tokio's clock as an engine clock. In a runtime started paused
/// (`#[tokio::test(start_paused = true)]`, current-thread) time moves only when every task waits,
/// and then straight to the next timer, so the async shells (their deadlines, the lanes'
/// `tokio::time::sleep`s) run on virtual time: deterministic and instant.
#[derive(Debug, Clone, Copy)]
pub struct PausedClock {
    epoch: tokio::time::Instant,
}

impl PausedClock {
    /// A clock whose zero is now.
    pub fn new() -> PausedClock {
        PausedClock {
            epoch: tokio::time::Instant::now(),
        }
    }
}

impl Default for PausedClock {
    fn default() -> Self {
        PausedClock::new()
    }
}

impl Clock for PausedClock {
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn sleep_until(&self, until: Nanos) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(self.epoch + std::time::Duration::from_nanos(until))
    }
}

/// A lane whose operations complete at once, each advancing `clock` by `cost` (0: no time).
#[derive(Debug, Clone)]
pub struct NoopLane {
    /// The clock the lane advances.
    pub clock: FakeClock,
    /// Virtual time each operation takes.
    pub cost: Nanos,
}

impl Lane for NoopLane {
    async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
        self.clock.advance(self.cost);
        Ok(OpOutcome {
            requests: 1,
            responses: 1,
            request_bytes: 0,
            response_bytes: 0,
        })
    }
}

/// Polls a future that never waits on anything real (fake lanes and clocks) to its end.
///
/// # Panics
///
/// If the future is still pending after one poll: a fake must never pend.
pub fn run_ready<F: Future>(future: F) -> F::Output {
    let mut context = Context::from_waker(Waker::noop());
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a fake lane or clock pended"),
    }
}
