// The HTTPS front: one uWebSockets.js SSLApp, one catch-all handler that
// routes through our own Router (uWS routing cannot tell 404 from 405), checks
// the token and role, validates, reads the body without blocking, calls the
// route's handler and writes the reply. Everything a route needs to know about
// itself comes from its declaration (route.ts).

import { performance } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import { unpack } from 'msgpackr';
import type { TokenService } from '../auth/tokens.js';
import { redactQuery, type Logger } from '../log.js';
import { checkDecodedBodyDepth, checkJsonBodyDepth } from './body-guard.js';
import { check, compileRoute, type CompiledRoute } from './compile.js';
import { HttpError, isWireConvertible, toErrorReply, type ErrorShape } from './errors.js';
import { mutates, type HttpMethod, type Reply, type Request, type RouteDef } from './route.js';
import { Router } from './router.js';
import { sendWhole, StallWatch, StreamedBody, type ResponseHead } from './response-body.js';

export interface ServerOptions {
  routes: readonly RouteDef[];
  tokens: TokenService;
  log: Logger;
  maxBodyBytes: number;
  tls: { keyFile: string; certFile: string };
  /** A streamed response whose client takes nothing for this long is closed. */
  streamStallTimeoutMs: number;
}

/** Bytes a streamed reply may queue for a slow client before its producer is asked to wait. */
const STREAM_HIGH_WATER_BYTES = 1 << 20;

/** Per-request state shared by the reply path and the abort handler. */
interface Exchange {
  res: uWS.HttpResponse;
  method: string;
  path: string;
  rawQuery: string;
  started: number;
  done: boolean;
  controller: AbortController;
  errorShape: ErrorShape;
  /** Set while a streamed reply is being written. */
  stream: StreamedBody | null;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type',
  429: 'Too Many Requests', 500: 'Internal Server Error', 501: 'Not Implemented', 503: 'Service Unavailable',
  507: 'Insufficient Storage',
};
const statusLine = (status: number) => `${status} ${STATUS_TEXT[status] ?? 'Status'}`;

const JSON_TYPE = 'application/json; charset=utf-8';
const METHODS = new Set<string>(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

export class HttpServer {
  private readonly app: uWS.TemplatedApp;
  private readonly router = new Router<CompiledRoute>();
  private listenSocket: uWS.us_listen_socket | null = null;
  private inFlight = 0;
  private draining = false;
  private idleWaiters: Array<() => void> = [];
  private readonly stalls: StallWatch;

  constructor(private readonly opts: ServerOptions) {
    this.stalls = new StallWatch(opts.streamStallTimeoutMs, (stream) =>
      opts.log.warn({ queuedBytes: stream.queuedBytes, stallTimeoutMs: opts.streamStallTimeoutMs }, 'closing a streamed response: the client stopped reading'),
    );
    for (const def of opts.routes) this.router.add(def.method, def.path, compileRoute(def));
    this.app = uWS.SSLApp({ key_file_name: opts.tls.keyFile, cert_file_name: opts.tls.certFile });
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  /** Resolves with the bound port (useful when `port` is 0). */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onListen = (socket: uWS.us_listen_socket | false) => {
        if (!socket) return reject(new Error(`cannot listen on ${host || '*'}:${port}`));
        this.listenSocket = socket;
        resolve(uWS.us_socket_local_port(socket as unknown as uWS.us_socket));
      };
      if (host) this.app.listen(host, port, onListen);
      else this.app.listen(port, onListen);
    });
  }

  /** Stops accepting connections, then waits (at most `graceMs`) for in-flight requests. */
  async close(graceMs: number): Promise<void> {
    this.draining = true;
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    const ex: Exchange = {
      res,
      method: req.getCaseSensitiveMethod().toUpperCase(),
      path: req.getUrl(),
      rawQuery: req.getQuery() ?? '',
      started: performance.now(),
      done: false,
      controller: new AbortController(),
      errorShape: 'error',
      stream: null,
    };
    this.inFlight++;
    res.onAborted(() => {
      ex.stream?.abort();
      if (ex.done) return;
      ex.done = true;
      ex.controller.abort();
      this.finish(ex, 499);
    });

    try {
      if (this.draining) throw new HttpError('UNAVAILABLE', 'server is shutting down');
      const match = METHODS.has(ex.method) ? this.router.match(ex.method, ex.path) : this.router.match('GET', ex.path);
      if (match.kind === 'not-found') throw new HttpError('NOT_FOUND', `no route for ${ex.path}`);
      if (match.kind === 'method-not-allowed' || !METHODS.has(ex.method)) {
        const allow = match.kind === 'method-not-allowed' ? match.allow.join(', ') : 'GET';
        throw new HttpError('METHOD_NOT_ALLOWED', `method ${ex.method} not allowed on ${ex.path}`, { allow });
      }
      const route = match.value;
      ex.errorShape = route.def.errorShape ?? 'error';
      const headers: Record<string, string> = {};
      req.forEach((key, value) => {
        headers[key] = value;
      });
      const user = this.authorize(route.def, headers);
      check(route.validateParams, match.params, 'path');
      const query = parseQuery(ex.rawQuery);
      check(route.validateQuery, query, 'query');

      const base = {
        method: ex.method as HttpMethod,
        path: ex.path,
        rawQuery: ex.rawQuery,
        params: match.params,
        query,
        headers,
        user,
        remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
        signal: ex.controller.signal,
      };
      if (!route.def.body && !route.def.rawBody) {
        this.run(ex, route, { ...base, body: undefined, rawBody: null });
        return;
      }
      const limit = route.def.maxBodyBytes ?? this.opts.maxBodyBytes;
      const setting = route.def.maxBodyBytes === undefined ? 'server.maxBodyBytes' : (route.def.maxBodySetting ?? 'the route');
      readBody(res, headers['content-length'], limit, setting, (err, bytes) => {
        if (ex.done) return;
        if (err) return this.fail(ex, err);
        try {
          const request = route.def.rawBody
            ? { ...base, body: undefined, rawBody: bytes }
            : { ...base, body: decodeBody(bytes, headers['content-type'], route), rawBody: null };
          this.run(ex, route, request);
        } catch (e) {
          this.fail(ex, e);
        }
      });
    } catch (err) {
      this.fail(ex, err);
    }
  }

  private authorize(def: RouteDef, headers: Record<string, string>) {
    if (def.auth === 'public') return null;
    const user = this.opts.tokens.verifyHeader(headers.authorization);
    if (def.auth === 'admin' && user.role !== 'admin') throw new HttpError('FORBIDDEN', 'admin role required');
    if (user.role === 'read-only' && mutates(def)) throw new HttpError('FORBIDDEN', 'read-only account cannot change data');
    return user;
  }

  private run(ex: Exchange, route: CompiledRoute, request: Request): void {
    let result: Reply | Promise<Reply>;
    try {
      result = route.def.handler(request);
    } catch (err) {
      return this.fail(ex, err);
    }
    if (result instanceof Promise) {
      result.then((reply) => this.reply(ex, route, reply), (err) => this.fail(ex, err));
    } else {
      this.reply(ex, route, result);
    }
  }

  private reply(ex: Exchange, route: CompiledRoute, reply: Reply): void {
    if (ex.done) return;
    if (reply.stream) {
      this.streamReply(ex, reply);
      return;
    }
    const status = reply.status ?? 200;
    let payload: string | Uint8Array;
    let contentType: string;
    if (reply.contentType) {
      contentType = reply.contentType;
      payload = reply.body as string | Uint8Array;
    } else {
      const serialize = route.serializers.get(status);
      contentType = JSON_TYPE;
      payload = serialize ? serialize(reply.body) : JSON.stringify(reply.body ?? null);
    }
    this.send(ex, status, contentType, payload, reply.headers);
  }

  private streamReply(ex: Exchange, reply: Reply): void {
    const status = reply.status ?? 200;
    const stream = new StreamedBody(ex.res, {
      head: head(status, reply.contentType ?? 'application/octet-stream', reply.headers),
      highWaterBytes: STREAM_HIGH_WATER_BYTES,
      onClosed: (reason) => {
        this.stalls.delete(stream);
        if (reason === 'stalled') ex.controller.abort();
      },
    });
    ex.stream = stream;
    this.stalls.add(stream);
    reply.stream!(stream).then(
      () => {
        if (ex.done) return;
        if (!stream.isStarted && stream.queuedBytes === 0) {
          this.stalls.delete(stream);
          ex.stream = null;
          return this.send(ex, status, reply.contentType ?? 'application/octet-stream', '', reply.headers);
        }
        ex.done = true;
        stream.end();
        this.finish(ex, status);
      },
      (err) => {
        if (ex.done || stream.aborted) {
          this.opts.log.info({ path: ex.path, reason: (err as Error)?.message ?? String(err) }, 'stream stopped after the client went away');
          return;
        }
        if (!stream.isStarted) {
          this.stalls.delete(stream);
          ex.stream = null;
          return this.fail(ex, err);
        }
        this.opts.log.warn({ err: String(err), path: ex.path }, 'stream failed after it started; closing the connection');
        ex.done = true;
        stream.abort();
        ex.res.close();
        this.finish(ex, status);
      },
    );
  }

  private fail(ex: Exchange, err: unknown): void {
    if (ex.done) return;
    if (!(err instanceof HttpError) && !isWireConvertible(err)) {
      this.opts.log.error({ err, method: ex.method, path: ex.path }, 'request failed');
    }
    const { status, body, headers } = toErrorReply(err, ex.errorShape);
    this.send(ex, status, JSON_TYPE, body, headers, status === 413);
  }

  private send(
    ex: Exchange,
    status: number,
    contentType: string,
    payload: string | Uint8Array,
    headers: Record<string, string> | undefined,
    closeConnection = false,
  ): void {
    if (ex.done) return;
    ex.done = true;
    const close = closeConnection || this.draining;
    sendWhole(ex.res, head(status, contentType, headers), payload, close);
    this.finish(ex, status);
  }

  private finish(ex: Exchange, status: number): void {
    const ms = Math.round((performance.now() - ex.started) * 1000) / 1000;
    const path = ex.rawQuery ? `${ex.path}?${redactQuery(ex.rawQuery)}` : ex.path;
    this.opts.log.info({ method: ex.method, path, status, ms }, 'request');
    if (--this.inFlight === 0 && this.idleWaiters.length > 0) {
      for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }
}

function head(status: number, contentType: string, headers: Record<string, string> | undefined): ResponseHead {
  const list: Array<[string, string]> = [['content-type', contentType]];
  if (headers) for (const name in headers) list.push([name, headers[name]]);
  return { statusLine: statusLine(status), headers: list };
}

/** Query string to object; repeated keys become arrays. */
export function parseQuery(rawQuery: string): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  if (!rawQuery) return query;
  for (const [key, value] of new URLSearchParams(rawQuery)) {
    const existing = query[key];
    if (existing === undefined) query[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else query[key] = [existing, value];
  }
  return query;
}

/**
 * Collects the body chunk by chunk as uWS delivers them (the event loop keeps
 * serving other sockets meanwhile). A declared length over the limit is refused
 * before any byte is read; an undeclared one is refused as soon as it passes it.
 */
function readBody(
  res: uWS.HttpResponse,
  contentLength: string | undefined,
  limit: number,
  setting: string,
  done: (err: HttpError | null, body: Uint8Array) => void,
): void {
  const declared = contentLength === undefined ? -1 : Number(contentLength);
  const tooLarge = () => new HttpError('PAYLOAD_TOO_LARGE', `request body is larger than ${limit} bytes (${setting})`);
  if (declared > limit) {
    done(tooLarge(), new Uint8Array(0));
    return;
  }
  let buffer = Buffer.allocUnsafe(declared > 0 ? declared : 0);
  let length = 0;
  let failed = false;
  res.onData((chunk, isLast) => {
    if (failed) return;
    const bytes = new Uint8Array(chunk); // valid only during this callback: copy out
    if (length + bytes.length > limit) {
      failed = true;
      done(tooLarge(), new Uint8Array(0));
      return;
    }
    if (length + bytes.length > buffer.length) {
      const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(buffer.length * 2, length + bytes.length, 16384)));
      buffer.copy(grown, 0, 0, length);
      buffer = grown;
    }
    buffer.set(bytes, length);
    length += bytes.length;
    if (isLast) done(null, buffer.subarray(0, length));
  });
}

function decodeBody(bytes: Uint8Array, contentType: string | undefined, route: CompiledRoute): unknown {
  let body: unknown;
  if (bytes.length === 0) {
    body = {};
  } else if (contentType?.startsWith('application/msgpack') || contentType?.startsWith('application/x-msgpack')) {
    try {
      body = unpack(bytes);
    } catch (err) {
      throw new HttpError('BAD_REQUEST', `malformed msgpack body: ${(err as Error).message}`);
    }
    checkDecodedBodyDepth(body);
  } else {
    checkJsonBodyDepth(bytes);
    // Any other content type is read as JSON: `curl -d` sends form encoding by default.
    try {
      body = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8'));
    } catch (err) {
      throw new HttpError('MALFORMED_JSON', `malformed JSON body: ${(err as Error).message}`);
    }
  }
  check(route.validateBody, body, 'body');
  return body;
}
