// Tag mappings (custom handler, not the generic entity layer): CRUD under
// /svcapi/tag_mappings, writes addressed by external spec, and queries that
// answer keyed by external spec.

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { collectionOfMapping, type TagMapping, type TagMappingStore } from '../meta/tables/tag-mappings.js';
import { isCsv } from '../../native-free-codecs/result-envelope.js';
import { AggregatorError, parseAggregators } from '../../shared/aggregator-spec.js';
import { badRequest, forbidden } from '../../shared/errors.js';
import type { SeriesRequest, WriteMode } from '../../shared/protocol.js';
import type { QueryGroup } from './api.js';
import type { CollectionDirectory } from './directory.js';
import type { ShardGateway } from './gateway.js';
import { checkBucketCount } from './query-spec.js';
import { inRequestOrder, resultContentType } from './query-routes.js';
import { pointsFormat, SCOPE_FIELDS } from './route-params.js';

const MAPPING: JsonSchema = {
  type: 'object',
  description: 'external (the outside name of the point), tag (storage tag), organization, site, unit, grid; other fields are kept',
  properties: Object.fromEntries(['id', 'external', 'tag', ...SCOPE_FIELDS].map((k) => [k, S.string()])),
  additionalProperties: true,
};
const MAPPING_BODY: JsonSchema = {
  ...MAPPING,
  required: ['external', 'tag', ...SCOPE_FIELDS],
};
const TIME = S.integer({ minimum: 0, maximum: 9007199254740991 });
const WRITE_BODY: JsonSchema = S.object(
  {
    data: { type: 'object', description: '{"<external spec>": [[ts, value], ...]}', additionalProperties: { type: 'array' } },
    mode: S.string({ enum: ['sync', 'fast', 'buffered'], description: 'durability as /write (default), /write_fast or /write_buffered' }),
  },
  ['data'],
);
const QUERY_BODY: JsonSchema = S.object(
  {
    tags: S.array(S.string({ minLength: 1 }), { minItems: 1, maxItems: 10000, description: 'external specs' }),
    start: TIME,
    end: TIME,
    aggregators: { type: 'array', items: { type: 'object' }, description: 'optional pipeline, as in POST fast_query' },
    format: S.string({ enum: ['json', 'binary', 'csv'], description: 'json (default): {external: [[ts, value], ...]} (msgpack with Accept: application/msgpack); binary: format 1 with external specs as names; csv: rows time,tag,value with the external spec as tag (also Accept: text/csv without format)' }),
    time_format: S.string({ enum: ['ms', 'iso'], description: 'the CSV time column: ms (epoch milliseconds, default) or iso (ISO 8601 UTC with milliseconds); CSV only' }),
  },
  ['tags', 'start', 'end'],
);
const OUTCOME = S.object({ success: S.boolean(), points: S.integer(), error: S.string() }, ['success']);

export function tagMappingRoutes(mappings: TagMappingStore, directory: CollectionDirectory, gateway: ShardGateway): Route[] {
  const tag = 'Tag mappings';
  const id = { params: S.object({ id: S.string({ pattern: '^[0-9]+$' }) }, ['id']) };

  /** Non-admins may only map into (and use mappings of) collections they can reach. */
  const checkAccess = (req: Request, list: TagMapping[]) => {
    for (const m of list) if (!directory.reachesUnit(req.grant, m)) throw forbidden(`mapping "${m.external}" points outside your access grant`);
  };
  /**
   * External specs are one namespace for every tenant (write_tag_mapping resolves them all), so
   * only an admin gives one out or renames it: a tenant could otherwise take a spec another
   * tenant's systems send, and that tenant's mapping would be 409 and its writes 403.
   */
  const adminNames = (req: Request) => {
    if (!req.grant.isAdmin) throw forbidden('only an admin can create a mapping or change its external spec (one namespace for every tenant)');
  };

  return [
    {
      method: 'GET', path: '/svcapi/tag_mappings', auth: 'jwt', tag,
      summary: 'List mappings (optional exact filters: external, tag, organization, site, unit, grid)',
      query: S.object(Object.fromEntries(['external', 'tag', ...SCOPE_FIELDS].map((k) => [k, S.string()]))),
      responses: { 200: { description: 'mappings', schema: S.array(MAPPING) } },
      handler: (req) => {
        return { body: mappings.list(req.query as Record<string, string>).filter((m) => directory.reachesUnit(req.grant, m)) };
      },
    },
    {
      method: 'POST', path: '/svcapi/tag_mappings', auth: 'admin', tag, summary: 'Create a mapping (admin; 409 DUPLICATE when the external spec is mapped)',
      body: MAPPING_BODY, responses: { 200: { description: 'mapping', schema: MAPPING } },
      handler: (req) => {
        checkAccess(req, [req.body as TagMapping]);
        return { body: mappings.create(req.body) };
      },
    },
    {
      method: 'POST', path: '/svcapi/tag_mappings/bulk', auth: 'admin', tag, summary: 'Create several mappings (admin; all or nothing)',
      body: { type: 'array', items: MAPPING_BODY }, responses: { 200: { description: 'mappings', schema: S.array(MAPPING) } },
      handler: (req) => {
        checkAccess(req, req.body as TagMapping[]);
        return { body: mappings.createMany(req.body) };
      },
    },
    {
      ...id, method: 'GET', path: '/svcapi/tag_mappings/{id}', auth: 'jwt', tag, summary: 'One mapping',
      responses: { 200: { description: 'mapping', schema: MAPPING }, 404: { description: 'item not found' } },
      handler: (req) => {
        const m = mappings.get(req.params.id);
        checkAccess(req, [m]);
        return { body: m };
      },
    },
    {
      ...id, method: 'PUT', path: '/svcapi/tag_mappings/{id}', auth: 'jwt', tag, summary: 'Change a mapping (fields merge; its external spec: admin)',
      body: MAPPING, responses: { 200: { description: 'mapping', schema: MAPPING }, 404: { description: 'item not found' } },
      handler: (req) => {
        const current = mappings.get(req.params.id);
        const external = (req.body as { external?: unknown }).external;
        if (external !== undefined && external !== current.external) adminNames(req);
        checkAccess(req, [current, { ...current, ...(req.body as object) } as TagMapping]);
        return { body: mappings.update(req.params.id, req.body) };
      },
    },
    {
      ...id, method: 'DELETE', path: '/svcapi/tag_mappings/{id}', auth: 'jwt', tag, summary: 'Delete a mapping',
      responses: { 200: { description: 'count', schema: S.object({ count: S.integer() }, ['count']) } },
      handler: (req) => {
        checkAccess(req, [mappings.get(req.params.id)]);
        return { body: { count: mappings.delete(req.params.id) } };
      },
    },
    {
      method: 'POST', path: '/svcapi/write_tag_mapping', auth: 'jwt', tag,
      summary: 'Write points addressed by external spec: {data: {"<external>": [[ts, value], ...]}, mode?}',
      description: 'Each external spec is resolved through the mappings (an unmapped one refuses the whole request, 400 naming it), then the points are written to their collections like /write. All or nothing per collection.',
      body: WRITE_BODY, responses: { 200: { description: '{success, points} or {success: false, error}', schema: OUTCOME } },
      handler: async (req) => {
        const body = req.body as { data: Record<string, unknown[]>; mode?: WriteMode };
        const resolved = mappings.resolve(Object.keys(body.data));
        // Points per tag in a Map: a tag may be named constructor or __proto__ (a plain object would read or set its prototype).
        const byCollection = new Map<string, { scope: TagMapping; tags: Map<string, unknown[]> }>();
        for (const [external, points] of Object.entries(body.data)) {
          const m = resolved.get(external)!;
          const key = collectionOfMapping(m);
          let entry = byCollection.get(key);
          if (!entry) byCollection.set(key, (entry = { scope: m, tags: new Map() }));
          entry.tags.set(m.tag, [...(entry.tags.get(m.tag) ?? []), ...points]);
        }
        let points = 0;
        for (const { scope, tags } of byCollection.values()) {
          // fromEntries defines own properties, so "__proto__" stays a key of the JSON.
          const bytes = Buffer.from(JSON.stringify({ organization: scope.organization, site: scope.site, unit: scope.unit, grid: scope.grid, tags: Object.fromEntries(tags) }));
          const result = await gateway.write(req.grant, bytes, 'application/json', body.mode ?? 'sync', req.signal, { route: req.route });
          if (!result.success) return { body: result };
          points += result.points;
        }
        return { body: { success: true, points } };
      },
    },
    {
      method: 'POST', path: '/svcapi/fast_query_tag_mapping', auth: 'jwt', tag, mutates: false,
      summary: 'Query by external spec: {tags: [...], start, end, aggregators?, format?: "json" | "binary" | "csv", time_format?}',
      description: 'Answers the JSON map keyed by external spec, binary format 1 (names are the external specs) when format is "binary", or CSV rows (the external spec in the tag column, in the order asked) when format is "csv".',
      body: QUERY_BODY, responses: { 200: { description: 'JSON map, msgpack, binary format 1 or CSV', contentType: 'application/json' } },
      handler: (req) => {
        const body = req.body as { tags: string[]; start: number; end: number; aggregators?: unknown; format?: 'json' | 'binary' | 'csv'; time_format?: string };
        if (body.end < body.start) throw badRequest('body field end must not be before start');
        let pipeline;
        try {
          pipeline = parseAggregators(body.aggregators, 'aggregators');
          checkBucketCount(pipeline, body.start, body.end);
        } catch (err) {
          if (err instanceof AggregatorError) throw badRequest(err.message);
          throw err;
        }
        const resolved = mappings.resolve([...new Set(body.tags)]);
        checkAccess(req, [...resolved.values()]);
        const groups = new Map<string, SeriesRequest[]>();
        for (const [external, m] of resolved) {
          const key = collectionOfMapping(m);
          let series = groups.get(key);
          if (!series) groups.set(key, (series = []));
          series.push({ tag: m.tag, pipeline, label: external });
        }
        const list: QueryGroup[] = [...groups].map(([collectionId, series]) => ({ collectionId, series }));
        for (const g of list) directory.get(req.grant, g.collectionId);
        if (body.format === 'binary' && body.time_format !== undefined) throw badRequest('body field time_format applies to CSV only (format csv, or Accept: text/csv)');
        const format = body.format === 'binary' ? 'binary1' : pointsFormat(req, body.format, body.time_format, 'body field');
        const ordered = isCsv(format) ? inRequestOrder(list, resolved.keys()) : list;
        return {
          contentType: resultContentType(format),
          stream: (out) => gateway.query(ordered, body.start, body.end, format, out, req.signal),
        };
      },
    },
  ];
}
