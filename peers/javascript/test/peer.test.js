// The peer as the controller sees it: a process with events on stdout and commands on stdin
// (docs/peer-protocol.md "Lifecycle"). Every stack against itself, loopback only.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { afterEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const PEER = fileURLToPath(new URL('../bin/rpcarena-peer-javascript', import.meta.url));
const FIX = (name) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

// Every peer a test started; one still running when its test ends (a failed assertion skipped
// its SHUTDOWN) is killed, or its open pipes would keep this file's process, and the run, alive.
const started = new Set();
afterEach(() => {
  for (const peer of started) {
    if (peer.child.exitCode === null && peer.child.signalCode === null) peer.child.kill('SIGKILL');
  }
  started.clear();
});

class Peer {
  constructor(args) {
    this.child = spawn(PEER, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    started.add(this);
    this.stderr = '';
    this.child.stderr.on('data', (d) => {
      this.stderr += d;
    });
    this.lines = [];
    this.waiters = [];
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const waiter = this.waiters.shift();
      if (waiter) waiter(line);
      else this.lines.push(line);
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** The next event (parsed), failing after `ms`. */
  async next(ms = 20_000) {
    const line = this.lines.length > 0
      ? this.lines.shift()
      : await Promise.race([
        new Promise((resolve) => this.waiters.push(resolve)),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`no event in ${ms} ms; stderr: ${this.stderr}`)), ms)),
      ]);
    const event = JSON.parse(line);
    assert.equal(event.protocol, 1);
    return event;
  }

  send(line) {
    this.child.stdin.write(`${line}\n`);
  }

  end() {
    this.child.stdin.end();
  }
}

function server(stack, extra = []) {
  return new Peer(['server', '--stack', stack, '--listen', '127.0.0.1:0', '--cert', FIX('ip.pem'), '--key', FIX('ip.key'), ...extra]);
}

/** A server with --tls off (1.3): no certificate. */
function plainServer(stack) {
  return new Peer(['server', '--stack', stack, '--listen', '127.0.0.1:0', '--tls', 'off']);
}

/** Client overrides for --tls off: no --server-name, no --ca. */
const PLAIN = Object.freeze({ '--tls': 'off', '--server-name': undefined, '--ca': undefined });

function client(stack, address, overrides = {}) {
  const args = {
    '--stack': stack, '--server': address, '--server-name': '127.0.0.1', '--ca': FIX('ca.pem'),
    '--shape': 'unary', '--concurrency': '2', '--request-size': '64', '--response-size': '64',
    '--messages-per-stream': '4', '--load': 'closed', '--warmup-ms': '50', '--window-ms': '300', '--drain-ms': '2000',
    ...overrides,
  };
  return new Peer(['client', ...Object.entries(args).filter(([, v]) => v !== undefined).flat()]);
}

async function expectError(peer, phase, code, exit) {
  const event = await peer.next();
  assert.equal(event.event, 'error', JSON.stringify(event));
  assert.deepEqual([event.phase, event.code], [phase, code], event.message);
  assert.equal(await peer.exited, exit);
  return event;
}

test('capabilities: one line, revision 1.4, every stack declared in both roles', async () => {
  const peer = new Peer(['capabilities']);
  const caps = await peer.next();
  assert.equal(await peer.exited, 0);
  assert.equal(caps.event, 'capabilities');
  assert.equal(caps.revision, '1.4');
  assert.equal(caps.language, 'javascript');
  assert.equal(caps.allocations, undefined, 'V8 counts no allocations');
  const json = ['orpc-http', 'orpc-ws', 'trpc-http', 'trpc-ws', 'orpc-openapi', 'hono-rest'];
  for (const role of ['client', 'server']) {
    assert.deepEqual(caps.roles[role].map((e) => e.stack), ['grpc', 'quic', 'tcp', ...json, 'connect']);
    for (const entry of caps.roles[role]) {
      const isJson = json.includes(entry.stack);
      // 1.4: the dated payload and the client modes on the JSON stacks only.
      assert.deepEqual(entry.payloads, isJson ? ['zeros', 'structured', 'dated'] : ['zeros', 'structured']);
      assert.deepEqual(entry.client_modes, isJson && role === 'client' ? ['official', 'replay'] : undefined);
      assert.ok(Array.isArray(entry.deviations) && typeof entry.settings.runtime === 'string');
      assert.equal(entry.load_models.length, role === 'client' ? 5 : 0);
      assert.deepEqual(entry.tls, entry.stack === 'quic' ? ['on'] : ['on', 'off']);
      if (isJson) {
        // oRPC and tRPC: unary and server streams; REST: unary only; every other shape with its
        // reason; conformance faults.
        const rest = ['orpc-openapi', 'hono-rest'].includes(entry.stack);
        assert.deepEqual(entry.shapes, rest ? ['unary'] : ['unary', 'server_stream']);
        const others = [...(rest ? ['server_stream'] : []), 'client_stream', 'bidi', ...(role === 'client' ? [] : ['pingpong']), 'send'];
        assert.deepEqual(Object.keys(entry.not_offered).sort(), others.sort());
        assert.equal(entry.conformance_faults, true);
        assert.equal(entry.settings.connections, '1 per lane');
        continue;
      }
      const shapes = ['unary', 'client_stream', 'server_stream', 'bidi'];
      const own = role === 'client' ? shapes : [...shapes, 'pingpong'];
      if (entry.stack === 'connect') {
        // Connect: every shape and send, one HTTP/2 connection, conformance faults.
        assert.deepEqual(entry.shapes, [...own, 'send']);
        assert.equal(entry.not_offered, undefined);
        assert.equal(entry.conformance_faults, true);
        assert.equal(entry.settings.connections, 1);
        continue;
      }
      // send (1.3) on grpc only; quic and tcp say why not, and quic takes only --tls on.
      assert.deepEqual(entry.shapes, entry.stack === 'grpc' ? [...own, 'send'] : own);
      assert.equal(entry.conformance_faults, undefined);
      if (entry.stack === 'grpc') assert.equal(entry.not_offered, undefined);
      else assert.match(entry.not_offered.send, /native framing answers every request/);
    }
  }
  assert.equal(peer.lines.length, 0);
});

test('bad arguments and unreadable files are config errors with exit 2', async () => {
  await expectError(new Peer(['client', '--stack', 'grpc']), 'startup', 'config', 2);
  await expectError(client('grpc', '127.0.0.1:1', { '--concurrency': '0' }), 'startup', 'config', 2);
  await expectError(client('grpc', '127.0.0.1:1', { '--ca': '/nonexistent/ca.pem' }), 'startup', 'config', 2);
  await expectError(server('grpc', ['--stack', 'quic']), 'startup', 'config', 2);
  const quic = await expectError(plainServer('quic'), 'startup', 'config', 2);
  assert.match(quic.message, /QUIC has TLS 1.3 inside/);
  const ca = await expectError(client('tcp', '127.0.0.1:1', { ...PLAIN, '--ca': FIX('ca.pem') }), 'startup', 'config', 2);
  assert.equal(ca.message, '--ca does not apply to --tls off');
  await expectError(client('tcp', '127.0.0.1:1', { '--shape': 'send' }), 'startup', 'config', 2);
  await expectError(new Peer(['nonsense']), 'startup', 'config', 2);
});

test('a server that cannot bind fails in listen with config, exit 1', async () => {
  const peer = new Peer(['server', '--stack', 'tcp', '--listen', '192.0.2.1:0', '--cert', FIX('ip.pem'), '--key', FIX('ip.key')]);
  await expectError(peer, 'listen', 'config', 1);
});

test('a server refuses START and unknown lines, and stops at the end of stdin', async () => {
  const a = server('tcp');
  assert.equal((await a.next()).event, 'ready');
  a.send('START');
  await expectError(a, 'serve', 'protocol', 1);
  const b = server('grpc');
  assert.equal((await b.next()).event, 'ready');
  b.send('HELLO');
  await expectError(b, 'serve', 'protocol', 1);
  const c = server('quic');
  assert.equal((await c.next()).event, 'ready');
  c.end();
  const stopped = await c.next();
  assert.equal(stopped.event, 'stopped');
  assert.equal(stopped.counters.rpcs, '0');
  assert.equal(await c.exited, 0);
});

for (const stack of ['grpc', 'quic', 'tcp']) {
  test(`${stack}: a whole sample between two JavaScript peers, the server's window, and a second START`, async () => {
    const s = server(stack);
    const ready = await s.next();
    assert.equal(ready.event, 'ready');
    assert.equal(ready.pid, s.child.pid);
    const c = client(stack, ready.address, { '--shape': 'bidi', '--payload': 'structured' });
    const armed = await c.next();
    assert.equal(armed.event, 'armed', JSON.stringify(armed));
    assert.equal(armed.lanes, 2);
    assert.equal(armed.connections, stack === 'tcp' ? 2 : 1);
    assert.equal(armed.warmup_segments.length, 10);
    assert.equal(armed.warmup_segments.reduce((sum, n) => sum + Number(n), 0), Number(armed.warmup_completed));
    // The server's window opens before the client's, so it covers every measured call. (The
    // controller sends WINDOW START right after START, docs/peer-protocol.md; this test's sum
    // holds only in this order: with START first, calls made before the server's answer fall
    // outside its window.)
    s.send('WINDOW START');
    const start = await s.next();
    c.send('START');
    const sample = await c.next();
    assert.equal(sample.event, 'sample');
    s.send('WINDOW END');
    const end = await s.next();
    assert.deepEqual([start.event, start.edge, end.event, end.edge], ['window', 'start', 'window', 'end']);
    assert.equal(sample.failed, '0');
    const completed = Number(sample.completed);
    assert.ok(Number(end.counters.rpcs) - Number(start.counters.rpcs) >= completed, `${JSON.stringify(start)} ${JSON.stringify(end)}`);
    for (const k of ['rpcs', 'requests', 'responses', 'rejected']) {
      assert.ok(Number(end.counters[k]) >= Number(start.counters[k]), k);
    }
    assert.ok(completed > 0);
    assert.equal(sample.requests, String(completed * 4));
    assert.equal(sample.response_bytes, String(completed * 4 * 64));
    assert.equal(sample.window_ns, '300000000');
    assert.equal(sample.intervals.length, 1);
    assert.equal(sample.intervals[0].completed, sample.completed);
    if (stack === 'quic') {
      // quiche's statistics through @matrixai/quic (src/transport.js); loopback: no losses.
      const t = sample.transport;
      assert.equal(t.transport, 'quic');
      assert.equal(t.connections, '1');
      assert.ok(Number(t.polls) >= 1, JSON.stringify(t));
      assert.ok(Number(t.packets_sent) > 0 && Number(t.bytes_sent) > Number(t.packets_sent), JSON.stringify(t));
      assert.ok(Number(t.cwnd_min_bytes) > 0 && Number(t.cwnd_min_bytes) <= Number(t.cwnd_mean_bytes), JSON.stringify(t));
      assert.ok(Object.values(t).every((v) => typeof v === 'string' && /^\d+$|^quic$/.test(v)), JSON.stringify(t));
    } else {
      assert.equal(sample.transport, undefined, 'grpc-js and node:tls expose no TCP_INFO');
    }
    c.send('START');
    await expectError(c, 'shutdown', 'protocol', 1);
    s.send('SHUTDOWN');
    const stopped = await s.next();
    assert.equal(stopped.event, 'stopped');
    assert.equal(stopped.counters.rejected, '0');
    assert.ok(Number(stopped.counters.rpcs) >= completed + 1);
    assert.ok(Number(stopped.counters.rpcs) >= Number(end.counters.rpcs));
    assert.equal(await s.exited, 0);
  });

  test(`${stack}: the wrong CA is a tls failure in connect`, async () => {
    const s = server(stack);
    const ready = await s.next();
    const c = client(stack, ready.address, { '--ca': FIX('other-ca.pem') });
    const error = await expectError(c, 'connect', 'tls', 1);
    assert.match(error.message, /TLS handshake with .* failed/);
    s.end();
    assert.equal(await s.exited, 0);
  });
}

test('client lifecycle: START before armed and WINDOW START while armed are protocol errors; SHUTDOWN while armed stops', async () => {
  const s = server('grpc');
  const ready = await s.next();
  const early = client('grpc', ready.address, { '--warmup-ms': '3000' });
  early.send('START');
  const error = await early.next();
  assert.equal(error.event, 'error');
  assert.equal(error.code, 'protocol');
  assert.ok(['connect', 'validate', 'warmup'].includes(error.phase), error.phase);
  assert.equal(await early.exited, 1);
  const windowed = client('grpc', ready.address);
  assert.equal((await windowed.next()).event, 'armed');
  windowed.send('WINDOW START');
  const refused = await expectError(windowed, 'armed', 'protocol', 1);
  assert.match(refused.message, /WINDOW START sent to a client/);
  const armed = client('grpc', ready.address);
  assert.equal((await armed.next()).event, 'armed');
  armed.send('SHUTDOWN');
  assert.deepEqual(await armed.next(), { protocol: 1, event: 'stopped' });
  assert.equal(await armed.exited, 0);
  const measuring = client('grpc', ready.address, { '--window-ms': '10000' });
  assert.equal((await measuring.next()).event, 'armed');
  measuring.send('START');
  measuring.end();
  const started = Date.now();
  assert.equal((await measuring.next()).event, 'stopped');
  assert.ok(Date.now() - started < 1000, 'stops at once during the window');
  assert.equal(await measuring.exited, 0);
  s.send('SHUTDOWN');
  assert.equal((await s.next()).event, 'stopped');
});

test('quic client: SHUTDOWN while warming up and in the window stops at once, with nothing else printed', async () => {
  const s = server('quic');
  const ready = await s.next();
  const warming = client('quic', ready.address, { '--warmup-ms': '10000' });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  warming.send('SHUTDOWN');
  assert.deepEqual(await warming.next(), { protocol: 1, event: 'stopped' });
  assert.equal(await warming.exited, 0);
  const measuring = client('quic', ready.address, { '--window-ms': '10000' });
  assert.equal((await measuring.next()).event, 'armed');
  measuring.send('START');
  await new Promise((resolve) => setTimeout(resolve, 200));
  measuring.send('SHUTDOWN');
  const started = Date.now();
  assert.deepEqual(await measuring.next(), { protocol: 1, event: 'stopped' });
  assert.ok(Date.now() - started < 1000, 'stops at once during the window');
  assert.equal(await measuring.exited, 0);
  s.send('SHUTDOWN');
  assert.equal((await s.next()).event, 'stopped');
});

test('open, window, backpressure and send-saturation samples carry their fields', async () => {
  const s = server('tcp');
  const ready = await s.next();
  const cases = [
    [{ '--load': 'open', '--rate': '200', '--arrival': 'poisson', '--seed': '3' }, (e) => {
      assert.equal(e.target_rate, 200);
      assert.equal(typeof e.fell_behind, 'boolean');
      assert.ok(Number(e.offered) >= 50);
      assert.ok(e.uncorrected_histogram.startsWith('HISTFAAA') && e.send_lag_histogram.startsWith('HISTFAAA'));
    }],
    [{ '--load': 'window', '--in-flight': '3', '--concurrency': '3' }, (e) => assert.equal(e.max_in_flight, '3')],
    [{ '--load': 'backpressure', '--max-in-flight': '5' }, (e) => assert.ok(Number(e.max_in_flight) <= 2)],
    [{ '--load': 'send-saturation', '--streams': '2', '--settle-ms': '2000', '--shape': 'client_stream' }, (e) => {
      assert.equal(e.max_in_flight, '2');
      assert.equal(e.received, e.completed);
      assert.equal(e.sent, e.completed);
      assert.equal(e.responses, '2');
    }],
  ];
  for (const [overrides, check] of cases) {
    const c = client('tcp', ready.address, overrides);
    const armed = await c.next();
    assert.equal(armed.event, 'armed', JSON.stringify(armed));
    c.send('START');
    const sample = await c.next();
    assert.equal(sample.event, 'sample');
    assert.equal(sample.failed, '0', sample.first_failure);
    assert.equal(sample.load, overrides['--load']);
    check(sample);
    c.end();
    assert.equal((await c.next()).event, 'stopped');
  }
  s.end();
  assert.equal((await s.next()).event, 'stopped');
});

/**
 * One sample of `c` inside the server's window (WINDOW START before START, WINDOW END after the
 * sample); returns the sample and the server's counters over the window (end minus start).
 */
async function windowedSample(s, c) {
  const armed = await c.next();
  assert.equal(armed.event, 'armed', JSON.stringify(armed));
  s.send('WINDOW START');
  const start = await s.next();
  c.send('START');
  const sample = await c.next();
  assert.equal(sample.event, 'sample', JSON.stringify(sample));
  s.send('WINDOW END');
  const end = await s.next();
  assert.deepEqual([start.edge, end.edge], ['start', 'end']);
  const served = Object.fromEntries(Object.keys(end.counters).map((k) => [k, Number(end.counters[k]) - Number(start.counters[k])]));
  c.end();
  assert.equal((await c.next()).event, 'stopped');
  assert.equal(await c.exited, 0);
  return { armed, sample, served, end };
}

for (const stack of ['grpc', 'tcp']) {
  test(`${stack} --tls off: a plaintext sample between two JavaScript peers; a TLS client of it fails`, async () => {
    const s = plainServer(stack);
    const ready = await s.next();
    assert.equal(ready.event, 'ready');
    const c = client(stack, ready.address, { ...PLAIN, '--shape': 'bidi', '--payload': 'structured' });
    const { armed, sample, served } = await windowedSample(s, c);
    assert.equal(armed.connections, stack === 'tcp' ? 2 : 1);
    assert.equal(sample.failed, '0', sample.first_failure);
    const completed = Number(sample.completed);
    assert.ok(completed > 0);
    assert.equal(sample.requests, String(completed * 4));
    assert.equal(sample.response_bytes, String(completed * 4 * 64));
    assert.ok(served.rpcs >= completed && served.rejected === 0, JSON.stringify(served));
    // A TLS client never talks to the plaintext server (its handshake fails).
    const tls = client(stack, ready.address);
    const error = await tls.next();
    assert.equal(error.event, 'error', JSON.stringify(error));
    assert.ok(['connect', 'validate'].includes(error.phase) && ['tls', 'connect'].includes(error.code), JSON.stringify(error));
    assert.equal(await tls.exited, 1);
    s.send('SHUTDOWN');
    const stopped = await s.next();
    assert.equal(stopped.event, 'stopped');
    assert.equal(await s.exited, 0);
  });
}

test('tcp: a plaintext client of a TLS server fails (it does not hang)', async () => {
  const s = server('tcp');
  const ready = await s.next();
  const c = client('tcp', ready.address, PLAIN);
  const error = await c.next();
  assert.equal(error.event, 'error', JSON.stringify(error));
  assert.ok(['validate'].includes(error.phase) && ['connect', 'invalid'].includes(error.code), JSON.stringify(error));
  assert.equal(await c.exited, 1);
  s.end();
  assert.equal(await s.exited, 0);
});

test('grpc send: closed and send-saturation samples, counted by the server as commands', async () => {
  const s = server('grpc');
  const ready = await s.next();
  const closed = client('grpc', ready.address, { '--shape': 'send', '--response-size': '0', '--messages-per-stream': '1' });
  const one = await windowedSample(s, closed);
  assert.equal(one.sample.failed, '0', one.sample.first_failure);
  const completed = Number(one.sample.completed);
  assert.ok(completed > 0);
  assert.deepEqual([one.sample.requests, one.sample.responses, one.sample.request_bytes, one.sample.response_bytes], [String(completed), String(completed), String(completed * 64), '0']);
  assert.ok(one.served.commands >= completed, JSON.stringify(one.served));
  assert.equal(one.served.commands, one.served.rpcs);
  assert.equal(one.served.responses, one.served.commands, 'every Empty counts as a response message');
  const sat = client('grpc', ready.address, {
    '--shape': 'send', '--response-size': '0', '--load': 'send-saturation', '--streams': '3', '--settle-ms': '500', '--payload': 'structured',
  });
  const { armed, sample, served } = await windowedSample(s, sat);
  assert.equal(armed.lanes, 3);
  assert.equal(sample.failed, '0', sample.first_failure);
  assert.equal(sample.load, 'send-saturation');
  assert.equal(sample.max_in_flight, '3');
  assert.equal(sample.sent, sample.completed);
  assert.equal(sample.received, undefined, 'only the server knows what arrived');
  assert.equal(sample.responses, sample.completed);
  assert.equal(sample.response_bytes, '0');
  assert.equal(sample.intervals[0].completed, sample.completed);
  assert.ok(served.commands >= Number(sample.completed), JSON.stringify(served));
  s.send('SHUTDOWN');
  const stopped = await s.next();
  assert.equal(stopped.counters.rejected, '0');
  assert.equal(stopped.first_rejection, undefined);
  assert.ok(Number(stopped.counters.commands) >= completed + Number(sample.completed));
  assert.equal(await s.exited, 0);
});

// 1.4: the dated payload in both client modes, and the REST stacks, as processes.
for (const [stack, mode, tls] of [['trpc-ws', 'replay', true], ['orpc-http', 'replay', false], ['hono-rest', 'official', false], ['orpc-openapi', 'replay', true]]) {
  test(`${stack} --payload dated --client-mode ${mode}${tls ? '' : ' --tls off'}: a sample, its calls counted by the server`, async () => {
    const s = tls ? server(stack) : plainServer(stack);
    const ready = await s.next();
    const c = client(stack, ready.address, {
      ...(tls ? {} : PLAIN), '--payload': 'dated', '--client-mode': mode, '--request-size': '0', '--response-size': '0',
    });
    const { armed, sample, served } = await windowedSample(s, c);
    assert.equal(armed.connections, 2);
    assert.equal(sample.failed, '0', sample.first_failure);
    const completed = Number(sample.completed);
    assert.ok(completed > 0);
    assert.deepEqual([sample.requests, sample.responses, sample.request_bytes, sample.response_bytes], [String(completed), String(completed), '0', '0']);
    assert.ok(served.rpcs >= completed && served.rejected === 0, JSON.stringify(served));
    s.send('SHUTDOWN');
    assert.equal((await s.next()).counters.rejected, '0');
    assert.equal(await s.exited, 0);
  });
}

test('1.4: a dated client refuses sizes other than 0 and stacks without dated; --client-mode only where offered', async () => {
  const sizes = await expectError(client('trpc-http', '127.0.0.1:1', { '--payload': 'dated', '--request-size': '0' }), 'startup', 'config', 2);
  assert.match(sizes.message, /^--response-size 64 does not apply to --payload dated/);
  const grpc = await expectError(client('grpc', '127.0.0.1:1', { '--payload': 'dated', '--request-size': '0', '--response-size': '0' }), 'startup', 'config', 2);
  assert.match(grpc.message, /--payload dated does not apply to --stack grpc/);
  const mode = await expectError(client('tcp', '127.0.0.1:1', { '--client-mode': 'replay' }), 'startup', 'config', 2);
  assert.match(mode.message, /--client-mode replay does not apply to --stack tcp/);
});
