// The client role (docs/peer-protocol.md "Lifecycle"): connect, validate one operation, warm up
// with the configured load model, print `armed`, wait for START, run the admission window and
// the drain, print `sample`, wait for SHUTDOWN. stdin is read from the moment the client starts
// connecting: SHUTDOWN or its end stops the client at once in every state, a misplaced START or
// an unknown line is a protocol error of the current phase.
import { nowNs } from './clock.js';
import { readCommands } from './commands.js';
import { lanesOf } from './args.js';
import { Failure, code, emit, phase, setPhase, warn } from './protocol.js';
import { runBackpressure, runLanes } from './engine/lanes.js';
import { Pacer, runOpen } from './engine/open.js';
import { runSaturation } from './engine/saturation.js';
import { Tally, Window } from './tally.js';
import { TransportPoller } from './transport.js';
import { KIND } from './workload.js';
import { readPem } from './tls.js';

const MS = 1_000_000;

async function createDriver(config, options) {
  if (config.stack === 'grpc') return new (await import('./stacks/grpc.js')).GrpcClient(options);
  if (config.stack === 'quic') return new (await import('./stacks/quic.js')).QuicClient(options);
  return new (await import('./stacks/tcp.js')).TcpClient(options);
}

/** Runs the configured load model over `window`; returns the model's own sample fields. */
export async function runModel(config, driver, window, tally, bound, pacer) {
  const clock = nowNs;
  switch (config.load) {
    case 'closed':
      await runLanes({ driver, lanes: config.concurrency, window, tally, clock, bound });
      return { load: 'closed' };
    case 'window': {
      const { maxInFlight } = await runLanes({ driver, lanes: config.inFlight, window, tally, clock, bound });
      return { load: 'window', maxInFlight };
    }
    case 'backpressure': {
      const { maxInFlight } = await runBackpressure({ driver, maxInFlight: config.maxInFlight, window, tally, clock, bound });
      return { load: 'backpressure', maxInFlight };
    }
    case 'send-saturation': {
      const r = await runSaturation({ driver, streams: config.streams, window, tally, clock, bound });
      return { load: 'send-saturation', maxInFlight: r.maxInFlight, sent: r.sent, received: r.received };
    }
    default: {
      const r = await runOpen({
        driver,
        lanes: config.concurrency,
        window,
        tally,
        clock,
        rate: config.rate,
        arrival: config.arrival,
        seed: config.seed,
        pacer,
        bound,
      });
      return { load: 'open', ...r };
    }
  }
}

/** A window of `lengthMs`, with the drain (send-saturation: min(settle, drain)). */
function windowOf(config, t0, lengthMs) {
  const drainMs = config.load === 'send-saturation' ? Math.min(config.settleMs, config.drainMs) : config.drainMs;
  return new Window(t0, lengthMs * MS, drainMs * MS);
}

export async function runClient(config) {
  setPhase(phase.STARTUP);
  const caPem = readPem('--ca', config.ca, 'cert');
  const lanes = lanesOf(config);
  const work = {
    shape: config.shape,
    kind: KIND[config.payload],
    requestSize: config.requestSize,
    responseSize: config.responseSize,
    messages: config.messagesPerStream,
  };
  const driver = await createDriver(config, { server: config.server, serverName: config.serverName, caPem, work, lanes });

  let state = phase.CONNECT;
  let startAt;
  let onStart;
  const enter = (name) => {
    state = name;
    setPhase(name);
  };
  // Once SHUTDOWN (or the end of stdin) arrived, the main flow is abandoned: closing the driver
  // makes its pending connect, operations or window fail, and none of that may print an error or
  // a sample before `stopped` (docs/peer-protocol.md "Lifecycle": stop at once, exit 0).
  let stopping = false;
  const abandoned = () => new Promise(() => {});
  const closeAndExit = async (bound) => {
    if (stopping) return;
    stopping = true;
    const quiet = (e) => warn(`while stopping: ${e?.message ?? e}`);
    process.removeAllListeners('uncaughtException').on('uncaughtException', quiet);
    process.removeAllListeners('unhandledRejection').on('unhandledRejection', quiet);
    await Promise.race([driver.close().catch(() => {}), new Promise((r) => setTimeout(r, bound).unref())]);
    emit({ event: 'stopped' });
    process.exit(0);
  };
  enter(phase.CONNECT);
  readCommands((command, at) => {
    if (command === 'SHUTDOWN') {
      // Stop at once in every state; armed and sampled close their connections first.
      void closeAndExit(state === phase.ARMED || state === 'sampled' ? 1000 : 300);
      return;
    }
    const where = state === 'sampled' ? phase.SHUTDOWN : state;
    if (command === 'START' && state === phase.ARMED) {
      startAt = at;
      enter(phase.MEASURE);
      onStart?.();
      return;
    }
    const what = command === 'START'
      ? (state === 'sampled' ? 'a second START (one sample per client)' : `START before armed (in ${state})`)
      : `unknown command ${JSON.stringify(command.unknown)}`;
    emit({ event: 'error', phase: where, code: code.PROTOCOL, message: what });
    process.exit(1);
  });

  try {
    await measure();
  } catch (e) {
    if (stopping) return abandoned();
    throw e;
  }
  // Wait for SHUTDOWN (handled above).
  return abandoned();

  async function measure() {
    const c0 = nowNs();
    try {
      await driver.connect();
    } catch (e) {
      throw new Failure(phase.CONNECT, e.code ?? code.INTERNAL, e.message);
    }
    const connectNs = nowNs() - c0;

    enter(phase.VALIDATE);
    try {
      await driver.call(0, 0);
    } catch (e) {
      throw new Failure(phase.VALIDATE, e.code ?? code.INTERNAL, `the validation operation failed: ${e.message}`);
    }

    enter(phase.WARMUP);
    let warmupCompleted = 0;
    if (config.warmupMs > 0) {
      const pacer = config.load === 'open' ? new Pacer() : undefined;
      await pacer?.ready;
      const window = windowOf(config, nowNs(), config.warmupMs);
      const tally = new Tally(window, { requestSize: config.requestSize, responseSize: config.responseSize, open: config.load === 'open' });
      await runModel(config, driver, window, tally, "the warmup's drain bound", pacer);
      if (tally.failed > 0) {
        const { code: first, message } = tally.firstFailure;
        throw new Failure(phase.WARMUP, first, `${tally.failed} warmup operation(s) failed; the first: ${message}`);
      }
      warmupCompleted = tally.completed;
      tally.destroy();
    }

    // The open model's pacer thread starts now, so that it is waiting when the window opens.
    const pacer = config.load === 'open' ? new Pacer() : undefined;
    await pacer?.ready;
    enter(phase.ARMED);
    const started = new Promise((resolve) => {
      onStart = resolve;
    });
    if (stopping) return abandoned();
    emit({
      event: 'armed',
      lanes,
      connections: driver.connections,
      connect_ns: String(Math.round(connectNs)),
      warmup_completed: String(warmupCompleted),
    });
    await started;
    // Transport statistics: the reading when START arrives, polls through the window, the
    // reading after the drain (docs/peer-protocol.md "Transport statistics"; quic only).
    const poller = TransportPoller.start(driver);

    const window = windowOf(config, startAt, config.windowMs);
    const tally = new Tally(window, {
      requestSize: config.requestSize,
      responseSize: config.responseSize,
      intervals: true,
      open: config.load === 'open',
    });
    const model = await runModel(config, driver, window, tally, 'the drain bound', pacer);
    const transport = poller?.finish();
    if (stopping) return abandoned();
    const sample = tally.sample(config.windowMs, model);
    if (transport !== undefined) sample.transport = transport;
    emit(sample);
    enter('sampled');
    setPhase(phase.SHUTDOWN);
    if (tally.failed > 0) warn(`${tally.failed} operation(s) failed in the window; the first: ${tally.firstFailure.message}`);
  }
}
