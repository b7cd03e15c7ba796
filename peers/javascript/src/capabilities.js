// The `capabilities` event (docs/peer-protocol.md): per role and stack what this peer offers,
// the libraries behind each stack, the transport settings it really uses (docs/stacks.md
// "Settings every peer declares") and, one sentence each, what it cannot set as required.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REVISION } from './protocol.js';
import { DESCRIPTOR } from './proto.js';
import { LOAD_MODELS } from './args.js';
import { JSON_STACKS, NOT_OFFERED, REST_STACKS, STACKS, TLS_MODES, clientModesOf, payloadsOf, shapesOf } from './offer.js';
import { MAX_MESSAGE_BYTES } from './workload.js';
import { FAULT_STACKS } from './fault.js';

/** Largest JSON message of the oRPC and tRPC stacks (transports.js MAX_JSON_BYTES). */
const MAX_JSON_BYTES = 64 * 1024 * 1024;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Version of an installed package, from its package.json. */
function version(name) {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return 'missing';
  }
}

export const PEER_VERSION = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
export const RUNTIME = `node ${process.version} event loop, one JavaScript thread`;

const MIB16 = 16 * 1024 * 1024;
const NODE_CIPHERS = ['TLS_AES_256_GCM_SHA384', 'TLS_AES_128_GCM_SHA256', 'TLS_CHACHA20_POLY1305_SHA256'];

const CONGESTION = 'TCP congestion control: cubic required, but Node.js cannot set TCP_CONGESTION on its sockets, so the host default is used';
const NODE_TICKETS = 'TLS session tickets: none required; OpenSSL under Node.js still sends its TLS 1.3 NewSessionTicket messages (Node cannot set num_tickets to 0), which are never used: clients never resume';

/** The settings of an oRPC or tRPC stack: HTTP/1.1 or WebSocket, one connection per lane. */
function jsonSettings(stack, common) {
  const webSocket = stack.endsWith('-ws');
  return {
    ...common,
    max_message_bytes: MAX_JSON_BYTES,
    tls_groups: ['x25519'],
    tls_ciphers: NODE_CIPHERS,
    alpn: 'http/1.1',
    http_version: '1.1',
    keep_alive: true,
    websocket: webSocket,
    websocket_compression: webSocket ? 'none (permessage-deflate off)' : undefined,
    encoding: REST_STACKS.includes(stack)
      ? 'JSON bodies (REST: POST /unary, GET /nested/procedure_1?who=...); payload bytes as a base64 string, structured bodies as JSON objects, dates as ISO 8601 strings'
      : 'JSON; payload bytes as a base64 string, structured bodies as JSON objects; the dated payload through the library\'s serializer (oRPC RPC meta, superjson)',
    http_batching: stack === 'trpc-http' ? false : undefined,
    tcp_nodelay: true,
    congestion_control: 'host default',
    connections: '1 per lane',
    plaintext: `${webSocket ? 'WebSocket (ws://) on ' : ''}HTTP/1.1 straight on TCP; the tls_* and alpn settings apply only with --tls on`,
  };
}

/** The settings of the connect stack: the Connect protocol on node:http2, one connection. */
function connectSettings(common) {
  return {
    ...common,
    tls_groups: ['x25519'],
    tls_ciphers: NODE_CIPHERS,
    alpn: 'h2',
    protocol: 'Connect (binary protobuf: application/proto for unary, application/connect+proto for streams)',
    stream_window: MIB16,
    connection_window: MIB16,
    bdp_probing: false,
    max_concurrent_streams: 10_000,
    max_frame_size: 16384,
    keep_alive_pings: false,
    http2_max_session_memory_mb: 1024,
    tcp_nodelay: true,
    congestion_control: 'host default',
    connections: 1,
    plaintext: 'h2c with prior knowledge; the tls_* and alpn settings apply only with --tls on',
  };
}

function settings(stack) {
  const common = {
    tls_versions: ['1.3'],
    tls_resumption: false,
    max_message_bytes: MAX_MESSAGE_BYTES,
    compression: 'none',
    runtime: RUNTIME,
  };
  if (JSON_STACKS.includes(stack)) return JSON.parse(JSON.stringify(jsonSettings(stack, common)));
  if (stack === 'connect') return connectSettings(common);
  if (stack === 'grpc') {
    return {
      ...common,
      tls_groups: ['x25519'],
      tls_ciphers: NODE_CIPHERS,
      alpn: 'h2',
      stream_window: MIB16,
      connection_window: MIB16,
      bdp_probing: false,
      max_concurrent_streams: 10_000,
      tcp_nodelay: true,
      congestion_control: 'host default',
      connections: 1,
      plaintext: 'h2c with prior knowledge (grpc-js insecure credentials); the tls_* and alpn settings apply only with --tls on',
    };
  }
  if (stack === 'quic') {
    return {
      ...common,
      tls_groups: ['x25519', 'p256', 'p384'],
      tls_ciphers: ['BoringSSL built-in TLS 1.3 order'],
      alpn: 'rpcarena/1',
      stream_window: MIB16,
      connection_window: MIB16,
      max_concurrent_streams: 10_000,
      congestion_control: 'cubic',
      udp_buffer_bytes: 8 * 1024 * 1024,
      idle_timeout_ms: 30_000,
      keep_alive_ms: 10_000,
      max_udp_payload_bytes: 1350,
      connections: 1,
    };
  }
  return {
    ...common,
    tls_groups: ['x25519'],
    tls_ciphers: NODE_CIPHERS,
    alpn: 'rpcarena/1',
    tcp_nodelay: true,
    congestion_control: 'host default',
    connections: '1 per lane',
    plaintext: 'the framing straight on node:net sockets; the tls_* and alpn settings apply only with --tls on',
  };
}

function deviations(stack) {
  if (stack === 'quic') {
    return [
      'TLS key exchange: X25519 only required; BoringSSL inside quiche (through @matrixai/quic, which exposes no group setting) offers X25519, P-256 and P-384, with an X25519 key share, so X25519 is what is negotiated',
      'TLS cipher suites: the client preferring AES-256-GCM required; @matrixai/quic cannot set BoringSSL\'s TLS 1.3 suites, so BoringSSL\'s built-in order is used',
      'TLS session tickets: none required; @matrixai/quic cannot switch BoringSSL\'s tickets off; clients never resume',
      'QUIC send window: 16777216 required; quiche has no send-window setting (sending is bounded by the peer\'s 16 MiB flow-control credit and the congestion window)',
      'UDP socket buffers: 8 MiB with SO_RCVBUFFORCE/SO_SNDBUFFORCE required; Node\'s dgram sets only SO_RCVBUF/SO_SNDBUF, which the kernel caps at net.core.rmem_max/wmem_max (stderr says what was granted)',
      'MTU: quinn probes path MTU up to 1452 bytes; quiche (through @matrixai/quic) sends UDP payloads of at most 1350 bytes, without path MTU discovery',
    ];
  }
  if (stack === 'grpc' || stack === 'connect') return [CONGESTION, NODE_TICKETS];
  if (JSON_STACKS.includes(stack)) {
    return [
      CONGESTION,
      NODE_TICKETS,
      'wire format: JSON (the library\'s own encoding) with payload bytes in base64, not protobuf: a zero payload is 4/3 of its size on the wire, and both ends encode and parse JSON',
      'flow-control windows: 16 MiB required of HTTP/2 and QUIC; HTTP/1.1 and WebSocket have none of their own (the kernel\'s TCP buffers bound a connection)',
      'concurrent streams: HTTP/1.1 and one WebSocket call at a time per lane here, so a client opens one connection per lane (as the tcp stack), not one shared connection',
      `largest message: 16 MiB + 1 KiB of protobuf required; the JSON of a 16 MiB payload is larger (22,369,624 bytes of base64 zeros, about 30 MB for a structured body), so the limit here is ${MAX_JSON_BYTES} bytes (WebSocket maxPayload; the HTTP adapters do not limit bodies)`,
    ];
  }
  return [CONGESTION, NODE_TICKETS];
}

function libraries(stack) {
  const protobuf = { protobufjs: version('protobufjs') };
  if (JSON_STACKS.includes(stack)) {
    const lib = {
      'orpc-openapi': { '@orpc/openapi': version('@orpc/openapi'), '@orpc/openapi-client': version('@orpc/openapi-client'), '@orpc/server': version('@orpc/server'), '@orpc/contract': version('@orpc/contract') },
      'hono-rest': { hono: version('hono'), '@hono/node-server': version('@hono/node-server') },
    }[stack] ?? (stack.startsWith('orpc')
      ? { '@orpc/server': version('@orpc/server'), '@orpc/client': version('@orpc/client') }
      : { '@trpc/server': version('@trpc/server'), '@trpc/client': version('@trpc/client'), superjson: version('superjson') });
    const transport = stack.endsWith('-ws') ? { ws: version('ws') } : { 'undici (client Agent)': version('undici'), 'node:http (llhttp)': process.versions.llhttp };
    return { ...lib, ...transport, 'node:tls (OpenSSL)': process.versions.openssl };
  }
  if (stack === 'connect') {
    return {
      '@connectrpc/connect': version('@connectrpc/connect'),
      '@connectrpc/connect-node': version('@connectrpc/connect-node'),
      '@bufbuild/protobuf': version('@bufbuild/protobuf'),
      'protobufjs (descriptors only)': version('protobufjs'),
      'node:http2 (nghttp2)': process.versions.nghttp2,
      'node:tls (OpenSSL)': process.versions.openssl,
    };
  }
  if (stack === 'grpc') {
    return {
      '@grpc/grpc-js': version('@grpc/grpc-js'),
      'node:http2 (nghttp2)': process.versions.nghttp2,
      'node:tls (OpenSSL)': process.versions.openssl,
      ...protobuf,
    };
  }
  if (stack === 'quic') {
    return {
      '@matrixai/quic': version('@matrixai/quic'),
      '@matrixai/quic-linux-x64 (quiche, BoringSSL)': version('@matrixai/quic-linux-x64'),
      ...protobuf,
    };
  }
  return { 'node:tls (OpenSSL)': process.versions.openssl, ...protobuf };
}

export const STACKS_OFFERED = STACKS;

/** The reasons for the shapes of the role that the stack does not list (pingpong: servers only). */
function notOffered(stack, role) {
  const reasons = { ...NOT_OFFERED[stack] };
  if (role === 'client') delete reasons.pingpong;
  return reasons;
}

function entry(stack, role) {
  const offered = {
    stack,
    shapes: shapesOf(stack, role),
    load_models: role === 'client' ? [...LOAD_MODELS] : [],
    payloads: payloadsOf(stack),
    tls: [...TLS_MODES[stack]],
    libraries: libraries(stack),
    settings: settings(stack),
    deviations: deviations(stack),
  };
  if (Object.keys(NOT_OFFERED[stack]).length > 0) offered.not_offered = notOffered(stack, role);
  if (FAULT_STACKS.includes(stack)) offered.conformance_faults = true;
  const modes = role === 'client' ? clientModesOf(stack) : undefined;
  if (modes !== undefined) offered.client_modes = modes;
  return offered;
}

/**
 * The capabilities event. It declares no `allocations` (revision 1.2): V8 counts no allocations
 * and no cumulative allocated bytes (v8.getHeapStatistics() and process.memoryUsage() give only
 * the heap's current size), so no event carries `allocations` or `allocated_bytes`.
 */
export function capabilities() {
  return {
    event: 'capabilities',
    peer: 'rpcarena-peer-javascript',
    language: 'javascript',
    version: PEER_VERSION,
    revision: REVISION,
    build: {
      toolchain: `node ${process.version}`,
      runtime: `node ${process.version} (V8 ${process.versions.v8})`,
      flags: process.execArgv.join(' '),
      dependencies: 'npm ci from package-lock.json',
    },
    files: [
      path.join(root, 'bin', 'rpcarena-peer-javascript'),
      path.join(root, 'src'),
      DESCRIPTOR,
      path.join(root, 'node_modules'),
      path.join(root, 'package-lock.json'),
    ],
    roles: {
      client: STACKS_OFFERED.map((s) => entry(s, 'client')),
      server: STACKS_OFFERED.map((s) => entry(s, 'server')),
    },
  };
}
