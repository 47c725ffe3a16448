// Aggregation operators as Prometheus 2.x evaluates them at each step: the group of a series is
// fixed by its labels (`by` keeps the listed ones, `without` drops them and the name), so it is
// computed once per series; the accumulators are reset per step. topk/bottomk answer the chosen
// input series themselves, count_values adds the counted value as a label.

import { goFloatText } from '../../../native-free-codecs/number-text.js';
import { drop, keep, keyOf, set, METRIC_NAME, type Labels } from '../labels.js';
import type { AggregateOp } from './ast.js';
import { quantileOfSorted, sortGoFloats } from '../../../shared/promql-windows.js';
import { executionError, newSeries, SeriesBuilder, type InstantVector, type ScalarValue, type StepSeries } from './values.js';

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface Aggregation {
  op: AggregateOp;
  grouping: string[];
  without: boolean;
}

function groupLabels(labels: Labels, agg: Aggregation): Labels {
  if (agg.without) return drop(labels, new Set([...agg.grouping, METRIC_NAME]));
  return agg.grouping.length === 0 ? [] : keep(labels, new Set(agg.grouping));
}

export function aggregate(agg: Aggregation, vector: InstantVector, param: ScalarValue | string | null, steps: number): InstantVector {
  if (agg.op === 'count_values') return countValues(agg, vector, param as string, steps);
  // Groups in order of first appearance.
  const groupOf = new Int32Array(vector.series.length);
  const groups: Labels[] = [];
  const index = new Map<string, number>();
  vector.series.forEach((s, i) => {
    const labels = groupLabels(s.labels, agg);
    const key = keyOf(labels);
    let g = index.get(key);
    if (g === undefined) {
      index.set(key, (g = groups.length));
      groups.push(labels);
    }
    groupOf[i] = g;
  });
  if (agg.op === 'topk' || agg.op === 'bottomk') return selectK(agg.op === 'topk', vector, groupOf, groups.length, param as ScalarValue, steps);
  if (agg.op === 'sum' || agg.op === 'max' || agg.op === 'min' || agg.op === 'count' || agg.op === 'group') return seriesMajor(agg.op, vector, groupOf, groups, steps);
  // avg, stddev, stdvar and quantile: step by step, with per-group state.
  const out = groups.map((labels) => newSeries(labels, steps));
  const count = new Float64Array(groups.length);
  const value = new Float64Array(groups.length);
  const mean = new Float64Array(groups.length);
  const lists: number[][] | null = agg.op === 'quantile' ? groups.map(() => []) : null;
  const series = vector.series;
  for (let i = 0; i < steps; i++) {
    count.fill(0);
    if (lists) for (const l of lists) l.length = 0;
    for (let k = 0; k < series.length; k++) {
      const s = series[k]!;
      if (!s.present[i]) continue;
      const g = groupOf[k]!;
      const v = s.values[i]!;
      const first = count[g] === 0;
      count[g]++;
      switch (agg.op) {
        case 'avg': {
          if (first) {
            mean[g] = v;
            break;
          }
          const m = mean[g]!;
          if (Number.isFinite(m) || Number.isNaN(m) || !(Number.isFinite(v) || v === m)) mean[g] = m + v / count[g]! - m / count[g]!;
          break;
        }
        case 'stddev':
        case 'stdvar': {
          if (first) {
            mean[g] = v;
            value[g] = 0;
            break;
          }
          const delta = v - mean[g]!;
          mean[g] = mean[g]! + delta / count[g]!;
          value[g] = value[g]! + delta * (v - mean[g]!);
          break;
        }
        case 'quantile':
          lists![g]!.push(v);
          break;
      }
    }
    for (let g = 0; g < groups.length; g++) {
      const n = count[g]!;
      if (n === 0) continue;
      let result: number;
      switch (agg.op) {
        case 'avg':
          result = mean[g]!;
          break;
        case 'stdvar':
          result = value[g]! / n;
          break;
        case 'stddev':
          result = Math.sqrt(value[g]! / n);
          break;
        default: // quantile
          result = quantileOfSorted((param as ScalarValue).values[i]!, sortGoFloats(Float64Array.from(lists![g]!)));
      }
      out[g]!.values[i] = result;
      out[g]!.present[i] = 1;
    }
  }
  return { kind: 'vector', series: out.filter((s) => s.present.indexOf(1) >= 0) };
}

/**
 * sum, max, min, count and group series by series: each input series is added into its group's
 * output arrays over all steps at once (contiguous arrays, no per-step state), where the
 * step-by-step loop of aggregate() visits every series' arrays at every step. Each group's value
 * at a step still sees the series in input order, so the results are the same bit for bit.
 */
function seriesMajor(op: 'sum' | 'max' | 'min' | 'count' | 'group', vector: InstantVector, groupOf: Int32Array, groups: Labels[], steps: number): InstantVector {
  const out = groups.map((labels) => newSeries(labels, steps));
  const series = vector.series;
  for (let k = 0; k < series.length; k++) {
    const { present, values } = series[k]!;
    const target = out[groupOf[k]!]!;
    const seen = target.present;
    const acc = target.values;
    switch (op) {
      case 'sum':
        for (let i = 0; i < steps; i++) {
          if (!present[i]) continue;
          if (seen[i]) acc[i] = acc[i]! + values[i]!;
          else {
            acc[i] = values[i]!;
            seen[i] = 1;
          }
        }
        break;
      case 'max':
        for (let i = 0; i < steps; i++) {
          if (!present[i]) continue;
          const v = values[i]!;
          if (!seen[i] || acc[i]! < v || Number.isNaN(acc[i]!)) acc[i] = v;
          seen[i] = 1;
        }
        break;
      case 'min':
        for (let i = 0; i < steps; i++) {
          if (!present[i]) continue;
          const v = values[i]!;
          if (!seen[i] || acc[i]! > v || Number.isNaN(acc[i]!)) acc[i] = v;
          seen[i] = 1;
        }
        break;
      case 'count':
        for (let i = 0; i < steps; i++) {
          if (!present[i]) continue;
          acc[i] = seen[i] ? acc[i]! + 1 : 1;
          seen[i] = 1;
        }
        break;
      case 'group':
        for (let i = 0; i < steps; i++) {
          if (!present[i]) continue;
          acc[i] = 1;
          seen[i] = 1;
        }
        break;
    }
  }
  return { kind: 'vector', series: out.filter((s) => s.present.indexOf(1) >= 0) };
}

/** topk/bottomk: per step and group, the k largest (smallest) values; NaN counts as the smallest for topk and the largest for bottomk. */
function selectK(top: boolean, vector: InstantVector, groupOf: Int32Array, groupCount: number, param: ScalarValue, steps: number): InstantVector {
  const out: StepSeries[] = vector.series.map((s) => newSeries(s.labels, steps));
  const members: number[][] = Array.from({ length: groupCount }, () => []);
  // a before b: a "better" (larger for topk). NaN is worst.
  const better = (a: number, b: number): boolean => {
    if (Number.isNaN(a)) return false;
    if (Number.isNaN(b)) return true;
    return top ? a > b : a < b;
  };
  for (let i = 0; i < steps; i++) {
    const kParam = param.values[i]!;
    if (!(kParam >= 1)) {
      if (Number.isNaN(kParam) || kParam > Number.MAX_SAFE_INTEGER) throw executionError(`Scalar value ${kParam} overflows int64`);
      continue;
    }
    const k = Math.floor(kParam);
    for (const m of members) m.length = 0;
    vector.series.forEach((s, n) => {
      if (s.present[i]) members[groupOf[n]!]!.push(n);
    });
    for (const m of members) {
      if (m.length === 0) continue;
      // Stable: among equal values the earlier series wins.
      m.sort((a, b) => {
        const va = vector.series[a]!.values[i]!;
        const vb = vector.series[b]!.values[i]!;
        return better(va, vb) ? -1 : better(vb, va) ? 1 : 0;
      });
      for (let j = 0; j < Math.min(k, m.length); j++) {
        const n = m[j]!;
        out[n]!.values[i] = vector.series[n]!.values[i]!;
        out[n]!.present[i] = 1;
      }
    }
  }
  return { kind: 'vector', series: out.filter((s) => s.present.indexOf(1) >= 0) };
}

function countValues(agg: Aggregation, vector: InstantVector, label: string, steps: number): InstantVector {
  if (!LABEL_NAME.test(label)) throw executionError(`invalid label name ${JSON.stringify(label)}`);
  const grouping: Aggregation = agg.without ? agg : { ...agg, grouping: [...agg.grouping, label] };
  const builder = new SeriesBuilder(steps);
  for (let i = 0; i < steps; i++) {
    const counts = new Map<string, { series: StepSeries; n: number }>();
    for (const s of vector.series) {
      if (!s.present[i]) continue;
      const labels = groupLabels(set(s.labels, label, goFloatText(s.values[i]!)), grouping);
      const key = keyOf(labels);
      let c = counts.get(key);
      if (c === undefined) counts.set(key, (c = { series: builder.series(labels, key), n: 0 }));
      c.n++;
    }
    for (const c of counts.values()) builder.set(c.series, i, c.n);
  }
  return { kind: 'vector', series: builder.result() };
}
