// The `connect` stack's client: the Connect protocol's official client (@connectrpc/connect's
// createClient on @connectrpc/connect-node's createConnectTransport, httpVersion "2",
// useBinaryFormat) over one HTTP/2 connection shared by every lane: TLS 1.3 with the peer's
// settings (tls.js) and ALPN h2, or, with --tls off, h2c with prior knowledge. Every response is
// checked as on every stack (workload.js checkResponse, checkSummary).
//
// The connection is connect-node's Http2SessionManager (one session, no keep-alive PINGs), with
// the socket made here (createConnection) so that TCP_NODELAY is set on it, the stream window
// 16 MiB in the client's SETTINGS and the connection window raised to 16 MiB on the session as
// soon as it carries its first stream (BenchSessionManager).
import net from 'node:net';
import tls from 'node:tls';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { Http2SessionManager, createConnectTransport } from '@connectrpc/connect-node';
import { Yielder } from '../engine/lanes.js';
import { OpError, code, warn } from '../protocol.js';
import { NODE_TLS, checkServerName, handshakeMessage, looksLikeTls, sniOf } from '../tls.js';
import { MAX_MESSAGE_BYTES, checkResponse, checkSummary, request } from '../workload.js';
import { VERDICT, judge } from '../fault.js';
import { faultRequests } from '../fault-streams.js';
import { BenchService, requestInit, responseOf, summaryOf } from './connect-schema.js';
import { MAX_SESSION_MEMORY_MB, WINDOW } from './connect-server.js';

/** The client's HTTP/2 SETTINGS. */
export const CLIENT_SETTINGS = Object.freeze({ initialWindowSize: WINDOW, enablePush: false, maxFrameSize: 16384 });

/** Errors connect-es makes itself when the server's answer breaks the Connect protocol. */
const BROKEN_ANSWER = /^(protocol error|parse binary|invalid end stream|failed to parse EndStreamResponse|unsupported content type|unsupported response encoding)/;

/** The session manager of connect-node, raising each session's connection window once. */
class BenchSessionManager extends Http2SessionManager {
  constructor(url, sessionOptions) {
    super(url, { pingIntervalMs: Number.POSITIVE_INFINITY, pingIdleConnection: false }, sessionOptions);
    this.raised = new WeakSet();
  }

  async request(method, path, headers, options) {
    const stream = await super.request(method, path, headers, options);
    const { session } = stream;
    if (session && !this.raised.has(session)) {
      this.raised.add(session);
      try {
        session.setLocalWindowSize(WINDOW);
      } catch (e) {
        warn(`cannot raise the HTTP/2 connection window to ${WINDOW}: ${e.message}`);
      }
    }
    return stream;
  }
}

/** node:http2's session options: SETTINGS, and the TCP (+ TLS) socket with TCP_NODELAY. */
function sessionOptions({ server, plaintext, caPem, serverName }) {
  const createConnection = () => {
    const socket = plaintext
      ? net.connect({ host: server.host, port: server.port })
      : tls.connect({
          ...NODE_TLS,
          host: server.host,
          port: server.port,
          ca: caPem,
          servername: sniOf(serverName),
          checkServerIdentity: checkServerName(serverName),
          ALPNProtocols: ['h2'],
        });
    socket.setNoDelay(true);
    return socket;
  };
  return { settings: { ...CLIENT_SETTINGS }, maxSessionMemory: MAX_SESSION_MEMORY_MB, createConnection };
}

/** The first Node.js error (one with a string `code`) in the cause chain of `error`. */
function nodeCause(error) {
  for (let e = error, depth = 0; e && depth < 10; e = e.cause, depth++) {
    if (!(e instanceof ConnectError) && typeof e?.code === 'string') return e;
  }
  return undefined;
}

/**
 * A failed call as an OpError (docs/peer-protocol.md "Error codes"): a Node.js error under it is
 * the connection's (`tls` when the handshake failed, else `connect`), an answer connect-es found
 * broken is `invalid`, a stream reset `connect`, any other code is the server's (`rpc`).
 */
export function opErrorOf(error, { address, serverName, plaintext }) {
  const ce = ConnectError.from(error);
  const cause = nodeCause(error);
  if (cause !== undefined) {
    const reason = `${cause.code}: ${cause.message}`;
    if (!plaintext && looksLikeTls(cause)) return new OpError(code.TLS, handshakeMessage(address, serverName, reason));
    return new OpError(code.CONNECT, `the connection to ${address} failed: ${reason}`);
  }
  const text = `${Code[ce.code] ?? ce.code} (${ce.code}): ${ce.rawMessage}`;
  if (BROKEN_ANSWER.test(ce.rawMessage)) return new OpError(code.INVALID, `the server's answer broke the Connect protocol: ${text}`);
  if (ce.code === Code.DeadlineExceeded) return new OpError(code.TIMEOUT, `the call timed out: ${text}`);
  if (/^http\/2 stream closed/.test(ce.rawMessage) || ce.code === Code.Canceled) return new OpError(code.CONNECT, `the call was cut: ${text}`);
  return new OpError(code.RPC, `the server ended the call with ${text}`);
}

function invalid(message) {
  return new OpError(code.INVALID, message);
}

/** Yields each plain request of `requests` as a message init, then ends the stream. */
async function* sending(requests) {
  for (const req of requests) yield requestInit(req);
}

export class ConnectClient {
  /** @param {object} o config: server {host, port}, plaintext (--tls off), serverName, caPem, work */
  constructor(options) {
    const { server, plaintext = false, serverName } = options;
    const host = server.host.includes(':') ? `[${server.host}]` : server.host;
    const baseUrl = `${plaintext ? 'http' : 'https'}://${host}:${server.port}`;
    this.work = options.work;
    this.where = { address: `${host}:${server.port}`, serverName, plaintext };
    this.sessions = new BenchSessionManager(baseUrl, sessionOptions(options));
    const transport = createConnectTransport({
      baseUrl,
      httpVersion: '2',
      sessionManager: this.sessions,
      useBinaryFormat: true,
      acceptCompression: [],
      sendCompression: null,
      readMaxBytes: MAX_MESSAGE_BYTES,
      writeMaxBytes: MAX_MESSAGE_BYTES,
    });
    this.client = createClient(BenchService, transport);
    this.connections = 1;
  }

  /** Opens the one HTTP/2 connection (TLS handshake included); rejects with an OpError. */
  async connect() {
    const state = await this.sessions.connect();
    if (state === 'error') throw opErrorOf(this.sessions.error(), this.where);
  }

  /** Backpressure: the session takes a new call whenever the event loop comes back to it. */
  acquire() {
    return 0;
  }

  release() {}

  /** Runs `invoke()`; a library error becomes an OpError. */
  async attempt(invoke) {
    try {
      return await invoke();
    } catch (e) {
      if (e instanceof OpError) throw e;
      throw opErrorOf(e, this.where);
    }
  }

  /** One operation of the configured shape; resolves to {requests, responses}. */
  call(_lane, seq) {
    const { shape } = this.work;
    if (shape === 'unary') return this.unary(seq);
    if (shape === 'client_stream') return this.clientStream();
    if (shape === 'server_stream') return this.serverStream(seq);
    if (shape === 'send') return this.command(seq);
    return this.bidi();
  }

  async unary(seq) {
    const { kind, requestSize, responseSize } = this.work;
    const response = await this.attempt(() => this.client.unary(requestInit(request(kind, seq, requestSize, responseSize, 0))));
    const problem = checkResponse(responseOf(response), kind, seq, responseSize);
    if (problem) throw invalid(problem);
    return { requests: 1, responses: 1 };
  }

  /** A one-way command (1.3): status OK and the Empty it carries; nothing else to check. */
  async command(seq) {
    const { kind, requestSize } = this.work;
    await this.attempt(() => this.client.command(requestInit(request(kind, seq, requestSize, 0, 0))));
    return { requests: 1, responses: 1 };
  }

  async clientStream() {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    const requests = Array.from({ length: n }, (_, i) => request(kind, i, requestSize, responseSize, 0));
    const summary = await this.attempt(() => this.client.clientStream(sending(requests)));
    const problem = checkSummary(summaryOf(summary), kind, n, requestSize, responseSize);
    if (problem) throw invalid(problem);
    return { requests: n, responses: 1 };
  }

  async serverStream(seq) {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    const req = requestInit(request(kind, seq, requestSize, responseSize, n));
    await this.responses((signal) => this.client.serverStream(req, { signal }), n);
    return { requests: 1, responses: n };
  }

  async bidi() {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    const requests = Array.from({ length: n }, (_, i) => request(kind, i, requestSize, responseSize, 0));
    await this.responses((signal) => this.client.bidi(sending(requests), { signal }), n);
    return { requests: n, responses: n };
  }

  /**
   * Reads a response stream opened by `open(signal)`: exactly n responses with seq 0..n-1, then
   * the end of the stream with no error. A response that fails its check cancels the call.
   */
  async responses(open, n) {
    const { kind, responseSize } = this.work;
    const abort = new AbortController();
    let received = 0;
    let problem;
    await this.attempt(async () => {
      for await (const message of open(abort.signal)) {
        if (received === n) problem = `the server sent more than the ${n} responses asked for`;
        else problem = checkResponse(responseOf(message), kind, received, responseSize);
        if (problem) break;
        received++;
      }
    });
    if (problem) {
      abort.abort();
      throw invalid(problem);
    }
    if (received !== n) throw invalid(`the server ended the call after ${received} of ${n} responses`);
  }

  /**
   * Send-saturation on one client stream: a message is accepted when connect-es pulls the next
   * one from the request iterable, which it does once node:http2 called back its write.
   */
  async saturate(_lane, sender, clock) {
    const { kind, requestSize, responseSize } = this.work;
    const turn = new Yielder(clock);
    const messages = async function* () {
      for (let seq = sender.next(clock()); seq >= 0; seq = sender.next(clock())) {
        yield requestInit(request(kind, seq, requestSize, responseSize, 0));
        sender.accepted(clock());
        await turn.maybe();
      }
    };
    const summary = summaryOf(await this.attempt(() => this.client.clientStream(messages())));
    const problem = checkSummary(summary, kind, sender.sent, requestSize, responseSize);
    if (problem) throw invalid(problem);
    sender.summaryReceived(clock());
  }

  /**
   * A conformance fault's malformed call (fault-streams.js) on the connection, then a
   * well-formed one; resolves when the server refused the first with invalid_argument and
   * served the second, else rejects with an OpError.
   */
  async probe(mode) {
    const verdict = await this.verdict(faultRequests(mode, this.work, request));
    const wrong = judge(mode, verdict);
    if (wrong) throw new OpError(wrong.code, wrong.message);
    warn(`the server refused the malformed call with invalid_argument: ${verdict.message}`);
    try {
      await this.call(0, 0);
    } catch (e) {
      throw new OpError(e.code, `the well-formed call after the malformed one failed: ${e.message}`);
    }
  }

  /** Sends `requests` as one call of the shape, unchecked: {status, message} of its end. */
  async verdict(requests) {
    const { shape } = this.work;
    const client = this.client;
    const run = {
      unary: () => client.unary(requestInit(requests[0])),
      send: () => client.command(requestInit(requests[0])),
      client_stream: () => client.clientStream(sending(requests)),
      server_stream: async () => {
        for await (const _ of client.serverStream(requestInit(requests[0]))) void _;
      },
      bidi: async () => {
        for await (const _ of client.bidi(sending(requests))) void _;
      },
    }[shape];
    try {
      await run();
      return { status: VERDICT.OK, message: 'answered' };
    } catch (e) {
      const failure = opErrorOf(e, this.where);
      if (failure.code !== code.RPC) throw failure;
      const ce = ConnectError.from(e);
      return { status: ce.code, message: ce.rawMessage };
    }
  }

  async close() {
    this.sessions.abort();
  }
}
