// The send-saturation model (docs/peer-protocol.md): S client streams open for the whole window,
// each sending request messages as fast as the transport accepts them; at the deadline each
// ends its stream and the server's summary must confirm exactly what it sent. An operation is
// one message: `completed` counts the messages the summaries of completed streams confirmed.
import { code } from '../protocol.js';
import { Tally } from '../tally.js';
import { runLanes } from './lanes.js';

/**
 * One stream's admission of messages and its measurements (sans I/O: it is told the time). The
 * stack's `saturate(lane, sender)` asks `next(now)` for the seq of the next message (-1: end
 * the stream), calls `accepted(now)` when the transport took it, and `summaryReceived(now)`
 * once the summary checked out.
 */
export class StreamSender {
  constructor(window, tally) {
    this.deadline = window.deadline;
    this.tally = tally;
    this.opened = false;
    this.messageStart = undefined;
    this.sent = 0;
    this.closed = false;
  }

  /** Opening before the deadline admits the first message, so no stream is ever empty. */
  open(now) {
    if (now >= this.deadline) return false;
    this.opened = true;
    this.messageStart = now;
    return true;
  }

  next(now) {
    if (!this.opened) return -1;
    if (this.messageStart === undefined) {
      if (now >= this.deadline) return -1;
      this.messageStart = now;
    }
    return this.sent;
  }

  accepted(now) {
    if (this.closed) return;
    const start = this.messageStart ?? now;
    this.messageStart = undefined;
    this.sent++;
    this.tally.complete(start, now, now - start, 1, 0);
  }

  summaryReceived(now) {
    if (this.closed) return;
    this.tally.responses++;
    if (this.tally.lastEnd === undefined || now > this.tally.lastEnd) this.tally.lastEnd = now;
  }
}

/**
 * Runs `streams` streams through `window` (its hard deadline is deadline + min(settle, drain))
 * and adds what they counted to `tally`.
 */
export async function runSaturation({ driver, streams, window, tally, clock, bound = 'the settle bound' }) {
  const results = [];
  const run = async (lane) => {
    const own = new Tally(window, {
      requestSize: tally.requestSize,
      responseSize: tally.responseSize,
      intervals: tally.intervals !== undefined,
      segments: tally.segments !== undefined,
      small: true,
    });
    const sender = new StreamSender(window, own);
    const result = { sender, own, done: false, error: undefined };
    results.push(result);
    if (!sender.open(clock())) return;
    try {
      await driver.saturate(lane, sender, clock);
    } catch (e) {
      result.error = e;
      result.end = clock();
    }
    result.done = true;
  };
  const all = [];
  for (let lane = 0; lane < streams; lane++) all.push(run(lane));
  let timer;
  await Promise.race([
    Promise.all(all),
    new Promise((resolve) => {
      timer = setTimeout(resolve, Math.max(0, Math.ceil((window.hardDeadline - clock()) / 1e6)));
    }),
  ]);
  clearTimeout(timer);
  let opened = 0;
  let sent = 0;
  let received = 0;
  for (const { sender, own, done, error, end } of results) {
    sender.closed = true;
    if (!sender.opened) {
      own.destroy();
      continue;
    }
    opened++;
    sent += sender.sent;
    const lost = Math.max(sender.sent, 1);
    if (done && error === undefined) {
      received += sender.sent;
      tally.absorb(own);
    } else if (done) {
      tally.fail(end, error.code ?? code.INTERNAL, error.message, lost);
      own.destroy();
    } else {
      tally.fail(window.hardDeadline, code.TIMEOUT, `a stream that sent ${sender.sent} messages had no summary at ${bound}`, lost);
      own.destroy();
    }
  }
  return { maxInFlight: opened, sent, received };
}

/**
 * Send-saturation on `send` (1.3): `streams` lanes, each with one command in flight, the next
 * started the moment the previous one was acknowledged, while before the deadline; every command
 * is recorded as in the closed model and may take until the hard deadline (deadline +
 * min(settle, drain)). `sent` is every command started, completed or failed (each was handed
 * to the transport); there is no `received`: only the server counts what arrived.
 */
export async function runCommandSaturation({ driver, streams, window, tally, clock, bound = 'the settle bound' }) {
  const { maxInFlight } = await runLanes({ driver, lanes: streams, window, tally, clock, bound });
  return { maxInFlight, sent: tally.completed + tally.failed };
}
