// A collection's packed label sets (workers/label-sets.ts) give back what was stored: keys in
// their order, any value (quotes, commas, non-ASCII), a key named __proto__ as a plain key, and
// past the table's bound of key lists, sets packed whole.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LabelSets } from '../../workers/label-sets.js';

test('sets come back equal, keys in their order; tags without labels have none', () => {
  const odd = JSON.parse('{"__proto__":"p","a":"x"}') as Record<string, string>;
  const given = [{ measurement: 'm', field: 'f', line: 'A' }, undefined, { field: 'f', measurement: 'm' }, { q: '"quoted", with \\ and ü 😀', e: '' }, odd, { measurement: 'm', field: 'g', line: 'B' }];
  const sets = new LabelSets(given);
  sets.push(null);
  assert.equal(sets.length, 7);
  given.forEach((set, id) => {
    const got = sets.get(id);
    assert.deepEqual(got, set, `tag ${id}`);
    if (set) assert.deepEqual(Object.keys(got!), Object.keys(set), `key order of tag ${id}`);
  });
  assert.equal(Object.getPrototypeOf(sets.get(4)), Object.prototype, '__proto__ stays a key');
  assert.equal(Object.getOwnPropertyDescriptor(sets.get(4), '__proto__')?.value, 'p');
  assert.deepEqual([...sets.ids()], [0, 2, 3, 4, 5]);
  assert.equal(sets.has(1), false);
  sets.set(1, { late: 'yes' });
  assert.deepEqual(sets.get(1), { late: 'yes' });
});

test('past 4096 distinct key lists a set is packed whole and still comes back', () => {
  const sets = new LabelSets();
  for (let i = 0; i < 5000; i++) sets.push({ [`k${i}`]: `v${i}`, field: 'f' });
  for (const i of [0, 4095, 4096, 4999]) assert.deepEqual(sets.get(i), { [`k${i}`]: `v${i}`, field: 'f' });
});
