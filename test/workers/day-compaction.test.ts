// Compaction of a day's logs into parts, merges of parts and seals of days with parts, on real
// files: whatever the store did with a day (compacted, merged, sealed in slices, reopened, or
// cut short by a crash between its steps), every query answers what a plain model of "the later
// write wins" answers, and the logs' memory stays within storage.dayLogCompactBlocks.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PointBatch } from '../../native-free-codecs/write-body.js';
import type { CollectionScope } from '../../shared/scope.js';
import { collectionDir } from '../../shared/scope-path.js';
import { ShardStore, type ShardStoreOptions } from '../../workers/shard-store.js';
import { partsToMerge, PARTS_PER_MERGE } from '../../workers/day-compaction.js';
import { DAY_MS } from '../../workers/utc-day.js';
import { prng as makeRandom } from '../support/prng.js';

const roots: string[] = [];
after(() => {
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true });
});

const DAY0 = Date.UTC(2024, 5, 1);
const SCOPE: CollectionScope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const ID = 'acme/north/boiler-1/main';
const TAGS = Array.from({ length: 40 }, (_, i) => `t${i}`);

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'day-compaction-'));
  roots.push(dir);
  return dir;
}

/**
 * Small limits, compaction on the shard's thread at once (what the store falls back to when its
 * compaction thread falls behind): each step below happens in a known order. The thread's own
 * path is tested at the end of this file.
 */
const SMALL: Partial<ShardStoreOptions> = { dayLogCompactBlocks: 1024, dayLogCompactBytes: 1 << 30, compactionThread: false };
/** The same limits, compaction on the shard's compaction thread (the service's default). */
const THREADED: Partial<ShardStoreOptions> = { ...SMALL, compactionThread: true };

function openStore(dataDir: string, opts: Partial<ShardStoreOptions> = SMALL): ShardStore {
  const store = new ShardStore({ dataDir, owns: () => true, ...opts });
  store.recover();
  return store;
}

/** The model: per tag, timestamp -> value, the later write winning. */
type Model = Map<string, Map<number, number>>;

/**
 * One write of a few points for a few tags, as collectors send them; a fifth of the points
 * rewrite a timestamp written before (with a new value), so "later write wins" is tested across
 * logs, parts and the sealed file.
 */
function writeSome(store: ShardStore, model: Model, random: () => number, day = DAY0): void {
  const tagNames: string[] = [];
  const tagStart: number[] = [0];
  const ts: number[] = [];
  const values: number[] = [];
  for (const tag of TAGS) {
    if (random() < 0.6) continue;
    tagNames.push(tag);
    const points = 1 + Math.floor(random() * 3);
    const known = model.get(tag) ?? new Map<number, number>();
    model.set(tag, known);
    for (let p = 0; p < points; p++) {
      const old = [...known.keys()];
      const t = old.length > 0 && random() < 0.2 ? old[Math.floor(random() * old.length)]! : day + Math.floor(random() * DAY_MS);
      const v = Math.round(random() * 1e6) / 100;
      ts.push(t);
      values.push(v);
      known.set(t, v);
    }
    tagStart.push(ts.length);
  }
  if (tagNames.length === 0) return;
  const batch: PointBatch = { scope: {}, tagNames, tagStart: Uint32Array.from(tagStart), timestamps: Float64Array.from(ts), values: Float64Array.from(values), pointCount: ts.length };
  store.append(ID, batch, 'fsync');
  store.syncPending();
}

function assertMatches(store: ShardStore, model: Model, when: string): void {
  for (const tag of TAGS) {
    const expected = [...(model.get(tag) ?? new Map<number, number>()).entries()].sort((a, b) => a[0] - b[0]);
    const got: [number, number][] = [];
    store.scanTag(ID, tag, 0, 2 ** 53 - 1, (ts, values, count) => {
      for (let i = 0; i < count; i++) got.push([ts[i]!, values[i]!]);
    });
    assert.deepEqual(got, expected, `${when}: tag ${tag}`);
    const last = expected.length === 0 ? null : expected.reduce((a, b) => (b[0] >= a[0] ? b : a));
    assert.deepEqual(store.lastValue(ID, tag), last, `${when}: last value of ${tag}`);
  }
}

function filesOf(dataDir: string): string[] {
  return fs.readdirSync(collectionDir(dataDir, SCOPE)).sort();
}

const parts = (dataDir: string) => filesOf(dataDir).filter((n) => /^part-\d{8}-\d{8}\.hsd$/.test(n));
/** The day logs, parts and sealed files of the collection. */
const dayFiles = (dataDir: string) => filesOf(dataDir).filter((n) => /^(active|late|sealed|part)-/.test(n));

/** A new data dir with the collection in a store, an empty model and the random source of `seed`. */
function newCollection(seed: number, opts?: Partial<ShardStoreOptions>): { dataDir: string; store: ShardStore; model: Model; random: () => number } {
  const dataDir = tempDir();
  const store = openStore(dataDir, opts);
  store.createCollection(SCOPE);
  return { dataDir, store, model: new Map(), random: makeRandom(seed) };
}

describe('day logs compacted into parts', () => {
  test('logs that pass dayLogCompactBlocks become parts; memory stays bounded and every answer stays the same, also after a restart', () => {
    let { dataDir, store, model, random } = newCollection(34);
    let mostBlocks = 0;
    for (let w = 0; w < 600; w++) {
      writeSome(store, model, random);
      mostBlocks = Math.max(mostBlocks, store.stats().logBlocks);
    }
    assert.ok(store.compactions >= 5, `compactions: ${store.compactions}`);
    // A write adds at most 40 blocks after the limit was checked.
    assert.ok(mostBlocks < 1024 + TAGS.length, `the logs held ${mostBlocks} blocks`);
    assert.ok(parts(dataDir).length >= 5, filesOf(dataDir).join(' '));
    assertMatches(store, model, 'with parts and a log');
    store.close();

    store = openStore(dataDir);
    assertMatches(store, model, 'reopened');
    store.close();
  });

  test('parts of similar size are merged by a seal pass before the day ends; the merge keeps the newest part\'s name', () => {
    const { dataDir, store, model, random } = newCollection(7);
    while (store.compactions < PARTS_PER_MERGE + 1) writeSome(store, model, random);
    const before = parts(dataDir);
    assert.ok(before.length >= PARTS_PER_MERGE);
    // The day has not ended: nothing is due for sealing, but the parts are merged.
    const pass = store.seal({ now: DAY0 + 1000, graceMs: 0, force: false });
    assert.equal(pass.sealedDays, 0);
    const after = parts(dataDir);
    assert.ok(after.length < before.length, `${before.length} parts before, ${after.length} after`);
    assert.ok(after.includes(before[before.length - 1]!), 'the newest part name stays');
    assert.ok(!filesOf(dataDir).some((n) => n.startsWith('sealed-')));
    assertMatches(store, model, 'after the merge');
    store.close();
  });

  test('the day-end seal merges sealed file, parts and logs into the one sealed file', () => {
    let { dataDir, store, model, random } = newCollection(11);
    for (let w = 0; w < 300; w++) writeSome(store, model, random);
    assert.ok(parts(dataDir).length > 0);
    store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true });
    assert.deepEqual(dayFiles(dataDir), ['sealed-20240601.hsd']);
    assertMatches(store, model, 'sealed');
    // Late points after the seal: a late log, then (past the limit) parts again, then a second seal.
    for (let w = 0; w < 300; w++) writeSome(store, model, random);
    assert.ok(parts(dataDir).length > 0, 'late points were compacted into parts');
    assertMatches(store, model, 'sealed day with late parts');
    store.close();
    store = openStore(dataDir);
    assertMatches(store, model, 'sealed day with late parts, reopened');
    store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true });
    assert.deepEqual(dayFiles(dataDir), ['sealed-20240601.hsd']);
    assertMatches(store, model, 'sealed again');
    store.close();
  });

  test('a large seal runs in slices while writes and queries go on between them', () => {
    const { dataDir, store, model, random } = newCollection(5, { ...SMALL, sealAtOncePoints: 100 });
    for (let w = 0; w < 400; w++) writeSome(store, model, random);
    let slices = 0;
    const sealedThisPass = new Set<string>();
    for (;;) {
      const pass = store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true, budgetMs: 0, sealedThisPass });
      slices++;
      if (!pass.more) break;
      // Between slices: new points for the day being sealed, and queries of it.
      writeSome(store, model, random);
      assertMatches(store, model, `between slices (${slices})`);
    }
    assert.ok(slices > 3, `sealed in ${slices} slices`);
    assertMatches(store, model, 'after the sliced seal');
    store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true });
    assert.deepEqual(dayFiles(dataDir), ['sealed-20240601.hsd']);
    assertMatches(store, model, 'all sealed');
    store.close();
  });

  test('closing the collection in the middle of a sliced job leaves the files it had: nothing lost, the temporary file gone at open', () => {
    let { dataDir, store, model, random } = newCollection(9, { ...SMALL, sealAtOncePoints: 100 });
    for (let w = 0; w < 400; w++) writeSome(store, model, random);
    assert.equal(store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true, budgetMs: 0 }).more, true);
    store.close();
    store = openStore(dataDir);
    assert.ok(!filesOf(dataDir).some((n) => n.endsWith('.tmp')));
    assertMatches(store, model, 'reopened after an interrupted job');
    store.close();
  });

  test('a crash between a merge\'s rename and its last delete leaves older inputs beside the merged part: answers unchanged', () => {
    let { dataDir, store, model, random } = newCollection(3);
    while (store.compactions < PARTS_PER_MERGE) writeSome(store, model, random);
    const inputs = parts(dataDir);
    const dir = collectionDir(dataDir, SCOPE);
    // Keep copies of the older inputs, as if the deletes after the rename never happened.
    const saved = inputs.slice(0, -1).map((name) => [name, fs.readFileSync(path.join(dir, name))] as const);
    store.seal({ now: DAY0 + 1000, graceMs: 0, force: false });
    assert.ok(parts(dataDir).length < inputs.length);
    store.close();
    // The deletes go oldest first: a crash leaves the newest of the older inputs.
    for (const [name, bytes] of saved.slice(saved.length - 3)) fs.writeFileSync(path.join(dir, name), bytes);
    store = openStore(dataDir);
    assertMatches(store, model, 'stale parts beside the merged one');
    store.close();
  });

  test('a crash between a compaction\'s rename and the log\'s delete leaves the log beside its part: answers unchanged', () => {
    const big = { dayLogCompactBlocks: 1 << 20, dayLogCompactBytes: 1 << 30, sealAtOncePoints: -1, compactionThread: false };
    let { dataDir, store, model, random } = newCollection(21, big);
    for (let w = 0; w < 100; w++) writeSome(store, model, random);
    const dir = collectionDir(dataDir, SCOPE);
    const logName = filesOf(dataDir).find((n) => n.startsWith('active-'))!;
    const log = fs.readFileSync(path.join(dir, logName));
    // A seal of a large day compacts its logs into a part first, then merges in slices: stop it
    // after the compaction, and put the log back as a crash before its delete would have left it.
    assert.equal(store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true, budgetMs: 0 }).more, true);
    assert.equal(parts(dataDir).length, 1);
    assert.ok(!fs.existsSync(path.join(dir, logName)));
    store.close();
    fs.writeFileSync(path.join(dir, logName), log);
    store = openStore(dataDir, big);
    assertMatches(store, model, 'log and its part');
    for (let w = 0; w < 50; w++) writeSome(store, model, random);
    assertMatches(store, model, 'log and its part, written to');
    store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true });
    assert.deepEqual(dayFiles(dataDir), ['sealed-20240601.hsd']);
    assertMatches(store, model, 'sealed');
    store.close();
  });

  test('parts are chosen for a merge from the newest, by size tier', () => {
    const part = (generation: number, bytes: number) => ({ generation, path: `p${generation}`, bytes });
    assert.equal(partsToMerge([1, 2, 3].map((g) => part(g, 1000))), null);
    const small = Array.from({ length: PARTS_PER_MERGE }, (_, i) => part(i + 2, 10_000));
    assert.deepEqual(partsToMerge([part(1, 1 << 30), ...small])?.map((p) => p.generation), small.map((p) => p.generation));
    // Seven small ones after a big one wait for the eighth.
    assert.equal(partsToMerge([part(1, 1 << 30), ...small.slice(1)]), null);
    // Eight parts of a middle tier merge with the small ones after them, not with the big one.
    const middle = Array.from({ length: PARTS_PER_MERGE }, (_, i) => part(i + 2, 1 << 20));
    const tail = [part(20, 10_000), part(21, 10_000)];
    assert.deepEqual(partsToMerge([part(1, 1 << 30), ...middle, ...tail])?.map((p) => p.generation), [...middle, ...tail].map((p) => p.generation));
  });
});

/** Frozen day logs: `active-YYYYMMDD-GGGGGGGG.log` (or late-), waiting for the compaction thread. */
const FROZEN = /^(active|late)-\d{8}-\d{8}\.log$/;
const frozen = (dataDir: string) => filesOf(dataDir).filter((n) => FROZEN.test(n));
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('day logs compacted on the compaction thread', () => {
  test('writes go on while frozen logs are compacted; answers match at every step, and after a restart', async () => {
    let { dataDir, store, model, random } = newCollection(41, THREADED);
    let sawFrozen = false;
    let mostBlocks = 0;
    for (let w = 0; w < 800; w++) {
      writeSome(store, model, random);
      sawFrozen ||= frozen(dataDir).length > 0;
      mostBlocks = Math.max(mostBlocks, store.stats().logBlocks);
      // Queries between writes read whatever the day is made of then: parts, frozen logs, logs.
      if (w % 50 === 0) assertMatches(store, model, `write ${w}`);
      if (w % 10 === 0) await turn();
    }
    assert.ok(sawFrozen, 'a write froze the day\'s logs (renamed for the thread) instead of compacting them itself');
    await store.compactionsSettled();
    assert.ok(store.compactions >= 5, `compactions: ${store.compactions}`);
    assert.deepEqual(frozen(dataDir), [], 'every frozen log became a part');
    assert.ok(!filesOf(dataDir).some((n) => n.endsWith('.tmp')), filesOf(dataDir).join(' '));
    assert.ok(parts(dataDir).length >= 5, filesOf(dataDir).join(' '));
    // Writable logs stay under the limit; frozen ones wait at most a few compactions long.
    assert.ok(mostBlocks < 6 * (1024 + TAGS.length), `the logs held ${mostBlocks} blocks`);
    assertMatches(store, model, 'settled');
    store.close();
    store = openStore(dataDir, THREADED);
    assertMatches(store, model, 'reopened');
    store.close();
  });

  test('frozen logs a crash left without their part are compacted again at open; with their part beside them they are removed', async () => {
    let { dataDir, store, model, random } = newCollection(43, THREADED);
    const dir = collectionDir(dataDir, SCOPE);
    // Writes until a compaction is in flight; copy its frozen logs as a crash would leave them.
    let copies: [string, Buffer][] = [];
    for (let w = 0; w < 2000 && copies.length === 0; w++) {
      writeSome(store, model, random);
      copies = frozen(dataDir).map((name) => [name, fs.readFileSync(path.join(dir, name))]);
    }
    assert.ok(copies.length > 0, 'a compaction was in flight');
    await store.compactionsSettled();
    const partOf = (name: string) => `part-20240601-${name.slice(-12, -4)}.hsd`;
    assert.ok(fs.existsSync(path.join(dir, partOf(copies[0]![0]))), 'the frozen logs became the part of their generation');
    store.close();

    // 1. Part and frozen logs both there (a crash between the part's rename and the logs' delete).
    for (const [name, bytes] of copies) fs.writeFileSync(path.join(dir, name), bytes);
    store = openStore(dataDir, THREADED);
    assert.deepEqual(frozen(dataDir), [], 'stale frozen logs are removed at open');
    assertMatches(store, model, 'part beside its frozen logs');
    store.close();

    // 2. Frozen logs and a half-written part (a crash while the thread wrote it).
    const part = partOf(copies[0]![0]);
    const partBytes = fs.readFileSync(path.join(dir, part));
    fs.rmSync(path.join(dir, part));
    fs.writeFileSync(path.join(dir, `${part}.7.tmp`), partBytes.subarray(0, partBytes.length >> 1));
    for (const [name, bytes] of copies) fs.writeFileSync(path.join(dir, name), bytes);
    store = openStore(dataDir, THREADED);
    assertMatches(store, model, 'frozen logs without their part, before the thread answered');
    await store.compactionsSettled();
    assert.deepEqual(frozen(dataDir), []);
    assert.ok(fs.existsSync(path.join(dir, part)), 'the part was written again');
    assert.ok(!filesOf(dataDir).some((n) => n.endsWith('.tmp')), filesOf(dataDir).join(' '));
    assertMatches(store, model, 'frozen logs compacted again');
    for (let w = 0; w < 100; w++) writeSome(store, model, random);
    store.close();
    store = openStore(dataDir, THREADED);
    assertMatches(store, model, 'written to and reopened');
    store.close();
  });

  test('a seal or a close while a compaction is in flight takes the frozen logs with it; the thread\'s late answer is dropped', async () => {
    let { dataDir, store, model, random } = newCollection(47, THREADED);
    for (let w = 0; w < 2000 && frozen(dataDir).length === 0; w++) writeSome(store, model, random);
    assert.ok(frozen(dataDir).length > 0, 'a compaction was in flight');
    store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true });
    assertMatches(store, model, 'sealed with a compaction in flight');
    await store.compactionsSettled();
    assert.deepEqual(dayFiles(dataDir), ['sealed-20240601.hsd'], 'no part and no temporary file from the dropped answer');
    assert.ok(!filesOf(dataDir).some((n) => n.endsWith('.tmp')));

    // Late points compacted on the thread, and the store closed before it answers.
    for (let w = 0; w < 2000 && frozen(dataDir).length === 0; w++) writeSome(store, model, random);
    assert.ok(frozen(dataDir).length > 0, 'a late compaction was in flight');
    store.close();
    store = openStore(dataDir, THREADED);
    assertMatches(store, model, 'reopened after a close with a compaction in flight');
    await store.compactionsSettled();
    assert.deepEqual(frozen(dataDir), []);
    assertMatches(store, model, 'its frozen logs compacted after the reopen');
    store.close();
  });

  test('merges run on the thread too: the merged part takes the newest input\'s name; a seal meanwhile makes the thread\'s answer moot', async () => {
    const { dataDir, store, model, random } = newCollection(53, THREADED);
    while (store.compactions < PARTS_PER_MERGE + 1) {
      writeSome(store, model, random);
      await turn();
    }
    await store.compactionsSettled();
    const before = parts(dataDir);
    assert.ok(before.length >= PARTS_PER_MERGE, before.join(' '));
    // The day has not ended: nothing is due for sealing, but the pass asks the thread for a merge.
    assert.equal(store.seal({ now: DAY0 + 1000, graceMs: 0, force: false }).sealedDays, 0);
    assert.deepEqual(parts(dataDir), before, 'the pass did not merge on the shard\'s thread');
    assertMatches(store, model, 'merge in flight');
    await store.compactionsSettled();
    const after = parts(dataDir);
    assert.ok(after.length < before.length, `${before.length} parts before, ${after.length} after`);
    assert.ok(after.includes(before[before.length - 1]!), 'the newest part name stays');
    assert.ok(!filesOf(dataDir).some((n) => n.endsWith('.tmp')), filesOf(dataDir).join(' '));
    assertMatches(store, model, 'after the merge');

    // Another merge asked for, and the day sealed before the thread answers.
    while (parts(dataDir).length < after.length + PARTS_PER_MERGE) {
      writeSome(store, model, random);
      await turn();
    }
    await store.compactionsSettled();
    store.seal({ now: DAY0 + 1000, graceMs: 0, force: false });
    store.seal({ now: DAY0 + 2 * DAY_MS, graceMs: 0, force: true });
    await store.compactionsSettled();
    assert.deepEqual(dayFiles(dataDir), ['sealed-20240601.hsd']);
    assert.ok(!filesOf(dataDir).some((n) => n.endsWith('.tmp')), filesOf(dataDir).join(' '));
    assertMatches(store, model, 'sealed while a merge was in flight');
    store.close();
  });
});
