// Worker thread of WalCheckpointer (checkpointer.ts): its own connection to the metadata file,
// checkpointing the WAL in the background so the fsyncs a checkpoint needs never run on the
// main thread.

import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new Database(file);
db.pragma('busy_timeout = 5000');

let failures = 0;
const timer = setInterval(() => {
  try {
    // PASSIVE: copies what no reader still needs, never waits for or blocks the main thread's writes.
    db.pragma('wal_checkpoint(PASSIVE)');
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
