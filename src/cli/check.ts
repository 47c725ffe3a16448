// `historian check`: verifies a data dir without changing anything in it. The time-series files
// (day logs, sealed files, tag dictionaries) are read in a worker thread by the storage's own
// readers (workers/check-worker.ts; src/ never imports workers/), the SQLite files by
// src/meta/integrity.ts; this file plans the work, relays progress and gathers one report.

import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { checkSqliteFile, findSqliteFiles } from '../meta/integrity.js';
import type { CheckProblem, CheckWorkerMessage, TimeSeriesChecked } from '../../shared/check-protocol.js';

export type { CheckProblem } from '../../shared/check-protocol.js';

export interface CheckReport {
  /** No problem found (notes do not count). */
  ok: boolean;
  checked: { dayFiles: number; sealedFiles: number; dictionaries: number; sqlite: number; bytes: number };
  problems: CheckProblem[];
  /** Not errors: e.g. an active day log's torn tail that the next start truncates. */
  notes: string[];
}

export interface CheckOptions {
  /** The service holds the data dir (its lock names it): files may grow or be sealed meanwhile. */
  serviceRunning?: boolean;
  /** Bytes read so far of all there is to read, and the file being read (relative to the data dir). */
  onProgress?: (done: number, total: number, file: string) => void;
}

const WORKER_FILE = new URL('../../workers/check-worker.js', import.meta.url);

export async function checkDataDir(dataDir: string, opts: CheckOptions = {}): Promise<CheckReport> {
  const root = path.resolve(dataDir);
  if (!fs.statSync(root).isDirectory()) throw new Error(`the data dir ${root} is not a folder`);
  const serviceRunning = opts.serviceRunning === true;
  const progress = opts.onProgress ?? (() => {});
  const problems: CheckProblem[] = [];
  const notes: string[] = [];

  const databases = findSqliteFiles(root);
  const sqliteBytes = databases.reduce((sum, db) => sum + db.bytes, 0);
  let total = sqliteBytes;
  const series = await runWorker(root, serviceRunning, (planned) => {
    total += planned;
    progress(0, total, '');
  }, (done, file) => progress(Math.min(done, total), total, file));
  problems.push(...series.problems);
  notes.push(...series.notes);

  let done = total - sqliteBytes;
  for (const db of databases) {
    progress(done, total, db.rel);
    checkSqliteFile(db, serviceRunning, problems, notes);
    done += db.bytes;
    progress(done, total, db.rel);
  }
  if (fs.existsSync(path.join(root, 'restore-in-progress.json'))) {
    notes.push('restore-in-progress.json: a restore was interrupted; the next start finishes or undoes it (ts/ was checked as it is now)');
  }

  const { dayFiles, sealedFiles, dictionaries } = series.checked;
  const checked = { dayFiles, sealedFiles, dictionaries, sqlite: databases.length, bytes: series.checked.bytes + sqliteBytes };
  return { ok: problems.length === 0, checked, problems, notes };
}

/** Runs the time-series check in its worker thread. */
function runWorker(
  dataDir: string,
  serviceRunning: boolean,
  onPlan: (bytes: number) => void,
  onProgress: (done: number, file: string) => void,
): Promise<{ checked: TimeSeriesChecked; problems: CheckProblem[]; notes: string[] }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_FILE, { workerData: { checkWorker: true, input: { dataDir, serviceRunning } } });
    let result: { checked: TimeSeriesChecked; problems: CheckProblem[]; notes: string[] } | null = null;
    worker.on('message', (message: CheckWorkerMessage) => {
      if (message.type === 'plan') onPlan(message.bytes);
      else if (message.type === 'progress') onProgress(message.done, message.file);
      else result = message;
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (result !== null) resolve(result);
      else reject(new Error(`the check's worker thread stopped (exit code ${code}) before it finished`));
    });
  });
}
