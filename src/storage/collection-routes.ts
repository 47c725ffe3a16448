// Collections, writes, sealing and buffer stats. Handlers stay thin: write bodies go to the
// shard gateway as bytes.

import type { ProcessLog } from '../jobs/api.js';
import type { Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { badRequest } from '../../shared/errors.js';
import type { WriteMode } from '../../shared/protocol.js';
import { collectionId as idOf, parseCollectionId } from '../../shared/scope-path.js';
import type { CollectionDirectory } from './directory.js';
import type { ShardGateway } from './gateway.js';
import { SCOPE_FIELDS as SCOPE_NAMES, SCOPE_PROPS } from './route-params.js';
import type { ShardPool } from './shards.js';

export interface CollectionRouteDeps {
  directory: CollectionDirectory;
  gateway: ShardGateway;
  shards: ShardPool;
  jobs: ProcessLog;
  flushIntervalMs: number;
  /** debug.crashRoute: mounts POST /svcapi/_debug/crash_shard. */
  crashRoute: boolean;
}

const COLLECTION: JsonSchema = {
  type: 'object',
  properties: { ...SCOPE_PROPS, createdAt: S.integer(), updatedAt: S.integer() },
  required: [...SCOPE_NAMES],
  additionalProperties: true,
};
const COLLECTION_BODY: JsonSchema = { type: 'object', properties: SCOPE_PROPS, required: [...SCOPE_NAMES], additionalProperties: true };
const OUTCOME: JsonSchema = S.object(
  { success: S.boolean(), message: S.string(), error: S.string(), points: S.integer(), collection: COLLECTION, sealedDays: S.integer() },
  ['success'],
);
const WRITE_TYPES = ['application/json', 'application/msgpack', 'application/octet-stream'];

export function collectionRoutes(deps: CollectionRouteDeps): Route[] {
  const { directory, gateway, shards, jobs } = deps;
  const tag = 'Time series';

  const writeRoute = (path: string, mode: WriteMode, summary: string, durability: string): Route => ({
    method: 'POST', path, auth: 'jwt', tag, summary,
    description: `${durability} Bodies (WIRE.md): tag keyed \`{organization?, site?, unit?, grid?, tags: {tag: [[ts, value], ...]}}\`, columnar \`{..., timestamps: [...], columns: {tag: [value|null, ...]}}\` (JSON or msgpack), or the binary columnar batch \`HSW1\` (application/octet-stream). All or nothing. A malformed body is 400; a well-formed one that cannot be accepted (unknown collection or tag, non-finite value, timestamp outside 0..2^53-1 or below storage.minTimestampMs, i.e. epoch seconds instead of milliseconds; points on more than storage.maxDaysPerWrite distinct UTC days per collection; more day files open in a collection than storage.maxUnsealedDaysPerCollection) is HTTP 200 with \`{success: false, error}\`. 503 when the shard is busy or the buffer is full; 507 when disk is low.`,
    rawBody: { contentTypes: WRITE_TYPES, description: 'points to write', bufferReused: true },
    maxBodyBytes: gateway.maxBodyBytes,
    maxBodySetting: 'storage.requestRingBytes',
    responses: { 200: { description: '`{success: true, points}` or `{success: false, error}`', schema: OUTCOME } },
    handler: async (req) => {
      const contentType = (req.headers['content-type'] ?? 'application/json').toLowerCase();
      // On a cluster with writeAck "one", /svcapi/write (the fsyncing route) also waits for a secondary.
      const result = await gateway.write(req.grant, req.rawBody!, contentType, mode, req.signal, mode === 'sync' ? { awaitReplica: true, route: req.route } : { route: req.route });
      return { body: result };
    },
  });

  const scopeFields = (source: Record<string, unknown>) => {
    const fields: Record<string, string> = {};
    for (const k of SCOPE_NAMES) if (typeof source[k] === 'string') fields[k] = source[k] as string;
    return fields;
  };
  const splitCollectionBody = (body: Record<string, unknown>) => {
    const scope = { organization: body.organization as string, site: body.site as string, unit: body.unit as string, grid: body.grid as string };
    parseCollectionId(idOf(scope)); // 400 for names that cannot be folders
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) if (!(SCOPE_NAMES as readonly string[]).includes(k) && k !== 'createdAt' && k !== 'updatedAt') extra[k] = v;
    return { scope, extra };
  };

  const debugRoutes: Route[] = !deps.crashRoute ? [] : [
    {
      method: 'POST', path: '/svcapi/_debug/crash_shard', auth: 'admin', tag: 'Debug',
      summary: 'Terminate one storage worker thread (mounted only with debug.crashRoute)',
      description: 'piscina starts a new worker, which recovers the shard from disk before taking tasks; requests in flight on that shard get 503.',
      body: S.object({ shard: S.integer({ minimum: 0 }) }, ['shard']),
      responses: { 200: { description: 'terminated', schema: OUTCOME } },
      handler: async (req) => {
        const { shard } = req.body as { shard: number };
        const target = shards.shards[shard];
        if (!target) throw badRequest(`shard must be below ${shards.shards.length}`);
        await target.terminateWorker();
        return { body: { success: true, message: `storage worker of shard ${shard} terminated` } };
      },
    },
  ];

  return [
    ...debugRoutes,
    {
      method: 'POST', path: '/svcapi/create_collection', auth: 'jwt', tag,
      summary: 'Create a collection for one org/site/unit/grid scope',
      description: 'Extra body fields are kept in the collection record. `{success: false, error}` (HTTP 200) when it already exists.',
      body: COLLECTION_BODY, responses: { 200: { description: 'outcome', schema: OUTCOME } },
      handler: async (req) => {
        const { scope, extra } = splitCollectionBody(req.body as Record<string, unknown>);
        if (directory.exists(idOf(scope))) return { body: { success: false, error: `collection ${idOf(scope)} already exists` } };
        const collection = await directory.create(req.grant, scope, extra);
        return { body: { success: true, message: `collection ${idOf(scope)} created`, collection } };
      },
    },
    {
      method: 'POST', path: '/svcapi/update_collection', auth: 'jwt', tag,
      summary: "Update a collection's extra fields (the scope names identify it)",
      body: COLLECTION_BODY, responses: { 200: { description: 'outcome', schema: OUTCOME } },
      handler: async (req) => {
        const { scope, extra } = splitCollectionBody(req.body as Record<string, unknown>);
        if (!directory.exists(idOf(scope))) return { body: { success: false, error: `collection ${idOf(scope)} not found` } };
        const collection = await directory.update(req.grant, scope, extra);
        return { body: { success: true, message: `collection ${idOf(scope)} updated`, collection } };
      },
    },
    {
      method: 'GET', path: '/svcapi/collection', auth: 'jwt', tag,
      summary: 'Collections found in the data dir (those the caller may reach)',
      responses: { 200: { description: 'collection records', schema: S.array(COLLECTION) } },
      handler: (req) => ({ body: directory.visible(req.grant) }),
    },
    {
      method: 'GET', path: '/svcapi/collection/{id}', auth: 'jwt', tag,
      summary: 'One collection; id is organization/site/unit/grid, URL-encoded',
      params: S.object({ id: S.string() }, ['id']),
      responses: { 200: { description: 'collection record', schema: COLLECTION }, 404: { description: 'no such collection' } },
      handler: (req) => ({ body: directory.get(req.grant, req.params.id) }),
    },
    writeRoute('/svcapi/write', 'sync', 'Write points; answered after they are fsynced', 'Durable: answered after the block is appended and fsynced (concurrent writers share fsyncs).'),
    writeRoute('/svcapi/write_fast', 'fast', 'Write points; answered once handed to the OS', 'Answered after the block is handed to the OS: survives a process kill, not a power loss of the last second.'),
    writeRoute('/svcapi/write_buffered', 'buffered', 'Write points into the shard buffer, flushed periodically', 'Answered once the points are in the shard memory buffer; flushed every storage.flushIntervalMs and at shutdown.'),
    {
      method: 'GET', path: '/svcapi/write_buffer_stats', auth: 'jwt', tag,
      summary: 'Write buffer and request ring state per shard',
      responses: { 200: { description: 'per-shard stats', schema: { type: 'object', additionalProperties: true } } },
      handler: async () => {
        const stats = await gateway.bufferStats();
        return { body: { shards: stats, pendingPoints: stats.reduce((n, s) => n + s.pendingPoints, 0), flushIntervalMs: deps.flushIntervalMs } };
      },
    },
    {
      method: 'POST', path: '/svcapi/seal_now', auth: 'jwt', tag, mutates: false,
      summary: 'Seal finished days now (body may name one collection by id or scope fields)',
      body: { type: 'object', properties: { collection: S.string(), ...SCOPE_PROPS }, additionalProperties: true },
      responses: { 200: { description: 'outcome', schema: OUTCOME } },
      handler: async (req) => {
        const body = req.body as Record<string, unknown>;
        const fields = scopeFields(body);
        let id: string | null = typeof body.collection === 'string' ? body.collection : null;
        if (!id && Object.keys(fields).length > 0) {
          for (const k of SCOPE_NAMES) if (!fields[k]) throw badRequest(`missing body field '${k}' (name all four, a collection id, or nothing to seal everything)`);
          id = idOf(fields as Record<(typeof SCOPE_NAMES)[number], string>);
        }
        const job = jobs.begin('seal', `seal_now of ${id ?? 'every collection you can reach'} by ${req.user!.sub}`);
        let sealedDays: number;
        try {
          sealedDays = await gateway.seal(req.grant, id);
        } catch (err) {
          job.fail((err as Error).message);
          throw err;
        }
        job.done(`sealed ${sealedDays} day file(s)`);
        return { body: { success: true, message: `sealed ${sealedDays} day file(s)`, sealedDays } };
      },
    },
    {
      method: 'GET', path: '/svcapi/me/details', auth: 'jwt', tag: 'Authentication',
      summary: "Whether the caller's unit has a configured collection",
      responses: { 200: { description: 'details', schema: S.object({ unitConfigured: S.boolean() }, ['unitConfigured']) } },
      handler: (req) => ({ body: { unitConfigured: directory.unitConfigured(req.grant) } }),
    },
  ];
}
