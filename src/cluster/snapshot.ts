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
import type { TableRows, WholeStore } from '../meta/whole-store.js';
import type { ChangeLog, Position } from './change-log.js';

export interface MetadataSnapshot {
  position: Position;
  tables: TableRows;
}

/** Every replicated table's rows, and the position they correspond to (one synchronous step). */
export function dumpMetadata(store: WholeStore, log: ChangeLog): MetadataSnapshot {
  const position = log.position();
  return { position, tables: store.rowsOf(log.tables) };
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
 * has and this build lacks is left out). The store's events tell the caches.
 */
export function installMetadata(store: WholeStore, log: ChangeLog, snapshot: MetadataSnapshot, position: Position): { tables: number; rows: number } {
  return log.silently(() => store.overwrite(log.tables, snapshot.tables, () => log.resetTo(position)));
}

/** A fresh working directory for one snapshot under the data dir (removed by the caller). */
export function snapshotDir(dataDir: string, what: string): string {
  const dir = path.join(dataDir, `cluster-snapshot-${what}-${Date.now()}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
