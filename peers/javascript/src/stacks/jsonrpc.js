// What the JSON RPC stacks (orpc-http, orpc-ws, trpc-http, trpc-ws, orpc-openapi, hono-rest)
// share: the server's procedure bodies (the bench's unary procedure, its server-stream procedure
// on the oRPC and tRPC stacks and, protocol 1.4, the dated one: validate, count, answer; or a
// conformance fault's answer) and the client's pool of lanes, one connection each (an HTTP/1.1
// keep-alive connection or a WebSocket), with the checks of every response, through the library's
// official client or (`--client-mode replay`, unary) replaying what it sent once (replay.js). A
// stack module gives the library calls (JsonLaneClient says which).
import { OpError, code, warn } from '../protocol.js';
import { checkRequest, checkResponse, request, responseTo } from '../workload.js';
import { VERDICT, judge, unaryFaultAnswer } from '../fault.js';
import { ENDING, faultRequests, streamPlan } from '../fault-streams.js';
import { ConnectionLanes } from './lanes.js';
import { requestFromJson, requestToJson, responseFromJson, responseToJson } from './json.js';
import { datedAnswer, datedAnswerProblem, datedFaultAnswer, datedFaultInput, datedInputProblem } from './dated.js';
import { HttpCapture, HttpReplayLane, ReplayCheck, SocketCapture, SocketReplayLane } from './replay.js';
import { fetchOn, openHttpLane, openWebSocket, transportFailure, turn } from './transports.js';

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

/**
 * The server's dated procedure (docs/peer-protocol.md 1.4 "Payload kinds", dated.js): check the
 * input against `expected` ("hello world", or the REST stacks' {who: "hello world"}), count it,
 * answer {name, date, input}; throws a Refusal otherwise. `rest`: the answer goes out as plain
 * JSON (a conformance fault then puts a number where the date belongs, not a string).
 */
export function serveDated(counters, fault, input, expected, rest = false) {
  counters.rpcs++;
  counters.requests++;
  const problem = fault === 'skip-validation' ? null : datedInputProblem(input, expected);
  if (problem) {
    counters.reject(problem);
    warn(`rejected a call with BAD_REQUEST: ${problem}`);
    throw new Refusal('invalid', problem);
  }
  if (fault === undefined) {
    counters.responses++;
    return datedAnswer(input);
  }
  const answer = datedFaultAnswer(fault, input, rest);
  if (answer.internal !== undefined) throw new Refusal('internal', answer.internal);
  counters.responses += answer.answers.length;
  if (answer.answers.length === 0) return undefined;
  return answer.answers.length === 1 ? answer.answers[0] : answer.answers;
}

/** `http(s)://` or `ws(s)://` and the server's authority, IPv6 in brackets. */
export function origin(scheme, plaintext, server) {
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  return `${scheme}${plaintext ? '' : 's'}://${host}:${server.port}`;
}

/** What one unary call counts. */
const ONE = Object.freeze({ requests: 1, responses: 1 });

/**
 * A client of a JSON RPC stack: one lane per connection (`lanes` of them, all opened, with their
 * TLS handshakes, in connect()), calls on a lane one after another, as the tcp stack. With
 * `clientMode` replay (replay.js) the validation operation goes through the official client and
 * is captured, and every later call replays it with a lean client on the lane's connection.
 */
export class JsonLaneClient extends ConnectionLanes {
  /**
   * `library` (a stack module) gives: `httpClient(base, fetch, agent)` and
   * `webSocketClient(options, onSocket)`, official clients {unary(json), dated(input),
   * serverStream(json) -> (a promise of) an async iterable of outputs (oRPC and tRPC only),
   * close()} (onSocket sees the `ws` socket before anything is sent on it; `agent` is the lane's
   * undici Agent, for what does not go through `fetch`); `webSocketUrl(options)`, the URL a lane's WebSocket opens;
   * `webSocketError(json)`, a message when a WebSocket answer is the library's error; `dated`,
   * {input, form} of the dated payload (dated.js); `verdictOf(address, serverName, plaintext)`,
   * which judges a failed call of the official client.
   */
  constructor(options, webSocket, library) {
    super(options.lanes);
    const { server, plaintext, serverName } = options;
    this.options = options;
    this.webSocket = webSocket;
    this.library = library;
    this.address = origin(webSocket ? 'ws' : 'http', plaintext, server);
    this.work = options.work;
    this.replay = options.clientMode === 'replay';
    this.verdictOf = library.verdictOf(this.address, serverName, plaintext);
    this.check = undefined;
  }

  async connect() {
    await this.openLanes((i) => this.openLane(i));
  }

  /**
   * Lane `i`: {official, replay, close()}. Official: the library's client on the lane's connection.
   * Replay: a lean client on it, and on lane 0 over HTTP also the official client whose fetch
   * captures (over WebSocket the validation opens an official client of its own).
   */
  async openLane(i) {
    const o = this.options;
    if (this.webSocket) {
      if (!this.replay) {
        const official = await this.library.webSocketClient(o);
        return { official, close: () => official.close() };
      }
      const url = this.library.webSocketUrl(o);
      const socket = await openWebSocket({ ...o, url });
      const replay = new SocketReplayLane(socket, (e) => transportFailure(url, o.serverName, o.plaintext, e));
      return { replay, close: () => replay.close() };
    }
    const base = origin('http', o.plaintext, o.server);
    const agent = await openHttpLane({ ...o, base });
    const lane = { close: () => agent.close() };
    if (!this.replay) {
      lane.official = this.library.httpClient(base, fetchOn(agent), agent);
    } else {
      lane.replay = new HttpReplayLane(agent, base);
      if (i === 0) {
        this.capture = new HttpCapture();
        lane.official = this.library.httpClient(base, this.capture.fetch(fetchOn(agent)), agent);
      }
    }
    return lane;
  }

  /**
   * One operation on `lane`: a server stream (serverStream), or a unary call with exactly one
   * response, carrying `seq` (or the dated answer), checked.
   */
  async call(lane, seq) {
    if (this.work.shape === 'server_stream') return this.serverStream(lane, seq);
    if (this.check !== undefined) return this.replayCall(lane);
    if (this.replay) return this.captureCall(seq);
    return this.officialCall(this.conns[lane].official, seq);
  }

  /** A call through the official client `client`, its output checked. */
  async officialCall(client, seq) {
    const { kind, requestSize, responseSize, dated } = this.work;
    let problem;
    if (dated) {
      const { input, form } = this.library.dated;
      const output = await this.guard(() => client.dated(input));
      problem = datedAnswerProblem(output, input, form);
    } else {
      const output = await this.guard(() => client.unary(requestToJson(request(kind, seq, requestSize, responseSize, 0))));
      const decoded = responseFromJson(output);
      problem = decoded.problem ?? checkResponse(decoded.response, kind, seq, responseSize);
    }
    if (problem) throw new OpError(code.INVALID, problem);
    return ONE;
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
    await this.guard(async () => {
      for await (const output of await this.conns[lane].official.serverStream(json)) {
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

  /** Replay's validation operation: an official call whose request and answer are captured. */
  async captureCall(seq) {
    let exchange;
    if (this.webSocket) {
      const capture = new SocketCapture();
      const client = await this.library.webSocketClient(this.options, (socket) => capture.attach(socket));
      try {
        await this.officialCall(client, seq);
      } finally {
        await client.close();
      }
      exchange = capture.take();
    } else {
      await this.officialCall(this.conns[0].official, seq);
      exchange = this.capture.take();
    }
    this.check = new ReplayCheck(exchange, this.work.dated ? this.library.dated : undefined);
    this.exchange = exchange;
    return ONE;
  }

  /** A replayed call on `lane`'s lean client, its answer checked against the captured one. */
  async replayCall(lane) {
    let answer;
    try {
      answer = await this.conns[lane].replay.exchange(this.exchange);
    } catch (e) {
      if (e instanceof OpError) throw e;
      throw transportFailure(this.address, this.options.serverName, this.options.plaintext, e);
    }
    const problem = this.check.problem(answer.status, answer.text, Date.now(), this.library.webSocketError);
    if (problem) throw problem;
    return ONE;
  }

  /** Runs a call of the official client; a library error becomes an OpError. */
  async guard(run) {
    try {
      return await run();
    } catch (e) {
      const verdict = this.verdictOf(e);
      throw new OpError(verdict.code, verdict.message);
    }
  }

  /** Sends `json` to the unary procedure through `lane`'s official client (tests). */
  send(lane, json) {
    return this.guard(() => this.conns[lane].official.unary(json));
  }

  /**
   * A conformance fault's malformed call (fault.js) on lane 0, then a well-formed one; resolves
   * when the server refused the first with BAD_REQUEST and served the second, else rejects with
   * an OpError (code `invalid` or `rpc`, or the transport's). With the dated payload the
   * malformed call is the procedure with an input other than "hello world".
   */
  async probe(mode) {
    const client = this.conns[0].official;
    let verdict;
    try {
      if (this.work.dated) await client.dated(datedFaultInput(mode, this.library.dated.input));
      else await this.malformedCall(client, mode);
      verdict = { status: VERDICT.OK, message: 'answered' };
    } catch (e) {
      verdict = this.verdictOf(e);
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

  /** A conformance fault's malformed request (fault-streams.js) on `client`, unary or server stream. */
  async malformedCall(client, mode) {
    const [malformed] = faultRequests(mode, this.work, request);
    const json = requestToJson(malformed);
    if (this.work.shape !== 'server_stream') return client.unary(json);
    for await (const _ of await client.serverStream(json)) void _;
    return undefined;
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
