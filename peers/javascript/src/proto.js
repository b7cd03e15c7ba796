// The workload's protobuf types (rpcarena.bench.v1), from build/bench.json, which build.sh
// generates from the repository's proto/ (scripts/gen-proto.js).
//
// uint64 fields decode to JavaScript numbers, not Long objects: every seq this peer sends is far
// below 2^53, and a received seq above 2^53 - 1 decodes to a number above
// Number.MAX_SAFE_INTEGER, which the server refuses (see workload.js) rather than echo inexactly.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

protobuf.util.Long = undefined;
protobuf.configure();

const here = path.dirname(fileURLToPath(import.meta.url));
/** The descriptor file the peer runs from (listed in capabilities `files`). */
export const DESCRIPTOR = path.resolve(here, '../build/bench.json');

function load() {
  let json;
  try {
    json = JSON.parse(fs.readFileSync(DESCRIPTOR, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read ${DESCRIPTOR} (${e.message}); run peers/javascript/build.sh first`);
  }
  return protobuf.Root.fromJSON(json);
}

const root = load();
const type = (name) => root.lookupType(`rpcarena.bench.v1.${name}`);

export const Request = type('Request');
export const Response = type('Response');
export const Summary = type('Summary');
export const Status = type('Status');
export const Structured = type('Structured');
export const Item = type('Item');
/** The acknowledgement of a one-way Command (1.3). */
export const Empty = type('Empty');

/** Method paths, exactly as gRPC names them (and the native framing's HEADER carries). */
export const METHOD = {
  unary: '/rpcarena.bench.v1.BenchService/Unary',
  client_stream: '/rpcarena.bench.v1.BenchService/ClientStream',
  server_stream: '/rpcarena.bench.v1.BenchService/ServerStream',
  bidi: '/rpcarena.bench.v1.BenchService/Bidi',
};

/**
 * The gRPC method of the one-way shape `send` (1.3). Not in METHOD: the native framing has no
 * one-way call, so a native server answers this path as any unknown method (UNIMPLEMENTED).
 */
export const COMMAND_METHOD = '/rpcarena.bench.v1.BenchService/Command';

/** The shape a method path names, or undefined. */
export function shapeOfPath(p) {
  for (const [shape, methodPath] of Object.entries(METHOD)) {
    if (methodPath === p) return shape;
  }
  return undefined;
}
