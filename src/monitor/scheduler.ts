// The monitor's ticks. A tick runs on the main thread's timer. Collections due at the same moment
// (ticks are aligned to multiples of their rate) are sampled together: one MONITOR_SAMPLE task
// per shard for all of them, answered by the storage worker from what it tracked as the writes
// arrived (the tag's last value and the extremes written since the previous tick,
// workers/monitor-watch.ts), so no tick scans data and none asks per tag. Each rule is then
// evaluated in memory (evaluate.ts); only state changes are written to SQLite, in one
// transaction per tick, so a restart resumes pending delays and open events. Opening and
// resolving events notify after the transaction commits.
//
// While the monitor runs with nothing to evaluate (no collection with rules yet) it still ticks
// at monitor.defaultTickRateMs, so its tick number and last tick time say that it is alive.

import type { ServiceClock } from '../clock.js';
import type { Leadership } from '../host/leadership.js';
import type { Logger } from '../log.js';
import { Histogram } from '../metric-source.js';
import type { AlarmTables } from '../meta/tables/alarms.js';
import type { MonitorSampler } from '../storage/api.js';
import { MONITOR_SAMPLE_STRIDE, type MonitorSampleRequest } from '../../shared/protocol.js';
import { newEventId, ruleOfRow, type StoredRule } from './alarm-rules.js';
import { evaluate, type AlarmKind, type RuleState, type TagValues } from './evaluate.js';

/** What a tick needs of a monitored collection, kept in memory and rebuilt when rules change. */
export interface Watch {
  collectionId: string;
  rateMs: number;
  nextDue: number;
  /** Bumped when the tags watched change; the worker is sent the list again. */
  version: number;
  sentVersion: number;
  tags: string[];
  rules: StoredRule[];
  /** Per rule (same order), its tag's position in `tags` (and in the sampled values): no lookup by name at a tick. */
  ruleTagAt: Int32Array;
}

/**
 * A collection's latest evaluation, kept as the tick left it (the sampled values and each tag's
 * state) and turned into the snapshot shape only when someone asks: a tick allocates nothing per tag.
 */
export interface CollectionSnapshot {
  watch: Watch;
  values: Float64Array;
  /** Per tag of the watch (same order), its state. */
  states: Array<'normal' | AlarmKind>;
}

/** An event opened or resolved by a tick, to notify once the tick's transaction has committed. */
export interface Transition {
  rule: StoredRule;
  eventId: string;
  kind: AlarmKind;
  opened: boolean;
  value: number | null;
  limit: number | null;
  message: string;
}

export interface SchedulerOptions {
  tables: AlarmTables;
  sampler: MonitorSampler;
  leadership: Leadership;
  clock: ServiceClock;
  log: Logger;
  defaultTickRateMs: number;
  /** Told of every event a tick opened or resolved, after the tick's transaction committed. */
  notify(transition: Transition): void;
}

export class TickScheduler {
  private enabled = true;
  private running = false;
  private watches = new Map<string, Watch>();
  readonly snapshots = new Map<string, CollectionSnapshot>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private watchVersion = 0;
  /** When the monitor runs with nothing to evaluate: the next liveness tick. */
  private idleDue: number | null = null;
  tickNumber = 0;
  lastTickMs = 0;
  lastDurationMs = 0;
  /** Durations of the ticks this node ran, in seconds (GET /metrics). */
  readonly tickDurations = new Histogram();

  constructor(private readonly o: SchedulerOptions) {}

  get isEnabled(): boolean {
    return this.enabled;
  }

  get watchedCollections(): number {
    return this.watches.size;
  }

  /** Enabled rules the ticks evaluate. */
  get ruleCount(): number {
    let rules = 0;
    for (const watch of this.watches.values()) rules += watch.rules.length;
    return rules;
  }

  start(): void {
    this.enabled = this.o.tables.enabled();
    this.running = true;
    this.rebuild();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
  }

  /** Rules, their state and the settings are read again (the store was replaced, or rows replicated). */
  reload(): void {
    if (!this.running) return;
    this.enabled = this.o.tables.enabled();
    this.forgetInWorkers([...this.watches.keys()]);
    this.watches.clear();
    this.snapshots.clear();
    this.rebuild();
  }

  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    if (!enabled) {
      // The workers stop tracking writes for it; switched on again, the tag lists are sent anew.
      this.forgetInWorkers([...this.watches.keys()]);
      for (const watch of this.watches.values()) watch.sentVersion = -1;
    }
    this.reschedule();
  }

  /**
   * Reloads what the ticks need from SQLite, for the collections named (all when none are), and
   * reschedules. Per collection, so making 10,000 rules one by one stays linear.
   */
  rebuild(only?: Iterable<string>): void {
    const ids = only ? [...new Set(only)] : null;
    const { tables } = this.o;
    let targets: string[];
    if (ids) targets = ids;
    else {
      targets = tables.enabledCollections();
      const gone = [...this.watches.keys()].filter((id) => !targets.includes(id));
      for (const id of gone) this.watches.delete(id);
      if (gone.length > 0) this.forgetInWorkers(gone);
    }
    const now = this.o.clock.now();
    for (const id of targets) {
      const rate = tables.rateOf(id);
      const rules = rate === undefined ? [] : tables.enabledRules(id).map(ruleOfRow);
      const previous = this.watches.get(id);
      if (rules.length === 0 || rate === undefined) {
        if (previous) this.forgetInWorkers([id]);
        this.watches.delete(id);
        this.snapshots.delete(id);
        continue;
      }
      const tags = [...new Set(rules.map((r) => r.tag))].sort();
      const tagAt = new Map(tags.map((t, i) => [t, i]));
      const same = previous !== undefined && previous.tags.length === tags.length && previous.tags.every((t, i) => t === tags[i]);
      this.watches.set(id, {
        collectionId: id,
        rateMs: rate,
        nextDue: previous && previous.rateMs === rate ? previous.nextDue : alignedAfter(now, rate),
        version: same ? previous.version : ++this.watchVersion,
        sentVersion: same ? previous.sentVersion : -1,
        tags,
        rules,
        ruleTagAt: Int32Array.from(rules, (r) => tagAt.get(r.tag)!),
      });
    }
    this.reschedule();
  }

  /** Tells the storage workers to stop tracking writes of these collections (an empty tag list). */
  private forgetInWorkers(collectionIds: string[]): void {
    if (collectionIds.length === 0 || !this.running) return;
    this.o.sampler.sample(collectionIds.map((collectionId) => ({ collectionId, version: 0, tags: [] }))).catch((err) => {
      this.o.log.warn({ err: String(err), collections: collectionIds.length }, 'could not tell the storage workers to stop watching collections');
    });
  }

  private reschedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.running || !this.enabled || this.ticking) return;
    let due = Infinity;
    for (const w of this.watches.values()) due = Math.min(due, w.nextDue);
    if (this.watches.size === 0) due = this.idleDue ??= alignedAfter(this.o.clock.now(), this.o.defaultTickRateMs);
    else this.idleDue = null;
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
    if (this.watches.size === 0) {
      // Nothing to evaluate: a liveness tick.
      this.idleDue = null;
      if (this.o.leadership.leads()) this.counted(now, began);
      return;
    }
    const due = [...this.watches.values()].filter((w) => w.nextDue <= now);
    if (due.length === 0) return;
    for (const w of due) w.nextDue = alignedAfter(now, w.rateMs);
    // On a cluster only the leader evaluates: its rule states, events and notifications replicate.
    if (!this.o.leadership.leads()) return;
    // The tag list goes again while a rule's tag has no index yet: the answer carries the indexes.
    const requests: MonitorSampleRequest[] = due.map((w) => ({
      collectionId: w.collectionId,
      version: w.version,
      ...(w.sentVersion !== w.version || w.rules.some((r) => r.tag_index === null) ? { tags: w.tags } : {}),
    }));
    const samples = await this.o.sampler.sample(requests);
    const sampled = performance.now();
    if (!this.running) return;
    const byId = new Map(due.map((w) => [w.collectionId, w]));
    const transitions: Transition[] = [];
    this.o.tables.transaction(() => {
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
        this.evaluateCollection(watch, sample.values, now, transitions);
      }
    });
    for (const transition of transitions) {
      try {
        this.o.notify(transition);
      } catch (err) {
        this.o.log.error({ err: String(err) }, 'alarm notification failed');
      }
    }
    this.counted(now, began);
    const ended = performance.now();
    this.o.log.debug({ tick: this.tickNumber, collections: due.length, sampleMs: Math.round((sampled - began) * 100) / 100, evaluateMs: Math.round((ended - sampled) * 100) / 100 }, 'monitor tick');
  }

  private counted(now: number, began: number): void {
    this.tickNumber++;
    this.lastTickMs = now;
    const elapsed = performance.now() - began;
    this.lastDurationMs = Math.round(elapsed * 1000) / 1000;
    this.tickDurations.observe(elapsed / 1000);
  }

  private learnTagIndexes(watch: Watch, indexes: number[]): void {
    watch.tags.forEach((tag, i) => {
      const index = indexes[i] >= 0 ? indexes[i] : null;
      for (const rule of watch.rules) {
        if (rule.tag === tag && rule.tag_index !== index) {
          rule.tag_index = index;
          this.o.tables.saveTagIndex(rule.id, index);
        }
      }
    });
  }

  private evaluateCollection(watch: Watch, values: Float64Array, now: number, transitions: Transition[]): void {
    const states = new Array<'normal' | AlarmKind>(watch.tags.length).fill('normal');
    // One object for every rule: evaluate() keeps nothing of it.
    const tagValues: TagValues = { lastTs: NaN, last: NaN, max: NaN, min: NaN };
    const { rules, ruleTagAt } = watch;
    for (let r = 0; r < rules.length; r++) {
      const rule = rules[r];
      const i = ruleTagAt[r];
      const at = i * MONITOR_SAMPLE_STRIDE;
      tagValues.lastTs = values[at];
      tagValues.last = values[at + 1];
      tagValues.max = values[at + 3];
      tagValues.min = values[at + 5];
      const result = evaluate(rule, rule.state, tagValues, now);
      if (result.transitions.length > 0 || !sameState(rule.state, result.state)) {
        let eventId = rule.state.eventId;
        for (const t of result.transitions) {
          if (t.type === 'open') eventId = this.openEvent(rule, t.kind, t.value, t.limit, now, transitions);
          else {
            if (eventId) this.closeEvent(rule, eventId, t.kind, t.value, t.limit, now, transitions);
            eventId = null;
          }
        }
        const next: RuleState = result.state.phase === 'active' || result.state.phase === 'pending_off' ? { ...result.state, eventId } : { ...result.state, eventId: null };
        if (!sameState(rule.state, next)) {
          this.o.tables.saveRuleState(rule.id, next);
          rule.state = next;
        }
      }
      if (states[i] === 'normal') states[i] = result.shown;
    }
    this.snapshots.set(watch.collectionId, { watch, values, states });
  }

  private openEvent(rule: StoredRule, kind: AlarmKind, value: number | null, limit: number | null, now: number, transitions: Transition[]): string {
    const id = newEventId();
    const message = kind === 'stale' ? `${rule.tag} stale: no value for more than ${limit} ms` : `${rule.tag} ${kind}: ${value} ${kind === 'high' ? '>' : '<'} ${limit}`;
    this.o.tables.insertEvent({ id, rule_id: rule.id, collection_id: rule.collection_id, tag: rule.tag, tag_index: rule.tag_index, kind, severity: rule.severity, value, limit, started_ms: now, message });
    this.o.log.info({ event: id, rule: rule.id, collection: rule.collection_id, tag: rule.tag, kind, value, limit }, 'alarm opened');
    if (rule.notify) transitions.push({ rule, eventId: id, kind, opened: true, value, limit, message });
    return id;
  }

  private closeEvent(rule: StoredRule, eventId: string, kind: AlarmKind, value: number | null, limit: number | null, now: number, transitions: Transition[]): void {
    this.o.tables.resolve(eventId, now);
    this.o.log.info({ event: eventId, rule: rule.id, collection: rule.collection_id, tag: rule.tag, kind, value }, 'alarm resolved');
    if (rule.notify) transitions.push({ rule, eventId, kind, opened: false, value, limit, message: `${rule.tag} back to normal${value === null ? '' : `: ${value}`} (was ${kind})` });
  }
}

/** The first multiple of `rate` after `now`: collections of one rate tick together. */
function alignedAfter(now: number, rate: number): number {
  return (Math.floor(now / rate) + 1) * rate;
}

function sameState(a: RuleState, b: RuleState): boolean {
  return a.phase === b.phase && a.kind === b.kind && a.since === b.since && a.eventId === b.eventId;
}
