/**
 * Merges everything stored for one tag on one UTC day (sealed block, active blocks, late
 * blocks) into its query answer: sorted by timestamp, one point per timestamp, the later write
 * winning. Points are added in write order (sealed first, then blocks in file order), so "later
 * write" is simply "added later".
 *
 * Sorting without per-point objects: inside one day, (ts - dayStart) < 2^27 and a point's add
 * position fits in 26 bits, so `(ts - dayStart) * 2^26 + position` is an exact integer below
 * 2^53. Sorting those keys with the engine's native numeric sort orders by timestamp and, for
 * equal timestamps, by write order; dedup then keeps the last of each run. A day with more than
 * 2^26 points for one tag (over 700 a second) falls back to a comparator sort.
 */

import { DAY_MS } from './utc-day.js';

const POSITION_SPAN = 2 ** 26;
/** Buffers above this many points are dropped after use rather than kept for the next query. */
const KEEP_POINTS = 1 << 20;

export class DayMerger {
  private ts = new Float64Array(4096);
  private values = new Float64Array(4096);
  private keys = new Float64Array(0);
  private sortedTs = new Float64Array(0);
  private sortedValues = new Float64Array(0);
  private count = 0;
  private dayStart = 0;
  private lo = 0;
  private hi = 0;
  private lastAdded = -Infinity;
  private inOrder = true;
  /** After finish(): the answer in [0, count). Valid until the next begin(). */
  resultTs: Float64Array = this.ts;
  resultValues: Float64Array = this.values;

  /** Starts a day; only points in [lo, hi] (clamped to the day) are kept. */
  begin(dayStart: number, lo: number, hi: number): void {
    this.dayStart = dayStart;
    this.lo = Math.max(lo, dayStart);
    this.hi = Math.min(hi, dayStart + DAY_MS - 1);
    this.count = 0;
    this.lastAdded = -Infinity;
    this.inOrder = true;
  }

  /** Makes room for `n` more points and returns where they go in tsBuffer/valueBuffer. */
  reserve(n: number): number {
    const need = this.count + n;
    if (need > this.ts.length) {
      let size = this.ts.length * 2;
      while (size < need) size *= 2;
      const ts = new Float64Array(size);
      const values = new Float64Array(size);
      ts.set(this.ts.subarray(0, this.count));
      values.set(this.values.subarray(0, this.count));
      this.ts = ts;
      this.values = values;
    }
    return this.count;
  }

  get tsBuffer(): Float64Array {
    return this.ts;
  }

  get valueBuffer(): Float64Array {
    return this.values;
  }

  /** Keeps the in-range points among the `n` written in place at reserve()'s position. */
  commit(n: number): void {
    this.keep(this.ts, this.values, this.count, n);
  }

  /** Adds points [from, from + n) of other arrays. */
  add(ts: Float64Array, values: Float64Array, from: number, n: number): void {
    this.reserve(n);
    this.keep(ts, values, from, n);
  }

  private keep(ts: Float64Array, values: Float64Array, from: number, n: number): void {
    const outTs = this.ts;
    const outValues = this.values;
    const lo = this.lo;
    const hi = this.hi;
    let m = this.count;
    let last = this.lastAdded;
    let inOrder = this.inOrder;
    for (let i = from, end = from + n; i < end; i++) {
      const t = ts[i]!;
      if (t < lo || t > hi) continue;
      if (t <= last) inOrder = false;
      last = t;
      outTs[m] = t;
      outValues[m] = values[i]!;
      m++;
    }
    this.count = m;
    this.lastAdded = last;
    this.inOrder = inOrder;
  }

  /** Sorts and deduplicates; returns the number of points in resultTs/resultValues. */
  finish(): number {
    const n = this.count;
    if (this.inOrder) {
      this.resultTs = this.ts;
      this.resultValues = this.values;
      return n;
    }
    if (this.sortedTs.length < n) {
      this.sortedTs = new Float64Array(this.ts.length);
      this.sortedValues = new Float64Array(this.ts.length);
    }
    const m = n <= POSITION_SPAN ? this.sortByKeys(n) : this.sortByComparator(n);
    this.resultTs = this.sortedTs;
    this.resultValues = this.sortedValues;
    return m;
  }

  private sortByKeys(n: number): number {
    if (this.keys.length < n) this.keys = new Float64Array(this.ts.length);
    const keys = this.keys.subarray(0, n);
    const ts = this.ts;
    const base = this.dayStart;
    for (let i = 0; i < n; i++) keys[i] = (ts[i]! - base) * POSITION_SPAN + i;
    keys.sort();
    const values = this.values;
    const outTs = this.sortedTs;
    const outValues = this.sortedValues;
    let m = 0;
    for (let k = 0; k < n; k++) {
      const key = keys[k]!;
      const offset = Math.floor(key / POSITION_SPAN);
      const i = key - offset * POSITION_SPAN;
      const t = base + offset;
      if (m > 0 && outTs[m - 1] === t) {
        outValues[m - 1] = values[i]!; // same timestamp, later write
      } else {
        outTs[m] = t;
        outValues[m] = values[i]!;
        m++;
      }
    }
    return m;
  }

  private sortByComparator(n: number): number {
    const ts = this.ts;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => ts[a]! - ts[b]! || a - b);
    const values = this.values;
    const outTs = this.sortedTs;
    const outValues = this.sortedValues;
    let m = 0;
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      const t = ts[i]!;
      if (m > 0 && outTs[m - 1] === t) {
        outValues[m - 1] = values[i]!;
      } else {
        outTs[m] = t;
        outValues[m] = values[i]!;
        m++;
      }
    }
    return m;
  }

  /** Drops buffers grown by an unusually large day so they do not stay pinned. */
  shrink(): void {
    if (this.ts.length > KEEP_POINTS) {
      this.ts = new Float64Array(4096);
      this.values = new Float64Array(4096);
    }
    if (this.keys.length > KEEP_POINTS) this.keys = new Float64Array(0);
    if (this.sortedTs.length > KEEP_POINTS) {
      this.sortedTs = new Float64Array(0);
      this.sortedValues = new Float64Array(0);
    }
    this.resultTs = this.ts;
    this.resultValues = this.values;
    this.count = 0;
  }
}
