// What the JSON RPC stacks (orpc-http, orpc-ws, trpc-http, trpc-ws) share: the server's unary
// and server-stream procedure bodies (validate, count, answer; or a conformance fault's answer)
// and the client's pool of lanes, one connection each (an HTTP/1.1 keep-alive connection or a
// WebSocket), with the checks of every response. A stack module gives the library calls:
// `openLane(index)` resolves to {send(json) -> output, stream(json) -> (a promise of) an async
// iterable of outputs, close()} once the lane's connection is open, and `verdictOf(error)` maps a
// library's error to {status (gRPC code), message, code (the protocol's error code)}.
import { OpError, code, warn } from '../protocol.js';
import { checkRequest, checkResponse, request, responseTo } from '../workload.js';
import { VERDICT, judge, unaryFaultAnswer } from '../fault.js';
import { ENDING, faultRequests, streamPlan } from '../fault-streams.js';
import { ConnectionLanes } from './lanes.js';
import { turn } from './transports.js';
import { requestFromJson, requestToJson, responseFromJson, responseToJson } from './json.js';

/** The procedure (oRPC) or mutation (tRPC) every unary call goes to. */
export const PROCEDURE = 'unary';

/** The procedure (oRPC: an event iterator; tRPC: a subscription) every server stream goes to. */
export const SERVER_STREAM = 'serverStream';

/** A refused call: `invalid` (the library's BAD_REQUEST) or `internal` (INTERNAL_SERVER_ERROR). */
export class Refusal extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

/**
 * The server's unary procedure: decode the JSON input, check it (docs/peer-protocol.md
 * "Validation duties"), count it, answer; throws a Refusal (counted in `rejected`) otherwise.
 * `fault`: a conformance fault mode (undefined when measuring).
 */
export function serveUnary(counters, fault, input) {
  const req = checkedInput(counters, fault, input, 'unary');
  if (fault === undefined) {
    counters.responses++;
    return responseToJson(responseTo(req, req.seq));
  }
  const answer = unaryFaultAnswer(fault, req);
  if (answer.internal !== undefined) throw new Refusal('internal', answer.internal);
  counters.responses += answer.responses.length;
  const json = answer.responses.map(responseToJson);
  if (json.length === 0) return undefined;
  return json.length === 1 ? json[0] : json;
}

/** A call's request, decoded, counted and checked for `shape`; a bad one is a counted Refusal. */
function checkedInput(counters, fault, input, shape) {
  counters.rpcs++;
  counters.requests++;
  const decoded = requestFromJson(input);
  let problem = decoded.problem;
  if (!problem && fault !== 'skip-validation') problem = checkRequest(decoded.request, shape);
  if (problem) {
    counters.reject(problem);
    warn(`rejected a call with BAD_REQUEST: ${problem}`);
    throw new Refusal('invalid', problem);
  }
  return decoded.request;
}

/**
 * The server's server-stream procedure: check the request as serveUnary does, then yield the
 * `response_messages` responses (a conformance fault's plan instead: fault-streams.js; the end of
 * an event stream cannot be followed by data, so early-status leaves the last one out), awaiting
 * `pace()` after each (transports.js: a turn of the event loop, over WebSocket the socket's drain).
 */
export async function* serveServerStream(counters, fault, input, pace = turn) {
  const req = checkedInput(counters, fault, input, 'server_stream');
  if (fault === undefined) {
    for (let i = 0; i < req.responseMessages; i++) {
      counters.responses++;
      yield responseToJson(responseTo(req, i));
      await pace();
    }
    return;
  }
  const plan = streamPlan(fault, 'server_stream', [req]);
  const messages = plan.ending === ENDING.OK_BEFORE_LAST ? plan.messages.slice(0, -1) : plan.messages;
  for (const response of messages) {
    counters.responses++;
    yield responseToJson(response);
    await pace();
  }
  if (plan.ending.internal !== undefined) throw new Refusal('internal', plan.ending.internal);
}

/** `iterable` with its Refusals thrown as the library's errors (`toError(refusal)`). */
export async function* refusalsAs(iterable, toError) {
  try {
    yield* iterable;
  } catch (e) {
    throw e instanceof Refusal ? toError(e) : e;
  }
}

/** `http(s)://` or `ws(s)://` and the server's authority, IPv6 in brackets. */
export function origin(scheme, plaintext, server) {
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  return `${scheme}${plaintext ? '' : 's'}://${host}:${server.port}`;
}

/**
 * A client of a JSON RPC stack: one lane per connection (`lanes` of them, all opened, with their
 * TLS handshakes, in connect()), calls on a lane one after another, as the tcp stack.
 */
export class JsonLaneClient extends ConnectionLanes {
  /**
   * `library` opens a lane over HTTP (`httpLane`) or WebSocket (`webSocketLane`) and judges a
   * failed call (`verdictOf(address, serverName, plaintext)`).
   */
  constructor(options, webSocket, library) {
    super(options.lanes);
    const { server, plaintext, serverName } = options;
    const address = origin(webSocket ? 'ws' : 'http', plaintext, server);
    this.work = options.work;
    this.stack = {
      openLane: () => (webSocket ? library.webSocketLane(options) : library.httpLane(options)),
      verdictOf: library.verdictOf(address, serverName, plaintext),
    };
  }

  async connect() {
    await this.openLanes((i) => this.stack.openLane(i));
  }

  /** One operation of the configured shape on `lane` (unary or server_stream). */
  call(lane, seq) {
    return this.work.shape === 'server_stream' ? this.serverStream(lane, seq) : this.unary(lane, seq);
  }

  /**
   * One server stream on `lane`: exactly `messages` responses with seq 0..N-1, checked as they
   * come, then the stream's end; leaving the loop early cancels the stream.
   */
  async serverStream(lane, seq) {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    const json = requestToJson(request(kind, seq, requestSize, responseSize, n));
    let received = 0;
    let problem;
    await this.failures(async () => {
      for await (const output of await this.conns[lane].stream(json)) {
        const decoded = received === n ? { problem: `the server sent more than the ${n} responses asked for` } : responseFromJson(output);
        problem = decoded.problem ?? checkResponse(decoded.response, kind, received, responseSize);
        if (problem) break;
        received++;
      }
    });
    if (problem) throw new OpError(code.INVALID, problem);
    if (received !== n) throw new OpError(code.INVALID, `the server ended the stream after ${received} of ${n} responses`);
    return { requests: 1, responses: n };
  }

  /** Runs `work()`; a library error becomes an OpError. */
  async failures(work) {
    try {
      return await work();
    } catch (e) {
      const verdict = this.stack.verdictOf(e);
      throw new OpError(verdict.code, verdict.message);
    }
  }

  /** One unary call on `lane`: exactly one response, carrying `seq`, checked. */
  async unary(lane, seq) {
    const { kind, requestSize, responseSize } = this.work;
    const output = await this.send(lane, requestToJson(request(kind, seq, requestSize, responseSize, 0)));
    const decoded = responseFromJson(output);
    const problem = decoded.problem ?? checkResponse(decoded.response, kind, seq, responseSize);
    if (problem) throw new OpError(code.INVALID, problem);
    return { requests: 1, responses: 1 };
  }

  /** Sends `json` on `lane`; a library error becomes an OpError. */
  send(lane, json) {
    return this.failures(() => this.conns[lane].send(json));
  }

  /**
   * A conformance fault's malformed call (fault.js) on lane 0, then a well-formed one; resolves
   * when the server refused the first with BAD_REQUEST and served the second, else rejects with
   * an OpError (code `invalid` or `rpc`, or the transport's).
   */
  async probe(mode) {
    const [malformed] = faultRequests(mode, this.work, request);
    const json = requestToJson(malformed);
    let verdict;
    try {
      if (this.work.shape === 'server_stream') {
        for await (const _ of await this.conns[0].stream(json)) void _;
      } else {
        await this.conns[0].send(json);
      }
      verdict = { status: VERDICT.OK, message: 'answered' };
    } catch (e) {
      verdict = this.stack.verdictOf(e);
      if (verdict.status === undefined) throw new OpError(verdict.code, verdict.message);
    }
    const wrong = judge(mode, verdict);
    if (wrong) throw new OpError(wrong.code, wrong.message);
    warn(`the server refused the malformed call with BAD_REQUEST: ${verdict.message}`);
    try {
      await this.call(0, 0);
    } catch (e) {
      throw new OpError(e.code, `the well-formed call after the malformed one failed: ${e.message}`);
    }
  }

  async close() {
    await Promise.allSettled(this.conns.map((c) => c.close()));
  }
}

/** The protocol error of a call the library reports failed with an HTTP status (or its code). */
export function statusVerdict(status, libraryCode, message) {
  const said = String(message ?? '');
  const text = `${libraryCode} (HTTP ${status ?? 'none'}): ${said.length > 200 ? `${said.slice(0, 200)}...` : said}`;
  if (libraryCode === 'BAD_REQUEST') return { status: VERDICT.INVALID_ARGUMENT, code: code.RPC, message: `the server refused the call with ${text}` };
  if (libraryCode === 'INTERNAL_SERVER_ERROR') return { status: VERDICT.INTERNAL, code: code.RPC, message: `the server ended the call with ${text}` };
  return { status: VERDICT.UNKNOWN, code: code.RPC, message: `the server ended the call with ${text}` };
}
