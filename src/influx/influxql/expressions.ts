/**
 * InfluxQL expressions, as InfluxDB's parser reads them: binary operators placed by precedence
 * (OR < AND < comparisons < `+ - | ^` < `* / % &`, left-associative), a unary sign folded into
 * a literal or made `±1 * x`, references `a`, `"a"."b"` (one name `a.b`) with their `::type`,
 * calls `name(` (no space before the parenthesis) with any arguments, regexes where InfluxDB
 * takes one, `*`, literals and bound parameters. Facts the tree does not hold (unsigned
 * literals, exact nanoseconds, `DISTINCT x`) are kept on the side for the GROUP BY checks.
 * Pure TypeScript.
 */

import type { Expr, Position } from './ast.js';
import { INT64_MAX, nsToMs, parseDuration, UINT64_MAX } from './duration.js';
import { errorAt, FIRST, found, plain, quoteIdent } from './errors.js';
import { isWhitespace } from './lexer.js';
import { regexSyntaxError } from './regex.js';
import { TokenReader } from './token-reader.js';
import { isOperator, PRECEDENCE, type Operator, type Token } from './tokens.js';

export type RegexExpr = Extract<Expr, { type: 'regex' }>;

/** Integer literals above int64 (InfluxDB's unsigned literals), with their exact value. */
export const unsignedLiterals = new WeakMap<Expr, bigint>();
/** Exact nanoseconds of duration literals. */
export const durationNs = new WeakMap<Expr, bigint>();
/** Calls written `DISTINCT x`. */
export const distinctKeyword = new WeakSet<Expr>();

/**
 * How deep an expression may nest (parentheses, calls, operators). InfluxDB has no limit; this
 * one keeps the parser and whoever walks the tree within the JavaScript stack.
 */
const MAX_EXPR_DEPTH = 1000;

/** The depth of an expression tree, without recursion. */
function depthOf(root: Expr): number {
  let deepest = 0;
  const stack: [Expr, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [e, depth] = stack.pop()!;
    if (depth > deepest) deepest = depth;
    if (e.type === 'binary') stack.push([e.left, depth + 1], [e.right, depth + 1]);
    else if (e.type === 'paren') stack.push([e.expr, depth + 1]);
    else if (e.type === 'call') for (const arg of e.args) stack.push([arg, depth + 1]);
  }
  return deepest;
}

const FIELD_CASTS = new Set(['float', 'integer', 'unsigned', 'string', 'boolean']);

/** Expressions (and the segmented names they and FROM share). */
export class ExpressionParser extends TokenReader {
  /** expr() calls under way. */
  private nesting = 0;

  /** A regular expression when the next character (after whitespace) is `/`, else null. */
  regex(): RegexExpr | null {
    if (isWhitespace(this.s.peekRune())) this.consumeWhitespace();
    const ch = this.s.peekRune();
    if (ch === 0x24) {
      // `$name` may be bound to a regex.
      const param = this.scan();
      this.unscan();
      if (param.kind !== 'REGEX') return null;
    } else if (ch !== 0x2f) {
      return null;
    }
    const tok = this.scanRegex();
    if (tok.kind === 'BADREGEX') throw errorAt(`bad regex: ${tok.lit}`, tok.pos);
    if (tok.kind !== 'REGEX') throw found(tok, ['regex']);
    const problem = regexSyntaxError(tok.lit);
    if (problem !== null) throw errorAt(problem, tok.pos);
    return { type: 'regex', source: tok.lit, pos: tok.pos };
  }

  expr(): Expr {
    if (this.nesting >= MAX_EXPR_DEPTH) throw errorAt(`expression nested deeper than ${MAX_EXPR_DEPTH} levels`, this.next().pos);
    this.nesting++;
    try {
      const expr = this.operators();
      if (this.nesting === 1 && depthOf(expr) > MAX_EXPR_DEPTH) {
        let first = expr;
        while (first.type === 'binary') first = first.left;
        throw errorAt(`expression nested deeper than ${MAX_EXPR_DEPTH} levels`, first.pos);
      }
      return expr;
    } finally {
      this.nesting--;
    }
  }

  private operators(): Expr {
    // Operators are placed by walking down the right edge of the tree built so far, as InfluxDB
    // does: a new operator takes the right operand of the first node that binds less tightly.
    const root: { right: Expr } = { right: this.unary() };
    for (;;) {
      const opTok = this.next();
      if (!isOperator(opTok.kind)) {
        this.unscan();
        return root.right;
      }
      const op: Operator = opTok.kind;
      let rhs: Expr;
      if (op === '=~' || op === '!~') {
        const re = this.regex();
        if (re === null) throw found(this.next(), ['regex']);
        rhs = re;
      } else {
        rhs = this.unary();
      }
      const precedence = PRECEDENCE.get(op)!;
      let holder: { right: Expr } = root;
      for (;;) {
        const r = holder.right;
        if (r.type !== 'binary' || PRECEDENCE.get(r.op as Operator)! >= precedence) {
          holder.right = { type: 'binary', op, left: r, right: rhs, pos: opTok.pos };
          break;
        }
        holder = r;
      }
    }
  }

  unary(): Expr {
    const open = this.next();
    if (open.kind === '(') {
      const expr = this.expr();
      const close = this.next();
      if (close.kind !== ')') throw found(close, [')']);
      return { type: 'paren', expr, pos: open.pos };
    }
    this.unscan();

    const tok = this.next();
    switch (tok.kind) {
      case 'IDENT': {
        if (this.scan().kind === '(') return this.call(tok.lit, tok.pos);
        this.unscan();
        this.unscan();
        return this.varRef();
      }
      case 'DISTINCT': {
        const next = this.scan();
        if (next.kind === '(') return this.call('distinct', tok.pos);
        if (next.kind === 'WS') {
          const name = this.next();
          if (name.kind !== 'IDENT') throw found(name, ['identifier']);
          const call: Expr = { type: 'call', name: 'distinct', args: [{ type: 'ref', name: name.lit, dataType: null, pos: name.pos }], pos: tok.pos };
          distinctKeyword.add(call);
          return call;
        }
        throw found(next, ['(', 'identifier']);
      }
      case 'STRING':
        return { type: 'string', value: tok.lit, pos: tok.pos };
      case 'NUMBER': {
        const value = Number(tok.lit);
        if (!Number.isFinite(value)) throw errorAt('unable to parse number', tok.pos);
        return { type: 'number', value, integer: false, pos: tok.pos };
      }
      case 'INTEGER': {
        const n = BigInt(tok.lit);
        if (n > UINT64_MAX) throw errorAt('unable to parse integer', tok.pos);
        const literal: Expr = { type: 'number', value: Number(n), integer: true, pos: tok.pos };
        if (n > INT64_MAX) unsignedLiterals.set(literal, n);
        return literal;
      }
      case 'TRUE':
      case 'FALSE':
        return { type: 'boolean', value: tok.kind === 'TRUE', pos: tok.pos };
      case 'DURATIONVAL': {
        const ns = parseDuration(tok.lit);
        if (typeof ns === 'string') throw plain(ns);
        return durationLiteral(ns, tok.pos);
      }
      case '*': {
        const next = this.scan();
        if (next.kind !== '::') {
          this.unscan();
          return { type: 'wildcard', only: null, pos: tok.pos };
        }
        const type = this.scan();
        if (type.kind === 'FIELD') return { type: 'wildcard', only: 'field', pos: tok.pos };
        if (type.kind === 'TAG') return { type: 'wildcard', only: 'tag', pos: tok.pos };
        throw found(type, ['field', 'tag']);
      }
      case 'REGEX': {
        // A bound parameter's regex.
        const problem = regexSyntaxError(tok.lit);
        if (problem !== null) throw errorAt(problem, tok.pos);
        return { type: 'regex', source: tok.lit, pos: tok.pos };
      }
      case 'BOUNDPARAM': {
        // A parameter left unbound (or bound to an error, whose text is its literal).
        const name = tok.lit.startsWith('$') ? tok.lit.slice(1) : tok.lit;
        if (name === '') throw plain('empty bound parameter');
        throw plain(`missing parameter: ${name}`);
      }
      case '+':
      case '-':
        return this.signed(tok);
      default:
        throw found(tok, ['identifier', 'string', 'number', 'bool']);
    }
  }

  /** `-x`, `+x`: folded into a literal, else `±1 * x`. */
  signed(sign: Token): Expr {
    const next = this.next();
    if (!['NUMBER', 'INTEGER', 'DURATIONVAL', '(', 'IDENT'].includes(next.kind)) throw found(next, ['identifier', 'number', 'duration', '(']);
    this.unscan();
    const operand = this.unary();
    const negative = sign.kind === '-';
    if (operand.type === 'number') {
      const unsigned = unsignedLiterals.get(operand);
      if (unsigned !== undefined) {
        if (!negative) return operand;
        if (unsigned === INT64_MAX + 1n) return { type: 'number', value: -(2 ** 63), integer: true, pos: operand.pos };
        throw plain(`constant -${unsigned} underflows int64`);
      }
      if (negative) operand.value = -operand.value;
      return operand;
    }
    if (operand.type === 'duration') {
      if (!negative) return operand;
      return durationLiteral(BigInt.asIntN(64, -durationNs.get(operand)!), operand.pos);
    }
    return { type: 'binary', op: '*', left: { type: 'number', value: negative ? -1 : 1, integer: true, pos: sign.pos }, right: operand, pos: sign.pos };
  }

  /** A field or tag reference, with its `::type`. */
  varRef(): Expr {
    const { idents, pos } = this.segmentedIdents();
    const name = idents.join('.');
    if (this.scan().kind !== '::') {
      this.unscan();
      return { type: 'ref', name, dataType: null, pos };
    }
    const type = this.scan();
    if (type.kind === 'FIELD') return { type: 'ref', name, dataType: 'field', pos };
    if (type.kind === 'TAG') return { type: 'ref', name, dataType: 'tag', pos };
    if (type.kind === 'IDENT') {
      const cast = type.lit.toLowerCase();
      if (FIELD_CASTS.has(cast)) return { type: 'ref', name, dataType: 'field', valueType: cast as 'float' | 'integer' | 'unsigned' | 'string' | 'boolean', pos };
      throw found(type, ['float', 'integer', 'unsigned', 'string', 'boolean', 'field', 'tag']);
    }
    throw found(type, ['float', 'integer', 'string', 'boolean', 'field', 'tag']);
  }

  /** The arguments of `name(`, its parenthesis read. */
  call(name: string, pos: Position): Expr {
    const args: Expr[] = [];
    const first = this.regex();
    if (first !== null) {
      args.push(first);
    } else {
      if (this.scan().kind === ')') return { type: 'call', name: name.toLowerCase(), args, pos };
      this.unscan();
      args.push(this.expr());
    }
    while (this.accept(',')) args.push(this.regex() ?? this.expr());
    const close = this.scan();
    if (close.kind !== ')') throw found(close, [')']);
    return { type: 'call', name: name.toLowerCase(), args, pos };
  }

  /** `a`, `a.b`, `"a"."b".c`, `a..c`: one to three identifiers. */
  segmentedIdents(): { idents: string[]; pos: Position } {
    const first = this.next();
    if (first.kind !== 'IDENT') throw found(first, ['identifier']);
    const idents = [first.lit];
    for (;;) {
      if (this.scan().kind !== '.') {
        this.unscan();
        break;
      }
      const ch = this.s.peekRune();
      if (ch === 0x2f || ch === 0x3a) break;
      if (ch === 0x2e) {
        idents.push('');
        continue;
      }
      idents.push(this.ident());
    }
    if (idents.length > 3) throw errorAt(`too many segments in ${quoteIdent(idents)}`, FIRST);
    return { idents, pos: first.pos };
  }
}

function durationLiteral(ns: bigint, pos: Position): Expr {
  const literal: Expr = { type: 'duration', ms: nsToMs(ns), pos };
  durationNs.set(literal, ns);
  return literal;
}
