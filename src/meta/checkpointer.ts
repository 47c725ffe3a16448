// Checkpoints of the metadata WAL, off the main thread.
//
// With WAL and synchronous=NORMAL a commit does not fsync; a checkpoint does (the WAL, then the
// database file). SQLite's automatic checkpoint runs inside the commit that crosses the
// threshold, on the committing thread: here the main thread, where an fsync behind heavy ingest
// writeback was measured at 400 ms, stalling every request. So the main connection's automatic
// checkpoint is pushed far out (a safety net only) and a worker thread with its own connection
// checkpoints every second.

import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { Db } from './database.js';

/** The main connection checkpoints by itself only past this many WAL pages (about 256 MiB). */
const MAIN_AUTOCHECKPOINT_PAGES = 65_536;
const INTERVAL_MS = 1000;

export class WalCheckpointer {
  private readonly worker: Worker;

  constructor(db: Db, file: string, log: Logger) {
    db.pragma(`wal_autocheckpoint = ${MAIN_AUTOCHECKPOINT_PAGES}`);
    this.worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { file, intervalMs: INTERVAL_MS } });
    this.worker.on('message', (message: { error?: string }) => {
      if (message.error) log.warn({ err: message.error }, 'metadata WAL checkpoint failed; retrying every second');
    });
    this.worker.on('error', (err) => log.error({ err: String(err) }, 'metadata WAL checkpointer stopped; the main connection checkpoints by itself past its threshold'));
    this.worker.unref();
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
