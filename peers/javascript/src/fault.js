// Conformance faults (docs/stacks.md "Conformance faults"; the modes, names and expected codes of
// crates/peer/src/fault.rs) for the stacks no other peer offers, so that `rpcarena conformance`
// can pair this peer with itself there (FAULT_STACKS): the JSON stacks (orpc-http, orpc-ws,
// trpc-http, trpc-ws, orpc-openapi, hono-rest) and connect. This module maps the modes onto one
// reply per call (unary); streams follow fault-streams.js's plans; the dated payload's answers
// under each mode are stacks/dated.js's. `--conformance-fault MODE` is taken only on the command
// line, is not in `capabilities` and is refused on every other stack; a peer running one says so
// on stderr. Never measure with it. Pure: which answer a server mode gives, which request a
// client mode sends, and how a client mode judges the server's answer.
import { MAX_PAYLOAD, responseTo, structured } from './workload.js';
import { JSON_STACKS } from './offer.js';

export const FAULT_STACKS = Object.freeze([...JSON_STACKS, 'connect']);

export const SERVER_FAULTS = Object.freeze([
  'wrong-seq', 'short-payload', 'nonzero-byte', 'wrong-summary', 'missing-message', 'extra-message',
  'early-status', 'error-status', 'corrupt-structured', 'skip-validation',
]);

/** Client modes and what each sends (STREAM_ONLY: the shapes a stream mode applies to). */
export const CLIENT_FAULTS = Object.freeze({
  'nonzero-byte': 'a payload byte 0x01 in every request',
  'corrupt-structured': 'a structured body with one field changed in every request',
  'response-size-too-large': 'response_size 16777217, above the 16 MiB maximum',
  'seq-order': 'requests with seq 0, 2, 1, ... (out of order)',
  'length-change': "a second request whose payload length differs from the first's",
  'response-messages-zero': 'response_messages 0 in a server stream',
  'empty-stream': 'a request stream that ends before any request',
});

const STREAM_ONLY = Object.freeze({
  'seq-order': 'client_stream, bidi, pingpong',
  'length-change': 'client_stream, bidi, pingpong',
  'empty-stream': 'client_stream, bidi, pingpong',
  'response-messages-zero': 'server_stream',
});

/** Why a client mode cannot run with this shape and payload (undefined when it can). */
export function clientFaultRefusal(mode, shape, payload) {
  if (STREAM_ONLY[mode] !== undefined && !STREAM_ONLY[mode].split(', ').includes(shape)) {
    return `--conformance-fault ${mode} applies to --shape ${STREAM_ONLY[mode]}, not ${shape}`;
  }
  if (mode === 'corrupt-structured' && payload !== 'structured' && payload !== 'dated') {
    return '--conformance-fault corrupt-structured needs --payload structured (or dated, where it sends a wrong input)';
  }
  return undefined;
}

/** Changes one field of a structured body, keeping its encoded size (fault.rs corrupt_structured). */
export function corruptStructured(body, seq) {
  if (body.createdUnixMs) return { ...body, createdUnixMs: body.createdUnixMs + 1 };
  const base = body.title ? body : structured(seq, 3);
  const first = base.title.charCodeAt(0) - 97;
  const other = String.fromCharCode(97 + ((((first % 26) + 26) % 26) + 1) % 26);
  return { ...base, title: other + base.title.slice(1) };
}

/** A copy of `response` changed as `mode` says (modes that change a payload or its seq). */
export function corrupted(mode, response) {
  const { seq } = response;
  const out = { ...response };
  if (mode === 'wrong-seq') out.seq = seq + 1;
  else if (mode === 'short-payload') {
    if (out.body !== undefined) out.body = out.body.title ? { ...out.body, title: out.body.title.slice(0, -1) } : structured(seq, 3);
    else out.payload = out.payload.length === 0 ? Buffer.alloc(1) : out.payload.subarray(0, out.payload.length - 1);
  } else if (mode === 'nonzero-byte') {
    if (out.body !== undefined) out.payload = Buffer.from([1]);
    else out.payload = out.payload.length === 0 ? Buffer.from([1]) : Buffer.concat([out.payload.subarray(1), Buffer.from([1])]);
  } else if (mode === 'corrupt-structured') {
    if (out.body !== undefined) out.body = corruptStructured(out.body, seq);
    else out.body = structured(seq, 3);
  }
  return out;
}

/**
 * The answer of a server in `mode` to a unary request it validated (or did not: skip-validation):
 * {responses: [...]} (what the procedure returns: none, one, or two, which a single-reply JSON
 * stack sends as an array) or {internal: message} (the library's INTERNAL_SERVER_ERROR).
 * missing-message and early-status: nothing can follow a single reply, so the reply carries no
 * response message (the procedure returns undefined).
 */
export function unaryFaultAnswer(mode, req) {
  const response = responseTo(req, req.seq);
  switch (mode) {
    case 'missing-message':
    case 'early-status':
      return { responses: [] };
    case 'extra-message':
      return { responses: [response, responseTo(req, req.seq + 1)] };
    case 'error-status':
      return { internal: 'conformance fault error-status: INTERNAL instead of any response' };
    case 'wrong-summary':
      return { internal: 'conformance fault wrong-summary applies to client streams only' };
    case 'skip-validation':
      return { responses: [response] };
    default:
      return { responses: [corrupted(mode, response)] };
  }
}

/** The malformed unary request of a client mode (seq 0, the validation operation's). */
export function faultRequest(mode, req) {
  const out = { ...req };
  if (mode === 'nonzero-byte') {
    if (out.body !== undefined) out.payload = Buffer.from([1]);
    else out.payload = out.payload.length === 0 ? Buffer.from([1]) : Buffer.concat([out.payload.subarray(1), Buffer.from([1])]);
  } else if (mode === 'corrupt-structured') {
    out.body = corruptStructured(out.body ?? {}, out.seq);
  } else if (mode === 'response-size-too-large') {
    out.responseSize = MAX_PAYLOAD + 1;
  }
  return out;
}

/** gRPC status codes a verdict carries. */
export const VERDICT = Object.freeze({ OK: 0, UNKNOWN: 2, INVALID_ARGUMENT: 3, INTERNAL: 13 });

/**
 * Judges the server's answer `verdict` ({status, message}) to the malformed call of `mode`:
 * undefined when it passes (INVALID_ARGUMENT), else {code, message} of the validation error.
 */
export function judge(mode, verdict) {
  const call = `--conformance-fault ${mode}: ${CLIENT_FAULTS[mode]}`;
  if (verdict.status === VERDICT.INVALID_ARGUMENT) return undefined;
  if (verdict.status === VERDICT.OK) {
    return { code: 'invalid', message: `the server accepted a malformed call (${call}) and answered it; it must answer INVALID_ARGUMENT (3)` };
  }
  return {
    code: 'rpc',
    message: `the server answered a malformed call (${call}) with status ${verdict.status} (${JSON.stringify(verdict.message)}); expected INVALID_ARGUMENT (3)`,
  };
}
