// Checkpoints of the metadata WAL, off the main thread.
//
// With WAL and synchronous=NORMAL a commit does not fsync; a checkpoint does (the WAL, then the
// database file). SQLite's automatic checkpoint runs inside the commit that crosses the
// threshold, on the committing thread: here the main thread, where an fsync behind heavy ingest
// writeback was measured at 400 ms, stalling every request. So the main connection's automatic
// checkpoint is pushed far out (a safety net only) and a worker thread with its own connection
// checkpoints every second. It writes what each checkpoint took into a shared buffer, which
// GET /metrics reads without a message between the threads.

import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { Db } from './database.js';

/** The main connection checkpoints by itself only past this many WAL pages (about 256 MiB). */
const MAIN_AUTOCHECKPOINT_PAGES = 65_536;
const INTERVAL_MS = 1000;

/** The slots of the shared statistics buffer (BigInt64, written by the worker with Atomics). */
export const CHECKPOINT_STATS = { LAST_AT_MS: 0, LAST_MICROS: 1, COUNT: 2, TOTAL_MICROS: 3, WAL_FRAMES: 4, SLOTS: 5 } as const;

/** What the checkpoints have done since start. */
export interface CheckpointStats {
  /** Epoch ms of the last checkpoint, or null before the first. */
  lastAtMs: number | null;
  lastDurationMs: number;
  count: number;
  totalMs: number;
  /** Frames in the WAL at the last checkpoint (SQLite's `log` column). */
  walFrames: number;
}

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(CHECKPOINT_STATS.SLOTS * BigInt64Array.BYTES_PER_ELEMENT));

  constructor(db: Db, file: string, log: Logger) {
    db.pragma(`wal_autocheckpoint = ${MAIN_AUTOCHECKPOINT_PAGES}`);
    this.worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { file, intervalMs: INTERVAL_MS, stats: this.shared.buffer } });
    this.worker.on('message', (message: { error?: string }) => {
      if (message.error) log.warn({ err: message.error }, 'metadata WAL checkpoint failed; retrying every second');
    });
    this.worker.on('error', (err) => log.error({ err: String(err) }, 'metadata WAL checkpointer stopped; the main connection checkpoints by itself past its threshold'));
    this.worker.unref();
  }

  stats(): CheckpointStats {
    const read = (slot: number) => Number(Atomics.load(this.shared, slot));
    const count = read(CHECKPOINT_STATS.COUNT);
    return {
      lastAtMs: count === 0 ? null : read(CHECKPOINT_STATS.LAST_AT_MS),
      lastDurationMs: read(CHECKPOINT_STATS.LAST_MICROS) / 1000,
      count,
      totalMs: read(CHECKPOINT_STATS.TOTAL_MICROS) / 1000,
      walFrames: read(CHECKPOINT_STATS.WAL_FRAMES),
    };
  }

  /** Stops the worker (its connection closed) before the main connection closes. */
  async stop(): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.once('message', () => resolve());
    });
    this.worker.postMessage('stop');
    await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 2000))]);
    await this.worker.terminate();
  }
}
