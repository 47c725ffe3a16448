// GET /svcapi/cluster/status and POST /svcapi/shadow_write (WIRE.md part 2 "Cluster").

import { S } from '../http/compile.js';
import { badRequest } from '../http/errors.js';
import type { RouteDef } from '../http/route.js';
import { AccessGrant } from '../meta/access-grant.js';
import type { ServiceContext } from './context.js';

const WRITE_TYPES = ['application/json', 'application/msgpack', 'application/octet-stream'];

export function clusterRoutes(ctx: ServiceContext): RouteDef[] {
  const tag = 'Cluster';
  const cluster = ctx.cluster;
  const applied = ctx.db.prepare('SELECT points FROM shadow_writes_applied WHERE epoch = ? AND seq = ?').pluck();
  const record = ctx.db.prepare('INSERT OR IGNORE INTO shadow_writes_applied (epoch, seq, points, applied_ms) VALUES (?, ?, ?, ?)');
  const header = (req: { headers: Readonly<Record<string, string>> }, name: string) => {
    const raw = req.headers[name];
    if (raw === undefined || !/^[0-9]{1,15}$/.test(raw.trim())) throw badRequest(`header ${name} must be a whole number`);
    return Number(raw.trim());
  };
  return [
    {
      method: 'GET', path: '/svcapi/cluster/status', auth: 'jwt', tag,
      summary: "This node's role, the leader and the epoch",
      responses: {
        200: {
          description: 'status',
          schema: S.object({
            node_id: S.string(), role: S.string(), leader: { type: ['string', 'null'] }, epoch: S.integer(),
            peers: S.array(S.object({ node_id: S.string(), url: S.string(), lag_ms: { type: ['integer', 'null'] }, queued_bytes: S.integer() })),
          }),
        },
      },
      handler: () => ({ body: cluster.status() }),
    },
    {
      method: 'POST', path: '/svcapi/shadow_write', auth: 'admin', tag, anyNode: true,
      summary: 'Apply a write shipped by the leader (any node), idempotent by X-Historian-Epoch and X-Historian-Seq',
      description: 'The bodies of /svcapi/write. 409 when the epoch is older than the newest this node has seen (a former leader); a repeated (epoch, seq) answers as the first time and writes nothing.',
      rawBody: { contentTypes: WRITE_TYPES, description: 'points to write', bufferReused: true },
      maxBodyBytes: ctx.storage.maxBodyBytes,
      maxBodySetting: 'storage.requestRingBytes',
      responses: { 200: { description: '`{success: true, points}` or `{success: false, error}`', schema: S.object({ success: S.boolean(), points: S.integer(), error: S.string(), duplicate: S.boolean() }, ['success']) } },
      handler: async (req) => {
        const epoch = header(req, 'x-historian-epoch');
        const seq = header(req, 'x-historian-seq');
        if (seq < 1) throw badRequest('header x-historian-seq counts from 1');
        cluster.admitEpoch(epoch);
        const before = applied.get(epoch, seq) as number | undefined;
        if (before !== undefined) return { body: { success: true, points: before, duplicate: true } };
        const contentType = (req.headers['content-type'] ?? 'application/json').toLowerCase();
        const result = await ctx.storage.write(AccessGrant.of(ctx.db, ctx.entities.registry, req.user!), req.rawBody!, contentType, 'sync', req.signal);
        if (result.success) record.run(epoch, seq, result.points, Date.now());
        return { body: result };
      },
    },
  ];
}
