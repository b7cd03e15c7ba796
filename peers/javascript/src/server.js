// The server role (docs/peer-protocol.md "Lifecycle"): load --cert and --key, bind exactly
// --listen, print `ready`, serve until SHUTDOWN or the end of stdin, then print `stopped` with
// the server's counters. START or any other line while serving is a protocol error.
import { readCommands } from './commands.js';
import { Failure, code, emit, phase, setPhase } from './protocol.js';
import { ServerCounters } from './stacks/native.js';
import { readPem } from './tls.js';

async function start(stack, options) {
  if (stack === 'grpc') return (await import('./stacks/grpc.js')).startGrpcServer(options);
  if (stack === 'quic') return (await import('./stacks/quic.js')).startQuicServer(options);
  return (await import('./stacks/tcp.js')).startTcpServer(options);
}

export async function runServer(config) {
  setPhase(phase.STARTUP);
  const certPem = readPem('--cert', config.cert, 'cert');
  const keyPem = readPem('--key', config.key, 'key');
  const counters = new ServerCounters();
  setPhase(phase.LISTEN);
  let server;
  try {
    server = await start(config.stack, { listen: config.listen, certPem, keyPem, counters });
  } catch (e) {
    const listen = config.listen.host.includes(':') ? `[${config.listen.host}]:${config.listen.port}` : `${config.listen.host}:${config.listen.port}`;
    throw new Failure(phase.LISTEN, code.CONFIG, `--listen ${listen}: cannot bind: ${e?.message ?? e}`);
  }
  emit({ event: 'ready', role: 'server', address: server.address, pid: process.pid });
  setPhase(phase.SERVE);
  await new Promise((resolve, reject) => {
    let stopping = false;
    readCommands((command) => {
      if (stopping) return;
      if (command === 'SHUTDOWN') {
        stopping = true;
        Promise.race([server.close(), new Promise((r) => setTimeout(r, 1000).unref())])
          .catch(() => {})
          .then(() => {
            emit({ event: 'stopped', counters: counters.toEvent() });
            resolve();
          });
      } else {
        stopping = true;
        const what = command === 'START' ? 'START sent to a server' : `unknown command ${JSON.stringify(command.unknown)}`;
        reject(new Failure(phase.SERVE, code.PROTOCOL, `${what}: a server takes only SHUTDOWN`));
      }
    });
  });
}
