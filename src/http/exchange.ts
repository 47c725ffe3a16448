// One request from its arrival to its log line: the Exchange record the server fills in as it
// goes, the writing of its reply (whole, streamed, head only, or an error), and the count of
// exchanges in flight that shutdown waits for. Every reply goes through response-body.ts, which
// writes only what uWS accepts (see the fault of this uWS build described there).

import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import type uWS from 'uWebSockets.js';
import { redactQuery, type Logger } from '../log.js';
import { ServiceError } from '../../shared/errors.js';
import type { CompiledRoute } from './compile.js';
import { toErrorReply, type ErrorShape } from './errors.js';
import type { Reply } from './route.js';
import { readableAddress } from './address.js';
import type { RouteStats } from './route-stats.js';
import type { RequestBodyStream } from './request-body.js';
import { sendHeadOnly, sendWhole, StallWatch, StreamedBody, type ResponseHead } from './response-body.js';

/** Per-request state shared by the reply path and the abort handler. */
export interface Exchange {
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
  /** Where the request is counted when it ends: its route's, once it is routed. */
  stats: RouteStats;
}

/** Request ids: a per-process prefix and a counter, unique across restarts without a random draw per request. */
const REQUEST_ID_PREFIX = randomBytes(4).toString('hex');
let requestCounter = 0;

/** The id of a new request, returned as `x-request-id` and written in its log line. */
export function nextRequestId(): string {
  return `${REQUEST_ID_PREFIX}-${(++requestCounter).toString(36)}`;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 206: 'Partial Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  507: 'Insufficient Storage',
};
const statusLine = (status: number) => `${status} ${STATUS_TEXT[status] ?? 'Status'}`;

export const JSON_TYPE = 'application/json; charset=utf-8';

/** Bytes a streamed reply may queue for a slow client before its producer is asked to wait. */
const STREAM_HIGH_WATER_BYTES = 1 << 20;

/** The exchanges in flight: opened by the server, ended here by their reply or the client's abort. */
export class Exchanges<G> {
  /** Set by `drain`: new requests are refused, replies close their connection. */
  draining = false;
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly stalls: StallWatch;
  /** Exchanges streaming a long-lived reply (SSE), which shutdown ends instead of waiting for. */
  private readonly longLived = new Set<Exchange>();

  constructor(
    private readonly log: Logger,
    /** Where a lent body buffer goes back (the body reader's pool). */
    private readonly bodies: { giveBack(ex: Exchange): void },
    streamStallTimeoutMs: number,
    /** Counts the requests no route takes (404, 405, refused before routing). */
    private readonly unmatched: RouteStats,
  ) {
    this.stalls = new StallWatch(streamStallTimeoutMs, (stream) =>
      log.warn({ queuedBytes: stream.queuedBytes, stallTimeoutMs: streamStallTimeoutMs }, 'closing a streamed response: the client stopped reading'),
    );
  }

  /** The exchange of a request uWS just handed over, counted in flight until `finish`. */
  open(res: uWS.HttpResponse, req: uWS.HttpRequest): Exchange {
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
      id: nextRequestId(),
      remote: readableAddress(Buffer.from(res.getRemoteAddressAsText()).toString()),
      user: null,
      lent: null,
      handlerStarted: false,
      bodyStream: null,
      stats: this.unmatched,
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
    return ex;
  }

  /** Stops taking requests and ends the long-lived streams (their handlers see the request's signal abort and return). */
  drain(): void {
    this.draining = true;
    for (const ex of this.longLived) ex.controller.abort();
  }

  /** Resolves once no exchange is in flight, or after `graceMs`. */
  async whenIdle(graceMs: number): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  reply(ex: Exchange, route: CompiledRoute<G>, reply: Reply): void {
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
      this.letGoOfBody(ex);
      sendHeadOnly(ex.res, { statusLine: line, headers: headers.filter(([name]) => name !== 'content-type') }, null, this.draining);
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

  fail(ex: Exchange, err: unknown): void {
    if (ex.done) return;
    if (!(err instanceof ServiceError)) {
      this.log.error({ err, method: ex.method, path: ex.path }, 'request failed');
    }
    const { status, body, headers } = toErrorReply(err, ex.errorShape);
    // A 413 refuses a body still arriving: the answer asks the client to close, and the server
    // reads on meanwhile (see letGoOfBody) so the client can read the answer.
    const tooLarge = status === 413 ? { ...headers, connection: 'close' } : headers;
    this.send(ex, status, JSON_TYPE, body, tooLarge);
  }

  /**
   * Before an answer goes out: a streamed request body still arriving is let go of, and reading
   * resumes. The connection stays open: uWS's parser reads the rest of that body as body and
   * drops it (test/http/server.test.ts checks that), and a client still sending reads the answer
   * when it is done. Closing at once would reset the connection under the client's writes, and
   * most clients then report a broken pipe instead of the answer (RFC 9112 §9.6, lingering
   * close). A request that said `Connection: close` is closed by uWS itself after the answer.
   */
  private letGoOfBody(ex: Exchange): void {
    ex.bodyStream?.detach();
  }

  private streamReply(ex: Exchange, route: CompiledRoute<G>, reply: Reply): void {
    const status = reply.status ?? 200;
    this.letGoOfBody(ex); // a streamed reply to an upload not read to its end is not a case any route has
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
          this.log.info({ path: ex.path, reason: (err as Error)?.message ?? String(err) }, 'stream stopped after the client went away');
          return;
        }
        if (!stream.isStarted) {
          this.stalls.delete(stream);
          ex.stream = null;
          return this.fail(ex, err);
        }
        this.log.warn({ err: String(err), path: ex.path }, 'stream failed after it started; closing the connection');
        ex.done = true;
        stream.abort();
        ex.res.close();
        this.finish(ex, status);
      },
    );
  }

  private send(
    ex: Exchange,
    status: number,
    contentType: string,
    payload: string | Uint8Array,
    headers: Record<string, string> | undefined,
  ): void {
    if (ex.done) return;
    ex.done = true;
    this.letGoOfBody(ex);
    const close = this.draining;
    if (ex.head) sendHeadOnly(ex.res, head(ex, status, contentType, headers), typeof payload === 'string' ? Buffer.byteLength(payload) : payload.byteLength, close);
    else sendWhole(ex.res, head(ex, status, contentType, headers), payload, close);
    this.finish(ex, status);
  }

  /** The request's log line, and the end of its count in flight. */
  private finish(ex: Exchange, status: number): void {
    if (!ex.handlerStarted) this.bodies.giveBack(ex); // a running handler gives it back when it settles
    const elapsed = performance.now() - ex.started;
    ex.stats.record(status, elapsed / 1000);
    const ms = Math.round(elapsed * 1000) / 1000;
    const path = ex.rawQuery ? `${ex.path}?${redactQuery(ex.rawQuery)}` : ex.path;
    this.log.info({ method: ex.method, path, status, ms, remote: ex.remote, user: ex.user, requestId: ex.id }, 'request');
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
