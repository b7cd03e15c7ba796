//! What one lane measured, and the merge of all lanes into the `sample` event.
//!
//! Each lane owns its [`LaneTally`] (histogram and counters), so recording an operation takes no
//! lock and touches no shared cache line; the tallies are merged once, after the drain.

use super::{Nanos, OpError, OpOutcome, Window};
use hdrhistogram::Histogram;
use rpcarena_protocol::event::{SampleReport, code};
use rpcarena_protocol::histogram::{self, new_latency_histogram};
use std::collections::BTreeMap;

/// One lane's measurements in one window.
#[derive(Debug, Clone)]
pub struct LaneTally {
    /// Latency of every completed operation, in nanoseconds.
    pub histogram: Histogram<u64>,
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
    /// The start of the operation in flight, if any.
    pub in_flight_since: Option<Nanos>,
    /// When the last operation of this lane ended.
    pub last_end: Option<Nanos>,
}

impl Default for LaneTally {
    fn default() -> Self {
        LaneTally::new()
    }
}

impl LaneTally {
    /// An empty tally.
    pub fn new() -> LaneTally {
        LaneTally {
            histogram: new_latency_histogram(),
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
            Ok(outcome) => {
                // Values beyond the histogram's hour are clamped rather than lost.
                self.histogram
                    .saturating_record(end.saturating_sub(start).max(1));
                self.completed += 1;
                self.requests += outcome.requests;
                self.responses += outcome.responses;
                self.request_bytes += outcome.request_bytes;
                self.response_bytes += outcome.response_bytes;
            }
            Err(error) => self.fail(end, error.code, error.message),
        }
    }

    /// The drain bound passed at `now`: an operation still in flight is a `timeout` failure.
    pub fn handle_drain_expired(&mut self, now: Nanos, bound: &str) {
        if let Some(start) = self.in_flight_since.take() {
            self.last_end = Some(now);
            let message = format!(
                "an operation started {:.3} ms earlier was still running at {bound}",
                now.saturating_sub(start) as f64 / 1e6
            );
            self.fail(now, code::TIMEOUT, message);
        }
    }

    fn fail(&mut self, at: Nanos, code: &'static str, message: String) {
        self.failed += 1;
        *self.failures.entry(code).or_default() += 1;
        if self.first_failure.is_none() {
            self.first_failure = Some((at, code, message));
        }
    }
}

/// All lanes of one window merged.
#[derive(Debug, Clone)]
pub struct Totals {
    /// The merged counters and histogram; `first_failure` is the earliest of all lanes.
    pub tally: LaneTally,
}

impl Totals {
    /// Merges the lanes' tallies.
    pub fn merge(tallies: impl IntoIterator<Item = LaneTally>) -> Totals {
        let mut total = LaneTally::new();
        for tally in tallies {
            // Both histograms have the protocol's bounds, so adding cannot fail.
            if let Err(e) = total.histogram.add(&tally.histogram) {
                eprintln!("rpcarena-peer-rust: merging lane histograms failed: {e:?}");
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
        Totals { tally: total }
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
        Ok(SampleReport {
            completed: tally.completed,
            failed: tally.failed,
            requests: tally.requests,
            responses: tally.responses,
            request_bytes: tally.request_bytes,
            response_bytes: tally.response_bytes,
            window_ns: window.deadline - window.t0,
            drain_ns: tally
                .last_end
                .map_or(0, |end| end.saturating_sub(window.deadline)),
            histogram: histogram::encode(&tally.histogram)?,
            failures: tally
                .failures
                .iter()
                .map(|(code, count)| (code.to_string(), *count))
                .collect(),
            first_failure: tally.first_failure.as_ref().map(|(_, _, m)| m.clone()),
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
        let totals = Totals::merge([a, b]);
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
    }

    #[test]
    fn no_operation_past_the_deadline_means_zero_drain() {
        let mut a = LaneTally::new();
        a.handle_finished(0, 100, ok());
        let report = Totals::merge([a]).report(&Window::new(0, 200, 10)).unwrap();
        assert_eq!(report.drain_ns, 0);
    }
}
