/**
 * The aggregation engine (WIRE.md "POST query body"): the streaming bucket aggregator a storage
 * worker runs while it scans, and the materialising pipeline for longer chains. The specs it
 * runs, and their parsing, are in shared/aggregator-spec.ts.
 *
 * Pure computation on typed arrays: no I/O, no Node built-ins, no per-point objects.
 *
 * Semantics beyond KairosDB's that are fixed here (README "Aggregation"):
 * - A bucket's timestamp is its start; with align_end_time its end (start + width, exclusive).
 *   align_start_time is the default already; when both are true, start wins (as in KairosDB).
 * - NaN values (gap markers) are ignored by the bucket math; a bucket with no other value gives
 *   no point. They pass through diff/rate/sampler/scale/div as NaN, and filter never drops them.
 * - percentile: linear interpolation between closest ranks, rank h = p * (n - 1).
 * - dev: sample standard deviation (n - 1); 0 for a bucket of one value.
 * - rate and sampler: months count as 30 days, years as 365; a point with the same timestamp as
 *   the one before gives no output and becomes the new "previous" point.
 * - gaps: every input point unchanged, plus (ts, NaN) at the start of each empty bucket between
 *   the first and the last point's buckets (always the start, whatever the align flags).
 */

import { isSamplingStep, type AggregatorSpec, type FilterOp, type PromqlWindowStep, type SamplingStep, type TrimMode } from '../shared/aggregator-spec.js';
import { LOOKBACK, lookbackSteps, slideWindow, WINDOW_FUNCTIONS } from '../shared/promql-windows.js';
import { BucketGrid, UNIT_MS } from '../shared/time-units.js';

/** One tag's series: `count` points, sorted by timestamp, one value per timestamp. */
export interface Series {
  timestamps: Float64Array;
  values: Float64Array;
  count: number;
}

export interface TimeRange {
  start: number;
  end: number;
}

// ---------------------------------------------------------------------------------------------
// Bucket aggregation

/** The step to run while scanning when the pipeline is exactly one sampling aggregator, else null. */
export function streamableStep(specs: readonly AggregatorSpec[]): SamplingStep | null {
  return specs.length === 1 && isSamplingStep(specs[0]) ? specs[0] : null;
}

/**
 * Aggregates sorted points bucket by bucket as they arrive, in chunks of any size, and hands
 * each finished bucket's point to `sink`. Memory is O(1), except percentile, which keeps the
 * current bucket's values in one reused, growing buffer. Points are not clipped to the range:
 * the range start only places the bucket grid. Call finish() once after the last push.
 */
export class BucketStream {
  private readonly grid: BucketGrid;
  private readonly name: SamplingStep['name'];
  private readonly fraction: number;
  private readonly stampAtEnd: boolean;
  private readonly sink: (ts: number, value: number) => void;

  // The open bucket; bucketEnd = -Infinity while none is open, so the first point opens one.
  private open = false;
  private index = 0;
  private bucketStart = 0;
  private bucketEnd = -Infinity;

  // Accumulators of the open bucket. n counts its non-NaN values (first and last stop counting
  // once they know their answer, so for them it only tells whether there was one).
  private n = 0;
  private sum = 0;
  private min = Infinity;
  private max = -Infinity;
  private first = NaN;
  private last = NaN;
  private mean = 0;
  private m2 = 0;
  private held: Float64Array;

  constructor(spec: SamplingStep, range: TimeRange, sink: (ts: number, value: number) => void) {
    this.grid = new BucketGrid(spec.sampling, spec.align_sampling, range.start);
    this.name = spec.name;
    this.fraction = spec.name === 'percentile' ? spec.percentile : 0;
    this.stampAtEnd = spec.align_end_time && !spec.align_start_time;
    this.sink = sink;
    this.held = new Float64Array(spec.name === 'percentile' ? 1024 : 0);
  }

  push(timestamps: Float64Array, values: Float64Array, count: number): void {
    let i = 0;
    while (i < count) {
      if (!(timestamps[i] < this.bucketEnd)) this.moveTo(timestamps[i]);
      // The run of points that falls into the open bucket is handled by one tight loop.
      const end = this.bucketEnd;
      let j = i + 1;
      while (j < count && timestamps[j] < end) j++;
      this.accumulate(timestamps, values, i, j);
      i = j;
    }
  }

  finish(): void {
    if (this.open) this.emit();
    this.open = false;
    this.bucketEnd = -Infinity;
  }

  /** Closes the open bucket and opens the one holding `t`. */
  private moveTo(t: number): void {
    if (this.open) this.emit();
    const index = this.grid.indexOf(t);
    if (this.name === 'gaps' && this.open) {
      // Under gaps every opened bucket had a point, so the ones skipped over are the gaps.
      for (let b = this.index + 1; b < index; b++) this.sink(this.grid.startOf(b), NaN);
    }
    this.open = true;
    this.index = index;
    this.bucketStart = this.grid.startOf(index);
    this.bucketEnd = this.grid.startOf(index + 1);
    this.n = 0;
    this.sum = 0;
    this.min = Infinity;
    this.max = -Infinity;
    this.first = NaN;
    this.last = NaN;
    this.mean = 0;
    this.m2 = 0;
  }

  private accumulate(timestamps: Float64Array, values: Float64Array, from: number, to: number): void {
    // Accumulators live in locals during the loop and are stored back once per run: about 25%
    // faster for avg and dev in the one-year stream of test/workers/aggregators.test.ts.
    // `v === v` is false only for NaN: gap markers do not count.
    let n = this.n;
    switch (this.name) {
      case 'avg':
      case 'sum': {
        let sum = this.sum;
        for (let k = from; k < to; k++) {
          const v = values[k];
          if (v === v) {
            sum += v;
            n++;
          }
        }
        this.sum = sum;
        break;
      }
      case 'count':
        for (let k = from; k < to; k++) if (values[k] === values[k]) n++;
        break;
      case 'min': {
        let min = this.min;
        for (let k = from; k < to; k++) {
          const v = values[k];
          if (v === v) {
            if (v < min) min = v;
            n++;
          }
        }
        this.min = min;
        break;
      }
      case 'max': {
        let max = this.max;
        for (let k = from; k < to; k++) {
          const v = values[k];
          if (v === v) {
            if (v > max) max = v;
            n++;
          }
        }
        this.max = max;
        break;
      }
      case 'first':
        for (let k = from; k < to && n === 0; k++) {
          const v = values[k];
          if (v === v) {
            this.first = v;
            n++;
          }
        }
        break;
      case 'last':
        for (let k = to - 1; k >= from; k--) {
          const v = values[k];
          if (v === v) {
            this.last = v;
            n++;
            break;
          }
        }
        break;
      case 'dev': {
        // Welford's update: one pass, no cancellation between large sums of squares.
        let mean = this.mean;
        let m2 = this.m2;
        for (let k = from; k < to; k++) {
          const v = values[k];
          if (v === v) {
            n++;
            const delta = v - mean;
            mean += delta / n;
            m2 += delta * (v - mean);
          }
        }
        this.mean = mean;
        this.m2 = m2;
        break;
      }
      case 'percentile':
        for (let k = from; k < to; k++) {
          const v = values[k];
          if (v === v) {
            if (n === this.held.length) this.grow();
            this.held[n++] = v;
          }
        }
        break;
      case 'gaps':
        for (let k = from; k < to; k++) this.sink(timestamps[k], values[k]);
        break;
    }
    this.n = n;
  }

  private grow(): void {
    const bigger = new Float64Array(Math.max(1024, this.held.length * 2));
    bigger.set(this.held);
    this.held = bigger;
  }

  /** Hands the open bucket's point to the sink (none when it saw no value; gaps emitted already). */
  private emit(): void {
    if (this.n === 0) return;
    let value: number;
    switch (this.name) {
      case 'avg':
        value = this.sum / this.n;
        break;
      case 'sum':
        value = this.sum;
        break;
      case 'count':
        value = this.n;
        break;
      case 'min':
        value = this.min;
        break;
      case 'max':
        value = this.max;
        break;
      case 'first':
        value = this.first;
        break;
      case 'last':
        value = this.last;
        break;
      case 'dev':
        value = this.n > 1 ? Math.sqrt(this.m2 / (this.n - 1)) : 0;
        break;
      case 'percentile':
        value = percentileOf(this.held, this.n, this.fraction);
        break;
      case 'gaps':
        return;
    }
    this.sink(this.stampAtEnd ? this.bucketEnd : this.bucketStart, value);
  }
}

/** Linear interpolation between closest ranks over the first n values (sorted in place). */
function percentileOf(buffer: Float64Array, n: number, p: number): number {
  const sorted = buffer.subarray(0, n).sort();
  const rank = p * (n - 1);
  const lo = Math.floor(rank);
  const frac = rank - lo;
  // frac 0 avoids 0 * (Infinity - Infinity) when a scaled value overflowed.
  return frac === 0 ? sorted[lo] : sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

// ---------------------------------------------------------------------------------------------
// Pipelines

/** A pipeline step would produce more points than the caller allows (runPipeline's maxPoints). */
export class PointLimitError extends Error {
  constructor(readonly maxPoints: number) {
    super(`an aggregation step would produce more than ${maxPoints} points`);
  }
}

/** Growable pair of typed arrays that a sampling step's sink appends to. */
class SeriesBuilder {
  timestamps: Float64Array;
  values: Float64Array;
  count = 0;

  constructor(capacity: number, private readonly maxPoints: number) {
    this.timestamps = new Float64Array(capacity);
    this.values = new Float64Array(capacity);
  }

  readonly add = (ts: number, value: number): void => {
    if (this.count === this.timestamps.length) {
      if (this.count >= this.maxPoints) throw new PointLimitError(this.maxPoints);
      const size = Math.min(this.count * 2, this.maxPoints);
      const timestamps = new Float64Array(size);
      const values = new Float64Array(size);
      timestamps.set(this.timestamps);
      values.set(this.values);
      this.timestamps = timestamps;
      this.values = values;
    }
    this.timestamps[this.count] = ts;
    this.values[this.count] = value;
    this.count++;
  };
}

/**
 * Applies the steps in order to one tag's series and returns a new series; the input arrays are
 * never written. The returned arrays are exactly `count` long (views of reused buffers). A
 * sampling step that would produce more than `maxPoints` points (gaps at a fine sampling over
 * a long range) throws PointLimitError instead of growing without bound.
 */
export function runPipeline(
  specs: readonly AggregatorSpec[],
  timestamps: Float64Array,
  values: Float64Array,
  count: number,
  range: TimeRange,
  maxPoints = Number.POSITIVE_INFINITY,
): Series {
  let series: Series = { timestamps, values, count };
  // Point-wise steps work in place, so the caller's arrays are copied before the first of them.
  let owned = false;
  for (const spec of specs) {
    if (isSamplingStep(spec)) {
      const out = new SeriesBuilder(Math.max(16, Math.min(series.count, 4096)), maxPoints);
      const stream = new BucketStream(spec, range, out.add);
      stream.push(series.timestamps, series.values, series.count);
      stream.finish();
      series = { timestamps: out.timestamps, values: out.values, count: out.count };
      owned = true;
      continue;
    }
    if (spec.name === 'trim') {
      series = trim(series, spec.trim); // views only: nothing is written
      continue;
    }
    if (spec.name === 'promql_window') {
      const out = new SeriesBuilder(Math.max(16, Math.min(spec.steps, 4096)), maxPoints);
      promqlWindows(spec, series, out.add);
      series = { timestamps: out.timestamps, values: out.values, count: out.count };
      owned = true;
      continue;
    }
    if (!owned) {
      series = { timestamps: series.timestamps.slice(0, series.count), values: series.values.slice(0, series.count), count: series.count };
      owned = true;
    }
    series.count = pointwise(spec, series);
  }
  if (!owned) return { timestamps: series.timestamps.slice(0, series.count), values: series.values.slice(0, series.count), count: series.count };
  return { timestamps: series.timestamps.subarray(0, series.count), values: series.values.subarray(0, series.count), count: series.count };
}

function trim(s: Series, mode: TrimMode): Series {
  const from = mode === 'last' || s.count === 0 ? 0 : 1;
  const to = mode === 'first' ? s.count : Math.max(from, s.count - 1);
  return { timestamps: s.timestamps.subarray(from, to), values: s.values.subarray(from, to), count: to - from };
}

/** Runs one point-wise step in place on `s` and returns the new count (output index <= input index). */
/** A PromQL range function over the step grid: one pass over the series (timestamps of the output are step indexes). */
function promqlWindows(spec: PromqlWindowStep, s: Series, add: (ts: number, value: number) => void): void {
  const windowEnd = spec.fixed_end ? () => spec.first_end : (i: number) => spec.first_end + i * spec.step_ms;
  if (spec.fn === LOOKBACK) {
    lookbackSteps(s.timestamps, s.values, s.count, spec.range_ms, windowEnd, spec.steps, add);
    return;
  }
  const fn = WINDOW_FUNCTIONS.get(spec.fn);
  if (fn === undefined) throw new Error(`unknown PromQL window function ${spec.fn}`);
  slideWindow(s.timestamps, s.values, s.count, spec.range_ms, windowEnd, spec.steps, fn, () => spec.arg, add);
}

function pointwise(spec: Exclude<AggregatorSpec, SamplingStep | PromqlWindowStep | { name: 'trim' }>, s: Series): number {
  const t = s.timestamps;
  const v = s.values;
  const n = s.count;
  switch (spec.name) {
    case 'scale': {
      const factor = spec.factor;
      for (let i = 0; i < n; i++) v[i] *= factor;
      return n;
    }
    case 'div': {
      const divisor = spec.divisor;
      for (let i = 0; i < n; i++) v[i] /= divisor;
      return n;
    }
    case 'diff': {
      if (n === 0) return 0;
      let prev = v[0];
      for (let i = 1; i < n; i++) {
        const cur = v[i];
        t[i - 1] = t[i];
        v[i - 1] = cur - prev;
        prev = cur;
      }
      return n - 1;
    }
    case 'rate':
    case 'sampler': {
      if (n === 0) return 0;
      const unitMs = UNIT_MS[spec.unit];
      const isRate = spec.name === 'rate';
      let prevT = t[0];
      let prevV = v[0];
      let out = 0;
      for (let i = 1; i < n; i++) {
        const ts = t[i];
        const cur = v[i];
        const dt = ts - prevT;
        if (dt !== 0) {
          // Multiply before dividing: (dv * unitMs) / dt stays exact for whole numbers.
          v[out] = isRate ? ((cur - prevV) * unitMs) / dt : (cur * unitMs) / dt;
          t[out] = ts;
          out++;
        }
        prevT = ts;
        prevV = cur;
      }
      return out;
    }
    case 'filter': {
      const threshold = spec.threshold;
      const op = spec.filter_op;
      let out = 0;
      for (let i = 0; i < n; i++) {
        const x = v[i];
        if (x === x && matches(op, x, threshold)) continue; // filter removes matching points
        t[out] = t[i];
        v[out] = x;
        out++;
      }
      return out;
    }
  }
}

function matches(op: FilterOp, x: number, threshold: number): boolean {
  switch (op) {
    case 'lt':
      return x < threshold;
    case 'lte':
      return x <= threshold;
    case 'gt':
      return x > threshold;
    case 'gte':
      return x >= threshold;
    case 'equal':
      return x === threshold;
    case 'ne':
      return x !== threshold;
  }
}
