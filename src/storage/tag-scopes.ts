// The tag-to-scope map, main-thread side: learned from every write that names
// its scope (the worker reports tags new to a collection) and from tagmeta
// rows whose dataTagId names a storage tag. Persisted in the metadata store
// (meta/tables/tag-scopes.ts);
// workers read the same table and are told of changes through a version slot.
//
// A tag belongs to one collection, the first it was written to or bound to:
// a later write of the same tag name into another collection does not move
// it, and a tagmeta row that would move it is refused. Otherwise any tenant
// could re-point another's tag (by name, the map is global) and catch or
// block its scope-less writes and reads. A binding whose collection is gone
// is free again.

import type { TagScopesTable } from '../meta/tables/tag-scopes.js';

export class TagScopes {
  /** `changed` tells the workers to read the map again; `exists` whether a collection id is still in the catalog. */
  constructor(
    private readonly table: TagScopesTable,
    private readonly changed: () => void,
    private readonly exists: (collectionId: string) => boolean = () => true,
  ) {}

  collectionOf(tag: string): string | null {
    return this.table.collectionOf(tag);
  }

  /** Records that `tags` live in `collectionId`, for each tag no other existing collection owns. */
  learn(collectionId: string, tags: readonly string[]): void {
    if (tags.length === 0) return;
    const now = Date.now();
    let changed = false;
    this.table.transaction(() => {
      for (const tag of tags) {
        const owner = this.collectionOf(tag);
        if (owner === collectionId || (owner !== null && this.exists(owner))) continue;
        this.table.bind(tag, collectionId, now);
        changed = true;
      }
    });
    if (changed) this.changed();
  }

  /**
   * Binds `tag` to `collectionId` unless another existing collection owns it, in which case
   * nothing changes and `owner` names it. Runs inside the caller's transaction and does not
   * tell the workers: the caller calls notifyChanged() once that transaction has committed.
   */
  claim(collectionId: string, tag: string): { owner: string | null; changed: boolean } {
    const owner = this.collectionOf(tag);
    if (owner === collectionId) return { owner: null, changed: false };
    if (owner !== null && this.exists(owner)) return { owner, changed: false };
    this.table.bind(tag, collectionId, Date.now());
    return { owner: null, changed: true };
  }

  notifyChanged(): void {
    this.changed();
  }

  /** After a folder move: the tags of one collection follow it to its new id. */
  renameCollection(oldId: string, newId: string): void {
    if (this.table.renameCollection(oldId, newId) > 0) this.changed();
  }

  removeCollection(collectionId: string): void {
    if (this.table.removeCollection(collectionId) > 0) this.changed();
  }
}
