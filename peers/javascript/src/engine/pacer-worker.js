// The open model's pacer thread (a worker_threads worker): it walks the schedule and posts each
// intended start to the event loop `lead` ns early. It sleeps with Atomics.wait (a condition
// variable with a sub-millisecond timeout, unlike the event loop's 1 ms timers) until 60 us
// before each hand-over and spins the rest. It is started before the window opens and waits for
// the window's parameters, so thread start-up never delays the first starts.
// Messages out: ['ready'], then [i, intended] per start, ['done', count].
import { parentPort, workerData } from 'node:worker_threads';
import { Arrivals } from './schedule.js';

const { base } = workerData;
const now = () => Number(process.hrtime.bigint() - base);
const cell = new Int32Array(new SharedArrayBuffer(4));
const SPIN_NS = 60_000;

parentPort.once('message', ({ t0, deadline, rate, arrival, seed, lead }) => {
  const arrivals = new Arrivals({ t0, deadline, rate, arrival, seed });
  let count = 0;
  for (let intended = arrivals.next(); intended >= 0; intended = arrivals.next()) {
    const handover = intended - lead;
    for (let t = now(); t < handover; t = now()) {
      const left = handover - t;
      if (left > SPIN_NS) Atomics.wait(cell, 0, 0, (left - SPIN_NS) / 1e6);
    }
    parentPort.postMessage([count, intended]);
    count++;
  }
  parentPort.postMessage(['done', count]);
});
parentPort.postMessage(['ready']);
