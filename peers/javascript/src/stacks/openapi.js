// The orpc-openapi stack: oRPC's OpenAPI (REST) protocol over HTTP/1.1, as the reference's
// openapi-orpc benchmark serves it: OpenAPIHandler of @orpc/openapi/node on node:https or
// node:http (transports.js), and its official client, OpenAPILink of @orpc/openapi-client/fetch,
// on the lane's keep-alive connection. Both are built from one contract (@orpc/contract): the
// bench's procedure `unary` at POST /unary (body: the Request as JSON, json.js; answer: the
// Response as JSON) and the dated procedure (protocol 1.4) at GET /nested/procedure_1 with the
// query `who=hello world` (input {who: "hello world"}; answer {name, date as an ISO 8601 string,
// input}). No schema library: serveUnary and serveDated check the input, so a bad request is
// refused with ORPCError BAD_REQUEST (HTTP 400 with oRPC's error JSON) and counted in `rejected`.
import { oc } from '@orpc/contract';
import { implement } from '@orpc/server';
import { OpenAPIHandler } from '@orpc/openapi/node';
import { OpenAPILink } from '@orpc/openapi-client/fetch';
import { createORPCClient } from '@orpc/client';
import { JsonLaneClient, PROCEDURE, serveDated, serveUnary } from './jsonrpc.js';
import { REST_DATED_INPUT } from './dated.js';
import { notFound, startHttpServer } from './transports.js';
import { orpcRefusals, verdictOf } from './orpc.js';

/**
 * The routes, shared by the server (implement) and the client (OpenAPILink). Not frozen: oRPC's
 * implementer wraps it in a proxy that returns its own builders for these properties.
 */
export const CONTRACT = {
  [PROCEDURE]: oc.route({ method: 'POST', path: `/${PROCEDURE}` }),
  nested: { procedure_1: oc.route({ method: 'GET', path: '/nested/procedure_1' }) },
};

/** The router implementing CONTRACT; refusals become oRPC errors. */
function router(counters, fault) {
  const os = implement(CONTRACT);
  return os.router({
    [PROCEDURE]: os[PROCEDURE].handler(({ input }) => orpcRefusals(() => serveUnary(counters, fault, input))),
    nested: {
      procedure_1: os.nested.procedure_1.handler(({ input }) => orpcRefusals(() => serveDated(counters, fault, input, REST_DATED_INPUT, true))),
    },
  });
}

/** Starts an orpc-openapi server; resolves to {address, close()}. */
export async function startOpenApiServer({ fault, counters, ...options }) {
  const handler = new OpenAPIHandler(router(counters, fault));
  const listener = async (req, res) => {
    const { matched } = await handler.handle(req, res, { context: {} });
    if (!matched) notFound(req, res);
  };
  return startHttpServer({ ...options, listener });
}

/** The official client over one HTTP/1.1 lane: OpenAPILink on `fetch`. */
function httpClient(base, fetch) {
  const client = createORPCClient(new OpenAPILink(CONTRACT, { url: base, fetch }));
  return { unary: (json) => client[PROCEDURE](json), dated: (input) => client.nested.procedure_1(input) };
}

/** What JsonLaneClient needs of oRPC's OpenAPI protocol (HTTP only). */
export const OPENAPI_LIBRARY = Object.freeze({
  httpClient,
  verdictOf,
  dated: Object.freeze({ input: REST_DATED_INPUT, form: 'iso' }),
});

/** The orpc-openapi client. */
export class OpenApiClient extends JsonLaneClient {
  constructor(options) {
    super(options, false, OPENAPI_LIBRARY);
  }
}
