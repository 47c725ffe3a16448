// A full copy of the leader for a node the log cannot bring up to date (WIRE.md part 2 "Cluster":
// a node "whose change-log position is unknown or behind the leader's retention takes a full
// snapshot of the leader's metadata and time series, then follows the log").
//
// The leader's shipper finds the gap and asks the node to resync (POST /svcapi/cluster/resync).
// The node then fetches, from the leader:
// 1. the time series, as a timeseries backup archive (every file checked against its manifest,
//    installed by the backup code's crash-safe swap), with the leader's log position read just
//    before the archive's instant;
// 2. the metadata: every replicated table's rows, with the position read in the same synchronous
//    step as the rows.
// Every write and row change at or before a position is in the part taken after it, and replaying
// entries is idempotent, so the node takes the lower of the two positions as its own and follows
// the log from there. The rows replace this node's in one transaction, with its log and position;
// until that commits, the node still lacks what it lacked, and a crash means another resync.

import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../meta/database.js';
import type { ChangeLog, Position } from './change-log.js';

export interface MetadataSnapshot {
  position: Position;
  tables: Record<string, { columns: string[]; rows: unknown[][] }>;
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Every replicated table's rows, and the position they correspond to (one synchronous step). */
export function dumpMetadata(db: Db, log: ChangeLog): MetadataSnapshot {
  const position = log.position();
  const tables: MetadataSnapshot['tables'] = {};
  for (const t of log.tables) {
    const columns = t.key[0] === 'rowid' ? ['rowid', ...t.columns] : t.columns;
    const rows = db.prepare(`SELECT ${columns.map(q).join(', ')} FROM ${q(t.name)}`).raw().all() as unknown[][];
    tables[t.name] = { columns, rows };
  }
  return { position, tables };
}

/** The lower of two positions, epoch by epoch (an epoch one of them lacks counts as 0). */
export function lowerPosition(a: Position, b: Position): Position {
  const out: Position = {};
  for (const epoch of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const low = Math.min(a[epoch] ?? 0, b[epoch] ?? 0);
    if (low > 0) out[epoch] = low;
  }
  return out;
}

/**
 * Replaces this node's replicated rows by the snapshot's, empties its log and sets its position,
 * in one transaction, with the triggers silent. Columns are this node's own (a column the leader
 * has and this build lacks is left out).
 */
export function installMetadata(db: Db, log: ChangeLog, snapshot: MetadataSnapshot, position: Position): { tables: number; rows: number } {
  let tables = 0;
  let rows = 0;
  db.transaction(() => {
    log.silently(() => {
      for (const t of log.tables) {
        db.prepare(`DELETE FROM ${q(t.name)}`).run();
        const given = snapshot.tables[t.name];
        if (!given) continue;
        const local = new Set(t.key[0] === 'rowid' ? ['rowid', ...t.columns] : t.columns);
        const keep = given.columns.map((c, i) => [c, i] as const).filter(([c]) => local.has(c));
        if (keep.length === 0) continue;
        const insert = db.prepare(`INSERT OR REPLACE INTO ${q(t.name)} (${keep.map(([c]) => q(c)).join(', ')}) VALUES (${keep.map(() => '?').join(', ')})`);
        for (const row of given.rows) insert.run(keep.map(([, i]) => row[i]) as never);
        rows += given.rows.length;
        tables++;
      }
      db.prepare('DELETE FROM cluster_log').run();
      db.prepare('DELETE FROM cluster_epochs').run();
      const set = db.prepare('INSERT INTO cluster_epochs (epoch, max_seq) VALUES (?, ?)');
      for (const [epoch, seq] of Object.entries(position)) set.run(Number(epoch), seq);
    });
  })();
  return { tables, rows };
}

/** A fresh working directory for one snapshot under the data dir (removed by the caller). */
export function snapshotDir(dataDir: string, what: string): string {
  const dir = path.join(dataDir, `cluster-snapshot-${what}-${Date.now()}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
