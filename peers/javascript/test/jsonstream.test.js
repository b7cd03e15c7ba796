// Server streams on the oRPC and tRPC stacks in process (oRPC's event iterators, tRPC's
// subscriptions), each over HTTP and WebSocket: streams of both payload kinds on two lanes,
// counted; the server's validation duty on a stream's request; every server conformance fault
// failing the client's stream with fault.rs's code; a stream left early is cancelled and the
// lane serves on; the shapes the libraries cannot carry refused with their reason.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { OrpcClient, startOrpcServer } from '../src/stacks/orpc.js';
import { TrpcClient, startTrpcServer } from '../src/stacks/trpc.js';
import { ServerCounters } from '../src/stacks/native.js';
import { requestToJson } from '../src/stacks/json.js';
import { KIND, request } from '../src/workload.js';
import { SERVER_FAULTS } from '../src/fault.js';
import { parseArgs } from '../src/args.js';

const fixture = (name) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

const STACKS = {
  'orpc-http': { start: (o) => startOrpcServer(o), Client: OrpcClient, webSocket: false },
  'orpc-ws': { start: (o) => startOrpcServer({ ...o, webSocket: true }), Client: OrpcClient, webSocket: true },
  'trpc-http': { start: (o) => startTrpcServer(o), Client: TrpcClient, webSocket: false },
  'trpc-ws': { start: (o) => startTrpcServer({ ...o, webSocket: true }), Client: TrpcClient, webSocket: true },
};

const WORK = { shape: 'server_stream', kind: KIND.zeros, requestSize: 64, responseSize: 64, messages: 4 };

/** A server of `stack` on a free loopback port and a connected client of it. */
async function serverAndClient(stack, { plaintext = true, fault, work = WORK, lanes = 1 } = {}) {
  const { start, Client, webSocket } = STACKS[stack];
  const counters = new ServerCounters();
  const tls = plaintext ? {} : { certPem: fixture('ip.pem'), keyPem: fixture('ip.key') };
  const server = await start({ listen: { host: '127.0.0.1', port: 0 }, plaintext, ...tls, counters, fault });
  const port = Number(server.address.split(':')[1]);
  const trust = plaintext ? {} : { serverName: '127.0.0.1', caPem: fixture('ca.pem') };
  const client = new Client({ server: { host: '127.0.0.1', port }, plaintext, ...trust, work: { ...work }, lanes }, webSocket);
  await client.connect();
  return { counters, server, client };
}

async function closeBoth({ client, server }) {
  await client.close();
  await server.close();
}

for (const stack of Object.keys(STACKS)) {
  for (const plaintext of [false, true]) {
    test(`${stack}${plaintext ? ' (plaintext)' : ''}: server streams of both payload kinds on every lane, counted`, async () => {
      const pair = await serverAndClient(stack, { plaintext, lanes: 2 });
      const { counters, client } = pair;
      for (const kind of [KIND.zeros, KIND.structured]) {
        client.work = { ...WORK, kind, requestSize: 200, responseSize: 300, messages: 5 };
        assert.deepEqual(await client.call(0, 7), { requests: 1, responses: 5 });
        assert.deepEqual(await client.call(1, 8), { requests: 1, responses: 5 });
      }
      assert.deepEqual([counters.rpcs, counters.requests, counters.responses, counters.rejected], [4, 4, 20, 0]);
      await closeBoth(pair);
    });
  }

  test(`${stack}: a stream's malformed request is refused with BAD_REQUEST and counted; a lax server is caught`, async () => {
    for (const mode of ['response-messages-zero', 'nonzero-byte', 'response-size-too-large']) {
      const good = await serverAndClient(stack);
      await good.client.probe(mode);
      assert.equal(good.counters.rejected, 1);
      assert.ok(good.counters.fields().first_rejection.length > 0);
      await closeBoth(good);
    }
    const lax = await serverAndClient(stack, { fault: 'skip-validation' });
    await assert.rejects(lax.client.probe('response-messages-zero'), (e) => (e.code === 'invalid' && /accepted a malformed call/.test(e.message)) || assert.fail(`${e.code} ${e.message}`));
    await closeBoth(lax);
  });

  test(`${stack}: every server conformance fault fails the client's stream with its code`, async () => {
    for (const fault of SERVER_FAULTS) {
      for (const kind of [KIND.zeros, KIND.structured]) {
        const pair = await serverAndClient(stack, { fault, work: { ...WORK, kind } });
        if (fault === 'skip-validation') {
          assert.ok(await pair.client.call(0, 0));
        } else {
          const expected = fault === 'error-status' || fault === 'wrong-summary' ? 'rpc' : 'invalid';
          await assert.rejects(pair.client.call(0, 0), (e) => e.code === expected || assert.fail(`${fault}: ${e.code} ${e.message}`));
        }
        await closeBoth(pair);
      }
    }
  });

  test(`${stack}: a stream left early is cancelled, and the lane serves on`, async () => {
    const pair = await serverAndClient(stack);
    const { counters, client } = pair;
    const long = requestToJson(request(KIND.zeros, 0, 8, 8, 100_000));
    for await (const output of await client.conns[0].official.serverStream(long)) {
      assert.equal(output.seq, 0);
      break;
    }
    assert.deepEqual(await client.call(0, 1), { requests: 1, responses: 4 });
    assert.ok(counters.responses < 100_000, `the server went on to ${counters.responses} responses`);
    await closeBoth(pair);
  });
}

test('the JSON stacks refuse the shapes their libraries cannot carry (and replay of a stream), with the reason', () => {
  const client = (stack, shape) => ['--stack', stack, '--server', '127.0.0.1:1', '--tls', 'off', '--shape', shape, '--concurrency', '1',
    '--request-size', '8', '--response-size', '8', '--messages-per-stream', '2', '--load', 'closed', '--warmup-ms', '0',
    '--window-ms', '1', '--drain-ms', '1'];
  assert.equal(parseArgs('client', client('trpc-http', 'server_stream')).shape, 'server_stream');
  assert.throws(() => parseArgs('client', client('orpc-http', 'client_stream')), /duplex/);
  assert.throws(() => parseArgs('client', client('orpc-ws', 'bidi')), /drops the input events/);
  assert.throws(() => parseArgs('client', client('trpc-ws', 'client_stream')), /no client-streaming procedure/);
  assert.equal(parseArgs('client', [...client('orpc-ws', 'server_stream'), '--conformance-fault', 'response-messages-zero']).conformanceFault, 'response-messages-zero');
  assert.throws(() => parseArgs('client', [...client('trpc-http', 'server_stream'), '--client-mode', 'replay']), /replay repeats one captured unary call/);
  assert.throws(() => parseArgs('client', client('orpc-openapi', 'server_stream')), /one request answered by one JSON body/);
});
