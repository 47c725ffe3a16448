// The HTTPS front: one uWebSockets.js SSLApp, one catch-all handler that
// routes through our own Router (uWS routing cannot tell 404 from 405), checks
// the token and role, validates, reads the body without blocking, calls the
// route's handler and writes the reply. Everything a route needs to know about
// itself comes from its declaration (route.ts).
//
// Here: the app, listen and close, and the path of a request from uWS to its handler. The
// exchange and its reply are in exchange.ts, body reading in body-reader.ts, the caller's
// credential and role in authorize.ts, the WebSocket endpoint in web-socket.ts.

import uWS from 'uWebSockets.js';
import type { Claims } from './caller.js';
import type { Logger } from '../log.js';
import { authorize, type BearerCheck } from './authorize.js';
import { BodyReader, decodeBody, type BodyLimits } from './body-reader.js';
import { check, compileRoute, type CompiledRoute } from './compile.js';
import { ServiceError } from '../../shared/errors.js';
import { Exchanges, type Exchange } from './exchange.js';
import type { HttpMethod, Reply, Request, RouteDef } from './route.js';
import { Router, type Match } from './router.js';
import { StartupError } from '../startup.js';
import { RequestBodyStream } from './request-body.js';
import { httpMetricSources, RouteStats, UNMATCHED_ROUTE } from './route-stats.js';
import type { MetricSource } from '../metric-source.js';
import { mountWebSocket, type WebSocketEndpoint } from './web-socket.js';

export type { SocketData, WebSocketEndpoint } from './web-socket.js';

export interface ServerOptions<G> extends BearerCheck {
  routes: readonly RouteDef<G>[];
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
  /** The service clock: what `now` in a time parameter (`start=now-1h`) means; Date.now when absent. */
  now?: () => number;
}

/** What one request may bring (settings under `server.`); the body limits are described in body-reader.ts. */
export interface RequestLimits extends BodyLimits {
  /** Path plus query string. */
  maxUrlBytes: number;
  /** All header names and values together. */
  maxHeaderBytes: number;
}

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT. */
const LISTEN_EXCLUSIVE_PORT = 1;

type RouteMatch<G> = Extract<Match<CompiledRoute<G>>, { kind: 'found' }>;

export class HttpServer<G> {
  private readonly app: uWS.TemplatedApp;
  private readonly router = new Router<CompiledRoute<G>>();
  private listenSocket: uWS.us_listen_socket | null = null;
  private readonly bodies: BodyReader;
  private readonly exchanges: Exchanges<G>;
  /** Closes the open WebSocket connections (none without an endpoint). */
  private readonly closeWebSockets: () => void = () => {};
  /** Requests per route (the compiled routes' own, the WebSocket upgrade's, and those no route took), for GET /metrics. */
  private readonly routeStats: RouteStats[] = [];

  constructor(private readonly opts: ServerOptions<G>) {
    this.bodies = new BodyReader(opts.limits);
    const unmatched = new RouteStats('(any)', UNMATCHED_ROUTE);
    this.exchanges = new Exchanges(opts.log, this.bodies, opts.streamStallTimeoutMs, unmatched);
    for (const def of opts.routes) {
      const compiled = compileRoute(def);
      this.router.add(def.method, def.path, compiled);
      this.routeStats.push(compiled.stats);
    }
    this.routeStats.push(unmatched);
    // No "uWebSockets: 20" header on every reply: the server's make and version are nobody's business.
    (uWS as unknown as { _cfg(key: string): void })._cfg('silent');
    this.app = uWS.SSLApp({ key_file_name: opts.tls.keyFile, cert_file_name: opts.tls.certFile });
    if (opts.webSocket) {
      const upgrades = new RouteStats('GET', opts.webSocket.path);
      this.routeStats.push(upgrades);
      this.closeWebSockets = mountWebSocket(this.app, opts.webSocket, opts.log, () => this.exchanges.draining, upgrades);
    }
    this.app.any('/*', (res, req) => this.onRequest(res, req));
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

  /** The HTTP families of GET /metrics: requests and durations by route pattern and status class. */
  metricSources(): MetricSource[] {
    return httpMetricSources(() => this.routeStats);
  }

  /**
   * Stops accepting connections, ends long-lived streams (their handlers see the request's
   * signal abort and return), then waits (at most `graceMs`) for the other in-flight requests.
   */
  async close(graceMs: number): Promise<void> {
    this.exchanges.drain();
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    // Live sockets go at once, with "going away".
    this.closeWebSockets();
    await this.exchanges.whenIdle(graceMs);
  }

  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    const ex = this.exchanges.open(res, req);
    try {
      if (this.exchanges.draining) throw new ServiceError('UNAVAILABLE', 'server is shutting down');
      const headers = readHeaders(req, ex, this.opts.limits);
      const match = this.routeOf(ex);
      const route = match.value;
      ex.stats = route.stats;
      ex.errorShape = route.def.errorShape ?? 'error';
      const query = parseQuery(ex.rawQuery);
      const user = authorize(route.def, headers, query, ex, this.opts);
      if (user instanceof Promise) this.readWhileAuthenticating(ex, route, match.params, query, headers, user);
      else this.readAndDispatch(ex, route, match.params, query, headers, user);
    } catch (err) {
      this.exchanges.fail(ex, err);
    }
  }

  /** The route of the request's method and path, or a 404, or a 405 naming the methods the path has. */
  private routeOf(ex: Exchange): RouteMatch<G> {
    // HEAD is the GET without its body. A method no route is declared with (OPTIONS, TRACE) is
    // found nowhere: the router answers with every method the path has, or not-found.
    const match = this.router.match(ex.head ? 'GET' : ex.method, ex.path);
    if (match.kind === 'not-found') throw new ServiceError('NOT_FOUND', `no route for ${ex.path}`);
    if (match.kind === 'method-not-allowed') {
      const allow = match.allow.includes('GET') ? ['GET', 'HEAD', ...match.allow.filter((method) => method !== 'GET')] : match.allow;
      throw new ServiceError('METHOD_NOT_ALLOWED', `method ${ex.method} not allowed on ${ex.path}`, { headers: { allow: allow.join(', ') } });
    }
    return match;
  }

  /**
   * A credential check that takes time (a password): the body is read meanwhile, since uWS hands
   * over body bytes only to a reader attached now.
   */
  private readWhileAuthenticating(ex: Exchange, route: CompiledRoute<G>, params: Record<string, string>, query: Record<string, unknown>, headers: Record<string, string>, user: Promise<Claims>): void {
    const needsBody = route.def.body !== undefined || route.def.rawBody !== undefined;
    const body: Promise<Uint8Array | RequestBodyStream> = route.def.streamBody
      ? Promise.resolve(this.bodies.streamed(ex, route.def, headers))
      : needsBody ? this.bodies.whole(ex, route.def, headers) : Promise.resolve(new Uint8Array(0));
    body.catch(() => {}); // reported below, after the credentials
    user.then(
      async (claims) => {
        ex.user = claims.sub;
        const bytes = await body;
        if (!ex.done) this.dispatch(ex, route, params, query, headers, claims, bytes);
      },
    ).catch((err) => {
      if (!ex.done) this.exchanges.fail(ex, err);
    });
  }

  /** The body, if the route has one, read (or its stream opened) after the path and query are checked; then the handler. */
  private readAndDispatch(ex: Exchange, route: CompiledRoute<G>, params: Record<string, string>, query: Record<string, unknown>, headers: Record<string, string>, user: Claims | null): void {
    ex.user = user?.sub ?? null;
    if (route.def.streamBody) {
      this.checkPathAndQuery(route, params, query);
      this.dispatch(ex, route, params, query, headers, user, this.bodies.streamed(ex, route.def, headers), true);
      return;
    }
    if (!route.def.body && !route.def.rawBody) {
      this.dispatch(ex, route, params, query, headers, user, null);
      return;
    }
    this.checkPathAndQuery(route, params, query);
    this.bodies.whole(ex, route.def, headers).then(
      (bytes) => {
        if (!ex.done) this.dispatch(ex, route, params, query, headers, user, bytes, true);
      },
      (err) => {
        if (!ex.done) this.exchanges.fail(ex, err);
      },
    );
  }

  /** Validates the path and query (unless `validated`) and runs the handler; `bytes` is null for a route without a body. */
  private dispatch(ex: Exchange, route: CompiledRoute<G>, params: Record<string, string>, query: Record<string, unknown>, headers: Record<string, string>, user: Claims | null, bytes: Uint8Array | RequestBodyStream | null, validated = false): void {
    try {
      if (!validated) {
        this.checkPathAndQuery(route, params, query);
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
        route: route.def.path,
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
      this.exchanges.fail(ex, err);
    }
  }

  /** Validates (and coerces in place) the path parameters and the query, whose times are read against the service clock. */
  private checkPathAndQuery(route: CompiledRoute<G>, params: Record<string, string>, query: Record<string, unknown>): void {
    check(route.validateParams, params, 'path');
    check(route.validateQuery, query, 'query', { now: this.opts.now ? this.opts.now() : Date.now() });
  }

  private run(ex: Exchange, route: CompiledRoute<G>, request: Request<G>): void {
    let result: Reply | Promise<Reply>;
    ex.handlerStarted = true;
    try {
      const refused = this.opts.admit?.(route.def);
      if (refused) throw refused;
      result = route.def.handler(request);
    } catch (err) {
      this.bodies.giveBack(ex);
      return this.exchanges.fail(ex, err);
    }
    if (result instanceof Promise) {
      result.then(
        (reply) => {
          this.bodies.giveBack(ex);
          this.answer(ex, route, reply);
        },
        (err) => {
          this.bodies.giveBack(ex);
          this.exchanges.fail(ex, err);
        },
      );
    } else {
      this.bodies.giveBack(ex);
      this.answer(ex, route, result);
    }
  }

  /** Sends a handler's reply; a reply that cannot be sent (a serializer refusing a value) is a 500, never an unhandled rejection. */
  private answer(ex: Exchange, route: CompiledRoute<G>, reply: Reply): void {
    try {
      this.exchanges.reply(ex, route, reply);
    } catch (err) {
      this.exchanges.fail(ex, err);
    }
  }
}

/** The request's headers, once its URL and its headers are found within their limits. */
function readHeaders(req: uWS.HttpRequest, ex: Exchange, limits: RequestLimits): Record<string, string> {
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
  return headers;
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
