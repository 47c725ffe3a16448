// Which written points the main thread wants back for live data (WIRE.md part 2 "Live data over
// WebSocket"): per collection, the tags some socket subscribed to. A write to a collection nobody
// watches costs one map lookup; the points of watched tags ride back on the write's answer.

import type { PointBatch } from '../native-free-codecs/write-body.js';
import type { LivePoints } from '../shared/protocol.js';

export class LiveWatch {
  private readonly collections = new Map<string, Set<string>>();
  /** Tags watched, every collection together (the main thread shows it as a gauge). */
  private total = 0;

  /** Applies one subscription's delta; a collection left with no tags is forgotten. Answers the tags watched now. */
  change(collectionId: string, add: readonly string[], remove: readonly string[], replace: boolean): number {
    let tags = this.collections.get(collectionId);
    if (tags && replace) {
      this.total -= tags.size;
      tags.clear();
    }
    for (const tag of remove) {
      if (tags?.delete(tag)) this.total--;
    }
    if (add.length > 0 && !tags) this.collections.set(collectionId, (tags = new Set()));
    for (const tag of add) {
      if (tags!.has(tag)) continue;
      tags!.add(tag);
      this.total++;
    }
    if (tags && tags.size === 0) this.collections.delete(collectionId);
    return this.total;
  }

  /** The batch's points of watched tags, or null when it has none. */
  collect(collectionId: string, batch: PointBatch): LivePoints | null {
    const watched = this.collections.get(collectionId);
    if (!watched) return null;
    let out: LivePoints | null = null;
    for (let t = 0; t < batch.tagNames.length; t++) {
      const tag = batch.tagNames[t];
      if (!watched.has(tag)) continue;
      out ??= { collectionId, tags: [], counts: [], timestamps: [], values: [] };
      const from = batch.tagStart[t];
      const to = batch.tagStart[t + 1];
      out.tags.push(tag);
      out.counts.push(to - from);
      for (let i = from; i < to; i++) {
        out.timestamps.push(batch.timestamps[i]);
        out.values.push(batch.values[i]);
      }
    }
    return out;
  }
}
