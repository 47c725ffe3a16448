/**
 * The InfluxQL parser (../shared/WIRE.md part 3 "InfluxDB 1.x compatibility at the root"):
 * query text to the syntax tree of ast.ts, by recursive descent over lexer.ts's tokens. Pure
 * TypeScript.
 *
 * The reference is the influxd WIRE names (Debian's influxdb 1.6.7, built with the influxql
 * library of 2020): the parser takes what it parses and refuses the rest with its own message
 * (the HTTP layer puts `error parsing query: ` before it): `found FRM, expected FROM at line 1,
 * char 10`, `bad regex:  at line 1, char 14`, `invalid duration`, `only ORDER BY time supported
 * at this time`, `unable to find time zone x`… To get the same tokens, positions and messages it
 * reads the tokens in the order InfluxDB's parser does, whitespace included where InfluxDB
 * minds it (`mean (x)` is not a call, `a.b` is one name, `a . b` is not). The messages were
 * checked against that influxd (test/influx/influxql-parser.test.ts keeps the tables).
 *
 * Statements: SELECT, SHOW DATABASES / MEASUREMENTS / TAG KEYS / TAG VALUES / FIELD KEYS /
 * SERIES / RETENTION POLICIES become their ast.ts statements. Every other statement InfluxDB
 * has is parsed in full (so its errors are InfluxDB's too) and becomes `{kind: 'unsupported',
 * what}`: CREATE/DROP DATABASE, MEASUREMENT, RETENTION POLICY, USER, SERIES, SHARD,
 * SUBSCRIPTION, CONTINUOUS QUERY, DELETE, GRANT, REVOKE, ALTER RETENTION POLICY, SET PASSWORD,
 * KILL QUERY, EXPLAIN [ANALYZE], SHOW USERS / GRANTS / STATS / DIAGNOSTICS / QUERIES / SHARDS /
 * SHARD GROUPS / SUBSCRIPTIONS / CONTINUOUS QUERIES and the CARDINALITY forms. A SELECT reading
 * a subquery is `what: 'SUBQUERY'`. INSERT is not InfluxQL (the CLI turns it into a /write):
 * a parse error, as in InfluxDB.
 *
 * Expressions: binary operators by precedence OR < AND < comparisons < `+ - | ^` < `* / % &`,
 * left-associative; a unary sign folds into a literal or becomes `-1 * x`; `::field`, `::tag`
 * and `::float`… casts; calls with any arguments (regular expressions included); DISTINCT x is
 * the call distinct(x); `<>` is `!=`. Durations are milliseconds (exact to the nanosecond);
 * integers above 2^53 are the nearest double. `$name` takes its value from `options.params`.
 *
 * GROUP BY: InfluxDB parses any expression there and refuses the wrong ones when it prepares
 * the statement, answering a statement error (not a parse error). The same checks run here
 * after the whole query parsed, with the same texts; a statement that fails them becomes
 * `{kind: 'unsupported', what: 'SELECT', error}`. `time(d, now())` takes its offset from
 * `options.nowMs`, to the millisecond.
 *
 * Where this parser differs from the reference, on purpose:
 * - an expression may nest 1000 levels (parentheses, calls, operators), so that no query can
 *   exhaust the stack here or in whoever walks the tree; deeper is a parse error;
 * - SHOW MEASUREMENTS WITH MEASUREMENT keeps what follows the operator (a name gives `=`, a
 *   regex `=~`), as InfluxDB does whatever the operator; ORDER BY on SHOW statements and SLIMIT
 *   / SOFFSET on SHOW TAG KEYS are parsed and dropped (the tree has no place for them);
 * - tz() names are checked against the JavaScript time zone data, not the server's zoneinfo
 *   files (same names, exact case); `tz('')` is `UTC` and `tz('Local')` this process's zone;
 * - a bound JSON number with an integral value is an integer (`2.0` too).
 */

import type {
  Dimension,
  Expr,
  Field,
  Fill,
  Position,
  SelectStatement,
  ShowFieldKeys,
  ShowMeasurements,
  ShowRetentionPolicies,
  ShowSeries,
  ShowTagKeys,
  ShowTagValues,
  Source,
  Statement,
  Unsupported,
} from './ast.js';
import { isOperator, isWhitespace, keywordOf, nsToMs, parseDuration, PRECEDENCE, TokenStream, tokenText, type Operator, type Token, type TokenKind } from './lexer.js';
import { regexSyntaxError } from './regex.js';
import { looksLikeTime, parseTimeString } from './time-string.js';

/**
 * A query InfluxDB would not parse. `message` is InfluxDB's text (without the `error parsing
 * query: ` the HTTP answer puts before it); `pos` is where it points when the text names a
 * position (it then ends with `at line L, char C`).
 */
export class InfluxQLParseError extends Error {
  readonly pos: Position | null;

  constructor(message: string, pos: Position | null = null) {
    super(message);
    this.name = 'InfluxQLParseError';
    this.pos = pos;
  }
}

export interface ParseOptions {
  /** The clock of `GROUP BY time(d, now())` (epoch ms); Date.now() when not given. */
  nowMs?: number;
  /**
   * Values of `$name` bound parameters: InfluxDB's `params` form value, JSON-decoded. A string,
   * boolean or number stands for that literal (an integral number for an integer: JSON `2.0` too,
   * where InfluxDB would see a float); `{"identifier": "m"}`, `{"regex": "^a"}`,
   * `{"duration": "1h"}` (or nanoseconds), `{"string"|"integer"|"float": …}` for the others.
   * A parameter that is not given, or cannot be bound, is InfluxDB's `missing parameter: …`.
   */
  params?: Readonly<Record<string, unknown>>;
}

/**
 * Parses `text` into its statements (`;` between them; empty statements are skipped). As
 * InfluxDB's /query does with its `q`, white space around the text is dropped first: lines and
 * chars count from the first other character (offsets stay offsets in `text`). An empty text, or
 * one of only `;` and comments, has no statement.
 */
export function parseQuery(text: string, options: ParseOptions = {}): Statement[] {
  let start = 0;
  let end = text.length;
  while (start < end && isGoSpace(text.charCodeAt(start))) start++;
  while (end > start && isGoSpace(text.charCodeAt(end - 1))) end--;
  return new Parser(text.slice(start, end), start, options).query();
}

/** The white space of Go's strings.TrimSpace (Unicode White_Space). */
function isGoSpace(c: number): boolean {
  return (
    (c >= 0x09 && c <= 0x0d) ||
    c === 0x20 ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

// ---------------------------------------------------------------------------------------------
// Errors, in InfluxDB's three forms.

/** The position InfluxDB names when it has none (`too many segments in …`). */
const FIRST: Position = { offset: 0, line: 1, char: 1 };

function errorAt(message: string, pos: Position): InfluxQLParseError {
  return new InfluxQLParseError(`${message} at line ${pos.line}, char ${pos.char}`, pos);
}

function found(tok: Token, expected: readonly string[]): InfluxQLParseError {
  return errorAt(`found ${tokenText(tok)}, expected ${expected.join(', ')}`, tok.pos);
}

function plain(message: string): InfluxQLParseError {
  return new InfluxQLParseError(message);
}

// ---------------------------------------------------------------------------------------------
// Facts about parsed expressions the tree does not hold.

/** Integer literals above int64 (InfluxDB's unsigned literals), with their exact value. */
const unsignedLiterals = new WeakMap<Expr, bigint>();
/** Exact nanoseconds of duration literals. */
const durationNs = new WeakMap<Expr, bigint>();
/** Calls written `DISTINCT x`. */
const distinctKeyword = new WeakSet<Expr>();

const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

function quoteString(s: string): string {
  return `'${s.replace(/[\n\\']/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}'`;
}

function identNeedsQuotes(ident: string): boolean {
  if (keywordOf(ident) !== null) return true;
  for (let i = 0; i < ident.length; i++) {
    const c = ident[i]!;
    const letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
    if (!letter && (i === 0 || c < '0' || c > '9')) return true;
  }
  return false;
}

/** InfluxDB's QuoteIdent: segments joined by `.`, quoted where needed. */
function quoteIdent(segments: readonly string[]): string {
  const last = segments.length - 1;
  return segments
    .map((segment, i) => {
      const quote = identNeedsQuotes(segment) || (i < last && segment !== '') || ((i === 0 || i === last) && segment === '');
      const text = segment.replace(/[\n\\"]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
      return quote ? `"${text}"` : text;
    })
    .join('.');
}

/** InfluxDB's FormatDuration: the largest unit that divides the duration. */
function formatDuration(ns: bigint): string {
  if (ns === 0n) return '0s';
  const units: [bigint, string][] = [
    [604_800_000_000_000n, 'w'],
    [86_400_000_000_000n, 'd'],
    [3_600_000_000_000n, 'h'],
    [60_000_000_000n, 'm'],
    [1_000_000_000n, 's'],
    [1_000_000n, 'ms'],
    [1_000n, 'u'],
  ];
  for (const [size, unit] of units) if (ns % size === 0n) return `${ns / size}${unit}`;
  return `${ns}ns`;
}

/** A number as Go's FormatFloat(v, 'f', -1, 64) writes it: shortest digits, no exponent. */
function formatFloat(v: number): string {
  const text = String(v);
  const e = text.indexOf('e');
  if (e < 0) return text;
  const negative = text.startsWith('-');
  const mantissa = text.slice(negative ? 1 : 0, e);
  const exponent = Number(text.slice(e + 1));
  const point = mantissa.indexOf('.');
  const digits = mantissa.replace('.', '');
  const intDigits = (point < 0 ? mantissa.length : point) + exponent;
  const body =
    intDigits <= 0 ? `0.${'0'.repeat(-intDigits)}${digits}` : intDigits >= digits.length ? digits + '0'.repeat(intDigits - digits.length) : `${digits.slice(0, intDigits)}.${digits.slice(intDigits)}`;
  return negative ? `-${body}` : body;
}

const INT64_MIN = -(1n << 63n);

/** The token a bound parameter value stands for (InfluxDB's BindValue); errors are BOUNDPARAM tokens holding the text. */
function bindValue(value: unknown): [TokenKind, string] {
  const failed = (text: string): [TokenKind, string] => ['BOUNDPARAM', text];
  const integer = (n: number | bigint): [TokenKind, string] | null => {
    const big = BigInt(n);
    return big > INT64_MAX || big < INT64_MIN ? null : ['INTEGER', big.toString()];
  };
  switch (typeof value) {
    case 'string':
      return ['STRING', value];
    case 'boolean':
      return [value ? 'TRUE' : 'FALSE', ''];
    case 'bigint':
      return integer(value) ?? failed(`strconv.ParseInt: parsing "${value}": value out of range`);
    case 'number':
      if (!Number.isFinite(value)) return failed('unable to bind parameter with type float64');
      if (Number.isInteger(value)) return integer(value) ?? failed(`strconv.ParseInt: parsing "${BigInt(value)}": value out of range`);
      return ['NUMBER', formatFloat(value)];
    case 'object':
      if (value === null) return failed('unable to bind parameter with type <nil>');
      if (Array.isArray(value)) return failed('unable to bind parameter with type []interface {}');
      break;
    default:
      return failed('unable to bind parameter with type <nil>');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length !== 1) return failed('bound object parameter value must have exactly one entry');
  const [type, inner] = entries[0]!;
  switch (type) {
    case 'ident':
    case 'identifier':
      return typeof inner === 'string' ? ['IDENT', inner] : failed('identifier must be a string value');
    case 'regex':
      return typeof inner === 'string' ? ['REGEX', inner] : failed('regex literal must be a string value');
    case 'string':
      return typeof inner === 'string' ? ['STRING', inner] : failed('string literal must be a string value');
    case 'float':
    case 'number':
      return typeof inner === 'number' && Number.isFinite(inner) ? ['NUMBER', formatFloat(inner)] : failed('number literal must be a float value');
    case 'int':
    case 'integer':
      return typeof inner === 'number' && Number.isInteger(inner) ? (integer(inner) ?? failed('integer literal must be an integer value')) : failed('integer literal must be an integer value');
    case 'duration':
      if (typeof inner === 'string') return ['DURATIONVAL', inner];
      if (typeof inner === 'number' && Number.isInteger(inner)) return ['DURATIONVAL', formatDuration(BigInt(inner))];
      return failed('duration literal must be a string or integer value');
    default:
      return failed(`unknown bind object type: ${type}`);
  }
}

function unsupported(what: string): Unsupported {
  return { kind: 'unsupported', what };
}

type Target = 'required' | 'optional' | 'subquery';

type RegexExpr = Extract<Expr, { type: 'regex' }>;

/** A SELECT as parsed, before its GROUP BY is checked. */
interface ParsedSelect {
  statement: SelectStatement;
  /** Raw GROUP BY expressions. */
  dimensions: Expr[];
  readsSubquery: boolean;
  /** Whether a field calls a function (InfluxDB's "not a raw query"). */
  hasCall: boolean;
}

// ---------------------------------------------------------------------------------------------
// Statements: the first tokens choose the parser, as InfluxDB's statement tree does; the
// expected-token lists of its errors are the keys in this order.

type Handler = (p: Parser) => Statement;
type Tree = Map<TokenKind, Tree | Handler>;

function tree(entries: [TokenKind, Tree | Handler][]): Tree {
  return new Map(entries);
}

const LANGUAGE: Tree = tree([
  ['SELECT', (p) => p.selectStatement('optional')],
  ['DELETE', (p) => p.deleteStatement()],
  [
    'SHOW',
    tree([
      ['CONTINUOUS', tree([['QUERIES', () => unsupported('SHOW CONTINUOUS QUERIES')]])],
      ['DATABASES', () => ({ kind: 'show-databases' })],
      ['DIAGNOSTICS', (p) => p.showForModule('SHOW DIAGNOSTICS')],
      [
        'FIELD',
        tree([
          ['KEY', (p) => p.keyCardinality('SHOW FIELD KEY')],
          ['KEYS', (p) => p.showFieldKeys()],
        ]),
      ],
      ['GRANTS', tree([['FOR', (p) => p.identThen(unsupported('SHOW GRANTS'))]])],
      [
        'MEASUREMENT',
        tree([
          ['EXACT', (p) => p.cardinality('SHOW MEASUREMENT EXACT CARDINALITY', { exact: true })],
          ['CARDINALITY', (p) => p.cardinality('SHOW MEASUREMENT CARDINALITY')],
        ]),
      ],
      ['MEASUREMENTS', (p) => p.showMeasurements()],
      ['QUERIES', () => unsupported('SHOW QUERIES')],
      ['RETENTION', tree([['POLICIES', (p) => p.showRetentionPolicies()]])],
      ['SERIES', (p) => p.showSeries()],
      ['SHARD', tree([['GROUPS', () => unsupported('SHOW SHARD GROUPS')]])],
      ['SHARDS', () => unsupported('SHOW SHARDS')],
      ['STATS', (p) => p.showForModule('SHOW STATS')],
      ['SUBSCRIPTIONS', () => unsupported('SHOW SUBSCRIPTIONS')],
      [
        'TAG',
        tree([
          ['KEY', (p) => p.keyCardinality('SHOW TAG KEY')],
          ['KEYS', (p) => p.showTagKeys()],
          ['VALUES', (p) => p.showTagValues()],
        ]),
      ],
      ['USERS', () => unsupported('SHOW USERS')],
    ]),
  ],
  [
    'CREATE',
    tree([
      ['CONTINUOUS', tree([['QUERY', (p) => p.createContinuousQuery()]])],
      ['DATABASE', (p) => p.createDatabase()],
      ['USER', (p) => p.createUser()],
      ['RETENTION', tree([['POLICY', (p) => p.createRetentionPolicy()]])],
      ['SUBSCRIPTION', (p) => p.createSubscription()],
    ]),
  ],
  [
    'DROP',
    tree([
      ['CONTINUOUS', tree([['QUERY', (p) => p.nameOnDatabase('DROP CONTINUOUS QUERY')]])],
      ['DATABASE', (p) => p.identThen(unsupported('DROP DATABASE'))],
      ['MEASUREMENT', (p) => p.identThen(unsupported('DROP MEASUREMENT'))],
      ['RETENTION', tree([['POLICY', (p) => p.nameOnDatabase('DROP RETENTION POLICY')]])],
      ['SERIES', (p) => p.dropSeries()],
      ['SHARD', (p) => p.uintThen(unsupported('DROP SHARD'))],
      ['SUBSCRIPTION', (p) => p.dropSubscription()],
      ['USER', (p) => p.identThen(unsupported('DROP USER'))],
    ]),
  ],
  ['EXPLAIN', (p) => p.explain()],
  ['GRANT', (p) => p.grantOrRevoke('GRANT')],
  ['REVOKE', (p) => p.grantOrRevoke('REVOKE')],
  ['ALTER', tree([['RETENTION', tree([['POLICY', (p) => p.alterRetentionPolicy()]])]])],
  ['SET', tree([['PASSWORD', tree([['FOR', (p) => p.setPassword()]])]])],
  ['KILL', tree([['QUERY', (p) => p.killQuery()]])],
]);

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
const FILL_KINDS = new Set(['null', 'none', 'previous', 'linear']);

class Parser {
  private readonly s: TokenStream;
  private readonly nowMs: number;
  private readonly params: Readonly<Record<string, unknown>> | undefined;
  /** expr() calls under way. */
  private nesting = 0;

  constructor(text: string, offsetBase: number, options: ParseOptions) {
    this.s = new TokenStream(text, offsetBase);
    this.nowMs = options.nowMs ?? Date.now();
    this.params = options.params;
  }

  // --- token plumbing ------------------------------------------------------------------------

  private scan(): Token {
    return this.bind(this.s.scan());
  }

  private scanRegex(): Token {
    return this.bind(this.s.scanRegex());
  }

  /** The next token that is not whitespace or a comment. */
  private next(): Token {
    for (;;) {
      const tok = this.scan();
      if (tok.kind !== 'WS' && tok.kind !== 'COMMENT') return tok;
    }
  }

  /** A `$name` token stands for its parameter's value, as InfluxDB substitutes it while scanning. */
  private bind(tok: Token): Token {
    if (tok.kind !== 'BOUNDPARAM' || this.params === undefined) return tok;
    const name = tok.lit.startsWith('$') ? tok.lit.slice(1) : tok.lit;
    if (name === '' || !Object.hasOwn(this.params, name)) return tok;
    const [kind, lit] = bindValue(this.params[name]);
    return { ...tok, kind, lit };
  }

  private unscan(): void {
    this.s.unscan();
  }

  private consumeWhitespace(): void {
    if (this.scan().kind !== 'WS') this.unscan();
  }

  /** The next token must be `kind`. */
  private expect(...kinds: TokenKind[]): void {
    for (const kind of kinds) {
      const tok = this.next();
      if (tok.kind !== kind) throw found(tok, [kind]);
    }
  }

  /** Takes the next token when it is `kind`. */
  private accept(kind: TokenKind): boolean {
    if (this.next().kind === kind) return true;
    this.unscan();
    return false;
  }

  ident(): string {
    const tok = this.next();
    if (tok.kind !== 'IDENT') throw found(tok, ['identifier']);
    return tok.lit;
  }

  private string(): string {
    const tok = this.next();
    if (tok.kind !== 'STRING') throw found(tok, ['string']);
    return tok.lit;
  }

  private identList(): string[] {
    const list = [this.ident()];
    while (this.accept(',')) list.push(this.ident());
    return list;
  }

  private stringList(): string[] {
    const list = [this.string()];
    while (this.accept(',')) list.push(this.string());
    return list;
  }

  /** An integer in min..max (InfluxDB's ParseInt). */
  private int(min: number, max: number): number {
    const tok = this.next();
    if (tok.kind !== 'INTEGER') throw found(tok, ['integer']);
    const n = BigInt(tok.lit);
    if (n > INT64_MAX) throw errorAt(`strconv.Atoi: parsing ${JSON.stringify(tok.lit)}: value out of range`, tok.pos);
    if (n < BigInt(min) || n > BigInt(max)) throw errorAt(`invalid value ${n}: must be ${min} <= n <= ${max}`, tok.pos);
    return Number(n);
  }

  private uint64(): void {
    const tok = this.next();
    if (tok.kind !== 'INTEGER') throw found(tok, ['integer']);
    const n = BigInt(tok.lit);
    if (n < 0n) throw errorAt(`strconv.ParseUint: parsing ${JSON.stringify(tok.lit)}: invalid syntax`, tok.pos);
    if (n > UINT64_MAX) throw errorAt(`strconv.ParseUint: parsing ${JSON.stringify(tok.lit)}: value out of range`, tok.pos);
  }

  /** A duration or INF (retention policies). */
  private durationOption(): void {
    const tok = this.next();
    if (tok.kind === 'INF') return;
    if (tok.kind !== 'DURATIONVAL') throw found(tok, ['duration']);
    const ns = parseDuration(tok.lit);
    if (typeof ns === 'string') throw errorAt(ns, tok.pos);
  }

  private durationValue(): bigint {
    const tok = this.next();
    if (tok.kind !== 'DURATIONVAL') throw found(tok, ['duration']);
    const ns = parseDuration(tok.lit);
    if (typeof ns === 'string') throw errorAt(ns, tok.pos);
    return ns;
  }

  /** `LIMIT n` and the like: 0 when the keyword is not there. */
  private optionalInt(keyword: TokenKind): number {
    if (!this.accept(keyword)) return 0;
    const tok = this.next();
    if (tok.kind !== 'INTEGER') throw found(tok, ['integer']);
    const n = BigInt(tok.lit);
    // Negative only from a bound parameter.
    if (n < 0n) throw errorAt(`${keyword} must be >= 0`, tok.pos);
    return Number(n > INT64_MAX ? INT64_MAX : n);
  }

  // --- query and statements ------------------------------------------------------------------

  query(): Statement[] {
    const statements: Statement[] = [];
    let separated = true;
    for (;;) {
      const tok = this.next();
      if (tok.kind === 'EOF') return statements;
      if (tok.kind === ';') {
        separated = true;
        continue;
      }
      if (!separated) throw found(tok, [';']);
      this.unscan();
      statements.push(this.statement());
      separated = false;
    }
  }

  private statement(): Statement {
    let node: Tree = LANGUAGE;
    for (;;) {
      const tok = this.next();
      const next = node.get(tok.kind);
      if (next === undefined) throw found(tok, [...node.keys()]);
      if (typeof next === 'function') return next(this);
      node = next;
    }
  }

  selectStatement(target: Target): Statement {
    const parsed = this.select(target);
    if (parsed.readsSubquery) return unsupported('SUBQUERY');
    const dimensions = compileDimensions(parsed.dimensions, this.nowMs);
    if (typeof dimensions === 'string') return { kind: 'unsupported', what: 'SELECT', error: dimensions };
    parsed.statement.dimensions = dimensions;
    return parsed.statement;
  }

  private select(target: Target): ParsedSelect {
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

  private fields(): Field[] {
    const fields: Field[] = [];
    for (;;) {
      fields.push(this.field());
      if (this.scan().kind !== ',') {
        this.unscan();
        return fields;
      }
    }
  }

  private field(): Field {
    let expr: Expr | null = this.regex();
    if (expr === null) {
      const first = this.next();
      this.unscan();
      expr = this.expr();
      const bad = comparisonIn(expr);
      if (bad !== null) {
        throw plain(`invalid operator ${bad} in SELECT clause at line ${first.pos.line}, char ${first.pos.char}; operator is intended for WHERE clause`);
      }
    }
    const alias = this.accept('AS') ? this.ident() : null;
    this.consumeWhitespace();
    return { expr, alias };
  }

  /** `INTO target`, rendered as InfluxDB prints it. */
  private target(target: Target): string | null {
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

  private sources(subqueries: boolean): { sources: Source[]; readsSubquery: boolean } {
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
  private source(subqueries: boolean): Source | null {
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

  /** `a`, `a.b`, `"a"."b".c`, `a..c`: one to three identifiers. */
  private segmentedIdents(): { idents: string[]; pos: Position } {
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

  private condition(): Expr | null {
    if (!this.accept('WHERE')) return null;
    return this.expr();
  }

  private dimensionExprs(): Expr[] {
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

  /** Whether the next token is the identifier `name` (any case), left unread. */
  private nextIsIdent(name: string): boolean {
    const tok = this.next();
    this.unscan();
    return tok.kind === 'IDENT' && tok.lit.toLowerCase() === name;
  }

  private fill(): Fill | null {
    if (!this.nextIsIdent('fill')) return null;
    const expr = this.expr();
    if (expr.type !== 'call') throw plain('fill must be a function call');
    if (expr.args.length !== 1) throw plain('fill requires an argument, e.g.: 0, null, none, previous, linear');
    const arg = expr.args[0]!;
    if (arg.type === 'ref' && arg.dataType === null && FILL_KINDS.has(arg.name)) return { kind: arg.name as 'null' | 'none' | 'previous' | 'linear' };
    if (arg.type === 'number' && !unsignedLiterals.has(arg)) return { kind: 'number', value: arg.value };
    throw plain('expected number argument in fill()');
  }

  /** ORDER BY: true for `time DESC`. */
  private orderBy(): boolean {
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

  private sortField(): boolean {
    this.ident();
    const tok = this.next();
    if (tok.kind === 'ASC' || tok.kind === 'DESC') return tok.kind === 'DESC';
    this.unscan();
    return false;
  }

  private location(): string | null {
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

  // --- expressions ---------------------------------------------------------------------------

  /** A regular expression when the next character (after whitespace) is `/`, else null. */
  private regex(): RegexExpr | null {
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

  private unary(): Expr {
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
  private signed(sign: Token): Expr {
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
  private varRef(): Expr {
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
  private call(name: string, pos: Position): Expr {
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

  // --- SHOW ----------------------------------------------------------------------------------

  /** `ON db`, or null. */
  private onDatabase(): string | null {
    return this.accept('ON') ? this.ident() : null;
  }

  private fromSources(): Source[] {
    return this.accept('FROM') ? this.sources(false).sources : [];
  }

  showMeasurements(): ShowMeasurements {
    const database = this.onDatabase();
    let measurement: ShowMeasurements['measurement'] = null;
    if (this.accept('WITH')) {
      this.expect('MEASUREMENT');
      const op = this.next();
      if (op.kind !== '=' && op.kind !== '=~') throw found(op, ['=', '=~']);
      // InfluxDB reads a measurement or a regex after either operator and keeps only that.
      const source = this.source(false)!;
      measurement = source.regex !== null ? { op: '=~', value: source.regex } : { op: '=', value: source.name! };
    }
    const condition = this.condition();
    this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    return { kind: 'show-measurements', database, measurement, condition, limit, offset };
  }

  showTagKeys(): ShowTagKeys {
    const database = this.onDatabase();
    const sources = this.fromSources();
    const condition = this.condition();
    this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    // SLIMIT and SOFFSET are parsed as InfluxDB does; the subset does not use them.
    this.optionalInt('SLIMIT');
    this.optionalInt('SOFFSET');
    return { kind: 'show-tag-keys', database, sources, condition, limit, offset };
  }

  showTagValues(): Statement {
    const tok = this.next();
    if (tok.kind === 'EXACT') return this.cardinality('SHOW TAG VALUES EXACT CARDINALITY', { exact: true, withKey: true });
    if (tok.kind === 'CARDINALITY') return this.cardinality('SHOW TAG VALUES CARDINALITY', { withKey: true });
    this.unscan();
    const database = this.onDatabase();
    const sources = this.fromSources();
    const key = this.withKey();
    const condition = this.condition();
    this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    const statement: ShowTagValues = { kind: 'show-tag-values', database, sources, key, condition, limit, offset };
    return statement;
  }

  /** `WITH KEY = "k" | != "k" | =~ /re/ | !~ /re/ | IN ("a", "b")`. */
  private withKey(): ShowTagValues['key'] {
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

  showFieldKeys(): ShowFieldKeys {
    const database = this.onDatabase();
    const sources = this.fromSources();
    this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    return { kind: 'show-field-keys', database, sources, limit, offset };
  }

  showSeries(): Statement {
    const exact = this.accept('EXACT');
    if (this.accept('CARDINALITY')) return this.cardinality(exact ? 'SHOW SERIES EXACT CARDINALITY' : 'SHOW SERIES CARDINALITY');
    const database = this.onDatabase();
    const sources = this.fromSources();
    const condition = this.condition();
    this.orderBy();
    const limit = this.optionalInt('LIMIT');
    const offset = this.optionalInt('OFFSET');
    const statement: ShowSeries = { kind: 'show-series', database, sources, condition, limit, offset };
    return statement;
  }

  showRetentionPolicies(): ShowRetentionPolicies {
    return { kind: 'show-retention-policies', database: this.onDatabase() };
  }

  /** SHOW TAG KEY / FIELD KEY [EXACT] CARDINALITY. */
  keyCardinality(prefix: string): Statement {
    const exact = this.accept('EXACT');
    const tok = this.next();
    if (tok.kind !== 'CARDINALITY') throw found(tok, exact ? ['CARDINALITY'] : ['EXACT', 'CARDINALITY']);
    return this.cardinality(`${prefix}${exact ? ' EXACT' : ''} CARDINALITY`);
  }

  /**
   * A CARDINALITY statement from after its CARDINALITY (after its EXACT when `exact`):
   * [ON db] [FROM …] [WITH KEY … when `withKey`] [WHERE …] [GROUP BY …] [LIMIT n] [OFFSET n].
   */
  cardinality(what: string, options: { exact?: boolean; withKey?: boolean } = {}): Statement {
    if (options.exact === true) this.expect('CARDINALITY');
    this.onDatabase();
    this.fromSources();
    if (options.withKey === true) this.withKey();
    this.condition();
    this.dimensionExprs();
    this.optionalInt('LIMIT');
    this.optionalInt('OFFSET');
    return unsupported(what);
  }

  /** SHOW STATS / SHOW DIAGNOSTICS [FOR 'module']. */
  showForModule(what: string): Statement {
    if (this.accept('FOR')) this.string();
    return unsupported(what);
  }

  // --- the statements the subset does not run -------------------------------------------------

  identThen(statement: Statement): Statement {
    this.ident();
    return statement;
  }

  uintThen(statement: Statement): Statement {
    this.uint64();
    return statement;
  }

  /** `name ON db` (DROP CONTINUOUS QUERY, DROP RETENTION POLICY). */
  nameOnDatabase(what: string): Statement {
    this.ident();
    this.expect('ON');
    this.ident();
    return unsupported(what);
  }

  deleteStatement(): Statement {
    const tok = this.next();
    let sources: Source[] | null = null;
    if (tok.kind === 'FROM') {
      sources = this.sources(false).sources;
      checkNoDatabase(sources);
    } else {
      this.unscan();
    }
    const condition = this.condition();
    if (condition === null && sources === null) throw found(tok, ['FROM', 'WHERE']);
    return unsupported('DELETE');
  }

  dropSeries(): Statement {
    const tok = this.next();
    let sources: Source[] | null = null;
    if (tok.kind === 'FROM') {
      sources = this.sources(false).sources;
      checkNoDatabase(sources);
    } else {
      this.unscan();
    }
    const condition = this.condition();
    if (condition === null && sources === null) throw found(tok, ['FROM', 'WHERE']);
    return unsupported('DROP SERIES');
  }

  dropSubscription(): Statement {
    this.ident();
    this.expect('ON');
    this.ident();
    const dot = this.scan();
    if (dot.kind !== '.') throw found(dot, ['.']);
    this.ident();
    return unsupported('DROP SUBSCRIPTION');
  }

  createDatabase(): Statement {
    this.ident();
    if (!this.accept('WITH')) return unsupported('CREATE DATABASE');
    const tok = this.next();
    if (!['DURATION', 'NAME', 'REPLICATION', 'SHARD'].includes(tok.kind)) throw found(tok, ['DURATION', 'NAME', 'REPLICATION', 'SHARD']);
    this.unscan();
    if (this.accept('DURATION')) this.durationOption();
    if (this.accept('REPLICATION')) this.int(1, 2 ** 31 - 1);
    if (this.accept('SHARD')) {
      const duration = this.next();
      if (duration.kind !== 'DURATION') throw found(duration, ['DURATION']);
      this.durationOption();
    }
    if (this.accept('NAME')) this.ident();
    return unsupported('CREATE DATABASE');
  }

  createUser(): Statement {
    this.ident();
    this.expect('WITH', 'PASSWORD');
    this.string();
    if (this.accept('WITH')) this.expect('ALL', 'PRIVILEGES');
    return unsupported('CREATE USER');
  }

  createRetentionPolicy(): Statement {
    this.ident();
    this.expect('ON');
    this.ident();
    this.expect('DURATION');
    this.durationOption();
    this.expect('REPLICATION');
    this.int(1, 2 ** 31 - 1);
    if (this.accept('SHARD')) this.shardDuration();
    this.accept('DEFAULT');
    return unsupported('CREATE RETENTION POLICY');
  }

  /** After SHARD: `DURATION d` (not INF). */
  private shardDuration(): void {
    const duration = this.next();
    if (duration.kind !== 'DURATION') throw found(duration, ['DURATION']);
    const value = this.next();
    if (value.kind === 'INF') throw errorAt('invalid duration INF for shard duration', value.pos);
    this.unscan();
    this.durationOption();
  }

  alterRetentionPolicy(): Statement {
    const name = this.next();
    if (name.kind !== 'DEFAULT' && name.kind !== 'IDENT') throw found(name, ['identifier']);
    this.expect('ON');
    this.ident();
    const seen = new Set<TokenKind>();
    for (;;) {
      const tok = this.next();
      if (seen.has(tok.kind)) throw errorAt(`found duplicate ${tok.kind} option`, tok.pos);
      if (tok.kind === 'DURATION') this.durationOption();
      else if (tok.kind === 'REPLICATION') this.int(1, 2 ** 31 - 1);
      else if (tok.kind === 'SHARD') this.shardDuration();
      else if (tok.kind !== 'DEFAULT') {
        if (seen.size === 0) throw found(tok, ['DURATION', 'REPLICATION', 'SHARD', 'DEFAULT']);
        this.unscan();
        return unsupported('ALTER RETENTION POLICY');
      }
      seen.add(tok.kind);
    }
  }

  createSubscription(): Statement {
    this.ident();
    this.expect('ON');
    this.ident();
    const dot = this.scan();
    if (dot.kind !== '.') throw found(dot, ['.']);
    this.ident();
    this.expect('DESTINATIONS');
    const mode = this.next();
    if (mode.kind !== 'ALL' && mode.kind !== 'ANY') throw found(mode, ['ALL', 'ANY']);
    this.stringList();
    return unsupported('CREATE SUBSCRIPTION');
  }

  createContinuousQuery(): Statement {
    this.ident();
    this.expect('ON');
    this.ident();
    let every = 0n;
    let forDuration = 0n;
    if (this.accept('RESAMPLE')) {
      if (this.accept('EVERY')) every = this.durationValue();
      if (this.accept('FOR')) forDuration = this.durationValue();
      if (every === 0n && forDuration === 0n) throw found(this.next(), ['EVERY', 'FOR']);
    }
    this.expect('BEGIN', 'SELECT');
    const source = this.select('required');
    const interval = groupByInterval(source.dimensions);
    if (source.hasCall && (interval === 0n || typeof interval === 'string')) {
      this.unscan();
      this.unscan();
      const tok = this.next();
      throw found(tok, typeof interval === 'string' ? ['GROUP BY time(...)', interval] : ['GROUP BY time(...)']);
    }
    this.expect('END');
    if (typeof interval === 'string') throw plain(interval);
    if (forDuration !== 0n) {
      const least = every !== 0n && every > interval ? every : interval;
      if (least > forDuration) {
        throw plain(`FOR duration must be >= GROUP BY time duration: must be a minimum of ${formatDuration(least)}, got ${formatDuration(forDuration)}`);
      }
    }
    return unsupported('CREATE CONTINUOUS QUERY');
  }

  explain(): Statement {
    const analyze = this.accept('ANALYZE');
    this.expect('SELECT');
    this.select('optional');
    return unsupported(analyze ? 'EXPLAIN ANALYZE' : 'EXPLAIN');
  }

  grantOrRevoke(what: 'GRANT' | 'REVOKE'): Statement {
    const privilege = this.next();
    let all = false;
    if (privilege.kind === 'ALL') {
      all = true;
      this.accept('PRIVILEGES');
    } else if (privilege.kind !== 'READ' && privilege.kind !== 'WRITE') {
      throw found(privilege, ['READ', 'WRITE', 'ALL [PRIVILEGES]']);
    }
    const to = what === 'GRANT' ? 'TO' : 'FROM';
    const tok = this.next();
    if (tok.kind === 'ON') {
      this.ident();
      this.expect(to);
      this.ident();
      return unsupported(what);
    }
    if (tok.kind === to) {
      if (!all) throw found(tok, ['ON']);
      this.ident();
      return unsupported(what);
    }
    throw found(tok, all ? ['ON', to] : ['ON']);
  }

  setPassword(): Statement {
    this.ident();
    this.expect('=');
    this.string();
    return unsupported('SET PASSWORD');
  }

  killQuery(): Statement {
    this.uint64();
    if (this.accept('ON')) this.ident();
    return unsupported('KILL QUERY');
  }
}

function durationLiteral(ns: bigint, pos: Position): Expr {
  const literal: Expr = { type: 'duration', ms: nsToMs(ns), pos };
  durationNs.set(literal, ns);
  return literal;
}

/** DELETE and DROP SERIES apply to the database of the request, every retention policy. */
function checkNoDatabase(sources: readonly Source[]): void {
  let problem: string | null = null;
  for (const source of sources) {
    if (source.database !== null) problem = 'database not supported';
    if (source.retentionPolicy !== null) problem = 'retention policy not supported';
  }
  if (problem !== null) throw errorAt(problem, FIRST);
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

// ---------------------------------------------------------------------------------------------
// GROUP BY, checked as InfluxDB prepares a statement.

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
function compileDimensions(exprs: readonly Expr[], nowMs: number): Dimension[] | string {
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
function groupByInterval(exprs: readonly Expr[]): bigint | string {
  for (const expr of exprs) {
    if (expr.type !== 'call' || expr.name !== 'time') continue;
    if (expr.args.length < 1 || expr.args.length > 2) return 'time dimension expected 1 or 2 arguments';
    const arg = expr.args[0]!;
    if (arg.type !== 'duration') return 'time dimension must have duration argument';
    return durationNs.get(arg)!;
  }
  return 0n;
}
