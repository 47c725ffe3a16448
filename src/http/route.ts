// The route declaration: every HTTP route of the service is one `RouteDef`.
// The router, request validation, response serializers and the OpenAPI
// document are all derived from these objects (see compile.ts, router.ts,
// openapi.ts), so nothing about a route is written down twice.

import type { Claims } from './caller.js';
import type { ErrorShape } from './errors.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** public: no token; jwt: any valid token; admin: a token whose role is admin. */
export type AuthLevel = 'public' | 'jwt' | 'admin';

/** A JSON Schema (draft 7 subset understood by ajv and fast-json-stringify). */
export type JsonSchema = { [key: string]: unknown };

export interface ResponseDef {
  description: string;
  /** JSON schema of the body; drives the fast-json-stringify serializer and the document. */
  schema?: JsonSchema;
  /** Content type when the body is not JSON (HTML, PEM, YAML, binary). */
  contentType?: string;
}

/**
 * What a handler sees of a request. Headers are lower-cased names. `Grant` is what the layer
 * above HTTP makes of the caller (the metadata layer's AccessGrant): the server builds it from
 * `user` on first use, through the `grantOf` it was given, so a route that never reads it costs
 * nothing and one that does gets it once per request.
 */
export interface Request<Grant = unknown> {
  readonly method: HttpMethod;
  readonly path: string;
  /** The route's declared path pattern (`/svcapi/collection/{id}`): what counters of the request are kept by. */
  readonly route: string;
  /** Raw query string without the leading `?` (for encodings the schema cannot express). */
  readonly rawQuery: string;
  readonly params: Record<string, string>;
  readonly query: Record<string, unknown>;
  /** Parsed and validated JSON body, when the route declares `body`. */
  readonly body: unknown;
  /** Unparsed body bytes, when the route declares `rawBody`. */
  readonly rawBody: Uint8Array | null;
  /** The body as it arrives, when the route declares `streamBody`. */
  readonly bodyStream: RequestBody | null;
  readonly headers: Readonly<Record<string, string>>;
  /** Verified token claims; null only on public routes. */
  readonly user: Claims | null;
  /** What `user` may reach; throws on a public route (there is no caller to grant anything). */
  readonly grant: Grant;
  readonly remoteAddress: string;
  /** Aborted when the client goes away before the reply is sent. */
  readonly signal: AbortSignal;
}

/**
 * A request body read as it arrives, chunk by chunk (each chunk the handler's own). Reading the
 * socket pauses while the handler is behind. Iterating throws a 413 once the body passes the
 * route's limit, and an error once the client goes away; the handler then discards what it kept.
 */
export interface RequestBody extends AsyncIterable<Uint8Array> {
  /** The declared Content-Length; null for a chunked body. */
  readonly declaredBytes: number | null;
  /** Bytes received and not taken by the handler yet. */
  readonly bufferedBytes: number;
  /** Bytes received so far. */
  readonly receivedBytes: number;
}

/** A reply. JSON bodies go through the route's serializer for `status`. */
export interface Reply {
  status?: number;
  body?: unknown;
  /** Set to send `body` (string or bytes) as is with this content type. */
  contentType?: string;
  headers?: Record<string, string>;
  /**
   * A streamed body (needs `contentType`). Status and headers go out with the
   * first chunk; an error thrown before any chunk becomes a normal error reply,
   * one thrown later cuts the connection (the client sees a truncated body).
   */
  stream?: (out: ResponseStream) => Promise<void>;
  /** The length a streamed body will have, when known: sent as Content-Length in the answer to HEAD. */
  streamLength?: number;
}

export interface ResponseStream {
  /**
   * Sends a chunk. Never blocks: what the socket cannot take at once is copied and queued.
   * Returns a promise while more than a high-water mark is queued; a producer that cannot
   * pace itself otherwise waits for it.
   */
  write(chunk: Uint8Array | string): void | Promise<void>;
  /** Bytes queued for a client that has not taken them yet. */
  readonly queuedBytes: number;
  /** Calls `listener` with byte counts as queued bytes go to the socket; returns an unsubscribe. */
  onFlushed(listener: (bytes: number) => void): () => void;
  /** True once the client went away or was cut off for not reading. */
  readonly aborted: boolean;
  /**
   * Cuts the connection at once, dropping what is queued: for a client too slow to keep up
   * (the request's signal then aborts, as when the client goes away).
   */
  cut(): void;
}

export type Handler<Grant = unknown> = (req: Request<Grant>) => Reply | Promise<Reply>;

export interface RouteDef<Grant = unknown> {
  method: HttpMethod;
  /** OpenAPI style template: `/svcapi/collection/{id}`. */
  path: string;
  auth: AuthLevel;
  /** Group name in the documentation. */
  tag: string;
  summary: string;
  description?: string;
  /**
   * Whether the route changes state. Defaults to `method !== 'GET'`; routes that
   * only read through POST (queries) say `false`. read-only callers get 403 on
   * mutating routes.
   */
  mutates?: boolean;
  /** Object schema of the path parameters (all strings). */
  params?: JsonSchema;
  /** Object schema of the query string; repeated keys arrive as arrays. */
  query?: JsonSchema;
  /** Schema of the JSON body; a body that fails it is a 400 naming the field. */
  body?: JsonSchema;
  /** The handler reads the body bytes itself (binary, msgpack, large write bodies). */
  rawBody?: {
    contentTypes: string[];
    description: string;
    /**
     * The handler is done with `rawBody` once its reply (promise) settles and keeps no reference
     * to it (it copies what it needs, as the write routes do into a storage ring): the server then
     * reads bodies into pooled buffers and reuses them.
     */
    bufferReused?: boolean;
  };
  /**
   * The handler reads the body as it arrives (`req.bodyStream`), never whole: uploads of any size
   * in bounded memory. The limit is `maxBodyBytes` (required with this option).
   */
  streamBody?: {
    description: string;
  };
  /** Overrides `server.maxBodyBytes` for this route. */
  maxBodyBytes?: number;
  /** The setting behind `maxBodyBytes`, named in the 413 so an operator knows what to raise. */
  maxBodySetting?: string;
  responses: Record<number, ResponseDef>;
  /**
   * The token may also come as the `access_token` query parameter (for EventSource and
   * WebSocket clients, which cannot set headers); the header wins when both are given. The
   * parameter's value never reaches a log line.
   */
  tokenInQuery?: boolean;
  /**
   * A reply that streams for as long as the client stays (SSE): at shutdown it is ended at once
   * instead of holding the grace period.
   */
  longLived?: boolean;
  /**
   * The route's own credential check, in place of the bearer token (the Influx forms of
   * /ingest/v2: `Token`, Basic, `u`/`p`): the claims, or a 401. May be async (a password is
   * checked); the body is read meanwhile. Role rules (admin, read-only) apply as for tokens.
   */
  authenticate?: (req: { headers: Readonly<Record<string, string>>; query: Record<string, unknown>; remoteAddress: string; path: string }) => Claims | Promise<Claims>;
  /**
   * Mutating, yet open to read-only callers, because what it changes is the caller's own
   * credentials, never data (API keys: a read-only account may make a read-only key). Admin
   * routes stay admin-only.
   */
  openToReadOnly?: boolean;
  /** Mutating, yet served while a metadata restore runs (the backup routes themselves, login); every other mutating route answers 503 then. */
  maintenanceExempt?: boolean;
  /** Mutating, yet served by every node of a cluster (login, shadow_write); other mutating routes answer 503 on a secondary. */
  anyNode?: boolean;
  /** Error body shape: `{error}` (default), `{status: "error", message}`, or InfluxDB 2's `{code, message}`. */
  errorShape?: ErrorShape;
  handler: Handler<Grant>;
}

/** A route's declaration without its handler: what the OpenAPI document is made from. */
export type RouteSpec = Omit<RouteDef, 'handler'>;

export function mutates(route: Pick<RouteDef, 'method' | 'mutates'>): boolean {
  return route.mutates ?? route.method !== 'GET';
}
