// The one WebSocket endpoint (live data): the upgrade after the endpoint's own credential check
// (a refusal is a 401, or a 503 while the server shuts down), the request log line of the
// upgrade (with a request id, returned as `x-request-id` on the 101 or the refusal, like every
// other request's), and the close of every open socket at shutdown (1001, going away).

import { performance } from 'node:perf_hooks';
import type uWS from 'uWebSockets.js';
import type { Logger } from '../log.js';
import { ServiceError } from '../../shared/errors.js';
import type { Claims } from './caller.js';
import { readableAddress } from './address.js';
import { nextRequestId } from './exchange.js';
import type { RouteStats } from './route-stats.js';

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
  /** The socket took some of what was buffered for it: more may be sent. */
  drain?(socket: uWS.WebSocket<SocketData>): void;
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

/**
 * Mounts `endpoint` on `app`; upgrades are refused while `isDraining()` says so, and each is
 * counted in `upgrades` like any request. Returns what shutdown calls to close the open sockets
 * at once, with "going away".
 */
export function mountWebSocket(app: uWS.TemplatedApp, endpoint: WebSocketEndpoint, log: Logger, isDraining: () => boolean, upgrades: RouteStats): () => void {
  const sockets = new Set<uWS.WebSocket<SocketData>>();
  app.ws<SocketData>(endpoint.path, {
    maxPayloadLength: endpoint.maxPayloadBytes,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    // The endpoint watches the buffered amount itself (it closes a slow client with 1013).
    maxBackpressure: 1024 * 1024 * 1024,
    closeOnBackpressureLimit: 0,
    upgrade: (res, req, context) => {
      const started = performance.now();
      const id = nextRequestId();
      const headers: Record<string, string> = {};
      req.forEach((key, value) => (headers[key] = value));
      const query = new URLSearchParams(req.getQuery() ?? '');
      const remote = readableAddress(Buffer.from(res.getRemoteAddressAsText()).toString());
      const path = req.getUrl();
      const finish = (status: number, user: string | null) => {
        upgrades.record(status, (performance.now() - started) / 1000);
        log.info({ method: 'GET', path: `${path}${query.has('access_token') ? '?access_token=[redacted]' : ''}`, status, ms: Math.round((performance.now() - started) * 1000) / 1000, remote, user, requestId: id }, 'request');
      };
      if (isDraining()) {
        res.writeStatus('503 Service Unavailable').writeHeader('content-type', 'application/json').writeHeader('x-request-id', id).end(JSON.stringify({ error: 'server is shutting down' }));
        return finish(503, null);
      }
      let claims: Claims;
      try {
        claims = endpoint.authenticate(headers, query);
      } catch (err) {
        const e = err instanceof ServiceError ? err : new ServiceError('UNAUTHORIZED', 'missing or invalid token');
        res.writeStatus(`${e.status} ${e.status === 401 ? 'Unauthorized' : 'Error'}`).writeHeader('content-type', 'application/json').writeHeader('x-request-id', id).end(JSON.stringify({ error: e.message }));
        return finish(e.status, null);
      }
      const data: SocketData = { claims, authorization: headers.authorization ?? `Bearer ${query.get('access_token') ?? ''}`, remote, closed: false };
      // uWS writes one status line only: the 101 written here stands, and `upgrade` adds its own headers after ours.
      res.writeStatus('101 Switching Protocols').writeHeader('x-request-id', id);
      res.upgrade(data, headers['sec-websocket-key'] ?? '', headers['sec-websocket-protocol'] ?? '', headers['sec-websocket-extensions'] ?? '', context);
      finish(101, claims.sub);
    },
    open: (socket) => {
      sockets.add(socket);
      endpoint.open(socket);
    },
    message: (socket, message, isBinary) => endpoint.message(socket, message, isBinary),
    drain: (socket) => {
      if (!socket.getUserData().closed) endpoint.drain?.(socket);
    },
    close: (socket) => {
      socket.getUserData().closed = true;
      sockets.delete(socket);
      endpoint.close(socket);
    },
  });
  return () => {
    for (const socket of [...sockets]) {
      if (!socket.getUserData().closed) socket.end(1001, 'server is shutting down');
    }
  };
}
