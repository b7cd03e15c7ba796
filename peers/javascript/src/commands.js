// Commands on stdin (docs/peer-protocol.md): one per line, START, SHUTDOWN, and (servers,
// revision 1.2) WINDOW START and WINDOW END, surrounding whitespace ignored, the two words of a
// window command separated by one space; end of stdin means SHUTDOWN; any other line is a
// protocol error. The handler gets one of COMMANDS ('SHUTDOWN' also at end of stdin) or
// {unknown: line}, with the time the line was read (so START's t0 is taken as soon as it
// arrives). Which commands a role takes is the role's business.
import { nowNs } from './clock.js';

/** Every command a peer may be sent; window commands go only to servers. */
export const COMMANDS = Object.freeze(['START', 'SHUTDOWN', 'WINDOW START', 'WINDOW END']);

/** The `edge` of a window command's `window` event: 'start' or 'end'; undefined for the others. */
export function windowEdge(command) {
  return command === 'WINDOW START' ? 'start' : command === 'WINDOW END' ? 'end' : undefined;
}

/** Classifies one line of stdin. */
export function parseCommand(line) {
  const text = line.trim();
  if (COMMANDS.includes(text)) return text;
  return { unknown: text };
}

/** What a command is, for a protocol error's message. */
export function describeCommand(command) {
  return typeof command === 'string' ? command : `unknown command ${JSON.stringify(command.unknown)}`;
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
