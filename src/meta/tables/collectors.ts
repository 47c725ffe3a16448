// The `collectors` table: saved plant collectors (src/collectors/). Rows hold their connection's
// secrets sealed; this module never sees them in plain text.

import type { Db } from '../database.js';

export interface CollectorRow {
  id: string;
  owner: string;
  name: string;
  kind: string;
  enabled: number;
  organization: string;
  site: string;
  unit: string;
  grid: string;
  /** JSON, secrets sealed. */
  connection: string;
  /** JSON array. */
  items: string;
  created_ms: number;
  updated_ms: number;
}

export class CollectorsTable {
  private readonly listAll;
  private readonly one;
  private readonly insert;
  private readonly replaceRow;
  private readonly remove;

  constructor(db: Db) {
    this.listAll = db.prepare<[], CollectorRow>('SELECT * FROM collectors ORDER BY created_ms, id');
    this.one = db.prepare<[string], CollectorRow>('SELECT * FROM collectors WHERE id = ?');
    this.insert = db.prepare<[CollectorRow]>(
      'INSERT INTO collectors (id, owner, name, kind, enabled, organization, site, unit, grid, connection, items, created_ms, updated_ms) ' +
        'VALUES (@id, @owner, @name, @kind, @enabled, @organization, @site, @unit, @grid, @connection, @items, @created_ms, @updated_ms)',
    );
    this.replaceRow = db.prepare<[CollectorRow]>(
      'UPDATE collectors SET owner = @owner, name = @name, kind = @kind, enabled = @enabled, organization = @organization, site = @site, unit = @unit, ' +
        'grid = @grid, connection = @connection, items = @items, updated_ms = @updated_ms WHERE id = @id',
    );
    this.remove = db.prepare<[string]>('DELETE FROM collectors WHERE id = ?');
  }

  all(): CollectorRow[] {
    return this.listAll.all();
  }

  get(id: string): CollectorRow | null {
    return this.one.get(id) ?? null;
  }

  create(row: CollectorRow): void {
    this.insert.run(row);
  }

  update(row: CollectorRow): void {
    this.replaceRow.run(row);
  }

  delete(id: string): boolean {
    return this.remove.run(id).changes > 0;
  }
}
