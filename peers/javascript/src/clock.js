// The monotonic clock every measurement reads: nanoseconds since the process started, as a
// JavaScript number (exact for 104 days), from process.hrtime.bigint() (CLOCK_MONOTONIC).
/** The clock's origin (shared with the pacer thread, so both read the same numbers). */
export const BASE = process.hrtime.bigint();
const base = BASE;

/** Nanoseconds on the monotonic clock. */
export function nowNs() {
  return Number(process.hrtime.bigint() - base);
}

/** Resolves after `ms` milliseconds (a timer: about 1 ms granularity). */
export function sleepMs(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise and its resolve and reject functions. */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
