// The hono-rest stack: REST over HTTP/1.1 with Hono, as the reference's openapi-hono benchmark
// serves it: a Hono app (hono) run by @hono/node-server's request listener on node:https or
// node:http (transports.js), and Hono's official client, `hc` of hono/client, on the lane's
// keep-alive connection. Routes: the bench's procedure at POST /unary (body: the Request as
// JSON, json.js; answer: the Response as JSON, `c.json`) and the dated procedure (protocol 1.4)
// at GET /nested/procedure_1?who=hello%20world (input: the query, {who: "hello world"}; answer
// {name, date as an ISO 8601 string, input}). Inputs go through hono/validator (a passthrough,
// as in the reference) and are checked by serveUnary and serveDated; a bad request is answered
// HTTP 400 `{"code": "BAD_REQUEST", "message"}` (INTERNAL_SERVER_ERROR: 500) and counted in
// `rejected`. Hono has no error envelope of its own, so this JSON is ours.
import { Hono } from 'hono';
import { validator } from 'hono/validator';
import { hc } from 'hono/client';
import { getRequestListener } from '@hono/node-server';
import { JsonLaneClient, PROCEDURE, Refusal, serveDated, serveUnary, statusVerdict } from './jsonrpc.js';
import { REST_DATED_INPUT } from './dated.js';
import { quote } from './json.js';
import { startHttpServer, transportFailure } from './transports.js';
import { OpError, code } from '../protocol.js';

const passthrough = (target) => validator(target, (value) => value);

/** The answer of a procedure body: its JSON (none: an empty 200), or its Refusal as 400 or 500. */
function answer(c, body) {
  try {
    const output = body();
    return output === undefined ? c.body(null, 200) : c.json(output);
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    const invalid = e.kind === 'invalid';
    return c.json({ code: invalid ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', message: e.message }, invalid ? 400 : 500);
  }
}

/** The app: POST /unary and GET /nested/procedure_1. */
function app(counters, fault) {
  return new Hono()
    .post(`/${PROCEDURE}`, passthrough('json'), (c) => answer(c, () => serveUnary(counters, fault, c.req.valid('json'))))
    .get('/nested/procedure_1', passthrough('query'), (c) => answer(c, () => serveDated(counters, fault, c.req.valid('query'), REST_DATED_INPUT, true)));
}

/** Starts a hono-rest server; resolves to {address, close()}. Unknown routes: Hono's 404. */
export async function startHonoServer({ fault, counters, ...options }) {
  const listener = getRequestListener(app(counters, fault).fetch);
  return startHttpServer({ ...options, listener });
}

/** An answer with an error status, as hc hands it back (hc does not throw). */
class StatusError extends Error {
  constructor(status, text) {
    let said = text;
    try {
      said = JSON.parse(text).message ?? text;
    } catch {
      // not JSON: the text as it is
    }
    super(String(said));
    this.status = status;
  }
}

/** The output of an hc call: the JSON body (an empty body: none), or a StatusError. */
async function output(res) {
  const text = await res.text();
  if (!res.ok) throw new StatusError(res.status, text);
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new OpError(code.INVALID, `the server answered HTTP ${res.status} with a body that is not JSON: ${quote(text)}`);
  }
}

/** The official client over one HTTP/1.1 lane: hc on `fetch`. */
function httpClient(base, fetch) {
  const client = hc(base, { fetch });
  return {
    unary: async (json) => output(await client[PROCEDURE].$post({ json })),
    dated: async (input) => output(await client.nested.procedure_1.$get({ query: input })),
  };
}

/** HTTP statuses (400 BAD_REQUEST, 500 INTERNAL_SERVER_ERROR), and transport failures, as a verdict. */
function verdictOf(address, serverName, plaintext) {
  return (e) => {
    if (e instanceof StatusError) {
      const name = { 400: 'BAD_REQUEST', 500: 'INTERNAL_SERVER_ERROR' }[e.status] ?? `HTTP_${e.status}`;
      return statusVerdict(e.status, name, e.message);
    }
    if (e instanceof OpError) return { status: undefined, code: e.code, message: e.message };
    const failure = transportFailure(address, serverName, plaintext, e);
    return { status: undefined, code: failure.code, message: failure.message };
  };
}

/** What JsonLaneClient needs of Hono (HTTP only). */
export const HONO_LIBRARY = Object.freeze({
  httpClient,
  verdictOf,
  dated: Object.freeze({ input: REST_DATED_INPUT, form: 'iso' }),
});

/** The hono-rest client. */
export class HonoClient extends JsonLaneClient {
  constructor(options) {
    super(options, false, HONO_LIBRARY);
  }
}
