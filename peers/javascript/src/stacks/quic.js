// The quic stack: the native framing over QUIC v1 on @matrixai/quic (quiche and BoringSSL,
// shipped compiled in @matrixai/quic-linux-x64). One connection per client shared by every
// lane, one client-opened bidirectional stream per call; the client finishes its send side
// (FIN) after END, the server after STATUS, and both read the other's FIN (docs/stacks.md).
//
// Transport parameters: initial_max_data and every initial_max_stream_data_* 16 MiB (quiche's
// window auto-tuning capped at the same 16 MiB, so windows stay fixed), server
// initial_max_streams_bidi 10,000 and uni 0, max_idle_timeout 30 s, a PING every 10 s, no
// datagrams, no 0-RTT, ALPN rpcarena/1. quiche's congestion control is its default, CUBIC.
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import Logger, { ConsoleErrHandler, LogLevel } from '@matrixai/logger';
import { QUICClient, QUICConnection, QUICServer, QUICSocket, events } from '@matrixai/quic';
import { OpError, code, warn } from '../protocol.js';
import { cryptoErrorReason, handshakeMessage, verifyCertificate, certificates } from '../tls.js';
import { FrameReader } from './framing.js';
import { call as nativeCall, saturate as nativeSaturate, serveCall } from './native.js';
import { quicReading } from '../transport.js';
import { nowNs } from '../clock.js';

export const ALPN = 'rpcarena/1';
export const WINDOW = 16 * 1024 * 1024;
export const MAX_STREAMS = 10_000;
export const IDLE_TIMEOUT_MS = 30_000;
export const KEEP_ALIVE_MS = 10_000;
export const UDP_BUFFER = 8 * 1024 * 1024;
/** Bytes a stream's readable takes from quiche at a time (the library's default is 4 KiB). */
export const READ_CHUNK = 16 * 1024;

/** The library's logging goes to stderr, warnings and errors only (stdout carries events). */
function quietLogger(name) {
  return new Logger(name, LogLevel.WARN, [new ConsoleErrHandler()]);
}

/** Transport parameters and TLS settings both ends share. */
function transportConfig() {
  return {
    applicationProtos: [ALPN],
    enableEarlyData: false,
    maxIdleTimeout: IDLE_TIMEOUT_MS,
    keepAliveIntervalTime: KEEP_ALIVE_MS,
    initialMaxData: WINDOW,
    initialMaxStreamDataBidiLocal: WINDOW,
    initialMaxStreamDataBidiRemote: WINDOW,
    initialMaxStreamDataUni: WINDOW,
    initialMaxStreamsUni: 0,
    maxConnectionWindow: WINDOW,
    maxStreamWindow: WINDOW,
    enableDgram: [false, 0, 0],
    readableChunkSize: READ_CHUNK,
  };
}

/** Sets the UDP socket buffers to 8 MiB (SO_RCVBUF/SO_SNDBUF: capped by net.core.*mem_max). */
function tuneUdp(quicSocket) {
  const udp = quicSocket.socket;
  try {
    udp.setRecvBufferSize(UDP_BUFFER);
    udp.setSendBufferSize(UDP_BUFFER);
  } catch (e) {
    warn(`cannot set UDP socket buffers: ${e.message}`);
  }
  const got = { recv: udp.getRecvBufferSize(), send: udp.getSendBufferSize() };
  // Linux reports twice the usable size it grants.
  if (got.recv < UDP_BUFFER || got.send < UDP_BUFFER) {
    warn(`UDP socket buffers: asked ${UDP_BUFFER}, the kernel reports receive ${got.recv} and send ${got.send} (net.core.rmem_max/wmem_max cap SO_RCVBUF/SO_SNDBUF)`);
  }
  return got;
}

/**
 * Bytes of a web ReadableStream as a chunk source for FrameReader. With `turn` (a TurnBudget
 * shared by every stream of the server), a read first gives the event loop its I/O turn once the
 * streams have run `turn.everyNs` without one; see "Why the server yields" below.
 */
function streamSource(stream, turn) {
  const reader = stream.readable.getReader();
  return {
    async read() {
      const wait = turn?.maybe();
      if (wait !== undefined) await wait;
      const { value, done } = await reader.read();
      return done ? null : value;
    },
  };
}

/**
 * The send side of a QUIC stream: write() resolves once quiche took the bytes; finish() is FIN;
 * end(buffer) writes the last bytes and the FIN in one STREAM frame (what native.js uses).
 * `finished` turns true once the FIN is queued: from then on the stream must never be reset,
 * since RESET_STREAM discards any of its data the peer has not acknowledged yet (STATUS).
 *
 * Why end(): quiche 0.18 (in @matrixai/quic 2.0.9) counts a stream's send side complete once
 * its bytes 0..final size are acknowledged, whether or not the frame carrying the FIN was
 * (cloudflare/quiche#2525). The library sends a write's bytes at once (writableWrite dispatches
 * a connection send) and close() as a separate zero-length FIN frame; when the packet with that
 * frame is lost after the data's packet was acknowledged, quiche collects the stream and never
 * sends the FIN again: the peer waits forever for the end of the stream (a call that never
 * finishes on a lossy link). So while the last bytes and the FIN are handed over, this stream's
 * sends are held back and flushed once both are queued: quiche then packs them into one frame,
 * and a loss retransmits the FIN with the bytes.
 */
function streamIo(stream) {
  const writer = stream.writable.getWriter();
  const io = {
    finished: false,
    write: (buffer) => writer.write(buffer),
    finish: async () => {
      await writer.close();
      io.finished = true;
    },
    end: async (buffer) => {
      const flush = stream.connection.handleEventQUICStreamSend;
      stream.removeEventListener(events.EventQUICStreamSend.name, flush);
      try {
        await writer.write(buffer);
        await writer.close();
        io.finished = true;
      } finally {
        // A closed stream is being destroyed (the library then drops its listeners).
        if (!stream.closed) stream.addEventListener(events.EventQUICStreamSend.name, flush);
        // A failed connection send has already been dispatched as a connection error.
        await flush().catch(() => {});
      }
    },
  };
  return io;
}

function cancel(stream, reason) {
  try {
    stream.cancel(reason);
  } catch {
    // already closed
  }
}

/** The local address the kernel routes to `host` (a connected UDP socket's own address). */
export function localAddressFor(host, port) {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    socket.once('error', (e) => {
      socket.close();
      reject(e);
    });
    socket.connect(port, host, () => {
      const { address } = socket.address();
      socket.close();
      resolve(address);
    });
  });
}

const clientCrypto = {
  ops: {
    async randomBytes(data) {
      crypto.randomFillSync(new Uint8Array(data));
    },
  },
};

function serverCrypto() {
  const hmac = (key, data) => crypto.createHmac('sha256', Buffer.from(key)).update(Buffer.from(data)).digest();
  return {
    key: crypto.randomBytes(32).buffer,
    ops: {
      async sign(key, data) {
        const mac = hmac(key, data);
        return mac.buffer.slice(mac.byteOffset, mac.byteOffset + mac.length);
      },
      async verify(key, data, sig) {
        const mac = hmac(key, data);
        const given = Buffer.from(sig);
        return given.length === mac.length && crypto.timingSafeEqual(given, mac);
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Client

export class QuicClient {
  constructor({ server, serverName, caPem, work }) {
    this.server = server;
    this.serverName = serverName;
    this.caPem = caPem;
    this.work = work;
    this.address = net.isIPv6(server.host) ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
    this.connections = 1;
    this.transport = 'quic';
  }

  /** Opens the connection (TLS handshake included); rejects with OpError (`tls` or `connect`). */
  async connect() {
    let local;
    try {
      local = await localAddressFor(this.server.host, this.server.port);
    } catch (e) {
      throw new OpError(code.CONNECT, `no route to ${this.address}: ${e.message}`);
    }
    const logger = quietLogger('quic-client');
    this.socket = new QUICSocket({ logger: logger.getChild('socket') });
    try {
      await this.socket.start({ host: local, port: 0 });
    } catch (e) {
      throw new OpError(code.CONNECT, `cannot bind a UDP socket to ${local}: ${e.message}`);
    }
    this.udpBuffers = tuneUdp(this.socket);
    let verifyFailure;
    const config = { ...transportConfig(), ca: this.caPem, verifyPeer: true, initialMaxStreamsBidi: 0 };
    if (net.isIP(this.serverName)) {
      // BoringSSL's name check in quiche matches DNS names only: verify chain and IP SAN here.
      const trusted = certificates(this.caPem).map((c) => c.raw);
      config.verifyCallback = async (chain) => {
        const failure = verifyCertificate(chain, trusted, this.serverName);
        if (failure) verifyFailure = failure.reason;
        return failure?.code;
      };
    }
    try {
      this.client = await QUICClient.createQUICClient({
        host: this.server.host,
        port: this.server.port,
        serverName: this.serverName,
        socket: this.socket,
        crypto: clientCrypto,
        config,
        logger,
      });
    } catch (e) {
      await this.socket.stop({ force: true }).catch(() => {});
      throw this.connectError(e, verifyFailure);
    }
    this.client.addEventListener(events.EventQUICClientError.name, (evt) => {
      this.lastError = evt.detail;
    });
  }

  connectError(e, verifyFailure) {
    const name = e?.constructor?.name ?? '';
    const errorCode = e?.data?.errorCode;
    if (name === 'ErrorQUICConnectionLocalTLS' || name === 'ErrorQUICConnectionPeerTLS') {
      const side = name === 'ErrorQUICConnectionPeerTLS' ? 'the server refused the handshake: ' : '';
      const reason = verifyFailure ?? cryptoErrorReason(errorCode);
      return new OpError(code.TLS, handshakeMessage(this.address, this.serverName, `${side}${reason}`));
    }
    return new OpError(code.CONNECT, `cannot connect to ${this.address} over QUIC: ${e?.message ?? e}${errorCode !== undefined ? ` (code ${errorCode})` : ''}`);
  }

  /** Streams the server still allows this client to open. */
  streamCredit() {
    return this.client.connection.conn.peerStreamsLeftBidi();
  }

  /** Waits (bounded by the caller's hard deadline) until the server allows one more stream. */
  async waitForCredit() {
    while (this.streamCredit() === 0) {
      if (this.client.closed) throw new OpError(code.CONNECT, 'the QUIC connection is closed');
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  openStream() {
    try {
      return this.client.connection.newStream('bidi');
    } catch (e) {
      throw new OpError(code.CONNECT, `cannot open a QUIC stream: ${e.message}${this.lastError ? ` (${this.lastError.message})` : ''}`);
    }
  }

  /** Backpressure: a new call is accepted while the server's stream credit allows one. */
  acquire() {
    return this.streamCredit() > 0 ? 0 : -1;
  }

  release() {}

  async call(_lane, seq) {
    if (this.streamCredit() === 0) await this.waitForCredit();
    const stream = this.openStream();
    try {
      return await nativeCall(new FrameReader(streamSource(stream)), streamIo(stream), this.work, seq, true);
    } catch (e) {
      cancel(stream, e);
      throw e;
    }
  }

  async saturate(_lane, sender, clock) {
    if (this.streamCredit() === 0) await this.waitForCredit();
    const stream = this.openStream();
    try {
      await nativeSaturate(new FrameReader(streamSource(stream)), streamIo(stream), this.work, sender, clock, true);
    } catch (e) {
      cancel(stream, e);
      throw e;
    }
  }

  /** The connection's transport statistics now (src/transport.js), from quiche's own counters. */
  transportReadings() {
    const conn = this.client?.connection?.conn;
    if (conn === undefined) return undefined;
    return [quicReading(0, conn.stats(), [...conn.pathStats()])];
  }

  /** Closes with an application CONNECTION_CLOSE, code 0, reason "done". */
  async close() {
    if (this.client) {
      await this.client.destroy({ isApp: true, errorCode: 0, reason: Buffer.from('done'), force: true }).catch(() => {});
    }
    await this.socket?.stop({ force: true }).catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// Server

async function serveStream(stream, counters, turn) {
  const reader = new FrameReader(streamSource(stream, turn));
  const io = streamIo(stream);
  const clean = await serveCall(reader, io, counters);
  if (!io.finished) {
    // No STATUS went out (the client went away or the transport failed): reset both sides.
    cancel(stream, new Error('call closed'));
    return;
  }
  // STATUS and FIN are out: read up to the client's FIN and let the library close the stream
  // (both sides finished). Nothing may follow END, but answering that with a reset could cost
  // the client the STATUS it is owed; the extra bytes are dropped and reported.
  let extra = 0;
  try {
    for (let frame = await reader.next(); frame !== null; frame = await reader.next()) extra++;
  } catch {
    if (clean) warn('a client broke its stream after END');
    return;
  }
  if (extra > 0 && clean) warn(`a client sent ${extra} frame(s) after END; dropped`);
}

// @matrixai/quic 2.0.9 processes a server connection's streams as soon as the handshake is
// secure, while its start() is still pending (running false): a stream whose first data rides
// with the client's handshake Finished (ngtcp2 clients do this) is then reset with code 0
// before the application sees it, and a stream created before EventQUICServerConnection would
// have no listener. So a server connection's streams wait until serve() attached the listener;
// quiche keeps them readable meanwhile, and serve() processes them at once.
const SERVING = Symbol('rpcarena serving');
const processStreams = QUICConnection.prototype.processStreams;
QUICConnection.prototype.processStreams = function processStreamsWhenServing() {
  if (this.type === 'server' && !this[SERVING]) return undefined;
  return processStreams.call(this);
};

// @matrixai/quic 2.0.9 serialises each received datagram's recv() and send() with an
// @matrixai/async-locks Lock, whose withF() builds, per call, an AbortController, a Timer (an
// infinite setInterval), a timeout error with a captured stack trace and a cancellable promise,
// then aborts them all (a DOMException): the largest share of the library's CPU per packet
// (README, "Is @matrixai/quic able to carry the native framing?"). recvLock has no other user and is taken without a timeout or signal,
// so a plain FIFO promise chain gives the same mutual exclusion and order; each connection gets
// one before its first datagram.
// The lock also marks the connection as receiving while recv()'s synchronous part runs (quiche's
// recv, the stream processing, and the call of send() it then awaits), for sendOncePerTurn.
const IN_RECV = Symbol('rpcarena in recv');
class RecvLock {
  tail = Promise.resolve();

  constructor(connection) {
    this.connection = connection;
  }

  withF(f) {
    const run = this.tail.then(() => {
      this.connection[IN_RECV] = true;
      try {
        return f();
      } finally {
        this.connection[IN_RECV] = false;
      }
    });
    this.tail = run.then(
      () => {},
      () => {},
    );
    return run;
  }
}
const recv = QUICConnection.prototype.recv;
QUICConnection.prototype.recv = function recvWithPlainLock(data, remoteInfo) {
  if (!(this.recvLock instanceof RecvLock)) this.recvLock = new RecvLock(this);
  return recv.call(this, data, remoteInfo);
};

// Why the server yields, and sends once per turn of the event loop (README, "send-saturation
// into the quic server"). @matrixai/quic 2.0.9 answers every received datagram with a send()
// of its own (quiche then writes one ACK datagram, and the library resets its timeout Timer),
// and every 16 KiB a stream reads with another; and a stream's reader parses, decodes and checks
// what it read before the loop reads the next datagram. A client that sends faster than that
// (the Rust client's send-saturation on loopback: ~55 MB/s of 64-byte messages on 4 streams)
// then queues up to the 8 MiB UDP receive buffer: the client's RTT estimate grows to the queue
// (0.2-0.7 s), the buffer overflows (15-20% of the datagrams lost), and the lost tail of a
// stream is resent only after a probe timeout scaled to that RTT: summaries missed the 2 s
// settle bound of `rpcarena conformance`. So a server connection sends at most once per turn:
// the datagrams libuv delivers in one poll phase are acknowledged together (quiche's ACK frame
// carries all their ranges), and the streams give the loop its I/O turn every millisecond, so
// datagrams are read (and acknowledged) promptly and the backlog waits in quiche's stream
// buffers, which the 16 MiB flow-control windows bound, not in the socket.
const SEND_PENDING = Symbol('rpcarena send pending');
const send = QUICConnection.prototype.send;
QUICConnection.prototype.send = function sendOncePerTurn() {
  if (this.type !== 'server') return send.call(this);
  if (this[SEND_PENDING] === undefined) {
    const pending = new Promise((resolve) => setImmediate(resolve)).then(() => {
      this[SEND_PENDING] = undefined;
      return send.call(this);
    });
    // A failed send is dispatched as a connection error by the library itself.
    pending.catch(() => {});
    this[SEND_PENDING] = pending;
  }
  // recv() awaits its send() holding the recvLock: waiting a turn there would hold back every
  // datagram behind it, so it goes on at once and the send follows in the check phase.
  if (this[IN_RECV]) return Promise.resolve();
  return this[SEND_PENDING];
};
/** How long a server's streams may run without giving the event loop its I/O turn. */
export const SERVER_TURN_NS = 1_000_000;

/**
 * Gives the event loop its I/O turn once the code calling `maybe()` has run `everyNs` since the
 * loop last came round: the first call after a turn marks the start of a run (and a setImmediate
 * marks its end), a later call in the same run that finds `everyNs` passed returns a promise that
 * resolves after one turn; otherwise `maybe()` returns undefined (nothing to wait for). Unlike
 * lanes.js's Yielder, an idle server's first read never waits.
 */
export class TurnBudget {
  constructor(clock, everyNs) {
    this.clock = clock;
    this.everyNs = everyNs;
    this.since = undefined;
  }

  maybe() {
    if (this.since === undefined) {
      this.since = this.clock();
      setImmediate(() => {
        this.since = undefined;
      });
      return undefined;
    }
    if (this.clock() - this.since < this.everyNs) return undefined;
    return new Promise((resolve) => setImmediate(resolve));
  }
}

/** Starts a QUIC server on `listen`; resolves to {address, close()}; rejects if it cannot bind. */
export async function startQuicServer({ listen, certPem, keyPem, counters }) {
  const logger = quietLogger('quic-server');
  const socket = new QUICSocket({ logger: logger.getChild('socket') });
  await socket.start({ host: listen.host, port: listen.port, ipv6Only: net.isIPv6(listen.host) });
  tuneUdp(socket);
  const server = new QUICServer({
    crypto: serverCrypto(),
    config: {
      ...transportConfig(),
      key: keyPem,
      cert: certPem,
      verifyPeer: false,
      initialMaxStreamsBidi: MAX_STREAMS,
    },
    socket,
    logger,
  });
  // Shared by every stream: the streams together give the loop a turn every SERVER_TURN_NS.
  const turn = new TurnBudget(nowNs, SERVER_TURN_NS);
  server.addEventListener(events.EventQUICServerConnection.name, (evt) => {
    const connection = evt.detail;
    connection.addEventListener(events.EventQUICConnectionStream.name, (e) => {
      serveStream(e.detail, counters, turn).catch((err) => warn(`serving a QUIC stream failed: ${err?.stack ?? err}`));
    });
    connection[SERVING] = true;
    connection.processStreams();
  });
  await server.start();
  const host = net.isIPv6(socket.host) ? `[${socket.host}]` : socket.host;
  return {
    address: `${host}:${socket.port}`,
    async close() {
      // Application CONNECTION_CLOSE, code 0, reason "shutdown" to every client.
      const stopping = server.stop({ isApp: true, errorCode: 0, reason: Buffer.from('shutdown'), force: true });
      await Promise.race([stopping, new Promise((resolve) => setTimeout(resolve, 500).unref())]).catch(() => {});
      await socket.stop({ force: true }).catch(() => {});
    },
  };
}
