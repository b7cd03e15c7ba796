// Commands on stdin (docs/peer-protocol.md): one per line, START or SHUTDOWN (surrounding
// whitespace ignored); end of stdin means SHUTDOWN; any other line is a protocol error. The
// handler gets 'START', 'SHUTDOWN' (also at end of stdin) or {unknown: line}, with the time the
// line was read (so START's t0 is taken as soon as it arrives).
import { nowNs } from './clock.js';

/** Classifies one line of stdin. */
export function parseCommand(line) {
  const text = line.trim();
  if (text === 'START' || text === 'SHUTDOWN') return text;
  return { unknown: text };
}

/** Calls `handler(command, atNs)` for every command on `input` (process.stdin by default). */
export function readCommands(handler, input = process.stdin) {
  let buffered = '';
  let ended = false;
  input.setEncoding('utf8');
  input.on('data', (chunk) => {
    const at = nowNs();
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0 && !ended; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      handler(parseCommand(line), at);
    }
  });
  const end = () => {
    if (ended) return;
    ended = true;
    if (buffered.trim() !== '') handler(parseCommand(buffered), nowNs());
    handler('SHUTDOWN', nowNs());
  };
  input.on('end', end);
  input.on('close', end);
  input.on('error', end);
}
