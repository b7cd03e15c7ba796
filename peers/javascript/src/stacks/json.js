// Our messages as JSON values, for the stacks whose libraries carry JSON (orpc-http, orpc-ws,
// trpc-http, trpc-ws; docs/stacks.md "JSON RPC stacks of the JavaScript peer"). A Request is
// `{seq, responseSize, responseMessages, payloadKind, payload?, body?}`, a Response
// `{seq, payload?, body?}`: the fields of proto/rpcarena/bench/v1/bench.proto under their
// protobufjs (camelCase) names, zero payload bytes as a base64 string (RFC 4648, with padding;
// neither library's serializer has a byte type: tRPC has no transformer by default and oRPC's
// RPC serializer revives Date, BigInt, Map, Set, URL, RegExp and files but not Uint8Array), a
// structured body as the Structured message's fields. A field that is absent is its proto3
// default. Decoding is strict: anything that is not exactly this (a wrong type, an unknown
// field, base64 that does not round-trip) is refused with a message saying what and where, and
// the workload's checks (workload.js) then run on the decoded message as on every other stack.

const REQUEST_FIELDS = new Set(['seq', 'responseSize', 'responseMessages', 'payloadKind', 'payload', 'body']);
const RESPONSE_FIELDS = new Set(['seq', 'payload', 'body']);
const BODY_FIELDS = new Set(['title', 'createdUnixMs', 'items', 'attributes']);
const ITEM_FIELDS = new Set(['id', 'name', 'score', 'tags']);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A short description of a JSON value for an error message (at most 200 characters). */
export function quote(value) {
  let text;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUint = (v) => Number.isSafeInteger(v) && v >= 0;

function unknownField(value, fields) {
  return Object.keys(value).find((k) => !fields.has(k));
}

/** Zero payload bytes as JSON: base64, or nothing for an empty payload. */
export function encodeBytes(bytes) {
  return bytes && bytes.length > 0 ? bytes.toString('base64') : undefined;
}

/** base64 back to bytes; a string that is not canonical base64 gives a problem string. */
function decodeBytes(what, text) {
  if (text === undefined) return { bytes: undefined };
  if (typeof text !== 'string' || !BASE64.test(text)) {
    return { problem: `${what}: payload ${quote(text).slice(0, 60)} is not a base64 string` };
  }
  return { bytes: Buffer.from(text, 'base64') };
}

function itemProblem(item, k) {
  if (!isObject(item)) return `items[${k}] is not an object`;
  const extra = unknownField(item, ITEM_FIELDS);
  if (extra !== undefined) return `items[${k}] has an unknown field ${JSON.stringify(extra)}`;
  if (item.id !== undefined && !isUint(item.id)) return `items[${k}].id is not a whole number`;
  if (item.name !== undefined && typeof item.name !== 'string') return `items[${k}].name is not a string`;
  if (item.score !== undefined && typeof item.score !== 'number') return `items[${k}].score is not a number`;
  if (item.tags !== undefined && !(Array.isArray(item.tags) && item.tags.every((t) => typeof t === 'string'))) {
    return `items[${k}].tags is not an array of strings`;
  }
  return null;
}

/** What is wrong with a structured body's JSON (null when it has the Structured fields). */
export function bodyProblem(body) {
  if (!isObject(body)) return `the body is not an object but ${quote(body)}`;
  const extra = unknownField(body, BODY_FIELDS);
  if (extra !== undefined) return `the body has an unknown field ${JSON.stringify(extra)}`;
  if (body.title !== undefined && typeof body.title !== 'string') return 'the body\'s title is not a string';
  if (body.createdUnixMs !== undefined && !Number.isSafeInteger(body.createdUnixMs)) return 'the body\'s createdUnixMs is not a whole number';
  if (body.items !== undefined) {
    if (!Array.isArray(body.items)) return 'the body\'s items is not an array';
    for (let k = 0; k < body.items.length; k++) {
      const problem = itemProblem(body.items[k], k);
      if (problem) return `the body's ${problem}`;
    }
  }
  if (body.attributes !== undefined) {
    if (!isObject(body.attributes) || !Object.values(body.attributes).every((v) => typeof v === 'string')) {
      return 'the body\'s attributes is not an object of strings';
    }
  }
  return null;
}

/** The payload and body of a decoded message, or {problem}. */
function decodePayload(what, value) {
  const { bytes, problem } = decodeBytes(what, value.payload);
  if (problem) return { problem };
  if (value.body !== undefined) {
    const wrong = bodyProblem(value.body);
    if (wrong) return { problem: `${what}: ${wrong}` };
  }
  return { payload: bytes, body: value.body };
}

/** A Request as JSON. */
export function requestToJson(req) {
  const json = { seq: req.seq, responseSize: req.responseSize, responseMessages: req.responseMessages, payloadKind: req.payloadKind };
  const payload = encodeBytes(req.payload);
  if (payload !== undefined) json.payload = payload;
  if (req.body !== undefined) json.body = req.body;
  return json;
}

/** A Request from JSON: {request} or {problem}. */
export function requestFromJson(value) {
  if (!isObject(value)) return { problem: `the request is not a JSON object but ${quote(value)}` };
  const extra = unknownField(value, REQUEST_FIELDS);
  if (extra !== undefined) return { problem: `the request has an unknown field ${JSON.stringify(extra)}` };
  for (const name of ['seq', 'responseSize', 'responseMessages', 'payloadKind']) {
    if (value[name] !== undefined && !isUint(value[name])) {
      return { problem: `the request's ${name} ${quote(value[name])} is not a whole number from 0 to 2^53 - 1` };
    }
  }
  const decoded = decodePayload('request', value);
  if (decoded.problem) return decoded;
  const request = {
    seq: value.seq ?? 0,
    responseSize: value.responseSize ?? 0,
    responseMessages: value.responseMessages ?? 0,
    payloadKind: value.payloadKind ?? 0,
  };
  if (decoded.payload !== undefined) request.payload = decoded.payload;
  if (decoded.body !== undefined) request.body = decoded.body;
  return { request };
}

/** A Response as JSON. */
export function responseToJson(res) {
  const json = { seq: res.seq };
  const payload = encodeBytes(res.payload);
  if (payload !== undefined) json.payload = payload;
  if (res.body !== undefined) json.body = res.body;
  return json;
}

/** A Response from JSON: {response} or {problem}. */
export function responseFromJson(value) {
  if (value === undefined || value === null) return { problem: 'the server answered with no response message' };
  if (!isObject(value)) return { problem: `the response is not a JSON object but ${quote(value)}` };
  const extra = unknownField(value, RESPONSE_FIELDS);
  if (extra !== undefined) return { problem: `the response has an unknown field ${JSON.stringify(extra)}` };
  if (value.seq !== undefined && !isUint(value.seq)) return { problem: `the response's seq ${quote(value.seq)} is not a whole number` };
  const decoded = decodePayload('response', value);
  if (decoded.problem) return decoded;
  const response = { seq: value.seq ?? 0 };
  if (decoded.payload !== undefined) response.payload = decoded.payload;
  if (decoded.body !== undefined) response.body = decoded.body;
  return { response };
}
