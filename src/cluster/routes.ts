// The cluster's routes (WIRE.md part 2 "Cluster"): GET /svcapi/cluster/status, POST
// /svcapi/shadow_write, and the node-to-node routes of replication, POST /svcapi/cluster/replicate
// (the leader ships log entries) and POST /svcapi/cluster/pull (a new leader takes what it lacks).
// shadow_write takes an admin token or a node credential; the node-to-node routes only the latter.

import fs from 'node:fs';
import path from 'node:path';
import type { TokenVerifier } from '../auth/api.js';
import type { TimeseriesSnapshots } from '../backup/api.js';
import type { Route } from '../host/plugin.js';
import type { Claims } from '../http/caller.js';
import { S } from '../http/compile.js';
import type { MetaStore } from '../meta/store.js';
import type { DeliveryMarking, DeliveryMarks } from '../notifications/api.js';
import type { PointWriter } from '../storage/api.js';
import { decodeFrames, encodeFrames } from '../../native-free-codecs/replication-frames.js';
import { badRequest, ServiceError, unauthorized } from '../../shared/errors.js';
import { isNodeCredential, verifyNodeCredential } from './node-auth.js';
import { toFrame } from './replicator.js';
import type { ClusterService } from './service.js';
import { dumpMetadata, snapshotDir } from './snapshot.js';

export interface ClusterRouteDeps {
  cluster: ClusterService;
  meta: MetaStore;
  writer: PointWriter;
  marks: DeliveryMarking;
  snapshots: TimeseriesSnapshots;
  tokens: TokenVerifier;
  /** The secret every node of a cluster shares (node credentials); null on a single node. */
  clusterSecret: Buffer | null;
  dataDir: string;
}

const WRITE_TYPES = ['application/json', 'application/msgpack', 'application/octet-stream'];
const PULL_MAX_ENTRIES = 5000;
const PULL_MAX_BYTES = 16 * 1024 * 1024;
/** The highest seq held per epoch: `{"<epoch>": seq}`. */
const POSITION = S.object({}, [], { additionalProperties: S.integer({ minimum: 0 }) });

/** A position `{"<epoch>": seq}` as sent; 400 for anything else. */
function checkedPosition(given: unknown): Record<string, number> {
  if (given === null || typeof given !== 'object' || Array.isArray(given)) throw badRequest('a position must be an object {"<epoch>": seq}');
  const position: Record<string, number> = {};
  for (const [epoch, seq] of Object.entries(given)) {
    if (!/^[0-9]{1,15}$/.test(epoch) || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) throw badRequest(`position: ${JSON.stringify(epoch)} must map an epoch to a whole seq`);
    position[epoch] = seq;
  }
  return position;
}

/** The X-Historian-Held header: what every node holds, as the leader knows it. */
function parsePosition(header: string): Record<string, number> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(header);
  } catch {
    throw badRequest('header x-historian-held must be a JSON position {"<epoch>": seq}');
  }
  return checkedPosition(parsed);
}

export function clusterRoutes(deps: ClusterRouteDeps): Route[] {
  const tag = 'Cluster';
  const { cluster, meta, writer } = deps;
  const header = (req: { headers: Readonly<Record<string, string>> }, name: string) => {
    const raw = req.headers[name];
    if (raw === undefined || !/^[0-9]{1,15}$/.test(raw.trim())) throw badRequest(`header ${name} must be a whole number`);
    return Number(raw.trim());
  };
  const secret = () => {
    const s = deps.clusterSecret;
    if (!s) throw new ServiceError('NOT_IMPLEMENTED', 'node credentials need cluster.enabled (and cluster.secretFile)');
    return s;
  };
  /** A node credential, or else the usual token check: shadow_write. */
  const nodeOrToken = (req: { headers: Readonly<Record<string, string>> }): Claims => {
    const auth = req.headers.authorization;
    if (isNodeCredential(auth)) return verifyNodeCredential(secret(), auth!);
    return deps.tokens.verifyHeader(auth);
  };
  const nodeOnly = (req: { headers: Readonly<Record<string, string>> }): Claims => {
    const auth = req.headers.authorization;
    if (!isNodeCredential(auth)) throw unauthorized('a node credential is required (these routes are for the nodes of a cluster)');
    return verifyNodeCredential(secret(), auth!);
  };
  const applier = () => {
    const a = cluster.applier;
    if (!a) throw new ServiceError('NOT_IMPLEMENTED', 'this node is not part of a cluster (cluster.enabled is false)');
    return a;
  };
  const answer = S.object({ held: S.integer(), error: { type: ['string', 'null'] }, position: POSITION });
  return [
    {
      method: 'GET', path: '/svcapi/cluster/status', auth: 'jwt', tag,
      summary: "This node's role, the leader, the epoch, and (on the leader) each peer's lag",
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
      authenticate: nodeOrToken,
      summary: 'Apply a write shipped by the leader (any node), idempotent by X-Historian-Epoch and X-Historian-Seq',
      description: 'The bodies of /svcapi/write; an admin token or a node credential. 409 when the epoch is older than the newest this node has seen (a former leader); with a token, 400 when it is above the newest term this node knows (0 on a single node): only a node may ship a newer one. A repeated (epoch, seq) answers as the first time and writes nothing.',
      rawBody: { contentTypes: WRITE_TYPES, description: 'points to write', bufferReused: true },
      maxBodyBytes: writer.maxBodyBytes,
      maxBodySetting: 'storage.requestRingBytes',
      responses: { 200: { description: '`{success: true, points}` or `{success: false, error}`', schema: S.object({ success: S.boolean(), points: S.integer(), error: S.string(), duplicate: S.boolean() }, ['success']) } },
      handler: async (req) => {
        const epoch = header(req, 'x-historian-epoch');
        const seq = header(req, 'x-historian-seq');
        if (seq < 1) throw badRequest('header x-historian-seq counts from 1');
        if (isNodeCredential(req.headers.authorization)) cluster.admitEpoch(epoch);
        else cluster.admitTokenEpoch(epoch, 'x-historian-epoch');
        // Its own (epoch, seq) space, apart from the replication log's: a shadow write is applied here only.
        const before = meta.shadowWrites.pointsOf(epoch, seq);
        if (before !== undefined) return { body: { success: true, points: before, duplicate: true } };
        const contentType = (req.headers['content-type'] ?? 'application/json').toLowerCase();
        const result = await writer.write(req.grant, req.rawBody!, contentType, 'sync', req.signal, { replicated: true });
        if (result.success) meta.shadowWrites.recordApplied(epoch, seq, result.points, Date.now());
        return { body: result };
      },
    },
    {
      method: 'POST', path: '/svcapi/cluster/replicate', auth: 'admin', tag, anyNode: true, maintenanceExempt: true,
      authenticate: nodeOnly,
      summary: 'Node to node: apply log entries the leader ships, in order (an empty body asks for the position)',
      description: 'Framed entries (u32 LE header length, JSON header, body). Answers how many of them (a prefix) this node now holds, and its position: the highest seq held per epoch. 409 when X-Historian-Epoch is older than the newest this node has seen.',
      rawBody: { contentTypes: ['application/octet-stream'], description: 'framed log entries' },
      maxBodyBytes: 64 * 1024 * 1024,
      maxBodySetting: 'the replication batch size (8 MiB a batch, at most one entry beyond it)',
      responses: { 200: { description: 'what is held', schema: answer } },
      handler: async (req) => {
        cluster.admitEpoch(header(req, 'x-historian-epoch'));
        if (cluster.isLeader()) throw new ServiceError('CONFLICT', 'this node leads; it takes no shipped entries');
        cluster.rememberSender(req.user!.sub.replace(/^node:/, ''));
        let frames;
        try {
          frames = decodeFrames(req.rawBody!);
        } catch (err) {
          throw badRequest(`replication body: ${(err as Error).message}`);
        }
        const { held, error } = frames.length > 0 ? await applier().apply(frames) : { held: 0, error: null };
        const heldByAll = req.headers['x-historian-held'];
        if (heldByAll !== undefined) cluster.trimHeld(parsePosition(heldByAll));
        return { body: { held, error, position: cluster.changes.position() } };
      },
    },
    {
      method: 'POST', path: '/svcapi/cluster/deliveries', auth: 'admin', tag,
      authenticate: nodeOnly,
      summary: "Node to node: a secondary's notification delivery marks, merged on the leader",
      description: 'Body `{ranges: [{recipient, ranges: [[lo, hi], ...]}], delivered: [[id, at_ms], ...]}`. Leader only (503 elsewhere).',
      body: S.object({
        ranges: S.array(S.object({ recipient: S.string({ minLength: 1, maxLength: 320 }), ranges: S.array(S.array(S.integer({ minimum: 0 }), { minItems: 2, maxItems: 2 }), { maxItems: 1000 }) }, ['recipient', 'ranges'], { additionalProperties: false }), { maxItems: 100_000 }),
        delivered: S.array(S.array(S.integer({ minimum: 0 }), { minItems: 2, maxItems: 2 }), { maxItems: 1_000_000 }),
      }, ['ranges', 'delivered'], { additionalProperties: false }),
      responses: { 204: { description: 'merged' } },
      handler: (req) => {
        applier();
        deps.marks.merge(req.body as DeliveryMarks);
        return { status: 204 };
      },
    },
    {
      method: 'POST', path: '/svcapi/cluster/resync', auth: 'admin', tag, anyNode: true,
      authenticate: nodeOnly,
      summary: 'Node to node: the leader asks this node to take a full snapshot of it (its log no longer holds what this node lacks)',
      responses: { 202: { description: 'started, or already running', schema: S.object({ started: S.boolean() }) } },
      handler: (req) => {
        cluster.admitEpoch(header(req, 'x-historian-epoch'));
        applier();
        return { status: 202, body: { started: cluster.startResync() } };
      },
    },
    {
      method: 'POST', path: '/svcapi/cluster/snapshot/metadata', auth: 'admin', tag, anyNode: true, mutates: false,
      authenticate: nodeOnly,
      summary: "Node to node: every replicated table's rows, with the log position they stand at",
      responses: { 200: { description: '`{position, tables: {<name>: {columns, rows}}}`', contentType: 'application/json' } },
      handler: () => {
        applier();
        return { body: Buffer.from(JSON.stringify(dumpMetadata(meta.wholeStore, cluster.changes))), contentType: 'application/json' };
      },
    },
    {
      method: 'POST', path: '/svcapi/cluster/snapshot/timeseries', auth: 'admin', tag, anyNode: true, mutates: false,
      authenticate: nodeOnly,
      summary: 'Node to node: a timeseries archive of this node (the backup format), with the log position read before its instant in X-Historian-Position',
      responses: { 200: { description: 'a tar: manifest.json and the collection files', contentType: 'application/x-tar' } },
      handler: async (req) => {
        applier();
        const position = cluster.changes.position(); // before the archive's instant: everything up to it is in the archive
        const dir = snapshotDir(deps.dataDir, 'out');
        try {
          const info = await deps.snapshots.snapshotTimeseries(dir, req.user!.sub);
          const file = path.join(dir, info.file_name);
          return {
            contentType: 'application/x-tar',
            headers: { 'x-historian-position': JSON.stringify(position) },
            stream: async (out) => {
              try {
                for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) {
                  if (out.aborted) return;
                  const full = out.write(chunk as Buffer);
                  if (full) await full;
                }
              } finally {
                fs.rmSync(dir, { recursive: true, force: true });
              }
            },
          };
        } catch (err) {
          fs.rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      },
    },
    {
      method: 'POST', path: '/svcapi/cluster/pull', auth: 'admin', tag, anyNode: true, mutates: false,
      authenticate: nodeOnly,
      summary: 'Node to node: the log entries this node holds that a node at the given position lacks',
      description: 'Body `{position: {<epoch>: <highest seq held>}, max_bytes}`; answers framed entries (empty when there is nothing more).',
      body: S.object({ position: POSITION, max_bytes: S.integer({ minimum: 1 }) }, ['position'], { additionalProperties: false }),
      responses: { 200: { description: 'framed log entries', contentType: 'application/octet-stream' } },
      handler: (req) => {
        applier();
        const body = req.body as { position: Record<string, unknown>; max_bytes?: number };
        const position = checkedPosition(body.position);
        const maxBytes = Math.min(PULL_MAX_BYTES, Math.max(1, body.max_bytes ?? PULL_MAX_BYTES));
        const entries = cluster.changes.missingFrom(position, PULL_MAX_ENTRIES, maxBytes);
        return { body: Buffer.from(encodeFrames(entries.map(toFrame))), contentType: 'application/octet-stream' };
      },
    },
  ];
}
