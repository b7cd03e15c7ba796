// `--client-mode replay` (docs/peer-protocol.md 1.4, "Client modes") for the JSON stacks: the
// validation operation goes through the library's official client while this module captures
// what that client put on the wire (over HTTP the request the link handed to its fetch: method,
// URL with its query, headers and body, and the response it read; over WebSocket the one message
// it sent and the one it received), and every later call sends the captured request as-is on the
// lane's own connection with a lean client (undici's `request` on the lane's keep-alive
// connection, or `send` on the lane's `ws` socket), then checks the answer against the captured
// one: the same HTTP status and the same JSON, except the `date` of the dated payload, which is
// checked as dated.js says (revived as the library's serializer metadata says: the metadata is
// part of what must equal the captured answer).
import { isDeepStrictEqual } from 'node:util';
import { OpError, code } from '../protocol.js';
import { quote } from './json.js';
import { datedDateProblem } from './dated.js';

/** A body as text, cut to 200 characters for a message. */
function cut(text) {
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/**
 * Records what a fetch-based official client sends and reads: `fetch(inner)` wraps the fetch it
 * would use; `take()` returns the one exchange of the call, and refuses any other count.
 */
export class HttpCapture {
  constructor() {
    this.exchanges = [];
  }

  fetch(inner) {
    return async (input, init) => {
      const req = new Request(input, init);
      const body = req.body === null ? undefined : Buffer.from(await req.clone().arrayBuffer());
      const url = new URL(req.url);
      const request = { method: req.method, path: `${url.pathname}${url.search}`, headers: Object.fromEntries(req.headers), body };
      const res = await inner(req);
      const text = await res.clone().text();
      this.exchanges.push({ request, status: res.status, text });
      return res;
    };
  }

  take() {
    const n = this.exchanges.length;
    if (n !== 1) throw new OpError(code.INTERNAL, `the official client made ${n} HTTP requests for one call; replay needs exactly one to capture`);
    return this.exchanges.pop();
  }
}

/** Records the messages an official client sends and receives on its `ws` socket. */
export class SocketCapture {
  constructor() {
    this.sent = [];
    this.received = [];
  }

  /** Wraps `socket.send` and listens to its messages (before the client sends anything). */
  attach(socket) {
    const send = socket.send.bind(socket);
    socket.send = (data, ...rest) => {
      this.sent.push({ data: typeof data === 'string' ? data : Buffer.from(data), binary: typeof data !== 'string' });
      return send(data, ...rest);
    };
    socket.on('message', (data, binary) => this.received.push(binary ? Buffer.from(data).toString('base64') : data.toString()));
  }

  take() {
    if (this.sent.length !== 1 || this.received.length !== 1) {
      throw new OpError(code.INTERNAL, `the official client sent ${this.sent.length} and received ${this.received.length} WebSocket messages for one call; replay needs exactly one of each to capture`);
    }
    return { message: this.sent[0], status: undefined, text: this.received[0] };
  }
}

/** The path of the key `date` holding a string (or null) in a parsed answer, or undefined. */
function datePath(value, path = []) {
  if (typeof value !== 'object' || value === null) return undefined;
  if (!Array.isArray(value) && Object.hasOwn(value, 'date') && (typeof value.date === 'string' || value.date === null)) return [...path, 'date'];
  for (const [k, v] of Object.entries(value)) {
    const found = datePath(v, [...path, k]);
    if (found) return found;
  }
  return undefined;
}

/**
 * The check of a replayed answer against the captured one. `dated`: {form} of the stack's date
 * ('revived': the captured metadata tags it as a Date, so it is revived with `new Date`; 'iso':
 * an ISO 8601 string), or undefined for zeros and structured (the answer must equal the captured
 * one; the lane repeats the captured call, seq included).
 */
export class ReplayCheck {
  constructor(exchange, dated) {
    this.status = exchange.status;
    this.text = exchange.text;
    this.form = dated?.form;
    if (dated === undefined) return;
    this.json = JSON.parse(exchange.text);
    this.path = datePath(this.json);
    if (this.path === undefined) throw new OpError(code.INTERNAL, `the captured answer has no date field to replay against: ${cut(exchange.text)}`);
    this.capturedDate = this.dateIn(this.json).get();
  }

  /** A getter and setter of the date in `json` (at the captured path). */
  dateIn(json) {
    let at = json;
    for (const k of this.path.slice(0, -1)) at = at?.[k];
    return { get: () => at?.date, set: (v) => { if (typeof at === 'object' && at !== null) at.date = v; } };
  }

  /**
   * Null when a replayed answer (`status`, `text`) matches, else an OpError to throw: `rpc` for an
   * error status, or an answer that `errorOf(json)` says is the library's error message (over
   * WebSocket), else `invalid`.
   */
  problem(status, text, nowMs, errorOf) {
    if (status !== this.status) {
      const failed = status >= 400 ? code.RPC : code.INVALID;
      return new OpError(failed, `the replayed call was answered HTTP ${status}, the captured one ${this.status}: ${cut(text)}`);
    }
    if (this.form === undefined && text === this.text) return null;
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      return new OpError(code.INVALID, `the replayed call's answer is not JSON: ${cut(text)}`);
    }
    let value;
    if (this.form !== undefined) {
      const date = this.dateIn(json);
      value = date.get();
      date.set(this.capturedDate);
    }
    this.json ??= JSON.parse(this.text);
    if (!isDeepStrictEqual(json, this.json)) {
      const error = errorOf?.(json);
      if (error !== undefined) return new OpError(code.RPC, `the replayed call was refused: ${cut(text)}`);
      const except = this.form === undefined ? '' : ' (the same except its date)';
      return new OpError(code.INVALID, `the replayed call's answer differs from the captured one${except}: got ${cut(text)}, captured ${cut(this.text)}`);
    }
    if (this.form === undefined) return null;
    const problem = this.form === 'revived' ? revivedProblem(value, nowMs) : datedDateProblem(value, 'iso', nowMs);
    return problem ? new OpError(code.INVALID, problem) : null;
  }
}

/** A date the captured metadata tags as a Date: revived as the libraries revive one. */
function revivedProblem(value, nowMs) {
  if (typeof value !== 'string' && value !== null) return `the answer's date ${quote(value)} is not a serialized Date`;
  return datedDateProblem(new Date(value ?? Number.NaN), 'revived', nowMs);
}

/** A lean HTTP/1.1 client of one lane: the captured request on the lane's undici Agent. */
export class HttpReplayLane {
  constructor(agent, origin) {
    this.agent = agent;
    this.origin = origin;
  }

  async exchange({ request }) {
    const { statusCode, body } = await this.agent.request({ origin: this.origin, ...request });
    return { status: statusCode, text: await body.text() };
  }

  close() {
    return this.agent.close();
  }
}

/**
 * A lean WebSocket client of one lane: the captured message sent as-is (its id kept), one call in
 * flight, the next message read as its answer. A socket that closes fails the call in flight.
 */
export class SocketReplayLane {
  constructor(socket, failure) {
    this.socket = socket;
    this.pending = undefined;
    socket.on('message', (data, binary) => {
      const pending = this.pending;
      this.pending = undefined;
      pending?.resolve({ status: undefined, text: binary ? Buffer.from(data).toString('base64') : data.toString() });
    });
    socket.on('close', (closeCode, reason) => {
      const pending = this.pending;
      this.pending = undefined;
      pending?.reject(failure(new Error(`the WebSocket closed (code ${closeCode}${reason.length ? `, ${reason}` : ''}) before the answer`)));
    });
  }

  exchange({ message }) {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.send(message.data, { binary: message.binary });
    });
  }

  async close() {
    this.socket.close();
  }
}
