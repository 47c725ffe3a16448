// Filter `regexp` operands run in application code (a SQLite function on the
// main thread) with V8's backtracking engine, which has no time limit. A
// hostile pattern could stall the whole service, so every pattern is checked
// before use and refused when its shape can backtrack badly. The check is
// deliberately conservative: it refuses some harmless patterns, and a user
// can nearly always rewrite those (`[ab]*` instead of `(a|b)*`).

import { badRequest } from '../http/errors.js';

export const MAX_PATTERN_LENGTH = 256;
/** Only this many leading characters of a value are matched. */
// 8 KiB keeps the worst allowed pattern on one value near 60-90 ms; the
// per-tick budget below bounds a whole query.
export const MAX_MATCHED_CHARS = 8 * 1024;
/** Regexp time allowed to one synchronous query before it is refused. */
export const REGEXP_BUDGET_MS = 250;
const ALLOWED_FLAGS = 'imsu';
const CACHE_SIZE = 256;
/**
 * Unbounded repeats (`*`, `+`, `{n,}`), plus one when the pattern is not
 * anchored at the start (the engine retries from every position). Each one
 * can multiply the work by the value length: two already cost about 5 s on a
 * 64 KiB value of the worst shape, three would run for hours.
 */
const MAX_BACKTRACKING_DEGREE = 2;
/**
 * Product of the choices bounded repeats and alternations offer (`a?` 2,
 * `\d{1,3}` 3, `(x|y|z)` 3); each can multiply the work too (`a{0,1000}b`
 * takes about 0.3 s on 64 KiB of `a`).
 */
const MAX_BOUNDED_CHOICES = 256;

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

const cache = new Map<string, RegExp>();

/** Compiles a pattern that passed the safety check, from a bounded LRU cache. Throws 400 otherwise. */
export function compileSafeRegExp(source: string, flags: string): RegExp {
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
  let compiled: RegExp;
  try {
    compiled = new RegExp(source, flags);
  } catch (err) {
    throw badRequest(`regexp '${shown}' is invalid: ${(err as Error).message}`);
  }
  const hazard = findBacktrackingHazard(source, flags);
  if (hazard) throw badRequest(`regexp '${shown}' is refused: ${hazard}`);
  cache.set(key, compiled);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  return compiled;
}

/** The SQLite-facing test: null and non-text values never match; long values are cut. */
export function regexpMatches(value: unknown, source: string, flags: string): boolean {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'bigint') text = String(value);
  else return false;
  if (text.length > MAX_MATCHED_CHARS) text = text.slice(0, MAX_MATCHED_CHARS);
  const started = performance.now();
  const matched = compileSafeRegExp(source, flags).test(text);
  chargeRegexpTime(performance.now() - started);
  return matched;
}

// SQLite calls the regexp function synchronously on the main thread, once per
// row. Time spent in one turn of the event loop is summed; past the budget the
// query is abandoned with a 400 instead of stalling every other client.
let spentThisTurnMs = 0;
let resetScheduled = false;

function chargeRegexpTime(ms: number): void {
  spentThisTurnMs += ms;
  if (!resetScheduled) {
    resetScheduled = true;
    setImmediate(() => {
      spentThisTurnMs = 0;
      resetScheduled = false;
    });
  }
  if (spentThisTurnMs > REGEXP_BUDGET_MS) {
    throw badRequest(`regexp evaluation exceeded its ${REGEXP_BUDGET_MS} ms budget; use a narrower where or a simpler pattern`);
  }
}

interface GroupScan {
  /** Holds a quantifier that offers a choice (not `{n}`), at any depth. */
  hasQuantifier: boolean;
  hasAlternation: boolean;
  branches: number;
}

const QUANTIFIER = /(?:([*+?])|\{(\d+)(?:(,)(\d*))?\})/y;

/**
 * Walks a syntactically valid pattern (it compiled) and returns why it is
 * dangerous, or undefined. Refused: backreferences and lookbehind (both
 * defeat V8's optimisations), a group repeated more than once that holds a
 * quantifier or an alternation (`(a+)+`, `(a|a)*`, `(.*a){20}`: exponential),
 * too many unbounded repeats (polynomial: `.*a.*b` is cubic in the value
 * length), and too many bounded choices (`a?a?a?…aaa`: exponential).
 */
export function findBacktrackingHazard(source: string, flags: string): string | undefined {
  const stack: GroupScan[] = [{ hasQuantifier: false, hasAlternation: false, branches: 1 }];
  let lastAtom: GroupScan | 'simple' | null = null;
  let unboundedRepeats = 0;
  let choices = 1;
  let i = 0;
  while (i < source.length) {
    const char = source[i];
    const top = stack[stack.length - 1];
    if (char === '\\') {
      const next = source[i + 1] ?? '';
      if (/[1-9]/.test(next) || source.startsWith('k<', i + 1)) return 'backreferences are not allowed';
      i += 2;
      // \u{…} and \p{…} carry braces that are not a quantifier
      if ('upP'.includes(next) && source[i] === '{') i = source.indexOf('}', i) + 1 || source.length;
      lastAtom = 'simple';
      continue;
    }
    if (char === '[') {
      i = skipCharacterClass(source, i);
      lastAtom = 'simple';
      continue;
    }
    if (char === '(') {
      if (source.startsWith('(?<=', i) || source.startsWith('(?<!', i)) return 'lookbehind is not allowed';
      if (source.startsWith('(?<', i)) i = source.indexOf('>', i) + 1 || source.length; // (?<name>
      else if (source.startsWith('(?', i)) i += 3;
      else i += 1;
      stack.push({ hasQuantifier: false, hasAlternation: false, branches: 1 });
      lastAtom = null;
      continue;
    }
    if (char === ')' && stack.length > 1) {
      const group = stack.pop()!;
      const parent = stack[stack.length - 1];
      parent.hasQuantifier ||= group.hasQuantifier;
      parent.hasAlternation ||= group.hasAlternation;
      choices *= group.branches;
      lastAtom = group;
      i += 1;
      continue;
    }
    if (char === '|') {
      top.hasAlternation = true;
      top.branches += 1;
      lastAtom = null;
      i += 1;
      continue;
    }
    QUANTIFIER.lastIndex = i;
    const quantifier = QUANTIFIER.exec(source);
    if (quantifier && lastAtom !== null) {
      const [text, symbol, minText, comma, maxText] = quantifier;
      const min = symbol === '+' ? 1 : symbol ? 0 : Number(minText);
      const max = symbol === '?' ? 1 : symbol || (comma && maxText === '') ? Infinity : comma ? Number(maxText) : min;
      i += text.length;
      if (source[i] === '?') i += 1; // lazy form: same cost
      if (max > 1 && lastAtom !== 'simple' && (lastAtom.hasQuantifier || lastAtom.hasAlternation)) {
        return 'a repeated group contains a quantifier or an alternation (catastrophic backtracking)';
      }
      if (min !== max) top.hasQuantifier = true;
      if (max === Infinity) unboundedRepeats += 1;
      else choices *= max - min + 1;
      lastAtom = null;
      continue;
    }
    lastAtom = 'simple';
    i += 1;
  }
  choices *= stack[0].branches;
  const anchored = source.startsWith('^') && stack[0].branches === 1 && !flags.includes('m');
  if (unboundedRepeats + (anchored ? 0 : 1) > MAX_BACKTRACKING_DEGREE) {
    return anchored
      ? 'more than two unbounded repeats (*, +, {n,})'
      : 'more than one unbounded repeat (*, +, {n,}) in a pattern not anchored with ^';
  }
  if (choices > MAX_BOUNDED_CHOICES) return 'too many optional parts and alternatives';
  return undefined;
}

/** Index just past the `]` closing the class that opens at `start`. */
function skipCharacterClass(source: string, start: number): number {
  let i = start + 1;
  while (i < source.length) {
    if (source[i] === '\\') i += 2;
    else if (source[i] === ']') return i + 1;
    else i += 1;
  }
  return i;
}

function show(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
