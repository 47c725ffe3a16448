// LoopBack-style filters for the metadata entity store: reading them from a
// query string or a body, checking them, and compiling `where` and `order` to
// SQLite. On the wire an entity is flat, so a field names the real column
// when the table has one, else the same key inside the `meta_data` JSON.
//
// Safety rule: no text from a request ever reaches the SQL string. The SQL is
// built only from the fixed operator texts in this file, column names from
// our own registry (quoted), and `?` placeholders; the `sql` tag below turns
// every interpolated value into a placeholder unless it is a Fragment built
// here. JSON paths are bound parameters too.

import type Database from 'better-sqlite3';
import { ServiceError, badRequest } from '../../shared/errors.js';
import { DEFAULT_REGEXP_BUDGET_STEPS, compileRegexp, parseRegexpOperand, regexpMatches } from './regexp-guard.js';

export type Where = Record<string, unknown>;
export interface OrderKey {
  field: string;
  direction: 'ASC' | 'DESC';
}
export interface Filter {
  where?: Where;
  /** Only these fields (from an array, or the `true` entries of a `fields` object). */
  fields?: string[];
  /** Every field except these (a `fields` object holding only `false` entries). */
  excludeFields?: string[];
  include?: string[];
  limit?: number;
  skip?: number;
  order?: OrderKey[];
}

export interface TableShape {
  /** Real columns of the table besides meta_data (includes 'id'). Trusted identifiers from our own registry. */
  columns: ReadonlySet<string>;
}
/** `sql` is a boolean SQL expression (`'1'` when there is no condition), or an ORDER BY clause. */
export interface CompiledWhere {
  sql: string;
  params: unknown[];
}

/** A name, or dotted names for a key nested inside meta_data. None can hold a quote. */
export const FIELD_PATTERN = /^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*$/;
const MAX_FIELD_NAME_LENGTH = 256;
const MAX_WHERE_DEPTH = 32;
const MAX_LIST_VALUES = 1000;
/** Every condition counts one, plus one per list value; keeps bound parameters well under SQLite's 32766. */
const MAX_WHERE_TERMS = 5000;
/** SQLite refuses LIKE/GLOB patterns over 50000 bytes; the GLOB form of a pattern can be 3 times longer. */
const MAX_LIKE_PATTERN_LENGTH = 10_000;
const MAX_ORDER_KEYS = 32;
const MAX_BRACKET_SEGMENTS = 64;
const FILTER_KEYS = ['where', 'fields', 'include', 'limit', 'skip', 'offset', 'order'];
const GROUP_KEYS = new Set(['and', 'or', 'nor']);

/**
 * A value typed into the bracket form of a URL that reads as a number, for an
 * equality-like operator. Nothing says whether the client meant the number or
 * the text, so it matches both: a JSON number 5 and a JSON string "5".
 */
export class NumericText {
  constructor(
    readonly text: string,
    readonly number: number,
  ) {}
}

// ---------------------------------------------------------------------------
// Reading a query string

/** Reads `filter=<JSON>`, the `filter[...]` bracket form and a standalone `where` (JSON or bracket form). */
export function parseFilterQuery(rawQuery: string): Filter {
  const query = new URLSearchParams(rawQuery.startsWith('?') ? rawQuery.slice(1) : rawQuery);
  const json = new Map<'filter' | 'where', string>();
  const brackets = { filter: new BracketNode(), where: new BracketNode() };
  for (const [key, value] of query) {
    const name = key.split('[', 1)[0];
    if (name !== 'filter' && name !== 'where') continue; // other parameters belong to the route
    if (key === name) {
      if (json.has(name)) throw badRequest(`query parameter '${name}' is given more than once`);
      if (value !== '') json.set(name, value);
    } else {
      brackets[name].assign(readBracketPath(key, name), value);
    }
  }
  for (const name of ['filter', 'where'] as const) {
    if (json.has(name) && !brackets[name].isEmpty()) {
      throw badRequest(`query parameter '${name}' is given both as JSON and in bracket form`);
    }
  }

  let filter: Filter = {};
  if (json.has('filter')) filter = normalizeFilter(parseJsonParameter('filter', json.get('filter')!));
  else if (!brackets.filter.isEmpty()) filter = normalizeFilter(typeBracketFilter(brackets.filter.toValue('filter')));

  let where: unknown;
  if (json.has('where')) where = parseJsonParameter('where', json.get('where')!);
  else if (!brackets.where.isEmpty()) where = typeBracketWhere(brackets.where.toValue('where'), 0);
  if (where !== undefined) {
    parseWhere(where, 'where');
    const standalone = where as Where;
    filter.where = filter.where ? { and: [filter.where, standalone] } : standalone;
  }
  return filter;
}

function parseJsonParameter(name: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`query parameter '${name}' is not valid JSON: ${(err as Error).message}`);
  }
}

/** `filter[where][a][inq][0]` → ['where', 'a', 'inq', '0']; `[]` is an empty segment (append). */
function readBracketPath(key: string, name: string): string[] {
  const segment = /\[([^[\]]*)\]/y;
  segment.lastIndex = name.length;
  const path: string[] = [];
  while (segment.lastIndex < key.length) {
    const match = segment.exec(key);
    if (!match) throw badRequest(`malformed query parameter name '${show(key)}'`);
    path.push(match[1]);
  }
  if (path.length > MAX_BRACKET_SEGMENTS) throw badRequest(`query parameter name '${show(key)}' is nested too deeply`);
  return path;
}

/** The tree the bracket form describes; Maps, so keys like `__proto__` are plain data. */
class BracketNode {
  private readonly values: string[] = [];
  private readonly children = new Map<string, BracketNode>();

  assign(path: string[], value: string): void {
    let node: BracketNode = this;
    for (let index = 0; index < path.length; index++) {
      const isLast = index === path.length - 1;
      if (path[index] === '' && isLast) break; // `a[]=1&a[]=2`: same as repeating `a`
      const key = path[index] === '' ? String(node.children.size) : path[index];
      let child = node.children.get(key);
      if (!child) node.children.set(key, (child = new BracketNode()));
      node = child;
    }
    node.values.push(value);
  }

  isEmpty(): boolean {
    return this.values.length === 0 && this.children.size === 0;
  }

  /** Strings; repeated values become an array, and so do children keyed 0, 1, 2… */
  toValue(label: string): unknown {
    if (this.children.size === 0) return this.values.length === 1 ? this.values[0] : [...this.values];
    if (this.values.length > 0) throw badRequest(`query parameter '${show(label)}' has both a value and bracketed keys`);
    const entries = [...this.children].map(([key, child]): [string, unknown] => [key, child.toValue(`${label}[${key}]`)]);
    if (entries.every(([key]) => /^(0|[1-9]\d{0,5})$/.test(key))) {
      return entries.sort((a, b) => Number(a[0]) - Number(b[0])).map(([, value]) => value);
    }
    return Object.fromEntries(entries); // defines own properties: `__proto__` stays a plain key
  }
}

/**
 * Every value of the bracket form arrives as text. Gives the known places
 * their types: limit/skip numbers, fields flags, and numbers in `where`.
 * Anything it does not recognise is left for normalizeFilter to judge.
 */
function typeBracketFilter(value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]): [string, unknown] => {
      switch (key) {
        case 'limit':
        case 'skip':
        case 'offset':
          return [key, typeof item === 'string' && /^\d{1,15}$/.test(item) ? Number(item) : item];
        case 'fields':
          if (typeof item === 'string') return [key, [item]];
          if (isPlainObject(item)) return [key, Object.fromEntries(Object.entries(item).map(([name, flag]) => [name, textToBoolean(flag)]))];
          return [key, item];
        case 'include':
          return [key, typeof item === 'string' ? [item] : item];
        case 'where':
          return [key, typeBracketWhere(item, 0)];
        default:
          return [key, item];
      }
    }),
  );
}

/**
 * In `where`: a canonical decimal becomes a number for range operators and a
 * NumericText (matches number or text) for equality-like ones. The strings
 * `true`, `false` and `null` stay strings, except for `exists`, which takes a
 * boolean. A single value for inq/nin is a one-element list, since repeating
 * the key is how the bracket form spells a list.
 */
function typeBracketWhere(where: unknown, depth: number): unknown {
  if (!isPlainObject(where) || depth > MAX_WHERE_DEPTH) return where;
  return Object.fromEntries(
    Object.entries(where).map(([key, value]): [string, unknown] => {
      if (GROUP_KEYS.has(key)) return [key, Array.isArray(value) ? value.map((item) => typeBracketWhere(item, depth + 1)) : value];
      if (typeof value === 'string') return [key, numberOrText(value)];
      if (!isPlainObject(value)) return [key, value];
      return [key, Object.fromEntries(Object.entries(value).map(([op, operand]) => [op, typeBracketOperand(op, operand)]))];
    }),
  );
}

function typeBracketOperand(op: string, operand: unknown): unknown {
  switch (op) {
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return typeof operand === 'string' ? (canonicalNumber(operand) ?? operand) : operand;
    case 'between':
      return Array.isArray(operand) ? operand.map((bound) => (typeof bound === 'string' ? (canonicalNumber(bound) ?? bound) : bound)) : operand;
    case 'eq':
    case 'neq':
      return typeof operand === 'string' ? numberOrText(operand) : operand;
    case 'inq':
    case 'in':
    case 'nin': {
      const list = typeof operand === 'string' ? [operand] : operand;
      return Array.isArray(list) ? list.map((item) => (typeof item === 'string' ? numberOrText(item) : item)) : list;
    }
    case 'exists':
      return textToBoolean(operand);
    default:
      return operand;
  }
}

/** The number a text spells when the text is exactly how JavaScript writes that number ("5", "-2.5"; not "05", "1.50", "1e3"). */
function canonicalNumber(text: string): number | undefined {
  if (!/^-?(0|[1-9]\d*)(\.\d+)?$/.test(text)) return undefined;
  const number = Number(text);
  return String(number) === text ? number : undefined;
}

function numberOrText(text: string): string | NumericText {
  const number = canonicalNumber(text);
  return number === undefined ? text : new NumericText(text, number);
}

function textToBoolean(value: unknown): unknown {
  return value === 'true' ? true : value === 'false' ? false : value;
}

// ---------------------------------------------------------------------------
// Normalising a filter object

/** Checks a filter object (from JSON or the bracket form) and returns it in canonical form. Throws 400 naming the problem. */
export function normalizeFilter(input: unknown): Filter {
  if (input === undefined || input === null) return {};
  if (!isPlainObject(input)) throw badRequest('filter must be a JSON object');
  for (const key of Object.keys(input)) {
    if (!FILTER_KEYS.includes(key)) throw badRequest(`unknown filter key '${show(key)}' (allowed: ${FILTER_KEYS.join(', ')})`);
  }
  const filter: Filter = {};
  if (input.where !== undefined) {
    parseWhere(input.where, 'filter.where');
    filter.where = input.where as Where;
  }
  if (input.fields !== undefined) Object.assign(filter, normalizeFields(input.fields));
  if (input.include !== undefined) {
    const include = normalizeInclude(input.include);
    if (include.length > 0) filter.include = include;
  }
  if (input.limit !== undefined) filter.limit = nonNegativeInteger(input.limit, 'filter.limit');
  if (input.skip !== undefined && input.offset !== undefined) throw badRequest('filter has both skip and offset; give one');
  if (input.skip !== undefined) filter.skip = nonNegativeInteger(input.skip, 'filter.skip');
  if (input.offset !== undefined) filter.skip = nonNegativeInteger(input.offset, 'filter.offset');
  if (input.order !== undefined) {
    const order = normalizeOrder(input.order);
    if (order.length > 0) filter.order = order;
  }
  return filter;
}

function normalizeFields(value: unknown): Pick<Filter, 'fields' | 'excludeFields'> {
  if (Array.isArray(value)) {
    for (const name of value) checkFieldName(name, 'filter.fields');
    return value.length > 0 ? { fields: [...new Set(value as string[])] } : {};
  }
  if (isPlainObject(value)) {
    const included: string[] = [];
    const excluded: string[] = [];
    for (const [name, flag] of Object.entries(value)) {
      checkFieldName(name, 'filter.fields');
      if (typeof flag !== 'boolean') throw badRequest(`filter.fields.${name} must be true or false`);
      (flag ? included : excluded).push(name);
    }
    // As in LoopBack: any `true` entry means "only these"; only `false` entries mean "all but these".
    if (included.length > 0) return { fields: included };
    return excluded.length > 0 ? { excludeFields: excluded } : {};
  }
  throw badRequest('filter.fields must be an array of field names or an object of field name to true/false');
}

function normalizeInclude(value: unknown): string[] {
  const names = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string')) {
    throw badRequest('filter.include must be an array of relation names');
  }
  for (const name of names) checkFieldName(name, 'filter.include');
  return [...new Set(names as string[])];
}

function normalizeOrder(value: unknown): OrderKey[] {
  const keys: OrderKey[] = [];
  for (const item of Array.isArray(value) ? value : [value]) {
    if (typeof item === 'string') {
      keys.push(...parseOrderText(item));
    } else if (isOrderKey(item)) {
      checkFieldName(item.field, 'filter.order');
      keys.push({ field: item.field, direction: item.direction });
    } else {
      throw badRequest(`filter.order must be a string such as 'name DESC', or an array of them`);
    }
  }
  if (keys.length > MAX_ORDER_KEYS) throw badRequest(`filter.order has more than ${MAX_ORDER_KEYS} keys`);
  return keys;
}

/** "a", "a DESC", "a ASC, b desc" (direction in any case, ASC by default). */
function parseOrderText(text: string): OrderKey[] {
  return text.split(',').map((part) => {
    const words = part.trim().split(/\s+/);
    if (words[0] === '' || words.length > 2) throw badRequest(`invalid filter.order '${show(text)}': use '<field> [ASC|DESC]'`);
    const direction = (words[1] ?? 'ASC').toUpperCase();
    if (direction !== 'ASC' && direction !== 'DESC') {
      throw badRequest(`invalid direction '${show(words[1])}' in filter.order '${show(text)}': use ASC or DESC`);
    }
    checkFieldName(words[0], 'filter.order');
    return { field: words[0], direction };
  });
}

function isOrderKey(value: unknown): value is OrderKey {
  return (
    isPlainObject(value) &&
    Object.keys(value).length === 2 &&
    typeof value.field === 'string' &&
    (value.direction === 'ASC' || value.direction === 'DESC')
  );
}

function nonNegativeInteger(value: unknown, name: string): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw badRequest(`${name} must be a non-negative integer`);
}

function checkFieldName(name: unknown, context: string): asserts name is string {
  if (typeof name !== 'string' || name.length > MAX_FIELD_NAME_LENGTH || !FIELD_PATTERN.test(name)) {
    throw badRequest(`invalid field name '${show(String(name))}' in ${context}`);
  }
}

// ---------------------------------------------------------------------------
// `where` as a checked tree

type Scalar = string | number | boolean | null;
type EqualityValue = Scalar | NumericText;
type OrderedValue = string | number | boolean;
type LikeOperator = 'like' | 'nlike' | 'ilike' | 'nilike';

type FieldTest =
  | { op: 'eq' | 'neq'; value: EqualityValue }
  | { op: 'gt' | 'gte' | 'lt' | 'lte'; value: OrderedValue }
  | { op: 'between'; low: OrderedValue; high: OrderedValue }
  | { op: 'inq' | 'nin'; values: EqualityValue[] }
  | { op: LikeOperator; pattern: string }
  | { op: 'contains' | 'ncontains'; text: string }
  | { op: 'exists'; present: boolean }
  | { op: 'regexp'; source: string; flags: string };

type Condition = { kind: 'and' | 'or' | 'nor'; children: Condition[] } | { kind: 'test'; field: string; test: FieldTest };

/** Checks a where object (throws 400 naming the problem) and returns it as a tree of conditions. */
function parseWhere(where: unknown, label: string): Condition {
  return parseWhereObject(where, label, 0, { terms: 0 });
}

function parseWhereObject(where: unknown, label: string, depth: number, budget: { terms: number }): Condition {
  if (!isPlainObject(where)) throw badRequest(`${label} must be an object`);
  if (depth > MAX_WHERE_DEPTH) throw badRequest(`${label} nests and/or/nor deeper than ${MAX_WHERE_DEPTH} levels`);
  const children: Condition[] = [];
  for (const [key, value] of Object.entries(where)) {
    if (key === 'and' || key === 'or' || key === 'nor') {
      if (!Array.isArray(value) || !value.every(isPlainObject)) throw badRequest(`'${key}' in ${label} must be an array of where objects`);
      children.push({ kind: key, children: value.map((item, index) => parseWhereObject(item, `${label}.${key}[${index}]`, depth + 1, budget)) });
      continue;
    }
    checkFieldName(key, label);
    for (const test of parseFieldTests(key, value)) {
      budget.terms += 1 + ('values' in test ? test.values.length : 0);
      if (budget.terms > MAX_WHERE_TERMS) throw badRequest(`${label} is too large (more than ${MAX_WHERE_TERMS} conditions and list values)`);
      children.push({ kind: 'test', field: key, test });
    }
  }
  return { kind: 'and', children };
}

/** A bare value is equality; an object holds operators, all of which must hold. */
function parseFieldTests(field: string, value: unknown): FieldTest[] {
  if (isEqualityValue(value)) return [{ op: 'eq', value }];
  if (!isPlainObject(value)) throw badRequest(`field '${field}' needs a value or an object of operators (use inq for a list)`);
  const entries = Object.entries(value);
  if (entries.length === 0) throw badRequest(`field '${field}' has an empty operator object`);
  return entries.map(([op, operand]) => parseOperator(field, op, operand));
}

function parseOperator(field: string, op: string, operand: unknown): FieldTest {
  const subject = `operator '${show(op)}' on field '${field}'`;
  switch (op) {
    case 'eq':
    case 'neq':
      if (!isEqualityValue(operand)) throw badRequest(`${subject} needs a string, number, boolean or null`);
      return { op, value: operand };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { op, value: orderedValue(operand, subject) };
    case 'between': {
      if (!Array.isArray(operand) || operand.length !== 2) throw badRequest(`${subject} needs a two-element array [low, high]`);
      const [low, high] = operand.map((bound) => orderedValue(bound, subject));
      if ((typeof low === 'string') !== (typeof high === 'string')) throw badRequest(`${subject} needs two numbers or two strings`);
      return { op, low, high };
    }
    case 'inq':
    case 'in':
    case 'nin':
      if (!Array.isArray(operand)) throw badRequest(`${subject} needs an array`);
      if (operand.length > MAX_LIST_VALUES) throw badRequest(`${subject} has more than ${MAX_LIST_VALUES} values`);
      if (!operand.every(isEqualityValue)) throw badRequest(`${subject} needs an array of strings, numbers, booleans or nulls`);
      return { op: op === 'nin' ? 'nin' : 'inq', values: operand };
    case 'like':
    case 'nlike':
    case 'ilike':
    case 'nilike':
      if (typeof operand !== 'string') throw badRequest(`${subject} needs a string pattern`);
      if (operand.length > MAX_LIKE_PATTERN_LENGTH) throw badRequest(`${subject} has a pattern longer than ${MAX_LIKE_PATTERN_LENGTH} characters`);
      return { op, pattern: operand };
    case 'contains':
    case 'ncontains':
      if (typeof operand !== 'string') throw badRequest(`${subject} needs a string`);
      return { op, text: operand };
    case 'exists':
      if (typeof operand !== 'boolean') throw badRequest(`${subject} needs true or false`);
      return { op, present: operand };
    case 'regexp': {
      if (typeof operand !== 'string') throw badRequest(`${subject} needs a string such as '/^pump/i'`);
      try {
        const { source, flags } = parseRegexpOperand(operand);
        compileRegexp(source, flags); // refuses invalid and unsupported patterns now, and warms the cache
        return { op, source, flags };
      } catch (err) {
        throw err instanceof ServiceError ? badRequest(`${subject}: ${err.message}`) : err;
      }
    }
    default:
      throw badRequest(`unknown operator '${show(op)}' on field '${field}'`);
  }
}

function orderedValue(operand: unknown, subject: string): OrderedValue {
  if (operand instanceof NumericText) return operand.number;
  if (typeof operand === 'string' || typeof operand === 'boolean' || (typeof operand === 'number' && Number.isFinite(operand))) return operand;
  throw badRequest(`${subject} needs a string, number or boolean`);
}

function isEqualityValue(value: unknown): value is EqualityValue {
  return (
    value === null ||
    value instanceof NumericText ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

// ---------------------------------------------------------------------------
// SQL

/** SQL text written in this file, with the values its `?` placeholders bind. */
class Fragment {
  constructor(
    readonly sql: string,
    readonly params: readonly unknown[] = [],
  ) {}
}

/** Template tag: a Fragment is spliced in; any other interpolated value becomes a `?` placeholder. */
function sql(strings: TemplateStringsArray, ...parts: unknown[]): Fragment {
  let text = strings[0];
  const params: unknown[] = [];
  parts.forEach((part, index) => {
    if (part instanceof Fragment) {
      text += part.sql;
      params.push(...part.params);
    } else {
      text += '?';
      params.push(bindable(part));
    }
    text += strings[index + 1];
  });
  return new Fragment(text, params);
}

/** `?, ?, ?` for a list of values. */
function placeholders(values: unknown[]): Fragment {
  return new Fragment(values.map(() => '?').join(', '), values.map(bindable));
}

function bindable(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0; // SQLite has no boolean; JSON true reads back as 1
  if (value instanceof NumericText) throw new Error('NumericText must be expanded before binding');
  return value;
}

const FALSE = new Fragment('0');
const TRUE = new Fragment('1');
const COMPARISON = { gt: new Fragment('>'), gte: new Fragment('>='), lt: new Fragment('<'), lte: new Fragment('<=') };

/**
 * Joins with AND/OR. Long lists are split into balanced halves so the
 * expression tree stays shallow (SQLite refuses trees deeper than 1000).
 */
function combine(parts: Fragment[], joiner: 'AND' | 'OR'): Fragment {
  if (parts.length === 0) return joiner === 'AND' ? TRUE : FALSE;
  if (parts.length === 1) return parts[0];
  if (parts.length > 8) {
    const middle = Math.ceil(parts.length / 2);
    return combine([combine(parts.slice(0, middle), joiner), combine(parts.slice(middle), joiner)], joiner);
  }
  return new Fragment(`(${parts.map((part) => part.sql).join(` ${joiner} `)})`, parts.flatMap((part) => part.params));
}

/** Numbers the compiled statements, so that `historian_regexp` knows which calls share one budget. */
let lastQueryNumber = 0;

/** Compiles `where` to a boolean SQL expression over the table's columns and meta_data. Throws 400 on a bad where. */
export function compileWhere(where: Where | undefined, table: TableShape): CompiledWhere {
  if (where === undefined) return { sql: TRUE.sql, params: [] };
  lastQueryNumber = (lastQueryNumber + 1) % Number.MAX_SAFE_INTEGER;
  const compiled = compileCondition(parseWhere(where, 'where'), table, lastQueryNumber);
  return { sql: compiled.sql, params: [...compiled.params] };
}

function compileCondition(condition: Condition, table: TableShape, query: number): Fragment {
  switch (condition.kind) {
    case 'and':
      return combine(condition.children.map((child) => compileCondition(child, table, query)), 'AND');
    case 'or':
      return combine(condition.children.map((child) => compileCondition(child, table, query)), 'OR');
    case 'nor': {
      // A condition on a missing value is NULL (unknown), and NOT NULL is still
      // NULL; COALESCE reads unknown as false, so nor matches such rows.
      const any = combine(condition.children.map((child) => compileCondition(child, table, query)), 'OR');
      return sql`NOT COALESCE(${any}, 0)`;
    }
    case 'test':
      return compileTest(fieldValue(condition.field, table), !table.columns.has(condition.field), condition.test, query);
  }
}

/**
 * The SQL for a field's value: its quoted column, or its key inside meta_data
 * (path bound as a parameter). json_extract fails the whole statement on a
 * meta_data that is not valid JSON or nests deeper than SQLite's 1000 levels,
 * so one such stored row would break every filtered query on its table; the
 * json_valid guard reads it as having no keys instead. SQLite keeps the parse
 * for the json_extract that follows, so the guard costs little (README).
 */
function fieldValue(field: string, table: TableShape): Fragment {
  if (table.columns.has(field)) return columnName(field);
  const path = '$' + field.split('.').map((key) => `."${key}"`).join(''); // keys match FIELD_PATTERN: no quotes inside
  return sql`CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, ${path}) END`;
}

function columnName(column: string): Fragment {
  // Columns come from our registry, never from a request; refuse anything that would need escaping anyway.
  if (!FIELD_PATTERN.test(column)) throw new Error(`column name ${JSON.stringify(column)} is not a plain identifier`);
  return new Fragment(`"${column}"`);
}

function compileTest(value: Fragment, inMetaData: boolean, test: FieldTest, query: number): Fragment {
  switch (test.op) {
    case 'eq':
      return equalTo(value, test.value);
    case 'neq': // null-inclusive: a missing or null value is "not equal"
      return test.value === null ? sql`${value} IS NOT NULL` : sql`(${value} IS NULL OR NOT (${equalTo(value, test.value)}))`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const comparison = sql`${value} ${COMPARISON[test.op]} ${test.value}`;
      return inMetaData ? sql`(${sameKind(value, test.value)} AND ${comparison})` : comparison;
    }
    case 'between': {
      const comparison = sql`${value} BETWEEN ${test.low} AND ${test.high}`;
      return inMetaData ? sql`(${sameKind(value, test.low)} AND ${comparison})` : comparison;
    }
    case 'inq': {
      if (test.values.length === 0) return FALSE;
      const { list, hasNull } = expandList(test.values);
      const parts = list.length > 0 ? [sql`${value} IN (${placeholders(list)})`] : [];
      if (hasNull) parts.push(sql`${value} IS NULL`);
      return combine(parts, 'OR');
    }
    case 'nin': {
      if (test.values.length === 0) return TRUE;
      const { list, hasNull } = expandList(test.values);
      // null-inclusive like neq, unless null itself is in the list
      if (hasNull) return list.length > 0 ? sql`(${value} IS NOT NULL AND ${value} NOT IN (${placeholders(list)}))` : sql`${value} IS NOT NULL`;
      return sql`(${value} IS NULL OR ${value} NOT IN (${placeholders(list)}))`;
    }
    // SQLite's LIKE ignores ASCII case, so case-sensitive like runs as GLOB.
    // The negated forms match only values that exist and do not match: a
    // missing value has no text to test, so it neither matches nor "not matches".
    case 'like':
      return sql`${value} GLOB ${likeToGlob(test.pattern)}`;
    case 'nlike':
      return sql`(${value} IS NOT NULL AND NOT (${value} GLOB ${likeToGlob(test.pattern)}))`;
    case 'ilike':
      return sql`${value} LIKE ${likeToEscapedLike(test.pattern)} ESCAPE '\\'`;
    case 'nilike':
      return sql`(${value} IS NOT NULL AND NOT (${value} LIKE ${likeToEscapedLike(test.pattern)} ESCAPE '\\'))`;
    case 'contains':
      return sql`instr(${value}, ${test.text}) > 0`;
    case 'ncontains': // null-inclusive like neq
      return sql`(${value} IS NULL OR instr(${value}, ${test.text}) = 0)`;
    case 'exists': // json_extract gives NULL both for a missing key and for a JSON null
      return test.present ? sql`${value} IS NOT NULL` : sql`${value} IS NULL`;
    case 'regexp':
      return sql`historian_regexp(${value}, ${test.source}, ${test.flags}, ${query})`;
  }
}

function equalTo(value: Fragment, operand: EqualityValue): Fragment {
  if (operand === null) return sql`${value} IS NULL`;
  if (operand instanceof NumericText) return sql`${value} IN (${operand.number}, ${operand.text})`;
  return sql`${value} = ${operand}`;
}

/**
 * SQLite orders every number before every text, so `{gt: 5}` on a meta key
 * would match all strings. Range tests on meta keys therefore only look at
 * values of the operand's kind. Real columns have a type, and their affinity
 * already converts operands (an INTEGER column equals '5' when it holds 5).
 */
function sameKind(value: Fragment, operand: OrderedValue): Fragment {
  return typeof operand === 'string' ? sql`typeof(${value}) = 'text'` : sql`typeof(${value}) IN ('integer', 'real')`;
}

function expandList(values: EqualityValue[]): { list: Scalar[]; hasNull: boolean } {
  const list = values.filter((item) => item !== null).flatMap((item) => (item instanceof NumericText ? [item.number, item.text] : [item]));
  return { list, hasNull: values.includes(null) };
}

/** A LIKE pattern as parts: literal characters, `%` (any run), `_` (one character). `\%`, `\_`, `\\` are literals. */
function* likeParts(pattern: string): Generator<{ literal: string } | '%' | '_'> {
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\' && i + 1 < pattern.length) yield { literal: pattern[++i] };
    else if (char === '%' || char === '_') yield char;
    else yield { literal: char };
  }
}

const GLOB_LITERALS: Record<string, string> = { '*': '[*]', '?': '[?]', '[': '[[]' };

function likeToGlob(pattern: string): string {
  let glob = '';
  for (const part of likeParts(pattern)) {
    if (part === '%') glob += '*';
    else if (part === '_') glob += '?';
    else glob += GLOB_LITERALS[part.literal] ?? part.literal;
  }
  return glob;
}

/** Rewrites the pattern for `LIKE … ESCAPE '\'`, so a trailing or stray backslash means the same as in GLOB. */
function likeToEscapedLike(pattern: string): string {
  let like = '';
  for (const part of likeParts(pattern)) {
    if (part === '%' || part === '_') like += part;
    else like += '%_\\'.includes(part.literal) ? `\\${part.literal}` : part.literal;
  }
  return like;
}

/**
 * `ORDER BY` for the keys ('' when there are none). `"id" ASC` is appended
 * as a tiebreaker so that paging with limit/skip is stable.
 */
export function compileOrder(order: OrderKey[] | undefined, table: TableShape): CompiledWhere {
  if (!order || order.length === 0) return { sql: '', params: [] };
  const keys = order.map(({ field, direction }) => {
    checkFieldName(field, 'order');
    if (direction !== 'ASC' && direction !== 'DESC') throw badRequest(`invalid order direction for field '${field}': use ASC or DESC`);
    return sql`${fieldValue(field, table)} ${new Fragment(direction)}`;
  });
  if (!order.some(({ field }) => field === 'id')) keys.push(sql`${columnName('id')} ASC`);
  return { sql: `ORDER BY ${keys.map((key) => key.sql).join(', ')}`, params: keys.flatMap((key) => key.params) };
}

export interface SqlFunctionOptions {
  /** Matcher steps one statement may spend on `regexp` conditions (`meta.regexpBudgetSteps`). */
  regexpBudgetSteps?: number;
}

/**
 * Registers `historian_regexp(value, pattern, flags, query)`, which compiled
 * `regexp` conditions call. SQLite calls it synchronously for each row of one
 * statement, and every statement carries its own query number, so the budget
 * starts afresh when the number changes.
 */
export function registerSqlFunctions(db: Database.Database, options: SqlFunctionOptions = {}): void {
  const budgetSteps = options.regexpBudgetSteps ?? DEFAULT_REGEXP_BUDGET_STEPS;
  const budget = { remaining: budgetSteps };
  let budgetQuery: unknown = null;
  // Not deterministic: the same arguments can answer or throw depending on the budget left.
  db.function('historian_regexp', { directOnly: true }, (value: unknown, source: unknown, flags: unknown, query: unknown) => {
    if (query !== budgetQuery) {
      budgetQuery = query;
      budget.remaining = budgetSteps;
    }
    return regexpMatches(value, String(source), String(flags), budget, budgetSteps) ? 1 : 0;
  });
}

// ---------------------------------------------------------------------------

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** User text inside an error message, cut to a readable length. */
function show(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
