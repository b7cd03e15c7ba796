// The workload contract (proto/rpcarena/bench/v1/bench.proto, docs/peer-protocol.md "Payload
// kinds" and "Validation duties"): building requests and responses, the structured payload
// generation rule, and every check a client makes of a response and a server of a request.
// Pure: no I/O, no clock. Checks return an error message (a string) or null, so that the hot
// path never throws.

/** The shapes this peer drives as a client. */
export const SHAPES = Object.freeze(['unary', 'client_stream', 'server_stream', 'bidi']);
/**
 * The shapes its servers answer: pingpong (revision 1.2, docs/peer-protocol.md "Shapes") is the
 * Bidi RPC driven in lock-step, which every server here serves because its bidi handler answers
 * each request as soon as it has validated it (test/native.test.js, test/grpc.test.js).
 */
export const SERVER_SHAPES = Object.freeze([...SHAPES, 'pingpong']);
export const PAYLOADS = Object.freeze(['zeros', 'structured']);
/** Largest payload in either direction: 16 MiB. */
export const MAX_PAYLOAD = 16 * 1024 * 1024;
/** Largest protobuf message on the wire: the payload plus 1 KiB for the other fields. */
export const MAX_MESSAGE_BYTES = MAX_PAYLOAD + 1024;
/** Most messages in one streamed direction of an operation. */
export const MAX_MESSAGES = 1_000_000;
/** payload_kind values. */
export const KIND = Object.freeze({ zeros: 0, structured: 1 });
/** created_unix_ms of a structured payload is this plus seq mod 1e9. */
export const STRUCTURED_EPOCH_MS = 1_700_000_000_000;

/** Requests per operation of a shape with N messages per stream. */
export function requestsPerOp(shape, n) {
  return shape === 'client_stream' || shape === 'bidi' ? n : 1;
}

/** Responses per operation (a client-stream summary is one). */
export function responsesPerOp(shape, n) {
  return shape === 'server_stream' || shape === 'bidi' ? n : 1;
}

// ---------------------------------------------------------------------------------------------
// Zero payloads: one shared, never-written zero buffer; payloads are views of it.

let zeroBuffer = Buffer.alloc(64 * 1024);

/** A zero-filled payload of `len` bytes (a read-only view of a shared buffer). */
export function zeros(len) {
  if (len > zeroBuffer.length) {
    zeroBuffer = Buffer.alloc(Math.max(len, zeroBuffer.length * 2));
  }
  return zeroBuffer.subarray(0, len);
}

/** Whether every byte of `bytes` is zero (memcmp against the shared zero buffer). */
export function isAllZero(bytes) {
  return zeros(bytes.length).equals(bytes);
}

function firstNonZero(bytes) {
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0) return i;
  }
  return -1;
}

function checkZeros(what, payload, expectedLen) {
  const len = payload ? payload.length : 0;
  if (len !== expectedLen) {
    return `${what}: payload length ${len} but ${expectedLen} was requested`;
  }
  if (len > 0 && !isAllZero(payload)) {
    const pos = firstNonZero(payload);
    return `${what}: payload byte ${pos} is 0x${payload[pos].toString(16).padStart(2, '0')}, expected zero`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Protobuf sizes (proto3: default values are not encoded)

/** Bytes of a varint encoding `value` (a non-negative number; exact below 2^53). */
export function varintLength(value) {
  let n = 1;
  let v = value;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Tag, length varint and body of a length-delimited field with a body of `len` bytes. */
function fieldCost(len) {
  return 1 + varintLength(len) + len;
}

function stringCost(s) {
  return s.length === 0 ? 0 : fieldCost(Buffer.byteLength(s));
}

function itemLength(item) {
  let len = 0;
  if (item.id) len += 1 + varintLength(item.id);
  if (item.name) len += stringCost(item.name);
  if (item.score) len += 9;
  if (item.tags) {
    for (const tag of item.tags) len += fieldCost(Buffer.byteLength(tag));
  }
  return len;
}

/**
 * The encoded length of a Structured message (a decoded one or one built here), computed from
 * its fields as protobuf encodes them, so a receiver learns L without re-encoding. Map entries
 * count a key or value only when it is not empty (as prost does); ours are never empty.
 */
export function structuredLength(body) {
  if (!body) return 0;
  let len = 0;
  if (body.title) len += stringCost(body.title);
  const created = body.createdUnixMs;
  if (created) len += 1 + (created < 0 ? 10 : varintLength(created));
  if (body.items) {
    for (const item of body.items) len += fieldCost(itemLength(item));
  }
  if (body.attributes) {
    for (const [key, value] of Object.entries(body.attributes)) {
      len += fieldCost(stringCost(key) + stringCost(value));
    }
  }
  return len;
}

// ---------------------------------------------------------------------------------------------
// Structured(seq, S): docs/peer-protocol.md "Generation rule"

function item(k) {
  return { id: k + 1, name: `item-${k}`, score: (k + 1) * 0.25, tags: ['bench', `tag${k % 10}`] };
}

function title(seq, len) {
  const start = seq % 26;
  let text = '';
  for (let j = 0; j < len; j++) text += String.fromCharCode(97 + ((start + j) % 26));
  return text;
}

/**
 * The structured payload of message `seq` whose encoding is exactly `size` bytes (size 0 or at
 * least 3; sizes 1 and 2 give the empty message and are refused before this is called). Only
 * fields that are set are present, so any protobuf encoder writes exactly `size` bytes.
 */
export function structured(seq, size) {
  if (size < 3) return {};
  const seqText = String(seq);
  const created = STRUCTURED_EPOCH_MS + (seq % 1_000_000_000);
  const message = {};
  let used = 0;
  // created_unix_ms (tag + 6-byte varint) and the map entry {"seq": decimal(seq)}.
  const base = 1 + varintLength(created) + fieldCost(5 + 2 + seqText.length);
  if (base + 3 <= size) {
    message.createdUnixMs = created;
    message.attributes = { seq: seqText };
    used = base;
    const items = [];
    for (let k = 0; ; k++) {
      const next = item(k);
      const cost = fieldCost(itemLength(next));
      if (used + cost + 3 > size) break;
      used += cost;
      items.push(next);
    }
    if (items.length > 0) message.items = items;
  }
  // 3 <= rest <= 128: a title of rest - 2 characters has a one-byte length prefix.
  message.title = title(seq, size - used - 2);
  return message;
}

function sameItem(got, want) {
  if (Number(got.id) !== want.id || got.name !== want.name || got.score !== want.score) return false;
  const tags = got.tags ?? [];
  return tags.length === 2 && tags[0] === want.tags[0] && tags[1] === want.tags[1];
}

/** Which field of `body` differs from the expected message, or null when equal. */
function structuredDifference(body, expected) {
  if ((body.title ?? '') !== (expected.title ?? '')) return 'title';
  if (Number(body.createdUnixMs ?? 0) !== (expected.createdUnixMs ?? 0)) return 'created_unix_ms';
  const attributes = body.attributes ?? {};
  const keys = Object.keys(attributes);
  const wantAttributes = expected.attributes ?? {};
  const wantKeys = Object.keys(wantAttributes);
  if (keys.length !== wantKeys.length || wantKeys.some((k) => attributes[k] !== wantAttributes[k])) {
    return 'attributes';
  }
  const items = body.items ?? [];
  const wantItems = expected.items ?? [];
  const n = Math.min(items.length, wantItems.length);
  for (let k = 0; k < n; k++) {
    if (!sameItem(items[k], wantItems[k])) return `items[${k}]`;
  }
  if (items.length !== wantItems.length) return `items[${n}]`;
  return null;
}

/** Checks a structured body against Structured(seq, size) field by field. */
export function checkStructured(what, body, seq, size) {
  const len = structuredLength(body);
  if (len !== size) {
    return `${what}: structured payload encodes to ${len} bytes but ${size} was requested`;
  }
  return structuredMismatch(what, body, seq, size);
}

/** checkStructured for a body already known to encode to `size` bytes. */
function structuredMismatch(what, body, seq, size) {
  const field = structuredDifference(body ?? {}, structured(seq, size));
  if (field === null) return null;
  return `${what}: structured payload differs from the one generated for seq ${seq} and ${size} bytes in ${field}`;
}

function checkBody(what, kind, payload, body, seq, size) {
  if (kind === KIND.zeros) {
    if (body) return `${what}: a structured body where zero bytes were requested`;
    return checkZeros(what, payload, size);
  }
  if (payload && payload.length > 0) {
    return `${what}: ${payload.length} payload bytes where a structured body was requested`;
  }
  return checkStructured(what, body, seq, size);
}

/** The payload length of a message: its zero bytes or the encoded length of its body. */
export function payloadLength(message) {
  return (message.payload ? message.payload.length : 0) + structuredLength(message.body);
}

// ---------------------------------------------------------------------------------------------
// Client side

/** A request of payload `kind` (KIND.zeros or KIND.structured). */
export function request(kind, seq, requestSize, responseSize, responseMessages) {
  const message = { seq, responseSize, responseMessages, payloadKind: kind };
  if (kind === KIND.zeros) message.payload = zeros(requestSize);
  else message.body = structured(seq, requestSize);
  return message;
}

/** Checks one response: its seq and payload. */
export function checkResponse(response, kind, expectedSeq, responseSize) {
  if (response.seq !== expectedSeq) {
    return `response seq ${response.seq} but ${expectedSeq} was expected`;
  }
  return checkBody('response', kind, response.payload, response.body, expectedSeq, responseSize);
}

/** Checks a client stream's summary against `messages` requests of `requestSize` bytes. */
export function checkSummary(summary, kind, messages, requestSize, responseSize) {
  const expectedBytes = messages * requestSize;
  if (summary.count !== messages) {
    return `summary counts ${summary.count} messages but ${messages} were sent`;
  }
  if (summary.payloadBytes !== expectedBytes) {
    return `summary counts ${summary.payloadBytes} payload bytes but ${expectedBytes} were sent`;
  }
  if (messages > 0 && summary.lastSeq !== messages - 1) {
    return `summary last seq ${summary.lastSeq} but ${messages - 1} was sent last`;
  }
  return checkBody('summary', kind, summary.payload, summary.body, summary.lastSeq, responseSize);
}

// ---------------------------------------------------------------------------------------------
// Server side

/** The response to a unary or bidi request, or the `seq`-th message of a server stream. */
export function responseTo(req, seq) {
  if (req.payloadKind === KIND.structured) return { seq, body: structured(seq, req.responseSize) };
  return { seq, payload: zeros(req.responseSize) };
}

/**
 * Checks one request as the server must (docs/peer-protocol.md "Validation duties"). `index` is
 * the request's position in a client stream or bidi call (undefined for unary and server
 * stream), and `first` the stream's head (`streamHead` of its first request; undefined for the
 * first itself).
 */
export function checkRequest(req, shape, index, first) {
  const where = index === undefined ? 'request' : `request ${index}`;
  const kind = req.payloadKind;
  if (kind !== KIND.zeros && kind !== KIND.structured) {
    return `${where}: payload_kind ${kind} is neither 0 (zeros) nor 1 (structured)`;
  }
  if (req.seq > Number.MAX_SAFE_INTEGER) {
    return `${where}: seq ${req.seq} is above 2^53 - 1, which this server cannot echo exactly`;
  }
  if (index !== undefined && req.seq !== index) {
    return `${where}: seq ${req.seq}, expected ${index}`;
  }
  if (req.responseSize > MAX_PAYLOAD) {
    return `${where}: response_size ${req.responseSize} is above the maximum ${MAX_PAYLOAD}`;
  }
  if (kind === KIND.structured && (req.responseSize === 1 || req.responseSize === 2)) {
    return `${where}: response_size ${req.responseSize} cannot be built as a structured payload (0 or at least 3)`;
  }
  if (shape === 'server_stream' && !(req.responseMessages >= 1 && req.responseMessages <= MAX_MESSAGES)) {
    return `${where}: response_messages ${req.responseMessages} is outside 1..=${MAX_MESSAGES}`;
  }
  let length;
  if (kind === KIND.zeros) {
    if (req.body) return `${where}: a structured body in a zeros request`;
    length = req.payload ? req.payload.length : 0;
    if (length > 0 && !isAllZero(req.payload)) {
      const pos = firstNonZero(req.payload);
      return `${where}: payload byte ${pos} is 0x${req.payload[pos].toString(16).padStart(2, '0')}, expected zero`;
    }
  } else {
    if (req.payload && req.payload.length > 0) {
      return `${where}: ${req.payload.length} payload bytes in a structured request`;
    }
    length = structuredLength(req.body);
    if (length === 1 || length === 2) {
      return `${where}: a structured body of ${length} bytes cannot be generated (0 or at least 3)`;
    }
    // `length` is the body's own encoded length: only its fields remain to be compared.
    const problem = structuredMismatch(where, req.body, req.seq, length);
    if (problem) return problem;
  }
  if (first !== undefined) {
    if (kind !== first.payloadKind) {
      return `${where}: payload_kind ${kind} but the stream started with ${first.payloadKind}`;
    }
    if (length !== first.length) {
      return `${where}: payload length ${length} but the stream started with ${first.length}`;
    }
    if (req.responseSize !== first.responseSize) {
      return `${where}: response_size ${req.responseSize} but the stream started with ${first.responseSize}`;
    }
  }
  return null;
}

/** What every later request of a stream must repeat: payload kind, length and response size. */
export function streamHead(req) {
  return { payloadKind: req.payloadKind, length: payloadLength(req), responseSize: req.responseSize };
}

/** The server's running tally of a client stream, and the summary it answers with. */
export class SummaryBuilder {
  constructor() {
    this.count = 0;
    this.payloadBytes = 0;
    this.lastSeq = 0;
    this.responseSize = 0;
    this.kind = KIND.zeros;
  }

  /**
   * Counts `req`, whose payload is `length` bytes (its payloadLength; a caller that checked the
   * request against the stream's head passes the head's, which checkRequest found equal).
   */
  add(req, length = payloadLength(req)) {
    if (this.count === 0) {
      this.responseSize = req.responseSize;
      this.kind = req.payloadKind;
    }
    this.count++;
    this.payloadBytes += length;
    this.lastSeq = req.seq;
  }

  finish() {
    const summary = { count: this.count, payloadBytes: this.payloadBytes, lastSeq: this.lastSeq };
    if (this.kind === KIND.structured) summary.body = structured(this.lastSeq, this.responseSize);
    else summary.payload = zeros(this.responseSize);
    return summary;
  }
}
