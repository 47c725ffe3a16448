/**
 * Splits a write batch into day slices: the points of one tag that fall on one UTC day, which
 * become one block of that day's log. Most batches put each tag on a single day, and those
 * slices point straight into the batch's arrays. A tag whose points span days is regrouped by
 * day into scratch arrays (a stable counting sort: write order is kept inside each day, so
 * "later write wins" still holds).
 */

import type { PointBatch } from '../native-free-codecs/write-body.js';
import { MAX_BLOCK_POINTS } from './day-file.js';
import { DAY_MS, dayOf } from './utc-day.js';

export class DaySlice {
  /** Set by the writer once the slice's block is in the file. */
  fileOffset = 0;
  minTs = 0;
  maxTs = 0;
  valueAtMaxTs = 0;

  constructor(
    readonly day: number,
    /** Index into batch.tagNames. */
    readonly tag: number,
    readonly ts: Float64Array,
    readonly values: Float64Array,
    readonly from: number,
    readonly count: number,
  ) {}
}

const KEEP_POINTS = 1 << 20;

export class DaySplitter {
  private scratchTs = new Float64Array(0);
  private scratchValues = new Float64Array(0);

  /** Slices ordered by day, then by tag order in the batch; valid until the next split(). */
  split(batch: PointBatch): DaySlice[] {
    const slices: DaySlice[] = [];
    const { tagStart, timestamps, values } = batch;
    for (let tag = 0; tag < batch.tagNames.length; tag++) {
      const from = tagStart[tag]!;
      const end = tagStart[tag + 1]!;
      if (end === from) continue;
      const day = dayOf(timestamps[from]!);
      const lo = day * DAY_MS;
      const hi = lo + DAY_MS;
      let oneDay = true;
      for (let i = from + 1; i < end; i++) {
        const t = timestamps[i]!;
        if (t < lo || t >= hi) {
          oneDay = false;
          break;
        }
      }
      if (oneDay) pushSlices(slices, day, tag, timestamps, values, from, end - from);
      else this.regroup(slices, tag, batch, from, end);
    }
    // Array sort is stable: within a day, slices stay in batch order.
    slices.sort((a, b) => a.day - b.day);
    return slices;
  }

  /** Counting sort of points [from, end) by day into the scratch arrays, same index range. */
  private regroup(slices: DaySlice[], tag: number, batch: PointBatch, from: number, end: number): void {
    if (this.scratchTs.length < batch.pointCount) {
      this.scratchTs = new Float64Array(batch.pointCount);
      this.scratchValues = new Float64Array(batch.pointCount);
    }
    const { timestamps, values } = batch;
    const perDay = new Map<number, number>();
    for (let i = from; i < end; i++) {
      const day = dayOf(timestamps[i]!);
      perDay.set(day, (perDay.get(day) ?? 0) + 1);
    }
    const days = [...perDay.keys()].sort((a, b) => a - b);
    const next = new Map<number, number>();
    let position = from;
    for (const day of days) {
      const count = perDay.get(day)!;
      next.set(day, position);
      pushSlices(slices, day, tag, this.scratchTs, this.scratchValues, position, count);
      position += count;
    }
    for (let i = from; i < end; i++) {
      const t = timestamps[i]!;
      const day = dayOf(t);
      const p = next.get(day)!;
      this.scratchTs[p] = t;
      this.scratchValues[p] = values[i]!;
      next.set(day, p + 1);
    }
  }

  /** Called after the write: lets go of scratch arrays grown by an unusually large batch. */
  shrink(): void {
    if (this.scratchTs.length > KEEP_POINTS) {
      this.scratchTs = new Float64Array(0);
      this.scratchValues = new Float64Array(0);
    }
  }
}

/** One slice, or several when a tag has more points on a day than one block may hold. */
function pushSlices(slices: DaySlice[], day: number, tag: number, ts: Float64Array, values: Float64Array, from: number, count: number): void {
  for (let done = 0; done < count; done += MAX_BLOCK_POINTS) {
    slices.push(new DaySlice(day, tag, ts, values, from + done, Math.min(MAX_BLOCK_POINTS, count - done)));
  }
}
