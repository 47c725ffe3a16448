/**
 * The cluster (WIRE.md part 2 "Cluster", issue 19) on one machine: a real etcd and our service as
 * 2 nodes (`--nodes 3` for three) on loopback, against a single node. Prints one markdown table.
 *
 *   npm run bench:cluster -- [--quick] [--nodes 2] [--encoding hsw1|json] [--ttls 2,10]
 *                            [--parts single,local,one,failover,vm] [--marker-ms 100] [--poll-ms 5]
 *                            [--trickle-seconds 5] [--days 8] [--tags 100] [--points 86400] [--connections 4]
 *                            [--tags-per-request 10] [--points-per-request 1000] [--keep] [--wait-idle 120]
 *
 * - Ingest: `--days` days (8; `--quick` 10) of the data set of dataset.ts (100 tags × 86,400
 *   points a day; `--quick` 10 × 8,640) through the fsyncing `/svcapi/write` of the leader, HSW1
 *   (`--encoding json`: tag-keyed JSON), every body built before the clock, `--connections`
 *   requests in flight: into a single node (`cluster.enabled` false), then into a fresh cluster
 *   with `cluster.writeAck` "local", then into one with "one"; points/s as a ratio to the single
 *   node. Afterwards every node counts the points back (`count` per day), `seal_now` runs on
 *   every node, the nodes stop, and the collection's folder is measured on the leader and a
 *   secondary.
 * - Replication lag, seen from outside: while the ingest runs, a marker point (its own
 *   collection and tag, value = a counter) is written to the leader every `--marker-ms`; each
 *   secondary is polled with `lastlist` every `--poll-ms` until it answers the marker's value;
 *   lag = from the leader's 200 to the reply of the first poll that sees it. Meanwhile
 *   `GET /svcapi/cluster/status` on the leader every 100 ms: `peers[].lag_ms` and
 *   `queued_bytes` as the leader reports them. Then the time until the leader lists every peer
 *   with `lag_ms` 0 and nothing queued (drain).
 * - Failover, for each `--ttls` value of `cluster.electionTtlSeconds` (10 is the default), on a
 *   fresh cluster with writeAck "one": a write of one point every 20 ms (not waiting for the
 *   previous answer) to the node the client believes leads, following the `leader` of a 503 and
 *   its `x-historian-leader` header, trying the next node after a connection error or a 503
 *   that names no leader; after `--trickle-seconds` the leader is killed (SIGKILL). Reported:
 *   ms from the kill to the first 200 from another node, against the goal of at most 3 × TTL,
 *   and whether every write answered 200 before the kill is stored on the new leader (read back
 *   with `fast_query`).
 * - Peak RSS (VmHWM over the process's life) of the leader and a secondary; bytes on disk per
 *   point of the collection after the nodes stopped.
 * - VictoriaMetrics single-node (when /usr/bin/victoria-metrics is there) ingesting the same
 *   data set through `/api/v1/import` as a reference: it answers before anything is fsynced.
 */

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchNode, ETCD_BIN, leaderNamed, nodeByUrl, startCluster, waitInSync, waitUntil, type BenchCluster, type WriteAck } from './cluster-nodes.js';
import { Dataset, vmImportLines, type Chunk, type Scope } from './dataset.js';
import { countStoredPoints, createCollection, collectionDir, fastQueryUrl, ingestOurs, scopeFor, sealNow, type Encoding } from './ours.js';
import { expectStatus, generatedTls, startVictoriaMetrics, VM_BIN } from './peer-servers.js';
import {
  BenchError, commandLine, describeReply, ingest, int, machine, markdownTable, mib, ms, num, otherLoad, percentiles, Phases, positiveIntOption, sizeOptions, sleep, type IngestResult,
} from './runner.js';
import { cpuMeter, diskUsage, json, startOurService, tempDir, waitForQuiet, type DiskUsage, type HttpsClient, type Reply } from './service.js';

const PARTS = ['single', 'local', 'one', 'failover', 'vm'] as const;
type Part = (typeof PARTS)[number];

const { sizes, values } = sizeOptions({
  nodes: { type: 'string' },
  encoding: { type: 'string' },
  ttls: { type: 'string' },
  parts: { type: 'string' },
  'marker-ms': { type: 'string' },
  'poll-ms': { type: 'string' },
  'trickle-seconds': { type: 'string' },
  days: { type: 'string' },
});
const { connections } = sizes;
const nodeCount = positiveIntOption(values, 'nodes', 2);
if (nodeCount < 2) throw new Error('--nodes must be at least 2');
const encoding = String(values.encoding ?? 'hsw1') as Encoding;
if (encoding !== 'hsw1' && encoding !== 'json') throw new Error(`--encoding takes hsw1 or json, got ${encoding}`);
const ttls = String(values.ttls ?? '2,10').split(',').map((t) => Number(t.trim()));
for (const t of ttls) if (!Number.isInteger(t) || t <= 0) throw new Error(`--ttls takes a comma list of positive integers (seconds), got ${String(values.ttls)}`);
const parts = new Set(String(values.parts ?? PARTS.join(',')).split(',').map((p) => p.trim()));
for (const p of parts) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--parts takes a comma list of ${PARTS.join(', ')}; got "${p}"`);
const selected = (p: Part) => parts.has(p);
const markerMs = positiveIntOption(values, 'marker-ms', 100);
const pollMs = positiveIntOption(values, 'poll-ms', 5);
const trickleSeconds = positiveIntOption(values, 'trickle-seconds', sizes.quick ? 2 : 5);
const TRICKLE_MS = 20;
const TRICKLE_SOCKETS = 64;
const STATUS_MS = 100;

if (!fs.existsSync(ETCD_BIN) && (selected('local') || selected('one') || selected('failover'))) {
  process.stderr.write(`missing ${ETCD_BIN}; install it first:\n  apt-get install -y etcd-server\n`);
  process.exit(1);
}

// One day of the data set goes into a single node in about a second here: too short a window
// for a steady rate and a few hundred lag markers, so the ingest writes `--days` days.
const days = positiveIntOption(values, 'days', sizes.quick ? 10 : 8);
const dataset = new Dataset({ ...sizes, points: sizes.points * days });
const dataScope = scopeFor('boiler-cluster');
/** Markers and the failover trickle each have a collection of their own, so the data set's folder holds the data set only. */
const markerScope = scopeFor('cluster-marker');
const trickleScope = scopeFor('cluster-trickle');
const MARKER_TAG = 'LAG-MARKER';
const TRICKLE_TAG = 'TRICKLE';
const shape = (d: Dataset) => `${int(d.options.tags)} tags × ${int(d.options.points)} points (${days} days at 1 s)`;
const enc = encodeURIComponent;
const scopeQuery = (s: Scope) => `organization=${enc(s.organization)}&site=${enc(s.site)}&unit=${enc(s.unit)}&grid=${enc(s.grid)}`;
const contentType = encoding === 'json' ? 'application/json' : 'application/octet-stream';

const rows: string[][] = [];
const phases = new Phases();
/** Per phase (its name in `phases`), the last lines of the servers it started. */
const logTails = new Map<string, () => string[]>();

// ---- requests with a deadline -------------------------------------------------------------

/** `client.request` that rejects after `timeoutMs` (the request itself goes when the client closes). */
function requestWithin(client: HttpsClient, timeoutMs: number, method: string, urlPath: string, body?: string | Uint8Array, headers?: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${method} ${urlPath}: no answer in ${timeoutMs} ms`)), timeoutMs);
    client.request(method, urlPath, body, headers).then(
      (reply) => {
        clearTimeout(timer);
        resolve(reply);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** One point `[ts, value]` of `tag`, tag-keyed JSON. */
const onePoint = (scope: Scope, tag: string, ts: number, value: number) => JSON.stringify({ ...scope, tags: { [tag]: [[ts, value]] } });

// ---- the single node ----------------------------------------------------------------------

interface NodeFigures {
  rss: number;
  disk: DiskUsage | null;
  dataDir: DiskUsage | null;
  points: number;
}

interface IngestRun {
  label: string;
  result: IngestResult;
  leader: NodeFigures;
  /** Empty for the single node. */
  secondaries: Array<NodeFigures & { nodeId: string }>;
  lag?: LagFigures;
  status?: StatusFigures;
  drainMs?: number;
}

function ingestInto(label: string, client: HttpsClient): Promise<IngestResult> {
  return ingestOurs({ label, client, connections, dataset, scope: dataScope, encoding, route: '/svcapi/write', encodeWhileSending: sizes.encodeWhileSending });
}

async function countBack(client: HttpsClient, what: string): Promise<number> {
  const counts = await countStoredPoints(client, dataScope, dataset.tagNames, dataset.startMs, dataset.endMs);
  const stored = [...counts.values()].reduce((a, b) => a + b, 0);
  if (stored !== dataset.totalPoints) throw new BenchError(`${what}: ${stored} points of the data set stored, ${dataset.totalPoints} sent`);
  return stored;
}

async function singleNode(): Promise<IngestRun> {
  await waitForQuiet(sizes.waitIdle);
  process.stderr.write('single node (cluster.enabled false)\n');
  const service = await startOurService({});
  logTails.set('single node', () => service.process.logTail(30));
  try {
    const admin = service.client(1);
    await createCollection(admin, dataScope);
    const result = await ingestInto('single node /svcapi/write', service.client(connections));
    const points = await countBack(admin, 'single node');
    await sealNow(admin);
    const rss = service.process.peakRssBytes();
    const exit = await service.stop();
    if (exit.code !== 0) phases.failures.push({ phase: 'single node', error: new Error(`service exited with ${exit.code ?? exit.signal}`) });
    return { label: 'single node', result, leader: { rss, disk: diskUsage(collectionDir(service, dataScope)), dataDir: diskUsage(service.dataDir), points }, secondaries: [] };
  } finally {
    if (sizes.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
    else await service.dispose();
  }
}

// ---- replication lag, from outside --------------------------------------------------------

interface LagFigures {
  /** From the leader's 200 to the first lastlist reply on a secondary showing the marker, every secondary's samples together. */
  lags: number[];
  perSecondaryMax: Array<{ nodeId: string; max: number }>;
  markers: number;
  /** Markers some secondary had not shown within the time limit. */
  missed: number;
  /** Round trips of the lastlist polls on the secondaries. */
  pollMs: number[];
  /** Time the leader took to answer a marker write (under the ingest load). */
  writeMs: number[];
  /** Why the probe stopped early, if it did (the ingest goes on). */
  error: string;
}

const MARKER_LIMIT_MS = sizes.quick ? 30_000 : 120_000;

/** Markers to the leader every `markerMs`, each polled on every secondary until it shows. */
function startLagProbe(leader: BenchNode, secondaries: BenchNode[]): { stop(): Promise<LagFigures> } {
  const writer = leader.client(1);
  const pollers = secondaries.map((node) => ({ node, client: node.client(1), lags: [] as number[] }));
  const figures: LagFigures = { lags: [], perSecondaryMax: [], markers: 0, missed: 0, pollMs: [], writeMs: [], error: '' };
  const lastUrl = `/svcapi/lastlist?tags=${enc(MARKER_TAG)}&${scopeQuery(markerScope)}`;
  let running = true;
  const loop = (async () => {
    for (let k = 1; running; k++) {
      const body = onePoint(markerScope, MARKER_TAG, dataset.startMs + k * 1000, k);
      let reply: Reply;
      for (let attempt = 0; ; attempt++) {
        reply = await writer.request('POST', '/svcapi/write', body, { 'content-type': 'application/json' });
        if (reply.status !== 503 || attempt >= 100) break;
        await sleep(10);
      }
      if (reply.status !== 200 || json(reply).success !== true) throw describeReply(`marker ${k}: POST /svcapi/write on the leader`, reply);
      const acked = performance.now();
      figures.writeMs.push(reply.ms);
      figures.markers++;
      let missed = false;
      await Promise.all(
        pollers.map(async (p) => {
          for (;;) {
            const seen = await p.client.get(lastUrl);
            figures.pollMs.push(seen.ms);
            // 404: the marker collection itself has not arrived yet.
            if (seen.status !== 200 && seen.status !== 404) throw describeReply(`marker ${k}: GET /svcapi/lastlist on ${p.node.nodeId}`, seen);
            const last = seen.status === 200 ? (json(seen) as Record<string, [number, number] | null>)[MARKER_TAG] : null;
            const now = performance.now();
            if (last && last[1] >= k) {
              p.lags.push(now - acked);
              return;
            }
            if (now - acked > MARKER_LIMIT_MS) {
              missed = true;
              return;
            }
            await sleep(pollMs);
          }
        }),
      );
      if (missed) figures.missed++;
      if (running) await sleep(markerMs);
    }
  })().catch((err: unknown) => {
    figures.error = err instanceof BenchError ? [err.message, ...err.details].join('; ') : err instanceof Error ? err.message : String(err);
    process.stderr.write(`  lag probe stopped: ${figures.error}\n`);
  });
  return {
    async stop() {
      running = false;
      await loop;
      for (const p of pollers) {
        figures.lags.push(...p.lags);
        figures.perSecondaryMax.push({ nodeId: p.node.nodeId, max: percentiles(p.lags).max });
      }
      return figures;
    },
  };
}

interface StatusFigures {
  samples: number;
  /** Every peer's `lag_ms` of every sample (nulls left out). */
  lagMs: number[];
  nullLags: number;
  maxQueuedBytes: number;
  failures: string[];
}

/** `GET /svcapi/cluster/status` on the leader every STATUS_MS. */
function startStatusSampler(leader: BenchNode): { stop(): Promise<StatusFigures> } {
  const client = leader.client(1);
  const figures: StatusFigures = { samples: 0, lagMs: [], nullLags: 0, maxQueuedBytes: 0, failures: [] };
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const status = await leader.status(client);
        figures.samples++;
        for (const peer of status.peers) {
          if (typeof peer.lag_ms === 'number') figures.lagMs.push(peer.lag_ms);
          else figures.nullLags++;
          figures.maxQueuedBytes = Math.max(figures.maxQueuedBytes, peer.queued_bytes);
        }
      } catch (err) {
        if (figures.failures.length < 5) figures.failures.push(err instanceof Error ? err.message : String(err));
      }
      await sleep(Math.max(0, STATUS_MS - (performance.now() - started)));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return figures;
    },
  };
}

// ---- ingest into a cluster ----------------------------------------------------------------

function noteCluster(phase: string, cluster: BenchCluster): void {
  logTails.set(phase, () => cluster.nodes.flatMap((node) => [`[${node.nodeId}]`, ...node.logTail(15)]));
}

const ingestPhase = (writeAck: WriteAck) => `cluster writeAck ${writeAck}`;
const failoverPhase = (ttl: number) => `failover, electionTtlSeconds ${ttl}`;

async function clusterIngest(writeAck: WriteAck): Promise<IngestRun> {
  const label = `cluster writeAck "${writeAck}"`;
  await waitForQuiet(sizes.waitIdle);
  process.stderr.write(`${label}: starting etcd and ${nodeCount} nodes\n`);
  const cluster = await startCluster({ nodes: nodeCount, writeAck });
  noteCluster(ingestPhase(writeAck), cluster);
  try {
    const [leader, ...secondaries] = cluster.nodes;
    const admin = leader.client(1);
    await createCollection(admin, dataScope);
    await createCollection(admin, markerScope);
    await waitInSync(leader, admin, secondaries.length, 60_000);
    const lagProbe = startLagProbe(leader, secondaries);
    const sampler = startStatusSampler(leader);
    let result: IngestResult;
    let lag: LagFigures;
    let status: StatusFigures;
    try {
      result = await ingestInto(`${label} /svcapi/write`, leader.client(connections));
    } finally {
      // Both loops end with their current round; a failed ingest still stops them.
      [lag, status] = await Promise.all([lagProbe.stop(), sampler.stop()]);
    }
    process.stderr.write(`  ${label}: waiting until every secondary has caught up\n`);
    const drainMs = await waitInSync(leader, admin, secondaries.length, 600_000);
    const counts = new Map<BenchNode, number>();
    for (const node of cluster.nodes) {
      // A node short of points fails the run but keeps the figures measured so far.
      const client = node.client(1);
      counts.set(node, (await phases.run(`${ingestPhase(writeAck)}: count on ${node.nodeId}`, () => countBack(client, `${label}, node ${node.nodeId}`))) ?? NaN);
      await phases.run(`${ingestPhase(writeAck)}: seal_now on ${node.nodeId}`, () => sealNow(client));
    }
    const rss = new Map(cluster.nodes.map((node) => [node, node.peakRssBytes()]));
    const problems = await cluster.stop();
    for (const problem of problems) phases.failures.push({ phase: ingestPhase(writeAck), error: new Error(`shutdown: ${problem}`) });
    const figures = (node: BenchNode): NodeFigures => ({
      rss: rss.get(node)!,
      disk: diskUsage(path.join(node.dataDir, 'ts', dataScope.organization, dataScope.site, dataScope.unit, dataScope.grid)),
      dataDir: diskUsage(node.dataDir),
      points: counts.get(node)!,
    });
    return { label, result, leader: figures(leader), secondaries: secondaries.map((node) => ({ nodeId: node.nodeId, ...figures(node) })), lag, status, drainMs };
  } finally {
    await cluster.dispose(sizes.keep);
  }
}

// ---- failover -----------------------------------------------------------------------------

interface TrickleWrite {
  seq: number;
  node: BenchNode;
  sentAt: number;
  repliedAt: number;
  /** HTTP status, or 0 for a connection error or timeout. */
  status: number;
  /** A 503's error text, or the connection error. */
  error: string;
}

/** 200 only for `{success: true}`; a 200 with `{success: false}` is -1. The error text of anything else. */
function outcome(reply: Reply): { status: number; error: string } {
  let body: { success?: unknown; error?: unknown } = {};
  try {
    body = json(reply) as typeof body;
  } catch {
    return { status: reply.status === 200 ? -1 : reply.status, error: reply.body.subarray(0, 100).toString() };
  }
  if (reply.status === 200) return body.success === true ? { status: 200, error: '' } : { status: -1, error: String(body.error ?? 'success false') };
  return { status: reply.status, error: String(body.error ?? '') };
}

/** A write of one point every TRICKLE_MS to the node believed to lead, not waiting for earlier answers. */
class Trickle {
  readonly writes: TrickleWrite[] = [];
  private believed: BenchNode;
  private seq = 0;
  private outstanding = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly clients: Map<BenchNode, HttpsClient>;
  private drained: (() => void) | null = null;
  /** Called with every answered write. */
  onWrite: (w: TrickleWrite) => void = () => {};

  constructor(private readonly nodes: BenchNode[], leader: BenchNode) {
    this.believed = leader;
    this.clients = new Map(nodes.map((node) => [node, node.client(TRICKLE_SOCKETS)]));
    this.timer = setInterval(() => this.send(), TRICKLE_MS);
  }

  private send(): void {
    // No more in flight than the client has sockets: a write queued in the client would count its
    // wait as the server's (under writeAck "one" with no secondary each answer takes ackTimeoutMs).
    if (this.outstanding >= TRICKLE_SOCKETS) return;
    const node = this.believed;
    const seq = ++this.seq;
    const sentAt = performance.now();
    this.outstanding++;
    const body = onePoint(trickleScope, TRICKLE_TAG, dataset.startMs + seq * 1000, seq);
    requestWithin(this.clients.get(node)!, 30_000, 'POST', '/svcapi/write', body, { 'content-type': 'application/json' }).then(
      (reply) => {
        const { status, error } = outcome(reply);
        this.record({ seq, node, sentAt, repliedAt: performance.now(), status, error });
        if (reply.status === 503) {
          const named = nodeByUrl(this.nodes, leaderNamed(reply));
          if (named && named !== node) this.follow(node, named);
          else if (!named && /not the leader/.test(error)) this.next(node);
        }
      },
      (err: unknown) => {
        this.record({ seq, node, sentAt, repliedAt: performance.now(), status: 0, error: err instanceof Error ? err.message : String(err) });
        this.next(node);
      },
    );
  }

  private record(write: TrickleWrite): void {
    this.writes.push(write);
    this.outstanding--;
    this.onWrite(write);
    if (this.outstanding === 0) this.drained?.();
  }

  /** Moves on only when `from` is still the one believed (answers to older writes arrive late). */
  private follow(from: BenchNode, to: BenchNode): void {
    if (this.believed === from) this.believed = to;
  }

  private next(from: BenchNode): void {
    this.follow(from, this.nodes[(this.nodes.indexOf(from) + 1) % this.nodes.length]);
  }

  /** Stops sending and waits (at most `timeoutMs`) for the answers still out. */
  async stop(timeoutMs: number): Promise<void> {
    clearInterval(this.timer);
    if (this.outstanding > 0) {
      await Promise.race([new Promise<void>((resolve) => (this.drained = resolve)), sleep(timeoutMs)]);
    }
  }
}

interface FailoverRun {
  ttl: number;
  killed: string;
  /** From the kill to the first 200 from another node; NaN when none came. */
  firstOkMs: number;
  newLeader: string | null;
  /** Writes sent after the kill until that 200, by outcome. */
  outage: { connectionErrors: number; notLeader: number; other503: number; otherStatus: number; errorsByNode: string };
  /** The first answer after the kill from another node that was neither a connection error nor "not the leader" (the new leader acting, whatever it answered). */
  firstServed: { sentMs: number; ms: number; node: string; status: number; error: string } | null;
  /** Writes answered 200 before the kill, and how many of them the new leader has. */
  ackedBeforeKill: number;
  presentOnNewLeader: number;
  /** 200s from the new leader after its first one, until the trickle stopped. */
  okAfter: number;
  /** The new leader's peers[] from its status once the trickle stopped. */
  newLeaderPeers: string;
  otherCores: number;
}

async function failover(ttl: number): Promise<FailoverRun> {
  const label = failoverPhase(ttl);
  await waitForQuiet(sizes.waitIdle);
  process.stderr.write(`${label}: starting etcd and ${nodeCount} nodes (writeAck "one")\n`);
  const cluster = await startCluster({ nodes: nodeCount, writeAck: 'one', electionTtlSeconds: ttl });
  noteCluster(label, cluster);
  try {
    const [leader, ...others] = cluster.nodes;
    const admin = leader.client(1);
    await createCollection(admin, trickleScope);
    await waitInSync(leader, admin, others.length, 60_000);
    const other = cpuMeter();
    const trickle = new Trickle(cluster.nodes, leader);
    let killAt = Infinity;
    /** The first 200 from another node after the kill. */
    let found: TrickleWrite | null = null;
    /** The first answer from another node after the kill that was not a refusal, whatever it was. */
    let served: TrickleWrite | null = null;
    trickle.onWrite = (w) => {
      if (w.node === leader || w.sentAt < killAt || w.status === 0 || (w.status === 503 && /not the leader/.test(w.error))) return;
      served ??= w;
      if (w.status === 200) found ??= w;
    };
    process.stderr.write(`  ${label}: one write every ${TRICKLE_MS} ms for ${trickleSeconds} s, then kill -9 of ${leader.nodeId}\n`);
    await sleep(trickleSeconds * 1000);
    killAt = performance.now();
    await leader.kill();
    // Until a 200 from another node; or, once another node acts as leader without answering 200
    // (writeAck "one" with no secondary left: 503 after ackTimeoutMs), 2 s more; or the limit.
    const limitMs = 6 * ttl * 1000 + 30_000;
    const sawServed = (): TrickleWrite | null => served;
    await waitUntil('', limitMs, async () => {
      const s = sawServed();
      return found !== null || (s !== null && performance.now() - s.repliedAt > 2000);
    }, 50).catch(() => {});
    const ok = found as TrickleWrite | null;
    const first = served as TrickleWrite | null;
    if (ok) {
      process.stderr.write(`  ${label}: ${ok.node.nodeId} answered 200 ${ms(ok.repliedAt - killAt)} after the kill\n`);
      await sleep(1000); // the new leader keeps taking writes
    } else if (first) {
      process.stderr.write(`  ${label}: no 200 from another node; ${first.node.nodeId} took a write sent ${ms(first.sentAt - killAt)} after the kill (answered ${first.status}: ${first.error})\n`);
    } else {
      process.stderr.write(`  ${label}: no other node took a write within ${limitMs / 1000} s of the kill\n`);
    }
    await trickle.stop(15_000);
    const otherCores = other();
    const newLeader = ok?.node ?? first?.node ?? null;
    const acked = trickle.writes.filter((w) => w.status === 200 && w.repliedAt < killAt);
    let present = NaN;
    let newLeaderPeers = '';
    if (newLeader) {
      const client = newLeader.client(1);
      newLeaderPeers = JSON.stringify((await newLeader.status(client)).peers);
      const reply = await client.get(fastQueryUrl('/svcapi/fast_query', trickleScope, [TRICKLE_TAG], dataset.startMs, dataset.startMs + 1_000_000_000));
      if (reply.status !== 200) throw describeReply(`GET /svcapi/fast_query (${TRICKLE_TAG}) on the new leader ${newLeader.nodeId}`, reply);
      const stored = new Set(((json(reply) as Record<string, Array<[number, number]> | undefined>)[TRICKLE_TAG] ?? []).map(([ts]) => ts));
      present = acked.filter((w) => stored.has(dataset.startMs + w.seq * 1000)).length;
    }
    const until = ok ?? first;
    const outageWrites = trickle.writes.filter((w) => w.sentAt >= killAt && (!until || w.repliedAt <= until.repliedAt));
    return {
      ttl,
      killed: leader.nodeId,
      firstOkMs: ok ? ok.repliedAt - killAt : NaN,
      newLeader: newLeader?.nodeId ?? null,
      outage: {
        connectionErrors: outageWrites.filter((w) => w.status === 0).length,
        notLeader: outageWrites.filter((w) => w.status === 503 && /not the leader/.test(w.error)).length,
        other503: outageWrites.filter((w) => w.status === 503 && !/not the leader/.test(w.error)).length,
        otherStatus: outageWrites.filter((w) => w.status !== 0 && w.status !== 503 && w !== ok).length,
        errorsByNode: cluster.nodes
          .map((node) => {
            const errors = outageWrites.filter((w) => w.status === 0 && w.node === node);
            return errors.length ? `${node.nodeId} ${errors.length} (first: ${errors[0].error})` : '';
          })
          .filter(Boolean)
          .join(', '),
      },
      firstServed: first ? { sentMs: first.sentAt - killAt, ms: first.repliedAt - killAt, node: first.node.nodeId, status: first.status, error: first.error } : null,
      ackedBeforeKill: acked.length,
      presentOnNewLeader: present,
      newLeaderPeers,
      okAfter: ok ? trickle.writes.filter((w) => w.status === 200 && w.node === ok.node && w.repliedAt > ok.repliedAt).length : 0,
      otherCores,
    };
  } finally {
    await cluster.dispose(sizes.keep);
  }
}

// ---- VictoriaMetrics ----------------------------------------------------------------------

async function victoriaMetrics(): Promise<{ result: IngestResult; rss: number; version: string }> {
  await waitForQuiet(sizes.waitIdle);
  process.stderr.write('VictoriaMetrics single-node\n');
  const tlsDir = tempDir('bench-cluster-vm-tls-');
  const server = await startVictoriaMetrics(generatedTls(tlsDir), connections);
  logTails.set('VictoriaMetrics', () => server.proc.logTail(15));
  try {
    const result = await ingest<Chunk>({
      label: 'VictoriaMetrics /api/v1/import',
      connections,
      chunks: dataset.chunks(),
      totalPoints: dataset.totalPoints,
      encodeWhileSending: sizes.encodeWhileSending,
      encode: (chunk) => ({ bytes: vmImportLines(dataScope, chunk), points: chunk.points }),
      send: (body) => server.client.request('POST', '/api/v1/import', body.bytes, { 'content-type': 'application/json' }),
      check: expectStatus('POST /api/v1/import', 204),
    });
    return { result, rss: server.proc.peakRssBytes(), version: server.version };
  } finally {
    await server.stop();
    for (const p of [...server.paths, tlsDir]) fs.rmSync(p, { recursive: true, force: true });
  }
}

// ---- the run ------------------------------------------------------------------------------

process.stderr.write(`data set ${shape(dataset)} = ${int(dataset.totalPoints)} points, ${encoding} over /svcapi/write, ${connections} connections, ${nodeCount} nodes\n`);
const single = selected('single') ? await phases.run('single node', singleNode) : null;
const local = selected('local') ? await phases.run(ingestPhase('local'), () => clusterIngest('local')) : null;
const one = selected('one') ? await phases.run(ingestPhase('one'), () => clusterIngest('one')) : null;
const failovers: Array<{ ttl: number; run: FailoverRun | null }> = [];
if (selected('failover')) for (const ttl of ttls) failovers.push({ ttl, run: await phases.run(failoverPhase(ttl), () => failover(ttl)) });
const vmAvailable = fs.existsSync(VM_BIN);
const vm = selected('vm') && vmAvailable ? await phases.run('VictoriaMetrics', victoriaMetrics) : null;

// ---- the table ----------------------------------------------------------------------------

const pts = (n: number) => `${int(n)} points/s`;
const ratio = (r: IngestRun | null) => (r && single ? ` (${num(r.result.pointsPerSecond / single.result.pointsPerSecond)}× single node)` : '');
const p3 = (xs: number[]) => {
  const p = percentiles(xs);
  return `p50 ${ms(p.p50)}, p99 ${ms(p.p99)}, max ${ms(p.max)}`;
};
const ingestDetail = (r: IngestResult) =>
  `${int(r.points)} points in ${num(r.seconds)} s, ${int(r.requests)} requests, ${r.retries} retried (503); write latency p50 ${ms(r.latency.p50)}, p99 ${ms(r.latency.p99)}, max ${ms(r.latency.max)}; client CPU ${num(r.clientCpuSeconds)} s${otherLoad(r.otherCores)}`;

function ingestRows(label: string, r: IngestRun | null, skipped: boolean): void {
  if (skipped) return;
  rows.push([`ingest, ${label}`, r ? `${pts(r.result.pointsPerSecond)}${ratio(r)}` : 'FAILED', r ? ingestDetail(r.result) : '']);
}

function lagRows(r: IngestRun | null, writeAck: WriteAck): void {
  if (!r?.lag || !r.status) return;
  const { lag, status } = r;
  const perNode = lag.perSecondaryMax.length > 1 ? `; max per secondary ${lag.perSecondaryMax.map((s) => `${s.nodeId} ${ms(s.max)}`).join(', ')}` : '';
  rows.push([
    `replication lag under ingest, writeAck "${writeAck}" (marker write → first lastlist on the secondary showing it)`,
    p3(lag.lags),
    `${int(lag.markers)} markers, one every ${markerMs} ms after the previous one showed${lag.missed ? `, ${lag.missed} not shown within ${MARKER_LIMIT_MS / 1000} s` : ''}; poll every ${pollMs} ms, poll round trip ${p3(lag.pollMs)}; marker write on the leader ${p3(lag.writeMs)}${perNode}${lag.error ? `; ⚠ the probe stopped early: ${lag.error}` : ''}`,
  ]);
  const lagMs = percentiles(status.lagMs);
  rows.push([
    `leader's /svcapi/cluster/status under ingest, writeAck "${writeAck}": peers[].lag_ms`,
    `p50 ${ms(lagMs.p50)}, p99 ${ms(lagMs.p99)}`,
    `max ${ms(lagMs.max)}; max queued_bytes ${mib(status.maxQueuedBytes)} (${int(status.maxQueuedBytes)} bytes); ${int(status.samples)} samples every ${STATUS_MS} ms${status.nullLags ? `, ${status.nullLags} lag_ms null` : ''}${status.failures.length ? `; ${status.failures.length} failed: ${status.failures[0]}` : ''}`,
  ]);
  rows.push([
    `catch-up after the ingest, writeAck "${writeAck}"`,
    ms(r.drainMs ?? NaN),
    `from the last write's answer until the leader listed every peer with lag_ms 0 and queued_bytes 0; every node then counted back ${int(dataset.totalPoints)} points (${[r.leader.points, ...r.secondaries.map((s) => s.points)].map(int).join(' / ')})`,
  ]);
}

const runs = [single, local, one].filter((r): r is IngestRun => r !== null);
ingestRows('single node (cluster.enabled false), /svcapi/write', single, !selected('single'));
ingestRows(`cluster of ${nodeCount}, writeAck "local", into the leader`, local, !selected('local'));
ingestRows(`cluster of ${nodeCount}, writeAck "one", into the leader`, one, !selected('one'));
if (selected('vm')) {
  if (!vmAvailable) rows.push(['ingest, VictoriaMetrics /api/v1/import (reference)', 'n/a', `${VM_BIN} is not installed (apt-get install -y victoria-metrics)`]);
  else
    rows.push([
      'ingest, VictoriaMetrics single-node /api/v1/import (reference, answers before fsync)',
      vm ? `${pts(vm.result.pointsPerSecond)}${single ? ` (${num(vm.result.pointsPerSecond / single.result.pointsPerSecond)}× single node)` : ''}` : 'FAILED',
      vm ? `${vm.version}; ${ingestDetail(vm.result)}; peak RSS ${mib(vm.rss)}` : '',
    ]);
}
lagRows(local, 'local');
lagRows(one, 'one');

for (const { ttl, run } of failovers) {
  const label = `failover, electionTtlSeconds ${ttl}${ttl === 10 ? ' (default)' : ''}, writeAck "one": kill -9 of the leader → first 200 from the new leader`;
  if (!run) {
    rows.push([label, 'FAILED', '']);
    continue;
  }
  const goal = 3 * ttl * 1000;
  const o = run.outage;
  const f = run.firstServed;
  const againstGoal = (t: number) => `${num(t / (ttl * 1000))}× TTL; goal ≤ 3× TTL: ${t <= goal ? 'met' : 'NOT met'}`;
  const value = Number.isFinite(run.firstOkMs)
    ? `${ms(run.firstOkMs)} (${againstGoal(run.firstOkMs)})`
    : f
      ? `no 200; the new leader took a write sent ${ms(f.sentMs)} after the kill (${againstGoal(f.sentMs)})`
      : `no other node took a write within ${6 * ttl + 30} s`;
  const kept = Number.isFinite(run.presentOnNewLeader) ? `${int(run.presentOnNewLeader)} of the ${int(run.ackedBeforeKill)} writes answered 200 before the kill are on the new leader${run.presentOnNewLeader === run.ackedBeforeKill ? '' : ' — WRITES LOST'}` : `${int(run.ackedBeforeKill)} writes answered 200 before the kill; no new leader to check`;
  const served = f
    ? `first answer that was not a refusal: ${f.node}, to a write sent ${ms(f.sentMs)} after the kill, answered at ${ms(f.ms)} (${f.status === 200 ? '200' : `${f.status === -1 ? '200 success false' : f.status}: ${f.error}`})`
    : 'no other node answered anything but refusals';
  rows.push([
    label,
    value,
    `${run.killed} killed, ${run.newLeader ?? 'none'} took over; ${served}; ${kept}; meanwhile ${o.connectionErrors} connection errors${o.errorsByNode ? ` (${o.errorsByNode})` : ''}, ${o.notLeader} × 503 not the leader, ${o.other503} other 503${o.otherStatus ? `, ${o.otherStatus} other answers` : ''}${Number.isFinite(run.firstOkMs) ? `; then ${int(run.okAfter)} more 200s in about 1 s` : ''}; the new leader's status then listed peers ${run.newLeaderPeers || 'n/a'}${nodeCount === 2 && Number.isFinite(run.firstOkMs) ? '; ⚠ no secondary was left to acknowledge these 200s under writeAck "one" (WIRE.md: 503 after cluster.ackTimeoutMs)' : ''}${otherLoad(run.otherCores)}`,
  ]);
  if (Number.isFinite(run.presentOnNewLeader) && run.presentOnNewLeader !== run.ackedBeforeKill) {
    phases.failures.push({ phase: failoverPhase(ttl), error: new Error(`${run.ackedBeforeKill - run.presentOnNewLeader} writes answered 200 under writeAck "one" before the kill are missing on the new leader`) });
  }
}

for (const r of runs) {
  const nodes = [{ nodeId: r.secondaries.length ? 'leader' : 'single node', ...r.leader }, ...r.secondaries.map((s) => ({ ...s, nodeId: `secondary ${s.nodeId}` }))];
  rows.push([`peak RSS (VmHWM), ${r.label}`, nodes.map((n) => `${n.nodeId} ${mib(n.rss)}`).join(', '), 'main thread + storage workers, whole life of the process']);
}
for (const r of runs) {
  const nodes = [{ nodeId: r.secondaries.length ? 'leader' : 'single node', ...r.leader }, ...r.secondaries.map((s) => ({ ...s, nodeId: `secondary ${s.nodeId}` }))];
  rows.push([
    `disk after stop, bytes/point, ${r.label}`,
    nodes.map((n) => `${n.nodeId} ${n.disk ? num(n.disk.bytes / dataset.totalPoints) : 'n/a'}`).join(', '),
    `the data set's collection folder after seal_now on every node and SIGTERM (allocated: ${nodes.map((n) => (n.disk ? num(n.disk.allocated / dataset.totalPoints) : 'n/a')).join(' / ')}); the whole data dir (metadata, replication log, TLS, …): ${nodes.map((n) => (n.dataDir ? `${mib(n.dataDir.bytes)} = ${num(n.dataDir.bytes / dataset.totalPoints)} bytes/point` : 'n/a')).join(' / ')}`,
  ]);
}

console.log(`# Cluster: ${nodeCount} nodes on one machine\n`);
console.log(`\`${commandLine()}\`\n`);
console.log(
  `${machine()}; etcd ${ETCD_BIN} (one member, loopback); data set ${shape(dataset)} = ${int(dataset.totalPoints)} points, ${encoding === 'hsw1' ? 'HSW1' : 'tag-keyed JSON'} over the fsyncing /svcapi/write, ${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points per request, ${connections} connections; every node, etcd and the client share the ${os.availableParallelism()} cores; settings default apart from cluster.*\n`,
);
console.log(markdownTable(['figure', 'value', 'detail'], rows));
console.log(phases.report((phase) => logTails.get(phase.split(':')[0])?.() ?? []));
process.exitCode = phases.failures.length > 0 ? 1 : 0;
