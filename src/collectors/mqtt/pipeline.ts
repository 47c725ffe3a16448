// From received messages to sink writes and QoS 1 acknowledgements. A message is acknowledged
// (PUBACK) only once the write holding its values resolved, so a message the service dies
// holding is redelivered by the broker; acknowledgements go in the order messages came, as MQTT
// requires. One write runs at a time and the messages that arrive meanwhile form the next one:
// at a low rate every message is written alone (lowest latency), under load the writes grow
// (fewer round trips to storage) without a timer.

import type { CollectedValue, CollectorSink } from '../driver.js';

export interface Entry {
  values: CollectedValue[];
  /** is_historical values: written with `backfill`. */
  historical: CollectedValue[];
  /** Sends the PUBACK (QoS 1), null for QoS 0. Checks itself that its connection still stands. */
  ack: (() => void) | null;
  /** The connection it came on (entries of a lost connection are redelivered by the broker). */
  generation: number;
  done: boolean;
  /** After a failed batch: written on its own, to find the entry storage refuses. */
  alone: boolean;
}

/** Values waiting beyond this pause reading from the broker until storage catches up. */
const HIGH_WATER_VALUES = 200_000;
/** The largest write. */
const MAX_BATCH_VALUES = 50_000;
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;

/**
 * A write storage refuses for what it holds, so retrying the same values cannot help: a 4xx
 * ServiceError, or the write path's `success: false` answer (a plain Error: an unknown scope, a
 * timestamp below storage.minTimestampMs). 5xx (buffer full, worker restarting, disk full) and an
 * aborted write pass.
 */
export function isPermanentRejection(err: unknown): boolean {
  if (!(err instanceof Error) || err.name === 'AbortError') return false;
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number') return status >= 400 && status < 500;
  return true;
}

export class WritePipeline {
  /** Every entry not yet acknowledged, in arrival order. */
  private readonly order: Entry[] = [];
  /** Entries not yet written, in arrival order. */
  private waiting: Entry[] = [];
  private waitingValues = 0;
  private writing: Promise<void> | null = null;
  private retryDelay = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private drainWaiters: Array<() => void> = [];
  private stopped = false;
  valuesStored = 0;

  constructor(private readonly sink: CollectorSink) {}

  push(entry: Entry): void {
    this.order.push(entry);
    if (entry.values.length === 0 && entry.historical.length === 0) {
      entry.done = true;
      this.ackReady();
      return;
    }
    this.waiting.push(entry);
    this.waitingValues += entry.values.length + entry.historical.length;
    this.pump();
  }

  /** Resolves when reading may go on (null: at once). */
  backpressure(): Promise<void> | null {
    if (this.waitingValues < HIGH_WATER_VALUES) return null;
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** The connection `generation` is gone: its unwritten QoS 1 entries will come again, QoS 0 ones are kept. */
  dropGeneration(generation: number): void {
    const lost = (e: Entry) => e.ack !== null && e.generation === generation && !e.done;
    this.waiting = this.waiting.filter((e) => {
      if (!lost(e)) return true;
      this.waitingValues -= e.values.length + e.historical.length;
      return false;
    });
    for (let i = this.order.length - 1; i >= 0; i--) if (this.order[i]!.generation === generation && this.order[i]!.ack !== null) this.order.splice(i, 1);
    this.ackReady();
    this.releaseReaders();
  }

  /**
   * Takes nothing more and waits for the write under way. Waiting QoS 1 messages stay
   * unacknowledged: the broker sends them again to the next session (the subsystem refuses
   * writes once it stops a collector, so they could not be stored now anyway).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.releaseReaders();
    if (this.writing) await this.writing;
  }

  private pump(): void {
    if (this.writing || this.retryTimer || this.waiting.length === 0 || this.stopped) return;
    const batch: Entry[] = [];
    let count = 0;
    if (this.waiting[0]!.alone) batch.push(this.waiting.shift()!);
    else {
      while (this.waiting.length > 0 && !this.waiting[0]!.alone && (batch.length === 0 || count + this.waiting[0]!.values.length + this.waiting[0]!.historical.length <= MAX_BATCH_VALUES)) {
        const e = this.waiting.shift()!;
        count += e.values.length + e.historical.length;
        batch.push(e);
      }
    }
    for (const e of batch) this.waitingValues -= e.values.length + e.historical.length;
    this.writing = this.write(batch).finally(() => {
      this.writing = null;
      this.releaseReaders();
      this.pump();
    });
  }

  private async write(batch: Entry[]): Promise<void> {
    const live: CollectedValue[] = [];
    const historical: CollectedValue[] = [];
    for (const e of batch) {
      for (const v of e.values) live.push(v);
      for (const v of e.historical) historical.push(v);
    }
    try {
      if (live.length > 0) await this.sink.write(live);
      if (historical.length > 0) await this.sink.write(historical, { backfill: true });
    } catch (err) {
      this.failed(batch, err);
      return;
    }
    this.retryDelay = 0;
    this.valuesStored += live.length + historical.length;
    for (const e of batch) e.done = true;
    this.ackReady();
  }

  private failed(batch: Entry[], err: unknown): void {
    if (this.stopped) return;
    const message = err instanceof Error ? err.message : String(err);
    if (isPermanentRejection(err) && batch.length === 1) {
      // One message storage will never take: counted and acknowledged, or it would come back forever.
      const e = batch[0]!;
      this.sink.skipped(e.values.length + e.historical.length, `refused by storage: ${message}`);
      e.done = true;
      this.ackReady();
      return;
    }
    if (isPermanentRejection(err)) {
      // Which message? Each is written on its own once (a write stores all of its values or none).
      for (const e of batch) e.alone = true;
    } else {
      this.retryDelay = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryDelay * 2));
      this.sink.log.warn({ err: message, values: batch.reduce((n, e) => n + e.values.length + e.historical.length, 0), retryInMs: this.retryDelay }, 'mqtt collector: storage did not take the values, retrying');
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.pump();
      }, this.retryDelay);
    }
    // Entries of a connection lost meanwhile are no longer in `order`: the broker sends them again.
    const again = batch.filter((e) => this.order.includes(e));
    this.waiting.unshift(...again);
    for (const e of again) this.waitingValues += e.values.length + e.historical.length;
  }

  private ackReady(): void {
    while (this.order.length > 0 && this.order[0]!.done) this.order.shift()!.ack?.();
  }

  private releaseReaders(): void {
    if (this.drainWaiters.length === 0 || (this.waitingValues >= HIGH_WATER_VALUES && !this.stopped)) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
