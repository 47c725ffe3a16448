/**
 * Entry of a shard's compaction thread (started by CompactionThread, compaction-client.ts): turns
 * frozen day logs into a part, one request at a time. It reads only files the shard no longer
 * writes (frozen logs) and writes only a temporary file of a name the shard chose; the shard
 * moves it in place and retires the logs, so everything the shard's readers see still changes on
 * the shard's thread alone.
 */

import { parentPort } from 'node:worker_threads';
import { DayFileJob } from './day-compaction.js';
import { FrozenLogFile } from './day-file.js';
import { DayMerger } from './day-merge.js';
import type { CompactionReply, CompactionRequest } from './compaction-client.js';

const merger = new DayMerger();

parentPort!.on('message', (request: CompactionRequest) => {
  let reply: CompactionReply;
  const startedAt = performance.now();
  try {
    const logs = request.logs.map((log) => new FrozenLogFile(log.path, log.size, log.tagIds, log.points));
    const job = new DayFileJob(request.day, 'part', request.outputPath, [], logs, merger, { tmpPath: request.tmpPath, rename: false });
    const index = job.runAtOnce();
    reply = { id: request.id, ok: true, points: job.points, bytes: index.fileBytes, ms: Math.round(performance.now() - startedAt) };
  } catch (err) {
    reply = { id: request.id, ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort!.postMessage(reply);
});
