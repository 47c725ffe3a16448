// The storage worker's side of the monitor, on a real ShardStore: what a tick's sample reports
// (last value, extremes since the previous sample), and that a forgotten collection's writes
// are no longer looked at.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { PointBatch } from '../../native-free-codecs/write-body.js';
import { MONITOR_SAMPLE_STRIDE } from '../../shared/protocol.js';
import { MonitorWatch } from '../../workers/monitor-watch.js';
import { ShardStore } from '../../workers/shard-store.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'monitor-watch-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
const scope = { organization: 'acme', site: 'north', unit: 'b1', grid: 'main' };
const id = 'acme/north/b1/main';
const T0 = 1_800_000_000_000;

function batch(tag: string, points: Array<[number, number]>): PointBatch {
  return {
    scope,
    tagNames: [tag],
    tagStart: Uint32Array.from([0, points.length]),
    timestamps: Float64Array.from(points.map((p) => p[0])),
    values: Float64Array.from(points.map((p) => p[1])),
    pointCount: points.length,
  };
}

test('a sample gives the last value and the extremes written since the previous one, then resets them', () => {
  const store = new ShardStore({ dataDir, owns: () => true });
  store.recover();
  store.createCollection(scope, {});
  const watch = new MonitorWatch(store);
  const write = (points: Array<[number, number]>) => {
    const b = batch('TI-1', points);
    store.append(id, b, 'os');
    watch.observe(id, b);
  };
  write([[T0, 10]]);
  // First sample: the watch list arrives; the tag's index and its stored last value come back.
  const first = watch.sample([{ collectionId: id, version: 1, tags: ['TI-1', 'NEVER'] }])[0];
  assert.deepEqual(first.tagIndexes, [0, -1]);
  assert.deepEqual([first.values![0], first.values![1]], [T0, 10]);
  assert.ok(Number.isNaN(first.values![MONITOR_SAMPLE_STRIDE]), 'a tag never written has no last value');
  // A spike and its return between two samples: the extremes show it, the last value does not.
  write([[T0 + 1, 900], [T0 + 2, -5], [T0 + 3, 11]]);
  const second = watch.sample([{ collectionId: id, version: 1 }])[0];
  const v = second.values!;
  assert.deepEqual([v[0], v[1]], [T0 + 3, 11]);
  assert.deepEqual([v[2], v[3], v[4], v[5], v[6]], [T0 + 1, 900, T0 + 2, -5, 3]);
  const third = watch.sample([{ collectionId: id, version: 1 }])[0].values!;
  assert.ok(Number.isNaN(third[3]) && third[6] === 0, 'extremes reset after a sample');
  // A version the worker does not hold (it restarted): it asks for the list again.
  assert.equal(watch.sample([{ collectionId: id, version: 2 }])[0].resend, true);
  // Forgotten (empty list): writes are no longer tracked, and the next sample without a list asks for it.
  watch.sample([{ collectionId: id, version: 0, tags: [] }]);
  write([[T0 + 4, 5000]]);
  assert.equal(watch.sample([{ collectionId: id, version: 1 }])[0].resend, true);
  const again = watch.sample([{ collectionId: id, version: 3, tags: ['TI-1'] }])[0].values!;
  assert.equal(again[1], 5000, 'the stored last value is read again');
  assert.ok(Number.isNaN(again[3]), 'the write made while forgotten is not an extreme of this watch');
  // A collection that is gone says so.
  assert.equal(watch.sample([{ collectionId: 'acme/north/b1/nope', version: 1, tags: ['X'] }])[0].missing, true);
  store.close();
});
