// The connections of the JSON RPC stacks, shared by oRPC and tRPC: the server's node:http or
// node:https server (HTTP/1.1, keep-alive, TCP_NODELAY, the peer's TLS 1.3 settings), a
// WebSocketServer of the `ws` package on it, and on the client one HTTP/1.1 connection per lane
// (an undici Agent with `connections: 1`, used by the libraries' fetch-based links through the
// fetch of Node.js with that Agent as its dispatcher) or one `ws` WebSocket per lane. Every
// lane's connection is opened, TLS handshake included, before the first call (a HEAD request on
// the HTTP connection, which the servers answer 404 without counting it).
import http from 'node:http';
import https from 'node:https';
import { Agent } from 'undici';
import { WebSocket, WebSocketServer } from 'ws';
import { OpError, code } from '../protocol.js';
import { NODE_TLS, checkServerName, handshakeMessage, looksLikeTls, serverContextOptions, sniOf } from '../tls.js';
import { MAX_MESSAGE_BYTES } from '../workload.js';

/**
 * Largest JSON message (the WebSocket's maxPayload): 64 MiB, above the JSON of a 16 MiB payload
 * of either kind (zeros in base64: 22,369,624 bytes; a structured body is about 1.8 times its
 * protobuf length as JSON, some 30 MB).
 */
export const MAX_JSON_BYTES = 64 * 1024 * 1024;

/** HTTP/1.1 over TLS 1.3 (ALPN http/1.1) or plaintext HTTP/1.1. */
export const HTTP_ALPN = 'http/1.1';

/** The client's TLS options for node:tls (through undici or ws). */
export function clientTls(caPem, serverName) {
  return {
    ...NODE_TLS,
    ca: caPem,
    servername: sniOf(serverName),
    checkServerIdentity: checkServerName(serverName),
  };
}

/** A failed connection or call as an OpError: `tls` when the handshake failed, else `connect`. */
export function transportFailure(address, serverName, plaintext, error) {
  let e = error;
  while (e?.cause && !(e.code && looksLikeTls(e))) e = e.cause;
  const reason = `${e?.code ? `${e.code}: ` : ''}${e?.message ?? e}`;
  if (!plaintext && looksLikeTls(e)) return new OpError(code.TLS, handshakeMessage(address, serverName, reason));
  return new OpError(code.CONNECT, `the connection to ${address} failed: ${reason}`);
}

/** An HTTP/1.1 lane: its Agent (one keep-alive connection), opened and handshaken. */
export async function openHttpLane({ base, plaintext, caPem, serverName }) {
  const agent = new Agent({
    connections: 1,
    pipelining: 1,
    keepAliveTimeout: 600_000,
    keepAliveMaxTimeout: 600_000,
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: plaintext ? { noDelay: true } : { ...clientTls(caPem, serverName), noDelay: true },
  });
  try {
    const { body } = await agent.request({ origin: base, path: '/', method: 'HEAD' });
    await body.dump();
  } catch (e) {
    await agent.destroy().catch(() => {});
    throw transportFailure(base, serverName, plaintext, e);
  }
  return agent;
}

/** The fetch of Node.js on `agent` (RPCLink's and httpLink's `fetch`). */
export function fetchOn(agent) {
  return (input, init) => globalThis.fetch(input, { ...init, dispatcher: agent });
}

/** A WebSocket lane: a `ws` WebSocket, resolved once open. */
export function openWebSocket({ url, plaintext, caPem, serverName }) {
  const options = { perMessageDeflate: false, maxPayload: MAX_JSON_BYTES };
  const socket = new WebSocket(url, plaintext ? options : { ...options, ...clientTls(caPem, serverName) });
  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      socket.removeAllListeners('error');
      socket.on('error', () => {});
      resolve(socket);
    });
    socket.once('error', (e) => {
      socket.terminate();
      reject(transportFailure(url, serverName, plaintext, e));
    });
  });
}

/** What a server stream over WebSocket lets wait in its socket's send buffer before it pauses. */
export const PACE_BYTES = 1024 * 1024;

/** A turn of the event loop (its I/O polled: a cancel read, the other connections served). */
export const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * The pace of a server stream over the `ws` WebSocket `socket`, awaited after each message: a
 * turn of the event loop (the libraries send each message at once, and a socket that takes every
 * write would otherwise keep the loop to the stream until its end, the client's cancel unread),
 * then, while more than PACE_BYTES wait to be written, the drain of the socket under it (`ws`
 * buffers without bound and has no drain event of its own).
 */
export function webSocketPace(socket) {
  return async () => {
    await turn();
    while (socket.readyState === WebSocket.OPEN && socket.bufferedAmount > PACE_BYTES) {
      await new Promise((resolve) => {
        const raw = socket._socket;
        const done = () => {
          raw.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        raw.once('drain', done);
        socket.once('close', done);
      });
    }
  };
}

/**
 * A `ws` WebSocket class that connects with the peer's TLS settings (for libraries that construct
 * the socket themselves from a URL: tRPC's createWSClient).
 */
export function webSocketClass({ plaintext, caPem, serverName }) {
  const extra = { perMessageDeflate: false, maxPayload: MAX_JSON_BYTES, ...(plaintext ? {} : clientTls(caPem, serverName)) };
  return class BenchWebSocket extends WebSocket {
    constructor(url, protocols) {
      super(url, protocols, extra);
    }
  };
}

/**
 * WebSocketServers on `server`'s upgrades: `wssAt[path]` for each of `paths` (matched on the
 * request's path, query ignored), `wss` for every other path.
 */
function webSocketServers(server, paths) {
  const options = { noServer: true, perMessageDeflate: false, maxPayload: MAX_JSON_BYTES };
  const wss = new WebSocketServer(options);
  const wssAt = Object.fromEntries(paths.map((p) => [p, new WebSocketServer(options)]));
  server.on('upgrade', (req, socket, head) => {
    const path = req.url.split('?')[0];
    const target = Object.hasOwn(wssAt, path) ? wssAt[path] : wss;
    target.handleUpgrade(req, socket, head, (ws) => target.emit('connection', ws, req));
  });
  return { wss, wssAt, all: [wss, ...Object.values(wssAt)] };
}

/**
 * Starts an HTTP/1.1 server (HTTPS with the peer's TLS settings, or plaintext) calling
 * `listener(req, res)`, with WebSocketServers on its upgrades when `webSocket` is true (`wss` for
 * every path but `webSocketPaths`, each of which gets its own in `wssAt`); resolves to
 * {address, wss, wssAt, close()}.
 */
export async function startHttpServer({ listen, plaintext, certPem, keyPem, listener, webSocket = false, webSocketPaths = [], maxHeaderSize }) {
  const options = { noDelay: true, keepAlive: true, keepAliveTimeout: 600_000, headersTimeout: 0, requestTimeout: 0 };
  // A request whose input travels in its URL (tRPC's subscriptions over SSE) needs more than
  // node:http's 16 KiB of request line and headers.
  if (maxHeaderSize !== undefined) options.maxHeaderSize = maxHeaderSize;
  const server = plaintext
    ? http.createServer(options, listener)
    : https.createServer({ ...options, ...serverContextOptions(certPem, keyPem), ALPNProtocols: [HTTP_ALPN] }, listener);
  server.keepAliveTimeout = 600_000;
  const sockets = new Set();
  server.on('connection', (socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const webSockets = webSocket ? webSocketServers(server, webSocketPaths) : { wss: undefined, wssAt: {}, all: [] };
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address();
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    address: `${host}:${port}`,
    wss: webSockets.wss,
    wssAt: webSockets.wssAt,
    close: () =>
      new Promise((resolve) => {
        for (const wss of webSockets.all) {
          for (const client of wss.clients) client.terminate();
          wss.close();
        }
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** Answers what no procedure matched: 404 (the client's HEAD that opens a lane lands here). */
export function notFound(req, res) {
  res.statusCode = 404;
  res.setHeader('content-type', 'text/plain');
  res.end(`no procedure at ${req.method} ${req.url}`);
}

export { MAX_MESSAGE_BYTES };
