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
  refused(withArg('--shape', 'ping'), /--shape "ping": expected one of unary, client_stream, server_stream, bidi, send$/);
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
  refused([...withArg('--load', 'send-saturation'), '--streams', '2', '--settle-ms', '10'], /needs --shape client_stream or send, not unary/);
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

/** The client command with --tls off: without --ca and --server-name. */
const PLAIN = [...CLIENT.slice(0, 4), '--tls', 'off', ...CLIENT.slice(8)];

test('--tls off: no certificate arguments, each refused by name; --tls on (the default) requires them', () => {
  assert.deepEqual(CLIENT.slice(4, 8), ['--server-name', '127.0.0.1', '--ca', 'ca.pem']);
  const plain = parseArgs('client', PLAIN);
  assert.equal(plain.tls, 'off');
  assert.equal(plain.ca, undefined);
  assert.equal(parseArgs('client', CLIENT).tls, 'on');
  assert.equal(parseArgs('client', [...CLIENT, '--tls', 'on']).tls, 'on');
  refused([...PLAIN, '--ca', 'ca.pem'], /^--ca does not apply to --tls off$/);
  refused([...PLAIN, '--server-name', 'localhost'], /^--server-name does not apply to --tls off$/);
  refused([...CLIENT.slice(0, 4), '--tls', 'on', ...CLIENT.slice(8)], /--server-name is missing/);
  refused(withArg('--tls', 'maybe'), /--tls "maybe": expected one of on, off/);
  refused([...PLAIN, '--tls', 'off'], /--tls is given twice/);
  const server = ['--stack', 'tcp', '--listen', '127.0.0.1:0'];
  assert.equal(parseArgs('server', [...server, '--tls', 'off']).tls, 'off');
  refused([...server, '--tls', 'off', '--cert', 'c'], /^--cert does not apply to --tls off$/, 'server');
  refused([...server, '--tls', 'off', '--key', 'k'], /^--key does not apply to --tls off$/, 'server');
  refused(server, /--cert is missing/, 'server');
  refused([...server, '--tls', 'on', '--cert', 'c'], /--key is missing/, 'server');
});

test('quic refuses --tls off in both roles, naming why', () => {
  const quic = /^QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic$/;
  refused(['--stack', 'quic', '--listen', '127.0.0.1:0', '--tls', 'off'], quic, 'server');
  refused(PLAIN.map((v) => (v === 'grpc' ? 'quic' : v)), quic);
  assert.equal(parseArgs('client', withArg('--stack', 'quic')).tls, 'on');
});

test('--shape send: grpc only, with every load model; its response size is ignored', () => {
  const send = withArg('--shape', 'send');
  const c = parseArgs('client', withArg('--shape', 'send'));
  assert.equal(c.shape, 'send');
  assert.equal(c.responseSize, 0, 'a command asks for no response');
  for (const stack of ['quic', 'tcp']) {
    refused(send.map((v) => (v === 'grpc' ? stack : v)), new RegExp(`^--shape send does not apply to --stack ${stack}: the native framing answers every request`));
  }
  const sat = parseArgs('client', [...send.map((v) => (v === 'closed' ? 'send-saturation' : v)), '--streams', '8', '--settle-ms', '200']);
  assert.deepEqual([sat.shape, sat.load, lanesOf(sat)], ['send', 'send-saturation', 8]);
  for (const [load, extra] of [['window', ['--in-flight', '4']], ['backpressure', ['--max-in-flight', '9']], ['open', ['--rate', '10']]]) {
    assert.equal(parseArgs('client', [...send.map((v) => (v === 'closed' ? load : v)), ...extra]).load, load);
  }
  // Structured: --response-size is ignored (0), --request-size is still checked.
  assert.equal(parseArgs('client', [...withArg('--shape', 'send').map((v, i, a) => (a[i - 1] === '--response-size' ? '1' : v)), '--payload', 'structured']).responseSize, 0);
  refused([...send.map((v, i, a) => (a[i - 1] === '--request-size' ? '2' : v)), '--payload', 'structured'], /--request-size 2 cannot be built/);
});

test('1.4: --payload dated only on the JSON stacks, unary, sizes 0; each refusal names the argument', () => {
  const dated = (stack, extra = {}) => {
    let argv = withArg('--stack', stack);
    for (const [name, value] of Object.entries({ '--payload': 'dated', '--request-size': '0', '--response-size': '0', ...extra })) {
      const i = argv.indexOf(name);
      argv = i >= 0 ? argv.map((v, k) => (k === i + 1 ? value : v)) : [...argv, name, value];
    }
    return argv;
  };
  for (const stack of ['orpc-http', 'orpc-ws', 'trpc-http', 'trpc-ws', 'orpc-openapi', 'hono-rest']) {
    assert.equal(parseArgs('client', dated(stack)).payload, 'dated');
  }
  refused(dated('grpc'), /--payload dated does not apply to --stack grpc/);
  refused(dated('tcp'), /--payload dated does not apply to --stack tcp/);
  refused(dated('orpc-http', { '--request-size': '8' }), /^--request-size 8 does not apply to --payload dated/);
  refused(dated('trpc-ws', { '--response-size': '1' }), /^--response-size 1 does not apply to --payload dated/);
  refused(dated('hono-rest', { '--shape': 'bidi' }), /--shape bidi does not apply to --stack hono-rest/);
  refused(withArg('--payload', 'dates'), /--payload "dates": expected one of zeros, structured, dated/);
  // The conformance fault client sends a wrong input with dated (corrupt-structured included).
  assert.equal(parseArgs('client', dated('orpc-openapi', { '--conformance-fault': 'corrupt-structured' })).conformanceFault, 'corrupt-structured');
});

test('1.4: --client-mode official on every client, replay on the JSON stacks\' only', () => {
  const mode = (stack, value) => [...withArg('--stack', stack), '--client-mode', value];
  assert.equal(parseArgs('client', mode('trpc-ws', 'replay')).clientMode, 'replay');
  assert.equal(parseArgs('client', mode('hono-rest', 'official')).clientMode, 'official');
  assert.equal(parseArgs('client', withArg('--stack', 'orpc-http')).clientMode, undefined);
  // official, the default, on every stack (protocol 1.4: absent client_modes means official).
  for (const stack of ['grpc', 'quic', 'tcp', 'connect']) assert.equal(parseArgs('client', mode(stack, 'official')).clientMode, 'official');
  refused(mode('quic', 'replay'), /--client-mode replay does not apply to --stack quic: its client takes official/);
  refused(mode('orpc-http', 'lean'), /--client-mode "lean": expected one of official, replay/);
  refused(['--stack', 'orpc-http', '--listen', '127.0.0.1:0', '--tls', 'off', '--client-mode', 'replay'], /unknown argument "--client-mode" for the server role/, 'server');
  refused([...mode('orpc-ws', 'replay'), '--conformance-fault', 'nonzero-byte'], /--conformance-fault does not apply to --client-mode replay/);
});
