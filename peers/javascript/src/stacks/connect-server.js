// The `connect` stack's server: the Connect protocol (connect-es: @connectrpc/connect's router,
// @connectrpc/connect-node's connectNodeAdapter) on node:http2, over TLS 1.3 with ALPN h2 or,
// with --tls off, HTTP/2 with prior knowledge (h2c). It serves rpcarena.bench.v1.BenchService
// (connect-schema.js) in binary protobuf (application/proto, application/connect+proto), the
// Connect protocol only (the router's gRPC and gRPC-Web handlers are off), no compression, and
// checks every request as every stack does (workload.js checkRequest); a refused call ends with
// the Connect code invalid_argument (HTTP 400 for unary) and is counted in `rejected`.
//
// Settings (docs/stacks.md "connect"): SETTINGS_INITIAL_WINDOW_SIZE 16 MiB, the connection window
// raised to 16 MiB on every session (setLocalWindowSize), SETTINGS_MAX_CONCURRENT_STREAMS 10,000,
// max frame size 16,384, no push, TCP_NODELAY on every accepted socket, messages up to 16 MiB +
// 1 KiB both ways (readMaxBytes, writeMaxBytes), no session memory cap of Node's own.
import http2 from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { create, mergeFromBinary, toBinary } from '@bufbuild/protobuf';
import { warn } from '../protocol.js';
import { serverContextOptions } from '../tls.js';
import { MAX_MESSAGE_BYTES, SummaryBuilder, checkRequest, responseTo, streamHead } from '../workload.js';
import { ENDING, bidiEnd, bidiStep, commandPlan, streamPlan } from '../fault-streams.js';
import { BenchService, ResponseSchema, requestOf, responseInit, summaryInit } from './connect-schema.js';

export const WINDOW = 16 * 1024 * 1024;
export const MAX_STREAMS = 10_000;

/** The HTTP/2 SETTINGS of this server, with TLS or without. */
export const SERVER_SETTINGS = Object.freeze({
  initialWindowSize: WINDOW,
  maxConcurrentStreams: MAX_STREAMS,
  maxFrameSize: 16384,
  enablePush: false,
});

/**
 * Node's http2 refuses new streams (ENHANCE_YOUR_CALM) once a session buffers more than
 * maxSessionMemory MB; the default 10 MB is below one 16 MiB message, so it is lifted here (as
 * grpc-js lifts it for the grpc stack).
 */
export const MAX_SESSION_MEMORY_MB = 1024;

/** Options of connectNodeAdapter (and of the router it makes). */
const ADAPTER = Object.freeze({
  connect: true,
  grpc: false,
  grpcWeb: false,
  acceptCompression: [],
  readMaxBytes: MAX_MESSAGE_BYTES,
  writeMaxBytes: MAX_MESSAGE_BYTES,
});

/** A call refused with invalid_argument, counted in `rejected`. */
function refuse(counters, message) {
  counters.reject(message);
  warn(`rejected a call with invalid_argument: ${message}`);
  return new ConnectError(message, Code.InvalidArgument);
}

function emptyStream(shape) {
  return `a ${shape === 'bidi' ? 'bidi call' : 'client stream'} carries at least one request`;
}

/** What is wrong with a one-way command (1.3): a unary request's problems, or a response size. */
function commandProblem(req) {
  const problem = checkRequest(req, 'send');
  if (problem || req.responseSize === 0) return problem;
  return `command: response_size ${req.responseSize}, expected 0 (a command has no response)`;
}

/** The service's methods, each request checked before it is answered. */
function implementation(counters) {
  return {
    unary(message) {
      counters.rpcs++;
      counters.requests++;
      const req = requestOf(message);
      const problem = checkRequest(req, 'unary');
      if (problem) throw refuse(counters, problem);
      counters.responses++;
      return responseInit(responseTo(req, req.seq));
    },
    async clientStream(messages) {
      counters.rpcs++;
      const summary = new SummaryBuilder();
      let head;
      for await (const message of messages) {
        counters.requests++;
        const req = requestOf(message);
        const problem = checkRequest(req, 'client_stream', summary.count, head);
        if (problem) throw refuse(counters, problem);
        head ??= streamHead(req);
        summary.add(req, head.length);
      }
      if (summary.count === 0) throw refuse(counters, emptyStream('client_stream'));
      counters.responses++;
      return summaryInit(summary.finish());
    },
    async *serverStream(message, context) {
      counters.rpcs++;
      counters.requests++;
      const req = requestOf(message);
      const problem = checkRequest(req, 'server_stream');
      if (problem) throw refuse(counters, problem);
      for (let i = 0; i < req.responseMessages && !context.signal.aborted; i++) {
        counters.responses++;
        yield responseInit(responseTo(req, i));
      }
    },
    async *bidi(messages) {
      counters.rpcs++;
      let head;
      let index = 0;
      for await (const message of messages) {
        counters.requests++;
        const req = requestOf(message);
        const problem = checkRequest(req, 'bidi', index, head);
        if (problem) throw refuse(counters, problem);
        head ??= streamHead(req);
        index++;
        counters.responses++;
        yield responseInit(responseTo(req, req.seq));
      }
      if (index === 0) throw refuse(counters, emptyStream('bidi'));
    },
    command(message) {
      counters.rpcs++;
      counters.requests++;
      const req = requestOf(message);
      const problem = commandProblem(req);
      if (problem) throw refuse(counters, problem);
      counters.commands++;
      counters.responses++;
      return {};
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Conformance faults (fault-streams.js): the same checks, then the mode's answer

/** Every request of a call, checked (unless skip-validation) and counted. */
async function readAll(counters, mode, shape, messages) {
  const requests = [];
  let head;
  for await (const message of messages) {
    counters.requests++;
    const req = requestOf(message);
    const problem = mode === 'skip-validation' ? null : checkRequest(req, shape, shape === 'unary' || shape === 'server_stream' ? undefined : requests.length, head);
    if (problem) throw refuse(counters, problem);
    head ??= streamHead(req);
    requests.push(req);
  }
  if (requests.length === 0 && mode !== 'skip-validation') throw refuse(counters, emptyStream(shape));
  return requests;
}

/** The messages a plan sends (OK before the last: the last left out, see docs/stacks.md). */
function sent(plan) {
  if (plan.ending.internal !== undefined) return [];
  return plan.ending === ENDING.OK_BEFORE_LAST ? plan.messages.slice(0, -1) : plan.messages;
}

function failIfInternal(ending) {
  if (ending?.internal !== undefined) throw new ConnectError(ending.internal, Code.Internal);
}

/**
 * A unary reply carries one message: none is the empty Response (an empty body), two are what
 * their concatenated encodings decode to (mergeFromBinary of the second into the first).
 */
function unaryReply(messages) {
  const reply = create(ResponseSchema, messages.length > 0 ? responseInit(messages[0]) : {});
  for (const more of messages.slice(1)) mergeFromBinary(ResponseSchema, reply, toBinary(ResponseSchema, create(ResponseSchema, responseInit(more))));
  return reply;
}

/** The fault server's methods; ClientStream is served as a bidi method (see startConnectServer). */
function faultImplementation(counters, mode) {
  const one = async function* (message) {
    yield message;
  };
  return {
    async unary(message) {
      counters.rpcs++;
      const plan = streamPlan(mode, 'unary', await readAll(counters, mode, 'unary', one(message)));
      failIfInternal(plan.ending);
      counters.responses++;
      return unaryReply(sent(plan));
    },
    async *clientStream(messages) {
      counters.rpcs++;
      const plan = streamPlan(mode, 'client_stream', await readAll(counters, mode, 'client_stream', messages));
      for (const summary of sent(plan)) yield summaryInit(summary);
      failIfInternal(plan.ending);
    },
    async *serverStream(message) {
      counters.rpcs++;
      const plan = streamPlan(mode, 'server_stream', await readAll(counters, mode, 'server_stream', one(message)));
      for (const response of sent(plan)) yield responseInit(response);
      failIfInternal(plan.ending);
    },
    bidi: (messages) => faultBidi(counters, mode, messages),
    command(message) {
      counters.rpcs++;
      counters.requests++;
      const req = requestOf(message);
      const problem = mode === 'skip-validation' ? null : commandProblem(req);
      if (problem) throw refuse(counters, problem);
      failIfInternal(commandPlan(mode));
      return {};
    },
  };
}

/** A fault server's bidi call: each request answered at once (fault-streams.js bidiStep). */
async function* faultBidi(counters, mode, messages) {
  counters.rpcs++;
  let head;
  let last;
  let index = 0;
  for await (const message of messages) {
    counters.requests++;
    const req = requestOf(message);
    const problem = mode === 'skip-validation' ? null : checkRequest(req, 'bidi', index, head);
    if (problem) throw refuse(counters, problem);
    head ??= streamHead(req);
    index++;
    last = req;
    const step = bidiStep(mode, req);
    const messagesNow = step.ending === ENDING.OK_BEFORE_LAST ? [] : step.messages;
    for (const response of messagesNow) yield responseInit(response);
    if (step.ending !== undefined) return failIfInternal(step.ending);
  }
  if (index === 0 && mode !== 'skip-validation') throw refuse(counters, emptyStream('bidi'));
  for (const response of bidiEnd(mode, last)) yield responseInit(response);
}

/**
 * The routes: the service, or (conformance fault) the fault service with ClientStream registered
 * as a bidi method: the Connect protocol frames both alike (enveloped messages each way, then the
 * end-stream message), and only a streaming implementation can send no summary or two.
 */
function routes(counters, fault) {
  return (router) => {
    if (fault === undefined) return router.service(BenchService, implementation(counters));
    const impl = faultImplementation(counters, fault);
    for (const method of BenchService.methods) {
      const served = method.localName === 'clientStream' ? { ...method, methodKind: 'bidi_streaming' } : method;
      router.rpc(served, impl[method.localName]);
    }
    return router;
  };
}

/** Starts a Connect server on `listen` (plaintext: h2c); resolves to {address, close()}. */
export async function startConnectServer({ listen, plaintext = false, certPem, keyPem, counters, fault }) {
  const handler = connectNodeAdapter({ ...ADAPTER, routes: routes(counters, fault) });
  const options = { settings: { ...SERVER_SETTINGS }, maxSessionMemory: MAX_SESSION_MEMORY_MB, noDelay: true };
  const server = plaintext
    ? http2.createServer(options, handler)
    : http2.createSecureServer({ ...options, ...serverContextOptions(certPem, keyPem), ALPNProtocols: ['h2'], allowHTTP1: false }, handler);
  const sessions = new Set();
  server.on('connection', (socket) => socket.setNoDelay(true));
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {});
    try {
      session.setLocalWindowSize(WINDOW);
    } catch (e) {
      warn(`cannot raise an HTTP/2 connection window to ${WINDOW}: ${e.message}`);
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    address: `${host}:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const session of sessions) session.destroy();
      }),
  };
}
