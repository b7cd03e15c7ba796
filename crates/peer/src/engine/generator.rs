//! The shell of the open model: a timing thread that releases every operation at its intended
//! start, and lane tasks that run them.
//!
//! tokio's timer has a 1 ms granularity, far too coarse for starts 1 ms apart, so the schedule
//! is kept by a dedicated OS thread: it sleeps with `clock_nanosleep` (absolute, CLOCK_MONOTONIC,
//! timer slack 1 ns so the kernel does not defer the wake-up to batch it) until shortly before
//! each intended start, spins the rest ([`Pacer`]), and then puts the start in a queue. Idle lane
//! tasks take starts from the queue in order; when every lane is busy (`--concurrency` operations
//! in flight) a start waits in the queue, and that wait is part of its latency, because latency
//! is measured from the intended start. The generator hands each start over [`LEAD_NS`] early
//! and the lane waits for the exact moment itself, so the wake-up of a parked runtime worker is
//! not part of the send lag. The actual start is read on the lane task, right before
//! the operation builds its first request, so the send lag (actual minus intended start) counts
//! the generator's own lateness, the hand-over to the runtime and any wait for a lane.
//!
//! Admission: the generator produces only intended starts before the deadline, and a lane that
//! takes a start at or after the deadline drops it (no operation starts after the window); such
//! starts count in `offered` but not in `completed` or `failed`, and set `fell_behind`.

use super::open::{Arrivals, OpenConfig, Pace, Pacer};
use super::tally::{LaneTally, ModelReport, Totals};
use super::{Clock, Lane, MonotonicClock, Nanos, OpError, Window};
use rpcarena_protocol::event::{code, load};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The generator hands a start to the lanes this long before its intended time, and the lane
/// that takes it waits out the rest on its own worker (yielding in a loop). Handing over at the
/// intended time instead would add the wake-up of a parked runtime worker to every start (on this
/// project's VMs about 30 µs at p50 and over 100 µs at p99); with the lead, the lane is awake and
/// waiting when the moment comes. The cost is CPU: up to this much per operation, spent by the
/// lane, minus the generator's own lateness and the hand-over.
pub const LEAD_NS: Nanos = 150_000;

/// The generator sleeps until this long before its hand-over time and spins the rest: a sleep
/// with a 1 ns timer slack still wakes up tens of microseconds late, and the lead absorbs most of
/// that, so a short spin suffices.
pub const SPIN_NS: Nanos = 50_000;

/// Most of a core the pacing may burn, spinning in the generator and yielding in the lanes. Up to
/// 1,000 ops/s the full lead and spin fit in it; at higher rates both shrink with the gap, so that
/// an open loop at 5,000 or 40,000 ops/s measures the stack rather than a client that spins a
/// whole core (measured before this cap: 1.0 core of client CPU at 5,000 ops/s, 199 us per op).
pub const PACING_BUDGET: f64 = 0.2;

/// (lead, spin) for a target rate: [`LEAD_NS`] and [`SPIN_NS`], each capped to its share of
/// the mean gap between starts so that together they stay within [`PACING_BUDGET`].
pub fn pacing_for(rate: f64) -> (Nanos, Nanos) {
    let gap = if rate > 0.0 { 1e9 / rate } else { f64::MAX };
    let lead = (gap * PACING_BUDGET * 0.75).min(LEAD_NS as f64) as Nanos;
    let spin = (gap * PACING_BUDGET * 0.25).min(SPIN_NS as f64) as Nanos;
    (lead, spin)
}

/// A sample whose send lag p99 is above this fell behind its schedule.
pub const FELL_BEHIND_LAG_NS: Nanos = 1_000_000;

/// One operation released by the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenStart {
    /// Operation number (its request seq).
    pub seq: u64,
    /// When it is meant to start.
    pub intended: Nanos,
}

/// How the generator thread reads the time and waits: [`ThreadTimer`] on the real clock, a fake
/// in tests.
pub trait Timer {
    /// Now, on the engine's clock.
    fn now(&self) -> Nanos;
    /// Blocks until about `until` (never much later; earlier is fine, the pacer asks again).
    fn sleep_until(&self, until: Nanos);
    /// One turn of a busy wait.
    fn spin(&self);
}

/// The real timer: the engine's monotonic clock, `clock_nanosleep` to an absolute time, and
/// `spin_loop` hints.
pub struct ThreadTimer {
    clock: MonotonicClock,
    sleeper: Sleeper,
}

impl ThreadTimer {
    /// A timer on `clock`, for the calling thread (it sets the thread's timer slack to 1 ns).
    pub fn new(clock: MonotonicClock) -> ThreadTimer {
        tighten_timer_slack();
        ThreadTimer {
            sleeper: Sleeper::new(&clock),
            clock,
        }
    }
}

impl Timer for ThreadTimer {
    fn now(&self) -> Nanos {
        self.clock.now()
    }

    fn sleep_until(&self, until: Nanos) {
        self.sleeper.sleep_until(until);
    }

    fn spin(&self) {
        std::hint::spin_loop();
    }
}

/// The generator thread's loop: releases every arrival of `arrivals` `lead` before its time into
/// `queue`, and returns how many it released (the offered operations).
pub fn generate(
    arrivals: Arrivals,
    pacer: Pacer,
    lead: Nanos,
    timer: &impl Timer,
    queue: mpsc::UnboundedSender<OpenStart>,
    stop: &AtomicBool,
) -> u64 {
    let mut offered = 0;
    let mut arrivals = arrivals;
    while let Some((seq, intended)) = arrivals.next() {
        offered += 1;
        loop {
            if stop.load(Ordering::Relaxed) {
                // The lanes are gone (drain bound): count what was offered, release nothing.
                return offered + arrivals.count() as u64;
            }
            match pacer.pace(timer.now(), intended.saturating_sub(lead)) {
                Pace::Go => break,
                Pace::Spin => timer.spin(),
                Pace::Sleep(until) => timer.sleep_until(until),
            }
        }
        if queue.send(OpenStart { seq, intended }).is_err() {
            return offered + arrivals.count() as u64;
        }
    }
    offered
}

/// Timer slack 1 ns for this thread: the kernel's default 50 µs slack lets it delay a wake-up to
/// batch it with others, which would be 50 µs of send lag added on purpose.
fn tighten_timer_slack() {
    if let Err(e) = nix::sys::prctl::set_timerslack(1) {
        eprintln!(
            "rpcarena-peer-rust: cannot set the generator's timer slack to 1 ns ({e}); starts may be later"
        );
    }
}

/// Sleeps until an engine time with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, which
/// cannot drift the way a relative sleep computed from an earlier reading can.
pub struct Sleeper {
    /// CLOCK_MONOTONIC minus the engine clock, in nanoseconds (std's `Instant` is
    /// CLOCK_MONOTONIC on Linux, so this is constant).
    offset: Option<u64>,
}

impl Sleeper {
    fn new(clock: &MonotonicClock) -> Sleeper {
        use nix::time::{ClockId, clock_gettime};
        let offset = clock_gettime(ClockId::CLOCK_MONOTONIC).ok().map(|now| {
            let mono = now.tv_sec() as u64 * 1_000_000_000 + now.tv_nsec() as u64;
            mono.saturating_sub(clock.now())
        });
        Sleeper { offset }
    }

    fn sleep_until(&self, until: Nanos) {
        use nix::sys::time::TimeSpec;
        use nix::time::{ClockId, ClockNanosleepFlags, clock_nanosleep};
        let Some(offset) = self.offset else {
            std::thread::sleep(std::time::Duration::from_micros(50));
            return;
        };
        let target = TimeSpec::from_duration(std::time::Duration::from_nanos(until + offset));
        // An interruption (EINTR) just returns early; the caller asks the pacer again.
        let _ = clock_nanosleep(
            ClockId::CLOCK_MONOTONIC,
            ClockNanosleepFlags::TIMER_ABSTIME,
            &target,
        );
    }
}

/// What the lanes share: the queue of starts, one tally, and in-flight counters.
struct Shared {
    queue: tokio::sync::Mutex<mpsc::UnboundedReceiver<OpenStart>>,
    tally: Mutex<LaneTally>,
    started: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

impl Shared {
    fn tally(&self) -> std::sync::MutexGuard<'_, LaneTally> {
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One lane: takes starts from the queue and runs them until the queue ends. `current` holds
/// the (intended, actual) start of the operation in flight, for the drain bound.
async fn drive_open<L: Lane, C: Clock>(
    lane: &mut L,
    shared: &Shared,
    clock: &C,
    deadline: Nanos,
    current: &mut Option<(Nanos, Nanos)>,
) {
    loop {
        let next = {
            let mut queue = shared.queue.lock().await;
            queue.recv().await
        };
        let Some(start) = next else {
            return;
        };
        // The start was handed over up to LEAD_NS early: wait for its moment without blocking
        // the worker's other tasks (operations of other lanes complete in between).
        while clock.now() < start.intended {
            tokio::task::yield_now().await;
        }
        let actual = clock.now();
        if actual >= deadline {
            // Admission: the window closed while this start waited for a lane.
            continue;
        }
        shared.started.fetch_add(1, Ordering::Relaxed);
        let depth = shared.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        shared.max_in_flight.fetch_max(depth, Ordering::Relaxed);
        *current = Some((start.intended, actual));
        let result = lane.call(start.seq).await;
        let end = clock.now();
        *current = None;
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        shared
            .tally()
            .handle_finished_open(start.intended, actual, end, result);
    }
}

/// Runs the open model through `window` on `lanes` (at most that many operations in flight):
/// the generator thread releases the starts, [`serve_open`] runs them.
pub async fn run_open<L: Lane>(
    lanes: Vec<L>,
    config: OpenConfig,
    clock: MonotonicClock,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<L>, Totals), OpError> {
    let (sender, receiver) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let generator = {
        let arrivals = Arrivals::new(&config, &window);
        let stop = stop.clone();
        let (lead, spin_ns) = pacing_for(config.rate);
        std::thread::Builder::new()
            .name("open-generator".into())
            .spawn(move || {
                let timer = ThreadTimer::new(clock);
                generate(arrivals, Pacer { spin_ns }, lead, &timer, sender, &stop)
            })
            .map_err(|e| {
                OpError::new(
                    code::INTERNAL,
                    format!("cannot start the generator thread: {e}"),
                )
            })?
    };
    let served = serve_open(lanes, receiver, clock, window, bound).await;
    stop.store(true, Ordering::Relaxed);
    let offered = tokio::task::spawn_blocking(move || generator.join())
        .await
        .ok()
        .and_then(Result::ok)
        .ok_or_else(|| OpError::new(code::INTERNAL, "the generator thread failed"))?;
    let (lanes, served) = served?;
    Ok((lanes, served.totals(offered, config.rate)))
}

/// What the lanes of an open-model window did.
#[derive(Debug, Default)]
pub struct Served {
    /// Every operation, corrected and uncorrected latency and send lag.
    pub tally: LaneTally,
    /// Operations started (before the deadline).
    pub started: u64,
    /// The most operations in flight at once.
    pub max_in_flight: u64,
}

impl Served {
    /// The model's totals, given how many starts the generator `offered` at `rate`: it fell
    /// behind when a start did not happen or the send lag's p99 exceeds [`FELL_BEHIND_LAG_NS`].
    pub fn totals(self, offered: u64, rate: f64) -> Totals {
        let lag_p99 = self
            .tally
            .send_lag
            .as_ref()
            .map_or(0, |h| h.value_at_quantile(0.99));
        let started = self.started;
        let max_in_flight = self.max_in_flight;
        let mut totals = Totals::merge([self.tally], None);
        totals.model = ModelReport {
            load: load::OPEN,
            offered: Some(offered),
            target_rate: Some(rate),
            fell_behind: Some(started < offered || lag_p99 > FELL_BEHIND_LAG_NS),
            max_in_flight: Some(max_in_flight),
            ..ModelReport::default()
        };
        totals
    }
}

/// The lane side of the open model: every lane takes starts from `queue` until it ends, bounded
/// by the window's hard deadline (an operation in flight then fails as `timeout`).
pub async fn serve_open<L: Lane, C: Clock>(
    lanes: Vec<L>,
    queue: mpsc::UnboundedReceiver<OpenStart>,
    clock: C,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<L>, Served), OpError> {
    let shared = Arc::new(Shared {
        queue: tokio::sync::Mutex::new(queue),
        tally: Mutex::new(LaneTally::open(window.t0)),
        started: AtomicU64::new(0),
        in_flight: AtomicU64::new(0),
        max_in_flight: AtomicU64::new(0),
    });
    let mut tasks = Vec::with_capacity(lanes.len());
    for mut lane in lanes {
        let shared = shared.clone();
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let mut current = None;
            let hard_deadline = clock.sleep_until(window.hard_deadline);
            let finished = tokio::select! {
                biased;
                () = drive_open(&mut lane, &shared, &clock, window.deadline, &mut current) => true,
                () = hard_deadline => false,
            };
            if !finished && let Some((intended, actual)) = current {
                let mut tally = shared.tally();
                tally.handle_send_lag(actual.saturating_sub(intended));
                tally.handle_timeout(clock.now(), actual, bound);
            }
            lane
        }));
    }
    let mut lanes = Vec::with_capacity(tasks.len());
    for task in tasks {
        lanes.push(
            task.await
                .map_err(|e| OpError::new(code::INTERNAL, format!("a lane task failed: {e}")))?,
        );
    }
    let served = Served {
        tally: std::mem::take(&mut *shared.tally()),
        started: shared.started.load(Ordering::Relaxed),
        max_in_flight: shared.max_in_flight.load(Ordering::Relaxed),
    };
    Ok((lanes, served))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::FakeClock;
    use crate::engine::open::Arrival;
    use crate::engine::{OpError, OpOutcome};
    use std::time::Duration;

    struct SleepyLane(Duration);

    impl Lane for SleepyLane {
        async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
            tokio::time::sleep(self.0).await;
            Ok(OpOutcome::default())
        }
    }

    /// A timer on a fake clock: sleeps land exactly, a spin turn takes 1 µs; every wait is logged.
    struct FakeTimer {
        clock: FakeClock,
        spins: std::cell::Cell<u64>,
    }

    impl Timer for FakeTimer {
        fn now(&self) -> Nanos {
            self.clock.now()
        }

        fn sleep_until(&self, until: Nanos) {
            self.clock.set(until);
        }

        fn spin(&self) {
            self.spins.set(self.spins.get() + 1);
            self.clock.advance(1_000);
        }
    }

    #[test]
    fn the_generator_releases_every_start_lead_before_its_time_in_order() {
        let timer = FakeTimer {
            clock: FakeClock::at(1_000_000),
            spins: std::cell::Cell::new(0),
        };
        let window = Window::new(timer.now(), 20_000_000, 0);
        let config = OpenConfig {
            rate: 2_000.0,
            arrival: Arrival::Constant,
            seed: 0,
        };
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let stop = AtomicBool::new(false);
        let pacer = Pacer { spin_ns: SPIN_NS };
        let offered = generate(
            Arrivals::new(&config, &window),
            pacer,
            LEAD_NS,
            &timer,
            sender,
            &stop,
        );
        assert_eq!(offered, 40);
        let released: Vec<OpenStart> = std::iter::from_fn(|| receiver.try_recv().ok()).collect();
        assert_eq!(released.len(), 40);
        assert!(
            released
                .windows(2)
                .all(|w| w[1].intended == w[0].intended + 500_000)
        );
        assert_eq!(released[3].seq, 3);
        // the last went exactly LEAD_NS before its time: a sleep to SPIN_NS before, then spins
        assert_eq!(timer.now() + LEAD_NS, released[39].intended);
        // SPIN_NS of spinning for every start but the first, which was due when the window opened
        assert_eq!(timer.spins.get(), 39 * SPIN_NS / 1_000);
    }

    #[test]
    fn a_stop_counts_what_was_offered_and_releases_nothing_more() {
        let timer = FakeTimer {
            clock: FakeClock::at(0),
            spins: std::cell::Cell::new(0),
        };
        let window = Window::new(0, 20_000_000, 0);
        let config = OpenConfig {
            rate: 2_000.0,
            arrival: Arrival::Constant,
            seed: 0,
        };
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let stop = AtomicBool::new(true);
        let offered = generate(
            Arrivals::new(&config, &window),
            Pacer { spin_ns: SPIN_NS },
            LEAD_NS,
            &timer,
            sender,
            &stop,
        );
        assert_eq!(offered, 40);
        assert!(receiver.try_recv().is_err());
    }

    #[test]
    fn pacing_stays_within_its_budget_at_any_rate() {
        // the full lead and spin up to 1,000 ops/s (where start error is specified)
        assert_eq!(pacing_for(1_000.0), (LEAD_NS, SPIN_NS));
        assert_eq!(pacing_for(100.0), (LEAD_NS, SPIN_NS));
        assert_eq!(pacing_for(5_000.0), (30_000, 10_000));
        for rate in [500.0, 5_000.0, 40_000.0, 1e6] {
            let (lead, spin) = pacing_for(rate);
            let per_second = (lead + spin) as f64 * rate / 1e9;
            assert!(per_second <= PACING_BUDGET + 1e-9, "{rate}: {per_second}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_saturated_lane_makes_starts_wait_and_the_wait_counts() {
        // one lane, 10 ms operations, 1000/s for 50 ms: most starts wait for the lane
        const MS: u64 = 1_000_000;
        let clock = crate::engine::fake::PausedClock::new();
        let window = Window::new(clock.now(), 50 * MS, 2_000 * MS);
        let config = OpenConfig {
            rate: 1_000.0,
            arrival: Arrival::Constant,
            seed: 0,
        };
        // The generator on virtual time: each start released at its intended time.
        let (sender, receiver) = mpsc::unbounded_channel();
        let arrivals = Arrivals::new(&config, &window);
        let generator = tokio::spawn(async move {
            let mut offered = 0;
            for (seq, intended) in arrivals {
                clock.sleep_until(intended).await;
                offered += 1;
                let _ = sender.send(OpenStart { seq, intended });
            }
            offered
        });
        let lanes = vec![SleepyLane(Duration::from_millis(10))];
        let (lanes, served) = serve_open(lanes, receiver, clock, window, "the drain")
            .await
            .expect("runs");
        let offered = generator.await.expect("the generator task ends");
        let totals = served.totals(offered, config.rate);
        assert_eq!(lanes.len(), 1);
        let model = &totals.model;
        assert_eq!(model.offered, Some(50));
        assert_eq!(model.fell_behind, Some(true));
        assert_eq!(model.max_in_flight, Some(1));
        let t = &totals.tally;
        assert_eq!(t.failed, 0);
        // starts 0..4 ran back to back from 0 to 50 ms; the rest were still queued at the deadline
        assert_eq!(t.completed, 5);
        // start 4 was meant for 4 ms and ended at 50 ms; every operation took 10 ms
        assert!(t.histogram.equivalent(t.histogram.max(), 46 * MS));
        let uncorrected = t.uncorrected.as_ref().map_or(0, |h| h.max());
        assert!(
            t.histogram.equivalent(uncorrected, 10 * MS),
            "{uncorrected}"
        );
    }

    #[test]
    fn falling_behind_is_a_start_that_did_not_happen_or_a_late_p99() {
        let on_time = Served {
            started: 10,
            ..Served::default()
        };
        assert_eq!(on_time.totals(10, 100.0).model.fell_behind, Some(false));
        let missed = Served {
            started: 9,
            ..Served::default()
        };
        assert_eq!(missed.totals(10, 100.0).model.fell_behind, Some(true));
        let mut late = Served {
            tally: LaneTally::open(0),
            started: 10,
            max_in_flight: 1,
        };
        late.tally.handle_send_lag(2 * FELL_BEHIND_LAG_NS);
        let totals = late.totals(10, 100.0);
        assert_eq!(totals.model.fell_behind, Some(true));
        assert_eq!(totals.model.max_in_flight, Some(1));
    }
}
