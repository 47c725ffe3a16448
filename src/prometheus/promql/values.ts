// What PromQL expressions evaluate to over a query's step grid. A range query and an instant
// query (a grid of one step) evaluate the same way: an instant vector is a set of series, each
// with a value at the steps where it is present; a scalar has a value at every step. Range
// vectors (raw samples and a window) exist only as function arguments and as the answer of an
// instant query that asks for one.

import { keyOf, type Labels } from '../labels.js';

/** The evaluation times: start, start + step, …, start + (count - 1) × step (ms). */
export class Grid {
  constructor(
    readonly start: number,
    readonly step: number,
    readonly count: number,
  ) {}

  time(i: number): number {
    return this.start + i * this.step;
  }
}

export interface StepSeries {
  labels: Labels;
  values: Float64Array;
  present: Uint8Array;
  /** A vector selector's own sample times (timestamp() answers them), else absent. */
  sampleTs?: Float64Array;
}

export interface InstantVector {
  kind: 'vector';
  series: StepSeries[];
}

export interface ScalarValue {
  kind: 'scalar';
  values: Float64Array;
}

export interface StringValue {
  kind: 'string';
  value: string;
}

/** Raw samples (stale markers already removed) and how each step's window is placed. */
export interface RangeVector {
  kind: 'matrix';
  series: RawSeries[];
  rangeMs: number;
  /** The end of the window of the step at time t. */
  windowEnd: (t: number) => number;
  /** A vector selector's matchers (absent_over_time labels its answer with their equalities). */
  matchers: ReadonlyArray<{ name: string; type: string; value: string }> | null;
}

export interface RawSeries {
  labels: Labels;
  ts: Float64Array;
  values: Float64Array;
}

export type Value = InstantVector | ScalarValue | StringValue | RangeVector;

/** Prometheus' error types with their HTTP status: a query that cannot run is `execution` (422). */
export type ErrorType = 'bad_data' | 'execution' | 'timeout' | 'canceled' | 'internal';

export class PromQLError extends Error {
  constructor(
    readonly errorType: ErrorType,
    message: string,
  ) {
    super(message);
  }
}

export function executionError(message: string): PromQLError {
  return new PromQLError('execution', message);
}

export { isStaleMarker } from '../../../shared/promql-windows.js';

/** The stale marker as a number (its payload survives in typed arrays, not through arithmetic). */
export const STALE_MARKER = (() => {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, 0x7ff00000);
  view.setUint32(4, 2);
  return view.getFloat64(0);
})();

export function newSeries(labels: Labels, steps: number): StepSeries {
  return { labels, values: new Float64Array(steps), present: new Uint8Array(steps) };
}

/** Whether the series is present at any step. */
export function anyPresent(s: StepSeries): boolean {
  return s.present.indexOf(1) >= 0;
}

/**
 * Series keyed by label set: what an operation that makes new label sets writes into. Two
 * values for one label set at one step are Prometheus' "vector cannot contain metrics with the
 * same labelset"; at different steps they are one series.
 */
export class SeriesBuilder {
  private readonly byKey = new Map<string, StepSeries>();

  constructor(private readonly steps: number) {}

  series(labels: Labels, key = keyOf(labels)): StepSeries {
    let s = this.byKey.get(key);
    if (s === undefined) this.byKey.set(key, (s = newSeries(labels, this.steps)));
    return s;
  }

  set(s: StepSeries, step: number, value: number): void {
    if (s.present[step]) throw executionError('vector cannot contain metrics with the same labelset');
    s.present[step] = 1;
    s.values[step] = value;
  }

  result(): StepSeries[] {
    return [...this.byKey.values()].filter(anyPresent);
  }
}

/** Merges series whose label sets became equal (a name dropped, labels replaced); an error where two are present at one step. */
export function mergeEqualLabels(series: StepSeries[]): StepSeries[] {
  const byKey = new Map<string, StepSeries>();
  const copied = new Set<string>();
  let merged = false;
  for (const s of series) {
    const key = keyOf(s.labels);
    let prior = byKey.get(key);
    if (prior === undefined) {
      byKey.set(key, s);
      continue;
    }
    merged = true;
    if (!copied.has(key)) {
      // The first of them may share its arrays with an operand: merge into a copy.
      copied.add(key);
      prior = { labels: prior.labels, values: prior.values.slice(), present: prior.present.slice() };
      byKey.set(key, prior);
    }
    for (let i = 0; i < s.present.length; i++) {
      if (!s.present[i]) continue;
      if (prior.present[i]) throw executionError('vector cannot contain metrics with the same labelset');
      prior.present[i] = 1;
      prior.values[i] = s.values[i]!;
    }
  }
  return merged ? [...byKey.values()] : series;
}
