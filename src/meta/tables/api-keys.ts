// The `api_keys` table (migration 11): API keys as stored, the key itself never (only its
// SHA-256). auth/api-keys.ts keeps every row in memory and is the only reader; it writes here on
// create and revoke, and `last_used_ms` in batches.

import type { Db } from '../database.js';

/** An `api_keys` row as stored. */
export interface ApiKeyRow {
  id: string;
  /** The creator's email. */
  owner: string;
  /** The creator's `users.id`. */
  owner_id: number;
  name: string;
  role: string;
  /** Hex SHA-256 of the key. */
  key_hash: string;
  /** The key's first characters, to tell keys apart in a list. */
  prefix: string;
  created_ms: number;
  expires_ms: number | null;
  last_used_ms: number | null;
}

export class ApiKeysTable {
  private readonly everyRow;
  private readonly insertRow;
  private readonly deleteRow;
  private readonly deleteOwned;
  private readonly markUsed;

  constructor(private readonly db: Db) {
    this.everyRow = db.prepare<[], ApiKeyRow>('SELECT id, owner, owner_id, name, role, key_hash, prefix, created_ms, expires_ms, last_used_ms FROM api_keys');
    this.insertRow = db.prepare<[ApiKeyRow]>(
      `INSERT INTO api_keys (id, owner, owner_id, name, role, key_hash, prefix, created_ms, expires_ms, last_used_ms)
       VALUES (@id, @owner, @owner_id, @name, @role, @key_hash, @prefix, @created_ms, @expires_ms, @last_used_ms)`,
    );
    this.deleteRow = db.prepare<[string]>('DELETE FROM api_keys WHERE id = ?');
    this.deleteOwned = db.prepare<[number]>('DELETE FROM api_keys WHERE owner_id = ?');
    // Never moves it back: a batch from before a reload may carry an older time than the row.
    this.markUsed = db.prepare<[number, string]>('UPDATE api_keys SET last_used_ms = max(coalesce(last_used_ms, 0), ?) WHERE id = ?');
  }

  all(): ApiKeyRow[] {
    return this.everyRow.all();
  }

  insert(row: ApiKeyRow): void {
    this.insertRow.run(row);
  }

  /** Rows removed (0 or 1). */
  delete(id: string): number {
    return this.deleteRow.run(id).changes;
  }

  /** Removes every key of user `ownerId` (the account is being deleted); how many. */
  deleteOwnedBy(ownerId: number): number {
    return this.deleteOwned.run(ownerId).changes;
  }

  /** Writes the last use of each key in one transaction (keys revoked meanwhile are skipped). */
  setLastUsed(uses: ReadonlyMap<string, number>): void {
    this.db.transaction(() => {
      for (const [id, at] of uses) this.markUsed.run(at, id);
    })();
  }
}
