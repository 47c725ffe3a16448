// The day log's block index (workers/block-index.ts) against a plain map of lists: each tag's
// blocks in push order with their fields, the set of tags, through the change from a Map to an
// array by tag id and for a log of few tags with far-apart ids (which stays a Map).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockIndex } from '../../workers/block-index.js';

type Block = [offset: number, count: number, min: number, max: number];

function walk(index: BlockIndex, tagId: number): Block[] {
  const out: Block[] = [];
  for (let b = index.first(tagId); b >= 0; b = index.next(b)) out.push([index.offset(b), index.count(b), index.min(b), index.max(b)]);
  return out;
}

function check(ids: (i: number) => number, pushes: number, minTags: number): void {
  const index = new BlockIndex();
  const reference = new Map<number, Block[]>();
  let seed = 7;
  const random = (n: number) => ((seed = (seed * 48271) % 2147483647), seed % n);
  for (let i = 0; i < pushes; i++) {
    const tagId = ids(random(pushes));
    const block: Block = [16 + i * 32, 1 + random(100), i * 1000, i * 1000 + random(999)];
    index.push(tagId, ...block);
    if (!reference.has(tagId)) reference.set(tagId, []);
    reference.get(tagId)!.push(block);
  }
  assert.equal(index.blocks, pushes);
  assert.ok(reference.size >= minTags, `${reference.size} tags`);
  assert.deepEqual([...index.tagIds()].sort((a, b) => a - b), [...reference.keys()].sort((a, b) => a - b));
  for (const [tagId, blocks] of reference) assert.deepEqual(walk(index, tagId), blocks, `tag ${tagId}`);
  for (const absent of [-1, 3_000_001, 2 ** 31 - 1]) assert.equal(index.first(absent), -1);
}

test('dense tag ids (an active day log): blocks per tag in order, past the change to an array', () => {
  check((r) => r % 5000, 40_000, 4000); // an array from 1024 tags on
});

test('few tags with far-apart ids (a late log in a large dictionary): stays right as a Map', () => {
  check((r) => (r % 50) * 60_000, 2_000, 50);
});

test('many tags, sparse then dense growth past the array', () => {
  check((r) => (r < 20_000 ? r % 2000 : 2000 + r), 30_000, 5000);
});
