// rpcarena-peer-javascript: an rpcarena peer (docs/peer-protocol.md, revision 1.3) on Node.js.
//
//   rpcarena-peer-javascript capabilities
//   rpcarena-peer-javascript server --stack S --listen HOST:PORT [--tls on] --cert FILE --key FILE
//   rpcarena-peer-javascript server --stack S --listen HOST:PORT --tls off
//   rpcarena-peer-javascript client --stack S --server HOST:PORT [--tls on] --server-name NAME --ca FILE ...
//   rpcarena-peer-javascript client --stack S --server HOST:PORT --tls off ...
//
// stdout carries only events; diagnostics go to stderr. Exit codes: 0 after `stopped` or
// `capabilities`, 2 after a startup configuration error, 1 after any other error.
import { ArgError, parseArgs } from './args.js';
import { Failure, code, emit, getPhase, oneLine, phase } from './protocol.js';

function fail(failure) {
  emit({ event: 'error', phase: failure.phase, code: failure.code, message: oneLine(failure.message) });
  process.exit(failure.exitCode);
}

function internal(error) {
  const detail = error?.stack ?? String(error);
  process.stderr.write(`rpcarena-peer-javascript: internal error: ${detail}\n`);
  fail(new Failure(getPhase(), code.INTERNAL, `internal error: ${error?.message ?? error}`));
}

async function main(argv) {
  const [role, ...rest] = argv;
  if (role === 'capabilities') {
    if (rest.length > 0) throw new Failure(phase.STARTUP, code.CONFIG, `capabilities takes no arguments, got ${JSON.stringify(rest[0])}`);
    const { capabilities } = await import('./capabilities.js');
    emit(capabilities());
    process.exit(0);
  }
  if (role !== 'server' && role !== 'client') {
    throw new Failure(phase.STARTUP, code.CONFIG, `unknown command ${JSON.stringify(role ?? '')}: expected capabilities, server or client`);
  }
  let config;
  try {
    config = parseArgs(role, rest);
  } catch (e) {
    if (e instanceof ArgError) throw new Failure(phase.STARTUP, code.CONFIG, e.message);
    throw e;
  }
  if (role === 'server') {
    await (await import('./server.js')).runServer(config);
    process.exit(0);
  }
  await (await import('./client.js')).runClient(config);
}

process.on('uncaughtException', internal);
process.on('unhandledRejection', internal);
main(process.argv.slice(2)).catch((e) => (e instanceof Failure ? fail(e) : internal(e)));
