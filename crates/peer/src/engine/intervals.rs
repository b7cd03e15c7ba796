//! Per-second interval histograms: the operations that started in each second of the window,
//! so that the controller can compare the two halves of a window (drift).
//!
//! An operation belongs to the second in which it *started* (so the intervals' completed counts
//! add up to the sample's `completed`, and an operation that ends in the drain still belongs to
//! the window). Histograms are allocated lazily and auto-resize from a small size: a one-second
//! slot of sub-millisecond latencies takes tens of kilobytes, not the 270 KB of a histogram sized
//! up to an hour.
//!
//! Many closed-loop lanes would still need a slot each per second, so a lane records through an
//! [`IntervalRecorder`] that keeps only the current second and adds it to one shared
//! [`Intervals`] when the lane's operations move on to the next second (a lane's starts only
//! increase, so each lane flushes about once a second).

use super::Nanos;
use hdrhistogram::Histogram;
use rpcarena_protocol::event::Interval;
use rpcarena_protocol::histogram::{self, HIGHEST_NS, SIGNIFICANT_DIGITS, new_latency_histogram};
use std::sync::{Arc, Mutex};

/// Length of one interval.
pub const INTERVAL_NS: Nanos = 1_000_000_000;

/// A small auto-resizing latency histogram (lowest 1 ns, three significant digits).
pub fn small_histogram() -> Histogram<u64> {
    // new(3) is valid: sigfig in 0..=5.
    Histogram::new(SIGNIFICANT_DIGITS).unwrap_or_else(|_| new_latency_histogram())
}

/// Records `value` nanoseconds, clamped to the protocol's range [1 ns, 1 h].
pub fn record(histogram: &mut Histogram<u64>, value: Nanos) {
    let value = value.clamp(1, HIGHEST_NS);
    if histogram.record(value).is_err() {
        histogram.saturating_record(value);
    }
}

/// The interval histograms of one window (or of one send-saturation stream).
#[derive(Debug, Clone, Default)]
pub struct Intervals {
    slots: Vec<Option<Histogram<u64>>>,
}

impl Intervals {
    /// No interval yet.
    pub fn new() -> Intervals {
        Intervals::default()
    }

    /// The index of the interval that holds an operation started `since_t0` after the window
    /// opened.
    pub fn index(since_t0: Nanos) -> usize {
        (since_t0 / INTERVAL_NS) as usize
    }

    fn slot(&mut self, index: usize) -> &mut Histogram<u64> {
        if self.slots.len() <= index {
            self.slots.resize_with(index + 1, || None);
        }
        self.slots[index].get_or_insert_with(small_histogram)
    }

    /// Records one operation of interval `index`.
    pub fn record(&mut self, index: usize, value: Nanos) {
        record(self.slot(index), value);
    }

    /// Adds a histogram to interval `index`.
    pub fn add(&mut self, index: usize, histogram: &Histogram<u64>) {
        let slot = self.slot(index);
        // A slot auto-resizes, so adding any histogram of the same precision succeeds.
        if let Err(e) = slot.add(histogram) {
            eprintln!("rpcarena-peer-rust: adding an interval histogram failed: {e:?}");
        }
    }

    /// Adds every interval of `other`.
    pub fn merge(&mut self, other: &Intervals) {
        for (index, slot) in other.slots.iter().enumerate() {
            if let Some(histogram) = slot {
                self.add(index, histogram);
            }
        }
    }

    /// Operations recorded in every interval.
    pub fn total(&self) -> u64 {
        self.slots.iter().flatten().map(Histogram::len).sum()
    }

    /// One entry per second of a window `window_ns` long (the last may be partial), empty
    /// seconds included, encoded like the sample's histogram.
    pub fn report(&self, window_ns: Nanos) -> Result<Vec<Interval>, histogram::HistogramError> {
        let count = window_ns.div_ceil(INTERVAL_NS).max(self.slots.len() as u64) as usize;
        let empty = new_latency_histogram();
        (0..count)
            .map(|index| {
                let encoded = match self.slots.get(index).and_then(Option::as_ref) {
                    Some(slot) => {
                        let mut full = new_latency_histogram();
                        full.add(slot)
                            .map_err(|e| histogram::HistogramError::Encode(format!("{e:?}")))?;
                        histogram::encode(&full)?
                    }
                    None => histogram::encode(&empty)?,
                };
                Ok(Interval {
                    offset_ns: index as u64 * INTERVAL_NS,
                    completed: self
                        .slots
                        .get(index)
                        .and_then(Option::as_ref)
                        .map_or(0, Histogram::len),
                    histogram: encoded,
                })
            })
            .collect()
    }
}

/// Records a lane's operations into a shared [`Intervals`], one flush per second per lane.
#[derive(Debug, Clone)]
pub struct IntervalRecorder {
    t0: Nanos,
    current: Option<(usize, Histogram<u64>)>,
    shared: Arc<Mutex<Intervals>>,
}

impl IntervalRecorder {
    /// A recorder for a window that opened at `t0`, adding into `shared`.
    pub fn new(t0: Nanos, shared: Arc<Mutex<Intervals>>) -> IntervalRecorder {
        IntervalRecorder {
            t0,
            current: None,
            shared,
        }
    }

    /// Records an operation that started at `start` and took `value`.
    pub fn record(&mut self, start: Nanos, value: Nanos) {
        let index = Intervals::index(start.saturating_sub(self.t0));
        if self.current.as_ref().is_some_and(|(i, _)| *i != index) {
            self.flush();
        }
        let (_, histogram) = self
            .current
            .get_or_insert_with(|| (index, small_histogram()));
        record(histogram, value);
    }

    /// Adds the current second to the shared intervals.
    pub fn flush(&mut self) {
        if let Some((index, histogram)) = self.current.take() {
            match self.shared.lock() {
                Ok(mut shared) => shared.add(index, &histogram),
                Err(poisoned) => poisoned.into_inner().add(index, &histogram),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_go_to_the_second_they_started_in_and_counts_add_up() {
        let shared = Arc::new(Mutex::new(Intervals::new()));
        let mut a = IntervalRecorder::new(1_000, shared.clone());
        let mut b = IntervalRecorder::new(1_000, shared.clone());
        a.record(1_000, 5);
        a.record(1_000 + INTERVAL_NS - 1, 6);
        a.record(1_000 + INTERVAL_NS, 7);
        b.record(1_000 + 2 * INTERVAL_NS + 3, 8);
        a.flush();
        b.flush();
        let intervals = shared.lock().unwrap().clone();
        assert_eq!(intervals.total(), 4);
        // a 2.5 s window has three intervals, the last partial
        let report = intervals.report(2_500_000_000).unwrap();
        let counts: Vec<(u64, u64)> = report.iter().map(|i| (i.offset_ns, i.completed)).collect();
        assert_eq!(counts, vec![(0, 2), (1_000_000_000, 1), (2_000_000_000, 1)]);
        let second = histogram::decode(&report[1].histogram).unwrap();
        assert_eq!((second.len(), second.max()), (1, 7));
    }

    #[test]
    fn empty_seconds_are_reported_and_merging_adds() {
        let mut a = Intervals::new();
        a.record(0, 10);
        let mut b = Intervals::new();
        b.record(3, 20);
        a.merge(&b);
        let report = a.report(4 * INTERVAL_NS).unwrap();
        assert_eq!(report.len(), 4);
        assert_eq!(report[1].completed, 0);
        assert_eq!(histogram::decode(&report[1].histogram).unwrap().len(), 0);
        assert_eq!(report[3].completed, 1);
        // values beyond an hour are clamped, not lost
        a.record(0, u64::MAX);
        assert_eq!(a.total(), 3);
    }
}
