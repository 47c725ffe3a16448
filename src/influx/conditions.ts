// The WHERE of a statement: its time range (ANDed comparisons of time with RFC 3339 strings,
// epoch integers, durations and now() ± durations) and the rest, evaluated per series on tags and
// per row on field values. Regular expressions run on the linear-time matcher. Pure.

import { LinearRegExp } from '../meta/linear-regexp.js';
import type { Expr } from './influxql/ast.js';
import { parseTimeString } from './influxql/time-string.js';
import { tagValue, type InfluxSeries } from './model.js';
import { StatementError } from './errors.js';

const REGEX_STEPS = 5_000_000;

export function regex(source: string): { test(text: string): boolean } {
  // InfluxQL regexes are Go's (RE2): leading flags like (?i) become the matcher's flags.
  const flagged = /^\(\?([imsU]+)\)/.exec(source);
  const flags = flagged ? [...new Set(flagged[1]!.replace('U', ''))].join('') : '';
  let compiled: LinearRegExp;
  try {
    compiled = new LinearRegExp(flagged ? source.slice(flagged[0].length) : source, flags);
  } catch (err) {
    throw new StatementError(`invalid regular expression /${source}/: ${(err as Error).message}`);
  }
  return { test: (text) => compiled.test(text, { remaining: REGEX_STEPS }) };
}


/** The time range of a WHERE (ANDed time comparisons), and what remains of it. */
export function splitTime(condition: Expr | null, now: number): { range: { start: number | null; end: number | null }; rest: Expr | null } {
  const range = { start: null as number | null, end: null as number | null };
  const visit = (e: Expr): Expr | null => {
    if (e.type === 'paren') return visit(e.expr);
    if (e.type === 'binary' && e.op === 'AND') {
      const l = visit(e.left);
      const r = visit(e.right);
      return l && r ? { ...e, left: l, right: r } : (l ?? r);
    }
    if (e.type === 'binary' && isTimeRef(e.left) !== isTimeRef(e.right) && (isTimeRef(e.left) || isTimeRef(e.right))) {
      const flipped = isTimeRef(e.right);
      const op = flipped ? flip(e.op) : e.op;
      const t = timeValue(flipped ? e.left : e.right, now);
      switch (op) {
        case '>':
          range.start = Math.max(range.start ?? -Infinity, Math.floor(t) + 1);
          break;
        case '>=':
          range.start = Math.max(range.start ?? -Infinity, Math.ceil(t));
          break;
        case '<':
          range.end = Math.min(range.end ?? Infinity, Math.ceil(t) - 1);
          break;
        case '<=':
          range.end = Math.min(range.end ?? Infinity, Math.floor(t));
          break;
        case '=':
          range.start = Math.max(range.start ?? -Infinity, Math.ceil(t));
          range.end = Math.min(range.end ?? Infinity, Math.floor(t));
          break;
        default:
          throw new StatementError(`invalid operator ${e.op} with time: use =, <, <=, >, >=`);
      }
      return null;
    }
    if (mentionsTime(e)) throw new StatementError('time conditions may only be joined with AND here');
    return e;
  };
  const rest = condition ? visit(condition) : null;
  if (range.start !== null && range.start < 0) range.start = 0;
  return { range, rest };
}

function isTimeRef(e: Expr): boolean {
  return e.type === 'ref' && e.name.toLowerCase() === 'time';
}

function mentionsTime(e: Expr): boolean {
  if (isTimeRef(e)) return true;
  if (e.type === 'binary') return mentionsTime(e.left) || mentionsTime(e.right);
  if (e.type === 'paren') return mentionsTime(e.expr);
  return false;
}

function flip(op: string): string {
  return ({ '>': '<', '<': '>', '>=': '<=', '<=': '>=' } as Record<string, string>)[op] ?? op;
}

/** A time expression in epoch ms: RFC 3339 strings, integers (ns), durations (epoch offsets), now() ± durations. */
function timeValue(e: Expr, now: number): number {
  switch (e.type) {
    case 'paren':
      return timeValue(e.expr, now);
    case 'string': {
      // Read as InfluxDB reads time strings (a string without a zone is UTC here).
      const t = parseTimeString(e.value);
      if (!t) throw new StatementError(`invalid timestamp string ${JSON.stringify(e.value)}: use RFC 3339 (2024-06-01T00:00:00Z)`);
      return Number(t.ns) / 1e6;
    }
    case 'number':
      return e.value / 1e6;
    case 'duration':
      return e.ms;
    case 'call':
      if (e.name.toLowerCase() === 'now' && e.args.length === 0) return now;
      break;
    case 'binary':
      if (e.op === '+' || e.op === '-') {
        const l = timeValue(e.left, now);
        const r = timeValue(e.right, now);
        return e.op === '+' ? l + r : l - r;
      }
      break;
  }
  throw new StatementError('invalid time expression: use an RFC 3339 string, an epoch integer with a unit (1700000000000ms), or now() - 1h');
}

/** Whether a series passes the tag part of a condition (field comparisons count as true here). */
export function matchesTags(condition: Expr, series: InfluxSeries, tagKeys: ReadonlySet<string>): boolean {
  const r = evalCond(condition, series, null, tagKeys);
  return r !== false;
}

export function evalCondition(condition: Expr, series: InfluxSeries, fields: Map<string, number>, tagKeys: ReadonlySet<string>): boolean {
  return evalCond(condition, series, fields, tagKeys) === true;
}

/** true, false, or null when it depends on field values not given. */
function evalCond(e: Expr, series: InfluxSeries, fields: Map<string, number> | null, tagKeys: ReadonlySet<string>): boolean | null {
  switch (e.type) {
    case 'paren':
      return evalCond(e.expr, series, fields, tagKeys);
    case 'boolean':
      return e.value;
    case 'binary': {
      if (e.op === 'AND' || e.op === 'OR') {
        const l = evalCond(e.left, series, fields, tagKeys);
        const r = evalCond(e.right, series, fields, tagKeys);
        if (e.op === 'AND') return l === false || r === false ? false : l === null || r === null ? null : true;
        return l === true || r === true ? true : l === null || r === null ? null : false;
      }
      const ref = e.left.type === 'ref' ? e.left : e.right.type === 'ref' ? e.right : null;
      if (!ref) throw new StatementError('a condition compares a field or a tag with a value');
      const other = ref === e.left ? e.right : e.left;
      // A tag key of the measurement is a tag (a series without it has the empty value), anything else a field.
      const isTag = ref.dataType === 'tag' || (ref.dataType !== 'field' && tagKeys.has(ref.name));
      if (isTag) {
        const value = tagValue(series, ref.name) ?? '';
        if (e.op === '=~' || e.op === '!~') {
          if (other.type !== 'regex') throw new StatementError(`${e.op} needs a regular expression`);
          const hit = regex(other.source).test(value);
          return e.op === '=~' ? hit : !hit;
        }
        if (other.type !== 'string') return e.op === '!=' || e.op === '<>';
        switch (e.op) {
          case '=':
            return value === other.value;
          case '!=':
          case '<>':
            return value !== other.value;
          default:
            throw new StatementError(`invalid operator ${e.op} on tag ${ref.name}`);
        }
      }
      if (fields === null) return null;
      const v = fields.get(ref.name);
      if (v === undefined) return false;
      // Booleans are stored as 1 and 0.
      const literal = other.type === 'number' ? other.value : other.type === 'boolean' ? (other.value ? 1 : 0) : null;
      if (literal === null) return false;
      const [l, r] = ref === e.left ? [v, literal] : [literal, v];
      switch (e.op) {
        case '=':
          return l === r;
        case '!=':
        case '<>':
          return l !== r;
        case '<':
          return l < r;
        case '<=':
          return l <= r;
        case '>':
          return l > r;
        case '>=':
          return l >= r;
        default:
          throw new StatementError(`invalid operator ${e.op} on field ${ref.name}`);
      }
    }
    default:
      throw new StatementError('a condition compares a field or a tag with a value');
  }
}
