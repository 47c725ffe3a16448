// The main thread's side of the storage shards. Each shard is a piscina pool
// of exactly one worker (so the worker owning a collection's files is always
// the same thread, and piscina still starts, restarts and feeds it), plus two
// SharedArrayBuffer rings: request bodies in, query results out.
//
// A write copies the body bytes into the request ring (a full ring is a 503,
// never unbounded memory), then runs a small task naming the frame by its
// sequence number. A query runs a task whose result frames, tagged with the
// task's sequence number, are copied out of the result ring into the HTTP
// response as soon as they arrive, so one slow client never holds up another
// query's frames or a write's answer. Each query holds a control slot through
// which it gets credit: the worker produces only as many bytes as the client
// has taken plus a window (QUERY_CREDIT_BYTES), and a cancel flag.

import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { createRingBuffer, RingConsumer, RingProducer } from '../../shared/ring.js';
import { ServiceError } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import { unpack } from 'msgpackr';
import type { ResponseStream } from '../http/route.js';
import {
  CONTROL_FRAMES_TAKEN,
  CONTROL_PRIORITY_TASKS,
  CONTROL_SLOTS,
  CONTROL_TAGMAP_VERSION,
  FINAL_FRAME_BIT,
  OP,
  QUERY_CANCELLED,
  QUERY_CREDIT,
  QUERY_CREDIT_BYTES,
  QUERY_SEQ,
  QUERY_SLOTS,
  querySlotWord,
  writeFrameHead,
  type ReplyOf,
  type StorageTask,
  type StorageWorkerData,
  type TaskOf,
  type TaskReply,
  type WriteFrameHeader,
  type WriteOutcome,
  type WriteReply,
} from '../../shared/protocol.js';
import { shardOf } from '../../shared/shard-hash.js';
import type { Signal } from '../signal.js';

const WORKER_FILE = fileURLToPath(new URL('../../workers/storage-worker.js', import.meta.url));

export interface ShardPoolOptions {
  count: number;
  /** Emitted when a worker that replaced a failed one answers: state the main thread keeps in workers (live watches) goes again. */
  workerRestarted: Signal<[shardIndex: number]>;
  dataDir: string;
  requestRingBytes: number;
  resultRingBytes: number;
  bufferCapacityPoints: number;
  flushIntervalMs: number;
  sealGraceMs: number;
  resultStallTimeoutMs: number;
  writeTimeoutMs: number;
  queryMemoryBytes: number;
  maxSeriesPerCollection: number;
  maxDaysPerWrite: number;
  maxUnsealedDaysPerCollection: number;
  dayLogCompactBlocks: number;
  dayLogCompactBytes: number;
  workerYoungGenerationMb: number;
  log: Logger;
  /** log.level, for the workers' own lines. */
  logLevel: string;
  logFormat: 'json' | 'pretty';
  /** Worker lines to stderr (see Config.log.toStderr). */
  logToStderr: boolean;
  minTimestampMs: number;
}

/** Workers that fail before the first one ever answered, after which the shard counts as unable to start. */
const MAX_FAILED_STARTS = 3;

/** Largest part of a write body too large for one ring frame: small enough for other writes to go between parts. */
const PART_BYTES = 1 << 20;

/** Queries that may wait for a free control slot of one shard before more are refused (503). */
const MAX_WAITING_QUERIES = 1024;

/** Receives one task's result frames: views valid only during the call, copied by whoever keeps them. */
interface ResultListener {
  chunk(bytes: Uint8Array): void;
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
  /** True from a worker's death until its successor answers. */
  restarting = false;
  /** The live-watched tags of this shard's collections, the object in the workers' data: a restarted worker starts with them. */
  readonly liveWatches = new Map<string, Set<string>>();
  /** Workers that died and were replaced since start (GET /metrics). */
  restarts = 0;
  /** Bytes of query results that came out of the result ring (GET /metrics). */
  queryBytes = 0;
  /** Set once the first worker answered; before that, repeated failures mean the shard cannot start. */
  private started = false;
  private failedStarts = 0;
  private failStart!: (err: Error) => void;
  private readonly startFailed = new Promise<never>((_, reject) => (this.failStart = reject));
  private readonly freeSlots = Array.from({ length: QUERY_SLOTS }, (_, i) => QUERY_SLOTS - 1 - i);
  private readonly slotWaiters: Array<(slot: number) => void> = [];

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
      queryMemoryBytes: opts.queryMemoryBytes,
      maxSeriesPerCollection: opts.maxSeriesPerCollection,
      maxDaysPerWrite: opts.maxDaysPerWrite,
      maxUnsealedDaysPerCollection: opts.maxUnsealedDaysPerCollection,
      dayLogCompactBlocks: opts.dayLogCompactBlocks,
      dayLogCompactBytes: opts.dayLogCompactBytes,
      logLevel: opts.logLevel,
      logFormat: opts.logFormat,
      logToStderr: opts.logToStderr,
      minTimestampMs: opts.minTimestampMs,
      liveWatches: this.liveWatches,
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
    this.pool.on('error', (err: unknown) => {
      opts.log.error({ err, shard: index }, 'storage worker failed; piscina starts a new one');
      // A worker that cannot even start (its shard cannot be recovered) would be replaced forever.
      if (!this.started && ++this.failedStarts >= MAX_FAILED_STARTS) this.failStart(err instanceof Error ? err : new Error(String(err)));
    });
    // Writes do not go through piscina, so make sure a successor exists at once to answer them;
    // until it answers (it recovers the shard from disk first), health says the shard is restarting.
    this.pool.on('workerDestroy', () => {
      if (this.closed) return;
      this.restarting = true;
      this.restarts++;
      setImmediate(() =>
        void this.pool.run({ op: OP.PING }).then(
          () => {
            this.restarting = false;
            opts.workerRestarted.emit(index);
          },
          () => {},
        ),
      );
    });
  }

  /** Largest write body this shard's request ring takes. */
  get maxBodyBytes(): number {
    return this.requests.maxPayloadBytes;
  }

  /** The share of the request ring taken by frames the worker has not released yet (0 to 1), read here without asking it. */
  get requestRingFill(): number {
    return 1 - this.requests.freeBytes() / this.requests.capacity;
  }

  /**
   * What waits on this shard: answers the main thread expects from the worker (writes and query
   * streams), tasks piscina has not handed to the worker yet, queries waiting for a control slot.
   */
  queueDepth(): { answers: number; tasks: number; querySlots: number } {
    return { answers: this.listeners.size, tasks: this.pool.queueSize, querySlots: this.slotWaiters.length };
  }

  /** Write frames the worker has taken from the request ring (wrapping); a monitor sample carries it to count what it waited behind. */
  get framesTaken(): number {
    return Atomics.load(this.control, CONTROL_FRAMES_TAKEN);
  }

  /** Which tags of a collection the worker hands back as they are written: told to the running worker, kept for its successors. */
  watchLive(collectionId: string, add: string[], remove: string[]): Promise<number> {
    let tags = this.liveWatches.get(collectionId);
    if (!tags && add.length > 0) this.liveWatches.set(collectionId, (tags = new Set()));
    for (const tag of remove) tags?.delete(tag);
    for (const tag of add) tags!.add(tag);
    if (tags?.size === 0) this.liveWatches.delete(collectionId);
    return this.call({ op: OP.LIVE_WATCH, collectionId, add, remove });
  }

  /** Bumps the tag-map version seen by this shard's worker. */
  tagMapChanged(version: number): void {
    Atomics.store(this.control, CONTROL_TAGMAP_VERSION, version);
  }

  async run(task: StorageTask, signal?: AbortSignal): Promise<TaskReply> {
    if (this.closed) throw new ServiceError('UNAVAILABLE', 'storage is shutting down');
    try {
      return await this.pool.run(task, { signal: signal ?? null });
    } catch (err) {
      if ((err as Error)?.name === 'AbortError') throw new ServiceError('UNAVAILABLE', 'request cancelled');
      // The worker died with the task in flight; piscina is starting a new one that recovers from disk.
      throw new ServiceError('UNAVAILABLE', `storage shard ${this.index} is restarting; retry the request`);
    }
  }

  /** Runs a task and gives back what its opcode answers; a worker-side error becomes an ServiceError. */
  async call<T extends StorageTask>(task: T, signal?: AbortSignal): Promise<ReplyOf<T['op']>> {
    const reply = await this.run(task, signal);
    if (!reply.ok) throw ServiceError.fromWire(reply.error);
    // piscina carries any task's reply; the worker's handler table answers T's opcode with ReplyOf<T['op']>.
    return reply.value as ReplyOf<T['op']>;
  }

  /**
   * A latency-critical task (a monitor tick's sample): counted in CONTROL_PRIORITY_TASKS until
   * answered, so the worker's write loop lets it in after the write frame in hand rather than at
   * the end of its slice.
   */
  async callFirst<T extends StorageTask>(task: T): Promise<ReplyOf<T['op']>> {
    Atomics.add(this.control, CONTROL_PRIORITY_TASKS, 1);
    try {
      return await this.call(task);
    } finally {
      Atomics.sub(this.control, CONTROL_PRIORITY_TASKS, 1);
    }
  }

  /**
   * Puts a write into the request ring (header + body, no piscina message) and
   * waits for the worker's answer on the result ring. A full ring is a 503 at
   * once; a worker that dies leaves unreleased frames for its successor, which
   * answers them; no answer within storage.writeTimeoutMs is a 503.
   *
   * A body larger than one frame may carry goes in parts (see WriteFrameHeader.part), each
   * written when the ring has room for it, so a 10 MB ingest body crosses a 4 MiB ring while
   * other writes go on between its parts; the worker decodes it only once it has it all.
   */
  async write(body: Uint8Array, header: WriteFrameHeader): Promise<WriteOutcome> {
    if (this.closed) throw new ServiceError('UNAVAILABLE', 'storage is shutting down');
    const head = writeFrameHead(header);
    const whole = head.length + body.length <= this.requests.maxPayloadBytes;
    const seq = this.nextSeq();
    const reply = new Promise<WriteReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(seq);
        reject(new ServiceError('UNAVAILABLE', `storage shard ${this.index} did not answer in time; retry the request`));
      }, this.writeTimeoutMs);
      const parts: Uint8Array[] = [];
      this.listeners.set(seq, {
        chunk: (bytes) => void parts.push(bytes.slice()),
        end: () => {
          clearTimeout(timer);
          this.listeners.delete(seq);
          try {
            resolve(unpack(parts.length === 1 ? parts[0] : Buffer.concat(parts)) as WriteReply);
          } catch (err) {
            reject(err);
          }
        },
      });
    });
    reply.catch(() => {}); // observed below, or abandoned when the parts could not be sent
    if (whole) {
      if (!this.requests.tryWrite(seq, [head, body])) {
        this.listeners.delete(seq);
        throw new ServiceError('UNAVAILABLE', `storage shard ${this.index} is busy (request ring full); retry shortly`);
      }
    } else {
      await this.writeParts(seq, body, header);
    }
    this.drain();
    const answer = await reply;
    if (!answer.ok) throw ServiceError.fromWire(answer.error);
    return answer.value;
  }

  /** The parts of a body too large for one frame, each waiting (up to storage.writeTimeoutMs in all) for ring space. */
  private async writeParts(seq: number, body: Uint8Array, header: WriteFrameHeader): Promise<void> {
    const partBytes = Math.min(PART_BYTES, this.requests.maxPayloadBytes >>> 1);
    const count = Math.ceil(body.length / partBytes);
    const deadline = Date.now() + this.writeTimeoutMs;
    for (let index = 0; index < count; index++) {
      const head = writeFrameHead({ ...header, part: { index, count, totalBytes: body.length } });
      const slice = body.subarray(index * partBytes, Math.min(body.length, (index + 1) * partBytes));
      while (!this.requests.tryWrite(seq, [head, slice])) {
        const left = deadline - Date.now();
        if (this.closed || left <= 0 || (await this.requests.waitForSpaceAsync(head.length + slice.length, left)) === 'timed-out') {
          this.listeners.delete(seq);
          // Tell the worker to drop what it gathered; if even this does not fit, it drops it when it runs short.
          if (index > 0) this.requests.tryWrite(seq, writeFrameHead({ ...header, part: { index, count, totalBytes: body.length, abort: true } }));
          throw new ServiceError('UNAVAILABLE', `storage shard ${this.index} is busy (request ring full for storage.writeTimeoutMs); retry shortly`, { headers: { 'retry-after': '1' } });
        }
      }
      if (index === 0) this.drain();
    }
  }

  /**
   * Runs a query task whose result frames go to `out` as they come. The worker produces
   * only what `out` has passed to its client plus a window, so memory stays bounded however
   * slowly the client reads. The query stops when `signal` aborts (client gone or stalled)
   * and at `deadline` (epoch ms), also while it waits for a free control slot.
   */
  async stream(
    makeTask: (seq: number, slot: number) => TaskOf<typeof OP.QUERY> | TaskOf<typeof OP.QUERY_TABLE>,
    out: ResponseStream,
    signal: AbortSignal,
    deadline: number,
  ): Promise<number> {
    const slot = await this.acquireSlot(signal, deadline);
    const seq = this.nextSeq();
    const control = this.control;
    const creditWord = querySlotWord(slot, QUERY_CREDIT);
    Atomics.store(control, querySlotWord(slot, QUERY_SEQ), seq);
    Atomics.store(control, querySlotWord(slot, QUERY_CANCELLED), 0);
    Atomics.store(control, creditWord, QUERY_CREDIT_BYTES);
    // The task's reply can overtake its last frames, so the stream is done only when the end frame has been drained.
    let ended!: () => void;
    const endSeen = new Promise<void>((resolve) => (ended = resolve));
    this.listeners.set(seq, {
      chunk: (bytes) => {
        this.queryBytes += bytes.byteLength;
        void out.write(bytes);
      },
      end: () => ended(),
    });
    const stopGranting = out.onFlushed((bytes) => {
      Atomics.add(control, creditWord, bytes);
      Atomics.notify(control, creditWord);
    });
    const cancel = () => {
      Atomics.store(control, querySlotWord(slot, QUERY_CANCELLED), 1);
      Atomics.notify(control, creditWord);
    };
    signal.addEventListener('abort', cancel, { once: true });
    if (signal.aborted) cancel();
    this.drain();
    try {
      const points = await this.call(makeTask(seq, slot));
      await endSeen;
      return points;
    } finally {
      signal.removeEventListener('abort', cancel);
      stopGranting();
      // Frames of a failed task may still sit in the ring; they are dropped when read.
      this.listeners.delete(seq);
      // The task has ended, so the worker no longer reads this slot.
      this.releaseSlot(slot);
    }
  }

  private acquireSlot(signal: AbortSignal, deadline: number): Promise<number> {
    const free = this.freeSlots.pop();
    if (free !== undefined) return Promise.resolve(free);
    if (this.slotWaiters.length >= MAX_WAITING_QUERIES) {
      return Promise.reject(new ServiceError('UNAVAILABLE', `storage shard ${this.index} has ${MAX_WAITING_QUERIES} queries waiting; retry shortly`));
    }
    return new Promise<number>((resolve, reject) => {
      const give = (slot: number) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', giveUp);
        resolve(slot);
      };
      const giveUp = () => {
        clearTimeout(timer);
        const at = this.slotWaiters.indexOf(give);
        if (at >= 0) this.slotWaiters.splice(at, 1);
        reject(new ServiceError('UNAVAILABLE', signal.aborted ? 'request cancelled' : `storage shard ${this.index} is busy with other queries (storage.queryTimeoutMs passed while waiting); retry shortly`));
      };
      const timer = setTimeout(giveUp, Math.max(0, deadline - Date.now()));
      signal.addEventListener('abort', giveUp, { once: true });
      this.slotWaiters.push(give);
    });
  }

  private releaseSlot(slot: number): void {
    const next = this.slotWaiters.shift();
    if (next) next(slot);
    else this.freeSlots.push(slot);
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
                listener.chunk(frame.payload);
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

  /** Resolves when the worker has recovered the shard and answers; rejects when it fails to start again and again. */
  async ready(): Promise<void> {
    this.startFailed.catch(() => {}); // observed here or never
    await Promise.race([this.call({ op: OP.PING }), this.startFailed]);
    this.started = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      // A worker that never started has nothing to flush, and the task would wait for one forever.
      if (this.started) await this.pool.run({ op: OP.FLUSH });
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
    await Promise.all(this.shards.map((s) => s.ready()));
  }

  tagMapChanged(): void {
    this.version++;
    for (const shard of this.shards) shard.tagMapChanged(this.version);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.close()));
  }
}
