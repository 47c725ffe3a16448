// The tag-to-scope map as a worker reads it: which collection a tag belongs
// to when a write names no scope. The main thread owns the table (in the
// metadata SQLite file) and bumps a version slot after each change; the
// worker reads through its own read-only connection and drops its cache when
// the version moves. Workers never write the metadata store.

import path from 'node:path';
import Database from 'better-sqlite3';

export class TagScopeReader {
  private db: Database.Database | null = null;
  private lookup: Database.Statement<[string], string> | null = null;
  private readonly cache = new Map<string, string | null>();
  private cachedVersion = -1;

  constructor(private readonly dataDir: string, private readonly version: () => number) {}

  collectionOf(tag: string): string | null {
    const version = this.version();
    if (version !== this.cachedVersion) {
      this.cache.clear();
      this.cachedVersion = version;
    }
    const cached = this.cache.get(tag);
    if (cached !== undefined) return cached;
    const found = this.statement().get(tag) ?? null;
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(tag, found);
    return found;
  }

  private statement(): Database.Statement<[string], string> {
    if (!this.lookup) {
      this.db = new Database(path.join(this.dataDir, 'metadata.sqlite'), { readonly: true, fileMustExist: true });
      this.db.pragma('busy_timeout = 5000');
      this.lookup = this.db.prepare<[string], string>('SELECT collection FROM tag_scopes WHERE tag = ?').pluck();
    }
    return this.lookup;
  }
}
