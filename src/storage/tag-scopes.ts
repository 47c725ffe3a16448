// The tag-to-scope map, main-thread side: learned from every write that names
// its scope (the worker reports tags new to a collection) and from tagmeta
// rows whose dataTagId names a storage tag. Persisted in the metadata store;
// workers read the same table and are told of changes through a version slot.

import type { Db } from '../meta/database.js';

export class TagScopes {
  private readonly upsert;
  private readonly lookup;

  constructor(private readonly db: Db, private readonly changed: () => void) {
    this.upsert = db.prepare<[string, string, number]>(
      'INSERT INTO tag_scopes (tag, collection, learned_at) VALUES (?, ?, ?) ON CONFLICT(tag) DO UPDATE SET collection = excluded.collection, learned_at = excluded.learned_at',
    );
    this.lookup = db.prepare<[string], string>('SELECT collection FROM tag_scopes WHERE tag = ?').pluck();
  }

  collectionOf(tag: string): string | null {
    return this.lookup.get(tag) ?? null;
  }

  /** Records that `tags` live in `collectionId` (the latest write wins for a tag seen in two collections). */
  learn(collectionId: string, tags: readonly string[]): void {
    if (tags.length === 0) return;
    const now = Date.now();
    let changed = false;
    this.db.transaction(() => {
      for (const tag of tags) {
        if (this.collectionOf(tag) === collectionId) continue;
        this.upsert.run(tag, collectionId, now);
        changed = true;
      }
    })();
    if (changed) this.changed();
  }

  /** After a folder rename: every tag of a collection whose id starts with `oldPrefix` moves. */
  renamePrefix(oldPrefix: string, newPrefix: string): void {
    const rows = this.db.prepare('SELECT tag, collection FROM tag_scopes WHERE substr(collection, 1, ?) = ?').all(oldPrefix.length, oldPrefix) as Array<{ tag: string; collection: string }>;
    if (rows.length === 0) return;
    const update = this.db.prepare('UPDATE tag_scopes SET collection = ? WHERE tag = ?');
    this.db.transaction(() => {
      for (const row of rows) update.run(newPrefix + row.collection.slice(oldPrefix.length), row.tag);
    })();
    this.changed();
  }

  removeCollection(collectionId: string): void {
    if (this.db.prepare('DELETE FROM tag_scopes WHERE collection = ?').run(collectionId).changes > 0) this.changed();
  }
}
