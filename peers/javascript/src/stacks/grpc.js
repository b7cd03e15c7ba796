// The grpc stack: gRPC over HTTP/2 over TLS 1.3 (or, with --tls off, HTTP/2 with prior
// knowledge: grpc-js's insecure credentials) on @grpc/grpc-js, one channel (one HTTP/2
// connection) per client shared by every lane. Messages are encoded by protobufjs from the
// repository's proto (src/proto.js); the service definition is built from the same types.
//
// Settings (docs/stacks.md "grpc"): message limits 16 MiB + 1 KiB both ends; HTTP/2 initial
// stream window 16 MiB both ends and connection window 16 MiB (client: grpc-js's
// `grpc-node.flow_control_window`; server: the SETTINGS of the HTTP/2 server and a
// WINDOW_UPDATE of the connection window on each new session, see BenchServer); no BDP probing
// (grpc-js has none); SETTINGS_MAX_CONCURRENT_STREAMS 10,000 on the server; TCP_NODELAY on both
// ends (grpc-js sets it on the client socket, `noDelay` on the server); no retries, no
// compression. Plaintext changes nothing else: the server's HTTP/2 settings and noDelay are set
// on its plain HTTP/2 server too (BenchServer).
import grpc from '@grpc/grpc-js';
import { Yielder } from '../engine/lanes.js';
import { OpError, code, warn } from '../protocol.js';
import { COMMAND_METHOD, Empty, METHOD, Request, Response, Summary } from '../proto.js';
import { MAX_MESSAGE_BYTES, SummaryBuilder, checkRequest, checkResponse, checkSummary, request, responseTo, streamHead } from '../workload.js';
import { checkServerName, clientContext, handshakeMessage, looksLikeTls, serverContextOptions, sniOf } from '../tls.js';

export const WINDOW = 16 * 1024 * 1024;
export const MAX_STREAMS = 10_000;
const { status } = grpc;

/** Deserializers never throw: an undecodable message becomes {decodeError} and is refused. */
function serializer(type) {
  return (message) => type.encode(message).finish();
}

function deserializer(type) {
  return (buffer) => {
    try {
      return type.decode(buffer);
    } catch (e) {
      return { decodeError: e.message };
    }
  };
}

function method(path, requestStream, responseStream, responseType) {
  return {
    path,
    requestStream,
    responseStream,
    requestSerialize: serializer(Request),
    requestDeserialize: deserializer(Request),
    responseSerialize: serializer(responseType),
    responseDeserialize: deserializer(responseType),
  };
}

/** rpcarena.bench.v1.BenchService, for grpc-js. */
export const SERVICE = {
  Unary: method(METHOD.unary, false, false, Response),
  ClientStream: method(METHOD.client_stream, true, false, Summary),
  ServerStream: method(METHOD.server_stream, false, true, Response),
  Bidi: method(METHOD.bidi, true, true, Response),
  Command: method(COMMAND_METHOD, false, false, Empty),
};

const BenchClient = grpc.makeGenericClientConstructor(SERVICE, 'BenchService');

// ---------------------------------------------------------------------------------------------
// Client

function invalid(message) {
  return new OpError(code.INVALID, message);
}

/** The error code of a call that ended with a non-OK status (docs/peer-protocol.md "Error codes"). */
export function statusToOpError(err) {
  const details = err.details ?? err.message;
  const text = `status ${err.code} (${status[err.code] ?? 'unknown'}): ${details}`;
  switch (err.code) {
    case status.UNAVAILABLE:
      // The server never sends UNAVAILABLE here: grpc-js made it from a connection failure.
      return new OpError(looksLikeTls(details) ? code.TLS : code.CONNECT, `the call failed: ${text}`);
    case status.DEADLINE_EXCEEDED:
      return new OpError(code.TIMEOUT, `the call failed: ${text}`);
    case status.CANCELLED:
      return new OpError(code.CONNECT, `the call was cancelled: ${text}`);
    case status.UNIMPLEMENTED:
      if (details === 'Too many responses received' || details === 'No message received') {
        return invalid(`the server sent the wrong number of responses (grpc-js: ${details})`);
      }
      break;
    case status.INTERNAL:
      if (/^Received RST_STREAM|^Protocol error|Connection dropped/.test(details)) {
        return new OpError(code.CONNECT, `the call failed: ${text}`);
      }
      break;
    default:
      break;
  }
  return new OpError(code.RPC, `the server ended the call with ${text}`);
}

const ONE = Object.freeze({ requests: 1, responses: 1 });

/** Resolves once the writable side of `call` accepts more (or at once when it does). */
function writeMessage(call, message) {
  if (call.write(message)) return undefined;
  return new Promise((resolve) => call.once('drain', resolve));
}

export class GrpcClient {
  /**
   * @param {object} o config: server {host, port}, plaintext (--tls off), serverName, caPem, work
   */
  constructor({ server, plaintext = false, serverName, caPem, work }) {
    this.work = work;
    this.address = net6(server.host) ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
    this.serverName = serverName;
    this.plaintext = plaintext;
    const credentials = plaintext
      ? grpc.credentials.createInsecure()
      : grpc.credentials.createFromSecureContext(clientContext(caPem), { checkServerIdentity: checkServerName(serverName) });
    const options = {
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc-node.flow_control_window': WINDOW,
      'grpc.enable_retries': 0,
      'grpc.use_local_subchannel_pool': 1,
    };
    const sni = plaintext ? undefined : sniOf(serverName);
    if (sni !== undefined) options['grpc.ssl_target_name_override'] = sni;
    this.client = new BenchClient(this.address, credentials, options);
    this.connections = 1;
  }

  /**
   * Opens the channel's connection and waits until it is READY, so that a TLS failure surfaces
   * here (as `tls`) and not in the first call. Rejects with OpError.
   */
  async connect() {
    const channel = this.client.getChannel();
    for (;;) {
      const state = channel.getConnectivityState(true);
      if (state === grpc.connectivityState.READY) return;
      if (state === grpc.connectivityState.TRANSIENT_FAILURE || state === grpc.connectivityState.SHUTDOWN) {
        throw await this.lastError();
      }
      await new Promise((resolve) => channel.watchConnectivityState(state, Infinity, resolve));
    }
  }

  /**
   * grpc-js keeps a failed connection's error only as the text of the status a call gets while
   * the channel is in TRANSIENT_FAILURE; a call that does not wait for the channel fails at
   * once, locally, without sending anything, and carries it.
   */
  lastError() {
    return new Promise((resolve) => {
      this.client.Unary({}, new grpc.Metadata(), { waitForReady: false }, (err) => {
        const details = err?.details ?? 'the channel could not connect';
        if (!this.plaintext && looksLikeTls(details)) {
          resolve(new OpError(code.TLS, handshakeMessage(this.address, this.serverName, details)));
        } else {
          resolve(new OpError(code.CONNECT, `cannot connect to ${this.address}: ${details}`));
        }
      });
    });
  }

  /** Backpressure: the channel takes a new call whenever the event loop comes back to it. */
  acquire() {
    return 0;
  }

  release() {}

  /** One operation of the configured shape; resolves to {requests, responses}. */
  call(_lane, seq) {
    const { shape } = this.work;
    if (shape === 'unary') return this.unary(seq);
    if (shape === 'client_stream') return this.clientStream();
    if (shape === 'server_stream') return this.serverStream(seq);
    if (shape === 'send') return this.command(seq);
    return this.bidi();
  }

  /**
   * A one-way command (1.3): one Request with response_size 0, acknowledged by exactly one
   * Empty and status OK. Read as a response stream, as `unary`, so that a second message fails
   * the call instead of leaving it waiting.
   */
  async command(seq) {
    const { kind, requestSize } = this.work;
    const { path, requestSerialize, responseDeserialize } = SERVICE.Command;
    const call = this.client.makeServerStreamRequest(path, requestSerialize, responseDeserialize, request(kind, seq, requestSize, 0, 0));
    await acknowledged(call);
    return ONE;
  }

  /**
   * A unary call read as a response stream: grpc-js's own unary call reads one message and never
   * the next, so a server that sends two would leave it waiting for the status forever. Exactly
   * one response, carrying the request's seq, then status OK.
   */
  async unary(seq) {
    const { kind, requestSize, responseSize } = this.work;
    const { path, requestSerialize, responseDeserialize } = SERVICE.Unary;
    const call = this.client.makeServerStreamRequest(path, requestSerialize, responseDeserialize, request(kind, seq, requestSize, responseSize, 0));
    await this.responses(call, 1, () => seq);
    return ONE;
  }

  async clientStream() {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    let call;
    const result = new Promise((resolve, reject) => {
      call = this.client.ClientStream((err, summary) => {
        if (err) return reject(statusToOpError(err));
        if (summary.decodeError) return reject(invalid(`undecodable summary: ${summary.decodeError}`));
        const problem = checkSummary(summary, kind, n, requestSize, responseSize);
        if (problem) reject(invalid(problem));
        else resolve({ requests: n, responses: 1 });
      });
    });
    result.catch(() => {});
    for (let i = 0; i < n; i++) {
      const wait = writeMessage(call, request(kind, i, requestSize, responseSize, 0));
      if (wait) await Promise.race([wait, result]);
    }
    call.end();
    return result;
  }

  /** Reads a response stream: exactly n responses with seq seqOf(0..n-1), then status OK. */
  responses(call, n, seqOf = (i) => i) {
    const { kind, responseSize } = this.work;
    return new Promise((resolve, reject) => {
      let received = 0;
      let failure;
      const fail = (e) => {
        if (failure === undefined) {
          failure = e;
          call.cancel();
        }
      };
      call.on('data', (response) => {
        if (failure !== undefined) return;
        if (received === n) return fail(invalid(`the server sent more than the ${n} responses asked for`));
        if (response.decodeError) return fail(invalid(`undecodable response message: ${response.decodeError}`));
        const problem = checkResponse(response, kind, seqOf(received), responseSize);
        if (problem) return fail(invalid(problem));
        received++;
      });
      call.on('error', () => {});
      call.on('status', (s) => {
        if (failure !== undefined) return reject(failure);
        if (s.code !== status.OK) return reject(statusToOpError(s));
        if (received !== n) return reject(invalid(`the server ended the call after ${received} of ${n} responses`));
        resolve();
      });
    });
  }

  async serverStream(seq) {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    const call = this.client.ServerStream(request(kind, seq, requestSize, responseSize, n));
    await this.responses(call, n);
    return { requests: 1, responses: n };
  }

  async bidi() {
    const { kind, requestSize, responseSize, messages: n } = this.work;
    const call = this.client.Bidi();
    const done = this.responses(call, n);
    done.catch(() => {});
    for (let i = 0; i < n; i++) {
      const wait = writeMessage(call, request(kind, i, requestSize, responseSize, 0));
      if (wait) await Promise.race([wait, done]);
    }
    call.end();
    await done;
    return { requests: n, responses: n };
  }

  /**
   * Send-saturation on one client stream: each message is accepted when grpc-js calls back the
   * write (it handed the message to the HTTP/2 stream, which waits for flow control).
   */
  async saturate(_lane, sender, clock) {
    const { kind, requestSize, responseSize } = this.work;
    let call;
    const result = new Promise((resolve, reject) => {
      call = this.client.ClientStream((err, summary) => {
        if (err) return reject(statusToOpError(err));
        if (summary.decodeError) return reject(invalid(`undecodable summary: ${summary.decodeError}`));
        resolve(summary);
      });
    });
    result.catch(() => {});
    const turn = new Yielder(clock);
    for (let seq = sender.next(clock()); seq >= 0; seq = sender.next(clock())) {
      const message = request(kind, seq, requestSize, responseSize, 0);
      await Promise.race([new Promise((resolve) => call.write(message, resolve)), result]);
      sender.accepted(clock());
      await turn.maybe();
    }
    call.end();
    const summary = await result;
    const problem = checkSummary(summary, kind, sender.sent, requestSize, responseSize);
    if (problem) throw invalid(problem);
    sender.summaryReceived(clock());
  }

  async close() {
    this.client.close();
  }
}

function net6(host) {
  return host.includes(':');
}

/** Exactly one Empty, then status OK (the acknowledgement of a Command). */
function acknowledged(call) {
  return new Promise((resolve, reject) => {
    let received = 0;
    let failure;
    call.on('data', (ack) => {
      if (failure !== undefined) return;
      received++;
      if (ack.decodeError) failure = invalid(`undecodable acknowledgement: ${ack.decodeError}`);
      else if (received > 1) failure = invalid('the server acknowledged a command with more than one Empty');
      if (failure !== undefined) call.cancel();
    });
    call.on('error', () => {});
    call.on('status', (s) => {
      if (failure !== undefined) return reject(failure);
      if (s.code !== status.OK) return reject(statusToOpError(s));
      if (received !== 1) return reject(invalid('the server ended a command with status OK but no Empty'));
      resolve();
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Server

/** TLS credentials with this peer's settings (grpc-js's createSsl cannot set them). */
class BenchServerCredentials extends grpc.ServerCredentials {
  _equals(other) {
    return other === this;
  }
}

/** The HTTP/2 SETTINGS this peer's grpc server sends, with TLS or without. */
const SERVER_SETTINGS = Object.freeze({
  initialWindowSize: WINDOW,
  maxConcurrentStreams: MAX_STREAMS,
  maxFrameSize: 16384,
  enablePush: false,
});

/**
 * grpc-js's Server, with the HTTP/2 connection window raised to 16 MiB on every new session:
 * grpc-js sets only the stream window (through SETTINGS) and has no option for the connection
 * window, which node:http2 changes only with setLocalWindowSize on a live session.
 * createHttp2Server is grpc-js's (undocumented) factory of its HTTP/2 servers; if it is missing
 * the server still works and says so on stderr.
 *
 * With insecure credentials (--tls off) grpc-js builds a plain node:http2 server from its own
 * options only (no SETTINGS but max_concurrent_streams, no noDelay), so the same SETTINGS are set
 * on it (`updateSettings`, which every later session sends) and TCP_NODELAY on each accepted
 * socket: plaintext changes nothing but the TLS layer (docs/stacks.md "Plaintext").
 */
class BenchServer extends grpc.Server {
  createHttp2Server(credentials) {
    const server = super.createHttp2Server(credentials);
    if (credentials === PLAINTEXT) {
      server.updateSettings(SERVER_SETTINGS);
      server.on('connection', (socket) => socket.setNoDelay(true));
    }
    server.on('session', (session) => {
      try {
        session.setLocalWindowSize(WINDOW);
      } catch (e) {
        warn(`cannot raise an HTTP/2 connection window to ${WINDOW}: ${e.message}`);
      }
    });
    return server;
  }
}

if (typeof grpc.Server.prototype.createHttp2Server !== 'function') {
  warn('grpc-js has no Server.createHttp2Server: HTTP/2 connection windows stay at 65,535 bytes');
}

/** grpc-js's insecure server credentials: HTTP/2 with prior knowledge (h2c). */
const PLAINTEXT = grpc.ServerCredentials.createInsecure();

function refuse(counters, message) {
  counters.reject(message);
  warn(`rejected a call with status 3: ${message}`);
  return { code: status.INVALID_ARGUMENT, details: message };
}

/** What is wrong with a request (undefined when nothing): its decoding, then its content. */
function problemOf(req, shape, index, head) {
  if (req.decodeError) return `the request is not a valid rpcarena.bench.v1.Request: ${req.decodeError}`;
  return checkRequest(req, shape, index, head);
}

/** The server's handlers, one per shape: every request is checked before it is answered. */
function handlers(counters) {
  return {
    Unary: (call, callback) => serveUnary(counters, call, callback),
    ClientStream: (call, callback) => serveClientStream(counters, call, callback),
    ServerStream: (call) => serveServerStream(counters, call),
    Bidi: (call) => serveBidi(counters, call),
    Command: (call, callback) => serveCommand(counters, call, callback),
  };
}

/**
 * A one-way command (1.3): validated as a unary request whose response_size must be 0, counted
 * in `commands`, acknowledged with Empty, which counts as a response message (as the client
 * counts the acknowledgements it read in `responses`, and as the Go, Kotlin and C++ servers do).
 */
function serveCommand(counters, call, callback) {
  counters.rpcs++;
  counters.requests++;
  const req = call.request;
  let problem = problemOf(req, 'send');
  if (!problem && req.responseSize !== 0) problem = `command: response_size ${req.responseSize}, expected 0 (a command has no response)`;
  if (problem) return callback(refuse(counters, problem));
  counters.commands++;
  counters.responses++;
  callback(null, {});
}

function serveUnary(counters, call, callback) {
  counters.rpcs++;
  counters.requests++;
  const req = call.request;
  const problem = problemOf(req, 'unary');
  if (problem) return callback(refuse(counters, problem));
  counters.responses++;
  callback(null, responseTo(req, req.seq));
}

/** Checks every request and answers the stream's summary once it ends. */
function serveClientStream(counters, call, callback) {
  counters.rpcs++;
  const summary = new SummaryBuilder();
  let head;
  let done = false;
  call.on('data', (req) => {
    if (done) return;
    counters.requests++;
    const problem = problemOf(req, 'client_stream', summary.count, head);
    if (problem) {
      done = true;
      return callback(refuse(counters, problem));
    }
    head ??= streamHead(req);
    summary.add(req, head.length);
  });
  call.on('error', () => {});
  call.on('end', () => {
    if (done) return;
    done = true;
    if (summary.count === 0) return callback(refuse(counters, 'a client stream carries at least one request'));
    counters.responses++;
    callback(null, summary.finish());
  });
}

/** Writes the requested responses, waiting for the stream's drain, until the call is cancelled. */
async function serveServerStream(counters, call) {
  counters.rpcs++;
  counters.requests++;
  const req = call.request;
  const problem = problemOf(req, 'server_stream');
  if (problem) return call.emit('error', refuse(counters, problem));
  let cancelled = false;
  call.on('cancelled', () => {
    cancelled = true;
  });
  call.on('error', () => {});
  for (let i = 0; i < req.responseMessages && !cancelled; i++) {
    counters.responses++;
    if (!call.write(responseTo(req, i))) {
      await new Promise((resolve) => {
        call.once('drain', resolve);
        call.once('cancelled', resolve);
      });
    }
  }
  if (!cancelled) call.end();
}

/** Answers each request as it comes, pausing the reads while the writes wait for drain. */
function serveBidi(counters, call) {
  counters.rpcs++;
  let head;
  let index = 0;
  let done = false;
  call.on('data', (req) => {
    if (done) return;
    counters.requests++;
    const problem = problemOf(req, 'bidi', index, head);
    if (problem) {
      done = true;
      return call.emit('error', refuse(counters, problem));
    }
    head ??= streamHead(req);
    index++;
    counters.responses++;
    if (!call.write(responseTo(req, req.seq))) {
      call.pause();
      call.once('drain', () => call.resume());
    }
  });
  call.on('error', () => {});
  call.on('end', () => {
    if (done) return;
    done = true;
    if (index === 0) return call.emit('error', refuse(counters, 'a bidi call carries at least one request'));
    call.end();
  });
}

/** Starts a gRPC server on `listen` (plaintext: without TLS); resolves to {address, close()}. */
export async function startGrpcServer({ listen, plaintext = false, certPem, keyPem, counters }) {
  const server = new BenchServer({
    'grpc.max_concurrent_streams': MAX_STREAMS,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(SERVICE, handlers(counters));
  const credentials = plaintext
    ? PLAINTEXT
    : new BenchServerCredentials({ noDelay: true, allowHTTP1: false, settings: { ...SERVER_SETTINGS } }, serverContextOptions(certPem, keyPem));
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const port = await new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${listen.port}`, credentials, (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    address: `${host}:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 300).unref();
      }),
  };
}
