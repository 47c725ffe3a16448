// Issue 34, item 5: the tag dictionary's log joins the write's group commit. A write that adds
// series pays no fdatasync of its own (an 'os' write none at all), the tag log is synced before
// any day log whose blocks may name its series, a failed fdatasync of the log is repaired by a
// compaction before the next write, and the dictionary's memory per series stays small.

import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { PointBatch, SeriesLabels } from '../../native-free-codecs/write-body.js';
import { compileGlob } from '../../shared/glob.js';
import type { CollectionScope } from '../../shared/scope.js';
import { collectionDir } from '../../shared/scope-path.js';
import { ShardStore } from '../../workers/shard-store.js';
import { batchOf, freshStore, ID, reopenStore, SCOPE, T0 } from './dictionary-fixture.js';
import { TAG_LOG_FILE } from '../../workers/tag-log.js';

/** Room for every series the memory test makes. */
const MANY_SERIES = 10_000_000;
const fresh = () => freshStore('dictionary-commit-', MANY_SERIES);
const reopen = (dataDir: string) => reopenStore(dataDir, MANY_SERIES);


const names = (store: ShardStore) => store.listSeries([ID], compileGlob('*'), 10_000_000).series.map((s) => s.tag);

/** Records the file of every fdatasync (and fsync, in `fsyncs`) while `fail(name)` may make an fdatasync throw instead. */
const realFdatasync = fs.fdatasyncSync;
const realFsync = fs.fsyncSync;
let synced: string[] = [];
let fsyncs: string[] = [];
const fileOf = (fd: number) => path.basename(fs.readlinkSync(`/proc/self/fd/${fd}`));
function watchSyncs(fail: (name: string) => boolean = () => false): void {
  synced = [];
  fsyncs = [];
  fs.fdatasyncSync = (fd: number) => {
    const name = fileOf(fd);
    if (fail(name)) throw Object.assign(new Error(`EIO: i/o error, fdatasync`), { code: 'EIO', errno: -5, syscall: 'fdatasync' });
    synced.push(name);
    realFdatasync(fd);
  };
  fs.fsyncSync = (fd: number) => {
    fsyncs.push(fileOf(fd));
    synced.push(fileOf(fd));
    realFsync(fd);
  };
}
afterEach(() => {
  fs.fdatasyncSync = realFdatasync;
  fs.fsyncSync = realFsync;
});

describe('tag log in the group commit', () => {
  test("'os' writes that each add a series do no fdatasync; the next group commit syncs the log once", () => {
    const { dataDir, store } = fresh();
    store.append(ID, batchOf(['warm'], T0), 'fsync');
    store.syncPending();
    watchSyncs();
    for (let i = 0; i < 50; i++) store.append(ID, batchOf([`os-${i}`], T0 + i), 'os');
    assert.deepEqual(synced, [], 'no fdatasync or fsync for os writes, however many series they add');
    for (let i = 0; i < 20; i++) store.append(ID, batchOf([`fs-${i}`], T0 + i), 'fsync');
    store.syncPending();
    assert.deepEqual(synced, [TAG_LOG_FILE, 'active-20240601.log'], 'one fdatasync per file for 20 writes: the tag log first, then the day log');
    assert.deepEqual(fsyncs, []);
    store.close();
    const again = reopen(dataDir);
    assert.equal(names(again).length, 71);
    assert.deepEqual(again.lastValue(ID, 'fs-19'), [T0 + 19, 0]);
    again.close();
  });

  test('a failed fdatasync of the tag log fails the commit; the next write compacts the dictionary into meta.json', () => {
    const { dataDir, store, dir } = fresh();
    store.append(ID, batchOf(['a'], T0), 'fsync');
    store.syncPending();
    let failures = 1;
    watchSyncs((name) => name === TAG_LOG_FILE && failures-- > 0);
    store.append(ID, batchOf(['b', 'c'], T0 + 1), 'fsync');
    assert.throws(() => store.syncPending(), /EIO|i\/o error/i);
    // The kernel may have dropped b and c's records: meta.json gets them before the next block.
    store.append(ID, batchOf(['d'], T0 + 2), 'fsync');
    store.syncPending();
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as { tags: string[] };
    assert.deepEqual(meta.tags, ['a', 'b', 'c']);
    assert.match(fs.readFileSync(path.join(dir, TAG_LOG_FILE), 'utf8'), /^[0-9a-f]{8} \[3,"d",null\]\n$/);
    store.close();
    assert.deepEqual(names(reopen(dataDir)), ['a', 'b', 'c', 'd']);
  });

  test('sealing: the records of the ids a sealed file names are synced before it', () => {
    const { store } = fresh();
    watchSyncs();
    store.append(ID, batchOf(['x', 'y'], T0), 'os');
    store.seal({ now: T0 + 3 * 86_400_000, graceMs: 0, force: true });
    const sealedAt = synced.findIndex((name) => name.startsWith('sealed-') && name.endsWith('.tmp'));
    assert.ok(sealedAt > 0, `a sealed file was synced (${synced.join(', ')})`);
    assert.ok(synced.slice(0, sealedAt).includes(TAG_LOG_FILE), `tags.log synced before the sealed file (${synced.join(', ')})`);
    store.close();
  });
});

describe('memory per series', () => {
  /** Heap bytes per series of `count` new series, each with one point in today's day log, after full GCs. */
  function heapPerSeries(count: number, withLabels: boolean): number {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const { store } = fresh();
    const batch = (from: number, to: number) => {
      const tags: string[] = [];
      const labels: Array<SeriesLabels | null> = [];
      for (let k = from; k < to; k++) {
        tags.push(withLabels ? `meter,area=a${k % 100},loop=L${k}.v` : `plant.area-${k % 100}.loop-${k}.pv`);
        labels.push(withLabels ? { measurement: 'meter', field: 'v', area: `a${k % 100}`, loop: `L${k}` } : null);
      }
      return batchOf(tags, T0, withLabels ? labels : undefined);
    };
    store.append(ID, batch(0, 10), 'os');
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let from = 10; from < count + 10; from += 10_000) store.append(ID, batch(from, from + 10_000), 'os');
    gc();
    gc();
    const perSeries = (process.memoryUsage().heapUsed - before) / count;
    store.close();
    return perSeries;
  }

  // The names themselves take about 50 bytes here; the goal of issue 34 is under 200 bytes a series
  // all told (it was 448 without labels and 553 with, most of it an object per tag per day log).
  test('without labels: well under 300 bytes a series (dictionary, last values, day-log index)', () => {
    const bytes = heapPerSeries(100_000, false);
    assert.ok(bytes < 300, `${bytes.toFixed(0)} bytes per series`);
  });

  test('with a label set of four: under 350 bytes a series', () => {
    const bytes = heapPerSeries(100_000, true);
    assert.ok(bytes < 350, `${bytes.toFixed(0)} bytes per series`);
  });
});
