// The monitor: alarm rules on tags of collections, evaluated at each collection's tick rate.
//
// A tick runs on the main thread's timer. Collections due at the same moment (ticks are aligned
// to multiples of their rate) are sampled together: one MONITOR_SAMPLE task per shard for all of
// them, answered by the storage worker from what it tracked as the writes arrived (the tag's
// last value and the extremes written since the previous tick, workers/monitor-watch.ts), so no
// tick scans data and none asks per tag. Each rule is then evaluated in memory
// (evaluate.ts); only state changes are written to SQLite, in one transaction per tick, so a
// restart resumes pending delays and open events. Opening and resolving events notify through
// the notifications API, after the transaction commits.
//
// Every read and change goes through the caller's grant: a collection outside it does not exist
// for that caller.

import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import { badRequest, conflict, notFound } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { Db } from '../meta/database.js';
import type { Entity, EntityHooks } from '../meta/entities.js';
import type { NotificationService } from '../notifications/service.js';
import type { StorageService } from '../storage/service.js';
import type { Health } from '../subsystems.js';
import { MONITOR_SAMPLE_STRIDE, type MonitorSampleRequest } from '../../shared/protocol.js';
import { evaluate, type AlarmKind, type RuleState, type TagValues } from './evaluate.js';
import { newEventId, newRuleId, ruleFromBody, ruleOfRow, ruleView, type AlarmRule, type StoredRule } from './rules.js';

export type EventStatus = 'active' | 'acknowledged' | 'resolved';
export const EVENT_STATUSES: readonly string[] = ['active', 'acknowledged', 'resolved', 'unresolved'];

export interface AlarmEvent {
  id: string;
  rule_id: string;
  collection_id: string;
  tag: string;
  tag_index: number | null;
  kind: AlarmKind;
  status: EventStatus;
  severity: string;
  value: number | null;
  limit: number | null;
  started_ms: number;
  resolved_ms: number | null;
  acked_ms: number | null;
  acked_by: string | null;
  message: string;
}

export interface MonitoredCollection {
  id: string;
  enabled: boolean;
  description: string;
  tick_rate_ms: number;
}

interface SnapshotTag {
  tag: string;
  tag_index: number | null;
  value: number | null;
  ts: number | null;
  state: 'normal' | AlarmKind;
  rule_ids: string[];
}

/**
 * A collection's latest evaluation, kept as the tick left it (the sampled values and each tag's
 * state) and turned into the snapshot shape only when someone asks: a tick allocates nothing per tag.
 */
interface CollectionSnapshot {
  watch: Watch;
  values: Float64Array;
  /** Per tag of the watch (same order), its state. */
  states: Array<'normal' | AlarmKind>;
}

export interface EventQuery {
  from_ms?: number;
  to_ms?: number;
  collection_id?: string;
  tag_index?: number;
  rule_id?: string;
  status?: string;
  limit: number;
  offset: number;
}

/** What a tick needs of a monitored collection, kept in memory and rebuilt when rules change. */
interface Watch {
  collectionId: string;
  rateMs: number;
  nextDue: number;
  /** Bumped when the tags watched change; the worker is sent the list again. */
  version: number;
  sentVersion: number;
  tags: string[];
  /** Position of each tag in `tags` (and in the sampled values). */
  tagAt: Map<string, number>;
  rules: StoredRule[];
}

export interface MonitorOptions {
  db: Db;
  storage: StorageService;
  notifications: NotificationService;
  clock: ServiceClock;
  log: Logger;
  settings: Config['monitor'];
  /** On a cluster: whether this node leads (only the leader evaluates). */
  leads?: () => boolean;
}

const EVENT_COLUMNS = 'id, rule_id, collection_id, tag, tag_index, kind, status, severity, value, "limit", started_ms, resolved_ms, acked_ms, acked_by, message';

export class MonitorService {
  private enabled = true;
  private watches = new Map<string, Watch>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private running = false;
  private tickNumber = 0;
  private lastTickMs = 0;
  private lastDurationMs = 0;
  private readonly snapshots = new Map<string, CollectionSnapshot>();
  private watchVersion = 0;

  private readonly saveState;

  constructor(private readonly o: MonitorOptions) {
    this.saveState = o.db.prepare('UPDATE monitor_rules SET phase = ?, kind = ?, since_ms = ?, event_id = ? WHERE id = ?');
  }

  // ---- lifecycle -----------------------------------------------------------

  start(): void {
    // Every tick reads the storage workers: without them the monitor cannot evaluate anything.
    if (!this.o.storage.isRunning) throw new Error('the storage subsystem is not running, so no tag can be evaluated');
    const stored = this.o.db.prepare("SELECT value FROM monitor_settings WHERE key = 'enabled'").pluck().get() as string | undefined;
    this.enabled = stored === undefined ? true : stored === 'true';
    this.running = true;
    this.rebuild();
    const rules = this.o.db.prepare('SELECT count(*) FROM monitor_rules').pluck().get() as number;
    const open = this.o.db.prepare("SELECT count(*) FROM monitor_events WHERE status <> 'resolved'").pluck().get() as number;
    this.o.log.info({ enabled: this.enabled, rules, openEvents: open, collections: this.watches.size }, 'monitor started');
  }

  /** The metadata store was replaced (a restore): rules, their state and the settings are read again. */
  reload(): void {
    if (!this.running) return;
    const stored = this.o.db.prepare("SELECT value FROM monitor_settings WHERE key = 'enabled'").pluck().get() as string | undefined;
    this.enabled = stored === undefined ? true : stored === 'true';
    this.forgetInWorkers([...this.watches.keys()]);
    this.watches.clear();
    this.snapshots.clear();
    this.rebuild();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
  }

  health(): Health {
    return { status: 'ok' };
  }

  // ---- config, collections, status ------------------------------------------

  config(): { enabled: boolean } {
    return { enabled: this.enabled };
  }

  setEnabled(enabled: boolean): void {
    this.o.db.prepare("INSERT INTO monitor_settings (key, value) VALUES ('enabled', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(enabled));
    this.enabled = enabled;
    if (!enabled) {
      // The workers stop tracking writes for it; switched on again, the tag lists are sent anew.
      this.forgetInWorkers([...this.watches.keys()]);
      for (const watch of this.watches.values()) watch.sentVersion = -1;
    }
    this.o.log.info({ enabled }, enabled ? 'monitor enabled' : 'monitor disabled');
    this.reschedule();
  }

  collections(grant: AccessGrant): MonitoredCollection[] {
    const stored = new Map(
      (this.o.db.prepare('SELECT collection_id, enabled, tick_rate_ms FROM monitor_collections').all() as Array<{ collection_id: string; enabled: number; tick_rate_ms: number }>).map((r) => [r.collection_id, r]),
    );
    return this.o.storage.visibleCollections(grant).map((record) => {
      const id = `${record.organization}/${record.site}/${record.unit}/${record.grid}`;
      const row = stored.get(id);
      return {
        id,
        enabled: row?.enabled === 1,
        description: typeof record.description === 'string' ? record.description : '',
        tick_rate_ms: row?.tick_rate_ms ?? this.o.settings.defaultTickRateMs,
      };
    });
  }

  setCollection(grant: AccessGrant, id: string, change: { enabled?: boolean; tickRateMs?: number }): void {
    this.requireCollection(grant, id);
    const current = this.o.db.prepare('SELECT enabled, tick_rate_ms FROM monitor_collections WHERE collection_id = ?').get(id) as { enabled: number; tick_rate_ms: number } | undefined;
    const enabled = change.enabled ?? current?.enabled === 1;
    const rate = change.tickRateMs ?? current?.tick_rate_ms ?? this.o.settings.defaultTickRateMs;
    this.o.db
      .prepare('INSERT INTO monitor_collections (collection_id, enabled, tick_rate_ms) VALUES (?, ?, ?) ON CONFLICT (collection_id) DO UPDATE SET enabled = excluded.enabled, tick_rate_ms = excluded.tick_rate_ms')
      .run(id, enabled ? 1 : 0, rate);
    this.rebuild([id]);
  }

  status(): { enabled: boolean; collection_count: number; rule_count: number; last_snapshot_ms: number; tick_number: number } {
    return {
      enabled: this.enabled,
      collection_count: this.o.db.prepare('SELECT count(*) FROM monitor_collections WHERE enabled = 1').pluck().get() as number,
      rule_count: this.o.db.prepare('SELECT count(*) FROM monitor_rules').pluck().get() as number,
      last_snapshot_ms: this.lastTickMs,
      tick_number: this.tickNumber,
    };
  }

  // ---- rules ---------------------------------------------------------------

  async createRule(grant: AccessGrant, body: unknown): Promise<{ id: string }> {
    const rule = ruleFromBody(body, null);
    this.requireCollection(grant, rule.collection_id, 'collection_id');
    const tagIndex = await this.tagIndexOf(rule.collection_id, rule.tag);
    const id = this.insertRule(rule, null, 'api', tagIndex);
    return { id };
  }

  async updateRule(grant: AccessGrant, id: string, body: unknown): Promise<void> {
    const before = this.visibleRule(grant, id);
    const proposed = ruleFromBody(body, ruleView(before));
    if (proposed.collection_id !== before.collection_id) this.requireCollection(grant, proposed.collection_id, 'collection_id');
    const tagIndex = proposed.collection_id !== before.collection_id || proposed.tag !== before.tag ? await this.tagIndexOf(proposed.collection_id, proposed.tag) : before.tag_index;
    // Checked again after the wait: the rule may have changed or gone meanwhile.
    const current = this.visibleRule(grant, id);
    const rule = ruleFromBody(body, ruleView(current));
    const moved = rule.collection_id !== current.collection_id || rule.tag !== current.tag;
    // A rule that now watches another tag, or no longer runs, starts afresh: its open event is resolved.
    const reset = moved || !rule.enabled;
    this.o.db.transaction(() => {
      if (reset) this.resolveOpenEvent(current, this.o.clock.now());
      this.o.db
        .prepare(
          `UPDATE monitor_rules SET collection_id = ?, tag = ?, name = ?, enabled = ?, limHi = ?, limLo = ?, deadband = ?, on_delay_ms = ?, off_delay_ms = ?,
             stale_after_ms = ?, severity = ?, notify = ?, updated_ms = ?, tag_index = ?${reset ? ", phase = 'normal', kind = NULL, since_ms = NULL, event_id = NULL" : ''} WHERE id = ?`,
        )
        .run(rule.collection_id, rule.tag, rule.name, rule.enabled ? 1 : 0, rule.limHi, rule.limLo, rule.deadband, rule.on_delay_ms, rule.off_delay_ms, rule.stale_after_ms, rule.severity, rule.notify ? 1 : 0, this.o.clock.now(), !moved ? current.tag_index : rule.collection_id === proposed.collection_id && rule.tag === proposed.tag ? tagIndex : null, id);
    })();
    this.rebuild([current.collection_id, rule.collection_id]);
  }

  deleteRule(grant: AccessGrant, id: string): void {
    const rule = this.visibleRule(grant, id);
    this.removeRules([rule]);
  }

  rule(grant: AccessGrant, id: string): AlarmRule {
    return ruleView(this.visibleRule(grant, id));
  }

  rules(grant: AccessGrant, filter: { collection_id?: string; tag_index?: number; enabled?: boolean }): AlarmRule[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.collection_id !== undefined) {
      where.push('collection_id = ?');
      params.push(filter.collection_id);
    }
    if (filter.tag_index !== undefined) {
      where.push('tag_index = ?');
      params.push(filter.tag_index);
    }
    if (filter.enabled !== undefined) {
      where.push('enabled = ?');
      params.push(filter.enabled ? 1 : 0);
    }
    const rows = this.o.db.prepare(`SELECT * FROM monitor_rules ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_ms, id`).all(...params) as Array<Record<string, unknown>>;
    const reach = this.reach(grant);
    return rows.map(ruleOfRow).filter((r) => reach(r.collection_id)).map(ruleView);
  }

  // ---- events ----------------------------------------------------------------

  events(grant: AccessGrant, q: EventQuery): { events: AlarmEvent[]; total_count: number; has_more: boolean } {
    const { sql, params } = this.eventWhere(grant, q);
    const total = this.o.db.prepare(`SELECT count(*) FROM monitor_events WHERE ${sql}`).pluck().get(...params) as number;
    const events = this.o.db
      .prepare(`SELECT ${EVENT_COLUMNS} FROM monitor_events WHERE ${sql} ORDER BY started_ms DESC, id LIMIT ? OFFSET ?`)
      .all(...params, q.limit, q.offset) as AlarmEvent[];
    return { events, total_count: total, has_more: q.offset + events.length < total };
  }

  activeEvents(grant: AccessGrant): { events: AlarmEvent[]; total_count: number } {
    const { sql, params } = this.eventWhere(grant, { status: 'unresolved', limit: 0, offset: 0 });
    const events = this.o.db.prepare(`SELECT ${EVENT_COLUMNS} FROM monitor_events WHERE ${sql} ORDER BY started_ms DESC, id`).all(...params) as AlarmEvent[];
    return { events, total_count: events.length };
  }

  event(grant: AccessGrant, id: string): AlarmEvent {
    const event = this.o.db.prepare(`SELECT ${EVENT_COLUMNS} FROM monitor_events WHERE id = ?`).get(id) as AlarmEvent | undefined;
    if (!event || !this.reach(grant)(event.collection_id)) throw notFound(`unknown alarm event ${id}`);
    return event;
  }

  ack(grant: AccessGrant, id: string, by: string): void {
    const event = this.event(grant, id);
    if (event.status === 'resolved') throw conflict(`alarm event ${id} is already resolved`);
    if (event.status === 'acknowledged') return;
    this.o.db.prepare("UPDATE monitor_events SET status = 'acknowledged', acked_ms = ?, acked_by = ? WHERE id = ? AND status = 'active'").run(this.o.clock.now(), by, id);
  }

  stats(grant: AccessGrant, from: number, to: number) {
    const { sql, params } = this.eventWhere(grant, { from_ms: from, to_ms: to, limit: 0, offset: 0 });
    const group = (column: string) =>
      Object.fromEntries((this.o.db.prepare(`SELECT ${column} AS k, count(*) AS n FROM monitor_events WHERE ${sql} GROUP BY ${column}`).all(...params) as Array<{ k: string; n: number }>).map((r) => [r.k, r.n]));
    const total = this.o.db.prepare(`SELECT count(*) FROM monitor_events WHERE ${sql}`).pluck().get(...params) as number;
    const top = this.o.db.prepare(`SELECT rule_id, count(*) AS count FROM monitor_events WHERE ${sql} GROUP BY rule_id ORDER BY count DESC, rule_id LIMIT 10`).all(...params);
    const mean = this.o.db.prepare(`SELECT avg(resolved_ms - started_ms) FROM monitor_events WHERE ${sql} AND resolved_ms IS NOT NULL`).pluck().get(...params) as number | null;
    return { from_ms: from, to_ms: to, total, by_status: group('status'), by_severity: group('severity'), by_kind: group('kind'), top_rules: top, mean_duration_ms: mean === null ? null : Math.round(mean) };
  }

  cleanup(grant: AccessGrant, olderThanMs: number): number {
    const { sql, params } = this.eventWhere(grant, { status: 'resolved', limit: 0, offset: 0 });
    return this.o.db.prepare(`DELETE FROM monitor_events WHERE ${sql} AND started_ms < ?`).run(...params, olderThanMs).changes;
  }

  // ---- snapshot views ---------------------------------------------------------

  snapshot(grant: AccessGrant, onlyTriggered = false, collectionId?: string) {
    const reach = this.reach(grant);
    const collections = [...this.snapshots.values()]
      .filter(({ watch }) => reach(watch.collectionId) && (collectionId === undefined || watch.collectionId === collectionId))
      .filter((c) => !onlyTriggered || c.states.some((state) => state !== 'normal'))
      .map(({ watch, values, states }) => ({
        collection_id: watch.collectionId,
        tags: watch.tags.map((tag, i): SnapshotTag => {
          const rules = watch.rules.filter((r) => r.tag === tag);
          return {
            tag,
            tag_index: rules[0]?.tag_index ?? null,
            value: numberOrNull(values[i * MONITOR_SAMPLE_STRIDE + 1]),
            ts: numberOrNull(values[i * MONITOR_SAMPLE_STRIDE]),
            state: states[i],
            rule_ids: rules.map((r) => r.id),
          };
        }),
      }));
    return { timestamp_ms: this.lastTickMs, tick_number: this.tickNumber, collections };
  }

  summary(grant: AccessGrant, collectionId?: string) {
    const reach = this.reach(grant);
    let collections = 0;
    let triggered = 0;
    for (const { watch, states } of this.snapshots.values()) {
      if (!reach(watch.collectionId) || (collectionId !== undefined && watch.collectionId !== collectionId)) continue;
      collections++;
      for (const state of states) if (state !== 'normal') triggered++;
    }
    return {
      collection_count: collections,
      triggered_tags: triggered,
      timestamp_ms: this.lastTickMs,
      tick_number: this.tickNumber,
      evaluation_duration_ms: this.lastDurationMs,
    };
  }

  // ---- rules from metadata ------------------------------------------------------

  /**
   * tagmeta rows with limits and a dataTagId make one rule each (in the collection the
   * tag-to-scope map names); changing the limits updates it, deleting the row deletes it. An
   * update of units that sets limits and a dataTagId does the same for that unit's collections.
   */
  entityHooks(): EntityHooks {
    return {
      afterCreate: (def, entity) => {
        if (def.table === 'tagmeta') this.followTagmeta(entity);
      },
      afterUpdate: (def, before, after) => {
        if (def.table === 'tagmeta') this.followTagmeta(after);
        if (def.table === 'units' && hasLimits(after) && typeof after.dataTagId === 'string' && limitsChanged(before, after)) this.followUnit(after);
      },
      beforeDelete: (def, entity) => {
        if (def.table !== 'tagmeta') return;
        const rows = this.o.db.prepare("SELECT * FROM monitor_rules WHERE tagmetaId = ? AND origin = 'tagmeta'").all(String(entity.id)) as Array<Record<string, unknown>>;
        if (rows.length > 0) this.removeRules(rows.map(ruleOfRow));
      },
      afterRollback: () => this.dirty.clear(),
      afterCommit: () => {
        if (this.dirty.size > 0) {
          const ids = [...this.dirty];
          this.dirty.clear();
          this.rebuild(ids);
        }
      },
    };
  }

  /** Collections whose rules changed inside the entity write in progress (rebuilt once it commits). */
  private readonly dirty = new Set<string>();

  private followTagmeta(entity: Entity): void {
    const id = String(entity.id);
    const existing = this.o.db.prepare("SELECT * FROM monitor_rules WHERE tagmetaId = ? AND origin = 'tagmeta'").all(id) as Array<Record<string, unknown>>;
    const collectionId = typeof entity.dataTagId === 'string' ? this.o.storage.collectionOfTag(entity.dataTagId) : null;
    if (!hasLimits(entity) || !collectionId) {
      if (existing.length > 0) this.removeRules(existing.map(ruleOfRow));
      return;
    }
    const limits = { limHi: numberOrNull(entity.limHi), limLo: numberOrNull(entity.limLo) };
    if (limits.limHi !== null && limits.limLo !== null && limits.limLo >= limits.limHi) return; // not a rule anyone could mean
    const name = typeof entity.tagName === 'string' ? entity.tagName : '';
    this.upsertDerived('tagmeta', id, collectionId, entity.dataTagId as string, limits, name, existing);
  }

  private followUnit(unit: Entity): void {
    const limits = { limHi: numberOrNull(unit.limHi), limLo: numberOrNull(unit.limLo) };
    if (limits.limHi !== null && limits.limLo !== null && limits.limLo >= limits.limHi) return;
    for (const collectionId of this.o.storage.collectionsOfUnit(Number(unit.id))) {
      const existing = this.o.db.prepare("SELECT * FROM monitor_rules WHERE origin = 'units' AND collection_id = ? AND tag = ?").all(collectionId, unit.dataTagId) as Array<Record<string, unknown>>;
      this.upsertDerived('units', null, collectionId, unit.dataTagId as string, limits, '', existing);
    }
  }

  private upsertDerived(origin: 'tagmeta' | 'units', tagmetaId: string | null, collectionId: string, tag: string, limits: { limHi: number | null; limLo: number | null }, name: string, existing: Array<Record<string, unknown>>): void {
    const now = this.o.clock.now();
    if (existing.length > 0) {
      const rule = ruleOfRow(existing[0]);
      if (rule.collection_id === collectionId && rule.tag === tag) {
        this.o.db.prepare('UPDATE monitor_rules SET limHi = ?, limLo = ?, updated_ms = ? WHERE id = ?').run(limits.limHi, limits.limLo, now, rule.id);
        this.dirty.add(collectionId);
        return;
      }
      this.removeRules(existing.map(ruleOfRow));
    }
    this.insertRule({ collection_id: collectionId, tag, name, enabled: true, ...limits, deadband: 0, on_delay_ms: 0, off_delay_ms: 0, stale_after_ms: null, severity: 'warn', notify: true }, tagmetaId, origin);
  }

  // ---- internals -----------------------------------------------------------------

  /** The tag's index in its collection's tag dictionary, from the storage worker; null when never written. */
  private async tagIndexOf(collectionId: string, tag: string): Promise<number | null> {
    const [index] = await this.o.storage.tagIndexes(collectionId, [tag]);
    return index >= 0 ? index : null;
  }

  private insertRule(rule: Omit<AlarmRule, 'id' | 'tag_index' | 'tagmetaId'>, tagmetaId: string | null, origin: StoredRule['origin'], tagIndex: number | null = null): string {
    const id = newRuleId();
    const now = this.o.clock.now();
    this.o.db
      .prepare(
        `INSERT INTO monitor_rules (id, collection_id, tag, tag_index, name, enabled, limHi, limLo, deadband, on_delay_ms, off_delay_ms, stale_after_ms, severity, notify, tagmetaId, origin, created_ms, updated_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, rule.collection_id, rule.tag, tagIndex, rule.name, rule.enabled ? 1 : 0, rule.limHi, rule.limLo, rule.deadband, rule.on_delay_ms, rule.off_delay_ms, rule.stale_after_ms, rule.severity, rule.notify ? 1 : 0, tagmetaId, origin, now, now);
    // A collection is monitored from its first rule on, unless someone disabled it on purpose.
    this.o.db.prepare('INSERT INTO monitor_collections (collection_id, enabled, tick_rate_ms) VALUES (?, 1, ?) ON CONFLICT (collection_id) DO NOTHING').run(rule.collection_id, this.o.settings.defaultTickRateMs);
    if (this.o.db.inTransaction) this.dirty.add(rule.collection_id);
    else this.rebuild([rule.collection_id]);
    return id;
  }

  /** Deletes rules; an event they hold open is resolved (it can never resolve otherwise). */
  private removeRules(rules: StoredRule[]): void {
    const now = this.o.clock.now();
    const run = () => {
      for (const rule of rules) {
        this.resolveOpenEvent(rule, now);
        this.o.db.prepare('DELETE FROM monitor_rules WHERE id = ?').run(rule.id);
      }
    };
    const collections = rules.map((r) => r.collection_id);
    if (this.o.db.inTransaction) {
      run();
      for (const id of collections) this.dirty.add(id);
    } else {
      this.o.db.transaction(run)();
      this.rebuild(collections);
    }
  }

  private resolveOpenEvent(rule: StoredRule, now: number): void {
    if (rule.state.eventId) this.o.db.prepare("UPDATE monitor_events SET status = 'resolved', resolved_ms = ? WHERE id = ? AND status <> 'resolved'").run(now, rule.state.eventId);
  }

  private visibleRule(grant: AccessGrant, id: string): StoredRule {
    const row = this.o.db.prepare('SELECT * FROM monitor_rules WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    if (!row || !this.reach(grant)(row.collection_id as string)) throw notFound(`unknown rule ${id}`);
    return ruleOfRow(row);
  }

  private requireCollection(grant: AccessGrant, id: string, field?: string): void {
    if (this.o.storage.canReach(grant, id)) return;
    if (field) throw badRequest(`${field}: unknown collection ${id}`);
    throw notFound(`unknown collection ${id}`);
  }

  /** Whether the caller reaches a collection id (memoised for one request). */
  private reach(grant: AccessGrant): (collectionId: string) => boolean {
    if (grant.isAdmin) return () => true;
    const known = new Map<string, boolean>();
    return (id) => {
      let ok = known.get(id);
      if (ok === undefined) known.set(id, (ok = this.o.storage.canReach(grant, id)));
      return ok;
    };
  }

  private eventWhere(grant: AccessGrant, q: Partial<EventQuery>): { sql: string; params: unknown[] } {
    const where: string[] = ['1'];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      where.push(sql);
      params.push(value);
    };
    if (q.from_ms !== undefined) add('started_ms >= ?', q.from_ms);
    if (q.to_ms !== undefined) add('started_ms <= ?', q.to_ms);
    if (q.collection_id !== undefined) add('collection_id = ?', q.collection_id);
    if (q.tag_index !== undefined) add('tag_index = ?', q.tag_index);
    if (q.rule_id !== undefined) add('rule_id = ?', q.rule_id);
    if (q.status === 'unresolved') where.push("status <> 'resolved'");
    else if (q.status !== undefined) add('status = ?', q.status);
    if (!grant.isAdmin) {
      // The collections this caller reaches, by id: the grant decides in the data layer.
      const ids = (this.o.db.prepare('SELECT DISTINCT collection_id FROM monitor_events').pluck().all() as string[]).filter(this.reach(grant));
      add('collection_id IN (SELECT value FROM json_each(?))', JSON.stringify(ids));
    }
    return { sql: where.join(' AND '), params };
  }

  /**
   * Reloads what the ticks need from SQLite, for the collections named (all when none are), and
   * reschedules. Per collection, so making 10,000 rules one by one stays linear.
   */
  private rebuild(only?: Iterable<string>): void {
    const ids = only ? [...new Set(only)] : null;
    const rulesOf = this.o.db.prepare('SELECT * FROM monitor_rules WHERE enabled = 1 AND collection_id = ?');
    const rateOf = this.o.db.prepare('SELECT tick_rate_ms FROM monitor_collections WHERE enabled = 1 AND collection_id = ?').pluck();
    let targets: string[];
    if (ids) targets = ids;
    else {
      targets = this.o.db.prepare('SELECT collection_id FROM monitor_collections WHERE enabled = 1').pluck().all() as string[];
      const gone = [...this.watches.keys()].filter((id) => !targets.includes(id));
      for (const id of gone) this.watches.delete(id);
      if (gone.length > 0) this.forgetInWorkers(gone);
    }
    const now = this.o.clock.now();
    for (const id of targets) {
      const rate = rateOf.get(id) as number | undefined;
      const rules = rate === undefined ? [] : (rulesOf.all(id) as Array<Record<string, unknown>>).map(ruleOfRow);
      const previous = this.watches.get(id);
      if (rules.length === 0 || rate === undefined) {
        if (previous) this.forgetInWorkers([id]);
        this.watches.delete(id);
        this.snapshots.delete(id);
        continue;
      }
      const tags = [...new Set(rules.map((r) => r.tag))].sort();
      const same = previous !== undefined && previous.tags.length === tags.length && previous.tags.every((t, i) => t === tags[i]);
      this.watches.set(id, {
        collectionId: id,
        rateMs: rate,
        nextDue: previous && previous.rateMs === rate ? previous.nextDue : alignedAfter(now, rate),
        version: same ? previous.version : ++this.watchVersion,
        sentVersion: same ? previous.sentVersion : -1,
        tags,
        tagAt: new Map(tags.map((t, i) => [t, i])),
        rules,
      });
    }
    this.reschedule();
  }

  /** Tells the storage workers to stop tracking writes of these collections (an empty tag list). */
  private forgetInWorkers(collectionIds: string[]): void {
    if (collectionIds.length === 0 || !this.running) return;
    this.o.storage.monitorSample(collectionIds.map((collectionId) => ({ collectionId, version: 0, tags: [] }))).catch((err) => {
      this.o.log.warn({ err: String(err), collections: collectionIds.length }, 'could not tell the storage workers to stop watching collections');
    });
  }

  private reschedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.running || !this.enabled || this.watches.size === 0 || this.ticking) return;
    let due = Infinity;
    for (const w of this.watches.values()) due = Math.min(due, w.nextDue);
    this.timer = setTimeout(() => this.tick(), Math.max(0, due - this.o.clock.now()));
    this.timer.unref();
  }

  private tick(): void {
    this.timer = null;
    this.ticking = this.runTick()
      .catch((err) => this.o.log.error({ err: String((err as Error)?.stack ?? err) }, 'monitor tick failed'))
      .finally(() => {
        this.ticking = null;
        this.reschedule();
      });
  }

  private async runTick(): Promise<void> {
    const began = performance.now();
    const now = this.o.clock.now();
    const due = [...this.watches.values()].filter((w) => w.nextDue <= now);
    if (due.length === 0) return;
    for (const w of due) w.nextDue = alignedAfter(now, w.rateMs);
    // On a cluster only the leader evaluates: its rule states, events and notifications replicate.
    if (this.o.leads && !this.o.leads()) return;
    // The tag list goes again while a rule's tag has no index yet: the answer carries the indexes.
    const requests: MonitorSampleRequest[] = due.map((w) => ({
      collectionId: w.collectionId,
      version: w.version,
      ...(w.sentVersion !== w.version || w.rules.some((r) => r.tag_index === null) ? { tags: w.tags } : {}),
    }));
    const samples = await this.o.storage.monitorSample(requests);
    const sampled = performance.now();
    if (!this.running) return;
    const byId = new Map(due.map((w) => [w.collectionId, w]));
    const notes: Array<() => void> = [];
    this.o.db.transaction(() => {
      for (const sample of samples) {
        const watch = byId.get(sample.collectionId);
        if (!watch || this.watches.get(watch.collectionId) !== watch) continue; // rules changed meanwhile
        if (sample.resend) {
          watch.sentVersion = -1;
          continue;
        }
        if (sample.missing || !sample.values) continue;
        watch.sentVersion = watch.version;
        if (sample.tagIndexes) this.learnTagIndexes(watch, sample.tagIndexes);
        this.evaluateCollection(watch, sample.values, now, notes);
      }
    })();
    for (const note of notes) {
      try {
        note();
      } catch (err) {
        this.o.log.error({ err: String(err) }, 'alarm notification failed');
      }
    }
    this.tickNumber++;
    this.lastTickMs = now;
    const ended = performance.now();
    this.lastDurationMs = Math.round((ended - began) * 1000) / 1000;
    this.o.log.debug({ tick: this.tickNumber, collections: due.length, sampleMs: Math.round((sampled - began) * 100) / 100, evaluateMs: Math.round((ended - sampled) * 100) / 100 }, 'monitor tick');
  }

  private learnTagIndexes(watch: Watch, indexes: number[]): void {
    const update = this.o.db.prepare('UPDATE monitor_rules SET tag_index = ? WHERE id = ?');
    watch.tags.forEach((tag, i) => {
      const index = indexes[i] >= 0 ? indexes[i] : null;
      for (const rule of watch.rules) {
        if (rule.tag === tag && rule.tag_index !== index) {
          rule.tag_index = index;
          update.run(index, rule.id);
        }
      }
    });
  }

  private evaluateCollection(watch: Watch, values: Float64Array, now: number, notes: Array<() => void>): void {
    const states = new Array<'normal' | AlarmKind>(watch.tags.length).fill('normal');
    for (const rule of watch.rules) {
      const i = watch.tagAt.get(rule.tag)!;
      const at = i * MONITOR_SAMPLE_STRIDE;
      const tagValues: TagValues = { lastTs: values[at], last: values[at + 1], max: values[at + 3], min: values[at + 5] };
      const result = evaluate(rule, rule.state, tagValues, now);
      if (result.transitions.length > 0 || !sameState(rule.state, result.state)) {
        let eventId = rule.state.eventId;
        for (const t of result.transitions) {
          if (t.type === 'open') eventId = this.openEvent(rule, t.kind, t.value, t.limit, now, notes);
          else {
            if (eventId) this.closeEvent(rule, eventId, t.kind, t.value, t.limit, now, notes);
            eventId = null;
          }
        }
        const next: RuleState = result.state.phase === 'active' || result.state.phase === 'pending_off' ? { ...result.state, eventId } : { ...result.state, eventId: null };
        if (!sameState(rule.state, next)) {
          this.saveState.run(next.phase, next.kind, next.since, next.eventId, rule.id);
          rule.state = next;
        }
      }
      if (states[i] === 'normal') states[i] = result.shown;
    }
    this.snapshots.set(watch.collectionId, { watch, values, states });
  }

  private openEvent(rule: StoredRule, kind: AlarmKind, value: number | null, limit: number | null, now: number, notes: Array<() => void>): string {
    const id = newEventId();
    const message = kind === 'stale' ? `${rule.tag} stale: no value for more than ${limit} ms` : `${rule.tag} ${kind}: ${value} ${kind === 'high' ? '>' : '<'} ${limit}`;
    this.o.db
      .prepare(`INSERT INTO monitor_events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, NULL, NULL, NULL, ?)`)
      .run(id, rule.id, rule.collection_id, rule.tag, rule.tag_index, kind, rule.severity, value, limit, now, message);
    this.o.log.info({ event: id, rule: rule.id, collection: rule.collection_id, tag: rule.tag, kind, value, limit }, 'alarm opened');
    if (rule.notify) notes.push(() => this.notify(rule, rule.severity, message, { rule_id: rule.id, event_id: id, collection_id: rule.collection_id, tag: rule.tag, value, limit }));
    return id;
  }

  private closeEvent(rule: StoredRule, eventId: string, kind: AlarmKind, value: number | null, limit: number | null, now: number, notes: Array<() => void>): void {
    this.o.db.prepare("UPDATE monitor_events SET status = 'resolved', resolved_ms = ? WHERE id = ? AND status <> 'resolved'").run(now, eventId);
    this.o.log.info({ event: eventId, rule: rule.id, collection: rule.collection_id, tag: rule.tag, kind, value }, 'alarm resolved');
    if (rule.notify) notes.push(() => this.notify(rule, 'info', `${rule.tag} back to normal${value === null ? '' : `: ${value}`} (was ${kind})`, { rule_id: rule.id, event_id: eventId, collection_id: rule.collection_id, tag: rule.tag, value, limit }));
  }

  /**
   * A notification for the collection's unit (unitsId only, as the contract says). A collection
   * bound to no unit entity is reachable by admins only, so its alarms go to each admin by name:
   * a broadcast without scope would reach everyone.
   */
  private notify(rule: StoredRule, severity: AlarmRule['severity'], title: string, payload: Record<string, unknown>): void {
    const unitsId = this.o.storage.unitIdOf(rule.collection_id);
    const input = {
      severity,
      source: 'monitor' as const,
      title: truncateBytes(title, 120),
      body: rule.name ? truncateBytes(`${rule.name} (${rule.collection_id})`, 2048) : rule.collection_id,
      payload,
      sourceRef: String(payload.event_id),
    };
    if (unitsId !== null) {
      this.o.notifications.notify({ ...input, unitsId });
      return;
    }
    const admins = this.o.db.prepare("SELECT email FROM users WHERE CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.role') END = 'admin'").pluck().all() as string[];
    for (const email of admins) this.o.notifications.notify({ ...input, userId: email });
  }
}

/** The first multiple of `rate` after `now`: collections of one rate tick together. */
function alignedAfter(now: number, rate: number): number {
  return (Math.floor(now / rate) + 1) * rate;
}

function sameState(a: RuleState, b: RuleState): boolean {
  return a.phase === b.phase && a.kind === b.kind && a.since === b.since && a.eventId === b.eventId;
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function hasLimits(entity: Entity): boolean {
  return numberOrNull(entity.limHi) !== null || numberOrNull(entity.limLo) !== null;
}

function limitsChanged(before: Entity, after: Entity): boolean {
  return before.limHi !== after.limHi || before.limLo !== after.limLo || before.dataTagId !== after.dataTagId;
}

/** At most `max` UTF-8 bytes, cut on a character boundary. */
function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = text.slice(0, max);
  while (Buffer.byteLength(out) > max - 3) out = out.slice(0, -1); // room for the ellipsis
  return `${out}…`;
}

