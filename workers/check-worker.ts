/**
 * The worker thread of `historian check` (src/cli/check.ts starts it; messages in
 * ../shared/check-protocol.ts): finds the collection folders under `<dataDir>/ts` as recovery
 * does (collection-folders.ts, which ShardStore.listScopes uses too), plans the bytes to read, then checks each folder
 * (check-collection.ts) and sends back what it found. Reads only.
 */

import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { CollectionCheck, type CheckSink } from './check-collection.js';
import { DAY_LOG_FILE, isCollectionFileName, META_FILE, PART_FILE, SEALED_FILE } from '../shared/collection-files.js';
import type { CheckProblem, CheckWorkerInput, CheckWorkerMessage, TimeSeriesChecked } from '../shared/check-protocol.js';
import type { CollectionScope } from '../shared/scope.js';
import { validateScope } from '../shared/scope-path.js';
import { walkCollectionFolders } from './collection-folders.js';

/** Problems listed per file; past this, one line says how many more there were. */
const MAX_PROBLEMS_PER_FILE = 20;
/** Progress messages at most this often (a bar needs no more). */
const PROGRESS_INTERVAL_MS = 100;

interface Folder {
  dir: string;
  rel: string;
  scope: CollectionScope;
  names: string[];
}

/** Checks the time-series files of `dataDir`; `send` gets the plan, progress and, last, the result. */
export function checkTimeSeries(dataDir: string, serviceRunning: boolean, send: (message: CheckWorkerMessage) => void): void {
  const problems: CheckProblem[] = [];
  const notes: string[] = [];
  const perFile = new Map<string, number>();
  const checked: TimeSeriesChecked = { dayFiles: 0, sealedFiles: 0, dictionaries: 0, bytes: 0 };
  let done = 0;
  let sentAt = 0;
  let sentFile = '';
  const sink: CheckSink = {
    problem(file, text) {
      const n = (perFile.get(file) ?? 0) + 1;
      perFile.set(file, n);
      if (n <= MAX_PROBLEMS_PER_FILE) problems.push({ file, problem: text });
    },
    note(file, text) {
      notes.push(`${file}: ${text}`);
    },
    advance(file, bytes) {
      done += bytes;
      const now = Date.now();
      if (file === sentFile && now - sentAt < PROGRESS_INTERVAL_MS) return;
      sentAt = now;
      sentFile = file;
      send({ type: 'progress', done, file });
    },
  };

  const folders = collectionFolders(dataDir, sink);
  let files = 0;
  let bytes = 0;
  for (const folder of folders) {
    for (const name of folder.names) {
      if (!isReadByCheck(name)) continue;
      files++;
      bytes += sizeOf(path.join(folder.dir, name));
    }
  }
  send({ type: 'plan', files, bytes });
  for (const folder of folders) new CollectionCheck(folder.dir, folder.rel, folder.scope, serviceRunning, sink, checked).run(folder.names);
  for (const [file, n] of perFile) if (n > MAX_PROBLEMS_PER_FILE) problems.push({ file, problem: `${n - MAX_PROBLEMS_PER_FILE} more problems in this file not listed` });
  send({ type: 'progress', done, file: '' });
  send({ type: 'done', checked, problems, notes });
}

/** The files a folder's check reads (and so counts in the plan). */
function isReadByCheck(name: string): boolean {
  return isCollectionFileName(name);
}

/**
 * Every folder four levels below `<dataDir>/ts` whose names decode to a valid scope and that
 * holds a meta.json: the folders recovery opens. Folders it passes over are reported when they
 * hold day files (their points are not served).
 */
function collectionFolders(dataDir: string, sink: CheckSink): Folder[] {
  const folders: Folder[] = [];
  walkCollectionFolders(dataDir, {
    leaf(dir, names) {
      const rel = path.relative(dataDir, dir);
      const files = fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isFile()).map((d) => d.name);
      const dayFiles = files.filter((n) => SEALED_FILE.test(n) || PART_FILE.test(n) || DAY_LOG_FILE.test(n)).length;
      if (!files.includes(META_FILE)) {
        if (dayFiles > 0) sink.problem(rel, `no ${META_FILE}: the service does not open this folder, and its ${dayFiles} day files are not served`);
        return;
      }
      try {
        const scope = validateScope({ organization: names[0]!, site: names[1]!, unit: names[2]!, grid: names[3]! });
        folders.push({ dir, rel, scope, names: files });
      } catch (err) {
        sink.problem(rel, `not a valid collection folder (${(err as Error).message}): the service passes it over, and its ${dayFiles} day files are not served`);
      }
    },
    undecodable(dir) {
      sink.note(path.relative(dataDir, dir), 'the folder name is not an encoded scope name; the service passes it over');
    },
  });
  return folders;
}

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

// The thread entry: runs once with the input it was given.
if (parentPort !== null && (workerData as { checkWorker?: unknown } | null)?.checkWorker === true) {
  const port = parentPort;
  const input = (workerData as { input: CheckWorkerInput }).input;
  checkTimeSeries(input.dataDir, input.serviceRunning, (message) => port.postMessage(message));
}
