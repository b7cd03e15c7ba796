// The client role (docs/peer-protocol.md "Lifecycle"): connect, validate one operation, warm up
// with the configured load model, print `armed`, wait for START, run the admission window and
// the drain, print `sample`, wait for SHUTDOWN. stdin is read from the moment the client starts
// connecting: SHUTDOWN or its end stops the client at once in every state, a misplaced START or
// an unknown line is a protocol error of the current phase.
import { nowNs } from './clock.js';
import { describeCommand, readCommands, windowEdge } from './commands.js';
import { lanesOf } from './args.js';
import { Failure, code, emit, phase, setPhase, warn } from './protocol.js';
import { runBackpressure, runLanes } from './engine/lanes.js';
import { Pacer, runOpen } from './engine/open.js';
import { runCommandSaturation, runSaturation } from './engine/saturation.js';
import { Tally, Window } from './tally.js';
import { TransportPoller } from './transport.js';
import { KIND } from './workload.js';
import { readPem } from './tls.js';

const MS = 1_000_000;

async function createDriver(config, options) {
  if (config.stack === 'grpc') return new (await import('./stacks/grpc.js')).GrpcClient(options);
  if (config.stack === 'quic') return new (await import('./stacks/quic.js')).QuicClient(options);
  if (config.stack === 'connect') return new (await import('./stacks/connect-client.js')).ConnectClient(options);
  const webSocket = config.stack.endsWith('-ws');
  if (config.stack === 'orpc-openapi') return new (await import('./stacks/openapi.js')).OpenApiClient(options);
  if (config.stack === 'hono-rest') return new (await import('./stacks/hono.js')).HonoClient(options);
  if (config.stack.startsWith('orpc-')) return new (await import('./stacks/orpc.js')).OrpcClient(options, webSocket);
  if (config.stack.startsWith('trpc-')) return new (await import('./stacks/trpc.js')).TrpcClient(options, webSocket);
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
      if (config.shape === 'send') {
        const r = await runCommandSaturation({ driver, streams: config.streams, window, tally, clock, bound });
        return { load: 'send-saturation', maxInFlight: r.maxInFlight, sent: r.sent };
      }
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

/** What the stack's client needs from the arguments. */
function driverOptions(config) {
  // --tls off (1.3): plaintext, no CA and no name to check (the parser refused --ca and --server-name).
  const plaintext = config.tls === 'off';
  const caPem = plaintext ? undefined : readPem('--ca', config.ca, 'cert');
  const work = {
    shape: config.shape,
    kind: KIND[config.payload],
    requestSize: config.requestSize,
    responseSize: config.responseSize,
    messages: config.messagesPerStream,
    dated: config.payload === 'dated',
  };
  const clientMode = config.clientMode ?? 'official';
  return { server: config.server, plaintext, serverName: config.serverName, caPem, work, clientMode, lanes: lanesOf(config) };
}

/** A promise that never settles: the flow that awaits it is abandoned (stopping, or sampled). */
const abandoned = () => new Promise(() => {});

export async function runClient(config) {
  setPhase(phase.STARTUP);
  const options = driverOptions(config);
  const lifecycle = new ClientLifecycle(config, await createDriver(config, options), options.lanes);
  lifecycle.enter(phase.CONNECT);
  readCommands((command, at) => lifecycle.command(command, at));
  try {
    await lifecycle.run();
  } catch (e) {
    if (lifecycle.stopping) return abandoned();
    throw e;
  }
  // Wait for SHUTDOWN (handled by command).
  return abandoned();
}

/**
 * One client's states and the commands that move it: `run` goes from connect to sampled,
 * `command` answers each stdin line in whatever state the client is in.
 */
class ClientLifecycle {
  constructor(config, driver, lanes) {
    this.config = config;
    this.driver = driver;
    this.lanes = lanes;
    this.state = phase.CONNECT;
    this.startAt = undefined;
    this.onStart = undefined;
    // Once SHUTDOWN (or the end of stdin) arrived, the main flow is abandoned: closing the
    // driver makes its pending connect, operations or window fail, and none of that may print
    // an error or a sample before `stopped` (docs/peer-protocol.md "Lifecycle": stop at once,
    // exit 0).
    this.stopping = false;
  }

  enter(name) {
    this.state = name;
    setPhase(name);
  }

  /**
   * A stdin command: SHUTDOWN stops at once, START after armed starts, anything else (a window
   * command too: a client answers it as an unknown line) fails.
   */
  command(command, at) {
    const state = this.state;
    if (command === 'SHUTDOWN') {
      // Stop at once in every state; armed and sampled close their connections first.
      void this.closeAndExit(state === phase.ARMED || state === 'sampled' ? 1000 : 300);
      return;
    }
    const where = state === 'sampled' ? phase.SHUTDOWN : state;
    if (command === 'START' && state === phase.ARMED) {
      this.startAt = at;
      this.enter(phase.MEASURE);
      this.onStart?.();
      return;
    }
    let what = describeCommand(command);
    if (command === 'START') {
      what = state === 'sampled' ? 'a second START (one sample per client)' : `START before armed (in ${state})`;
    } else if (windowEdge(command) !== undefined) {
      what = `${command} sent to a client (window commands go to servers)`;
    }
    emit({ event: 'error', phase: where, code: code.PROTOCOL, message: what });
    process.exit(1);
  }

  /** Closes the driver (within `bound` ms), prints `stopped` and exits 0; errors are quiet. */
  async closeAndExit(bound) {
    if (this.stopping) return;
    this.stopping = true;
    const quiet = (e) => warn(`while stopping: ${e?.message ?? e}`);
    process.removeAllListeners('uncaughtException').on('uncaughtException', quiet);
    process.removeAllListeners('unhandledRejection').on('unhandledRejection', quiet);
    await Promise.race([this.driver.close().catch(() => {}), new Promise((r) => setTimeout(r, bound).unref())]);
    emit({ event: 'stopped' });
    process.exit(0);
  }

  /** Connect, validate, warm up, arm, then measure one window and print its sample. */
  async run() {
    const connectNs = await this.connect();
    if (this.config.conformanceFault !== undefined) return this.probe();
    await this.validate();
    const warmup = await this.warmup();
    const armed = await this.arm(connectNs, warmup);
    if (armed === undefined) return abandoned();
    await armed.started;
    return this.measure(armed.pacer);
  }

  /** Connects the stack's client; returns how long it took (ns). */
  async connect() {
    const c0 = nowNs();
    try {
      await this.driver.connect();
    } catch (e) {
      throw new Failure(phase.CONNECT, e.code ?? code.INTERNAL, e.message);
    }
    return nowNs() - c0;
  }

  /**
   * A conformance fault client (fault.js): instead of measuring, one malformed call the server
   * must refuse with BAD_REQUEST, then a well-formed one; `stopped` and exit 0 when both went as
   * they must, else an `error` in phase validate.
   */
  async probe() {
    const mode = this.config.conformanceFault;
    this.enter(phase.VALIDATE);
    warn(`CONFORMANCE FAULT ${mode}: sending a malformed call instead of measuring`);
    try {
      await this.driver.probe(mode);
    } catch (e) {
      if (this.stopping) return abandoned();
      throw new Failure(phase.VALIDATE, e.code ?? code.INTERNAL, e.message);
    }
    if (this.stopping) return abandoned();
    await this.closeAndExit(1000);
    return abandoned();
  }

  /** One operation that must succeed before anything is measured. */
  async validate() {
    this.enter(phase.VALIDATE);
    try {
      await this.driver.call(0, 0);
    } catch (e) {
      throw new Failure(phase.VALIDATE, e.code ?? code.INTERNAL, `the validation operation failed: ${e.message}`);
    }
  }

  /**
   * The warmup with the configured load model; returns its completed operations and, per tenth
   * of the warmup, those that completed in it (undefined without a warmup).
   */
  async warmup() {
    const config = this.config;
    this.enter(phase.WARMUP);
    if (!(config.warmupMs > 0)) return { completed: 0, segments: undefined };
    const pacer = config.load === 'open' ? new Pacer() : undefined;
    await pacer?.ready;
    const window = windowOf(config, nowNs(), config.warmupMs);
    const tally = new Tally(window, { requestSize: config.requestSize, responseSize: config.responseSize, open: config.load === 'open', segments: true });
    await runModel(config, this.driver, window, tally, "the warmup's drain bound", pacer);
    if (tally.failed > 0) {
      const { code: first, message } = tally.firstFailure;
      throw new Failure(phase.WARMUP, first, `${tally.failed} warmup operation(s) failed; the first: ${message}`);
    }
    const { completed, segments } = tally;
    tally.destroy();
    return { completed, segments };
  }

  /**
   * Prints `armed` with the open model's pacer thread already started (so that it is waiting
   * when the window opens); returns the pacer and the promise of START, or undefined when
   * SHUTDOWN came first.
   */
  async arm(connectNs, warmup) {
    const pacer = this.config.load === 'open' ? new Pacer() : undefined;
    await pacer?.ready;
    this.enter(phase.ARMED);
    const started = new Promise((resolve) => {
      this.onStart = resolve;
    });
    if (this.stopping) return undefined;
    const armed = {
      event: 'armed',
      lanes: this.lanes,
      connections: this.driver.connections,
      connect_ns: String(Math.round(connectNs)),
      warmup_completed: String(warmup.completed),
    };
    if (warmup.segments !== undefined) armed.warmup_segments = warmup.segments.map(String);
    emit(armed);
    return { pacer, started };
  }

  /** The window from START and its drain; prints the `sample`. */
  async measure(pacer) {
    const config = this.config;
    // Transport statistics: the reading when START arrives, polls through the window, the
    // reading after the drain (docs/peer-protocol.md "Transport statistics"; quic only).
    const poller = TransportPoller.start(this.driver);
    const window = windowOf(config, this.startAt, config.windowMs);
    const tally = new Tally(window, {
      requestSize: config.requestSize,
      responseSize: config.responseSize,
      intervals: true,
      open: config.load === 'open',
    });
    const model = await runModel(config, this.driver, window, tally, 'the drain bound', pacer);
    const transport = poller?.finish();
    if (this.stopping) return abandoned();
    const sample = tally.sample(config.windowMs, model);
    if (transport !== undefined) sample.transport = transport;
    emit(sample);
    this.enter('sampled');
    setPhase(phase.SHUTDOWN);
    if (tally.failed > 0) warn(`${tally.failed} operation(s) failed in the window; the first: ${tally.firstFailure.message}`);
  }
}
