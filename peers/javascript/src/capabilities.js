// The `capabilities` event (docs/peer-protocol.md): per role and stack what this peer offers,
// the libraries behind each stack, the transport settings it really uses (docs/stacks.md
// "Settings every peer declares") and, one sentence each, what it cannot set as required.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REVISION } from './protocol.js';
import { DESCRIPTOR } from './proto.js';
import { LOAD_MODELS } from './args.js';
import { NOT_OFFERED, STACKS, TLS_MODES, shapesOf } from './offer.js';
import { MAX_MESSAGE_BYTES, PAYLOADS } from './workload.js';

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

function settings(stack) {
  const common = {
    tls_versions: ['1.3'],
    tls_resumption: false,
    max_message_bytes: MAX_MESSAGE_BYTES,
    compression: 'none',
    runtime: RUNTIME,
  };
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
  if (stack === 'grpc') return [CONGESTION, NODE_TICKETS];
  return [CONGESTION, NODE_TICKETS];
}

function libraries(stack) {
  const protobuf = { protobufjs: version('protobufjs') };
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

function entry(stack, role) {
  const offered = {
    stack,
    shapes: shapesOf(stack, role),
    load_models: role === 'client' ? [...LOAD_MODELS] : [],
    payloads: [...PAYLOADS],
    tls: [...TLS_MODES[stack]],
    libraries: libraries(stack),
    settings: settings(stack),
    deviations: deviations(stack),
  };
  if (Object.keys(NOT_OFFERED[stack]).length > 0) offered.not_offered = { ...NOT_OFFERED[stack] };
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
