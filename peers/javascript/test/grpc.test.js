// The grpc server's validation duty, in process: malformed calls get INVALID_ARGUMENT and the
// server keeps serving well-formed ones.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http2 from 'node:http2';
import { test } from 'node:test';
import grpc from '@grpc/grpc-js';
import { GrpcClient, SERVICE, startGrpcServer } from '../src/stacks/grpc.js';
import { ServerCounters } from '../src/stacks/native.js';
import { KIND, request, responseTo } from '../src/workload.js';

const fixture = (name) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

/**
 * This peer's grpc server on a free loopback port, and a connected client of it doing `work`;
 * `plaintext`: both without TLS (--tls off).
 */
async function serverAndClient(work, plaintext = false) {
  const counters = new ServerCounters();
  const tls = plaintext ? {} : { certPem: fixture('ip.pem'), keyPem: fixture('ip.key') };
  const server = await startGrpcServer({ listen: { host: '127.0.0.1', port: 0 }, plaintext, ...tls, counters });
  const port = Number(server.address.split(':')[1]);
  const trust = plaintext ? {} : { serverName: '127.0.0.1', caPem: fixture('ca.pem') };
  const client = new GrpcClient({ server: { host: '127.0.0.1', port }, plaintext, ...trust, work });
  try {
    await client.connect();
  } catch (e) {
    await client.close();
    await server.close();
    throw e;
  }
  return { counters, server, client, port };
}

test('the grpc server refuses malformed calls with INVALID_ARGUMENT and serves on', async () => {
  const work = { shape: 'unary', kind: KIND.zeros, requestSize: 8, responseSize: 8, messages: 3 };
  const { counters, server, client: good } = await serverAndClient(work);
  const raw = good.client;
  const unary = (message) => new Promise((resolve) => raw.Unary(message, (err) => resolve(err)));
  const stream = (method, messages) => new Promise((resolve) => {
    const call = method === 'ClientStream' ? raw.ClientStream((err) => resolve(err)) : raw.Bidi();
    if (method === 'Bidi') {
      call.on('data', () => {});
      call.on('error', () => {});
      call.on('status', (s) => resolve(s.code === 0 ? null : s));
    }
    for (const m of messages) call.write(m);
    call.end();
  });
  const cases = [
    [await unary({ seq: 1, payload: Buffer.from([0, 0, 1]) }), /byte 2/],
    [await unary({ seq: 1, responseSize: 16 * 1024 * 1024 + 1 }), /above the maximum/],
    [await stream('ClientStream', []), /at least one request/],
    [await stream('ClientStream', [request(KIND.zeros, 0, 4, 4, 0), request(KIND.zeros, 2, 4, 4, 0)]), /seq 2, expected 1/],
    [await stream('Bidi', [request(KIND.zeros, 0, 4, 4, 0), request(KIND.zeros, 1, 5, 4, 0)]), /payload length 5/],
    [await new Promise((resolve) => {
      const call = raw.ServerStream({ seq: 1, responseMessages: 0 });
      call.on('data', () => {});
      call.on('error', () => {});
      call.on('status', (s) => resolve(s));
    }), /response_messages 0/],
  ];
  for (const [err, pattern] of cases) {
    assert.equal(err?.code, grpc.status.INVALID_ARGUMENT, JSON.stringify(err?.details));
    assert.match(err.details, pattern);
  }
  assert.equal(counters.rejected, cases.length);
  for (const shape of ['unary', 'client_stream', 'server_stream', 'bidi']) {
    for (const kind of [KIND.zeros, KIND.structured]) {
      good.work = { ...work, shape, kind, requestSize: 64, responseSize: 64 };
      assert.ok(await good.call(0, 5));
    }
  }
  await good.close();
  await server.close();
});

test('a grpc unary call answered with two responses fails with invalid (it does not hang)', async () => {
  const server = new grpc.Server();
  const twice = { Unary: { ...SERVICE.Unary, responseStream: true } };
  server.addService(twice, {
    Unary(call) {
      const response = responseTo(call.request, call.request.seq);
      call.write(response);
      call.write(response);
      call.end();
    },
  });
  const credentials = grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(fixture('ip.pem')), private_key: Buffer.from(fixture('ip.key')) }]);
  const port = await new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (e, p) => (e ? reject(e) : resolve(p))));
  const work = { shape: 'unary', kind: KIND.zeros, requestSize: 8, responseSize: 8, messages: 1 };
  const client = new GrpcClient({ server: { host: '127.0.0.1', port }, serverName: '127.0.0.1', caPem: fixture('ca.pem'), work });
  try {
    await client.connect();
    const failure = await Promise.race([
      client.call(0, 5).then(() => null, (e) => e),
      new Promise((resolve) => setTimeout(() => resolve('hung'), 5000)),
    ]);
    assert.notEqual(failure, 'hung');
    assert.equal(failure?.code, 'invalid', failure?.message);
    assert.match(failure.message, /more than the 1 responses/);
  } finally {
    await client.close();
    server.forceShutdown();
  }
});

test('pingpong: the grpc bidi handler answers each request before the next one is sent', async () => {
  const work = { shape: 'bidi', kind: KIND.structured, requestSize: 64, responseSize: 80, messages: 8 };
  const { counters, server, client } = await serverAndClient(work);
  try {
    const call = client.client.Bidi();
    const responses = [];
    let arrived;
    call.on('data', (r) => {
      responses.push(r);
      arrived?.();
    });
    const status = new Promise((resolve) => call.on('status', resolve));
    call.on('error', () => {});
    for (let i = 0; i < work.messages; i++) {
      const next = new Promise((resolve) => {
        arrived = resolve;
      });
      call.write(request(KIND.structured, i, 64, 80, 0));
      const late = new Promise((resolve) => setTimeout(() => resolve('late'), 2000));
      assert.notEqual(await Promise.race([next, late]), 'late', `no response ${i} within 2 s of request ${i}`);
      assert.equal(responses.length, i + 1);
      assert.equal(Number(responses[i].seq), i);
    }
    call.end();
    assert.equal((await status).code, grpc.status.OK);
    assert.deepEqual([counters.requests, counters.responses, counters.rejected], [8, 8, 0]);
  } finally {
    await client.close();
    await server.close();
  }
});

/** A Command call of the raw client, resolving to its error (null when acknowledged). */
function command(raw, message) {
  const { path, requestSerialize, responseDeserialize } = SERVICE.Command;
  return new Promise((resolve) => raw.makeUnaryRequest(path, requestSerialize, responseDeserialize, message, (err) => resolve(err)));
}

test('send: the grpc server validates a Command as a unary request with response_size 0, counts it and says what it rejected first', { timeout: 20_000 }, async () => {
  const work = { shape: 'send', kind: KIND.zeros, requestSize: 16, responseSize: 0, messages: 1 };
  const { counters, server, client } = await serverAndClient(work);
  try {
    const cases = [
      [{ seq: 1, payload: Buffer.from([0, 0, 0, 9]) }, /request: payload byte 3 is 0x09, expected zero/],
      [{ seq: 2, responseSize: 5 }, /response_size 5, expected 0/],
      [{ seq: 3, payloadKind: 7 }, /payload_kind 7/],
      [request(KIND.structured, 4, 40, 0, 0), null],
    ];
    const bad = request(KIND.structured, 4, 40, 0, 0);
    bad.body.title = `X${bad.body.title.slice(1)}`;
    cases.push([bad, /title/]);
    for (const [message, pattern] of cases) {
      const err = await command(client.client, message);
      if (pattern === null) {
        assert.equal(err, null);
        continue;
      }
      assert.equal(err?.code, grpc.status.INVALID_ARGUMENT, JSON.stringify(err?.details));
      assert.match(err.details, pattern);
    }
    for (let seq = 0; seq < 5; seq++) assert.deepEqual(await client.call(0, seq), { requests: 1, responses: 1 });
    assert.deepEqual([counters.rpcs, counters.requests, counters.responses, counters.commands, counters.rejected], [10, 10, 6, 6, 4]);
    assert.match(counters.fields().first_rejection, /^request: payload byte 3 is 0x09/);
    assert.equal(counters.fields().counters.commands, '6');
  } finally {
    await client.close();
    await server.close();
  }
});

test('send: a Command acknowledged twice or with an error status fails the client (invalid, rpc)', { timeout: 20_000 }, async () => {
  const server = new grpc.Server();
  let mode = 'twice';
  server.addService({ Command: { ...SERVICE.Command, responseStream: true } }, {
    Command(call) {
      if (mode === 'error') {
        call.emit('error', { code: grpc.status.INTERNAL, details: 'broken on purpose' });
        return;
      }
      call.write({});
      call.write({});
      call.end();
    },
  });
  const port = await new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  const work = { shape: 'send', kind: KIND.zeros, requestSize: 8, responseSize: 0, messages: 1 };
  const client = new GrpcClient({ server: { host: '127.0.0.1', port }, plaintext: true, work });
  try {
    await client.connect();
    const twice = await client.call(0, 1).then(() => null, (e) => e);
    assert.equal(twice?.code, 'invalid', twice?.message);
    assert.match(twice.message, /more than one Empty/);
    mode = 'error';
    const failed = await client.call(0, 2).then(() => null, (e) => e);
    assert.equal(failed?.code, 'rpc', failed?.message);
    assert.match(failed.message, /status 13 .*broken on purpose/);
  } finally {
    await client.close();
    server.forceShutdown();
  }
});

test('plaintext (--tls off): every shape and payload kind over h2c, with the same HTTP/2 settings as with TLS', { timeout: 20_000 }, async () => {
  const work = { shape: 'unary', kind: KIND.zeros, requestSize: 64, responseSize: 64, messages: 3 };
  const { counters, server, client, port } = await serverAndClient(work, true);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const remoteSettings = new Promise((resolve, reject) => {
    session.once('remoteSettings', resolve);
    session.once('error', reject);
  });
  try {
    for (const shape of ['unary', 'client_stream', 'server_stream', 'bidi', 'send']) {
      for (const kind of [KIND.zeros, KIND.structured]) {
        client.work = { ...work, shape, kind, responseSize: shape === 'send' ? 0 : 64 };
        assert.ok(await client.call(0, 5), `${shape} ${kind}`);
      }
    }
    assert.deepEqual([counters.commands, counters.rejected], [2, 0]);
    // A plain node:http2 client with prior knowledge reads the server's SETTINGS.
    const settings = await remoteSettings;
    assert.equal(settings.initialWindowSize, 16 * 1024 * 1024);
    assert.equal(settings.maxConcurrentStreams, 10_000);
    assert.equal(settings.maxFrameSize, 16384);
  } finally {
    session.destroy();
    await client.close();
    await server.close();
  }
});

test('plaintext: a TLS client of a plaintext server fails in connect (tls or connect), it does not hang', { timeout: 20_000 }, async () => {
  const counters = new ServerCounters();
  const server = await startGrpcServer({ listen: { host: '127.0.0.1', port: 0 }, plaintext: true, counters });
  const port = Number(server.address.split(':')[1]);
  const work = { shape: 'unary', kind: KIND.zeros, requestSize: 8, responseSize: 8, messages: 1 };
  const tls = new GrpcClient({ server: { host: '127.0.0.1', port }, serverName: '127.0.0.1', caPem: fixture('ca.pem'), work });
  try {
    const failure = await Promise.race([
      tls.connect().then(() => null, (e) => e),
      new Promise((resolve) => setTimeout(() => resolve('hung'), 10_000)),
    ]);
    assert.notEqual(failure, null, 'a TLS client must not connect to a plaintext server');
    assert.notEqual(failure, 'hung');
    assert.ok(['tls', 'connect'].includes(failure.code), failure.message);
  } finally {
    await tls.close();
    await server.close();
  }
});
