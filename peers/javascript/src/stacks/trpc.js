// The trpc-http and trpc-ws stacks: tRPC 11 (@trpc/server, @trpc/client) over HTTP/1.1 (the
// standalone adapter's createHTTPHandler on node:https or node:http; httpLink, NOT
// httpBatchLink, so every call is its own POST, on one keep-alive connection per lane) and over
// WebSocket (applyWSSHandler on a `ws` WebSocketServer; wsLink on one createWSClient, and so one
// `ws` WebSocket, per lane). One mutation, `unary` (POST /trpc/unary over HTTP; over WebSocket
// tRPC's JSON-RPC-like `{"id", "method": "mutation", "params": {"path": "unary", "input"}}`),
// without a transformer: input a Request and output a Response as JSON (json.js). The input
// parser is the identity function (no schema library); serveUnary checks it, so a bad request is
// refused with TRPCError BAD_REQUEST (HTTP 400, or the error message's data.code over WebSocket)
// and counted in `rejected`.
import { TRPCError, initTRPC } from '@trpc/server';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { applyWSSHandler } from '@trpc/server/adapters/ws';
import { TRPCClientError, createTRPCClient, createWSClient, httpLink, wsLink } from '@trpc/client';
import { JsonLaneClient, PROCEDURE, Refusal, origin, serveUnary, statusVerdict } from './jsonrpc.js';
import { fetchOn, notFound, openHttpLane, startHttpServer, transportFailure, webSocketClass } from './transports.js';
import { OpError } from '../protocol.js';

/** The path prefix of the tRPC handler over HTTP. */
export const PREFIX = '/trpc';

const t = initTRPC.create();

/** The router: the mutation `unary`, whose refusals become tRPC errors. */
function router(counters, fault) {
  return t.router({
    [PROCEDURE]: t.procedure
      .input((value) => value)
      .mutation(({ input }) => {
        try {
          return serveUnary(counters, fault, input);
        } catch (e) {
          if (!(e instanceof Refusal)) throw e;
          throw new TRPCError({ code: e.kind === 'invalid' ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', message: e.message });
        }
      }),
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
  const server = await startHttpServer({ ...options, listener, webSocket });
  if (webSocket) applyWSSHandler({ wss: server.wss, router: appRouter, createContext: () => ({}) });
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

/** One lane over HTTP: a tRPC client with httpLink on its own keep-alive connection. */
async function httpLane(options) {
  const base = origin('http', options.plaintext, options.server);
  const agent = await openHttpLane({ ...options, base });
  const client = createTRPCClient({ links: [httpLink({ url: `${base}${PREFIX}`, fetch: fetchOn(agent) })] });
  return { send: (json) => client[PROCEDURE].mutate(json), close: () => agent.close() };
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
        resolve({ send: (json) => client[PROCEDURE].mutate(json), close: async () => wsClient.close() });
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
