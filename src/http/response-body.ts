// Writing response bodies through uWebSockets.js without losing a byte.
//
// The uWS build we run (20.30) drops data in one case: inside `cork`, a write that does not
// fit the 16 KiB cork buffer makes uWS flush that buffer early, and when the socket cannot
// take the whole flush (a slow client), the rest of the write is discarded while the chunk
// header already promised it (fixed upstream in uWebSockets 20.64, which this glibc cannot
// load). So no cork here ever receives more than the cork buffer holds:
//
// - A body of known size that fits goes out with `end` in one cork. A larger one goes with
//   `tryEnd`, whose writes are optional (uWS reports how far it got instead of buffering or
//   dropping), resumed from the reported offset on `onWritable`.
// - A streamed body is queued here and written as chunks in bursts of at most one cork
//   buffer. uWS only reports backpressure when a write finds bytes of an earlier flush still
//   waiting, so writing stops at the first refused chunk and resumes on `onWritable`; uWS
//   then holds at most about two bursts, everything else waits in this queue, which the
//   producer bounds (`queuedBytes`, `onFlushed`).
// - A streamed response whose client takes nothing for `stallTimeoutMs` is closed (see
//   StallWatch): a paused reader must not hold a query, its memory and a connection forever.

import type uWS from 'uWebSockets.js';
import type { ResponseStream } from './route.js';

/** uWS LoopData::CORK_BUFFER_SIZE. */
export const CORK_BUFFER_BYTES = 16 * 1024;
/** What uWS adds around each chunk: "\r\n", up to 8 hex digits, "\r\n" (and slack). */
const CHUNK_FRAMING_BYTES = 16;
/** Headers uWS writes by itself: Date, Transfer-Encoding or Content-Length, and the blank line. */
const IMPLICIT_HEADER_BYTES = 128;

export interface ResponseHead {
  statusLine: string;
  headers: ReadonlyArray<readonly [string, string]>;
}

function headBytes(head: ResponseHead): number {
  let n = 11 + head.statusLine.length + IMPLICIT_HEADER_BYTES;
  for (const [name, value] of head.headers) n += name.length + value.length + 4;
  return n;
}

function writeHead(res: uWS.HttpResponse, head: ResponseHead): void {
  res.writeStatus(head.statusLine);
  for (const [name, value] of head.headers) res.writeHeader(name, value);
}

/**
 * Sends a complete response of known size. `onDone` runs once the last byte is with uWS
 * (or at once for a body that fits one cork).
 */
export function sendWhole(res: uWS.HttpResponse, head: ResponseHead, payload: string | Uint8Array, closeConnection: boolean, onDone?: () => void): void {
  const size = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.byteLength;
  const headSize = headBytes(head);
  if (headSize + size <= CORK_BUFFER_BYTES || headSize > CORK_BUFFER_BYTES) {
    // A huge head alone is past saving either way; uWS writes it as it can.
    res.cork(() => {
      writeHead(res, head);
      res.end(payload, closeConnection);
    });
    onDone?.();
    return;
  }
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  let done = false;
  res.cork(() => {
    writeHead(res, head);
    [, done] = res.tryEnd(body, size);
  });
  if (done) {
    onDone?.();
    return;
  }
  res.onWritable((offset) => {
    const [ok, finished] = res.tryEnd(body.subarray(offset), size);
    if (finished) onDone?.();
    return ok;
  });
}

/**
 * The answer to a HEAD request: the GET's status and headers, with the length its body would
 * have (null: unknown, a streamed body), and no body. In this uWS build endWithoutBody with any
 * argument (a length, or even `undefined`) leaves the response pending forever, so it is called
 * bare, the length goes out as a plain header, and a close is asked of the client by header.
 */
export function sendHeadOnly(res: uWS.HttpResponse, head: ResponseHead, contentLength: number | null, closeConnection: boolean): void {
  res.cork(() => {
    writeHead(res, head);
    if (contentLength !== null) res.writeHeader('content-length', String(contentLength));
    if (closeConnection) res.writeHeader('connection', 'close');
    res.endWithoutBody();
  });
}

export interface StreamedBodyOptions {
  head: ResponseHead;
  /** Queued bytes above which `write` asks the producer to wait. */
  highWaterBytes: number;
  /** Called once when the stream can take no more: ended, aborted or closed for stalling. */
  onClosed?: (reason: 'ended' | 'aborted' | 'stalled') => void;
}

/**
 * A chunked response body fed by a producer. `write` never blocks and copies only what the
 * socket cannot take at once; the producer paces itself by the promise `write` returns past
 * the high-water mark, or by `onFlushed` (the storage shards grant credit that way).
 */
export class StreamedBody implements ResponseStream {
  private readonly queue: Uint8Array[] = [];
  /** Bytes of queue[0] already written. */
  private headOffset = 0;
  private queued = 0;
  private started = false;
  private blocked = false;
  private writableHooked = false;
  private endRequested = false;
  private state: 'open' | 'ended' | 'aborted' | 'stalled' = 'open';
  private readonly flushListeners = new Set<(bytes: number) => void>();
  private roomWaiters: Array<() => void> = [];
  /** When bytes last moved to the socket, or when the queue last became non-empty. */
  lastProgress = performance.now();

  constructor(
    private readonly res: uWS.HttpResponse,
    private readonly opts: StreamedBodyOptions,
  ) {}

  get aborted(): boolean {
    return this.state === 'aborted' || this.state === 'stalled';
  }

  get queuedBytes(): number {
    return this.queued;
  }

  /** Whether bytes are waiting for a client that is not taking them. */
  get waiting(): boolean {
    return this.state === 'open' && (this.queued > 0 || this.blocked);
  }

  get isStarted(): boolean {
    return this.started;
  }

  write(chunk: Uint8Array | string): void | Promise<void> {
    if (this.state !== 'open' || this.endRequested) return;
    const owned = typeof chunk === 'string';
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (bytes.byteLength === 0) return;
    if (this.queued === 0) this.lastProgress = performance.now();
    this.queue.push(bytes);
    this.queued += bytes.byteLength;
    this.pump();
    // Written straight from the caller's view as far as the socket takes it; whatever is left
    // must outlive that view, so only the rest is copied (by `new Uint8Array`: a Buffer's
    // `slice` is a view of the same memory, not a copy).
    const last = this.queue.length - 1;
    if (!owned && last >= 0 && this.queue[last] === bytes) {
      if (last === 0) {
        this.queue[0] = new Uint8Array(bytes.subarray(this.headOffset));
        this.headOffset = 0;
      } else {
        this.queue[last] = new Uint8Array(bytes);
      }
    }
    if (this.queued > this.opts.highWaterBytes) return new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  onFlushed(listener: (bytes: number) => void): () => void {
    this.flushListeners.add(listener);
    return () => this.flushListeners.delete(listener);
  }

  /** Writes what is queued, then the terminating chunk. */
  end(): void {
    if (this.state !== 'open' || this.endRequested) return;
    this.endRequested = true;
    this.pump();
  }

  /** The client went away (uWS onAborted): nothing more may touch `res`. */
  abort(): void {
    this.finish('aborted');
  }

  /** Cuts the connection (a producer's decision: its client is too slow). */
  cut(): void {
    this.closeStalled();
  }

  /** Closes the connection of a client that stopped reading. */
  closeStalled(): void {
    if (this.state !== 'open') return;
    this.finish('stalled');
    this.res.close();
  }

  private finish(reason: 'aborted' | 'stalled' | 'ended'): void {
    if (this.state !== 'open') return;
    this.state = reason;
    this.queue.length = 0;
    this.queued = 0;
    this.wakeRoomWaiters();
    this.opts.onClosed?.(reason);
  }

  private pump(): void {
    let flushed = 0;
    while (this.state === 'open' && !this.blocked && (this.queued > 0 || this.endRequested)) {
      let finished = false;
      this.res.cork(() => {
        let room = CORK_BUFFER_BYTES;
        if (!this.started) {
          this.started = true;
          writeHead(this.res, this.opts.head);
          room -= headBytes(this.opts.head);
        }
        while (this.queued > 0 && room > CHUNK_FRAMING_BYTES) {
          const head = this.queue[0];
          const n = Math.min(head.byteLength - this.headOffset, room - CHUNK_FRAMING_BYTES);
          const ok = this.res.write(head.subarray(this.headOffset, this.headOffset + n));
          room -= n + CHUNK_FRAMING_BYTES;
          flushed += n;
          this.queued -= n;
          this.headOffset += n;
          if (this.headOffset === head.byteLength) {
            this.queue.shift();
            this.headOffset = 0;
          }
          if (!ok) {
            this.blocked = true;
            return;
          }
        }
        if (this.queued === 0 && this.endRequested && room > CHUNK_FRAMING_BYTES) {
          this.res.end();
          finished = true;
        }
      });
      if (finished) {
        this.finish('ended');
        break;
      }
    }
    if (flushed > 0) {
      this.lastProgress = performance.now();
      for (const listener of this.flushListeners) listener(flushed);
      if (this.queued <= this.opts.highWaterBytes >>> 1) this.wakeRoomWaiters();
    }
    if (this.blocked && !this.writableHooked && this.state === 'open') {
      // uWS keeps the handler for the life of the response; it only ever resumes the pump.
      this.writableHooked = true;
      this.res.onWritable(() => {
        if (this.state !== 'open') return true;
        this.blocked = false;
        this.pump();
        return true;
      });
    }
  }

  private wakeRoomWaiters(): void {
    if (this.roomWaiters.length === 0) return;
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }
}

/**
 * Closes streamed responses whose client has taken nothing for `timeoutMs` while bytes were
 * waiting for it. One timer for all of them.
 */
export class StallWatch {
  private readonly streams = new Set<StreamedBody>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly timeoutMs: number,
    private readonly onStall: (stream: StreamedBody) => void,
  ) {}

  add(stream: StreamedBody): void {
    this.streams.add(stream);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), Math.max(50, Math.min(1000, this.timeoutMs >>> 2)));
      this.timer.unref();
    }
  }

  delete(stream: StreamedBody): void {
    this.streams.delete(stream);
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private sweep(): void {
    const now = performance.now();
    for (const stream of this.streams) {
      if (stream.waiting && now - stream.lastProgress > this.timeoutMs) {
        this.onStall(stream);
        stream.closeStalled();
      }
    }
  }
}
