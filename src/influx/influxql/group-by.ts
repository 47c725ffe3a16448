/**
 * GROUP BY as InfluxDB checks it when it prepares a SELECT (after parsing): dimensions are
 * time(interval[, offset]), tag names, `*` and regexes, with InfluxDB's statement errors for
 * the rest; durations folded as its Reduce folds them (`time(1h + 30m)`). Pure TypeScript.
 */

import type { Dimension, Expr } from './ast.js';
import { nsToMs } from './duration.js';
import { quoteString } from './errors.js';
import { distinctKeyword, durationNs, unsignedLiterals } from './expressions.js';
import { looksLikeTime, parseTimeString } from './time-string.js';

type Const = { k: 'duration'; ns: bigint } | { k: 'integer'; v: bigint } | { k: 'float'; v: number } | { k: 'string'; v: string } | null;

/** The constant an expression folds to, as far as durations need (InfluxDB's Reduce). */
function fold(expr: Expr): Const {
  switch (expr.type) {
    case 'paren':
      return fold(expr.expr);
    case 'duration':
      return { k: 'duration', ns: durationNs.get(expr) ?? BigInt(Math.round(expr.ms * 1e6)) };
    case 'number':
      if (unsignedLiterals.has(expr)) return null;
      return expr.integer ? { k: 'integer', v: BigInt(expr.value) } : { k: 'float', v: expr.value };
    case 'string':
      return { k: 'string', v: expr.value };
    case 'binary': {
      const l = fold(expr.left);
      const r = fold(expr.right);
      if (l === null || r === null) return null;
      if (l.k === 'duration' && r.k === 'duration') {
        if (expr.op === '+') return { k: 'duration', ns: BigInt.asIntN(64, l.ns + r.ns) };
        if (expr.op === '-') return { k: 'duration', ns: BigInt.asIntN(64, l.ns - r.ns) };
        return null;
      }
      if (l.k === 'duration' && (r.k === 'integer' || r.k === 'float')) {
        // Go converts the number to a whole duration first.
        const by = r.k === 'integer' ? r.v : BigInt(Math.trunc(r.v));
        if (expr.op === '*') return { k: 'duration', ns: BigInt.asIntN(64, l.ns * by) };
        if (expr.op === '/') {
          if (r.k === 'integer' ? by === 0n : r.v === 0) return { k: 'duration', ns: 0n };
          return by === 0n ? null : { k: 'duration', ns: l.ns / by };
        }
        return null;
      }
      if (l.k === 'integer' && r.k === 'integer') {
        if (expr.op === '+') return { k: 'integer', v: BigInt.asIntN(64, l.v + r.v) };
        if (expr.op === '-') return { k: 'integer', v: BigInt.asIntN(64, l.v - r.v) };
        if (expr.op === '*') return { k: 'integer', v: BigInt.asIntN(64, l.v * r.v) };
      }
      return null;
    }
    default:
      return null;
  }
}

/** A paren around anything but an operator goes away, as in InfluxDB's Reduce. */
function unwrap(expr: Expr): Expr {
  while (expr.type === 'paren' && expr.expr.type !== 'binary') expr = expr.expr;
  return expr;
}

/** Nanoseconds between the Go zero time (year 1) and the Unix epoch: Go truncates times from there. */
const GO_EPOCH_NS = 62_135_596_800n * 1_000_000_000n;

/** The typed dimensions, or InfluxDB's statement error. */
export function compileDimensions(exprs: readonly Expr[], nowMs: number): Dimension[] | string {
  const dimensions: Dimension[] = [];
  let intervalNs = 0n;
  for (const raw of exprs) {
    const expr = unwrap(raw);
    switch (expr.type) {
      case 'ref':
        if (expr.name.toLowerCase() === 'time') return 'time() is a function and expects at least one argument';
        dimensions.push({ type: 'tag', name: expr.name, pos: expr.pos });
        break;
      case 'call': {
        if (distinctKeyword.has(expr)) return 'only time and tag dimensions allowed';
        if (expr.name !== 'time') return 'only time() calls allowed in dimensions';
        if (expr.args.length < 1 || expr.args.length > 2) return 'time dimension expected 1 or 2 arguments';
        const interval = fold(expr.args[0]!);
        if (interval === null || interval.k !== 'duration') return 'time dimension must have duration argument';
        if (intervalNs !== 0n) return 'multiple time dimensions not allowed';
        intervalNs = interval.ns;
        let offsetNs = 0n;
        if (expr.args.length === 2) {
          const arg = unwrap(expr.args[1]!);
          const offset = fold(arg);
          if (offset !== null && offset.k === 'duration') {
            offsetNs = intervalNs === 0n ? 0n : offset.ns % intervalNs;
          } else if (arg.type === 'call') {
            if (arg.name !== 'now') return 'time dimension offset function must be now()';
            if (arg.args.length !== 0) return 'time dimension offset now() function requires no arguments';
            const now = BigInt(Math.floor(nowMs)) * 1_000_000n + GO_EPOCH_NS;
            offsetNs = intervalNs > 0n ? now % intervalNs : 0n;
          } else if (arg.type === 'string' && looksLikeTime(arg.value)) {
            // InfluxDB 1.6 refuses a time offset even when the time is good.
            return parseTimeString(arg.value) === null ? 'invalid timestamp string' : `invalid time dimension offset: ${quoteString(arg.value)}`;
          } else {
            return 'time dimension offset must be duration or now()';
          }
        }
        // A time(0s) before this one groups nothing: this one replaces it.
        const earlier = dimensions.findIndex((d) => d.type === 'time');
        if (earlier >= 0) dimensions.splice(earlier, 1);
        dimensions.push({ type: 'time', intervalMs: nsToMs(intervalNs), offsetMs: nsToMs(offsetNs), pos: expr.pos });
        break;
      }
      case 'wildcard':
        dimensions.push({ type: 'wildcard', pos: expr.pos });
        break;
      case 'regex':
        dimensions.push({ type: 'regex', source: expr.source, pos: expr.pos });
        break;
      default:
        return 'only time and tag dimensions allowed';
    }
  }
  return dimensions;
}

/** InfluxDB's GroupByInterval for a continuous query: the first time() dimension's duration. */
export function groupByInterval(exprs: readonly Expr[]): bigint | string {
  for (const expr of exprs) {
    if (expr.type !== 'call' || expr.name !== 'time') continue;
    if (expr.args.length < 1 || expr.args.length > 2) return 'time dimension expected 1 or 2 arguments';
    const arg = expr.args[0]!;
    if (arg.type !== 'duration') return 'time dimension must have duration argument';
    return durationNs.get(arg)!;
  }
  return 0n;
}
