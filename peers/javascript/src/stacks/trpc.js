// The trpc-http and trpc-ws stacks: tRPC 11 (@trpc/server, @trpc/client) over HTTP/1.1 (the
// standalone adapter's createHTTPHandler on node:https or node:http; httpLink, NOT
// httpBatchLink, so every call is its own request, on one keep-alive connection per lane) and over
// WebSocket (applyWSSHandler on a `ws` WebSocketServer; wsLink on one createWSClient, and so one
// `ws` WebSocket, per lane). The bench's mutation, `unary` (POST /trpc/unary over HTTP; over
// WebSocket tRPC's JSON-RPC-like `{"id", "method": "mutation", "params": {"path": "unary",
// "input"}}`), without a transformer: input a Request and output a Response as JSON (json.js).
// The dated query (protocol 1.4), `nested.procedure_1`, lives on a router of its own with the
// superjson transformer (DATED_PREFIX). Input parsers are the identity function (no schema
// library); serveUnary and serveDated check the input, so a bad request is refused with TRPCError
// BAD_REQUEST (HTTP 400, or the error message's data.code over WebSocket) and counted in
// `rejected`.
import { TRPCError, initTRPC } from '@trpc/server';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { applyWSSHandler } from '@trpc/server/adapters/ws';
import { TRPCClientError, createTRPCClient, createWSClient, httpLink, wsLink } from '@trpc/client';
import superjson from 'superjson';
import { JsonLaneClient, PROCEDURE, Refusal, origin, serveDated, serveUnary, statusVerdict } from './jsonrpc.js';
import { DATED_INPUT } from './dated.js';
import { notFound, startHttpServer, transportFailure, webSocketClass } from './transports.js';
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

/** Runs a procedure body; its Refusal becomes the TRPCError BAD_REQUEST or INTERNAL_SERVER_ERROR. */
function trpcRefusals(body) {
  try {
    return body();
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    throw new TRPCError({ code: e.kind === 'invalid' ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', message: e.message });
  }
}

/** The router: the mutation `unary`, whose refusals become tRPC errors. */
function router(counters, fault) {
  return t.router({
    [PROCEDURE]: t.procedure
      .input((value) => value)
      .mutation(({ input }) => trpcRefusals(() => serveUnary(counters, fault, input))),
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
  const server = await startHttpServer({ ...options, listener, webSocket, webSocketPaths: webSocket ? [DATED_PREFIX] : [] });
  if (webSocket) {
    applyWSSHandler({ wss: server.wss, router: appRouter, createContext: () => ({}) });
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
 * The official client over one HTTP/1.1 lane: httpLink on `fetch`; the dated query goes to the
 * superjson router (GET `/dated/nested.procedure_1?input=...`, as the reference's rpc-trpc).
 */
function httpClient(base, fetch) {
  const client = createTRPCClient({ links: [httpLink({ url: `${base}${PREFIX}`, fetch })] });
  const dated = createTRPCClient({ links: [httpLink({ url: `${base}${DATED_PREFIX}`, fetch, transformer: superjson })] });
  return { unary: (json) => client[PROCEDURE].mutate(json), dated: (input) => dated.nested.procedure_1.query(input) };
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
