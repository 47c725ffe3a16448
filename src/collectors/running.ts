// One running collector: the sink its driver hands values to (through the storage write path,
// as its owner), the counters of GET /svcapi/collectors/{id}/status, and state changes told to
// the unit's users — at most one notification a minute, so a broker that drops the connection
// every second does not flood them (the latest state is told when the minute is up).

import type { Logger } from '../log.js';
import type { NotificationInput } from '../notifications/api.js';
import type { CollectedValue, CollectorDefinition, CollectorSink, CollectorState, RunningCollector } from './driver.js';

/** WIRE.md part 3: GET /svcapi/collectors/{id}/status. */
export interface CollectorStatus {
  state: CollectorState;
  since_ms: number;
  error?: string;
  items: number;
  values_stored: number;
  values_skipped: number;
  last_value_ms: number | null;
}

export interface RunnerHooks {
  /** The newest stored timestamp per tag, read as the collector's owner. */
  lastStored(definition: CollectorDefinition, tags: readonly string[]): Promise<Map<string, number>>;
  /** Stores values as the collector's owner; rejects with the reason when they cannot be stored. */
  store(definition: CollectorDefinition, values: readonly CollectedValue[], backfill: boolean): Promise<void>;
  /** A state change worth telling the unit's users. */
  notify(input: Omit<NotificationInput, 'unitsId'>, definition: CollectorDefinition): void;
  now(): number;
  log: Logger;
}

/** The least time between two state notifications of one collector. */
export const NOTIFY_INTERVAL_MS = 60_000;

export class CollectorRun {
  readonly status: CollectorStatus;
  readonly skippedByReason = new Map<string, number>();
  private running: RunningCollector | null = null;
  private notifiedState: CollectorState | null = null;
  private lastNotifyMs = -Infinity;
  private notifyTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(readonly definition: CollectorDefinition, private readonly hooks: RunnerHooks) {
    this.status = { state: 'connecting', since_ms: hooks.now(), items: 0, values_stored: 0, values_skipped: 0, last_value_ms: null };
  }

  /** The driver's sink: every value goes through `hooks.store`. */
  sink(): CollectorSink {
    const log = this.hooks.log.child({ collector: this.definition.id, kind: this.definition.kind });
    return {
      log,
      write: async (values, options) => {
        if (this.stopped) throw new Error('the collector is stopped');
        if (values.length === 0) return;
        await this.hooks.store(this.definition, values, options?.backfill === true);
        this.status.values_stored += values.length;
        let last = this.status.last_value_ms ?? -Infinity;
        for (const v of values) if (v.ts > last) last = v.ts;
        this.status.last_value_ms = last;
      },
      lastStored: (tags) => this.hooks.lastStored(this.definition, tags),
      skipped: (count, reason) => {
        if (count <= 0) return;
        this.status.values_skipped += count;
        this.skippedByReason.set(reason, (this.skippedByReason.get(reason) ?? 0) + count);
      },
      state: (state, error) => this.setState(state, error),
    };
  }

  attach(running: RunningCollector): void {
    this.running = running;
  }

  itemCount(): number {
    return this.running?.itemCount() ?? 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    await this.running?.stop();
    this.running = null;
  }

  private setState(state: Exclude<CollectorState, 'disabled'>, error?: string): void {
    if (this.stopped) return;
    if (state === this.status.state && error === this.status.error) return;
    const changed = state !== this.status.state;
    this.status.state = state;
    if (changed) this.status.since_ms = this.hooks.now();
    if (error) this.status.error = error;
    else delete this.status.error;
    if (changed) this.hooks.log.info({ collector: this.definition.id, state, error }, 'collector state');
    this.scheduleNotification();
  }

  /**
   * Tells the unit's users the state when it differs from the last one told: at once, or when
   * NOTIFY_INTERVAL_MS has passed since the last notification. The first connect is not news.
   */
  private scheduleNotification(): void {
    if (this.notifiedState === null && this.status.state === 'connected') {
      this.notifiedState = 'connected';
      return;
    }
    if (this.status.state === 'connecting' || this.status.state === this.notifiedState || this.notifyTimer) return;
    const wait = this.lastNotifyMs + NOTIFY_INTERVAL_MS - this.hooks.now();
    if (wait <= 0) return this.sendNotification();
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null;
      if (!this.stopped && this.status.state !== this.notifiedState && this.status.state !== 'connecting') this.sendNotification();
    }, wait);
    this.notifyTimer.unref();
  }

  private sendNotification(): void {
    const { state, error } = this.status;
    const d = this.definition;
    this.notifiedState = state;
    this.lastNotifyMs = this.hooks.now();
    const severity = state === 'failed' ? 'error' : state === 'reconnecting' ? 'warn' : 'info';
    this.hooks.notify({
      severity,
      source: 'system',
      title: `Collector ${d.name} ${state}`.slice(0, 120),
      body: (error ? `${d.kind} collector ${d.name} into ${d.organization}/${d.site}/${d.unit}/${d.grid}: ${error}` : `${d.kind} collector ${d.name} into ${d.organization}/${d.site}/${d.unit}/${d.grid} is ${state}`).slice(0, 2048),
      payload: { collector_id: d.id, kind: d.kind, state },
      sourceRef: `collector:${d.id}`,
    }, d);
  }
}
