import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PointBatch } from '../../native-free-codecs/write-body.js';
import { crc32c } from '../../workers/crc32.js';
import { ServiceError } from '../../shared/errors.js';
import type { CollectionScope } from '../../shared/scope.js';
import { collectionDir, collectionId, decodeScopeName, encodeScopeName, parseCollectionId } from '../../shared/scope-path.js';
import { ShardStore } from '../../workers/shard-store.js';
import { workerLog } from '../../workers/worker-log.js';
import { SEALED_BLOCK_POINTS, SealedIndex } from '../../workers/sealed-file.js';
import { DAY_MS, formatDay, parseDay } from '../../workers/utc-day.js';

// Real files in temporary folders; every store is closed before its folder is inspected.

const roots: string[] = [];
after(() => {
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shard-store-'));
  roots.push(dir);
  return dir;
}

const DAY0 = Date.UTC(2024, 5, 1); // 2024-06-01T00:00Z
const DAY1 = DAY0 + DAY_MS;
const SCOPE: CollectionScope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const ID = 'acme/north/boiler-1/main';

function openStore(dataDir: string, owns: (id: string) => boolean = () => true): ShardStore {
  const store = new ShardStore({ dataDir, owns });
  store.recover();
  return store;
}

/** A PointBatch from `{tag: [[ts, value], ...]}`. */
function batchOf(tags: Record<string, [number, number][]>): PointBatch {
  const tagNames = Object.keys(tags);
  const pointCount = tagNames.reduce((n, t) => n + tags[t]!.length, 0);
  const timestamps = new Float64Array(pointCount);
  const values = new Float64Array(pointCount);
  const tagStart = new Uint32Array(tagNames.length + 1);
  let p = 0;
  tagNames.forEach((tag, i) => {
    tagStart[i] = p;
    for (const [t, v] of tags[tag]!) {
      timestamps[p] = t;
      values[p++] = v;
    }
  });
  tagStart[tagNames.length] = p;
  return { scope: {}, tagNames, tagStart, timestamps, values, pointCount };
}

/** A batch of whole columns (no copying point by point). */
function columnBatch(tags: Record<string, { ts: Float64Array; values: Float64Array; from: number; to: number }>): PointBatch {
  const tagNames = Object.keys(tags);
  const pointCount = tagNames.reduce((n, t) => n + tags[t]!.to - tags[t]!.from, 0);
  const timestamps = new Float64Array(pointCount);
  const values = new Float64Array(pointCount);
  const tagStart = new Uint32Array(tagNames.length + 1);
  let p = 0;
  tagNames.forEach((tag, i) => {
    const c = tags[tag]!;
    tagStart[i] = p;
    timestamps.set(c.ts.subarray(c.from, c.to), p);
    values.set(c.values.subarray(c.from, c.to), p);
    p += c.to - c.from;
  });
  tagStart[tagNames.length] = p;
  return { scope: {}, tagNames, tagStart, timestamps, values, pointCount };
}

interface Scanned {
  ts: number[];
  values: number[];
  chunks: number[];
}

function scan(store: ShardStore, tag: string, start = 0, end = Number.MAX_SAFE_INTEGER, id = ID): Scanned {
  const out: Scanned = { ts: [], values: [], chunks: [] };
  const total = store.scanTag(id, tag, start, end, (ts, values, count) => {
    out.chunks.push(count);
    for (let i = 0; i < count; i++) {
      out.ts.push(ts[i]!);
      out.values.push(values[i]!);
    }
  });
  assert.equal(total, out.ts.length);
  return out;
}

function assertSamePoints(actual: Scanned, expected: { ts: number[]; values: number[] }): void {
  assert.deepEqual(actual.ts, expected.ts);
  assert.equal(actual.values.length, expected.values.length);
  for (let i = 0; i < expected.values.length; i++) {
    assert.ok(Object.is(actual.values[i], expected.values[i]), `value ${i}: ${actual.values[i]} vs ${expected.values[i]}`);
  }
}

function expectStorageError(fn: () => unknown, code: string, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ServiceError, `ServiceError expected, got ${String(err)}`);
    assert.equal(err.code, code);
    if (message) assert.match(err.message, message);
    return true;
  });
}

function dirOf(dataDir: string): string {
  return collectionDir(dataDir, SCOPE);
}

function dayFile(dataDir: string, prefix: 'active' | 'late' | 'sealed', dayStart: number): string {
  const ext = prefix === 'sealed' ? 'hsd' : 'log';
  return path.join(dirOf(dataDir), `${prefix}-${formatDay(dayStart / DAY_MS)}.${ext}`);
}

/** Small seeded generator (xorshift32) so sizes are the same on every run. */
function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------

describe('scope names and folders', () => {
  test('encoding keeps only [A-Za-z0-9_-] and %XX, and decodes back', () => {
    const names = ['..', '.', '/', 'a/b', '\u0000', ' space ', 'Zürich-北京 🚀', 'plain_Name-1', '%41', 'C:\\x'];
    for (const name of names) {
      const encoded = encodeScopeName(name);
      assert.match(encoded, /^[A-Za-z0-9_%-]+$/, name);
      assert.equal(decodeScopeName(encoded), name);
    }
    assert.equal(encodeScopeName('..'), '%2E%2E');
    assert.equal(encodeScopeName('a/b'), 'a%2Fb');
    assert.equal(encodeScopeName('\u0000'), '%00');
    assert.equal(encodeScopeName('ü'), '%C3%BC');
    // Only the canonical form decodes: one name, one folder.
    for (const bad of ['%2e%2e', '%41', '%4', 'a.b', '%C3', '%']) expectStorageError(() => decodeScopeName(bad), 'BAD_REQUEST');
  });

  test('names are 1..200 bytes of UTF-8 without control characters or "/"', () => {
    const ok = { ...SCOPE, unit: 'u'.repeat(200) };
    assert.equal(collectionId(ok), `acme/north/${'u'.repeat(200)}/main`);
    assert.deepEqual(parseCollectionId(collectionId(ok)), ok);
    assert.equal(collectionId({ ...SCOPE, unit: 'é'.repeat(100) }).length > 0, true); // 200 bytes
    expectStorageError(() => collectionId({ ...SCOPE, unit: 'u'.repeat(201) }), 'BAD_REQUEST', /unit name must be 1\.\.200 bytes/);
    expectStorageError(() => collectionId({ ...SCOPE, unit: 'é'.repeat(101) }), 'BAD_REQUEST', /unit name must be 1\.\.200 bytes/);
    expectStorageError(() => collectionId({ ...SCOPE, site: '' }), 'BAD_REQUEST', /site name must be 1\.\.200 bytes/);
    expectStorageError(() => collectionId({ ...SCOPE, grid: 'a\u0000' }), 'BAD_REQUEST', /grid name must not contain control characters/);
    expectStorageError(() => collectionId({ ...SCOPE, organization: 'x\ud800' }), 'BAD_REQUEST', /organization name must be valid Unicode/);
    expectStorageError(() => parseCollectionId('a/b/c'), 'BAD_REQUEST', /organization\/site\/unit\/grid/);
    expectStorageError(() => parseCollectionId('a/b/c/d/e'), 'BAD_REQUEST', /organization\/site\/unit\/grid/);
  });

  test('the folder of a hostile scope stays four levels inside <dataDir>/ts', () => {
    const dataDir = tempDir();
    const hostile = { organization: '..', site: '../../etc', unit: 'a/b', grid: '\u0000' };
    const dir = collectionDir(dataDir, hostile);
    const relative = path.relative(path.join(dataDir, 'ts'), dir);
    assert.ok(!relative.startsWith('..') && !path.isAbsolute(relative), relative);
    assert.deepEqual(relative.split(path.sep), ['%2E%2E', '%2E%2E%2F%2E%2E%2Fetc', 'a%2Fb', '%00']);
    // And the store refuses to create it, naming the field.
    const store = openStore(dataDir);
    expectStorageError(() => store.createCollection({ ...SCOPE, unit: 'a/b' }), 'BAD_REQUEST', /unit name must not contain '\/'/);
    expectStorageError(() => store.createCollection({ ...SCOPE, grid: '\u0000' }), 'BAD_REQUEST', /grid name must not contain control characters/);
    store.close();
  });

  test('dot names are ordinary collections', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    const dots = { organization: '..', site: '.', unit: '...', grid: 'g' };
    store.createCollection(dots);
    store.append('.././.../g', batchOf({ t: [[DAY0, 1]] }), 'os');
    store.close();
    assert.ok(fs.existsSync(path.join(dataDir, 'ts', '%2E%2E', '%2E', '%2E%2E%2E', 'g', 'meta.json')));
    const again = openStore(dataDir);
    assert.equal(again.getCollection('.././.../g')?.organization, '..');
    again.close();
  });

  test('UTC day names', () => {
    assert.equal(formatDay(0), '19700101');
    assert.equal(formatDay(DAY0 / DAY_MS), '20240601');
    assert.equal(parseDay('20240229'), Date.UTC(2024, 1, 29) / DAY_MS);
    assert.equal(parseDay('20230229'), null);
    const last = Math.floor((2 ** 53 - 1) / DAY_MS);
    assert.equal(parseDay(formatDay(last)), last);
    assert.equal(formatDay(last).length, 10);
  });

  test('crc32c check value', () => {
    assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
    const bytes = new Uint8Array(1000).map((_, i) => (i * 31) & 0xff);
    // Slice-by-8 and the byte loop must agree on every alignment and length.
    for (const [s, e] of [[0, 1000], [3, 997], [1, 8], [5, 6]] as const) {
      let crc = ~0;
      for (let i = s; i < e; i++) {
        crc ^= bytes[i]!;
        for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
      }
      assert.equal(crc32c(bytes, s, e), ~crc >>> 0);
    }
  });
});

describe('collections', () => {
  test('create, get, update; CONFLICT and NOT_FOUND', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    const created = store.createCollection(SCOPE, { description: 'Boiler 1', retentionDays: 30 });
    assert.equal(created.organization, 'acme');
    assert.equal(created.description, 'Boiler 1');
    assert.equal(typeof created.createdAt, 'number');
    assert.equal(created.createdAt, created.updatedAt);
    assert.deepEqual(store.getCollection(ID), created);
    assert.equal(store.getCollection('acme/north/boiler-2/main'), null);

    expectStorageError(() => store.createCollection(SCOPE), 'CONFLICT', /^DUPLICATE: /);
    const updated = store.updateCollection(ID, { description: 'Boiler one', owner: 'ops', createdAt: 1 });
    assert.equal(updated.description, 'Boiler one');
    assert.equal(updated.owner, 'ops');
    assert.equal(updated.retentionDays, 30);
    assert.equal(updated.createdAt, created.createdAt);
    assert.ok(updated.updatedAt >= created.updatedAt);
    expectStorageError(() => store.updateCollection(ID, { unit: 'other' }), 'BAD_REQUEST', /unit cannot be changed/);
    expectStorageError(() => store.updateCollection('acme/north/nope/main', { a: 1 }), 'NOT_FOUND');
    expectStorageError(() => store.updateCollection('not-an-id', { a: 1 }), 'BAD_REQUEST');

    const meta = JSON.parse(fs.readFileSync(path.join(dirOf(dataDir), 'meta.json'), 'utf8'));
    assert.equal(meta.version, 2);
    assert.equal(meta.collection.owner, 'ops');
    assert.deepEqual(meta.tags, []);
    assert.deepEqual(meta.labels, {});
    store.close();

    const again = openStore(dataDir);
    assert.deepEqual(again.getCollection(ID), updated);
    again.close();
  });

  test('append to a missing collection is NOT_FOUND and writes nothing', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    expectStorageError(() => store.append(ID, batchOf({ t: [[DAY0, 1]] }), 'fsync'), 'NOT_FOUND');
    store.syncPending();
    assert.equal(fs.existsSync(path.join(dataDir, 'ts')), false);
    expectStorageError(() => store.scanTag(ID, 't', 0, 1, () => {}), 'NOT_FOUND');
    store.close();
  });

  test('a rejected batch writes nothing and adds no tag', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ a: [[DAY0, 1]] }), 'fsync');
    store.syncPending();
    const size = fs.statSync(dayFile(dataDir, 'active', DAY0)).size;
    expectStorageError(() => store.append(ID, batchOf({ b: [[DAY0, 2]], 'bad\u0001': [[DAY0, 3]] }), 'fsync'), 'BAD_REQUEST', /control characters/);
    expectStorageError(() => store.append(ID, batchOf({ b: [[DAY0 + 0.5, 2]] }), 'fsync'), 'BAD_REQUEST', /timestamp/);
    expectStorageError(() => store.append(ID, batchOf({ b: [[-1, 2]] }), 'fsync'), 'BAD_REQUEST', /timestamp/);
    expectStorageError(() => store.append(ID, batchOf({ ['x'.repeat(257)]: [[DAY0, 2]] }), 'fsync'), 'BAD_REQUEST', /1\.\.256 bytes/);
    assert.equal(fs.statSync(dayFile(dataDir, 'active', DAY0)).size, size);
    assert.deepEqual(store.tagNames(ID), ['a']);
    store.close();
  });
});

describe('append and scanTag', () => {
  test('float64 values come back bit for bit', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    const values = [0.1 + 0.2, -0, 0, 5e-324, -Number.MAX_VALUE, 1e300, NaN, Infinity, -Infinity, 123.456, -7];
    const points = values.map((v, i): [number, number] => [DAY0 + i * 1000, v]);
    const { points: n, newTags } = store.append(ID, batchOf({ exact: points }), 'fsync');
    store.syncPending();
    assert.equal(n, values.length);
    assert.deepEqual(newTags, ['exact']);
    assertSamePoints(scan(store, 'exact'), { ts: points.map((p) => p[0]), values });
    store.close();
  });

  test('out-of-order points, duplicates (last write wins), inclusive range, unknown tag', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    const t = (s: number) => DAY0 + s * 1000;
    store.append(ID, batchOf({ x: [[t(3), 3], [t(1), 1], [t(2), 2], [t(1), 1.5]] }), 'os');
    assertSamePoints(scan(store, 'x'), { ts: [t(1), t(2), t(3)], values: [1.5, 2, 3] });
    store.append(ID, batchOf({ x: [[t(2), 20], [t(0), 0]] }), 'os');
    assertSamePoints(scan(store, 'x'), { ts: [t(0), t(1), t(2), t(3)], values: [0, 1.5, 20, 3] });
    assertSamePoints(scan(store, 'x', t(1), t(2)), { ts: [t(1), t(2)], values: [1.5, 20] });
    assertSamePoints(scan(store, 'x', t(1) + 1, t(2) - 1), { ts: [], values: [] });
    assertSamePoints(scan(store, 'x', t(3), t(3)), { ts: [t(3)], values: [3] });
    assert.equal(scan(store, 'x', t(3), t(1)).ts.length, 0);
    const unknown = scan(store, 'nope');
    assert.equal(unknown.ts.length, 0);
    assert.deepEqual(unknown.chunks, []);
    store.close();
  });

  test('points of one request spanning two UTC days', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    const points: [number, number][] = [[DAY1 + 5, 3], [DAY1 - 1, 2], [DAY0, 1], [DAY1, 2.5], [DAY1 - 1, 2.25]];
    store.append(ID, batchOf({ x: points, y: [[DAY1 + 9, 9]] }), 'fsync');
    store.syncPending();
    assert.ok(fs.existsSync(dayFile(dataDir, 'active', DAY0)));
    assert.ok(fs.existsSync(dayFile(dataDir, 'active', DAY1)));
    assertSamePoints(scan(store, 'x'), { ts: [DAY0, DAY1 - 1, DAY1, DAY1 + 5], values: [1, 2.25, 2.5, 3] });
    assertSamePoints(scan(store, 'x', DAY1 - 1, DAY1), { ts: [DAY1 - 1, DAY1], values: [2.25, 2.5] });
    assertSamePoints(scan(store, 'y'), { ts: [DAY1 + 9], values: [9] });
    store.close();
  });

  test('large scans arrive in chunks of at most 8192 points', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    const n = 20_000;
    const ts = Float64Array.from({ length: n }, (_, i) => DAY0 + i * 100);
    const values = Float64Array.from({ length: n }, (_, i) => i / 4);
    for (let from = 0; from < n; from += 1000) store.append(ID, columnBatch({ big: { ts, values, from, to: from + 1000 } }), 'os');
    const result = scan(store, 'big');
    assert.deepEqual(result.chunks, [8192, 8192, 3616]);
    assertSamePoints(result, { ts: [...ts], values: [...values] });
    store.close();
  });

  test('lastValue: newest timestamp wins, an older late arrival does not, a tie goes to the later write', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    assert.equal(store.lastValue(ID, 'x'), null);
    store.append(ID, batchOf({ x: [[DAY0 + 10, 1], [DAY0 + 30, 3], [DAY0 + 20, 2]] }), 'os');
    assert.deepEqual(store.lastValue(ID, 'x'), [DAY0 + 30, 3]);
    store.append(ID, batchOf({ x: [[DAY0 + 5, 0.5]] }), 'os');
    assert.deepEqual(store.lastValue(ID, 'x'), [DAY0 + 30, 3]);
    store.append(ID, batchOf({ x: [[DAY0 + 30, 3.5]] }), 'os');
    assert.deepEqual(store.lastValue(ID, 'x'), [DAY0 + 30, 3.5]);
    store.append(ID, batchOf({ x: [[DAY1 + 1, 4]], y: [[DAY0, -1]] }), 'os');
    assert.deepEqual(store.lastValue(ID, 'x'), [DAY1 + 1, 4]);
    assert.deepEqual(store.lastValue(ID, 'y'), [DAY0, -1]);
    assert.equal(store.lastValue(ID, 'nope'), null);
    store.close();

    const again = openStore(dataDir);
    assert.deepEqual(again.lastValue(ID, 'x'), [DAY1 + 1, 4]);
    assert.deepEqual(again.lastValue(ID, 'y'), [DAY0, -1]);
    again.append(ID, batchOf({ y: [[DAY0, -2]] }), 'os');
    assert.deepEqual(again.lastValue(ID, 'y'), [DAY0, -2]);
    again.close();
  });

  test('descriptors stay bounded across many days and reopen on demand', () => {
    const dataDir = tempDir();
    const store = new ShardStore({ dataDir, owns: () => true, maxOpenFiles: 2 });
    store.recover();
    store.createCollection(SCOPE);
    for (let d = 0; d < 6; d++) store.append(ID, batchOf({ x: [[DAY0 + d * DAY_MS, d]] }), 'fsync');
    assert.ok(store.stats().openFiles <= 2);
    store.syncPending();
    assert.deepEqual(scan(store, 'x').values, [0, 1, 2, 3, 4, 5]);
    assert.ok(store.stats().openFiles <= 2);
    store.close();
    assert.equal(store.stats().openFiles, 0);
  });
});

describe('torn tails', () => {
  function writeTwoBlocks(dataDir: string): { file: string; firstEnd: number } {
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ x: [[DAY0 + 1, 1], [DAY0 + 2, 2]] }), 'fsync');
    store.syncPending();
    const file = dayFile(dataDir, 'active', DAY0);
    const firstEnd = fs.statSync(file).size;
    store.append(ID, batchOf({ x: [[DAY0 + 3, 3], [DAY0 + 4, 4]] }), 'fsync');
    store.syncPending();
    store.close();
    return { file, firstEnd };
  }

  function checkRecovered(dataDir: string, file: string, firstEnd: number, sizeBefore: number): void {
    const store = new ShardStore({ dataDir, owns: () => true });
    const recovered = store.recover();
    assert.equal(recovered.collections, 1);
    assert.equal(recovered.blocks, 1);
    assert.equal(recovered.bytesCut, sizeBefore - firstEnd);
    assert.ok(recovered.bytesCut > 0);
    assert.equal(fs.statSync(file).size, firstEnd);
    assertSamePoints(scan(store, 'x'), { ts: [DAY0 + 1, DAY0 + 2], values: [1, 2] });
    assert.deepEqual(store.lastValue(ID, 'x'), [DAY0 + 2, 2]);
    store.append(ID, batchOf({ x: [[DAY0 + 5, 5]] }), 'fsync');
    store.syncPending();
    store.close();
    const again = openStore(dataDir);
    assertSamePoints(scan(again, 'x'), { ts: [DAY0 + 1, DAY0 + 2, DAY0 + 5], values: [1, 2, 5] });
    again.close();
  }

  test('a block cut short is removed on recovery', () => {
    const dataDir = tempDir();
    const { file, firstEnd } = writeTwoBlocks(dataDir);
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - 7);
    checkRecovered(dataDir, file, firstEnd, size - 7);
  });

  test('a block with a flipped byte is removed on recovery', () => {
    const dataDir = tempDir();
    const { file, firstEnd } = writeTwoBlocks(dataDir);
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 5]! ^= 0x10;
    fs.writeFileSync(file, bytes);
    checkRecovered(dataDir, file, firstEnd, bytes.length);
  });

  test('a file cut inside its header starts over empty', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ x: [[DAY1, 1]] }), 'fsync');
    store.close();
    const file = dayFile(dataDir, 'active', DAY0);
    fs.writeFileSync(file, Buffer.from('HSDL\u0001\u0000'));
    const again = new ShardStore({ dataDir, owns: () => true });
    assert.equal(again.recover().bytesCut, 6);
    assert.equal(fs.statSync(file).size, 16);
    again.append(ID, batchOf({ x: [[DAY0, 0]] }), 'fsync');
    again.syncPending();
    assert.deepEqual(scan(again, 'x').values, [0, 1]);
    again.close();
  });
});

test('a day log with a foreign header is set aside, not cut', () => {
  const dataDir = tempDir();
  const store = openStore(dataDir);
  store.createCollection(SCOPE);
  store.append(ID, batchOf({ x: [[DAY1, 1]] }), 'fsync');
  store.close();
  const foreign = dayFile(dataDir, 'active', DAY0);
  fs.writeFileSync(foreign, 'this is not a day log, but it is someone\'s data');
  const logged: object[] = [];
  const again = new ShardStore({ dataDir, owns: () => true, log: workerLog('info', {}, (line) => logged.push(JSON.parse(line) as object)) });
  assert.equal(again.recover().collections, 1);
  assert.equal(fs.existsSync(foreign), false);
  assert.equal(fs.readdirSync(dirOf(dataDir)).filter((f) => f.startsWith(`${path.basename(foreign)}.bad-`)).length, 1);
  assert.ok(logged.some((o) => (o as { event?: string }).event === 'day-log-quarantined'));
  assert.deepEqual(scan(again, 'x').values, [1]);
  again.close();
});

describe('sealing', () => {
  test('a sealed day is split into blocks; a short range reads only its blocks and answers the same', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    const n = 86_400;
    const ts = Float64Array.from({ length: n }, (_, i) => DAY0 + i * 1000);
    const values = Float64Array.from({ length: n }, (_, i) => Math.round(Math.sin(i / 100) * 10_000) / 100);
    store.append(ID, columnBatch({ a: { ts, values, from: 0, to: n } }), 'os');
    const window = { start: DAY0 + 40_000_000, end: DAY0 + 40_060_000 };
    const before = scan(store, 'a', window.start, window.end);
    assert.equal(store.seal({ now: DAY1 + 1, graceMs: 0, force: true }).sealedDays, 1);
    const index = SealedIndex.read(dayFile(dataDir, 'sealed', DAY0), DAY0 / DAY_MS);
    const blocks = index.endOf(index.find(0)) - index.find(0);
    assert.equal(blocks, Math.ceil(n / SEALED_BLOCK_POINTS));
    assertSamePoints(scan(store, 'a', window.start, window.end), before);
    assert.equal(before.ts.length, 61);
    assert.deepEqual(store.lastValue(ID, 'a'), [ts[n - 1], values[n - 1]]);
    assert.equal(scan(store, 'a').ts.length, n);
    store.close();
  });

  test('force-seal yesterday: sealed file replaces the active log, queries unchanged', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ a: [[DAY0 + 2000, 2], [DAY0 + 1000, 1]], b: [[DAY0 + 500, 0.25]] }), 'fsync');
    store.append(ID, batchOf({ a: [[DAY0 + 1000, 1.5], [DAY1 + 10, 10]] }), 'fsync');
    store.syncPending();
    const before = { a: scan(store, 'a'), b: scan(store, 'b') };

    // Not yet due with a grace period; due once it has passed.
    assert.equal(store.seal({ now: DAY1 + 60_000, graceMs: 3_600_000, force: false }).sealedDays, 0);
    assert.equal(store.seal({ now: DAY1 + 60_000, graceMs: 0, force: true }).sealedDays, 1);
    assert.ok(fs.existsSync(dayFile(dataDir, 'sealed', DAY0)));
    assert.equal(fs.existsSync(dayFile(dataDir, 'active', DAY0)), false);
    assert.ok(fs.existsSync(dayFile(dataDir, 'active', DAY1)), 'today stays active');
    assertSamePoints(scan(store, 'a'), before.a);
    assertSamePoints(scan(store, 'b'), before.b);
    assert.deepEqual(store.lastValue(ID, 'b'), [DAY0 + 500, 0.25]);
    assert.ok(store.stats().sealedBytes > 0);
    store.close();

    const again = openStore(dataDir);
    assertSamePoints(scan(again, 'a'), before.a);
    assertSamePoints(scan(again, 'b'), before.b);
    assert.deepEqual(again.lastValue(ID, 'b'), [DAY0 + 500, 0.25]); // from the sealed file
    assert.deepEqual(again.lastValue(ID, 'a'), [DAY1 + 10, 10]);
    assert.equal(again.seal({ now: DAY1 + 60_000, graceMs: 0, force: true }).sealedDays, 0);
    again.close();
  });

  test('late points: late log, visible at once, merged by the next seal (late wins ties)', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ a: [[DAY0 + 1, 1], [DAY0 + 2, 2], [DAY0 + 3, 3]] }), 'os');
    store.seal({ now: DAY1, graceMs: 0, force: true });
    const { newTags } = store.append(ID, batchOf({ a: [[DAY0 + 2, 20], [DAY0 + 4, 4]], c: [[DAY0 + 9, 9]] }), 'fsync');
    store.syncPending();
    assert.deepEqual(newTags, ['c']);
    assert.ok(fs.existsSync(dayFile(dataDir, 'late', DAY0)));
    assert.equal(fs.existsSync(dayFile(dataDir, 'active', DAY0)), false);
    const expected = { ts: [DAY0 + 1, DAY0 + 2, DAY0 + 3, DAY0 + 4], values: [1, 20, 3, 4] };
    assertSamePoints(scan(store, 'a'), expected);
    assert.deepEqual(store.lastValue(ID, 'a'), [DAY0 + 4, 4]);

    // Without force, a late log waits until it has been idle for the grace period.
    assert.equal(store.seal({ now: Date.now(), graceMs: 3_600_000, force: false }).sealedDays, 0);
    assert.equal(store.seal({ now: Date.now(), graceMs: 0, force: true }).sealedDays, 1);
    assert.equal(fs.existsSync(dayFile(dataDir, 'late', DAY0)), false);
    assertSamePoints(scan(store, 'a'), expected);
    assertSamePoints(scan(store, 'c'), { ts: [DAY0 + 9], values: [9] });
    store.close();

    const again = openStore(dataDir);
    assertSamePoints(scan(again, 'a'), expected);
    assert.deepEqual(again.lastValue(ID, 'a'), [DAY0 + 4, 4]);
    again.close();
  });

  test('a crash before the rename leaves a .tmp that recovery removes; data intact', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ a: [[DAY0 + 1, 1], [DAY0 + 2, 2]] }), 'fsync');
    store.syncPending();
    store.close();
    const tmp = `${dayFile(dataDir, 'sealed', DAY0)}.tmp`;
    fs.writeFileSync(tmp, 'half a sealed file');

    const again = openStore(dataDir);
    assert.equal(fs.existsSync(tmp), false);
    assertSamePoints(scan(again, 'a'), { ts: [DAY0 + 1, DAY0 + 2], values: [1, 2] });
    assert.equal(again.seal({ now: DAY1, graceMs: 0, force: true }).sealedDays, 1);
    assertSamePoints(scan(again, 'a'), { ts: [DAY0 + 1, DAY0 + 2], values: [1, 2] });
    again.close();
  });

  test('a crash after the rename (day log still there) is merged again harmlessly', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ a: [[DAY0 + 1, 1], [DAY0 + 2, 2]] }), 'fsync');
    store.syncPending();
    const active = dayFile(dataDir, 'active', DAY0);
    const copy = fs.readFileSync(active);
    store.seal({ now: DAY1, graceMs: 0, force: true });
    store.close();
    fs.writeFileSync(active, copy); // as if the delete never happened

    const again = openStore(dataDir);
    again.append(ID, batchOf({ a: [[DAY0 + 2, 22]] }), 'fsync'); // goes to the late log
    again.syncPending();
    const expected = { ts: [DAY0 + 1, DAY0 + 2], values: [1, 22] };
    assertSamePoints(scan(again, 'a'), expected);
    assert.equal(again.seal({ now: DAY1, graceMs: 0, force: true }).sealedDays, 1);
    assert.equal(fs.existsSync(active), false);
    assertSamePoints(scan(again, 'a'), expected);
    again.close();
  });

  test('one industrial day, 10 tags x 86,400 points: size and seal time', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    const n = 86_400;
    const ts = Float64Array.from({ length: n }, (_, i) => DAY0 + i * 1000);
    const random = seeded(20240601);
    const round2 = (v: number) => Math.round(v * 100) / 100;
    const series: Record<string, Float64Array> = {};
    const walk = (start: number, step: number, moveChance: number) => {
      const out = new Float64Array(n);
      let v = start;
      for (let i = 0; i < n; i++) {
        if (random() < moveChance) v = round2(v + (random() - 0.5) * 2 * step);
        out[i] = v;
      }
      return out;
    };
    series['TI-101.PV'] = walk(182.5, 0.05, 1); // temperature, moves every second
    series['PI-201.PV'] = walk(12.4, 0.02, 0.5); // pressure
    series['FI-301.PV'] = walk(48, 0.3, 0.8); // flow
    series['LI-401.PV'] = walk(61.2, 0.01, 0.2); // level, slow
    const setpoint = (values: number[], every: number) => Float64Array.from({ length: n }, (_, i) => values[Math.floor(i / every) % values.length]!);
    series['TIC-101.SP'] = setpoint([180, 182.5, 185, 182.5], 6 * 3600);
    series['PIC-201.SP'] = setpoint([12.5], n);
    series['XV-501.ST'] = Float64Array.from({ length: n }, (_, i) => (Math.floor(i / 5400) % 2 === 0 ? 1 : 0)); // valve 0/1
    series['P-601.RUN'] = Float64Array.from({ length: n }, (_, i) => (i > 20_000 && i < 70_000 ? 1 : 0));
    series['FQ-301.TOT'] = Float64Array.from({ length: n }, (_, i) => 1_250_000 + i); // totaliser, +1 a second
    let energy = 80_412.5;
    series['EQ-701.KWH'] = Float64Array.from({ length: n }, () => (energy = round2(energy + random() * 0.08)));

    // An hour of every tag per request, as a collector would send it.
    for (let from = 0; from < n; from += 3600) {
      const columns: Parameters<typeof columnBatch>[0] = {};
      for (const [tag, values] of Object.entries(series)) columns[tag] = { ts, values, from, to: from + 3600 };
      store.append(ID, columnBatch(columns), 'os');
    }
    const activeBytes = store.stats().activeBytes;
    const started = performance.now();
    assert.equal(store.seal({ now: DAY1 + 1, graceMs: 0, force: true }).sealedDays, 1);
    const sealMs = performance.now() - started;
    const sealedBytes = fs.statSync(dayFile(dataDir, 'sealed', DAY0)).size;
    const points = n * 10;
    const bytesPerPoint = sealedBytes / points;
    console.log(
      `sealed one day of 10 tags x ${n} points: ${sealedBytes} bytes, ${bytesPerPoint.toFixed(3)} bytes/point ` +
        `(active log ${activeBytes} bytes, ${(activeBytes / points).toFixed(1)} bytes/point); seal took ${sealMs.toFixed(0)} ms`,
    );
    assert.ok(bytesPerPoint < 1.0, `bytes per point ${bytesPerPoint}`);

    for (const [tag, values] of Object.entries(series)) {
      const got = scan(store, tag);
      assert.equal(got.ts.length, n, tag);
      assert.ok(got.ts.every((t, i) => t === ts[i]) && got.values.every((v, i) => Object.is(v, values[i])), tag);
    }
    const hour = scan(store, 'TI-101.PV', DAY0 + 3_600_000, DAY0 + 7_200_000);
    assert.equal(hour.ts.length, 3601);
    store.close();
  });
});

describe('ownership and lifecycle', () => {
  test('recover opens only owned collections', () => {
    const dataDir = tempDir();
    const all = openStore(dataDir);
    all.createCollection(SCOPE);
    all.createCollection({ ...SCOPE, organization: 'other' });
    all.append(ID, batchOf({ x: [[DAY0, 1]] }), 'fsync');
    all.append('other/north/boiler-1/main', batchOf({ x: [[DAY0, 2]] }), 'fsync');
    all.syncPending();
    all.close();

    const mine = new ShardStore({ dataDir, owns: (id) => id.startsWith('acme/') });
    assert.equal(mine.recover().collections, 1);
    assert.equal(mine.stats().collections, 1);
    assert.equal(mine.getCollection('other/north/boiler-1/main'), null);
    expectStorageError(() => mine.append('other/north/boiler-1/main', batchOf({ x: [[DAY0, 3]] }), 'os'), 'NOT_FOUND');
    assert.deepEqual(scan(mine, 'x').values, [1]);
    mine.close();
  });

  test('closeCollection releases files; openCollection reads them again', () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    store.createCollection(SCOPE);
    store.append(ID, batchOf({ x: [[DAY0, 1]] }), 'fsync');
    assert.equal(store.stats().openFiles, 1);
    store.closeCollection(ID);
    assert.deepEqual(store.stats(), { collections: 0, openFiles: 0, activeBytes: 0, sealedBytes: 0, logBlocks: 0, parts: 0 });
    assert.equal(store.openCollection(ID).unit, 'boiler-1');
    assert.deepEqual(scan(store, 'x').values, [1]);
    expectStorageError(() => store.openCollection('acme/north/none/main'), 'NOT_FOUND');
    store.close();
  });
});
