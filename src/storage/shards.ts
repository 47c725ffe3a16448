// The main thread's side of the storage shards. Each shard is a piscina pool
// of exactly one worker (so the worker owning a collection's files is always
// the same thread, and piscina still starts, restarts and feeds it), plus two
// SharedArrayBuffer rings: request bodies in, query results out.
//
// A write copies the body bytes into the request ring (a full ring is a 503,
// never unbounded memory), then runs a small task naming the frame by its
// sequence number. A query runs a task whose result frames, tagged with the
// task's sequence number, are drained from the result ring into the HTTP
// response, pausing while the client is slow (the worker then waits too).

import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRingBuffer, RingConsumer, RingProducer } from '../../native-free-codecs/ring.js';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { unpack } from 'msgpackr';
import { CONTROL_CANCEL_SEQ, CONTROL_SLOTS, CONTROL_TAGMAP_VERSION, FINAL_FRAME_BIT, OP, writeFrameHead, type StorageTask, type StorageWorkerData, type TaskReply, type WireError, type WriteFrameHeader } from '../../workers/protocol.js';
import { shardOf } from '../../workers/shard-hash.js';

const WORKER_FILE = fileURLToPath(new URL('../../workers/storage-worker.js', import.meta.url));

export interface ShardPoolOptions {
  count: number;
  dataDir: string;
  requestRingBytes: number;
  resultRingBytes: number;
  bufferCapacityPoints: number;
  flushIntervalMs: number;
  sealGraceMs: number;
  resultStallTimeoutMs: number;
  writeTimeoutMs: number;
  workerYoungGenerationMb: number;
  log: Logger;
}

/**
 * Receives one query's result frames (views valid only during the call). `chunk`
 * returns a promise when the client is slow; draining waits for it.
 */
export interface ResultListener {
  chunk(bytes: Uint8Array): void | Promise<void>;
  end(): void;
}

export class Shard {
  private readonly pool: Piscina<StorageTask, TaskReply>;
  private readonly requests: RingProducer;
  private readonly results: RingConsumer;
  private readonly control: Int32Array;
  private seq = 0;
  private readonly listeners = new Map<number, ResultListener>();
  private draining = false;
  private closed = false;

  private readonly writeTimeoutMs: number;

  constructor(readonly index: number, opts: ShardPoolOptions) {
    this.writeTimeoutMs = opts.writeTimeoutMs;
    const requestRing = createRingBuffer(opts.requestRingBytes);
    const resultRing = createRingBuffer(opts.resultRingBytes);
    const controlBuffer = new SharedArrayBuffer(CONTROL_SLOTS * 4);
    this.control = new Int32Array(controlBuffer);
    this.requests = new RingProducer(requestRing);
    this.results = new RingConsumer(resultRing);
    const workerData: StorageWorkerData = {
      shardIndex: index,
      shardCount: opts.count,
      dataDir: opts.dataDir,
      requestRing,
      resultRing,
      control: controlBuffer,
      bufferCapacityPoints: opts.bufferCapacityPoints,
      flushIntervalMs: opts.flushIntervalMs,
      sealGraceMs: opts.sealGraceMs,
      resultStallTimeoutMs: opts.resultStallTimeoutMs,
    };
    this.pool = new Piscina({
      filename: WORKER_FILE,
      name: 'default',
      minThreads: 1,
      maxThreads: 1,
      // Several writes may wait on one group fsync at once; queries run to completion.
      concurrentTasksPerWorker: 64,
      // Timers (buffer flush, background seal, group commit) need the worker's event loop running between tasks.
      atomics: 'disabled',
      idleTimeout: Number.POSITIVE_INFINITY,
      maxQueue: 4096,
      // A small young generation: every decode leaves short-lived garbage, and V8's
      // default 16 MiB semi-spaces per isolate showed up as tens of MiB of peak RSS
      // (bench:ingest) for no measurable speed. A --max-semi-space-size node flag (npm start
      // passes 1) wins over this limit: V8 flags override resource limits.
      resourceLimits: { maxYoungGenerationSizeMb: opts.workerYoungGenerationMb },
      workerData,
    });
    this.pool.on('error', (err: unknown) => opts.log.error({ err, shard: index }, 'storage worker failed; piscina starts a new one'));
    // Writes do not go through piscina, so make sure a successor exists at once to answer them.
    this.pool.on('workerDestroy', () => {
      if (!this.closed) setImmediate(() => void this.pool.run({ op: OP.PING }).catch(() => {}));
    });
  }

  /** Largest write body this shard's request ring takes. */
  get maxBodyBytes(): number {
    return this.requests.maxPayloadBytes;
  }

  /** Bumps the tag-map version seen by this shard's worker. */
  tagMapChanged(version: number): void {
    Atomics.store(this.control, CONTROL_TAGMAP_VERSION, version);
  }

  async run(task: StorageTask, signal?: AbortSignal): Promise<TaskReply> {
    if (this.closed) throw new HttpError('UNAVAILABLE', 'storage is shutting down');
    try {
      return await this.pool.run(task, { signal: signal ?? null });
    } catch (err) {
      if ((err as Error)?.name === 'AbortError') throw new HttpError('UNAVAILABLE', 'request cancelled');
      // The worker died with the task in flight; piscina is starting a new one that recovers from disk.
      throw new HttpError('UNAVAILABLE', `storage shard ${this.index} is restarting; retry the request`);
    }
  }

  /** Runs a task and turns a worker-side error into an HttpError. */
  async call(task: StorageTask, signal?: AbortSignal): Promise<Extract<TaskReply, { ok: true }>> {
    const reply = await this.run(task, signal);
    if (!reply.ok) throw fromWire(reply.error);
    return reply;
  }

  /**
   * Puts a write into the request ring (header + body, no piscina message) and
   * waits for the worker's answer on the result ring. A full ring is a 503 at
   * once; a worker that dies leaves unreleased frames for its successor, which
   * answers them; no answer within storage.writeTimeoutMs is a 503.
   */
  async write(body: Uint8Array, header: WriteFrameHeader): Promise<Extract<TaskReply, { ok: true }>> {
    if (this.closed) throw new HttpError('UNAVAILABLE', 'storage is shutting down');
    const head = writeFrameHead(header);
    if (head.length + body.length > this.requests.maxPayloadBytes) {
      throw new HttpError('PAYLOAD_TOO_LARGE', `body of ${body.length} bytes is larger than the shard ring allows (${this.requests.maxPayloadBytes - head.length} bytes; storage.requestRingBytes)`);
    }
    const seq = this.nextSeq();
    const reply = new Promise<TaskReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(seq);
        reject(new HttpError('UNAVAILABLE', `storage shard ${this.index} did not answer in time; retry the request`));
      }, this.writeTimeoutMs);
      const parts: Uint8Array[] = [];
      this.listeners.set(seq, {
        chunk: (bytes) => void parts.push(bytes.slice()),
        end: () => {
          clearTimeout(timer);
          this.listeners.delete(seq);
          try {
            resolve(unpack(parts.length === 1 ? parts[0] : Buffer.concat(parts)) as TaskReply);
          } catch (err) {
            reject(err);
          }
        },
      });
    });
    if (!this.requests.tryWrite(seq, [head, body])) {
      this.listeners.delete(seq);
      throw new HttpError('UNAVAILABLE', `storage shard ${this.index} is busy (request ring full); retry shortly`);
    }
    this.drain();
    const answer = await reply;
    if (!answer.ok) throw fromWire(answer.error);
    return answer;
  }

  /**
   * Runs a query task, passing its result frames to `listener` as they come.
   * When the client goes away (`signal`), the worker is told to stop.
   */
  async stream(makeTask: (seq: number) => StorageTask, listener: ResultListener, signal: AbortSignal): Promise<Extract<TaskReply, { ok: true }>> {
    const seq = this.nextSeq();
    // The task's reply can overtake its last frames, so the stream is done only when the end frame has been drained.
    let ended!: () => void;
    const endSeen = new Promise<void>((resolve) => (ended = resolve));
    this.listeners.set(seq, { chunk: (bytes) => listener.chunk(bytes), end: () => { listener.end(); ended(); } });
    const onAbort = () => Atomics.store(this.control, CONTROL_CANCEL_SEQ, seq);
    signal.addEventListener('abort', onAbort, { once: true });
    this.drain();
    try {
      const reply = await this.call(makeTask(seq));
      await endSeen;
      return reply;
    } finally {
      signal.removeEventListener('abort', onAbort);
      // Frames of a failed task may still sit in the ring; they are dropped when read.
      this.listeners.delete(seq);
    }
  }

  private nextSeq(): number {
    this.seq = (this.seq + 1) & 0x7fff_ffff || 1; // the top bit of a result frame's tag marks the last one
    return this.seq;
  }

  /** Moves result frames to their listeners while any query is outstanding. */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    void (async () => {
      try {
        while (this.listeners.size > 0 && !this.closed) {
          let frame = this.results.tryRead();
          if (!frame) {
            await this.results.waitForDataAsync(100);
            continue;
          }
          while (frame) {
            const final = (frame.tag & FINAL_FRAME_BIT) !== 0;
            const listener = this.listeners.get((frame.tag & ~FINAL_FRAME_BIT) >>> 0);
            if (listener) {
              if (final) {
                listener.chunk(frame.payload);
                listener.end();
              } else if (frame.payload.length === 0) {
                listener.end();
              } else {
                const slow = listener.chunk(frame.payload);
                if (slow) {
                  this.results.release();
                  await slow;
                }
              }
            }
            this.results.release();
            frame = this.results.tryRead();
          }
        }
      } finally {
        this.draining = false;
        if (this.listeners.size > 0 && !this.closed) this.drain();
      }
    })();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.pool.run({ op: OP.FLUSH });
    } catch {
      // a dead worker has nothing to flush
    }
    this.closed = true;
    await this.pool.destroy();
  }

  /** For tests of crash recovery: the worker thread's id. */
  get threadIds(): number[] {
    return this.pool.threads.map((t) => t.threadId);
  }

  terminateWorker(): Promise<number> | undefined {
    return this.pool.threads[0]?.terminate();
  }
}

export class ShardPool {
  readonly shards: Shard[];
  private version = 0;

  constructor(opts: ShardPoolOptions) {
    this.shards = Array.from({ length: opts.count }, (_, i) => new Shard(i, opts));
  }

  shardFor(collectionId: string): Shard {
    return this.shards[shardOf(collectionId, this.shards.length)];
  }

  /** Resolves when every worker has recovered its shard and answers. */
  async ready(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.call({ op: OP.PING })));
  }

  tagMapChanged(): void {
    this.version++;
    for (const shard of this.shards) shard.tagMapChanged(this.version);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.close()));
  }
}

export function fromWire(error: WireError): HttpError {
  return HttpError.fromWire(error);
}
