//! What the operations of a window measured, and the merge into the `sample` event.
//!
//! A closed-loop lane owns its [`LaneTally`] (histogram and counters), so recording an operation
//! takes no lock and touches no shared cache line; its interval histograms go to one shared set
//! about once a second (see [`super::intervals`]). The models with one submitter (window,
//! backpressure) record into one tally from the submitter's task; the open model's lanes share
//! one tally behind a mutex, because its operations are spaced by the target rate and a lane each
//! with three histograms would cost too much memory at high concurrency. All tallies are merged
//! once, after the drain, into [`Totals`].

use super::intervals::{IntervalRecorder, Intervals, record, small_histogram};
use super::{Nanos, OpError, OpOutcome, Window};
use hdrhistogram::Histogram;
use rpcarena_protocol::event::{SampleReport, code};
use rpcarena_protocol::histogram::{self, new_latency_histogram};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Where a tally's interval histograms go.
#[derive(Debug, Clone)]
enum IntervalSink {
    /// Into a set shared with other lanes, one flush per second.
    Shared(IntervalRecorder),
    /// Into the tally's own set.
    Own(Intervals),
}

/// The measurements of one lane (closed), one submitter (window, backpressure), all lanes of the
/// open model, or one send-saturation stream, in one window.
#[derive(Debug, Clone)]
pub struct LaneTally {
    /// Latency of every completed operation, in nanoseconds (open model: from the intended
    /// start).
    pub histogram: Histogram<u64>,
    /// Open model: latency from the actual start.
    pub uncorrected: Option<Histogram<u64>>,
    /// Open model: actual minus intended start of every started operation.
    pub send_lag: Option<Histogram<u64>>,
    /// Operations that completed and validated.
    pub completed: u64,
    /// Operations that failed, were invalid or missed the drain bound.
    pub failed: u64,
    /// Request messages of completed operations.
    pub requests: u64,
    /// Response messages of completed operations.
    pub responses: u64,
    /// Request payload bytes of completed operations.
    pub request_bytes: u64,
    /// Response payload bytes of completed operations.
    pub response_bytes: u64,
    /// Failed operations by protocol error code.
    pub failures: BTreeMap<&'static str, u64>,
    /// When the first failure happened, its code and its message.
    pub first_failure: Option<(Nanos, &'static str, String)>,
    /// The start of the operation in flight, if any (lanes with one operation at a time).
    pub in_flight_since: Option<Nanos>,
    /// When the last operation ended.
    pub last_end: Option<Nanos>,
    t0: Nanos,
    intervals: IntervalSink,
}

impl Default for LaneTally {
    fn default() -> Self {
        LaneTally::new()
    }
}

impl LaneTally {
    /// An empty tally with its own intervals, for a window opening at 0.
    pub fn new() -> LaneTally {
        LaneTally::owning(0)
    }

    /// An empty tally with its own intervals, for a window opening at `t0`.
    pub fn owning(t0: Nanos) -> LaneTally {
        LaneTally::with_sink(t0, IntervalSink::Own(Intervals::new()))
    }

    /// An empty tally whose intervals go to `shared` (closed and window lanes). Its histogram
    /// starts small and grows with the values, so thousands of lanes do not each hold a 270 KB
    /// histogram sized up to an hour.
    pub fn sharing(t0: Nanos, shared: Arc<Mutex<Intervals>>) -> LaneTally {
        let mut tally =
            LaneTally::with_sink(t0, IntervalSink::Shared(IntervalRecorder::new(t0, shared)));
        tally.histogram = small_histogram();
        tally
    }

    /// An empty tally for the open model: also the uncorrected and send-lag histograms.
    pub fn open(t0: Nanos) -> LaneTally {
        let mut tally = LaneTally::owning(t0);
        tally.uncorrected = Some(new_latency_histogram());
        tally.send_lag = Some(new_latency_histogram());
        tally
    }

    fn with_sink(t0: Nanos, intervals: IntervalSink) -> LaneTally {
        LaneTally {
            histogram: new_latency_histogram(),
            uncorrected: None,
            send_lag: None,
            completed: 0,
            failed: 0,
            requests: 0,
            responses: 0,
            request_bytes: 0,
            response_bytes: 0,
            failures: BTreeMap::new(),
            first_failure: None,
            in_flight_since: None,
            last_end: None,
            t0,
            intervals,
        }
    }

    /// An operation starts at `start`.
    pub fn handle_started(&mut self, start: Nanos) {
        self.in_flight_since = Some(start);
    }

    /// The operation started at `start` ended at `end` with `result`.
    pub fn handle_finished(
        &mut self,
        start: Nanos,
        end: Nanos,
        result: Result<OpOutcome, OpError>,
    ) {
        self.in_flight_since = None;
        self.last_end = Some(end);
        match result {
            Ok(outcome) => self.complete(start, end.saturating_sub(start), outcome),
            Err(error) => self.fail(end, error.code, error.message),
        }
    }

    /// Open model: the operation intended to start at `intended`, which really started at
    /// `actual`, ended at `end` with `result`. Its latency is counted from `intended` (the wait
    /// for a free lane is part of it) and, uncorrected, from `actual`.
    pub fn handle_finished_open(
        &mut self,
        intended: Nanos,
        actual: Nanos,
        end: Nanos,
        result: Result<OpOutcome, OpError>,
    ) {
        self.handle_send_lag(actual.saturating_sub(intended));
        self.last_end = self.last_end.max(Some(end));
        match result {
            Ok(outcome) => {
                if let Some(uncorrected) = self.uncorrected.as_mut() {
                    record(uncorrected, end.saturating_sub(actual));
                }
                self.complete(actual, end.saturating_sub(intended), outcome);
            }
            Err(error) => self.fail(end, error.code, error.message),
        }
    }

    /// Open model: an operation started `lag` after its intended start (recorded for every
    /// started operation, completed or not).
    pub fn handle_send_lag(&mut self, lag: Nanos) {
        if let Some(send_lag) = self.send_lag.as_mut() {
            record(send_lag, lag);
        }
    }

    /// Records a completed operation that started at `start` with latency `latency`.
    pub fn complete(&mut self, start: Nanos, latency: Nanos, outcome: OpOutcome) {
        // Values beyond the histogram's hour are clamped rather than lost.
        record(&mut self.histogram, latency);
        match &mut self.intervals {
            IntervalSink::Shared(recorder) => recorder.record(start, latency),
            IntervalSink::Own(own) => {
                own.record(Intervals::index(start.saturating_sub(self.t0)), latency)
            }
        }
        self.completed += 1;
        self.requests += outcome.requests;
        self.responses += outcome.responses;
        self.request_bytes += outcome.request_bytes;
        self.response_bytes += outcome.response_bytes;
    }

    /// The drain bound passed at `now`: an operation still in flight is a `timeout` failure.
    pub fn handle_drain_expired(&mut self, now: Nanos, bound: &str) {
        if let Some(start) = self.in_flight_since.take() {
            self.handle_timeout(now, start, bound);
        }
    }

    /// An operation started at `start` was still running at the drain bound (`now`).
    pub fn handle_timeout(&mut self, now: Nanos, start: Nanos, bound: &str) {
        self.last_end = self.last_end.max(Some(now));
        let message = format!(
            "an operation started {:.3} ms earlier was still running at {bound}",
            now.saturating_sub(start) as f64 / 1e6
        );
        self.fail(now, code::TIMEOUT, message);
    }

    /// Counts `count` failed operations under `code` (the first failure's message is kept).
    pub fn fail_many(&mut self, at: Nanos, count: u64, code: &'static str, message: String) {
        self.failed += count;
        *self.failures.entry(code).or_default() += count;
        if self.first_failure.is_none() {
            self.first_failure = Some((at, code, message));
        }
    }

    fn fail(&mut self, at: Nanos, code: &'static str, message: String) {
        self.fail_many(at, 1, code, message);
    }

    /// The intervals this tally kept itself (after flushing a shared recorder, nothing).
    fn take_intervals(&mut self) -> Intervals {
        match &mut self.intervals {
            IntervalSink::Shared(recorder) => {
                recorder.flush();
                Intervals::new()
            }
            IntervalSink::Own(own) => std::mem::take(own),
        }
    }
}

/// What a load model adds to the `sample` event beyond the counts and the histogram.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReport {
    /// The load model's name.
    pub load: &'static str,
    /// Open: intended starts before the deadline.
    pub offered: Option<u64>,
    /// Open: operations per second asked for.
    pub target_rate: Option<f64>,
    /// Open: the generator fell behind its schedule.
    pub fell_behind: Option<bool>,
    /// The most operations in flight at once.
    pub max_in_flight: Option<u64>,
    /// Send-saturation: messages sent on every stream.
    pub sent: Option<u64>,
    /// Send-saturation: messages the server's summaries confirmed.
    pub received: Option<u64>,
}

/// All tallies of one window merged.
#[derive(Debug, Clone)]
pub struct Totals {
    /// The merged counters and histograms; `first_failure` is the earliest of all.
    pub tally: LaneTally,
    /// The merged interval histograms.
    pub intervals: Intervals,
    /// The model's own figures.
    pub model: ModelReport,
}

impl Totals {
    /// Merges the tallies; `shared` holds the intervals closed-loop lanes flushed.
    pub fn merge(
        tallies: impl IntoIterator<Item = LaneTally>,
        shared: Option<&Arc<Mutex<Intervals>>>,
    ) -> Totals {
        let mut total = LaneTally::new();
        let mut intervals = Intervals::new();
        for mut tally in tallies {
            intervals.merge(&tally.take_intervals());
            // Both histograms have the protocol's bounds, so adding cannot fail.
            let add = |into: &mut Histogram<u64>, from: &Histogram<u64>| {
                if let Err(e) = into.add(from) {
                    eprintln!("rpcarena-peer-rust: merging histograms failed: {e:?}");
                }
            };
            add(&mut total.histogram, &tally.histogram);
            for (into, from) in [
                (&mut total.uncorrected, &tally.uncorrected),
                (&mut total.send_lag, &tally.send_lag),
            ] {
                if let Some(from) = from {
                    add(into.get_or_insert_with(new_latency_histogram), from);
                }
            }
            total.completed += tally.completed;
            total.failed += tally.failed;
            total.requests += tally.requests;
            total.responses += tally.responses;
            total.request_bytes += tally.request_bytes;
            total.response_bytes += tally.response_bytes;
            for (code, count) in &tally.failures {
                *total.failures.entry(code).or_default() += count;
            }
            total.last_end = total.last_end.max(tally.last_end);
            if let Some(failure) = tally.first_failure
                && total
                    .first_failure
                    .as_ref()
                    .is_none_or(|(at, _, _)| failure.0 < *at)
            {
                total.first_failure = Some(failure);
            }
        }
        if let Some(shared) = shared {
            match shared.lock() {
                Ok(shared) => intervals.merge(&shared),
                Err(poisoned) => intervals.merge(&poisoned.into_inner()),
            }
        }
        Totals {
            tally: total,
            intervals,
            model: ModelReport::default(),
        }
    }

    /// The earliest failure's code and message, if any operation failed.
    pub fn first_failure(&self) -> Option<(&'static str, &str)> {
        self.tally
            .first_failure
            .as_ref()
            .map(|(_, code, message)| (*code, message.as_str()))
    }

    /// The `sample` event's body for `window`.
    pub fn report(&self, window: &Window) -> Result<SampleReport, histogram::HistogramError> {
        let tally = &self.tally;
        let window_ns = window.deadline - window.t0;
        let model = &self.model;
        let encode = |h: &Option<Histogram<u64>>| h.as_ref().map(histogram::encode).transpose();
        Ok(SampleReport {
            completed: tally.completed,
            failed: tally.failed,
            requests: tally.requests,
            responses: tally.responses,
            request_bytes: tally.request_bytes,
            response_bytes: tally.response_bytes,
            window_ns,
            // An operation that missed the bound ends at the bound (docs/peer-protocol.md,
            // `drain_ns`), however late the timer that noticed it fired.
            drain_ns: tally.last_end.map_or(0, |end| {
                end.min(window.hard_deadline)
                    .saturating_sub(window.deadline)
            }),
            histogram: histogram::encode(&tally.histogram)?,
            failures: tally
                .failures
                .iter()
                .map(|(code, count)| (code.to_string(), *count))
                .collect(),
            first_failure: tally.first_failure.as_ref().map(|(_, _, m)| m.clone()),
            load: (!model.load.is_empty()).then(|| model.load.to_string()),
            uncorrected_histogram: encode(&tally.uncorrected)?,
            send_lag_histogram: encode(&tally.send_lag)?,
            offered: model.offered,
            target_rate: model.target_rate,
            fell_behind: model.fell_behind,
            max_in_flight: model.max_in_flight,
            sent: model.sent,
            received: model.received,
            intervals: self.intervals.report(window_ns)?,
            // Filled by the client from its transport probe (crate::transport) and its
            // allocation counters (crate::allocations).
            transport: None,
            allocations: None,
            allocated_bytes: None,
            submit_cpu_ns: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Result<OpOutcome, OpError> {
        Ok(OpOutcome {
            requests: 1,
            responses: 1,
            request_bytes: 10,
            response_bytes: 20,
        })
    }

    #[test]
    fn an_operation_in_flight_at_the_drain_bound_is_a_timeout() {
        let mut tally = LaneTally::new();
        tally.handle_started(90);
        tally.handle_drain_expired(150, "the drain");
        assert_eq!((tally.completed, tally.failed), (0, 1));
        assert_eq!(tally.failures.get(code::TIMEOUT), Some(&1));
        assert_eq!(tally.last_end, Some(150));
        // a lane that was idle at the bound has nothing in flight
        let mut idle = LaneTally::new();
        idle.handle_started(10);
        idle.handle_finished(10, 20, ok());
        idle.handle_drain_expired(150, "the drain");
        assert_eq!(idle.failed, 0);
    }

    #[test]
    fn merging_adds_counts_and_keeps_the_earliest_failure() {
        let mut a = LaneTally::new();
        a.handle_finished(0, 100, ok());
        a.handle_finished(100, 300, Err(OpError::new(code::RPC, "late")));
        let mut b = LaneTally::new();
        b.handle_finished(0, 50, ok());
        b.handle_finished(50, 120, Err(OpError::new(code::INVALID, "early")));
        let totals = Totals::merge([a, b], None);
        assert_eq!((totals.tally.completed, totals.tally.failed), (2, 2));
        assert_eq!(totals.tally.histogram.len(), 2);
        assert_eq!(totals.first_failure(), Some((code::INVALID, "early")));
        let window = Window::new(0, 200, 1_000);
        let report = totals.report(&window).unwrap();
        assert_eq!(report.window_ns, 200);
        assert_eq!(report.drain_ns, 100);
        assert_eq!(report.first_failure.as_deref(), Some("early"));
        assert_eq!(report.failures.get("rpc"), Some(&1));
        assert_eq!(report.request_bytes, 20);
        assert_eq!(report.response_bytes, 40);
        // one interval for a 200 ns window, holding both completed operations
        assert_eq!(report.intervals.len(), 1);
        assert_eq!(report.intervals[0].completed, 2);
        assert_eq!(report.uncorrected_histogram, None);
    }

    #[test]
    fn no_operation_past_the_deadline_means_zero_drain() {
        let mut a = LaneTally::new();
        a.handle_finished(0, 100, ok());
        let report = Totals::merge([a], None)
            .report(&Window::new(0, 200, 10))
            .unwrap();
        assert_eq!(report.drain_ns, 0);
    }

    #[test]
    fn a_timeout_noticed_late_ends_at_the_drain_bound() {
        let mut a = LaneTally::new();
        a.handle_started(150);
        // the timer fired 5 ns after the bound (deadline 200 + drain 10 = 210)
        a.handle_drain_expired(215, "the drain");
        let report = Totals::merge([a], None)
            .report(&Window::new(0, 200, 10))
            .unwrap();
        assert_eq!(report.drain_ns, 10);
    }

    #[test]
    fn shared_interval_lanes_and_own_interval_tallies_merge_into_one_set() {
        let shared = Arc::new(Mutex::new(Intervals::new()));
        let t0 = 5;
        let mut lane = LaneTally::sharing(t0, shared.clone());
        lane.handle_finished(t0, t0 + 10, ok());
        lane.handle_finished(t0 + 1_500_000_000, t0 + 1_500_000_010, ok());
        let mut own = LaneTally::owning(t0);
        own.handle_finished(t0 + 2_000_000_000, t0 + 2_000_000_100, ok());
        let totals = Totals::merge([lane, own], Some(&shared));
        let report = totals.report(&Window::new(t0, 2_500_000_000, 0)).unwrap();
        let counts: Vec<u64> = report.intervals.iter().map(|i| i.completed).collect();
        assert_eq!(counts, vec![1, 1, 1]);
        assert_eq!(counts.iter().sum::<u64>(), report.completed);
    }

    #[test]
    fn the_open_model_counts_from_the_intended_start_and_keeps_the_lag() {
        let mut tally = LaneTally::open(0);
        // intended at 100, started at 400 (waited 300 for a lane), ended at 500
        tally.handle_finished_open(100, 400, 500, ok());
        tally.handle_finished_open(1_000, 1_010, 1_200, Err(OpError::new(code::RPC, "x")));
        let totals = Totals::merge([tally], None);
        let t = &totals.tally;
        assert_eq!(t.histogram.max(), 400);
        assert_eq!(
            t.uncorrected.as_ref().map(|h| (h.len(), h.max())),
            Some((1, 100))
        );
        // the lag of both started operations, failed or not
        assert_eq!(
            t.send_lag.as_ref().map(|h| (h.len(), h.max())),
            Some((2, 300))
        );
        let report = totals.report(&Window::new(0, 2_000, 0)).unwrap();
        assert!(report.uncorrected_histogram.is_some() && report.send_lag_histogram.is_some());
    }
}
