// Binary operators as Prometheus 2.x applies them at each step: between scalars, between a
// vector and a scalar (arithmetic drops the name, comparisons filter or, with `bool`, answer
// 0/1), and between vectors by label matching (on/ignoring, group_left/group_right, and the set
// operators and/or/unless). Matching errors are Prometheus' own `execution` errors.

import { drop, formatLabels, get, keep, keyOf, set, withoutName, METRIC_NAME, type Labels } from '../labels.js';
import type { BinaryOp, VectorMatching } from './ast.js';
import { executionError, mergeEqualLabels, newSeries, SeriesBuilder, type InstantVector, type ScalarValue, type StepSeries } from './values.js';

const COMPARISONS = new Set<BinaryOp>(['==', '!=', '>', '<', '>=', '<=']);

/** Go's math.Mod: the result has the sign of the dividend (as JavaScript's %). */
function arithmetic(op: BinaryOp, l: number, r: number): number {
  switch (op) {
    case '+':
      return l + r;
    case '-':
      return l - r;
    case '*':
      return l * r;
    case '/':
      return l / r;
    case '%':
      return l % r;
    case '^':
      return goPow(l, r);
    default:
      throw new Error(`not arithmetic: ${op}`);
  }
}

/** Go's math.Pow where it differs from JavaScript's: 1^NaN and (-1)^±Inf are 1. */
function goPow(x: number, y: number): number {
  if (x === 1) return 1;
  if (x === -1 && !Number.isFinite(y) && !Number.isNaN(y)) return 1;
  return Math.pow(x, y);
}

function compare(op: BinaryOp, l: number, r: number): boolean {
  switch (op) {
    case '==':
      return l === r;
    case '!=':
      return l !== r;
    case '>':
      return l > r;
    case '<':
      return l < r;
    case '>=':
      return l >= r;
    case '<=':
      return l <= r;
    default:
      throw new Error(`not a comparison: ${op}`);
  }
}

/** lhs op rhs as Prometheus' vectorElemBinop: [value, keep]. Comparisons keep the left value. */
function elem(op: BinaryOp, l: number, r: number): [number, boolean] {
  if (COMPARISONS.has(op)) return [l, compare(op, l, r)];
  return [arithmetic(op, l, r), true];
}

export function scalarBinary(op: BinaryOp, l: ScalarValue, r: ScalarValue, steps: number): ScalarValue {
  const values = new Float64Array(steps);
  for (let i = 0; i < steps; i++) {
    const a = l.values[i]!;
    const b = r.values[i]!;
    values[i] = COMPARISONS.has(op) ? (compare(op, a, b) ? 1 : 0) : arithmetic(op, a, b);
  }
  return { kind: 'scalar', values };
}

/** vector op scalar (or scalar op vector when `scalarLeft`). */
export function vectorScalar(op: BinaryOp, vector: InstantVector, scalar: ScalarValue, scalarLeft: boolean, returnBool: boolean): InstantVector {
  const comparison = COMPARISONS.has(op);
  const dropName = !comparison || returnBool;
  const out: StepSeries[] = [];
  for (const s of vector.series) {
    const r = newSeries(dropName ? withoutName(s.labels) : s.labels, s.values.length);
    let any = false;
    for (let i = 0; i < s.values.length; i++) {
      if (!s.present[i]) continue;
      const v = s.values[i]!;
      const c = scalar.values[i]!;
      let [value, kept] = scalarLeft ? elem(op, c, v) : elem(op, v, c);
      // A comparison with the scalar on the left still answers the vector's value.
      if (comparison && scalarLeft) value = v;
      if (returnBool) value = kept ? 1 : 0;
      else if (!kept) continue;
      r.values[i] = value;
      r.present[i] = 1;
      any = true;
    }
    if (any) out.push(r);
  }
  return { kind: 'vector', series: dropName ? mergeEqualLabels(out) : out };
}

function signature(matching: VectorMatching): (labels: Labels) => string {
  if (matching.on) {
    const names = new Set(matching.labels);
    return (labels) => keyOf(keep(labels, names));
  }
  const names = new Set([...matching.labels, METRIC_NAME]);
  return (labels) => keyOf(drop(labels, names));
}

function matchedLabels(labels: Labels, matching: VectorMatching): Labels {
  return matching.on ? keep(labels, new Set(matching.labels)) : drop(labels, new Set([...matching.labels, METRIC_NAME]));
}

export function vectorBinary(op: BinaryOp, lhs: InstantVector, rhs: InstantVector, matching: VectorMatching, returnBool: boolean, steps: number): InstantVector {
  if (op === 'and' || op === 'or' || op === 'unless') return setOperation(op, lhs, rhs, matching, steps);
  const sig = signature(matching);
  // The "one" side is the right one, except for group_right: swap so that `many` is the left.
  const swapped = matching.card === 'one-to-many';
  const many = swapped ? rhs : lhs;
  const one = swapped ? lhs : rhs;
  const manySig = many.series.map((s) => sig(s.labels));
  const oneSig = one.series.map((s) => sig(s.labels));
  const dropName = !COMPARISONS.has(op) || returnBool;
  const builder = new SeriesBuilder(steps);
  const include = new Set(matching.include);
  const resultLabels = (m: Labels, o: Labels): Labels => {
    let labels = m;
    if (dropName) labels = withoutName(labels);
    if (matching.card === 'one-to-one') labels = matching.on ? keep(labels, new Set(matching.labels)) : drop(labels, new Set(matching.labels));
    for (const name of include) labels = set(labels, name, get(o, name));
    if (returnBool) labels = withoutName(labels);
    return labels;
  };
  // Output label sets repeat at every step: cache them per (many, one) pair.
  const pairLabels = new Map<number, { labels: Labels; key: string; series: StepSeries | null }>();
  for (let i = 0; i < steps; i++) {
    const oneBySig = new Map<string, number>();
    one.series.forEach((s, n) => {
      if (!s.present[i]) return;
      const prior = oneBySig.get(oneSig[n]!);
      if (prior !== undefined) {
        const side = swapped ? 'left' : 'right';
        throw executionError(
          `found duplicate series for the match group ${formatLabels(matchedLabels(s.labels, matching))} on the ${side} hand-side of the operation: [${formatLabels(s.labels)}, ${formatLabels(one.series[prior]!.labels)}];many-to-many matching not allowed: matching labels must be unique on one side`,
        );
      }
      oneBySig.set(oneSig[n]!, n);
    });
    const matched = new Map<string, Set<string> | null>();
    many.series.forEach((s, n) => {
      if (!s.present[i]) return;
      const key = manySig[n]!;
      const o = oneBySig.get(key);
      if (o === undefined) return;
      let vl = s.values[i]!;
      let vr = one.series[o]!.values[i]!;
      if (swapped) [vl, vr] = [vr, vl];
      let [value, kept] = elem(op, vl, vr);
      if (returnBool) value = kept ? 1 : 0;
      else if (!kept) return;
      const pair = n * one.series.length + o;
      let out = pairLabels.get(pair);
      if (out === undefined) {
        const labels = resultLabels(s.labels, one.series[o]!.labels);
        pairLabels.set(pair, (out = { labels, key: keyOf(labels), series: null }));
      }
      const inserted = matched.get(key);
      if (matching.card === 'one-to-one') {
        if (inserted !== undefined) throw executionError('multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)');
        matched.set(key, null);
      } else {
        let set = inserted;
        if (set === undefined || set === null) matched.set(key, (set = new Set()));
        if (set.has(out.key)) throw executionError('multiple matches for labels: grouping labels must ensure unique matches');
        set.add(out.key);
      }
      out.series ??= builder.series(out.labels, out.key);
      builder.set(out.series, i, value);
    });
  }
  return { kind: 'vector', series: builder.result() };
}

function setOperation(op: 'and' | 'or' | 'unless', lhs: InstantVector, rhs: InstantVector, matching: VectorMatching, steps: number): InstantVector {
  const sig = signature(matching);
  const lSig = lhs.series.map((s) => sig(s.labels));
  const rSig = rhs.series.map((s) => sig(s.labels));
  const left = lhs.series.map((s) => newSeries(s.labels, steps));
  const right = op === 'or' ? rhs.series.map((s) => newSeries(s.labels, steps)) : [];
  for (let i = 0; i < steps; i++) {
    const rightSigs = new Set<string>();
    if (op !== 'or') rhs.series.forEach((s, n) => s.present[i] && rightSigs.add(rSig[n]!));
    const leftSigs = new Set<string>();
    lhs.series.forEach((s, n) => {
      if (!s.present[i]) return;
      const keepIt = op === 'or' || (op === 'and' ? rightSigs.has(lSig[n]!) : !rightSigs.has(lSig[n]!));
      if (op === 'or') leftSigs.add(lSig[n]!);
      if (!keepIt) return;
      left[n]!.values[i] = s.values[i]!;
      left[n]!.present[i] = 1;
    });
    if (op === 'or') {
      rhs.series.forEach((s, n) => {
        if (!s.present[i] || leftSigs.has(rSig[n]!)) return;
        right[n]!.values[i] = s.values[i]!;
        right[n]!.present[i] = 1;
      });
    }
  }
  return { kind: 'vector', series: mergeEqualLabels([...left, ...right].filter((s) => s.present.indexOf(1) >= 0)) };
}
