// What the JSON RPC stacks (orpc-http, orpc-ws, trpc-http, trpc-ws) share: the server's unary
// procedure body (validate, count, answer; or a conformance fault's answer) and the client's pool
// of lanes, one connection each (an HTTP/1.1 keep-alive connection or a WebSocket), with the
// checks of every response. A stack module gives the library calls: `openLane(index)` resolves to
// {send(json) -> output, close()} once the lane's connection is open, and `verdictOf(error)` maps
// a library's error to {status (gRPC code), message, code (the protocol's error code)}.
import { OpError, code, warn } from '../protocol.js';
import { checkRequest, checkResponse, request, responseTo } from '../workload.js';
import { VERDICT, faultRequest, judge, unaryFaultAnswer } from '../fault.js';
import { ConnectionLanes } from './lanes.js';
import { requestFromJson, requestToJson, responseFromJson, responseToJson } from './json.js';

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

  /** One unary call on `lane`: exactly one response, carrying `seq`, checked. */
  async call(lane, seq) {
    const { kind, requestSize, responseSize } = this.work;
    const output = await this.send(lane, requestToJson(request(kind, seq, requestSize, responseSize, 0)));
    const decoded = responseFromJson(output);
    const problem = decoded.problem ?? checkResponse(decoded.response, kind, seq, responseSize);
    if (problem) throw new OpError(code.INVALID, problem);
    return { requests: 1, responses: 1 };
  }

  /** Sends `json` on `lane`; a library error becomes an OpError. */
  async send(lane, json) {
    try {
      return await this.conns[lane].send(json);
    } catch (e) {
      const verdict = this.stack.verdictOf(e);
      throw new OpError(verdict.code, verdict.message);
    }
  }

  /**
   * A conformance fault's malformed call (fault.js) on lane 0, then a well-formed one; resolves
   * when the server refused the first with BAD_REQUEST and served the second, else rejects with
   * an OpError (code `invalid` or `rpc`, or the transport's).
   */
  async probe(mode) {
    const { kind, requestSize, responseSize } = this.work;
    const malformed = faultRequest(mode, request(kind, 0, requestSize, responseSize, 0));
    let verdict;
    try {
      await this.conns[0].send(requestToJson(malformed));
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
