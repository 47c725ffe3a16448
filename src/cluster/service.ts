// High availability (WIRE.md part 2 "Cluster"), first part: leader election through etcd and
// fencing. With cluster.enabled false (the default) this node is a single node and leads.
//
// Nodes campaign through etcd's election API with a lease of cluster.electionTtlSeconds. The
// leader keeps a local deadline from its last keepalive etcd acknowledged (the time the keepalive
// was sent + TTL − a margin) and stops accepting mutations the moment it passes, without waiting
// for the client library to report the lease lost (which can come up to 2×TTL late): a leader cut
// off from etcd, or frozen (SIGSTOP), refuses writes before another node can be elected. The
// epoch (fencing token) is the leader key's etcd revision; every node remembers the highest epoch
// it has seen (cluster-state.json) and refuses shadow writes from an older one.
//
// Not built yet (issue 19's remaining parts): replication of points and metadata to secondaries,
// writeAck "one", catch-up of a rejoining node.

import fs from 'node:fs';
import path from 'node:path';
import { Etcd3, type Election, type ElectionObserver } from 'etcd3';
import type { Config } from '../config.js';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { Health } from '../subsystems.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';

/** Kept below the lease's real expiry: clock drift and the time a keepalive takes to arrive. */
const FENCE_MARGIN_MS = 500;
const STATE_FILE = 'cluster-state.json';
const ELECTION = 'historian-leader';

export interface ClusterStatus {
  node_id: string;
  role: 'leader' | 'secondary';
  leader: string | null;
  epoch: number;
  peers: Array<{ node_id: string; url: string; lag_ms: number | null; queued_bytes: number }>;
}

interface CampaignInternals {
  lease: NodeJS.EventEmitter;
  keyRevision?: string | number | symbol;
}

export class ClusterService {
  private client: Etcd3 | null = null;
  private election: Election | null = null;
  private observer: ElectionObserver | null = null;
  private campaign: ReturnType<Election['campaign']> | null = null;
  private elected = false;
  /** Epoch ms until which this node may act as leader (its lease is surely alive until then). */
  private leaseValidUntil = 0;
  private keepaliveSentAt = 0;
  private epoch = 0;
  private leaderUrl: string | null = null;
  private highestEpoch: number;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {
    this.highestEpoch = this.readState().highestEpoch;
  }

  get enabled(): boolean {
    return this.config.cluster.enabled;
  }

  get nodeId(): string {
    return this.config.cluster.nodeId || 'single';
  }

  /** Whether this node may accept mutations now. */
  isLeader(): boolean {
    if (!this.enabled) return true;
    return this.elected && Date.now() < this.leaseValidUntil;
  }

  /** The 503 a mutating request gets on a node that is not (or no longer surely) the leader, or null. */
  notLeader(): HttpError | null {
    if (this.isLeader()) return null;
    const leader = this.elected ? null : this.leaderUrl; // a leader whose lease ran out does not name itself
    const headers: Record<string, string> = { 'retry-after': '1' };
    if (leader) headers['x-historian-leader'] = leader;
    return new HttpError('UNAVAILABLE', 'not the leader', headers, { leader });
  }

  /** The fencing check of a shadow write: 409 for an epoch older than the newest seen; records a newer one. */
  admitEpoch(epoch: number): void {
    if (epoch < this.highestEpoch) throw new HttpError('CONFLICT', `epoch ${epoch} is older than ${this.highestEpoch}, the newest this node has seen: a former leader's write`);
    if (epoch > this.highestEpoch) {
      this.highestEpoch = epoch;
      this.writeState();
    }
  }

  status(): ClusterStatus {
    if (!this.enabled) return { node_id: this.nodeId, role: 'leader', leader: this.config.cluster.advertiseUrl || null, epoch: 0, peers: [] };
    return { node_id: this.nodeId, role: this.isLeader() ? 'leader' : 'secondary', leader: this.isLeader() ? this.config.cluster.advertiseUrl : this.leaderUrl, epoch: this.isLeader() ? this.epoch : this.highestEpoch, peers: [] };
  }

  health(): Health {
    if (!this.enabled) return { status: 'ok' };
    if (!this.leaderUrl && !this.isLeader()) return { status: 'degraded', reason: 'no leader known (etcd unreachable, or an election under way)' };
    return { status: 'ok' };
  }

  async start(): Promise<void> {
    if (!this.enabled) return;
    const c = this.config.cluster;
    if (!c.nodeId) throw new Error('cluster.nodeId is required when cluster.enabled is true');
    if (!c.advertiseUrl) throw new Error('cluster.advertiseUrl is required when cluster.enabled is true');
    if (c.etcd.endpoints.length === 0) throw new Error('cluster.etcd.endpoints is required when cluster.enabled is true');
    this.client = new Etcd3({ hosts: [...c.etcd.endpoints], dialTimeout: 3000 });
    this.election = this.client.election(ELECTION, c.electionTtlSeconds);
    await this.watchLeader();
    this.runCampaign();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.elected = false;
    this.leaseValidUntil = 0;
    try {
      await this.campaign?.resign(); // a clean stop hands leadership on at once
    } catch {
      // the lease expires by itself
    }
    await this.observer?.cancel().catch(() => {});
    this.client?.close();
  }

  private async watchLeader(): Promise<void> {
    try {
      this.observer = await this.election!.observe();
      this.leaderUrl = this.observer.leader() ?? null;
      this.observer.on('change', (leader) => {
        this.leaderUrl = leader ?? null;
        this.log.info({ leader: this.leaderUrl }, 'cluster: leader changed');
      });
      this.observer.on('error', (err) => {
        this.log.warn({ err: String(err) }, 'cluster: watching the leader failed; watching again');
        this.observer = null;
        if (!this.stopped) setTimeout(() => void this.watchLeader(), 1000).unref();
      });
    } catch (err) {
      this.log.warn({ err: String(err) }, 'cluster: cannot watch the leader yet (etcd unreachable?); trying again');
      if (!this.stopped) setTimeout(() => void this.watchLeader(), 1000).unref();
    }
  }

  private runCampaign(): void {
    if (this.stopped) return;
    const ttlMs = this.config.cluster.electionTtlSeconds * 1000;
    const campaign = this.election!.campaign(this.config.cluster.advertiseUrl);
    this.campaign = campaign;
    // etcd3 keeps the campaign's lease and key revision private; the fencing needs both.
    const internals = campaign as unknown as CampaignInternals;
    const lease = internals.lease;
    lease.on('keepaliveFired', () => (this.keepaliveSentAt = Date.now()));
    lease.on('keepaliveSucceeded', () => {
      if (this.keepaliveSentAt > 0) this.leaseValidUntil = this.keepaliveSentAt + ttlMs - FENCE_MARGIN_MS;
    });
    campaign.on('elected', () => {
      const revision = Number(internals.keyRevision);
      this.epoch = Number.isFinite(revision) ? revision : this.epoch + 1;
      // The lease was granted (or kept alive) moments ago: valid from now, for less than its TTL.
      this.leaseValidUntil = Math.max(this.leaseValidUntil, Date.now() + ttlMs / 3);
      this.elected = true;
      this.admitEpoch(this.epoch);
      this.log.warn({ epoch: this.epoch, node: this.nodeId }, 'cluster: this node is the leader');
    });
    campaign.on('error', (err) => {
      const was = this.elected;
      this.elected = false;
      this.leaseValidUntil = 0;
      this.log.warn({ err: String(err), wasLeader: was }, 'cluster: campaign failed (lease lost or etcd unreachable); campaigning again');
      this.retry = setTimeout(() => this.runCampaign(), 1000);
      this.retry.unref();
    });
  }

  private readState(): { highestEpoch: number } {
    try {
      const state = JSON.parse(fs.readFileSync(path.join(this.config.dataDir, STATE_FILE), 'utf8')) as { highestEpoch?: unknown };
      return { highestEpoch: typeof state.highestEpoch === 'number' ? state.highestEpoch : 0 };
    } catch {
      return { highestEpoch: 0 };
    }
  }

  private writeState(): void {
    const file = path.join(this.config.dataDir, STATE_FILE);
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ highestEpoch: this.highestEpoch }), { mode: PRIVATE_FILE_MODE });
    fs.renameSync(`${file}.tmp`, file);
  }
}
