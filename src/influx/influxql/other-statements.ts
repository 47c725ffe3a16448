/**
 * The InfluxQL statements the subset does not run, parsed in full as InfluxDB parses them (so a
 * malformed one gets InfluxDB's error) and answered `{kind: 'unsupported', what}`: CREATE/DROP
 * DATABASE, MEASUREMENT, RETENTION POLICY, USER, SERIES, SHARD, SUBSCRIPTION, CONTINUOUS QUERY,
 * DELETE, GRANT, REVOKE, ALTER RETENTION POLICY, SET PASSWORD, KILL QUERY, EXPLAIN [ANALYZE],
 * SHOW GRANTS / STATS / DIAGNOSTICS and the CARDINALITY forms. Pure TypeScript.
 */

import type { Source, Statement, Unsupported } from './ast.js';
import type { ClauseParser } from './clauses.js';
import { formatDuration } from './duration.js';
import { errorAt, FIRST, found, plain } from './errors.js';
import { groupByInterval } from './group-by.js';
import type { TokenKind } from './tokens.js';

export function unsupported(what: string): Unsupported {
  return { kind: 'unsupported', what };
}

/** SHOW TAG KEY / FIELD KEY [EXACT] CARDINALITY. */
export function keyCardinality(p: ClauseParser, prefix: string): Statement {
  const exact = p.accept('EXACT');
  const tok = p.next();
  if (tok.kind !== 'CARDINALITY') throw found(tok, exact ? ['CARDINALITY'] : ['EXACT', 'CARDINALITY']);
  return cardinality(p, `${prefix}${exact ? ' EXACT' : ''} CARDINALITY`);
}

/**
 * A CARDINALITY statement from after its CARDINALITY (after its EXACT when `exact`):
 * [ON db] [FROM …] [WITH KEY … when `withKey`] [WHERE …] [GROUP BY …] [LIMIT n] [OFFSET n].
 */
export function cardinality(p: ClauseParser, what: string, options: { exact?: boolean; withKey?: boolean } = {}): Statement {
  if (options.exact === true) p.expect('CARDINALITY');
  p.onDatabase();
  p.fromSources();
  if (options.withKey === true) p.withKey();
  p.condition();
  p.dimensionExprs();
  p.optionalInt('LIMIT');
  p.optionalInt('OFFSET');
  return unsupported(what);
}

/** SHOW STATS / SHOW DIAGNOSTICS [FOR 'module']. */
export function showForModule(p: ClauseParser, what: string): Statement {
  if (p.accept('FOR')) p.string();
  return unsupported(what);
}

/** A statement that ends with a name (DROP DATABASE x, SHOW GRANTS FOR u, …). */
export function identThen(p: ClauseParser, statement: Statement): Statement {
  p.ident();
  return statement;
}

/** A statement that ends with an unsigned integer (DROP SHARD n). */
export function uintThen(p: ClauseParser, statement: Statement): Statement {
  p.uint64();
  return statement;
}

/** `name ON db` (DROP CONTINUOUS QUERY, DROP RETENTION POLICY). */
export function nameOnDatabase(p: ClauseParser, what: string): Statement {
  p.ident();
  p.expect('ON');
  p.ident();
  return unsupported(what);
}

export function deleteStatement(p: ClauseParser): Statement {
  return fromOrWhere(p, 'DELETE');
}

export function dropSeries(p: ClauseParser): Statement {
  return fromOrWhere(p, 'DROP SERIES');
}

/** `[FROM sources] [WHERE condition]` with at least one of them (DELETE, DROP SERIES), as InfluxDB requires. */
function fromOrWhere(p: ClauseParser, what: string): Statement {
  const tok = p.next();
  let sources: Source[] | null = null;
  if (tok.kind === 'FROM') {
    sources = p.sources(false).sources;
    checkNoDatabase(sources);
  } else {
    p.unscan();
  }
  const condition = p.condition();
  if (condition === null && sources === null) throw found(tok, ['FROM', 'WHERE']);
  return unsupported(what);
}

/** `<name> ON <db>.<rp>`: what names a subscription. */
function subscriptionTarget(p: ClauseParser): void {
  p.ident();
  p.expect('ON');
  p.ident();
  const dot = p.scan();
  if (dot.kind !== '.') throw found(dot, ['.']);
  p.ident();
}

export function dropSubscription(p: ClauseParser): Statement {
  subscriptionTarget(p);
  return unsupported('DROP SUBSCRIPTION');
}

export function createDatabase(p: ClauseParser): Statement {
  p.ident();
  if (!p.accept('WITH')) return unsupported('CREATE DATABASE');
  const tok = p.next();
  if (!['DURATION', 'NAME', 'REPLICATION', 'SHARD'].includes(tok.kind)) throw found(tok, ['DURATION', 'NAME', 'REPLICATION', 'SHARD']);
  p.unscan();
  if (p.accept('DURATION')) p.durationOption();
  if (p.accept('REPLICATION')) p.int(1, 2 ** 31 - 1);
  if (p.accept('SHARD')) {
    const duration = p.next();
    if (duration.kind !== 'DURATION') throw found(duration, ['DURATION']);
    p.durationOption();
  }
  if (p.accept('NAME')) p.ident();
  return unsupported('CREATE DATABASE');
}

export function createUser(p: ClauseParser): Statement {
  p.ident();
  p.expect('WITH', 'PASSWORD');
  p.string();
  if (p.accept('WITH')) p.expect('ALL', 'PRIVILEGES');
  return unsupported('CREATE USER');
}

export function createRetentionPolicy(p: ClauseParser): Statement {
  p.ident();
  p.expect('ON');
  p.ident();
  p.expect('DURATION');
  p.durationOption();
  p.expect('REPLICATION');
  p.int(1, 2 ** 31 - 1);
  if (p.accept('SHARD')) shardDuration(p);
  p.accept('DEFAULT');
  return unsupported('CREATE RETENTION POLICY');
}

/** After SHARD: `DURATION d` (not INF). */
function shardDuration(p: ClauseParser): void {
  const duration = p.next();
  if (duration.kind !== 'DURATION') throw found(duration, ['DURATION']);
  const value = p.next();
  if (value.kind === 'INF') throw errorAt('invalid duration INF for shard duration', value.pos);
  p.unscan();
  p.durationOption();
}

export function alterRetentionPolicy(p: ClauseParser): Statement {
  const name = p.next();
  if (name.kind !== 'DEFAULT' && name.kind !== 'IDENT') throw found(name, ['identifier']);
  p.expect('ON');
  p.ident();
  const seen = new Set<TokenKind>();
  for (;;) {
    const tok = p.next();
    if (seen.has(tok.kind)) throw errorAt(`found duplicate ${tok.kind} option`, tok.pos);
    if (tok.kind === 'DURATION') p.durationOption();
    else if (tok.kind === 'REPLICATION') p.int(1, 2 ** 31 - 1);
    else if (tok.kind === 'SHARD') shardDuration(p);
    else if (tok.kind !== 'DEFAULT') {
      if (seen.size === 0) throw found(tok, ['DURATION', 'REPLICATION', 'SHARD', 'DEFAULT']);
      p.unscan();
      return unsupported('ALTER RETENTION POLICY');
    }
    seen.add(tok.kind);
  }
}

export function createSubscription(p: ClauseParser): Statement {
  subscriptionTarget(p);
  p.expect('DESTINATIONS');
  const mode = p.next();
  if (mode.kind !== 'ALL' && mode.kind !== 'ANY') throw found(mode, ['ALL', 'ANY']);
  p.stringList();
  return unsupported('CREATE SUBSCRIPTION');
}

export function createContinuousQuery(p: ClauseParser): Statement {
  p.ident();
  p.expect('ON');
  p.ident();
  let every = 0n;
  let forDuration = 0n;
  if (p.accept('RESAMPLE')) {
    if (p.accept('EVERY')) every = p.durationValue();
    if (p.accept('FOR')) forDuration = p.durationValue();
    if (every === 0n && forDuration === 0n) throw found(p.next(), ['EVERY', 'FOR']);
  }
  p.expect('BEGIN', 'SELECT');
  const source = p.select('required');
  const interval = groupByInterval(source.dimensions);
  if (source.hasCall && (interval === 0n || typeof interval === 'string')) {
    p.unscan();
    p.unscan();
    const tok = p.next();
    throw found(tok, typeof interval === 'string' ? ['GROUP BY time(...)', interval] : ['GROUP BY time(...)']);
  }
  p.expect('END');
  if (typeof interval === 'string') throw plain(interval);
  if (forDuration !== 0n) {
    const least = every !== 0n && every > interval ? every : interval;
    if (least > forDuration) {
      throw plain(`FOR duration must be >= GROUP BY time duration: must be a minimum of ${formatDuration(least)}, got ${formatDuration(forDuration)}`);
    }
  }
  return unsupported('CREATE CONTINUOUS QUERY');
}

export function explain(p: ClauseParser): Statement {
  const analyze = p.accept('ANALYZE');
  p.expect('SELECT');
  p.select('optional');
  return unsupported(analyze ? 'EXPLAIN ANALYZE' : 'EXPLAIN');
}

export function grantOrRevoke(p: ClauseParser, what: 'GRANT' | 'REVOKE'): Statement {
  const privilege = p.next();
  let all = false;
  if (privilege.kind === 'ALL') {
    all = true;
    p.accept('PRIVILEGES');
  } else if (privilege.kind !== 'READ' && privilege.kind !== 'WRITE') {
    throw found(privilege, ['READ', 'WRITE', 'ALL [PRIVILEGES]']);
  }
  const to = what === 'GRANT' ? 'TO' : 'FROM';
  const tok = p.next();
  if (tok.kind === 'ON') {
    p.ident();
    p.expect(to);
    p.ident();
    return unsupported(what);
  }
  if (tok.kind === to) {
    if (!all) throw found(tok, ['ON']);
    p.ident();
    return unsupported(what);
  }
  throw found(tok, all ? ['ON', to] : ['ON']);
}

export function setPassword(p: ClauseParser): Statement {
  p.ident();
  p.expect('=');
  p.string();
  return unsupported('SET PASSWORD');
}

export function killQuery(p: ClauseParser): Statement {
  p.uint64();
  if (p.accept('ON')) p.ident();
  return unsupported('KILL QUERY');
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
