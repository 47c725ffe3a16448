/**
 * What compacting day logs into parts costs and bounds (issue 34), in process, on the storage
 * worker's file engine alone (no server, no HTTP), on noisy analog values (a slow walk plus
 * noise at 2 decimals):
 *
 *   node dist/bench/day-compaction.js [--points 20000000] [--shapes 100x100,1x10000] [--modes thread,inline]
 *
 * A shape RxT is T tags with R consecutive points each per write (100x100: a collector sending
 * blocks; 1x10000: one reading of many sparse tags per write). For each, writes go to one day
 * with the default limits (storage.dayLogCompactBlocks, dayLogCompactBytes) until `--points`
 * points are stored, then a seal pass merges parts and `seal_now` seals the day. Each shape runs
 * in two modes: `thread` (the default: the write that passes a limit freezes the logs, and the
 * shard's compaction thread writes the part and merges parts) and `inline` (the shard's thread
 * compacts at once and merges in slices, as when the thread falls behind). The event loop gets
 * a turn after every write, as in the storage worker. Printed: write throughput and append
 * times (what a write waits for), compactions and their time, points and bytes per point of a
 * part, the most blocks the logs held (memory: 36 bytes each), the parts left after the merges,
 * and the seal of the day.
 */

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { PointBatch } from '../native-free-codecs/write-body.js';
import { ShardStore } from '../workers/shard-store.js';
import type { WorkerLog } from '../workers/worker-log.js';

const { values } = parseArgs({ options: { points: { type: 'string' }, shapes: { type: 'string' }, modes: { type: 'string' } } });
const TOTAL = Number(values.points ?? 20_000_000);
const SHAPES = (values.shapes ?? '100x100,1x10000').split(',').map((s) => s.split('x').map(Number) as [number, number]);
const MODES = (values.modes ?? 'thread,inline').split(',');
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const DAY0 = Date.UTC(2026, 10, 26);
const ID = 'bench/plant-1/compaction/main';

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

for (const [rows, tags] of SHAPES) for (const mode of MODES) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-compaction-'));
  const events: Array<Record<string, unknown>> = [];
  const keep = (o: object) => events.push(o as Record<string, unknown>);
  const log = { info: keep, warn: keep, error: keep, debug: () => {} } as unknown as WorkerLog;
  const store = new ShardStore({ dataDir, owns: () => true, log, compactionThread: mode === 'thread' });
  store.recover();
  store.createCollection({ organization: 'bench', site: 'plant-1', unit: 'compaction', grid: 'main' });
  const names = Array.from({ length: tags }, (_, i) => `tag-${i}`);
  const tagStart = Uint32Array.from({ length: tags + 1 }, (_, i) => i * rows);
  const walk = new Float64Array(tags).map(() => Math.random() * 100);
  const n = rows * tags;
  const ts = new Float64Array(n);
  const vs = new Float64Array(n);
  let t = DAY0;
  let written = 0;
  let mostBlocks = 0;
  const appendMs: number[] = [];
  const started = performance.now();
  let generating = 0;
  while (written < TOTAL) {
    const g = performance.now();
    for (let k = 0; k < tags; k++) {
      for (let r = 0; r < rows; r++) {
        walk[k] += (Math.random() - 0.5) * 0.05;
        ts[k * rows + r] = t + r * 100;
        vs[k * rows + r] = Math.round((walk[k]! + (Math.random() - 0.5) * 0.2) * 100) / 100;
      }
    }
    t += rows * 100;
    generating += performance.now() - g;
    const batch: PointBatch = { scope: {}, tagNames: names, tagStart, timestamps: ts, values: vs, pointCount: n };
    const a = performance.now();
    store.append(ID, batch, 'os');
    appendMs.push(performance.now() - a);
    written += n;
    mostBlocks = Math.max(mostBlocks, store.stats().logBlocks);
    await turn();
  }
  await store.compactionsSettled();
  const writeMs = performance.now() - started - generating;
  const compactions = events.filter((e) => e.event === 'day-compacted');
  const onThread = compactions.filter((e) => e.thread === true).length;
  const compactMs = compactions.map((e) => e.ms as number).sort((a, b) => a - b);
  const partPoints = compactions.reduce((s, e) => s + (e.points as number), 0);
  const partBytes = compactions.reduce((s, e) => s + (e.bytes as number), 0);
  const m = performance.now();
  while (store.seal({ now: DAY0 + 1000, graceMs: 0, force: false, budgetMs: 50 }).more) await turn();
  await store.compactionsSettled();
  const mergeMs = performance.now() - m;
  const merges = events.filter((e) => e.event === 'parts-merged').length;
  const partsLeft = store.stats().parts;
  const s = performance.now();
  while (store.seal({ now: DAY0 + 2 * 86_400_000, graceMs: 0, force: true, budgetMs: 50 }).more) await turn();
  const sealMs = performance.now() - s;
  const sealed = events.find((e) => e.event === 'day-sealed');
  appendMs.sort((a, b) => a - b);
  console.log(`\n${rows}x${tags} (${rows} points of ${tags} tags a write), ${written.toLocaleString('en')} points, compaction ${mode === 'thread' ? 'on the compaction thread' : 'on the shard\'s thread'}:`);
  console.log(`  writes: ${(written / writeMs / 1000).toFixed(2)} M points/s on the engine, append p50 ${percentile(appendMs, 0.5).toFixed(1)} ms, p99 ${percentile(appendMs, 0.99).toFixed(1)} ms, max ${appendMs.at(-1)!.toFixed(0)} ms`);
  console.log(`  compactions: ${compactions.length} (${onThread} on the thread), ${Math.round(partPoints / Math.max(1, compactions.length)).toLocaleString('en')} points each, ms p50 ${percentile(compactMs, 0.5)} max ${compactMs.at(-1)}; parts ${(partBytes / partPoints).toFixed(2)} B/point`);
  console.log(`  logs held at most ${mostBlocks.toLocaleString('en')} blocks (${((mostBlocks * 36) / 2 ** 20).toFixed(1)} MiB of index)`);
  console.log(`  merge pass: ${merges} merges during the writes and after, ${partsLeft} parts left, last pass ${mergeMs.toFixed(0)} ms`);
  console.log(`  seal: ${sealMs.toFixed(0)} ms, ${((sealed?.bytes as number) / written).toFixed(3)} B/point sealed`);
  store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
