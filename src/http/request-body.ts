// A request body handed to its handler as it arrives (routes that declare `streamBody`: blob and
// attachment uploads), instead of read whole into memory first.
//
// uWS delivers body bytes through `onData` whenever the socket has them; it has no pull API.
// This build (20.30) does have `res.pause()` / `res.resume()` (they stop and restart reading the
// socket), so the queue between uWS and the handler is bounded: once more than `highWaterBytes`
// wait for the handler (its disk write is behind), reading pauses, and it resumes when the
// handler has taken the queue down to `lowWaterBytes`. Bytes uWS already read from the socket
// still arrive after a pause (one TLS read's worth), so the bound is the high-water mark plus
// one read buffer, not exact.
//
// The body limit is enforced here, as bytes arrive: a declared length over it is refused by the
// server before any byte is read, an undeclared (chunked) body fails the iteration with a 413 as
// soon as it passes it. A client that goes away fails the iteration too, so a handler writing
// the body somewhere always learns that it must throw its partial copy away.

import type uWS from 'uWebSockets.js';
import { ServiceError } from '../../shared/errors.js';
import type { RequestBody } from './route.js';

/** What the handler's side fails with when the client went away mid-body. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client went away before the request body was complete');
    this.name = 'ClientGoneError';
  }
}

export interface RequestBodyStreamOptions {
  /** The declared Content-Length, or null (chunked). */
  declaredBytes: number | null;
  limit: number;
  /** Named in the 413. */
  setting: string;
  /** Queued bytes above which reading pauses. */
  highWaterBytes: number;
  /** Queued bytes at or below which a paused read resumes. */
  lowWaterBytes: number;
}

export class RequestBodyStream implements RequestBody {
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private received = 0;
  private ended = false;
  private failure: Error | null = null;
  private paused = false;
  /** No more pause/resume on `res`: it was answered or aborted. */
  private detached = false;
  private wake: (() => void) | null = null;
  private iterating = false;
  /** The most bytes that ever waited for the handler (for tests of the bound). */
  peakBufferedBytes = 0;

  constructor(
    private readonly res: uWS.HttpResponse,
    private readonly opts: RequestBodyStreamOptions,
  ) {
    res.onData((chunk, isLast) => this.onData(chunk, isLast));
  }

  get declaredBytes(): number | null {
    return this.opts.declaredBytes;
  }

  get bufferedBytes(): number {
    return this.queued;
  }

  get receivedBytes(): number {
    return this.received;
  }

  /** Whether the last byte arrived (or the body failed): nothing more will come from the socket. */
  get complete(): boolean {
    return this.ended || this.failure !== null;
  }

  /** The client went away (uWS onAborted): `res` must not be touched again. */
  abort(): void {
    this.detached = true;
    this.fail(new ClientGoneError());
  }

  /**
   * The reply is about to go out: reading resumes (so uWS can finish the exchange) and nothing
   * touches `res` from here on. A handler still iterating sees the body end as a client gone.
   */
  detach(): void {
    if (this.detached) return;
    if (this.paused) this.res.resume();
    this.paused = false;
    this.detached = true;
    if (!this.complete) this.fail(new ClientGoneError());
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.iterating) throw new Error('a request body can be read only once');
    this.iterating = true;
    for (;;) {
      const chunk = this.queue.shift();
      if (chunk !== undefined) {
        this.queued -= chunk.length;
        if (this.paused && this.queued <= this.opts.lowWaterBytes && !this.detached) {
          this.paused = false;
          this.res.resume();
        }
        yield chunk;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private onData(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.complete) return;
    const size = chunk.byteLength;
    if (this.received + size > this.opts.limit) {
      this.fail(new ServiceError('PAYLOAD_TOO_LARGE', `request body is larger than ${this.opts.limit} bytes (${this.opts.setting})`));
      return;
    }
    this.received += size;
    if (size > 0) {
      // The ArrayBuffer is valid only during this callback: copy out.
      this.queue.push(Buffer.from(new Uint8Array(chunk)));
      this.queued += size;
      if (this.queued > this.peakBufferedBytes) this.peakBufferedBytes = this.queued;
    }
    if (isLast) this.ended = true;
    else if (this.queued > this.opts.highWaterBytes && !this.paused && !this.detached) {
      this.paused = true;
      this.res.pause();
    }
    this.notify();
  }

  private fail(err: Error): void {
    if (this.complete) return;
    this.failure = err;
    this.queue.length = 0;
    this.queued = 0;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
