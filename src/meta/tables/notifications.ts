// What the notification code reads and writes beside the entity store's generic CRUD of the
// `notifications` table: read and delivery marks, the rows a stream replays, what the purge
// deletes, and each recipient's delivered ranges (`notification_deliveries`, migration 4).

import type { AccessGrant } from '../access-grant.js';
import type { Db } from '../database.js';
import type { EntityDef } from '../registry.js';
import type { RowRecord } from '../wire.js';

export class NotificationTables {
  private readonly maxIdOf;
  private readonly loadRanges;
  private readonly saveRanges;
  private readonly delivered;
  private readonly markRead;
  private readonly readAtOf;
  private readonly expired;
  private readonly readBefore;

  constructor(private readonly db: Db) {
    this.maxIdOf = db.prepare<[], number | null>('SELECT max(id) FROM notifications').pluck();
    this.loadRanges = db.prepare<[string], string>('SELECT ranges FROM notification_deliveries WHERE recipient = ?').pluck();
    this.saveRanges = db.prepare<[string, string, number]>(
      'INSERT INTO notification_deliveries (recipient, ranges, updated_at) VALUES (?, ?, ?) ON CONFLICT (recipient) DO UPDATE SET ranges = excluded.ranges, updated_at = excluded.updated_at',
    );
    this.delivered = db.prepare<[number, number]>('UPDATE notifications SET deliveredAt = ? WHERE id = ? AND deliveredAt IS NULL');
    this.markRead = db.prepare<[number, number]>('UPDATE notifications SET "readAt" = ? WHERE id = ? AND "readAt" IS NULL');
    this.readAtOf = db.prepare<[number], number>('SELECT "readAt" FROM notifications WHERE id = ?').pluck();
    this.expired = db.prepare<[number, number], number>('SELECT id FROM notifications WHERE "expiresAt" IS NOT NULL AND "expiresAt" <= ? LIMIT ?').pluck();
    this.readBefore = db.prepare<[number, number], number>('SELECT id FROM notifications WHERE "readAt" IS NOT NULL AND "createdAt" < ? LIMIT ?').pluck();
  }

  /** Runs `work` in one transaction. */
  transaction(work: () => void): void {
    this.db.transaction(work)();
  }

  /** The indexes the unread counts and the purge read (made at start, idempotent). */
  ensureIndexes(): void {
    this.db.exec('CREATE INDEX IF NOT EXISTS notifications_readAt ON notifications ("readAt")');
    this.db.exec('CREATE INDEX IF NOT EXISTS notifications_expiresAt ON notifications ("expiresAt") WHERE "expiresAt" IS NOT NULL');
  }

  maxId(): number {
    return this.maxIdOf.get() ?? 0;
  }

  /** A recipient's delivered ranges (JSON), or undefined. */
  rangesOf(recipient: string): string | undefined {
    return this.loadRanges.get(recipient);
  }

  setRanges(recipient: string, ranges: string, at: number): void {
    this.saveRanges.run(recipient, ranges, at);
  }

  /** Sets deliveredAt of a row that has none. */
  setDelivered(id: number, at: number): void {
    this.delivered.run(at, id);
  }

  /** Sets readAt once (the first one is kept); the readAt the row has now. */
  read(id: number, at: number): number {
    this.markRead.run(at, id);
    return this.readAtOf.get(id)!;
  }

  /**
   * A reader of the rows `grant` sees at `now` that have not expired: those with ids in
   * [lo, hi], oldest first, at most `limit` (a stream's replay reads a few id gaps with it).
   */
  visibleRows(def: EntityDef, grant: AccessGrant, now: number): (lo: number, hi: number, limit: number) => RowRecord[] {
    const visible = grant.predicate(def, 'read', now);
    const select = this.db.prepare(`SELECT * FROM notifications WHERE id BETWEEN ? AND ? AND ("expiresAt" IS NULL OR "expiresAt" > ?) AND ${visible.sql} ORDER BY id LIMIT ?`);
    return (lo, hi, limit) => select.all(lo, hi, now, ...visible.params, limit) as RowRecord[];
  }

  /** Ids of up to `limit` rows that expired by `now` (the purge deletes them through the entity store). */
  expiredIds(now: number, limit: number): number[] {
    return this.expired.all(now, limit);
  }

  /** Ids of up to `limit` read rows created before `cutoff`. */
  readIdsBefore(cutoff: number, limit: number): number[] {
    return this.readBefore.all(cutoff, limit);
  }
}
