// The orpc-http and orpc-ws stacks: oRPC's RPC protocol (@orpc/server, @orpc/client) over
// HTTP/1.1 (RPCHandler of @orpc/server/node on node:https or node:http; RPCLink of
// @orpc/client/fetch, one keep-alive connection per lane) and over WebSocket (RPCHandler of
// @orpc/server/ws on a `ws` WebSocketServer; RPCLink of @orpc/client/websocket on one `ws`
// WebSocket per lane). The bench's procedure, `unary`, at `/rpc/unary` over HTTP (POST, the
// link's default method; the body is oRPC's `{"json": ..., "meta": [...]}`); its input is a
// Request and its output a Response as JSON (json.js). `serverStream`, whose output is an event
// iterator of Responses (over HTTP a text/event-stream response, over WebSocket oRPC's
// event-iterator messages). The dated procedure (protocol 1.4), `nested.procedure_1`, is called
// with GET over HTTP, as the reference does. No schema library: inputs are declared with none and
// checked by serveUnary, serveServerStream and serveDated, so a bad request is refused with
// ORPCError BAD_REQUEST (HTTP 400, or the stream's error event) and counted in `rejected`.
// Client streams and bidi calls: not offered (offer.js says why).
import { ORPCError, os } from '@orpc/server';
import { RPCHandler as HttpHandler } from '@orpc/server/node';
import { RPCHandler as WsHandler } from '@orpc/server/ws';
import { createORPCClient } from '@orpc/client';
import { RPCLink as FetchLink } from '@orpc/client/fetch';
import { RPCLink as WebSocketLink } from '@orpc/client/websocket';
import { JsonLaneClient, PROCEDURE, Refusal, SERVER_STREAM, origin, refusalsAs, serveDated, serveServerStream, serveUnary, statusVerdict } from './jsonrpc.js';
import { DATED_INPUT, DATED_PATH } from './dated.js';
import { notFound, openWebSocket, startHttpServer, transportFailure, webSocketPace } from './transports.js';

/** The path prefix of the RPC handler over HTTP. */
export const PREFIX = '/rpc';

/** A Refusal as oRPC's error. */
const orpcError = (e) => new ORPCError(e.kind === 'invalid' ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', { message: e.message });

/** Runs a procedure body; its Refusal becomes the oRPC error BAD_REQUEST or INTERNAL_SERVER_ERROR. */
export function orpcRefusals(body) {
  try {
    return body();
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    throw orpcError(e);
  }
}

/**
 * The router: `unary`, `serverStream` (an event iterator: an async generator, whose refusals
 * become the stream's error event; `context.pace` is the WebSocket's, transports.js), and
 * (protocol 1.4, payload dated) `nested.procedure_1`, whose answer's Date the RPC serializer tags
 * in `meta` so that the client revives it.
 */
function router(counters, fault) {
  return {
    [PROCEDURE]: os.handler(({ input }) => orpcRefusals(() => serveUnary(counters, fault, input))),
    [SERVER_STREAM]: os.handler(({ input, context }) => refusalsAs(serveServerStream(counters, fault, input, context.pace), orpcError)),
    nested: { procedure_1: os.handler(({ input }) => orpcRefusals(() => serveDated(counters, fault, input, DATED_INPUT))) },
  };
}

/** Starts an oRPC server (`webSocket`: orpc-ws); resolves to {address, close()}. */
export async function startOrpcServer({ webSocket = false, fault, counters, ...options }) {
  const routes = router(counters, fault);
  // The dated procedure is called with GET, as the reference's rpc group does: RPCHandler's
  // StrictGetMethodPlugin would refuse a GET to a procedure not declared GET, so it is off.
  const http = new HttpHandler(routes, { strictGetMethodPluginEnabled: false });
  const listener = async (req, res) => {
    const { matched } = await http.handle(req, res, { prefix: PREFIX, context: {} });
    if (!matched) notFound(req, res);
  };
  const server = await startHttpServer({ ...options, listener, webSocket });
  if (webSocket) {
    const ws = new WsHandler(routes);
    server.wss.on('connection', (socket) => ws.upgrade(socket, { context: { pace: webSocketPace(socket) } }));
  }
  return server;
}

/** oRPC's errors, and failures of the connection under it, as a verdict. */
export function verdictOf(address, serverName, plaintext) {
  return (e) => {
    if (e instanceof ORPCError || (e?.code !== undefined && typeof e?.status === 'number' && e?.defined !== undefined)) {
      return statusVerdict(e.status, e.code, e.message);
    }
    const failure = transportFailure(address, serverName, plaintext, e);
    return { status: undefined, code: failure.code, message: failure.message };
  };
}

/**
 * The official client over one HTTP/1.1 lane: RPCLink on `fetch`. The dated procedure is called
 * with GET (its input in the query's `data`), as the reference's rpc group does; `unary` with
 * POST, RPCLink's default.
 */
function httpClient(base, fetch) {
  const method = (_options, path) => (path[0] === DATED_PATH[0] ? 'GET' : 'POST');
  const client = createORPCClient(new FetchLink({ url: `${base}${PREFIX}`, fetch, method }));
  return {
    unary: (json) => client[PROCEDURE](json),
    serverStream: (json) => client[SERVER_STREAM](json),
    dated: (input) => client.nested.procedure_1(input),
  };
}

/** The URL of a lane's WebSocket. */
function webSocketUrl(options) {
  return `${origin('ws', options.plaintext, options.server)}${PREFIX}`;
}

/** The official client on its own WebSocket (`onSocket` sees the socket before the link does). */
async function webSocketClient(options, onSocket) {
  const websocket = await openWebSocket({ ...options, url: webSocketUrl(options) });
  onSocket?.(websocket);
  const client = createORPCClient(new WebSocketLink({ websocket }));
  return {
    unary: (json) => client[PROCEDURE](json),
    serverStream: (json) => client[SERVER_STREAM](json),
    dated: (input) => client.nested.procedure_1(input),
    close: async () => websocket.close(),
  };
}

/** An oRPC response message carrying an error status (`p.s`, 400 for BAD_REQUEST). */
function webSocketError(message) {
  const status = message?.p?.s;
  return typeof status === 'number' && status >= 400 ? `status ${status}` : undefined;
}

/** What JsonLaneClient needs of oRPC's RPC protocol. */
export const ORPC_LIBRARY = Object.freeze({
  httpClient,
  webSocketClient,
  webSocketUrl,
  webSocketError,
  verdictOf,
  dated: Object.freeze({ input: DATED_INPUT, form: 'revived' }),
});

/** The orpc-http (or, with `webSocket`, orpc-ws) client. */
export class OrpcClient extends JsonLaneClient {
  constructor(options, webSocket = false) {
    super(options, webSocket, ORPC_LIBRARY);
  }
}
