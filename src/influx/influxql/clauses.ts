/**
 * The clauses of InfluxQL statements: a SELECT from its fields to tz() (fields and aliases,
 * INTO, FROM sources, WHERE, GROUP BY expressions, fill, ORDER BY, LIMIT/OFFSET/SLIMIT/SOFFSET,
 * tz), and what SHOW statements share (ON db, FROM, WITH KEY). Each refuses what InfluxDB
 * refuses, with its text. Pure TypeScript.
 */

import type { Expr, Field, Fill, SelectStatement, ShowTagValues, Source } from './ast.js';
import { found, InfluxQLParseError, plain, quoteIdent } from './errors.js';
import { distinctKeyword, ExpressionParser, unsignedLiterals } from './expressions.js';

export type Target = 'required' | 'optional' | 'subquery';

/** A SELECT as parsed, before its GROUP BY is checked. */
export interface ParsedSelect {
  statement: SelectStatement;
  /** Raw GROUP BY expressions. */
  dimensions: Expr[];
  readsSubquery: boolean;
  /** Whether a field calls a function (InfluxDB's "not a raw query"). */
  hasCall: boolean;
}

const FILL_KINDS = new Set(['null', 'none', 'previous', 'linear']);

/** The clauses of SELECT and of the SHOW statements. */
export class ClauseParser extends ExpressionParser {
  select(target: Target): ParsedSelect {
    const fields = this.fields();
    const into = this.target(target);
    this.expect('FROM');
    const { sources, readsSubquery } = this.sources(true);
    const condition = this.condition();
    const dimensions = this.dimensionExprs();
    const fill = this.fill();
    const descending = this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    const slimit = this.optionalInt('SLIMIT');
    const soffset = this.optionalInt('SOFFSET');
    const timezone = this.location();
    const statement: SelectStatement = {
      kind: 'select',
      fields,
      sources,
      condition,
      dimensions: [],
      fill,
      descending,
      limit,
      offset,
      slimit,
      soffset,
      timezone,
      into,
    };
    return { statement, dimensions, readsSubquery, hasCall: fields.some((f) => containsCall(f.expr)) };
  }

  fields(): Field[] {
    const fields: Field[] = [];
    for (;;) {
      fields.push(this.field());
      if (this.scan().kind !== ',') {
        this.unscan();
        return fields;
      }
    }
  }

  field(): Field {
    let expr: Expr | null = this.regex();
    if (expr === null) {
      const first = this.next();
      this.unscan();
      expr = this.expr();
      const bad = comparisonIn(expr);
      if (bad !== null) {
        const message = `invalid operator ${bad} in SELECT clause at line ${first.pos.line}, char ${first.pos.char}; operator is intended for WHERE clause`;
        throw new InfluxQLParseError(message, first.pos);
      }
    }
    const alias = this.accept('AS') ? this.ident() : null;
    this.consumeWhitespace();
    return { expr, alias };
  }

  /** `INTO target`, rendered as InfluxDB prints it. */
  target(target: Target): string | null {
    const tok = this.next();
    if (tok.kind !== 'INTO') {
      if (target === 'required') throw found(tok, ['INTO']);
      this.unscan();
      return null;
    }
    const { idents } = this.segmentedIdents();
    let sameName = false;
    if (idents.length < 3 && this.s.peekRune() === 0x3a) {
      this.expect(':', 'MEASUREMENT');
      sameName = true;
    }
    const name = sameName ? ':MEASUREMENT' : quoteIdent([idents.pop()!]);
    const [database, retentionPolicy] = idents.length === 2 ? idents : [undefined, idents[0]];
    let text = database ? `${quoteIdent([database])}.` : '';
    if (retentionPolicy) text += quoteIdent([retentionPolicy]);
    if (database || retentionPolicy) text += '.';
    return text + name;
  }

  sources(subqueries: boolean): { sources: Source[]; readsSubquery: boolean } {
    const sources: Source[] = [];
    let readsSubquery = false;
    for (;;) {
      const source = this.source(subqueries);
      if (source === null) readsSubquery = true;
      else sources.push(source);
      if (!this.accept(',')) return { sources, readsSubquery };
    }
  }

  /** A measurement, `db.rp.m`, `/regex/` or `rp./regex/`; null for a subquery. */
  source(subqueries: boolean): Source | null {
    const re = this.regex();
    if (re !== null) {
      return { database: null, retentionPolicy: null, name: null, regex: re.source, pos: re.pos };
    }
    if (subqueries) {
      if (this.next().kind === '(') {
        this.expect('SELECT');
        this.select('subquery');
        this.expect(')');
        return null;
      }
      this.unscan();
    }
    const { idents, pos } = this.segmentedIdents();
    const part = (s: string | undefined) => (s === undefined || s === '' ? null : s);
    if (idents.length === 3) return { database: part(idents[0]), retentionPolicy: part(idents[1]), name: idents[2]!, regex: null, pos };
    const regex = this.regex()?.source ?? null;
    if (idents.length === 1) {
      return regex !== null
        ? { database: null, retentionPolicy: part(idents[0]), name: null, regex, pos }
        : { database: null, retentionPolicy: null, name: idents[0]!, regex: null, pos };
    }
    return regex !== null
      ? { database: part(idents[0]), retentionPolicy: part(idents[1]), name: null, regex, pos }
      : { database: null, retentionPolicy: part(idents[0]), name: idents[1]!, regex: null, pos };
  }

  condition(): Expr | null {
    if (!this.accept('WHERE')) return null;
    return this.expr();
  }

  dimensionExprs(): Expr[] {
    if (!this.accept('GROUP')) return [];
    this.expect('BY');
    const dimensions: Expr[] = [];
    for (;;) {
      const re = this.regex();
      if (re !== null) {
        dimensions.push(re);
      } else {
        dimensions.push(this.expr());
        this.consumeWhitespace();
      }
      if (this.scan().kind !== ',') {
        this.unscan();
        return dimensions;
      }
    }
  }

  fill(): Fill | null {
    if (!this.nextIsIdent('fill')) return null;
    const expr = this.expr();
    if (expr.type !== 'call') throw plain('fill must be a function call');
    if (expr.args.length !== 1) throw plain('fill requires an argument, e.g.: 0, null, none, previous, linear');
    const arg = expr.args[0]!;
    if (arg.type === 'ref' && arg.dataType === null && FILL_KINDS.has(arg.name)) return { kind: arg.name as 'null' | 'none' | 'previous' | 'linear' };
    if (arg.type === 'number' && !unsignedLiterals.has(arg)) return { kind: 'number', value: arg.value };
    throw plain('expected number argument in fill()');
  }

  /** What SHOW statements end with: `[WHERE …] [ORDER BY …] [LIMIT n] [OFFSET n]` (the order is parsed and not used). */
  listTail(): { condition: Expr | null; limit: number; offset: number } {
    const condition = this.condition();
    this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    return { condition, limit, offset };
  }

  /** ORDER BY: true for `time DESC`. */
  orderBy(): boolean {
    if (!this.accept('ORDER')) return false;
    this.expect('BY');
    const tok = this.next();
    let descending: boolean;
    let count = 1;
    if (tok.kind === 'ASC' || tok.kind === 'DESC') {
      descending = tok.kind === 'DESC';
    } else if (tok.kind === 'IDENT') {
      this.unscan();
      descending = this.sortField();
      if (tok.lit !== 'time') throw plain('only ORDER BY time supported at this time');
    } else {
      throw found(tok, ['identifier', 'ASC', 'DESC']);
    }
    while (this.accept(',')) {
      this.sortField();
      count++;
    }
    if (count > 1) throw plain('only ORDER BY time supported at this time');
    return descending;
  }

  sortField(): boolean {
    this.ident();
    const tok = this.next();
    if (tok.kind === 'ASC' || tok.kind === 'DESC') return tok.kind === 'DESC';
    this.unscan();
    return false;
  }

  location(): string | null {
    if (!this.nextIsIdent('tz')) return null;
    const expr = this.expr();
    if (expr.type !== 'call') throw plain('tz must be a function call');
    if (expr.args.length !== 1) throw plain('tz requires exactly one argument');
    const arg = expr.args[0]!;
    if (arg.type !== 'string') throw plain('expected string argument in tz()');
    const zone = loadLocation(arg.value);
    if (zone === null) throw plain(`unable to find time zone ${arg.value}`);
    return zone;
  }

  /** `ON db`, or null. */
  onDatabase(): string | null {
    return this.accept('ON') ? this.ident() : null;
  }

  fromSources(): Source[] {
    return this.accept('FROM') ? this.sources(false).sources : [];
  }

  /** `WITH KEY = "k" | != "k" | =~ /re/ | !~ /re/ | IN ("a", "b")`. */
  withKey(): ShowTagValues['key'] {
    this.expect('WITH', 'KEY');
    const op = this.next();
    if (op.kind === 'IN') {
      this.expect('(');
      const values = this.identList();
      this.expect(')');
      return { op: 'in', values };
    }
    if (op.kind === '=' || op.kind === '!=') return { op: op.kind, value: this.ident() };
    if (op.kind === '=~' || op.kind === '!~') {
      const re = this.regex();
      if (re === null) throw found(this.next(), ['regex']);
      return { op: op.kind, value: re.source };
    }
    throw found(op, ['IN', '=', '=~']);
  }
}

/** Whether a field calls a function (`DISTINCT x` does not count, as in InfluxDB). */
function containsCall(expr: Expr): boolean {
  switch (expr.type) {
    case 'call':
      return !distinctKeyword.has(expr) || expr.args.some(containsCall);
    case 'binary':
      return containsCall(expr.left) || containsCall(expr.right);
    case 'paren':
      return containsCall(expr.expr);
    default:
      return false;
  }
}

const COMPARISONS = new Set<string>(['=', '!=', '=~', '!~', '<', '<=', '>', '>=', 'AND', 'OR']);

/**
 * The comparison or logical operator a SELECT field may not hold, as InfluxDB finds it: the
 * last found walking the tree in order, not looking inside an operator already found.
 */
function comparisonIn(expr: Expr): string | null {
  let bad: string | null = null;
  const walk = (e: Expr): void => {
    switch (e.type) {
      case 'binary':
        if (COMPARISONS.has(e.op)) {
          bad = e.op;
          return;
        }
        walk(e.left);
        walk(e.right);
        return;
      case 'call':
        e.args.forEach(walk);
        return;
      case 'paren':
        walk(e.expr);
        return;
      default:
        return;
    }
  };
  walk(expr);
  return bad;
}

/** The local zone InfluxDB's `tz('Local')` means. */
function localZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
}

/**
 * A zone name as Go's time.LoadLocation takes it: '' and 'UTC' are UTC, 'Local' the server's
 * zone, else a tz database name, exact case (Go reads the zone files by name). Null if unknown.
 */
function loadLocation(name: string): string | null {
  if (name === '' || name === 'UTC') return 'UTC';
  if (name === 'Local') return localZone();
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    if (resolved !== name && resolved.toLowerCase() === name.toLowerCase()) return null;
    return name;
  } catch {
    return null;
  }
}
