/**
 * What one new series costs as a collection's tag dictionary grows (issue 34), in process, on
 * the storage worker's file engine alone (no server, no HTTP):
 *
 *   node --expose-gc dist/bench/dictionary-growth.js [--sizes 10000,100000,200000] [--samples 200] [--labels]
 *
 * For each size N: the collection is grown to N series (10,000 new series a request), then
 * `--samples` writes each add one series with one point, timed: with `fsync` durability (append,
 * then the group commit the write path runs before it acknowledges) and with `os` durability
 * (write_fast), and 20 `fsync` writes a group commit (as the write loop commits concurrent
 * writers). Beside them, a rewrite of the whole meta.json at N (what every new series cost
 * before the tag log). Memory: the worker heap (after a full GC) and the process RSS per series
 * over the growth from 0 to the largest N. `--labels` gives every series a label set of four
 * (as line protocol does).
 */

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { PointBatch, SeriesLabels } from '../native-free-codecs/write-body.js';
import { ShardStore } from '../workers/shard-store.js';
import type { CollectionScope } from '../shared/scope.js';

const { values } = parseArgs({ options: { sizes: { type: 'string' }, samples: { type: 'string' }, labels: { type: 'boolean' } } });
const SIZES = (values.sizes ?? '10000,100000,200000').split(',').map(Number);
const SAMPLES = Number(values.samples ?? 200);
const LABELS = values.labels === true;
const SCOPE: CollectionScope = { organization: 'bench', site: 'plant-1', unit: 'dictionary', grid: 'main' };
const ID = 'bench/plant-1/dictionary/main';
const T0 = Date.UTC(2026, 0, 1);
const gc = (globalThis as { gc?: () => void }).gc;

function nameOf(k: number): string {
  return LABELS ? `meter,area=a${String(k % 100).padStart(2, '0')},loop=L${k}.v` : `plant.area-${String(k % 100).padStart(2, '0')}.loop-${k}.pv`;
}

function labelsOf(k: number): SeriesLabels {
  return { measurement: 'meter', field: 'v', area: `a${String(k % 100).padStart(2, '0')}`, loop: `L${k}` };
}

function batchOf(from: number, to: number, ts: number): PointBatch {
  const tagNames: string[] = [];
  const labels: Array<SeriesLabels | null> = [];
  for (let k = from; k < to; k++) {
    tagNames.push(nameOf(k));
    labels.push(LABELS ? labelsOf(k) : null);
  }
  const n = to - from;
  return {
    scope: SCOPE,
    tagNames,
    ...(LABELS ? { labels } : {}),
    tagStart: Uint32Array.from({ length: n + 1 }, (_, i) => i),
    timestamps: new Float64Array(n).fill(ts),
    values: Float64Array.from({ length: n }, (_, i) => i),
    pointCount: n,
  };
}

function heapBytes(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dictionary-growth-'));
const rows: string[][] = [];
try {
  const store = new ShardStore({ dataDir, owns: () => true, maxSeriesPerCollection: 10_000_000 });
  store.recover();
  store.createCollection(SCOPE);
  store.append(ID, batchOf(0, 10, T0), 'fsync'); // warm the paths before memory is taken
  store.syncPending();
  const heap0 = heapBytes();
  const rss0 = process.memoryUsage().rss;
  let count = 10;
  let memory = '';
  for (const size of SIZES) {
    while (count < size) {
      const to = Math.min(size, count + 10_000);
      store.append(ID, batchOf(count, to, T0), 'os');
      count = to;
    }
    if (size === SIZES[SIZES.length - 1]) {
      const heap = heapBytes() - heap0;
      const rss = process.memoryUsage().rss - rss0;
      memory = `heap ${Math.round(heap / (count - 10))} B/series, RSS ${Math.round(rss / (count - 10))} B/series over ${count - 10} series${gc ? '' : ' (no --expose-gc: heap not collected first)'}`;
    }
    const timesOf = (durability: 'fsync' | 'os'): number[] => {
      const times: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const started = performance.now();
        store.append(ID, batchOf(count, count + 1, T0 + 1000), durability);
        if (durability === 'fsync') store.syncPending();
        times.push(performance.now() - started);
        count++;
      }
      return times;
    };
    const synced = timesOf('fsync');
    const unsynced = timesOf('os');
    // Under concurrent writers the write loop commits several writes at once: 20 a commit here.
    const grouped: number[] = [];
    for (let g = 0; g < SAMPLES / 20; g++) {
      const started = performance.now();
      for (let i = 0; i < 20; i++) store.append(ID, batchOf(count, ++count, T0 + 1500), 'fsync');
      store.syncPending();
      grouped.push((performance.now() - started) / 20);
    }
    // What each new series cost before the tag log: meta.json rewritten whole (write, fsync, rename).
    const compactTimes: number[] = [];
    for (let i = 0; i < 3; i++) {
      store.append(ID, batchOf(count, count + 1, T0 + 2000), 'os');
      count++;
      const started = performance.now();
      store.updateCollection(ID, { note: `rewrite ${i}` });
      compactTimes.push(performance.now() - started);
    }
    const meta = fs.statSync(path.join(dataDir, 'ts', 'bench', 'plant-1', 'dictionary', 'main', 'meta.json')).size;
    rows.push([size.toLocaleString('en'), median(synced).toFixed(2), Math.max(...synced).toFixed(2), median(unsynced).toFixed(3), median(grouped).toFixed(3), median(compactTimes).toFixed(1), (meta / 1e6).toFixed(1)]);
    process.stderr.write(`${size}: done\n`);
  }
  store.close();
  const header = ['existing series', 'new series, fsync write: median ms', 'max ms', 'new series, os write: median ms', 'fsync writes, 20 a group commit: median ms a series', 'meta.json rewrite (before the tag log): ms', 'meta.json MB'];
  console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log(`\n${LABELS ? 'with' : 'without'} labels: ${memory}`);
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
