// The trpc-http and trpc-ws stacks: tRPC 11 (@trpc/server, @trpc/client) over HTTP/1.1 (the
// standalone adapter's createHTTPHandler on node:https or node:http; httpLink, NOT
// httpBatchLink, so every call is its own POST, on one keep-alive connection per lane) and over
// WebSocket (applyWSSHandler on a `ws` WebSocketServer; wsLink on one createWSClient, and so one
// `ws` WebSocket, per lane). One mutation, `unary` (POST /trpc/unary over HTTP; over WebSocket
// tRPC's JSON-RPC-like `{"id", "method": "mutation", "params": {"path": "unary", "input"}}`),
// without a transformer: input a Request and output a Response as JSON (json.js); and one
// subscription, `serverStream`, yielding Responses (over HTTP server-sent events from
// GET /trpc/serverStream?input=..., read by httpSubscriptionLink; over WebSocket tRPC's
// `"method": "subscription"` messages). The input parser is the identity function (no schema
// library); serveUnary and serveServerStream check it, so a bad request is refused with TRPCError
// BAD_REQUEST (HTTP 400, the stream's error, or the error message's data.code over WebSocket)
// and counted in `rejected`. Client streams and bidi calls: tRPC has none (offer.js).
import { TRPCError, initTRPC } from '@trpc/server';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { applyWSSHandler } from '@trpc/server/adapters/ws';
import { TRPCClientError, createTRPCClient, createWSClient, httpLink, httpSubscriptionLink, splitLink, wsLink } from '@trpc/client';
import { EventSource } from 'undici';
import { JsonLaneClient, PROCEDURE, Refusal, SERVER_STREAM, origin, refusalsAs, serveServerStream, serveUnary, statusVerdict } from './jsonrpc.js';
import { MAX_JSON_BYTES, fetchOn, notFound, openHttpLane, startHttpServer, transportFailure, webSocketClass, webSocketPace } from './transports.js';
import { OpError } from '../protocol.js';

/** The path prefix of the tRPC handler over HTTP. */
export const PREFIX = '/trpc';

const t = initTRPC.create();

/** A Refusal as tRPC's error. */
const trpcError = (e) => new TRPCError({ code: e.kind === 'invalid' ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', message: e.message });

/**
 * The router: the mutation `unary` and the subscription `serverStream` (an async generator of
 * Responses); refusals become tRPC errors.
 */
function router(counters, fault) {
  return t.router({
    [PROCEDURE]: t.procedure
      .input((value) => value)
      .mutation(({ input }) => {
        try {
          return serveUnary(counters, fault, input);
        } catch (e) {
          if (!(e instanceof Refusal)) throw e;
          throw trpcError(e);
        }
      }),
    [SERVER_STREAM]: t.procedure
      .input((value) => value)
      .subscription(({ input, ctx }) => refusalsAs(serveServerStream(counters, fault, input, ctx.pace), trpcError)),
  });
}

/** Starts a tRPC server (`webSocket`: trpc-ws); resolves to {address, close()}. */
export async function startTrpcServer({ webSocket = false, fault, counters, ...options }) {
  const appRouter = router(counters, fault);
  const handler = createHTTPHandler({ router: appRouter, createContext: () => ({}), basePath: `${PREFIX}/` });
  const listener = (req, res) => {
    if (req.url.startsWith(`${PREFIX}/`)) handler(req, res);
    else notFound(req, res);
  };
  // A subscription over SSE is a GET with its input in the URL: up to MAX_JSON_BYTES of it.
  const server = await startHttpServer({ ...options, listener, webSocket, maxHeaderSize: webSocket ? undefined : MAX_JSON_BYTES });
  if (webSocket) applyWSSHandler({ wss: server.wss, router: appRouter, createContext: ({ res }) => ({ pace: webSocketPace(res) }) });
  return server;
}

/** tRPC's client errors, and failures of the connection under them, as a verdict. */
function verdictOf(address, serverName, plaintext) {
  return (e) => {
    if (e instanceof TRPCClientError && e.data?.code !== undefined) {
      return statusVerdict(e.data.httpStatus, e.data.code, e.message);
    }
    if (e instanceof OpError) return { status: undefined, code: e.code, message: e.message };
    const failure = transportFailure(address, serverName, plaintext, e?.cause ?? e);
    return { status: undefined, code: failure.code, message: failure.message };
  };
}

/**
 * A subscription as an async iterable of its data, ended by its completion. An error ends it with
 * that error, and so does a connection error, which the links would retry (httpSubscriptionLink
 * reconnects even after the server's INTERNAL_SERVER_ERROR): a call fails at its first error.
 * Leaving the loop early, or failing, unsubscribes.
 */
export function subscription(procedure, input) {
  const queue = [];
  let head = 0;
  let done = false;
  let failure;
  let wake;
  const notify = () => wake?.();
  const fail = (e) => {
    failure ??= e;
    notify();
  };
  const handle = procedure.subscribe(input, {
    onData: (data) => {
      queue.push(data);
      notify();
    },
    onError: fail,
    onComplete: () => {
      done = true;
      notify();
    },
    onConnectionStateChange: (state) => {
      if (state.state === 'connecting' && state.error) fail(state.error);
    },
  });
  const next = async () => {
    for (;;) {
      if (head < queue.length) return { value: queue[head++], done: false };
      if (failure !== undefined) {
        handle.unsubscribe();
        throw failure;
      }
      if (done) return { value: undefined, done: true };
      await new Promise((resolve) => {
        wake = resolve;
      });
    }
  };
  const stop = async () => {
    handle.unsubscribe();
    return { value: undefined, done: true };
  };
  return { [Symbol.asyncIterator]: () => ({ next, return: stop }) };
}

/**
 * One lane over HTTP: a tRPC client with httpLink (mutations) and httpSubscriptionLink
 * (subscriptions, as server-sent events through undici's EventSource) on its own keep-alive
 * connection.
 */
async function httpLane(options) {
  const base = origin('http', options.plaintext, options.server);
  const agent = await openHttpLane({ ...options, base });
  const url = `${base}${PREFIX}`;
  const links = [
    splitLink({
      condition: (op) => op.type === 'subscription',
      true: httpSubscriptionLink({ url, EventSource, eventSourceOptions: () => ({ dispatcher: agent }) }),
      false: httpLink({ url, fetch: fetchOn(agent) }),
    }),
  ];
  const client = createTRPCClient({ links });
  return { send: (json) => client[PROCEDURE].mutate(json), stream: (json) => subscription(client[SERVER_STREAM], json), close: () => agent.close() };
}

/** One lane over WebSocket: a tRPC client with wsLink on its own createWSClient. */
function webSocketLane(options) {
  const url = origin('ws', options.plaintext, options.server);
  return new Promise((resolve, reject) => {
    let opened = false;
    const wsClient = createWSClient({
      url,
      WebSocket: webSocketClass(options),
      retryDelayMs: () => 1000,
      onOpen: () => {
        opened = true;
        const client = createTRPCClient({ links: [wsLink({ client: wsClient })] });
        resolve({
          send: (json) => client[PROCEDURE].mutate(json),
          stream: (json) => subscription(client[SERVER_STREAM], json),
          close: async () => wsClient.close(),
        });
      },
      onError: (event) => {
        if (opened) return;
        wsClient.close();
        reject(transportFailure(url, options.serverName, options.plaintext, event?.error ?? event));
      },
    });
  });
}

/** The trpc-http (or, with `webSocket`, trpc-ws) client. */
export class TrpcClient extends JsonLaneClient {
  constructor(options, webSocket = false) {
    super(options, webSocket, { httpLane, webSocketLane, verdictOf });
  }
}
