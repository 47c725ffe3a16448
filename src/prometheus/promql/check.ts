// The checks Prometheus 2.42 makes on a parsed PromQL tree (its checkAST: types of operands and
// arguments, vector matching, non-empty selectors), in its order so the first error is the one
// Prometheus reports; and the check of a regex matcher's RE2 pattern. parse.ts runs them after
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

/** A JavaScript RegExp with the meaning of Prometheus' fully anchored RE2 matcher pattern (validated). */
function anchored(pattern: string): RegExp {
  return new RegExp(`^(?:${translate(pattern)})$`);
}

class RegexpSyntax extends Error {}

const FLAG_GROUP = /^\(\?([imsU]*(?:-[imsU]*)?)([:)])/;
const REPEAT = /^\{(\d+)(,(\d*))?\}/;

/**
 * Rewrites the RE2 syntax that JavaScript reads otherwise or not at all (inline flags, `\A` `\z`
 * `\Q...\E` `\pN` `\C`, `\a`, octal and `\x{...}` escapes, a `]` first in a class, `(?P<name>`)
 * into JavaScript of the same shape, and refuses what RE2 refuses but JavaScript accepts
 * (lookarounds, backreferences, unknown escapes, repeat counts over 1000). Case-insensitive flags
 * are dropped: the result serves for validation and for matching the empty string.
 */
function translate(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    if (c === '\\') {
      const [js, length] = escape(pattern, i, inClass);
      out += js;
      i += length;
    } else if (inClass) {
      if (c === ']') inClass = false;
      else if (c === '[' && pattern.startsWith('[:', i)) {
        // A POSIX class such as [:alpha:] stands for one character.
        const end = pattern.indexOf(':]', i + 2);
        if (end > 0) {
          out += '\\w';
          i = end + 2;
          continue;
        }
      }
      out += c === '[' ? '\\[' : c;
      i++;
    } else if (c === '[') {
      inClass = true;
      out += c;
      i++;
      if (pattern[i] === '^') out += pattern[i++];
      if (pattern[i] === ']') {
        out += '\\]';
        i++;
      }
    } else if (c === '(' && pattern[i + 1] === '?') {
      const flags = FLAG_GROUP.exec(pattern.slice(i));
      if (flags && flags[1] !== '' && flags[1] !== '-') {
        out += flags[2] === ':' ? '(?:' : '';
        i += flags[0].length;
      } else if (pattern.startsWith('(?:', i)) {
        out += '(?:';
        i += 3;
      } else if (pattern.startsWith('(?P<', i)) {
        out += '(';
        i = pattern.indexOf('>', i) + 1 || pattern.length;
      } else throw new RegexpSyntax(`invalid or unsupported Perl syntax: \`${pattern.slice(i, i + 3)}\``);
    } else if (c === '{' && REPEAT.test(pattern.slice(i))) {
      const [text, min, , max] = REPEAT.exec(pattern.slice(i))!;
      if (Number(min) > 1000 || (max !== undefined && max !== '' && Number(max) > 1000)) throw new RegexpSyntax(`invalid repeat count: \`${text}\``);
      out += text;
      i += text.length;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** One escape at `pattern[i]` (a backslash): its JavaScript form and the length it spans. */
function escape(pattern: string, i: number, inClass: boolean): [string, number] {
  const c = pattern[i + 1];
  if (c === undefined) throw new RegexpSyntax('trailing backslash at end of expression: ``');
  const octal = /^[0-7]{1,3}/.exec(pattern.slice(i + 1))?.[0] ?? '';
  if (c === '0' || (c >= '1' && c <= '7' && octal.length > 1)) return [`\\u${parseInt(octal, 8).toString(16).padStart(4, '0')}`, 1 + octal.length];
  if (c === 'x') {
    const braced = /^\{([0-9a-fA-F]{1,8})\}/.exec(pattern.slice(i + 2));
    if (braced) return [`\\u${Math.min(parseInt(braced[1]!, 16), 0xffff).toString(16).padStart(4, '0')}`, 2 + braced[0].length];
    if (/^[0-9a-fA-F]{2}/.test(pattern.slice(i + 2))) return [pattern.slice(i, i + 4), 4];
    throw new RegexpSyntax(`invalid escape sequence: \`${pattern.slice(i, i + 4)}\``);
  }
  if (c === 'Q') {
    const end = pattern.indexOf('\\E', i + 2);
    const literal = pattern.slice(i + 2, end < 0 ? pattern.length : end);
    return [literal.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'), end < 0 ? pattern.length - i : end + 2 - i];
  }
  if (c === 'p' || c === 'P') {
    const name = /^\{[^}]*\}|^[A-Za-z]/.exec(pattern.slice(i + 2));
    if (!name) throw new RegexpSyntax(`invalid character class range: \`${pattern.slice(i, i + 3)}\``);
    return [inClass ? '\\w' : '[\\s\\S]', 2 + name[0].length];
  }
  if (c === 'a') return ['\\x07', 2];
  if (c === 'C') return [inClass ? '\\w' : '[\\s\\S]', 2];
  if (!inClass && c === 'A') return ['^', 2];
  if (!inClass && c === 'z') return ['$', 2];
  if ('fnrtvdDsSwW'.includes(c) || (!inClass && 'bB'.includes(c))) return [`\\${c}`, 2];
  if (c < '\x80' && !/[0-9A-Za-z]/.test(c)) return [`\\${c}`, 2];
  throw new RegexpSyntax(`invalid escape sequence: \`\\${c}\``);
}

/** Why Prometheus would refuse `pattern` as a regex matcher (Go's message, roughly), or null. */
export function regexpError(pattern: string): string | null {
  const full = `^(?:${pattern})$`;
  try {
    anchored(pattern);
    return null;
  } catch (err) {
    if (err instanceof RegexpSyntax) return err.message;
    const why = err instanceof Error ? err.message : String(err);
    if (/Unterminated group/.test(why)) return `missing closing ): \`${full}\``;
    if (/Unmatched '\)'/.test(why)) return `unexpected ): \`${full}\``;
    if (/Unterminated character class/.test(why)) return `missing closing ]: \`${pattern.slice(pattern.lastIndexOf('['))})$\``;
    if (/Nothing to repeat/.test(why)) return `missing argument to repetition operator: \`${full}\``;
    if (/out of order/.test(why)) return `invalid repeat count: \`${full}\``;
    return `invalid regular expression: \`${full}\``;
  }
}
