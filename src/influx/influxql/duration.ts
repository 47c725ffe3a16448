/**
 * InfluxQL durations (`10s`, `1h30m`, `500ms`, `10u`, `1w`) as InfluxDB computes them: int64
 * nanoseconds, wrapping on overflow as Go does, with its error texts; and the int64 bounds the
 * parser checks integers against. Pure TypeScript.
 */

export const INT64_MAX = (1n << 63n) - 1n;
export const INT64_MIN = -(1n << 63n);
export const UINT64_MAX = (1n << 64n) - 1n;

const NS_PER_UNIT: Record<string, bigint> = {
  ns: 1n,
  u: 1_000n,
  µ: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
  d: 86_400_000_000_000n,
  w: 604_800_000_000_000n,
};


/**
 * A duration literal (`10s`, `1h30m`, a leading `-` allowed) in nanoseconds, as InfluxDB
 * computes it (int64, wrapping on overflow), or the error text InfluxDB gives: `invalid
 * duration`, or `overflowed duration <n><unit>: choose a smaller duration or INF`.
 */
export function parseDuration(text: string): bigint | string {
  const chars = Array.from(text);
  if (chars.length < 2) return 'invalid duration';
  let i = 0;
  const negative = chars[0] === '-';
  if (negative) i++;
  let total = 0n;
  let measure = '';
  let unit = '';
  while (i < chars.length) {
    const from = i;
    while (i < chars.length && chars[i]! >= '0' && chars[i]! <= '9') i++;
    if (i >= chars.length || i === from) return 'invalid duration';
    const digits = chars.slice(from, i).join('');
    const n = BigInt(digits);
    if (n > INT64_MAX) return 'invalid duration';
    measure = n.toString();
    const c = chars[i]!;
    if ((c === 'n' || c === 'm') && chars[i + 1] === 's') {
      unit = `${c}s`;
      i += 2;
    } else if (c === 'n') {
      return 'invalid duration';
    } else {
      unit = c;
      i++;
    }
    const scale = NS_PER_UNIT[unit];
    if (scale === undefined) return 'invalid duration';
    total = BigInt.asIntN(64, total + BigInt.asIntN(64, n * scale));
  }
  if (total < 0n && !negative) return `overflowed duration ${measure}${unit}: choose a smaller duration or INF`;
  return negative ? BigInt.asIntN(64, -total) : total;
}

/** Nanoseconds as the AST's milliseconds (exact to the nanosecond for any int64). */
export function nsToMs(ns: bigint): number {
  return Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6;
}

/** InfluxDB's FormatDuration: the largest unit that divides the duration. */
export function formatDuration(ns: bigint): string {
  if (ns === 0n) return '0s';
  const units: [bigint, string][] = [
    [604_800_000_000_000n, 'w'],
    [86_400_000_000_000n, 'd'],
    [3_600_000_000_000n, 'h'],
    [60_000_000_000n, 'm'],
    [1_000_000_000n, 's'],
    [1_000_000n, 'ms'],
    [1_000n, 'u'],
  ];
  for (const [size, unit] of units) if (ns % size === 0n) return `${ns / size}${unit}`;
  return `${ns}ns`;
}
