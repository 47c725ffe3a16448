// The HTTPS front: one uWebSockets.js SSLApp, one catch-all handler that
// routes through our own Router (uWS routing cannot tell 404 from 405), checks
// the token and role, validates, reads the body without blocking, calls the
// route's handler and writes the reply. Everything a route needs to know about
// itself comes from its declaration (route.ts).

import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import uWS from 'uWebSockets.js';
import { unpack } from 'msgpackr';
import type { Claims } from './caller.js';
import { redactQuery, type Logger } from '../log.js';
import { checkDecodedBodyDepth, checkJsonBodyDepth } from './body-guard.js';
import { check, compileRoute, type CompiledRoute } from './compile.js';
import { ServiceError } from '../../shared/errors.js';
import { toErrorReply, type ErrorShape } from './errors.js';
import { mutates, type HttpMethod, type Reply, type Request, type RouteDef } from './route.js';
import { readableAddress } from './address.js';
import { Router } from './router.js';
import { StartupError } from '../startup.js';
import { sendHeadOnly, sendWhole, StallWatch, StreamedBody, type ResponseHead } from './response-body.js';
import { RequestBodyStream } from './request-body.js';

export interface ServerOptions<G> {
  routes: readonly RouteDef<G>[];
  /** The claims of an `Authorization` header (a bearer token, or a bare one), or throws a 401. */
  verifyToken(authorization: string | undefined): Claims;
  /** What a caller may reach, made once per request that asks (Request.grant). */
  grantOf(user: Claims): G;
  log: Logger;
  limits: RequestLimits;
  tls: { keyFile: string; certFile: string };
  /** A streamed response whose client takes nothing for this long is closed. */
  streamStallTimeoutMs: number;
  /** The refusal of a request before its handler runs (a restore under way, a node that is not the leader), or null. */
  admit?: (def: RouteDef<G>) => ServiceError | null;
  /** One WebSocket endpoint (live data), upgraded after its own credential check. */
  webSocket?: WebSocketEndpoint;
}

/** What a WebSocket endpoint provides; the server does the upgrade, the refusal (401), and the close at shutdown (1001). */
export interface WebSocketEndpoint {
  path: string;
  /** Claims of the caller (token in `authorization`, or the `access_token` query parameter), or throws a 401. */
  authenticate(headers: Readonly<Record<string, string>>, query: URLSearchParams): Claims;
  /** Largest message a client may send. */
  maxPayloadBytes: number;
  open(socket: uWS.WebSocket<SocketData>): void;
  message(socket: uWS.WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean): void;
  close(socket: uWS.WebSocket<SocketData>): void;
}

export interface SocketData {
  claims: Claims;
  /** The credential as given, to check again later (expiry, revocation). */
  authorization: string;
  remote: string;
  /** Set once the socket closed: uWS must not be called on it any more. */
  closed: boolean;
  /** The endpoint's own per-socket state. */
  state?: unknown;
}

/** What one request may bring (settings under `server.`). */
export interface RequestLimits {
  /** Bodies of routes that read raw bytes and set no limit of their own. */
  maxBodyBytes: number;
  /** JSON bodies of routes that need a token. */
  maxJsonBodyBytes: number;
  /** Bodies of public routes (login, register): nobody has been identified yet. */
  maxPublicBodyBytes: number;
  /** All request bodies being read at once; more is a 503 until some are done. */
  maxBodyBytesInFlight: number;
  /** Path plus query string. */
  maxUrlBytes: number;
  /** All header names and values together. */
  maxHeaderBytes: number;
}

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT. */
const LISTEN_EXCLUSIVE_PORT = 1;

/** Bytes a streamed reply may queue for a slow client before its producer is asked to wait. */
const STREAM_HIGH_WATER_BYTES = 1 << 20;

/** Bytes of a streamed request body that may wait for its handler before reading the socket pauses. */
const BODY_STREAM_HIGH_WATER_BYTES = 1 << 20;
const BODY_STREAM_LOW_WATER_BYTES = 256 << 10;

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
  /** A HEAD request: answered like the GET, without its body. */
  head: boolean;
  /** Returned as `x-request-id` and written in the request's log line. */
  id: string;
  /** The client's address. */
  remote: string;
  /** The email of a verified token, for the log line. */
  user: string | null;
  /** A pooled body buffer lent to the handler (see BodyPool); given back when the handler settles, or at the end if it never ran. */
  lent: Buffer | null;
  handlerStarted: boolean;
  /** The body of a `streamBody` route, being read while the handler runs. */
  bodyStream: RequestBodyStream | null;
}

/**
 * Body buffers of the routes whose handlers are done with their bytes once they settle (writes
 * and ingest copy them into a storage ring): reused instead of allocated per request, since a
 * fresh half-megabyte buffer per ingest request kept the main thread's garbage collector busy a
 * third of its time (bench:line-protocol profile). Bounded: what is beyond `maxBytes` is dropped.
 */
class BodyPool {
  private readonly free = new Map<number, Buffer[]>();
  private freeBytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** A buffer of at least `size` bytes (a power of two, from 64 KiB). */
  take(size: number): Buffer {
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(size, BodyPool.MIN_BYTES)));
    const buffer = this.free.get(capacity)?.pop();
    if (buffer) {
      this.freeBytes -= capacity;
      return buffer;
    }
    return Buffer.allocUnsafeSlow(capacity);
  }

  give(buffer: Buffer): void {
    if (this.freeBytes + buffer.length > this.maxBytes) return;
    let list = this.free.get(buffer.length);
    if (!list) this.free.set(buffer.length, (list = []));
    list.push(buffer);
    this.freeBytes += buffer.length;
  }

  static readonly MIN_BYTES = 64 * 1024;
}

/** Request ids: a per-process prefix and a counter, unique across restarts without a random draw per request. */
const REQUEST_ID_PREFIX = randomBytes(4).toString('hex');
let requestCounter = 0;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 206: 'Partial Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  507: 'Insufficient Storage',
};
const statusLine = (status: number) => `${status} ${STATUS_TEXT[status] ?? 'Status'}`;

const JSON_TYPE = 'application/json; charset=utf-8';
const METHODS = new Set<string>(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

export class HttpServer<G> {
  private readonly app: uWS.TemplatedApp;
  private readonly router = new Router<CompiledRoute<G>>();
  private listenSocket: uWS.us_listen_socket | null = null;
  private inFlight = 0;
  private draining = false;
  private idleWaiters: Array<() => void> = [];
  private readonly stalls: StallWatch;
  /** Exchanges streaming a long-lived reply (SSE), which shutdown ends instead of waiting for. */
  private readonly longLived = new Set<Exchange>();
  /** Bytes of request bodies being read right now (bounded by limits.maxBodyBytesInFlight). */
  private bodyBytesInFlight = 0;
  private readonly bodies = new BodyPool(64 << 20);

  constructor(private readonly opts: ServerOptions<G>) {
    this.stalls = new StallWatch(opts.streamStallTimeoutMs, (stream) =>
      opts.log.warn({ queuedBytes: stream.queuedBytes, stallTimeoutMs: opts.streamStallTimeoutMs }, 'closing a streamed response: the client stopped reading'),
    );
    for (const def of opts.routes) this.router.add(def.method, def.path, compileRoute(def));
    // No "uWebSockets: 20" header on every reply: the server's make and version are nobody's business.
    (uWS as unknown as { _cfg(key: string): void })._cfg('silent');
    this.app = uWS.SSLApp({ key_file_name: opts.tls.keyFile, cert_file_name: opts.tls.certFile });
    if (opts.webSocket) this.mountWebSocket(opts.webSocket);
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  private readonly sockets = new Set<uWS.WebSocket<SocketData>>();

  private mountWebSocket(endpoint: WebSocketEndpoint): void {
    const log = this.opts.log;
    this.app.ws<SocketData>(endpoint.path, {
      maxPayloadLength: endpoint.maxPayloadBytes,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      // The endpoint watches the buffered amount itself (it closes a slow client with 1013).
      maxBackpressure: 1024 * 1024 * 1024,
      closeOnBackpressureLimit: 0,
      upgrade: (res, req, context) => {
        const started = performance.now();
        const headers: Record<string, string> = {};
        req.forEach((key, value) => (headers[key] = value));
        const query = new URLSearchParams(req.getQuery() ?? '');
        const remote = readableAddress(Buffer.from(res.getRemoteAddressAsText()).toString());
        const path = req.getUrl();
        const finish = (status: number, user: string | null) =>
          log.info({ method: 'GET', path: `${path}${query.has('access_token') ? '?access_token=[redacted]' : ''}`, status, ms: Math.round((performance.now() - started) * 1000) / 1000, remote, user }, 'request');
        if (this.draining) {
          res.writeStatus('503 Service Unavailable').writeHeader('content-type', 'application/json').end(JSON.stringify({ error: 'server is shutting down' }));
          return finish(503, null);
        }
        let claims: Claims;
        try {
          claims = endpoint.authenticate(headers, query);
        } catch (err) {
          const e = err instanceof ServiceError ? err : new ServiceError('UNAUTHORIZED', 'missing or invalid token');
          res.writeStatus(`${e.status} ${e.status === 401 ? 'Unauthorized' : 'Error'}`).writeHeader('content-type', 'application/json').end(JSON.stringify({ error: e.message }));
          return finish(e.status, null);
        }
        const data: SocketData = { claims, authorization: headers.authorization ?? `Bearer ${query.get('access_token') ?? ''}`, remote, closed: false };
        res.upgrade(data, headers['sec-websocket-key'] ?? '', headers['sec-websocket-protocol'] ?? '', headers['sec-websocket-extensions'] ?? '', context);
        finish(101, claims.sub);
      },
      open: (socket) => {
        this.sockets.add(socket);
        endpoint.open(socket);
      },
      message: (socket, message, isBinary) => endpoint.message(socket, message, isBinary),
      close: (socket) => {
        socket.getUserData().closed = true;
        this.sockets.delete(socket);
        endpoint.close(socket);
      },
    });
  }

  /**
   * Resolves with the bound port (useful when `port` is 0). The port is taken exclusively: uWS
   * would otherwise set SO_REUSEPORT on Linux, and a second service started on the same port
   * would silently share its connections.
   */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onListen = (socket: uWS.us_listen_socket | false) => {
        if (!socket) return reject(new StartupError(`cannot listen on ${host || '*'}:${port}: the port is in use or the address is not this machine's (server.host, server.port / HISTORIAN_PORT)`));
        this.listenSocket = socket;
        resolve(uWS.us_socket_local_port(socket as unknown as uWS.us_socket));
      };
      // The typings of this uWS build lack the (host, port, options, cb) form the binding has.
      const listen = this.app.listen as unknown as (...args: unknown[]) => void;
      if (host) listen.call(this.app, host, port, LISTEN_EXCLUSIVE_PORT, onListen);
      else listen.call(this.app, port, LISTEN_EXCLUSIVE_PORT, onListen);
    });
  }

  /**
   * Stops accepting connections, ends long-lived streams (their handlers see the request's
   * signal abort and return), then waits (at most `graceMs`) for the other in-flight requests.
   */
  async close(graceMs: number): Promise<void> {
    this.draining = true;
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    for (const ex of this.longLived) ex.controller.abort();
    // Live sockets go at once, with "going away".
    for (const socket of [...this.sockets]) {
      if (!socket.getUserData().closed) socket.end(1001, 'server is shutting down');
    }
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
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const ex: Exchange = {
      res,
      method,
      path: req.getUrl(),
      rawQuery: req.getQuery() ?? '',
      started: performance.now(),
      done: false,
      controller: new AbortController(),
      errorShape: 'error',
      stream: null,
      head: method === 'HEAD',
      id: `${REQUEST_ID_PREFIX}-${(++requestCounter).toString(36)}`,
      remote: readableAddress(Buffer.from(res.getRemoteAddressAsText()).toString()),
      user: null,
      lent: null,
      handlerStarted: false,
      bodyStream: null,
    };
    this.inFlight++;
    res.onAborted(() => {
      ex.stream?.abort();
      ex.bodyStream?.abort();
      if (ex.done) return;
      ex.done = true;
      ex.controller.abort();
      this.finish(ex, 499);
    });

    try {
      if (this.draining) throw new ServiceError('UNAVAILABLE', 'server is shutting down');
      const limits = this.opts.limits;
      if (ex.path.length + ex.rawQuery.length > limits.maxUrlBytes) {
        throw new ServiceError('URI_TOO_LONG', `the URL is longer than ${limits.maxUrlBytes} bytes (server.maxUrlBytes); send long tag lists in a POST body`);
      }
      const headers: Record<string, string> = {};
      let headerBytes = 0;
      req.forEach((key, value) => {
        headers[key] = value;
        headerBytes += key.length + value.length;
      });
      if (headerBytes > limits.maxHeaderBytes) {
        throw new ServiceError('HEADERS_TOO_LARGE', `the request headers are larger than ${limits.maxHeaderBytes} bytes (server.maxHeaderBytes)`);
      }
      // HEAD is the GET without its body.
      const lookup = ex.head ? 'GET' : ex.method;
      const match = METHODS.has(lookup) ? this.router.match(lookup, ex.path) : this.router.match('GET', ex.path);
      if (match.kind === 'not-found') throw new ServiceError('NOT_FOUND', `no route for ${ex.path}`);
      if (match.kind === 'method-not-allowed' || !METHODS.has(lookup)) {
        const allowed = match.kind === 'method-not-allowed' ? match.allow : ['GET' as const];
        const allow = allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed;
        throw new ServiceError('METHOD_NOT_ALLOWED', `method ${ex.method} not allowed on ${ex.path}`, { headers: { allow: allow.join(', ') } });
      }
      const route = match.value;
      ex.errorShape = route.def.errorShape ?? 'error';
      const query = parseQuery(ex.rawQuery);
      const user = this.authorize(route.def, headers, query, ex);
      if (user instanceof Promise) {
        // A credential check that takes time (a password): the body is read meanwhile, since
        // uWS hands over body bytes only to a reader attached now.
        const needsBody = route.def.body !== undefined || route.def.rawBody !== undefined;
        const body: Promise<Uint8Array | RequestBodyStream> = route.def.streamBody
          ? Promise.resolve(this.bodyStreamOf(ex, route.def, headers))
          : needsBody ? this.bodyOf(ex, route.def, headers) : Promise.resolve(new Uint8Array(0));
        body.catch(() => {}); // reported below, after the credentials
        user.then(
          async (claims) => {
            ex.user = claims.sub;
            const bytes = await body;
            if (!ex.done) this.dispatch(ex, route, match.params, query, headers, claims, bytes);
          },
        ).catch((err) => {
          if (!ex.done) this.fail(ex, err);
        });
        return;
      }
      ex.user = user?.sub ?? null;
      if (route.def.streamBody) {
        check(route.validateParams, match.params, 'path');
        check(route.validateQuery, query, 'query');
        this.dispatch(ex, route, match.params, query, headers, user, this.bodyStreamOf(ex, route.def, headers), true);
        return;
      }
      if (!route.def.body && !route.def.rawBody) {
        this.dispatch(ex, route, match.params, query, headers, user, null);
        return;
      }
      check(route.validateParams, match.params, 'path');
      check(route.validateQuery, query, 'query');
      this.bodyOf(ex, route.def, headers).then(
        (bytes) => {
          if (!ex.done) this.dispatch(ex, route, match.params, query, headers, user, bytes, true);
        },
        (err) => {
          if (!ex.done) this.fail(ex, err);
        },
      );
    } catch (err) {
      this.fail(ex, err);
    }
  }

  private bodyOf(ex: Exchange, def: RouteDef<G>, headers: Record<string, string>): Promise<Uint8Array> {
    const { limit, setting } = this.bodyLimit(def);
    const reuse = def.rawBody?.bufferReused === true;
    return new Promise((resolve, reject) => this.readBody(ex, headers['content-length'], limit, setting, reuse, (err, bytes) => (err ? reject(err) : resolve(bytes))));
  }

  /**
   * The body of a `streamBody` route as it arrives: a declared length over the route's limit is
   * refused before any byte is read; reading starts now (uWS hands bytes only to a reader attached
   * during the request callback) and pauses while the handler is behind.
   */
  private bodyStreamOf(ex: Exchange, def: RouteDef<G>, headers: Record<string, string>): RequestBodyStream {
    const { limit, setting } = this.bodyLimit(def);
    const length = headers['content-length'];
    const declared = length === undefined ? null : Number(length);
    if (declared !== null && declared > limit) throw new ServiceError('PAYLOAD_TOO_LARGE', `request body is larger than ${limit} bytes (${setting})`);
    ex.bodyStream = new RequestBodyStream(ex.res, {
      declaredBytes: declared,
      limit,
      setting,
      highWaterBytes: BODY_STREAM_HIGH_WATER_BYTES,
      lowWaterBytes: BODY_STREAM_LOW_WATER_BYTES,
    });
    return ex.bodyStream;
  }

  /** Validates the path and query (unless `validated`) and runs the handler; `bytes` is null for a route without a body. */
  private dispatch(ex: Exchange, route: CompiledRoute<G>, params: Record<string, string>, query: Record<string, unknown>, headers: Record<string, string>, user: Claims | null, bytes: Uint8Array | RequestBodyStream | null, validated = false): void {
    try {
      if (!validated) {
        check(route.validateParams, params, 'path');
        check(route.validateQuery, query, 'query');
      }
      let body: unknown;
      let rawBody: Uint8Array | null = null;
      let bodyStream: RequestBodyStream | null = null;
      if (bytes instanceof RequestBodyStream) bodyStream = bytes;
      else if (bytes !== null && route.def.rawBody) rawBody = bytes;
      else if (bytes !== null) body = decodeBody(bytes, headers['content-type'], route);
      const grantOf = this.opts.grantOf;
      let grant: G | undefined;
      // One literal, never spread: spreading would run the grant's getter.
      const request: Request<G> = {
        method: (ex.head ? 'GET' : ex.method) as HttpMethod,
        path: ex.path,
        rawQuery: ex.rawQuery,
        params,
        query,
        body,
        rawBody,
        bodyStream,
        headers,
        user,
        get grant(): G {
          if (user === null) throw new ServiceError('INTERNAL', 'a public route asked for the caller\'s grant');
          return (grant ??= grantOf(user));
        },
        remoteAddress: ex.remote,
        signal: ex.controller.signal,
      };
      this.run(ex, route, request);
    } catch (err) {
      this.fail(ex, err);
    }
  }

  /** The body limit of a route: its own, else by kind (public JSON, JSON, raw bytes), and the setting to name in a 413. */
  private bodyLimit(def: RouteDef<G>): { limit: number; setting: string } {
    const limits = this.opts.limits;
    if (def.maxBodyBytes !== undefined) return { limit: def.maxBodyBytes, setting: def.maxBodySetting ?? 'the route' };
    if (def.auth === 'public') return { limit: limits.maxPublicBodyBytes, setting: 'server.maxPublicBodyBytes' };
    if (def.rawBody) return { limit: limits.maxBodyBytes, setting: 'server.maxBodyBytes' };
    return { limit: limits.maxJsonBodyBytes, setting: 'server.maxJsonBodyBytes' };
  }

  /**
   * Collects the body chunk by chunk as uWS delivers them (the event loop keeps serving other
   * sockets meanwhile). A declared length over the limit is refused before any byte is read, an
   * undeclared one as soon as it passes it. Every byte being read counts against
   * limits.maxBodyBytesInFlight until the body is complete or the client is gone, so many large
   * uploads at once are a 503, not the process's memory.
   */
  private readBody(ex: Exchange, contentLength: string | undefined, limit: number, setting: string, reuse: boolean, done: (err: ServiceError | null, body: Uint8Array) => void): void {
    const declared = contentLength === undefined ? -1 : Number(contentLength);
    const tooLarge = () => new ServiceError('PAYLOAD_TOO_LARGE', `request body is larger than ${limit} bytes (${setting})`);
    const busy = () =>
      new ServiceError('UNAVAILABLE', `the server is reading ${this.opts.limits.maxBodyBytesInFlight} bytes of request bodies already (server.maxBodyBytesInFlight); retry shortly`, { headers: { 'retry-after': '1' } });
    if (declared > limit) return done(tooLarge(), new Uint8Array(0));
    let reserved = 0;
    const reserve = (bytes: number): boolean => {
      if (this.bodyBytesInFlight + bytes > this.opts.limits.maxBodyBytesInFlight) return false;
      this.bodyBytesInFlight += bytes;
      reserved += bytes;
      return true;
    };
    const release = () => {
      this.bodyBytesInFlight -= reserved;
      reserved = 0;
    };
    ex.controller.signal.addEventListener('abort', release, { once: true });
    const finish = (err: ServiceError | null, body: Uint8Array) => {
      release();
      ex.controller.signal.removeEventListener('abort', release);
      done(err, body);
    };
    if (declared > 0 && !reserve(declared)) return finish(busy(), new Uint8Array(0));
    let buffer: Buffer;
    if (reuse && declared >= BodyPool.MIN_BYTES) buffer = ex.lent = this.bodies.take(declared);
    else buffer = Buffer.allocUnsafe(declared > 0 ? declared : 0);
    let length = 0;
    let failed = false;
    ex.res.onData((chunk, isLast) => {
      if (failed || ex.done) return;
      const bytes = new Uint8Array(chunk); // valid only during this callback: copy out
      if (length + bytes.length > limit) {
        failed = true;
        return finish(tooLarge(), new Uint8Array(0));
      }
      if (length + bytes.length > buffer.length) {
        const size = Math.min(limit, Math.max(buffer.length * 2, length + bytes.length, 16384));
        if (!reserve(size - Math.max(buffer.length, reserved))) {
          failed = true;
          return finish(busy(), new Uint8Array(0));
        }
        const grown = Buffer.allocUnsafe(size);
        buffer.copy(grown, 0, 0, length);
        buffer = grown;
      }
      buffer.set(bytes, length);
      length += bytes.length;
      if (isLast) finish(null, buffer.subarray(0, length));
    });
  }

  /** The caller's claims (null on public routes); a promise when the route's own credential check takes time. */
  private authorize(def: RouteDef<G>, headers: Record<string, string>, query: Record<string, unknown>, ex: Exchange): Claims | null | Promise<Claims> {
    if (def.auth === 'public') return null;
    const permit = (user: Claims): Claims => {
      if (def.auth === 'admin' && user.role !== 'admin') throw new ServiceError('FORBIDDEN', 'admin role required');
      if (user.role === 'read-only' && mutates(def)) throw new ServiceError('FORBIDDEN', 'read-only account cannot change data');
      return user;
    };
    if (def.authenticate) {
      const user = def.authenticate({ headers, query, remoteAddress: ex.remote, path: ex.path });
      return user instanceof Promise ? user.then(permit) : permit(user);
    }
    const fromQuery = def.tokenInQuery && headers.authorization === undefined && typeof query.access_token === 'string' ? query.access_token : undefined;
    return permit(this.opts.verifyToken(headers.authorization ?? fromQuery));
  }

  private run(ex: Exchange, route: CompiledRoute<G>, request: Request<G>): void {
    let result: Reply | Promise<Reply>;
    ex.handlerStarted = true;
    try {
      const refused = this.opts.admit?.(route.def);
      if (refused) throw refused;
      result = route.def.handler(request);
    } catch (err) {
      this.giveBack(ex);
      return this.fail(ex, err);
    }
    if (result instanceof Promise) {
      result.then(
        (reply) => {
          this.giveBack(ex);
          this.reply(ex, route, reply);
        },
        (err) => {
          this.giveBack(ex);
          this.fail(ex, err);
        },
      );
    } else {
      this.giveBack(ex);
      this.reply(ex, route, result);
    }
  }

  /** Returns a lent body buffer to the pool (the handler has settled, or never ran). */
  private giveBack(ex: Exchange): void {
    if (ex.lent === null) return;
    this.bodies.give(ex.lent);
    ex.lent = null;
  }

  private reply(ex: Exchange, route: CompiledRoute<G>, reply: Reply): void {
    if (ex.done) return;
    if (reply.stream && ex.head) {
      // The length of a streamed body is known only once it is written: HEAD says none.
      ex.done = true;
      sendHeadOnly(ex.res, head(ex, reply.status ?? 200, reply.contentType ?? 'application/octet-stream', reply.headers), reply.streamLength ?? null, this.draining);
      this.finish(ex, reply.status ?? 200);
      return;
    }
    if (reply.stream) {
      this.streamReply(ex, route, reply);
      return;
    }
    const status = reply.status ?? 200;
    if (status === 204 || status === 304) {
      // No body, and no content-length or content-type for one: clients read nothing after the head.
      ex.done = true;
      const { statusLine: line, headers } = head(ex, status, '', reply.headers);
      sendHeadOnly(ex.res, { statusLine: line, headers: headers.filter(([name]) => name !== 'content-type') }, null, this.unreadBody(ex) || this.draining);
      this.finish(ex, status);
      return;
    }
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

  /**
   * Before an answer goes out: a streamed request body still arriving is let go of (reading
   * resumes so uWS can finish the exchange), and true says the connection must close, since the
   * rest of that body would otherwise be read as the next request.
   */
  private unreadBody(ex: Exchange): boolean {
    const body = ex.bodyStream;
    if (!body) return false;
    const unread = !body.complete;
    body.detach();
    return unread;
  }

  private streamReply(ex: Exchange, route: CompiledRoute<G>, reply: Reply): void {
    const status = reply.status ?? 200;
    this.unreadBody(ex); // a streamed reply to an upload not read to its end is not a case any route has
    if (route.def.longLived) {
      this.longLived.add(ex);
      if (this.draining) ex.controller.abort();
    }
    const stream = new StreamedBody(ex.res, {
      head: head(ex, status, reply.contentType ?? 'application/octet-stream', reply.headers),
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
    if (!(err instanceof ServiceError)) {
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
    const close = this.unreadBody(ex) || closeConnection || this.draining;
    if (ex.head) sendHeadOnly(ex.res, head(ex, status, contentType, headers), typeof payload === 'string' ? Buffer.byteLength(payload) : payload.byteLength, close);
    else sendWhole(ex.res, head(ex, status, contentType, headers), payload, close);
    this.finish(ex, status);
  }

  private finish(ex: Exchange, status: number): void {
    if (!ex.handlerStarted) this.giveBack(ex); // a running handler gives it back when it settles
    const ms = Math.round((performance.now() - ex.started) * 1000) / 1000;
    const path = ex.rawQuery ? `${ex.path}?${redactQuery(ex.rawQuery)}` : ex.path;
    this.opts.log.info({ method: ex.method, path, status, ms, remote: ex.remote, user: ex.user, requestId: ex.id }, 'request');
    this.longLived.delete(ex);
    if (--this.inFlight === 0 && this.idleWaiters.length > 0) {
      for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }
}

function head(ex: Exchange, status: number, contentType: string, headers: Record<string, string> | undefined): ResponseHead {
  const list: Array<[string, string]> = [['content-type', contentType], ['x-request-id', ex.id]];
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

function decodeBody<G>(bytes: Uint8Array, contentType: string | undefined, route: CompiledRoute<G>): unknown {
  let body: unknown;
  if (bytes.length === 0) {
    body = {};
  } else if (contentType?.startsWith('application/msgpack') || contentType?.startsWith('application/x-msgpack')) {
    try {
      body = unpack(bytes);
    } catch (err) {
      throw new ServiceError('BAD_REQUEST', `malformed msgpack body: ${(err as Error).message}`);
    }
    checkDecodedBodyDepth(body);
  } else {
    checkJsonBodyDepth(bytes);
    // Any other content type is read as JSON: `curl -d` sends form encoding by default.
    try {
      body = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8'));
    } catch (err) {
      throw new ServiceError('MALFORMED_JSON', `malformed JSON body: ${(err as Error).message}`);
    }
  }
  check(route.validateBody, body, 'body');
  return body;
}
