//! The load engine's own cost per operation, with lanes that cost nothing: what the engine adds
//! to every measured operation (scheduling, the clock, histogram and interval records, counter
//! bookkeeping of the validated outcome). Target: at most 1 µs per operation.
//!
//! ```text
//! cargo bench -p rpcarena-peer-rust --bench engine
//! ```
//!
//! Each benchmark runs `OPS` operations per iteration and reports the throughput in operations
//! per second (Criterion's "elements"); the time per operation is the iteration time / `OPS`.
//! The fake clock is an atomic (about what a vDSO `clock_gettime` costs); `clock/now` measures
//! the real clock, which the closed model reads twice per operation and the open model three
//! times.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rpcarena_peer_rust::engine::closed::ClosedLane;
use rpcarena_peer_rust::engine::fake::{FakeClock, NoopLane, run_ready};
use rpcarena_peer_rust::engine::lanes::drive;
use rpcarena_peer_rust::engine::open::{Arrival, Arrivals, OpenConfig, Pace, Pacer};
use rpcarena_peer_rust::engine::pool::PoolSchedule;
use rpcarena_peer_rust::engine::saturation::StreamSender;
use rpcarena_peer_rust::engine::tally::LaneTally;
use rpcarena_peer_rust::engine::window::WindowSchedule;
use rpcarena_peer_rust::engine::{Clock, MonotonicClock, OpOutcome, Window};
use std::hint::black_box;

/// Operations per iteration.
const OPS: u64 = 10_000;
/// Virtual time of one operation: 50 µs, so a window of OPS operations spans 0.5 s and its
/// interval histograms see one change of second, as a real window does every second.
const COST: u64 = 50_000;

fn outcome() -> OpOutcome {
    OpOutcome {
        requests: 1,
        responses: 1,
        request_bytes: 256,
        response_bytes: 256,
    }
}

fn closed(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(OPS));
    group.bench_function(
        "closed lane (drive: schedule, clock, tally, intervals)",
        |b| {
            b.iter(|| {
                let clock = FakeClock::at(0);
                let window = Window::new(0, OPS * COST, 0);
                let mut lane = NoopLane {
                    clock: clock.clone(),
                    cost: COST,
                };
                let mut schedule = ClosedLane::new(&window);
                let mut tally = LaneTally::owning(0);
                run_ready(drive(&mut lane, 0, 1, &mut schedule, &mut tally, &clock));
                assert_eq!(tally.completed, OPS);
                black_box(tally.completed)
            });
        },
    );
    group.bench_function("window (schedule, tally, intervals)", |b| {
        b.iter(|| {
            let window = Window::new(0, OPS * COST, 0);
            let mut schedule = WindowSchedule::new(&window, 100);
            let mut tally = LaneTally::owning(0);
            let mut now = 0;
            for _ in 0..OPS {
                black_box(schedule.poll_next(now));
                schedule.handle_started();
                now += COST;
                schedule.handle_finished(true);
                tally.handle_finished(now - COST, now, Ok(outcome()));
            }
            black_box(tally.completed)
        });
    });
    group.bench_function("open (arrivals, pacer, three histograms, intervals)", |b| {
        let config = OpenConfig {
            rate: 1e9 / COST as f64,
            arrival: Arrival::Poisson,
            seed: 1,
        };
        let pacer = Pacer { spin_ns: 200_000 };
        b.iter(|| {
            let window = Window::new(0, u64::MAX / 2, 0);
            let mut tally = LaneTally::open(0);
            for (_, intended) in Arrivals::new(&config, &window).take(OPS as usize) {
                assert_eq!(pacer.pace(intended + 10, intended), Pace::Go);
                tally.handle_finished_open(intended, intended + 10, intended + COST, Ok(outcome()));
            }
            black_box(tally.completed)
        });
    });
    group.bench_function(
        "send-saturation (per message: admission, timing, tally)",
        |b| {
            b.iter(|| {
                let window = Window::new(0, OPS * COST, 0);
                let mut sender = StreamSender::new(&window);
                let mut now = 0;
                assert!(sender.open(now));
                while let Some(seq) = sender.next_message(now) {
                    black_box(seq);
                    now += COST;
                    sender.accepted(now, 256);
                }
                black_box(sender.sent())
            });
        },
    );
    group.finish();
    c.bench_function("clock/now (MonotonicClock)", |b| {
        let clock = MonotonicClock::new();
        b.iter(|| black_box(clock.now()));
    });
}

/// A lane that completes at once, `left` times in all lanes together, then fails (which stops
/// every schedule), so that a shell runs exactly the operations Criterion asks for.
struct CountdownLane {
    left: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl rpcarena_peer_rust::engine::Lane for CountdownLane {
    async fn call(&mut self, _seq: u64) -> Result<OpOutcome, rpcarena_peer_rust::engine::OpError> {
        use std::sync::atomic::Ordering;
        if self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
        {
            Ok(outcome())
        } else {
            Err(rpcarena_peer_rust::engine::OpError::new("rpc", "done"))
        }
    }
}

/// Real async shells on a real runtime and clock, with no-op lanes: every cost the engine adds to
/// an operation, including the clock and task wake-ups.
fn shells(c: &mut Criterion) {
    use rpcarena_peer_rust::engine::backpressure::BackpressureSchedule;
    use rpcarena_peer_rust::engine::lanes::{SharedWindow, run_closed, run_lanes};
    use rpcarena_peer_rust::engine::pool::{LanePool, run_pool};
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::time::Instant;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let lanes = |n: usize, ops: u64| {
        let left = Arc::new(AtomicU64::new(ops));
        (0..n)
            .map(|_| CountdownLane { left: left.clone() })
            .collect::<Vec<_>>()
    };
    let window = |clock: &MonotonicClock| Window::new(clock.now(), 3_600_000_000_000, 0);
    let mut group = c.benchmark_group("shell");
    group.sample_size(30);
    group.bench_function("closed, 1 lane, per operation", |b| {
        b.iter_custom(|iters| {
            let clock = MonotonicClock::new();
            let began = Instant::now();
            let (_, totals) = runtime
                .block_on(run_closed(lanes(1, iters), clock, window(&clock), "bench"))
                .expect("runs");
            assert_eq!(totals.tally.completed, iters);
            began.elapsed()
        });
    });
    group.bench_function(
        "window 4 (lanes sharing one schedule), per operation",
        |b| {
            b.iter_custom(|iters| {
                let clock = MonotonicClock::new();
                let window = window(&clock);
                let shared = SharedWindow::new(WindowSchedule::new(&window, 4));
                let began = Instant::now();
                let (_, totals) = runtime
                    .block_on(run_lanes(
                        lanes(4, iters),
                        |_| shared.clone(),
                        clock,
                        window,
                        "bench",
                    ))
                    .expect("runs");
                assert_eq!(totals.tally.completed, iters);
                // Two workers run lanes at once: per operation per core it is twice the wall time.
                began.elapsed() * 2
            });
        },
    );
    group.bench_function("backpressure over a pool of 4, per operation", |b| {
        b.iter_custom(|iters| {
            let clock = MonotonicClock::new();
            let began = Instant::now();
            let completed = runtime.block_on(async {
                let window = window(&clock);
                let mut pool = LanePool::new(lanes(4, iters));
                let mut schedule = BackpressureSchedule::new(&window, 1_000);
                run_pool(&mut pool, &mut schedule, clock, window, "bench")
                    .await
                    .completed
            });
            assert_eq!(completed, iters);
            // One task drives every operation: the wall time is one core's time.
            began.elapsed()
        });
    });
    group.finish();
}

criterion_group!(benches, closed, shells);
criterion_main!(benches);
