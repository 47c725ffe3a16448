// The file engine's side of issue 34 item 4: the distinct days of a batch, the unsealed-days
// check (days with an open log count once), new day logs made durable with one folder fsync
// at group commit, and seals in slices that leave the rest for the next call.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PointBatch } from '../../native-free-codecs/write-body.js';
import { batchDays } from '../../workers/day-bounds.js';
import { ShardStore } from '../../workers/shard-store.js';
import { DAY_MS } from '../../workers/utc-day.js';

const roots: string[] = [];
after(() => {
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true });
});

const DAY0 = Date.UTC(2024, 5, 1);
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const ID = 'acme/north/boiler-1/main';

/** One tag with a point on each of `days` (day numbers after DAY0), at noon. */
function batchOn(days: number[]): PointBatch {
  const timestamps = Float64Array.from(days, (d) => DAY0 + d * DAY_MS + 12 * 3_600_000);
  return { scope: {}, tagNames: ['t'], tagStart: Uint32Array.of(0, days.length), timestamps, values: new Float64Array(days.length), pointCount: days.length };
}

function store(maxUnsealedDaysPerCollection: number): { store: ShardStore; dataDir: string } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'day-bounds-'));
  roots.push(dataDir);
  const s = new ShardStore({ dataDir, owns: () => true, maxUnsealedDaysPerCollection });
  s.recover();
  s.createCollection(SCOPE);
  return { store: s, dataDir };
}

test('batchDays: distinct UTC days, counted no further than one past the cap', () => {
  assert.deepEqual([...batchDays(batchOn([0, 0, 1, 0, 2]), 10)].sort(), [0, 1, 2].map((d) => d + DAY0 / DAY_MS));
  assert.equal(batchDays(batchOn(Array.from({ length: 1000 }, (_, i) => i)), 5).size, 6);
});

test('unsealedDaysProblem counts only days without an open log, and names the setting', () => {
  const { store: s } = store(4);
  s.append(ID, batchOn([0, 1, 2]), 'os');
  const day = (d: number) => DAY0 / DAY_MS + d;
  assert.equal(s.unsealedDaysProblem(ID, new Set([day(0), day(1), day(2), day(3)])), null, 'three are open already');
  assert.match(s.unsealedDaysProblem(ID, new Set([day(3), day(4)])) ?? '', /would have 5 unsealed day files, more than storage\.maxUnsealedDaysPerCollection \(4\)/);
  // Buffered days count too, once.
  assert.equal(s.unsealedDaysProblem(ID, new Set([day(3)]), new Set([day(3), day(0)])), null);
  assert.notEqual(s.unsealedDaysProblem(ID, new Set([day(3)]), new Set([day(4)])), null);
  s.close();
});

test('a write of many new days is durable after one group commit, and reads back after a restart', () => {
  const { store: s, dataDir } = store(1000);
  s.append(ID, batchOn(Array.from({ length: 50 }, (_, i) => i)), 'fsync');
  s.syncPending();
  s.close();
  const again = new ShardStore({ dataDir, owns: () => true });
  assert.equal(again.recover().blocks, 50);
  let points = 0;
  again.scanTag(ID, 't', DAY0, DAY0 + 60 * DAY_MS, (_ts, _v, n) => (points += n));
  assert.equal(points, 50);
  again.close();
});

test('seal with a budget: at least one day a call, `more` until every due day is sealed', () => {
  const { store: s } = store(1000);
  s.append(ID, batchOn([0, 1, 2, 3, 4]), 'os');
  const now = DAY0 + 10 * DAY_MS;
  let calls = 0;
  let sealed = 0;
  for (let more = true; more; calls++) {
    const r = s.seal({ now, graceMs: 0, force: false, budgetMs: 0 });
    sealed += r.sealedDays;
    more = r.more;
  }
  assert.equal(sealed, 5);
  assert.ok(calls >= 5, `${calls} calls`);
  assert.deepEqual(s.seal({ now, graceMs: 0, force: false }), { sealedDays: 0, more: false });
  s.close();
});
