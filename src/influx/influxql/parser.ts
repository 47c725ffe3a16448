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

import type { ShowFieldKeys, ShowMeasurements, ShowRetentionPolicies, ShowSeries, ShowTagKeys, ShowTagValues, Statement } from './ast.js';
import { ClauseParser, type Target } from './clauses.js';
import { found } from './errors.js';
import { compileDimensions } from './group-by.js';
import {
  alterRetentionPolicy,
  cardinality,
  createContinuousQuery,
  createDatabase,
  createRetentionPolicy,
  createSubscription,
  createUser,
  deleteStatement,
  dropSeries,
  dropSubscription,
  explain,
  grantOrRevoke,
  identThen,
  keyCardinality,
  killQuery,
  nameOnDatabase,
  setPassword,
  showForModule,
  uintThen,
  unsupported,
} from './other-statements.js';
import type { ParseOptions } from './token-reader.js';
import type { TokenKind } from './tokens.js';

export { InfluxQLParseError } from './errors.js';
export type { ParseOptions } from './token-reader.js';

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

/** A query: its statements, chosen by their first tokens; SELECT and the SHOW statements of the subset. */
class Parser extends ClauseParser {
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

  statement(): Statement {
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
    const { condition, limit, offset } = this.listTail();
    return { kind: 'show-measurements', database, measurement, condition, limit, offset };
  }

  showTagKeys(): ShowTagKeys {
    const database = this.onDatabase();
    const sources = this.fromSources();
    const { condition, limit, offset } = this.listTail();
    // SLIMIT and SOFFSET are parsed as InfluxDB does; the subset does not use them.
    this.optionalInt('SLIMIT');
    this.optionalInt('SOFFSET');
    return { kind: 'show-tag-keys', database, sources, condition, limit, offset };
  }

  showTagValues(): Statement {
    const tok = this.next();
    if (tok.kind === 'EXACT') return cardinality(this, 'SHOW TAG VALUES EXACT CARDINALITY', { exact: true, withKey: true });
    if (tok.kind === 'CARDINALITY') return cardinality(this, 'SHOW TAG VALUES CARDINALITY', { withKey: true });
    this.unscan();
    const database = this.onDatabase();
    const sources = this.fromSources();
    const key = this.withKey();
    const { condition, limit, offset } = this.listTail();
    const statement: ShowTagValues = { kind: 'show-tag-values', database, sources, key, condition, limit, offset };
    return statement;
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
    if (this.accept('CARDINALITY')) return cardinality(this, exact ? 'SHOW SERIES EXACT CARDINALITY' : 'SHOW SERIES CARDINALITY');
    const database = this.onDatabase();
    const sources = this.fromSources();
    const { condition, limit, offset } = this.listTail();
    const statement: ShowSeries = { kind: 'show-series', database, sources, condition, limit, offset };
    return statement;
  }

  showRetentionPolicies(): ShowRetentionPolicies {
    return { kind: 'show-retention-policies', database: this.onDatabase() };
  }
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
  ['DELETE', (p) => deleteStatement(p)],
  [
    'SHOW',
    tree([
      ['CONTINUOUS', tree([['QUERIES', () => unsupported('SHOW CONTINUOUS QUERIES')]])],
      ['DATABASES', () => ({ kind: 'show-databases' })],
      ['DIAGNOSTICS', (p) => showForModule(p, 'SHOW DIAGNOSTICS')],
      [
        'FIELD',
        tree([
          ['KEY', (p) => keyCardinality(p, 'SHOW FIELD KEY')],
          ['KEYS', (p) => p.showFieldKeys()],
        ]),
      ],
      ['GRANTS', tree([['FOR', (p) => identThen(p, unsupported('SHOW GRANTS'))]])],
      [
        'MEASUREMENT',
        tree([
          ['EXACT', (p) => cardinality(p, 'SHOW MEASUREMENT EXACT CARDINALITY', { exact: true })],
          ['CARDINALITY', (p) => cardinality(p, 'SHOW MEASUREMENT CARDINALITY')],
        ]),
      ],
      ['MEASUREMENTS', (p) => p.showMeasurements()],
      ['QUERIES', () => unsupported('SHOW QUERIES')],
      ['RETENTION', tree([['POLICIES', (p) => p.showRetentionPolicies()]])],
      ['SERIES', (p) => p.showSeries()],
      ['SHARD', tree([['GROUPS', () => unsupported('SHOW SHARD GROUPS')]])],
      ['SHARDS', () => unsupported('SHOW SHARDS')],
      ['STATS', (p) => showForModule(p, 'SHOW STATS')],
      ['SUBSCRIPTIONS', () => unsupported('SHOW SUBSCRIPTIONS')],
      [
        'TAG',
        tree([
          ['KEY', (p) => keyCardinality(p, 'SHOW TAG KEY')],
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
      ['CONTINUOUS', tree([['QUERY', (p) => createContinuousQuery(p)]])],
      ['DATABASE', (p) => createDatabase(p)],
      ['USER', (p) => createUser(p)],
      ['RETENTION', tree([['POLICY', (p) => createRetentionPolicy(p)]])],
      ['SUBSCRIPTION', (p) => createSubscription(p)],
    ]),
  ],
  [
    'DROP',
    tree([
      ['CONTINUOUS', tree([['QUERY', (p) => nameOnDatabase(p, 'DROP CONTINUOUS QUERY')]])],
      ['DATABASE', (p) => identThen(p, unsupported('DROP DATABASE'))],
      ['MEASUREMENT', (p) => identThen(p, unsupported('DROP MEASUREMENT'))],
      ['RETENTION', tree([['POLICY', (p) => nameOnDatabase(p, 'DROP RETENTION POLICY')]])],
      ['SERIES', (p) => dropSeries(p)],
      ['SHARD', (p) => uintThen(p, unsupported('DROP SHARD'))],
      ['SUBSCRIPTION', (p) => dropSubscription(p)],
      ['USER', (p) => identThen(p, unsupported('DROP USER'))],
    ]),
  ],
  ['EXPLAIN', (p) => explain(p)],
  ['GRANT', (p) => grantOrRevoke(p, 'GRANT')],
  ['REVOKE', (p) => grantOrRevoke(p, 'REVOKE')],
  ['ALTER', tree([['RETENTION', tree([['POLICY', (p) => alterRetentionPolicy(p)]])]])],
  ['SET', tree([['PASSWORD', tree([['FOR', (p) => setPassword(p)]])]])],
  ['KILL', tree([['QUERY', (p) => killQuery(p)]])],
]);
