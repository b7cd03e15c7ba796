// The trpc-http and trpc-ws stacks: tRPC 11 (@trpc/server, @trpc/client) over HTTP/1.1 (the
// standalone adapter's createHTTPHandler on node:https or node:http; httpLink, NOT
// httpBatchLink, so every call is its own request, on one keep-alive connection per lane) and over
// WebSocket (applyWSSHandler on a `ws` WebSocketServer; wsLink on one createWSClient, and so one
// `ws` WebSocket, per lane). The bench's mutation, `unary` (POST /trpc/unary over HTTP; over
// WebSocket tRPC's JSON-RPC-like `{"id", "method": "mutation", "params": {"path": "unary",
// "input"}}`), without a transformer: input a Request and output a Response as JSON (json.js);
// and one subscription, `serverStream`, yielding Responses (over HTTP server-sent events from
// GET /trpc/serverStream?input=..., read by httpSubscriptionLink; over WebSocket tRPC's
// `"method": "subscription"` messages). The dated query (protocol 1.4), `nested.procedure_1`,
// lives on a router of its own with the superjson transformer (DATED_PREFIX). Input parsers are
// the identity function (no schema library); serveUnary, serveServerStream and serveDated check
// the input, so a bad request is refused with TRPCError BAD_REQUEST (HTTP 400, the stream's
// error, or the error message's data.code over WebSocket) and counted in `rejected`. Client
// streams and bidi calls: tRPC has none (offer.js).
import { TRPCError, initTRPC } from '@trpc/server';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { applyWSSHandler } from '@trpc/server/adapters/ws';
import { TRPCClientError, createTRPCClient, createWSClient, httpLink, httpSubscriptionLink, splitLink, wsLink } from '@trpc/client';
import superjson from 'superjson';
import { EventSource } from 'undici';
import { JsonLaneClient, PROCEDURE, Refusal, SERVER_STREAM, origin, refusalsAs, serveDated, serveServerStream, serveUnary, statusVerdict } from './jsonrpc.js';
import { DATED_INPUT } from './dated.js';
import { MAX_JSON_BYTES, notFound, startHttpServer, transportFailure, webSocketClass, webSocketPace } from './transports.js';
import { OpError } from '../protocol.js';

/** The path prefix of the tRPC handler over HTTP. */
export const PREFIX = '/trpc';

/**
 * The path of the dated router (protocol 1.4): over HTTP its base path (`/dated/` +
 * `nested.procedure_1`), over WebSocket the path of its own WebSocketServer. A transformer belongs
 * to a router instance, and the bench procedure keeps plain JSON, so the superjson router that
 * carries the dated procedure is mounted beside it.
 */
export const DATED_PREFIX = '/dated';

const t = initTRPC.create();
const tDated = initTRPC.create({ transformer: superjson });

/** A Refusal as tRPC's error. */
const trpcError = (e) => new TRPCError({ code: e.kind === 'invalid' ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', message: e.message });

/** Runs a procedure body; its Refusal becomes the TRPCError BAD_REQUEST or INTERNAL_SERVER_ERROR. */
function trpcRefusals(body) {
  try {
    return body();
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    throw trpcError(e);
  }
}

/**
 * The router: the mutation `unary` and the subscription `serverStream` (an async generator of
 * Responses; `ctx.pace` is the WebSocket's, transports.js); refusals become tRPC errors.
 */
function router(counters, fault) {
  return t.router({
    [PROCEDURE]: t.procedure
      .input((value) => value)
      .mutation(({ input }) => trpcRefusals(() => serveUnary(counters, fault, input))),
    [SERVER_STREAM]: t.procedure
      .input((value) => value)
      .subscription(({ input, ctx }) => refusalsAs(serveServerStream(counters, fault, input, ctx.pace), trpcError)),
  });
}

/** The dated router (superjson): the query `nested.procedure_1`, as the reference's rpc-trpc has it. */
function datedRouter(counters, fault) {
  return tDated.router({
    nested: tDated.router({
      procedure_1: tDated.procedure
        .input((value) => value)
        .query(({ input }) => trpcRefusals(() => serveDated(counters, fault, input, DATED_INPUT))),
    }),
  });
}

/** Starts a tRPC server (`webSocket`: trpc-ws); resolves to {address, close()}. */
export async function startTrpcServer({ webSocket = false, fault, counters, ...options }) {
  const appRouter = router(counters, fault);
  const dated = datedRouter(counters, fault);
  const handler = createHTTPHandler({ router: appRouter, createContext: () => ({}), basePath: `${PREFIX}/` });
  const datedHandler = createHTTPHandler({ router: dated, createContext: () => ({}), basePath: `${DATED_PREFIX}/` });
  const listener = (req, res) => {
    if (req.url.startsWith(`${PREFIX}/`)) handler(req, res);
    else if (req.url.startsWith(`${DATED_PREFIX}/`)) datedHandler(req, res);
    else notFound(req, res);
  };
  // A subscription over SSE is a GET with its input in the URL: up to MAX_JSON_BYTES of it.
  const maxHeaderSize = webSocket ? undefined : MAX_JSON_BYTES;
  const server = await startHttpServer({ ...options, listener, webSocket, webSocketPaths: webSocket ? [DATED_PREFIX] : [], maxHeaderSize });
  if (webSocket) {
    applyWSSHandler({ wss: server.wss, router: appRouter, createContext: ({ res }) => ({ pace: webSocketPace(res) }) });
    applyWSSHandler({ wss: server.wssAt[DATED_PREFIX], router: dated, createContext: () => ({}) });
  }
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
 * The official client over one HTTP/1.1 lane: httpLink on `fetch` for the mutation,
 * httpSubscriptionLink for the subscription (server-sent events through undici's EventSource on
 * the lane's `agent`); the dated query goes to the superjson router (GET
 * `/dated/nested.procedure_1?input=...`, as the reference's rpc-trpc).
 */
function httpClient(base, fetch, agent) {
  const url = `${base}${PREFIX}`;
  const link = splitLink({
    condition: (op) => op.type === 'subscription',
    true: httpSubscriptionLink({ url, EventSource, eventSourceOptions: () => ({ dispatcher: agent }) }),
    false: httpLink({ url, fetch }),
  });
  const client = createTRPCClient({ links: [link] });
  const dated = createTRPCClient({ links: [httpLink({ url: `${base}${DATED_PREFIX}`, fetch, transformer: superjson })] });
  return {
    unary: (json) => client[PROCEDURE].mutate(json),
    serverStream: (json) => subscription(client[SERVER_STREAM], json),
    dated: (input) => dated.nested.procedure_1.query(input),
  };
}

/** The URL of a lane's WebSocket: the superjson router's path with the dated payload. */
function webSocketUrl(options) {
  return `${origin('ws', options.plaintext, options.server)}${options.work.dated ? DATED_PREFIX : ''}`;
}

/**
 * The official client: wsLink on its own createWSClient (which opens the WebSocket itself, from
 * the class given; `onSocket` sees the socket before anything is sent on it). With the dated
 * payload the socket goes to the superjson router and the link has that transformer.
 */
function webSocketClient(options, onSocket) {
  const url = webSocketUrl(options);
  const Base = webSocketClass(options);
  const WebSocket = onSocket === undefined ? Base : class extends Base {
    constructor(...args) {
      super(...args);
      onSocket(this);
    }
  };
  const transformer = options.work.dated ? superjson : undefined;
  return new Promise((resolve, reject) => {
    let opened = false;
    const wsClient = createWSClient({
      url,
      WebSocket,
      retryDelayMs: () => 1000,
      onOpen: () => {
        opened = true;
        const client = createTRPCClient({ links: [wsLink({ client: wsClient, transformer })] });
        resolve({
          unary: (json) => client[PROCEDURE].mutate(json),
          serverStream: (json) => subscription(client[SERVER_STREAM], json),
          dated: (input) => client.nested.procedure_1.query(input),
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

/** A tRPC response message carrying an error. */
function webSocketError(message) {
  return message?.error !== undefined ? 'error' : undefined;
}

/** What JsonLaneClient needs of tRPC. */
export const TRPC_LIBRARY = Object.freeze({
  httpClient,
  webSocketClient,
  webSocketUrl,
  webSocketError,
  verdictOf,
  dated: Object.freeze({ input: DATED_INPUT, form: 'revived' }),
});

/** The trpc-http (or, with `webSocket`, trpc-ws) client. */
export class TrpcClient extends JsonLaneClient {
  constructor(options, webSocket = false) {
    super(options, webSocket, TRPC_LIBRARY);
  }
}
