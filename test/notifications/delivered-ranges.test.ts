import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeliveredRanges, MAX_RANGES } from '../../src/notifications/delivered-ranges.js';
import { prng } from '../support/prng.js';

test('adding ranges merges overlapping and adjacent ones and keeps them sorted', () => {
  const r = new DeliveredRanges();
  assert.equal(r.add(10, 12), true);
  assert.equal(r.add(13, 15), true); // adjacent: one range
  assert.deepEqual(r.toJSON(), [[10, 15]]);
  assert.equal(r.add(11, 14), false); // inside: no change
  assert.equal(r.add(1, 3), true);
  assert.equal(r.add(20, 20), true);
  assert.deepEqual(r.toJSON(), [[1, 3], [10, 15], [20, 20]]);
  assert.equal(r.add(4, 9), true);
  assert.deepEqual(r.toJSON(), [[1, 15], [20, 20]]);
  assert.equal(r.add(5, 4), false); // empty
  assert.equal(r.has(15), true);
  assert.equal(r.has(16), false);
  assert.equal(r.has(20), true);
});

test('the set of ids covered is the union of what was added (random)', () => {
  const random = prng(14);
  for (let round = 0; round < 200; round++) {
    const r = new DeliveredRanges();
    const ids = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const lo = 1 + Math.floor(random() * 200);
      const hi = lo + Math.floor(random() * 10) - 1;
      r.add(lo, hi);
      for (let id = lo; id <= hi; id++) ids.add(id);
    }
    for (let id = 0; id <= 215; id++) assert.equal(r.has(id), ids.has(id), `round ${round} id ${id}`);
    const list = r.toJSON();
    for (let i = 1; i < list.length; i++) assert.ok(list[i][0] > list[i - 1][1] + 1, 'disjoint and not adjacent');
  }
});

test('past MAX_RANGES the smallest gap is merged away; nothing is ever dropped', () => {
  const r = new DeliveredRanges();
  for (let i = 0; i < MAX_RANGES + 10; i++) r.add(i * 10, i * 10 + (i === 5 ? 8 : 1));
  assert.equal(r.toJSON().length, MAX_RANGES);
  for (let i = 0; i < MAX_RANGES + 10; i++) assert.equal(r.has(i * 10), true);
});

test('stored text that cannot be read is an empty set (replays again rather than loses)', () => {
  assert.deepEqual(DeliveredRanges.parse('not json').toJSON(), []);
  assert.deepEqual(DeliveredRanges.parse('{"a":1}').toJSON(), []);
  assert.deepEqual(DeliveredRanges.parse('[[3,1],[1,"x"],[5,6]]').toJSON(), [[5, 6]]);
  assert.deepEqual(DeliveredRanges.parse(JSON.stringify([[7, 9], [1, 2]])).toJSON(), [[1, 2], [7, 9]]);
});
