// The `tag_scopes` table: which collection a tag belongs to, for writes and queries that name no
// scope. The storage workers read the same table (on their own connection) when told it changed;
// storage/tag-scopes.ts holds the rules of who may claim a tag.

import type { Db } from '../database.js';

export class TagScopesTable {
  private readonly upsert;
  private readonly lookup;
  private readonly rename;
  private readonly remove;

  constructor(private readonly db: Db) {
    this.upsert = db.prepare<[string, string, number]>(
      'INSERT INTO tag_scopes (tag, collection, learned_at) VALUES (?, ?, ?) ON CONFLICT(tag) DO UPDATE SET collection = excluded.collection, learned_at = excluded.learned_at',
    );
    this.lookup = db.prepare<[string], string>('SELECT collection FROM tag_scopes WHERE tag = ?').pluck();
    this.rename = db.prepare<[string, string]>('UPDATE tag_scopes SET collection = ? WHERE collection = ?');
    this.remove = db.prepare<[string]>('DELETE FROM tag_scopes WHERE collection = ?');
  }

  collectionOf(tag: string): string | null {
    return this.lookup.get(tag) ?? null;
  }

  bind(tag: string, collectionId: string, at: number): void {
    this.upsert.run(tag, collectionId, at);
  }

  /** Runs `work` in one transaction (or inside the caller's). */
  transaction(work: () => void): void {
    this.db.transaction(work)();
  }

  /** Moves every tag of one collection to another id; how many moved. */
  renameCollection(oldId: string, newId: string): number {
    return this.rename.run(newId, oldId).changes;
  }

  /** Frees every tag of a collection; how many were freed. */
  removeCollection(collectionId: string): number {
    return this.remove.run(collectionId).changes;
  }
}
