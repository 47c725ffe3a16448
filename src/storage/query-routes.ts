// Query routes: raw and aggregated points as JSON, msgpack (Accept:
// application/msgpack), CSV (format=csv or Accept: text/csv), binary format 1
// and binary format 2; last values in the plain and the KairosDB-compatible
// shapes. GET forms take query parameters, whose start and end may be epoch ms,
// ISO 8601 or relative to now (src/http/time-param.ts); POST forms take the
// KairosDB-like body of WIRE.md. Results are encoded in the storage workers and
// streamed.

import { pack } from 'msgpackr';
import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema, Reply } from '../http/route.js';
import { isCsv } from '../../native-free-codecs/result-envelope.js';
import { badRequest } from '../../shared/errors.js';
import type { ResultFormat, SeriesRequest } from '../../shared/protocol.js';
import type { ScopeFields } from '../../shared/scope.js';
import type { QueryGroup } from './api.js';
import type { CollectionDirectory } from './directory.js';
import type { ShardGateway } from './gateway.js';
import { parseQueryBody, type QuerySpec } from './query-spec.js';
import { BINARY_FORMAT_PROPS, CSV, csvInstead, FORMAT_PROPS, MSGPACK, pointsFormat, SCOPE_FIELDS, SCOPE_PROPS, wantsMsgpack } from './route-params.js';

const TIME = S.integer({ minimum: 0, maximum: 9007199254740991 });
const TAGS = S.array(S.string({ minLength: 1 }), { minItems: 1, maxItems: 10000 });
const RANGE = { start: S.time(), end: S.time({ default: 'now' }) };
const RAW_PARAMS: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS, ...RANGE, ...BINARY_FORMAT_PROPS }, ['tags', 'start']);
const POINTS_PARAMS: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS, ...RANGE, ...FORMAT_PROPS }, ['tags', 'start']);
const TABLE_PARAMS: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS, ...RANGE, ...BINARY_FORMAT_PROPS }, [...SCOPE_FIELDS, 'tags', 'start']);
const BINARY_FORMAT_PARAMS: JsonSchema = S.object(BINARY_FORMAT_PROPS);
const FORMAT_PARAMS: JsonSchema = S.object(FORMAT_PROPS);
const LAST_PARAMS: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS }, ['tags']);
const LAST_BODY: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS }, ['tags']);
const KAIROS_BODY: JsonSchema = {
  type: 'object',
  description: 'KairosDB-like query (WIRE.md): start_absolute | start_relative {value, unit}, end_absolute | end_relative (default now), organization/site/unit/grid, metrics [{name, tags?: {organization: [..], ...}, aggregators?: [...]}], pipeline?: [...]',
  properties: {
    start_absolute: TIME, end_absolute: TIME,
    start_relative: { type: 'object' }, end_relative: { type: 'object' },
    ...SCOPE_PROPS,
    metrics: { type: 'array', items: { type: 'object' } },
    pipeline: { type: 'array', items: { type: 'object' } },
  },
  required: ['metrics'],
  additionalProperties: true,
};
const SENSOR_BODY: JsonSchema = {
  type: 'object',
  description: '`{metrics: [{name}]}` or `{tags: [name, ...]}`; scope comes from the tag map',
  properties: { metrics: { type: 'array', items: S.object({ name: S.string({ minLength: 1 }) }, ['name']) }, tags: TAGS },
  additionalProperties: true,
};
const POINTS_ANSWER = 'JSON map `{tag: [[ts, value], ...]}`; msgpack of the same map (format=msgpack, or Accept: application/msgpack); CSV `time,tag,value` rows, tags in the order asked (format=csv, or Accept: text/csv)';

type Formats = { format?: string; time_format?: string };

/** The content type of a streamed result in `format`. */
export function resultContentType(format: ResultFormat): string {
  if (format === 'json') return 'application/json; charset=utf-8';
  if (format === 'msgpack') return MSGPACK;
  if (isCsv(format)) return CSV;
  return 'application/octet-stream';
}

/**
 * The groups (tags by collection, as the directory makes them) cut into runs of consecutive
 * tags of one collection in the order `keys` gives: CSV rows come tag by tag in the order asked,
 * whichever collections the tags are in.
 */
export function inRequestOrder(groups: QueryGroup[], keys: Iterable<string>): QueryGroup[] {
  const where = new Map<string, { collectionId: string; request: SeriesRequest }>();
  for (const { collectionId, series } of groups) for (const request of series) where.set(request.label ?? request.tag, { collectionId, request });
  const runs: QueryGroup[] = [];
  for (const key of keys) {
    const found = where.get(key);
    if (!found) continue;
    where.delete(key);
    const last = runs.at(-1);
    if (last?.collectionId === found.collectionId) last.series.push(found.request);
    else runs.push({ collectionId: found.collectionId, series: [found.request] });
  }
  return runs;
}

/** Names in the order a repeated name takes its last place (as the directory keeps the last request of a name). */
function byLastOccurrence(names: string[]): string[] {
  const order = new Map<string, true>();
  for (const name of names) {
    order.delete(name);
    order.set(name, true);
  }
  return [...order.keys()];
}

/** `now` is the service clock: what a POST body's start_relative and end_relative count back from. */
export function queryRoutes(directory: CollectionDirectory, gateway: ShardGateway, now: () => number): Route[] {
  const tag = 'Time series queries';

  /** GET parameters as a query: every tag raw, scope from parameters or the tag map. Times are epoch ms by now (x-time). */
  const fromParams = (req: Request): { groups: QueryGroup[]; start: number; end: number; order: string[] } => {
    const q = req.query as unknown as { tags: string[]; start: number; end: number } & ScopeFields;
    if (q.end < q.start) throw badRequest('query parameter end must not be before start');
    return { groups: directory.resolve(req.grant, q, q.tags), start: q.start, end: q.end, order: [...new Set(q.tags)] };
  };
  const fromBody = (req: Request): { groups: QueryGroup[]; start: number; end: number; order: string[] } => {
    const spec: QuerySpec = parseQueryBody(req.body, now());
    return { groups: directory.resolveMetrics(req.grant, spec.metrics), start: spec.start, end: spec.end, order: byLastOccurrence(spec.metrics.map((m) => m.name)) };
  };
  const streamed = (req: Request, format: ResultFormat, q: { groups: QueryGroup[]; start: number; end: number; order: string[] }): Reply => {
    const groups = isCsv(format) ? inRequestOrder(q.groups, q.order) : q.groups;
    return { contentType: resultContentType(format), stream: (out) => gateway.query(groups, q.start, q.end, format, out, req.signal) };
  };
  const formatOf = (req: Request) => {
    const q = req.query as Formats;
    return pointsFormat(req, q.format, q.time_format, 'query parameter');
  };
  /** CSV when a binary route is asked for it, else null (the route's binary format). */
  const csvOf = (req: Request): ResultFormat | null => {
    const q = req.query as Formats;
    return csvInstead(req, q.format, q.time_format);
  };
  /** Format 2 needs one collection named explicitly. */
  const table = (req: Request, q: { groups: QueryGroup[]; start: number; end: number }): Reply => {
    if (q.groups.length !== 1) throw badRequest('fast_query_optimised answers one collection: every metric must have the same organization, site, unit and grid');
    return { contentType: 'application/octet-stream', stream: (out) => gateway.queryTable(q.groups[0], q.start, q.end, out, req.signal) };
  };
  const requireBodyScope = (req: Request) => {
    const body = req.body as Record<string, unknown>;
    const metrics = Array.isArray(body.metrics) ? (body.metrics as Array<Record<string, unknown>>) : [];
    for (const key of SCOPE_FIELDS) {
      const everyMetricHasIt = metrics.length > 0 && metrics.every((m) => m && typeof m === 'object' && m.tags && typeof m.tags === 'object' && key in (m.tags as object));
      if (typeof body[key] !== 'string' && !everyMetricHasIt) throw badRequest(`missing body field '${key}': fast_query_optimised needs an explicit scope`);
    }
  };
  const lastReply = async (req: Request, fields: ScopeFields, tags: string[]): Promise<Reply> => {
    const values = await gateway.lastValues(directory.resolve(req.grant, fields, tags));
    return wantsMsgpack(req) ? { contentType: MSGPACK, body: pack(values) } : { body: values };
  };

  return [
    {
      method: 'GET', path: '/svcapi/fast_query', auth: 'jwt', tag,
      summary: 'Raw points of tags in [start, end] as a JSON map {tag: [[ts, value], ...]}, msgpack or CSV',
      description: 'Scope from organization, site, unit, grid (all four), else from the tag-to-scope map. Sorted by timestamp; start and end inclusive (end defaults to now); a tag with no points maps to []. Streamed. format=msgpack or Accept: application/msgpack for msgpack; format=csv or Accept: text/csv for CSV.',
      query: POINTS_PARAMS, responses: { 200: { description: POINTS_ANSWER, contentType: 'application/json' } },
      handler: (req) => streamed(req, formatOf(req), fromParams(req)),
    },
    {
      method: 'POST', path: '/svcapi/fast_query', auth: 'jwt', tag, mutates: false,
      summary: 'KairosDB-like query with per-metric aggregators and a pipeline; JSON, msgpack or CSV',
      query: FORMAT_PARAMS, body: KAIROS_BODY, responses: { 200: { description: POINTS_ANSWER, contentType: 'application/json' } },
      handler: (req) => streamed(req, formatOf(req), fromBody(req)),
    },
    {
      method: 'GET', path: '/svcapi/fast_query_binary', auth: 'jwt', tag,
      summary: 'Binary format 1: "HSB1", u32 tags; per tag u16 name length, name, u32 count, count × (u64 ts, f32 value)',
      query: RAW_PARAMS, responses: { 200: { description: 'binary format 1 (WIRE.md); CSV with format=csv or Accept: text/csv', contentType: 'application/octet-stream' } },
      handler: (req) => streamed(req, csvOf(req) ?? 'binary1', fromParams(req)),
    },
    {
      method: 'POST', path: '/svcapi/fast_query_binary', auth: 'jwt', tag, mutates: false,
      summary: 'Binary format 1 for the KairosDB-like body (single-step pipelines aggregate in the store)',
      query: BINARY_FORMAT_PARAMS, body: KAIROS_BODY, responses: { 200: { description: 'binary format 1 (WIRE.md); CSV with format=csv or Accept: text/csv', contentType: 'application/octet-stream' } },
      handler: (req) => streamed(req, csvOf(req) ?? 'binary1', fromBody(req)),
    },
    {
      method: 'GET', path: '/svcapi/fast_query_optimised', auth: 'jwt', tag,
      summary: 'Binary format 2: one shared timestamp array, per-tag validity bitmaps and f32 values (all four scope fields required)',
      query: TABLE_PARAMS, responses: { 200: { description: 'binary format 2 (WIRE.md); CSV with format=csv or Accept: text/csv', contentType: 'application/octet-stream' } },
      handler: (req) => {
        const csv = csvOf(req);
        return csv ? streamed(req, csv, fromParams(req)) : table(req, fromParams(req));
      },
    },
    {
      method: 'POST', path: '/svcapi/fast_query_optimised', auth: 'jwt', tag, mutates: false,
      summary: 'Binary format 2 for the KairosDB-like body with an explicit scope',
      query: BINARY_FORMAT_PARAMS, body: KAIROS_BODY, responses: { 200: { description: 'binary format 2 (WIRE.md); CSV with format=csv or Accept: text/csv', contentType: 'application/octet-stream' } },
      handler: (req) => {
        requireBodyScope(req);
        const csv = csvOf(req);
        return csv ? streamed(req, csv, fromBody(req)) : table(req, fromBody(req));
      },
    },
    {
      method: 'GET', path: '/svcapi/lastlist', auth: 'jwt', tag,
      summary: 'Latest [ts, value] per tag (null when the tag has none)',
      query: LAST_PARAMS, responses: { 200: { description: 'map of tag to [ts, value] or null (msgpack on request)', schema: { type: 'object', additionalProperties: true } } },
      handler: (req) => {
        const q = req.query as unknown as { tags: string[] } & ScopeFields;
        return lastReply(req, q, q.tags);
      },
    },
    {
      method: 'POST', path: '/svcapi/lastlist', auth: 'jwt', tag, mutates: false,
      summary: 'Latest [ts, value] per tag; body {organization?, site?, unit?, grid?, tags: [...]}',
      body: LAST_BODY, responses: { 200: { description: 'map of tag to [ts, value] or null (msgpack on request)', schema: { type: 'object', additionalProperties: true } } },
      handler: (req) => {
        const body = req.body as { tags: string[] } & ScopeFields;
        return lastReply(req, body, body.tags);
      },
    },
    {
      method: 'POST', path: '/sensordata/{id}/lastlist', auth: 'jwt', tag, mutates: false,
      summary: 'Latest value per tag in the KairosDB query response shape (path id ignored; scope from the tag map)',
      params: S.object({ id: S.string() }, ['id']), body: SENSOR_BODY,
      responses: { 200: { description: '{queries: [{sample_size, results: [{name, tags: {}, values: [[ts, value]]}]}]}', schema: { type: 'object', additionalProperties: true } } },
      handler: async (req) => {
        const body = req.body as { metrics?: Array<{ name: string }>; tags?: string[] };
        const names = body.metrics?.map((m) => m.name) ?? body.tags ?? [];
        if (names.length === 0) throw badRequest('body needs metrics [{name}] or tags [name, ...]');
        const values = await gateway.lastValues(directory.resolve(req.grant, {}, names));
        const results = names.map((name) => ({ name, tags: {}, values: values[name] ? [values[name]] : [] }));
        const sampleSize = results.reduce((n, r) => n + r.values.length, 0);
        const shaped = { queries: [{ sample_size: sampleSize, results }] };
        return wantsMsgpack(req) ? { contentType: MSGPACK, body: pack(shaped) } : { body: shaped };
      },
    },
  ];
}
