// The open model (docs/peer-protocol.md "open") without coordinated omission. Operation i has an
// intended start fixed in advance (schedule.js); a pacer thread hands each one to the event loop
// a little early, and the loop waits for the exact moment itself (a busy wait of at most the
// lead), reads the actual start and starts the operation on a free lane. When all
// `--concurrency` lanes are busy, starts wait in order, and the wait counts: `histogram` holds
// end minus intended start, `uncorrected_histogram` end minus actual start, `send_lag_histogram`
// actual minus intended start. A start still waiting at the deadline is not started (it counts
// in `offered` only).
//
// The core (OpenLoop) is sans-I/O: it is told about starts and the time, so tests drive it with
// a fake clock; runOpen wires it to the pacer thread and a driver.
import { Worker } from 'node:worker_threads';
import { BASE } from '../clock.js';
import { code } from '../protocol.js';
import { FELL_BEHIND_LAG_NS } from '../tally.js';
import { Flight, untilHardDeadline } from './lanes.js';
import { leadNs } from './schedule.js';

export class OpenLoop {
  /**
   * @param {object} o
   * @param {(lane:number, seq:number) => Promise<{requests:number, responses:number}>} o.call
   */
  constructor({ call, lanes, window, tally, clock }) {
    this.call = call;
    this.window = window;
    this.tally = tally;
    this.clock = clock;
    this.free = [];
    for (let lane = lanes - 1; lane >= 0; lane--) this.free.push(lane);
    this.queue = [];
    this.head = 0;
    this.offered = 0;
    this.flight = new Flight();
    this.generatorDone = false;
    this.onIdle = undefined;
  }

  /** The pacer handed over intended start `intended` of operation `seq`. */
  arrive(seq, intended) {
    this.offered++;
    this.queue.push(seq, intended);
    this.pump();
  }

  /** The schedule has no more starts before the deadline. */
  done() {
    this.generatorDone = true;
    this.checkIdle();
  }

  pump() {
    while (this.head < this.queue.length && this.free.length > 0) {
      const seq = this.queue[this.head];
      const intended = this.queue[this.head + 1];
      this.head += 2;
      if (!this.start(seq, intended)) {
        // The deadline passed: nothing queued may start any more.
        this.head = this.queue.length;
      }
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
  }

  start(seq, intended) {
    let now = this.clock();
    while (now < intended) now = this.clock();
    if (now >= this.window.deadline || this.flight.sealed) return false;
    const lane = this.free.pop();
    const id = this.flight.begin(now);
    this.tally.started(now - intended);
    this.call(lane, seq).then(
      (outcome) => {
        if (this.flight.sealed) return;
        this.flight.end(id);
        const end = this.clock();
        this.tally.complete(now, end, end - intended, outcome.requests, outcome.responses);
        this.tally.uncorrectedLatency(end - now);
      },
      (e) => {
        if (this.flight.sealed) return;
        this.flight.end(id);
        this.tally.fail(this.clock(), e.code ?? code.INTERNAL, e.message);
      },
    ).finally(() => {
      this.free.push(lane);
      this.pump();
      this.checkIdle();
    });
    return true;
  }

  checkIdle() {
    if (this.generatorDone && this.flight.count === 0 && this.onIdle) {
      const idle = this.onIdle;
      this.onIdle = undefined;
      idle();
    }
  }

  /** Resolves once the schedule is done and nothing is in flight. */
  idle() {
    return new Promise((resolve) => {
      this.onIdle = resolve;
      this.checkIdle();
    });
  }

  /** The model's fields of the sample. */
  report(rate) {
    const started = this.tally.completed + this.tally.failed;
    return {
      maxInFlight: this.flight.max,
      offered: this.offered,
      targetRate: rate,
      fellBehind: started < this.offered || this.tally.sendLagP99() > FELL_BEHIND_LAG_NS,
    };
  }
}

/** The pacer thread, started ahead of the window it will pace. */
export class Pacer {
  constructor() {
    this.worker = new Worker(new URL('./pacer-worker.js', import.meta.url), { workerData: { base: BASE } });
    this.failed = new Promise((_, reject) => this.worker.once('error', reject));
    this.failed.catch(() => {});
    this.ready = new Promise((resolve) => {
      this.worker.once('message', resolve);
    });
  }

  /** Starts pacing `window`; `loop` gets every start. */
  async start(loop, window, { rate, arrival, seed }) {
    await Promise.race([this.ready, this.failed]);
    this.worker.on('message', (message) => {
      if (message[0] === 'done') loop.done();
      else loop.arrive(message[0], message[1]);
    });
    this.worker.postMessage({ t0: window.t0, deadline: window.deadline, rate, arrival, seed, lead: leadNs(rate) });
  }

  stop() {
    return this.worker.terminate();
  }
}

/**
 * Runs the open model over `window` at `rate` with at most `lanes` operations in flight, paced
 * by `pacer` (a Pacer started before the window opened; one is made here if none is given).
 */
export async function runOpen({ driver, lanes, window, tally, clock, rate, arrival, seed, pacer, bound = 'the drain' }) {
  const loop = new OpenLoop({ call: (lane, seq) => driver.call(lane, seq), lanes, window, tally, clock });
  const own = pacer ?? new Pacer();
  try {
    await own.start(loop, window, { rate, arrival, seed });
    await untilHardDeadline(Promise.race([loop.idle(), own.failed]), {
      window,
      tally,
      flight: loop.flight,
      clock,
      bound,
    });
  } finally {
    await own.stop();
  }
  return loop.report(rate);
}
