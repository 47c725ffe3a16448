// Query routes: raw and aggregated points as JSON, msgpack (Accept:
// application/msgpack), binary format 1 and binary format 2; last values in
// the plain and the KairosDB-compatible shapes. GET forms take query
// parameters; POST forms take the KairosDB-like body of WIRE.md. Results are
// encoded in the storage workers and streamed.

import { pack } from 'msgpackr';
import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema, Reply } from '../http/route.js';
import { badRequest } from '../../shared/errors.js';
import type { ResultFormat } from '../../shared/protocol.js';
import type { ScopeFields } from '../../shared/scope.js';
import type { QueryGroup } from './api.js';
import type { CollectionDirectory } from './directory.js';
import type { ShardGateway } from './gateway.js';
import { parseQueryBody, type QuerySpec } from './query-spec.js';
import { MSGPACK, SCOPE_FIELDS, SCOPE_PROPS, wantsMsgpack } from './route-params.js';

const TIME = S.integer({ minimum: 0, maximum: 9007199254740991 });
const TAGS = S.array(S.string({ minLength: 1 }), { minItems: 1, maxItems: 10000 });
const RAW_PARAMS: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS, start: TIME, end: TIME }, ['tags', 'start', 'end']);
const TABLE_PARAMS: JsonSchema = S.object({ ...SCOPE_PROPS, tags: TAGS, start: TIME, end: TIME }, [...SCOPE_FIELDS, 'tags', 'start', 'end']);
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
const JSON_OR_MSGPACK = 'JSON map `{tag: [[ts, value], ...]}`; msgpack of the same map when Accept asks for application/msgpack';

export function queryRoutes(directory: CollectionDirectory, gateway: ShardGateway): Route[] {
  const tag = 'Time series queries';

  /** GET parameters as a query: every tag raw, scope from parameters or the tag map. */
  const fromParams = (req: Request): { groups: QueryGroup[]; start: number; end: number } => {
    const q = req.query as unknown as { tags: string[]; start: number; end: number } & ScopeFields;
    if (q.end < q.start) throw badRequest('query parameter end must not be before start');
    return { groups: directory.resolve(req.grant, q, q.tags), start: q.start, end: q.end };
  };
  const fromBody = (req: Request): { groups: QueryGroup[]; start: number; end: number } => {
    const spec: QuerySpec = parseQueryBody(req.body);
    return { groups: directory.resolveMetrics(req.grant, spec.metrics), start: spec.start, end: spec.end };
  };
  const streamed = (req: Request, format: ResultFormat, q: { groups: QueryGroup[]; start: number; end: number }): Reply => ({
    contentType: format === 'json' ? 'application/json; charset=utf-8' : format === 'msgpack' ? MSGPACK : 'application/octet-stream',
    stream: (out) => gateway.query(q.groups, q.start, q.end, format, out, req.signal),
  });
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
      summary: 'Raw points of tags in [start, end] as a JSON map {tag: [[ts, value], ...]}',
      description: 'Scope from organization, site, unit, grid (all four), else from the tag-to-scope map. Sorted by timestamp; start and end inclusive; a tag with no points maps to []. Streamed. Accept: application/msgpack for msgpack.',
      query: RAW_PARAMS, responses: { 200: { description: JSON_OR_MSGPACK, contentType: 'application/json' } },
      handler: (req) => streamed(req, wantsMsgpack(req) ? 'msgpack' : 'json', fromParams(req)),
    },
    {
      method: 'POST', path: '/svcapi/fast_query', auth: 'jwt', tag, mutates: false,
      summary: 'KairosDB-like query with per-metric aggregators and a pipeline',
      body: KAIROS_BODY, responses: { 200: { description: JSON_OR_MSGPACK, contentType: 'application/json' } },
      handler: (req) => streamed(req, wantsMsgpack(req) ? 'msgpack' : 'json', fromBody(req)),
    },
    {
      method: 'GET', path: '/svcapi/fast_query_binary', auth: 'jwt', tag,
      summary: 'Binary format 1: "HSB1", u32 tags; per tag u16 name length, name, u32 count, count × (u64 ts, f32 value)',
      query: RAW_PARAMS, responses: { 200: { description: 'binary format 1 (WIRE.md)', contentType: 'application/octet-stream' } },
      handler: (req) => streamed(req, 'binary1', fromParams(req)),
    },
    {
      method: 'POST', path: '/svcapi/fast_query_binary', auth: 'jwt', tag, mutates: false,
      summary: 'Binary format 1 for the KairosDB-like body (single-step pipelines aggregate in the store)',
      body: KAIROS_BODY, responses: { 200: { description: 'binary format 1 (WIRE.md)', contentType: 'application/octet-stream' } },
      handler: (req) => streamed(req, 'binary1', fromBody(req)),
    },
    {
      method: 'GET', path: '/svcapi/fast_query_optimised', auth: 'jwt', tag,
      summary: 'Binary format 2: one shared timestamp array, per-tag validity bitmaps and f32 values (all four scope fields required)',
      query: TABLE_PARAMS, responses: { 200: { description: 'binary format 2 (WIRE.md)', contentType: 'application/octet-stream' } },
      handler: (req) => table(req, fromParams(req)),
    },
    {
      method: 'POST', path: '/svcapi/fast_query_optimised', auth: 'jwt', tag, mutates: false,
      summary: 'Binary format 2 for the KairosDB-like body with an explicit scope',
      body: KAIROS_BODY, responses: { 200: { description: 'binary format 2 (WIRE.md)', contentType: 'application/octet-stream' } },
      handler: (req) => {
        requireBodyScope(req);
        return table(req, fromBody(req));
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
