// Parsed line protocol grouped into the store's batches (write-body-line.ts), and the ingest rows
// shape (decodeRowsObject).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { linePointsByCollection } from '../../native-free-codecs/write-body-line.js';
import { parseLineProtocol } from '../../native-free-codecs/line-protocol.js';
import { decodeRowsObject, isRowsObject, WriteBodyError } from '../../native-free-codecs/write-body.js';

const base = { organization: 'acme', site: 'north', unit: 'b1', grid: 'main' };
const T = 1_800_000_000_000;
const parse = (text: string) => parseLineProtocol(new TextEncoder().encode(text), { precision: 'ms', nowMs: T });

function points(batch: ReturnType<typeof linePointsByCollection>[number]['batch']): Record<string, Array<[number, number]>> {
  const out: Record<string, Array<[number, number]>> = {};
  batch.tagNames.forEach((name, t) => {
    out[name] = [];
    for (let i = batch.tagStart[t]; i < batch.tagStart[t + 1]; i++) out[name].push([batch.timestamps[i], batch.values[i]]);
  });
  return out;
}

test('points go to <series>.<field> per collection, in line order; scope tags override the base field by field', () => {
  const groups = linePointsByCollection(
    parse(`m,host=a v=1,w=2 ${T}\nm,host=a v=3 ${T + 1}\nm,grid=g2,host=a v=4 ${T}\nn,site=s2,grid=g2 x=5 ${T}`),
    base,
  );
  assert.deepEqual(groups.map((g) => g.scope), [base, { ...base, grid: 'g2' }, { ...base, site: 's2', grid: 'g2' }]);
  assert.deepEqual(points(groups[0].batch), { 'm,host=a.v': [[T, 1], [T + 1, 3]], 'm,host=a.w': [[T, 2]] });
  assert.deepEqual(points(groups[1].batch), { 'm,host=a.v': [[T, 4]] });
  assert.deepEqual(points(groups[2].batch), { 'n.x': [[T, 5]] });
  for (const g of groups) assert.equal(g.batch.pointCount, g.batch.tagStart[g.batch.tagNames.length]);
});

test('two series that map to one tag name share it (a measurement spelled with its tag)', () => {
  const [group] = linePointsByCollection(parse(`m,a=b v=1 ${T}\nm\\,a=b v=2 ${T + 1}`), base);
  assert.deepEqual(points(group.batch), { 'm,a=b.v': [[T, 1], [T + 1, 2]] });
});

test('a body of only bad lines or string fields gives no batch', () => {
  assert.deepEqual(linePointsByCollection(parse('m v=oops\nm s="text"'), base), []);
});

test('rows: one row or many, null is no point, tags merged across rows in row order', () => {
  assert.ok(isRowsObject([]) && isRowsObject({ ts: 1 }) && !isRowsObject({ tags: {} }));
  const batch = decodeRowsObject([{ ts: T, values: { a: 1, b: null } }, { values: { b: 2, a: 3 }, ts: T + 1 }]);
  assert.deepEqual(batch.tagNames, ['a', 'b']);
  assert.deepEqual([...batch.timestamps], [T, T + 1, T + 1]);
  assert.deepEqual([...batch.values], [1, 3, 2]);
  assert.equal(decodeRowsObject({ ts: T, values: { a: 1 } }).pointCount, 1);
});

test('rows: shape errors are malformed naming the row; bad values and timestamps are rejections', () => {
  const kind = (x: unknown) => {
    try {
      decodeRowsObject(x, { minTimestampMs: 1e11 });
      return 'ok';
    } catch (err) {
      assert.ok(err instanceof WriteBodyError);
      return `${err.kind}: ${err.message}`;
    }
  };
  assert.equal(kind([{ ts: T, values: {} }, { ts: T, value: {} }]), 'malformed: row 1: unknown key "value" (a row has "ts" and "values")');
  assert.equal(kind([{ values: {} }]), 'malformed: row 0: "ts" is missing');
  assert.equal(kind([{ ts: T, values: [1] }]), 'malformed: row 0: "values" must be an object mapping tag names to numbers');
  assert.equal(kind([5]), 'malformed: row 0 must be an object {"ts": <ms>, "values": {"<tag>": <number>, …}}');
  assert.match(kind([{ ts: T, values: { a: 'x' } }]), /^rejected: row 0 tag "a": value must be a finite number or null, got a string$/);
  assert.match(kind([{ ts: 1_700_000_000, values: { a: 1 } }]), /^rejected: row 0: timestamp 1700000000 is before storage.minTimestampMs.*epoch seconds/);
  assert.match(kind([{ ts: T, values: { '': 1 } }]), /^rejected: tag "" \(row 0\): name must not be empty$/);
});
