// What the monitor needs of the writes: for each watched tag, the highest and lowest value
// written since the last tick (and when), so a value that crosses a limit and comes back between
// two ticks is still seen. Updated as writes are appended (one map lookup per collection per
// write when nothing in it is watched); read and reset once per tick by MONITOR_SAMPLE, which
// also gives each tag's last value from the store. Backfilled writes are not shown to it.

import type { PointBatch } from '../native-free-codecs/write-body.js';
import { MONITOR_SAMPLE_STRIDE, type MonitorSample, type MonitorSampleRequest } from '../shared/protocol.js';
import type { ShardStore } from './shard-store.js';

interface Extremes {
  maxTs: number;
  max: number;
  minTs: number;
  min: number;
  points: number;
  /** The newest point written since the watch began (the store's last value may lag a buffered write). */
  lastTs: number;
  last: number;
  /** Newest backfilled timestamp (-Infinity: none since the watch began). */
  backfillTs: number;
  /** The store's last point just before the first backfill (NaN: none), which backfill must not displace. */
  beforeBackfillTs: number;
  beforeBackfill: number;
}

interface CollectionWatch {
  version: number;
  tags: string[];
  /** By tag name, for the writes; the same objects in `tags` order, for the ticks. */
  byTag: Map<string, Extremes>;
  extremes: Extremes[];
  /** Each tag's id in the collection's dictionary (-1: not written yet, looked up again each tick). */
  tagIds: Int32Array;
  /** Whether some tag has no id yet. */
  unknownIds: boolean;
}

const fresh = (): Extremes => ({ maxTs: NaN, max: -Infinity, minTs: NaN, min: Infinity, points: 0, lastTs: -Infinity, last: NaN, backfillTs: -Infinity, beforeBackfillTs: NaN, beforeBackfill: NaN });

/** Bound on tags whose backfills are remembered (over it the memory starts again). */
const MAX_BACKFILLED_TAGS = 200_000;

export class MonitorWatch {
  private readonly collections = new Map<string, CollectionWatch>();
  /** Per collection and tag: the newest backfilled time and the live point before the first backfill. */
  private readonly backfilled = new Map<string, Map<string, { backfillTs: number; beforeBackfillTs: number; beforeBackfill: number }>>();
  private backfilledTags = 0;

  constructor(private readonly store: ShardStore) {}

  /** Folds appended points into the extremes of the watched tags among them. */
  observe(collectionId: string, batch: PointBatch): void {
    const watch = this.collections.get(collectionId);
    if (!watch) return;
    for (let t = 0; t < batch.tagNames.length; t++) {
      const e = watch.byTag.get(batch.tagNames[t]);
      if (!e) continue;
      for (let i = batch.tagStart[t]; i < batch.tagStart[t + 1]; i++) {
        const v = batch.values[i];
        if (v !== v) continue; // NaN: a gap in a binary row, not a value
        const ts = batch.timestamps[i];
        if (v > e.max) {
          e.max = v;
          e.maxTs = ts;
        }
        if (v < e.min) {
          e.min = v;
          e.minTs = ts;
        }
        if (ts >= e.lastTs) {
          e.lastTs = ts;
          e.last = v;
        }
        e.points++;
      }
    }
  }

  /**
   * Called before backfilled points are appended (they are never observed): remembers, for the
   * watched tags among them, the store's last point before the first backfill and the newest
   * backfilled time, so a backfilled point that becomes the store's newest is not shown to the
   * monitor as the tag's current value.
   */
  beforeBackfill(collectionId: string, batch: PointBatch): void {
    const watch = this.collections.get(collectionId);
    let seen = this.backfilled.get(collectionId);
    if (!seen) {
      if (this.backfilledTags >= MAX_BACKFILLED_TAGS) {
        this.backfilled.clear();
        this.backfilledTags = 0;
      }
      this.backfilled.set(collectionId, (seen = new Map()));
    }
    const one = new Float64Array(MONITOR_SAMPLE_STRIDE);
    for (let t = 0; t < batch.tagNames.length; t++) {
      if (batch.tagStart[t] === batch.tagStart[t + 1]) continue;
      const tag = batch.tagNames[t];
      // Kept whether or not the tag is watched now: a rule made later must not take a backfilled point for the current value.
      let mark = seen.get(tag);
      if (!mark) {
        mark = { backfillTs: -Infinity, beforeBackfillTs: NaN, beforeBackfill: NaN };
        const id = this.store.tagIndex(collectionId, tag);
        if (id >= 0) {
          one.fill(NaN);
          this.store.lastValuesInto(collectionId, Int32Array.of(id), one, MONITOR_SAMPLE_STRIDE);
          mark.beforeBackfillTs = one[0];
          mark.beforeBackfill = one[1];
        }
        seen.set(tag, mark);
        this.backfilledTags++;
      }
      for (let i = batch.tagStart[t]; i < batch.tagStart[t + 1]; i++) if (batch.timestamps[i] > mark.backfillTs) mark.backfillTs = batch.timestamps[i];
      const e = watch?.byTag.get(tag);
      if (e) {
        if (e.backfillTs === -Infinity) {
          e.beforeBackfillTs = mark.beforeBackfillTs;
          e.beforeBackfill = mark.beforeBackfill;
        }
        if (mark.backfillTs > e.backfillTs) e.backfillTs = mark.backfillTs;
      }
    }
  }

  /** A new watch of a tag, knowing what was backfilled into it before (so its first sample is not a backfilled point). */
  private freshFor(collectionId: string, tag: string): Extremes {
    const e = fresh();
    const mark = this.backfilled.get(collectionId)?.get(tag);
    if (mark) {
      e.backfillTs = mark.backfillTs;
      e.beforeBackfillTs = mark.beforeBackfillTs;
      e.beforeBackfill = mark.beforeBackfill;
    }
    return e;
  }

  /** Forgets every watch (the store is being replaced: its tag ids may change); the next tick sends the lists again. */
  reset(): void {
    this.collections.clear();
    this.backfilled.clear();
    this.backfilledTags = 0;
  }

  sample(requests: MonitorSampleRequest[]): MonitorSample[] {
    return requests.map((request) => this.sampleOne(request));
  }

  private sampleOne({ collectionId, version, tags }: MonitorSampleRequest): MonitorSample {
    if (!this.store.hasCollection(collectionId)) {
      this.collections.delete(collectionId);
      return { collectionId, missing: true };
    }
    let watch = this.collections.get(collectionId);
    let tagIndexes: number[] | undefined;
    if (tags && tags.length === 0) {
      // The collection is no longer monitored (or the monitor is off): stop looking at its writes.
      this.collections.delete(collectionId);
      return { collectionId, values: new Float64Array(0), tagIndexes: [] };
    }
    if (tags) {
      const byTag = new Map<string, Extremes>();
      for (const tag of tags) byTag.set(tag, watch?.byTag.get(tag) ?? this.freshFor(collectionId, tag));
      watch = { version, tags: tags.slice(), byTag, extremes: tags.map((tag) => byTag.get(tag)!), tagIds: new Int32Array(tags.length).fill(-1), unknownIds: true };
      this.collections.set(collectionId, watch);
    } else if (!watch || watch.version !== version) {
      return { collectionId, resend: true };
    }
    if (watch.unknownIds) {
      watch.unknownIds = false;
      for (let i = 0; i < watch.tags.length; i++) {
        if (watch.tagIds[i] < 0) watch.tagIds[i] = this.store.tagIndex(collectionId, watch.tags[i]);
        if (watch.tagIds[i] < 0) watch.unknownIds = true;
      }
    }
    if (tags) tagIndexes = Array.from(watch.tagIds);
    const values = new Float64Array(watch.tags.length * MONITOR_SAMPLE_STRIDE).fill(NaN);
    this.store.lastValuesInto(collectionId, watch.tagIds, values, MONITOR_SAMPLE_STRIDE);
    for (let i = 0; i < watch.tags.length; i++) {
      const e = watch.extremes[i];
      const at = i * MONITOR_SAMPLE_STRIDE;
      // The store's newest point is a backfilled one: the monitor sees the newest live point instead.
      if (values[at] <= e.backfillTs && values[at] > e.lastTs) {
        const keep = e.beforeBackfillTs === e.beforeBackfillTs && e.beforeBackfillTs > e.lastTs;
        values[at] = keep ? e.beforeBackfillTs : e.lastTs > -Infinity ? e.lastTs : NaN;
        values[at + 1] = keep ? e.beforeBackfill : e.last;
      }
      // A buffered write is seen here before the store has it.
      if (e.lastTs > -Infinity && !(values[at] >= e.lastTs)) {
        values[at] = e.lastTs;
        values[at + 1] = e.last;
      }
      if (e.points > 0) {
        values[at + 2] = e.maxTs;
        values[at + 3] = e.max;
        values[at + 4] = e.minTs;
        values[at + 5] = e.min;
      }
      values[at + 6] = e.points;
      e.max = -Infinity;
      e.min = Infinity;
      e.maxTs = e.minTs = NaN;
      e.points = 0;
    }
    return { collectionId, values, ...(tagIndexes ? { tagIndexes } : {}) };
  }
}
