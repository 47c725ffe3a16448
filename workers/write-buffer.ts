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

  constructor(
    readonly capacityPoints: number,
    private readonly write: (collectionId: string, batch: PointBatch) => void,
    private readonly onError: (err: unknown, collectionId: string, points: number) => void = () => {},
  ) {}

  /** False when the points do not fit; nothing is taken then. `newSeries`: tags the collection does not hold yet. */
  add(collectionId: string, batch: PointBatch, newSeries: readonly string[] = []): boolean {
    if (this.pendingPoints + batch.pointCount > this.capacityPoints) return false;
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

  /** Writes every pending batch, oldest first, and empties the buffer. */
  flush(): void {
    const entries = this.entries;
    this.entries = [];
    this.pendingPoints = 0;
    this.pendingSeries.clear();
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
    const kept = this.entries.filter((e) => e.collectionId !== collectionId);
    this.pendingPoints = kept.reduce((n, e) => n + e.batch.pointCount, 0);
    this.entries = kept;
  }
}

const EMPTY: ReadonlySet<string> = new Set();
