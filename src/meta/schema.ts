// Brings the SQLite schema in line with the entity registry at start: creates
// missing entity tables, adds missing columns and foreign-key indexes. Every
// statement is idempotent, so a registry that grows needs no hand-written
// migration; only changes that are not additions would.
//
// Foreign keys are plain indexed integer columns, not SQL constraints: the
// contract accepts rows whose parent is absent, and cascades are done by the
// entity store so that lifecycle hooks see every row that goes.

import type { Db } from './database.js';
import type { ColumnKind, Registry } from './registry.js';

const SQL_TYPE: Record<ColumnKind, string> = {
  fk: 'INTEGER', text: 'TEXT', integer: 'INTEGER', boolean: 'INTEGER', json: 'TEXT', secret: 'TEXT',
};

/** Any table or column name as a quoted SQL identifier (names read from the schema itself: a copy's, a peer's). */
export function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Registry names are trusted, but still checked before they are used as identifiers. */
export function ident(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`bad identifier ${name}`);
  return `"${name}"`;
}

export function syncEntitySchema(db: Db, registry: Registry): void {
  db.transaction(() => {
    for (const def of registry.entities) {
      const idColumn = def.textId ? 'id TEXT PRIMARY KEY' : 'id INTEGER PRIMARY KEY AUTOINCREMENT';
      db.exec(`CREATE TABLE IF NOT EXISTS ${ident(def.table)} (${idColumn}, meta_data TEXT NOT NULL DEFAULT '{}')`);
      const existing = new Set((db.prepare(`PRAGMA table_info(${ident(def.table)})`).all() as Array<{ name: string }>).map((c) => c.name));
      for (const column of def.columns) {
        if (!existing.has(column.name)) {
          db.exec(`ALTER TABLE ${ident(def.table)} ADD COLUMN ${ident(column.name)} ${SQL_TYPE[column.kind]}`);
        }
        if (column.kind === 'fk' || column.unique) {
          const unique = column.unique ? 'UNIQUE ' : '';
          db.exec(`CREATE ${unique}INDEX IF NOT EXISTS ${ident(`${def.table}_${column.name}`)} ON ${ident(def.table)} (${ident(column.name)})`);
        }
      }
    }
  })();
}
