// Values on their way to the sink: gathered into one sink.write per 100 ms or 5,000 values (one
// write per notification would be thousands a second at 10,000 items), written one batch at a
// time so a tag's values reach storage in the order they came. A batch the sink cannot take now
// (storage busy) is tried again, keeping at most MAX_PENDING values; beyond that the oldest are
// dropped and counted, since OPC UA cannot be asked to send them again. Values storage refuses for
// good (a 400) are found by halving and dropped, counted. Skips are counted the same way: one
// sink.skipped per reason and flush.

import type { CollectedValue, CollectorSink } from '../driver.js';

const FLUSH_MS = 100;
const MAX_BATCH = 5000;
const MAX_PENDING = 500_000;
const RETRY_MS = 1000;
const REFUSALS_TO_BAN = 3;
export const SKIP_REFUSED = 'refused by storage';

interface Batch {
  values: CollectedValue[];
  backfill: boolean;
}

export class ValueBatcher {
  private live: CollectedValue[] = [];
  private readonly queue: Batch[] = [];
  private pending = 0;
  private readonly skips = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private writing = false;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  /** Per tag: how many of its values storage refused one by one. */
  private readonly refusals = new Map<string, number>();

  constructor(private readonly sink: CollectorSink) {}

  add(value: CollectedValue): void {
    if (this.closed) return;
    if ((this.refusals.get(value.tag) ?? 0) >= REFUSALS_TO_BAN) {
      this.skip(SKIP_REFUSED);
      return;
    }
    this.live.push(value);
    if (this.live.length >= MAX_BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Back-filled values (HistoryRead): their own writes, flagged so they raise no alarms. */
  addBackfill(values: CollectedValue[]): void {
    if (this.closed || values.length === 0) return;
    for (let i = 0; i < values.length; i += MAX_BATCH) this.enqueue({ values: values.slice(i, i + MAX_BATCH), backfill: true });
    this.pump();
  }

  skip(reason: string, count = 1): void {
    this.skips.set(reason, (this.skips.get(reason) ?? 0) + count);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const [reason, count] of this.skips) this.sink.skipped(count, reason);
    this.skips.clear();
    if (this.live.length > 0) {
      this.enqueue({ values: this.live, backfill: false });
      this.live = [];
    }
    this.pump();
  }

  /** Resolves when every queued batch has been written (or dropped); for stop and tests. */
  idle(): Promise<void> {
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** No more values are taken; what is queued is still tried once. */
  close(): void {
    this.flush();
    this.closed = true;
  }

  private enqueue(batch: Batch): void {
    this.queue.push(batch);
    this.pending += batch.values.length;
    while (this.pending > MAX_PENDING && this.queue.length > 1) {
      const dropped = this.queue.shift()!;
      this.pending -= dropped.values.length;
      this.sink.skipped(dropped.values.length, 'not stored (storage refused them too long)');
    }
  }

  private pump(): void {
    if (this.writing) return;
    const batch = this.queue[0];
    if (!batch) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      return;
    }
    this.writing = true;
    this.sink.write(batch.values, batch.backfill ? { backfill: true } : undefined).then(
      () => {
        this.queue.shift();
        this.pending -= batch.values.length;
        this.writing = false;
        this.pump();
      },
      (err: unknown) => {
        this.writing = false;
        if (this.closed) {
          this.queue.length = 0;
          this.pending = 0;
          this.pump();
          return;
        }
        const message = err instanceof Error ? err.message : String(err);
        const status = (err as { status?: unknown }).status;
        if (status === 400) this.refused(batch, message);
        else if (typeof status === 'number' && status >= 400 && status < 500 && status !== 429) {
          // Not about these values (the owner's grant, say): the same write would be refused again.
          this.drop(batch, message);
        } else {
          this.sink.log.warn({ err: message, values: batch.values.length }, 'collector values not stored yet; retrying');
          setTimeout(() => this.pump(), RETRY_MS).unref();
          return;
        }
        this.pump();
      },
    );
  }

  /**
   * Storage refuses a write whole for one bad value (a tag another collection owns, a timestamp
   * below storage.minTimestampMs): the batch is halved until the refused values stand alone, and
   * only those are dropped and counted. A tag refused REFUSALS_TO_BAN times is dropped at once
   * from then on (logged once), so one bad tag does not halve every batch.
   */
  private refused(batch: Batch, message: string): void {
    if (batch.values.length > 1) {
      const half = batch.values.length >> 1;
      this.queue.splice(0, 1, { values: batch.values.slice(0, half), backfill: batch.backfill }, { values: batch.values.slice(half), backfill: batch.backfill });
      return;
    }
    const tag = batch.values[0]!.tag;
    const n = (this.refusals.get(tag) ?? 0) + 1;
    this.refusals.set(tag, n);
    if (n === REFUSALS_TO_BAN) this.sink.log.warn({ tag, err: message }, 'storage keeps refusing this tag\'s values; they are skipped from now on');
    this.drop(batch, message);
  }

  private drop(batch: Batch, message: string): void {
    this.queue.shift();
    this.pending -= batch.values.length;
    this.sink.skipped(batch.values.length, SKIP_REFUSED);
    if (batch.values.length > 1) this.sink.log.warn({ err: message, values: batch.values.length }, 'collector values refused by storage; dropped');
  }
}
