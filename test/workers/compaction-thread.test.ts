// The compaction thread on its own: a merge of parts written here, answered with the part's
// points and bytes under the temporary name asked for; and a merge cancelled while the thread
// works on it (a seal took its day), answered as cancelled with no file left. Every answer
// carries the thread's own memory, which the shard reports in /metrics.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CompactionThread, MERGE_CANCELLED } from '../../workers/compaction-client.js';
import { SealedFileWriter, SealedIndex } from '../../workers/sealed-file.js';
import { dayOf } from '../../workers/utc-day.js';

const DAY0 = Date.UTC(2024, 5, 1);
const DAY = dayOf(DAY0);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compaction-thread-'));
const thread = new CompactionThread();
after(() => {
  thread.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Eight parts of `tags` tags × `points` points each (noisy values at 2 decimals), oldest first. */
function writeParts(name: string, tags: number, points: number): string[] {
  const files: string[] = [];
  for (let p = 0; p < 8; p++) {
    const file = path.join(dir, `${name}-${p}.hsd`);
    const writer = new SealedFileWriter(file, DAY, undefined, 'fast');
    const ts = new Float64Array(points);
    const values = new Float64Array(points);
    for (let tag = 0; tag < tags; tag++) {
      for (let i = 0; i < points; i++) {
        ts[i] = DAY0 + (p * points + i) * 10;
        values[i] = Math.round((tag + Math.sin(i / 50) * 10 + ((i * 7919) % 13) / 10) * 100) / 100;
      }
      writer.addTag(tag, ts, values, points);
    }
    writer.finish();
    files.push(file);
  }
  return files;
}

function merge(inputs: string[], output: string): { tmpPath: string; answer: Promise<{ ok: boolean; error?: string; points?: number }>; id: number } {
  const tmpPath = `${output}.1.tmp`;
  let id = 0;
  const answer = new Promise<{ ok: boolean; error?: string; points?: number }>((resolve) => {
    id = thread.submit({ day: DAY, outputPath: output, tmpPath, inputs, logs: [] }, resolve);
  });
  return { tmpPath, answer, id };
}

test('a merge of eight parts is written under the temporary name asked for, with every point', async () => {
  assert.deepEqual(thread.memory, { heapUsedBytes: 0, arrayBufferBytes: 0 }, 'no thread yet: nothing held');
  const inputs = writeParts('small', 20, 500);
  const output = path.join(dir, 'merged-small.hsd');
  const { tmpPath, answer } = merge(inputs, output);
  const outcome = await answer;
  assert.equal(outcome.ok, true, JSON.stringify(outcome));
  // The answer carries the thread's own memory (for /metrics): a heap of its own, and the buffers the merge read.
  assert.ok(thread.memory.heapUsedBytes > 1 << 20, `heap ${thread.memory.heapUsedBytes}`);
  assert.ok(thread.memory.arrayBufferBytes > 0, `ArrayBuffers ${thread.memory.arrayBufferBytes}`);
  assert.equal(outcome.points, 8 * 20 * 500);
  assert.ok(!fs.existsSync(output), 'the shard renames it, not the thread');
  const index = SealedIndex.read(tmpPath, DAY);
  let points = 0;
  for (let e = 0; e < index.entryCount; e++) points += index.counts[e]!;
  assert.equal(points, 8 * 20 * 500);
});

test('a merge cancelled while the thread works on it is answered as cancelled, and leaves no file', async () => {
  // Large enough for several 50 ms slices, so the cancel finds it queued or between two slices.
  const inputs = writeParts('large', 40, 20_000);
  const output = path.join(dir, 'merged-large.hsd');
  const { tmpPath, answer, id } = merge(inputs, output);
  thread.cancel(id);
  const outcome = await answer;
  assert.deepEqual(outcome, { ok: false, error: MERGE_CANCELLED });
  await thread.settled();
  assert.ok(!fs.existsSync(tmpPath), 'the temporary file is removed');
  assert.ok(!fs.existsSync(output));
  // The thread takes the next request as usual.
  const again = merge(inputs.slice(0, 8), path.join(dir, 'merged-again.hsd'));
  assert.equal((await again.answer).ok, true);
});
