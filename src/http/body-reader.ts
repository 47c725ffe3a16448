// Reading request bodies without blocking: whole (collected chunk by chunk into a buffer, pooled
// for the routes that are done with their bytes once they settle) or streamed to the handler as
// they arrive (request-body.ts); each within its route's limit and, together, within the bytes
// all bodies being read may hold at once. Then decoding a whole body (JSON or msgpack) and
// checking it against the route's schema.

import { unpack } from 'msgpackr';
import { ServiceError } from '../../shared/errors.js';
import { checkDecodedBodyDepth, checkJsonBodyDepth } from './body-guard.js';
import { check, type CompiledRoute } from './compile.js';
import type { Exchange } from './exchange.js';
import { RequestBodyStream } from './request-body.js';
import type { RouteDef } from './route.js';

/** The body limits of RequestLimits (settings under `server.`). */
export interface BodyLimits {
  /** Bodies of routes that read raw bytes and set no limit of their own. */
  maxBodyBytes: number;
  /** JSON bodies of routes that need a token. */
  maxJsonBodyBytes: number;
  /** Bodies of public routes (login, register): nobody has been identified yet. */
  maxPublicBodyBytes: number;
  /** All request bodies being read at once; more is a 503 until some are done. */
  maxBodyBytesInFlight: number;
}

/** Bytes of a streamed request body that may wait for its handler before reading the socket pauses. */
const BODY_STREAM_HIGH_WATER_BYTES = 1 << 20;
const BODY_STREAM_LOW_WATER_BYTES = 256 << 10;

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

export class BodyReader {
  /** Bytes of request bodies being read right now (bounded by limits.maxBodyBytesInFlight). */
  private bytesInFlight = 0;
  private readonly pool = new BodyPool(64 << 20);

  constructor(private readonly limits: BodyLimits) {}

  /** The whole body of a route that declares `body` or `rawBody`; its buffer is lent from the pool when the route reuses it (`bufferReused`). */
  whole<G>(ex: Exchange, def: RouteDef<G>, headers: Record<string, string>): Promise<Uint8Array> {
    const { limit, setting } = this.limitOf(def);
    const reuse = def.rawBody?.bufferReused === true;
    return new Promise((resolve, reject) => this.read(ex, headers['content-length'], limit, setting, reuse, (err, bytes) => (err ? reject(err) : resolve(bytes))));
  }

  /**
   * The body of a `streamBody` route as it arrives: a declared length over the route's limit is
   * refused before any byte is read; reading starts now (uWS hands bytes only to a reader attached
   * during the request callback) and pauses while the handler is behind.
   */
  streamed<G>(ex: Exchange, def: RouteDef<G>, headers: Record<string, string>): RequestBodyStream {
    const { limit, setting } = this.limitOf(def);
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

  /** Returns a lent body buffer to the pool (the handler has settled, or never ran). */
  giveBack(ex: Exchange): void {
    if (ex.lent === null) return;
    this.pool.give(ex.lent);
    ex.lent = null;
  }

  /** The body limit of a route: its own, else by kind (public JSON, JSON, raw bytes), and the setting to name in a 413. */
  private limitOf<G>(def: RouteDef<G>): { limit: number; setting: string } {
    const limits = this.limits;
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
  private read(ex: Exchange, contentLength: string | undefined, limit: number, setting: string, reuse: boolean, done: (err: ServiceError | null, body: Uint8Array) => void): void {
    const declared = contentLength === undefined ? -1 : Number(contentLength);
    const tooLarge = () => new ServiceError('PAYLOAD_TOO_LARGE', `request body is larger than ${limit} bytes (${setting})`);
    const busy = () =>
      new ServiceError('UNAVAILABLE', `the server is reading ${this.limits.maxBodyBytesInFlight} bytes of request bodies already (server.maxBodyBytesInFlight); retry shortly`, { headers: { 'retry-after': '1' } });
    if (declared > limit) return done(tooLarge(), new Uint8Array(0));
    let reserved = 0;
    const reserve = (bytes: number): boolean => {
      if (this.bytesInFlight + bytes > this.limits.maxBodyBytesInFlight) return false;
      this.bytesInFlight += bytes;
      reserved += bytes;
      return true;
    };
    const release = () => {
      this.bytesInFlight -= reserved;
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
    if (reuse && declared >= BodyPool.MIN_BYTES) buffer = ex.lent = this.pool.take(declared);
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
}

/** A whole body decoded (msgpack by its content type, else JSON) and checked against the route's schema; an empty body is `{}`. */
export function decodeBody<G>(bytes: Uint8Array, contentType: string | undefined, route: CompiledRoute<G>): unknown {
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
