// What each stack of this peer offers (docs/peer-protocol.md "capabilities", revision 1.4): the
// shapes per role, the payload kinds and client modes, the `--tls` values it takes, and why it
// does not carry a shape. The argument parser refuses what is not offered with these reasons, and
// `capabilities` declares the same.
import { PAYLOADS, SERVER_SHAPES, SHAPES } from './workload.js';

export const STACKS = Object.freeze(['grpc', 'quic', 'tcp', 'orpc-http', 'orpc-ws', 'trpc-http', 'trpc-ws', 'orpc-openapi', 'hono-rest', 'connect']);

/** The REST stacks (docs/stacks.md): JSON over HTTP/1.1 with one route per procedure. */
export const REST_STACKS = Object.freeze(['orpc-openapi', 'hono-rest']);

/**
 * The JSON RPC stacks (oRPC, tRPC and the REST stacks, docs/stacks.md): unary, and server
 * streams on the oRPC and tRPC ones.
 */
export const JSON_STACKS = Object.freeze(['orpc-http', 'orpc-ws', 'trpc-http', 'trpc-ws', ...REST_STACKS]);

/** The payload kind of protocol 1.4 that only the JSON stacks carry (stacks/dated.js). */
export const DATED = 'dated';

/** The payload kinds a stack carries, both roles. */
export function payloadsOf(stack) {
  return JSON_STACKS.includes(stack) ? [...PAYLOADS, DATED] : [...PAYLOADS];
}

/** `--client-mode` values (1.4), and the stacks whose client takes them (the others take none). */
export const CLIENT_MODES = Object.freeze(['official', 'replay']);

/** The client modes of a stack's client, or undefined (no `--client-mode`: official only). */
export function clientModesOf(stack) {
  return JSON_STACKS.includes(stack) ? [...CLIENT_MODES] : undefined;
}

/** The one-way shape (1.3): one Command, acknowledged by an Empty; gRPC only here. */
export const SEND = 'send';

/** `--tls` values per stack: QUIC has TLS 1.3 inside and cannot run without it. */
export const TLS_MODES = Object.freeze({
  grpc: Object.freeze(['on', 'off']),
  quic: Object.freeze(['on']),
  tcp: Object.freeze(['on', 'off']),
  connect: Object.freeze(['on', 'off']),
  ...Object.fromEntries(JSON_STACKS.map((s) => [s, Object.freeze(['on', 'off'])])),
});

/** Why a stack refuses `--tls off`, for the config error. */
export const TLS_OFF_REFUSED = Object.freeze({
  quic: 'QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic',
});

/** What a REST stack does not carry, and why. */
function restNotOffered() {
  const streams = 'not mapped: a REST route here is one request answered by one JSON body (issue 23 maps only unary onto REST)';
  return Object.freeze({ client_stream: streams, server_stream: streams, bidi: streams, pingpong: streams, send: streams });
}

/**
 * What an oRPC or tRPC stack does not carry, and why (server_stream is carried by all four:
 * oRPC's event iterators, tRPC's subscriptions). Measured in peers/javascript/README.md.
 */
function jsonNotOffered(stack) {
  if (REST_STACKS.includes(stack)) return restNotOffered();
  const streamInput = {
    'orpc-http': "oRPC 1.16.1's fetch RPCLink sends an event-iterator input as a streamed body without duplex: 'half', which Node's fetch requires, so such a call fails before it is sent (TypeError: RequestInit: duplex option is required when sending a body)",
    'orpc-ws': "oRPC 1.16.1's WebSocket server drops the input events that arrive before it has decoded the call's request (its ServerPeer decodes each message asynchronously): 0 of 50 client streams of 8 messages completed here",
  }[stack];
  const trpc = stack.startsWith('trpc');
  return Object.freeze({
    client_stream: trpc ? "tRPC 11 has no client-streaming procedure: a procedure's input is one JSON value" : streamInput,
    bidi: trpc ? 'tRPC 11 has no bidirectional procedure' : streamInput,
    pingpong: trpc ? 'tRPC 11 has no bidirectional procedure' : streamInput,
    send: 'not implemented yet: a one-way command would be a procedure answered with an empty output (issue 23)',
  });
}

/** Shapes a stack cannot carry, and why (capabilities `not_offered`). */
export const NOT_OFFERED = Object.freeze({
  grpc: Object.freeze({}),
  quic: Object.freeze({
    send: 'the native framing answers every request with STATUS; a one-way command would need a frame type it does not have',
  }),
  tcp: Object.freeze({
    send: 'the native framing answers every request with STATUS; a one-way command would need a frame type it does not have',
  }),
  connect: Object.freeze({}),
  ...Object.fromEntries(JSON_STACKS.map((s) => [s, jsonNotOffered(s)])),
});

/** The shapes a stack offers in a role (`client` or `server`). */
export function shapesOf(stack, role) {
  const base = role === 'client' ? SHAPES : SERVER_SHAPES;
  return [...base, SEND].filter((shape) => NOT_OFFERED[stack][shape] === undefined);
}
