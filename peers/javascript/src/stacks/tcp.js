// The tcp stack: the native framing over TLS 1.3 over TCP on node:tls, ALPN rpcarena/1, or with
// --tls off straight on node:net sockets (docs/stacks.md "Plaintext"). One connection per lane,
// opened concurrently at start; calls run one after another on a connection (docs/stacks.md
// "tcp"). TCP_NODELAY on both ends; socket buffers are the kernel's autotuned defaults.
import net from 'node:net';
import tls from 'node:tls';
import { OpError, code, warn } from '../protocol.js';
import { checkServerName, clientContext, handshakeMessage, looksLikeTls, serverContextOptions, sniOf } from '../tls.js';
import { FrameReader } from './framing.js';
import { ConnectionLanes } from './lanes.js';
import { ALPN } from './quic.js';
import { call as nativeCall, saturate as nativeSaturate, serveCall } from './native.js';

/** A socket's incoming bytes as a chunk source for FrameReader (null at the end). */
class SocketSource {
  constructor(socket) {
    this.chunks = [];
    this.ended = false;
    this.error = undefined;
    this.waiting = undefined;
    socket.on('data', (chunk) => {
      this.chunks.push(chunk);
      this.wake();
    });
    socket.on('end', () => {
      this.ended = true;
      this.wake();
    });
    socket.on('error', (e) => {
      this.error = e;
      this.wake();
    });
    socket.on('close', () => {
      if (!this.ended && this.error === undefined) this.error = new Error('the connection was closed');
      this.wake();
    });
  }

  wake() {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }

  async read() {
    for (;;) {
      if (this.chunks.length > 0) return this.chunks.shift();
      if (this.ended) return null;
      if (this.error !== undefined) throw this.error;
      await new Promise((resolve) => {
        this.waiting = resolve;
      });
    }
  }
}

/** The send side of a connection: write() resolves once the socket buffer takes more. */
function socketIo(socket) {
  return {
    write(buffer) {
      if (socket.destroyed) return Promise.reject(new Error('the connection is closed'));
      if (socket.write(buffer)) return undefined;
      return new Promise((resolve, reject) => {
        const onDrain = () => {
          socket.off('close', onClose);
          resolve();
        };
        const onClose = () => {
          socket.off('drain', onDrain);
          reject(new Error('the connection was closed'));
        };
        socket.once('drain', onDrain);
        socket.once('close', onClose);
      });
    },
    // A connection carries the next call: nothing ends with the call.
    finish() {},
  };
}

class Connection {
  constructor(socket) {
    this.socket = socket;
    this.reader = new FrameReader(new SocketSource(socket));
    this.io = socketIo(socket);
  }
}

// ---------------------------------------------------------------------------------------------
// Client

export class TcpClient extends ConnectionLanes {
  constructor({ server, plaintext = false, serverName, caPem, work, lanes }) {
    super(lanes);
    this.server = server;
    this.serverName = serverName;
    this.plaintext = plaintext;
    this.context = plaintext ? undefined : clientContext(caPem);
    this.work = work;
    this.address = net.isIPv6(server.host) ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
  }

  /** One plaintext connection (--tls off). */
  openPlain() {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: this.server.host, port: this.server.port, noDelay: true });
      const onError = (e) => {
        socket.destroy();
        reject(new OpError(code.CONNECT, `cannot connect to ${this.address}: ${e.message}`));
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        socket.on('error', () => {});
        resolve(new Connection(socket));
      });
    });
  }

  /** One connection with its TLS handshake, checked to have chosen ALPN rpcarena/1. */
  open() {
    if (this.plaintext) return this.openPlain();
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: this.server.host,
        port: this.server.port,
        servername: sniOf(this.serverName),
        secureContext: this.context,
        checkServerIdentity: checkServerName(this.serverName),
        ALPNProtocols: [ALPN],
      });
      socket.setNoDelay(true);
      const onError = (e) => {
        socket.destroy();
        if (looksLikeTls(e)) reject(new OpError(code.TLS, handshakeMessage(this.address, this.serverName, `${e.code ? `${e.code}: ` : ''}${e.message}`)));
        else reject(new OpError(code.CONNECT, `cannot connect to ${this.address}: ${e.message}`));
      };
      socket.once('error', onError);
      socket.once('secureConnect', () => {
        socket.off('error', onError);
        if (socket.alpnProtocol !== ALPN) {
          socket.destroy();
          reject(new OpError(code.TLS, handshakeMessage(this.address, this.serverName, `the server chose ALPN ${JSON.stringify(socket.alpnProtocol)}, not ${ALPN}`)));
          return;
        }
        socket.on('error', () => {});
        resolve(new Connection(socket));
      });
    });
  }

  /** Opens one connection per lane, concurrently. */
  async connect() {
    await this.openLanes(() => this.open());
  }

  async call(lane, seq) {
    const conn = this.conns[lane];
    if (conn.broken) throw new OpError(code.CONNECT, 'the connection broke in an earlier call');
    try {
      return await nativeCall(conn.reader, conn.io, this.work, seq, false);
    } catch (e) {
      conn.broken = true;
      conn.socket.destroy();
      throw e;
    }
  }

  async saturate(lane, sender, clock) {
    const conn = this.conns[lane];
    try {
      await nativeSaturate(conn.reader, conn.io, this.work, sender, clock, false);
    } catch (e) {
      conn.broken = true;
      conn.socket.destroy();
      throw e;
    }
  }

  /** TLS close_notify (with TLS), then FIN, on every connection. */
  async close() {
    for (const conn of this.conns) conn.socket.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Server

/**
 * Starts a tcp server on `listen` (plaintext: node:net, no TLS); resolves to {address, close()};
 * rejects if it cannot bind.
 */
export async function startTcpServer({ listen, plaintext = false, certPem, keyPem, counters }) {
  const sockets = new Set();
  const serve = async (socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    const conn = new Connection(socket);
    try {
      while (await serveCall(conn.reader, conn.io, counters));
    } catch (e) {
      warn(`serving a connection failed: ${e?.stack ?? e}`);
    }
    socket.end();
  };
  let server;
  if (plaintext) {
    server = net.createServer({ noDelay: true }, serve);
  } else {
    const options = { ...serverContextOptions(certPem, keyPem), ALPNProtocols: [ALPN], noDelay: true, handshakeTimeout: 10_000 };
    server = tls.createServer(options, serve);
    server.on('tlsClientError', (e) => warn(`a TLS handshake failed: ${e.message}`));
  }
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: listen.host, port: listen.port, ipv6Only: net.isIPv6(listen.host) }, resolve);
  });
  const { address, port } = server.address();
  return {
    address: net.isIPv6(address) ? `[${address}]:${port}` : `${address}:${port}`,
    async close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}
