// The oRPC and tRPC stacks in process, each over HTTP and WebSocket, and the REST stacks
// (orpc-openapi, hono-rest), with TLS and without: calls
// of both payload kinds, the server's validation duty (a malformed request is refused with
// BAD_REQUEST and counted, and the server serves on), the client's (every server conformance fault
// fails the call with the code fault.rs gives), the conformance fault client's judgement, and the
// JSON mapping of messages.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { OrpcClient, startOrpcServer } from '../src/stacks/orpc.js';
import { TrpcClient, startTrpcServer } from '../src/stacks/trpc.js';
import { OpenApiClient, startOpenApiServer } from '../src/stacks/openapi.js';
import { HonoClient, startHonoServer } from '../src/stacks/hono.js';
import { ServerCounters } from '../src/stacks/native.js';
import { requestFromJson, requestToJson, responseFromJson } from '../src/stacks/json.js';
import { KIND, request, structured } from '../src/workload.js';
import { SERVER_FAULTS } from '../src/fault.js';
import { parseArgs } from '../src/args.js';

const fixture = (name) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

const STACKS = {
  'orpc-http': { start: (o) => startOrpcServer(o), Client: OrpcClient, webSocket: false },
  'orpc-ws': { start: (o) => startOrpcServer({ ...o, webSocket: true }), Client: OrpcClient, webSocket: true },
  'trpc-http': { start: (o) => startTrpcServer(o), Client: TrpcClient, webSocket: false },
  'trpc-ws': { start: (o) => startTrpcServer({ ...o, webSocket: true }), Client: TrpcClient, webSocket: true },
  'orpc-openapi': { start: (o) => startOpenApiServer(o), Client: OpenApiClient, webSocket: false },
  'hono-rest': { start: (o) => startHonoServer(o), Client: HonoClient, webSocket: false },
};

const WORK = { shape: 'unary', kind: KIND.zeros, requestSize: 64, responseSize: 64, messages: 1 };

/** A server of `stack` on a free loopback port and a connected client of it with `lanes` lanes. */
async function serverAndClient(stack, { plaintext = false, fault, work = WORK, lanes = 2, caPem } = {}) {
  const { start, Client, webSocket } = STACKS[stack];
  const counters = new ServerCounters();
  const tls = plaintext ? {} : { certPem: fixture('ip.pem'), keyPem: fixture('ip.key') };
  const server = await start({ listen: { host: '127.0.0.1', port: 0 }, plaintext, ...tls, counters, fault });
  const port = Number(server.address.split(':')[1]);
  const trust = plaintext ? {} : { serverName: '127.0.0.1', caPem: caPem ?? fixture('ca.pem') };
  const client = new Client({ server: { host: '127.0.0.1', port }, plaintext, ...trust, work: { ...work }, lanes }, webSocket);
  try {
    await client.connect();
  } catch (e) {
    await server.close();
    throw e;
  }
  return { counters, server, client };
}

for (const stack of Object.keys(STACKS)) {
  for (const plaintext of [false, true]) {
    test(`${stack}${plaintext ? ' (plaintext)' : ''}: calls of both payload kinds on every lane, counted`, async () => {
      const { counters, server, client } = await serverAndClient(stack, { plaintext });
      for (const kind of [KIND.zeros, KIND.structured]) {
        client.work = { ...WORK, kind, requestSize: 200, responseSize: 300 };
        assert.deepEqual(await client.call(0, 7), { requests: 1, responses: 1 });
        assert.deepEqual(await client.call(1, 8), { requests: 1, responses: 1 });
      }
      assert.equal(counters.rpcs, 4);
      assert.equal(counters.responses, 4);
      assert.equal(counters.rejected, 0);
      await client.close();
      await server.close();
    });
  }

  test(`${stack}: the server refuses malformed requests with BAD_REQUEST, counts them and serves on`, async () => {
    const { counters, server, client } = await serverAndClient(stack, { lanes: 1 });
    const good = requestToJson(request(KIND.zeros, 0, 8, 8, 0));
    const cases = [
      [{ ...good, payload: Buffer.from([0, 0, 1]).toString('base64') }, /byte 2/],
      [{ ...good, responseSize: 16 * 1024 * 1024 + 1 }, /above the maximum/],
      [{ ...good, payload: 'not base64!' }, /not a base64 string/],
      [{ ...good, extra: 1 }, /unknown field "extra"/],
      ['a string', /not a JSON object/],
      [{ ...good, payloadKind: 1, payload: undefined, body: { ...structured(0, 40), title: 'x' } }, /structured payload differs|title/],
    ];
    for (const [input, pattern] of cases) {
      await assert.rejects(client.send(0, input), (e) => {
        assert.equal(e.code, 'rpc', e.message);
        assert.match(e.message, /BAD_REQUEST/);
        assert.match(e.message, pattern);
        return true;
      });
    }
    assert.equal(counters.rejected, cases.length);
    assert.match(counters.firstRejection, /byte 2/);
    assert.ok(await client.call(0, 1));
    await client.close();
    await server.close();
  });

  test(`${stack}: every server conformance fault fails the client's call with its code`, async () => {
    for (const fault of SERVER_FAULTS) {
      for (const kind of [KIND.zeros, KIND.structured]) {
        const work = { ...WORK, kind };
        const { server, client } = await serverAndClient(stack, { fault, work, lanes: 1 });
        if (fault === 'skip-validation') {
          assert.ok(await client.call(0, 0));
        } else {
          const expected = fault === 'error-status' || fault === 'wrong-summary' ? 'rpc' : 'invalid';
          await assert.rejects(client.call(0, 0), (e) => e.code === expected || assert.fail(`${fault}: ${e.code} ${e.message}`));
        }
        await client.close();
        await server.close();
      }
    }
  });

  test(`${stack}: a conformance fault client passes a checking server and fails one that skips its checks`, async () => {
    const work = { ...WORK, kind: KIND.structured };
    for (const mode of ['nonzero-byte', 'corrupt-structured', 'response-size-too-large']) {
      const good = await serverAndClient(stack, { work, lanes: 1 });
      await good.client.probe(mode);
      await good.client.close();
      await good.server.close();
      const lax = await serverAndClient(stack, { work, lanes: 1, fault: 'skip-validation' });
      // A lax server answers a structured response of 16 MiB + 1 to response-size-too-large,
      // which may exceed the client's message limit (then the call fails in another way).
      const accepted = (e) => e.code === 'invalid' && /accepted a malformed call/.test(e.message);
      await assert.rejects(lax.client.probe(mode), (e) => accepted(e) || mode === 'response-size-too-large' || assert.fail(`${mode}: ${e.code} ${e.message}`));
      await lax.client.close();
      await lax.server.close();
    }
  });

  test(`${stack}: a client that does not trust the server's CA fails with tls`, async () => {
    await assert.rejects(serverAndClient(stack, { caPem: fixture('other-ca.pem') }), (e) => e.code === 'tls' || assert.fail(`${e.code} ${e.message}`));
  });
}

test('the JSON mapping of a request round-trips and refuses what is not a Request', () => {
  const req = request(KIND.zeros, 5, 10, 20, 0);
  const { request: back } = requestFromJson(JSON.parse(JSON.stringify(requestToJson(req))));
  assert.equal(back.seq, 5);
  assert.equal(back.payload.length, 10);
  assert.equal(back.responseSize, 20);
  assert.match(requestFromJson({ seq: -1 }).problem, /seq -1 is not a whole number/);
  assert.match(requestFromJson({ seq: 1.5 }).problem, /seq 1.5/);
  assert.match(requestFromJson({ payload: 'AAA' }).problem, /not a base64 string/);
  assert.match(requestFromJson({ body: { items: [{ id: 'x' }] } }).problem, /items\[0\]\.id/);
  assert.match(responseFromJson(undefined).problem, /no response message/);
  assert.match(responseFromJson([{ seq: 0 }, { seq: 1 }]).problem, /not a JSON object/);
});

test('--conformance-fault is taken only on the JSON stacks, with a mode of the role and a shape it applies to', () => {
  const client = ['--stack', 'orpc-http', '--server', '127.0.0.1:1', '--tls', 'off', '--shape', 'unary', '--concurrency', '1',
    '--request-size', '8', '--response-size', '8', '--messages-per-stream', '1', '--load', 'closed', '--warmup-ms', '0',
    '--window-ms', '1', '--drain-ms', '1'];
  assert.equal(parseArgs('client', [...client, '--conformance-fault', 'nonzero-byte']).conformanceFault, 'nonzero-byte');
  assert.throws(() => parseArgs('client', [...client, '--conformance-fault', 'seq-order']), /applies to --shape client_stream/);
  assert.throws(() => parseArgs('client', [...client, '--conformance-fault', 'corrupt-structured']), /needs --payload structured/);
  assert.throws(() => parseArgs('client', [...client, '--conformance-fault', 'wrong-seq']), /expected one of/);
  const server = ['--stack', 'grpc', '--listen', '127.0.0.1:0', '--tls', 'off'];
  assert.throws(() => parseArgs('server', [...server, '--conformance-fault', 'wrong-seq']), /does not apply to --stack grpc/);
  assert.equal(parseArgs('server', ['--stack', 'trpc-ws', '--listen', '127.0.0.1:0', '--tls', 'off', '--conformance-fault', 'wrong-seq']).conformanceFault, 'wrong-seq');
});
