// The open model's core on a fake clock: intended starts, the wait for a free lane (counted in
// the corrected latency, not in the uncorrected one), send lag, admission at the deadline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OpenLoop } from '../src/engine/open.js';
import * as hist from '../src/histogram.js';
import { Tally, Window } from '../src/tally.js';

function fake() {
  let now = 0;
  const pending = [];
  return {
    clock: () => now,
    set: (t) => {
      now = t;
    },
    call: () => new Promise((resolve) => pending.push(resolve)),
    finish: async (t) => {
      now = t;
      pending.shift()({ requests: 1, responses: 1 });
      await new Promise((r) => setImmediate(r));
    },
    pending,
  };
}

test('a start that waits for a lane counts the wait in the corrected latency only', async () => {
  const f = fake();
  const window = new Window(0, 10_000, 5_000);
  const tally = new Tally(window, { requestSize: 1, responseSize: 1, intervals: true, open: true });
  const loop = new OpenLoop({ call: f.call, lanes: 1, window, tally, clock: f.clock });
  f.set(0);
  loop.arrive(0, 0); // starts at once on the only lane
  f.set(1000);
  loop.arrive(1, 1000); // waits: the lane is busy
  assert.equal(f.pending.length, 1);
  await f.finish(3000); // op 0 ends at 3000; op 1 starts at 3000 (2000 late)
  assert.equal(f.pending.length, 1);
  await f.finish(3500);
  f.set(12_000);
  loop.arrive(2, 11_000); // handed over, but the deadline passed before it could start
  loop.done();
  await loop.idle();
  assert.equal(tally.completed, 2);
  const corrected = hist.decode(hist.encode(tally.histogram));
  const uncorrected = hist.decode(hist.encode(tally.uncorrected));
  assert.ok(Math.abs(corrected.maxValue - 3000) <= 3 && Math.abs(corrected.minNonZeroValue - 2500) <= 3);
  assert.ok(Math.abs(uncorrected.maxValue - 3000) <= 3 && Math.abs(uncorrected.minNonZeroValue - 500) <= 1);
  assert.equal(tally.sendLag.totalCount, 2);
  const report = loop.report(1000);
  assert.equal(report.offered, 3);
  assert.equal(report.maxInFlight, 1);
  assert.equal(report.fellBehind, true); // one offered start never started
});

test('on schedule, nothing falls behind', async () => {
  const f = fake();
  const window = new Window(0, 10_000_000, 1_000_000);
  const tally = new Tally(window, { requestSize: 1, responseSize: 1, open: true });
  const loop = new OpenLoop({ call: f.call, lanes: 4, window, tally, clock: f.clock });
  for (let i = 0; i < 5; i++) {
    f.set(i * 1_000_000);
    loop.arrive(i, i * 1_000_000);
    await f.finish(i * 1_000_000 + 100_000);
  }
  loop.done();
  await loop.idle();
  const report = loop.report(100);
  assert.deepEqual([tally.completed, report.offered, report.fellBehind, report.maxInFlight], [5, 5, false, 1]);
});
