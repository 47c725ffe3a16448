// The functions of PromQL range vectors (rate, increase, *_over_time, …) as Prometheus 2.x
// computes them over each step's window [end - range, end] of one series: both edges included,
// stale markers left out. A series is slid over the whole step grid once (two indexes that only
// move forward), so each sample is visited by the windows that hold it and never re-read. Shared
// by both threads: the storage workers run it during a scan (the `promql_window` step of a
// pipeline), the main thread over subquery results. Pure computation.

/**
 * A window: samples lo..hi-1 of ts/values; start/end its edges (ms); the step's scalar argument;
 * for the counter functions (COUNTER_FUNCTIONS) the series' reset counts (resetCounts) when the
 * caller has them.
 */
export type WindowFunction = (ts: Float64Array, v: Float64Array, lo: number, hi: number, start: number, end: number, rangeMs: number, arg: number, resets?: Int32Array | null) => number | undefined;

function extrapolatedRate(isCounter: boolean, isRate: boolean): WindowFunction {
  return (ts, v, lo, hi, start, end, rangeMs, _arg, resets) => {
    const n = hi - lo;
    if (n < 2) return undefined;
    let result = v[hi - 1]! - v[lo]!;
    // A window without a reset adds nothing in the loop: skipped (the same result, bit for bit).
    if (isCounter && (!resets || resets[hi - 1] !== resets[lo])) {
      let prev = v[lo]!;
      for (let i = lo + 1; i < hi; i++) {
        const cur = v[i]!;
        if (cur < prev) result += prev;
        prev = cur;
      }
    }
    const firstT = ts[lo]!;
    const lastT = ts[hi - 1]!;
    let durationToStart = (firstT - start) / 1000;
    const durationToEnd = (end - lastT) / 1000;
    const sampledInterval = (lastT - firstT) / 1000;
    const averageBetween = sampledInterval / (n - 1);
    if (isCounter && result > 0 && v[lo]! >= 0) {
      // A counter starts at zero: extrapolate no further back than where it would be zero.
      const durationToZero = sampledInterval * (v[lo]! / result);
      if (durationToZero < durationToStart) durationToStart = durationToZero;
    }
    const threshold = averageBetween * 1.1;
    let interval = sampledInterval;
    interval += durationToStart < threshold ? durationToStart : averageBetween / 2;
    interval += durationToEnd < threshold ? durationToEnd : averageBetween / 2;
    let factor = interval / sampledInterval;
    if (isRate) factor /= rangeMs / 1000;
    return result * factor;
  };
}

function instantRate(isRate: boolean): WindowFunction {
  return (ts, v, lo, hi) => {
    if (hi - lo < 2) return undefined;
    const last = v[hi - 1]!;
    const previous = v[hi - 2]!;
    const result = isRate && last < previous ? last : last - previous;
    const interval = ts[hi - 1]! - ts[hi - 2]!;
    if (interval === 0) return undefined;
    return isRate ? result / (interval / 1000) : result;
  };
}

/** Least-squares slope (per second) and intercept at `interceptTime`, as Prometheus' linearRegression. */
export function linearRegression(ts: Float64Array, v: Float64Array, lo: number, hi: number, interceptTime: number): [number, number] {
  let n = 0;
  let sumX = 0;
  let sumY = 0;
  let sumXY = 0;
  let sumX2 = 0;
  const initY = v[lo]!;
  let constY = true;
  for (let i = lo; i < hi; i++) {
    const y = v[i]!;
    if (constY && i > lo && y !== initY) constY = false;
    n++;
    const x = (ts[i]! - interceptTime) / 1000;
    sumX += x;
    sumY += y;
    sumXY += x * y;
    sumX2 += x * x;
  }
  if (constY) return Number.isFinite(initY) ? [0, initY] : [NaN, NaN];
  const covXY = sumXY - (sumX * sumY) / n;
  const varX = sumX2 - (sumX * sumX) / n;
  const slope = covXY / varX;
  return [slope, sumY / n - (slope * sumX) / n];
}

/** Sorts as Go's sort.Float64s: NaN first, then ascending. */
export function sortGoFloats(values: Float64Array): Float64Array {
  values.sort();
  let nan = 0;
  for (let i = values.length - 1; i >= 0 && Number.isNaN(values[i]!); i--) nan++;
  if (nan > 0 && nan < values.length) {
    values.copyWithin(nan, 0, values.length - nan);
    values.fill(NaN, 0, nan);
  }
  return values;
}

/** Prometheus' quantile over values sorted as sortGoFloats sorts them (φ outside 0..1 gives ∓Inf). */
export function quantileOfSorted(q: number, sorted: ArrayLike<number>): number {
  const n = sorted.length;
  if (n === 0 || Number.isNaN(q)) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const rank = q * (n - 1);
  const lower = Math.max(0, Math.floor(rank));
  const upper = Math.min(n - 1, lower + 1);
  const weight = rank - Math.floor(rank);
  return sorted[lower]! * (1 - weight) + sorted[upper]! * weight;
}

function mean(v: Float64Array, lo: number, hi: number): number {
  let m = 0;
  let count = 0;
  for (let i = lo; i < hi; i++) {
    const x = v[i]!;
    count++;
    if (!Number.isFinite(m) && !Number.isNaN(m)) {
      // An infinite mean stays what it is unless an opposite infinity or a NaN comes.
      if (Number.isFinite(x) || (x === m)) continue;
    }
    m += x / count - m / count;
  }
  return m;
}

function variance(v: Float64Array, lo: number, hi: number): number {
  let count = 0;
  let m = 0;
  let aux = 0;
  for (let i = lo; i < hi; i++) {
    const x = v[i]!;
    count++;
    const delta = x - m;
    m += delta / count;
    aux += delta * (x - m);
  }
  return aux / count;
}

const RATE = extrapolatedRate(true, true);
const INCREASE = extrapolatedRate(true, false);
/** The functions that look for counter resets in each window: slideWindow hands them resetCounts of the series. */
const COUNTER_FUNCTIONS: ReadonlySet<WindowFunction> = new Set([RATE, INCREASE]);

/**
 * resets[i] = how many of samples 1..i are below the sample before them (counter resets), so
 * window lo..hi-1 holds resets[hi - 1] - resets[lo] of them. Written into `scratch` when it is
 * large enough (slideWindow reuses one buffer: it runs synchronously, one series at a time).
 */
export function resetCounts(v: Float64Array, count: number, scratch: Int32Array): Int32Array {
  const resets = scratch.length >= count ? scratch : new Int32Array(count);
  let n = 0;
  if (count > 0) resets[0] = 0;
  for (let i = 1; i < count; i++) {
    if (v[i]! < v[i - 1]!) n++;
    resets[i] = n;
  }
  return resets;
}

let resetScratch = new Int32Array(0);

export const WINDOW_FUNCTIONS: ReadonlyMap<string, WindowFunction> = new Map<string, WindowFunction>([
  ['rate', RATE],
  ['increase', INCREASE],
  ['delta', extrapolatedRate(false, false)],
  ['irate', instantRate(true)],
  ['idelta', instantRate(false)],
  ['deriv', (ts, v, lo, hi) => (hi - lo < 2 ? undefined : linearRegression(ts, v, lo, hi, ts[lo]!)[0])],
  ['resets', (_ts, v, lo, hi) => {
    let resets = 0;
    for (let i = lo + 1; i < hi; i++) if (v[i]! < v[i - 1]!) resets++;
    return resets;
  }],
  ['changes', (_ts, v, lo, hi) => {
    let changes = 0;
    for (let i = lo + 1; i < hi; i++) {
      const cur = v[i]!;
      const prev = v[i - 1]!;
      if (cur !== prev && !(Number.isNaN(cur) && Number.isNaN(prev))) changes++;
    }
    return changes;
  }],
  ['avg_over_time', (_ts, v, lo, hi) => mean(v, lo, hi)],
  ['sum_over_time', (_ts, v, lo, hi) => {
    let sum = 0;
    for (let i = lo; i < hi; i++) sum += v[i]!;
    return sum;
  }],
  ['count_over_time', (_ts, _v, lo, hi) => hi - lo],
  ['min_over_time', (_ts, v, lo, hi) => {
    let min = v[lo]!;
    for (let i = lo + 1; i < hi; i++) if (v[i]! < min || Number.isNaN(min)) min = v[i]!;
    return min;
  }],
  ['max_over_time', (_ts, v, lo, hi) => {
    let max = v[lo]!;
    for (let i = lo + 1; i < hi; i++) if (v[i]! > max || Number.isNaN(max)) max = v[i]!;
    return max;
  }],
  ['last_over_time', (_ts, v, _lo, hi) => v[hi - 1]!],
  ['present_over_time', () => 1],
  ['stdvar_over_time', (_ts, v, lo, hi) => variance(v, lo, hi)],
  ['stddev_over_time', (_ts, v, lo, hi) => Math.sqrt(variance(v, lo, hi))],
  ['quantile_over_time', (_ts, v, lo, hi, _s, _e, _r, q) => quantileOfSorted(q, sortGoFloats(v.slice(lo, hi)))],
]);

/** The special NaN (0x7ff0000000000002) Prometheus writes when a series goes away. */
export function isStaleMarker(v: number): boolean {
  if (v === v) return false;
  staleView.setFloat64(0, v);
  return staleView.getUint32(0) === 0x7ff00000 && staleView.getUint32(4) === 2;
}

const staleView = new DataView(new ArrayBuffer(8));

/** The `fn` of a promql_window step that samples an instant vector selector (not a range function). */
export const LOOKBACK = 'lookback';

/**
 * A vector selector over a step grid, as Prometheus 2.x samples it: at each step, the last
 * sample at or before the reference time refTime(i), if it lies within `lookbackMs` before it
 * (edge included) and is not a stale marker. One pass: the reference times only grow (or stay).
 */
export function lookbackSteps(
  ts: Float64Array,
  values: Float64Array,
  count: number,
  lookbackMs: number,
  refTime: (i: number) => number,
  steps: number,
  emit: (step: number, value: number, sampleTs: number) => void,
): void {
  let j = -1; // the last sample at or before the reference time
  let lastRef = -Infinity;
  for (let i = 0; i < steps; i++) {
    const ref = refTime(i);
    if (ref < lastRef) j = -1;
    lastRef = ref;
    while (j + 1 < count && ts[j + 1]! <= ref) j++;
    if (j < 0 || ts[j]! < ref - lookbackMs) continue;
    const v = values[j]!;
    if (isStaleMarker(v)) continue;
    emit(i, v, ts[j]!);
  }
}

/** Samples 0..count-1 without the stale markers among them (the same arrays when there is none). */
export function withoutStaleMarkers(ts: Float64Array, values: Float64Array, count: number): { ts: Float64Array; values: Float64Array; count: number } {
  let stale = 0;
  for (let k = 0; k < count; k++) if (isStaleMarker(values[k]!)) stale++;
  if (stale === 0) return { ts, values, count };
  const keptTs = new Float64Array(count - stale);
  const keptValues = new Float64Array(count - stale);
  let n = 0;
  for (let k = 0; k < count; k++) {
    if (isStaleMarker(values[k]!)) continue;
    keptTs[n] = ts[k]!;
    keptValues[n++] = values[k]!;
  }
  return { ts: keptTs, values: keptValues, count: n };
}

/** Whether `fn` names a window function. */
export function isWindowFunction(fn: string): boolean {
  return WINDOW_FUNCTIONS.has(fn);
}

/**
 * Slides the window of `fn` over one series (samples 0..count-1, time order) for `steps` steps:
 * step i's window ends at windowEnd(i) and spans rangeMs before it. Stale markers are skipped.
 * `emit(i, value)` receives each step's result (none where the window is empty or `fn` answers
 * nothing).
 */
export function slideWindow(
  ts: Float64Array,
  values: Float64Array,
  count: number,
  rangeMs: number,
  windowEnd: (i: number) => number,
  steps: number,
  fn: WindowFunction,
  arg: (i: number) => number,
  emit: (step: number, value: number) => void,
): void {
  ({ ts, values, count } = withoutStaleMarkers(ts, values, count));
  let resets: Int32Array | null = null;
  if (COUNTER_FUNCTIONS.has(fn)) {
    if (resetScratch.length < count) resetScratch = new Int32Array(Math.max(count, 2 * resetScratch.length));
    resets = resetCounts(values, count, resetScratch);
  }
  let lo = 0;
  let hi = 0;
  let lastEnd = -Infinity;
  for (let i = 0; i < steps; i++) {
    const end = windowEnd(i);
    const start = end - rangeMs;
    if (end < lastEnd) {
      lo = 0; // a window that moved back (a negative step never comes, but stay exact)
      hi = 0;
    }
    lastEnd = end;
    while (lo < count && ts[lo]! < start) lo++;
    if (hi < lo) hi = lo;
    while (hi < count && ts[hi]! <= end) hi++;
    if (hi === lo) continue;
    const value = fn(ts, values, lo, hi, start, end, rangeMs, arg(i), resets);
    if (value !== undefined) emit(i, value);
  }
}

/**
 * Per-step partial aggregates of several series (`sum`, `min`, `max`, `count`, `group`), as
 * Prometheus combines them; partials of the same group combine with the same operation, so
 * shards and collections can each aggregate what they hold.
 */
export class StepAggregate {
  readonly values: Float64Array;
  /** How many series (or, for partials, how many counted series) each step has seen. */
  readonly counts: Float64Array;

  constructor(
    readonly op: 'sum' | 'min' | 'max' | 'count' | 'group',
    steps: number,
  ) {
    this.values = new Float64Array(steps);
    this.counts = new Float64Array(steps);
  }

  /** One series' value at a step. */
  add(step: number, v: number): void {
    this.merge(step, v, 1);
  }

  /** A partial result (its value and the series it counted) at a step. */
  merge(step: number, v: number, count: number): void {
    const first = this.counts[step] === 0;
    this.counts[step]! += count;
    const prior = this.values[step]!;
    switch (this.op) {
      case 'sum':
        this.values[step] = first ? v : prior + v;
        return;
      case 'min':
        if (first || prior > v || Number.isNaN(prior)) this.values[step] = v;
        return;
      case 'max':
        if (first || prior < v || Number.isNaN(prior)) this.values[step] = v;
        return;
      case 'count':
        this.values[step] = this.counts[step]!;
        return;
      case 'group':
        this.values[step] = 1;
    }
  }
}
