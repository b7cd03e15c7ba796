//! The pure link emulator: one direction of a link, driven by the caller's clock.
//!
//! Nothing here reads a clock, sleeps, or touches a device. The caller hands in each packet with
//! its arrival time ([`LinkEmulator::handle_packet`]) and asks what may leave at a given time
//! ([`LinkEmulator::poll_release`]) and when to ask next ([`LinkEmulator::next_release_time`]),
//! in the style of quinn-proto. Tests drive it on a virtual clock; the TUN shell drives it
//! with `CLOCK_MONOTONIC`.
//!
//! The rules are those of `netem_enqueue()`/`netem_dequeue()` in Linux's `sch_netem.c`, in
//! their order:
//!
//! 1. loss decision first (random or Gilbert-Elliott); a lost packet uses no queue or link time;
//! 2. queue limit: a packet arriving while `limit` packets are held (including those still
//!    waiting out their delay) is dropped;
//! 3. optional reordering: an eligible packet skips the delay and leaves at once;
//! 4. delay = mu plus jitter from the configured distribution; with a rate,
//!    `tts = max(now + delay, tts of the last held packet) + (len + overhead) * 8e9 / rate`,
//!    so nothing reorders and jitter is squeezed under load; without a rate, packets leave in
//!    `tts` order, so jitter reorders them.

pub mod dist;
pub mod loss;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::ProfileError;
use crate::profile::DirectionSpec;

pub use dist::DelaySampler;
pub use loss::{GeState, LossState};

/// What happened to a packet handed to [`LinkEmulator::handle_packet`].
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<T> {
    /// Held; it becomes releasable at `release_at_ns`.
    Queued {
        /// Its time to send, in the caller's clock (never before its arrival).
        release_at_ns: u64,
    },
    /// Lost by the loss model; the payload is handed back for reuse.
    Lost(T),
    /// Dropped because `limit` packets were already held; the payload is handed back.
    QueueFull(T),
}

impl<T> Verdict<T> {
    /// Whether the packet is now held.
    pub fn is_queued(&self) -> bool {
        matches!(self, Verdict::Queued { .. })
    }
}

/// A packet leaving the emulator.
#[derive(Debug, PartialEq, Eq)]
pub struct Released<T> {
    /// The payload handed in.
    pub payload: T,
    /// The length handed in, bytes.
    pub len: usize,
    /// When it arrived, caller's clock.
    pub arrived_ns: u64,
    /// When it was due: its time to send, but never before its arrival. Release lateness is
    /// the actual send time minus this.
    pub due_ns: u64,
}

/// Packet counters of one direction. `arrived = lost + queue_dropped + released + held`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Packets handed in.
    pub arrived: u64,
    /// Packets lost by the loss model.
    pub lost: u64,
    /// Packets dropped at the queue limit.
    pub queue_dropped: u64,
    /// Packets released.
    pub released: u64,
    /// Packets sent ahead by `reorder` (a subset of the admitted ones).
    pub reordered: u64,
    /// Bytes handed in (the lengths given to [`LinkEmulator::handle_packet`]).
    #[serde(default)]
    pub bytes: u64,
    /// Bytes lost by the loss model.
    #[serde(default)]
    pub lost_bytes: u64,
    /// Queueing delay summed over admitted packets, nanoseconds: how long each waits beyond its
    /// drawn delay for the packets ahead of it and its own serialization at the rate (0 without
    /// a rate, and for reordered packets).
    #[serde(default)]
    pub queue_wait_ns: u64,
}

impl Counters {
    /// Packets admitted to the queue (neither lost nor dropped at the limit).
    pub fn admitted(&self) -> u64 {
        self.arrived - self.lost - self.queue_dropped
    }

    /// Mean queueing delay of admitted packets, nanoseconds; `None` when none was admitted.
    pub fn mean_queue_wait_ns(&self) -> Option<f64> {
        let admitted = self.admitted();
        (admitted > 0).then(|| self.queue_wait_ns as f64 / admitted as f64)
    }

    /// What happened between `earlier` and `self` (counters only grow).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            arrived: self.arrived.saturating_sub(earlier.arrived),
            lost: self.lost.saturating_sub(earlier.lost),
            queue_dropped: self.queue_dropped.saturating_sub(earlier.queue_dropped),
            released: self.released.saturating_sub(earlier.released),
            reordered: self.reordered.saturating_sub(earlier.reordered),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            lost_bytes: self.lost_bytes.saturating_sub(earlier.lost_bytes),
            queue_wait_ns: self.queue_wait_ns.saturating_sub(earlier.queue_wait_ns),
        }
    }
}

struct Held<T> {
    tts: u64,
    seq: u64,
    arrived: u64,
    len: usize,
    payload: T,
}

// Min-heap order on (tts, seq): equal times leave in arrival order, as netem's tfifo does.
impl<T> PartialEq for Held<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.tts, self.seq) == (other.tts, other.seq)
    }
}
impl<T> Eq for Held<T> {}
impl<T> PartialOrd for Held<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Held<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.tts, other.seq).cmp(&(self.tts, self.seq))
    }
}

/// One direction of an emulated link. `T` is whatever the caller wants back on release (the
/// packet bytes in the shell, `()` or an id in tests).
pub struct LinkEmulator<T> {
    spec: DirectionSpec,
    seed: u64,
    rng: ChaCha8Rng,
    delay: DelaySampler,
    loss: LossState,
    /// netem's `q->reorder` threshold and `q->gap`, when reordering is on.
    reorder: Option<(u32, u32)>,
    /// netem's `q->counter`: packets delayed since the last reordered one.
    counter: u32,
    /// netem's time-ordered fifo.
    tfifo: BinaryHeap<Held<T>>,
    /// Largest tts in `tfifo`; meaningful only while it is non-empty.
    tfifo_max: u64,
    /// netem's `sch->q`: reordered packets, sent before anything in the tfifo.
    immediate: VecDeque<Held<T>>,
    next_seq: u64,
    counters: Counters,
}

impl<T> std::fmt::Debug for LinkEmulator<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkEmulator")
            .field("spec", &self.spec)
            .field("seed", &self.seed)
            .field("held", &self.held())
            .field("counters", &self.counters)
            .finish()
    }
}

impl<T> LinkEmulator<T> {
    /// Builds an emulator for `spec`, its random decisions drawn from ChaCha8 seeded with `seed`.
    pub fn new(spec: &DirectionSpec, seed: u64) -> Result<Self, ProfileError> {
        spec.validate("")?;
        let reorder = spec.reorder.map(|r| {
            let threshold = (r.probability.clamp(0.0, 1.0) * u32::MAX as f64).round_ties_even();
            (threshold as u32, r.gap)
        });
        Ok(LinkEmulator {
            spec: spec.clone(),
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            delay: DelaySampler::new(spec.delay_ns, spec.jitter_ns, spec.distribution),
            loss: LossState::new(&spec.loss),
            reorder,
            counter: 0,
            tfifo: BinaryHeap::new(),
            tfifo_max: 0,
            immediate: VecDeque::new(),
            next_seq: 0,
            counters: Counters::default(),
        })
    }

    /// The spec this emulator runs.
    pub fn spec(&self) -> &DirectionSpec {
        &self.spec
    }

    /// The seed its random generator started from (record it to reproduce a run).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Packets held now (the queue length the limit applies to).
    pub fn held(&self) -> usize {
        self.tfifo.len() + self.immediate.len()
    }

    /// The Gilbert-Elliott state, if that model is in use (for tests and diagnostics).
    pub fn ge_state(&self) -> Option<GeState> {
        self.loss.ge_state()
    }

    /// A packet of `len` bytes (the IP packet; the spec's overhead is added for the rate)
    /// arrives at `now_ns`.
    pub fn handle_packet(&mut self, now_ns: u64, len: usize, payload: T) -> Verdict<T> {
        self.counters.arrived += 1;
        self.counters.bytes += len as u64;

        if self.loss.lose(&mut self.rng) {
            self.counters.lost += 1;
            self.counters.lost_bytes += len as u64;
            return Verdict::Lost(payload);
        }

        if self.held() >= self.spec.limit_packets as usize {
            self.counters.queue_dropped += 1;
            return Verdict::QueueFull(payload);
        }

        let seq = self.next_seq;
        self.next_seq += 1;

        if let Some((threshold, gap)) = self.reorder {
            // netem: delay normally if gap == 0 || counter < gap - 1 || reorder < rnd.
            let delay_normally =
                self.counter < gap.saturating_sub(1) || threshold < self.rng.next_u32();
            if !delay_normally {
                self.counter = 0;
                self.counters.reordered += 1;
                self.immediate.push_front(Held {
                    tts: now_ns,
                    seq,
                    arrived: now_ns,
                    len,
                    payload,
                });
                return Verdict::Queued {
                    release_at_ns: now_ns,
                };
            }
        }

        let mut delay = self.delay.sample(&mut self.rng) as i128;
        let drawn = delay;
        let mut reference = now_ns as i128;
        if self.spec.rate_bps.is_some() {
            // The last held packet is the reference point: its tts, if later than now + delay,
            // is where this packet's serialization starts (netem's "time bonus").
            let last = self.last_held_tts();
            if let Some(last) = last {
                delay -= last as i128 - reference;
                delay = delay.max(0);
                reference = last as i128;
            }
            delay += self.spec.serialization_ns(len).unwrap_or(0) as i128;
        }
        let tts = (reference + delay).clamp(0, u64::MAX as i128) as u64;
        let wait = tts as i128 - (now_ns as i128 + drawn);
        self.counters.queue_wait_ns += wait.max(0) as u64;
        self.counter = self.counter.wrapping_add(1);
        if self.tfifo.is_empty() || tts > self.tfifo_max {
            self.tfifo_max = tts;
        }
        self.tfifo.push(Held {
            tts,
            seq,
            arrived: now_ns,
            len,
            payload,
        });
        Verdict::Queued {
            release_at_ns: tts.max(now_ns),
        }
    }

    /// netem's `last`: the latest tts among the tfifo's tail and the immediate queue's tail.
    fn last_held_tts(&self) -> Option<u64> {
        let fifo = (!self.tfifo.is_empty()).then_some(self.tfifo_max);
        let immediate = self.immediate.back().map(|h| h.tts);
        match (fifo, immediate) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet whose time has come at `now_ns`, earliest first; `None` if none is due.
    pub fn poll_release(&mut self, now_ns: u64) -> Option<Released<T>> {
        let held = if let Some(h) = self.immediate.pop_front() {
            h
        } else {
            match self.tfifo.peek() {
                Some(h) if h.tts <= now_ns => self.tfifo.pop()?,
                _ => return None,
            }
        };
        self.counters.released += 1;
        Some(Released {
            due_ns: held.tts.max(held.arrived),
            payload: held.payload,
            len: held.len,
            arrived_ns: held.arrived,
        })
    }

    /// When the next held packet becomes due, `None` when nothing is held.
    pub fn next_release_time(&self) -> Option<u64> {
        if let Some(h) = self.immediate.front() {
            return Some(h.tts);
        }
        self.tfifo.peek().map(|h| h.tts.max(h.arrived))
    }

    /// Removes and returns everything still held, in release order (for shutdown).
    pub fn drain(&mut self) -> Vec<T> {
        let mut out: Vec<T> = self.immediate.drain(..).map(|h| h.payload).collect();
        while let Some(h) = self.tfifo.pop() {
            out.push(h.payload);
        }
        out
    }
}

#[cfg(test)]
mod tests;
