// The monitor as its routes see it: alarm rules on tags of collections, alarm events, monitored
// collections, the switch, and the latest evaluation (snapshot and summary). The ticks are the
// scheduler's (scheduler.ts); the tables are meta/tables/alarms.ts; rules made from metadata
// (tagmeta and unit limits) are derived-rules.ts.
//
// Every read and change goes through the caller's grant: a collection outside it does not exist
// for that caller.

import type { ServiceClock } from '../clock.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { AlarmEvent, AlarmTables, EventFilter } from '../meta/tables/alarms.js';
import type { Notify } from '../notifications/api.js';
import type { Collections, MonitorSampler } from '../storage/api.js';
import { badRequest, conflict, notFound } from '../../shared/errors.js';
import { MONITOR_SAMPLE_STRIDE } from '../../shared/protocol.js';
import { newRuleId, numberOrNull, ruleFromBody, ruleOfRow, ruleView, type AlarmRule, type StoredRule } from './alarm-rules.js';
import type { AlarmKind } from './evaluate.js';
import type { TickScheduler, Transition } from './scheduler.js';

export type { AlarmEvent };
export const EVENT_STATUSES: readonly string[] = ['active', 'acknowledged', 'resolved', 'unresolved'];

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

export interface EventQuery extends Omit<EventFilter, 'collections'> {
  limit: number;
  offset: number;
}

export interface MonitorOptions {
  tables: AlarmTables;
  scheduler: TickScheduler;
  collections: Collections;
  sampler: MonitorSampler;
  notify: Notify;
  clock: ServiceClock;
  log: Logger;
  defaultTickRateMs: number;
}

export class MonitorService {
  /** Collections whose rules changed inside the entity write in progress (rebuilt once it commits). */
  readonly dirty = new Set<string>();

  constructor(private readonly o: MonitorOptions) {}

  // ---- config, collections, status ------------------------------------------

  config(): { enabled: boolean } {
    return { enabled: this.o.scheduler.isEnabled };
  }

  setEnabled(enabled: boolean): void {
    this.o.tables.setEnabled(enabled);
    this.o.scheduler.setEnabled(enabled);
    this.o.log.info({ enabled }, enabled ? 'monitor enabled' : 'monitor disabled');
  }

  collections(grant: AccessGrant): MonitoredCollection[] {
    const stored = new Map(this.o.tables.collections().map((r) => [r.collection_id, r]));
    return this.o.collections.visible(grant).map((record) => {
      const id = `${record.organization}/${record.site}/${record.unit}/${record.grid}`;
      const row = stored.get(id);
      return {
        id,
        enabled: row?.enabled === 1,
        description: typeof record.description === 'string' ? record.description : '',
        tick_rate_ms: row?.tick_rate_ms ?? this.o.defaultTickRateMs,
      };
    });
  }

  setCollection(grant: AccessGrant, id: string, change: { enabled?: boolean; tickRateMs?: number }): void {
    this.requireCollection(grant, id);
    const current = this.o.tables.collection(id);
    const enabled = change.enabled ?? current?.enabled === 1;
    const rate = change.tickRateMs ?? current?.tick_rate_ms ?? this.o.defaultTickRateMs;
    this.o.tables.setCollection(id, enabled, rate);
    this.o.scheduler.rebuild([id]);
  }

  status(): { enabled: boolean; collection_count: number; rule_count: number; last_snapshot_ms: number; tick_number: number } {
    return {
      enabled: this.o.scheduler.isEnabled,
      collection_count: this.o.tables.enabledCollectionCount(),
      rule_count: this.o.tables.ruleCount(),
      last_snapshot_ms: this.o.scheduler.lastTickMs,
      tick_number: this.o.scheduler.tickNumber,
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
    const index = !moved ? current.tag_index : rule.collection_id === proposed.collection_id && rule.tag === proposed.tag ? tagIndex : null;
    this.o.tables.transaction(() => {
      if (reset) this.resolveOpenEvent(current, this.o.clock.now());
      this.o.tables.updateRule(id, rule, index, reset, this.o.clock.now());
    });
    this.o.scheduler.rebuild([current.collection_id, rule.collection_id]);
  }

  deleteRule(grant: AccessGrant, id: string): void {
    this.removeRules([this.visibleRule(grant, id)]);
  }

  rule(grant: AccessGrant, id: string): AlarmRule {
    return ruleView(this.visibleRule(grant, id));
  }

  rules(grant: AccessGrant, filter: { collection_id?: string; tag_index?: number; enabled?: boolean }): AlarmRule[] {
    const reach = this.reach(grant);
    return this.o.tables.rules(filter).map(ruleOfRow).filter((r) => reach(r.collection_id)).map(ruleView);
  }

  /**
   * Inserts a rule; a collection is monitored from its first rule on, unless someone disabled it
   * on purpose. Inside an entity write the scheduler catches up once it commits.
   */
  insertRule(rule: Omit<AlarmRule, 'id' | 'tag_index' | 'tagmetaId'>, tagmetaId: string | null, origin: StoredRule['origin'], tagIndex: number | null = null): string {
    const id = newRuleId();
    this.o.tables.insertRule(id, rule, tagIndex, tagmetaId, origin, this.o.clock.now());
    this.o.tables.monitorByDefault(rule.collection_id, this.o.defaultTickRateMs);
    if (this.o.tables.inTransaction) this.dirty.add(rule.collection_id);
    else this.o.scheduler.rebuild([rule.collection_id]);
    return id;
  }

  /** Deletes rules; an event they hold open is resolved (it can never resolve otherwise). */
  removeRules(rules: StoredRule[]): void {
    const now = this.o.clock.now();
    const run = () => {
      for (const rule of rules) {
        this.resolveOpenEvent(rule, now);
        this.o.tables.deleteRule(rule.id);
      }
    };
    const collections = rules.map((r) => r.collection_id);
    if (this.o.tables.inTransaction) {
      run();
      for (const id of collections) this.dirty.add(id);
    } else {
      this.o.tables.transaction(run);
      this.o.scheduler.rebuild(collections);
    }
  }

  // ---- events ----------------------------------------------------------------

  events(grant: AccessGrant, q: EventQuery): { events: AlarmEvent[]; total_count: number; has_more: boolean } {
    const filter = this.filterFor(grant, q);
    const total = this.o.tables.countEvents(filter);
    const events = this.o.tables.events(filter, q.limit, q.offset);
    return { events, total_count: total, has_more: q.offset + events.length < total };
  }

  activeEvents(grant: AccessGrant): { events: AlarmEvent[]; total_count: number } {
    const events = this.o.tables.events(this.filterFor(grant, { status: 'unresolved' }), null, 0);
    return { events, total_count: events.length };
  }

  event(grant: AccessGrant, id: string): AlarmEvent {
    const event = this.o.tables.event(id);
    if (!event || !this.reach(grant)(event.collection_id)) throw notFound(`unknown alarm event ${id}`);
    return event;
  }

  ack(grant: AccessGrant, id: string, by: string): void {
    const event = this.event(grant, id);
    if (event.status === 'resolved') throw conflict(`alarm event ${id} is already resolved`);
    if (event.status === 'acknowledged') return;
    this.o.tables.acknowledge(id, by, this.o.clock.now());
  }

  stats(grant: AccessGrant, from: number, to: number) {
    const filter = this.filterFor(grant, { from_ms: from, to_ms: to });
    const { tables } = this.o;
    const mean = tables.meanDurationMs(filter);
    return {
      from_ms: from,
      to_ms: to,
      total: tables.countEvents(filter),
      by_status: tables.countsBy('status', filter),
      by_severity: tables.countsBy('severity', filter),
      by_kind: tables.countsBy('kind', filter),
      top_rules: tables.topRules(filter),
      mean_duration_ms: mean === null ? null : Math.round(mean),
    };
  }

  cleanup(grant: AccessGrant, olderThanMs: number): number {
    return this.o.tables.deleteEvents(this.filterFor(grant, { status: 'resolved' }), olderThanMs);
  }

  // ---- snapshot views ---------------------------------------------------------

  snapshot(grant: AccessGrant, onlyTriggered = false, collectionId?: string) {
    const reach = this.reach(grant);
    const { scheduler } = this.o;
    const collections = [...scheduler.snapshots.values()]
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
    return { timestamp_ms: scheduler.lastTickMs, tick_number: scheduler.tickNumber, collections };
  }

  summary(grant: AccessGrant, collectionId?: string) {
    const reach = this.reach(grant);
    const { scheduler } = this.o;
    let collections = 0;
    let triggered = 0;
    for (const { watch, states } of scheduler.snapshots.values()) {
      if (!reach(watch.collectionId) || (collectionId !== undefined && watch.collectionId !== collectionId)) continue;
      collections++;
      for (const state of states) if (state !== 'normal') triggered++;
    }
    return {
      collection_count: collections,
      triggered_tags: triggered,
      timestamp_ms: scheduler.lastTickMs,
      tick_number: scheduler.tickNumber,
      evaluation_duration_ms: scheduler.lastDurationMs,
    };
  }

  // ---- notifications -------------------------------------------------------------

  /**
   * A notification for the collection's unit (unitsId only, as the contract says). A collection
   * bound to no unit entity is reachable by admins only, so its alarms go to each admin by name:
   * a broadcast without scope would reach everyone.
   */
  notifyTransition(t: Transition): void {
    const { rule } = t;
    const input = {
      severity: t.opened ? rule.severity : ('info' as const),
      source: 'monitor' as const,
      title: truncateBytes(t.message, 120),
      body: rule.name ? truncateBytes(`${rule.name} (${rule.collection_id})`, 2048) : rule.collection_id,
      payload: { rule_id: rule.id, event_id: t.eventId, collection_id: rule.collection_id, tag: rule.tag, value: t.value, limit: t.limit },
      sourceRef: t.eventId,
    };
    const unitsId = this.o.collections.unitIdOf(rule.collection_id);
    if (unitsId !== null) this.o.notify.notify({ ...input, unitsId });
    else this.o.notify.notifyAdmins(input);
  }

  // ---- internals -----------------------------------------------------------------

  /** The tag's index in its collection's tag dictionary, from the storage worker; null when never written. */
  private async tagIndexOf(collectionId: string, tag: string): Promise<number | null> {
    const [index] = await this.o.sampler.tagIndexes(collectionId, [tag]);
    return index >= 0 ? index : null;
  }

  private resolveOpenEvent(rule: StoredRule, now: number): void {
    if (rule.state.eventId) this.o.tables.resolve(rule.state.eventId, now);
  }

  private visibleRule(grant: AccessGrant, id: string): StoredRule {
    const row = this.o.tables.rule(id);
    if (!row || !this.reach(grant)(row.collection_id as string)) throw notFound(`unknown rule ${id}`);
    return ruleOfRow(row);
  }

  private requireCollection(grant: AccessGrant, id: string, field?: string): void {
    if (this.o.collections.canReach(grant, id)) return;
    if (field) throw badRequest(`${field}: unknown collection ${id}`);
    throw notFound(`unknown collection ${id}`);
  }

  /** Whether the caller reaches a collection id (memoised for one request). */
  private reach(grant: AccessGrant): (collectionId: string) => boolean {
    if (grant.isAdmin) return () => true;
    const known = new Map<string, boolean>();
    return (id) => {
      let ok = known.get(id);
      if (ok === undefined) known.set(id, (ok = this.o.collections.canReach(grant, id)));
      return ok;
    };
  }

  /** An event filter narrowed to the collections the caller reaches: the grant decides in the data layer. */
  private filterFor(grant: AccessGrant, q: Omit<EventFilter, 'collections'>): EventFilter {
    const { from_ms, to_ms, collection_id, tag_index, rule_id, status } = q;
    const filter: EventFilter = { from_ms, to_ms, collection_id, tag_index, rule_id, status };
    if (!grant.isAdmin) filter.collections = this.o.tables.eventCollections().filter(this.reach(grant));
    return filter;
  }
}

/** At most `max` UTF-8 bytes, cut on a character boundary. */
function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = text.slice(0, max);
  while (Buffer.byteLength(out) > max - 3) out = out.slice(0, -1); // room for the ellipsis
  return `${out}…`;
}
