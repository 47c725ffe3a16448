// Functions of instant vectors as Prometheus 2.x computes them: element-wise math (which drops
// the metric name), clamps and round with their per-step scalar arguments, label_replace and
// label_join, and histogram_quantile over classic `le` buckets.

import { drop, get, keyOf, set, withoutName, type Labels } from '../labels.js';
import { executionError, mergeEqualLabels, newSeries, type InstantVector, type ScalarValue, type StepSeries } from './values.js';

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const MATH: Record<string, (v: number) => number> = {
  abs: Math.abs,
  ceil: Math.ceil,
  floor: Math.floor,
  sqrt: Math.sqrt,
  exp: Math.exp,
  ln: Math.log,
  log2: Math.log2,
  log10: Math.log10,
};

export function isMathFunction(name: string): boolean {
  return name in MATH;
}

/** Applies `fn(value, step)` to every present value; the name is dropped; undefined drops the value. */
export function mapValues(vector: InstantVector, fn: (v: number, step: number) => number | undefined): InstantVector {
  const out: StepSeries[] = [];
  for (const s of vector.series) {
    const r = newSeries(withoutName(s.labels), s.values.length);
    let any = false;
    for (let i = 0; i < s.values.length; i++) {
      if (!s.present[i]) continue;
      const v = fn(s.values[i]!, i);
      if (v === undefined) continue;
      r.values[i] = v;
      r.present[i] = 1;
      any = true;
    }
    if (any) out.push(r);
  }
  return { kind: 'vector', series: mergeEqualLabels(out) };
}

export function mathFunction(name: string, vector: InstantVector): InstantVector {
  const fn = MATH[name]!;
  return mapValues(vector, (v) => fn(v));
}

export function round(vector: InstantVector, toNearest: ScalarValue | null): InstantVector {
  return mapValues(vector, (v, i) => {
    const inverse = 1 / (toNearest ? toNearest.values[i]! : 1);
    return Math.floor(v * inverse + 0.5) / inverse;
  });
}

export function clamp(vector: InstantVector, min: ScalarValue | null, max: ScalarValue | null): InstantVector {
  return mapValues(vector, (v, i) => {
    const lo = min ? min.values[i]! : -Infinity;
    const hi = max ? max.values[i]! : Infinity;
    if (min && max && hi < lo) return undefined; // clamp() with max < min answers an empty vector
    // Go's math.Max/Min: NaN wins.
    if (Number.isNaN(v) || Number.isNaN(lo) || Number.isNaN(hi)) return NaN;
    return Math.max(lo, Math.min(hi, v));
  });
}

/** Go's regexp syntax as far as JavaScript differs in what label_replace uses: named groups. */
function goRegexp(source: string, where: string): RegExp {
  try {
    return new RegExp(`^(?:${source.replace(/\(\?P</g, '(?<')})$`);
  } catch (err) {
    throw executionError(`invalid regular expression in ${where}(): ${source}`);
  }
}

/** Go's Regexp.Expand: $1, ${1}, $name, ${name}, $$. */
function expand(template: string, match: RegExpExecArray): string {
  return template.replace(/\$(\$|\{([a-zA-Z0-9_]*)\}|([a-zA-Z0-9_]+))/g, (_all, dollar: string, braced?: string, bare?: string) => {
    if (dollar === '$') return '$';
    const name = braced ?? bare ?? '';
    if (/^[0-9]+$/.test(name)) return match[Number(name)] ?? '';
    return match.groups?.[name] ?? '';
  });
}

function relabel(vector: InstantVector, change: (labels: Labels) => Labels): InstantVector {
  const out = vector.series.map((s) => ({ ...s, labels: change(s.labels) }));
  return { kind: 'vector', series: mergeEqualLabels(out) };
}

export function labelReplace(vector: InstantVector, dst: string, replacement: string, src: string, regex: string): InstantVector {
  const re = goRegexp(regex, 'label_replace');
  if (!LABEL_NAME.test(dst)) throw executionError(`invalid destination label name in label_replace(): ${dst}`);
  return relabel(vector, (labels) => {
    const match = re.exec(get(labels, src));
    if (match === null) return labels;
    return set(labels, dst, expand(replacement, match));
  });
}

export function labelJoin(vector: InstantVector, dst: string, separator: string, sources: string[]): InstantVector {
  if (!LABEL_NAME.test(dst)) throw executionError(`invalid destination label name in label_join(): ${dst}`);
  for (const src of sources) if (!LABEL_NAME.test(src)) throw executionError(`invalid source label name in label_join(): ${src}`);
  return relabel(vector, (labels) => set(labels, dst, sources.map((src) => get(labels, src)).join(separator)));
}

const LE = 'le';

/** histogram_quantile over classic buckets: series grouped by their labels without `le` (answers without the name). */
export function histogramQuantile(phi: ScalarValue, vector: InstantVector, steps: number): InstantVector {
  const groups = new Map<string, { labels: Labels; members: Array<{ s: StepSeries; upper: number }> }>();
  for (const s of vector.series) {
    const le = get(s.labels, LE);
    const upper = parseGoFloat(le);
    if (upper === undefined) continue; // no or malformed `le`: skipped, as Prometheus does
    const sig = keyOf(drop(s.labels, new Set([LE])));
    let group = groups.get(sig);
    if (group === undefined) groups.set(sig, (group = { labels: withoutName(drop(s.labels, new Set([LE]))), members: [] }));
    group.members.push({ s, upper });
  }
  const out: StepSeries[] = [];
  for (const group of groups.values()) {
    const r = newSeries(group.labels, steps);
    let any = false;
    for (let i = 0; i < steps; i++) {
      const buckets: Array<{ upper: number; count: number }> = [];
      for (const m of group.members) if (m.s.present[i]) buckets.push({ upper: m.upper, count: m.s.values[i]! });
      if (buckets.length === 0) continue;
      r.values[i] = bucketQuantile(phi.values[i]!, buckets);
      r.present[i] = 1;
      any = true;
    }
    if (any) out.push(r);
  }
  return { kind: 'vector', series: mergeEqualLabels(out) };
}

function bucketQuantile(q: number, buckets: Array<{ upper: number; count: number }>): number {
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  if (Number.isNaN(q)) return NaN;
  buckets.sort((a, b) => a.upper - b.upper);
  if (buckets[buckets.length - 1]!.upper !== Infinity) return NaN;
  // Buckets of one bound (the same `le` written twice, e.g. "1" and "1.0") count as one.
  const merged: Array<{ upper: number; count: number }> = [];
  for (const b of buckets) {
    const last = merged[merged.length - 1];
    if (last && last.upper === b.upper) last.count += b.count;
    else merged.push({ ...b });
  }
  // Counts must not fall with the bound (precision loss, scrapes caught mid-update): carry the max.
  let max = -Infinity;
  for (const b of merged) {
    if (b.count > max) max = b.count;
    else if (b.count < max) b.count = max;
  }
  if (merged.length < 2) return NaN;
  const observations = merged[merged.length - 1]!.count;
  if (observations === 0) return NaN;
  let rank = q * observations;
  let b = 0;
  while (b < merged.length - 1 && !(merged[b]!.count >= rank)) b++;
  if (b === merged.length - 1) return merged[merged.length - 2]!.upper;
  if (b === 0 && merged[0]!.upper <= 0) return merged[0]!.upper;
  let bucketStart = 0;
  const bucketEnd = merged[b]!.upper;
  let count = merged[b]!.count;
  if (b > 0) {
    bucketStart = merged[b - 1]!.upper;
    count -= merged[b - 1]!.count;
    rank -= merged[b - 1]!.count;
  }
  return bucketStart + (bucketEnd - bucketStart) * (rank / count);
}

/** Go's strconv.ParseFloat as `le` values use it: decimals, exponents, ±Inf, NaN; undefined when not a number. */
export function parseGoFloat(text: string): number | undefined {
  const t = text.trim();
  if (t !== text || t === '') return undefined;
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(t)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) && !/^[+-]?0[xX][0-9a-fA-F]+$/.test(t)) return undefined;
  return Number(t);
}
