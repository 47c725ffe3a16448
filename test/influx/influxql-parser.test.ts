// The InfluxQL parser (src/influx/influxql/): every statement form of WIRE.md part 3, what
// Grafana's InfluxDB datasource and the influx CLI send, precedence, positions, and InfluxDB
// 1.6's own error texts, checked against a running influxd (the tables below), plus token soups.
import { prng } from '../support/prng.js';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Dimension, Expr, SelectStatement, Source, Statement } from '../../src/influx/influxql/ast.js';
import { parseDuration } from '../../src/influx/influxql/duration.js';
import { tokenize } from '../../src/influx/influxql/lexer.js';
import { InfluxQLParseError, parseQuery } from '../../src/influx/influxql/parser.js';
import { regexSyntaxError } from '../../src/influx/influxql/regex.js';
import { parseTimeString } from '../../src/influx/influxql/time-string.js';

const NOW_MS = 1_700_000_123_456;

/** The statements without their positions. */
function parse(text: string): Statement[] {
  return JSON.parse(JSON.stringify(parseQuery(text, { nowMs: NOW_MS }), (key, value: unknown) => (key === 'pos' ? undefined : value))) as Statement[];
}

function one(text: string): Statement {
  const statements = parse(text);
  assert.equal(statements.length, 1, text);
  return statements[0]!;
}

function select(text: string): SelectStatement {
  const statement = one(text);
  assert.equal(statement.kind, 'select', `${text}: ${JSON.stringify(statement)}`);
  return statement as SelectStatement;
}

function parseError(text: string): InfluxQLParseError {
  try {
    parseQuery(text, { nowMs: NOW_MS });
  } catch (err) {
    assert.ok(err instanceof InfluxQLParseError, `${text}: ${String(err)}`);
    return err;
  }
  assert.fail(`${JSON.stringify(text)} parsed`);
}

// Expression builders (no positions).
const ref = (name: string, dataType: 'field' | 'tag' | null = null): Expr => ({ type: 'ref', name, dataType }) as Expr;
const int = (value: number): Expr => ({ type: 'number', value, integer: true }) as Expr;
const float = (value: number): Expr => ({ type: 'number', value, integer: false }) as Expr;
const str = (value: string): Expr => ({ type: 'string', value }) as Expr;
const bool = (value: boolean): Expr => ({ type: 'boolean', value }) as Expr;
const dur = (ms: number): Expr => ({ type: 'duration', ms }) as Expr;
const re = (source: string): Expr => ({ type: 'regex', source }) as Expr;
const call = (name: string, ...args: Expr[]): Expr => ({ type: 'call', name, args }) as Expr;
const bin = (op: string, left: Expr, right: Expr): Expr => ({ type: 'binary', op, left, right }) as Expr;
const paren = (expr: Expr): Expr => ({ type: 'paren', expr }) as Expr;
const star = (only: 'field' | 'tag' | null = null): Expr => ({ type: 'wildcard', only }) as Expr;
const now = call('now');
const time = ref('time');

const measurement = (name: string, retentionPolicy: string | null = null, database: string | null = null): Source =>
  ({ database, retentionPolicy, name, regex: null }) as Source;
const regexSource = (regex: string, retentionPolicy: string | null = null, database: string | null = null): Source =>
  ({ database, retentionPolicy, name: null, regex }) as Source;

const timeDim = (intervalMs: number, offsetMs = 0): Dimension => ({ type: 'time', intervalMs, offsetMs }) as Dimension;
const tagDim = (name: string): Dimension => ({ type: 'tag', name }) as Dimension;

/** A SELECT with every clause at its default, then `parts`. */
function selectOf(parts: Partial<SelectStatement>): SelectStatement {
  return {
    kind: 'select',
    fields: [],
    sources: [],
    condition: null,
    dimensions: [],
    fill: null,
    descending: false,
    limit: 0,
    offset: 0,
    slimit: 0,
    soffset: 0,
    timezone: null,
    into: null,
    ...parts,
  };
}

const field = (expr: Expr, alias: string | null = null) => ({ expr, alias });

// Observed on influxd 1.6.7~rc0 (Debian's influxdb package, the WIRE reference), GET /query?q=<statement>:
// 400 {"error": "error parsing query: <message>"}; the rows hold the statement and <message>.
// (influxd trims q before parsing; parseQuery does the same.)
const PARSE_ERRORS: [string, string][] = [
  ["SELECT", "found EOF, expected identifier, string, number, bool at line 1, char 8"],
  ["SELECT * FRM m", "found FRM, expected FROM at line 1, char 10"],
  ["SELECT * FROM", "found EOF, expected identifier at line 1, char 15"],
  ["SELECT 'abc", "found abc, expected identifier, string, number, bool at line 1, char 7"],
  ["SELECT * FROM /abc", "bad regex:  at line 1, char 14"],
  ["SELECT * FROM m WHERE time > now() - 5x", "invalid duration"],
  ["SELECT 1", "found EOF, expected FROM at line 1, char 9"],
  ["INSERT m v=1", "found INSERT, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1"],
  ["SHOW", "found EOF, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 6"],
  ["SHOW FOO", "found FOO, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 6"],
  ["SHOW TAG", "found EOF, expected KEY, KEYS, VALUES at line 1, char 10"],
  ["SHOW FIELD", "found EOF, expected KEY, KEYS at line 1, char 12"],
  ["SHOW RETENTION POLICY", "found POLICY, expected POLICIES at line 1, char 16"],
  ["CREATE", "found EOF, expected CONTINUOUS, DATABASE, USER, RETENTION, SUBSCRIPTION at line 1, char 8"],
  ["DROP FOO", "found FOO, expected CONTINUOUS, DATABASE, MEASUREMENT, RETENTION, SERIES, SHARD, SUBSCRIPTION, USER at line 1, char 6"],
  ["ALTER", "found EOF, expected RETENTION at line 1, char 7"],
  ["SET", "found EOF, expected PASSWORD at line 1, char 5"],
  ["KILL", "found EOF, expected QUERY at line 1, char 6"],
  ["EXPLAIN", "found EOF, expected SELECT at line 1, char 9"],
  ["GRANT", "found EOF, expected READ, WRITE, ALL [PRIVILEGES] at line 1, char 7"],
  ["REVOKE", "found EOF, expected READ, WRITE, ALL [PRIVILEGES] at line 1, char 8"],
  ["DELETE", "found EOF, expected FROM, WHERE at line 1, char 8"],
  ["SHOW MEASUREMENT", "found EOF, expected EXACT, CARDINALITY at line 1, char 18"],
  ["SHOW MEASUREMENTS ON *", "found *, expected identifier at line 1, char 22"],
  ["SHOW MEASUREMENTS WITH MEASUREMENT = 'm'", "found m, expected identifier at line 1, char 37"],
  ["SHOW MEASUREMENTS WITH MEASUREMENT != m", "found !=, expected =, =~ at line 1, char 36"],
  ["SELECT * FROM cpu SELECT", "found SELECT, expected ; at line 1, char 19"],
  ["SELECT * FROM cpu /x/", "found  , expected regex at line 1, char 18"],
  ["SELECT * FROM cpu/x/", "found /, expected ; at line 1, char 18"],
  ["SELECT \"abc", "found abc, expected identifier, string, number, bool at line 1, char 7"],
  ["SELECT '' FROM cpu WHERE", "found EOF, expected identifier, string, number, bool at line 1, char 26"],
  ["SELECT * FROM cpu WHERE x = 'a\\q'", "found \\q, expected identifier, string, number, bool at line 1, char 32"],
  ["SELECT a FROM cpu WHERE x =~ /(/", "error parsing regexp: missing closing ): `(` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a/i", "found i, expected ; at line 1, char 33"],
  ["SELECT a FROM cpu WHERE x =~ 'a'", "found a, expected regex at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x IN ('a')", "found IN, expected ; at line 1, char 27"],
  ["SELECT ", "found EOF, expected identifier, string, number, bool at line 1, char 8"],
  ["SELECT value FROM cpu WHERE ", "found EOF, expected identifier, string, number, bool at line 1, char 29"],
  ["SELECT value FROM cpu WHERE value = -- c", "found EOF, expected identifier, string, number, bool at line 1, char 42"],
  ["SELECT value > 1 FROM cpu", "invalid operator > in SELECT clause at line 1, char 8; operator is intended for WHERE clause"],
  ["SELECT a, b = 1 FROM cpu", "invalid operator = in SELECT clause at line 1, char 11; operator is intended for WHERE clause"],
  ["SELECT value::foo FROM cpu", "found foo, expected float, integer, unsigned, string, boolean, field, tag at line 1, char 15"],
  ["SELECT *::foo FROM cpu", "found foo, expected field, tag at line 1, char 11"],
  ["SELECT mean (value) FROM cpu", "found (, expected FROM at line 1, char 13"],
  ["SELECT \"a\\qb\" FROM cpu", "found \\q, expected identifier, string, number, bool at line 1, char 11"],
  ["SELECT value FROM a.b.c.d", "too many segments in \"a\".\"b\".\"c\".d at line 1, char 1"],
  ["SELECT value FROM a.b.c./x/", "found /, expected ; at line 1, char 25"],
  ["SELECT value INTO db.rp.:FOO FROM cpu", "found FOO, expected MEASUREMENT at line 1, char 26"],
  ["SELECT DISTINCT FROM cpu", "found FROM, expected identifier at line 1, char 17"],
  ["SELECT value FROM cpu WHERE $x = 1", "missing parameter: x"],
  ["SELECT value FROM cpu WHERE $ = 1", "empty bound parameter"],
  ["SELECT value FROM cpu WHERE x = 1 # c", "found #, expected ; at line 1, char 35"],
  ["SELECT value FROM cpu WHERE x ! 1", "found !, expected ; at line 1, char 31"],
  ["SELECT value FROM cpu /* c", "found  , expected regex at line 1, char 22"],
  ["SELECT value FROM cpu WHERE time > 1n", "invalid duration"],
  ["SELECT value FROM cpu WHERE time > 99999999999999999999h", "invalid duration"],
  ["SELECT value FROM cpu WHERE x > 99999999999999999999", "unable to parse integer at line 1, char 33"],
  ["SELECT value FROM cpu WHERE x > -9223372036854775809", "constant -9223372036854775809 underflows int64"],
  ["SELECT value FROM cpu WHERE x > - 'a'", "found a, expected identifier, number, duration, ( at line 1, char 34"],
  ["SELECT \"é\", x\nFROM cpu\n  WHERE x = 'ü' AND y ! 1", "found !, expected ; at line 3, char 23"],
  ["SELECT x\r\nFROM cpu\r\nWHERE ! ", "found !, expected identifier, string, number, bool at line 3, char 7"],
  ["SELECT x\rFROM cpu\rWHERE ! ", "found !, expected identifier, string, number, bool at line 3, char 7"],
  ["SELECT \"😀\" FRM", "found FRM, expected FROM at line 1, char 12"],
  ["SELECT\tx FROM cpu WHERE é", "found é, expected identifier, string, number, bool at line 1, char 25"],
  ["SELECT x FROM cpu WHERE x = 1 /* c */ AND", "found EOF, expected identifier, string, number, bool at line 1, char 43"],
  ["SELECT x FROM cpu;  SELECT", "found EOF, expected identifier, string, number, bool at line 1, char 28"],
  ["SELECT x FROM cpu WHERE x = 'a", "found a, expected identifier, string, number, bool at line 1, char 28"],
  ["SELECT 1.5.5 FROM cpu", "found .5, expected FROM at line 1, char 11"],
  ["SELECT 1.x FROM cpu", "found x, expected FROM at line 1, char 10"],
  ["SELECT 1ms1 FROM cpu", "invalid duration"],
  ["SHOW TAG VALUES FROM cpu WITH KEY = 'host'", "found host, expected identifier at line 1, char 36"],
  ["SHOW TAG VALUES WITH KEY IN ('host')", "found host, expected identifier at line 1, char 29"],
  ["SHOW TAG VALUES WITH KEY =~ host", "found host, expected regex at line 1, char 29"],
  ["SHOW TAG VALUES WITH KEY > host", "found >, expected IN, =, =~ at line 1, char 26"],
  ["SHOW TAG VALUES", "found EOF, expected WITH at line 1, char 17"],
  ["SHOW TAG VALUES FROM cpu", "found EOF, expected WITH at line 1, char 26"],
  ["SHOW FIELD KEYS FROM cpu WHERE x = 1", "found WHERE, expected ; at line 1, char 26"],
  ["SHOW MEASUREMENTS WITH MEASUREMENT", "found EOF, expected =, =~ at line 1, char 36"],
  ["SHOW MEASUREMENTS WITH", "found EOF, expected MEASUREMENT at line 1, char 24"],
  ["SHOW RETENTION POLICIES ON", "found EOF, expected identifier at line 1, char 28"],
  ["SHOW DATABASES LIMIT 1", "found LIMIT, expected ; at line 1, char 16"],
  ["SHOW TAG KEY EXACT", "found EOF, expected CARDINALITY at line 1, char 20"],
  ["SHOW TAG KEY", "found EOF, expected EXACT, CARDINALITY at line 1, char 14"],
  ["SELECT value FROM cpu ORDER BY TIME DESC", "only ORDER BY time supported at this time"],
  ["SELECT value FROM cpu ORDER BY value", "only ORDER BY time supported at this time"],
  ["SELECT value FROM cpu ORDER BY time, value", "only ORDER BY time supported at this time"],
  ["SELECT value FROM cpu ORDER BY", "found EOF, expected identifier, ASC, DESC at line 1, char 32"],
  ["SELECT value FROM cpu ORDER time", "found time, expected BY at line 1, char 29"],
  ["SELECT value FROM cpu LIMIT -1", "found -, expected integer at line 1, char 29"],
  ["SELECT value FROM cpu LIMIT 1.5", "found 1.5, expected integer at line 1, char 29"],
  ["SELECT value FROM cpu OFFSET 1 LIMIT 1", "found LIMIT, expected ; at line 1, char 32"],
  ["SELECT mean(value) FROM cpu GROUP BY time(1m) fill(NULL)", "expected number argument in fill()"],
  ["SELECT mean(value) FROM cpu GROUP BY time(1m) fill('null')", "expected number argument in fill()"],
  ["SELECT mean(value) FROM cpu GROUP BY time(1m) fill(1,2)", "fill requires an argument, e.g.: 0, null, none, previous, linear"],
  ["SELECT mean(value) FROM cpu GROUP BY time(1m) fill()", "fill requires an argument, e.g.: 0, null, none, previous, linear"],
  ["SELECT mean(value) FROM cpu GROUP BY time(1m) fill", "fill must be a function call"],
  ["SELECT mean(value) FROM cpu GROUP BY time(1m) fill(x)", "expected number argument in fill()"],
  ["SELECT mean(value) FROM cpu tz('Europe/Paris') LIMIT 1", "found LIMIT, expected ; at line 1, char 48"],
  ["SELECT mean(value) FROM cpu tz('europe/paris')", "unable to find time zone europe/paris"],
  ["SELECT mean(value) FROM cpu tz(x)", "expected string argument in tz()"],
  ["SELECT mean(value) FROM cpu tz", "tz must be a function call"],
  ["SELECT mean(value) FROM cpu tz('a','b')", "tz requires exactly one argument"],
  ["SELECT a FROM cpu WHERE x =~ /a)/", "error parsing regexp: unexpected ): `a)` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(a/", "error parsing regexp: missing closing ): `(a` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /[a/", "error parsing regexp: missing closing ]: `[a` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a**/", "error parsing regexp: invalid nested repetition operator: `**` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a*??/", "error parsing regexp: invalid nested repetition operator: `*??` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /*a/", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a|*/", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(*)/", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a{2}{3}/", "error parsing regexp: invalid nested repetition operator: `{2}{3}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a{1001}/", "error parsing regexp: invalid repeat count: `{1001}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a{3,2}/", "error parsing regexp: invalid repeat count: `{3,2}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /{2}/", "error parsing regexp: missing argument to repetition operator: `{2}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\1/", "error parsing regexp: invalid escape sequence: `\\1` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\8/", "error parsing regexp: invalid escape sequence: `\\8` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\q/", "error parsing regexp: invalid escape sequence: `\\q` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\x4/", "error parsing regexp: invalid escape sequence: `\\x4` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\x{}/", "error parsing regexp: invalid escape sequence: `\\x{}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\C/", "error parsing regexp: invalid escape sequence: `\\C` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\Qa.b\\Ec\\E/", "error parsing regexp: invalid escape sequence: `\\E` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\/", "bad regex:  at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a\\\\/", "bad regex:  at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?i)*/", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?=a)/", "error parsing regexp: invalid or unsupported Perl syntax: `(?=` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?<n>a)/", "error parsing regexp: invalid or unsupported Perl syntax: `(?<` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?P<>a)/", "error parsing regexp: invalid named capture: `(?P<>` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?P<n!>a)/", "error parsing regexp: invalid named capture: `(?P<n!>` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?P<na/", "error parsing regexp: invalid named capture: `(?P<na` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?P</", "error parsing regexp: invalid or unsupported Perl syntax: `(?P` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?-)/", "error parsing regexp: invalid or unsupported Perl syntax: `(?-)` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?x)/", "error parsing regexp: invalid or unsupported Perl syntax: `(?x` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /(?i/", "error parsing regexp: invalid or unsupported Perl syntax: `(?i` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /[z-a]/", "error parsing regexp: invalid character class range: `z-a` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /[[:foo:]]/", "error parsing regexp: invalid character class range: `[:foo:]` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /\\p{Foo}/", "error parsing regexp: invalid character class range: `\\p{Foo}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /\\p{Grek}/", "error parsing regexp: invalid character class range: `\\p{Grek}` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /\\pX/", "error parsing regexp: invalid character class range: `\\pX` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /\\p{Greek/", "error parsing regexp: invalid character class range: `\\p{Greek` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /[\\b]/", "error parsing regexp: invalid escape sequence: `\\b` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /\\Z/", "error parsing regexp: invalid escape sequence: `\\Z` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /[\\x{110000}]/", "error parsing regexp: invalid escape sequence: `\\x{110000` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /a{2}*/", "error parsing regexp: invalid nested repetition operator: `{2}*` at line 1, char 29"],
  ["SELECT a FROM cpu WHERE x =~ /[é-a]/", "error parsing regexp: invalid character class range: `é-a` at line 1, char 29"],
  ["CREATE DATABASE x2 WITH FOO", "found FOO, expected DURATION, NAME, REPLICATION, SHARD at line 1, char 25"],
  ["CREATE DATABASE x2 WITH DURATION INF SHARD INF", "found INF, expected DURATION at line 1, char 44"],
  ["CREATE DATABASE x2 WITH REPLICATION 0", "invalid value 0: must be 1 <= n <= 2147483647 at line 1, char 37"],
  ["CREATE DATABASE x2 WITH REPLICATION 99999999999", "invalid value 99999999999: must be 1 <= n <= 2147483647 at line 1, char 37"],
  ["CREATE DATABASE x2 WITH DURATION 1x", "invalid duration at line 1, char 34"],
  ["CREATE DATABASE", "found EOF, expected identifier at line 1, char 17"],
  ["CREATE DATABASE 'x'", "found x, expected identifier at line 1, char 16"],
  ["CREATE RETENTION POLICY rp3 ON x2 DURATION 2d REPLICATION 1 SHARD DURATION INF", "invalid duration INF for shard duration at line 1, char 76"],
  ["CREATE RETENTION POLICY rp3 ON x2 DURATION 2d", "found EOF, expected REPLICATION at line 1, char 46"],
  ["CREATE RETENTION POLICY rp3 ON x2", "found EOF, expected DURATION at line 1, char 35"],
  ["CREATE RETENTION", "found EOF, expected POLICY at line 1, char 18"],
  ["ALTER RETENTION POLICY rp2 ON x2 DURATION 3d DURATION 4d", "found duplicate DURATION option at line 1, char 46"],
  ["ALTER RETENTION POLICY rp2 ON x2", "found EOF, expected DURATION, REPLICATION, SHARD, DEFAULT at line 1, char 34"],
  ["ALTER RETENTION POLICY rp2 ON x2 SHARD 1h", "found 1h, expected DURATION at line 1, char 40"],
  ["ALTER RETENTION POLICY 'x' ON x2 REPLICATION 1", "found x, expected identifier at line 1, char 23"],
  ["DROP RETENTION POLICY rp2", "found EOF, expected ON at line 1, char 27"],
  ["DROP MEASUREMENT", "found EOF, expected identifier at line 1, char 18"],
  ["DROP SERIES FROM db.rp.nosuch", "retention policy not supported at line 1, char 1"],
  ["DROP SERIES FROM rp.nosuch", "retention policy not supported at line 1, char 1"],
  ["DROP SERIES", "found EOF, expected FROM, WHERE at line 1, char 13"],
  ["DELETE FROM db..nosuch", "database not supported at line 1, char 1"],
  ["DELETE LIMIT", "found LIMIT, expected FROM, WHERE at line 1, char 8"],
  ["DROP SHARD x", "found x, expected integer at line 1, char 12"],
  ["DROP SHARD 99999999999999999999", "strconv.ParseUint: parsing \"99999999999999999999\": value out of range at line 1, char 12"],
  ["DROP SUBSCRIPTION s ON x2 . autogen", "found  , expected . at line 1, char 26"],
  ["DROP CONTINUOUS", "found EOF, expected QUERY at line 1, char 17"],
  ["CREATE USER u3 WITH PASSWORD p", "found p, expected string at line 1, char 30"],
  ["CREATE USER u3 WITH", "found EOF, expected PASSWORD at line 1, char 21"],
  ["CREATE USER u3 WITH PASSWORD 'p' WITH ALL", "found EOF, expected PRIVILEGES at line 1, char 43"],
  ["SET PASSWORD FOR u1 'q'", "found q, expected = at line 1, char 20"],
  ["SET PASSWORD u1", "found u1, expected FOR at line 1, char 14"],
  ["GRANT READ TO u1", "found TO, expected ON at line 1, char 12"],
  ["GRANT READ u1", "found u1, expected ON at line 1, char 12"],
  ["GRANT ALL u1", "found u1, expected ON, TO at line 1, char 11"],
  ["GRANT FOO", "found FOO, expected READ, WRITE, ALL [PRIVILEGES] at line 1, char 7"],
  ["REVOKE WRITE FROM u1", "found FROM, expected ON at line 1, char 14"],
  ["REVOKE ALL x", "found x, expected ON, FROM at line 1, char 12"],
  ["DROP USER", "found EOF, expected identifier at line 1, char 11"],
  ["SHOW GRANTS", "found EOF, expected FOR at line 1, char 13"],
  ["SHOW STATS FOR runtime", "found runtime, expected string at line 1, char 16"],
  ["SHOW SHARD", "found EOF, expected GROUPS at line 1, char 12"],
  ["SHOW CONTINUOUS", "found EOF, expected QUERIES at line 1, char 17"],
  ["KILL QUERY x", "found x, expected integer at line 1, char 12"],
  ["EXPLAIN ANALYZE SHOW DATABASES", "found SHOW, expected SELECT at line 1, char 17"],
  ["EXPLAIN VERBOSE SELECT * FROM cpu", "found VERBOSE, expected SELECT at line 1, char 9"],
  ["SHOW MEASUREMENT EXACT", "found EOF, expected CARDINALITY at line 1, char 24"],
  ["SHOW TAG VALUES EXACT FROM", "found FROM, expected CARDINALITY at line 1, char 23"],
  ["SHOW TAG VALUES CARDINALITY", "found EOF, expected WITH at line 1, char 29"],
  ["SHOW FIELD KEY FOO", "found FOO, expected EXACT, CARDINALITY at line 1, char 16"],
  ["CREATE SUBSCRIPTION s1 ON x2.autogen DESTINATIONS SOME 'udp://h:9'", "found SOME, expected ALL, ANY at line 1, char 51"],
  ["CREATE SUBSCRIPTION s1 ON x2 autogen", "found  , expected . at line 1, char 29"],
  ["CREATE SUBSCRIPTION s1 ON x2.autogen DESTINATIONS ANY 'a', 'b',", "found EOF, expected string at line 1, char 64"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 RESAMPLE FOR 30m BEGIN SELECT mean(value) INTO m2 FROM cpu GROUP BY time(1h) END", "FOR duration must be >= GROUP BY time duration: must be a minimum of 1h, got 30m"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 RESAMPLE BEGIN SELECT mean(value) INTO m2 FROM cpu GROUP BY time(1h) END", "found BEGIN, expected EVERY, FOR at line 1, char 44"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 BEGIN SELECT mean(value) FROM cpu GROUP BY time(1h) END", "found FROM, expected INTO at line 1, char 60"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 BEGIN SELECT mean(value) INTO m2 FROM cpu END", "found cpu, expected GROUP BY time(...) at line 1, char 73"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 BEGIN SELECT mean(value) INTO m2 FROM cpu GROUP BY time(x) END", "found ), expected GROUP BY time(...), time dimension must have duration argument at line 1, char 92"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 BEGIN SELECT mean(value) INTO m2 FROM cpu GROUP BY time(1h)", "found EOF, expected END at line 1, char 94"],
  ["CREATE CONTINUOUS QUERY cq3 ON x2 SELECT", "found SELECT, expected BEGIN at line 1, char 35"],
  ["DROP DATABASE", "found EOF, expected identifier at line 1, char 15"],
  ["SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY time(1m) fill(none) , host", "found ,, expected ; at line 1, char 123"],
  ["SELECT 9999999h FROM cpu", "overflowed duration 9999999h: choose a smaller duration or INF"],
  ["SELECT 2562048h FROM cpu", "overflowed duration 2562048h: choose a smaller duration or INF"],
  ["SELECT v FROM cpu WHERE time > 1w1x", "invalid duration"],
  ["SELECT v FROM cpu WHERE time > 1µs", "invalid duration"],
  ["SELECT v FROM cpu WHERE time > 1s1", "invalid duration"],
  ["SELECT v::tag::field FROM cpu", "found ::, expected FROM at line 1, char 14"],
  ["SELECT v FROM cpu WHERE a = 1 AND", "found EOF, expected identifier, string, number, bool at line 1, char 35"],
  ["SELECT v FROM cpu GROUP", "found EOF, expected BY at line 1, char 25"],
  ["SELECT v FROM cpu GROUP host", "found host, expected BY at line 1, char 25"],
  ["SELECT v FROM cpu GROUP BY", "found EOF, expected identifier, string, number, bool at line 1, char 28"],
  ["SELECT v FROM cpu WHERE (a = 1", "found EOF, expected ) at line 1, char 31"],
  ["SELECT mean(v FROM cpu", "found FROM, expected ) at line 1, char 15"],
  ["SELECT mean(v, FROM cpu", "found FROM, expected identifier, string, number, bool at line 1, char 16"],
  ["SELECT mean(/x/ FROM cpu", "found FROM, expected ) at line 1, char 17"],
  ["SELECT v AS FROM cpu", "found FROM, expected identifier at line 1, char 13"],
  ["SELECT v AS 'x' FROM cpu", "found x, expected identifier at line 1, char 12"],
  ["SELECT v, FROM cpu", "found FROM, expected identifier, string, number, bool at line 1, char 11"],
  ["SELECT v FROM cpu,", "found EOF, expected identifier at line 1, char 20"],
  ["SELECT v FROM cpu LIMIT", "found EOF, expected integer at line 1, char 25"],
  ["SELECT v FROM cpu SLIMIT x", "found x, expected integer at line 1, char 26"],
  ["SELECT v FROM cpu WHERE a =~ /x/ +", "found EOF, expected identifier, string, number, bool at line 1, char 35"],
  ["SELECT v FROM cpu WHERE 'a", "found a, expected identifier, string, number, bool at line 1, char 24"],
  ["SELECT v FROM cpu WHERE a = \"b", "found b, expected identifier, string, number, bool at line 1, char 28"],
  ["SELECT v FROM \"cpu", "found cpu, expected identifier at line 1, char 14"],
  ["SELECT v FROM cpu WHERE a = 'b\n", "found b, expected identifier, string, number, bool at line 1, char 28"],
  ["SELECT v FROM cpu WHERE x = 1.5.5", "found .5, expected ; at line 1, char 32"],
  ["SELECT v FROM cpu WHERE x = @", "found @, expected identifier, string, number, bool at line 1, char 29"],
  ["SELECT v FROM cpu WHERE x = `y`", "found `, expected identifier, string, number, bool at line 1, char 29"],
  ["SELECT v FROM cpu INTO x", "found INTO, expected ; at line 1, char 19"],
  ["SELECT v INTO FROM cpu", "found FROM, expected identifier at line 1, char 15"],
  ["SELECT a.b.c.d FROM cpu", "too many segments in \"a\".\"b\".\"c\".d at line 1, char 1"],
  ["SELECT * FROM cpu WHERE host = 'a' OR", "found EOF, expected identifier, string, number, bool at line 1, char 39"],
  ["SHOW TAG VALUES WITH KEY IN (host", "found EOF, expected ) at line 1, char 35"],
  ["SHOW TAG VALUES WITH KEY IN host", "found host, expected ( at line 1, char 29"],
  ["SHOW TAG VALUES WITH KEY IN ()", "found ), expected identifier at line 1, char 30"],
  ["SHOW TAG VALUES WITH KEY =", "found EOF, expected identifier at line 1, char 27"],
  ["SHOW TAG VALUES WITH KEY =~", "found EOF, expected regex at line 1, char 29"],
  ["SHOW TAG VALUES WITH", "found EOF, expected KEY at line 1, char 22"],
  ["SHOW SERIES FROM", "found EOF, expected identifier at line 1, char 18"],
  ["SHOW SERIES WHERE", "found EOF, expected identifier, string, number, bool at line 1, char 19"],
  ["SHOW FIELD KEYS ON", "found EOF, expected identifier at line 1, char 20"],
  ["SHOW MEASUREMENTS LIMIT x", "found x, expected integer at line 1, char 25"],
  ["SHOW MEASUREMENTS OFFSET 1 LIMIT 1", "found LIMIT, expected ; at line 1, char 28"],
  ["SHOW MEASUREMENTS WITH MEASUREMENT =~ /x/ /y/", "found /, expected ; at line 1, char 43"],
  ["SHOW RETENTION POLICIES ON db LIMIT 1", "found LIMIT, expected ; at line 1, char 31"],
  ["SHOW DATABASES;;SHOW DATABASES; SHOW FOO", "found FOO, expected CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS at line 1, char 38"],
  ["SELECT value FROM cpu; SHOW DATABASES junk", "found junk, expected ; at line 1, char 39"],
  ["SELECT v FROM cpu tz('UTC') LIMIT 1", "found LIMIT, expected ; at line 1, char 29"],
  ["SELECT v FROM cpu WHERE time > now() - 1h GROUP BY time(1m) LIMIT 1 fill(none)", "found fill, expected ; at line 1, char 69"],
  ["SELECT mean(v) FROM cpu WHERE time > now() - 1h GROUP BY time(1m) ORDER BY time DESC fill(none)", "found fill, expected ; at line 1, char 86"],
  ["SELECT exact FROM cpu", "found EXACT, expected identifier, string, number, bool at line 1, char 8"],
  ["SELECT analyze FROM cpu", "found ANALYZE, expected identifier, string, number, bool at line 1, char 8"],
  ["SELECT name FROM cpu", "found NAME, expected identifier, string, number, bool at line 1, char 8"],
  ["SELECT value FROM cpu WHERE name = 'x'", "found NAME, expected identifier, string, number, bool at line 1, char 29"],
  ["SELECT key, keys, tag, field FROM cpu", "found KEY, expected identifier, string, number, bool at line 1, char 8"],
  ["SELECT /* c */ value FROM cpu", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 7"],
  ["SELECT value FROM /* c */ cpu", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 18"],
  ["SELECT value FROM cpu /* c */ WHERE host = 'a'", "found  , expected regex at line 1, char 22"],
  ["SELECT value, /* c */ host FROM cpu", "error parsing regexp: missing argument to repetition operator: `*` at line 1, char 14"],
  ["SELECT value FROM cpu WHERE value = 1.e5", "found e5, expected ; at line 1, char 39"],
  ["SELECT value FROM cpu WHERE value = 0x10", "invalid duration"],
  ["SELECT value FROM cpu WHERE value = 1_000", "found _000, expected ; at line 1, char 38"],
  ["SELECT value FROM cpu WHERE time = 1.5s", "found s, expected ; at line 1, char 39"],
  ["SELECT value :: tag FROM cpu", "found ::, expected FROM at line 1, char 14"],
  ["SELECT value:: tag FROM cpu", "found  , expected float, integer, string, boolean, field, tag at line 1, char 15"],
  ["SELECT value:tag FROM cpu", "found :, expected FROM at line 1, char 13"],
  ["SELECT * ::field FROM cpu", "found ::, expected FROM at line 1, char 10"],
  ["SELECT value FROM cpu.", "found EOF, expected identifier at line 1, char 24"],
  ["SELECT value FROM .cpu", "found ., expected identifier at line 1, char 19"],
  ["SELECT value FROM cpu..", "found EOF, expected identifier at line 1, char 25"],
  ["SELECT value FROM a . b", "found ., expected ; at line 1, char 21"],
  ["SELECT value FROM a..b..c", "too many segments in \"a\"..\"b\"..c at line 1, char 1"],
  ["SELECT value FROM cpu WHERE host = 'it''s'", "found s, expected ; at line 1, char 39"],
  ["SELECT \"va\"\"lue\" FROM cpu", "found lue, expected FROM at line 1, char 12"],
  ["SELECT value FROM cpu WHERE ()", "found ), expected identifier, string, number, bool at line 1, char 30"],
  ["SELECT value FROM cpu WHERE a = ()", "found ), expected identifier, string, number, bool at line 1, char 34"],
  ["SELECT count(,) FROM cpu", "found ,, expected identifier, string, number, bool at line 1, char 14"],
  ["SELECT count(value,) FROM cpu", "found ), expected identifier, string, number, bool at line 1, char 20"],
  ["SELECT value FROM cpu LIMIT 1 SLIMIT 1 OFFSET 1", "found OFFSET, expected ; at line 1, char 40"],
  ["SELECT value FROM cpu SOFFSET 1 SLIMIT 1", "found SLIMIT, expected ; at line 1, char 33"],
  ["SHOW MEASUREMENTS LIMIT 1 WITH MEASUREMENT =~ /c/", "found WITH, expected ; at line 1, char 27"],
  ["SHOW TAG KEYS LIMIT 1 FROM cpu", "found FROM, expected ; at line 1, char 23"],
  ["SHOW TAG VALUES WITH KEY = host FROM cpu", "found FROM, expected ; at line 1, char 33"],
  ["SHOW SERIES WHERE host = 'a' FROM cpu", "found FROM, expected ; at line 1, char 30"],
  ["SHOW TAG VALUES FROM cpu WITH KEY IN (host,)", "found ), expected identifier at line 1, char 44"],
  ["SHOW TAG VALUES FROM cpu WITH KEY IN host", "found host, expected ( at line 1, char 38"],
  ["SHOW MEASUREMENTS ON db.rp", "found ., expected ; at line 1, char 24"],
];

const GROUP_BY_ERRORS: [string, string][] = [
  ["time", "time() is a function and expects at least one argument"],
  ["time()", "time dimension expected 1 or 2 arguments"],
  ["time(x)", "time dimension must have duration argument"],
  ["time(1m,2m,3m)", "time dimension expected 1 or 2 arguments"],
  ["mean(x)", "only time() calls allowed in dimensions"],
  ["1", "only time and tag dimensions allowed"],
  ["'host'", "only time and tag dimensions allowed"],
  ["time(1m), time(2m)", "multiple time dimensions not allowed"],
  ["time(1m, x)", "time dimension offset must be duration or now()"],
  ["time(1m, '2020-01-01T00:00:30Z')", "invalid time dimension offset: '2020-01-01T00:00:30Z'"],
  ["time(1m, 'abc')", "time dimension offset must be duration or now()"],
  ["host + 1", "only time and tag dimensions allowed"],
  ["time(1m, now(1))", "time dimension offset now() function requires no arguments"],
  ["time(1m, foo())", "time dimension offset function must be now()"],
  ["time(1m, 5)", "time dimension offset must be duration or now()"],
  ["time(2 * 1m)", "time dimension must have duration argument"],
  ["time(1m, 0s), time(2m)", "multiple time dimensions not allowed"],
  ["DISTINCT x", "only time and tag dimensions allowed"],
  ["distinct(x)", "only time() calls allowed in dimensions"],
  ["\"time\"", "time() is a function and expects at least one argument"],
  ["time(1m, -(30s))", "time dimension offset must be duration or now()"],
  ["time(1m, '2020-13-45')", "invalid timestamp string"],
  ["time(1m,'2020-01-01')", "invalid time dimension offset: '2020-01-01'"],
  ["1m", "only time and tag dimensions allowed"],
];

const PARSED_BY_INFLUXD: string[] = [
  "SHOW MEASUREMENTS LIMIT 1",
  ";",
  "SELECT * FROM cpu;",
  "SELECT * FROM cpu;;",
  "SHOW MEASUREMENTS WITH MEASUREMENT = m",
  "-- hi",
  "/* x */",
  "SELECT \"\" FROM cpu",
  "SELECT value::float, value::integer FROM cpu",
  "SELECT value FROM \"db\".\"autogen\".\"cpu\"",
  "SELECT value FROM db..cpu",
  "SELECT DISTINCT value FROM cpu",
  "SELECT value FROM cpu WHERE x > -9223372036854775808",
  "SELECT x FROM cpu WHERE x = 1 -- c",
  "SELECT .5 FROM cpu",
  "SELECT a FROM cpu WHERE x =~ /[]a]/",
  "SELECT a FROM cpu WHERE x =~ /[^]a]/",
  "SELECT a FROM cpu WHERE x =~ /a*?/",
  "SELECT a FROM cpu WHERE x =~ /^*/",
  "SELECT a FROM cpu WHERE x =~ /a{,2}/",
  "SELECT a FROM cpu WHERE x =~ /a{01}/",
  "SELECT a FROM cpu WHERE x =~ /a\\12/",
  "SELECT a FROM cpu WHERE x =~ /a\\_/",
  "SELECT a FROM cpu WHERE x =~ /a\\x41\\x{263a}/",
  "SELECT a FROM cpu WHERE x =~ /\\Q*\\E*/",
  "SELECT a FROM cpu WHERE x =~ /(?i)cpu/",
  "SELECT a FROM cpu WHERE x =~ /a*(?i)*/",
  "SELECT a FROM cpu WHERE x =~ /(?P<n>a)/",
  "SELECT a FROM cpu WHERE x =~ /(?i-s:a)/",
  "SELECT a FROM cpu WHERE x =~ /(?)/",
  "SELECT a FROM cpu WHERE x =~ /[a-]/",
  "SELECT a FROM cpu WHERE x =~ /[[:alpha:]]/",
  "SELECT a FROM cpu WHERE x =~ /[[:^digit:]x]/",
  "SELECT a FROM cpu WHERE x =~ /\\pL\\p{Greek}\\PN\\p{^Han}/",
  "SELECT a FROM cpu WHERE x =~ /[\\d\\s\\W]/",
  "SELECT a FROM cpu WHERE x =~ /\\A\\z\\b\\B/",
  "SELECT a FROM cpu WHERE x =~ /^(a|b)$/",
  "SELECT a FROM cpu WHERE x =~ /^server\\.example\\.com$/",
  "SELECT a FROM cpu WHERE x =~ /a\\/b/",
  "SELECT a FROM cpu WHERE x =~ //",
  "SELECT a FROM cpu WHERE x =~ /()/",
  "SELECT a FROM cpu WHERE x =~ /()*/",
  "SELECT a FROM cpu WHERE x =~ /\\d+\\.?\\d*/",
  "SELECT a FROM cpu WHERE x =~ /é+/",
  "CREATE DATABASE x2",
  "CREATE DATABASE x2 WITH DURATION 1d REPLICATION 1 SHARD DURATION 1h NAME rp1",
  "CREATE DATABASE x2 WITH SHARD DURATION INF",
  "CREATE RETENTION POLICY rp2 ON x2 DURATION 2d REPLICATION 1 SHARD DURATION 1h DEFAULT",
  "ALTER RETENTION POLICY rp2 ON x2 DURATION 3d DEFAULT",
  "ALTER RETENTION POLICY DEFAULT ON x2 REPLICATION 1",
  "DROP RETENTION POLICY rp2 ON x2",
  "DROP MEASUREMENT nosuch",
  "DROP SERIES FROM nosuch",
  "DROP SERIES WHERE host = 'zzz'",
  "DELETE FROM nosuch",
  "DELETE WHERE time < 0",
  "DROP SHARD 99999",
  "DROP SUBSCRIPTION s ON x2.autogen",
  "DROP CONTINUOUS QUERY cq ON x2",
  "CREATE USER u1 WITH PASSWORD 'p'",
  "CREATE USER u2 WITH PASSWORD 'p' WITH ALL PRIVILEGES",
  "SET PASSWORD FOR u1 = 'q'",
  "GRANT READ ON x2 TO u1",
  "GRANT ALL TO u2",
  "GRANT ALL PRIVILEGES ON x2 TO u1",
  "REVOKE READ ON x2 FROM u1",
  "REVOKE ALL PRIVILEGES FROM u2",
  "DROP USER u1",
  "DROP USER u2",
  "SHOW USERS",
  "SHOW GRANTS FOR u9",
  "SHOW STATS",
  "SHOW STATS FOR 'runtime'",
  "SHOW DIAGNOSTICS FOR 'build'",
  "SHOW SHARDS",
  "SHOW SHARD GROUPS",
  "SHOW SUBSCRIPTIONS",
  "SHOW CONTINUOUS QUERIES",
  "SHOW QUERIES",
  "KILL QUERY 99999",
  "KILL QUERY 99999 ON localhost",
  "EXPLAIN SELECT * FROM cpu",
  "EXPLAIN ANALYZE SELECT * FROM cpu LIMIT 1",
  "SHOW MEASUREMENT CARDINALITY",
  "SHOW MEASUREMENT EXACT CARDINALITY ON db FROM cpu WHERE host = 'a' GROUP BY host LIMIT 1 OFFSET 0",
  "SHOW SERIES CARDINALITY ON db FROM cpu",
  "SHOW SERIES EXACT CARDINALITY FROM cpu WHERE host = 'a'",
  "SHOW SERIES EXACT FROM cpu",
  "SHOW TAG KEY CARDINALITY FROM cpu",
  "SHOW TAG KEY EXACT CARDINALITY ON db",
  "SHOW TAG VALUES CARDINALITY WITH KEY = host",
  "SHOW TAG VALUES EXACT CARDINALITY FROM cpu WITH KEY =~ /h/",
  "SHOW FIELD KEY CARDINALITY",
  "SHOW FIELD KEY EXACT CARDINALITY FROM cpu",
  "CREATE SUBSCRIPTION s1 ON x2.autogen DESTINATIONS ALL 'udp://127.0.0.1:9'",
  "CREATE CONTINUOUS QUERY cq1 ON x2 BEGIN SELECT mean(value) INTO m2 FROM cpu GROUP BY time(1h) END",
  "CREATE CONTINUOUS QUERY cq2 ON x2 RESAMPLE EVERY 1h FOR 2h BEGIN SELECT mean(value) INTO m2 FROM cpu GROUP BY time(1h) END",
  "CREATE CONTINUOUS QUERY cq3 ON x2 BEGIN SELECT value INTO m2 FROM cpu END",
  "DROP CONTINUOUS QUERY cq1 ON x2",
  "DROP CONTINUOUS QUERY cq2 ON x2",
  "DROP DATABASE x2",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY time(1m + 1m)",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY (host)",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY time((1m))",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY time(1m * 1.5)",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY TIME(1m)",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY time(1m, (now()))",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY host::tag, *, /h/",
  "SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY time(1m)fill(none)",
  "SELECT mean(\"value\") FROM \"cpu\" WHERE (\"host\" =~ /^a$/) AND time >= now() - 6h and time <= now() GROUP BY time(10s), \"host\" fill(null)",
  "SELECT mean(\"value\") FROM \"autogen\".\"cpu\" WHERE time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(1m) fill(null)",
  "SELECT mean(\"value\") FROM \"cpu\" WHERE (\"host\"::tag =~ /^(a|b)$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(1m), \"host\"::tag fill(none)",
  "SELECT non_negative_derivative(mean(\"value\"), 1s) FROM \"cpu\" WHERE time >= now() - 1h GROUP BY time(1m), * fill(none)",
  "SELECT last(\"value\") FROM \"cpu\" WHERE time >= now() - 5m GROUP BY \"host\" ORDER BY time DESC LIMIT 1",
  "SELECT \"value\" FROM \"autogen\".\"cpu\" WHERE time >= 1700000000000ms and time <= 1700003600000ms",
  "SELECT mean(\"value\") AS \"mean_value\", max(\"value\") FROM \"cpu\" WHERE time >= now() - 1h GROUP BY time(5m) fill(previous);SELECT count(\"value\") FROM \"cpu\" WHERE time >= now() - 1h GROUP BY time(5m) fill(0)",
  "SELECT percentile(\"value\", 95) FROM \"cpu\" WHERE time > now() - 1h GROUP BY time(10m) fill(linear) tz('Europe/Paris')",
  "SELECT spread(\"value\"), stddev(\"value\"), median(\"value\"), sum(\"value\"), first(\"value\"), min(\"value\"), difference(mean(\"value\")), derivative(\"value\", 1s) FROM \"cpu\" WHERE time > now() - 1h GROUP BY time(10m)",
  "SELECT \"value\" * 100 / 2 - 1 FROM \"cpu\" WHERE time > '2023-11-14T22:00:00Z' AND time < '2023-11-15 00:00:00' AND \"value\" > 0.5",
  "SELECT * FROM cpu WHERE time > 1700000000000000000 AND time < 1700000600s SLIMIT 1 SOFFSET 0",
  "SELECT * FROM /c.*/ WHERE host = 'a' OR host != 'b' AND host !~ /z/ LIMIT 10 OFFSET 1",
  "SHOW MEASUREMENTS LIMIT 100",
  "SHOW MEASUREMENTS WITH MEASUREMENT =~ /cp.*/ LIMIT 100",
  "SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)cp/ LIMIT 100",
  "SHOW measurements",
  "SHOW TAG KEYS FROM \"cpu\"",
  "SHOW TAG KEYS FROM \"autogen\".\"cpu\" WHERE \"host\" = 'a'",
  "SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\"",
  "SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\" WHERE \"region\" =~ /^us$/",
  "SHOW TAG VALUES FROM \"autogen\".\"cpu\" WITH KEY = \"host\" WHERE \"host\" = 'a' LIMIT 100",
  "SHOW FIELD KEYS FROM \"cpu\"",
  "SHOW FIELD KEYS FROM \"autogen\".\"cpu\"",
  "SHOW RETENTION POLICIES on \"db\"",
  "SHOW RETENTION POLICIES ON \"db\"",
  "SHOW DATABASES",
  "SHOW SERIES",
  "SHOW SERIES FROM \"cpu\" LIMIT 10",
  "SHOW SERIES ON \"db\" FROM /c/ WHERE \"host\" = 'a' LIMIT 5 OFFSET 1",
  "SELECT * FROM cpu LIMIT 10",
  "select * from cpu limit 10",
  "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(10m, 5m)",
  "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(10m) fill(-1)",
  "SELECT value::field, host::tag, *::field FROM cpu",
  "SELECT *::tag, value FROM cpu",
  "SELECT \"value\" FROM \"db\".\"autogen\".\"cpu\" WHERE \"host\" = 'a' AND (\"value\" > 1 OR \"value\" < -1)",
  "SELECT value FROM cpu WHERE time >= '2023-11-14' ",
  "SELECT mean(value) FROM cpu WHERE time >= now() - 1d GROUP BY time(1h) fill(null) ORDER BY time DESC LIMIT 3",
  "SELECT max(value) FROM cpu WHERE host =~ /^a$|^b$/ AND time > now() - 1h GROUP BY time(1m), host SLIMIT 1",
  "SELECT mean(\"value\") FROM \"cpu\" WHERE time >= now() - 6h GROUP BY time(10s) fill(null) ;",
  "SELECT 2562047h FROM cpu",
  "SELECT \"a\".b.\"c\" FROM cpu",
  "SELECT \"\" FROM \"\"",
  "SELECT count(value) FROM cpu WHERE time > now() - 1h GROUP BY time(10m) fill(0)",
  "SELECT v FROM cpu WHERE a = 1 ORDER BY time DESC LIMIT 1 OFFSET 1 SLIMIT 1 SOFFSET 1 tz('UTC')",
  "SELECT verbose FROM cpu",
  "SELECT future FROM cpu",
  "SELECT \"name\" FROM cpu",
  "SELECT value /* c */ FROM cpu",
  "SELECT value,host FROM cpu",
  "SELECT value ,host FROM cpu",
  "SELECT value , host FROM cpu",
  "SELECT mean(value),max(value) FROM cpu",
  "SELECT mean( value ) FROM cpu",
  "SELECT mean(value ,1) FROM cpu",
  "SELECT value FROM cpu WHERE host='a'AND value>1",
  "SELECT value FROM cpu WHERE host = 'ü😀'",
  "SELECT \"ü😀\" FROM \"ü😀\"",
  "SELECT value FROM cpu WHERE time > now()-1h",
  "SELECT value FROM cpu WHERE time > now()- 1h",
  "SELECT value FROM cpu WHERE time > now() -1h",
  "SELECT value FROM cpu WHERE value = 1.",
  "SELECT value FROM cpu WHERE value = 007",
  "SELECT value FROM cpu WHERE time = 15",
  "SELECT value::tag FROM cpu",
  "SELECT *::field, *::tag FROM cpu",
  "SELECT value FROM cpu.rp",
  "SELECT value FROM \"a\".\"b\".\"c\"",
  "SELECT value FROM \"a\".b./x/",
  "SELECT time FROM cpu",
  "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(1m),host",
  "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(1m) , host",
  "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY time(1m) ,host",
  "SELECT mean(value) FROM cpu WHERE time > now() - 1h GROUP BY host , time(1m)",
  "SELECT value FROM cpu WHERE host =~/a/",
  "SELECT value FROM cpu WHERE host=~/a/",
  "SELECT value FROM cpu WHERE host =~ /a/ AND host !~ /b/",
  "SELECT value FROM cpu WHERE \"host\" =~ /^(?i)A$/",
  "SELECT value FROM cpu WHERE host = 'it\\'s'",
  "SELECT 'a' + 'b' FROM cpu",
  "SELECT value FROM cpu WHERE a = b = c",
  "SELECT value FROM cpu WHERE (a)",
  "SELECT count(*) FROM cpu",
  "SELECT count() FROM cpu",
  "SELECT top(value, host, 2) FROM cpu",
  "SHOW MEASUREMENTS WITH MEASUREMENT =~ /c/ LIMIT 1 OFFSET 1",
  "SHOW FIELD KEYS FROM cpu ORDER BY time LIMIT 1",
  "show tag values from cpu with key = host",
  "SHOW TAG VALUES FROM cpu WITH KEY IN (host, \"region\")",
  "SHOW MEASUREMENTS ON \"db\"",
];
test('SHOW DATABASES and SHOW RETENTION POLICIES [ON db]', () => {
  assert.deepEqual(one('SHOW DATABASES'), { kind: 'show-databases' });
  assert.deepEqual(one('show databases'), { kind: 'show-databases' });
  assert.deepEqual(one('SHOW RETENTION POLICIES'), { kind: 'show-retention-policies', database: null });
  assert.deepEqual(one('SHOW RETENTION POLICIES on "db"'), { kind: 'show-retention-policies', database: 'db' });
  assert.deepEqual(one('SHOW RETENTION POLICIES ON "acme/plant/line1/g"'), { kind: 'show-retention-policies', database: 'acme/plant/line1/g' });
});

test('SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT = m | =~ /re/] [WHERE …] [LIMIT n] [OFFSET n]', () => {
  const base = { kind: 'show-measurements', database: null, measurement: null, condition: null, limit: 0, offset: 0 };
  assert.deepEqual(one('SHOW MEASUREMENTS'), base);
  assert.deepEqual(one('SHOW measurements'), base);
  assert.deepEqual(one('SHOW MEASUREMENTS LIMIT 100'), { ...base, limit: 100 });
  assert.deepEqual(one('SHOW MEASUREMENTS WITH MEASUREMENT =~ /cp.*/ LIMIT 100'), { ...base, measurement: { op: '=~', value: 'cp.*' }, limit: 100 });
  assert.deepEqual(one('SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)cp/ LIMIT 100'), { ...base, measurement: { op: '=~', value: '(?i)cp' }, limit: 100 });
  assert.deepEqual(one('SHOW MEASUREMENTS WITH MEASUREMENT = "cpu"'), { ...base, measurement: { op: '=', value: 'cpu' } });
  // InfluxDB keeps what follows the operator, a name or a regex, whatever the operator.
  assert.deepEqual(one('SHOW MEASUREMENTS WITH MEASUREMENT =~ cpu'), { ...base, measurement: { op: '=', value: 'cpu' } });
  assert.deepEqual(one('SHOW MEASUREMENTS WITH MEASUREMENT = /c/'), { ...base, measurement: { op: '=~', value: 'c' } });
  assert.deepEqual(one(`SHOW MEASUREMENTS ON "db" WITH MEASUREMENT =~ /^c/ WHERE "host" = 'a' ORDER BY time DESC LIMIT 10 OFFSET 5`), {
    ...base,
    database: 'db',
    measurement: { op: '=~', value: '^c' },
    condition: bin('=', ref('host'), str('a')),
    limit: 10,
    offset: 5,
  });
});

test('SHOW TAG KEYS [ON db] [FROM …] [WHERE …] [LIMIT n] [OFFSET n]', () => {
  const base = { kind: 'show-tag-keys', database: null, sources: [], condition: null, limit: 0, offset: 0 };
  assert.deepEqual(one('SHOW TAG KEYS'), base);
  assert.deepEqual(one('SHOW TAG KEYS FROM "cpu"'), { ...base, sources: [measurement('cpu')] });
  assert.deepEqual(one(`SHOW TAG KEYS FROM "autogen"."cpu" WHERE "host" = 'a'`), {
    ...base,
    sources: [measurement('cpu', 'autogen')],
    condition: bin('=', ref('host'), str('a')),
  });
  assert.deepEqual(one(`SHOW TAG KEYS ON db FROM cpu, /^mem/ WHERE host =~ /a/ LIMIT 2 OFFSET 1 SLIMIT 3 SOFFSET 4`), {
    ...base,
    database: 'db',
    sources: [measurement('cpu'), regexSource('^mem')],
    condition: bin('=~', ref('host'), re('a')),
    limit: 2,
    offset: 1,
  });
});

test('SHOW TAG VALUES [ON db] [FROM …] WITH KEY = "k" | != "k" | =~ /re/ | !~ /re/ | IN ("a", "b") [WHERE …] [LIMIT/OFFSET]', () => {
  const base = { kind: 'show-tag-values', database: null, sources: [measurement('cpu')], condition: null, limit: 0, offset: 0 };
  assert.deepEqual(one('SHOW TAG VALUES FROM "cpu" WITH KEY = "host"'), { ...base, key: { op: '=', value: 'host' } });
  assert.deepEqual(one('SHOW TAG VALUES FROM cpu WITH KEY != host'), { ...base, key: { op: '!=', value: 'host' } });
  assert.deepEqual(one('SHOW TAG VALUES FROM cpu WITH KEY =~ /h.*/'), { ...base, key: { op: '=~', value: 'h.*' } });
  assert.deepEqual(one('SHOW TAG VALUES FROM cpu WITH KEY !~ /x/'), { ...base, key: { op: '!~', value: 'x' } });
  assert.deepEqual(one('SHOW TAG VALUES FROM cpu WITH KEY IN ("host", "region")'), { ...base, key: { op: 'in', values: ['host', 'region'] } });
  assert.deepEqual(one('SHOW TAG VALUES WITH KEY = host'), { ...base, sources: [], key: { op: '=', value: 'host' } });
  assert.deepEqual(one(`SHOW TAG VALUES ON "db" FROM "autogen"."cpu" WITH KEY = "host" WHERE "region" =~ /^us$/ LIMIT 100 OFFSET 2`), {
    ...base,
    database: 'db',
    sources: [measurement('cpu', 'autogen')],
    key: { op: '=', value: 'host' },
    condition: bin('=~', ref('region'), re('^us$')),
    limit: 100,
    offset: 2,
  });
});

test('SHOW FIELD KEYS [ON db] [FROM …] and SHOW SERIES [ON db] [FROM …] [WHERE …] [LIMIT/OFFSET]', () => {
  assert.deepEqual(one('SHOW FIELD KEYS'), { kind: 'show-field-keys', database: null, sources: [], limit: 0, offset: 0 });
  assert.deepEqual(one('SHOW FIELD KEYS FROM "cpu"'), { kind: 'show-field-keys', database: null, sources: [measurement('cpu')], limit: 0, offset: 0 });
  assert.deepEqual(one('SHOW FIELD KEYS ON db FROM "autogen"."cpu" LIMIT 1 OFFSET 2'), {
    kind: 'show-field-keys',
    database: 'db',
    sources: [measurement('cpu', 'autogen')],
    limit: 1,
    offset: 2,
  });
  assert.deepEqual(one('SHOW SERIES'), { kind: 'show-series', database: null, sources: [], condition: null, limit: 0, offset: 0 });
  assert.deepEqual(one(`SHOW SERIES ON "db" FROM "cpu", /m/ WHERE "host" = 'a' LIMIT 5 OFFSET 1`), {
    kind: 'show-series',
    database: 'db',
    sources: [measurement('cpu'), regexSource('m')],
    condition: bin('=', ref('host'), str('a')),
    limit: 5,
    offset: 1,
  });
});

test('SELECT fields: *, references, casts, calls with any arguments, math, AS, DISTINCT', () => {
  const statement = select(
    'SELECT *, "value", value::field, host::tag, *::field, *::tag, v::integer, mean("value") AS "m", percentile("v", 95), ' +
      'derivative(mean("v"), 1s), max(v) * 2 + 1 AS x, -v, top(v, host, 3), count(distinct(v)), "a.b", a.b, "db"."x" FROM m',
  );
  assert.deepEqual(statement.fields, [
    field(star()),
    field(ref('value')),
    field(ref('value', 'field')),
    field(ref('host', 'tag')),
    field(star('field')),
    field(star('tag')),
    field({ type: 'ref', name: 'v', dataType: 'field', valueType: 'integer' } as Expr),
    field(call('mean', ref('value')), 'm'),
    field(call('percentile', ref('v'), int(95))),
    field(call('derivative', call('mean', ref('v')), dur(1000))),
    field(bin('+', bin('*', call('max', ref('v')), int(2)), int(1)), 'x'),
    field(bin('*', int(-1), ref('v'))),
    field(call('top', ref('v'), ref('host'), int(3))),
    field(call('count', call('distinct', ref('v')))),
    field(ref('a.b')),
    field(ref('a.b')),
    field(ref('db.x')),
  ]);
  assert.deepEqual(select('SELECT DISTINCT host FROM m').fields, [field(call('distinct', ref('host')))]);
  assert.deepEqual(select('SELECT /^v/, MEAN(/x/) FROM m').fields, [field(re('^v')), field(call('mean', re('x')))]);
  assert.deepEqual(select('SELECT 1.5, .5, 1., 10, true, FALSE, \'s\', 1h30m, 10u, 10µ, 500ns FROM m').fields, [
    field(float(1.5)),
    field(float(0.5)),
    field(float(1)),
    field(int(10)),
    field(bool(true)),
    field(bool(false)),
    field(str('s')),
    field(dur(5_400_000)),
    field(dur(0.01)),
    field(dur(0.01)),
    field(dur(0.0005)),
  ]);
});

test('SELECT … INTO is kept for the executor to refuse', () => {
  assert.equal(select('SELECT mean(v) INTO m2 FROM m').into, 'm2');
  assert.equal(select('SELECT mean(v) INTO "db"."rp"."m 2" FROM m').into, 'db.rp."m 2"');
  assert.equal(select('SELECT mean(v) INTO rp.m2 FROM m').into, 'rp.m2');
  assert.equal(select('SELECT mean(v) INTO "db"."rp".:MEASUREMENT FROM /m/').into, 'db.rp.:MEASUREMENT');
  assert.equal(select('SELECT v FROM m').into, null);
});

test('FROM: measurements, /regex/, "db"."rp"."m", db..m, rp.m, rp./re/', () => {
  assert.deepEqual(select('SELECT v FROM "cpu", cpu2, /^c/, "db"."autogen"."m", db..m, autogen.m, "rp"./re/, db.rp./r\\/e/').sources, [
    measurement('cpu'),
    measurement('cpu2'),
    regexSource('^c'),
    measurement('m', 'autogen', 'db'),
    measurement('m', null, 'db'),
    measurement('m', 'autogen'),
    regexSource('re', 'rp'),
    regexSource('r/e', 'rp', 'db'),
  ]);
});

test('WHERE: time against now() ± durations, epochs with units, RFC 3339 strings; tags, fields, AND/OR/parentheses', () => {
  assert.deepEqual(
    select('SELECT v FROM m WHERE ("host" =~ /^a$/) AND time >= now() - 6h and time <= now()').condition,
    bin('AND', bin('AND', paren(bin('=~', ref('host'), re('^a$'))), bin('>=', time, bin('-', now, dur(21_600_000)))), bin('<=', time, now)),
  );
  assert.deepEqual(
    select('SELECT v FROM m WHERE time >= 1700000000000ms and time <= 1700003600000ms').condition,
    bin('AND', bin('>=', time, dur(1_700_000_000_000)), bin('<=', time, dur(1_700_003_600_000))),
  );
  assert.deepEqual(
    select(`SELECT v FROM m WHERE time > '2024-06-01T00:00:00Z' AND time < 1717200000000000000 OR time = 1717200000s + 1u`).condition,
    bin(
      'OR',
      bin('AND', bin('>', time, str('2024-06-01T00:00:00Z')), bin('<', time, int(1_717_200_000_000_000_000))),
      bin('=', time, bin('+', dur(1_717_200_000_000), dur(0.001))),
    ),
  );
  assert.deepEqual(
    select(`SELECT v FROM m WHERE "host" != 'a' AND "host" !~ /b/ AND value > 1.5 AND value <= -2 AND ok = true AND "region"::tag <> 'x'`).condition,
    bin(
      'AND',
      bin('AND', bin('AND', bin('AND', bin('AND', bin('!=', ref('host'), str('a')), bin('!~', ref('host'), re('b'))), bin('>', ref('value'), float(1.5))), bin('<=', ref('value'), int(-2))), bin('=', ref('ok'), bool(true))),
      bin('!=', ref('region', 'tag'), str('x')),
    ),
  );
});

test('GROUP BY time(d[, offset]), tags, *, /regex/', () => {
  const groups = (text: string) => select(`SELECT mean(v) FROM m WHERE time > now() - 1h GROUP BY ${text}`).dimensions;
  assert.deepEqual(groups('time(10s)'), [timeDim(10_000)]);
  assert.deepEqual(groups('time(1h, 15m), "host", *, /^h/'), [timeDim(3_600_000, 900_000), tagDim('host'), { type: 'wildcard' }, { type: 'regex', source: '^h' }]);
  assert.deepEqual(groups('"host", time(1m)'), [tagDim('host'), timeDim(60_000)]);
  assert.deepEqual(groups('time(1m, -30s)'), [timeDim(60_000, -30_000)]);
  assert.deepEqual(groups('time(1m, 90s)'), [timeDim(60_000, 30_000)]);
  // now() as the offset: now modulo the interval (NOW_MS is 23.456 s past a minute).
  assert.deepEqual(groups('time(1m, now())'), [timeDim(60_000, 23_456)]);
  assert.deepEqual(groups('time(1h + 30m), (host), region::tag'), [timeDim(5_400_000), tagDim('host'), tagDim('region')]);
  assert.deepEqual(groups('time((5m))'), [timeDim(300_000)]);
  assert.deepEqual(groups('time(500ms)'), [timeDim(500)]);
  assert.deepEqual(groups('time(1m * 1.5)'), [timeDim(60_000)]);
  // A zero interval groups nothing in InfluxDB; a later time() takes over.
  assert.deepEqual(groups('time(0s), time(1m)'), [timeDim(60_000)]);
});

test('GROUP BY that InfluxDB 1.6 parses and then refuses: a statement error with its text (influxd table)', () => {
  // Observed on influxd 1.6.7~rc0: 200 with {"statement_id":0,"error":…} for
  // SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY <row>.
  for (const [groupBy, error] of GROUP_BY_ERRORS) {
    const text = `SELECT mean(value) FROM cpu WHERE time >= 1700000000000000000 AND time < 1700000600000000000 GROUP BY ${groupBy}`;
    assert.deepEqual(one(text), { kind: 'unsupported', what: 'SELECT', error }, text);
  }
});

test('fill(null | none | previous | linear | <number>)', () => {
  const fill = (arg: string) => select(`SELECT mean(v) FROM m WHERE time > now() - 1h GROUP BY time(1m) fill(${arg})`).fill;
  assert.deepEqual(fill('null'), { kind: 'null' });
  assert.deepEqual(fill('none'), { kind: 'none' });
  assert.deepEqual(fill('"none"'), { kind: 'none' });
  assert.deepEqual(fill('previous'), { kind: 'previous' });
  assert.deepEqual(fill('linear'), { kind: 'linear' });
  assert.deepEqual(fill('0'), { kind: 'number', value: 0 });
  assert.deepEqual(fill('-1.5'), { kind: 'number', value: -1.5 });
  assert.deepEqual(fill('100'), { kind: 'number', value: 100 });
  assert.equal(select('SELECT mean(v) FROM m GROUP BY time(1m)').fill, null);
});

test('ORDER BY time [ASC|DESC], LIMIT, OFFSET, SLIMIT, SOFFSET, tz()', () => {
  assert.equal(select('SELECT v FROM m ORDER BY time DESC').descending, true);
  assert.equal(select('SELECT v FROM m ORDER BY time ASC').descending, false);
  assert.equal(select('SELECT v FROM m ORDER BY time').descending, false);
  assert.equal(select('SELECT v FROM m ORDER BY DESC').descending, true);
  assert.equal(select('SELECT v FROM m ORDER BY "time" desc').descending, true);
  assert.deepEqual(
    select(`SELECT mean(v) FROM m WHERE time > now() - 1d GROUP BY time(1h), host fill(none) ORDER BY time DESC LIMIT 10 OFFSET 5 SLIMIT 2 SOFFSET 1 tz('Europe/Paris')`),
    selectOf({
      fields: [field(call('mean', ref('v')))],
      sources: [measurement('m')],
      condition: bin('>', time, bin('-', now, dur(86_400_000))),
      dimensions: [timeDim(3_600_000), tagDim('host')],
      fill: { kind: 'none' },
      descending: true,
      limit: 10,
      offset: 5,
      slimit: 2,
      soffset: 1,
      timezone: 'Europe/Paris',
    }),
  );
  assert.equal(select(`SELECT v FROM m tz('UTC')`).timezone, 'UTC');
  assert.equal(select(`SELECT v FROM m tz('')`).timezone, 'UTC');
  assert.equal(select(`SELECT v FROM m tz('US/Eastern')`).timezone, 'US/Eastern');
  assert.equal(select('SELECT v FROM m LIMIT 99999999999999999999').limit, 2 ** 63);
});

test('several statements separated by ;, empty ones skipped; white space around the text is dropped', () => {
  assert.deepEqual(parse('SHOW DATABASES; SHOW MEASUREMENTS LIMIT 1').map((s) => s.kind), ['show-databases', 'show-measurements']);
  assert.deepEqual(parse(';;SELECT v FROM m;;  ;').map((s) => s.kind), ['select']);
  assert.deepEqual(parse('SELECT mean("value") FROM "cpu" WHERE time >= now() - 6h GROUP BY time(10s) fill(null) ;').map((s) => s.kind), ['select']);
  assert.deepEqual(parse(''), []);
  assert.deepEqual(parse(' \n\t '), []);
  assert.deepEqual(parse('-- nothing\n/* at all */ ;'), []);
  assert.equal(parseError('SHOW DATABASES SHOW DATABASES').message, 'found SHOW, expected ; at line 1, char 16');
  // A ; inside a string does not end the statement.
  assert.deepEqual(parse(`CREATE USER u WITH PASSWORD 'a;b'; SHOW DATABASES`).map((s) => s.kind), ['unsupported', 'show-databases']);
});

test("Grafana's InfluxDB datasource (InfluxQL): editor queries, metadata queries and health checks", () => {
  assert.deepEqual(
    one('SELECT mean("value") FROM "m" WHERE ("host" =~ /^a$/) AND time >= now() - 6h and time <= now() GROUP BY time(10s), "host" fill(null)'),
    selectOf({
      fields: [field(call('mean', ref('value')))],
      sources: [measurement('m')],
      condition: bin('AND', bin('AND', paren(bin('=~', ref('host'), re('^a$'))), bin('>=', time, bin('-', now, dur(21_600_000)))), bin('<=', time, now)),
      dimensions: [timeDim(10_000), tagDim('host')],
      fill: { kind: 'null' },
    }),
  );
  assert.deepEqual(
    one('SELECT mean("value") FROM "autogen"."cpu" WHERE time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(1m) fill(null)'),
    selectOf({
      fields: [field(call('mean', ref('value')))],
      sources: [measurement('cpu', 'autogen')],
      condition: bin('AND', bin('>=', time, dur(1_700_000_000_000)), bin('<=', time, dur(1_700_003_600_000))),
      dimensions: [timeDim(60_000)],
      fill: { kind: 'null' },
    }),
  );
  assert.deepEqual(
    one(`SELECT mean("value") FROM "cpu" WHERE ("host"::tag =~ /^(a|b)$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(1m), "host"::tag fill(none)`),
    selectOf({
      fields: [field(call('mean', ref('value')))],
      sources: [measurement('cpu')],
      condition: bin('AND', bin('AND', paren(bin('=~', ref('host', 'tag'), re('^(a|b)$'))), bin('>=', time, dur(1_700_000_000_000))), bin('<=', time, dur(1_700_003_600_000))),
      dimensions: [timeDim(60_000), tagDim('host')],
      fill: { kind: 'none' },
    }),
  );
  // Metadata queries of the query editor.
  assert.equal(one('SHOW MEASUREMENTS LIMIT 100').kind, 'show-measurements');
  assert.equal(one('SHOW MEASUREMENTS WITH MEASUREMENT =~ /cp.*/ LIMIT 100').kind, 'show-measurements');
  assert.equal(one('SHOW TAG KEYS FROM "cpu"').kind, 'show-tag-keys');
  assert.equal(one('SHOW TAG VALUES FROM "cpu" WITH KEY = "host"').kind, 'show-tag-values');
  assert.equal(one('SHOW FIELD KEYS FROM "cpu"').kind, 'show-field-keys');
  assert.equal(one('SHOW RETENTION POLICIES on "db"').kind, 'show-retention-policies');
  // Health checks: Grafana 9+ sends SHOW measurements, older ones SHOW MEASUREMENTS LIMIT 1;
  // SELECT 1 is no InfluxQL (InfluxDB: found EOF, expected FROM).
  assert.equal(one('SHOW measurements').kind, 'show-measurements');
  assert.equal(one('SHOW MEASUREMENTS LIMIT 1').kind, 'show-measurements');
  assert.equal(parseError('SELECT 1').message, 'found EOF, expected FROM at line 1, char 9');
  // Several panel queries in one request.
  assert.deepEqual(
    parse('SELECT mean("value") FROM "cpu" WHERE time >= now() - 1h GROUP BY time(5m) fill(previous);SELECT count("value") FROM "cpu" WHERE time >= now() - 1h GROUP BY time(5m) fill(0)').map((s) => s.kind),
    ['select', 'select'],
  );
});

test('what the influx CLI sends', () => {
  assert.deepEqual(one('SHOW DATABASES'), { kind: 'show-databases' });
  assert.deepEqual(one('SHOW RETENTION POLICIES ON "db"'), { kind: 'show-retention-policies', database: 'db' });
  assert.deepEqual(one('SELECT * FROM m LIMIT 10'), selectOf({ fields: [field(star())], sources: [measurement('m')], limit: 10 }));
  assert.deepEqual(one('select * from m limit 10'), selectOf({ fields: [field(star())], sources: [measurement('m')], limit: 10 }));
  // INSERT is the CLI's own command (a /write): over /query InfluxDB does not parse it.
  assert.equal(parseError('INSERT m v=1').message, 'found INSERT, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char 1');
});

test('operator precedence: OR < AND < comparisons < + - | ^ < * / % &, left-associative', () => {
  const math = (text: string) => select(`SELECT ${text} FROM m`).fields[0]!.expr;
  const logic = (text: string) => select(`SELECT v FROM m WHERE ${text}`).condition;
  const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((n) => ref(n)) as [Expr, Expr, Expr, Expr, Expr];
  assert.deepEqual(math('a + b * c'), bin('+', a, bin('*', b, c)));
  assert.deepEqual(math('a * b + c'), bin('+', bin('*', a, b), c));
  assert.deepEqual(math('a - b - c'), bin('-', bin('-', a, b), c));
  assert.deepEqual(math('a / b % c & d'), bin('&', bin('%', bin('/', a, b), c), d));
  assert.deepEqual(math('a | b ^ c + d'), bin('+', bin('^', bin('|', a, b), c), d));
  assert.deepEqual(math('a + b | c * d & e'), bin('|', bin('+', a, b), bin('&', bin('*', c, d), e)));
  assert.deepEqual(math('(a + b) * c'), bin('*', paren(bin('+', a, b)), c));
  assert.deepEqual(math('-a * b'), bin('*', bin('*', int(-1), a), b));
  assert.deepEqual(math('1 - -1'), bin('-', int(1), int(-1)));
  assert.deepEqual(math('2 * -(a)'), bin('*', int(2), bin('*', int(-1), paren(a))));
  assert.deepEqual(logic('a = 1 OR b = 2 AND c = 3'), bin('OR', bin('=', a, int(1)), bin('AND', bin('=', b, int(2)), bin('=', c, int(3)))));
  assert.deepEqual(logic('a = 1 AND b = 2 OR c = 3'), bin('OR', bin('AND', bin('=', a, int(1)), bin('=', b, int(2))), bin('=', c, int(3))));
  assert.deepEqual(logic('a < b + 1'), bin('<', a, bin('+', b, int(1))));
  assert.deepEqual(logic('(a = 1 OR b = 1) AND c = 1'), bin('AND', paren(bin('OR', bin('=', a, int(1)), bin('=', b, int(1)))), bin('=', c, int(1))));
  assert.deepEqual(logic('a = -5m'), bin('=', a, dur(-300_000)));
  assert.deepEqual(logic('a = -9223372036854775808'), bin('=', a, int(-(2 ** 63))));
});

test('statements outside the subset that InfluxDB parses: unsupported, naming them', () => {
  const cases: [string, string][] = [
    ['CREATE DATABASE x', 'CREATE DATABASE'],
    ['CREATE DATABASE x WITH DURATION 1d REPLICATION 1 SHARD DURATION 1h NAME rp', 'CREATE DATABASE'],
    ['DROP DATABASE x', 'DROP DATABASE'],
    ['DROP MEASUREMENT "m"', 'DROP MEASUREMENT'],
    [`DROP SERIES FROM m WHERE a = 'b'`, 'DROP SERIES'],
    ['DROP SHARD 1', 'DROP SHARD'],
    ['DROP USER u', 'DROP USER'],
    ['DROP RETENTION POLICY rp ON db', 'DROP RETENTION POLICY'],
    ['DROP CONTINUOUS QUERY cq ON db', 'DROP CONTINUOUS QUERY'],
    ['DROP SUBSCRIPTION s ON db.rp', 'DROP SUBSCRIPTION'],
    [`CREATE USER u WITH PASSWORD 'p' WITH ALL PRIVILEGES`, 'CREATE USER'],
    ['CREATE RETENTION POLICY rp ON db DURATION 1d REPLICATION 1 SHARD DURATION 1h DEFAULT', 'CREATE RETENTION POLICY'],
    [`CREATE SUBSCRIPTION s ON db.rp DESTINATIONS ALL 'udp://h:9', 'udp://i:9'`, 'CREATE SUBSCRIPTION'],
    ['CREATE CONTINUOUS QUERY cq ON db RESAMPLE EVERY 1h FOR 2h BEGIN SELECT mean(v) INTO m2 FROM m GROUP BY time(1h) END', 'CREATE CONTINUOUS QUERY'],
    ['DELETE FROM m WHERE time < 0', 'DELETE'],
    [`DELETE WHERE a = 'b'`, 'DELETE'],
    ['GRANT ALL TO u', 'GRANT'],
    ['GRANT READ ON db TO u', 'GRANT'],
    ['REVOKE WRITE ON db FROM u', 'REVOKE'],
    ['REVOKE ALL PRIVILEGES FROM u', 'REVOKE'],
    ['ALTER RETENTION POLICY rp ON db DURATION 2d SHARD DURATION 1h DEFAULT', 'ALTER RETENTION POLICY'],
    [`SET PASSWORD FOR u = 'p'`, 'SET PASSWORD'],
    ['KILL QUERY 12 ON host1', 'KILL QUERY'],
    ['EXPLAIN SELECT v FROM m', 'EXPLAIN'],
    ['EXPLAIN ANALYZE SELECT v FROM m', 'EXPLAIN ANALYZE'],
    ['SHOW USERS', 'SHOW USERS'],
    ['SHOW GRANTS FOR u', 'SHOW GRANTS'],
    ['SHOW STATS', 'SHOW STATS'],
    [`SHOW STATS FOR 'runtime'`, 'SHOW STATS'],
    ['SHOW DIAGNOSTICS', 'SHOW DIAGNOSTICS'],
    ['SHOW QUERIES', 'SHOW QUERIES'],
    ['SHOW SHARDS', 'SHOW SHARDS'],
    ['SHOW SHARD GROUPS', 'SHOW SHARD GROUPS'],
    ['SHOW SUBSCRIPTIONS', 'SHOW SUBSCRIPTIONS'],
    ['SHOW CONTINUOUS QUERIES', 'SHOW CONTINUOUS QUERIES'],
    ['SHOW SERIES CARDINALITY', 'SHOW SERIES CARDINALITY'],
    ['SHOW SERIES EXACT CARDINALITY ON db FROM m', 'SHOW SERIES EXACT CARDINALITY'],
    ['SHOW MEASUREMENT CARDINALITY', 'SHOW MEASUREMENT CARDINALITY'],
    ['SHOW MEASUREMENT EXACT CARDINALITY', 'SHOW MEASUREMENT EXACT CARDINALITY'],
    ['SHOW TAG KEY CARDINALITY', 'SHOW TAG KEY CARDINALITY'],
    ['SHOW TAG KEY EXACT CARDINALITY FROM m', 'SHOW TAG KEY EXACT CARDINALITY'],
    ['SHOW FIELD KEY CARDINALITY', 'SHOW FIELD KEY CARDINALITY'],
    ['SHOW TAG VALUES CARDINALITY WITH KEY = host', 'SHOW TAG VALUES CARDINALITY'],
    ['SHOW TAG VALUES EXACT CARDINALITY FROM m WITH KEY =~ /h/', 'SHOW TAG VALUES EXACT CARDINALITY'],
    ['SELECT * FROM (SELECT v FROM m)', 'SUBQUERY'],
  ];
  for (const [text, what] of cases) assert.deepEqual(one(text), { kind: 'unsupported', what }, text);
  assert.deepEqual(parse('DROP DATABASE x; SHOW DATABASES'), [{ kind: 'unsupported', what: 'DROP DATABASE' }, { kind: 'show-databases' }]);
});

test('positions: line and char from 1, as InfluxDB counts them; offsets in the text', () => {
  const tokens = tokenize('SELECT "v" FROM m').map((t) => [t.kind, t.lit, t.pos.line, t.pos.char, t.pos.offset]);
  assert.deepEqual(tokens, [
    ['SELECT', '', 1, 1, 0],
    ['WS', ' ', 1, 7, 6],
    ['IDENT', 'v', 1, 8, 7],
    ['WS', ' ', 1, 11, 10],
    ['FROM', '', 1, 12, 11],
    ['WS', ' ', 1, 16, 15],
    ['IDENT', 'm', 1, 17, 16],
    // After an identifier InfluxDB's reader has read past the end once: the end is one further.
    ['EOF', '', 1, 19, 17],
  ]);
  // A string sits on the character before its quote.
  assert.deepEqual(tokenize(`a = 'x'`).find((t) => t.kind === 'STRING')!.pos, { offset: 3, line: 1, char: 4 });
  assert.deepEqual(tokenize('SELECT\n  v').find((t) => t.kind === 'IDENT')!.pos, { offset: 9, line: 2, char: 3 });
  assert.deepEqual(tokenize('SELECT\r\nv').find((t) => t.kind === 'IDENT')!.pos, { offset: 8, line: 2, char: 1 });
  // Chars count code points.
  assert.deepEqual(tokenize('"😀" x').filter((t) => t.kind === 'IDENT')[1]!.pos, { offset: 5, line: 1, char: 5 });

  const statement = parseQuery('  SELECT mean(v)\nFROM m WHERE a = 1') [0] as SelectStatement;
  const mean = statement.fields[0]!.expr as Extract<Expr, { type: 'call' }>;
  assert.deepEqual(mean.pos, { offset: 9, line: 1, char: 8 });
  assert.deepEqual(mean.args[0]!.pos, { offset: 14, line: 1, char: 13 });
  assert.deepEqual(statement.sources[0]!.pos, { offset: 22, line: 2, char: 6 });
  assert.deepEqual(statement.condition!.pos, { offset: 32, line: 2, char: 16 });
  assert.deepEqual(parseError('SELECT v\n  FRM m').pos, { offset: 11, line: 2, char: 3 });
  assert.equal(parseError('SELECT v\n  FRM m').message, 'found FRM, expected FROM at line 2, char 3');
});

test('InfluxDB 1.6 parse errors, word for word (influxd table)', () => {
  for (const [text, message] of PARSE_ERRORS) assert.equal(parseError(text).message, message, text);
  // Errors without a position have none.
  assert.equal(parseError('SELECT v FROM m WHERE time > 1x').pos, null);
});

test('statements influxd 1.6 parses parse here too (influxd table)', () => {
  for (const text of PARSED_BY_INFLUXD) {
    const statements = parseQuery(text, { nowMs: NOW_MS });
    for (const statement of statements) assert.ok(!('error' in statement), `${text}: ${JSON.stringify(statement)}`);
  }
});

test('bound parameters: $name from options.params, as influxd binds its params form value', () => {
  const condition = (params: Record<string, unknown>) =>
    (parseQuery('SELECT v FROM m WHERE a = $a AND b = $b AND c = $c AND d = $d', { params })[0] as SelectStatement).condition;
  const strip = (e: Expr | null) => JSON.parse(JSON.stringify(e, (k, v: unknown) => (k === 'pos' ? undefined : v))) as Expr;
  assert.deepEqual(
    strip(condition({ a: 'x', b: 2, c: 2.5, d: true })),
    bin('AND', bin('AND', bin('AND', bin('=', ref('a'), str('x')), bin('=', ref('b'), int(2))), bin('=', ref('c'), float(2.5))), bin('=', ref('d'), bool(true))),
  );
  const bound = parseQuery('SELECT $f FROM $m WHERE host =~ $r AND time > now() - $d GROUP BY $t LIMIT $n', {
    params: { f: { identifier: 'value' }, m: { identifier: 'cpu' }, r: { regex: '^a' }, d: { duration: 3_600_000_000_000 }, t: { identifier: 'host' }, n: 5 },
  });
  assert.deepEqual(
    JSON.parse(JSON.stringify(bound, (k, v: unknown) => (k === 'pos' ? undefined : v))),
    [
      selectOf({
        fields: [field(ref('value'))],
        sources: [measurement('cpu')],
        condition: bin('AND', bin('=~', ref('host'), re('^a')), bin('>', time, bin('-', now, dur(3_600_000)))),
        dimensions: [tagDim('host')],
        limit: 5,
      }),
    ],
  );
  // Observed on influxd 1.6.7~rc0: GET /query?q=<statement>&params=<JSON>; null: parsed.
  const observed: [string, unknown, string | null][] = [
    ['SELECT value FROM cpu WHERE value = $v', { w: true }, 'missing parameter: v'],
    ['SELECT value FROM cpu WHERE value = $v', { v: null }, 'missing parameter: unable to bind parameter with type <nil>'],
    ['SELECT value FROM cpu WHERE value = $v', { v: [1] }, 'missing parameter: unable to bind parameter with type []interface {}'],
    ['SELECT value FROM cpu WHERE value = $v', { v: { foo: 1 } }, 'missing parameter: unknown bind object type: foo'],
    ['SELECT value FROM cpu WHERE value = $v', { v: { a: 1, b: 2 } }, 'missing parameter: bound object parameter value must have exactly one entry'],
    ['SELECT value FROM cpu WHERE value = $v', { v: { integer: 'x' } }, 'missing parameter: integer literal must be an integer value'],
    ['SELECT value FROM $m', { m: 'cpu' }, 'found cpu, expected identifier at line 1, char 19'],
    ['SELECT value FROM $m', { m: { regex: 'c.*' } }, null],
    ['SELECT value FROM $m', { m: { regex: '(' } }, 'error parsing regexp: missing closing ): `(` at line 1, char 19'],
    ['SELECT value FROM cpu WHERE host =~ $r', { r: '^a' }, 'found ^a, expected regex at line 1, char 37'],
    ['SELECT value FROM cpu WHERE time > now() - $d', { d: { duration: '1h' } }, null],
    ['SELECT value FROM cpu WHERE time > now() - $d', { d: { duration: '1x' } }, 'invalid duration'],
    ['SELECT value FROM cpu WHERE value > -$v', { v: 3 }, null],
    ['SELECT value FROM cpu WHERE value > $v', { v: 0.0000001 }, null],
    ['SHOW TAG VALUES WITH KEY = $k', { k: { identifier: 'host' } }, null],
    ['SHOW TAG VALUES WITH KEY =~ $k', { k: { regex: 'h' } }, null],
    ['SELECT value FROM cpu LIMIT $n', { n: -1 }, 'LIMIT must be >= 0 at line 1, char 29'],
    ['KILL QUERY $n', { n: -1 }, 'strconv.ParseUint: parsing "-1": invalid syntax at line 1, char 12'],
  ];
  for (const [text, params, error] of observed) {
    if (error === null) assert.doesNotThrow(() => parseQuery(text, { params: params as Record<string, unknown> }), text);
    else
      assert.throws(() => parseQuery(text, { params: params as Record<string, unknown> }), (err: unknown) => err instanceof InfluxQLParseError && err.message === error, text);
  }
  assert.equal(parseError('SELECT v FROM m WHERE a = $a').message, 'missing parameter: a');
  assert.equal(parseError('SELECT v FROM m WHERE a = $').message, 'empty bound parameter');
});

test('lexer: tokens of every kind', () => {
  const kinds = tokenize(`SELECT a::field,1.5 .5 1. 10 5m30s 10µ 'it\\'s' "q\\"t" <> != =~ !~ <= >= $p -- c\n/* d */ ; @`)
    .filter((t) => t.kind !== 'WS')
    .map((t) => [t.kind, t.lit]);
  assert.deepEqual(kinds, [
    ['SELECT', ''],
    ['IDENT', 'a'],
    ['::', ''],
    ['FIELD', ''],
    [',', ''],
    ['NUMBER', '1.5'],
    ['NUMBER', '.5'],
    ['NUMBER', '1'],
    ['INTEGER', '10'],
    ['DURATIONVAL', '5m30s'],
    ['DURATIONVAL', '10µ'],
    ['STRING', "it's"],
    ['IDENT', 'q"t'],
    ['!=', ''],
    ['!=', ''],
    ['=~', ''],
    ['!~', ''],
    ['<=', ''],
    ['>=', ''],
    ['BOUNDPARAM', '$p'],
    ['COMMENT', ''],
    ['COMMENT', ''],
    [';', ''],
    ['ILLEGAL', '@'],
    ['EOF', ''],
  ]);
  assert.deepEqual(
    tokenize(`'open`).map((t) => t.kind),
    ['BADSTRING', 'EOF'],
  );
  assert.deepEqual(
    tokenize(`'a\\q'`).map((t) => [t.kind, t.lit]).slice(0, 1),
    [['BADESCAPE', '\\q']],
  );
});

test('durations: units ns u µ ms s m h d w, combined, and InfluxDB errors', () => {
  assert.equal(parseDuration('1h30m'), 5_400_000_000_000n);
  assert.equal(parseDuration('10u'), 10_000n);
  assert.equal(parseDuration('10µ'), 10_000n);
  assert.equal(parseDuration('5ms'), 5_000_000n);
  assert.equal(parseDuration('3ns'), 3n);
  assert.equal(parseDuration('1d'), 86_400_000_000_000n);
  assert.equal(parseDuration('1w'), 604_800_000_000_000n);
  assert.equal(parseDuration('1m'), 60_000_000_000n);
  assert.equal(parseDuration('2562047h'), 2562047n * 3_600_000_000_000n);
  assert.equal(parseDuration('1x'), 'invalid duration');
  assert.equal(parseDuration('1n'), 'invalid duration');
  assert.equal(parseDuration('1m30'), 'invalid duration');
  assert.equal(parseDuration('2562048h'), 'overflowed duration 2562048h: choose a smaller duration or INF');
});

test("regular expressions are checked as Go's regexp (RE2) checks them", () => {
  for (const ok of ['(?i)cpu', '^(a|b)$', '^server\\.example\\.com$', 'a{2,3}?', '\\pL\\p{Greek}[[:alpha:]\\d]', '(?P<n>a)', '\\Qa.b\\E', '', 'a{', 'x{1,']) {
    assert.equal(regexSyntaxError(ok), null, ok);
  }
  assert.equal(regexSyntaxError('('), 'error parsing regexp: missing closing ): `(`');
  assert.equal(regexSyntaxError('a)'), 'error parsing regexp: unexpected ): `a)`');
  assert.equal(regexSyntaxError('a**'), 'error parsing regexp: invalid nested repetition operator: `**`');
  assert.equal(regexSyntaxError('*'), 'error parsing regexp: missing argument to repetition operator: `*`');
  assert.equal(regexSyntaxError('\\1'), 'error parsing regexp: invalid escape sequence: `\\1`');
  assert.equal(regexSyntaxError('(?=a)'), 'error parsing regexp: invalid or unsupported Perl syntax: `(?=`');
  assert.equal(regexSyntaxError('[z-a]'), 'error parsing regexp: invalid character class range: `z-a`');
  assert.equal(regexSyntaxError('[a'), 'error parsing regexp: missing closing ]: `[a`');
  assert.equal(regexSyntaxError('a{1001}'), 'error parsing regexp: invalid repeat count: `{1001}`');
});

test('time strings as InfluxDB reads them', () => {
  assert.deepEqual(parseTimeString('2024-06-01T00:00:00Z'), { ns: 1_717_200_000_000_000_000n, zoned: true });
  assert.deepEqual(parseTimeString('2024-06-01T02:00:00+02:00'), { ns: 1_717_200_000_000_000_000n, zoned: true });
  assert.deepEqual(parseTimeString('2024-06-01T00:00:00.123456789Z'), { ns: 1_717_200_000_123_456_789n, zoned: true });
  assert.deepEqual(parseTimeString('2024-06-01 12:30:00.5'), { ns: 1_717_245_000_500_000_000n, zoned: false });
  assert.deepEqual(parseTimeString('2024-06-01'), { ns: 1_717_200_000_000_000_000n, zoned: false });
  assert.deepEqual(parseTimeString('2024-06-01T1:02:03Z'), { ns: 1_717_203_723_000_000_000n, zoned: true });
  assert.deepEqual(parseTimeString('2024-02-29'), { ns: 1_709_164_800_000_000_000n, zoned: false });
  for (const bad of ['2023-02-29', '2024-13-01', '2024-06-01T24:00:00Z', '2024-06-01T00:00:00', '2024-06-01 00:00:00Z', '2024-06-01Tfoo', 'x', '2024-06-01T00:00:00+0200']) {
    assert.equal(parseTimeString(bad), null, bad);
  }
  // As influxd 1.6.7 takes (or refuses) them in `WHERE time >= '…' - 1h`.
  for (const ok of ['2023-11-14 22:13:20,5', '2023-11-14 22:13:20.5', '2023-11-14T22:13:20Z', '2023-11-14T22:13:20+01:00', '2023-11-14T2:13:20Z', '2023-11-14']) {
    assert.notEqual(parseTimeString(ok), null, ok);
  }
  for (const bad of ['2023-02-29', '2023-11-14T22:13:20', '2023-11-14 22:13:20Z', '2023-11-14t22:13:20Z', '2023-11-14T22:13:60Z', '2023-11-14T22:13:20.Z', '2023-11-14T22:13:20+0100']) {
    assert.equal(parseTimeString(bad), null, bad);
  }
});

test('expressions nest at most 1000 levels: deeper is a parse error, not a stack overflow', () => {
  const deepParens = `SELECT ${'('.repeat(20_000)}a${')'.repeat(20_000)} FROM m`;
  assert.equal(parseError(deepParens).message, 'expression nested deeper than 1000 levels at line 1, char 1008');
  assert.equal(parseError(`SELECT ${'f('.repeat(20_000)}a${')'.repeat(20_000)} FROM m`).message, 'expression nested deeper than 1000 levels at line 1, char 2008');
  assert.equal(parseError(`SELECT a${' + a'.repeat(20_000)} FROM m`).message, 'expression nested deeper than 1000 levels at line 1, char 8');
  // 999 ORs are fine.
  const ors = Array.from({ length: 999 }, (_, i) => `a = ${i}`).join(' OR ');
  assert.equal(select(`SELECT v FROM m WHERE ${ors}`).condition!.type, 'binary');
});

test('token soups: nothing but InfluxQLParseError is thrown, nothing hangs', { timeout: 60_000 }, () => {
  const words = [
    'SELECT', 'FROM', 'WHERE', 'GROUP', 'BY', 'ORDER', 'LIMIT', 'OFFSET', 'SLIMIT', 'SOFFSET', 'SHOW', 'TAG', 'KEYS', 'VALUES', 'FIELD',
    'MEASUREMENTS', 'MEASUREMENT', 'SERIES', 'DATABASES', 'RETENTION', 'POLICIES', 'WITH', 'KEY', 'IN', 'ON', 'INTO', 'AS', 'AND', 'OR',
    'CREATE', 'DROP', 'DATABASE', 'DELETE', 'GRANT', 'REVOKE', 'ALTER', 'SET', 'KILL', 'EXPLAIN', 'CARDINALITY', 'EXACT', 'DISTINCT',
    'time', 'now()', 'fill', 'tz', 'mean', 'null', 'none', 'host', '"host"', '"a\\"b"', "'str'", "'2024-06-01T00:00:00Z'", "'open",
    '1', '1.5', '.5', '10s', '1h30m', '5x', '99999999999999999999', '-', '+', '*', '/', '%', '&', '|', '^', '=', '!=', '<>', '=~', '!~',
    '<', '<=', '>', '>=', '(', ')', ',', ';', '.', '..', ':', '::', '::field', '::tag', '/re/', '/(?i)x/', '/(/', '/a\\/b/', '$p', '$',
    '-- c\n', '/* c */', '/*', '\n', '\t', ' ', '!', '@', 'µ', '😀', '\\', '"', "'",
  ];
  const valid = [
    'SELECT mean("value") FROM "m" WHERE ("host" =~ /^a$/) AND time >= now() - 6h and time <= now() GROUP BY time(10s), "host" fill(null)',
    'SHOW TAG VALUES FROM "cpu" WITH KEY IN ("host", "region") WHERE "dc" = \'x\' LIMIT 10',
    'SELECT percentile("v", 95) INTO "db"."rp".:MEASUREMENT FROM db..m, /re/ GROUP BY time(1m, now()) ORDER BY time DESC tz(\'UTC\')',
  ];
  const rnd = prng(20_240_601);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const soups: string[] = [];
  for (let i = 0; i < 4000; i++) {
    const n = 1 + Math.floor(rnd() * 25);
    const parts: string[] = [];
    for (let j = 0; j < n; j++) parts.push(pick(words));
    soups.push(parts.join(rnd() < 0.7 ? ' ' : ''));
  }
  for (let i = 0; i < 3000; i++) {
    const chars = Array.from(pick(valid));
    const edits = 1 + Math.floor(rnd() * 4);
    for (let j = 0; j < edits; j++) {
      const at = Math.floor(rnd() * (chars.length + 1));
      const op = rnd();
      if (op < 0.4) chars.splice(at, 1);
      else if (op < 0.8) chars.splice(at, 0, pick(Array.from('()\'"/\\*;,.:=!~<>-+ \n$µ😀\u0000\r')));
      else chars.splice(at, 0, pick(words));
    }
    soups.push(chars.join(''));
  }
  for (let i = 0; i < 50; i++) {
    const depth = Math.floor(rnd() * 3000);
    soups.push(`SELECT ${pick(['(', 'f(', '-(', 'a + (', 'distinct('])!.repeat(depth)}${pick(words)}${')'.repeat(Math.floor(rnd() * depth))} FROM m`);
  }
  for (let i = 0; i < 1000; i++) {
    let text = '';
    const n = Math.floor(rnd() * 40);
    for (let j = 0; j < n; j++) text += String.fromCodePoint(Math.floor(rnd() * 0x300));
    soups.push(text);
  }
  let parsed = 0;
  for (const soup of soups) {
    const started = performance.now();
    try {
      const statements = parseQuery(soup);
      JSON.stringify(statements);
      parsed++;
    } catch (err) {
      if (!(err instanceof InfluxQLParseError)) assert.fail(`${JSON.stringify(soup)}: ${(err as Error).stack}`);
      assert.ok(err.message.length > 0);
    }
    assert.ok(performance.now() - started < 1000, `slow: ${JSON.stringify(soup)}`);
  }
  assert.ok(parsed > 0);
});
