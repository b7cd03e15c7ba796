// The connect stack in process: the descriptors derived from build/bench.json (byte-identical
// encodings with protobufjs), calls of every shape with TLS and without, the wire as
// docs/stacks.md "connect" describes it (read by a plain node:http2 client), the server's
// validation duty and the client's (every conformance fault, both roles), a lock-step bidi
// stream, the HTTP/2 settings of both ends, and a TLS failure.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http2 from 'node:http2';
import { test } from 'node:test';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { ConnectClient } from '../src/stacks/connect-client.js';
import { startConnectServer } from '../src/stacks/connect-server.js';
import { BenchService, RequestSchema, ResponseSchema, requestInit, requestOf, responseOf, summaryInit, summaryOf } from '../src/stacks/connect-schema.js';
import { ServerCounters } from '../src/stacks/native.js';
import { Request, Response } from '../src/proto.js';
import { KIND, SummaryBuilder, request, responseTo, structured } from '../src/workload.js';
import { CLIENT_FAULTS, SERVER_FAULTS, clientFaultRefusal } from '../src/fault.js';
import { parseArgs } from '../src/args.js';

const fixture = (name) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const SHAPES = ['unary', 'client_stream', 'server_stream', 'bidi', 'send'];
const WORK = { shape: 'unary', kind: KIND.zeros, requestSize: 64, responseSize: 64, messages: 4 };

/** A connect server on a free loopback port and a connected client of it. */
async function serverAndClient({ plaintext = false, fault, work = WORK, caPem } = {}) {
  const counters = new ServerCounters();
  const tls = plaintext ? {} : { certPem: fixture('ip.pem'), keyPem: fixture('ip.key') };
  const server = await startConnectServer({ listen: { host: '127.0.0.1', port: 0 }, plaintext, ...tls, counters, fault });
  const port = Number(server.address.split(':')[1]);
  const trust = plaintext ? {} : { serverName: '127.0.0.1', caPem: caPem ?? fixture('ca.pem') };
  const client = new ConnectClient({ server: { host: '127.0.0.1', port }, plaintext, ...trust, work: { ...work } });
  try {
    await client.connect();
  } catch (e) {
    await client.close();
    await server.close();
    throw e;
  }
  return { counters, server, client, port };
}

test('descriptors: the service from build/bench.json, encodings byte-identical with protobufjs', () => {
  assert.deepEqual(
    BenchService.methods.map((m) => [m.name, m.methodKind]),
    [['Unary', 'unary'], ['ClientStream', 'client_streaming'], ['ServerStream', 'server_streaming'], ['Bidi', 'bidi_streaming'], ['Command', 'unary']],
  );
  for (const kind of [KIND.zeros, KIND.structured]) {
    for (const size of [0, 3, 64, 301, 5000]) {
      const req = request(kind, 123_456_789, size, 77, 5);
      const bytes = toBinary(RequestSchema, create(RequestSchema, requestInit(req)));
      assert.ok(Buffer.from(bytes).equals(Request.encode(req).finish()), `request kind ${kind} size ${size}`);
      const back = requestOf(fromBinary(RequestSchema, bytes));
      assert.deepEqual([back.seq, back.responseSize, back.responseMessages, back.payloadKind], [req.seq, 77, 5, kind]);
      assert.deepEqual(back.body, req.body);
      assert.ok(Buffer.from(back.payload ?? []).equals(req.payload ?? Buffer.alloc(0)));
      const res = responseTo(req, 9);
      const resBytes = toBinary(ResponseSchema, create(ResponseSchema, { seq: 9n, ...(res.payload ? { payload: res.payload } : {}), ...(res.body ? { body: res.body } : {}) }));
      assert.ok(Buffer.from(resBytes).equals(Response.encode(res).finish()), `response kind ${kind} size ${size}`);
    }
  }
  // json_name as protoc writes it (the Connect protocol's JSON codec reads it).
  const json = toJson(RequestSchema, create(RequestSchema, requestInit(request(KIND.structured, 3, 64, 10, 2))));
  assert.deepEqual(Object.keys(json).sort(), ['body', 'payloadKind', 'responseMessages', 'responseSize', 'seq']);
  assert.deepEqual(Object.keys(json.body).sort(), ['attributes', 'createdUnixMs', 'items', 'title']);
  // The docs' test vector, Structured(1, 64), as a body of a structured response.
  const vector = '0a0b62636465666768696a6b6c1081d095ffbc311a20080112066974656d2d3019000000000000d03f220562656e636822047461673022080a03736571120131';
  const message = create(ResponseSchema, { seq: 1n, body: requestInit({ seq: 1, body: structured(1, 64) }).body });
  assert.equal(Buffer.from(toBinary(ResponseSchema, message)).subarray(4).toString('hex'), vector);
  assert.deepEqual(responseOf(message).body, structured(1, 64));
  const summary = new SummaryBuilder();
  summary.add(request(KIND.structured, 0, 10, 20, 0));
  assert.deepEqual(summaryOf(create(BenchService.method.clientStream.output, summaryInit(summary.finish()))), summary.finish());
});

for (const plaintext of [false, true]) {
  test(`calls of every shape and payload kind${plaintext ? ' over h2c' : ' over TLS'}, counted`, async () => {
    const { counters, server, client } = await serverAndClient({ plaintext });
    for (const shape of SHAPES) {
      for (const kind of [KIND.zeros, KIND.structured]) {
        client.work = { ...WORK, shape, kind, requestSize: 200, responseSize: shape === 'send' ? 0 : 300 };
        const n = shape === 'unary' || shape === 'send' ? 1 : 4;
        const expected = {
          requests: shape === 'client_stream' || shape === 'bidi' ? n : 1,
          responses: shape === 'server_stream' || shape === 'bidi' ? n : 1,
        };
        assert.deepEqual(await client.call(0, 7), expected, `${shape} ${kind}`);
      }
    }
    assert.equal(counters.rpcs, 10);
    assert.equal(counters.requests, 2 * (1 + 4 + 1 + 4 + 1));
    assert.equal(counters.responses, 2 * (1 + 1 + 4 + 4 + 1));
    assert.equal(counters.commands, 2);
    assert.equal(counters.rejected, 0);
    await client.close();
    await server.close();
  });
}

/** One Connect call over a plain node:http2 session: the response's status, headers and body. */
function rawCall(session, path, contentType, body) {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': contentType, 'connect-protocol-version': '1' });
    const chunks = [];
    let headers;
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => resolve({ status: headers[':status'], headers, body: Buffer.concat(chunks) }));
    stream.on('error', reject);
    stream.end(body);
  });
}

/** A Connect envelope: flags, 4-byte big-endian length, the bytes. */
function envelope(flags, bytes) {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([head, bytes]);
}

test('the wire of docs/stacks.md: unary bodies, enveloped streams, end-stream JSON, errors, SETTINGS', async () => {
  const { server, client, port } = await serverAndClient({ plaintext: true });
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const settings = await new Promise((resolve) => session.once('remoteSettings', resolve));
  assert.equal(settings.initialWindowSize, 16 * 1024 * 1024);
  assert.equal(settings.maxConcurrentStreams, 10_000);
  const base = '/rpcarena.bench.v1.BenchService';
  const unary = await rawCall(session, `${base}/Unary`, 'application/proto', Request.encode(request(KIND.zeros, 5, 3, 4, 0)).finish());
  assert.equal(unary.status, 200);
  assert.equal(unary.headers['content-type'], 'application/proto');
  assert.deepEqual(Response.decode(unary.body), Response.decode(Response.encode(responseTo({ payloadKind: 0, responseSize: 4 }, 5)).finish()));
  const refused = await rawCall(session, `${base}/Unary`, 'application/proto', Request.encode({ seq: 1, payload: Buffer.from([0, 1]) }).finish());
  assert.equal(refused.status, 400);
  assert.equal(refused.headers['content-type'], 'application/json');
  assert.equal(JSON.parse(refused.body).code, 'invalid_argument');
  const requests = [0, 1].map((i) => envelope(0, Buffer.from(Request.encode(request(KIND.zeros, i, 2, 3, 0)).finish())));
  const bidi = await rawCall(session, `${base}/Bidi`, 'application/connect+proto', Buffer.concat(requests));
  assert.equal(bidi.status, 200);
  assert.equal(bidi.headers['content-type'], 'application/connect+proto');
  let at = 0;
  const frames = [];
  while (at < bidi.body.length) {
    const length = bidi.body.readUInt32BE(at + 1);
    frames.push({ flags: bidi.body[at], bytes: bidi.body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  assert.deepEqual(frames.map((f) => f.flags), [0, 0, 2]);
  assert.deepEqual(frames.slice(0, 2).map((f) => Response.decode(f.bytes).seq), [0, 1]);
  assert.deepEqual(JSON.parse(frames[2].bytes), {});
  const empty = await rawCall(session, `${base}/ClientStream`, 'application/connect+proto', Buffer.alloc(0));
  const end = JSON.parse(empty.body.subarray(5));
  assert.equal(empty.status, 200);
  assert.equal(empty.body[0], 2);
  assert.equal(end.error.code, 'invalid_argument');
  assert.equal((await rawCall(session, `${base}/Nothing`, 'application/proto', Buffer.alloc(0))).status, 404);
  session.close();
  await client.close();
  await server.close();
});

test('the client: 16 MiB stream window in its SETTINGS and 16 MiB connection window once it calls', async () => {
  const seen = {};
  const raw = http2.createServer();
  raw.on('session', (session) => {
    session.once('remoteSettings', (s) => {
      seen.settings = s;
    });
  });
  raw.on('stream', (stream) => {
    // The client sends its WINDOW_UPDATE right after the call's HEADERS, before its body.
    stream.resume();
    stream.on('end', () => {
      seen.window = stream.session.state.remoteWindowSize;
      stream.respond({ ':status': 200, 'content-type': 'application/proto' });
      stream.end();
    });
  });
  await new Promise((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const client = new ConnectClient({ server: { host: '127.0.0.1', port: raw.address().port }, plaintext: true, work: { ...WORK, responseSize: 0, requestSize: 0 } });
  await client.connect();
  await client.call(0, 0);
  assert.equal(seen.settings.initialWindowSize, 16 * 1024 * 1024);
  assert.equal(seen.settings.enablePush, false);
  assert.ok(seen.window >= 16 * 1024 * 1024 - 65_535, `connection window ${seen.window}`);
  await client.close();
  await new Promise((resolve) => raw.close(resolve));
});

test('the server refuses malformed calls of every shape with invalid_argument, counts them and serves on', async () => {
  for (const shape of SHAPES) {
    for (const mode of Object.keys(CLIENT_FAULTS)) {
      for (const kind of [KIND.zeros, KIND.structured]) {
        if (clientFaultRefusal(mode, shape, kind === KIND.structured ? 'structured' : 'zeros')) continue;
        const work = { ...WORK, shape, kind, responseSize: shape === 'send' ? 0 : 64 };
        const { counters, server, client } = await serverAndClient({ plaintext: true, work });
        await client.probe(mode);
        assert.equal(counters.rejected, 1, `${shape} ${mode}`);
        assert.ok(counters.fields().first_rejection.length > 0);
        await client.close();
        await server.close();
      }
    }
  }
});

test('a conformance fault client fails a server that skips its checks', async () => {
  for (const [shape, mode] of [['unary', 'nonzero-byte'], ['client_stream', 'seq-order'], ['server_stream', 'response-messages-zero'], ['bidi', 'empty-stream'], ['send', 'response-size-too-large']]) {
    const { server, client } = await serverAndClient({ plaintext: true, fault: 'skip-validation', work: { ...WORK, shape } });
    await assert.rejects(client.probe(mode), (e) => e.code === 'invalid' && /accepted a malformed call/.test(e.message));
    await client.close();
    await server.close();
  }
});

test('every server conformance fault fails the client\'s call with fault.rs\'s code', async () => {
  for (const shape of SHAPES) {
    for (const fault of SERVER_FAULTS) {
      for (const kind of [KIND.zeros, KIND.structured]) {
        const { server, client } = await serverAndClient({ plaintext: true, fault, work: { ...WORK, shape, kind, responseSize: shape === 'send' ? 0 : 64 } });
        // A command's Empty has nothing to corrupt: only error-status shows (fault.rs command_plan).
        if (fault === 'skip-validation' || (shape === 'send' && fault !== 'error-status')) {
          await client.call(0, 0);
        } else {
          const expected = fault === 'error-status' || (fault === 'wrong-summary' && shape !== 'client_stream') ? 'rpc' : 'invalid';
          await assert.rejects(client.call(0, 0), (e) => e.code === expected || assert.fail(`${shape} ${fault}: ${e.code} ${e.message}`));
        }
        await client.close();
        await server.close();
      }
    }
  }
});

test('pingpong: the bidi handler answers each request before the next one is sent', async () => {
  const { server, client } = await serverAndClient({ plaintext: true });
  let answered = -1;
  let next;
  const requests = async function* () {
    for (let i = 0; i < 5; i++) {
      if (i > 0) await new Promise((resolve) => { next = resolve; });
      assert.equal(answered, i - 1);
      yield requestInit(request(KIND.zeros, i, 8, 8, 0));
    }
  };
  for await (const response of client.client.bidi(requests())) {
    answered = Number(response.seq);
    next?.();
  }
  assert.equal(answered, 4);
  await client.close();
  await server.close();
});

test('a client that does not trust the server\'s CA fails in connect with tls', async () => {
  await assert.rejects(serverAndClient({ caPem: fixture('other-ca.pem') }), (e) => e.code === 'tls' && /TLS handshake/.test(e.message));
});

test('--conformance-fault on connect: every shape, with the modes that apply to it', () => {
  const client = ['--stack', 'connect', '--server', '127.0.0.1:1', '--tls', 'off', '--concurrency', '1', '--request-size', '8', '--response-size', '8', '--messages-per-stream', '2', '--load', 'closed', '--warmup-ms', '0', '--window-ms', '1', '--drain-ms', '1'];
  for (const [shape, mode] of [['client_stream', 'seq-order'], ['bidi', 'empty-stream'], ['server_stream', 'response-messages-zero'], ['send', 'nonzero-byte']]) {
    assert.equal(parseArgs('client', [...client, '--shape', shape, '--conformance-fault', mode]).conformanceFault, mode);
  }
  assert.throws(() => parseArgs('client', [...client, '--shape', 'server_stream', '--conformance-fault', 'seq-order']), /applies to --shape client_stream, bidi, pingpong, not server_stream/);
  assert.throws(() => parseArgs('client', [...client, '--shape', 'bidi', '--conformance-fault', 'response-messages-zero']), /applies to --shape server_stream, not bidi/);
  assert.equal(parseArgs('server', ['--stack', 'connect', '--listen', '127.0.0.1:0', '--tls', 'off', '--conformance-fault', 'early-status']).conformanceFault, 'early-status');
});
