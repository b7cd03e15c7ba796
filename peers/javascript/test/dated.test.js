// Protocol 1.4 on the six JSON stacks, in process: the dated payload (the server's answer and its
// refusals, the client's checks, every server conformance fault on it, the fault client's wrong
// input) and --client-mode replay (the capture of the official client's call, its replay on every
// lane with every payload kind, and the check of a replayed answer against the captured one).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { OrpcClient, startOrpcServer } from '../src/stacks/orpc.js';
import { TrpcClient, startTrpcServer } from '../src/stacks/trpc.js';
import { OpenApiClient, startOpenApiServer } from '../src/stacks/openapi.js';
import { HonoClient, startHonoServer } from '../src/stacks/hono.js';
import { ServerCounters } from '../src/stacks/native.js';
import { DATED_INPUT, REST_DATED_INPUT, datedAnswerProblem, datedDateProblem, datedFaultInput } from '../src/stacks/dated.js';
import { ReplayCheck } from '../src/stacks/replay.js';
import { KIND } from '../src/workload.js';
import { SERVER_FAULTS } from '../src/fault.js';

const fixture = (name) => fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

const STACKS = {
  'orpc-http': { start: (o) => startOrpcServer(o), client: (o) => new OrpcClient(o, false) },
  'orpc-ws': { start: (o) => startOrpcServer({ ...o, webSocket: true }), client: (o) => new OrpcClient(o, true) },
  'trpc-http': { start: (o) => startTrpcServer(o), client: (o) => new TrpcClient(o, false) },
  'trpc-ws': { start: (o) => startTrpcServer({ ...o, webSocket: true }), client: (o) => new TrpcClient(o, true) },
  'orpc-openapi': { start: (o) => startOpenApiServer(o), client: (o) => new OpenApiClient(o) },
  'hono-rest': { start: (o) => startHonoServer(o), client: (o) => new HonoClient(o) },
};
const REST = ['orpc-openapi', 'hono-rest'];

/** The client's work for a payload kind (dated: sizes 0). */
function workOf(payload) {
  const dated = payload === 'dated';
  const size = dated ? 0 : 80;
  return { shape: 'unary', kind: KIND[payload], requestSize: size, responseSize: size, messages: 1, dated };
}

/** A server of `stack` and a connected client (`mode`: official or replay). */
async function pair(stack, { payload = 'dated', mode = 'official', fault, plaintext = true, lanes = 2 } = {}) {
  const counters = new ServerCounters();
  const tls = plaintext ? {} : { certPem: fixture('ip.pem'), keyPem: fixture('ip.key') };
  const server = await STACKS[stack].start({ listen: { host: '127.0.0.1', port: 0 }, plaintext, ...tls, counters, fault });
  const port = Number(server.address.split(':')[1]);
  const trust = plaintext ? {} : { serverName: '127.0.0.1', caPem: fixture('ca.pem') };
  const client = STACKS[stack].client({ server: { host: '127.0.0.1', port }, plaintext, ...trust, work: workOf(payload), lanes, clientMode: mode });
  try {
    await client.connect();
  } catch (e) {
    await server.close();
    throw e;
  }
  return { counters, server, client, done: async () => { await client.close(); await server.close(); } };
}

for (const stack of Object.keys(STACKS)) {
  test(`${stack}: dated calls through the official client and replayed, with TLS, counted`, async () => {
    for (const mode of ['official', 'replay']) {
      const { counters, client, done } = await pair(stack, { mode, plaintext: false });
      for (const [lane, seq] of [[0, 0], [1, 1], [0, 2], [1, 3]]) assert.deepEqual(await client.call(lane, seq), { requests: 1, responses: 1 });
      assert.deepEqual([counters.rpcs, counters.responses, counters.rejected], [4, 4, 0], mode);
      if (mode === 'replay') assert.equal(client.exchange.status ?? 'ws', stack.endsWith('-ws') ? 'ws' : 200);
      await done();
    }
  });

  test(`${stack}: replay repeats the captured call of zeros and structured payloads on every lane`, async () => {
    for (const payload of ['zeros', 'structured']) {
      const { counters, client, done } = await pair(stack, { payload, mode: 'replay', lanes: 3 });
      await client.call(0, 0);
      for (let lane = 0; lane < 3; lane++) await client.call(lane, 100 + lane);
      assert.deepEqual([counters.rpcs, counters.rejected], [4, 0]);
      await done();
    }
  });

  test(`${stack}: the server refuses any input but "hello world" with BAD_REQUEST, counted, and serves on`, async () => {
    const { counters, client, done } = await pair(stack, { lanes: 1 });
    const expected = REST.includes(stack) ? REST_DATED_INPUT : DATED_INPUT;
    for (const mode of ['nonzero-byte', 'corrupt-structured', 'response-size-too-large']) {
      await client.probe(mode);
    }
    assert.equal(counters.rejected, 3);
    assert.match(counters.firstRejection, /takes the input/);
    assert.match(counters.firstRejection, REST.includes(stack) ? /"who":"hello world\\u0001"/ : /hello world\\u0001/);
    await assert.rejects(client.guard(() => client.conns[0].official.dated(typeof expected === 'string' ? 42 : { who: 'x', extra: 'y' })),
      (e) => e.code === 'rpc' && /BAD_REQUEST/.test(e.message));
    await done();
  });

  test(`${stack}: every server conformance fault on a dated call fails the client's call with its code`, async () => {
    for (const fault of SERVER_FAULTS) {
      const { client, done } = await pair(stack, { fault, lanes: 1 });
      if (fault === 'skip-validation') {
        assert.ok(await client.call(0, 0));
        await assert.rejects(client.probe('nonzero-byte'), (e) => e.code === 'invalid' && /accepted a malformed call/.test(e.message));
      } else {
        const expected = fault === 'error-status' || fault === 'wrong-summary' ? 'rpc' : 'invalid';
        await assert.rejects(client.call(0, 0), (e) => e.code === expected || assert.fail(`${fault}: ${e.code} ${e.message}`));
      }
      await done();
    }
  });
}

test('the dated checks: a revived Date or an ISO string, valid, within a day; name and input exact', () => {
  const now = Date.parse('2026-12-07T12:00:00.000Z');
  const answer = { name: 'nested/procedure_1', date: new Date(now - 1000), input: 'hello world' };
  assert.equal(datedAnswerProblem(answer, DATED_INPUT, 'revived', now), null);
  assert.match(datedAnswerProblem({ ...answer, date: '2026-12-07T12:00:00.000Z' }, DATED_INPUT, 'revived', now), /not a revived Date/);
  assert.match(datedAnswerProblem({ ...answer, date: new Date(Number.NaN) }, DATED_INPUT, 'revived', now), /Invalid Date/);
  assert.match(datedAnswerProblem({ ...answer, date: new Date(now - 2 * 86_400_000) }, DATED_INPUT, 'revived', now), /-48\.0 h from the client's clock/);
  assert.match(datedAnswerProblem({ ...answer, name: 'nested/procedure_2' }, DATED_INPUT, 'revived', now), /name/);
  assert.match(datedAnswerProblem({ ...answer, input: 'hello' }, DATED_INPUT, 'revived', now), /input/);
  assert.match(datedAnswerProblem({ ...answer, extra: 1 }, DATED_INPUT, 'revived', now), /unknown field "extra"/);
  assert.match(datedAnswerProblem(undefined, DATED_INPUT, 'revived', now), /no output/);
  assert.match(datedAnswerProblem([answer], DATED_INPUT, 'revived', now), /not an object/);
  const rest = { ...answer, date: '2026-12-07T11:59:59.000Z', input: { who: 'hello world' } };
  assert.equal(datedAnswerProblem(rest, REST_DATED_INPUT, 'iso', now), null);
  assert.match(datedAnswerProblem({ ...rest, input: { who: 'hello world', x: '1' } }, REST_DATED_INPUT, 'iso', now), /input/);
  assert.match(datedDateProblem(now, 'iso', now), /not an ISO 8601/);
  assert.match(datedDateProblem('2026-12-07', 'iso', now), /not an ISO 8601/);
  assert.match(datedDateProblem('2026-12-07T12:00:00', 'iso', now), /not an ISO 8601/);
  assert.equal(datedDateProblem('2026-12-07T13:00:00+01:00', 'iso', now), null);
  assert.deepEqual(datedFaultInput('nonzero-byte', REST_DATED_INPUT), { who: 'hello world\u0001' });
});

test('a replayed answer must equal the captured one but for its date, revived as the metadata says', () => {
  const now = Date.now();
  const iso = (ms) => new Date(ms).toISOString();
  const body = (date, name = 'nested/procedure_1', meta = '[[1,"date"]]') => `{"json":{"name":"${name}","date":${date === null ? 'null' : `"${date}"`},"input":"hello world"},"meta":${meta}}`;
  const check = new ReplayCheck({ status: 200, text: body(iso(now - 5)) }, { form: 'revived' });
  assert.equal(check.problem(200, body(iso(now)), now), null);
  const fail = (status, text, code, pattern, errorOf) => {
    const problem = check.problem(status, text, now, errorOf);
    assert.ok(problem, text);
    assert.equal(problem.code, code, problem.message);
    assert.match(problem.message, pattern);
  };
  fail(400, '{"json":{"code":"BAD_REQUEST"}}', 'rpc', /HTTP 400, the captured one 200/);
  fail(200, body(iso(now), 'nested/procedure_2'), 'invalid', /differs from the captured one/);
  fail(200, body(iso(now), undefined, '[]'), 'invalid', /differs/);
  fail(200, body(null), 'invalid', /Invalid Date/);
  fail(200, body('not a date'), 'invalid', /Invalid Date/);
  fail(200, body(iso(now - 3 * 86_400_000)), 'invalid', /h from the client's clock/);
  fail(200, 'not json', 'invalid', /not JSON/);
  // Over WebSocket (no status) a library's error message is `rpc`.
  const ws = new ReplayCheck({ status: undefined, text: '{"id":1,"result":{"type":"data","data":{"json":{"date":"x"}}}}' }, undefined);
  const refused = ws.problem(undefined, '{"id":1,"error":{"json":{"message":"no"}}}', now, (m) => (m.error ? 'error' : undefined));
  assert.equal(refused.code, 'rpc');
  // zeros and structured: the same answer, byte for byte or as JSON.
  assert.equal(ws.problem(undefined, '{"id":1,"result":{"type":"data","data":{"json":{"date":"x"}}}}', now), null);
  assert.equal(ws.problem(undefined, '{"id":2,"result":{"type":"data","data":{"json":{"date":"x"}}}}', now).code, 'invalid');
  // REST: an ISO 8601 string.
  const rest = new ReplayCheck({ status: 200, text: `{"name":"n","date":"${iso(now)}","input":{"who":"hello world"}}` }, { form: 'iso' });
  assert.equal(rest.problem(200, `{"name":"n","date":"${iso(now + 7)}","input":{"who":"hello world"}}`, now), null);
  assert.match(rest.problem(200, `{"name":"n","date":${now},"input":{"who":"hello world"}}`, now).message, /not an ISO 8601/);
  assert.throws(() => new ReplayCheck({ status: 200, text: '{"name":"n"}' }, { form: 'iso' }), /no date field/);
});
