// The `dated` payload kind (docs/peer-protocol.md 1.4, "Payload kinds"): the oRPC benchmarks'
// procedure `nested.procedure_1`, whose input is "hello world" and whose answer is
// {name: "nested/procedure_1", date: <the server's clock>, input}, encoded by the library's own
// serializer. The RPC stacks (orpc-*, trpc-*) take the string "hello world" and hand the client a
// revived Date; the REST stacks (orpc-openapi, hono-rest) take the query `who=hello world`, so
// their input is the object {who: "hello world"}, and answer the date as an ISO 8601 string.
// Pure: the server's check and answer (or a conformance fault's answer), the client's check of
// what its library decoded, the fault client's wrong input.
import { quote } from './json.js';

/** The procedure's path in the router, its `name` in the answer, and its fixed input. */
export const DATED_PATH = Object.freeze(['nested', 'procedure_1']);
export const DATED_NAME = 'nested/procedure_1';
export const DATED_INPUT = 'hello world';
/** The REST stacks' input: the query `?who=hello world`, which the libraries decode as this. */
export const REST_DATED_INPUT = Object.freeze({ who: DATED_INPUT });
/** How far the answer's date may be from the client's clock. */
export const DAY_MS = 86_400_000;
/** A date as JSON carries it (Date.prototype.toJSON): RFC 3339, ISO 8601 with seconds and a zone. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

const ANSWER_FIELDS = ['name', 'date', 'input'];
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** Whether `input` is the procedure's input `expected` (a string, or {who: string}). */
export function sameInput(input, expected) {
  if (typeof expected === 'string') return input === expected;
  if (!isObject(input)) return false;
  const keys = Object.keys(input);
  return keys.length === 1 && keys[0] === 'who' && input.who === expected.who;
}

/** The server's check of an input: null, or why it is refused (BAD_REQUEST). */
export function datedInputProblem(input, expected) {
  if (sameInput(input, expected)) return null;
  return `nested.procedure_1 takes the input ${quote(expected)}, got ${quote(input)}`;
}

/** The answer to a valid input. */
export function datedAnswer(input) {
  return { name: DATED_NAME, date: new Date(), input };
}

/** The input changed, for an answer that echoes another call's input (wrong-seq). */
function otherInput(input) {
  return typeof input === 'string' ? `${input}!` : { ...input, who: `${input.who}!` };
}

/**
 * The answer of a server in conformance fault `mode` (fault.js) to a dated call:
 * {answers: [...]} (none, one or two; two go out as an array) or {internal: message}.
 * wrong-seq echoes another input; nonzero-byte answers a valid date a year off the clock;
 * corrupt-structured a date that is not a date (the ISO string as a plain string, or on REST the
 * epoch milliseconds as a number); short-payload an Invalid Date, which each serializer writes as
 * it writes one (oRPC: null tagged as a Date, revived as an Invalid Date; superjson and JSON: null).
 */
export function datedFaultAnswer(mode, input, rest) {
  const answer = datedAnswer(input);
  switch (mode) {
    case 'missing-message':
    case 'early-status':
      return { answers: [] };
    case 'extra-message':
      return { answers: [answer, datedAnswer(input)] };
    case 'error-status':
      return { internal: 'conformance fault error-status: INTERNAL instead of any response' };
    case 'wrong-summary':
      return { internal: 'conformance fault wrong-summary applies to client streams only' };
    case 'wrong-seq':
      return { answers: [{ ...answer, input: otherInput(input) }] };
    case 'nonzero-byte':
      return { answers: [{ ...answer, date: new Date(answer.date.getTime() - 365 * DAY_MS) }] };
    case 'corrupt-structured':
      return { answers: [{ ...answer, date: rest ? answer.date.getTime() : answer.date.toISOString() }] };
    case 'short-payload':
      return { answers: [{ ...answer, date: new Date(Number.NaN) }] };
    default:
      return { answers: [answer] };
  }
}

/**
 * The client's check of a date: `revived` (the library must hand back a valid Date) or `iso` (a
 * string in ISO 8601 that parses); both within DAY_MS of `nowMs`. Null, or the problem.
 */
export function datedDateProblem(date, form, nowMs) {
  let ms;
  if (form === 'revived') {
    if (!(date instanceof Date)) return `the answer's date is ${quote(date)} (${typeof date}), not a revived Date`;
    ms = date.getTime();
    if (Number.isNaN(ms)) return 'the answer\'s date is an Invalid Date';
  } else {
    if (typeof date !== 'string' || !ISO_8601.test(date)) return `the answer's date ${quote(date)} is not an ISO 8601 date-time string`;
    ms = Date.parse(date);
    if (Number.isNaN(ms)) return `the answer's date ${quote(date)} does not parse as a date`;
  }
  const off = ms - nowMs;
  if (Math.abs(off) > DAY_MS) return `the answer's date ${new Date(ms).toISOString()} is ${(off / 3_600_000).toFixed(1)} h from the client's clock (at most 24 h)`;
  return null;
}

/**
 * The client's check of the answer its library decoded: an object of exactly name, date and
 * input, with the procedure's name, the input sent, and a date as `form` says. Null, or why not.
 */
export function datedAnswerProblem(output, expectedInput, form, nowMs = Date.now()) {
  if (output === undefined || output === null) return 'the server answered with no output';
  if (!isObject(output)) return `the answer is not an object but ${quote(output)}`;
  const extra = Object.keys(output).find((k) => !ANSWER_FIELDS.includes(k));
  if (extra !== undefined) return `the answer has an unknown field ${JSON.stringify(extra)}`;
  if (output.name !== DATED_NAME) return `the answer's name is ${quote(output.name)}, expected ${JSON.stringify(DATED_NAME)}`;
  if (!sameInput(output.input, expectedInput)) return `the answer's input is ${quote(output.input)}, expected ${quote(expectedInput)}`;
  return datedDateProblem(output.date, form, nowMs);
}

/** The wrong input a conformance fault client sends instead of "hello world" (fault.js). */
export function datedFaultInput(mode, expected) {
  const wrong = { 'nonzero-byte': 'hello world\u0001', 'corrupt-structured': 'hello worle', 'response-size-too-large': 'hello world'.repeat(2) }[mode];
  if (wrong === undefined) return undefined;
  return typeof expected === 'string' ? wrong : { who: wrong };
}
