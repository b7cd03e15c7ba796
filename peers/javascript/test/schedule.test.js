import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Arrivals, Xoshiro128, leadNs, splitmix64 } from '../src/engine/schedule.js';

test('splitmix64 and xoshiro128** match their reference outputs', () => {
  let state = 0n;
  const out = [];
  for (let i = 0; i < 3; i++) {
    let z;
    [state, z] = splitmix64(state);
    out.push(z.toString(16));
  }
  assert.deepEqual(out, ['e220a8397b1dcdaf', '6e789e6aa1b965f4', '6c45d188009454f']);
  const rng = new Xoshiro128(0n);
  rng.s.set([1, 2, 3, 4]);
  assert.deepEqual([rng.nextU32(), rng.nextU32(), rng.nextU32()], [11520, 0, 5927040]);
});

test('constant arrivals are t0 + floor(i x 1e9 / R) and number ceil(window x R / 1e9)', () => {
  const a = new Arrivals({ t0: 1000, deadline: 1000 + 5e9, rate: 1000, arrival: 'constant', seed: 0n });
  const starts = [];
  for (let t = a.next(); t >= 0; t = a.next()) starts.push(t);
  assert.equal(starts.length, 5000);
  assert.equal(starts[0], 1000);
  assert.equal(starts[4999], 1000 + 4_999_000_000);
  const odd = new Arrivals({ t0: 0, deadline: 1e9, rate: 3, arrival: 'constant', seed: 0n });
  assert.deepEqual([odd.next(), odd.next(), odd.next(), odd.next()], [0, 333333333, 666666666, -1]);
});

test('poisson arrivals repeat with a seed, differ across seeds, and keep the mean rate', () => {
  const draw = (seed) => {
    const a = new Arrivals({ t0: 0, deadline: 10e9, rate: 1000, arrival: 'poisson', seed });
    const starts = [];
    for (let t = a.next(); t >= 0; t = a.next()) starts.push(t);
    return starts;
  };
  const one = draw(42n);
  assert.deepEqual(draw(42n), one);
  assert.notDeepEqual(draw(43n).slice(0, 10), one.slice(0, 10));
  assert.equal(one[0], 0);
  assert.ok(Math.abs(one.length - 10_000) < 400, `${one.length} arrivals in 10 s at 1000/s`);
  for (let i = 1; i < one.length; i++) assert.ok(one[i] >= one[i - 1]);
});

test('the hand-over lead is 150 us up to 1,333/s and a fifth of the gap above', () => {
  assert.equal(leadNs(1000), 150_000);
  assert.equal(leadNs(10_000), 20_000);
});
