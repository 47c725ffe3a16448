// Applies replication entries from another node (the leader's shipping, or what a new leader pulls
// from its peers), in order, each once: an entry whose (epoch, seq) this node already holds is
// skipped. An applied entry goes into this node's own log with the sender's (epoch, seq), so it can
// be pulled from here and shipped on by whichever node leads next.
//
// Writes go through the same storage path as the routes (the leader already checked the caller's
// grant; here an administrator's grant applies it). Row changes are applied by primary key on the
// tables this node replicates, with column names taken from this node's own schema; the store's
// `tablesChanged` event then tells the caches that mirror those tables.

import type { AccessGrant } from '../meta/access-grant.js';
import type { MetaStore } from '../meta/store.js';
import type { RowChange } from '../meta/whole-store.js';
import type { Logger } from '../log.js';
import type { CollectionChange, PointWriter, ReplicationHooks, WriteOptions } from '../storage/api.js';
import type { ReplicationFrame } from '../../native-free-codecs/replication-frames.js';
import { badRequest, ServiceError } from '../../shared/errors.js';
import type { WriteMode } from '../../shared/protocol.js';
import type { ChangeLog, LogEntry, TableShape } from './change-log.js';
import { unpackBody, type BodyPacking } from './entry-body.js';

/** Statuses that mean "not now" (disk full, a restore, a worker restarting): the entry is retried, not skipped. */
const RETRY_LATER = new Set([429, 500, 502, 503, 504, 507]);

export interface WriteEntryMeta {
  ct: string;
  mode: WriteMode;
  o: WriteOptions;
  /** How the body is packed in the log (entry-body.ts); absent in entries logged before packing: the body as received. */
  z?: BodyPacking;
}

export interface ApplierOptions {
  meta: MetaStore;
  changeLog: ChangeLog;
  writer: PointWriter;
  replication: ReplicationHooks;
  log: Logger;
}

export class Applier {
  private readonly tables: Map<string, TableShape & { local: Set<string> }>;
  private readonly grant: AccessGrant;
  /** One apply at a time: entries of an epoch must land in seq order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: ApplierOptions) {
    this.tables = new Map(o.changeLog.tables.map((t) => [t.name, { ...t, local: new Set(t.columns) }]));
    this.grant = o.meta.grantAll('cluster');
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
    const inserted = new Map<string, unknown[]>();
    let held = 0;
    let error: string | null = null;
    try {
      for (const frame of frames) {
        if (this.o.changeLog.has(frame.epoch, frame.seq)) {
          held++;
          continue;
        }
        try {
          await this.applyOne(frame, touched, inserted);
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
      this.flushRecords();
      if (touched.size > 0) this.o.meta.events.tablesChanged.emit({ tables: touched, inserted });
    }
    return { held, error };
  }

  private async applyOne(frame: ReplicationFrame, touched: Set<string>, inserted: Map<string, unknown[]>): Promise<void> {
    switch (frame.kind) {
      case 'row': {
        const change = JSON.parse(frame.meta) as RowChange;
        const table = this.tables.get(change.t);
        if (!table) throw badRequest(`table ${JSON.stringify(change.t)} is not replicated here`);
        this.flushRecords(); // the log keeps seq order
        this.o.meta.wholeStore.transaction(() => {
          this.o.changeLog.silently(() => this.o.meta.wholeStore.applyRow(table, change));
          this.recordNow(frame);
        });
        touched.add(change.t);
        if (change.op === 'insert' && table.key.length === 1 && table.key[0] !== 'rowid') {
          const key = change.v.flat()[change.c.indexOf(table.key[0]!)];
          let keys = inserted.get(change.t);
          if (!keys) inserted.set(change.t, (keys = []));
          keys.push(key);
        }
        return;
      }
      case 'write': {
        const meta = JSON.parse(frame.meta) as WriteEntryMeta;
        if (!frame.body) throw new ServiceError('BAD_REQUEST', 'a write entry without a body');
        const result = await this.o.writer.write(this.grant, unpackBody(frame.body, meta.z), meta.ct, meta.mode, AbortSignal.timeout(60_000), { ...meta.o, autoCreate: true, replicated: true });
        if (!result.success) this.o.log.warn({ epoch: frame.epoch, seq: frame.seq, err: result.error }, 'cluster: a replicated write was refused here');
        this.record(frame);
        return;
      }
      case 'collection': {
        await this.o.replication.applyCollectionChange(JSON.parse(frame.meta) as CollectionChange, this.grant);
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
      const result = await this.o.writer.write(this.grant, unpackBody(entry.body!, meta.z), meta.ct, meta.mode, AbortSignal.timeout(60_000), { ...meta.o, autoCreate: true, replicated: true });
      return result.success;
    } catch (err) {
      this.o.log.error({ epoch: entry.epoch, seq: entry.seq, err: String((err as Error)?.message ?? err) }, 'cluster: a write a crash left pending cannot be stored again; voided');
      return false;
    }
  }

  /**
   * Entries applied but not yet in this node's log, written in one transaction (flushRecords)
   * before the answer says they are held: one commit a batch, not one an entry. A crash before it
   * leaves them unrecorded, so the leader ships them again, and applying them again is harmless.
   */
  private unrecorded: ReplicationFrame[] = [];

  private record(frame: ReplicationFrame): void {
    this.unrecorded.push(frame);
  }

  private flushRecords(): void {
    if (this.unrecorded.length === 0) return;
    const frames = this.unrecorded;
    this.unrecorded = [];
    this.o.meta.wholeStore.transaction(() => {
      for (const frame of frames) this.recordNow(frame);
    });
  }

  private recordNow(frame: ReplicationFrame): void {
    const body = frame.body ? Buffer.from(frame.body.buffer, frame.body.byteOffset, frame.body.byteLength) : null;
    this.o.changeLog.appendApplied({ epoch: frame.epoch, seq: frame.seq, kind: frame.kind as 'write', meta: frame.meta, body, created_ms: frame.created_ms });
  }
}
