/**
 * The decoder of write bodies another parser already decoded (msgpack): the same two shapes,
 * rules and errors as the JSON scanner (write-body.ts). Pure TypeScript: runs in a browser.
 */

import { BatchBuilder, entriesOf, field, isTimestamp, malformed, q, scopeOf, tagNameProblem, timestampProblem, WriteBodyError, type DecodeLimits, type PointBatch, type WriteScope } from './point-batch.js';

const MAX_TIMESTAMP_BIGINT = 9007199254740991n;

function isList(x: unknown): x is ArrayLike<unknown> {
  return Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  switch (typeof x) {
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean';
    case 'number':
      return String(x);
    case 'bigint':
      return `${x}n`;
    case 'undefined':
      return 'undefined';
    default:
      return 'an object';
  }
}

/**
 * A decoded timestamp as a number, or NaN when it is not an accepted timestamp. (One `let`
 * and one return: written with early returns, decodeWriteObject ran 20% slower, measured
 * with bench/write-body-decoders.ts's body.)
 */
function objectTimestamp(x: unknown, minTimestampMs: number): number {
  let t = NaN;
  if (typeof x === 'number') t = x;
  else if (typeof x === 'bigint') t = x >= 0n && x <= MAX_TIMESTAMP_BIGINT ? Number(x) : NaN;
  else if (x instanceof Date) t = x.getTime(); // msgpack's timestamp extension decodes to Date
  return isTimestamp(t, minTimestampMs) ? t + 0 : NaN;
}

/** A decoded value as a number (a bigint rounded to the nearest), or NaN when it is not finite. */
function objectValue(x: unknown): number {
  if (typeof x === 'number') return x - x === 0 ? x : NaN;
  return typeof x === 'bigint' ? Number(x) : NaN;
}

// Rejection messages are built only on failure: no string work per point.
function rejectTimestamp(out: BatchBuilder, where: string, x: unknown): void {
  const t = objectTimestamp(x, 0); // a valid timestamp below the minimum is named as a number
  out.reject(`${where}: ${timestampProblem(t === t ? t : x instanceof Date ? x.getTime() : describe(x), out.minTimestampMs)}`);
}

function rejectValue(out: BatchBuilder, where: string, x: unknown, nullAllowed: boolean): void {
  out.reject(`${where}: value must be a finite number${nullAllowed ? ' or null' : ''}, got ${describe(x)}`);
}

/**
 * Decodes a write body already parsed by another decoder (msgpack): the same two shapes, rules
 * and errors as decodeJsonWriteBody. Maps may be plain objects or Maps with string keys;
 * timestamps and values may be numbers or bigints, timestamps also Dates. Tag order is the
 * object's key order.
 */
export function decodeWriteObject(obj: unknown, limits: DecodeLimits = {}): PointBatch {
  const body = entriesOf(obj);
  if (body === null) malformed('a write body must be an object');
  const scope = scopeOf(body, '');
  const tags = field(body, 'tags');
  const timestamps = field(body, 'timestamps');
  const columns = field(body, 'columns');
  if (tags !== undefined && (timestamps !== undefined || columns !== undefined)) {
    malformed('a body has either "tags" or "timestamps" and "columns", not both');
  }
  if (tags !== undefined) return decodeTagObject(tags, scope, limits);
  if (timestamps === undefined && columns === undefined) malformed('a write body needs "tags", or "timestamps" and "columns"');
  if (columns === undefined) malformed('"columns" is missing (a body with "timestamps" is columnar)');
  if (timestamps === undefined) malformed('"timestamps" is missing (a body with "columns" is columnar)');
  return decodeColumnObject(timestamps, columns, scope, limits);
}

function decodeTagObject(tags: unknown, scope: WriteScope, limits: DecodeLimits): PointBatch {
  const entries = entriesOf(tags);
  if (entries === null) malformed('"tags" must be an object mapping tag names to [[timestamp, value], …]');
  let total = 0;
  for (const [, points] of entries) if (isList(points)) total += points.length;
  const out = new BatchBuilder(total, limits);
  const minTs = out.minTimestampMs;
  for (const [name, points] of entries) {
    out.openTag(name);
    if (!isList(points)) malformed(`tag ${q(name)} must be an array of [timestamp, value] points`);
    for (let i = 0; i < points.length; i++) {
      const point = points[i];
      if (!isList(point) || point.length !== 2) malformed(`tag ${q(name)} point ${i} must be a [timestamp, value] array`);
      const t = objectTimestamp(point[0], minTs);
      const v = objectValue(point[1]);
      if (t !== t) rejectTimestamp(out, `tag ${q(name)} point ${i}`, point[0]);
      if (v !== v) rejectValue(out, `tag ${q(name)} point ${i}`, point[1], false);
      out.timestamps[out.count] = t;
      out.values[out.count] = v;
      out.count++;
    }
  }
  return out.finish(scope);
}

function decodeColumnObject(timestamps: unknown, columns: unknown, scope: WriteScope, limits: DecodeLimits): PointBatch {
  if (!isList(timestamps)) malformed('"timestamps" must be an array');
  const entries = entriesOf(columns);
  if (entries === null) malformed('"columns" must be an object mapping tag names to value arrays');
  const rows = timestamps.length;
  for (const [name, column] of entries) {
    if (!isList(column)) malformed(`column ${q(name)} must be an array of values`);
    if (column.length !== rows) malformed(`column ${q(name)} has ${column.length} values but "timestamps" has ${rows}`);
  }
  const out = new BatchBuilder(rows * entries.length, limits);
  const rowTs = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    rowTs[r] = objectTimestamp(timestamps[r], out.minTimestampMs);
    if (rowTs[r] !== rowTs[r]) rejectTimestamp(out, `timestamps index ${r}`, timestamps[r]);
  }
  for (const [name, column] of entries as Array<[string, ArrayLike<unknown>]>) {
    out.openTag(name);
    for (let r = 0; r < rows; r++) {
      const x = column[r];
      if (x === null) continue;
      out.timestamps[out.count] = rowTs[r];
      const v = objectValue(x);
      if (v !== v) rejectValue(out, `tag ${q(name)} row ${r}`, x, true);
      out.values[out.count] = v;
      out.count++;
    }
  }
  return out.finish(scope);
}

/** Whether a decoded body is in the rows shape of the ingest routes: an array, or an object with `ts` or `values`. */
export function isRowsObject(obj: unknown): boolean {
  if (isList(obj)) return true;
  const entries = entriesOf(obj);
  return entries !== null && entries.some(([k]) => k === 'ts' || k === 'values');
}

/**
 * Decodes ingest rows, `{"ts": <ms>, "values": {"<tag>": <number|null>, …}}` or an array of them
 * (WIRE.md part 2 "Ingest"), into one PointBatch: each tag's points in row order, a null value
 * being no point. Any other key in a row, or `values` not an object, is malformed (naming the
 * row); a bad timestamp or a non-finite value is a rejection, as in the other shapes.
 */
export function decodeRowsObject(obj: unknown, limits: DecodeLimits = {}): PointBatch {
  const rows = isList(obj) ? obj : [obj];
  const minTs = limits.minTimestampMs ?? 0;
  const tagIds = new Map<string, number>();
  const tagNames: string[] = [];
  const counts: number[] = [];
  const parsed: Array<{ ts: unknown; values: Array<[string, unknown]> }> = new Array(rows.length);
  let rejection: string | null = null;
  const reject = (message: string) => {
    if (rejection === null) rejection = message;
  };
  for (let r = 0; r < rows.length; r++) {
    const row = entriesOf(rows[r]);
    if (row === null) malformed(`row ${r} must be an object {"ts": <ms>, "values": {"<tag>": <number>, …}}`);
    let ts: unknown;
    let values: Array<[string, unknown]> | null = null;
    for (const [k, v] of row) {
      if (k === 'ts') ts = v;
      else if (k === 'values') {
        values = entriesOf(v);
        if (values === null) malformed(`row ${r}: "values" must be an object mapping tag names to numbers`);
      } else malformed(`row ${r}: unknown key ${q(k)} (a row has "ts" and "values")`);
    }
    if (ts === undefined) malformed(`row ${r}: "ts" is missing`);
    if (values === null) malformed(`row ${r}: "values" is missing`);
    parsed[r] = { ts, values };
    for (const [name, v] of values) {
      if (v === null) continue;
      let id = tagIds.get(name);
      if (id === undefined) {
        id = tagNames.length;
        tagIds.set(name, id);
        tagNames.push(name);
        counts.push(0);
        const problem = tagNameProblem(name);
        if (problem !== null) reject(`tag ${q(name)} (row ${r}): ${problem}`);
      }
      counts[id]++;
    }
  }
  const tagStart = new Uint32Array(tagNames.length + 1);
  for (let t = 0; t < tagNames.length; t++) tagStart[t + 1] = tagStart[t] + counts[t];
  const total = tagStart[tagNames.length];
  const fill = tagStart.slice(0, tagNames.length);
  const timestamps = new Float64Array(total);
  const values = new Float64Array(total);
  for (let r = 0; r < parsed.length; r++) {
    const { ts, values: row } = parsed[r];
    const t = objectTimestamp(ts, minTs);
    if (t !== t) {
      const asNumber = objectTimestamp(ts, 0);
      reject(`row ${r}: ${timestampProblem(asNumber === asNumber ? asNumber : ts instanceof Date ? ts.getTime() : describe(ts), minTs)}`);
    }
    for (const [name, x] of row) {
      if (x === null) continue;
      const v = objectValue(x);
      if (v !== v) reject(`row ${r} tag ${q(name)}: value must be a finite number or null, got ${describe(x)}`);
      const at = fill[tagIds.get(name)!]++;
      timestamps[at] = t;
      values[at] = v;
    }
  }
  if (rejection !== null) throw new WriteBodyError('rejected', rejection);
  return { scope: {}, tagNames, tagStart, timestamps, values, pointCount: total };
}
