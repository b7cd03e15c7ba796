import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ArgError, lanesOf, parseArgs } from '../src/args.js';

const CLIENT = ['--stack', 'grpc', '--server', '127.0.0.1:5000', '--server-name', '127.0.0.1', '--ca', 'ca.pem',
  '--shape', 'unary', '--concurrency', '4', '--request-size', '256', '--response-size', '256',
  '--messages-per-stream', '8', '--load', 'closed', '--warmup-ms', '0', '--window-ms', '1000', '--drain-ms', '500'];

function withArg(name, value) {
  const argv = [...CLIENT];
  const i = argv.indexOf(name);
  if (i >= 0) argv[i + 1] = value;
  else argv.push(name, value);
  return argv;
}

function refused(argv, pattern, role = 'client') {
  assert.throws(() => parseArgs(role, argv), (e) => e instanceof ArgError && pattern.test(e.message));
}

test('a complete client command parses, with defaults', () => {
  const c = parseArgs('client', CLIENT);
  assert.equal(c.stack, 'grpc');
  assert.deepEqual(c.server, { host: '127.0.0.1', port: 5000 });
  assert.equal(c.payload, 'zeros');
  assert.equal(lanesOf(c), 4);
  const ipv6 = parseArgs('client', withArg('--server', '[::1]:7'));
  assert.deepEqual(ipv6.server, { host: '::1', port: 7 });
});

test('unknown, missing, repeated and out-of-range arguments are refused by name', () => {
  refused([...CLIENT, '--bogus', '1'], /unknown argument "--bogus"/);
  refused(CLIENT.slice(2), /--stack is missing/);
  refused([...CLIENT, '--shape', 'bidi'], /--shape is given twice/);
  refused(withArg('--concurrency', '0'), /--concurrency 0 is out of range/);
  refused(withArg('--concurrency', '10001'), /--concurrency 10001 is out of range/);
  refused(withArg('--request-size', '16777217'), /--request-size/);
  refused(withArg('--window-ms', '0'), /--window-ms 0 is out of range/);
  refused(withArg('--stack', 'http3'), /--stack "http3"/);
  refused(withArg('--shape', 'pingpong'), /--shape pingpong: this client does not drive the pingpong shape/);
  refused(withArg('--shape', 'ping'), /--shape "ping": expected one of unary, client_stream, server_stream, bidi$/);
  refused(withArg('--server', 'localhost'), /--server "localhost": expected HOST:PORT/);
  refused([...CLIENT, '--concurrency'].slice(0, -1).concat(['--payload']), /--payload needs a value/);
});

test('model arguments belong to their model', () => {
  refused([...CLIENT, '--rate', '10'], /--rate does not apply to --load closed/);
  refused(withArg('--load', 'window'), /--in-flight is missing/);
  const open = parseArgs('client', [...withArg('--load', 'open'), '--rate', '2.5']);
  assert.equal(open.rate, 2.5);
  assert.equal(open.arrival, 'constant');
  assert.equal(open.seed, 0n);
  refused([...withArg('--load', 'open'), '--rate', '0'], /--rate "0"/);
  refused([...withArg('--load', 'open'), '--rate', '1', '--seed', '18446744073709551616'], /--seed/);
  refused([...withArg('--load', 'send-saturation'), '--streams', '2', '--settle-ms', '10'], /needs --shape client_stream/);
  const sat = parseArgs('client', [...withArg('--load', 'send-saturation'), '--streams', '3', '--settle-ms', '10'].map((v) => (v === 'unary' ? 'client_stream' : v)));
  assert.equal(lanesOf(sat), 3);
});

test('structured payloads of 1 or 2 bytes are refused', () => {
  refused([...withArg('--request-size', '2'), '--payload', 'structured'], /--request-size 2 cannot be built/);
  refused([...withArg('--response-size', '1'), '--payload', 'structured'], /--response-size 1/);
});

test('server arguments', () => {
  const s = parseArgs('server', ['--stack', 'quic', '--listen', '127.0.0.1:0', '--cert', 'c', '--key', 'k']);
  assert.deepEqual(s.listen, { host: '127.0.0.1', port: 0 });
  refused(['--stack', 'quic', '--listen', '127.0.0.1:0', '--cert', 'c'], /--key is missing/, 'server');
  refused(['--stack', 'quic', '--listen', '127.0.0.1:0', '--cert', 'c', '--key', 'k', '--ca', 'x'], /unknown argument "--ca"/, 'server');
});
