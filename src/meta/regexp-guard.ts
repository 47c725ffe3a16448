// Filter `regexp` operands run in application code (a SQLite function on the
// main thread), so they must never stall it. Patterns run on our own
// linear-time matcher (linear-regexp.ts), never on V8's backtracking engine,
// and every query has a budget of matcher steps: past it the query stops with
// a 400 naming the setting. The budget is counted per statement: compileWhere
// binds a fresh query number into each `historian_regexp` call.

import { badRequest } from '../../shared/errors.js';
import { LinearRegExp, RegexpRefusal, StepBudgetExceeded, type StepBudget } from './linear-regexp.js';

export const MAX_PATTERN_LENGTH = 256;
/**
 * Default of `meta.regexpBudgetSteps`. A step is about one character scanned
 * (a few ns) for most patterns, and one NFA state per character (about 10 ns)
 * for the worst; 2M steps keep one query under about 25 ms of main thread
 * (bench/regexp-stall.ts).
 */
export const DEFAULT_REGEXP_BUDGET_STEPS = 2_000_000;
const ALLOWED_FLAGS = 'imsu';
/** Compiled patterns kept; each holds at most a few MiB of cached DFA states. */
const CACHE_SIZE = 64;

export interface RegexpOperand {
  source: string;
  flags: string;
}

/** Reads `/pattern/flags` or a plain pattern (no flags). Throws 400 on flags outside `imsu`. */
export function parseRegexpOperand(text: string): RegexpOperand {
  const lastSlash = text.lastIndexOf('/');
  if (!text.startsWith('/') || lastSlash === 0) return { source: text, flags: '' };
  const source = text.slice(1, lastSlash);
  const flags = text.slice(lastSlash + 1);
  const known = [...flags].every((flag) => ALLOWED_FLAGS.includes(flag));
  if (!known || new Set(flags).size !== flags.length) {
    throw badRequest(`regexp '${show(text)}' has unsupported flags '${show(flags)}' (allowed: i, m, s, u)`);
  }
  return { source, flags };
}

const cache = new Map<string, LinearRegExp>();

/** The compiled matcher, from a bounded LRU cache. Throws 400 for invalid or unsupported patterns. */
export function compileRegexp(source: string, flags: string): LinearRegExp {
  const key = `${flags}/${source}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key); // re-insert: Map order is the recency order
    cache.set(key, hit);
    return hit;
  }
  const shown = `/${show(source)}/${flags}`;
  if (source.length > MAX_PATTERN_LENGTH) {
    throw badRequest(`regexp '${shown}' is longer than ${MAX_PATTERN_LENGTH} characters`);
  }
  if ([...flags].some((flag) => !ALLOWED_FLAGS.includes(flag)) || new Set(flags).size !== flags.length) {
    throw badRequest(`regexp '${shown}' has unsupported flags (allowed: i, m, s, u)`);
  }
  try {
    new RegExp(source, flags); // the syntax is JavaScript's: V8 checks it, and later runs only one-character pieces of it
  } catch (err) {
    throw badRequest(`regexp '${shown}' is invalid: ${(err as Error).message}`);
  }
  let compiled: LinearRegExp;
  try {
    compiled = new LinearRegExp(source, flags);
  } catch (err) {
    if (err instanceof RegexpRefusal) throw badRequest(`regexp '${shown}' is refused: ${err.message}`);
    throw err;
  }
  cache.set(key, compiled);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  return compiled;
}

/**
 * The SQLite-facing test: null and non-text values never match; numbers are
 * matched as their text. Spends from `budget`, and throws the 400 naming the
 * setting once it is spent.
 */
export function regexpMatches(value: unknown, source: string, flags: string, budget: StepBudget, budgetSteps: number): boolean {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'bigint') text = String(value);
  else return false;
  try {
    return compileRegexp(source, flags).test(text, budget);
  } catch (err) {
    if (err instanceof StepBudgetExceeded) {
      throw badRequest(
        `regexp evaluation exceeded its budget of ${budgetSteps} steps (meta.regexpBudgetSteps); use a narrower where or a simpler pattern`,
      );
    }
    throw err;
  }
}

function show(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
