// stdin commands (docs/peer-protocol.md "Rules that apply everywhere", "Lifecycle"): how a line
// is classified, and what a serving server answers to each command, window commands included.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { parseCommand, readCommands, windowEdge } from '../src/commands.js';
import { Failure, setSink } from '../src/protocol.js';
import { serveCommands } from '../src/server.js';
import { ServerCounters } from '../src/stacks/native.js';

test('lines are classified with surrounding whitespace ignored, one space inside a window command', () => {
  assert.equal(parseCommand('  START \r'), 'START');
  assert.equal(parseCommand('SHUTDOWN'), 'SHUTDOWN');
  assert.equal(parseCommand('\tWINDOW START  '), 'WINDOW START');
  assert.equal(parseCommand('WINDOW END'), 'WINDOW END');
  assert.deepEqual(parseCommand('WINDOW  START'), { unknown: 'WINDOW  START' });
  assert.deepEqual(parseCommand('window end'), { unknown: 'window end' });
  assert.deepEqual(parseCommand('WINDOW'), { unknown: 'WINDOW' });
  assert.equal(windowEdge('WINDOW START'), 'start');
  assert.equal(windowEdge('WINDOW END'), 'end');
  assert.equal(windowEdge('START'), undefined);
  assert.equal(windowEdge({ unknown: 'WINDOW MIDDLE' }), undefined);
});

test('readCommands delivers split lines in order and SHUTDOWN at the end of input', () => {
  const input = new PassThrough();
  const got = [];
  readCommands((c) => got.push(c), input);
  input.write('WINDOW ST');
  input.write('ART\nWINDOW END\nWINDOW END\n');
  input.end('SHUTDOWN');
  return new Promise((resolve) => setImmediate(() => {
    assert.deepEqual(got, ['WINDOW START', 'WINDOW END', 'WINDOW END', 'SHUTDOWN', 'SHUTDOWN']);
    resolve();
  }));
});

/** A serving server's command handler with its events captured; `server.close` is `close`. */
function serving(close = async () => {}) {
  const events = [];
  setSink((line) => events.push(JSON.parse(line)));
  const counters = new ServerCounters();
  let handle;
  const done = new Promise((resolve, reject) => {
    handle = serveCommands({ close }, counters, resolve, reject);
  });
  return { events, counters, handle, done };
}

test('window commands print the counters so far at once, any number in any order, and serving goes on', async () => {
  const { events, counters, handle, done } = serving();
  handle('WINDOW END');
  counters.rpcs = 3;
  counters.requests = 12;
  counters.responses = 12;
  handle('WINDOW START');
  counters.rpcs = 5;
  counters.commands = 2;
  counters.reject('request 1: seq 7, expected 1\n(the second line)');
  counters.reject('a later rejection is not the first');
  handle('WINDOW START');
  handle('WINDOW END');
  const first = 'request 1: seq 7, expected 1 (the second line)';
  const later = { rpcs: '5', requests: '12', responses: '12', commands: '2', rejected: '2' };
  assert.deepEqual(events, [
    { protocol: 1, event: 'window', edge: 'end', counters: { rpcs: '0', requests: '0', responses: '0', commands: '0', rejected: '0' } },
    { protocol: 1, event: 'window', edge: 'start', counters: { rpcs: '3', requests: '12', responses: '12', commands: '0', rejected: '0' } },
    { protocol: 1, event: 'window', edge: 'start', counters: later, first_rejection: first },
    { protocol: 1, event: 'window', edge: 'end', counters: later, first_rejection: first },
  ]);
  for (const e of events) assert.equal(e.allocations ?? e.allocated_bytes, undefined, 'no allocation counters declared');
  handle('SHUTDOWN');
  handle('WINDOW END');
  await done;
  assert.equal(events.length, 5, 'nothing after SHUTDOWN but stopped');
  assert.deepEqual(events[4], { protocol: 1, event: 'stopped', counters: later, first_rejection: first });
});

test('START and unknown lines end a serving server with a protocol error; a window command does not', async () => {
  for (const [line, pattern] of [['START', /^START sent to a server/], [{ unknown: 'WINDOW  END' }, /^unknown command "WINDOW  END"/]]) {
    const { events, handle, done } = serving();
    handle('WINDOW START');
    handle(line);
    await assert.rejects(done, (e) => e instanceof Failure && e.phase === 'serve' && e.code === 'protocol' && pattern.test(e.message));
    assert.deepEqual(events.map((e) => e.event), ['window']);
  }
});
