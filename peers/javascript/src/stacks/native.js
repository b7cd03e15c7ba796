// RPCs over the native framing (docs/stacks.md), written once for any byte transport: the client
// side of one operation (`call`, `saturate`) and the server side of one call (`serveCall`). The
// quic stack runs them on one QUIC stream per call, the tcp stack on one TLS connection per lane.
//
// A transport gives a FrameReader and an `io` with `write(buffer)` (resolves once the transport
// took the bytes: flow control pushes back here), `finish()` (ends the call's send side:
// QUIC FIN; nothing on a TCP connection that carries the next call) and optionally `end(buffer)`
// (the last bytes and the end together: QUIC's FIN rides on them). Frames are batched and
// flushed at 32 KiB, after the client's END, and when a server has answered everything it has
// already received, so a unary call is one write each way.
import { OpError, code, oneLine, warn } from '../protocol.js';
import { METHOD, Request, Response, Status, Summary, shapeOfPath } from '../proto.js';
import {
  SummaryBuilder,
  checkRequest,
  checkResponse,
  checkSummary,
  request,
  responseTo,
  streamHead,
} from '../workload.js';
import { nowNs } from '../clock.js';
import { Yielder } from '../engine/lanes.js';
import { FRAME, FRAME_NAME, FrameBatch, FramingError } from './framing.js';

/** gRPC status codes the native framing uses. */
export const STATUS = Object.freeze({ OK: 0, INVALID_ARGUMENT: 3, UNIMPLEMENTED: 12 });

const EMPTY = Buffer.alloc(0);
const METHOD_BYTES = Object.fromEntries(Object.entries(METHOD).map(([k, v]) => [k, Buffer.from(v)]));

// ---------------------------------------------------------------------------------------------
// Client

function invalid(message) {
  return new OpError(code.INVALID, message);
}

/** The OpError for an error thrown by a reader or writer. */
function transportError(e, what) {
  if (e instanceof OpError) return e;
  if (e instanceof FramingError) return invalid(`malformed frame from the server: ${e.message}`);
  return new OpError(code.CONNECT, `${what} failed: ${e?.message ?? e}`);
}

async function nextFrame(reader) {
  let frame;
  try {
    frame = await reader.next();
  } catch (e) {
    throw transportError(e, 'receiving from the server');
  }
  if (frame === null) throw new OpError(code.CONNECT, 'the server closed the stream before sending STATUS');
  return frame;
}

function decode(type, body, what) {
  try {
    return type.decode(body);
  } catch (e) {
    throw invalid(`undecodable ${what}: ${e.message}`);
  }
}

function checkStatus(body) {
  const status = decode(Status, body, 'STATUS frame');
  if (status.code !== STATUS.OK) {
    throw new OpError(code.RPC, `the server ended the call with status ${status.code}: ${status.message}`);
  }
}

function unexpected(type) {
  return invalid(`the server sent an unexpected ${FRAME_NAME[type]} frame`);
}

async function write(io, batch) {
  try {
    await io.write(batch.take());
  } catch (e) {
    throw transportError(e, 'sending to the server');
  }
}

/**
 * The last bytes of a call's send side, then its end: in one step where the transport offers it
 * (`io.end`: QUIC sends the FIN with the bytes, see stacks/quic.js), else write() and finish().
 */
async function writeLast(io, buffer) {
  if (io.end) return io.end(buffer);
  await io.write(buffer);
  return io.finish();
}

/** The client's END (with whatever the batch still holds) and the end of its send side. */
async function sendEnd(io, batch) {
  batch.add(FRAME.END, EMPTY);
  try {
    await writeLast(io, batch.take());
  } catch (e) {
    throw transportError(e, 'ending the request stream');
  }
}

/** HEADER, the requests (built lazily, inside the measured operation), END; flushed; finished. */
async function sendRequests(io, shape, count, build) {
  const batch = new FrameBatch();
  batch.add(FRAME.HEADER, METHOD_BYTES[shape]);
  const turn = count > 1 ? new Yielder(nowNs) : undefined;
  for (let i = 0; i < count; i++) {
    if (batch.add(FRAME.MESSAGE, Request.encode(build(i)).finish())) {
      await write(io, batch);
      await turn?.maybe();
    }
  }
  await sendEnd(io, batch);
}

/** Exactly one MESSAGE of `type`, then STATUS OK. */
async function readOne(reader, type) {
  const frame = await nextFrame(reader);
  if (frame.type === FRAME.STATUS) {
    checkStatus(frame.body);
    throw invalid('the server ended the call with STATUS OK but no response message');
  }
  if (frame.type !== FRAME.MESSAGE) throw unexpected(frame.type);
  const message = decode(type, frame.body, 'response message');
  const end = await nextFrame(reader);
  if (end.type === FRAME.MESSAGE) throw invalid('the server sent more than one response message');
  if (end.type !== FRAME.STATUS) throw unexpected(end.type);
  checkStatus(end.body);
  return message;
}

/** Exactly `n` responses with seq 0..n-1 (checked as they arrive), then STATUS OK. */
async function readResponses(reader, n, work) {
  for (let received = 0; ; ) {
    const frame = await nextFrame(reader);
    if (frame.type === FRAME.MESSAGE) {
      if (received === n) throw invalid(`the server sent more than the ${n} responses asked for`);
      const response = decode(Response, frame.body, 'response message');
      const problem = checkResponse(response, work.kind, received, work.responseSize);
      if (problem) throw invalid(problem);
      received++;
    } else if (frame.type === FRAME.STATUS) {
      checkStatus(frame.body);
      if (received !== n) throw invalid(`the server ended the call after ${received} of ${n} responses`);
      return;
    } else {
      throw unexpected(frame.type);
    }
  }
}

/** After STATUS a one-call stream must end (QUIC: the server finished its send side). */
async function expectEnd(reader) {
  let frame;
  try {
    frame = await reader.next();
  } catch (e) {
    throw transportError(e, 'receiving from the server');
  }
  if (frame !== null) throw invalid(`the server sent a ${FRAME_NAME[frame.type]} frame after STATUS`);
}

/**
 * One whole operation: requests built, encoded and sent, every response decoded and checked,
 * the terminal STATUS read and checked. `work`: {shape, kind, requestSize, responseSize,
 * messages}. Resolves to {requests, responses}.
 */
export async function call(reader, io, work, seq, oneCall) {
  const { shape, kind, requestSize, responseSize, messages: n } = work;
  let outcome;
  if (shape === 'unary') {
    await sendRequests(io, shape, 1, () => request(kind, seq, requestSize, responseSize, 0));
    const response = await readOne(reader, Response);
    const problem = checkResponse(response, kind, seq, responseSize);
    if (problem) throw invalid(problem);
    outcome = { requests: 1, responses: 1 };
  } else if (shape === 'client_stream') {
    await sendRequests(io, shape, n, (i) => request(kind, i, requestSize, responseSize, 0));
    const summary = await readOne(reader, Summary);
    const problem = checkSummary(summary, kind, n, requestSize, responseSize);
    if (problem) throw invalid(problem);
    outcome = { requests: n, responses: 1 };
  } else if (shape === 'server_stream') {
    await sendRequests(io, shape, 1, () => request(kind, seq, requestSize, responseSize, n));
    await readResponses(reader, n, work);
    outcome = { requests: 1, responses: n };
  } else {
    // Bidi, full duplex: all N requests go out without waiting while responses are read.
    const sending = sendRequests(io, shape, n, (i) => request(kind, i, requestSize, responseSize, 0));
    sending.catch(() => {});
    await Promise.all([sending, readResponses(reader, n, work)]);
    outcome = { requests: n, responses: n };
  }
  if (oneCall) await expectEnd(reader);
  return outcome;
}

/**
 * Send-saturation on one client stream: messages go out while `sender` admits them, each timed
 * from its start to the frame batch taking it (a flush, which waits for the transport, every
 * 32 KiB); then END, and the summary must confirm every message.
 */
export async function saturate(reader, io, work, sender, clock, oneCall) {
  const { kind, requestSize, responseSize } = work;
  const batch = new FrameBatch();
  batch.add(FRAME.HEADER, METHOD_BYTES.client_stream);
  const turn = new Yielder(clock);
  for (let seq = sender.next(clock()); seq >= 0; seq = sender.next(clock())) {
    const body = Request.encode(request(kind, seq, requestSize, responseSize, 0)).finish();
    if (batch.add(FRAME.MESSAGE, body)) {
      await write(io, batch);
      await turn.maybe();
    }
    sender.accepted(clock());
  }
  await sendEnd(io, batch);
  const summary = await readOne(reader, Summary);
  const problem = checkSummary(summary, kind, sender.sent, requestSize, responseSize);
  if (problem) throw invalid(problem);
  if (oneCall) await expectEnd(reader);
  sender.summaryReceived(clock());
}

// ---------------------------------------------------------------------------------------------
// Server

/**
 * Server counters for the `window` and `stopped` events: calls (`rpcs`, a Command included),
 * request and response messages, one-way commands received and validated (`commands`, 1.3), and
 * rejected calls with the message of the first (`first_rejection`, 1.3).
 */
export class ServerCounters {
  constructor() {
    this.rpcs = 0;
    this.requests = 0;
    this.responses = 0;
    this.commands = 0;
    this.rejected = 0;
    this.firstRejection = undefined;
  }

  /** A call answered with a non-OK status; `message` says why (kept for the first one). */
  reject(message) {
    this.rejected++;
    this.firstRejection ??= oneLine(message);
  }

  toEvent() {
    return {
      rpcs: String(this.rpcs),
      requests: String(this.requests),
      responses: String(this.responses),
      commands: String(this.commands),
      rejected: String(this.rejected),
    };
  }

  /** The fields a `window` or `stopped` event carries: counters, and first_rejection once set. */
  fields() {
    const fields = { counters: this.toEvent() };
    if (this.firstRejection !== undefined) fields.first_rejection = this.firstRejection;
    return fields;
  }
}

/** A well-framed but unacceptable call: answered with `status` once the client's END is read. */
class Rejected extends Error {
  constructor(status, message, endSeen) {
    super(message);
    this.status = status;
    this.endSeen = endSeen;
  }
}

/** A broken frame sequence: answered with INVALID_ARGUMENT where possible, then closed. */
class Broken extends Error {}

/** The transport failed or the client went away: nothing to answer. */
class Gone extends Error {}

const rejected = (message, endSeen) => new Rejected(STATUS.INVALID_ARGUMENT, message, endSeen);

async function serverFrame(reader) {
  let frame;
  try {
    frame = await reader.next();
  } catch (e) {
    if (e instanceof FramingError) throw new Broken(e.message);
    throw new Gone(e?.message);
  }
  if (frame === null) throw new Gone('the client closed the stream');
  return frame;
}

/** The next request of a call, or null at END. */
async function nextRequest(reader, shape) {
  const frame = await serverFrame(reader);
  if (frame.type === FRAME.END) return null;
  if (frame.type !== FRAME.MESSAGE) {
    throw new Broken(`unexpected ${FRAME_NAME[frame.type]} frame in a ${shape} call`);
  }
  try {
    return Request.decode(frame.body);
  } catch (e) {
    throw rejected(`the request is not a valid rpcarena.bench.v1.Request: ${e.message}`, false);
  }
}

async function send(io, batch) {
  try {
    await io.write(batch.take());
  } catch (e) {
    throw new Gone(e?.message);
  }
}

async function serveShape(shape, reader, io, batch, counters) {
  if (shape === 'unary' || shape === 'server_stream') {
    const req = await nextRequest(reader, shape);
    if (req === null) throw rejected(`a ${shape} call carries one request, got none`, true);
    counters.requests++;
    if ((await nextRequest(reader, shape)) !== null) {
      throw rejected(`a ${shape} call carries exactly one request, got more`, false);
    }
    const problem = checkRequest(req, shape);
    if (problem) throw rejected(problem, true);
    const count = shape === 'unary' ? 1 : req.responseMessages;
    const turn = count > 1 ? new Yielder(nowNs) : undefined;
    for (let i = 0; i < count; i++) {
      const response = responseTo(req, shape === 'unary' ? req.seq : i);
      counters.responses++;
      if (batch.add(FRAME.MESSAGE, Response.encode(response).finish())) {
        await send(io, batch);
        await turn?.maybe();
      }
    }
  } else if (shape === 'client_stream') {
    const summary = new SummaryBuilder();
    let head;
    for (let req = await nextRequest(reader, shape); req !== null; req = await nextRequest(reader, shape)) {
      counters.requests++;
      const problem = checkRequest(req, shape, summary.count, head);
      if (problem) throw rejected(problem, false);
      head ??= streamHead(req);
      summary.add(req, head.length);
    }
    if (summary.count === 0) throw rejected('a client stream carries at least one request', true);
    counters.responses++;
    batch.add(FRAME.MESSAGE, Summary.encode(summary.finish()).finish());
  } else {
    let head;
    let index = 0;
    for (let req = await nextRequest(reader, shape); req !== null; req = await nextRequest(reader, shape)) {
      counters.requests++;
      const problem = checkRequest(req, shape, index, head);
      if (problem) throw rejected(problem, false);
      head ??= streamHead(req);
      index++;
      counters.responses++;
      // Answer each request as it arrives: flush unless more input is already here.
      if (batch.add(FRAME.MESSAGE, Response.encode(responseTo(req, req.seq)).finish()) || !reader.hasFrame()) {
        await send(io, batch);
      }
    }
    if (index === 0) throw rejected('a bidi call carries at least one request', true);
  }
}

/** Drops frames up to the client's END; false if the framing or the transport broke first. */
async function skipToEnd(reader) {
  for (;;) {
    let frame;
    try {
      frame = await reader.next();
    } catch {
      return false;
    }
    if (frame === null) return false;
    if (frame.type === FRAME.END) return true;
    if (frame.type !== FRAME.MESSAGE) return false;
  }
}

/** STATUS, flushed, and the call's send side ended; false if the transport failed. */
async function reply(io, batch, status, message) {
  batch.add(FRAME.STATUS, status === STATUS.OK ? EMPTY : Status.encode({ code: status, message }).finish());
  try {
    await writeLast(io, batch.take());
    return true;
  } catch {
    return false;
  }
}

/**
 * Serves one call: HEADER, the method's requests, the answer, STATUS. Resolves to true when the
 * transport may carry the next call (tcp), false when it must be closed. Nothing a client sends
 * can throw out of here.
 */
export async function serveCall(reader, io, counters) {
  const batch = new FrameBatch();
  let header;
  try {
    header = await reader.next();
  } catch (e) {
    if (!(e instanceof FramingError)) return false;
    counters.reject(`a malformed frame before any call: ${e.message}`);
    await reply(io, batch, STATUS.INVALID_ARGUMENT, e.message);
    return false;
  }
  if (header === null) return false;
  counters.rpcs++;
  try {
    if (header.type !== FRAME.HEADER) {
      throw new Broken(`a call must start with a HEADER frame, not ${FRAME_NAME[header.type]}`);
    }
    const shape = shapeOfPath(header.body.toString('utf8'));
    if (shape === undefined) {
      throw new Rejected(STATUS.UNIMPLEMENTED, `unknown method ${JSON.stringify(header.body.toString('utf8'))}`, false);
    }
    await serveShape(shape, reader, io, batch, counters);
    return await reply(io, batch, STATUS.OK);
  } catch (e) {
    if (e instanceof Gone) return false;
    counters.reject(e.message);
    if (e instanceof Rejected) {
      warn(`rejected a call with status ${e.status}: ${e.message}`);
      const next = e.endSeen || (await skipToEnd(reader));
      return (await reply(io, batch, e.status, e.message)) && next;
    }
    if (e instanceof Broken) {
      warn(`closing a malformed call: ${e.message}`);
      await reply(io, batch, STATUS.INVALID_ARGUMENT, e.message);
      return false;
    }
    warn(`a call failed inside the server: ${e?.stack ?? e}`);
    await reply(io, new FrameBatch(), 13, `internal error: ${e?.message ?? e}`);
    return false;
  }
}
