// What bench/cluster.ts starts: a single-member etcd (Debian's etcd-server) on loopback ports in
// a temp dir, and our service as the nodes of a cluster, started like an operator would start
// them (WIRE.md part 2 "Cluster"): every node reads one secret file (random hex, 0600), node 1
// starts first with a fresh data dir and makes the CA, the others get a copy of its
// `tls/ca.crt` and `tls/ca.key` before their first start, each node's port is chosen before it
// starts so it can advertise `https://localhost:<port>`.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchError, describeReply, sleep } from './runner.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, freePort, HttpsClient, json, npmStartCommand, ServerProcess, tempDir, type Reply } from './service.js';

export const ETCD_BIN = '/usr/bin/etcd';
const OUR_MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));

/** Polls `check` every `intervalMs` until it answers true; throws naming `what` (and the last state) after `timeoutMs`. */
export async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>, intervalMs = 100, lastState: () => string = () => ''): Promise<number> {
  const start = performance.now();
  for (;;) {
    let ok = false;
    try {
      ok = await check();
    } catch {
      ok = false; // not up yet
    }
    if (ok) return performance.now() - start;
    if (performance.now() - start > timeoutMs) {
      const state = lastState();
      throw new BenchError(`${what}: not within ${Math.round(timeoutMs / 1000)} s${state ? ` (last seen: ${state})` : ''}`);
    }
    await sleep(intervalMs);
  }
}

// ---- etcd -----------------------------------------------------------------------------------

export interface BenchEtcd {
  endpoint: string;
  process: ServerProcess;
  /** Kills it and removes its data dir. */
  dispose(): Promise<void>;
}

/** One etcd member on two free loopback ports, its data in a temp dir; resolves once /health answers. */
export async function startEtcd(): Promise<BenchEtcd> {
  const dir = tempDir('bench-etcd-');
  const clientPort = await freePort();
  const peerPort = await freePort();
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = new ServerProcess('etcd', ETCD_BIN, [
    '--name', 'bench', '--data-dir', dir,
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `bench=${peer}`, '--log-level', 'error',
  ]);
  const dispose = async () => {
    await proc.stop('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntil('etcd answers /health', 20_000, async () => {
      if (!proc.running) throw new BenchError(`etcd exited\n${proc.logTail().join('\n')}`);
      return (await fetch(`${endpoint}/health`)).ok;
    });
  } catch (err) {
    await dispose();
    throw err;
  }
  return { endpoint, process: proc, dispose };
}

// ---- our service as a cluster node --------------------------------------------------------

import type { ClusterStatus } from '../src/cluster/service.js';

export type WriteAck = 'local' | 'one';

/** The answer of GET /svcapi/cluster/status, as the service declares it. */
export type { ClusterStatus } from '../src/cluster/service.js';

/** One node: its port and data dir are fixed before the first start. */
export class BenchNode {
  process: ServerProcess | null = null;
  /** The admin's token, from a login on this node. */
  token = '';
  private readonly clients: HttpsClient[] = [];

  private constructor(
    readonly nodeId: string,
    readonly port: number,
    readonly dataDir: string,
    readonly configFile: string,
    readonly ca: () => string,
  ) {}

  static async create(nodeId: string, settings: Record<string, unknown>, ca: () => string): Promise<BenchNode> {
    const port = await freePort();
    const dataDir = tempDir(`historian-bench-${nodeId}-`);
    const configFile = `${dataDir}.config.json`;
    const node = new BenchNode(nodeId, port, dataDir, configFile, ca);
    // Each node names itself; a single node (no `cluster` settings) is written as given.
    const cluster = settings.cluster as Record<string, unknown> | undefined;
    fs.writeFileSync(configFile, JSON.stringify(cluster ? { ...settings, cluster: { ...cluster, nodeId, advertiseUrl: node.url } } : settings));
    return node;
  }

  /** What this node advertises to the others (its certificate names localhost). */
  get url(): string {
    return `https://localhost:${this.port}`;
  }

  get running(): boolean {
    return this.process?.running === true;
  }

  /**
   * Starts `node dist/src/main.js` with the environment and node flags of `npm start` (as
   * bench/service.ts does) and waits for its "listening" line. Every node gets the admin's
   * credentials, as one deployment's settings would give them; only the first leader creates
   * the account.
   */
  async start(): Promise<void> {
    const start = npmStartCommand();
    const nodeArgs = (process.env.HISTORIAN_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    this.process = new ServerProcess(`historian ${this.nodeId}`, process.execPath, [...start.nodeFlags, ...nodeArgs, OUR_MAIN], {
      ...process.env,
      ...start.env,
      HISTORIAN_PORT: String(this.port),
      HISTORIAN_DATA_DIR: this.dataDir,
      HISTORIAN_CONFIG: this.configFile,
      HISTORIAN_ADMIN_EMAIL: ADMIN_EMAIL,
      HISTORIAN_ADMIN_PASSWORD: ADMIN_PASSWORD,
    });
    await this.process.waitForLine((line) => line.includes('"msg":"listening"'), 60_000);
  }

  /** Logs in as the admin until it works (on a secondary the account arrives by replication). */
  async login(timeoutMs = 60_000): Promise<void> {
    const client = new HttpsClient(this.port, this.ca(), 1);
    let last = '';
    try {
      await waitUntil(`login on node ${this.nodeId}`, timeoutMs, async () => {
        const reply = await client.postJson('/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
        last = `${reply.status} ${reply.body.subarray(0, 200).toString()}`;
        if (reply.status !== 200) return false;
        this.token = json(reply).token as string;
        return true;
      }, 200, () => last);
    } finally {
      client.close();
    }
  }

  /** A client with `sockets` keep-alive connections sending this node's admin token. */
  client(sockets: number): HttpsClient {
    const client = new HttpsClient(this.port, this.ca(), sockets);
    client.headers.authorization = `Bearer ${this.token}`;
    this.clients.push(client);
    return client;
  }

  async status(client: HttpsClient): Promise<ClusterStatus> {
    const reply = await client.get('/svcapi/cluster/status');
    if (reply.status !== 200) throw describeReply(`GET /svcapi/cluster/status on ${this.nodeId}`, reply);
    return json(reply) as ClusterStatus;
  }

  peakRssBytes(): number {
    return this.process?.peakRssBytes() ?? NaN;
  }

  logTail(lines = 30): string[] {
    return this.process?.logTail(lines) ?? [];
  }

  /** kill -9. */
  async kill(): Promise<void> {
    if (!this.process) return;
    this.process.child.kill('SIGKILL');
    await this.process.exited;
  }

  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null } | null> {
    for (const client of this.clients.splice(0)) client.close();
    return this.process ? this.process.stop('SIGTERM') : null;
  }

  async dispose(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dataDir, { recursive: true, force: true });
    fs.rmSync(this.configFile, { force: true });
  }
}

export interface ClusterOptions {
  nodes: number;
  writeAck: WriteAck;
  electionTtlSeconds?: number;
  /** Other settings for every node (storage, …). */
  settings?: Record<string, unknown>;
}

export interface BenchCluster {
  etcd: BenchEtcd;
  nodes: BenchNode[];
  /** The CA every node's certificate comes from (PEM). */
  ca: string;
  secretDir: string;
  /** Stops every node still running (secondaries first), then etcd; exit codes other than 0 are returned as messages. */
  stop(): Promise<string[]>;
  /** stop() and removes every data dir, unless `keep`. */
  dispose(keep: boolean): Promise<string[]>;
}

/**
 * etcd, then node 1 (it becomes the leader and creates the admin), then the others with node 1's
 * CA; resolves once every node takes the admin's login and the leader lists every peer with
 * `lag_ms` 0.
 */
export async function startCluster(o: ClusterOptions): Promise<BenchCluster> {
  const etcd = await startEtcd();
  const secretDir = tempDir('bench-cluster-secret-');
  const secretFile = path.join(secretDir, 'secret');
  fs.writeFileSync(secretFile, crypto.randomBytes(48).toString('hex'), { mode: 0o600 });
  let ca = '';
  const nodes: BenchNode[] = [];
  const cluster: BenchCluster = {
    etcd,
    nodes,
    get ca() {
      return ca;
    },
    secretDir,
    async stop() {
      const problems: string[] = [];
      for (const node of [...nodes].reverse()) {
        if (!node.running) continue;
        const exit = await node.stop();
        if (exit && exit.code !== 0) problems.push(`node ${node.nodeId} exited with ${exit.code ?? exit.signal} on SIGTERM`);
      }
      await etcd.process.stop('SIGKILL');
      return problems;
    },
    async dispose(keep) {
      const problems = await cluster.stop();
      if (keep) {
        process.stderr.write(`data dirs kept: ${nodes.map((n) => n.dataDir).join(' ')}\n`);
      } else {
        for (const node of nodes) await node.dispose();
        fs.rmSync(secretDir, { recursive: true, force: true });
      }
      await etcd.dispose();
      return problems;
    },
  };
  try {
    const settings = {
      ...(o.settings ?? {}),
      cluster: {
        enabled: true,
        etcd: { endpoints: [etcd.endpoint] },
        secretFile,
        writeAck: o.writeAck,
        ...(o.electionTtlSeconds !== undefined ? { electionTtlSeconds: o.electionTtlSeconds } : {}),
      },
    };
    for (let i = 1; i <= o.nodes; i++) nodes.push(await BenchNode.create(`node${i}`, settings, () => ca));
    const [first, ...others] = nodes;
    await first.start();
    ca = fs.readFileSync(path.join(first.dataDir, 'tls', 'ca.crt'), 'utf8');
    await first.login();
    const firstClient = first.client(1);
    let seen = '';
    await waitUntil(`node ${first.nodeId} becomes the leader`, 60_000, async () => {
      const status = await first.status(firstClient);
      seen = JSON.stringify(status);
      return status.role === 'leader';
    }, 100, () => seen);
    for (const node of others) {
      const tls = path.join(node.dataDir, 'tls');
      fs.mkdirSync(tls, { recursive: true, mode: 0o700 });
      for (const file of ['ca.crt', 'ca.key']) fs.copyFileSync(path.join(first.dataDir, 'tls', file), path.join(tls, file));
      fs.chmodSync(path.join(tls, 'ca.key'), 0o600);
    }
    await Promise.all(others.map((node) => node.start()));
    await Promise.all(others.map((node) => node.login()));
    await waitInSync(first, firstClient, o.nodes - 1, 120_000);
  } catch (err) {
    await cluster.dispose(false).catch(() => {});
    // The nodes' last lines say why (the phase report prints a BenchError's details).
    const tails = nodes.flatMap((node) => [`--- ${node.nodeId} (last lines) ---`, ...node.logTail(20)]);
    if (err instanceof BenchError) throw new BenchError(err.message, [...err.details, ...tails]);
    throw new BenchError(err instanceof Error ? err.message : String(err), tails);
  }
  return cluster;
}

/**
 * Waits until `leader`'s status lists `peers` peers, each with `lag_ms` 0 and nothing queued;
 * answers the time it took.
 */
export async function waitInSync(leader: BenchNode, client: HttpsClient, peers: number, timeoutMs: number): Promise<number> {
  let seen = '';
  return waitUntil(`leader ${leader.nodeId} lists ${peers} peer(s) with lag_ms 0 and queued_bytes 0`, timeoutMs, async () => {
    const status = await leader.status(client);
    seen = JSON.stringify(status);
    return status.role === 'leader' && status.peers.length === peers && status.peers.every((p) => p.lag_ms === 0 && p.queued_bytes === 0);
  }, 50, () => seen);
}

/** The node a leader URL names (`https://localhost:<port>`), or undefined. */
export function nodeByUrl(nodes: readonly BenchNode[], url: string | null | undefined): BenchNode | undefined {
  if (!url) return undefined;
  try {
    const port = Number(new URL(url).port);
    return nodes.find((n) => n.port === port);
  } catch {
    return undefined;
  }
}

/** The leader a 503 names: body `leader`, else the `x-historian-leader` header. */
export function leaderNamed(reply: Reply): string | null {
  try {
    const body = json(reply) as { leader?: unknown };
    if (typeof body.leader === 'string' && body.leader) return body.leader;
  } catch {
    // not JSON
  }
  const header = reply.headers['x-historian-leader'];
  return typeof header === 'string' && header ? header : null;
}
