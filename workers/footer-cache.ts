/**
 * The footers of sealed files and parts a shard has read, least recently used first, bounded in
 * number (a footer is a few dozen bytes per tag). Each collection keeps its own by file path
 * (Collection.sealedIndexes), so closing a collection forgets its footers with it.
 */

import type { Collection } from './collection.js';
import { SealedIndex } from './sealed-file.js';

export class FooterCache {
  /** Every cached footer and its collection, least recently used first. */
  private readonly lru = new Map<SealedIndex, Collection>();

  constructor(private readonly max: number) {}

  /** The footer of a sealed day. */
  sealed(collection: Collection, day: number): SealedIndex {
    return this.get(collection, collection.sealedPath(day), day);
  }

  /** The footers of the day's sealed file (if any) and parts, in write order: oldest first. */
  ofDay(collection: Collection, day: number): SealedIndex[] {
    const files: SealedIndex[] = [];
    if (collection.sealedBytes.has(day)) files.push(this.sealed(collection, day));
    for (const part of collection.parts.get(day) ?? []) files.push(this.get(collection, part.path, day));
    return files;
  }

  /** The footer of a sealed file or part, from the cache or the file. */
  get(collection: Collection, filePath: string, day: number): SealedIndex {
    const cached = collection.sealedIndexes.get(filePath);
    if (cached !== undefined) {
      this.lru.delete(cached);
      this.lru.set(cached, collection);
      return cached;
    }
    const index = SealedIndex.read(filePath, day);
    this.put(collection, index);
    return index;
  }

  /** Caches a footer just written (replacing one of the same path). */
  put(collection: Collection, index: SealedIndex): void {
    this.forget(collection, index.path);
    collection.sealedIndexes.set(index.path, index);
    this.lru.set(index, collection);
    for (const [oldest, owner] of this.lru) {
      if (this.lru.size <= this.max) break;
      this.lru.delete(oldest);
      owner.sealedIndexes.delete(oldest.path);
    }
  }

  /** Forgets the footer of a file that is gone or replaced. */
  forget(collection: Collection, filePath: string): void {
    const index = collection.sealedIndexes.get(filePath);
    if (index === undefined) return;
    collection.sealedIndexes.delete(filePath);
    this.lru.delete(index);
  }

  /** Forgets every footer of a collection being closed. */
  forgetCollection(collection: Collection): void {
    for (const index of collection.sealedIndexes.values()) this.lru.delete(index);
    collection.sealedIndexes.clear();
  }
}
