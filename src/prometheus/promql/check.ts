// What Prometheus 2.42 checks in a PromQL expression besides its grammar, with its messages: the
// values of literals (numbers, durations, strings, read as Go's strconv and prometheus/common
// read them), regex matchers (RE2 syntax, read as Go's regexp/syntax reads it), and the types of
// the parsed tree (its checkAST: operands and arguments, vector matching, non-empty selectors), in
// its order so the first error is the one Prometheus reports. parse.ts runs the type checks after
// building the tree, with the source positions of the expressions kept on the side.

import { typeOf, type BinaryExpr, type Expr, type LabelMatcher, type ValueType } from './ast.js';

/** Start offsets of expressions, and of the operator of each binary expression. */
export interface Positions {
  start: Map<Expr, number>;
  operator: Map<BinaryExpr, number>;
}

export type Fail = (position: number, what: string) => never;

/** Prometheus' words for the types in messages ("documented" types). */
const TYPE_NAMES: Record<ValueType, string> = { scalar: 'scalar', vector: 'instant vector', matrix: 'range vector', string: 'string' };

const COMPARISONS = new Set(['==', '!=', '>', '<', '>=', '<=']);
const SET_OPERATORS = new Set(['and', 'or', 'unless']);

/** Type-checks `expr` as checkAST does; fixes up `matching` (set operators, non-vector sides). */
export function checkTypes(expr: Expr, positions: Positions, fail: Fail): void {
  const at = (e: Expr) => positions.start.get(e) ?? 0;
  const expect = (e: Expr, want: ValueType, context: string) => {
    const got = check(e);
    if (got !== want) fail(at(e), `expected type ${TYPE_NAMES[want]} in ${context}, got ${TYPE_NAMES[got]}`);
  };

  function check(e: Expr): ValueType {
    switch (e.kind) {
      case 'aggregate':
        expect(e.expr, 'vector', 'aggregation expression');
        if (e.op === 'topk' || e.op === 'bottomk' || e.op === 'quantile') expect(e.param!, 'scalar', 'aggregation parameter');
        if (e.op === 'count_values') expect(e.param!, 'string', 'aggregation parameter');
        break;
      case 'binary':
        checkBinary(e);
        break;
      case 'call': {
        const { name, argTypes, variadic } = e.func;
        const n = e.args.length;
        if (variadic === 0 && n !== argTypes.length) fail(at(e), `expected ${argTypes.length} argument(s) in call to ${JSON.stringify(name)}, got ${n}`);
        const least = variadic > 0 ? argTypes.length - variadic : argTypes.length - 1;
        if (variadic !== 0 && n < least) fail(at(e), `expected at least ${least} argument(s) in call to ${JSON.stringify(name)}, got ${n}`);
        if (variadic > 0 && n > argTypes.length) fail(at(e), `expected at most ${argTypes.length} argument(s) in call to ${JSON.stringify(name)}, got ${n}`);
        e.args.forEach((arg, i) => expect(arg, argTypes[Math.min(i, argTypes.length - 1)]!, `call to function ${JSON.stringify(name)}`));
        break;
      }
      case 'paren':
        check(e.expr);
        break;
      case 'unary': {
        const t = check(e.expr);
        if (t !== 'scalar' && t !== 'vector') fail(at(e), `unary expression only allowed on expressions of type scalar or instant vector, got "${TYPE_NAMES[t]}"`);
        break;
      }
      case 'subquery': {
        // Prometheus prints the raw type name here ("got matrix instead").
        const t = check(e.expr);
        if (t !== 'vector') fail(at(e), `subquery is only allowed on instant vector, got ${t} instead`);
        break;
      }
      case 'matrixSelector':
        check(e.vector);
        break;
      case 'vectorSelector': {
        if (e.name !== null) {
          const other = e.matchers.slice(1).find((m) => m.name === '__name__');
          if (other) fail(at(e), `metric name must not be set twice: ${JSON.stringify(e.name)} or ${JSON.stringify(other.value)}`);
        } else if (e.matchers.every(matchesEmpty)) {
          // Selecting every series by a typo is refused.
          fail(at(e), 'vector selector must contain at least one non-empty matcher');
        }
        break;
      }
      case 'number':
      case 'string':
        break;
    }
    return typeOf(e);
  }

  function checkBinary(e: BinaryExpr): void {
    const lt = check(e.lhs);
    const rt = check(e.rhs);
    const opAt = positions.operator.get(e) ?? at(e);
    const comparison = COMPARISONS.has(e.op);
    const setOp = SET_OPERATORS.has(e.op);
    const m = e.matching;
    if (e.returnBool && !comparison) fail(opAt, 'bool modifier can only be used on comparison operators');
    if (comparison && !e.returnBool && lt === 'scalar' && rt === 'scalar') fail(opAt, 'comparisons between scalars must use BOOL modifier');
    if (m && setOp && m.card === 'one-to-one') m.card = 'many-to-many';
    if (m?.on) {
      const both = m.labels.find((l) => m.include.includes(l));
      if (both !== undefined) fail(opAt, `label ${JSON.stringify(both)} must not occur in ON and GROUP clause at once`);
    }
    if (lt !== 'scalar' && lt !== 'vector') fail(at(e.lhs), 'binary expression must contain only scalar and instant vector types');
    if (rt !== 'scalar' && rt !== 'vector') fail(at(e.rhs), 'binary expression must contain only scalar and instant vector types');
    if (lt !== 'vector' || rt !== 'vector') {
      if (m && m.labels.length > 0) fail(at(e), 'vector matching only allowed between instant vectors');
      e.matching = null;
    } else if (setOp && m && (m.card === 'one-to-many' || m.card === 'many-to-one')) {
      fail(at(e), `no grouping allowed for ${JSON.stringify(e.op)} operation`);
    }
    if ((lt === 'scalar' || rt === 'scalar') && setOp) fail(at(e), `set operator ${JSON.stringify(e.op)} not allowed in binary scalar expression`);
  }

  check(expr);
}

/** Whether a matcher accepts the empty value (an absent label). */
function matchesEmpty(m: LabelMatcher): boolean {
  switch (m.type) {
    case '=':
      return m.value === '';
    case '!=':
      return m.value !== '';
    case '=~':
      return anchored(m.value).test('');
    case '!~':
      return !anchored(m.value).test('');
  }
}

/** Why Prometheus would refuse `pattern` as a regex matcher (Go's regexp/syntax message), or null. */
export function regexpError(pattern: string): string | null {
  try {
    anchored(pattern);
    return null;
  } catch (err) {
    if (err instanceof RegexpSyntax) return err.message;
    return `invalid regular expression: \`^(?:${pattern})$\``;
  }
}

const recent = new Map<string, RegExp>();

/** A JavaScript RegExp of Prometheus' fully anchored matcher pattern; throws RegexpSyntax as Go would. */
function anchored(pattern: string): RegExp {
  // Each pattern is checked while parsing, then tried on "": the few last ones are kept.
  let re = recent.get(pattern);
  if (!re) {
    re = new RegExp(re2ToJs(`^(?:${pattern})$`));
    if (recent.size >= 16) recent.clear();
    recent.set(pattern, re);
  }
  return re;
}

class RegexpSyntax extends Error {}

const REPEAT = /^\{(\d+)(?:(,)(\d*))?\}/;
const FLAGS = /^\(\?[imsU]*(?:-[imsU]+)?[:)]/;
/** How far Go reads a `(?` group it refuses: to the first character that cannot continue flags. */
const BAD_GROUP = /^\(\?(?:[imsU]*-[imsU]*-|[imsU]*-[:)]|[imsU]*(?:-[imsU]*)?[^imsU:)-]|[imsU]*(?:-[imsU]*)?$)/;
const POSIX_CLASSES = new Set(['alnum', 'alpha', 'ascii', 'blank', 'cntrl', 'digit', 'graph', 'lower', 'print', 'punct', 'space', 'upper', 'word', 'xdigit']);
const ANY = '[\\s\\S]';

/** A character in a JavaScript pattern without the u flag (astral ones as a one-character stand-in). */
const jsChar = (code: number, inClass: boolean) => (code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : inClass ? '\\w' : ANY);

/** Whether Go knows a Unicode class name (\pL, \p{Greek}, \p{^Lu}): Any, a category, a script. */
function unicodeClass(name: string): boolean {
  const bare = name.startsWith('^') ? name.slice(1) : name;
  if (bare === 'Any') return true;
  const known = (source: string) => {
    try {
      new RegExp(source, 'u');
      return true;
    } catch {
      return false;
    }
  };
  return /^[A-Z][a-z]?$/.test(bare) ? known(`\\p{${bare}}`) : /^[A-Za-z_]+$/.test(bare) && known(`\\p{Script=${bare}}`);
}

/**
 * Reads an RE2 pattern as Go's regexp/syntax does, refusing what it refuses with its message, and
 * writes a JavaScript pattern of the same shape: inline flags dropped (the result serves for
 * validation and matching the empty string), classes such as \pL or [:alpha:] as one-character
 * stand-ins, assertions grouped so they may be repeated as RE2 allows.
 */
function re2ToJs(full: string): string {
  let i = 0;
  let out = '';
  let repeat: string | null = null; // the repetition just read, if the last thing was one
  const fail = (message: string): never => {
    throw new RegexpSyntax(message);
  };
  const hex = (text: string) => /^[0-9a-fA-F]+$/.test(text);

  // One escape at full[i] (a backslash); `range` when it is the upper end of a class range.
  const escape = (inClass: boolean, range = false): { js: string; code: number | null } => {
    const c = full[i + 1];
    if (c === undefined) fail('trailing backslash at end of expression: ``');
    const literal = (code: number, length: number) => {
      i += length;
      return { js: jsChar(code, inClass), code };
    };
    if (c >= '0' && c <= '7') {
      const digits = /^[0-7]{1,3}/.exec(full.slice(i + 1))![0];
      if (c !== '0' && digits.length === 1) fail(`invalid escape sequence: \`\\${c}\``);
      return literal(parseInt(digits, 8), 1 + digits.length);
    }
    if (c === 'x') {
      if (full[i + 2] === '{') {
        const close = full.indexOf('}', i + 3);
        const digits = full.slice(i + 3, close);
        if (close < 0 || !hex(digits) || parseInt(digits, 16) > 0x10ffff) fail(`invalid escape sequence: \`${full.slice(i, close < 0 ? full.length : close)}\``);
        return literal(parseInt(digits, 16), close + 1 - i);
      }
      if (!hex(full.slice(i + 2, i + 4)) || full.slice(i + 2, i + 4).length < 2) fail(`invalid escape sequence: \`${full.slice(i, i + 4)}\``);
      return literal(parseInt(full.slice(i + 2, i + 4), 16), 4);
    }
    const simple = 'afnrtv'.indexOf(c);
    if (simple >= 0) return literal([7, 12, 10, 13, 9, 11][simple]!, 2);
    if (c < '\x80' && !/[0-9A-Za-z]/.test(c)) return literal(c.charCodeAt(0), 2);
    if (!range && 'dDsSwW'.includes(c)) {
      i += 2;
      return { js: `\\${c}`, code: null };
    }
    if (!range && (c === 'p' || c === 'P')) {
      const name = full[i + 2] === '{' ? full.slice(i + 3, full.indexOf('}', i + 3)) : (full[i + 2] ?? '');
      const length = full[i + 2] === '{' ? name.length + 4 : 3;
      if (!unicodeClass(name) || (full[i + 2] === '{' && full.indexOf('}', i + 3) < 0)) fail(`invalid character class range: \`${full.slice(i, i + length)}\``);
      i += length;
      return { js: inClass ? '\\w' : ANY, code: null };
    }
    if (!inClass && 'bBAz'.includes(c)) {
      i += 2;
      return { js: c === 'A' ? '(?:^)' : c === 'z' ? '(?:$)' : `(?:\\${c})`, code: null };
    }
    return fail(`invalid escape sequence: \`\\${c}\``);
  };

  // A class [...] at full[i].
  const charClass = () => {
    const start = i;
    let js = '[';
    i++;
    if (full[i] === '^') js += full[i++];
    for (let first = true; ; first = false) {
      if (i >= full.length) fail(`missing closing ]: \`${full.slice(start)}\``);
      if (full[i] === ']' && !first) break;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(full.slice(i));
      if (posix) {
        if (!POSIX_CLASSES.has(posix[2]!)) fail(`invalid character class range: \`${posix[0]}\``);
        js += '\\w';
        i += posix[0].length;
        continue;
      }
      const rangeStart = i;
      const one = (range: boolean) => {
        if (full[i] === '\\') return escape(true, range);
        const code = full.codePointAt(i)!;
        i += code > 0xffff ? 2 : 1;
        return { js: jsChar(code, true), code };
      };
      const lo = one(false);
      js += lo.js;
      if (lo.code !== null && full[i] === '-' && full[i + 1] !== ']' && i + 1 < full.length) {
        i++;
        const hi = one(true);
        if (hi.code! < lo.code) fail(`invalid character class range: \`${full.slice(rangeStart, i)}\``);
        js += `-${hi.js}`;
      }
    }
    i++;
    return `${js}]`;
  };

  // Go's parser limits the height of the tree it builds and the product of nested counted
  // repeats; the pieces of each open group are kept for those checks.
  const frames: Frame[] = [{ alternatives: [[]], capture: false }];
  const pieces = () => frames.at(-1)!.alternatives.at(-1)!;
  const leaf = (literal: boolean) => pieces().push(literal ? LITERAL : SINGLE);
  while (i < full.length) {
    const c = full[i]!;
    const rest = c === '(' || c === '{' ? full.slice(i) : '';
    const quantifier = c === '*' || c === '+' || c === '?' ? c : c === '{' ? (REPEAT.exec(rest)?.[0] ?? null) : null;
    if (quantifier !== null) {
      const counts = REPEAT.exec(quantifier);
      const [min, max] = counts ? [Number(counts[1]), counts[2] === undefined ? Number(counts[1]) : counts[3] === '' ? -1 : Number(counts[3])] : [0, 0];
      if (counts && (min > 1000 || max > 1000 || (max >= 0 && max < min))) fail(`invalid repeat count: \`${quantifier}\``);
      let text = quantifier;
      if (full[i + quantifier.length] === '?') text += '?';
      if (repeat !== null) fail(`invalid nested repetition operator: \`${repeat}${text}\``);
      const last = pieces().pop();
      if (!last) fail(`missing argument to repetition operator: \`${text}\``);
      const counted: Repeat[] = counts ? [{ count: max < 0 ? min : max, within: last!.repeats }] : last!.repeats;
      if (counts && (min >= 2 || max >= 2) && !repeatIsValid(counted[0]!, 1000)) fail(`invalid repeat count: \`${text}\``);
      pieces().push({ height: last!.height + 1, repeats: counted, literal: false });
      out += text;
      i += text.length;
      repeat = text;
      continue;
    }
    repeat = null;
    if (c === '(') {
      let capture = true;
      if (rest.startsWith('(?')) {
        const flags = FLAGS.exec(rest);
        if (flags) {
          i += flags[0].length;
          if (flags[0].endsWith(')')) continue; // flags for what follows: nothing to repeat
          out += '(?:';
          capture = false;
        } else if (/^\(\?P<[A-Za-z0-9_]+>/.test(rest)) {
          i = full.indexOf('>', i) + 1;
          out += '(';
        } else {
          fail(`invalid or unsupported Perl syntax: \`${BAD_GROUP.exec(rest)?.[0] ?? rest.slice(0, 3)}\``);
        }
      } else {
        out += '(';
        i++;
      }
      frames.push({ alternatives: [[]], capture });
    } else if (c === ')') {
      if (frames.length === 1) fail(`unexpected ): \`${full}\``);
      const group = groupPiece(frames.pop()!);
      pieces().push(group);
      out += ')';
      i++;
    } else if (c === '|') {
      frames.at(-1)!.alternatives.push([]);
      out += '|';
      i++;
    } else if (c === '[') {
      out += charClass();
      leaf(false);
    } else if (c === '\\' && full[i + 1] === 'Q') {
      const end = full.indexOf('\\E', i + 2);
      const quoted = full.slice(i + 2, end < 0 ? full.length : end);
      for (const ch of quoted) out += jsChar(ch.codePointAt(0)!, false);
      i = end < 0 ? full.length : end + 2;
      if (quoted !== '') leaf(true);
    } else if (c === '\\') {
      const { js, code } = escape(false);
      out += js;
      leaf(code !== null);
    } else {
      const code = full.codePointAt(i)!;
      out += c === '^' || c === '$' ? `(?:${c})` : c === '.' ? '.' : jsChar(code, false);
      i += code > 0xffff ? 2 : 1;
      leaf(c !== '^' && c !== '$' && c !== '.');
    }
  }
  if (frames.length > 1) fail(`missing closing ): \`${full}\``);
  if (groupPiece(frames[0]!).height > 1000) fail(`expression nests too deeply: \`${full}\``);
  return out;
}

/** What Go's parser makes of a piece of pattern, as far as its limits go. */
interface Piece {
  /** Height of its tree (Go refuses over 1000). */
  height: number;
  /** The counted repeats ({n,m}) in it, outermost first (at most one: a group's stand for all of theirs). */
  repeats: Repeat[];
  /** A literal character: consecutive ones are one node to Go. */
  literal: boolean;
  /** A group without capture and alternatives: Go splices its sequence into the enclosing one. */
  spliced?: Sequence;
}

/** A sequence of pieces, summed up for splicing: Go merges literals across the seams. */
interface Sequence {
  units: number;
  highest: number;
  startsLiteral: boolean;
  endsLiteral: boolean;
}

interface Repeat {
  /** The count that weighs (the maximum, or the minimum when there is none). */
  count: number;
  within: Repeat[];
}

interface Frame {
  alternatives: Piece[][];
  capture: boolean;
}

/** Go's repeatIsValid: nested counted repeats multiply to at most `n` (iterative: they may nest deep). */
function repeatIsValid(repeat: Repeat, n: number): boolean {
  const pending: Array<[Repeat, number]> = [[repeat, n]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [{ count, within }, limit] = next;
    if (count === 0) continue;
    if (count > limit) return false;
    for (const inner of within) pending.push([inner, Math.floor(limit / count)]);
  }
  return true;
}

/** One node of Go's tree: a literal character, or another single thing (class, anchor, dot). */
const LITERAL: Piece = { height: 1, repeats: [], literal: true };
const SINGLE: Piece = { height: 1, repeats: [], literal: false };

function sequenceOf(alternative: readonly Piece[]): Sequence {
  const sequence: Sequence = { units: 0, highest: 0, startsLiteral: false, endsLiteral: false };
  for (const piece of alternative) {
    const part = piece.spliced ?? { units: 1, highest: piece.height, startsLiteral: piece.literal, endsLiteral: piece.literal };
    if (part.units === 0) continue;
    if (sequence.units === 0) sequence.startsLiteral = part.startsLiteral;
    sequence.units += part.units - (sequence.endsLiteral && part.startsLiteral ? 1 : 0);
    sequence.highest = Math.max(sequence.highest, part.highest);
    sequence.endsLiteral = part.endsLiteral;
  }
  return sequence;
}

function groupPiece(frame: Frame): Piece {
  const sequences = frame.alternatives.map(sequenceOf);
  const heights = sequences.map(({ units, highest }) => (units === 0 ? 1 : units === 1 ? highest : 1 + highest));
  const height = (heights.length > 1 ? 1 + heights.reduce((most, h) => Math.max(most, h), 0) : heights[0]!) + (frame.capture ? 1 : 0);
  // One repeat of count 1 stands for the group (it divides nothing): no copying of inner lists.
  const within = frame.alternatives.flatMap((alternative) => alternative.flatMap((piece) => piece.repeats));
  const repeats = within.length > 0 ? [{ count: 1, within }] : [];
  const spliced = !frame.capture && frame.alternatives.length === 1 ? sequences[0] : undefined;
  return { height, repeats, literal: false, ...(spliced ? { spliced } : {}) };
}

/** Go's %q of a string (strconv.Quote), enough for error messages. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

// Literal values, read as 2.42 reads them (Go's strconv and prometheus/common's model package).

const MAX_INT64 = 2n ** 63n - 1n;
const DURATION_PARTS = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const DAY_MS = 24 * 60 * 60 * 1000;
const UNIT_MS = [365 * DAY_MS, 7 * DAY_MS, DAY_MS, 60 * 60 * 1000, 60 * 1000, 1000, 1].map(BigInt);

/**
 * A duration in milliseconds by Prometheus' model.ParseDuration: integer counts of the units y w d
 * h m s ms, each at most once and in that order (`1h30m`), or a bare "0"; the total must fit
 * Go's time.Duration (nanoseconds in an int64, about 292 years). Throws with Prometheus' message.
 */
export function parseDuration(text: string): number {
  if (text === '0') return 0;
  if (text === '') throw new Error('empty duration string');
  const parts = DURATION_PARTS.exec(text);
  if (!parts) throw new Error(`not a valid duration string: ${goQuote(text)}`);
  let nanos = 0n;
  UNIT_MS.forEach((unitMs, i) => {
    const count = parts[i + 1];
    if (count !== undefined) nanos += BigInt(count) * unitMs * 1_000_000n;
  });
  if (nanos > MAX_INT64) throw new Error('duration out of range');
  return Number(nanos / 1_000_000n);
}

/** Go's strconv.ParseInt(text, 0, 64): hex, leading-0 octal or decimal; null when it fails. */
function parseGoInt(text: string): number | null {
  let value: bigint;
  if (/^0[xX][0-9a-fA-F]+$/.test(text)) value = BigInt(`0x${text.slice(2)}`);
  else if (/^0[0-7]+$/.test(text)) value = BigInt(`0o${text.slice(1)}`);
  else if (/^(0|[1-9][0-9]*)$/.test(text)) value = BigInt(text);
  else return null;
  return value > MAX_INT64 ? null : Number(value);
}

/** A NUMBER token's value as 2.42 computes it (an integer first, else a float; `010` is 8). */
export function parseNumber(text: string): number {
  const asInt = parseGoInt(text);
  if (asInt !== null) return asInt;
  const lower = text.toLowerCase();
  if (lower === 'inf') return Infinity;
  if (lower === 'nan') return NaN;
  if (/^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(text)) {
    const value = Number(text);
    if (Number.isFinite(value)) return value;
    throw new Error(`error parsing number: strconv.ParseFloat: parsing ${goQuote(text)}: value out of range`);
  }
  throw new Error(`error parsing number: strconv.ParseFloat: parsing ${goQuote(text)}: invalid syntax`);
}

function pushUtf8(bytes: number[], cp: number): void {
  if (cp < 0x80) bytes.push(cp);
  else if (cp < 0x800) bytes.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
  else if (cp < 0x10000) bytes.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
  else bytes.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
}

const SIMPLE_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, "'": 39, '"': 34 };

/**
 * The value of a STRING token the lexer accepted (quotes included). Go strings are bytes, and
 * `\xHH` and octal escapes give single bytes: the bytes are decoded as UTF-8 at the end, so
 * "\xe2\x82\xac" is "€" and a stray byte becomes U+FFFD.
 */
export function unquote(text: string): string {
  const body = text.slice(1, -1);
  if (text[0] === '`' || !body.includes('\\')) return body;
  const bytes: number[] = [];
  for (let i = 0; i < body.length; ) {
    if (body[i] !== '\\') {
      const cp = body.codePointAt(i)!;
      pushUtf8(bytes, cp);
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const e = body[i + 1]!;
    i += 2;
    if (e in SIMPLE_ESCAPES) bytes.push(SIMPLE_ESCAPES[e]!);
    else if (e >= '0' && e <= '7') {
      bytes.push(parseInt(body.slice(i - 1, i + 2), 8));
      i += 2;
    } else {
      const digits = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const cp = parseInt(body.slice(i, i + digits), 16);
      if (e === 'x') bytes.push(cp);
      else pushUtf8(bytes, cp);
      i += digits;
    }
  }
  return new TextDecoder().decode(Uint8Array.from(bytes));
}
