/**
 * Entry of a shard's compaction thread (started by CompactionThread, compaction-client.ts): writes
 * parts from frozen day logs (compactions) and from parts of similar size (merges). It reads only
 * files the shard no longer changes and writes only a temporary file of a name the shard chose;
 * the shard moves it in place and retires the inputs, so everything the shard's readers see still
 * changes on the shard's thread alone.
 *
 * Compactions go first: a merge (of up to eight parts, seconds for the largest tiers) runs in
 * slices, and compactions asked for meanwhile run between two slices, so a merge never holds
 * back the compactions that bound the shard's memory.
 */

import { parentPort } from 'node:worker_threads';
import { DayFileJob } from './day-compaction.js';
import { FrozenLogFile } from './day-file.js';
import { DayMerger } from './day-merge.js';
import { SealedIndex } from './sealed-file.js';
import { MERGE_CANCELLED, type CancelRequest, type CompactionReply, type CompactionRequest, threadMemoryNow } from './compaction-client.js';

/** Longest one merge slice runs before waiting compactions get the thread. */
const MERGE_SLICE_MS = 50;

const merger = new DayMerger();
const compactions: CompactionRequest[] = [];
const merges: CompactionRequest[] = [];
let merging: { request: CompactionRequest; job: DayFileJob; startedAt: number } | null = null;
let scheduled = false;

parentPort!.on('message', (message: CompactionRequest | CancelRequest) => {
  if ('cancel' in message) {
    cancelMerge(message.cancel);
    return;
  }
  (message.logs.length > 0 ? compactions : merges).push(message);
  schedule();
});

/** A merge the shard no longer wants (its day was sealed, its collection closed): dropped from the queue, or stopped between two slices. */
function cancelMerge(id: number): void {
  const queued = merges.findIndex((request) => request.id === id);
  if (queued >= 0) {
    merges.splice(queued, 1);
  } else if (merging?.request.id === id) {
    merging.job.abort();
    merging = null;
  } else {
    return; // answered already, or a compaction
  }
  parentPort!.postMessage({ id, ok: false, error: MERGE_CANCELLED, memory: threadMemoryNow() } satisfies CompactionReply);
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(work);
}

function work(): void {
  scheduled = false;
  for (let request = compactions.shift(); request !== undefined; request = compactions.shift()) {
    const startedAt = performance.now();
    answer(request, startedAt, () => {
      const job = newJob(request);
      const index = job.runAtOnce();
      return { points: job.points, bytes: index.fileBytes };
    });
  }
  if (merging === null) {
    const request = merges.shift();
    if (request === undefined) return;
    const startedAt = performance.now();
    try {
      merging = { request, job: newJob(request), startedAt };
    } catch (err) {
      answer(request, startedAt, () => {
        throw err;
      });
      schedule();
      return;
    }
  }
  const { request, job, startedAt } = merging;
  answer(request, startedAt, () => {
    try {
      if (!job.step(performance.now() + MERGE_SLICE_MS)) return null;
      merging = null;
      const index = job.finish();
      return { points: job.points, bytes: index.fileBytes };
    } catch (err) {
      merging = null;
      job.abort();
      throw err;
    }
  });
  schedule();
}

function newJob(request: CompactionRequest): DayFileJob {
  const inputs = request.inputs.map((file) => SealedIndex.read(file, request.day));
  const logs = request.logs.map((log) => new FrozenLogFile(log.path, log.size, log.tagIds, log.points));
  return new DayFileJob(request.day, 'part', request.outputPath, inputs, logs, merger, { tmpPath: request.tmpPath, rename: false });
}

/** Runs a step of the request; a result (or a failure) is sent to the shard, null means not done yet. */
function answer(request: CompactionRequest, startedAt: number, run: () => { points: number; bytes: number } | null): void {
  let reply: CompactionReply;
  try {
    const result = run();
    if (result === null) return;
    reply = { id: request.id, ok: true, ...result, ms: Math.round(performance.now() - startedAt), memory: threadMemoryNow() };
  } catch (err) {
    reply = { id: request.id, ok: false, error: err instanceof Error ? err.message : String(err), memory: threadMemoryNow() };
  }
  parentPort!.postMessage(reply);
}
