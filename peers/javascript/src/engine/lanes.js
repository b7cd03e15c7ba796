// The closed, window and backpressure load models (docs/peer-protocol.md "Load models") on
// Node's one event loop. A lane is an async loop, not a thread: it awaits its operation, records
// it and starts the next. Every model obeys the admission rule: nothing starts at or after the
// deadline, and an operation still running at the hard deadline (deadline + drain) counts as a
// `timeout` failure; what it does afterwards is ignored.
//
// A driver (one per stack) runs operations: `call(lane, seq)` resolves to
// `{requests, responses}` once every response is checked, or rejects with an OpError.
import { code } from '../protocol.js';

/** Resolves after the event loop's I/O phase has run once (lets responses in between starts). */
export function nextTurn() {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Lets a loop that could run without waiting (a sender whose writes the transport takes at once)
 * give the event loop its I/O turn at least every `everyNs`, so acknowledgements, window updates
 * and other lanes' responses are not starved (tokio's cooperative budget does the same for the
 * Rust peer).
 */
export class Yielder {
  constructor(clock, everyNs = 1_000_000) {
    this.clock = clock;
    this.everyNs = everyNs;
    this.last = clock();
  }

  /** Resolves at once, or after one turn of the event loop when `everyNs` have passed. */
  async maybe() {
    const now = this.clock();
    if (now - this.last < this.everyNs) return;
    await nextTurn();
    this.last = this.clock();
  }
}

/**
 * Operations in flight, so that the ones still running at the hard deadline can be failed.
 * `sealed` turns true at the hard deadline: completions after it are ignored.
 */
export class Flight {
  constructor() {
    this.starts = new Map();
    this.nextId = 0;
    this.count = 0;
    this.max = 0;
    this.sealed = false;
  }

  begin(start) {
    const id = this.nextId++;
    this.starts.set(id, start);
    this.count++;
    if (this.count > this.max) this.max = this.count;
    return id;
  }

  end(id) {
    this.starts.delete(id);
    this.count--;
  }

  /** The hard deadline passed: every operation still in flight is a `timeout` failure. */
  expire(tally, at, bound) {
    this.sealed = true;
    for (const start of this.starts.values()) {
      const ms = ((at - start) / 1e6).toFixed(1);
      tally.fail(at, code.TIMEOUT, `an operation started ${ms} ms before ${bound} had not finished`);
    }
    this.starts.clear();
  }
}

/**
 * Waits for `work` or the hard deadline, whichever comes first; at the deadline the operations
 * still in flight become `timeout` failures.
 */
export async function untilHardDeadline(work, { window, tally, flight, clock, bound }) {
  let timer;
  const expired = new Promise((resolve) => {
    const wait = () => {
      const left = window.hardDeadline - clock();
      if (left <= 0) resolve(true);
      else timer = setTimeout(wait, Math.ceil(left / 1e6));
    };
    wait();
  });
  const finished = await Promise.race([work.then(() => false), expired]);
  clearTimeout(timer);
  if (finished) flight.expire(tally, window.hardDeadline, bound);
}

function record(tally, start, clock, outcome) {
  const end = clock();
  tally.complete(start, end, end - start, outcome.requests, outcome.responses);
}

/**
 * Closed and window: `lanes` lanes, each with one operation in flight, starting the next the
 * moment the previous one finished; a lane stops at its first failure. Operation k of lane i has
 * seq `i + k * lanes`.
 */
export async function runLanes({ driver, lanes, window, tally, clock, bound = 'the drain' }) {
  const flight = new Flight();
  const lane = async (i) => {
    for (let k = 0; ; k++) {
      const start = clock();
      if (start >= window.deadline || flight.sealed) return;
      const id = flight.begin(start);
      let outcome;
      try {
        outcome = await driver.call(i, i + k * lanes);
      } catch (e) {
        if (flight.sealed) return;
        flight.end(id);
        tally.fail(clock(), e.code ?? code.INTERNAL, e.message);
        return;
      }
      if (flight.sealed) return;
      flight.end(id);
      record(tally, start, clock, outcome);
    }
  };
  const all = [];
  for (let i = 0; i < lanes; i++) all.push(lane(i));
  await untilHardDeadline(Promise.all(all), { window, tally, flight, clock, bound });
  return { maxInFlight: flight.max };
}

/**
 * Backpressure: one submitter starts a new operation whenever the transport accepts one
 * (`driver.acquire()` returns a lane, or -1 while it pushes back) and fewer than `maxInFlight`
 * are running, one start per turn of the event loop, so responses are read between starts. The
 * event loop is the submitter's pacing: when I/O keeps it busy, starts slow down. Nothing starts
 * after the first failure.
 */
export async function runBackpressure({ driver, maxInFlight, window, tally, clock, bound = 'the drain' }) {
  const flight = new Flight();
  const running = new Set();
  let failed = false;
  let wake = null;
  const signal = () => {
    if (wake) {
      const w = wake;
      wake = null;
      w();
    }
  };
  const start = (lane, seq) => {
    const begin = clock();
    const id = flight.begin(begin);
    const op = driver.call(lane, seq).then(
      (outcome) => {
        if (flight.sealed) return;
        flight.end(id);
        record(tally, begin, clock, outcome);
      },
      (e) => {
        if (flight.sealed) return;
        flight.end(id);
        failed = true;
        tally.fail(clock(), e.code ?? code.INTERNAL, e.message);
      },
    ).finally(() => {
      driver.release(lane);
      running.delete(op);
      signal();
    });
    running.add(op);
  };
  const submit = async () => {
    for (let seq = 0; !failed && !flight.sealed; ) {
      if (clock() >= window.deadline) return;
      const lane = flight.count < maxInFlight ? driver.acquire() : -1;
      if (lane < 0) {
        // Wait for an operation to end or the transport to accept again (re-checked each ms).
        await new Promise((resolve) => {
          wake = resolve;
          const t = setTimeout(signal, 1);
          driver.whenAcquirable?.().then(signal, signal);
          void t;
        });
        continue;
      }
      start(lane, seq++);
      await nextTurn();
    }
  };
  const work = (async () => {
    await submit();
    while (running.size > 0) await Promise.all([...running]);
  })();
  await untilHardDeadline(work, { window, tally, flight, clock, bound });
  return { maxInFlight: flight.max };
}
