// The monitor's tables (migration 5): alarm rules with their evaluation state, alarm events,
// monitored collections and the monitor's settings. The monitor (monitor/) decides; this is all
// of its SQL. Rule rows come back as stored (monitor/alarm-rules.ts reads them into rules).

import type { Db } from '../database.js';

export type EventStatus = 'active' | 'acknowledged' | 'resolved';

export interface AlarmEvent {
  id: string;
  rule_id: string;
  collection_id: string;
  tag: string;
  tag_index: number | null;
  kind: string;
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

/** Which events: a time range of start, a collection, tag index, rule or status (`unresolved`: active or acknowledged). */
export interface EventFilter {
  from_ms?: number;
  to_ms?: number;
  collection_id?: string;
  tag_index?: number;
  rule_id?: string;
  status?: string;
  /** Only events of these collections (the caller's reach); undefined for every collection. */
  collections?: readonly string[];
}

/** The fields of a rule a caller sets, as stored. */
export interface RuleColumns {
  collection_id: string;
  tag: string;
  name: string;
  enabled: boolean;
  limHi: number | null;
  limLo: number | null;
  deadband: number;
  on_delay_ms: number;
  off_delay_ms: number;
  stale_after_ms: number | null;
  severity: string;
  notify: boolean;
}

/** A rule's evaluation state, as stored. */
export interface RuleStateColumns {
  phase: string;
  kind: string | null;
  since: number | null;
  eventId: string | null;
}

export type RuleRow = Record<string, unknown>;

const EVENT_COLUMNS = 'id, rule_id, collection_id, tag, tag_index, kind, status, severity, value, "limit", started_ms, resolved_ms, acked_ms, acked_by, message';

export class AlarmTables {
  private readonly saveState;
  private readonly setTagIndex;
  private readonly enabledRulesOf;
  private readonly enabledRateOf;
  private readonly resolveEvent;
  private readonly addEvent;

  constructor(private readonly db: Db) {
    this.saveState = db.prepare<[string, string | null, number | null, string | null, string]>('UPDATE monitor_rules SET phase = ?, kind = ?, since_ms = ?, event_id = ? WHERE id = ?');
    this.setTagIndex = db.prepare<[number | null, string]>('UPDATE monitor_rules SET tag_index = ? WHERE id = ?');
    this.enabledRulesOf = db.prepare<[string], RuleRow>('SELECT * FROM monitor_rules WHERE enabled = 1 AND collection_id = ?');
    this.enabledRateOf = db.prepare<[string], number>('SELECT tick_rate_ms FROM monitor_collections WHERE enabled = 1 AND collection_id = ?').pluck();
    this.resolveEvent = db.prepare<[number, string]>("UPDATE monitor_events SET status = 'resolved', resolved_ms = ? WHERE id = ? AND status <> 'resolved'");
    this.addEvent = db.prepare(`INSERT INTO monitor_events (${EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, NULL, NULL, NULL, ?)`);
  }

  /** Runs `work` in one transaction (or inside the caller's). */
  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  // ---- settings -------------------------------------------------------------

  /** Whether the monitor is switched on (on unless someone switched it off). */
  enabled(): boolean {
    const stored = this.db.prepare("SELECT value FROM monitor_settings WHERE key = 'enabled'").pluck().get() as string | undefined;
    return stored === undefined ? true : stored === 'true';
  }

  setEnabled(enabled: boolean): void {
    this.db.prepare("INSERT INTO monitor_settings (key, value) VALUES ('enabled', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(enabled));
  }

  // ---- monitored collections ------------------------------------------------

  collections(): Array<{ collection_id: string; enabled: number; tick_rate_ms: number }> {
    return this.db.prepare('SELECT collection_id, enabled, tick_rate_ms FROM monitor_collections').all() as Array<{ collection_id: string; enabled: number; tick_rate_ms: number }>;
  }

  collection(id: string): { enabled: number; tick_rate_ms: number } | undefined {
    return this.db.prepare('SELECT enabled, tick_rate_ms FROM monitor_collections WHERE collection_id = ?').get(id) as { enabled: number; tick_rate_ms: number } | undefined;
  }

  setCollection(id: string, enabled: boolean, rateMs: number): void {
    this.db
      .prepare('INSERT INTO monitor_collections (collection_id, enabled, tick_rate_ms) VALUES (?, ?, ?) ON CONFLICT (collection_id) DO UPDATE SET enabled = excluded.enabled, tick_rate_ms = excluded.tick_rate_ms')
      .run(id, enabled ? 1 : 0, rateMs);
  }

  /** Monitors a collection at `rateMs` unless it has a row already (someone disabled it on purpose). */
  monitorByDefault(id: string, rateMs: number): void {
    this.db.prepare('INSERT INTO monitor_collections (collection_id, enabled, tick_rate_ms) VALUES (?, 1, ?) ON CONFLICT (collection_id) DO NOTHING').run(id, rateMs);
  }

  enabledCollectionCount(): number {
    return this.db.prepare('SELECT count(*) FROM monitor_collections WHERE enabled = 1').pluck().get() as number;
  }

  enabledCollections(): string[] {
    return this.db.prepare('SELECT collection_id FROM monitor_collections WHERE enabled = 1').pluck().all() as string[];
  }

  /** The tick rate of a monitored collection; undefined when it is not monitored. */
  rateOf(id: string): number | undefined {
    return this.enabledRateOf.get(id);
  }

  // ---- rules ----------------------------------------------------------------

  ruleCount(): number {
    return this.db.prepare('SELECT count(*) FROM monitor_rules').pluck().get() as number;
  }

  rule(id: string): RuleRow | undefined {
    return this.db.prepare('SELECT * FROM monitor_rules WHERE id = ?').get(id) as RuleRow | undefined;
  }

  rules(filter: { collection_id?: string; tag_index?: number; enabled?: boolean }): RuleRow[] {
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
    return this.db.prepare(`SELECT * FROM monitor_rules ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_ms, id`).all(...params) as RuleRow[];
  }

  enabledRules(collectionId: string): RuleRow[] {
    return this.enabledRulesOf.all(collectionId);
  }

  /** Rules made from one tagmeta row. */
  rulesOfTagmeta(tagmetaId: string): RuleRow[] {
    return this.db.prepare("SELECT * FROM monitor_rules WHERE tagmetaId = ? AND origin = 'tagmeta'").all(tagmetaId) as RuleRow[];
  }

  /** Rules made from a unit's limits, for one collection and tag. */
  rulesOfUnit(collectionId: string, tag: string): RuleRow[] {
    return this.db.prepare("SELECT * FROM monitor_rules WHERE origin = 'units' AND collection_id = ? AND tag = ?").all(collectionId, tag) as RuleRow[];
  }

  insertRule(id: string, rule: RuleColumns, tagIndex: number | null, tagmetaId: string | null, origin: string, now: number): void {
    this.db
      .prepare(
        `INSERT INTO monitor_rules (id, collection_id, tag, tag_index, name, enabled, limHi, limLo, deadband, on_delay_ms, off_delay_ms, stale_after_ms, severity, notify, tagmetaId, origin, created_ms, updated_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, rule.collection_id, rule.tag, tagIndex, rule.name, rule.enabled ? 1 : 0, rule.limHi, rule.limLo, rule.deadband, rule.on_delay_ms, rule.off_delay_ms, rule.stale_after_ms, rule.severity, rule.notify ? 1 : 0, tagmetaId, origin, now, now);
  }

  /** Changes what a caller sets of a rule; `reset` also puts its evaluation back to normal. */
  updateRule(id: string, rule: RuleColumns, tagIndex: number | null, reset: boolean, now: number): void {
    this.db
      .prepare(
        `UPDATE monitor_rules SET collection_id = ?, tag = ?, name = ?, enabled = ?, limHi = ?, limLo = ?, deadband = ?, on_delay_ms = ?, off_delay_ms = ?,
           stale_after_ms = ?, severity = ?, notify = ?, updated_ms = ?, tag_index = ?${reset ? ", phase = 'normal', kind = NULL, since_ms = NULL, event_id = NULL" : ''} WHERE id = ?`,
      )
      .run(rule.collection_id, rule.tag, rule.name, rule.enabled ? 1 : 0, rule.limHi, rule.limLo, rule.deadband, rule.on_delay_ms, rule.off_delay_ms, rule.stale_after_ms, rule.severity, rule.notify ? 1 : 0, now, tagIndex, id);
  }

  updateLimits(id: string, limHi: number | null, limLo: number | null, now: number): void {
    this.db.prepare('UPDATE monitor_rules SET limHi = ?, limLo = ?, updated_ms = ? WHERE id = ?').run(limHi, limLo, now, id);
  }

  saveRuleState(id: string, state: RuleStateColumns): void {
    this.saveState.run(state.phase, state.kind, state.since, state.eventId, id);
  }

  saveTagIndex(id: string, index: number | null): void {
    this.setTagIndex.run(index, id);
  }

  deleteRule(id: string): void {
    this.db.prepare('DELETE FROM monitor_rules WHERE id = ?').run(id);
  }

  // ---- events ---------------------------------------------------------------

  openEventCount(): number {
    return this.db.prepare("SELECT count(*) FROM monitor_events WHERE status <> 'resolved'").pluck().get() as number;
  }

  event(id: string): AlarmEvent | undefined {
    return this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM monitor_events WHERE id = ?`).get(id) as AlarmEvent | undefined;
  }

  /** The collections that have events (to narrow a caller's view to those it reaches). */
  eventCollections(): string[] {
    return this.db.prepare('SELECT DISTINCT collection_id FROM monitor_events').pluck().all() as string[];
  }

  countEvents(filter: EventFilter): number {
    const { sql, params } = eventWhere(filter);
    return this.db.prepare(`SELECT count(*) FROM monitor_events WHERE ${sql}`).pluck().get(...params) as number;
  }

  /** Newest first; `limit` null for all. */
  events(filter: EventFilter, limit: number | null, offset: number): AlarmEvent[] {
    const { sql, params } = eventWhere(filter);
    if (limit === null) return this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM monitor_events WHERE ${sql} ORDER BY started_ms DESC, id`).all(...params) as AlarmEvent[];
    return this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM monitor_events WHERE ${sql} ORDER BY started_ms DESC, id LIMIT ? OFFSET ?`).all(...params, limit, offset) as AlarmEvent[];
  }

  /** Event counts by the values of one column (status, severity, kind). */
  countsBy(column: 'status' | 'severity' | 'kind', filter: EventFilter): Record<string, number> {
    const { sql, params } = eventWhere(filter);
    const rows = this.db.prepare(`SELECT ${column} AS k, count(*) AS n FROM monitor_events WHERE ${sql} GROUP BY ${column}`).all(...params) as Array<{ k: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.k, r.n]));
  }

  /** The ten rules with the most events. */
  topRules(filter: EventFilter): unknown[] {
    const { sql, params } = eventWhere(filter);
    return this.db.prepare(`SELECT rule_id, count(*) AS count FROM monitor_events WHERE ${sql} GROUP BY rule_id ORDER BY count DESC, rule_id LIMIT 10`).all(...params);
  }

  /** Mean time from start to resolution of the resolved events, or null. */
  meanDurationMs(filter: EventFilter): number | null {
    const { sql, params } = eventWhere(filter);
    return this.db.prepare(`SELECT avg(resolved_ms - started_ms) FROM monitor_events WHERE ${sql} AND resolved_ms IS NOT NULL`).pluck().get(...params) as number | null;
  }

  /** Deletes the events that started before `before`; how many. */
  deleteEvents(filter: EventFilter, before: number): number {
    const { sql, params } = eventWhere(filter);
    return this.db.prepare(`DELETE FROM monitor_events WHERE ${sql} AND started_ms < ?`).run(...params, before).changes;
  }

  insertEvent(event: Omit<AlarmEvent, 'status' | 'resolved_ms' | 'acked_ms' | 'acked_by'>): void {
    this.addEvent.run(event.id, event.rule_id, event.collection_id, event.tag, event.tag_index, event.kind, event.severity, event.value, event.limit, event.started_ms, event.message);
  }

  /** Acknowledges an active event (nothing for one in another state). */
  acknowledge(id: string, by: string, at: number): void {
    this.db.prepare("UPDATE monitor_events SET status = 'acknowledged', acked_ms = ?, acked_by = ? WHERE id = ? AND status = 'active'").run(at, by, id);
  }

  /** Resolves an event that is not resolved yet. */
  resolve(id: string, at: number): void {
    this.resolveEvent.run(at, id);
  }
}

function eventWhere(q: EventFilter): { sql: string; params: unknown[] } {
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
  if (q.collections !== undefined) add('collection_id IN (SELECT value FROM json_each(?))', JSON.stringify(q.collections));
  return { sql: where.join(' AND '), params };
}
