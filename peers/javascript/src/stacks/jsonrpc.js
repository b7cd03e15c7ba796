// What the JSON RPC stacks (orpc-http, orpc-ws, trpc-http, trpc-ws, orpc-openapi, hono-rest)
// share: the server's procedure bodies (the bench's unary procedure and, protocol 1.4, the dated
// one: validate, count, answer; or a conformance fault's answer) and the client's pool of lanes,
// one connection each (an HTTP/1.1 keep-alive connection or a WebSocket), with the checks of
// every response, through the library's official client or (`--client-mode replay`) replaying
// what it sent once (replay.js). A stack module gives the library calls (JsonLaneClient says which).
import { OpError, code, warn } from '../protocol.js';
import { checkRequest, checkResponse, request, responseTo } from '../workload.js';
import { VERDICT, faultRequest, judge, unaryFaultAnswer } from '../fault.js';
import { ConnectionLanes } from './lanes.js';
import { requestFromJson, requestToJson, responseFromJson, responseToJson } from './json.js';
import { datedAnswer, datedAnswerProblem, datedFaultAnswer, datedFaultInput, datedInputProblem } from './dated.js';
import { HttpCapture, HttpReplayLane, ReplayCheck, SocketCapture, SocketReplayLane } from './replay.js';
import { fetchOn, openHttpLane, openWebSocket, transportFailure } from './transports.js';

/** The procedure (oRPC) or mutation (tRPC) every unary call goes to. */
export const PROCEDURE = 'unary';

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
  counters.rpcs++;
  counters.requests++;
  const decoded = requestFromJson(input);
  let problem = decoded.problem;
  if (!problem && fault !== 'skip-validation') problem = checkRequest(decoded.request, 'unary');
  if (problem) {
    counters.reject(problem);
    warn(`rejected a call with BAD_REQUEST: ${problem}`);
    throw new Refusal('invalid', problem);
  }
  const req = decoded.request;
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
   * `library` (a stack module) gives: `httpClient(base, fetch)` and `webSocketClient(options,
   * onSocket)`, official clients {unary(json), dated(input), close()} (onSocket sees the `ws` socket
   * before anything is sent on it); `webSocketUrl(options)`, the URL a lane's WebSocket opens;
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
      lane.official = this.library.httpClient(base, fetchOn(agent));
    } else {
      lane.replay = new HttpReplayLane(agent, base);
      if (i === 0) {
        this.capture = new HttpCapture();
        lane.official = this.library.httpClient(base, this.capture.fetch(fetchOn(agent)));
      }
    }
    return lane;
  }

  /** One unary call on `lane`: exactly one response, carrying `seq` (or the dated answer), checked. */
  async call(lane, seq) {
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
    const { kind, requestSize, responseSize, dated } = this.work;
    const client = this.conns[0].official;
    let verdict;
    try {
      if (dated) await client.dated(datedFaultInput(mode, this.library.dated.input));
      else await client.unary(requestToJson(faultRequest(mode, request(kind, 0, requestSize, responseSize, 0))));
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
