//! The load engine: runs operations through an admission window under a load model and
//! measures them.
//!
//! The engine knows nothing about stacks or sockets. A stack hands it one [`Lane`] per unit of
//! concurrency (a lane owns whatever it needs: a cloned gRPC channel, a QUIC connection handle, a
//! TCP connection) and, for the backpressure model, a [`pool::Submitter`] that waits until the
//! transport accepts one more operation.
//!
//! Every load model is split the way quinn splits quinn-proto from quinn: its decisions are a
//! sans-IO core that is told the time and outcomes and answers what to do next (it never reads a
//! clock or touches a socket, so it is tested on a fake clock), and a thin async shell reads the
//! clock, awaits operations and timers and records results in a [`tally::LaneTally`]:
//!
//! | model | core | shell |
//! |---|---|---|
//! | `closed` | [`closed::ClosedLane`] | [`lanes::run_lanes`]: one task per lane |
//! | `window` | [`window::WindowSchedule`], shared by the lanes | [`lanes::run_lanes`] with N lanes |
//! | `backpressure` | [`backpressure::BackpressureSchedule`] | [`pool::run_pool`] over the stack's submitter |
//! | `send-saturation` | [`saturation::StreamSender`] | [`saturation::run_saturation`]: one task per stream |
//! | `open` | [`open::Arrivals`], [`open::Pacer`] | [`generator`]: a timing thread handing starts to lane tasks |
//!
//! ```text
//! closed, window:
//!               lane task: loop { schedule.poll_next(now) -> Start | Stop; call(seq) -> tally }
//! backpressure: submitter task: loop { schedule.poll_next(now) -> Start | WaitForCompletion | Stop
//!                                      Start: ready() -> spawn(op) ; completions -> tally }
//! open:         generator thread: sleep/spin to the intended start -> queue -> lane tasks -> tally
//! send-saturation: stream task: while StreamSender admits: build, send, accepted -> stream tally
//! ```
//!
//! Every shell is bounded by the window's hard deadline (`deadline + drain`): an operation still
//! in flight then is dropped (cancelled) and counted as failed with code `timeout`.

pub mod backpressure;
pub mod bounded;
pub mod closed;
pub mod fake;
pub mod generator;
pub mod intervals;
pub mod lanes;
pub mod open;
pub mod pool;
pub mod saturation;
pub mod tally;
pub mod window;

use std::future::Future;
use std::time::{Duration, Instant};

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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
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

/// One unit of concurrency of a stack: performs one operation at a time.
///
/// `&mut self` lets a lane own its connection state (the tcp stack's connection, buffers) without
/// any lock; lanes that share a connection (grpc, quic) hold cheap clones of its handle.
pub trait Lane: Send + 'static {
    /// Performs one whole operation: builds and encodes the requests, sends them, receives,
    /// decodes and validates every response and reads the terminal status.
    fn call(&mut self, seq: u64) -> impl Future<Output = Result<OpOutcome, OpError>> + Send;

    /// Send-saturation: opens one client stream (the shell has opened `sender`, which admits
    /// the first message: [`saturation::StreamSender::open`]) and sends request messages while
    /// `sender` admits them (it reads `clock` for each),
    /// telling `sender` when the transport accepted each one; then ends the stream, reads the
    /// server's summary, checks that it confirms every message sent
    /// (`rpcarena_protocol::workload::check_stream_summary`) and reports it with
    /// [`saturation::StreamSender::summary_received`]. Only the `client_stream` shape is used.
    ///
    /// The default refuses, for lanes (test doubles) that never stream.
    fn saturate<C: Clock>(
        &mut self,
        clock: &C,
        sender: &mut saturation::StreamSender,
    ) -> impl Future<Output = Result<(), OpError>> + Send {
        let _ = (clock, sender);
        async {
            Err(OpError::new(
                rpcarena_protocol::event::code::CONFIG,
                "this lane cannot run send-saturation streams",
            ))
        }
    }
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
    /// The lane is done.
    Stop,
}

/// A lane's sans-IO schedule: asked before every operation, told after it.
pub trait LaneSchedule: Send + 'static {
    /// What the lane does at `now`.
    fn poll_next(&mut self, now: Nanos) -> Next;
    /// The operation started last has finished (`ok` if it completed and validated).
    fn handle_finished(&mut self, ok: bool);
}

/// The load models (peer protocol `--load`) with their parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadModel {
    /// Each of `--concurrency` lanes keeps one operation in flight.
    Closed,
    /// `in_flight` operations always outstanding (one lane each).
    Window {
        /// N, operations in flight.
        in_flight: u32,
    },
    /// A new operation whenever the transport accepts one, at most `max_in_flight` at once.
    Backpressure {
        /// M, the safety cap.
        max_in_flight: u32,
    },
    /// `streams` client streams of one-way messages sent as fast as the transport accepts.
    SendSaturation {
        /// S, streams open for the whole window.
        streams: u32,
        /// How long after the deadline the summaries may take (bounded by the drain too).
        settle_ns: Nanos,
        /// Revision 1.3, `--shape send`: S lanes of one-way commands, one in flight each,
        /// instead of S client streams.
        commands: bool,
    },
    /// Operations at intended start times.
    Open(open::OpenConfig),
}

impl LoadModel {
    /// The name used in arguments, capabilities and the sample.
    pub fn name(&self) -> &'static str {
        use rpcarena_protocol::event::load;
        match self {
            LoadModel::Closed => load::CLOSED,
            LoadModel::Window { .. } => load::WINDOW,
            LoadModel::Backpressure { .. } => load::BACKPRESSURE,
            LoadModel::SendSaturation { .. } => load::SEND_SATURATION,
            LoadModel::Open(_) => load::OPEN,
        }
    }
}
