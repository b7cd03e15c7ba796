// Conformance faults on every shape (docs/stacks.md "Conformance faults"; the modes, answers and
// malformed calls of crates/peer/src/fault.rs), for the stacks that carry streams and whose only
// conformance partner is this peer: `connect`, and the oRPC and tRPC stacks' streams. fault.js
// has the unary answers of the single-reply JSON stacks and the judgement of a malformed call;
// this module adds what a streamed shape needs. Pure: plain messages of workload.js in and out,
// no I/O; each stack sends the plan with its library and says where its wire cannot (docs).
import { SummaryBuilder, responseTo } from './workload.js';
import { corrupted, faultRequest } from './fault.js';

/** How a fault server ends a call: status OK, OK before the last message, or INTERNAL. */
export const ENDING = Object.freeze({ OK: 'ok', OK_BEFORE_LAST: 'ok-before-last' });

const PER_MESSAGE = new Set(['wrong-seq', 'short-payload', 'nonzero-byte', 'corrupt-structured']);

function internal(mode) {
  return {
    internal:
      mode === 'wrong-summary'
        ? 'conformance fault wrong-summary applies to client_stream calls only'
        : 'conformance fault error-status: INTERNAL instead of the answer',
  };
}

/** A summary changed as `mode` says (wrong-seq: last_seq + 1; wrong-summary: count + 1). */
function corruptedSummary(mode, summary) {
  if (mode === 'wrong-summary') return { ...summary, count: summary.count + 1 };
  if (mode === 'wrong-seq') return { ...summary, lastSeq: summary.lastSeq + 1 };
  const changed = corrupted(mode, { seq: summary.lastSeq, payload: summary.payload, body: summary.body });
  return { ...summary, payload: changed.payload, body: changed.body };
}

/** The correct answer to a validated call of `shape` (never bidi: see bidiStep). */
function correct(shape, requests) {
  const first = requests[0];
  if (shape === 'server_stream') return Array.from({ length: first.responseMessages }, (_, i) => responseTo(first, i));
  if (shape === 'client_stream') {
    const summary = new SummaryBuilder();
    for (const req of requests) summary.add(req);
    return [summary.finish()];
  }
  return [responseTo(first, first.seq)];
}

/** extra-message's one message more (fault.rs Answer::extra). */
function extra(shape, requests, messages) {
  const first = requests[0];
  if (shape === 'server_stream') return responseTo(first, first.responseMessages);
  return messages[messages.length - 1];
}

/**
 * What a server in `mode` answers to a unary, client-stream or server-stream call with the
 * (validated) `requests`: {messages, ending} with ending ENDING.OK, ENDING.OK_BEFORE_LAST or
 * {internal: message} (fault.rs `plan`). Unary's extra message is the one a stream would send
 * next (seq + 1), as on the single-reply stacks: a unary reply can carry only one message, and
 * its duplicate would be indistinguishable from the correct one (docs/stacks.md).
 */
export function streamPlan(mode, shape, requests) {
  let messages = correct(shape, requests);
  if (PER_MESSAGE.has(mode)) {
    messages = messages.map((m) => (shape === 'client_stream' ? corruptedSummary(mode, m) : corrupted(mode, m)));
    return { messages, ending: ENDING.OK };
  }
  switch (mode) {
    case 'wrong-summary':
      if (shape === 'client_stream') return { messages: messages.map((m) => corruptedSummary(mode, m)), ending: ENDING.OK };
      return { messages: [], ending: internal(mode) };
    case 'error-status':
      return { messages: [], ending: internal(mode) };
    case 'missing-message':
      return { messages: messages.slice(0, -1), ending: ENDING.OK };
    case 'extra-message': {
      const more = shape === 'unary' ? responseTo(requests[0], requests[0].seq + 1) : extra(shape, requests, messages);
      return { messages: [...messages, more], ending: ENDING.OK };
    }
    case 'early-status':
      return { messages, ending: ENDING.OK_BEFORE_LAST };
    default:
      return { messages, ending: ENDING.OK };
  }
}

/**
 * What a server in `mode` answers at once to one (validated) request of a bidi call:
 * {messages, ending} where ending is undefined (read the next request), ENDING.OK,
 * ENDING.OK_BEFORE_LAST or {internal} (fault.rs `bidi_request`: a lock-step client is never
 * left waiting for a response held back).
 */
export function bidiStep(mode, req) {
  const response = responseTo(req, req.seq);
  if (PER_MESSAGE.has(mode)) return { messages: [corrupted(mode, response)], ending: undefined };
  switch (mode) {
    case 'missing-message':
      return { messages: [], ending: ENDING.OK };
    case 'early-status':
      return { messages: [response], ending: ENDING.OK_BEFORE_LAST };
    case 'error-status':
    case 'wrong-summary':
      return { messages: [], ending: internal(mode) };
    default:
      return { messages: [response], ending: undefined };
  }
}

/** What a bidi call in `mode` sends after the client's end of stream, `last` its last request. */
export function bidiEnd(mode, last) {
  if (mode === 'extra-message' && last !== undefined) return [responseTo(last, last.seq + 1)];
  return [];
}

/** A command's answer (shape send): error-status is INTERNAL, every other mode the usual Empty. */
export function commandPlan(mode) {
  return mode === 'error-status' ? { internal: internal(mode).internal } : {};
}

// ---------------------------------------------------------------------------------------------
// Client modes: the malformed call's requests (fault.rs ClientFault::requests)

const STREAMED = new Set(['client_stream', 'bidi', 'pingpong']);

/** seq of request `index` in seq-order: 0, 2, 1, 3, 4, ... (a single request carries 1). */
function swapped(index, count) {
  if (index === 0 && count === 1) return 1;
  if (index === 1) return 2;
  if (index === 2) return 1;
  return index;
}

/** A length other than `size` that the kind can build: one byte less, or more where it must. */
function otherLength(kind, size) {
  if (kind === 0) return size === 0 ? 1 : size - 1;
  if (size === 0) return 3;
  return size === 3 ? 4 : size - 1;
}

/**
 * The requests of `mode`'s malformed call for `work` ({shape, kind, requestSize, responseSize,
 * messages}): `request(kind, seq, size, responseSize, responseMessages)` builds each as the
 * stack's workload does.
 */
export function faultRequests(mode, work, request) {
  const { shape, kind, requestSize, messages } = work;
  const responseSize = shape === 'send' ? 0 : work.responseSize;
  const responseMessages = shape === 'server_stream' ? messages : 0;
  let count = STREAMED.has(shape) ? messages : 1;
  if (mode === 'empty-stream') count = 0;
  if (mode === 'length-change') count = Math.max(messages, 2);
  const out = [];
  for (let i = 0; i < count; i++) {
    const seq = mode === 'seq-order' ? swapped(i, count) : i;
    const size = mode === 'length-change' && i === 1 ? otherLength(kind, requestSize) : requestSize;
    let req = faultRequest(mode, request(kind, seq, size, responseSize, responseMessages));
    if (mode === 'response-messages-zero') req = { ...req, responseMessages: 0 };
    out.push(req);
  }
  return out;
}
