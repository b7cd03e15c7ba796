// What one phase (the measured window, or the warmup) counted, and the `sample` event built from
// it (docs/peer-protocol.md "sample"). Pure: callers pass every time in nanoseconds.
import * as hist from './histogram.js';

/** Length of one interval of the window. */
export const INTERVAL_NS = 1_000_000_000;

/** The warmup's tenths (armed.warmup_segments, 1.3). */
export const SEGMENTS = 10;

/** p99 send lag above which the open model says it fell behind its schedule. */
export const FELL_BEHIND_LAG_NS = 1_000_000;

/** An admission window: starts before `deadline`, ends by `hardDeadline` (deadline + drain). */
export class Window {
  constructor(t0, lengthNs, drainNs) {
    this.t0 = t0;
    this.lengthNs = lengthNs;
    this.drainNs = drainNs;
    this.deadline = t0 + lengthNs;
    this.hardDeadline = this.deadline + drainNs;
  }
}

let emptyEncoding;

function emptyHistogram() {
  if (emptyEncoding === undefined) {
    const h = hist.small();
    emptyEncoding = hist.encode(h);
    h.destroy();
  }
  return emptyEncoding;
}

/**
 * Counts, latencies and failures of one phase. Completed operations carry their own message
 * counts; byte counts are the message counts times the configured sizes, which validation has
 * checked every message against (so they are exact, as BigInt products).
 */
export class Tally {
  /**
   * @param {Window} window
   * @param {{requestSize:number, responseSize:number, intervals?:boolean, open?:boolean,
   *          small?:boolean, segments?:boolean}} options  `small`: an auto-resizing histogram
   *          (per-stream tallies); `segments`: count completions per tenth of the window (warmup)
   */
  constructor(window, { requestSize, responseSize, intervals = false, open = false, small = false, segments = false }) {
    this.window = window;
    this.requestSize = requestSize;
    this.responseSize = responseSize;
    this.completed = 0;
    this.failed = 0;
    this.requests = 0;
    this.responses = 0;
    this.histogram = small ? hist.small() : hist.latency();
    this.failures = new Map();
    this.firstFailure = undefined;
    this.lastEnd = undefined;
    this.intervals = intervals ? [] : undefined;
    this.segments = segments ? new Array(SEGMENTS).fill(0) : undefined;
    if (open) {
      this.uncorrected = hist.latency();
      this.sendLag = hist.latency();
    }
  }

  /**
   * An operation that started at `start` (the second it belongs to) completed at `end` with
   * `latency` (end minus start, or minus its intended start in the open model).
   */
  complete(start, end, latency, requests, responses) {
    this.completed++;
    this.requests += requests;
    this.responses += responses;
    hist.record(this.histogram, latency);
    if (this.intervals !== undefined) {
      const index = Math.floor((start - this.window.t0) / INTERVAL_NS);
      if (index >= 0) {
        let slot = this.intervals[index];
        if (slot === undefined) {
          slot = { completed: 0, histogram: hist.small() };
          this.intervals[index] = slot;
        }
        slot.completed++;
        hist.record(slot.histogram, latency);
      }
    }
    if (this.segments !== undefined) this.segments[this.segmentOf(end)]++;
    if (this.lastEnd === undefined || end > this.lastEnd) this.lastEnd = end;
  }

  /**
   * The tenth of the window an operation that ended at `end` completed in: segment k covers
   * [k, k+1) x window / 10 from its start; the drain counts in the last (docs/peer-protocol.md
   * "armed": warmup_segments).
   */
  segmentOf(end) {
    const k = Math.floor(((end - this.window.t0) * SEGMENTS) / this.window.lengthNs);
    return Math.min(SEGMENTS - 1, Math.max(0, k));
  }

  /** `count` operations failed at `end` with `code` (the first failure's message is kept). */
  fail(end, code, message, count = 1) {
    this.failed += count;
    this.failures.set(code, (this.failures.get(code) ?? 0) + count);
    if (this.firstFailure === undefined) this.firstFailure = { code, message };
    if (this.lastEnd === undefined || end > this.lastEnd) this.lastEnd = end;
  }

  /** Open model: the actual start lagged its intended start by `lag` (every started operation). */
  started(lag) {
    hist.record(this.sendLag, lag);
  }

  /** Open model: latency from the actual start of a completed operation. */
  uncorrectedLatency(latency) {
    hist.record(this.uncorrected, latency);
  }

  /** Adds everything `other` (a tally of the same window) counted; frees `other`. */
  absorb(other) {
    this.completed += other.completed;
    this.requests += other.requests;
    this.responses += other.responses;
    this.histogram.add(other.histogram);
    for (const [code, count] of other.failures) {
      this.failures.set(code, (this.failures.get(code) ?? 0) + count);
    }
    this.failed += other.failed;
    if (this.segments !== undefined && other.segments !== undefined) {
      other.segments.forEach((n, k) => {
        this.segments[k] += n;
      });
    }
    if (this.firstFailure === undefined) this.firstFailure = other.firstFailure;
    if (other.lastEnd !== undefined && (this.lastEnd === undefined || other.lastEnd > this.lastEnd)) {
      this.lastEnd = other.lastEnd;
    }
    if (this.intervals !== undefined && other.intervals !== undefined) {
      other.intervals.forEach((slot, index) => {
        if (slot === undefined) return;
        const mine = this.intervals[index];
        if (mine === undefined) {
          this.intervals[index] = slot;
        } else {
          mine.completed += slot.completed;
          mine.histogram.add(slot.histogram);
          slot.histogram.destroy();
        }
      });
      other.intervals = undefined;
    }
    other.destroy();
  }

  /** The drain: from the deadline to the end of the last admitted operation, within the bound. */
  drainNs() {
    if (this.lastEnd === undefined || this.lastEnd <= this.window.deadline) return 0;
    return Math.min(this.lastEnd - this.window.deadline, this.window.drainNs);
  }

  /** The p99 of the send lag (open model). */
  sendLagP99() {
    return this.sendLag.totalCount === 0 ? 0 : this.sendLag.getValueAtPercentile(99);
  }

  /**
   * The `sample` event's fields. `model` adds the load model's own fields (`load`,
   * `max_in_flight`, `offered`, `target_rate`, `fell_behind`, `sent`, `received`).
   */
  sample(windowMs, model = {}) {
    const event = {
      event: 'sample',
      completed: String(this.completed),
      failed: String(this.failed),
      requests: String(this.requests),
      responses: String(this.responses),
      request_bytes: String(BigInt(this.requests) * BigInt(this.requestSize)),
      response_bytes: String(BigInt(this.responses) * BigInt(this.responseSize)),
      window_ns: String(BigInt(windowMs) * 1_000_000n),
      drain_ns: String(Math.round(this.drainNs())),
      histogram: hist.encode(this.histogram),
    };
    if (this.failed > 0) {
      event.failures = Object.fromEntries([...this.failures].map(([k, v]) => [k, String(v)]));
      event.first_failure = this.firstFailure.message;
    }
    if (model.load !== undefined) event.load = model.load;
    if (this.intervals !== undefined) {
      const count = Math.ceil(this.window.lengthNs / INTERVAL_NS);
      event.intervals = [];
      for (let k = 0; k < count; k++) {
        const slot = this.intervals[k];
        event.intervals.push({
          offset_ns: String(BigInt(k) * 1_000_000_000n),
          completed: String(slot ? slot.completed : 0),
          histogram: slot ? hist.encode(slot.histogram) : emptyHistogram(),
        });
      }
    }
    if (model.maxInFlight !== undefined) event.max_in_flight = String(model.maxInFlight);
    if (model.offered !== undefined) {
      event.offered = String(model.offered);
      event.target_rate = model.targetRate;
      event.fell_behind = model.fellBehind;
      event.uncorrected_histogram = hist.encode(this.uncorrected);
      event.send_lag_histogram = hist.encode(this.sendLag);
    }
    if (model.sent !== undefined) event.sent = String(model.sent);
    if (model.received !== undefined) event.received = String(model.received);
    return event;
  }

  /** Frees the WebAssembly memory of every histogram. */
  destroy() {
    this.histogram.destroy();
    this.uncorrected?.destroy();
    this.sendLag?.destroy();
    for (const slot of this.intervals ?? []) slot?.histogram.destroy();
  }
}
