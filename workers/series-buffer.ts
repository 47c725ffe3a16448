// A growable pair of typed arrays holding one series (timestamps, values). Each query owns
// its buffers, and their growth is charged to the shard's query memory (QueryMemory), so a
// query that would materialise more than storage.queryMemoryBytes is refused instead of
// taking the worker's memory (a `gaps` step at 1 ms over a year would).

import { ServiceError } from '../shared/errors.js';

const BYTES_PER_POINT = 16;
const INITIAL_POINTS = 4096;

/** The shard-wide budget for materialised query series. */
export class QueryMemory {
  private used = 0;

  constructor(readonly limitBytes: number) {}

  get usedBytes(): number {
    return this.used;
  }

  /** A per-query account: what one query holds, charged against the shard-wide budget. */
  account(): QueryAllowance {
    return new QueryAllowance(this);
  }

  /** The refusal of a query that alone needs more than the budget. */
  tooLarge(): ServiceError {
    return new ServiceError(
      'BAD_REQUEST',
      `the query needs more than storage.queryMemoryBytes (${this.limitBytes} bytes) to hold its series; narrow the time range or use a coarser sampling`,
    );
  }

  /** @internal */
  take(query: QueryAllowance, bytes: number): void {
    if (query.heldBytes + bytes > this.limitBytes) throw this.tooLarge();
    if (this.used + bytes > this.limitBytes) {
      throw new ServiceError('UNAVAILABLE', `running queries hold the shard's storage.queryMemoryBytes (${this.limitBytes} bytes); retry shortly`);
    }
    this.used += bytes;
  }

  /** @internal */
  give(bytes: number): void {
    this.used -= bytes;
  }
}

export class QueryAllowance {
  heldBytes = 0;

  constructor(private readonly memory: QueryMemory) {}

  reserve(bytes: number): void {
    this.memory.take(this, bytes);
    this.heldBytes += bytes;
  }

  release(bytes: number): void {
    this.heldBytes -= bytes;
    this.memory.give(bytes);
  }

  /** Points this query may still add before hitting either limit. */
  remainingPoints(): number {
    return Math.max(0, Math.floor((this.memory.limitBytes - Math.max(this.heldBytes, this.memory.usedBytes)) / BYTES_PER_POINT));
  }

  tooLarge(): ServiceError {
    return this.memory.tooLarge();
  }

  /** Gives back everything the query still holds. */
  releaseAll(): void {
    if (this.heldBytes > 0) this.release(this.heldBytes);
  }
}

export class SeriesBuffer {
  timestamps: Float64Array;
  values: Float64Array;
  count = 0;

  constructor(private readonly allowance: QueryAllowance | null = null) {
    allowance?.reserve(INITIAL_POINTS * BYTES_PER_POINT);
    this.timestamps = new Float64Array(INITIAL_POINTS);
    this.values = new Float64Array(INITIAL_POINTS);
  }

  reset(): void {
    this.count = 0;
  }

  push(ts: number, value: number): void {
    if (this.count === this.timestamps.length) this.grow(this.count + 1);
    this.timestamps[this.count] = ts;
    this.values[this.count] = value;
    this.count++;
  }

  append(ts: Float64Array, values: Float64Array, n: number): void {
    if (this.count + n > this.timestamps.length) this.grow(this.count + n);
    this.timestamps.set(ts.subarray(0, n), this.count);
    this.values.set(values.subarray(0, n), this.count);
    this.count += n;
  }

  /** Gives the buffers' memory back to the query's account; the buffer is empty afterwards. */
  dispose(): void {
    this.allowance?.release(this.timestamps.length * BYTES_PER_POINT);
    this.timestamps = new Float64Array(0);
    this.values = new Float64Array(0);
    this.count = 0;
  }

  private grow(needed: number): void {
    let size = Math.max(INITIAL_POINTS, this.timestamps.length * 2);
    while (size < needed) size *= 2;
    this.allowance?.reserve((size - this.timestamps.length) * BYTES_PER_POINT);
    const ts = new Float64Array(size);
    const vs = new Float64Array(size);
    ts.set(this.timestamps.subarray(0, this.count));
    vs.set(this.values.subarray(0, this.count));
    this.timestamps = ts;
    this.values = vs;
  }
}
