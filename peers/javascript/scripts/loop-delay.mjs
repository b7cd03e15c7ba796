// Diagnosis only (README, "gRPC unary on regional-wan: where the p99 comes from"): preloaded
// with `node --import scripts/loop-delay.mjs src/main.js ...` (a two-line wrapper script as a
// campaign's peer command), it prints on stderr at exit the event loop's delay
// (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and V8's GC pauses (PerformanceObserver,
// kinds: 1 scavenge, 4 mark-compact, 8 incremental marking) over the process's whole life.
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
const gc = { n: 0, total: 0, max: 0, over5: 0, kinds: {} };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.n++; gc.total += e.duration; gc.max = Math.max(gc.max, e.duration);
    if (e.duration >= 5) gc.over5++;
    const k = e.detail?.kind ?? e.kind; gc.kinds[k] = (gc.kinds[k] ?? 0) + 1;
  }
}).observe({ entryTypes: ['gc'] });
process.on('exit', () => {
  const ms = (v) => (v / 1e6).toFixed(2);
  process.stderr.write(`eld: loop delay p50 ${ms(h.percentile(50))} p99 ${ms(h.percentile(99))} p99.9 ${ms(h.percentile(99.9))} max ${ms(h.max)} ms over ${h.count} samples; gc ${gc.n} pauses, total ${gc.total.toFixed(1)} ms, max ${gc.max.toFixed(2)} ms, ${gc.over5} >= 5 ms, kinds ${JSON.stringify(gc.kinds)}\n`);
});
