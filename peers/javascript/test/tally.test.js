import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as hist from '../src/histogram.js';
import { Tally, Window } from '../src/tally.js';

test('a sample has ceil(window / 1 s) intervals that add up, and exact counters', () => {
  const window = new Window(100, 2_500_000_000, 1_000_000_000);
  const tally = new Tally(window, { requestSize: 16 * 1024 * 1024, responseSize: 3, intervals: true });
  tally.complete(100, 200, 100, 1, 1);
  tally.complete(100 + 2_100_000_000, 100 + 2_700_000_000, 600_000_000, 1, 1);
  const sample = tally.sample(2500, { load: 'closed' });
  assert.equal(sample.window_ns, '2500000000');
  assert.equal(sample.intervals.length, 3);
  assert.deepEqual(sample.intervals.map((i) => [i.offset_ns, i.completed]), [['0', '1'], ['1000000000', '0'], ['2000000000', '1']]);
  assert.equal(hist.decode(sample.intervals[1].histogram).totalCount, 0);
  assert.equal(sample.drain_ns, '200000000');
  assert.equal(sample.request_bytes, String(2 * 16 * 1024 * 1024));
  assert.equal(sample.failures, undefined);
  assert.equal(hist.decode(sample.histogram).totalCount, 2);
});

test('failures are counted by code with the first message, and the drain is capped', () => {
  const window = new Window(0, 1_000_000, 500);
  const tally = new Tally(window, { requestSize: 1, responseSize: 1 });
  tally.fail(1_000_000 + 9_999, 'timeout', 'first');
  tally.fail(10, 'rpc', 'second');
  const sample = tally.sample(1);
  assert.deepEqual(sample.failures, { timeout: '1', rpc: '1' });
  assert.equal(sample.first_failure, 'first');
  assert.equal(sample.drain_ns, '500');
  assert.equal(sample.failed, '2');
});

test('warmup segments: completions per tenth of the window by their end, the drain in the last, absorbed tallies added', () => {
  const window = new Window(1000, 1_000_000, 5_000_000);
  const tally = new Tally(window, { requestSize: 1, responseSize: 1, segments: true });
  for (const end of [1000, 1000 + 99_999, 1000 + 100_000, 1000 + 950_000, 1000 + 1_000_000, 1000 + 4_000_000]) {
    tally.complete(1000, end, end - 1000, 1, 1);
  }
  const stream = new Tally(window, { requestSize: 1, responseSize: 1, segments: true, small: true });
  stream.complete(1000, 1000 + 555_000, 1, 1, 0);
  tally.absorb(stream);
  assert.deepEqual(tally.segments, [2, 1, 0, 0, 0, 1, 0, 0, 0, 3]);
  assert.equal(tally.segments.reduce((a, b) => a + b), tally.completed);
  assert.equal(new Tally(window, { requestSize: 1, responseSize: 1 }).segments, undefined);
});
