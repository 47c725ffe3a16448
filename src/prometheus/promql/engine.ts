// The PromQL evaluator (Prometheus 2.x semantics; WIRE.md part 3). A query is planned first:
// each selector's time range over the step grid (offsets, @, ranges, subqueries) decides which
// samples are read, once, before anything is evaluated. Evaluation then runs over the whole grid
// at once: selectors look back 5 minutes from each step (a stale marker ends the lookback),
// range functions slide their windows over each series in one pass, and operators, functions and
// aggregations work step by step on the vectors. The samples come from a SampleSource, which
// applies the caller's grant.

import type { AggregateExpr, AtModifier, Call, Expr, LabelMatcher, SubqueryExpr, VectorSelector } from './ast.js';
import { aggregate } from './aggregate.js';
import { scalarBinary, vectorBinary, vectorScalar } from './binary.js';
import { clamp, histogramQuantile, isMathFunction, labelJoin, labelReplace, mapValues, mathFunction, round } from './instant-functions.js';
import type { PromqlGroupOp, PromqlWindowStep } from '../../../shared/aggregator-spec.js';
import { LOOKBACK, lookbackSteps, slideWindow, WINDOW_FUNCTIONS, withoutStaleMarkers } from '../../../shared/promql-windows.js';
import { drop, fromMap, keep, METRIC_NAME, withoutName, type Labels } from '../labels.js';
import { executionError, Grid, mergeEqualLabels, newSeries, PromQLError, type InstantVector, type RangeVector, type RawSeries, type ScalarValue, type StepSeries, type Value } from './values.js';

export const LOOKBACK_MS = 5 * 60_000;
/** A subquery without a step uses the default evaluation interval (Prometheus' global default). */
export const DEFAULT_SUBQUERY_STEP_MS = 60_000;

/** What the engine reads: the series a selector's matchers choose, with their samples in [start, end]. */
export interface SampleSource {
  select(matchers: readonly LabelMatcher[], start: number, end: number): Promise<RawSeries[]>;
  /**
   * The same series with a range function already applied over a step grid during the scan
   * (in the storage workers): `ts` holds step indexes, `values` the function's results.
   */
  windows(matchers: readonly LabelMatcher[], start: number, end: number, step: PromqlWindowStep): Promise<RawSeries[]>;
  /** The window results aggregated across series by the workers: one series per group (groupOf of a series' labels), `ts` step indexes. */
  groups(matchers: readonly LabelMatcher[], start: number, end: number, step: PromqlWindowStep, op: PromqlGroupOp, groupOf: (labels: Labels) => Labels): Promise<RawSeries[]>;
}

export interface EvaluationOptions {
  start: number;
  end: number;
  step: number;
  source: SampleSource;
  signal: AbortSignal;
  /** Most samples held at once (Prometheus' --query.max-samples). */
  maxSamples: number;
}

export async function evaluate(expr: Expr, options: EvaluationOptions): Promise<{ value: Value; grid: Grid }> {
  if (options.signal.aborted) throw new PromQLError('timeout', 'query timed out in expression evaluation');
  const grid = new Grid(options.start, options.step, Math.floor((options.end - options.start) / options.step) + 1);
  const plan: Plan = { query: { start: options.start, end: options.end }, ranges: new Map(), windows: new Map(), groups: new Map() };
  planSelectors(expr, grid, plan);
  const data = new Map<VectorSelector, RawSeries[]>();
  const windowed = new Map<Call | VectorSelector | AggregateExpr, RawSeries[]>();
  let samples = 0;
  const count = (series: RawSeries[]) => {
    for (const s of series) samples += s.ts.length;
    if (samples > options.maxSamples) throw executionError('query processing would load too many samples into memory in query execution');
  };
  await Promise.all([
    ...[...plan.ranges].map(async ([selector, range]) => {
      const series = await options.source.select(selector.matchers, range.start, range.end);
      count(series);
      data.set(selector, series);
    }),
    ...[...plan.windows].map(async ([call, w]) => {
      const series = await options.source.windows(w.selector.matchers, w.start, w.end, w.step);
      count(series);
      windowed.set(call, series);
    }),
    ...[...plan.groups].map(async ([aggregation, w]) => {
      const series = await options.source.groups(w.selector.matchers, w.start, w.end, w.step, w.op, w.groupOf);
      count(series);
      windowed.set(aggregation, series);
    }),
  ]);
  if (options.signal.aborted) throw new PromQLError('timeout', 'query timed out in expression evaluation');
  const evaluator = new Evaluator(data, windowed, options, samples);
  return { value: evaluator.eval(expr, grid), grid };
}

function resolveAt(at: AtModifier, query: { start: number; end: number }): number | null {
  if (at === null) return null;
  if (at === 'start') return query.start;
  if (at === 'end') return query.end;
  return at;
}

/** What a query reads: raw samples per selector, or a range function's results per call (pushed down to the workers). */
interface Plan {
  query: { start: number; end: number };
  ranges: Map<VectorSelector, { start: number; end: number }>;
  /** Range functions over a selector, and selectors sampled at the steps, both computed by the workers. */
  windows: Map<Call | VectorSelector, { selector: VectorSelector; start: number; end: number; step: PromqlWindowStep }>;
  /** Aggregations of a range function over a selector, run across series by the workers. */
  groups: Map<AggregateExpr, { selector: VectorSelector; start: number; end: number; step: PromqlWindowStep; op: PromqlGroupOp; groupOf: (labels: Labels) => Labels }>;
}

const WORKER_AGGREGATIONS = new Set<string>(['sum', 'min', 'max', 'count', 'group']);

/** The inner grid of a subquery evaluated for the steps of `outer`: multiples of its step from the first inside the earliest window. */
function subqueryGrid(expr: SubqueryExpr, outer: Grid, query: { start: number; end: number }): Grid {
  const fixed = resolveAt(expr.at, query);
  const step = expr.stepMs > 0 ? expr.stepMs : DEFAULT_SUBQUERY_STEP_MS;
  const first = (fixed ?? outer.time(0)) - expr.offsetMs;
  const last = (fixed ?? outer.time(outer.count - 1)) - expr.offsetMs;
  const from = first - expr.rangeMs;
  let start = step * Math.trunc(from / step);
  if (start < from) start += step;
  return new Grid(start, step, last >= start ? Math.floor((last - start) / step) + 1 : 0);
}

/** The call's window function when the workers can run it during the scan: a selector argument, a constant φ. */
function pushable(call: Call): { fn: string; selector: VectorSelector; rangeMs: number; arg: number } | null {
  const name = call.func.name;
  if (!WINDOW_FUNCTIONS.has(name)) return null;
  const range = call.args[name === 'quantile_over_time' ? 1 : 0]!;
  if (range.kind !== 'matrixSelector') return null;
  let arg = NaN;
  if (name === 'quantile_over_time') {
    const phi = unwrap(call.args[0]!);
    if (phi.kind !== 'number') return null;
    arg = phi.value;
  }
  return { fn: name, selector: range.vector, rangeMs: range.rangeMs, arg };
}

/** Records what `expr` reads when it is evaluated over `grid`. */
function planSelectors(expr: Expr, grid: Grid, plan: Plan): void {
  if (grid.count === 0) return;
  const start = grid.time(0);
  const end = grid.time(grid.count - 1);
  const widen = (selector: VectorSelector, from: number, to: number) => {
    const prior = plan.ranges.get(selector);
    plan.ranges.set(selector, prior ? { start: Math.min(prior.start, from), end: Math.max(prior.end, to) } : { start: from, end: to });
  };
  const refs = (at: AtModifier, offset: number): [number, number] => {
    const fixed = resolveAt(at, plan.query);
    return fixed !== null ? [fixed - offset, fixed - offset] : [start - offset, end - offset];
  };
  switch (expr.kind) {
    case 'vectorSelector': {
      // Sampled at the steps by the workers: one value per step comes back, not the raw samples.
      const fixed = resolveAt(expr.at, plan.query);
      const [from, to] = refs(expr.at, expr.offsetMs);
      const step: PromqlWindowStep = { name: 'promql_window', fn: LOOKBACK, range_ms: LOOKBACK_MS, first_end: from, step_ms: grid.step, steps: grid.count, fixed_end: fixed !== null, arg: NaN };
      plan.windows.set(expr, { selector: expr, start: from - LOOKBACK_MS, end: to, step });
      return;
    }
    case 'matrixSelector': {
      const [from, to] = refs(expr.vector.at, expr.vector.offsetMs);
      widen(expr.vector, from - expr.rangeMs, to);
      return;
    }
    case 'subquery':
      planSelectors(expr.expr, subqueryGrid(expr, grid, plan.query), plan);
      return;
    case 'call': {
      const arg = expr.args.length === 1 ? unwrap(expr.args[0]!) : null;
      if (expr.func.name === 'timestamp' && arg?.kind === 'vectorSelector') {
        // timestamp() of a selector answers its samples' own times: the raw samples are read.
        const [from, to] = refs(arg.at, arg.offsetMs);
        widen(arg, from - LOOKBACK_MS, to);
        return;
      }
      const push = pushable(expr);
      if (push) {
        const fixed = resolveAt(push.selector.at, plan.query);
        const [from, to] = refs(push.selector.at, push.selector.offsetMs);
        const step: PromqlWindowStep = {
          name: 'promql_window', fn: push.fn, range_ms: push.rangeMs, first_end: from, step_ms: grid.step, steps: grid.count, fixed_end: fixed !== null, arg: push.arg,
        };
        plan.windows.set(expr, { selector: push.selector, start: from - push.rangeMs, end: to, step });
        return;
      }
      for (const arg of expr.args) planSelectors(arg, grid, plan);
      return;
    }
    case 'aggregate': {
      const inner = unwrap(expr.expr);
      const push = inner.kind === 'call' && WORKER_AGGREGATIONS.has(expr.op) ? pushable(inner) : null;
      // The workers aggregate only where no two input series can meet under one label set once
      // the name is dropped (Prometheus would refuse that): one metric name, matched by equality.
      if (push && push.selector.matchers.some((m) => m.name === METRIC_NAME && m.type === '=')) {
        const fixed = resolveAt(push.selector.at, plan.query);
        const [from, to] = refs(push.selector.at, push.selector.offsetMs);
        const step: PromqlWindowStep = {
          name: 'promql_window', fn: push.fn, range_ms: push.rangeMs, first_end: from, step_ms: grid.step, steps: grid.count, fixed_end: fixed !== null, arg: push.arg,
        };
        const keepName = push.fn === 'last_over_time';
        const names = new Set(expr.without ? [...expr.grouping, METRIC_NAME] : expr.grouping);
        const groupOf = (labels: Labels): Labels => {
          const out = keepName ? labels : withoutName(labels);
          return expr.without ? drop(out, names) : keep(out, names);
        };
        plan.groups.set(expr, { selector: push.selector, start: from - push.rangeMs, end: to, step, op: expr.op as PromqlGroupOp, groupOf });
        return;
      }
      if (expr.param) planSelectors(expr.param, grid, plan);
      planSelectors(expr.expr, grid, plan);
      return;
    }
    case 'binary':
      planSelectors(expr.lhs, grid, plan);
      planSelectors(expr.rhs, grid, plan);
      return;
    case 'unary':
    case 'paren':
      planSelectors(expr.expr, grid, plan);
      return;
    default:
      return;
  }
}

function unwrap(expr: Expr): Expr {
  return expr.kind === 'paren' ? unwrap(expr.expr) : expr;
}

class Evaluator {
  private readonly query: { start: number; end: number };
  private checks = 0;

  constructor(
    private readonly data: Map<VectorSelector, RawSeries[]>,
    private readonly windowed: Map<Call | VectorSelector | AggregateExpr, RawSeries[]>,
    private readonly options: EvaluationOptions,
    private samples: number,
  ) {
    this.query = { start: options.start, end: options.end };
  }

  private checkCancel(): void {
    if ((++this.checks & 63) === 0 && this.options.signal.aborted) throw new PromQLError('timeout', 'query timed out in expression evaluation');
  }

  private hold(count: number): void {
    this.samples += count;
    if (this.samples > this.options.maxSamples) throw executionError('query processing would load too many samples into memory in query execution');
  }

  eval(expr: Expr, grid: Grid): Value {
    this.checkCancel();
    switch (expr.kind) {
      case 'number':
        return { kind: 'scalar', values: new Float64Array(grid.count).fill(expr.value) };
      case 'string':
        return { kind: 'string', value: expr.value };
      case 'paren':
        return this.eval(expr.expr, grid);
      case 'unary': {
        const v = this.eval(expr.expr, grid);
        if (expr.op === '+') return v;
        if (v.kind === 'scalar') return { kind: 'scalar', values: v.values.map((x) => -x) };
        return mapValues(v as InstantVector, (x) => -x);
      }
      case 'vectorSelector':
        return this.selectVector(expr, grid);
      case 'matrixSelector':
        return this.rangeOf(expr.vector, expr.rangeMs);
      case 'subquery':
        return this.subquery(expr, grid);
      case 'call':
        return this.call(expr, grid);
      case 'aggregate': {
        const grouped = this.windowed.get(expr);
        if (grouped) return { kind: 'vector', series: stepSeriesOf(grouped, grid.count) };
        const param = expr.param ? this.eval(expr.param, grid) : null;
        const vector = this.eval(expr.expr, grid) as InstantVector;
        const p = param === null ? null : param.kind === 'string' ? param.value : (param as ScalarValue);
        const out = aggregate({ op: expr.op, grouping: expr.grouping, without: expr.without }, vector, p, grid.count);
        this.hold(out.series.length * grid.count);
        return out;
      }
      case 'binary': {
        const l = this.eval(expr.lhs, grid);
        const r = this.eval(expr.rhs, grid);
        if (l.kind === 'scalar' && r.kind === 'scalar') return scalarBinary(expr.op, l, r, grid.count);
        if (l.kind === 'vector' && r.kind === 'vector') return vectorBinary(expr.op, l, r, expr.matching!, expr.returnBool, grid.count);
        if (l.kind === 'vector') return vectorScalar(expr.op, l, r as ScalarValue, false, expr.returnBool);
        return vectorScalar(expr.op, r as InstantVector, l as ScalarValue, true, expr.returnBool);
      }
    }
  }

  /** Each series' latest sample at or before each step's reference time, within the lookback. */
  private selectVector(selector: VectorSelector, grid: Grid): InstantVector {
    const pushed = this.windowed.get(selector);
    if (pushed) {
      // Sampled by the workers: points are (step index, value).
      const series = stepSeriesOf(pushed, grid.count);
      this.hold(series.length * grid.count);
      return { kind: 'vector', series };
    }
    const fixed = resolveAt(selector.at, this.query);
    const out: StepSeries[] = [];
    for (const raw of this.data.get(selector) ?? []) {
      const s: StepSeries = { ...newSeries(raw.labels, grid.count), sampleTs: new Float64Array(grid.count) };
      let any = false;
      lookbackSteps(raw.ts, raw.values, raw.ts.length, LOOKBACK_MS, (i) => (fixed ?? grid.time(i)) - selector.offsetMs, grid.count, (i, v, sampleTs) => {
        s.values[i] = v;
        s.present[i] = 1;
        s.sampleTs![i] = sampleTs;
        any = true;
      });
      if (any) out.push(s);
    }
    this.hold(out.length * grid.count);
    return { kind: 'vector', series: out };
  }

  private rangeOf(selector: VectorSelector, rangeMs: number): RangeVector {
    const fixed = resolveAt(selector.at, this.query);
    const offset = selector.offsetMs;
    // Stale markers are no samples of a range (the instant query's matrix answer shows none).
    const series = (this.data.get(selector) ?? []).map((s) => {
      const kept = withoutStaleMarkers(s.ts, s.values, s.ts.length);
      return { labels: s.labels, ts: kept.ts, values: kept.values };
    });
    return { kind: 'matrix', series, rangeMs, windowEnd: fixed !== null ? () => fixed - offset : (t) => t - offset, matchers: selector.matchers };
  }

  private subquery(expr: SubqueryExpr, outer: Grid): RangeVector {
    const fixed = resolveAt(expr.at, this.query);
    const inner = subqueryGrid(expr, outer, this.query);
    const value = inner.count > 0 ? (this.eval(expr.expr, inner) as InstantVector) : { kind: 'vector' as const, series: [] };
    const series: RawSeries[] = value.series.map((s) => {
      const ts: number[] = [];
      const vs: number[] = [];
      for (let i = 0; i < inner.count; i++) {
        if (!s.present[i]) continue;
        ts.push(inner.time(i));
        vs.push(s.values[i]!);
      }
      return { labels: s.labels, ts: Float64Array.from(ts), values: Float64Array.from(vs) };
    });
    const offset = expr.offsetMs;
    return { kind: 'matrix', series, rangeMs: expr.rangeMs, windowEnd: fixed !== null ? () => fixed - offset : (t) => t - offset, matchers: null };
  }

  private scalarArg(call: Call, index: number, grid: Grid): ScalarValue | null {
    return index < call.args.length ? (this.eval(call.args[index]!, grid) as ScalarValue) : null;
  }

  private stringArg(call: Call, index: number, grid: Grid): string {
    return (this.eval(call.args[index]!, grid) as { value: string }).value;
  }

  private call(call: Call, grid: Grid): Value {
    const name = call.func.name;
    const windowFn = WINDOW_FUNCTIONS.get(name);
    if (windowFn) {
      const keepName = name === 'last_over_time';
      const pushed = this.windowed.get(call);
      let out: StepSeries[];
      if (pushed) {
        // Evaluated by the workers during the scan: points are (step index, result).
        out = stepSeriesOf(pushed.map((p) => ({ ...p, labels: keepName ? p.labels : withoutName(p.labels) })), grid.count);
      } else {
        const rangeIndex = name === 'quantile_over_time' ? 1 : 0;
        const arg = rangeIndex === 1 ? this.scalarArg(call, 0, grid) : null;
        const range = this.eval(call.args[rangeIndex]!, grid) as RangeVector;
        out = range.series.map((s) => {
          const r = newSeries(keepName ? s.labels : withoutName(s.labels), grid.count);
          slideWindow(s.ts, s.values, s.ts.length, range.rangeMs, (i) => range.windowEnd(grid.time(i)), grid.count, windowFn, (i) => (arg ? arg.values[i]! : NaN), (i, v) => {
            r.values[i] = v;
            r.present[i] = 1;
          });
          return r;
        });
      }
      this.hold(out.length * grid.count);
      return { kind: 'vector', series: mergeEqualLabels(out.filter((s) => s.present.indexOf(1) >= 0)) };
    }
    if (isMathFunction(name)) return mathFunction(name, this.eval(call.args[0]!, grid) as InstantVector);
    switch (name) {
      case 'round':
        return round(this.eval(call.args[0]!, grid) as InstantVector, this.scalarArg(call, 1, grid));
      case 'clamp':
        return clamp(this.eval(call.args[0]!, grid) as InstantVector, this.scalarArg(call, 1, grid), this.scalarArg(call, 2, grid));
      case 'clamp_min':
        return clamp(this.eval(call.args[0]!, grid) as InstantVector, this.scalarArg(call, 1, grid), null);
      case 'clamp_max':
        return clamp(this.eval(call.args[0]!, grid) as InstantVector, null, this.scalarArg(call, 1, grid));
      case 'time':
        return { kind: 'scalar', values: Float64Array.from({ length: grid.count }, (_, i) => grid.time(i) / 1000) };
      case 'timestamp': {
        const arg = unwrap(call.args[0]!);
        const vector = this.eval(arg, grid) as InstantVector;
        // Of a selector, the time of the sample it found; of anything else, the step's time.
        const own = arg.kind === 'vectorSelector';
        return timestamps(vector, grid, own);
      }
      case 'vector': {
        const scalar = this.eval(call.args[0]!, grid) as ScalarValue;
        return { kind: 'vector', series: [{ labels: [], values: scalar.values.slice(), present: new Uint8Array(grid.count).fill(1) }] };
      }
      case 'scalar': {
        const vector = this.eval(call.args[0]!, grid) as InstantVector;
        const values = new Float64Array(grid.count);
        for (let i = 0; i < grid.count; i++) {
          let found = -1;
          let count = 0;
          vector.series.forEach((s, n) => {
            if (s.present[i]) {
              count++;
              found = n;
            }
          });
          values[i] = count === 1 ? vector.series[found]!.values[i]! : NaN;
        }
        return { kind: 'scalar', values };
      }
      case 'sort':
      case 'sort_desc': {
        const vector = this.eval(call.args[0]!, grid) as InstantVector;
        const desc = name === 'sort_desc';
        const order = (s: StepSeries) => s.values[0]!;
        const series = [...vector.series].sort((a, b) => {
          const va = order(a);
          const vb = order(b);
          if (Number.isNaN(va)) return Number.isNaN(vb) ? 0 : 1;
          if (Number.isNaN(vb)) return -1;
          return desc ? vb - va : va - vb;
        });
        return { kind: 'vector', series };
      }
      case 'label_replace':
        return labelReplace(this.eval(call.args[0]!, grid) as InstantVector, this.stringArg(call, 1, grid), this.stringArg(call, 2, grid), this.stringArg(call, 3, grid), this.stringArg(call, 4, grid));
      case 'label_join':
        return labelJoin(this.eval(call.args[0]!, grid) as InstantVector, this.stringArg(call, 1, grid), this.stringArg(call, 2, grid), call.args.slice(3).map((_, k) => this.stringArg(call, k + 3, grid)));
      case 'histogram_quantile':
        return histogramQuantile(this.eval(call.args[0]!, grid) as ScalarValue, this.eval(call.args[1]!, grid) as InstantVector, grid.count);
      case 'absent': {
        const vector = this.eval(call.args[0]!, grid) as InstantVector;
        return absent(grid, (i) => vector.series.some((s) => s.present[i]), absentLabels(unwrap(call.args[0]!)));
      }
      case 'absent_over_time': {
        const range = this.eval(call.args[0]!, grid) as RangeVector;
        const seen = new Uint8Array(grid.count);
        for (const s of range.series) {
          slideWindow(s.ts, s.values, s.ts.length, range.rangeMs, (i) => range.windowEnd(grid.time(i)), grid.count, () => 1, () => NaN, (i) => (seen[i] = 1));
        }
        return absent(grid, (i) => seen[i] === 1, absentLabels(unwrap(call.args[0]!)));
      }
      default:
        throw executionError(`function ${name} is not supported`);
    }
  }
}

/** Series whose `ts` are step indexes (what the workers answer) as step series. */
function stepSeriesOf(series: RawSeries[], steps: number): StepSeries[] {
  return series
    .filter((s) => s.ts.length > 0)
    .map((s) => {
      const r = newSeries(s.labels, steps);
      for (let k = 0; k < s.ts.length; k++) {
        r.values[s.ts[k]!] = s.values[k]!;
        r.present[s.ts[k]!] = 1;
      }
      return r;
    });
}

function timestamps(vector: InstantVector, grid: Grid, own: boolean): InstantVector {
  const series = vector.series.map((s) => {
    const r = newSeries(withoutName(s.labels), grid.count);
    for (let i = 0; i < grid.count; i++) {
      if (!s.present[i]) continue;
      r.present[i] = 1;
      r.values[i] = (own && s.sampleTs ? s.sampleTs[i]! : grid.time(i)) / 1000;
    }
    return r;
  });
  return { kind: 'vector', series: mergeEqualLabels(series) };
}

function absent(grid: Grid, present: (i: number) => boolean, labels: Labels): InstantVector {
  const s = newSeries(labels, grid.count);
  for (let i = 0; i < grid.count; i++) {
    if (present(i)) continue;
    s.values[i] = 1;
    s.present[i] = 1;
  }
  return { kind: 'vector', series: s.present.indexOf(1) >= 0 ? [s] : [] };
}

/** absent()'s labels: the selector's equality matchers, less the name and any label matched twice or otherwise. */
function absentLabels(arg: Expr): Labels {
  const selector = arg.kind === 'vectorSelector' ? arg : arg.kind === 'matrixSelector' ? arg.vector : null;
  if (selector === null) return [];
  const map = new Map<string, string>();
  const removed = new Set<string>();
  for (const m of selector.matchers) {
    if (m.name === METRIC_NAME) continue;
    if (m.type === '=' && !map.has(m.name)) map.set(m.name, m.value);
    else removed.add(m.name);
  }
  for (const name of removed) map.delete(name);
  return fromMap(map);
}
