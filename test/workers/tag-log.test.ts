// The tag dictionary's log (workers/tag-log.ts) on real files: a new series is an append, not a
// rewrite of meta.json; labels come back after reopening; a torn or damaged tail is cut and the
// records before it kept; compaction replaces the log by rename (a backup's hard link keeps its
// bytes); meta.json of format 1 (no labels) still opens; and the series listing with globs.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PointBatch, SeriesLabels } from '../../native-free-codecs/write-body.js';
import { compileGlob } from '../../shared/glob.js';
import type { CollectionScope } from '../../shared/scope.js';
import { collectionDir } from '../../shared/scope-path.js';
import { ShardStore } from '../../workers/shard-store.js';
import { batchOf, freshStore, ID, reopenStore, SCOPE, T0 } from './dictionary-fixture.js';
import { TAG_LOG_FILE } from '../../workers/tag-log.js';
import { DAY_MS } from '../../workers/utc-day.js';


const everything = compileGlob('*');
const listed = (store: ShardStore, glob = everything) => store.listSeries([ID], glob, 1_000_000).series.map((s) => [s.tag, s.labels ?? null]);

describe('tag dictionary log', () => {
  test('a new series is appended to tags.log; meta.json is not rewritten', () => {
    const { store, dir } = freshStore('tag-log-');
    store.append(ID, batchOf(['a'], T0), 'fsync');
    const metaBefore = fs.statSync(path.join(dir, 'meta.json'));
    const logBefore = fs.statSync(path.join(dir, TAG_LOG_FILE)).size;
    store.append(ID, batchOf(['b', 'c'], T0, [{ measurement: 'm', field: 'f' }, null]), 'fsync');
    const metaAfter = fs.statSync(path.join(dir, 'meta.json'));
    assert.equal(metaAfter.ino, metaBefore.ino, 'meta.json was not replaced');
    assert.equal(metaAfter.mtimeMs, metaBefore.mtimeMs);
    assert.ok(fs.statSync(path.join(dir, TAG_LOG_FILE)).size > logBefore, 'the log grew');
    const lines = fs.readFileSync(path.join(dir, TAG_LOG_FILE), 'utf8').trim().split('\n');
    assert.equal(lines.length, 3);
    assert.match(lines[1]!, /^[0-9a-f]{8} \[1,"b",\{"measurement":"m","field":"f"\}\]$/);
    store.close();
  });

  test('labels and names come back after reopening; the log is compacted into meta.json at open', () => {
    const { dataDir, store, dir } = freshStore('tag-log-');
    store.append(ID, batchOf(['x.f', 'y'], T0, [{ field: 'f', measurement: 'x' }, null]), 'fsync');
    store.close();
    const again = reopenStore(dataDir);
    assert.deepEqual(listed(again), [['x.f', { field: 'f', measurement: 'x' }], ['y', null]]);
    assert.equal(fs.statSync(path.join(dir, TAG_LOG_FILE)).size, 0, 'the log starts empty after compaction');
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8'));
    assert.equal(meta.version, 2);
    assert.deepEqual(meta.tags, ['x.f', 'y']);
    assert.deepEqual(meta.labels, { 0: { field: 'f', measurement: 'x' } });
    // A later label set for a tag without one is a record of its own.
    again.append(ID, batchOf(['y'], T0 + 1, [{ measurement: 'y', field: 'value' }]), 'fsync');
    again.close();
    assert.deepEqual(listed(reopenStore(dataDir)), [['x.f', { field: 'f', measurement: 'x' }], ['y', { measurement: 'y', field: 'value' }]]);
  });

  test('a torn last record is cut; the records before it and their points stay', () => {
    const { dataDir, store, dir } = freshStore('tag-log-');
    store.append(ID, batchOf(['a', 'b'], T0), 'fsync');
    store.close();
    fs.appendFileSync(path.join(dir, TAG_LOG_FILE), '0123abcd [2,"c",nu'); // a crash mid-append
    const again = reopenStore(dataDir);
    assert.deepEqual(listed(again).map(([t]) => t), ['a', 'b']);
    assert.deepEqual(again.lastValue(ID, 'b'), [T0, 1]);
    again.append(ID, batchOf(['c'], T0), 'fsync');
    again.close();
    assert.deepEqual(listed(reopenStore(dataDir)).map(([t]) => t), ['a', 'b', 'c']);
  });

  test('a record whose checksum does not match ends the log there', () => {
    const { dataDir, store, dir } = freshStore('tag-log-');
    store.append(ID, batchOf(['a'], T0), 'fsync');
    store.append(ID, batchOf(['b'], T0), 'fsync');
    store.close();
    const file = path.join(dir, TAG_LOG_FILE);
    // Compaction at open moves a and b into meta.json; then two records are logged, the first to be damaged.
    const store2 = reopenStore(dataDir);
    assert.equal(fs.readFileSync(file, 'utf8'), '');
    store2.append(ID, batchOf(['c', 'd'], T0 + DAY_MS), 'fsync');
    store2.close();
    const text = fs.readFileSync(path.join(dir, TAG_LOG_FILE), 'utf8');
    fs.writeFileSync(file, text.replace('"c"', '"C"')); // CRC no longer matches
    const again = reopenStore(dataDir);
    assert.deepEqual(listed(again).map(([t]) => t), ['a', 'b'], 'c and d are gone with their record');
    again.close();
  });

  test('compaction replaces the log by rename: a hard link (a backup) keeps the bytes it had', () => {
    const { dataDir, store, dir } = freshStore('tag-log-');
    store.append(ID, batchOf(['a', 'b'], T0), 'fsync');
    const link = path.join(dataDir, 'linked-tags.log');
    fs.linkSync(path.join(dir, TAG_LOG_FILE), link);
    const before = fs.readFileSync(link);
    store.updateCollection(ID, { description: 'compacts: meta.json is rewritten anyway' });
    assert.equal(fs.statSync(path.join(dir, TAG_LOG_FILE)).size, 0);
    assert.deepEqual(fs.readFileSync(link), before);
    store.close();
    assert.deepEqual(listed(reopenStore(dataDir)).map(([t]) => t), ['a', 'b']);
  });

  test('meta.json of format 1 (no labels) opens as before', () => {
    const { dataDir, store, dir } = freshStore('tag-log-');
    store.append(ID, batchOf(['old-1', 'old-2'], T0), 'fsync');
    store.close();
    reopenStore(dataDir).close(); // compacts
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'meta.json'), JSON.stringify({ version: 1, collection: meta.collection, tags: meta.tags }));
    const again = reopenStore(dataDir);
    assert.deepEqual(listed(again), [['old-1', null], ['old-2', null]]);
    assert.deepEqual(again.lastValue(ID, 'old-2'), [T0, 1]);
  });

  test('maxSeriesPerCollection: a batch that would pass it changes nothing', () => {
    const { store, dir } = freshStore('tag-log-', 3);
    store.append(ID, batchOf(['a', 'b'], T0), 'fsync');
    const log = fs.readFileSync(path.join(dir, TAG_LOG_FILE));
    assert.throws(() => store.append(ID, batchOf(['a', 'c', 'd'], T0 + 5), 'fsync'), /series "d" would pass storage\.maxSeriesPerCollection \(3\)/);
    assert.equal(store.seriesLimitProblem(ID, batchOf(['c', 'd'], T0))?.includes('"d"'), true);
    assert.equal(store.seriesLimitProblem(ID, batchOf(['a', 'c'], T0)), null);
    assert.deepEqual(fs.readFileSync(path.join(dir, TAG_LOG_FILE)), log, 'no record was logged');
    assert.deepEqual(store.lastValue(ID, 'a'), [T0, 0], 'no point was written');
    store.append(ID, batchOf(['a', 'c'], T0 + 5), 'fsync');
    assert.deepEqual(listed(store).map(([t]) => t), ['a', 'b', 'c']);
  });

  test('listing: name order across appends, globs with a prefix, counting past the limit', () => {
    const { store } = freshStore('tag-log-');
    store.append(ID, batchOf(['p.2', 'q.1', 'p.10'], T0), 'os');
    store.append(ID, batchOf(['p.1', 'a', 'p.3x'], T0), 'os');
    assert.deepEqual(listed(store).map(([t]) => t), ['a', 'p.1', 'p.10', 'p.2', 'p.3x', 'q.1']);
    assert.deepEqual(listed(store, compileGlob('p.?')).map(([t]) => t), ['p.1', 'p.2']);
    assert.deepEqual(listed(store, compileGlob('p.*x')).map(([t]) => t), ['p.3x']);
    assert.deepEqual(listed(store, compileGlob('*.1*')).map(([t]) => t), ['p.1', 'p.10', 'q.1']);
    const page = store.listSeries([ID, 'unknown/c/o/l'], compileGlob('p*'), 2);
    assert.deepEqual([page.series.map((s) => s.tag), page.total], [['p.1', 'p.10'], 4]);
    assert.deepEqual(page.series[0], { collection: ID, tag: 'p.1', last_ms: T0, last_value: 0 });
    // A listing that outruns its time budget stops with a 400 saying how to narrow it, on either walk.
    for (const glob of ['*1*', 'p*1']) {
      assert.throws(() => store.listSeries([ID], compileGlob(glob), 10, -1), (err: Error & { code?: string }) => err.code === 'BAD_REQUEST' && /literal prefix/.test(err.message));
    }
  });
});

describe('tag-name globs', () => {
  const cases: Array<[string, string, boolean]> = [
    ['*', '', true], ['*', 'anything', true], ['a*', 'abc', true], ['a*', 'ba', false],
    ['*c', 'abc', true], ['a*c', 'ac', true], ['a*c', 'abcd', false], ['a?c', 'abc', true], ['a?c', 'ac', false],
    ['*a*a*a*a*a*a*a*a*b', 'a'.repeat(200), false], // no exponential backtracking
    ['é?', 'éü', true], ['?', '😀', true], ['??', '😀', false], ['x\\*', 'x*', true], ['x\\*', 'xy', false],
    ['x\\?', 'x?', true], ['\\\\', '\\', true], ['ABC', 'abc', false], ['a**b', 'ab', true],
  ];
  for (const [glob, name, expected] of cases) {
    test(`${JSON.stringify(glob)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(name).slice(0, 30)}`, () => {
      const g = compileGlob(glob);
      const result = name.startsWith(g.prefix) && (g.matches === null || g.matches(name));
      assert.equal(result, expected);
    });
  }
});

describe('tag-name globs against a reference', () => {
  test('random globs over {a, b, *, ?} give what an anchored regular expression gives', () => {
    let seed = 12345;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const pick = (alphabet: string, length: number) => Array.from({ length }, () => alphabet[next(alphabet.length)]).join('');
    for (let i = 0; i < 5000; i++) {
      const glob = pick('ab*?', next(8));
      const name = pick(i % 7 === 0 ? 'ab\u00e9' : 'ab', next(10));
      const reference = new RegExp(`^${[...glob].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c)).join('')}$`, 'su');
      const g = compileGlob(glob);
      const got = name.startsWith(g.prefix) && (g.matches === null || g.matches(name));
      assert.equal(got, reference.test(name), `${JSON.stringify(glob)} on ${JSON.stringify(name)}`);
    }
    // Names with surrogate pairs take the code point path.
    for (const [glob, name, expected] of [['*?x', 'a😀x', true], ['a?x', 'a😀x', true], ['a??x', 'a😀x', false], ['*😀*', 'x😀y', true]] as const) {
      const g = compileGlob(glob);
      assert.equal(name.startsWith(g.prefix) && (g.matches === null || g.matches(name)), expected, `${glob} on ${name}`);
    }
  });
});
