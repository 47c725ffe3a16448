// InfluxQL's aggregate and selector functions over one bucket's points, as InfluxDB 1.x defines
// them: mean, median (the mean of the two middle values of an even count), min and max (the
// earliest of equal values), first and last, sum, count, spread, stddev (sample, n - 1; null
// below two points), percentile (nearest rank: floor(n * p / 100 + 0.5) - 1). Selectors also
// give the time of the point they chose. Pure.

export const AGGREGATES = ['mean', 'median', 'min', 'max', 'sum', 'count', 'first', 'last', 'spread', 'stddev', 'percentile'] as const;
export type Aggregate = (typeof AGGREGATES)[number];
export const SELECTORS: ReadonlySet<string> = new Set(['min', 'max', 'first', 'last', 'percentile']);
export const TRANSFORMS = ['derivative', 'non_negative_derivative', 'difference'] as const;
export type Transform = (typeof TRANSFORMS)[number];

export function isAggregate(name: string): name is Aggregate {
  return (AGGREGATES as readonly string[]).includes(name);
}

export function isTransform(name: string): name is Transform {
  return (TRANSFORMS as readonly string[]).includes(name);
}

/** The value of `fn` over points [from, to) of (ts, values) sorted by time, and the time of the point a selector chose. */
export function aggregate(fn: Aggregate, ts: ArrayLike<number>, values: ArrayLike<number>, from: number, to: number, arg = 0): { value: number | null; time: number | null } {
  const n = to - from;
  if (fn === 'count') return { value: n, time: null };
  if (n <= 0) return { value: null, time: null };
  switch (fn) {
    case 'mean': {
      let sum = 0;
      for (let i = from; i < to; i++) sum += values[i]!;
      return { value: sum / n, time: null };
    }
    case 'sum': {
      let sum = 0;
      for (let i = from; i < to; i++) sum += values[i]!;
      return { value: sum, time: null };
    }
    case 'first':
    case 'last': {
      // Of points at the same (earliest or latest) time, InfluxDB's reducers keep the greater value.
      const edge = fn === 'first' ? ts[from]! : ts[to - 1]!;
      let best = fn === 'first' ? from : to - 1;
      for (let i = from; i < to; i++) if (ts[i] === edge && values[i]! > values[best]!) best = i;
      return { value: values[best]!, time: edge };
    }
    case 'min':
    case 'max': {
      let best = from;
      for (let i = from + 1; i < to; i++) if (fn === 'min' ? values[i]! < values[best]! : values[i]! > values[best]!) best = i;
      return { value: values[best]!, time: ts[best]! };
    }
    case 'spread': {
      let min = Infinity;
      let max = -Infinity;
      for (let i = from; i < to; i++) {
        if (values[i]! < min) min = values[i]!;
        if (values[i]! > max) max = values[i]!;
      }
      return { value: max - min, time: null };
    }
    case 'stddev': {
      if (n < 2) return { value: null, time: null };
      let mean = 0;
      for (let i = from; i < to; i++) mean += values[i]!;
      mean /= n;
      let squares = 0;
      for (let i = from; i < to; i++) squares += (values[i]! - mean) ** 2;
      return { value: Math.sqrt(squares / (n - 1)), time: null };
    }
    case 'median': {
      const sorted = Float64Array.from({ length: n }, (_, k) => values[from + k]!).sort();
      const mid = Math.floor(n / 2);
      return { value: n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2, time: null };
    }
    case 'percentile': {
      const order = Array.from({ length: n }, (_, k) => from + k).sort((a, b) => values[a]! - values[b]! || ts[a]! - ts[b]!);
      const rank = Math.floor(n * (arg / 100) + 0.5) - 1;
      if (arg <= 0 || arg > 100 || rank < 0 || rank >= n) return { value: null, time: null };
      return { value: values[order[rank]!]!, time: ts[order[rank]!]! };
    }
  }
}
