// Notifications: the one producer API (`notify`), the admin create route's checks, mark-read,
// unread count, the live stream hub and the retention purge. Rows live in the `notifications`
// entity table, so the generic entity routes and this module share one store, one visibility
// rule (AccessGrant, applied by the store) and one set of field rules (meta/rules.ts).

import type { TokenService } from '../auth/tokens.js';
import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import type { JobLog } from '../jobs/job-log.js';
import { badRequest } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import { AccessGrant } from '../meta/access-grant.js';
import type { Db } from '../meta/database.js';
import type { Entity, EntityHooks, EntityStore } from '../meta/entities.js';
import type { EntityDef } from '../meta/registry.js';
import { NOTIFICATION_SEVERITIES, NOTIFICATION_SOURCES } from '../meta/rules.js';
import { parseId } from '../meta/wire.js';
import type { Health } from '../subsystems.js';
import { StreamHub } from './stream-hub.js';

export type NotificationSeverity = (typeof NOTIFICATION_SEVERITIES)[number];
export type NotificationSource = (typeof NOTIFICATION_SOURCES)[number];

/** What a producer (the monitor, backups, the connector) gives `notify`. */
export interface NotificationInput {
  severity: NotificationSeverity;
  source: NotificationSource;
  title: string;
  body: string;
  /** Recipient email; absent or null: a broadcast. */
  userId?: string | null;
  orgsId?: number | null;
  sitesId?: number | null;
  unitsId?: number | null;
  link?: string | null;
  redirect?: boolean;
  payload?: Record<string, unknown> | null;
  sourceRef?: string | null;
  expiresAt?: number | null;
}

const SCOPE_PARENTS: ReadonlyArray<[column: string, table: string, noun: string]> = [
  ['orgsId', 'orgs', 'org'],
  ['sitesId', 'sites', 'site'],
  ['unitsId', 'units', 'unit'],
];
const HIERARCHY = new Set(['orgs', 'sites', 'units']);
/** Rows deleted per transaction by the purge, so a large purge never holds the main thread long. */
const PURGE_BATCH = 1000;

export interface NotificationServiceOptions {
  db: Db;
  entities: EntityStore;
  tokens: TokenService;
  clock: ServiceClock;
  log: Logger;
  settings: Config['notifications'];
  /** The process log: each purge is a job there. */
  jobs: JobLog;
}

export class NotificationService {
  readonly hub: StreamHub;
  private readonly def: EntityDef;
  private readonly system: AccessGrant;
  /** Notifications created by the write transaction in progress; fanned out when it commits. */
  private created: Entity[] = [];
  private purgeTimer: NodeJS.Timeout | null = null;
  private purging: Promise<void> | null = null;

  constructor(private readonly o: NotificationServiceOptions) {
    const { registry } = o.entities;
    this.def = registry.table('notifications');
    this.system = AccessGrant.of(o.db, registry, { sub: 'system', role: 'admin', orgs_id: [], sites_id: [], units_id: [] });
    this.hub = new StreamHub({ db: o.db, registry, tokens: o.tokens, clock: o.clock, log: o.log, settings: o.settings });
    o.entities.addHooks(this.entityHooks());
  }

  start(): void {
    // Unread counts and the purge read these columns.
    this.o.db.exec('CREATE INDEX IF NOT EXISTS notifications_readAt ON notifications ("readAt")');
    this.o.db.exec('CREATE INDEX IF NOT EXISTS notifications_expiresAt ON notifications ("expiresAt") WHERE "expiresAt" IS NOT NULL');
    this.hub.start();
    const { retention_days: days, retention_interval_seconds: interval } = this.o.settings;
    if (days > 0) {
      this.purgeTimer = setInterval(() => void this.purge(), interval * 1000);
      this.purgeTimer.unref();
    }
    this.o.log.info({ retentionDays: days, purgeIntervalSeconds: interval }, days > 0 ? 'notification purge scheduled' : 'notification purge disabled (notifications.retention_days is 0)');
  }

  async stop(): Promise<void> {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.hub.stop();
    await this.purging;
  }

  health(): Health {
    return { status: 'ok' };
  }

  /**
   * The producer API: stores a notification (checked by the same rules as an admin's create)
   * and fans it out to the connected streams in the same step. Throws 400 naming a bad field.
   */
  notify(input: NotificationInput): Entity {
    return this.o.entities.create(this.def, this.system, input);
  }

  /**
   * POST /svcapi/notifications, whose body schema admits the contract's fields only: a recipient
   * given by user id becomes that user's email, and scope ids must name existing rows.
   */
  create(grant: AccessGrant, body: Record<string, unknown>): Entity {
    const fields = { ...body };
    fields.userId = this.recipientOf(fields.userId);
    for (const [column, table, noun] of SCOPE_PARENTS) {
      const value = fields[column];
      if (value === null || value === undefined) continue;
      const id = parseId(this.o.entities.registry.table(table), value, column);
      if (!this.o.db.prepare(`SELECT 1 FROM ${table} WHERE id = ?`).get(id)) throw badRequest(`${column}: there is no ${noun} with id ${id}`);
      fields[column] = id;
    }
    return this.o.entities.create(this.def, grant, fields);
  }

  /** POST /{id}/read: sets readAt once; 404 when the row is absent or not the caller's to see. */
  markRead(grant: AccessGrant, rawId: unknown): { id: string; readAt: number } {
    const id = parseId(this.def, rawId);
    this.o.entities.get(this.def, grant, id); // 404 absent or invisible
    this.o.db.prepare('UPDATE notifications SET "readAt" = ? WHERE id = ? AND "readAt" IS NULL').run(this.o.clock.now(), id);
    const readAt = this.o.db.prepare('SELECT "readAt" FROM notifications WHERE id = ?').pluck().get(id) as number;
    return { id: String(id), readAt };
  }

  unreadCount(grant: AccessGrant): number {
    return this.o.entities.count(this.def, grant, { readAt: null });
  }

  /**
   * Deletes read rows created more than retention_days ago and expired rows (read or not);
   * unread rows stay. In batches, through the entity store (its delete hooks run).
   */
  purge(): Promise<void> {
    if (this.purging) return this.purging;
    this.purging = this.purgeNow().finally(() => (this.purging = null));
    return this.purging;
  }

  private async purgeNow(): Promise<void> {
    const began = performance.now();
    const now = this.o.clock.now();
    const days = this.o.settings.retention_days;
    const cutoff = now - days * 86_400_000;
    const job = this.o.jobs.begin('purge', `notification purge: expired rows, and read rows older than ${days} days`);
    try {
      const expired = await this.deleteInBatches('"expiresAt" IS NOT NULL AND "expiresAt" <= ?', [now]);
      job.progress(0.5);
      const old = await this.deleteInBatches('"readAt" IS NOT NULL AND "createdAt" < ?', [cutoff]);
      this.o.log.info(
        { removed: expired + old, expired, readOlderThanRetention: old, retentionDays: days, ms: Math.round(performance.now() - began) },
        'notification purge',
      );
      job.done(`notification purge removed ${expired + old} rows (${expired} expired, ${old} read and older than ${days} days)`);
    } catch (err) {
      job.fail(`notification purge failed: ${(err as Error).message}`);
      throw err;
    }
  }

  private async deleteInBatches(condition: string, params: unknown[]): Promise<number> {
    const select = this.o.db.prepare(`SELECT id FROM notifications WHERE ${condition} LIMIT ${PURGE_BATCH}`).pluck();
    let removed = 0;
    for (;;) {
      const ids = select.all(...params) as number[];
      if (ids.length === 0) return removed;
      removed += this.o.entities.deleteWhere(this.def, this.system, { id: { inq: ids } });
      await new Promise<void>((resolve) => setImmediate(resolve)); // let requests in between batches
    }
  }

  /** userId as given: an email (normalised by the rules), or a user's numeric id, stored as that user's email. */
  private recipientOf(value: unknown): unknown {
    if (value === null || value === undefined) return null;
    const numeric = typeof value === 'number' || (typeof value === 'string' && /^[0-9]+$/.test(value));
    if (!numeric) return value;
    const id = parseId(this.o.entities.registry.table('users'), value, 'userId');
    const email = this.o.db.prepare('SELECT email FROM users WHERE id = ?').pluck().get(id) as string | undefined;
    if (email === undefined) throw badRequest(`userId: there is no user with id ${id}`);
    return email;
  }

  private entityHooks(): EntityHooks {
    return {
      afterCreate: (def, entity) => {
        if (def.table === 'notifications') this.created.push(entity);
        else if (HIERARCHY.has(def.table)) this.hub.hierarchyChanged();
      },
      afterUpdate: (def) => {
        if (HIERARCHY.has(def.table)) this.hub.hierarchyChanged();
      },
      beforeDelete: (def) => {
        if (HIERARCHY.has(def.table)) this.hub.hierarchyChanged();
      },
      afterCommit: () => {
        if (this.created.length === 0) return;
        const committed = this.created;
        this.created = [];
        for (const entity of committed) {
          try {
            this.hub.publish(entity);
          } catch (err) {
            this.o.log.error({ err: String((err as Error)?.stack ?? err), id: entity.id }, 'notification fan-out failed');
          }
        }
      },
      afterRollback: () => {
        this.created = [];
      },
    };
  }
}
