/**
 * The shard's side of its compaction thread (compaction-thread.ts): a second thread per shard
 * that writes parts from frozen day logs, and merges parts, while the shard's own thread goes on
 * taking writes and queries. Compacting on the shard's thread held every write of the shard for 50-150 ms per
 * compaction and cost line-protocol ingest a fifth of its rate, with the machine's second core
 * partly idle (bench/README.md, "Compaction on the shard's thread").
 *
 * The thread is started on the first request and does not keep the process alive while idle
 * (tools and tests that never compact never start it). Compactions are answered in order,
 * merges after them; a thread that dies fails what it had and is started again on the next
 * request.
 */

import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';

/** A part to write: a compaction (frozen logs) or a merge (parts); never both. */
export interface CompactionRequest {
  id: number;
  day: number;
  /** The part's final name, for the file's own checks; the thread writes `tmpPath` only. */
  outputPath: string;
  tmpPath: string;
  /** Parts to merge, oldest first (immutable files: only the shard replaces them, and not while they are merged). */
  inputs: string[];
  /** The frozen logs in write order, each with its verified length and its tags' point counts. */
  logs: { path: string; size: number; tagIds: Uint32Array; points: Float64Array }[];
}

/** The thread's own memory, measured as it answers (right after the work, so near its high point). */
export interface ThreadMemory {
  heapUsedBytes: number;
  arrayBufferBytes: number;
}

/** The calling thread's own V8 heap in use and ArrayBuffer memory (each isolate counts its own). */
export function threadMemoryNow(): ThreadMemory {
  return { heapUsedBytes: v8.getHeapStatistics().used_heap_size, arrayBufferBytes: process.memoryUsage().arrayBuffers };
}

/** What a thread that does not run holds. */
export const NO_THREAD_MEMORY: ThreadMemory = Object.freeze({ heapUsedBytes: 0, arrayBufferBytes: 0 });

export type CompactionReply = ({ id: number; ok: true; points: number; bytes: number; ms: number } | { id: number; ok: false; error: string }) & { memory: ThreadMemory };

/** Asks the thread to drop a merge (queued or under way); it is answered as failed with MERGE_CANCELLED. */
export interface CancelRequest {
  cancel: number;
}

export const MERGE_CANCELLED = 'cancelled';

type Outcome = { ok: true; points: number; bytes: number; ms: number } | { ok: false; error: string };

const THREAD_FILE = new URL('./compaction-thread.js', import.meta.url);

export class CompactionThread {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, (outcome: Outcome) => void>();
  private settledWaiters: Array<() => void> = [];
  private nextId = 1;
  private lastMemory = NO_THREAD_MEMORY;

  /** The thread's memory at its last answer; zeros while no thread runs (for /metrics and the soak). */
  get memory(): ThreadMemory {
    return this.lastMemory;
  }

  /** Requests sent and not answered yet. */
  get pending(): number {
    return this.waiting.size;
  }

  /** Sends a request; `done` runs on this thread when it is answered (or the thread failed). Returns its id. */
  submit(request: Omit<CompactionRequest, 'id'>, done: (outcome: Outcome) => void): number {
    const worker = this.start();
    const id = this.nextId++;
    this.waiting.set(id, done);
    worker.ref();
    worker.postMessage({ ...request, id });
    return id;
  }

  /** Drops a merge whose answer would be dropped anyway (its day sealed, its collection closed); a compaction runs on. */
  cancel(id: number): void {
    if (this.waiting.has(id)) this.worker?.postMessage({ cancel: id } satisfies CancelRequest);
  }

  /** Resolves once no request is waiting for an answer. */
  settled(): Promise<void> {
    if (this.waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** Stops the thread; requests still waiting are failed. */
  close(): void {
    const worker = this.worker;
    this.worker = null;
    this.lastMemory = NO_THREAD_MEMORY;
    if (worker !== null) void worker.terminate();
    this.failAll('the compaction thread was stopped');
  }

  private start(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(THREAD_FILE);
    worker.on('message', (reply: CompactionReply) => {
      this.lastMemory = reply.memory;
      const done = this.waiting.get(reply.id);
      if (done === undefined) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      done(reply.ok ? { ok: true, points: reply.points, bytes: reply.bytes, ms: reply.ms } : { ok: false, error: reply.error });
      this.notifyIfSettled();
    });
    const lost = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.lastMemory = NO_THREAD_MEMORY;
      this.failAll(why);
    };
    worker.on('error', (err) => lost(`the compaction thread failed: ${err.message}`));
    worker.on('exit', (code) => lost(`the compaction thread exited (code ${code})`));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private failAll(error: string): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const done of waiting) done({ ok: false, error });
    this.notifyIfSettled();
  }

  private notifyIfSettled(): void {
    if (this.waiting.size > 0) return;
    const waiters = this.settledWaiters;
    this.settledWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
