// Applies replication entries from another node (the leader's shipping, or what a new leader pulls
// from its peers), in order, each once: an entry whose (epoch, seq) this node already holds is
// skipped. An applied entry goes into this node's own log with the sender's (epoch, seq), so it can
// be pulled from here and shipped on by whichever node leads next.
//
// Writes go through the same storage path as the routes (the leader already checked the caller's
// grant; here an administrator's grant applies it). Row changes are applied by primary key on the
// tables this node replicates, with column names taken from this node's own schema, and the caches
// that mirror those tables are told.

import type { AccountStore } from '../auth/users.js';
import type { TokenService } from '../auth/tokens.js';
import { ServiceError } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import { AccessGrant } from '../meta/access-grant.js';
import type { Db } from '../meta/database.js';
import type { EntityStore } from '../meta/entities.js';
import type { MonitorService } from '../monitor/service.js';
import type { NotificationService } from '../notifications/service.js';
import type { CollectionChange, StorageService, WriteOptions } from '../storage/service.js';
import type { WriteMode } from '../../shared/protocol.js';
import type { ReplicationFrame } from '../../native-free-codecs/replication-frames.js';
import type { ChangeLog, LogEntry, TableShape } from './change-log.js';

/** Statuses that mean "not now" (disk full, a restore, a worker restarting): the entry is retried, not skipped. */
const RETRY_LATER = new Set([429, 500, 502, 503, 504, 507]);
const MONITOR_RELOAD_DELAY_MS = 200;

export interface WriteEntryMeta {
  ct: string;
  mode: WriteMode;
  o: WriteOptions;
}

interface RowChange {
  t: string;
  op: 'insert' | 'update' | 'delete';
  c: string[];
  v: unknown[][];
}

export interface ApplierOptions {
  db: Db;
  changeLog: ChangeLog;
  storage: StorageService;
  entities: EntityStore;
  accounts: AccountStore;
  tokens: TokenService;
  monitor: MonitorService;
  notifications: NotificationService;
  log: Logger;
}

export class Applier {
  private readonly tables: Map<string, TableShape & { local: Set<string> }>;
  private readonly grant: AccessGrant;
  private readonly statements = new Map<string, ReturnType<Db['prepare']>>();
  private monitorReload: NodeJS.Timeout | null = null;
  /** One apply at a time: entries of an epoch must land in seq order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: ApplierOptions) {
    this.tables = new Map(o.changeLog.tables.map((t) => [t.name, { ...t, local: new Set(t.columns) }]));
    this.grant = AccessGrant.of(o.db, o.entities.registry, { sub: 'cluster', role: 'admin', units_id: [], sites_id: [], orgs_id: [] });
  }

  /**
   * Applies `frames` in order and answers how many of them (a prefix) this node now holds. It stops
   * at the first entry that cannot be applied now (storage unavailable, disk full); an entry that
   * can never apply (a body this build refuses) is logged, kept in the log, and passed over, so one
   * bad entry does not hold replication up for ever.
   */
  apply(frames: readonly ReplicationFrame[]): Promise<{ held: number; error: string | null }> {
    const run = this.queue.then(() => this.applyInOrder(frames));
    this.queue = run.catch(() => {});
    return run;
  }

  private async applyInOrder(frames: readonly ReplicationFrame[]): Promise<{ held: number; error: string | null }> {
    const touched = new Set<string>();
    const published: number[] = [];
    let held = 0;
    let error: string | null = null;
    try {
      for (const frame of frames) {
        if (this.o.changeLog.has(frame.epoch, frame.seq)) {
          held++;
          continue;
        }
        try {
          await this.applyOne(frame, touched, published);
        } catch (err) {
          const status = err instanceof ServiceError ? err.status : 500;
          const message = (err as Error)?.message ?? String(err);
          if (RETRY_LATER.has(status)) {
            error = `entry (${frame.epoch}, ${frame.seq}): ${message}`;
            break;
          }
          this.o.log.error({ epoch: frame.epoch, seq: frame.seq, kind: frame.kind, err: message }, 'cluster: a replicated entry cannot be applied here; passed over');
          this.record(frame);
        }
        held++;
      }
    } finally {
      this.refreshCaches(touched, published);
    }
    return { held, error };
  }

  private async applyOne(frame: ReplicationFrame, touched: Set<string>, published: number[]): Promise<void> {
    switch (frame.kind) {
      case 'row': {
        const change = JSON.parse(frame.meta) as RowChange;
        this.o.db.transaction(() => {
          this.o.changeLog.silently(() => this.applyRow(change));
          this.record(frame);
        })();
        touched.add(change.t);
        if (change.t === 'notifications' && change.op === 'insert') {
          const id = change.v.flat()[change.c.indexOf('id')];
          if (typeof id === 'number') published.push(id);
        }
        return;
      }
      case 'write': {
        const meta = JSON.parse(frame.meta) as WriteEntryMeta;
        if (!frame.body) throw new ServiceError('BAD_REQUEST', 'a write entry without a body');
        const result = await this.o.storage.write(this.grant, frame.body, meta.ct, meta.mode, AbortSignal.timeout(60_000), { ...meta.o, autoCreate: true, replicated: true });
        if (!result.success) this.o.log.warn({ epoch: frame.epoch, seq: frame.seq, err: result.error }, 'cluster: a replicated write was refused here');
        this.record(frame);
        return;
      }
      case 'collection': {
        await this.o.storage.applyReplicated(JSON.parse(frame.meta) as CollectionChange, this.grant);
        this.record(frame);
        return;
      }
      case 'void': // a write the leader logged and then did not store
        this.record(frame);
        return;
      default:
        throw new ServiceError('BAD_REQUEST', `unknown entry kind ${JSON.stringify(frame.kind)}`);
    }
  }

  /** Stores again one of this node's own writes a crash left pending; false when it is refused now. */
  async redo(entry: LogEntry): Promise<boolean> {
    const meta = JSON.parse(entry.meta) as WriteEntryMeta;
    try {
      const result = await this.o.storage.write(this.grant, entry.body!, meta.ct, meta.mode, AbortSignal.timeout(60_000), { ...meta.o, autoCreate: true, replicated: true });
      return result.success;
    } catch (err) {
      this.o.log.error({ epoch: entry.epoch, seq: entry.seq, err: String((err as Error)?.message ?? err) }, 'cluster: a write a crash left pending cannot be stored again; voided');
      return false;
    }
  }

  private record(frame: ReplicationFrame): void {
    this.o.changeLog.appendApplied({ epoch: frame.epoch, seq: frame.seq, kind: frame.kind as 'write', meta: frame.meta, body: frame.body ? Buffer.from(frame.body) : null, created_ms: frame.created_ms });
  }

  private applyRow(change: RowChange): void {
    const table = this.tables.get(change.t);
    if (!table) throw new ServiceError('BAD_REQUEST', `table ${JSON.stringify(change.t)} is not replicated here`);
    if (!Array.isArray(change.c) || !Array.isArray(change.v)) throw new ServiceError('BAD_REQUEST', 'a row change without columns or values');
    const values = change.v.flat();
    const known = (c: string) => c === 'rowid' ? table.key[0] === 'rowid' : table.local.has(c);
    const pairs = change.c.map((c, i) => [c, values[i]] as const).filter(([c]) => known(c));
    if (change.op === 'delete') {
      if (pairs.length !== table.key.length) throw new ServiceError('BAD_REQUEST', `a delete of ${change.t} without its key`);
      this.statement(`DELETE FROM ${q(change.t)} WHERE ${pairs.map(([c]) => `${q(c)} = ?`).join(' AND ')}`).run(pairs.map(([, v]) => v) as never);
      return;
    }
    // The whole row as the leader has it; no SQL foreign keys here, so REPLACE cascades nothing.
    this.statement(`INSERT OR REPLACE INTO ${q(change.t)} (${pairs.map(([c]) => q(c)).join(', ')}) VALUES (${pairs.map(() => '?').join(', ')})`).run(pairs.map(([, v]) => v) as never);
  }

  private statement(sql: string): ReturnType<Db['prepare']> {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.o.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  /** The caches that mirror the tables just changed. */
  private refreshCaches(touched: Set<string>, published: number[]): void {
    if (touched.size === 0) return;
    if (touched.has('users') || touched.has('revoked_subjects')) {
      this.o.accounts.forgetAll();
      this.o.tokens.forgetAll();
    }
    if (touched.has('tag_scopes')) this.o.storage.tagScopes.notifyChanged();
    if (touched.has('orgs') || touched.has('sites') || touched.has('units')) this.o.notifications.hub.hierarchyChanged();
    if ([...touched].some((t) => t.startsWith('monitor_'))) {
      this.monitorReload ??= setTimeout(() => {
        this.monitorReload = null;
        this.o.monitor.reload();
      }, MONITOR_RELOAD_DELAY_MS);
    }
    if (published.length > 0) {
      const def = this.o.entities.registry.table('notifications');
      for (const id of published) {
        try {
          this.o.notifications.hub.publish(this.o.entities.get(def, this.grant, id));
        } catch {
          // deleted again in the same batch
        }
      }
    }
  }

  close(): void {
    if (this.monitorReload) clearTimeout(this.monitorReload);
  }
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;
