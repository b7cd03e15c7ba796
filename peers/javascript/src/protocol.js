// The peer protocol's vocabulary (docs/peer-protocol.md): events on stdout, phases, error codes,
// and the Failure that ends a peer with an `error` event.

export const PROTOCOL = 1;
export const REVISION = '1.4';

export const phase = Object.freeze({
  STARTUP: 'startup',
  LISTEN: 'listen',
  CONNECT: 'connect',
  VALIDATE: 'validate',
  WARMUP: 'warmup',
  ARMED: 'armed',
  MEASURE: 'measure',
  DRAIN: 'drain',
  SERVE: 'serve',
  SHUTDOWN: 'shutdown',
});

export const code = Object.freeze({
  CONFIG: 'config',
  TLS: 'tls',
  CONNECT: 'connect',
  RPC: 'rpc',
  INVALID: 'invalid',
  TIMEOUT: 'timeout',
  PROTOCOL: 'protocol',
  INTERNAL: 'internal',
});

/** A failure of the peer as a whole: printed as an `error` event, then the peer exits. */
export class Failure extends Error {
  constructor(phaseName, codeName, message) {
    super(message);
    this.phase = phaseName;
    this.code = codeName;
  }

  /** Exit code: 2 for a startup configuration error, 1 for any other. */
  get exitCode() {
    return this.phase === phase.STARTUP && this.code === code.CONFIG ? 2 : 1;
  }
}

/** A failed operation (counted in a sample, or ending validation or warmup). */
export class OpError extends Error {
  constructor(codeName, message) {
    super(message);
    this.code = codeName;
  }
}

let currentPhase = 'startup';

/** The lifecycle phase the peer is in (for errors nobody caught). */
export function setPhase(name) {
  currentPhase = name;
}

export function getPhase() {
  return currentPhase;
}

/** Largest JSON line the protocol allows (before the newline). */
export const MAX_LINE = 1024 * 1024;

let sink = (line) => process.stdout.write(line);

/** Redirects events (tests). */
export function setSink(fn) {
  sink = fn;
}

/**
 * Prints one event as one JSON line. On Linux, writes to a pipe or file from process.stdout are
 * synchronous, so every line is flushed before this returns.
 */
export function emit(event) {
  const line = JSON.stringify({ protocol: PROTOCOL, ...event });
  if (Buffer.byteLength(line) > MAX_LINE) {
    process.stderr.write(`rpcarena-peer-javascript: a ${event.event} event is longer than 1 MiB\n`);
  }
  sink(`${line}\n`);
}

/** One diagnostic line on stderr. */
export function warn(message) {
  process.stderr.write(`rpcarena-peer-javascript: ${message}\n`);
}

/** A message on one line (events carry one line of text). */
export function oneLine(text) {
  return String(text).replace(/\s*\n\s*/g, ' ').trim();
}
