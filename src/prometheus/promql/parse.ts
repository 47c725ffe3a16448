// The PromQL parser: text to the syntax tree of ast.ts, accepting what Prometheus 2.42 accepts and
// refusing the rest with the error 2.42 reports first, in its words and at its line and column
// (`1:5: parse error: unexpected end of input`).
//
// lex.ts tokenizes as 2.42 does and finds what 2.42's grammar refuses in the tokens alone. The
// grammar is @prometheus-io/lezer-promql's, newer and more lenient than 2.42's: it parses a copy of
// the input where the tokens it would read otherwise are same-length placeholders, and its tree
// is read with care: newer features are refused, and where its precedence differs from 2.42's
// yacc grammar (a sign on a literal before `^`; offset, @ and [...] binding looser than
// operators) the tree is rearranged. Last, check.ts makes 2.42's type checks (its checkAST).

import type { SyntaxNode, Tree } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';
import { FUNCTIONS, type AggregateOp, type BinaryExpr, type BinaryOp, type Expr, type LabelMatcher, type MatchType, type NumberLiteral, type VectorMatching } from './ast.js';
import { checkTypes, goQuote, parseDuration, parseNumber, regexpError, unquote, type Positions } from './check.js';
import {
  MAX_DEPTH,
  MAX_TOKENS,
  MAX_TREE_DEPTH,
  contextOf,
  describeToken,
  lex,
  startsOperand,
  isColon,
  tokenProblem,
  unknownFunction,
  type Problem,
  type Token,
} from './lex.js';

export { MAX_DEPTH, MAX_TOKENS, MAX_TREE_DEPTH, parseDuration };

/** A refused input; the message reads as Prometheus' (`<line>:<col>: parse error: <what>`). */
export class PromQLParseError extends Error {
  /** 0-based offset in the input of what is wrong. */
  readonly position: number;

  constructor(input: string, position: number, what: string) {
    const lineStart = position > 0 ? input.lastIndexOf('\n', position - 1) + 1 : 0;
    const line = input.slice(0, lineStart).split('\n').length;
    const column = [...input.slice(lineStart, position)].length + 1;
    super(`${line}:${column}: parse error: ${what}`);
    this.name = 'PromQLParseError';
    this.position = position;
  }
}

const tooDeep = `expression nested deeper than ${MAX_DEPTH} levels`;

const BINARY_OPS: Record<string, BinaryOp> = {
  Add: '+', Sub: '-', Mul: '*', Div: '/', Mod: '%', Pow: '^',
  Eql: '==', Neq: '!=', Gtr: '>', Lss: '<', Gte: '>=', Lte: '<=',
  And: 'and', Or: 'or', Unless: 'unless',
};

const AGGREGATE_OPS = new Set<string>(['sum', 'avg', 'min', 'max', 'count', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'count_values', 'group']);
const WITH_PARAM = new Set<string>(['topk', 'bottomk', 'quantile', 'count_values']);

/** The named children of a lezer node, comments left out. */
function kids(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let child = node.firstChild; child; child = child.nextSibling) if (child.name !== 'LineComment') out.push(child);
  return out;
}

/**
 * The input lezer parses, of the same length (its positions are the input's): NUMBER and DURATION
 * tokens become `1` and `1s` (the token says which it is); `offset` where an operand starts (2.42
 * takes it for a metric name there, lezer always for the keyword) becomes an identifier; a word in
 * brackets, 2.42's subquery colon, becomes `:`; and calls of unknown functions become calls of
 * `ln` (a one-letter name just goes), so that lezer reads their arguments.
 */
function lezerText(input: string, tokens: readonly Token[]): string {
  const parts: string[] = [];
  let from = 0;
  tokens.forEach((t, i) => {
    let placeholder: string;
    // A number may follow a word directly (`a.5`): its placeholder must not continue the word.
    if (t.kind === 'number') placeholder = t.text.startsWith('.') ? '.1' : '1';
    else if (t.kind === 'duration') placeholder = t.text.length > 1 ? '1s' : '1';
    else if (isColon(t)) placeholder = ':';
    else if (t.kind === 'keyword' && t.text.toLowerCase() === 'offset' && startsOperand(tokens, i)) placeholder = 'o'.padEnd(t.end - t.start, '_');
    else if (t.kind === 'identifier' && tokens[i + 1]?.text === '(' && !FUNCTIONS.has(t.text)) placeholder = t.text.length > 1 ? 'ln' : ' ';
    else return;
    parts.push(input.slice(from, t.start), placeholder.padEnd(t.end - t.start, ' '));
    from = t.end;
  });
  parts.push(input.slice(from));
  return parts.join('');
}

/**
 * The first place, in document order, where lezer's tree has an error node or nests expressions
 * deeper than MAX_DEPTH (lezer also gives up, with error nodes, a few thousand levels down). The
 * walk is iterative: the tree may be deep.
 */
function firstTreeProblem(tree: Tree): { position: number; deep: boolean } | null {
  const cursor = tree.cursor();
  const isExprStack: boolean[] = [];
  let depth = 0;
  for (;;) {
    if (cursor.type.isError) return { position: cursor.from, deep: false };
    const isExpr = cursor.type.is('Expr');
    if (isExpr && ++depth > MAX_DEPTH) return { position: cursor.from, deep: true };
    isExprStack.push(isExpr);
    if (cursor.firstChild()) continue;
    for (;;) {
      if (isExprStack.pop()) depth--;
      if (cursor.nextSibling()) break;
      if (!cursor.parent()) return null;
    }
  }
}

/** Index of the first token ending after `position` (tokens.length if none). */
function tokenIndexAfter(tokens: readonly Token[], position: number): number {
  let lo = 0;
  let hi = tokens.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tokens[mid]!.end <= position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A parse-time error met while building a part of the tree speculatively. */
class BuildFailure {
  constructor(readonly position: number, readonly what: string) {}
}

function containsError(node: SyntaxNode): boolean {
  let found = false;
  node.cursor().iterate((n) => {
    if (n.type.isError) found = true;
    return !found;
  });
  return found;
}

/**
 * The first error 2.42 meets while reducing, before it reaches a syntax error at `limit`: its
 * grammar's actions check as they reduce (an @ on a number, a bad duration...), so the
 * expressions complete before the syntax error are built here, for those checks alone.
 */
function buildProblemBefore(input: string, tokens: readonly Token[], tree: Tree, limit: number): Problem | null {
  const builder = new Builder(input, tokens, (position, what) => {
    throw new BuildFailure(position, what);
  });
  // Recursion follows the path to the syntax error, which firstTreeProblem found not too deep.
  const visit = (node: SyntaxNode): Problem | null => {
    if (node.from >= limit) return null;
    if (node.type.is('Expr') && node.to <= limit && !containsError(node)) {
      try {
        builder.expr(node, 1);
      } catch (err) {
        // Reduced right after its last token, before the next is read.
        if (err instanceof BuildFailure) return { position: err.position, what: err.what, order: node.to - 0.5 };
        throw err;
      }
      return null;
    }
    for (let child = node.firstChild; child; child = child.nextSibling) {
      const problem = visit(child);
      if (problem) return problem;
    }
    return null;
  };
  return visit(tree.topNode);
}

/**
 * lezer's tree of `tokens` (all of the input, or what precedes a lexical error), and the first
 * problem 2.42 would report in them: one tokenProblem finds, an error of an action before the
 * syntax error, or the syntax error where lezer's parse fails, in 2.42's words.
 */
function analyze(input: string, tokens: readonly Token[], beforeLexicalError: boolean): { tree: Tree; problem: Problem | null } {
  const tree = parser.parse(lezerText(input, tokens));
  const candidates = [tokenProblem(tokens, (name) => FUNCTIONS.has(name))];
  const found = firstTreeProblem(tree);
  let limit = found?.position ?? Infinity;
  if (found?.deep) candidates.push({ position: found.position, what: tooDeep, order: found.position });
  else if (found) {
    let i = tokenIndexAfter(tokens, found.position);
    // A one-letter unknown function is hidden from lezer (see lezerText): 2.42 sees the name.
    if (tokens[i]?.text === '(' && tokens[i - 1]?.kind === 'identifier' && tokens[i - 1]!.text.length === 1 && !FUNCTIONS.has(tokens[i - 1]!.text)) i--;
    const token = tokens[i] ?? null;
    const position = token?.start ?? input.length;
    limit = position;
    if (token?.text === ')' && tokens[i - 1]?.text === ',') candidates.push({ position: tokens[i - 1]!.start, what: 'trailing commas not allowed in function call args', order: position });
    else candidates.push({ position, what: `unexpected ${describeToken(token)}${contextOf(tokens, i)}`, order: position });
  }
  // Before a lexical error, what ends with the last token (2.42 reduces it before reading on).
  if (beforeLexicalError) limit = Math.min(limit, tokens.at(-1)?.end ?? 0);
  if (limit !== Infinity && !found?.deep) candidates.unshift(buildProblemBefore(input, tokens, tree, limit));
  // The first noticed; on a tie, what reduces before what is read.
  let problem: Problem | null = null;
  for (const candidate of candidates) if (candidate && (!problem || candidate.order < problem.order)) problem = candidate;
  return { tree, problem };
}

/** Parses a PromQL expression as Prometheus 2.42 does; throws PromQLParseError. */
export function parsePromQL(input: string): Expr {
  try {
    return parse(input);
  } catch (err) {
    // The bounds of lex.ts keep lezer's recursion shallow; should the stack still run out, the
    // input is too large for this parser, which is an answer, not a crash.
    if (err instanceof RangeError) throw new PromQLParseError(input, 0, 'expression too large to parse');
    throw err;
  }
}

function parse(input: string): Expr {
  const fail = (position: number, what: string): never => {
    throw new PromQLParseError(input, position, what);
  };
  const { tokens, error } = lex(input);
  if (error) {
    if (error.tooLarge) fail(error.position, error.message);
    // 2.42 meets grammar errors before the lexical one first; the parse of the part before it
    // ends early, which is no error of the whole input.
    const { problem } = analyze(input.slice(0, error.position), tokens, true);
    if (problem && problem.order < (tokens.at(-1)?.end ?? 0)) fail(problem.position, problem.what);
    fail(error.position, error.message);
  }
  if (tokens.length === 0) fail(0, 'no expression found in input');
  const { tree, problem } = analyze(input, tokens, false);
  if (problem) fail(problem.position, problem.what);

  const builder = new Builder(input, tokens, fail);
  const expr = builder.expr(kids(tree.topNode)[0]!, 1);
  checkTypes(expr, builder.positions, fail);
  return expr;
}

/** Builds the ast.ts tree from lezer's, with the checks 2.42 makes while parsing. */
class Builder {
  readonly positions: Positions = { start: new Map(), operator: new Map() };
  private readonly tokenAt = new Map<number, number>();
  /** Where the digits of a signed literal start: 2.42 puts offset, @ and [...] on them, not on the sign. */
  private readonly digitsAt = new Map<Expr, number>();

  constructor(
    private readonly input: string,
    private readonly tokens: readonly Token[],
    private readonly fail: (position: number, what: string) => never,
  ) {
    tokens.forEach((t, i) => this.tokenAt.set(t.start, i));
  }

  private text(node: SyntaxNode): string {
    return this.input.slice(node.from, node.to);
  }

  /** The token a lezer node starts with. */
  private token(node: SyntaxNode): Token {
    return this.tokens[this.tokenAt.get(node.from) ?? tokenIndexAfter(this.tokens, node.from)]!;
  }

  private at<T extends Expr>(expr: T, position: number): T {
    this.positions.start.set(expr, position);
    return expr;
  }

  private startOf(expr: Expr): number {
    return this.positions.start.get(expr) ?? 0;
  }

  expr(node: SyntaxNode, depth: number): Expr {
    if (depth > MAX_DEPTH) this.fail(node.from, tooDeep);
    switch (node.name) {
      case 'ParenExpr':
        return this.at({ kind: 'paren', expr: this.expr(kids(node)[0]!, depth + 1) }, node.from);
      case 'NumberDurationLiteral': {
        const { sign, signAt, literal } = this.signedNumber(node);
        return sign === '' ? literal : this.negate(sign, literal, signAt);
      }
      case 'StringLiteral':
        return this.at({ kind: 'string', value: unquote(this.text(node)) }, node.from);
      case 'VectorSelector':
        return this.vectorSelector(node);
      case 'UnaryExpr': {
        const [op, operand] = kids(node);
        return this.negate(this.text(op!) as '+' | '-', this.expr(operand!, depth + 1), node.from);
      }
      case 'BinaryExpr':
        return this.binary(node, depth);
      case 'FunctionCall': {
        const [name, body] = kids(node);
        const func = FUNCTIONS.get(this.text(name!));
        if (!func) return this.fail(node.from, unknownFunction(this.text(name!)));
        return this.at({ kind: 'call', func, args: kids(body!).map((arg) => this.expr(arg, depth + 1)) }, node.from);
      }
      case 'AggregateExpr':
        return this.aggregate(node, depth);
      case 'MatrixSelector':
      case 'SubqueryExpr':
      case 'OffsetExpr':
      case 'StepInvariantExpr':
        return this.postfix(node, depth);
      case 'AnchoredExpr':
      case 'SmoothedExpr': {
        const keyword = kids(node).at(-1)!;
        return this.fail(keyword.from, `unexpected ${describeToken(this.token(keyword))} (the ${this.text(keyword).toLowerCase()} modifier is not supported)`);
      }
      default:
        return this.fail(node.from, `unexpected ${describeToken(this.token(node))}`);
    }
  }

  /** A unary + or -: on a number literal it folds into the literal, as 2.42's grammar does. */
  private negate(op: '+' | '-', operand: Expr, position: number): Expr {
    if (operand.kind !== 'number') return this.at({ kind: 'unary', op, expr: operand }, position);
    const folded = this.at({ kind: 'number', value: op === '-' ? -operand.value : operand.value }, position);
    this.digitsAt.set(folded, this.digitsAt.get(operand) ?? this.startOf(operand));
    return folded;
  }

  /** A literal lezer read with its sign: the unsigned literal, and the sign apart. */
  private signedNumber(node: SyntaxNode): { sign: '' | '+' | '-'; signAt: number; literal: NumberLiteral } {
    let i = this.tokenAt.get(node.from)!;
    const first = this.tokens[i]!;
    const sign = first.text === '+' || first.text === '-' ? first.text : '';
    if (sign) i++;
    const token = this.tokens[i]!;
    if (token.kind === 'duration') this.fail(token.start, `unexpected duration ${goQuote(token.text)}`);
    return { sign, signAt: first.start, literal: this.at({ kind: 'number', value: this.number(token) }, token.start) };
  }

  private number(token: Token): number {
    try {
      return parseNumber(token.text);
    } catch (err) {
      return this.fail(token.start, (err as Error).message);
    }
  }

  private binary(node: SyntaxNode, depth: number): Expr {
    const parts = kids(node);
    const [lhsNode, opNode] = parts;
    const rhsNode = parts.at(-1)!;
    const op = BINARY_OPS[opNode!.name];
    // `</` and `>/` are two tokens to 2.42; atan2 is not in this engine.
    if (op === undefined && opNode!.name === 'Atan2') return this.fail(opNode!.from, 'the atan2 operator is not supported');
    if (op === undefined) return this.fail(opNode!.from + 1, `unexpected <op:/> (the ${this.text(opNode!)} operator is not supported)`);
    let returnBool = false;
    let matching: VectorMatching = { card: 'one-to-one', on: false, labels: [], include: [] };
    for (const modifier of parts.slice(2, -1)) {
      if (modifier.name === 'BoolModifier') returnBool = true;
      else if (modifier.name === 'MatchingModifierClause') matching = this.matching(modifier);
      else this.fail(modifier.from, 'fill modifiers are not supported');
    }
    // lezer reads `-2 ^ x` as (-2) ^ x; in 2.42 the sign applies to the whole power.
    if (op === '^' && lhsNode!.name === 'NumberDurationLiteral') {
      const { sign, signAt, literal } = this.signedNumber(lhsNode!);
      if (sign !== '') {
        const power = this.at<BinaryExpr>({ kind: 'binary', op, lhs: literal, rhs: this.expr(rhsNode, depth + 2), returnBool, matching }, this.startOf(literal));
        this.positions.operator.set(power, opNode!.from);
        return this.negate(sign, power, signAt);
      }
    }
    const lhs = this.expr(lhsNode!, depth + 1);
    const rhs = this.expr(rhsNode, depth + 1);
    const expr = this.at<BinaryExpr>({ kind: 'binary', op, lhs, rhs, returnBool, matching }, this.startOf(lhs));
    this.positions.operator.set(expr, opNode!.from);
    return expr;
  }

  private matching(clause: SyntaxNode): VectorMatching {
    const [onOrIgnoring, labels, group, include] = kids(clause);
    const card = group?.name === 'GroupLeft' ? 'many-to-one' : group?.name === 'GroupRight' ? 'one-to-many' : 'one-to-one';
    return { card, on: onOrIgnoring!.name === 'On', labels: this.groupingLabels(labels!), include: include ? this.groupingLabels(include) : [] };
  }

  private groupingLabels(node: SyntaxNode): string[] {
    return kids(node).map((label) => {
      if (label.name !== 'LabelName') this.fail(label.from, `unexpected ${describeToken(this.token(label))} in grouping opts, expected label`);
      return this.text(label);
    });
  }

  private aggregate(node: SyntaxNode, depth: number): Expr {
    const parts = kids(node);
    const op = this.text(parts[0]!).toLowerCase();
    if (!AGGREGATE_OPS.has(op)) return this.fail(node.from, `aggregation ${JSON.stringify(op)} is not supported`);
    let grouping: string[] = [];
    let without = false;
    let args: Expr[] = [];
    for (const part of parts.slice(1)) {
      if (part.name === 'FunctionCallBody') args = kids(part).map((arg) => this.expr(arg, depth + 1));
      else {
        const [byOrWithout, labels] = kids(part);
        without = byOrWithout!.name === 'Without';
        grouping = this.groupingLabels(labels!);
      }
    }
    if (args.length === 0) this.fail(node.from, 'no arguments for aggregate expression provided');
    const wanted = WITH_PARAM.has(op) ? 2 : 1;
    if (args.length !== wanted) this.fail(node.from, `wrong number of arguments for aggregate expression provided, expected ${wanted}, got ${args.length}`);
    return this.at({ kind: 'aggregate', op: op as AggregateOp, expr: args[wanted - 1]!, param: wanted === 2 ? args[0]! : null, grouping, without }, node.from);
  }

  private vectorSelector(node: SyntaxNode): Expr {
    let name: string | null = null;
    const matchers: LabelMatcher[] = [];
    for (const part of kids(node)) {
      if (part.name === 'Identifier') {
        // lezer takes atan2 for a metric name; to 2.42 it is an operator.
        if (this.text(part).toLowerCase() === 'atan2') this.fail(part.from, `unexpected ${describeToken(this.token(part))}`);
        name = this.text(part);
        continue;
      }
      for (const matcher of kids(part)) {
        if (matcher.name !== 'UnquotedLabelMatcher') this.fail(matcher.from, `unexpected ${describeToken(this.token(matcher))} in label matching, expected identifier or "}"`);
        const [label, op, value] = kids(matcher);
        const m: LabelMatcher = { name: this.text(label!), type: this.text(op!) as MatchType, value: unquote(this.text(value!)) };
        const invalid = m.type === '=~' || m.type === '!~' ? regexpError(m.value) : null;
        if (invalid !== null) this.fail(label!.from, `error parsing regexp: ${invalid}`);
        matchers.push(m);
      }
    }
    // The name is a matcher too; 2.42 appends it, this tree puts it first.
    if (name !== null) matchers.unshift({ name: '__name__', type: '=', value: name });
    return this.at({ kind: 'vectorSelector', name, matchers, offsetMs: 0, at: null }, node.from);
  }

  /**
   * A range, subquery, offset or @. In 2.42 they bind tighter than any operator (`-a offset 1m`
   * is `-(a offset 1m)`, `a + b[5m]` is `a + (b[5m])`); lezer binds them looser, so they go down
   * to the rightmost operand.
   */
  private postfix(node: SyntaxNode, depth: number): Expr {
    const parts = kids(node);
    const apply = (target: Expr): Expr => {
      if (target.kind === 'binary') target.rhs = apply(target.rhs);
      else if (target.kind === 'unary') target.expr = apply(target.expr);
      else return this.modify(node, parts, target);
      return target;
    };
    return apply(this.expr(parts[0]!, depth + 1));
  }

  private modify(node: SyntaxNode, parts: SyntaxNode[], target: Expr): Expr {
    const start = this.digitsAt.get(target) ?? this.startOf(target);
    switch (node.name) {
      case 'MatrixSelector': {
        const rangeMs = this.duration(parts[1]!, 'subquery or range', '":" or "]"');
        const bracket = this.tokens[tokenIndexAfter(this.tokens, parts[0]!.to)]!.start;
        if (target.kind !== 'vectorSelector') return this.fail(bracket, 'ranges only allowed for vector selectors');
        if (target.offsetMs !== 0) this.fail(bracket, 'no offset modifiers allowed before range');
        if (typeof target.at === 'number') this.fail(bracket, 'no @ modifiers allowed before range');
        return this.at({ kind: 'matrixSelector', vector: target, rangeMs }, start);
      }
      case 'SubqueryExpr': {
        const rangeMs = this.duration(parts[1]!, 'subquery or range', '":" or "]"');
        const stepMs = parts[2] ? this.duration(parts[2], 'subquery selector', 'duration or "]"') : 0;
        return this.at({ kind: 'subquery', expr: target, rangeMs, stepMs, offsetMs: 0, at: null }, start);
      }
      case 'OffsetExpr': {
        const offsetMs = this.offset(parts[2]!);
        const holder = target.kind === 'matrixSelector' ? target.vector : target;
        if (holder.kind !== 'vectorSelector' && holder.kind !== 'subquery') {
          return this.fail(start, 'offset modifier must be preceded by an instant vector selector or range vector selector or a subquery');
        }
        if (holder.offsetMs !== 0) this.fail(start, 'offset may not be set multiple times');
        holder.offsetMs = offsetMs;
        return target;
      }
      default: {
        const at = this.atTime(parts[2]!, start);
        const holder = target.kind === 'matrixSelector' ? target.vector : target;
        if (holder.kind !== 'vectorSelector' && holder.kind !== 'subquery') {
          return this.fail(start, '@ modifier must be preceded by an instant vector selector or range vector selector or a subquery');
        }
        if (holder.at !== null) this.fail(start, '@ <timestamp> may not be set multiple times');
        holder.at = at;
        return target;
      }
    }
  }

  /**
   * A range, step or offset: one DURATION token, over 0. 2.42 has no duration arithmetic; its
   * message for what follows the first duration is kept, with why.
   */
  private duration(node: SyntaxNode, context: string, expected: string): number {
    const parts = kids(node);
    if (parts.length !== 1 || parts[0]!.name !== 'NumberDurationLiteralInDurationContext') {
      const next = parts[0]?.name === 'DurationExpr' ? this.tokens[tokenIndexAfter(this.tokens, parts[0].to)]! : this.token(node);
      this.fail(next.start, `unexpected ${describeToken(next)} in ${context}, expected ${expected} (duration arithmetic is not supported)`);
    }
    const token = this.token(parts[0]!);
    if (token.kind !== 'duration') this.fail(token.start, `unexpected ${describeToken(token)} in ${context}, expected ${expected}`);
    let ms = 0;
    try {
      ms = parseDuration(token.text);
    } catch (err) {
      this.fail(token.start, (err as Error).message);
    }
    if (ms === 0) this.fail(token.start, 'duration must be greater than 0');
    return ms;
  }

  /** `offset 5m` or `offset -5m`: 2.42 allows one minus sign, no plus, no expression. */
  private offset(node: SyntaxNode): number {
    const parts = kids(node);
    if (parts[0]!.name === 'UnaryOp' && this.text(parts[0]!) === '-') {
      const inner = kids(parts[1]!);
      if (inner.length === 1 && inner[0]!.name === 'NumberDurationLiteralInDurationContext') return -this.duration(parts[1]!, 'offset', 'duration');
      return this.fail(parts[1]!.from, `unexpected ${describeToken(this.token(parts[1]!))} in offset, expected duration`);
    }
    if (parts.length === 1 && parts[0]!.name === 'NumberDurationLiteralInDurationContext') return this.duration(node, 'offset', 'duration');
    return this.fail(node.from, `unexpected ${describeToken(this.token(node))} in offset, expected duration`);
  }

  /** `@ <seconds>` (to ms as 2.42 rounds it), `@ start()`, `@ end()`. */
  private atTime(node: SyntaxNode, targetStart: number): number | 'start' | 'end' {
    if (node.name === 'AtModifierPreprocessors') return kids(node)[0]!.name === 'AtStart' ? 'start' : 'end';
    const tokenIndex = this.tokenAt.get(node.from)!;
    const first = this.tokens[tokenIndex]!;
    const token = first.kind === 'operator' ? this.tokens[tokenIndex + 1]! : first;
    if (token.kind === 'duration') this.fail(token.start, `unexpected duration ${goQuote(token.text)} in @, expected timestamp`);
    const seconds = first.text === '-' ? -this.number(token) : this.number(token);
    if (!(Math.abs(seconds) < 2 ** 63)) this.fail(targetStart, `timestamp out of bounds for @ modifier: ${goFloat(seconds)}`);
    // Go's math.Round: halves away from zero.
    const ms = Math.round(Math.abs(seconds * 1000));
    return seconds < 0 && ms !== 0 ? -ms : ms;
  }
}

/** Go's %f of a float64. */
function goFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  return Math.abs(value) < 1e21 ? value.toFixed(6) : `${BigInt(value)}.000000`;
}
