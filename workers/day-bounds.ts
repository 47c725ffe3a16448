/**
 * Bounds on the day files a write may open. Every distinct UTC day of a collection in a write is
 * a day log to create now and to seal later, both on the shard's one thread, so a small body of
 * points spread over many days costs far more than its size says (30,000 one-line days made
 * 30,000 files and held the shard for 18 s). Both bounds are checked before a byte is written.
 */

import type { PointBatch } from '../native-free-codecs/write-body.js';
import { DAY_MS } from './utc-day.js';

/**
 * The distinct UTC days of a batch's points, counted no further than `cap` + 1 (enough for the
 * caller to refuse), so a body of many days costs no more than the bound to look at.
 */
export function batchDays(batch: PointBatch, cap: number): Set<number> {
  const days = new Set<number>();
  const ts = batch.timestamps;
  let last = NaN;
  for (let i = 0; i < batch.pointCount; i++) {
    const day = Math.floor(ts[i]! / DAY_MS);
    // A tag's points of one day mostly come together: one set lookup per run of them.
    if (day === last) continue;
    last = day;
    days.add(day);
    if (days.size > cap) break;
  }
  return days;
}

/** The refusal of a write that passes storage.maxDaysPerWrite. */
export function daysPerWriteMessage(max: number): string {
  return `this write has points on more than ${max} distinct UTC days (counted per collection), more than storage.maxDaysPerWrite (${max}) allows: send at most ${max} days per request; nothing of this write was stored`;
}

/** The refusal of a write that would pass storage.maxUnsealedDaysPerCollection. */
export function unsealedDaysMessage(collectionId: string, wouldBe: number, max: number): string {
  return `collection ${collectionId} would have ${wouldBe} unsealed day files, more than storage.maxUnsealedDaysPerCollection (${max}): retry shortly (its days that ended storage.sealGraceMs ago are being sealed now), or seal its finished days with POST /svcapi/seal_now first; nothing of this write was stored`;
}
