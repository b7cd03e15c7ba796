import test from 'node:test';
import assert from 'node:assert/strict';
import { TurnBudget } from '../src/stacks/quic.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('TurnBudget: the first call after a turn never waits; a run past the budget waits one turn', async () => {
  let now = 0;
  const budget = new TurnBudget(() => now, 1_000);
  assert.equal(budget.maybe(), undefined); // starts a run at 0
  now = 999;
  assert.equal(budget.maybe(), undefined);
  now = 1_000;
  const wait = budget.maybe();
  assert.ok(wait instanceof Promise);
  await wait;
  // the loop came round: a new run starts, however late it is
  now = 5_000;
  assert.equal(budget.maybe(), undefined);
  now = 5_500;
  assert.equal(budget.maybe(), undefined);
  await turn();
  now = 100_000;
  assert.equal(budget.maybe(), undefined); // idle in between: no wait
});
