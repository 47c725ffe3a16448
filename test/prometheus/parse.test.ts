// The PromQL parser (src/prometheus/promql/parse.ts): the trees it builds, the errors it gives
// (Prometheus 2.42's words and positions), its bounds on nesting, and, when Debian's promtool
// 2.42 is installed, agreement with the real Prometheus parser on what is valid PromQL.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  FUNCTIONS,
  type AggregateExpr,
  type BinaryExpr,
  type Expr,
  type MatchType,
  type MatrixSelector,
  type SubqueryExpr,
  type ValueType,
  type VectorMatching,
  type VectorSelector,
} from '../../src/prometheus/promql/ast.js';
import { MAX_DEPTH, MAX_TOKENS, MAX_TREE_DEPTH, PromQLParseError, parseDuration, parsePromQL } from '../../src/prometheus/promql/parse.js';
import { prng } from '../support/prng.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

// Builders of expected trees.
const num = (value: number): Expr => ({ kind: 'number', value });
const str = (value: string): Expr => ({ kind: 'string', value });
const vs = (name: string | null, matchers: Array<[string, MatchType, string]> = [], extra: Partial<VectorSelector> = {}): VectorSelector => ({
  kind: 'vectorSelector',
  name,
  matchers: [...(name === null ? [] : [{ name: '__name__', type: '=' as const, value: name }]), ...matchers.map(([n, type, value]) => ({ name: n, type, value }))],
  offsetMs: 0,
  at: null,
  ...extra,
});
const mat = (vector: VectorSelector, rangeMs: number): MatrixSelector => ({ kind: 'matrixSelector', vector, rangeMs });
const sub = (expr: Expr, rangeMs: number, stepMs: number, extra: Partial<SubqueryExpr> = {}): SubqueryExpr => ({ kind: 'subquery', expr, rangeMs, stepMs, offsetMs: 0, at: null, ...extra });
const paren = (expr: Expr): Expr => ({ kind: 'paren', expr });
const neg = (expr: Expr, op: '+' | '-' = '-'): Expr => ({ kind: 'unary', op, expr });
const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', func: FUNCTIONS.get(name)!, args });
const agg = (op: AggregateExpr['op'], expr: Expr, extra: Partial<AggregateExpr> = {}): Expr => ({ kind: 'aggregate', op, expr, param: null, grouping: [], without: false, ...extra });
const ONE_TO_ONE: VectorMatching = { card: 'one-to-one', on: false, labels: [], include: [] };
const MANY_TO_MANY: VectorMatching = { ...ONE_TO_ONE, card: 'many-to-many' };
const bin = (op: BinaryExpr['op'], lhs: Expr, rhs: Expr, extra: Partial<BinaryExpr> = {}): Expr => ({ kind: 'binary', op, lhs, rhs, returnBool: false, matching: null, ...extra });
const x = vs('x');
const y = vs('y');

/** The message of the error parsePromQL throws (and that it is a PromQLParseError). */
function errorOf(input: string): PromQLParseError {
  try {
    parsePromQL(input);
  } catch (err) {
    assert.ok(err instanceof PromQLParseError, `${JSON.stringify(input)}: ${String(err)}`);
    return err;
  }
  assert.fail(`${JSON.stringify(input)} parsed`);
}

function assertTrees(cases: Array<[string, Expr]>): void {
  for (const [input, expected] of cases) assert.deepEqual(parsePromQL(input), expected, input);
}

test('number literals: decimal, exponent, hex, leading-0 octal, Inf and NaN in any case; a sign folds into the literal', () => {
  assertTrees([
    ['1', num(1)],
    ['1.5', num(1.5)],
    ['.5', num(0.5)],
    ['1.', num(1)],
    ['1e3', num(1000)],
    ['1.5E-3', num(0.0015)],
    ['1e-400', num(0)],
    ['0x1F', num(31)],
    ['0X1f', num(31)],
    ['0x1e5', num(485)],
    ['010', num(8)],
    ['09', num(9)],
    ['9223372036854775807', num(9223372036854775807)],
    ['Inf', num(Infinity)],
    ['+inf', num(Infinity)],
    ['-INF', num(-Infinity)],
    ['NaN', num(NaN)],
    ['-5', num(-5)],
    ['+5', num(5)],
    ['- 5', num(-5)],
    ['- -2', num(2)],
    ['-(2)', neg(paren(num(2)))],
    ['+(2)', neg(paren(num(2)), '+')],
  ]);
});

test('precedence: or < and/unless < comparisons < + - < * / % < ^ (right-associative); a sign applies to the whole power', () => {
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => vs(n)) as [VectorSelector, VectorSelector, VectorSelector, VectorSelector];
  assertTrees([
    ['-2^2', neg(bin('^', num(2), num(2)))],
    ['+2^2', neg(bin('^', num(2), num(2)), '+')],
    ['- -2^2', neg(neg(bin('^', num(2), num(2))))],
    ['1 + -2^2', bin('+', num(1), neg(bin('^', num(2), num(2))))],
    ['2 ^ -2 ^ 2', bin('^', num(2), neg(bin('^', num(2), num(2))))],
    ['-2 * 3', bin('*', num(-2), num(3))],
    ['2^3^2', bin('^', num(2), bin('^', num(3), num(2)))],
    ['-a^2', neg(bin('^', a, num(2)))],
    ['-a * b', bin('*', neg(a), b, { matching: ONE_TO_ONE })],
    ['a - b - c', bin('-', bin('-', a, b, { matching: ONE_TO_ONE }), c, { matching: ONE_TO_ONE })],
    ['a + b * c ^ d', bin('+', a, bin('*', b, bin('^', c, d, { matching: ONE_TO_ONE }), { matching: ONE_TO_ONE }), { matching: ONE_TO_ONE })],
    ['a / b % c', bin('%', bin('/', a, b, { matching: ONE_TO_ONE }), c, { matching: ONE_TO_ONE })],
    ['a > b + c', bin('>', a, bin('+', b, c, { matching: ONE_TO_ONE }), { matching: ONE_TO_ONE })],
    ['a and b > c', bin('and', a, bin('>', b, c, { matching: ONE_TO_ONE }), { matching: MANY_TO_MANY })],
    ['a or b and c unless d', bin('or', a, bin('unless', bin('and', b, c, { matching: MANY_TO_MANY }), d, { matching: MANY_TO_MANY }), { matching: MANY_TO_MANY })],
    ['(a or b) and c', bin('and', paren(bin('or', a, b, { matching: MANY_TO_MANY })), c, { matching: MANY_TO_MANY })],
    ['1 + 2 * 3', bin('+', num(1), bin('*', num(2), num(3)))],
    ['1 - -1', bin('-', num(1), num(-1))],
  ]);
});

test('strings: double and single quotes with Go escapes (bytes decoded as UTF-8), raw backquotes', () => {
  assertTrees([
    ['"abc"', str('abc')],
    ["'abc'", str('abc')],
    ['"\\a\\b\\f\\n\\r\\t\\v\\\\\\""', str('\x07\b\f\n\r\t\v\\"')],
    ["'\\''", str("'")],
    ['\'"\'', str('"')],
    ['"\'"', str("'")],
    ['"\\x41\\101\\u00e9\\U0001F600"', str('AAé😀')],
    ['"\\xe2\\x82\\xac"', str('€')],
    ['"\\xff"', str('\uFFFD')],
    ['"é😀"', str('é😀')],
    ['`a\\nb`', str('a\\nb')],
    ['`two\nlines`', str('two\nlines')],
    ['""', str('')],
  ]);
});

test('vector selectors: the name is the first matcher; keywords may be label names and (most) metric names', () => {
  assertTrees([
    ['up', vs('up')],
    ['up{}', vs('up')],
    ['job:rate5m:sum', vs('job:rate5m:sum')],
    ['{job="a"}', vs(null, [['job', '=', 'a']])],
    ['up{a="1", b!="2", c=~"3.*", d!~"4"}', vs('up', [['a', '=', '1'], ['b', '!=', '2'], ['c', '=~', '3.*'], ['d', '!~', '4']])],
    ['up{a="1",}', vs('up', [['a', '=', '1']])],
    ["up{a='x', b=`y\\z`}", vs('up', [['a', '=', 'x'], ['b', '=', 'y\\z']])],
    ['up{on="1", by="2", bool="3", offset="4", nan="5", inf="6", sum="7"}', vs('up', [['on', '=', '1'], ['by', '=', '2'], ['bool', '=', '3'], ['offset', '=', '4'], ['nan', '=', '5'], ['inf', '=', '6'], ['sum', '=', '7']])],
    ['{__name__="up"}', vs(null, [['__name__', '=', 'up']])],
    ['{__name__=~"up|down", job="a"}', vs(null, [['__name__', '=~', 'up|down'], ['job', '=', 'a']])],
    ['{a=~".+"}', vs(null, [['a', '=~', '.+']])],
    ['{a!=""}', vs(null, [['a', '!=', '']])],
    ['{a=~"(?i)x"}', vs(null, [['a', '=~', '(?i)x']])],
    ['{a=~"\\\\d+\\\\.\\\\z"}', vs(null, [['a', '=~', '\\d+\\.\\z']])],
    ['sum', vs('sum')],
    ['by', vs('by')],
    ['offset', vs('offset')],
    ['rate(Offset[5m] offset 1m)', call('rate', mat(vs('Offset', [], { offsetMs: M }), 5 * M))],
    ['and', vs('and')],
    ['start', vs('start')],
    ['rate', vs('rate')],
    ['up # a comment\n', vs('up')],
  ]);
});

test('range selectors, offsets (negative too) and @ in either order, on selectors and subqueries', () => {
  assertTrees([
    ['x[5m]', mat(x, 5 * M)],
    ['x[1h30m]', mat(x, H + 30 * M)],
    ['x[ 1y2w3d4h5m6s7ms ]', mat(x, 365 * D + 14 * D + 3 * D + 4 * H + 5 * M + 6 * S + 7)],
    ['x offset 5m', vs('x', [], { offsetMs: 5 * M })],
    ['x offset -5m', vs('x', [], { offsetMs: -5 * M })],
    ['x OFFSET - 1h', vs('x', [], { offsetMs: -H })],
    ['x[5m] offset 1m', mat(vs('x', [], { offsetMs: M }), 5 * M)],
    ['x @ 100', vs('x', [], { at: 100 * S })],
    ['x @ 1.5', vs('x', [], { at: 1500 })],
    ['x @ -1.5', vs('x', [], { at: -1500 })],
    ['x @ 0.0005', vs('x', [], { at: 1 })],
    ['x @ -0.0005', vs('x', [], { at: -1 })],
    ['x @ 0x10', vs('x', [], { at: 16 * S })],
    ['x @ start()', vs('x', [], { at: 'start' })],
    ['x @ END ()', vs('x', [], { at: 'end' })],
    ['x offset 1m @ 100', vs('x', [], { offsetMs: M, at: 100 * S })],
    ['x @ 100 offset 1m', vs('x', [], { offsetMs: M, at: 100 * S })],
    ['x[5m] @ 100 offset -1m', mat(vs('x', [], { offsetMs: -M, at: 100 * S }), 5 * M)],
    // 2.42 lets a range follow `@ start()` (only a numeric @ is refused before a range).
    ['x @ start() [5m]', mat(vs('x', [], { at: 'start' }), 5 * M)],
    ['x[5m:1m]', sub(x, 5 * M, M)],
    ['x[5m:]', sub(x, 5 * M, 0)],
    ['x[ 5m : 30s ]', sub(x, 5 * M, 30 * S)],
    ['x offset 1m [5m:1m]', sub(vs('x', [], { offsetMs: M }), 5 * M, M)],
    ['x[5m:1m] offset 1m @ 5', sub(x, 5 * M, M, { offsetMs: M, at: 5 * S })],
    ['x[5m:] @ end()', sub(x, 5 * M, 0, { at: 'end' })],
    ['rate(x[5m])[30m:1m]', sub(call('rate', mat(x, 5 * M)), 30 * M, M)],
    ['sum(x)[5m:]', sub(agg('sum', x), 5 * M, 0)],
    ['(x + y)[5m:]', sub(paren(bin('+', x, y, { matching: ONE_TO_ONE })), 5 * M, 0)],
    ['max_over_time(rate(x[1m])[5m:1m] offset 1h)', call('max_over_time', sub(call('rate', mat(x, M)), 5 * M, M, { offsetMs: H }))],
  ]);
});

test('offset, @, ranges and subqueries bind tighter than any operator, as in 2.42', () => {
  assertTrees([
    ['-x offset 5m', neg(vs('x', [], { offsetMs: 5 * M }))],
    ['x + y offset 5m', bin('+', x, vs('y', [], { offsetMs: 5 * M }), { matching: ONE_TO_ONE })],
    ['x * y @ 5', bin('*', x, vs('y', [], { at: 5 * S }), { matching: ONE_TO_ONE })],
    ['-x @ 5 offset 1m', neg(vs('x', [], { at: 5 * S, offsetMs: M }))],
    ['x or -y offset 1m', bin('or', x, neg(vs('y', [], { offsetMs: M })), { matching: MANY_TO_MANY })],
  ]);
  // And so these are errors about the operand, not about the whole expression.
  assert.equal(errorOf('x - y[5m]').message, '1:5: parse error: binary expression must contain only scalar and instant vector types');
  assert.equal(errorOf('x - y[5m:]').message, '1:5: parse error: binary expression must contain only scalar and instant vector types');
  assert.equal(errorOf('-x[5m]').message, '1:1: parse error: unary expression only allowed on expressions of type scalar or instant vector, got "range vector"');
});

/** A well-typed argument of each type. */
const ARG: Record<ValueType, [string, Expr]> = {
  scalar: ['1', num(1)],
  vector: ['x', x],
  matrix: ['x[5m]', mat(x, 5 * M)],
  string: ['"a"', str('a')],
};

test('every function of FUNCTIONS, with each argument of its type, optional and repeated ones too', () => {
  assert.ok(FUNCTIONS.size >= 40);
  for (const [name, def] of FUNCTIONS) {
    const args = def.argTypes.map((t) => ARG[t]);
    assertTrees([[`${name}(${args.map(([text]) => text).join(', ')})`, call(name, ...args.map(([, tree]) => tree))]]);
    const fewest = def.variadic > 0 ? def.argTypes.length - def.variadic : def.variadic < 0 ? def.argTypes.length - 1 : def.argTypes.length;
    if (fewest < args.length) assertTrees([[`${name}(${args.slice(0, fewest).map(([text]) => text).join(', ')})`, call(name, ...args.slice(0, fewest).map(([, tree]) => tree))]]);
    if (def.variadic < 0) assertTrees([[`${name}(${[...args, ARG.string, ARG.string].map(([text]) => text).join(', ')})`, call(name, ...[...args, ARG.string, ARG.string].map(([, tree]) => tree))]]);
    // One argument of the wrong type: the error names the function and both types.
    if (def.argTypes.length > 0) {
      const wrong: ValueType = def.argTypes[0] === 'vector' ? 'matrix' : 'vector';
      const text = `${name}(${[ARG[wrong], ...args.slice(1)].map(([t]) => t).join(', ')})`;
      const names: Record<ValueType, string> = { scalar: 'scalar', vector: 'instant vector', matrix: 'range vector', string: 'string' };
      assert.equal(errorOf(text).message, `1:${name.length + 2}: parse error: expected type ${names[def.argTypes[0]!]} in call to function "${name}", got ${names[wrong]}`);
    }
  }
});

test('every aggregation, with its parameter, by/without before or after, and by ()', () => {
  const plain = ['sum', 'avg', 'min', 'max', 'count', 'stddev', 'stdvar', 'group'] as const;
  for (const op of plain) {
    assertTrees([
      [`${op}(x)`, agg(op, x)],
      [`${op} by (a, b) (x)`, agg(op, x, { grouping: ['a', 'b'] })],
      [`${op}(x) by (a,)`, agg(op, x, { grouping: ['a'] })],
      [`${op} without (a) (x)`, agg(op, x, { grouping: ['a'], without: true })],
      [`${op}(x) without ()`, agg(op, x, { without: true })],
      [`${op} by () (x)`, agg(op, x)],
      [`${op.toUpperCase()} BY (a) (x)`, agg(op, x, { grouping: ['a'] })],
    ]);
  }
  assertTrees([
    ['topk(3, x)', agg('topk', x, { param: num(3) })],
    ['bottomk by (a) (scalar(y), x)', agg('bottomk', x, { param: call('scalar', y), grouping: ['a'] })],
    ['quantile(0.9, x) without (instance)', agg('quantile', x, { param: num(0.9), grouping: ['instance'], without: true })],
    ['count_values("value", x)', agg('count_values', x, { param: str('value') })],
    ['count_values by (job) ("v", x)', agg('count_values', x, { param: str('v'), grouping: ['job'] })],
    ['sum by (on, by, bool, offset, group_left, sum, start) (x)', agg('sum', x, { grouping: ['on', 'by', 'bool', 'offset', 'group_left', 'sum', 'start'] })],
    ['sum(rate(x[5m])) by (job)', agg('sum', call('rate', mat(x, 5 * M)), { grouping: ['job'] })],
  ]);
});

test('every binary operator: bool, on/ignoring, group_left/group_right, cardinality, and no matching unless both sides are vectors', () => {
  const arithmetic = ['+', '-', '*', '/', '%', '^'] as const;
  const comparisons = ['==', '!=', '>', '<', '>=', '<='] as const;
  const sets = ['and', 'or', 'unless'] as const;
  for (const op of [...arithmetic, ...comparisons]) {
    assertTrees([
      [`x ${op} y`, bin(op, x, y, { matching: ONE_TO_ONE })],
      [`x ${op} 1`, bin(op, x, num(1))],
      [`1 ${op} x`, bin(op, num(1), x)],
      [`x ${op} on(a, b) y`, bin(op, x, y, { matching: { card: 'one-to-one', on: true, labels: ['a', 'b'], include: [] } })],
      [`x ${op} ignoring(a) y`, bin(op, x, y, { matching: { card: 'one-to-one', on: false, labels: ['a'], include: [] } })],
      [`x ${op} on(a) group_left y`, bin(op, x, y, { matching: { card: 'many-to-one', on: true, labels: ['a'], include: [] } })],
      [`x ${op} on(a) group_left(b, c) y`, bin(op, x, y, { matching: { card: 'many-to-one', on: true, labels: ['a'], include: ['b', 'c'] } })],
      [`x ${op} ignoring(a) group_right(b) y`, bin(op, x, y, { matching: { card: 'one-to-many', on: false, labels: ['a'], include: ['b'] } })],
      [`x ${op} on() y`, bin(op, x, y, { matching: { card: 'one-to-one', on: true, labels: [], include: [] } })],
      // on() with no labels is allowed with a scalar side, and then there is no matching.
      [`x ${op} on() 1`, bin(op, x, num(1))],
    ]);
  }
  for (const op of comparisons) {
    assertTrees([
      [`x ${op} bool y`, bin(op, x, y, { returnBool: true, matching: ONE_TO_ONE })],
      [`1 ${op} bool 2`, bin(op, num(1), num(2), { returnBool: true })],
      [`x ${op} BOOL on(a) group_left y`, bin(op, x, y, { returnBool: true, matching: { card: 'many-to-one', on: true, labels: ['a'], include: [] } })],
    ]);
    assert.equal(errorOf(`1 ${op} 2`).message, '1:3: parse error: comparisons between scalars must use BOOL modifier');
  }
  for (const op of arithmetic) assert.equal(errorOf(`x ${op} bool y`).message, '1:3: parse error: bool modifier can only be used on comparison operators');
  for (const op of sets) {
    assertTrees([
      [`x ${op} y`, bin(op, x, y, { matching: MANY_TO_MANY })],
      [`x ${op.toUpperCase()} on(a) y`, bin(op, x, y, { matching: { card: 'many-to-many', on: true, labels: ['a'], include: [] } })],
      [`x ${op} ignoring(a) y`, bin(op, x, y, { matching: { card: 'many-to-many', on: false, labels: ['a'], include: [] } })],
    ]);
    assert.equal(errorOf(`x ${op} 1`).message, `1:1: parse error: set operator "${op}" not allowed in binary scalar expression`);
    assert.equal(errorOf(`x ${op} on(a) group_left y`).message, `1:1: parse error: no grouping allowed for "${op}" operation`);
    assert.equal(errorOf(`x ${op} bool y`).message, '1:3: parse error: bool modifier can only be used on comparison operators');
  }
});

test('parentheses, comments and lines', () => {
  assertTrees([
    ['(x)', paren(x)],
    ['((1))', paren(paren(num(1)))],
    ['# leading\nsum(\n  rate(x[5m]) # trailing\n)\n', agg('sum', call('rate', mat(x, 5 * M)))],
    ['x +\r\n\t1', bin('+', x, num(1))],
  ]);
});

test('parseDuration follows model.ParseDuration: ordered units, integers, a bare 0, at most about 292 years', () => {
  assert.equal(parseDuration('0'), 0);
  assert.equal(parseDuration('0s'), 0);
  assert.equal(parseDuration('1ms'), 1);
  assert.equal(parseDuration('90s'), 90 * S);
  assert.equal(parseDuration('1h30m'), H + 30 * M);
  assert.equal(parseDuration('2w'), 14 * D);
  assert.equal(parseDuration('1y'), 365 * D);
  assert.equal(parseDuration('1y1w1d1h1m1s1ms'), 365 * D + 7 * D + D + H + M + S + 1);
  assert.equal(parseDuration('292y'), 292 * 365 * D);
  for (const bad of ['', '1', '1.5h', '1m1h', '1s1s', '5M', '-1m', '1 m', 'm', '1hs', '1μs']) assert.throws(() => parseDuration(bad), Error, bad);
  assert.throws(() => parseDuration('1m1h'), { message: 'not a valid duration string: "1m1h"' });
  assert.throws(() => parseDuration('293y'), { message: 'duration out of range' });
  assert.throws(() => parseDuration(''), { message: 'empty duration string' });
});

test('errors: Prometheus 2.42 messages at its line:column (columns counted in characters)', () => {
  const cases: Array<[string, string, number]> = [
    ['', '1:1: parse error: no expression found in input', 0],
    ['  \n # only a comment', '1:1: parse error: no expression found in input', 0],
    ['\n# only a comment', '1:1: parse error: no expression found in input', 0],
    ['x !', "1:3: parse error: unexpected character after '!': '\uFFFD'", 2],
    ['x +', '1:4: parse error: unexpected end of input', 3],
    ['foo bar', '1:5: parse error: unexpected identifier "bar"', 4],
    ['x +\n  foo bar', '2:7: parse error: unexpected identifier "bar"', 10],
    ['"é😀" + x y', '1:10: parse error: unexpected identifier "y"', 10],
    ['sum(x) by (a) (x)', '1:15: parse error: unexpected "("', 14],
    ['sum(x', '1:6: parse error: unclosed left parenthesis', 5],
    ['x)', "1:3: parse error: unexpected right parenthesis ')'", 2],
    ['x[5m', '1:5: parse error: unclosed left bracket', 4],
    ['x]', "1:2: parse error: unexpected right bracket ']'", 1],
    ['x{a="b"', '1:8: parse error: unexpected end of input inside braces', 7],
    ['x{a="b"}{', '1:9: parse error: unexpected "{"', 8],
    ['x{{', "1:3: parse error: unexpected left brace '{'", 2],
    ['x $ y', "1:3: parse error: unexpected character: '$'", 2],
    ['x =~ y', "1:3: parse error: unexpected character after '=': '~'", 2],
    ['x ! y', "1:3: parse error: unexpected character after '!': ' '", 2],
    ['"a', '1:1: parse error: unterminated quoted string', 0],
    ['"a\nb"', '1:1: parse error: unterminated quoted string', 0],
    ['`a', '1:1: parse error: unterminated raw string', 0],
    ['"a\\q"', "1:1: parse error: unknown escape sequence U+0071 'q'", 0],
    ['"\\\'"', "1:1: parse error: unknown escape sequence U+0027 '''", 0],
    ['"\\x4"', `1:1: parse error: illegal character U+0022 '"' in escape sequence`, 0],
    ['"\\ud800"', '1:1: parse error: escape sequence is an invalid Unicode code point', 0],
    ['"\\U00110000"', '1:1: parse error: escape sequence is an invalid Unicode code point', 0],
    ['1_000', '1:1: parse error: bad number or duration syntax: "1"', 0],
    ['1e', '1:1: parse error: error parsing number: strconv.ParseFloat: parsing "1e": invalid syntax', 0],
    ['0x1.5', '1:1: parse error: error parsing number: strconv.ParseFloat: parsing "0x1.5": invalid syntax', 0],
    ['1e400', '1:1: parse error: error parsing number: strconv.ParseFloat: parsing "1e400": value out of range', 0],
    ['5m', '1:1: parse error: unexpected duration "5m"', 0],
    ['x + -5m', '1:6: parse error: unexpected duration "5m"', 5],
    ['x[5]', '1:3: parse error: missing unit character in duration', 2],
    ['x[]', '1:3: parse error: missing unit character in duration', 2],
    ['x[5M]', '1:3: parse error: bad duration syntax: "5"', 2],
    ['x[1y2y]', '1:3: parse error: bad duration syntax: "1y2"', 2],
    ['x[1s1m]', '1:3: parse error: not a valid duration string: "1s1m"', 2],
    ['x[5.5m]', '1:3: parse error: not a valid duration string: "5.5m"', 2],
    ['x[0s]', '1:3: parse error: duration must be greater than 0', 2],
    ['x[300y]', '1:3: parse error: duration out of range', 2],
    ['x[5m:1]', '1:6: parse error: unexpected number "1" in subquery selector, expected duration or "]"', 5],
    ['x[5m:0s]', '1:6: parse error: duration must be greater than 0', 5],
    ['x[5m:1m:]', "1:8: parse error: unexpected colon ':'", 7],
    ['x[5m][5m]', '1:6: parse error: ranges only allowed for vector selectors', 5],
    ['(x)[5m]', '1:4: parse error: ranges only allowed for vector selectors', 3],
    ['x offset 1m [5m]', '1:13: parse error: no offset modifiers allowed before range', 12],
    ['x @ 1 [5m]', '1:7: parse error: no @ modifiers allowed before range', 6],
    ['x offset 0s', '1:10: parse error: duration must be greater than 0', 9],
    ['x offset 0', '1:10: parse error: unexpected number "0" in offset, expected duration', 9],
    ['x offset +5m', '1:10: parse error: unexpected <op:+> in offset, expected duration', 9],
    ['x offset 5m offset 1m', '1:1: parse error: offset may not be set multiple times', 0],
    ['x[5m] offset 5m offset 1m', '1:1: parse error: offset may not be set multiple times', 0],
    ['time() offset 5m', '1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery', 0],
    ['(x) offset 5m', '1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery', 0],
    ['x @ 1 @ 2', '1:1: parse error: @ <timestamp> may not be set multiple times', 0],
    ['x @ start() @ end()', '1:1: parse error: @ <timestamp> may not be set multiple times', 0],
    ['1 @ 5', '1:1: parse error: @ modifier must be preceded by an instant vector selector or range vector selector or a subquery', 0],
    ['x @ 5m', '1:5: parse error: unexpected duration "5m" in @, expected timestamp', 4],
    ['x @ inf', '1:1: parse error: timestamp out of bounds for @ modifier: +Inf', 0],
    ['x @ -Inf', '1:1: parse error: timestamp out of bounds for @ modifier: -Inf', 0],
    ['x @ NaN', '1:1: parse error: timestamp out of bounds for @ modifier: NaN', 0],
    ['x @ 1e19', '1:1: parse error: timestamp out of bounds for @ modifier: 10000000000000000000.000000', 0],
    ['x @ 9223372036854775807', '1:1: parse error: timestamp out of bounds for @ modifier: 9223372036854775808.000000', 0],
    ['foo(x)', '1:1: parse error: unknown function with name "foo"', 0],
    ['RATE(x[5m])', '1:1: parse error: unknown function with name "RATE"', 0],
    ['x + holt_winters(x[5m], 0.5, 0.5)', '1:5: parse error: function "holt_winters" is not supported', 4],
    ['sum(x,)', '1:6: parse error: trailing commas not allowed in function call args', 5],
    ['rate(\n  x[5m],\n)', '2:8: parse error: trailing commas not allowed in function call args', 13],
    ['time(1)', '1:1: parse error: expected 0 argument(s) in call to "time", got 1', 0],
    ['rate()', '1:1: parse error: expected 1 argument(s) in call to "rate", got 0', 0],
    ['round()', '1:1: parse error: expected at least 1 argument(s) in call to "round", got 0', 0],
    ['round(x, 1, 2)', '1:1: parse error: expected at most 2 argument(s) in call to "round", got 3', 0],
    ['label_join(x, "a")', '1:1: parse error: expected at least 3 argument(s) in call to "label_join", got 2', 0],
    ['label_join(x, "a", ",", 1)', '1:25: parse error: expected type string in call to function "label_join", got scalar', 24],
    ['histogram_quantile(x, y)', '1:20: parse error: expected type scalar in call to function "histogram_quantile", got instant vector', 19],
    ['sum()', '1:1: parse error: no arguments for aggregate expression provided', 0],
    ['topk(x)', '1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, got 1', 0],
    ['sum(x, y)', '1:1: parse error: wrong number of arguments for aggregate expression provided, expected 1, got 2', 0],
    ['count_values(1, x)', '1:14: parse error: expected type string in aggregation parameter, got scalar', 13],
    ['quantile("a", x)', '1:10: parse error: expected type scalar in aggregation parameter, got string', 9],
    ['sum("a")', '1:5: parse error: expected type instant vector in aggregation expression, got string', 4],
    ['sum(x[5m])', '1:5: parse error: expected type instant vector in aggregation expression, got range vector', 4],
    ['x{"a"="b"}', '1:3: parse error: unexpected string "\\"a\\"" in label matching, expected identifier or "}"', 2],
    ['x{"a"}', '1:3: parse error: unexpected string "\\"a\\"" in label matching, expected identifier or "}"', 2],
    ['sum by ("a") (x)', '1:9: parse error: unexpected string "\\"a\\"" in grouping opts, expected label', 8],
    ['sum by (nan) (x)', '1:9: parse error: unexpected number "nan" in grouping opts, expected label', 8],
    ['x{a=~"(?=a)"}', '1:3: parse error: error parsing regexp: invalid or unsupported Perl syntax: `(?=`', 2],
    ['x{a=~"(?<!a)"}', '1:3: parse error: error parsing regexp: invalid or unsupported Perl syntax: `(?<`', 2],
    ['x{a=~"(a)\\\\1"}', '1:3: parse error: error parsing regexp: invalid escape sequence: `\\1`', 2],
    ['x{a!~"\\\\q"}', '1:3: parse error: error parsing regexp: invalid escape sequence: `\\q`', 2],
    ['x{a=~"(a"}', '1:3: parse error: error parsing regexp: missing closing ): `^(?:(a)$`', 2],
    ['x{a=~"a{1001}"}', '1:3: parse error: error parsing regexp: invalid repeat count: `{1001}`', 2],
    ['{}', '1:1: parse error: vector selector must contain at least one non-empty matcher', 0],
    ['{a=""}', '1:1: parse error: vector selector must contain at least one non-empty matcher', 0],
    ['{a=~".*"}', '1:1: parse error: vector selector must contain at least one non-empty matcher', 0],
    ['{a!~".+", b!="x"}', '1:1: parse error: vector selector must contain at least one non-empty matcher', 0],
    ['x{__name__="y"}', '1:1: parse error: metric name must not be set twice: "x" or "y"', 0],
    ['"a" + 1', '1:1: parse error: binary expression must contain only scalar and instant vector types', 0],
    ['1 + "a"', '1:5: parse error: binary expression must contain only scalar and instant vector types', 4],
    ['-"a"', '1:1: parse error: unary expression only allowed on expressions of type scalar or instant vector, got "string"', 0],
    ['x[5m:][10m:]', '1:1: parse error: subquery is only allowed on instant vector, got matrix instead', 0],
    ['time()[5m:]', '1:1: parse error: subquery is only allowed on instant vector, got scalar instead', 0],
    ['x + on(a) 1', '1:1: parse error: vector matching only allowed between instant vectors', 0],
    ['x + on(a) group_left(a) y', '1:3: parse error: label "a" must not occur in ON and GROUP clause at once', 2],
    ['atan2', '1:1: parse error: unexpected <op:atan2>', 0],
    ['bool', '1:1: parse error: unexpected <bool>', 0],
  ];
  for (const [input, message, position] of cases) {
    const err = errorOf(input);
    assert.equal(err.message, message, input);
    assert.equal(err.position, position, input);
  }
});

test('what lezer-promql parses but Prometheus 2.42 has not is an error naming it', () => {
  const cases: Array<[string, string]> = [
    ['x[5m] anchored', '1:7: parse error: unexpected identifier "anchored" (the anchored modifier is not supported)'],
    ['x[5m] smoothed', '1:7: parse error: unexpected identifier "smoothed" (the smoothed modifier is not supported)'],
    ['x + fill(0) y', '1:5: parse error: unknown function with name "fill"'],
    ['x + fill_left(0) fill_right(1) y', '1:5: parse error: unknown function with name "fill_left"'],
    ['x[5m+1m]', '1:5: parse error: unexpected <op:+> in subquery or range, expected ":" or "]" (duration arithmetic is not supported)'],
    ['x[5m*2:1m]', '1:5: parse error: unexpected <op:*> in subquery or range, expected ":" or "]" (duration arithmetic is not supported)'],
    ['x[5m:-1m]', '1:6: parse error: unexpected <op:-> in subquery selector, expected duration or "]" (duration arithmetic is not supported)'],
    ['x[5m:1m*2]', '1:8: parse error: unexpected <op:*> in subquery selector, expected "]" (duration arithmetic is not supported)'],
    ['x[(5m)]', '1:3: parse error: missing unit character in duration'],
    ['x[step()]', '1:3: parse error: bad duration syntax: "st"'],
    ['x offset (5m)', '1:10: parse error: unexpected "(" in offset, expected duration'],
    ['x offset - -5m', '1:12: parse error: unexpected <op:-> in offset, expected duration'],
    ['x offset step()', '1:10: parse error: unexpected identifier "step" in offset, expected duration'],
    ['x offset min_of(1m, 2m)', '1:10: parse error: unexpected identifier "min_of" in offset, expected duration'],
    ['limitk(1, x)', '1:1: parse error: unknown function with name "limitk"'],
    ['limit_ratio(0.5, x)', '1:1: parse error: unknown function with name "limit_ratio"'],
    ['limitk by (a) (1, x)', '1:1: parse error: aggregation "limitk" is not supported'],
    ['info(x)', '1:1: parse error: unknown function with name "info"'],
    ['mad_over_time(x[5m])', '1:1: parse error: unknown function with name "mad_over_time"'],
    ['sort_by_label(x, "a")', '1:1: parse error: unknown function with name "sort_by_label"'],
    ['start()', '1:6: parse error: unexpected "("'],
    ['x </ y', '1:4: parse error: unexpected <op:/> (the </ operator is not supported)'],
    ['x >/ y', '1:4: parse error: unexpected <op:/> (the >/ operator is not supported)'],
    ['x atan2 y', '1:3: parse error: the atan2 operator is not supported'],
    ['predict_linear(x[5m], 60)', '1:1: parse error: function "predict_linear" is not supported'],
  ];
  for (const [input, message] of cases) assert.equal(errorOf(input).message, message, input);
});

test(`nesting deeper than ${MAX_DEPTH} levels is refused quickly, never overflowing the stack`, () => {
  const deepest = `${'('.repeat(MAX_DEPTH - 1)}x${')'.repeat(MAX_DEPTH - 1)}`;
  let tree = parsePromQL(deepest);
  for (let i = 1; i < MAX_DEPTH; i++) tree = (tree as { expr: Expr }).expr;
  assert.deepEqual(tree, x);
  assert.ok(parsePromQL(`${'x + '.repeat(200)}x`));
  // Wide is not deep: many arguments, labels or matchers are no nesting.
  assert.equal((parsePromQL(`label_join(x, "a", ","${', "b"'.repeat(20_000)})`) as { args: Expr[] }).args.length, 20_003);
  assert.equal((parsePromQL(`sum by (${Array.from({ length: 5000 }, (_, i) => `l${i}`).join(', ')}) (x)`) as AggregateExpr).grouping.length, 5000);

  const tooDeep = `expression nested deeper than ${MAX_DEPTH} levels`;
  const tooMany = `expression too large: more than ${MAX_TOKENS} tokens`;
  const tooLarge = `expression too large: it may nest more than ${MAX_TREE_DEPTH} levels`;
  // [input, error, milliseconds it may take at most (generous: tests run side by side)]
  const huge: Array<[string, string, number]> = [
    ['('.repeat(1 << 20), tooDeep, 500],
    [`${'abs('.repeat(1 << 18)}x${')'.repeat(1 << 18)}`, tooDeep, 500],
    [')'.repeat(1 << 20), "unexpected right parenthesis ')'", 500],
    ['{'.repeat(1 << 20), "unexpected left brace '{'", 500],
    [`${'-'.repeat(1 << 20)}x`, tooLarge, 500],
    [`${'x + '.repeat(1 << 18)}x`, tooLarge, 500],
    [`${'x ^ '.repeat(1 << 18)}x`, tooLarge, 500],
    [`x${' offset 1m'.repeat(1 << 16)}`, tooLarge, 500],
    [`x${'[1m]'.repeat(1 << 16)}`, tooLarge, 500],
    [`x${' anchored'.repeat(1 << 16)}`, tooLarge, 500],
    [`${'(x ^ '.repeat(200)}${'x ^ '.repeat(1000)}`, tooLarge, 500],
    [`label_join(x, "a", ","${', "b"'.repeat(100_000)})`, tooMany, 3000],
    [`${'-'.repeat(900)}x`, tooDeep, 3000],
    [`${'x ^ '.repeat(500)}x`, tooDeep, 3000],
    [`x${' offset 1m'.repeat(500)}`, tooDeep, 3000],
    [`x${'[1m]'.repeat(900)}`, tooDeep, 3000],
  ];
  for (const [input, what, bound] of huge) {
    const started = performance.now();
    const err = errorOf(input);
    const took = performance.now() - started;
    assert.ok(err.message.endsWith(`parse error: ${what}`), `${input.slice(0, 12)}...: ${err.message}`);
    assert.ok(took < bound, `${input.slice(0, 12)}... took ${took.toFixed(0)} ms`);
  }
  assert.equal(errorOf(`${'x + '.repeat(MAX_DEPTH)}x`).message, `1:1: parse error: ${tooDeep}`);
});

/** Regex matchers: RE2 syntax as Go's regexp/syntax reads it, and which ones match the empty string. */
const REGEXPS = [
  'a|b', '(?i)abc', '(?i:a)b', '(?-i)a', '(?is)a', '(?U)a*', '(?x)a', '(?P<name>a)', '(?<name>a)', '(?:a)', '(?=a)', '(?!a)', '(?<=a)', '(?<!a)', '(?#c)', '(?>a)',
  String.raw`\1`, String.raw`(a)\1`, String.raw`\0`, String.raw`\012`, String.raw`\8`, String.raw`\x41`, String.raw`\x4`, String.raw`\x{41}`, String.raw`\x{110000}`,
  String.raw`\u0041`, String.raw`\a\f\t\n\r\v`, String.raw`\e`, String.raw`\cA`, String.raw`\d\D\s\S\w\W`, String.raw`\b\B`, String.raw`\A\z`, String.raw`\Z`,
  String.raw`\pL`, String.raw`\p{Greek}`, String.raw`\p{^Greek}`, String.raw`\p{Foo}`, String.raw`\PL`, String.raw`\P{Lu}`, String.raw`\pX`, String.raw`\p{Any}`, String.raw`\C`,
  String.raw`\Q.*\E`, String.raw`\Qab`, String.raw`\Q\E*`, String.raw`\k<n>`, String.raw`\-\.\/\ \_`, String.raw`\é`, '[a-z]', '[]a]', '[^]a]', '[a', '[z-a]', '[a-]', '[-a]',
  '[[:alpha:]]', '[[:^digit:]x]', '[[:foo:]]', String.raw`[\d]`, String.raw`[\b]`, String.raw`[\pL]`, String.raw`[a-\d]`, String.raw`[\d-z]`, String.raw`[\Q]\E]`, '[é-ü]',
  'a{2}', 'a{2,}', 'a{2,3}', 'a{,3}', 'a{3,2}', 'a{1000}', 'a{1001}', 'a{0,1001}', '{', 'a{', '}', ']', '*', '+a', 'a**', 'a*?', 'a??', 'a*+', 'x++', 'a{2}{3}', 'a{2}*',
  '(a{1000}){1000}', '(a{10}){100}', '(a{10}){101}', '(a{10,}){100}', '(a{0}){1000}', '(?:(?:a{10}){10}){11}', '(a{1,3}){334}?', '(a{2}|b{500}){2}', '(a{2}|b{501}){2}',
  `${'('.repeat(998)}a${')'.repeat(998)}`, `${'('.repeat(999)}a${')'.repeat(999)}`, `${'(?:a|'.repeat(499)}${')'.repeat(499)}`, `${'(?:a|'.repeat(500)}${')'.repeat(500)}`,
  '^*', '$*', String.raw`\b*`, '(*)', '(', ')', '()', '(|)', '|', '^$', '.*', '\\', 'a\\', '(?i', '(?', '(?)', '(?i-)', '(?-)', '(?i)(?-i)', 'é',
];

// Expressions given to the real Prometheus parser. It must accept exactly the ones this parser
// accepts, but for KNOWN_DEVIATIONS; rejected ones must have Prometheus' message, but for
// OWN_WORDING (Prometheus' yacc messages name the grammar rule, which lezer's tree does not).
const ORACLE: string[] = [
  // Literals and lexing.
  '1', '-1', '+1', '1.', '.5', '1e3', '1E-3', '0x1f', '0X1F', '010', '09', 'Inf', '-inf', 'NaN', '1e-400', '1e400', '1e', '0x', '0x1.5', '1_000', '5m', '1s1m',
  '"a"', "'a'", '`a`', '"\\n\\t\\x41\\101\\u00e9\\U0001F600"', "'\\''", '"\\\'"', '"a\\q"', '"\\x4"', '"\\ud800"', '"a', '`a', "'a", '"é"',
  '# comment only', 'x # comment', '# c\nx', 'x $', 'x ! y', 'x =~ y', 'x )', 'x ]', '[', 'x{{', 'x{a="b"', 'x{a="b"}{', 'x{a!b}', 'x{a:b="c"}', 'x{1="a"}',
  // Selectors.
  'x', 'x{}', '{}', 'a:b:c', ':a', 'x{a="b"}', 'x{a="b",}', '{a="b"}', '{a=""}', '{a!=""}', '{a=~".*"}', '{a=~".+"}', '{a!~".*"}', '{a!~".+"}',
  'x{a=~"(?i)b"}', 'x{a=~"(?i:b)c"}', 'x{a=~"(?=b)"}', 'x{a=~"(?!b)"}', 'x{a=~"(?<=b)"}', 'x{a=~"(?P<n>b)"}', 'x{a=~"\\\\1"}', 'x{a=~"(b)\\\\1"}', 'x{a=~"\\\\q"}',
  'x{a=~"\\\\d\\\\w\\\\s\\\\.\\\\-"}', 'x{a=~"\\\\z"}', 'x{a=~"\\\\Aa"}', 'x{a=~"a{2,3}"}', 'x{a=~"a{1001}"}', 'x{a=~"(b"}', 'x{a=~"b)"}', 'x{a=~"[b"}', 'x{a=~"*"}', 'x{a=~"a**"}',
  'x{a=~"[]a]"}', 'x{a=~"[[:alpha:]]"}', 'x{a=~"\\\\pL"}', 'x{a=~"\\\\p{Greek}"}', 'x{a=~"\\\\Q.*\\\\E"}', 'x{a=~"\\\\x41\\\\x{263a}"}', 'x{a=~"\\\\012"}',
  'x{__name__="y"}', '{__name__="y"}', 'x{__name__=~"y"}', 'x{"a"="b"}', 'x{"a"}', 'x{a}', 'x{a=b}', 'x{on="a", by="b", bool="c", nan="d", inf="e", offset="f"}',
  'offset', '(offset)', 'rate(offset[5m])', 'x + offset', 'x > bool offset', 'offset offset 5m', 'x offset offset', 'offset(x)', 'x @ offset', 'x @ y', 'x offset y', 'x + on x', 'x + ignoring', 'sum without x', 'group_rightby0.5', 'x.5', 'sum', 'avg', 'by', 'without', 'and', 'or', 'unless', 'start', 'end', 'group', 'topk', 'rate', 'time', 'bool', 'on', 'ignoring', 'group_left', 'atan2', 'inf', 'nan', 'anchored',
  // Ranges, offsets, @ and subqueries.
  'x[5m]', 'x[1h30m]', 'x[ 5m ]', 'x[5]', 'x[]', 'x[5m', 'x[0s]', 'x[5.5m]', 'x[5M]', 'x[1y2y]', 'x[300y]', 'x[1y2w3d4h5m6s7ms]', 'x[5m+1m]', 'x[(5m)]', 'x[-5m]',
  'x[5m][5m]', '(x)[5m]', 'rate(x[5m])[5m]', 'x offset 1m [5m]', 'x @ 1 [5m]', 'x @ start() [5m]', 'x[5m:1m]', 'x[5m:]', 'x[5m:1]', 'x[5m:0s]', 'x[5m:1m:]',
  'x[5m:-1m]', 'x[5m:1m+1m]', '(x[5m:])[10m:]', 'x[1s:1s][1m:]', '1[5m:]', '"a"[5m:]', 'time()[5m:]', 'sum(rate(x[5m]))[5m:]', 'x offset 1m [5m:1m]',
  'x offset 5m', 'x offset -5m', 'x offset - 5m', 'x offset +5m', 'x offset 0', 'x offset 0s', 'x offset 5', 'x offset (5m)', 'x offset - -5m', 'x offset 5m offset 1m',
  'x[5m] offset 5m', 'x[5m] offset 5m offset 1m', 'x[5m:1m] offset 1m', 'time() offset 5m', '(x) offset 5m', '1 offset 5m', 'sum(x) offset 5m',
  'x @ 1', 'x @ -1.5', 'x @ +2', 'x @ 0x10', 'x @ 1e3', 'x @ 5m', 'x @ inf', 'x @ nan', 'x @ 1e19', 'x @ 9223372036854775807', 'x @ start()', 'x @ end()', 'x @ START()',
  'x @ start', 'x @ 1 @ 2', 'x @ start() @ 1', '1 @ 5', 'sum(x) @ 5', 'x[5m] @ 5', 'x[5m:] @ end()', 'x offset 1m @ 5', 'x @ 5 offset 1m', 'x[5m:1m] offset 1m @ 5',
  '-x offset 5m', 'a + b offset 5m', 'a * b @ 5', 'a - b[5m:]', 'a - b[5m]', '-x[5m]', '-x @ 5',
  // Calls.
  'foo(x)', 'foo (x)', 'RATE(x[5m])', 'Rate(x[5m])', 'rate(x[5m],)', 'sum(x,)', 'rate(x)', 'rate()', 'rate(x[5m], x[5m])', 'time()', 'time(1)', 'round(x)',
  'round(x, 5)', 'round(x, 1, 2)', 'round()', 'label_join(x, "a", ",")', 'label_join(x, "a", ",", "b", "c")', 'label_join(x, "a")', 'label_join(x, "a", ",", 1)',
  'label_replace(x, "a", "$1", "b", "(.*)")', 'label_replace(x, "a", "$1", "b")', 'histogram_quantile(0.9, x)', 'histogram_quantile(x, y)', 'vector(1)', 'vector(x)',
  'scalar(x)', 'scalar(x) + 1', 'scalar(x) > 1', 'scalar(x) > bool 1', 'time() + x', 'absent(nonexistent{job="a"})', 'clamp(x, 0, 1)', 'quantile_over_time(0.5, x[5m])',
  'start()', 'step()', 'x offset step()', 'x[step()]', 'x offset min_of(1m, 2m)', 'info(x)', 'limitk(1, x)', 'mad_over_time(x[5m])', 'sort_by_label(x, "a")', 'first_over_time(x[5m])',
  // Aggregations.
  'sum(x)', 'sum by (a) (x)', 'sum(x) by (a)', 'sum without (a) (x)', 'sum(x) without (a,)', 'sum by () (x)', 'SUM BY (A) (x)', 'sum by (a) by (b) (x)', 'sum by x',
  'sum(x) by (a) (x)', 'sum()', 'sum(x, y)', 'topk(3, x)', 'topk(x)', 'topk(1, x, y)', 'topk("a", x)', 'bottomk(1, x)', 'quantile(0.5, x)', 'quantile("a", x)',
  'count_values("a", x)', 'count_values(1, x)', 'sum("a")', 'sum(1)', 'sum(x[5m])', 'avg(x)', 'min(x)', 'max(x)', 'count(x)', 'stddev(x)', 'stdvar(x)', 'group(x)',
  'sum by (on, by, bool, offset, sum, start) (x)', 'sum by (nan) (x)', 'sum by (inf) (x)', 'sum by ("a") (x)', 'sum by (a:b) (x)', 'limitk by (a) (1, x)',
  // Operators.
  '1 + 1', '1 == 1', '1 == bool 1', 'x == bool y', 'x + bool y', 'x and 1', '1 and 1', 'x and y', 'x or on(a) y', 'x unless ignoring(a) y', 'x and on(a) group_left y',
  'x + on(a) 1', 'x + on() 1', 'x + on(a) group_left(a) y', 'x + ignoring(a) group_left(a) y', 'x + on(a) group_left(b) y', 'x + on(a) group_right y',
  'x + group_left y', 'x / on(a) group_left(b, c) y', '"a" + 1', '1 + "a"', '-"a"', '-(1)', '- -1', '-2^2', '2^3^2', 'x </ y', 'x atan2 y', 'x + fill(0) y',
  'x[5m] anchored', 'x smoothed', 'x + y z', 'x +', '(x', 'x)', '()', '(1 + 2) * 3', '-x * y', 'x > bool on(a) group_left y', 'x == on() y', 'atan2(x)',
  'x @ (1)', 'x offset', 'sum by', 'x @', 'rate(\n  x[5m],\n)', 'x +\n  foo bar', 'sum(\n  x # c\n  y)', '# c\n\n  x offset 0',
  ...REGEXPS.map((re) => `x{a=~${JSON.stringify(re)}}`),
  '{a=~"(?i)"}', '{a=~"a?"}', '{a=~"\\\\b"}', '{a=~"^$"}', '{a!~""}', '{a=~"[^a]*"}', '{a!~"a+"}', '{a=~"(?s).+"}', '{a=~"\\\\Q\\\\E"}', '{a=~"|a"}',
  // Known deviations.
  'holt_winters(x[5m], 0.5, 0.5)', 'predict_linear(x[5m], 60)', 'sgn(x)', 'day_of_month()',
];

/** Accepted by Prometheus 2.42, refused here on purpose: this engine lacks atan2 and these functions. */
const KNOWN_DEVIATIONS = new Set(['x atan2 y', 'holt_winters(x[5m], 0.5, 0.5)', 'predict_linear(x[5m], 60)', 'sgn(x)', 'day_of_month()']);
/** Refused by both, where this parser's message differs from 2.42's. */
const OWN_WORDING = new Set([
  'x[5m+1m]', 'x[5m:-1m]', 'x[5m:1m+1m]', 'x </ y', 'x[5m] anchored', 'x smoothed',
  'limitk by (a) (1, x)', 'sum by (a) by (b) (x)', 'atan2(x)',
  'sum(\n  x # c\n  y)',
]);

const promtool = '/usr/bin/promtool';
const needsPromtool = { skip: fs.existsSync(promtool) ? false : `${promtool} is not installed` };

/** promtool's parse error for each expression it refuses, by index. */
function promtoolErrors(exprs: readonly string[]): Map<number, string> {
  // One group per expression in one rules file: promtool reports every failing group.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'promql-oracle-'));
  const file = path.join(dir, 'rules.yml');
  fs.writeFileSync(file, `groups:\n${exprs.map((e, i) => `- name: g${i}\n  rules:\n  - record: r\n    expr: ${JSON.stringify(e)}\n`).join('')}`);
  let stderr = '';
  try {
    execFileSync(promtool, ['check', 'rules', '--lint=none', file], { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 28 });
  } catch (err) {
    stderr = String((err as { stderr: Buffer }).stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const errors = new Map<number, string>();
  for (const m of stderr.matchAll(/group "g(\d+)", rule 1, "r": could not parse expression: (.*)/g)) errors.set(Number(m[1]), m[2]!);
  return errors;
}

/** Our error message, or null when the expression parses. */
function ourError(expr: string): string | null {
  try {
    parsePromQL(expr);
    return null;
  } catch (err) {
    assert.ok(err instanceof PromQLParseError, `${JSON.stringify(expr)}: ${String(err)}`);
    return err.message;
  }
}

test('accepts exactly what Prometheus 2.42 (promtool check rules) accepts, with its messages', needsPromtool, () => {
  const exprs = [...new Set(ORACLE)];
  const prometheus = promtoolErrors(exprs);
  assert.ok(prometheus.size > 100 && prometheus.size < exprs.length - 100, `promtool refused ${prometheus.size} of ${exprs.length}`);
  const disagreements: string[] = [];
  const wording: string[] = [];
  exprs.forEach((expr, i) => {
    const ours = ourError(expr);
    const theirs = prometheus.get(i) ?? null;
    const deviation = KNOWN_DEVIATIONS.has(expr);
    if ((ours === null) !== (theirs === null) !== deviation) disagreements.push(`${expr}: prometheus ${theirs ?? 'accepts'}, ours ${ours ?? 'accepts'}${deviation ? ' (a known deviation)' : ''}`);
    if (ours !== null && theirs !== null && ours !== theirs && !OWN_WORDING.has(expr)) wording.push(`${expr}: prometheus "${theirs}", ours "${ours}"`);
    if (ours !== null && theirs !== null && ours === theirs && OWN_WORDING.has(expr)) wording.push(`${expr}: same wording now, out of OWN_WORDING`);
  });
  assert.deepEqual(disagreements, []);
  assert.deepEqual(wording, []);
});

/** Whether promtool and this parser accept the same of `exprs`, and refuse the others at the same line:column. */
function comparePositions(exprs: readonly string[]): string[] {
  const prometheus = promtoolErrors(exprs);
  assert.ok(prometheus.size > exprs.length / 2 && prometheus.size < exprs.length, `promtool refused ${prometheus.size} of ${exprs.length}`);
  const where = (message: string | null) => message?.split(' parse error: ')[0] ?? 'accepts';
  return exprs.flatMap((expr, i) => {
    const ours = ourError(expr);
    const theirs = prometheus.get(i) ?? null;
    return where(ours) === where(theirs) ? [] : [`${JSON.stringify(expr)}: prometheus ${theirs ?? 'accepts'}, ours ${ours ?? 'accepts'}`];
  });
}

test('random soups of tokens and of characters: Prometheus 2.42 and this parser accept the same ones, and fault the same place', needsPromtool, () => {
  const random = prng(42);
  const soup = (pieces: readonly string[], most: number, space: number) => {
    let expr = '';
    for (let n = 1 + Math.floor(random() * most); n > 0; n--) expr += (random() < space ? ' ' : '') + pieces[Math.floor(random() * pieces.length)]!;
    return expr.trim() || 'x';
  };
  const tokens = ['x', 'y', 'a:b', 'sum', 'topk', 'count_values', 'by', 'without', '(', ')', '(', ')', '{', '}', '[', ']', '5m', '1m30s', '1', '.5', '0x1f', 'inf', ',',
    '"a"', "'b'", '`c`', '=', '=~', '!=', '!~', 'offset', '-', '@', 'start()', 'end()', ':', '+', '*', '/', '^', '==', '>', 'bool', 'on', 'ignoring', 'group_left',
    'group_right', 'and', 'or', 'unless', 'rate', 'time', 'abs', 'round', 'label_join', 'histogram_quantile', 'nan', '#c\n', '1e3', '__name__', '-5m', 'start', 'end'];
  // ASCII only: Prometheus counts columns in bytes, this parser in characters.
  const chars = ['x', 'a', 'e', 'E', '0', '1', '9', '.', '5', 'm', 's', 'h', 'd', 'w', 'y', 'ms', '_', ':', '"', "'", '`', '\\', 'n', 'u', 'U', '{', '}', '[', ']', '(', ')',
    ',', '=', '~', '!', '<', '>', '+', '-', '*', '/', '%', '^', '@', '#', '\n', ' ', ' ', ' ', '$', 'inf', 'NaN', 'offset', 'by', 'sum', 'rate', 'bool', 'on', 'start', 'end', '0x', 'f', '7'];
  const exprs = [...Array.from({ length: 5000 }, () => soup(tokens, 9, 0.6)), ...Array.from({ length: 5000 }, () => soup(chars, 14, 0))];
  assert.deepEqual(comparePositions(exprs), []);
});

test('the known deviations (2.42 accepts them) are errors naming what is not supported', () => {
  const expected: Record<string, string> = {
    'x atan2 y': '1:3: parse error: the atan2 operator is not supported',
    'holt_winters(x[5m], 0.5, 0.5)': '1:1: parse error: function "holt_winters" is not supported',
    'predict_linear(x[5m], 60)': '1:1: parse error: function "predict_linear" is not supported',
    'sgn(x)': '1:1: parse error: function "sgn" is not supported',
    'day_of_month()': '1:1: parse error: function "day_of_month" is not supported',
  };
  for (const [input, message] of Object.entries(expected)) assert.equal(errorOf(input).message, message, input);
  assert.deepEqual([...KNOWN_DEVIATIONS].sort(), Object.keys(expected).sort());
});
