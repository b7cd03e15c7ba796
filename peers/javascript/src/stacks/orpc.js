// The orpc-http and orpc-ws stacks: oRPC's RPC protocol (@orpc/server, @orpc/client) over
// HTTP/1.1 (RPCHandler of @orpc/server/node on node:https or node:http; RPCLink of
// @orpc/client/fetch, one keep-alive connection per lane) and over WebSocket (RPCHandler of
// @orpc/server/ws on a `ws` WebSocketServer; RPCLink of @orpc/client/websocket on one `ws`
// WebSocket per lane). Two procedures: `unary`, at `/rpc/unary` over HTTP (POST, the link's
// default method; the body is oRPC's `{"json": ..., "meta": [...]}`), whose input is a Request and
// output a Response as JSON (json.js); and `serverStream`, whose output is an event iterator of
// Responses (over HTTP a text/event-stream response, over WebSocket oRPC's event-iterator
// messages). No schema library: the input is declared with none and checked by serveUnary or
// serveServerStream, so a bad request is refused with ORPCError BAD_REQUEST (HTTP 400, or the
// stream's error event) and counted in `rejected`. Client streams and bidi calls: not offered
// (offer.js says why).
import { ORPCError, os } from '@orpc/server';
import { RPCHandler as HttpHandler } from '@orpc/server/node';
import { RPCHandler as WsHandler } from '@orpc/server/ws';
import { createORPCClient } from '@orpc/client';
import { RPCLink as FetchLink } from '@orpc/client/fetch';
import { RPCLink as WebSocketLink } from '@orpc/client/websocket';
import { JsonLaneClient, PROCEDURE, Refusal, SERVER_STREAM, origin, refusalsAs, serveServerStream, serveUnary, statusVerdict } from './jsonrpc.js';
import { fetchOn, notFound, openHttpLane, openWebSocket, startHttpServer, transportFailure, webSocketPace } from './transports.js';

/** The path prefix of the RPC handler over HTTP. */
export const PREFIX = '/rpc';

/** A Refusal as oRPC's error. */
const orpcError = (e) => new ORPCError(e.kind === 'invalid' ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR', { message: e.message });

/**
 * The router: `unary`, and `serverStream`, whose output is an event iterator (an async
 * generator); refusals become oRPC errors (in a stream: its error event).
 */
function router(counters, fault) {
  return {
    [PROCEDURE]: os.handler(({ input }) => {
      try {
        return serveUnary(counters, fault, input);
      } catch (e) {
        if (!(e instanceof Refusal)) throw e;
        throw orpcError(e);
      }
    }),
    [SERVER_STREAM]: os.handler(({ input, context }) => refusalsAs(serveServerStream(counters, fault, input, context.pace), orpcError)),
  };
}

/** Starts an oRPC server (`webSocket`: orpc-ws); resolves to {address, close()}. */
export async function startOrpcServer({ webSocket = false, fault, counters, ...options }) {
  const routes = router(counters, fault);
  const http = new HttpHandler(routes);
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
function verdictOf(address, serverName, plaintext) {
  return (e) => {
    if (e instanceof ORPCError || (e?.code !== undefined && typeof e?.status === 'number' && e?.defined !== undefined)) {
      return statusVerdict(e.status, e.code, e.message);
    }
    const failure = transportFailure(address, serverName, plaintext, e);
    return { status: undefined, code: failure.code, message: failure.message };
  };
}

/** One lane over HTTP: an oRPC client on its own keep-alive connection. */
async function httpLane(options) {
  const base = origin('http', options.plaintext, options.server);
  const agent = await openHttpLane({ ...options, base });
  const client = createORPCClient(new FetchLink({ url: `${base}${PREFIX}`, fetch: fetchOn(agent) }));
  return { send: (json) => client[PROCEDURE](json), stream: (json) => client[SERVER_STREAM](json), close: () => agent.close() };
}

/** One lane over WebSocket: an oRPC client on its own WebSocket. */
async function webSocketLane(options) {
  const url = `${origin('ws', options.plaintext, options.server)}${PREFIX}`;
  const websocket = await openWebSocket({ ...options, url });
  const client = createORPCClient(new WebSocketLink({ websocket }));
  return {
    send: (json) => client[PROCEDURE](json),
    stream: (json) => client[SERVER_STREAM](json),
    close: async () => websocket.close(),
  };
}

/** The orpc-http (or, with `webSocket`, orpc-ws) client. */
export class OrpcClient extends JsonLaneClient {
  constructor(options, webSocket = false) {
    super(options, webSocket, { httpLane, webSocketLane, verdictOf });
  }
}
