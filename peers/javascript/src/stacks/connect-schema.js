// The workload's descriptors for @bufbuild/protobuf (the `connect` stack), derived at start from
// build/bench.json, the protobufjs descriptor build.sh generates from the repository's proto/
// (scripts/gen-proto.js): protobufjs's descriptor extension turns it into a FileDescriptorSet,
// whose type references it writes relative to their scope ("Structured"), as a .proto file
// would; a FileDescriptorProto names them fully (".rpcarena.bench.v1.Structured"), which
// @bufbuild/protobuf's createFileRegistry requires, so `qualify` writes them so. Nothing is
// generated into the repository.
//
// And the conversions between @bufbuild/protobuf's messages and the plain objects of
// workload.js: protobuf-es decodes 64-bit fields (seq, the summary's counts, created_unix_ms,
// an item's id) as BigInt, workload.js works with numbers (exact below 2^53, as in proto.js).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { createFileRegistry, fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import protobuf from 'protobufjs';
import { DESCRIPTOR } from '../proto.js';

const require = createRequire(import.meta.url);
const descriptor = require('protobufjs/ext/descriptor');

const PACKAGE = 'rpcarena.bench.v1';

/** protoc's json_name: the field name in lowerCamelCase. */
const jsonName = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/**
 * Rewrites the relative type names of a DescriptorProto's fields (and of its nested types') as
 * fully qualified names: those protobufjs resolved (`scope`, the message's reflection type) and
 * the map entries it declares as nested types of the message (`Attributes`). Sets json_name
 * where protobufjs left it out (it writes it only when it differs from the name), as protoc
 * always does: @bufbuild/protobuf's JSON codec reads it.
 */
function qualify(message, scope) {
  const nested = new Set(message.nestedType.map((n) => n.name));
  for (const field of message.field) {
    field.jsonName ||= jsonName(field.name);
    if (!field.typeName || field.typeName.startsWith('.')) continue;
    if (nested.has(field.typeName)) {
      field.typeName = `${scope.fullName}.${field.typeName}`;
      continue;
    }
    const target = scope.lookup(field.typeName);
    if (target === null) throw new Error(`connect-schema: ${scope.fullName}.${field.name} names ${field.typeName}, which build/bench.json does not define`);
    field.typeName = target.fullName;
  }
  for (const inner of message.nestedType) {
    const type = scope.get(inner.name);
    if (type) qualify(inner, type);
  }
}

/** The FileDescriptorSet of build/bench.json, as @bufbuild/protobuf's message. */
export function fileDescriptorSet() {
  // proto.js has read the file already (it fails with the build hint when it is missing).
  const root = protobuf.Root.fromJSON(JSON.parse(fs.readFileSync(DESCRIPTOR, 'utf8')));
  root.resolveAll();
  const set = root.toDescriptor('proto3');
  for (const file of set.file) {
    const ns = root.lookup(file.package);
    for (const message of file.messageType) qualify(message, ns.get(message.name));
  }
  return fromBinary(FileDescriptorSetSchema, descriptor.FileDescriptorSet.encode(set).finish());
}

const registry = createFileRegistry(fileDescriptorSet());

function need(kind, name) {
  const found = kind === 'service' ? registry.getService(`${PACKAGE}.${name}`) : registry.getMessage(`${PACKAGE}.${name}`);
  if (!found) throw new Error(`connect-schema: build/bench.json has no ${PACKAGE}.${name}; run peers/javascript/build.sh`);
  return found;
}

/** rpcarena.bench.v1.BenchService for @connectrpc/connect. */
export const BenchService = need('service', 'BenchService');
export const RequestSchema = need('message', 'Request');
export const ResponseSchema = need('message', 'Response');
export const SummarySchema = need('message', 'Summary');
export const EmptySchema = need('message', 'Empty');

// ---------------------------------------------------------------------------------------------
// Plain objects (workload.js) to message init shapes, and messages back to plain objects

function bodyInit(body) {
  if (body === undefined) return undefined;
  const init = {};
  if (body.title) init.title = body.title;
  if (body.createdUnixMs) init.createdUnixMs = BigInt(body.createdUnixMs);
  if (body.items) init.items = body.items.map((i) => ({ id: BigInt(i.id ?? 0), name: i.name ?? '', score: i.score ?? 0, tags: i.tags ?? [] }));
  if (body.attributes) init.attributes = body.attributes;
  return init;
}

/** A plain body from a decoded Structured message (absent: undefined). */
function bodyOf(message) {
  if (message === undefined) return undefined;
  const body = {};
  if (message.title) body.title = message.title;
  if (message.createdUnixMs) body.createdUnixMs = Number(message.createdUnixMs);
  if (message.items.length > 0) body.items = message.items.map((i) => ({ id: Number(i.id), name: i.name, score: i.score, tags: i.tags }));
  if (Object.keys(message.attributes).length > 0) body.attributes = message.attributes;
  return body;
}

/** A Request (workload.js `request`) as the init shape of rpcarena.bench.v1.Request. */
export function requestInit(req) {
  const init = { seq: BigInt(req.seq), responseSize: req.responseSize, responseMessages: req.responseMessages, payloadKind: req.payloadKind };
  if (req.payload !== undefined) init.payload = req.payload;
  if (req.body !== undefined) init.body = bodyInit(req.body);
  return init;
}

/** A decoded Request as workload.js's plain request. */
export function requestOf(message) {
  const req = { seq: Number(message.seq), responseSize: message.responseSize, responseMessages: message.responseMessages, payloadKind: message.payloadKind };
  if (message.payload.length > 0) req.payload = message.payload;
  const body = bodyOf(message.body);
  if (body !== undefined) req.body = body;
  return req;
}

/** A Response (workload.js `responseTo`) as the init shape of rpcarena.bench.v1.Response. */
export function responseInit(res) {
  const init = { seq: BigInt(res.seq) };
  if (res.payload !== undefined) init.payload = res.payload;
  if (res.body !== undefined) init.body = bodyInit(res.body);
  return init;
}

/** A decoded Response as a plain one. */
export function responseOf(message) {
  const res = { seq: Number(message.seq) };
  if (message.payload.length > 0) res.payload = message.payload;
  const body = bodyOf(message.body);
  if (body !== undefined) res.body = body;
  return res;
}

/** A Summary (SummaryBuilder.finish) as the init shape of rpcarena.bench.v1.Summary. */
export function summaryInit(summary) {
  const init = { count: BigInt(summary.count), payloadBytes: BigInt(summary.payloadBytes), lastSeq: BigInt(summary.lastSeq) };
  if (summary.payload !== undefined) init.payload = summary.payload;
  if (summary.body !== undefined) init.body = bodyInit(summary.body);
  return init;
}

/** A decoded Summary as a plain one. */
export function summaryOf(message) {
  const summary = { count: Number(message.count), payloadBytes: Number(message.payloadBytes), lastSeq: Number(message.lastSeq) };
  if (message.payload.length > 0) summary.payload = message.payload;
  const body = bodyOf(message.body);
  if (body !== undefined) summary.body = body;
  return summary;
}
