// The shard's memory buffer behind /svcapi/write_buffered: accepted points
// wait here (copied out of the request ring) until the next flush interval.
// Bounded: an add that would pass the capacity is refused, and the route
// answers 503, so memory stays flat however fast clients send.

import type { PointBatch } from '../native-free-codecs/write-body.js';

export class WriteBuffer {
  private entries: Array<{ collectionId: string; batch: PointBatch }> = [];
  pendingPoints = 0;
  /** Per collection, the series pending points will add to its dictionary (storage.maxSeriesPerCollection counts them). */
  private readonly pendingSeries = new Map<string, Set<string>>();
  /** Per collection, the UTC days of pending points (storage.maxUnsealedDaysPerCollection counts them). */
  private readonly pendingDays = new Map<string, Set<number>>();

  constructor(
    readonly capacityPoints: number,
    private readonly write: (collectionId: string, batch: PointBatch) => void,
    private readonly onError: (err: unknown, collectionId: string, points: number) => void = () => {},
  ) {}

  /** False when the points do not fit; nothing is taken then. `newSeries`: tags the collection does not hold yet; `days`: the batch's UTC days. */
  add(collectionId: string, batch: PointBatch, newSeries: readonly string[] = [], days: ReadonlySet<number> = EMPTY_DAYS): boolean {
    if (this.pendingPoints + batch.pointCount > this.capacityPoints) return false;
    if (days.size > 0) {
      let pending = this.pendingDays.get(collectionId);
      if (!pending) this.pendingDays.set(collectionId, (pending = new Set()));
      for (const day of days) pending.add(day);
    }
    if (newSeries.length > 0) {
      let names = this.pendingSeries.get(collectionId);
      if (!names) this.pendingSeries.set(collectionId, (names = new Set()));
      for (const name of newSeries) names.add(name);
    }
    const n = batch.pointCount;
    this.entries.push({
      collectionId,
      batch: {
        scope: batch.scope,
        tagNames: batch.tagNames.slice(),
        ...(batch.labels ? { labels: batch.labels.slice() } : {}),
        tagStart: batch.tagStart.slice(),
        timestamps: batch.timestamps.slice(0, n),
        values: batch.values.slice(0, n),
        pointCount: n,
      },
    });
    this.pendingPoints += n;
    return true;
  }

  /** The series pending points will add to a collection. */
  newSeries(collectionId: string): ReadonlySet<string> {
    return this.pendingSeries.get(collectionId) ?? EMPTY;
  }

  /** The UTC days of a collection's pending points. */
  newDays(collectionId: string): ReadonlySet<number> {
    return this.pendingDays.get(collectionId) ?? EMPTY_DAYS;
  }

  /** Writes every pending batch, oldest first, and empties the buffer. */
  flush(): void {
    const entries = this.entries;
    this.entries = [];
    this.pendingPoints = 0;
    this.pendingSeries.clear();
    this.pendingDays.clear();
    for (const { collectionId, batch } of entries) {
      try {
        this.write(collectionId, batch);
      } catch (err) {
        this.onError(err, collectionId, batch.pointCount);
      }
    }
  }

  /** Forgets pending points of a collection that is being removed. */
  drop(collectionId: string): void {
    this.pendingSeries.delete(collectionId);
    this.pendingDays.delete(collectionId);
    const kept = this.entries.filter((e) => e.collectionId !== collectionId);
    this.pendingPoints = kept.reduce((n, e) => n + e.batch.pointCount, 0);
    this.entries = kept;
  }
}

const EMPTY: ReadonlySet<string> = new Set();
const EMPTY_DAYS: ReadonlySet<number> = new Set();
