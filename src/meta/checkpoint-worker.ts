// Worker thread of WalCheckpointer (checkpointer.ts): its own connection to the metadata file,
// checkpointing the WAL in the background so the fsyncs a checkpoint needs never run on the
// main thread.

import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { CHECKPOINT_STATS as SLOT } from './checkpointer.js';

const { file, intervalMs, stats } = workerData as { file: string; intervalMs: number; stats: SharedArrayBuffer };
const db = new Database(file);
db.pragma('busy_timeout = 5000');
const shared = new BigInt64Array(stats);

/** Records one checkpoint for GET /metrics (the main thread reads the slots with Atomics). */
function record(startedAt: number, micros: number, walFrames: number): void {
  Atomics.store(shared, SLOT.LAST_AT_MS, BigInt(startedAt));
  Atomics.store(shared, SLOT.LAST_MICROS, BigInt(micros));
  Atomics.store(shared, SLOT.WAL_FRAMES, BigInt(walFrames));
  Atomics.add(shared, SLOT.TOTAL_MICROS, BigInt(micros));
  Atomics.add(shared, SLOT.COUNT, 1n);
}

let failures = 0;
const timer = setInterval(() => {
  try {
    const startedAt = Date.now();
    const began = performance.now();
    // PASSIVE: copies what no reader still needs, never waits for or blocks the main thread's writes.
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
    record(startedAt, Math.round((performance.now() - began) * 1000), Math.max(0, result?.log ?? 0));
    failures = 0;
  } catch (err) {
    if (failures++ === 0) parentPort?.postMessage({ error: String((err as Error)?.message ?? err) });
  }
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.postMessage({ stopped: true });
});
