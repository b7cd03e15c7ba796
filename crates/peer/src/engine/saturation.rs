//! The send-saturation model: S client streams stay open for the whole window, each sending
//! one-way request messages as fast as the transport accepts them; at the deadline each stream
//! ends and the server's summary says how many messages arrived.
//!
//! An *operation* here is one message, so that the sample's rates and CPU per operation are per
//! message: `completed` counts the messages that the summaries of completed streams confirmed
//! (`received`), and the histogram holds one value per such message, the time from the moment
//! the sender could start it (the previous message was accepted, or the stream opened) to the
//! moment the transport accepted it (for the native stacks: the frame writer took it, flushing
//! when its 32 KiB buffer was full; for grpc: tonic came back for the next message). Those
//! values show the transport's pushback: most are the cost of building and encoding a message,
//! the tail is where flow control made the sender wait. A stream that fails (or whose summary
//! does not confirm exactly what it sent) counts its sent messages, at least one, as failed.
//!
//! Sans-IO core: [`StreamSender`] admits messages by the time it is told and records what the
//! lane reports; the shell [`run_saturation`] runs one task per stream.

use super::intervals::small_histogram;
use super::tally::{LaneTally, ModelReport, Totals};
use super::{Clock, Lane, Nanos, OpError, OpOutcome, Window};
use rpcarena_protocol::event::{code, load};

/// One stream's admission of messages and its measurements.
#[derive(Debug, Clone)]
pub struct StreamSender {
    deadline: Nanos,
    opened: bool,
    message_start: Option<Nanos>,
    sent: u64,
    tally: LaneTally,
}

impl StreamSender {
    /// A stream of `window`: messages start before `window.deadline`.
    pub fn new(window: &Window) -> StreamSender {
        let mut tally = LaneTally::owning(window.t0);
        // A stream's histograms are kept until its summary confirms them; small ones that grow
        // with the values keep S streams cheap.
        tally.histogram = small_histogram();
        StreamSender {
            deadline: window.deadline,
            opened: false,
            message_start: None,
            sent: 0,
            tally,
        }
    }

    /// A stream of no window, standing in while the real one is lent out.
    fn placeholder() -> StreamSender {
        StreamSender::new(&Window::new(0, 0, 0))
    }

    /// Whether the stream may open at `now`. Opening before the deadline admits its first
    /// message, so a stream never ends with no request (the server would refuse it).
    pub fn open(&mut self, now: Nanos) -> bool {
        if now >= self.deadline {
            return false;
        }
        self.opened = true;
        self.message_start = Some(now);
        true
    }

    /// The seq of the next message if it may start at `now` (the first was admitted by
    /// [`open`](Self::open); later ones only before the deadline), else `None`: end the stream.
    pub fn next_message(&mut self, now: Nanos) -> Option<u64> {
        if !self.opened {
            return None;
        }
        if self.message_start.is_none() {
            if now >= self.deadline {
                return None;
            }
            self.message_start = Some(now);
        }
        Some(self.sent)
    }

    /// The transport accepted the current message (of `bytes` payload bytes) at `now`.
    pub fn accepted(&mut self, now: Nanos, bytes: u64) {
        let start = self.message_start.take().unwrap_or(now);
        self.sent += 1;
        self.tally.complete(
            start,
            now.saturating_sub(start),
            OpOutcome {
                requests: 1,
                responses: 0,
                request_bytes: bytes,
                response_bytes: 0,
            },
        );
    }

    /// The server's summary arrived at `now` and confirmed every message; `bytes` is its
    /// payload length.
    pub fn summary_received(&mut self, now: Nanos, bytes: u64) {
        self.tally.responses += 1;
        self.tally.response_bytes += bytes;
        self.tally.last_end = Some(now);
    }

    /// Messages accepted by the transport so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Whether the stream was opened.
    pub fn opened(&self) -> bool {
        self.opened
    }
}

/// A lane's [`StreamSender`] lent to a transport that needs it shared (tonic moves the request
/// stream into the call, so the stream locks a shared copy per message). Dropping the guard,
/// also when the settle bound cancels the call, puts the shared state back into the lane's
/// sender: a stream cut off there still counts what it sent, as a timeout, and never vanishes.
pub struct SharedSender<'a> {
    sender: &'a mut StreamSender,
    shared: std::sync::Arc<std::sync::Mutex<StreamSender>>,
}

impl<'a> SharedSender<'a> {
    /// Moves `sender`'s state into a shared copy until the guard is dropped.
    pub fn lend(sender: &'a mut StreamSender) -> SharedSender<'a> {
        let taken = std::mem::replace(sender, StreamSender::placeholder());
        SharedSender {
            sender,
            shared: std::sync::Arc::new(std::sync::Mutex::new(taken)),
        }
    }

    /// The shared copy, for the transport's request stream.
    pub fn shared(&self) -> std::sync::Arc<std::sync::Mutex<StreamSender>> {
        self.shared.clone()
    }
}

impl Drop for SharedSender<'_> {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        *self.sender = std::mem::replace(&mut *shared, StreamSender::placeholder());
    }
}

/// Runs one stream per lane through `window`, whose hard deadline is the settle bound.
pub async fn run_saturation<L: Lane, C: Clock>(
    lanes: Vec<L>,
    clock: C,
    window: Window,
    bound: &'static str,
) -> Result<(Vec<L>, Totals), OpError> {
    let mut tasks = Vec::with_capacity(lanes.len());
    for mut lane in lanes {
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = StreamSender::new(&window);
            // A stream opens only before the deadline; one that does not is not counted.
            if !sender.open(clock.now()) {
                return (lane, sender, None, clock.now());
            }
            let hard_deadline = clock.sleep_until(window.hard_deadline);
            let result = tokio::select! {
                biased;
                result = lane.saturate(&clock, &mut sender) => Some(result),
                () = hard_deadline => None,
            };
            (lane, sender, result, clock.now())
        }));
    }
    let mut lanes = Vec::with_capacity(tasks.len());
    let mut completed = Vec::new();
    let mut failed = LaneTally::owning(window.t0);
    let (mut opened, mut sent, mut received) = (0, 0, 0);
    for task in tasks {
        let (lane, sender, result, end) = task
            .await
            .map_err(|e| OpError::new(code::INTERNAL, format!("a stream task failed: {e}")))?;
        lanes.push(lane);
        if !sender.opened() {
            continue;
        }
        opened += 1;
        sent += sender.sent();
        let lost = sender.sent().max(1);
        match result {
            Some(Ok(())) => {
                received += sender.sent();
                completed.push(sender.tally);
            }
            Some(Err(error)) => {
                failed.last_end = failed.last_end.max(Some(end));
                failed.fail_many(end, lost, error.code, error.message);
            }
            None => {
                failed.last_end = failed.last_end.max(Some(end));
                failed.fail_many(
                    end,
                    lost,
                    code::TIMEOUT,
                    format!(
                        "a stream that sent {} messages had no summary at {bound}",
                        sender.sent()
                    ),
                );
            }
        }
    }
    completed.push(failed);
    let mut totals = Totals::merge(completed, None);
    totals.model = ModelReport {
        load: load::SEND_SATURATION,
        max_in_flight: Some(opened),
        sent: Some(sent),
        received: Some(received),
        ..ModelReport::default()
    };
    Ok((lanes, totals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::{FakeClock, run_ready};

    /// A lane whose transport accepts a message every `cost` of virtual time and whose server
    /// confirms `confirm(sent)` messages.
    struct FakeStream {
        clock: FakeClock,
        cost: Nanos,
        confirm: fn(u64) -> u64,
    }

    impl Lane for FakeStream {
        async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
            Ok(OpOutcome::default())
        }

        async fn saturate<C: Clock>(
            &mut self,
            clock: &C,
            sender: &mut StreamSender,
        ) -> Result<(), OpError> {
            while let Some(_seq) = sender.next_message(clock.now()) {
                self.clock.advance(self.cost);
                sender.accepted(clock.now(), 10);
            }
            let count = (self.confirm)(sender.sent());
            if count != sender.sent() {
                return Err(OpError::new(code::INVALID, "summary count differs"));
            }
            sender.summary_received(clock.now(), 3);
            Ok(())
        }
    }

    #[test]
    fn messages_start_only_before_the_deadline_and_each_is_timed() {
        let clock = FakeClock::at(1_000);
        let window = Window::new(1_000, 100, 0);
        let mut sender = StreamSender::new(&window);
        let mut lane = FakeStream {
            clock: clock.clone(),
            cost: 30,
            confirm: |n| n,
        };
        assert!(sender.open(clock.now()));
        run_ready(lane.saturate(&clock, &mut sender)).expect("confirmed");
        // messages start at 0, 30, 60, 90 after t0; the one at 90 is admitted and accepted at 120
        assert_eq!(sender.sent(), 4);
        let tally = &sender.tally;
        assert_eq!(tally.completed, 4);
        assert_eq!((tally.requests, tally.request_bytes), (4, 40));
        assert_eq!((tally.responses, tally.response_bytes), (1, 3));
        assert_eq!(tally.histogram.len(), 4);
        assert!(tally.histogram.equivalent(tally.histogram.max(), 30));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lent_sender_comes_back_when_the_call_is_cancelled() {
        let window = Window::new(0, 1_000, 0);
        let mut sender = StreamSender::new(&window);
        assert!(sender.open(0));
        let cancelled = async {
            let lent = SharedSender::lend(&mut sender);
            let shared = lent.shared();
            for t in [10, 20, 30] {
                let mut s = shared.lock().unwrap();
                assert!(s.next_message(t).is_some());
                s.accepted(t + 5, 8);
            }
            std::future::pending::<()>().await;
            drop(lent);
        };
        tokio::select! {
            biased;
            () = cancelled => unreachable!("never ends"),
            () = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
        }
        assert!(sender.opened());
        assert_eq!(sender.sent(), 3);
        assert_eq!(sender.tally.request_bytes, 24);
    }

    #[test]
    fn the_first_message_is_admitted_by_opening_and_a_late_stream_never_opens() {
        let window = Window::new(0, 10, 0);
        let mut sender = StreamSender::new(&window);
        assert!(sender.open(9));
        // the first message belongs to the opening, even if building it began at the deadline
        assert_eq!(sender.next_message(10), Some(0));
        sender.accepted(12, 1);
        assert_eq!(sender.next_message(12), None);
        let mut late = StreamSender::new(&window);
        assert!(!late.open(10));
        assert_eq!(late.next_message(11), None);
        assert!(!late.opened());
    }

    #[tokio::test(start_paused = true)]
    async fn confirmed_streams_count_their_messages_and_failed_ones_their_sent_messages() {
        let clock = crate::engine::fake::PausedClock::new();
        // Streams on a fake clock of their own: the shell's clock only bounds them.
        let fake = FakeClock::at(0);
        let window = Window::new(clock.now(), 1_000_000_000, 1_000_000_000);
        let fake_window = Window::new(0, 100, 0);
        struct OnFakeTime(FakeStream, Window);
        impl Lane for OnFakeTime {
            async fn call(&mut self, _seq: u64) -> Result<OpOutcome, OpError> {
                Ok(OpOutcome::default())
            }
            async fn saturate<C: Clock>(
                &mut self,
                _clock: &C,
                sender: &mut StreamSender,
            ) -> Result<(), OpError> {
                // the shell opened the stream on its clock; reopen it on the fake one
                *sender = StreamSender::new(&self.1);
                let clock = self.0.clock.clone();
                clock.set(0);
                assert!(sender.open(clock.now()));
                let mut own = FakeStream {
                    clock: clock.clone(),
                    cost: self.0.cost,
                    confirm: self.0.confirm,
                };
                own.saturate(&clock, sender).await
            }
        }
        let lanes = vec![
            OnFakeTime(
                FakeStream {
                    clock: FakeClock::at(0),
                    cost: 25,
                    confirm: |n| n,
                },
                fake_window,
            ),
            OnFakeTime(
                FakeStream {
                    clock: FakeClock::at(0),
                    cost: 50,
                    confirm: |n| n - 1,
                },
                fake_window,
            ),
        ];
        drop(fake);
        let (lanes, totals) = run_saturation(lanes, clock, window, "the settle bound")
            .await
            .expect("runs");
        assert_eq!(lanes.len(), 2);
        // stream 1: 4 messages confirmed; stream 2: 2 sent, the summary said 1: both failed
        assert_eq!(totals.tally.completed, 4);
        assert_eq!(totals.tally.histogram.len(), 4);
        assert_eq!(totals.tally.failed, 2);
        assert_eq!(totals.tally.failures.get(code::INVALID), Some(&2));
        assert_eq!(totals.model.sent, Some(6));
        assert_eq!(totals.model.received, Some(4));
        assert_eq!(totals.model.max_in_flight, Some(2));
        assert_eq!(totals.tally.responses, 1);
    }
}
