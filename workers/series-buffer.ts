// A growable pair of typed arrays holding one series (timestamps, values),
// reused from query to query so materialising a tag costs no allocation once
// the buffer has grown to the largest series seen.

export class SeriesBuffer {
  timestamps = new Float64Array(4096);
  values = new Float64Array(4096);
  count = 0;

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

  /** Drops a very large backing store after a big query, so the worker's memory goes back down. */
  shrink(keepPoints = 1 << 20): void {
    this.count = 0;
    if (this.timestamps.length <= keepPoints) return;
    this.timestamps = new Float64Array(4096);
    this.values = new Float64Array(4096);
  }

  private grow(needed: number): void {
    let size = this.timestamps.length * 2;
    while (size < needed) size *= 2;
    const ts = new Float64Array(size);
    const vs = new Float64Array(size);
    ts.set(this.timestamps.subarray(0, this.count));
    vs.set(this.values.subarray(0, this.count));
    this.timestamps = ts;
    this.values = vs;
  }
}
