// What the time-series route files share: the schema of the four scope fields
// (as query parameters or body fields), and the choice of an answer's encoding (format,
// time_format, Accept: msgpack or CSV).

import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { badRequest } from '../../shared/errors.js';
import { SCOPE_FIELDS } from '../../shared/scope.js';

export { SCOPE_FIELDS };

export const SCOPE_PROPS: Record<string, JsonSchema> = Object.fromEntries(SCOPE_FIELDS.map((k) => [k, S.string({ minLength: 1 })]));

export const MSGPACK = 'application/msgpack';

/** Whether the client asked for msgpack instead of JSON. */
export function wantsMsgpack(req: { readonly headers: Readonly<Record<string, string>> }): boolean {
  return /application\/(x-)?msgpack/.test(req.headers.accept ?? '');
}

export const CSV = 'text/csv; charset=utf-8; header=present';

/** `format` and `time_format`, on the routes whose answer is points per tag. */
export const FORMAT_PROPS: Record<string, JsonSchema> = {
  format: S.string({ enum: ['json', 'msgpack', 'csv'], description: 'json (default), msgpack, or csv (RFC 4180: header time,tag,value, one row per point, CRLF); without it, Accept: text/csv or application/msgpack chooses' }),
  time_format: S.string({ enum: ['ms', 'iso'], description: 'the CSV time column: ms (epoch milliseconds, default) or iso (ISO 8601 UTC with milliseconds, 2024-06-01T00:00:00.000Z); CSV only' }),
};

/**
 * The encoding of an answer of points per tag: `format` when given, else what Accept asks for
 * (CSV, msgpack), else JSON. `timeFormat` applies to CSV only: with another format it is a 400,
 * so nobody waits for ISO times that never come. `where` names the fields in that 400.
 */
export function pointsFormat(
  req: { readonly headers: Readonly<Record<string, string>> },
  format: string | undefined,
  timeFormat: string | undefined,
  where: 'query parameter' | 'body field',
): 'json' | 'msgpack' | 'csv' | 'csv-iso' {
  const chosen = format ?? (prefersCsv(req.headers.accept) ? 'csv' : wantsMsgpack(req) ? 'msgpack' : 'json');
  if (chosen === 'csv') return timeFormat === 'iso' ? 'csv-iso' : 'csv';
  if (timeFormat !== undefined) throw badRequest(`${where} time_format applies to CSV only (format csv, or Accept: text/csv)`);
  return chosen === 'msgpack' ? 'msgpack' : 'json';
}

/** Media types a points route can answer besides CSV, for weighing an Accept header. */
const OTHER_ANSWERS = new Set(['application/json', 'application/msgpack', 'application/x-msgpack']);

/**
 * Whether Accept asks for CSV before the other answers it names: text/csv with the highest
 * quality among them, or an equal one named first. Wildcards choose nothing (JSON stays the default).
 */
export function prefersCsv(accept: string | undefined): boolean {
  if (!accept || !/csv/i.test(accept)) return false;
  let csv: { q: number; at: number } | null = null;
  let other: { q: number; at: number } | null = null;
  for (const [at, range] of accept.split(',').entries()) {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const quality = params.find((p) => p.startsWith('q='));
    const q = quality === undefined ? 1 : Number(quality.slice(2));
    if (!(q > 0)) continue;
    if (type === 'text/csv') {
      if (!csv || q > csv.q) csv = { q, at };
    } else if (OTHER_ANSWERS.has(type)) {
      if (!other || q > other.q) other = { q, at };
    }
  }
  return csv !== null && (other === null || csv.q > other.q || (csv.q === other.q && csv.at < other.at));
}

/** `format` and `time_format` on the binary routes: their binary format unless CSV is asked for. */
export const BINARY_FORMAT_PROPS: Record<string, JsonSchema> = {
  format: S.string({ enum: ['binary', 'csv'], description: 'binary (default: the route\'s binary format), or csv (as fast_query\'s CSV); without it, Accept: text/csv chooses CSV' }),
  time_format: FORMAT_PROPS.time_format!,
};

/**
 * A binary route's answer: CSV when `format=csv`, or Accept prefers text/csv without a
 * `format`, since CSV is offered on every route that returns points (WIRE.md part 3); else the
 * route's binary format (`null`).
 */
export function csvInstead(req: { readonly headers: Readonly<Record<string, string>> }, format: string | undefined, timeFormat: string | undefined): 'csv' | 'csv-iso' | null {
  if (format === 'csv' || (format === undefined && prefersCsv(req.headers.accept))) return timeFormat === 'iso' ? 'csv-iso' : 'csv';
  if (timeFormat !== undefined) throw badRequest('query parameter time_format applies to CSV only (format csv, or Accept: text/csv)');
  return null;
}
