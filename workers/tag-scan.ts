/**
 * A scan of one tag, advanced a UTC day at a time (ShardStore.openScan). In summary mode
 * (`{summary: 'min' | 'max'}`, for a min or max bucket query whose buckets are whole summary
 * slots) a day that lies wholly inside the range is asked for its summary first: when the store
 * has one it may use, the day comes as one point per non-empty slot (slot start, slot min or
 * max) instead of its points; otherwise it is merged from its points as always.
 */

import type { DayMerger } from './day-merge.js';
import { SUMMARY_SLOTS, type SummaryKind } from './sealed-summary.js';
import { dayEndMs, dayStartMs } from './utc-day.js';

export interface ScanOptions {
  /** Days the store has a valid summary for come as slot points of this aggregate. */
  summary?: SummaryKind;
}

/** One day of a scan: views of the scan's buffers, valid until its next nextDay() or close(). */
export interface ScanDay {
  ts: Float64Array;
  values: Float64Array;
  count: number;
}

/** What a TagScan needs of the store (ShardStore). */
export interface ScanSource {
  mergeScanDay(collectionId: string, tagId: number, day: number, start: number, end: number, merger: DayMerger): number;
  /** The day's slot points, or -1 when the day must be read from its points. */
  summaryScanDay(collectionId: string, tagId: number, day: number, kind: SummaryKind, ts: Float64Array, values: Float64Array): number;
  recycleMerger(merger: DayMerger): void;
}

/** See ShardStore.openScan. */
export class TagScan {
  private next = 0;
  private closed = false;
  private readonly summary: SummaryKind | null;
  private readonly slotTs: Float64Array;
  private readonly slotValues: Float64Array;
  /** Days answered from summaries so far (the rest were merged from their points). */
  summaryDays = 0;
  /** Days merged from their points so far. */
  pointDays = 0;

  constructor(
    private readonly store: ScanSource,
    private readonly collectionId: string,
    private readonly tagId: number,
    private readonly start: number,
    private readonly end: number,
    private readonly days: number[],
    private readonly merger: DayMerger,
    options: ScanOptions = {},
  ) {
    this.summary = options.summary ?? null;
    this.slotTs = new Float64Array(this.summary === null ? 0 : SUMMARY_SLOTS);
    this.slotValues = new Float64Array(this.summary === null ? 0 : SUMMARY_SLOTS);
  }

  /** UTC days the scan may still answer (each with or without points in range). */
  get daysLeft(): number {
    return this.closed ? 0 : this.days.length - this.next;
  }

  /** The next day that has points in range, merged; null when the scan is done. */
  nextDay(): ScanDay | null {
    while (!this.closed && this.next < this.days.length) {
      const day = this.days[this.next++]!;
      // A day cut by the range would need its points at the cut: only whole days use summaries.
      if (this.summary !== null && dayStartMs(day) >= this.start && dayEndMs(day) <= this.end) {
        const count = this.store.summaryScanDay(this.collectionId, this.tagId, day, this.summary, this.slotTs, this.slotValues);
        if (count >= 0) {
          this.summaryDays++;
          if (count > 0) return { ts: this.slotTs, values: this.slotValues, count };
          continue;
        }
      }
      this.pointDays++;
      const count = this.store.mergeScanDay(this.collectionId, this.tagId, day, this.start, this.end, this.merger);
      if (count > 0) return { ts: this.merger.resultTs, values: this.merger.resultValues, count };
    }
    return null;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.store.recycleMerger(this.merger);
  }
}
