// Notifications: the one producer API (`notify`), the admin create route's checks, mark-read,
// unread count, the live stream hub and the retention purge. Rows live in the `notifications`
// entity table, so the generic entity routes and this module share one store, one visibility
// rule (AccessGrant, applied by the store) and one set of field rules (meta/entity-rules.ts).

import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import type { Claims } from '../http/caller.js';
import type { ProcessLog } from '../jobs/api.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { Entity, EntityHooks } from '../meta/entities.js';
import type { MetaStore } from '../meta/store.js';
import type { EntityDef } from '../meta/registry.js';
import { parseId } from '../meta/wire.js';
import { badRequest } from '../../shared/errors.js';
import type { NotificationInput } from './api.js';
import { StreamHub } from './stream-hub.js';

const SCOPE_PARENTS: ReadonlyArray<[column: string, table: 'orgs' | 'sites' | 'units', noun: string]> = [
  ['orgsId', 'orgs', 'org'],
  ['sitesId', 'sites', 'site'],
  ['unitsId', 'units', 'unit'],
];
const HIERARCHY = new Set(['orgs', 'sites', 'units']);
/** Rows deleted per transaction by the purge, so a large purge never holds the main thread long. */
const PURGE_BATCH = 1000;

export interface NotificationServiceOptions {
  meta: MetaStore;
  /** The claims of a stream's token (checked again while the stream lives). */
  verifyToken(token: string): Claims;
  clock: ServiceClock;
  log: Logger;
  settings: Config['notifications'];
  /** The process log: each purge is a job there. */
  jobs: ProcessLog;
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
    const { meta } = o;
    this.def = meta.registry.table('notifications');
    this.system = meta.grantAll('system');
    this.hub = new StreamHub({ tables: meta.notifications, def: this.def, grantOf: (claims) => meta.grantOf(claims), verifyToken: o.verifyToken, clock: o.clock, log: o.log, settings: o.settings });
    // What changes the store outside the entity store: streams end and replay from a replaced
    // store, grants follow a replicated hierarchy, replicated notifications reach the streams.
    meta.events.replacing.subscribe(() => this.hub.storeReplaced());
    meta.events.tablesChanged.subscribe((change) => {
      if ([...HIERARCHY].some((t) => change.tables.has(t))) this.hub.hierarchyChanged();
      for (const id of change.inserted.get('notifications') ?? []) {
        try {
          this.hub.publish(meta.entities.get(this.def, this.system, id));
        } catch {
          // deleted again in the same batch
        }
      }
    });
  }

  start(): void {
    // Unread counts and the purge read these columns.
    this.o.meta.notifications.ensureIndexes();
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

  /**
   * The producer API: stores a notification (checked by the same rules as an admin's create)
   * and fans it out to the connected streams in the same step. Throws 400 naming a bad field.
   */
  notify(input: NotificationInput): Entity {
    return this.o.meta.entities.create(this.def, this.system, input);
  }

  /** The same notification for each admin by name (what concerns everyone and no unit: a failed backup). */
  notifyAdmins(input: Omit<NotificationInput, 'userId' | 'orgsId' | 'sitesId' | 'unitsId'>): void {
    for (const email of this.o.meta.accounts.adminEmails()) this.notify({ ...input, userId: email });
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
      const id = parseId(this.o.meta.registry.table(table), value, column) as number;
      if (!this.o.meta.hierarchy.has(table, id)) throw badRequest(`${column}: there is no ${noun} with id ${id}`);
      fields[column] = id;
    }
    return this.o.meta.entities.create(this.def, grant, fields);
  }

  /** POST /{id}/read: sets readAt once; 404 when the row is absent or not the caller's to see. */
  markRead(grant: AccessGrant, rawId: unknown): { id: string; readAt: number } {
    const id = parseId(this.def, rawId);
    this.o.meta.entities.get(this.def, grant, id); // 404 absent or invisible
    const readAt = this.o.meta.notifications.read(id as number, this.o.clock.now());
    return { id: String(id), readAt };
  }

  unreadCount(grant: AccessGrant): number {
    return this.o.meta.entities.count(this.def, grant, { readAt: null });
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
      const expired = await this.deleteInBatches(() => this.o.meta.notifications.expiredIds(now, PURGE_BATCH));
      job.progress(0.5);
      const old = await this.deleteInBatches(() => this.o.meta.notifications.readIdsBefore(cutoff, PURGE_BATCH));
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

  private async deleteInBatches(next: () => number[]): Promise<number> {
    let removed = 0;
    for (;;) {
      const ids = next();
      if (ids.length === 0) return removed;
      removed += this.o.meta.entities.deleteWhere(this.def, this.system, { id: { inq: ids } });
      await new Promise<void>((resolve) => setImmediate(resolve)); // let requests in between batches
    }
  }

  /** userId as given: an email (normalised by the rules), or a user's numeric id, stored as that user's email. */
  private recipientOf(value: unknown): unknown {
    if (value === null || value === undefined) return null;
    const numeric = typeof value === 'number' || (typeof value === 'string' && /^[0-9]+$/.test(value));
    if (!numeric) return value;
    const id = parseId(this.o.meta.registry.table('users'), value, 'userId') as number;
    const email = this.o.meta.accounts.emailOf(id);
    if (email === undefined) throw badRequest(`userId: there is no user with id ${id}`);
    return email;
  }

  /** New rows reach the streams once their write commits; hierarchy changes refresh the streams' grants. */
  entityHooks(): EntityHooks {
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
