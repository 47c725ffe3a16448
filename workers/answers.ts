// How a storage worker answers on the result ring, and what its errors become on the way.
//
// Result frames carry the sequence number of their task or write as tag (shared/protocol.ts
// FINAL_FRAME_BIT marks a last frame that carries data). Query results stream through
// query-runner.ts on credit; a write's answer is one msgpack WriteReply, sent here.

import { pack } from 'msgpackr';
import type { RingProducer } from '../shared/ring.js';
import { WriteBodyError } from '../native-free-codecs/write-body.js';
import { asStorageError, ServiceError, type WireError } from '../shared/errors.js';
import { FINAL_FRAME_BIT, type WriteReply } from '../shared/protocol.js';
import type { WorkerLog } from './worker-log.js';

/** A result frame's largest size: big enough to amortise a wake-up, small next to the ring. */
export const RESULT_CHUNK_BYTES = 1 << 18;

/** Frames of at most half the ring, so one frame never needs the whole ring free. */
export function resultFrameBytes(results: RingProducer): number {
  return Math.min(RESULT_CHUNK_BYTES, results.maxPayloadBytes >>> 1);
}

/** What a task or write failed with, as it crosses to the main thread; anything unexpected is logged. */
export function toWireError(err: unknown, log: WorkerLog): WireError {
  if (err instanceof WriteBodyError) return { code: 'BAD_REQUEST', message: err.message };
  const mapped = asStorageError(err);
  if (mapped instanceof ServiceError) {
    if (mapped.cause !== undefined) log.error({ err: String(mapped.cause) }, mapped.message);
    return mapped.toWire();
  }
  log.error({ err: String((err as Error)?.stack ?? err) }, 'storage task failed');
  return { code: 'INTERNAL', message: 'storage error' };
}

/** Sends the answers of writes. */
export class WriteAnswers {
  private readonly frameBytes: number;

  constructor(
    private readonly results: RingProducer,
    private readonly stallTimeoutMs: number,
    private readonly log: WorkerLog,
  ) {
    this.frameBytes = resultFrameBytes(results);
  }

  /** The reply as msgpack: one final frame, or chunks and an empty end frame when it is large. */
  send(seq: number, reply: WriteReply): void {
    try {
      const bytes = pack(reply);
      if (bytes.length <= this.frameBytes) {
        this.emitFrame((seq | FINAL_FRAME_BIT) >>> 0, bytes);
      } else {
        for (let at = 0; at < bytes.length; at += this.frameBytes) this.emitFrame(seq, bytes.subarray(at, Math.min(bytes.length, at + this.frameBytes)));
        this.emitFrame(seq, new Uint8Array(0));
      }
    } catch (err) {
      this.log.error({ err: String(err), seq }, 'could not answer a write');
    }
  }

  /**
   * Puts one answer frame in the result ring, blocking this worker while the ring is full. The
   * main thread copies every frame out as it comes (queries only produce what their client
   * has room for), so the ring frees within moments; a main thread that took no frame for
   * storage.resultStallTimeoutMs is not coming back for this one.
   */
  private emitFrame(tag: number, payload: Uint8Array): void {
    const deadline = Date.now() + this.stallTimeoutMs;
    while (!this.results.tryWrite(tag, payload)) {
      if (Date.now() > deadline) throw new ServiceError('UNAVAILABLE', 'the result ring stayed full; answer dropped');
      this.results.waitForSpace(payload.length, 50);
    }
  }
}
