// What is done to the metadata store as a whole rather than to a table: the online backup, the
// checks and migration of a backup's copy, a restore that replaces every row, and what a
// cluster's snapshot and applier do with rows of whatever table (read all, replace all, apply
// one change by primary key). Whatever replaces rows here emits the store's events
// (`replacing`, `replaced`) itself, so no cache can be forgotten.

import Database from 'better-sqlite3';
import { badRequest } from '../../shared/errors.js';
import { migrate, type Db } from './database.js';
import type { MetaEvents } from './events.js';
import { MIGRATIONS } from './migrations.js';
import type { Registry } from './registry.js';
import { quoteName as q, syncEntitySchema } from './schema.js';

/** A table as replication sees it: its columns and its primary key (['rowid'] when it has none). */
export interface TableShape {
  name: string;
  columns: string[];
  key: string[];
}

/** Rows of tables by name, each with its column names (a cluster's snapshot). */
export type TableRows = Record<string, { columns: string[]; rows: unknown[][] }>;

/** A change to one row, as the cluster's triggers record it. */
export interface RowChange {
  t: string;
  op: 'insert' | 'update' | 'delete';
  c: string[];
  v: unknown[][];
}

/**
 * A node's own bookkeeping, which describes this node and not the data (the cluster's
 * replication log, its position and term, the shadow writes it applied): a restore keeps it.
 */
const NODE_BOOKKEEPING = new Set(['cluster_log', 'cluster_epochs', 'cluster_peers', 'cluster_term', 'shadow_writes_applied']);


/** Why a backup's copy cannot be restored (its message says it, for a 400). */
export class UnsoundCopyError extends Error {
  override readonly name = 'UnsoundCopyError';
}

export class WholeStore {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Db,
    private readonly registry: Registry,
    private readonly events: MetaEvents,
  ) {}

  /** Runs `work` in one transaction. */
  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  /** The online backup of SQLite into `file`: one consistent state while writes go on. */
  async backupTo(file: string, progress: (done: number) => void): Promise<void> {
    await this.db.backup(file, {
      progress: ({ totalPages, remainingPages }) => {
        progress(1 - remainingPages / Math.max(1, totalPages));
        return 200;
      },
    });
    // A plain one-file database (the copy keeps the live one's WAL mode otherwise).
    const copy = new Database(file);
    try {
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
  }

  /**
   * Checks a copy of a backup (integrity, schema version, that it is a metadata store of this
   * service) and brings it to this build's schema; UnsoundCopyError says what is wrong.
   */
  prepareCopy(file: string): void {
    let copy: Database.Database;
    try {
      copy = new Database(file, { fileMustExist: true });
    } catch (err) {
      throw new UnsoundCopyError(`not a SQLite database (${(err as Error).message})`);
    }
    try {
      let check: unknown;
      try {
        check = copy.pragma('integrity_check', { simple: true });
      } catch (err) {
        throw new UnsoundCopyError(`integrity_check could not run (${(err as Error).message})`);
      }
      if (check !== 'ok') throw new UnsoundCopyError(`integrity_check says ${String(check)}`);
      const version = copy.pragma('user_version', { simple: true }) as number;
      if (version > MIGRATIONS.length) throw new UnsoundCopyError(`it is at schema version ${version}, newer than this build (${MIGRATIONS.length})`);
      if (version < 1 || !copy.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'users'").get()) throw new UnsoundCopyError('it is not a metadata store of this service');
      copy.pragma('journal_mode = DELETE');
      migrate(copy);
      syncEntitySchema(copy, this.registry);
    } finally {
      copy.close();
    }
  }

  /**
   * Replaces every row of the live store by those of a prepared copy, in one transaction on this
   * connection, so every holder of it sees the restored store at once and a crash leaves the old
   * or the new. This node's own bookkeeping (NODE_BOOKKEEPING) stays as it is.
   * `hooks.inside` runs last in the transaction (a throw there rolls it back); `hooks.committed`
   * right after the commit, before the `replaced` event (what follows the event sees both).
   */
  replaceFrom(file: string, hooks: { inside?: () => void; committed?: () => void } = {}): { tables: number; rows: number } {
    const db = this.db;
    this.events.replacing.emit();
    db.prepare('ATTACH DATABASE ? AS restored').run(file);
    let tables = 0;
    let rows = 0;
    const replaced = new Set<string>();
    try {
      const names = (db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[]).filter((n) => !NODE_BOOKKEEPING.has(n));
      const restoredNames = new Set(db.prepare("SELECT name FROM restored.sqlite_master WHERE type = 'table'").pluck().all() as string[]);
      db.transaction(() => {
        db.pragma('defer_foreign_keys = ON');
        for (const name of names) {
          db.prepare(`DELETE FROM main.${q(name)}`).run();
          replaced.add(name);
          if (!restoredNames.has(name)) continue;
          const restoredColumns = new Set((db.prepare(`PRAGMA restored.table_info(${q(name)})`).all() as Array<{ name: string }>).map((c) => c.name));
          const columns = (db.prepare(`PRAGMA main.table_info(${q(name)})`).all() as Array<{ name: string }>).map((c) => c.name).filter((c) => restoredColumns.has(c));
          const list = columns.map(q).join(', ');
          rows += db.prepare(`INSERT INTO main.${q(name)} (${list}) SELECT ${list} FROM restored.${q(name)}`).run().changes;
          tables++;
        }
        if (restoredNames.has('sqlite_sequence')) {
          // AUTOINCREMENT counters go with their tables; the bookkeeping's (the replication log's ids) stay.
          const kept = JSON.stringify([...NODE_BOOKKEEPING]);
          db.prepare('DELETE FROM main.sqlite_sequence WHERE name NOT IN (SELECT value FROM json_each(?))').run(kept);
          db.prepare('INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq FROM restored.sqlite_sequence WHERE name NOT IN (SELECT value FROM json_each(?))').run(kept);
        }
        hooks.inside?.();
      })();
    } finally {
      db.prepare('DETACH DATABASE restored').run();
    }
    try {
      hooks.committed?.();
    } finally {
      this.events.replaced.emit(replaced);
    }
    return { tables, rows };
  }

  /** The shape of every table but SQLite's own. */
  tableShapes(): TableShape[] {
    const names = this.db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
    return names.map((name) => {
      const info = this.db.prepare(`PRAGMA main.table_info(${q(name)})`).all() as Array<{ name: string; pk: number }>;
      const key = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
      return { name, columns: info.map((c) => c.name), key: key.length > 0 ? key : ['rowid'] };
    });
  }

  /** Every row of these tables (a rowid column first for tables without a primary key). */
  rowsOf(shapes: readonly TableShape[]): TableRows {
    const out: TableRows = {};
    for (const t of shapes) {
      const columns = t.key[0] === 'rowid' ? ['rowid', ...t.columns] : t.columns;
      out[t.name] = { columns, rows: this.db.prepare(`SELECT ${columns.map(q).join(', ')} FROM ${q(t.name)}`).raw().all() as unknown[][] };
    }
    return out;
  }

  /**
   * Replaces the rows of these tables by `given` in one transaction, with `alsoInside` run in it
   * (the cluster resets its log there). Columns are this node's own: a column `given` has and
   * this build lacks is left out.
   */
  overwrite(shapes: readonly TableShape[], given: TableRows, alsoInside: () => void): { tables: number; rows: number } {
    let tables = 0;
    let rows = 0;
    this.events.replacing.emit();
    this.db.transaction(() => {
      for (const t of shapes) {
        this.db.prepare(`DELETE FROM ${q(t.name)}`).run();
        const table = given[t.name];
        if (!table) continue;
        const local = new Set(t.key[0] === 'rowid' ? ['rowid', ...t.columns] : t.columns);
        const keep = table.columns.map((c, i) => [c, i] as const).filter(([c]) => local.has(c));
        if (keep.length === 0) continue;
        const insert = this.db.prepare(`INSERT OR REPLACE INTO ${q(t.name)} (${keep.map(([c]) => q(c)).join(', ')}) VALUES (${keep.map(() => '?').join(', ')})`);
        for (const row of table.rows) insert.run(keep.map(([, i]) => row[i]) as never);
        rows += table.rows.length;
        tables++;
      }
      alsoInside();
    })();
    this.events.replaced.emit(new Set(shapes.map((t) => t.name)));
    return { tables, rows };
  }

  /**
   * Applies one row change by primary key to `table` (whose `local` columns are this node's own;
   * the others are left out). The whole row as its sender has it: REPLACE cascades nothing here,
   * since foreign keys are no SQL constraints.
   */
  applyRow(table: TableShape & { local: ReadonlySet<string> }, change: RowChange): void {
    if (!Array.isArray(change.c) || !Array.isArray(change.v)) throw badRequest('a row change without columns or values');
    const values = change.v.flat();
    const known = (c: string) => (c === 'rowid' ? table.key[0] === 'rowid' : table.local.has(c));
    const pairs = change.c.map((c, i) => [c, values[i]] as const).filter(([c]) => known(c));
    if (change.op === 'delete') {
      if (pairs.length !== table.key.length) throw badRequest(`a delete of ${change.t} without its key`);
      this.statement(`DELETE FROM ${q(change.t)} WHERE ${pairs.map(([c]) => `${q(c)} = ?`).join(' AND ')}`).run(pairs.map(([, v]) => v) as never);
      return;
    }
    this.statement(`INSERT OR REPLACE INTO ${q(change.t)} (${pairs.map(([c]) => q(c)).join(', ')}) VALUES (${pairs.map(() => '?').join(', ')})`).run(pairs.map(([, v]) => v) as never);
  }

  private statement(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }
}
