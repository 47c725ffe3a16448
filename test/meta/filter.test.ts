import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { ServiceError } from '../../shared/errors.js';
import {
  FIELD_PATTERN,
  NumericText,
  compileOrder,
  compileWhere,
  normalizeFilter,
  parseFilterQuery,
  registerSqlFunctions,
  type Filter,
  type TableShape,
  type Where,
} from '../../src/meta/filter.js';
import { compileRegexp } from '../../src/meta/regexp-guard.js';

// Every semantic is checked against SQLite itself: compile, run, compare the ids.
const db = new Database(':memory:');
db.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, unitsId INTEGER, meta_data TEXT NOT NULL DEFAULT '{}')`);
const rows: [number, number | null, object][] = [
  [1, 5, { name: 'Pump A', kind: 'pump', temp: 20, code: '10', spec: { rpm: 1500 }, note: '50% load' }],
  [2, 5, { name: 'pump b', kind: 'pump', temp: 35.5, code: 10, spec: { rpm: 900 }, note: 'why?' }],
  [3, 7, { name: 'Valve_1', kind: 'valve', temp: null, note: '100% open' }],
  [4, null, { name: 'a*b', kind: 'odd', temp: -5, note: 'x_y' }],
  [5, 7, { name: '[x]', kind: 'odd', temp: 100, flag: true }],
  [6, null, {}],
  [7, 9, { name: 'MOTOR', kind: 'motor', temp: 'hot', flag: false, spec: { rpm: '1500' } }],
  [8, 5, { name: 'motor', kind: 'motor', temp: 50, code: '007', spec: {} }],
];
const insert = db.prepare('INSERT INTO items (id, unitsId, meta_data) VALUES (?, ?, ?)');
for (const [id, unitsId, meta] of rows) insert.run(id, unitsId, JSON.stringify(meta));
registerSqlFunctions(db);

const table: TableShape = { columns: new Set(['id', 'unitsId']) };
const ALL = [1, 2, 3, 4, 5, 6, 7, 8];

/** Ids the filter selects, in the filter's order (by id when it has none). */
function idsFor(filter: Filter): number[] {
  const where = compileWhere(filter.where, table);
  const order = compileOrder(filter.order, table);
  let text = `SELECT id FROM items WHERE ${where.sql} ${order.sql || 'ORDER BY id'}`;
  const params = [...where.params, ...order.params];
  if (filter.limit !== undefined || filter.skip !== undefined) {
    text += ' LIMIT ? OFFSET ?';
    params.push(filter.limit ?? -1, filter.skip ?? 0);
  }
  return db.prepare(text).pluck().all(...params) as number[];
}
const matching = (where: Where) => idsFor({ where });
const matchingQuery = (rawQuery: string) => idsFor(parseFilterQuery(rawQuery));

function assertBadRequest(fn: () => unknown, message: RegExp | string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ServiceError, `expected an ServiceError, got ${String(err)}`);
    assert.equal(err.status, 400);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

test('a bare value is equality; null matches null and missing keys', () => {
  assert.deepEqual(matching({ name: 'motor' }), [8], 'case-sensitive');
  assert.deepEqual(matching({ temp: 20 }), [1]);
  assert.deepEqual(matching({ temp: null }), [3, 6]);
  assert.deepEqual(matching({ temp: { eq: null } }), [3, 6]);
  assert.deepEqual(matching({ flag: true }), [5], 'booleans bind as 1/0, like JSON true reads back');
  assert.deepEqual(matching({ flag: false }), [7]);
  assert.deepEqual(matching({ 'spec.rpm': 1500 }), [1], 'dotted names reach nested keys; the number does not match "1500"');
  assert.deepEqual(matching({ code: '10' }), [1], 'a JSON string matches only strings');
  assert.deepEqual(matching({ code: 10 }), [2], 'a JSON number matches only numbers');
  assert.deepEqual(matching({ kind: 'pump', unitsId: 5 }), [1, 2], 'several fields are ANDed');
});

test('real columns compile to quoted identifiers and keep their affinity', () => {
  assert.deepEqual(compileWhere({ unitsId: 5 }, table), { sql: '"unitsId" = ?', params: [5] });
  assert.deepEqual(compileWhere({ name: 'x' }, table), {
    sql: 'CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, ?) END = ?',
    params: ['$."name"', 'x'],
  });
  assert.deepEqual(compileWhere({ 'spec.rpm': 1 }, table).params, ['$."spec"."rpm"', 1]);
  assert.deepEqual(matching({ unitsId: 5 }), [1, 2, 8]);
  assert.deepEqual(matching({ unitsId: '5' }), [1, 2, 8], 'INTEGER affinity converts the text operand');
  assert.deepEqual(matching({ id: '5' }), [5]);
  assert.deepEqual(matching({ unitsId: { gt: '5' } }), [3, 5, 7]);
  assert.deepEqual(compileWhere(undefined, table), { sql: '1', params: [] });
  assert.deepEqual(compileWhere({}, table), { sql: '1', params: [] });
});

test('neq is null-inclusive; neq null means present', () => {
  assert.deepEqual(matching({ kind: { neq: 'pump' } }), [3, 4, 5, 6, 7, 8]);
  assert.deepEqual(matching({ temp: { neq: null } }), [1, 2, 4, 5, 7, 8]);
  assert.deepEqual(matching({ unitsId: { neq: 5 } }), [3, 4, 5, 6, 7]);
});

test('gt, gte, lt, lte and between compare numbers as numbers and text as text', () => {
  assert.deepEqual(matching({ temp: { gt: 20 } }), [2, 5, 8], "the text 'hot' is not above 20");
  assert.deepEqual(matching({ temp: { gte: 20 } }), [1, 2, 5, 8]);
  assert.deepEqual(matching({ temp: { lt: 0 } }), [4]);
  assert.deepEqual(matching({ temp: { lte: 20 } }), [1, 4]);
  assert.deepEqual(matching({ temp: { gt: 0, lt: 50 } }), [1, 2], 'several operators on one field are ANDed');
  assert.deepEqual(matching({ name: { gt: 'a' } }), [2, 4, 8], 'binary text order: upper case and [ sort before a');
  assert.deepEqual(matching({ temp: { gte: 'a' } }), [7], 'a text operand only sees text values');
  assert.deepEqual(matching({ unitsId: { gt: 5 } }), [3, 5, 7]);
  assert.deepEqual(matching({ temp: { between: [0, 50] } }), [1, 2, 8], 'inclusive');
  assert.deepEqual(matching({ temp: { between: [50, 0] } }), []);
  assert.deepEqual(matching({ unitsId: { between: [6, 9] } }), [3, 5, 7]);
  assertBadRequest(() => matching({ temp: { between: [1] } }), /operator 'between' on field 'temp' needs a two-element array/);
  assertBadRequest(() => matching({ temp: { between: 5 } }), /two-element array/);
  assertBadRequest(() => matching({ temp: { between: [1, 'z'] } }), /two numbers or two strings/);
  assertBadRequest(() => matching({ temp: { gt: null } }), /operator 'gt' on field 'temp' needs a string, number or boolean/);
  assertBadRequest(() => matching({ temp: { gt: [1] } }), /operator 'gt' on field 'temp'/);
});

test('inq/in and nin take arrays; empty lists, nulls and the 1000-value cap', () => {
  assert.deepEqual(matching({ kind: { inq: ['pump', 'odd'] } }), [1, 2, 4, 5]);
  assert.deepEqual(matching({ kind: { in: ['valve'] } }), [3]);
  assert.deepEqual(matching({ kind: { inq: [] } }), []);
  assert.deepEqual(compileWhere({ kind: { inq: [] } }, table).sql, '0');
  assert.deepEqual(matching({ kind: { inq: [null, 'valve'] } }), [3, 6]);
  assert.deepEqual(matching({ kind: { nin: ['pump', 'odd'] } }), [3, 6, 7, 8], 'null-inclusive');
  assert.deepEqual(matching({ kind: { nin: [] } }), ALL);
  assert.deepEqual(matching({ kind: { nin: [null, 'pump'] } }), [3, 4, 5, 7, 8], 'null in the list excludes nulls');
  assert.deepEqual(matching({ unitsId: { nin: [5, 7] } }), [4, 6, 7]);
  assert.deepEqual(matching({ id: { inq: Array.from({ length: 1000 }, (_, i) => i * 2) } }), [2, 4, 6, 8]);
  assertBadRequest(() => matching({ id: { inq: Array.from({ length: 1001 }, (_, i) => i) } }), /more than 1000 values/);
  assertBadRequest(() => matching({ kind: { inq: 'pump' } }), "operator 'inq' on field 'kind' needs an array");
  assertBadRequest(() => matching({ kind: { nin: [{}] } }), /operator 'nin' on field 'kind' needs an array of strings/);
});

test('like is case-sensitive with % and _, anchored, and treats GLOB characters literally', () => {
  assert.deepEqual(matching({ name: { like: 'p%' } }), [2]);
  assert.deepEqual(matching({ name: { like: 'P%' } }), [1]);
  assert.deepEqual(matching({ name: { like: '%otor' } }), [8]);
  assert.deepEqual(matching({ name: { like: 'otor' } }), [], 'anchored at both ends');
  assert.deepEqual(matching({ name: { like: 'motor%' } }), [8], '% matches an empty run');
  assert.deepEqual(matching({ name: { like: 'pump _' } }), [2]);
  assert.deepEqual(matching({ name: { like: 'Valv__1' } }), [3]);
  assert.deepEqual(matching({ name: { like: 'a*b' } }), [4], '* is literal');
  assert.deepEqual(matching({ name: { like: 'a*' } }), [], '* does not act as a wildcard');
  assert.deepEqual(matching({ name: { like: 'a_b' } }), [4]);
  assert.deepEqual(matching({ name: { like: '[x]' } }), [5], '[ is literal');
  assert.deepEqual(matching({ name: { like: '[%' } }), [5]);
  assert.deepEqual(matching({ note: { like: '%?' } }), [2], '? is literal');
  assert.deepEqual(matching({ note: { like: '%\\%%' } }), [1, 3], '\\% is a literal percent sign');
  assert.deepEqual(matching({ note: { like: '%\\_%' } }), [4], '\\_ is a literal underscore');
  assert.deepEqual(matching({ note: { like: 'x\\_y' } }), [4]);
  assert.deepEqual(matching({ name: { nlike: 'p%' } }), [1, 3, 4, 5, 7, 8], 'nlike skips rows without the key');
  assertBadRequest(() => matching({ name: { like: 5 } }), "operator 'like' on field 'name' needs a string pattern");
});

test('ilike ignores case; escapes mean the same as in like', () => {
  assert.deepEqual(matching({ name: { ilike: 'p%' } }), [1, 2]);
  assert.deepEqual(matching({ name: { ilike: '%OTOR' } }), [7, 8]);
  assert.deepEqual(matching({ name: { ilike: 'A*B' } }), [4]);
  assert.deepEqual(matching({ name: { ilike: 'valve_1' } }), [3]);
  assert.deepEqual(matching({ note: { ilike: '%\\%%' } }), [1, 3]);
  assert.deepEqual(matching({ note: { ilike: '%\\_%' } }), [4]);
  assert.deepEqual(matching({ note: { ilike: 'X\\_Y' } }), [4]);
  assert.deepEqual(matching({ name: { nilike: 'p%' } }), [3, 4, 5, 7, 8]);
});

test('contains and ncontains are case-sensitive substring tests', () => {
  assert.deepEqual(matching({ name: { contains: 'otor' } }), [8]);
  assert.deepEqual(matching({ name: { contains: 'OTOR' } }), [7]);
  assert.deepEqual(matching({ note: { contains: '%' } }), [1, 3], '% is not a wildcard here');
  assert.deepEqual(matching({ name: { ncontains: 'otor' } }), [1, 2, 3, 4, 5, 6, 7], 'null-inclusive');
});

test('exists tests presence (a JSON null counts as absent)', () => {
  assert.deepEqual(matching({ flag: { exists: true } }), [5, 7]);
  assert.deepEqual(matching({ temp: { exists: false } }), [3, 6]);
  assert.deepEqual(matching({ 'spec.rpm': { exists: true } }), [1, 2, 7]);
  assert.deepEqual(matching({ unitsId: { exists: false } }), [4, 6]);
  assertBadRequest(() => matching({ flag: { exists: 'yes' } }), "operator 'exists' on field 'flag' needs true or false");
});

test('regexp runs in application code on the linear-time matcher, with flags', () => {
  assert.deepEqual(matching({ name: { regexp: '/^pump/i' } }), [1, 2]);
  assert.deepEqual(matching({ name: { regexp: '^pump' } }), [2], 'a plain string has no flags');
  assert.deepEqual(matching({ name: { regexp: '/OTOR$/' } }), [7]);
  assert.deepEqual(matching({ temp: { regexp: '/^\\d+$/' } }), [1, 5, 8], 'numbers are matched as their text; nulls never match');
  assert.deepEqual(matching({ unitsId: { regexp: '^7$' } }), [3, 5]);
  assertBadRequest(() => matching({ name: { regexp: '/a/g' } }), /unsupported flags 'g'/);
  assertBadRequest(() => matching({ name: { regexp: '/(/' } }), /operator 'regexp' on field 'name': regexp '\/\(\/' is invalid/);
  assertBadRequest(() => matching({ name: { regexp: 5 } }), /needs a string/);
});

test('patterns that backtrack catastrophically in JavaScript are accepted; backreferences and lookaround are 400', () => {
  assert.deepEqual(matching({ name: { regexp: '/^(a+)+$/' } }), []);
  assert.deepEqual(matching({ name: { regexp: '/^(p|pu)+mp/i' } }), [1, 2]);
  assertBadRequest(() => matching({ name: { regexp: '/(a)\\1/' } }), /operator 'regexp' on field 'name': regexp '\/\(a\)\\1\/' is refused: backreferences are not supported/);
  assertBadRequest(() => matching({ name: { regexp: '(?<=a)b' } }), /is refused: lookahead and lookbehind are not supported/);
  assertBadRequest(() => matching({ name: { regexp: '(?=a)' } }), /is refused: lookahead and lookbehind are not supported/);
  assertBadRequest(() => matching({ name: { regexp: 'a{20000}' } }), /is refused: the pattern expands to more than 10000 states/);
  assertBadRequest(() => compileRegexp('a'.repeat(257), ''), /longer than 256/);
  assert.equal(compileRegexp('^pu', 'i'), compileRegexp('^pu', 'i'), 'compiled patterns are cached');
});

test('each statement gets its own regexp step budget; past it the statement is a 400 naming the setting', () => {
  const small = new Database(':memory:');
  small.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, meta_data TEXT NOT NULL DEFAULT '{}')`);
  const add = small.prepare('INSERT INTO items (meta_data) VALUES (?)');
  for (let i = 0; i < 10; i++) add.run(JSON.stringify({ blob: 'a'.repeat(1000), name: `n${i}` }));
  registerSqlFunctions(small, { regexpBudgetSteps: 5000 });
  const run = (where: Where) => {
    const compiled = compileWhere(where, { columns: new Set(['id']) });
    return small.prepare(`SELECT id FROM items WHERE ${compiled.sql}`).pluck().all(...compiled.params);
  };
  // 10 rows of 1000 characters: about 10,000 steps
  assertBadRequest(() => run({ blob: { regexp: '/a*b/' } }), /regexp evaluation exceeded its budget of 5000 steps \(meta\.regexpBudgetSteps\)/);
  // 4 rows fit, and a new statement starts with a full budget
  assert.deepEqual(run({ id: { lte: 4 }, blob: { regexp: '/a*b/' } }), []);
  assert.deepEqual(run({ id: { lte: 4 }, blob: { regexp: '/a$/' } }), [1, 2, 3, 4]);
  assert.equal(run({ name: { regexp: '/^n[0-9]$/' } }).length, 10);
  small.close();
});

test('stored meta_data that is not valid JSON, or nests deeper than SQLite reads, never fails a query', () => {
  const store = new Database(':memory:');
  store.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, meta_data TEXT NOT NULL DEFAULT '{}')`);
  const add = store.prepare('INSERT INTO items (id, meta_data) VALUES (?, ?)');
  add.run(1, JSON.stringify({ name: 'ok', temp: 5 }));
  add.run(2, `{"name":"deep","x":${'['.repeat(1001)}${']'.repeat(1001)}}`);
  add.run(3, '{"name": "cut');
  add.run(4, Buffer.from('{"name":"blob"}'));
  add.run(5, JSON.stringify({ name: 'ok2', temp: 7 }));
  registerSqlFunctions(store);
  const shape: TableShape = { columns: new Set(['id']) };
  const run = (filter: Filter) => {
    const where = compileWhere(filter.where, shape);
    const order = compileOrder(filter.order, shape);
    return store.prepare(`SELECT id FROM items WHERE ${where.sql} ${order.sql || 'ORDER BY id'}`).pluck().all(...where.params, ...order.params);
  };
  assert.deepEqual(run({ where: { name: 'ok' } }), [1]);
  assert.deepEqual(run({ where: { temp: { gt: 1 } } }), [1, 5]);
  assert.deepEqual(run({ where: { name: { exists: false } } }), [2, 3], 'unreadable rows have no keys');
  assert.deepEqual(run({ where: { name: { regexp: '/^ok/' } } }), [1, 5]);
  assert.deepEqual(run({ where: { name: { nin: ['ok'] } } }), [2, 3, 4, 5]);
  assert.deepEqual(run({ order: [{ field: 'name', direction: 'DESC' }] }), [5, 1, 4, 2, 3], 'a blob holding JSON text reads as that text');
  store.close();
});

test('and, or, nor nest; nor counts rows where a condition is unknown', () => {
  assert.deepEqual(matching({ or: [{ kind: 'valve' }, { temp: { gt: 60 } }] }), [3, 5]);
  assert.deepEqual(matching({ and: [{ kind: 'pump' }, { temp: { gt: 30 } }] }), [2]);
  assert.deepEqual(matching({ nor: [{ kind: 'pump' }, { kind: 'odd' }] }), [3, 6, 7, 8]);
  assert.deepEqual(matching({ nor: [{ temp: { gt: 30 } }] }), [1, 3, 4, 6, 7], 'missing, null and text temps are not > 30');
  assert.deepEqual(matching({ nor: [{ name: { nlike: 'p%' } }] }), [2, 6]);
  assert.deepEqual(
    matching({ or: [{ and: [{ kind: 'pump' }, { temp: { gt: 30 } }] }, { nor: [{ unitsId: { neq: null } }] }], unitsId: { neq: 9 } }),
    [2, 4, 6],
  );
  assert.deepEqual(matching({ and: [] }), ALL);
  assert.deepEqual(matching({ or: [] }), []);
  assert.deepEqual(matching({ or: [{}] }), ALL);
  assertBadRequest(() => matching({ or: { kind: 'pump' } }), "'or' in where must be an array of where objects");
  assertBadRequest(() => matching({ and: [{ kind: 'pump' }, 'x'] }), /'and' in where must be an array of where objects/);
  let deep: Where = { kind: 'pump' };
  for (let i = 0; i < 32; i++) deep = { or: [deep] };
  assert.deepEqual(matching(deep), [1, 2]);
  assertBadRequest(() => matching({ and: [deep] }), /deeper than 32 levels/);
});

test('long lists of conditions stay within SQLite limits', () => {
  const many = Array.from({ length: 3000 }, (_, i) => ({ temp: i }));
  assert.deepEqual(matching({ or: many }), [1, 5, 8]);
  const fields = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, { exists: false }]));
  assert.deepEqual(matching(fields), ALL);
  assertBadRequest(() => matching({ or: Array.from({ length: 5001 }, (_, i) => ({ temp: i })) }), /too large/);
});

test('bad operators and values are refused naming the field', () => {
  assertBadRequest(() => matching({ name: { foo: 1 } }), "unknown operator 'foo' on field 'name'");
  assertBadRequest(() => matching({ name: { eq: { a: 1 } } }), "operator 'eq' on field 'name' needs a string, number, boolean or null");
  assertBadRequest(() => matching({ name: [1, 2] }), /field 'name' needs a value or an object of operators/);
  assertBadRequest(() => matching({ name: {} }), "field 'name' has an empty operator object");
  assertBadRequest(() => normalizeFilter({ where: { name: { options: 'i', like: 'a' } } }), "unknown operator 'options' on field 'name'");
  assertBadRequest(() => normalizeFilter({ where: 5 }), 'filter.where must be an object');
});

test('injection through field names is refused; through values it stays a literal', () => {
  for (const name of ['name") OR 1=1 --', "a'b", 'a b', '1abc', 'a..b', 'a.', '', 'x'.repeat(300)]) {
    assertBadRequest(() => compileWhere({ [name]: 1 }, table), /invalid field name/);
    assert.equal(FIELD_PATTERN.test(name) && name.length <= 256, false);
  }
  assertBadRequest(() => parseFilterQuery('filter[where][name%22)%20OR%201%3D1%20--]=1'), /invalid field name 'name"\) OR 1=1 --'/);
  assertBadRequest(() => normalizeFilter({ order: 'name; DROP TABLE items' }), /invalid filter.order/);
  assertBadRequest(() => normalizeFilter({ order: "name') DESC" }), /invalid field name/);
  assertBadRequest(() => compileOrder([{ field: 'a"b', direction: 'ASC' }], table), /invalid field name/);
  assertBadRequest(() => compileOrder([{ field: 'a', direction: 'ASC; DROP' as 'ASC' }], table), /invalid order direction/);
  assertBadRequest(() => normalizeFilter({ fields: ['name', 'x"y'] }), /invalid field name 'x"y' in filter.fields/);

  const payload = "' OR 1=1 --";
  const compiled = compileWhere({ name: payload, unitsId: { like: payload }, note: { regexp: "x'" } }, table);
  assert.ok(!compiled.sql.includes('1=1') && !compiled.sql.includes("x'"), compiled.sql);
  assert.deepEqual(matching({ name: payload }), []);
  assert.deepEqual(matching({ unitsId: payload }), []);
  assert.deepEqual(matchingQuery(`filter[where][name]=${encodeURIComponent(payload)}`), []);
  assert.equal(db.prepare('SELECT count(*) FROM items').pluck().get(), 8);
  // a registry column with a quote is never reached: the request's field name is refused first
  assertBadRequest(() => compileWhere({ 'bad"col': 1 }, { columns: new Set(['bad"col']) }), /invalid field name/);
});

test('order: strings, arrays, several keys, and the id tiebreaker', () => {
  assert.deepEqual(compileOrder([{ field: 'temp', direction: 'DESC' }], table), {
    sql: 'ORDER BY CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, ?) END DESC, "id" ASC',
    params: ['$."temp"'],
  });
  assert.deepEqual(compileOrder([{ field: 'id', direction: 'DESC' }], table), { sql: 'ORDER BY "id" DESC', params: [] });
  assert.deepEqual(compileOrder(undefined, table), { sql: '', params: [] });
  assert.deepEqual(idsFor(normalizeFilter({ order: 'temp DESC' })), [7, 5, 8, 2, 1, 4, 3, 6], 'text, then numbers, then nulls by id');
  assert.deepEqual(idsFor(normalizeFilter({ order: ['kind ASC', 'temp desc'] })), [6, 7, 8, 5, 4, 2, 1, 3]);
  assert.deepEqual(idsFor(normalizeFilter({ order: 'kind, temp DESC' })), [6, 7, 8, 5, 4, 2, 1, 3]);
  assert.deepEqual(idsFor(normalizeFilter({ order: 'unitsId DESC' })), [7, 3, 5, 1, 2, 8, 4, 6]);
  assert.deepEqual(idsFor(normalizeFilter({ order: 'id DESC', limit: 3 })), [8, 7, 6]);
  assert.deepEqual(idsFor(normalizeFilter({ order: 'temp DESC', limit: 2, skip: 2 })), [8, 2]);
  assert.deepEqual(idsFor(normalizeFilter({ order: 'temp DESC', limit: 2, offset: 6 })), [3, 6]);
});

test('normalizeFilter: fields, order, include, limit/skip/offset', () => {
  assert.deepEqual(normalizeFilter(undefined), {});
  assert.deepEqual(normalizeFilter({ fields: ['name', 'kind', 'name'] }), { fields: ['name', 'kind'] });
  assert.deepEqual(normalizeFilter({ fields: { name: true, kind: false } }), { fields: ['name'] });
  assert.deepEqual(normalizeFilter({ fields: { kind: false, temp: false } }), { excludeFields: ['kind', 'temp'] });
  assert.deepEqual(normalizeFilter({ fields: [] }), {});
  assertBadRequest(() => normalizeFilter({ fields: { name: 1 } }), 'filter.fields.name must be true or false');
  assertBadRequest(() => normalizeFilter({ fields: 'name' }), /filter.fields must be/);
  assert.deepEqual(normalizeFilter({ order: 'a' }), { order: [{ field: 'a', direction: 'ASC' }] });
  assert.deepEqual(normalizeFilter({ order: 'a DESC' }), { order: [{ field: 'a', direction: 'DESC' }] });
  assert.deepEqual(normalizeFilter({ order: 'a ASC, b desc' }).order, [
    { field: 'a', direction: 'ASC' },
    { field: 'b', direction: 'DESC' },
  ]);
  assert.deepEqual(normalizeFilter({ order: ['a', 'b.c DESC'] }).order, [
    { field: 'a', direction: 'ASC' },
    { field: 'b.c', direction: 'DESC' },
  ]);
  assertBadRequest(() => normalizeFilter({ order: 'a sideways' }), /invalid direction 'sideways'/);
  assertBadRequest(() => normalizeFilter({ order: 'a DESC extra' }), /invalid filter.order/);
  assertBadRequest(() => normalizeFilter({ order: 'a,,b' }), /invalid filter.order/);
  assertBadRequest(() => normalizeFilter({ order: 5 }), /filter.order must be a string/);
  assert.deepEqual(normalizeFilter({ include: 'plots' }), { include: ['plots'] });
  assert.deepEqual(normalizeFilter({ include: ['plots', 'tags'] }), { include: ['plots', 'tags'] });
  assertBadRequest(() => normalizeFilter({ include: [{ relation: 'x' }] }), /filter.include must be an array of relation names/);
  assert.deepEqual(normalizeFilter({ limit: 0, skip: 10 }), { limit: 0, skip: 10 });
  assert.deepEqual(normalizeFilter({ offset: 4 }), { skip: 4 });
  assertBadRequest(() => normalizeFilter({ limit: -1 }), 'filter.limit must be a non-negative integer');
  assertBadRequest(() => normalizeFilter({ limit: 1.5 }), 'filter.limit must be a non-negative integer');
  assertBadRequest(() => normalizeFilter({ limit: '5' }), 'filter.limit must be a non-negative integer');
  assertBadRequest(() => normalizeFilter({ skip: -3 }), 'filter.skip must be a non-negative integer');
  assertBadRequest(() => normalizeFilter({ offset: 'x' }), 'filter.offset must be a non-negative integer');
  assertBadRequest(() => normalizeFilter({ skip: 1, offset: 2 }), /both skip and offset/);
  assertBadRequest(() => normalizeFilter({ limt: 5 }), /unknown filter key 'limt'/);
  assertBadRequest(() => normalizeFilter([]), 'filter must be a JSON object');
  const full = { where: { a: { gt: 1 } }, fields: { b: true }, include: ['c'], limit: 1, offset: 2, order: 'a DESC' };
  assert.deepEqual(normalizeFilter(normalizeFilter(full)), normalizeFilter(full), 'normalizing twice changes nothing');
});

test('query string: a URL-encoded JSON filter', () => {
  const filter = { where: { kind: 'pump' }, order: 'temp DESC', limit: 1 };
  assert.deepEqual(matchingQuery(`filter=${encodeURIComponent(JSON.stringify(filter))}`), [2]);
  assert.deepEqual(matchingQuery(`?access_token=abc&filter=${encodeURIComponent('{"where":{"code":"10"}}')}`), [1]);
  assert.deepEqual(parseFilterQuery(''), {});
  assert.deepEqual(parseFilterQuery('filter='), {});
  assertBadRequest(() => parseFilterQuery('filter={bad'), /query parameter 'filter' is not valid JSON/);
  assertBadRequest(() => parseFilterQuery('filter=5'), 'filter must be a JSON object');
  assertBadRequest(() => parseFilterQuery('filter={}&filter={}'), /given more than once/);
  assertBadRequest(() => parseFilterQuery(`filter=${encodeURIComponent('{"limit":-1}')}`), 'filter.limit must be a non-negative integer');
});

test('query string: the bracket form', () => {
  assert.deepEqual(matchingQuery('filter[where][name][like]=p%25&filter[limit]=5'), [2]);
  assert.deepEqual(matchingQuery('filter%5Bwhere%5D%5Bkind%5D=odd'), [4, 5], 'encoded brackets');
  assert.deepEqual(matchingQuery('filter[where][kind][inq]=pump&filter[where][kind][inq]=odd'), [1, 2, 4, 5]);
  assert.deepEqual(matchingQuery('filter[where][kind][inq][0]=pump&filter[where][kind][inq][1]=valve'), [1, 2, 3]);
  assert.deepEqual(matchingQuery('filter[where][kind][inq][]=pump&filter[where][kind][inq][]=odd'), [1, 2, 4, 5]);
  assert.deepEqual(matchingQuery('filter[where][kind][inq]=valve'), [3], 'one repeated value is a one-element list');
  assert.deepEqual(matchingQuery('filter[where][or][0][kind]=valve&filter[where][or][1][temp][gt]=60'), [3, 5]);
  assert.deepEqual(matchingQuery('filter[where][and][0][kind]=pump&filter[where][and][1][name][ilike]=PUMP%20A'), [1]);
  assert.deepEqual(matchingQuery('filter[where][flag][exists]=true'), [5, 7]);
  assert.deepEqual(matchingQuery('filter[where][name]=true'), [], "'true' stays text outside exists");
  assert.deepEqual(matchingQuery('filter[order]=temp%20DESC&filter[limit]=2&filter[skip]=1'), [5, 8]);
  assert.deepEqual(matchingQuery('filter[order][0]=kind&filter[order][1]=temp DESC&filter[offset]=1&filter[limit]=2'), [7, 8]);
  assert.deepEqual(parseFilterQuery('filter[fields][0]=name&filter[fields][1]=kind'), { fields: ['name', 'kind'] });
  assert.deepEqual(parseFilterQuery('filter[fields]=name'), { fields: ['name'] });
  assert.deepEqual(parseFilterQuery('filter[fields][name]=true&filter[fields][kind]=false'), { fields: ['name'] });
  assert.deepEqual(parseFilterQuery('filter[fields][kind]=false'), { excludeFields: ['kind'] });
  assert.deepEqual(parseFilterQuery('filter[include]=plots'), { include: ['plots'] });
  assertBadRequest(() => parseFilterQuery('filter[limit]=-1'), 'filter.limit must be a non-negative integer');
  assertBadRequest(() => parseFilterQuery('filter[limit]=abc'), 'filter.limit must be a non-negative integer');
  assertBadRequest(() => parseFilterQuery('filter[skip]=1.5'), 'filter.skip must be a non-negative integer');
  assertBadRequest(() => parseFilterQuery('filter[foo]=1'), /unknown filter key 'foo'/);
  assertBadRequest(() => parseFilterQuery('filter[order]=name%20sideways'), /invalid direction 'sideways'/);
  assertBadRequest(() => parseFilterQuery("filter[where][a'b]=1"), /invalid field name 'a'b'/);
  assertBadRequest(() => parseFilterQuery('filter[where][a][foo]=1'), "unknown operator 'foo' on field 'a'");
  assertBadRequest(() => parseFilterQuery('filter[where=1'), /malformed query parameter name/);
  assertBadRequest(() => parseFilterQuery('filter[where][a]=1&filter[where][a][gt]=2'), /both a value and bracketed keys/);
  assertBadRequest(() => parseFilterQuery('filter={}&filter[limit]=1'), /both as JSON and in bracket form/);
  assertBadRequest(() => parseFilterQuery(`filter${'[a]'.repeat(65)}=1`), /nested too deeply/);
  assertBadRequest(() => parseFilterQuery('filter[where][a]=1&filter[where][a]=2'), /field 'a' needs a value or an object of operators/);
  const pollution = parseFilterQuery('filter[where][__proto__][eq]=1');
  assert.equal(({} as Record<string, unknown>).x, undefined);
  assert.ok(Object.hasOwn(pollution.where!, '__proto__'), '__proto__ stays an ordinary (meta_data) key');
});

test('query string: numbers from the bracket form match numbers and their text', () => {
  assert.deepEqual(matchingQuery('filter[where][code]=10'), [1, 2], 'both "10" and 10');
  assert.deepEqual(matchingQuery('filter[where][code][eq]=10'), [1, 2]);
  assert.deepEqual(matchingQuery('filter[where][code][inq]=10&filter[where][code][inq]=007'), [1, 2, 8]);
  assert.deepEqual(matchingQuery('filter[where][code][neq]=10'), [3, 4, 5, 6, 7, 8]);
  assert.deepEqual(matchingQuery('filter[where][code][nin]=10'), [3, 4, 5, 6, 7, 8]);
  assert.deepEqual(matchingQuery('filter[where][code]=007'), [8], 'not canonical: stays text');
  assert.deepEqual(matchingQuery('filter[where][spec.rpm]=1500'), [1, 7]);
  assert.deepEqual(matchingQuery('filter[where][temp][gt]=30'), [2, 5, 8], 'range operands become numbers');
  assert.deepEqual(matchingQuery('filter[where][temp][lte]=-5'), [4]);
  assert.deepEqual(matchingQuery('filter[where][temp][between]=0&filter[where][temp][between]=25'), [1]);
  assert.deepEqual(matchingQuery('filter[where][unitsId]=5'), [1, 2, 8]);
  assert.deepEqual(matchingQuery('filter[where][id][inq]=1&filter[where][id][inq]=8'), [1, 8]);
  assert.deepEqual(parseFilterQuery('filter[where][a]=-2.5').where, { a: new NumericText('-2.5', -2.5) });
  for (const text of ['1.50', '05', '1e3', '-0', '12345678901234567890', ' 1']) {
    assert.deepEqual(parseFilterQuery(`filter[where][a]=${encodeURIComponent(text)}`).where, { a: text }, text);
  }
  assert.deepEqual(matchingQuery(`filter=${encodeURIComponent('{"where":{"temp":{"gt":"30"}}}')}`), [7], 'JSON strings stay strings');
});

test('query string: a standalone where, alone or ANDed with the filter', () => {
  assert.deepEqual(matchingQuery(`where=${encodeURIComponent('{"kind":"odd"}')}`), [4, 5]);
  assert.deepEqual(matchingQuery('where[kind]=odd'), [4, 5]);
  assert.deepEqual(matchingQuery('where[unitsId]=7'), [3, 5]);
  assert.deepEqual(
    parseFilterQuery(`filter=${encodeURIComponent('{"where":{"unitsId":7},"limit":3}')}&where=${encodeURIComponent('{"kind":"odd"}')}`),
    { where: { and: [{ unitsId: 7 }, { kind: 'odd' }] }, limit: 3 },
  );
  assert.deepEqual(matchingQuery(`filter[where][unitsId]=7&where=${encodeURIComponent('{"kind":"odd"}')}`), [5]);
  assertBadRequest(() => parseFilterQuery('where={bad'), /query parameter 'where' is not valid JSON/);
  assertBadRequest(() => parseFilterQuery('where=[1]'), 'where must be an object');
  assertBadRequest(() => parseFilterQuery(`where=${encodeURIComponent('{"a":{"bad":1}}')}`), "unknown operator 'bad' on field 'a'");
});
