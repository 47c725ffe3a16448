// The replication log (WIRE.md part 2 "Cluster"): what the leader ships to every secondary, in
// order, each entry identified by (epoch, seq). Every node keeps one in `cluster_log` (migration 9):
// the leader appends what it accepts; a secondary appends what it applied, with the leader's
// (epoch, seq), so that whichever node leads next can pull from it and ship it on.
//
// Two kinds of entry:
// - `write`: an accepted write body as it came in (JSON, msgpack, HSW1, ingest rows, line protocol,
//   gzip), with the options that make its decoding the same on every node (the scope defaults, the
//   line protocol's `nowMs`). It is applied by the same storage path.
// - `row`: one metadata row change, recorded by TEMP triggers on every replicated table, in the
//   same transaction as the change (nothing is changed without its entry, nothing is logged that
//   was rolled back), whichever code made it: entities, accounts, rules, monitor state, tag map.
//   The triggers record only while `cluster_term.recording` is 1: on the leader, outside applies.
// - `collection`: a collection created or updated (its catalog lives with the time series).
//
// A write is logged before it is stored, as pending, and committed once stored (or voided when it
// was refused): a crash between the two leaves a pending entry that the next start stores again
// (point writes are idempotent) and commits, so nothing is stored here that the log lacks. Nothing
// at or after the first pending entry is shipped or pulled, so what a peer holds stays a prefix.
//
// Entries of an epoch are applied everywhere in seq order, so what a node holds of an epoch is
// always a prefix: its position is one high-water seq per epoch (`cluster_epochs`).

import type { Db } from '../meta/database.js';
import { quoteName as q } from '../meta/schema.js';
import type { TableShape, WholeStore } from '../meta/whole-store.js';

export type { TableShape };

export type EntryKind = 'write' | 'row' | 'collection' | 'void';

export interface LogEntry {
  id: number;
  epoch: number;
  seq: number;
  kind: EntryKind;
  /** JSON: write options, a row change ({t, op: insert|update|delete, c: columns, v: values in chunks}), or a collection change. */
  meta: string;
  body: Buffer | null;
  bytes: number;
  created_ms: number;
  pending: number;
}

/** The highest seq this node holds of each epoch. */
export type Position = Record<string, number>;

/** Tables that stay with their node: the process log and the cluster's own bookkeeping. */
// Blob and attachment rows stay with the node whose disk holds their content files (content is not shipped).
const LOCAL_TABLES = new Set(['process_jobs', 'shadow_writes_applied', 'cluster_log', 'cluster_epochs', 'cluster_peers', 'cluster_term', 'blob_contents', 'blob_keys', 'attachments']);
/** SQLite caps a function's arguments (127 by default); longer column lists go in chunks. */
const ARGS_PER_CHUNK = 100;

const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;


export class ChangeLog {
  private readonly appendStmt;
  private readonly nextSeqStmt;
  private readonly termStmt;
  private readonly setTermStmt;
  private readonly lastIdStmt;
  private readonly readStmt;
  private readonly epochAfterStmt;
  private readonly positionStmt;
  private readonly hasStmt;
  private readonly createdOfStmt;
  private readonly bytesAfterStmt;
  private readonly trimHeldStmt;
  readonly tables: TableShape[];
  /** This node's own writes logged but not yet stored. */
  private readonly pendingIds = new Set<number>();

  /** `db` is the metadata store's connection: this is the one module outside meta/ that prepares SQL on it (its own tables and the triggers). */
  constructor(private readonly db: Db, store: WholeStore) {
    this.appendStmt = db.prepare('INSERT INTO cluster_log (epoch, seq, kind, meta, body, bytes, created_ms, pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    this.nextSeqStmt = db.prepare('SELECT COALESCE((SELECT max_seq FROM cluster_epochs WHERE epoch = ?), 0) + 1').pluck();
    this.termStmt = db.prepare('SELECT epoch, recording FROM cluster_term WHERE only = 1');
    this.setTermStmt = db.prepare('UPDATE cluster_term SET epoch = ?, recording = ? WHERE only = 1');
    // The last id handed out, also when trimming emptied the log (AUTOINCREMENT never reuses one).
    this.lastIdStmt = db.prepare("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'cluster_log'), 0)").pluck();
    this.readStmt = db.prepare('SELECT id, epoch, seq, kind, meta, body, bytes, created_ms, pending FROM cluster_log WHERE id > ? AND id < ? ORDER BY id LIMIT ?');
    this.epochAfterStmt = db.prepare('SELECT id, epoch, seq, kind, meta, body, bytes, created_ms, pending FROM cluster_log WHERE epoch = ? AND seq > ? ORDER BY seq LIMIT ?');
    this.positionStmt = db.prepare('SELECT epoch, max_seq FROM cluster_epochs');
    this.hasStmt = db.prepare('SELECT 1 FROM cluster_log WHERE epoch = ? AND seq = ?').pluck();
    this.createdOfStmt = db.prepare('SELECT created_ms FROM cluster_log WHERE id > ? ORDER BY id LIMIT 1').pluck();
    this.bytesAfterStmt = db.prepare('SELECT COALESCE(SUM(bytes), 0) FROM cluster_log WHERE id > ?').pluck();
    // By the (epoch, seq) index: the work is what goes, not the log's length.
    this.trimHeldStmt = db.prepare('DELETE FROM cluster_log WHERE epoch = ? AND seq <= ? AND pending = 0');
    // Every table whose rows replicate: all but the node-local ones.
    this.tables = store.tableShapes().filter((t) => !LOCAL_TABLES.has(t.name));
  }

  /** The peers this node has shipped to, as recorded (a leader lists a lost peer too). */
  knownPeers(): Array<{ node_id: string; url: string }> {
    return this.db.prepare('SELECT node_id, url FROM cluster_peers').all() as Array<{ node_id: string; url: string }>;
  }

  rememberPeer(nodeId: string, url: string, at: number): void {
    this.db.prepare('INSERT INTO cluster_peers (node_id, url, acked_id, acked_ms, updated_ms) VALUES (?, ?, 0, NULL, ?) ON CONFLICT (node_id) DO UPDATE SET url = excluded.url, updated_ms = excluded.updated_ms').run(nodeId, url, at);
  }

  /** Inside a snapshot's install: the log is emptied and this node holds `position` (the rows just installed). */
  resetTo(position: Position): void {
    this.db.prepare('DELETE FROM cluster_log').run();
    this.db.prepare('DELETE FROM cluster_epochs').run();
    const set = this.db.prepare('INSERT INTO cluster_epochs (epoch, max_seq) VALUES (?, ?)');
    for (const [epoch, seq] of Object.entries(position)) set.run(Number(epoch), seq);
  }

  /**
   * TEMP triggers (this connection only, never in the file, so a backup copy carries none) that
   * append a `row` entry for every insert, update and delete of a replicated table while
   * `cluster_term.recording` is 1.
   */
  installTriggers(): void {
    const when = 'WHEN (SELECT recording FROM cluster_term WHERE only = 1) = 1';
    const epoch = '(SELECT epoch FROM cluster_term WHERE only = 1)';
    // From the high-water mark, not the log: entries trimmed away keep their numbers taken.
    const seq = `(COALESCE((SELECT max_seq FROM cluster_epochs WHERE epoch = ${epoch}), 0) + 1)`;
    const now = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
    this.db.transaction(() => {
      for (const t of this.tables) {
        const cols = t.key[0] === 'rowid' ? ['rowid', ...t.columns] : t.columns;
        const values = (ref: 'NEW' | 'OLD', list: string[]) => {
          const chunks: string[] = [];
          for (let i = 0; i < list.length; i += ARGS_PER_CHUNK) chunks.push(`json_array(${list.slice(i, i + ARGS_PER_CHUNK).map((c) => `${ref}.${q(c)}`).join(', ')})`);
          return `json_array(${chunks.join(', ')})`;
        };
        const upsert = (op: string) => `json_object('t', ${literal(t.name)}, 'op', '${op}', 'c', json(${literal(JSON.stringify(cols))}), 'v', ${values('NEW', cols)})`;
        const remove = `json_object('t', ${literal(t.name)}, 'op', 'delete', 'c', json(${literal(JSON.stringify(t.key))}), 'v', ${values('OLD', t.key)})`;
        const insertEntry = (meta: string) => `INSERT INTO cluster_log (epoch, seq, kind, meta, body, bytes, created_ms) SELECT ${epoch}, ${seq}, 'row', m, NULL, length(m), ${now} FROM (SELECT ${meta} AS m);`;
        for (const [event, meta] of [['INSERT', upsert('insert')], ['UPDATE', upsert('update')], ['DELETE', remove]] as const) {
          const name = q(`clog_${t.name}_${event.toLowerCase()}`);
          this.db.exec(`DROP TRIGGER IF EXISTS temp.${name}`);
          this.db.exec(`CREATE TEMP TRIGGER ${name} AFTER ${event} ON main.${q(t.name)} ${when} BEGIN ${insertEntry(meta)} END`);
        }
      }
      this.db.exec('DROP TRIGGER IF EXISTS temp.clog_position');
      // The high-water mark per epoch and the log's size, whoever appended.
      this.db.exec('CREATE TEMP TRIGGER clog_position AFTER INSERT ON main.cluster_log BEGIN INSERT INTO cluster_epochs (epoch, max_seq) VALUES (NEW.epoch, NEW.seq) ON CONFLICT (epoch) DO UPDATE SET max_seq = MAX(max_seq, excluded.max_seq); UPDATE cluster_term SET log_bytes = log_bytes + NEW.bytes WHERE only = 1; END');
      this.db.exec('DROP TRIGGER IF EXISTS temp.clog_size');
      this.db.exec('CREATE TEMP TRIGGER clog_size AFTER DELETE ON main.cluster_log BEGIN UPDATE cluster_term SET log_bytes = log_bytes - OLD.bytes WHERE only = 1; END');
    })();
  }

  term(): { epoch: number; recording: boolean } {
    const row = this.termStmt.get() as { epoch: number; recording: number };
    return { epoch: row.epoch, recording: row.recording === 1 };
  }

  /** Leading in `epoch`: this node's own changes are recorded from now on. */
  startRecording(epoch: number): void {
    this.setTermStmt.run(epoch, 1);
  }

  stopRecording(): void {
    const { epoch } = this.term();
    this.setTermStmt.run(epoch, 0);
  }

  /** Runs `fn` (synchronous SQLite work) with the triggers silent: changes applied from another node are logged by the applier with their own (epoch, seq). */
  silently<T>(fn: () => T): T {
    const { epoch, recording } = this.term();
    if (!recording) return fn();
    this.setTermStmt.run(epoch, 0);
    try {
      return fn();
    } finally {
      this.setTermStmt.run(epoch, 1);
    }
  }

  /** Appends this node's own entry in the current epoch; returns its id. */
  append(kind: EntryKind, meta: string, body: Uint8Array | null): number {
    const { epoch } = this.term();
    const seq = this.nextSeqStmt.get(epoch) as number;
    const bytes = meta.length + (body?.byteLength ?? 0);
    return Number(this.appendStmt.run(epoch, seq, kind, meta, body ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : null, bytes, Date.now(), 0).lastInsertRowid);
  }

  /** Appends this node's own write before it is stored: not shipped until `commit`, voided by `abandon`. */
  appendPending(kind: EntryKind, meta: string, body: Uint8Array): number {
    const { epoch } = this.term();
    const seq = this.nextSeqStmt.get(epoch) as number;
    const id = Number(this.appendStmt.run(epoch, seq, kind, meta, Buffer.from(body.buffer, body.byteOffset, body.byteLength), meta.length + body.byteLength, Date.now(), 1).lastInsertRowid);
    this.pendingIds.add(id);
    return id;
  }

  commit(id: number): void {
    this.db.prepare('UPDATE cluster_log SET pending = 0 WHERE id = ?').run(id);
    this.pendingIds.delete(id);
  }

  /** The write was not stored: its entry stays (its seq is taken) as a no-op. */
  abandon(id: number): void {
    this.db.transaction(() => {
      const bytes = this.db.prepare('SELECT bytes FROM cluster_log WHERE id = ?').pluck().get(id) as number | undefined;
      this.db.prepare("UPDATE cluster_log SET kind = 'void', meta = '{}', body = NULL, bytes = 2, pending = 0 WHERE id = ?").run(id);
      if (bytes !== undefined) this.db.prepare('UPDATE cluster_term SET log_bytes = log_bytes - ? WHERE only = 1').run(bytes - 2);
    })();
    this.pendingIds.delete(id);
  }

  /** Pending entries a crash left (at start, before anything else is appended). */
  leftPending(): LogEntry[] {
    const rows = this.db.prepare('SELECT id, epoch, seq, kind, meta, body, bytes, created_ms, pending FROM cluster_log WHERE pending = 1 ORDER BY id').all() as LogEntry[];
    for (const row of rows) this.pendingIds.add(row.id);
    return rows;
  }

  /** The first id not to ship yet (the oldest pending entry), or none. */
  private shippableBelow(): number {
    let min = Number.MAX_SAFE_INTEGER;
    for (const id of this.pendingIds) if (id < min) min = id;
    return min;
  }

  /** Appends an entry applied from another node, with its (epoch, seq). */
  appendApplied(entry: Pick<LogEntry, 'epoch' | 'seq' | 'kind' | 'meta' | 'body' | 'created_ms'>): number {
    const bytes = entry.meta.length + (entry.body?.byteLength ?? 0);
    return Number(this.appendStmt.run(entry.epoch, entry.seq, entry.kind, entry.meta, entry.body, bytes, entry.created_ms, 0).lastInsertRowid);
  }

  has(epoch: number, seq: number): boolean {
    return this.hasStmt.get(epoch, seq) !== undefined;
  }

  lastId(): number {
    return this.lastIdStmt.get() as number;
  }

  /** Entries after local id `afterId`, at most `limit` of them and about `maxBytes` (at least one). */
  read(afterId: number, limit: number, maxBytes: number): LogEntry[] {
    const rows = this.readStmt.all(afterId, this.shippableBelow(), limit) as LogEntry[];
    let bytes = 0;
    for (let i = 0; i < rows.length; i++) {
      bytes += rows[i].bytes;
      if (bytes > maxBytes && i > 0) return rows.slice(0, i);
    }
    return rows;
  }

  /** What this node holds that a node at `theirs` does not, in the order to apply it (epoch by epoch, seq order). */
  missingFrom(theirs: Position, limit: number, maxBytes: number): LogEntry[] {
    const out: LogEntry[] = [];
    let bytes = 0;
    for (const [epochText, mine] of Object.entries(this.position()).sort((a, b) => Number(a[0]) - Number(b[0]))) {
      const after = theirs[epochText] ?? 0;
      if (mine <= after) continue;
      let next = after + 1;
      for (const row of this.epochAfterStmt.all(Number(epochText), after, limit - out.length) as LogEntry[]) {
        if (row.pending) break; // what follows a write not yet stored waits for it
        if (row.seq !== next++) return out; // trimmed here: shipping past the gap would hide it (the peer takes a snapshot instead)
        bytes += row.bytes;
        out.push(row);
        if (out.length >= limit || bytes > maxBytes) return out;
      }
    }
    return out;
  }

  position(): Position {
    const out: Position = {};
    for (const row of this.positionStmt.all() as Array<{ epoch: number; max_seq: number }>) out[String(row.epoch)] = row.max_seq;
    return out;
  }

  /**
   * The local id just before the first entry a node at `theirs` lacks (where its shipping starts),
   * or 'gap' when some of what it lacks is no longer kept here (trimmed).
   */
  cursorFor(theirs: Position): number | 'gap' {
    let cursor = this.lastId();
    for (const [epochText, mine] of Object.entries(this.position())) {
      const after = theirs[epochText] ?? 0;
      if (mine <= after) continue;
      const first = this.epochAfterStmt.get(Number(epochText), after, 1) as LogEntry | undefined;
      if (!first || first.seq !== after + 1) return 'gap';
      cursor = Math.min(cursor, first.id - 1);
    }
    return cursor;
  }

  /** When the oldest entry after `afterId` was made (null when there is none). */
  oldestAfter(afterId: number): number | null {
    return (this.createdOfStmt.get(afterId) as number | undefined) ?? null;
  }

  bytesAfter(afterId: number): number {
    return this.bytesAfterStmt.get(afterId) as number;
  }

  /** Bytes the log holds (kept by the triggers). */
  totalBytes(): number {
    return this.db.prepare('SELECT log_bytes FROM cluster_term WHERE only = 1').pluck().get() as number;
  }

  /**
   * Drops the oldest entries while the log holds more than `maxBytes` or they are older than
   * `maxAgeMs`; returns how many went. Walks from the oldest and stops at the first it keeps, so
   * the work is what is dropped, not the log's length.
   */
  trim(maxBytes: number, maxAgeMs: number, now = Date.now()): number {
    const cutoff = now - maxAgeMs;
    let excess = this.totalBytes() - maxBytes;
    let cut = 0;
    for (const row of this.db.prepare('SELECT id, bytes, created_ms FROM cluster_log ORDER BY id').iterate() as IterableIterator<{ id: number; bytes: number; created_ms: number }>) {
      if (excess <= 0 && row.created_ms >= cutoff) break;
      cut = row.id;
      excess -= row.bytes;
    }
    return cut === 0 ? 0 : this.db.prepare('DELETE FROM cluster_log WHERE id <= ?').run(cut).changes;
  }

  /**
   * Drops the entries every node holds (`held`: per epoch, the lowest seq any node of the cluster
   * holds, as the leader knows it); returns how many went. Nobody needs them again: a node that
   * leads next has them, and ships or pulls only what some node lacks. A node that joins later
   * (or lost its data) finds a gap and takes a snapshot.
   */
  trimHeld(held: Position): number {
    return this.db.transaction(() => {
      let cut = 0;
      for (const [epoch, seq] of Object.entries(held)) if (seq > 0) cut += this.trimHeldStmt.run(Number(epoch), seq).changes;
      return cut;
    })();
  }

}
