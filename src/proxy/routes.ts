// The proxied services (WIRE.md "Proxied services"): POST /svcapi/create_qdrant_collection
// (Qdrant, `vector.qdrantUrl`) and /svcapi/adk/* with every method (the agent service,
// `adk.baseUrl`). Any token may use them, read-only ones too: they change nothing of ours.

import type { Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { HttpMethod } from '../http/route.js';
import type { AdkProxy } from './adk.js';
import { DISTANCES, type CollectionSpec, type QdrantProxy } from './qdrant.js';

const ADK_PREFIX = '/svcapi/adk/';
const WITH_BODY: readonly HttpMethod[] = ['POST', 'PUT', 'PATCH'];
const WITHOUT_BODY: readonly HttpMethod[] = ['GET', 'DELETE'];

const UPSTREAM_ERRORS = {
  501: { description: 'the upstream setting is not set (the message names it)' },
  502: { description: 'the upstream failed (5xx), did not answer in time, or could not be reached' },
};

export function proxyRoutes(qdrant: QdrantProxy, adk: AdkProxy): Route[] {
  const tag = 'Proxied services';
  const createCollection: Route = {
    method: 'POST', path: '/svcapi/create_qdrant_collection', auth: 'jwt', tag, mutates: false,
    summary: 'Create a collection in the Qdrant vector store',
    description:
      'Through Qdrant\'s REST client against `vector.qdrantUrl`: `PUT /collections/{name}` with `{vectors: {size: vector_size, distance}}`. ' +
      'An upstream 4xx (409: the collection exists) passes through with its status and `{error}` carrying Qdrant\'s message (an upstream 401 is a 502).',
    body: S.object(
      {
        name: S.string({ minLength: 1, maxLength: 255, description: 'collection name' }),
        vector_size: S.integer({ minimum: 1, maximum: 65536, description: 'dimension of the vectors' }),
        distance: S.string({ enum: [...DISTANCES] }),
      },
      ['name', 'vector_size', 'distance'],
      { additionalProperties: false },
    ),
    responses: {
      200: {
        description: 'created',
        schema: S.object(
          { success: S.boolean(), message: S.string(), name: S.string(), vector_size: S.integer(), distance: S.string() },
          ['success', 'message', 'name', 'vector_size', 'distance'],
        ),
      },
      ...UPSTREAM_ERRORS,
    },
    handler: (req) => qdrant.createCollection(req.body as CollectionSpec),
  };

  const forward = (method: HttpMethod): Route => ({
    method, path: `${ADK_PREFIX}{path+}`, auth: 'jwt', tag, mutates: false,
    summary: `Forward a ${method} to the agent service`,
    description:
      '`/svcapi/adk/<path>?<query>` goes to `<adk.baseUrl>/<path>?<query>`, path and query exactly as sent, with the caller\'s email in `X-Historian-User`; ' +
      '400 for a path segment that is, or decodes (once or more) to, `.` or `..`, or that holds `/`, `\\` or NUL in any encoding (`%2e%2e`, `%252e`, `%2f`, `%5c`); ' +
      'of the request headers only `content-type` and `accept` go along (never the token). The answer comes back with its status, body and content type when below 400; ' +
      'an upstream 4xx passes through with its status and `{error}` (the upstream\'s message; a 401 is a 502). Bounded: the body up to `server.maxBodyBytes`, the answer up to 64 MiB, the exchange within `adk.timeoutMs`.',
    params: S.object({ path: S.string({ description: 'the rest of the path; may hold `/`' }) }, ['path']),
    ...(WITH_BODY.includes(method) ? { rawBody: { contentTypes: ['application/json', '*/*'], description: 'passed on as it is' } } : {}),
    responses: {
      200: { description: 'the upstream answer (any status below 400, with its content type)', contentType: '*/*' },
      ...UPSTREAM_ERRORS,
    },
    handler: (req) =>
      adk.forward({
        method,
        rest: req.path.slice(ADK_PREFIX.length),
        rawQuery: req.rawQuery,
        headers: req.headers,
        body: req.rawBody,
        user: req.user!.sub,
        signal: req.signal,
      }),
  });

  return [createCollection, ...[...WITHOUT_BODY, ...WITH_BODY].map(forward)];
}
