// The server role (docs/peer-protocol.md "Lifecycle"): load --cert and --key (none with
// --tls off), bind exactly
// --listen, print `ready`, serve until SHUTDOWN or the end of stdin, then print `stopped` with
// the server's counters. WINDOW START and WINDOW END (revision 1.2) are answered at once with a
// `window` event carrying the counters so far; START or any other line while serving is a
// protocol error.
import { describeCommand, readCommands, windowEdge } from './commands.js';
import { Failure, code, emit, phase, setPhase, warn } from './protocol.js';
import { ServerCounters } from './stacks/native.js';
import { readPem } from './tls.js';

async function start(stack, options) {
  if (stack === 'grpc') return (await import('./stacks/grpc.js')).startGrpcServer(options);
  if (stack === 'quic') return (await import('./stacks/quic.js')).startQuicServer(options);
  if (stack === 'connect') return (await import('./stacks/connect-server.js')).startConnectServer(options);
  const webSocket = stack.endsWith('-ws');
  if (stack === 'orpc-openapi') return (await import('./stacks/openapi.js')).startOpenApiServer(options);
  if (stack === 'hono-rest') return (await import('./stacks/hono.js')).startHonoServer(options);
  if (stack.startsWith('orpc-')) return (await import('./stacks/orpc.js')).startOrpcServer({ ...options, webSocket });
  if (stack.startsWith('trpc-')) return (await import('./stacks/trpc.js')).startTrpcServer({ ...options, webSocket });
  return (await import('./stacks/tcp.js')).startTcpServer(options);
}

export async function runServer(config) {
  setPhase(phase.STARTUP);
  // --tls off (1.3): plaintext, no certificate (the argument parser refused --cert and --key).
  const plaintext = config.tls === 'off';
  const certPem = plaintext ? undefined : readPem('--cert', config.cert, 'cert');
  const keyPem = plaintext ? undefined : readPem('--key', config.key, 'key');
  const counters = new ServerCounters();
  const fault = config.conformanceFault;
  if (fault !== undefined) warn(`CONFORMANCE FAULT ${fault}: this server misbehaves on every call; never measure with it`);
  setPhase(phase.LISTEN);
  let server;
  try {
    server = await start(config.stack, { listen: config.listen, plaintext, certPem, keyPem, counters, fault });
  } catch (e) {
    const listen = config.listen.host.includes(':') ? `[${config.listen.host}]:${config.listen.port}` : `${config.listen.host}:${config.listen.port}`;
    throw new Failure(phase.LISTEN, code.CONFIG, `--listen ${listen}: cannot bind: ${e?.message ?? e}`);
  }
  emit({ event: 'ready', role: 'server', address: server.address, pid: process.pid });
  setPhase(phase.SERVE);
  await new Promise((resolve, reject) => {
    readCommands(serveCommands(server, counters, resolve, reject));
  });
}

/**
 * The serve state's answer to each stdin line: a window command prints a `window` event at once
 * and serving goes on; SHUTDOWN closes the server (within 1 s), prints `stopped` and resolves;
 * START or any other line rejects with a protocol error. Lines after SHUTDOWN are ignored.
 */
export function serveCommands(server, counters, resolve, reject) {
  let stopping = false;
  return (command) => {
    if (stopping) return;
    const edge = windowEdge(command);
    if (edge !== undefined) {
      emit({ event: 'window', edge, ...counters.fields() });
    } else if (command === 'SHUTDOWN') {
      stopping = true;
      Promise.race([server.close(), new Promise((r) => setTimeout(r, 1000).unref())])
        .catch(() => {})
        .then(() => {
          emit({ event: 'stopped', ...counters.fields() });
          resolve();
        });
    } else {
      stopping = true;
      const what = command === 'START' ? 'START sent to a server' : describeCommand(command);
      reject(new Failure(phase.SERVE, code.PROTOCOL, `${what}: a server takes only SHUTDOWN, WINDOW START and WINDOW END`));
    }
  };
}
