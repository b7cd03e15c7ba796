// Command-line arguments (docs/peer-protocol.md "Commands"): `--name value` pairs in any order;
// an unknown, missing, repeated or out-of-range argument is refused with a message that names
// it. Pure: returns a configuration or throws ArgError; reading files is the caller's job.
import net from 'node:net';
import { MAX_MESSAGES, MAX_PAYLOAD, PAYLOADS, SERVER_SHAPES, SHAPES } from './workload.js';
import { CLIENT_MODES, DATED, JSON_STACKS, NOT_OFFERED, SEND, STACKS, TLS_MODES, TLS_OFF_REFUSED, clientModesOf, payloadsOf, shapesOf } from './offer.js';
import { CLIENT_FAULTS, FAULT_STACKS, SERVER_FAULTS, clientFaultRefusal } from './fault.js';

export { STACKS };
export const LOAD_MODELS = Object.freeze(['closed', 'window', 'backpressure', 'send-saturation', 'open']);
/** This peer opens at most this many send-saturation streams (the Rust peer's limit too). */
export const MAX_STREAMS = 1000;
const MAX_MS = 2 ** 32 - 1;
const MAX_U64 = 2n ** 64n - 1n;

export class ArgError extends Error {}

function integer(name, text, min, max) {
  if (!/^[0-9]+$/.test(text)) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: expected a whole decimal number from ${min} to ${max}`);
  }
  const value = Number(text);
  if (value < min || value > max) {
    throw new ArgError(`${name} ${text} is out of range: expected ${min} to ${max}`);
  }
  return value;
}

function oneOf(name, text, choices) {
  if (!choices.includes(text)) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: expected one of ${choices.join(', ')}`);
  }
  return text;
}

/** Every shape a client of some stack drives (which stack offers which: offer.js). */
const CLIENT_SHAPES = Object.freeze([...SHAPES, SEND]);

/** A client shape; the shapes only servers answer (pingpong) are refused with a reason. */
function shape(name, text) {
  if (SERVER_SHAPES.includes(text) && !CLIENT_SHAPES.includes(text)) {
    throw new ArgError(`${name} ${text}: this client does not drive the ${text} shape (its servers answer it); expected one of ${CLIENT_SHAPES.join(', ')}`);
  }
  return oneOf(name, text, CLIENT_SHAPES);
}

function rate(name, text) {
  const value = /^[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : NaN;
  if (!(value > 0 && value <= 10_000_000)) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: expected a decimal number above 0 and at most 10000000`);
  }
  return value;
}

function seed(name, text) {
  if (!/^[0-9]+$/.test(text) || BigInt(text) > MAX_U64) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: expected a whole decimal number from 0 to 2^64-1`);
  }
  return BigInt(text);
}

function nonEmpty(name, text) {
  if (text.length === 0) throw new ArgError(`${name}: expected a value, got an empty string`);
  return text;
}

/**
 * HOST:PORT with an IPv4 address, a bracketed IPv6 address or a name. `minPort` is 0 for
 * --listen (any free port) and 1 for --server.
 */
export function hostPort(name, text, minPort) {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):([0-9]+)$/.exec(text);
  if (!match) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: expected HOST:PORT (IPv6 as [ADDRESS]:PORT)`);
  }
  const host = match[1] ?? match[2];
  if (match[1] !== undefined && net.isIPv6(host) === false) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: ${host} is not an IPv6 address`);
  }
  const port = integer(`${name} port`, match[3], minPort, 65535);
  return { host, port };
}

function serverName(name, text) {
  if (net.isIP(text)) return text;
  if (!/^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/.test(text)) {
    throw new ArgError(`${name} ${JSON.stringify(text)}: expected a DNS name or an IP address`);
  }
  return text;
}

const ms = (name, text) => integer(name, text, 0, MAX_MS);

/**
 * Every argument: how to parse it, and which roles, load models (`model`) and `--tls` values
 * (`tls`) take it.
 */
const SPEC = {
  '--stack': { roles: ['server', 'client'], parse: (n, t) => oneOf(n, t, STACKS) },
  '--tls': { roles: ['server', 'client'], optional: true, parse: (n, t) => oneOf(n, t, ['on', 'off']) },
  '--listen': { roles: ['server'], parse: (n, t) => hostPort(n, t, 0) },
  '--cert': { roles: ['server'], tls: 'on', parse: nonEmpty },
  '--key': { roles: ['server'], tls: 'on', parse: nonEmpty },
  '--server': { roles: ['client'], parse: (n, t) => hostPort(n, t, 1) },
  '--server-name': { roles: ['client'], tls: 'on', parse: serverName },
  '--ca': { roles: ['client'], tls: 'on', parse: nonEmpty },
  '--shape': { roles: ['client'], parse: shape },
  '--concurrency': { roles: ['client'], parse: (n, t) => integer(n, t, 1, 10_000) },
  '--request-size': { roles: ['client'], parse: (n, t) => integer(n, t, 0, MAX_PAYLOAD) },
  '--response-size': { roles: ['client'], parse: (n, t) => integer(n, t, 0, MAX_PAYLOAD) },
  '--messages-per-stream': { roles: ['client'], parse: (n, t) => integer(n, t, 1, MAX_MESSAGES) },
  '--load': { roles: ['client'], parse: (n, t) => oneOf(n, t, LOAD_MODELS) },
  '--payload': { roles: ['client'], optional: true, parse: (n, t) => oneOf(n, t, [...PAYLOADS, DATED]) },
  '--client-mode': { roles: ['client'], optional: true, parse: (n, t) => oneOf(n, t, CLIENT_MODES) },
  '--warmup-ms': { roles: ['client'], parse: ms },
  '--window-ms': { roles: ['client'], parse: (n, t) => integer(n, t, 1, MAX_MS) },
  '--drain-ms': { roles: ['client'], parse: ms },
  '--in-flight': { roles: ['client'], model: 'window', parse: (n, t) => integer(n, t, 1, 100_000) },
  '--max-in-flight': { roles: ['client'], model: 'backpressure', parse: (n, t) => integer(n, t, 1, 1_000_000) },
  '--streams': { roles: ['client'], model: 'send-saturation', parse: (n, t) => integer(n, t, 1, MAX_STREAMS) },
  '--settle-ms': { roles: ['client'], model: 'send-saturation', parse: ms },
  '--rate': { roles: ['client'], model: 'open', parse: rate },
  '--arrival': { roles: ['client'], model: 'open', optional: true, parse: (n, t) => oneOf(n, t, ['constant', 'poisson']) },
  '--seed': { roles: ['client'], model: 'open', optional: true, parse: seed },
  // Conformance faults (fault.js): hidden, never for measuring.
  '--conformance-fault': { roles: ['server', 'client'], optional: true, parse: nonEmpty },
};

function camel(name) {
  return name.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

/** Parses the arguments after the role word. */
export function parseArgs(role, argv) {
  const values = new Map();
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    const spec = SPEC[name];
    if (spec === undefined || !spec.roles.includes(role)) {
      throw new ArgError(`unknown argument ${JSON.stringify(name)} for the ${role} role`);
    }
    if (values.has(name)) throw new ArgError(`${name} is given twice`);
    if (i + 1 >= argv.length) throw new ArgError(`${name} needs a value`);
    values.set(name, spec.parse(name, argv[i + 1]));
  }
  const load = values.get('--load');
  const tls = values.get('--tls') ?? 'on';
  for (const [name, spec] of Object.entries(SPEC)) {
    if (!spec.roles.includes(role)) continue;
    if (spec.tls !== undefined && spec.tls !== tls && values.has(name)) {
      throw new ArgError(`${name} does not apply to --tls ${tls}`);
    }
    if (spec.model !== undefined && spec.model !== load && values.has(name)) {
      throw new ArgError(`${name} does not apply to --load ${load ?? '(missing)'}`);
    }
    const applies = (spec.model === undefined || spec.model === load) && (spec.tls === undefined || spec.tls === tls);
    if (applies && !spec.optional && !values.has(name)) throw new ArgError(`${name} is missing`);
  }
  const config = { role, tls };
  for (const [name, value] of values) config[camel(name)] = value;
  checkStack(config);
  if (role === 'client') return clientDefaults(config);
  return config;
}

/** What the chosen stack cannot do: run without TLS (quic), carry a shape it does not offer. */
function checkStack(config) {
  if (!TLS_MODES[config.stack].includes(config.tls)) {
    throw new ArgError(TLS_OFF_REFUSED[config.stack] ?? `--tls ${config.tls} does not apply to --stack ${config.stack}`);
  }
  if (config.role === 'client' && !shapesOf(config.stack, 'client').includes(config.shape)) {
    const why = NOT_OFFERED[config.stack][config.shape] ?? 'not offered';
    throw new ArgError(`--shape ${config.shape} does not apply to --stack ${config.stack}: ${why}`);
  }
  if (config.role === 'client') checkClientOffer(config);
  if (config.conformanceFault !== undefined) checkFault(config);
}

/** The payload kind (1.4: dated) and the client mode (1.4) a client asks of its stack. */
function checkClientOffer(config) {
  if (config.payload !== undefined && !payloadsOf(config.stack).includes(config.payload)) {
    throw new ArgError(`--payload ${config.payload} does not apply to --stack ${config.stack}: the dated payload is carried only by the JSON stacks (${JSON_STACKS.join(', ')})`);
  }
  // Every client takes `official` (the default; a stack without client_modes offers it alone).
  const modes = clientModesOf(config.stack) ?? ['official'];
  if (config.clientMode !== undefined && !modes.includes(config.clientMode)) {
    throw new ArgError(`--client-mode ${config.clientMode} does not apply to --stack ${config.stack}: its client takes ${modes.join(', ')} (replay: ${JSON_STACKS.join(', ')})`);
  }
  if (config.clientMode === 'replay' && config.shape !== 'unary') {
    throw new ArgError(`--shape ${config.shape} does not apply to --client-mode replay: replay repeats one captured unary call (a server stream takes --client-mode official)`);
  }
  if (config.payload === DATED) {
    if (config.shape !== 'unary') throw new ArgError(`--shape ${config.shape} does not apply to --payload dated: the dated procedure is unary only`);
    for (const [flag, name] of [['--request-size', 'requestSize'], ['--response-size', 'responseSize']]) {
      if (config[name] !== 0) throw new ArgError(`${flag} ${config[name]} does not apply to --payload dated: its input and answer are fixed, so the size must be 0`);
    }
  }
}

/** A conformance fault mode: only on FAULT_STACKS, a mode of the role, a shape it applies to. */
function checkFault(config) {
  const mode = config.conformanceFault;
  if (!FAULT_STACKS.includes(config.stack)) {
    throw new ArgError(`--conformance-fault does not apply to --stack ${config.stack}: this peer implements the faults only on ${FAULT_STACKS.join(', ')}`);
  }
  const modes = config.role === 'server' ? SERVER_FAULTS : Object.keys(CLIENT_FAULTS);
  if (!modes.includes(mode)) {
    throw new ArgError(`--conformance-fault ${JSON.stringify(mode)}: expected one of ${modes.join(', ')}`);
  }
  const refusal = config.role === 'client' ? clientFaultRefusal(mode, config.shape, config.payload ?? 'zeros') : undefined;
  if (refusal !== undefined) throw new ArgError(refusal);
  if (config.clientMode === 'replay') {
    throw new ArgError('--conformance-fault does not apply to --client-mode replay: the fault client sends its malformed call through the official client');
  }
}

function clientDefaults(config) {
  config.payload ??= 'zeros';
  if (config.load === 'open') {
    config.arrival ??= 'constant';
    config.seed ??= 0n;
  }
  if (config.load === 'send-saturation' && config.shape !== 'client_stream' && config.shape !== SEND) {
    throw new ArgError(`--load send-saturation needs --shape client_stream or send, not ${config.shape}`);
  }
  // A one-way command asks for no response: --response-size is ignored with --shape send
  // (docs/peer-protocol.md "Shapes"), so requests carry response_size 0 and no response bytes count.
  if (config.shape === SEND) config.responseSize = 0;
  if (config.payload === 'structured') {
    for (const name of ['requestSize', 'responseSize']) {
      if (config[name] === 1 || config[name] === 2) {
        const flag = name === 'requestSize' ? '--request-size' : '--response-size';
        throw new ArgError(`${flag} ${config[name]} cannot be built as a structured payload: use 0 or at least 3`);
      }
    }
  }
  return config;
}

/** The model's lanes: --in-flight (window), --streams (send-saturation), else --concurrency. */
export function lanesOf(config) {
  if (config.load === 'window') return config.inFlight;
  if (config.load === 'send-saturation') return config.streams;
  return config.concurrency;
}
