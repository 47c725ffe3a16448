/**
 * Where each tag's blocks lie in one day log: per block its file offset, point count and time
 * range, as columns shared by every tag of the log, the blocks of one tag chained in file order.
 * An object per tag (a small list and its typed array in a Map) cost about 340 bytes for a tag
 * with one block, most of a series' memory (issue 34); here a block costs 36 bytes and a tag 4
 * to 8 more.
 *
 * A tag's first block is found through a Map while the log's tags are few or their ids far
 * apart (a late log of a few tags in a large dictionary), and through an array indexed by tag id
 * once they are many and dense (an active day log holds most tags of its collection).
 */

/** Tags a log has before its lookup may become an array by tag id. */
const DENSE_FROM_TAGS = 1024;
/** ...and only if the array would have at most this many slots per tag in the log. */
const DENSE_MAX_SLOTS_PER_TAG = 8;
const NONE = -1;

export class BlockIndex {
  /** Blocks indexed so far. */
  blocks = 0;
  private offsets = new Float64Array(8);
  private minTs = new Float64Array(8);
  private maxTs = new Float64Array(8);
  private counts = new Uint32Array(8);
  /** The next block of the same tag, or NONE. */
  private nextOf = new Int32Array(8);
  /** On a tag's first block: its last block (where the next one is chained). */
  private lastOf = new Int32Array(8);
  /** Tag id -> first block, while sparse. */
  private sparse: Map<number, number> | null = new Map();
  /** Tag id -> first block + 1 (0: none), once dense. */
  private dense: Int32Array | null = null;
  private maxTagId = -1;

  /** Appends a block of `tagId` (blocks come in file order). */
  push(tagId: number, offset: number, count: number, minTs: number, maxTs: number): void {
    const b = this.blocks;
    if (b === this.offsets.length) this.growBlocks();
    this.offsets[b] = offset;
    this.counts[b] = count;
    this.minTs[b] = minTs;
    this.maxTs[b] = maxTs;
    this.nextOf[b] = NONE;
    this.blocks = b + 1;
    const first = this.first(tagId);
    if (first === NONE) {
      this.lastOf[b] = b;
      this.setFirst(tagId, b);
    } else {
      this.nextOf[this.lastOf[first]!] = b;
      this.lastOf[first] = b;
    }
  }

  /** The tag's first block, or -1; `next(block)` walks on in file order. */
  first(tagId: number): number {
    if (this.dense !== null) return tagId >= 0 && tagId < this.dense.length ? this.dense[tagId]! - 1 : NONE;
    return this.sparse!.get(tagId) ?? NONE;
  }

  next(block: number): number {
    return this.nextOf[block]!;
  }

  offset(block: number): number {
    return this.offsets[block]!;
  }

  count(block: number): number {
    return this.counts[block]!;
  }

  min(block: number): number {
    return this.minTs[block]!;
  }

  max(block: number): number {
    return this.maxTs[block]!;
  }

  /** Points in the tag's blocks (a rewritten timestamp counts each time). */
  pointsOf(tagId: number): number {
    let points = 0;
    for (let b = this.first(tagId); b !== NONE; b = this.nextOf[b]!) points += this.counts[b]!;
    return points;
  }

  /** Every tag id with a block (in no particular order). */
  *tagIds(): IterableIterator<number> {
    if (this.sparse !== null) {
      yield* this.sparse.keys();
      return;
    }
    const dense = this.dense!;
    for (let id = 0; id < dense.length; id++) if (dense[id] !== 0) yield id;
  }

  private setFirst(tagId: number, block: number): void {
    if (tagId > this.maxTagId) this.maxTagId = tagId;
    if (this.sparse !== null) {
      this.sparse.set(tagId, block);
      if (this.sparse.size >= DENSE_FROM_TAGS && this.maxTagId < this.sparse.size * DENSE_MAX_SLOTS_PER_TAG) this.becomeDense();
      return;
    }
    let dense = this.dense!;
    if (tagId >= dense.length) {
      const grown = new Int32Array(Math.max(tagId + 1, dense.length * 2));
      grown.set(dense);
      this.dense = dense = grown;
    }
    dense[tagId] = block + 1;
  }

  private becomeDense(): void {
    const dense = new Int32Array(Math.max(16, this.maxTagId + 1 + (this.maxTagId >> 1)));
    for (const [tagId, block] of this.sparse!) dense[tagId] = block + 1;
    this.dense = dense;
    this.sparse = null;
  }

  private growBlocks(): void {
    const size = this.offsets.length * 2;
    const grow = <T extends Float64Array | Uint32Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(size);
      b.set(a);
      return b;
    };
    this.offsets = grow(this.offsets, (n) => new Float64Array(n));
    this.minTs = grow(this.minTs, (n) => new Float64Array(n));
    this.maxTs = grow(this.maxTs, (n) => new Float64Array(n));
    this.counts = grow(this.counts, (n) => new Uint32Array(n));
    this.nextOf = grow(this.nextOf, (n) => new Int32Array(n));
    this.lastOf = grow(this.lastOf, (n) => new Int32Array(n));
  }
}
