// A cluster of real historian nodes on a real etcd, for the replication tests (WIRE.md part 2
// "Cluster"). Every node reads one secret file and holds one CA (the first node's, copied into
// the others' data dirs before their first start), listens on the port it advertises, and is
// killed (after a SIGCONT, in case it is frozen) by dispose(). With CLUSTER_TEST_LOGS=<dir>,
// dispose() first writes every node process's log lines there.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, tempDir, type HttpResult, type TestService } from '../api/harness.js';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/wait-for.js';
import { TestEtcd } from './etcd.js';

export interface PeerStatus {
  node_id: string;
  url: string;
  lag_ms: number | null;
  queued_bytes: number;
}

export interface ClusterStatus {
  node_id: string;
  role: 'leader' | 'secondary';
  leader: string | null;
  epoch: number;
  peers: PeerStatus[];
}

export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  /** The advertised URL, https://localhost:<port>. */
  readonly url: string;
  readonly dataDir: string;
  svc: TestService;
  /** An admin token this node issued. */
  token: string;
  /** Killed with SIGKILL (its data dir is kept for a restart). */
  dead: boolean;
}

export type Scope = { organization: string; site: string; unit: string; grid: string };
export type Points = Array<[number, number]>;

export interface ClusterOptions {
  ttlSeconds: number;
  writeAck: 'local' | 'one';
  ackTimeoutMs: number;
  /** More cluster.* settings (queueMaxAgeHours...). */
  cluster?: Record<string, unknown>;
}

export class TestCluster {
  readonly nodes: ClusterNode[] = [];
  /** The cluster's etcd (an outage test kills and restarts it). */
  etcd: TestEtcd | null = null;
  private readonly secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-secret-'));
  readonly secretFile = path.join(this.secretDir, 'secret');
  /** The data dir of the first node started: its tls/ca.crt and ca.key are every node's CA. */
  private caSource: string | null = null;

  constructor(readonly opts: ClusterOptions) {}

  async start(): Promise<void> {
    fs.writeFileSync(this.secretFile, crypto.randomBytes(48).toString('hex'), { mode: 0o600 });
    this.etcd = await TestEtcd.start();
  }

  private config(id: string, port: number): Record<string, unknown> {
    return {
      server: { port },
      storage: { autoCreateCollections: true },
      cluster: {
        enabled: true,
        nodeId: id,
        advertiseUrl: `https://localhost:${port}`,
        etcd: { endpoints: [this.etcd!.endpoint] },
        electionTtlSeconds: this.opts.ttlSeconds,
        secretFile: this.secretFile,
        writeAck: this.opts.writeAck,
        ackTimeoutMs: this.opts.ackTimeoutMs,
        ...this.opts.cluster,
      },
    };
  }

  private async launch(id: string, port: number, dataDir: string): Promise<TestService> {
    // The harness sets HISTORIAN_PORT=0, which would win over server.port: the node must listen
    // where it advertises.
    const svc = await startService({ dataDir, config: this.config(id, port), env: { HISTORIAN_PORT: String(port) } });
    this.started.push({ id, svc });
    assert.equal(svc.baseUrl, `https://localhost:${port}`, `node ${id} listens on the port it advertises`);
    return svc;
  }

  /**
   * Starts a node with a fresh data dir. The first node makes the CA (and, once elected, the
   * admin); any later node gets a copy of that CA before its first start, and is ready once the
   * leader shows it has everything (the admin account included), then logs in once. Logins are
   * not polled: five failures lock the account out on that node (auth.lockoutFailures).
   */
  async startNode(id: string, opts: { timeoutMs?: number } = {}): Promise<ClusterNode> {
    const port = await freePort();
    const dataDir = tempDir(`cluster-${id}-`);
    const first = !this.caSource;
    if (!first) {
      const tls = path.join(dataDir, 'tls');
      fs.mkdirSync(tls, { recursive: true, mode: 0o700 });
      fs.copyFileSync(path.join(this.caSource!, 'tls', 'ca.crt'), path.join(tls, 'ca.crt'));
      fs.copyFileSync(path.join(this.caSource!, 'tls', 'ca.key'), path.join(tls, 'ca.key'));
      fs.chmodSync(path.join(tls, 'ca.key'), 0o600);
    }
    const svc = await this.launch(id, port, dataDir);
    const node: ClusterNode = { id, port, url: `https://localhost:${port}`, dataDir, svc, token: '', dead: false };
    this.nodes.push(node);
    if (first) {
      assert.ok(fs.existsSync(path.join(dataDir, 'tls', 'ca.crt')), `node ${id} made tls/ca.crt in its data dir`);
      assert.ok(fs.existsSync(path.join(dataDir, 'tls', 'ca.key')), `node ${id} made tls/ca.key in its data dir`);
      this.caSource = dataDir;
      // The admin appears once this node is elected: a few spaced attempts stay under the lockout.
      await waitFor(async () => {
        const res = await svc.post('/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
        if (res.status === 200) node.token = res.body.token;
        return res.status === 200;
      }, `the first node ${id} makes the admin once it leads`, { timeoutMs: 3_500, intervalMs: 1000 });
    } else {
      await this.waitReplicatedTo(node, opts.timeoutMs ?? 30_000);
      node.token = await svc.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    }
    return node;
  }

  /** Restarts a killed node on its data dir, port and settings (its admin account is on its disk). */
  async restart(node: ClusterNode): Promise<void> {
    assert.ok(node.dead, `node ${node.id} is stopped before a restart`);
    node.svc = await this.launch(node.id, node.port, node.dataDir);
    node.dead = false;
    node.token = await node.svc.login(ADMIN_EMAIL, ADMIN_PASSWORD);
  }

  /** Waits until some live node leads and shows `node` as a peer with lag_ms 0 (it has everything). */
  async waitReplicatedTo(node: ClusterNode, timeoutMs: number): Promise<void> {
    let seen: Array<ClusterStatus | null> = [];
    try {
      await waitFor(async () => {
        const withToken = this.live().filter((n) => n !== node && n.token);
        seen = await Promise.all(withToken.map((n) => this.tryStatus(n)));
        return seen.some((s) => s?.role === 'leader' && s.peers.some((p) => p.node_id === node.id && p.lag_ms === 0 && p.queued_bytes === 0));
      }, `the leader shows ${node.id} as a peer that has everything`, { timeoutMs, intervalMs: 100 });
    } catch (err) {
      (err as Error).message += `\nstatus of the other nodes: ${JSON.stringify(seen)}`;
      throw err;
    }
  }

  /** SIGKILL: the node's process is gone at once; its data dir stays. */
  async kill(node: ClusterNode): Promise<void> {
    node.dead = true;
    await node.svc.stop('SIGKILL');
  }

  live(): ClusterNode[] {
    return this.nodes.filter((n) => !n.dead);
  }

  byId(id: string): ClusterNode {
    const node = this.nodes.find((n) => n.id === id);
    assert.ok(node, `node ${id} exists`);
    return node;
  }

  async status(node: ClusterNode): Promise<ClusterStatus> {
    const res = await node.svc.get('/svcapi/cluster/status', node.token);
    assert.equal(res.status, 200, `cluster/status on ${node.id}: ${res.text}`);
    return res.body as ClusterStatus;
  }

  /** The status, or null when the node does not answer (yet). */
  async tryStatus(node: ClusterNode): Promise<ClusterStatus | null> {
    try {
      const res = await node.svc.get('/svcapi/cluster/status', node.token);
      return res.status === 200 ? (res.body as ClusterStatus) : null;
    } catch {
      return null;
    }
  }

  /** Waits until exactly one of `candidates` reports itself leader, and returns it. */
  async waitLeader(candidates: ClusterNode[], what: string, timeoutMs = 20_000): Promise<ClusterNode> {
    let leader: ClusterNode | null = null;
    await waitFor(async () => {
      const roles = await Promise.all(candidates.map(async (n) => (await this.tryStatus(n))?.role));
      const leaders = candidates.filter((_, i) => roles[i] === 'leader');
      leader = leaders.length === 1 ? leaders[0] : null;
      return leader !== null;
    }, what, { timeoutMs, intervalMs: 100 });
    return leader!;
  }

  /** Waits until every node of `followers` names `leader` as the leader and calls itself secondary. */
  async waitFollowing(leader: ClusterNode, followers: ClusterNode[], timeoutMs = 20_000): Promise<void> {
    for (const f of followers) {
      await waitFor(async () => {
        const s = await this.tryStatus(f);
        return s?.role === 'secondary' && s.leader === leader.url;
      }, `node ${f.id} is a secondary following ${leader.id} (${leader.url})`, { timeoutMs, intervalMs: 100 });
    }
  }

  /**
   * Waits until the leader's status shows every node of `followers` as a peer that has
   * everything (lag_ms 0, queued_bytes 0).
   */
  async waitCaughtUp(leader: ClusterNode, followers: ClusterNode[], what: string, timeoutMs = 30_000): Promise<void> {
    let last: ClusterStatus | null = null;
    try {
      await waitFor(async () => {
        last = await this.tryStatus(leader);
        if (!last || last.role !== 'leader') return false;
        return followers.every((f) => last!.peers.some((p) => p.node_id === f.id && p.lag_ms === 0 && p.queued_bytes === 0));
      }, what, { timeoutMs, intervalMs: 100 });
    } catch (err) {
      (err as Error).message += `\nlast status of ${leader.id}: ${JSON.stringify(last)}`;
      throw err;
    }
  }

  write(node: ClusterNode, body: unknown): Promise<HttpResult> {
    return node.svc.post('/svcapi/write', body, node.token);
  }

  /** fast_query (JSON) on one node: every tag's points in [start, end]. */
  async query(node: ClusterNode, scope: Scope, tags: string[], start: number, end: number): Promise<Record<string, Points>> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(scope)) qs.set(k, v);
    for (const t of tags) qs.append('tags', t);
    qs.set('start', String(start));
    qs.set('end', String(end));
    const res = await node.svc.get(`/svcapi/fast_query?${qs}`, node.token);
    assert.equal(res.status, 200, `fast_query on ${node.id} ${JSON.stringify(scope)} ${tags.join(',')}: ${res.text.slice(0, 300)}`);
    return res.body;
  }

  /** Whether a fast_query on `node` answers exactly `expected` (false on any error, e.g. the collection is not there yet). */
  async holds(node: ClusterNode, scope: Scope, expected: Record<string, Points>, start: number, end: number): Promise<boolean> {
    try {
      const got = await this.query(node, scope, Object.keys(expected), start, end);
      return Object.entries(expected).every(([tag, points]) => JSON.stringify(got[tag]) === JSON.stringify(points));
    } catch {
      return false;
    }
  }

  /** Every process started, restarts included (for CLUSTER_TEST_LOGS). */
  private readonly started: Array<{ id: string; svc: TestService }> = [];

  async dispose(): Promise<void> {
    const logDir = process.env.CLUSTER_TEST_LOGS;
    if (logDir) {
      fs.mkdirSync(logDir, { recursive: true });
      this.started.forEach(({ id, svc }, i) => fs.writeFileSync(path.join(logDir, `${i}-${id}.log`), svc.logLines.join('\n')));
    }
    // Every process first (a frozen one gets SIGCONT so the SIGKILL is not held), then the dirs.
    for (const { svc } of this.started) {
      for (const signal of ['SIGCONT', 'SIGKILL'] as const) {
        try {
          svc.child.kill(signal);
        } catch {
          // already gone
        }
      }
    }
    for (const node of this.nodes) {
      await node.svc.dispose().catch(() => {});
    }
    await this.etcd?.stop();
    fs.rmSync(this.secretDir, { recursive: true, force: true });
  }
}
