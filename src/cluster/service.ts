// High availability (WIRE.md part 2 "Cluster"): leader election through etcd, fencing, and
// replication to the secondaries. With cluster.enabled false (the default) this node is a single
// node and leads, and nothing here costs anything.
//
// Nodes campaign through etcd's election API with a lease of cluster.electionTtlSeconds. The
// leader keeps a local deadline from its last keepalive etcd acknowledged (the time the keepalive
// was sent + TTL − a margin) and stops accepting mutations the moment it passes, without waiting
// for the client library to report the lease lost (which can come up to 2×TTL late): a leader cut
// off from etcd, or frozen (SIGSTOP), refuses writes before another node can be elected. The
// epoch (fencing token) is the leader key's etcd revision; every node remembers the highest epoch
// it has seen (cluster-state.json) and refuses shadow writes from an older one.
//
// Replication (change-log.ts, replicator.ts, applier.ts): every node registers itself in etcd
// (`historian-nodes/<nodeId>`, on its own lease). An elected node first pulls from every reachable
// peer what it lacks (so a write acknowledged under writeAck "one" survives its leader), then
// starts recording its own changes in its epoch and shipping the log to each peer. A node that
// stops leading stops recording and shipping, and takes what the new leader ships.

import fs from 'node:fs';
import path from 'node:path';
import type { Etcd3, Election, ElectionObserver, Lease } from 'etcd3';
import type { TimeseriesSnapshots } from '../backup/api.js';
import type { Config } from '../config.js';
import type { LeadershipControl } from '../host/leadership.js';
import type { Health } from '../host/plugin.js';
import type { Logger } from '../log.js';
import type { MetaStore } from '../meta/store.js';
import type { DeliveryMarking } from '../notifications/api.js';
import type { PointWriter, RecordedWrite, ReplicationHooks, WriteOptions } from '../storage/api.js';
import { ServiceError, badRequest } from '../../shared/errors.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import type { WriteMode } from '../../shared/protocol.js';
import { Applier, type WriteEntryMeta } from './applier.js';
import { ChangeLog, type Position } from './change-log.js';
import { packBody } from './entry-body.js';
import { PeerClient } from './peer-client.js';
import { pullFrom, Replicator, type PeerInfo } from './replicator.js';
import { installMetadata, lowerPosition, snapshotDir, type MetadataSnapshot } from './snapshot.js';

/** Kept below the lease's real expiry: clock drift and the time a keepalive takes to arrive. */
const FENCE_MARGIN_MS = 500;
const STATE_FILE = 'cluster-state.json';
const ELECTION = 'historian-leader';
const NODES_PREFIX = 'historian-nodes/';
const PEER_POLL_MS = 1000;
const TRIM_EVERY_MS = 60_000;

/** What replication works with. */
export interface ClusterOptions {
  settings: Config['cluster'] & { dataDir: string };
  meta: MetaStore;
  writer: PointWriter;
  replication: ReplicationHooks;
  /** Delivery marks of a secondary's streams go to the leader. */
  marks: DeliveryMarking;
  /** Snapshots travel in the backup's timeseries archive format, installed by its crash-safe swap. */
  snapshots: TimeseriesSnapshots;
  /** The CA this node trusts its peers' certificates by. */
  caFile: string | null;
  secret: Buffer;
  /** This service's leadership, decided here. */
  leadership: LeadershipControl;
  log: Logger;
}

export interface ClusterStatus {
  node_id: string;
  role: 'leader' | 'secondary';
  leader: string | null;
  epoch: number;
  peers: Array<{ node_id: string; url: string; lag_ms: number | null; queued_bytes: number }>;
}

interface CampaignInternals {
  lease: Lease;
  keyRevision?: string | number | symbol;
}

export class ClusterService {
  private etcd: Etcd3 | null = null;
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
  /** Elected, and the catch-up from the peers is done: mutations are accepted. */
  private ready = false;
  private applierInstance: Applier | null = null;
  private replicator: Replicator | null = null;
  private client: PeerClient | null = null;
  private registration: ReturnType<Etcd3['lease']> | null = null;
  private peerPoll: NodeJS.Timeout | null = null;
  private trimTimer: NodeJS.Timeout | null = null;
  private resyncing = false;
  private readonly log: Logger;
  /** The log of applied and accepted entries (shadow writes are idempotent through it, on any node). */
  readonly changes: ChangeLog;

  constructor(private readonly o: ClusterOptions) {
    this.log = o.log;
    this.highestEpoch = this.readState().highestEpoch;
    this.changes = new ChangeLog(o.meta.db, o.meta.wholeStore);
    if (!this.enabled) return;
    o.leadership.decideBy(() => this.isLeader());
    this.applierInstance = new Applier({ meta: o.meta, changeLog: this.changes, writer: o.writer, replication: o.replication, log: this.log });
    this.client = new PeerClient(o.caFile, o.secret, this.nodeId);
    this.replicator = new Replicator({
      changeLog: this.changes,
      applier: this.applierInstance,
      client: this.client,
      log: this.log,
      epoch: () => this.epoch,
      leads: () => this.isLeader(),
    });
    o.replication.recordWrites((body, contentType, mode, options) => this.recordWrite(body, contentType, mode, options));
    o.replication.collectionChanged.subscribe((change) => {
      this.changes.append('collection', JSON.stringify(change), null);
      this.replicator!.wake();
    });
    // WIRE: delivery marks a secondary's streams make are sent to the leader, whose log then ships them to all.
    o.marks.written.subscribe((marks) => {
      if (this.isLeader() || !this.leaderUrl) return;
      const body = Buffer.from(JSON.stringify(marks));
      this.client!.request(this.leaderUrl, 'POST', '/svcapi/cluster/deliveries', { body, headers: { 'content-type': 'application/json' }, timeoutMs: 10_000 })
        .then((reply) => {
          if (reply.status !== 204) throw new Error(`answered ${reply.status}: ${reply.body.toString('utf8', 0, 200)}`);
        })
        .catch((err) => this.log.warn({ err: String((err as Error)?.message ?? err) }, 'cluster: could not send delivery marks to the leader; they stay on this node'));
    });
  }

  get enabled(): boolean {
    return this.o.settings.enabled;
  }

  get nodeId(): string {
    return this.o.settings.nodeId || 'single';
  }

  /** Whether this node may accept mutations now. */
  isLeader(): boolean {
    if (!this.enabled) return true;
    return this.elected && this.ready && Date.now() < this.leaseValidUntil;
  }

  /** Applies entries from another node (the replicate route); null on a single node. */
  get applier(): Applier | null {
    return this.applierInstance;
  }

  /** Logs one of this node's own writes before it is stored: committed once stored (what an awaiting write waits for), voided when refused. */
  private recordWrite(body: Uint8Array, contentType: string, mode: WriteMode, options: WriteOptions): RecordedWrite {
    const c = this.o.settings;
    const { awaitReplica: _awaitReplica, replicated: _replicated, route: _route, ...o } = options;
    // Packed once here; every node keeps and ships these bytes (entry-body.ts).
    const packed = packBody(body, options.contentEncoding);
    const meta: WriteEntryMeta = packed.z ? { ct: contentType, mode, o, z: packed.z } : { ct: contentType, mode, o };
    const id = this.changes.appendPending('write', JSON.stringify(meta), packed.body);
    return {
      stored: () => {
        this.changes.commit(id);
        this.replicator!.wake();
        // Only a write that will wait gets a promise: an unawaited rejection would end the process.
        return c.writeAck === 'one' && options.awaitReplica ? this.replicator!.waitForAck(id, c.ackTimeoutMs) : null;
      },
      refused: () => {
        this.changes.abandon(id);
        this.replicator!.wake();
      },
    };
  }

  /** The 503 a mutating request gets on a node that is not (or no longer surely) the leader, or null. */
  notLeader(): ServiceError | null {
    if (this.isLeader()) return null;
    const leader = this.elected ? null : this.leaderUrl; // a leader whose lease ran out does not name itself
    const headers: Record<string, string> = { 'retry-after': '1' };
    if (leader) headers['x-historian-leader'] = leader;
    return new ServiceError('UNAVAILABLE', 'not the leader', { headers, details: { leader } });
  }

  /**
   * The fencing check of a shadow write sent with a token rather than a node credential (an
   * admin's tool): besides admitEpoch's 409, 400 for an epoch above the newest term this node
   * knows. Only a node of the cluster, holding its secret, may announce a newer leader; else one
   * admin request with a huge epoch would make every later write of the real leader 409 (on a
   * single node, whose term is 0, every later shadow write).
   */
  admitTokenEpoch(epoch: number, header: string): void {
    if (epoch > this.highestEpoch) {
      const where = this.enabled ? "this node's current term (the leader's epoch as shipped to it)" : 'the term of this single node (no cluster)';
      throw badRequest(`header ${header} ${epoch} is above ${this.highestEpoch}, ${where}; only a node of the cluster (node credential) may ship a newer epoch`);
    }
    this.admitEpoch(epoch);
  }

  /** The fencing check of a shadow write: 409 for an epoch older than the newest seen; records a newer one. */
  admitEpoch(epoch: number): void {
    if (epoch < this.highestEpoch) throw new ServiceError('CONFLICT', `epoch ${epoch} is older than ${this.highestEpoch}, the newest this node has seen: a former leader's write`);
    if (epoch > this.highestEpoch) {
      this.highestEpoch = epoch;
      this.writeState();
      // A newer leader exists: whatever this node believed, it leads no more.
      if (this.elected && epoch > this.epoch) this.stepDown('a newer epoch shipped to this node');
    }
  }

  status(): ClusterStatus {
    if (!this.enabled) return { node_id: this.nodeId, role: 'leader', leader: this.o.settings.advertiseUrl || null, epoch: 0, peers: [] };
    const leads = this.isLeader();
    return { node_id: this.nodeId, role: leads ? 'leader' : 'secondary', leader: leads ? this.o.settings.advertiseUrl : this.leaderUrl, epoch: leads ? this.epoch : this.highestEpoch, peers: leads ? this.replicator?.status() ?? [] : [] };
  }

  health(): Health {
    if (!this.enabled) return { status: 'ok' };
    if (!this.leaderUrl && !this.isLeader()) return { status: 'degraded', reason: 'no leader known (etcd unreachable, or an election under way)' };
    return { status: 'ok' };
  }

  async start(): Promise<void> {
    if (!this.enabled) return;
    const c = this.o.settings;
    if (!c.nodeId) throw new Error('cluster.nodeId is required when cluster.enabled is true');
    if (!c.advertiseUrl) throw new Error('cluster.advertiseUrl is required when cluster.enabled is true');
    if (c.etcd.endpoints.length === 0) throw new Error('cluster.etcd.endpoints is required when cluster.enabled is true');
    // What a snapshot a crash interrupted left behind.
    for (const name of fs.readdirSync(this.o.settings.dataDir)) {
      if (name.startsWith('cluster-snapshot-')) fs.rmSync(path.join(this.o.settings.dataDir, name), { recursive: true, force: true });
    }
    this.changes.installTriggers();
    this.changes.stopRecording(); // until elected
    await this.redoPending();
    // Loaded only on a cluster node: etcd3 and its gRPC stack are about 20 MB a single node does not need.
    const { Etcd3: Client } = await import('etcd3');
    this.etcd = new Client({ hosts: [...c.etcd.endpoints], dialTimeout: 3000 });
    this.election = this.etcd.election(ELECTION, c.electionTtlSeconds);
    this.register();
    this.peerPoll = setInterval(() => void this.pollPeers(), PEER_POLL_MS);
    this.peerPoll.unref();
    // Short age bounds (tests) are kept to within a quarter of themselves.
    this.trimTimer = setInterval(() => this.trim(), Math.max(250, Math.min(TRIM_EVERY_MS, (c.queueMaxAgeHours * 3_600_000) / 4)));
    this.trimTimer.unref();
    await this.watchLeader();
    this.runCampaign();
  }

  /**
   * Writes a crash left logged but maybe not stored are stored again (rewriting a point with its
   * own value changes nothing) and committed, or voided when they are refused now.
   */
  private async redoPending(): Promise<void> {
    const left = this.changes.leftPending();
    if (left.length === 0) return;
    let stored = 0;
    for (const entry of left) {
      if (await this.applierInstance!.redo(entry)) {
        this.changes.commit(entry.id);
        stored++;
      } else this.changes.abandon(entry.id);
    }
    this.log.warn({ entries: left.length, stored }, 'cluster: stored again the writes a crash left logged but perhaps not stored');
  }

  /** This node in etcd's node list, on its own lease (re-made when it is lost). */
  private register(): void {
    if (this.stopped) return;
    const lease = this.etcd!.lease(this.o.settings.electionTtlSeconds, { autoKeepAlive: true });
    this.registration = lease;
    lease.on('lost', () => {
      if (this.registration === lease) setTimeout(() => this.register(), 1000).unref();
    });
    lease.put(`${NODES_PREFIX}${this.nodeId}`).value(this.o.settings.advertiseUrl).exec().catch((err) => {
      this.log.warn({ err: String(err) }, 'cluster: cannot register this node in etcd yet; retrying');
      void lease.revoke().catch(() => {});
      if (this.registration === lease) setTimeout(() => this.register(), 1000).unref();
    });
  }

  private async registeredPeers(): Promise<PeerInfo[]> {
    const all = await this.etcd!.getAll().prefix(NODES_PREFIX).strings();
    return Object.entries(all)
      .map(([key, url]) => ({ nodeId: key.slice(NODES_PREFIX.length), url }))
      .filter((p) => p.nodeId !== this.nodeId && /^https:\/\//.test(p.url));
  }

  /** Every node keeps the list of peers it has seen (so a leader lists a lost peer too); the leader ships to them. */
  private async pollPeers(): Promise<void> {
    // Shippers stop while the lease is in doubt; a lease that held after all resumes them.
    if (this.isLeader()) this.replicator!.start();
    try {
      this.replicator!.setPeers(await this.registeredPeers());
    } catch {
      // etcd unreachable: the known peers stay
    }
  }

  /** The node that ships to this one (a node credential names it; the leader's URL is known from etcd). */
  rememberSender(nodeId: string): void {
    if (this.isLeader() || !this.leaderUrl || nodeId === this.nodeId) return;
    this.replicator?.setPeers([{ nodeId, url: this.leaderUrl }]);
  }

  /** The leader says what every node holds (X-Historian-Held, sent with each batch): dropped from this node's log too. */
  trimHeld(held: Position): void {
    if (this.isLeader()) return;
    try {
      this.changes.trimHeld(held);
    } catch (err) {
      this.log.warn({ err: String(err) }, 'cluster: trimming what every node holds failed');
    }
  }

  private trim(): void {
    const c = this.o.settings;
    try {
      const removed = this.changes.trim(c.queueMaxBytes, c.queueMaxAgeHours * 3_600_000);
      if (removed > 0) this.log.info({ removed }, 'cluster: trimmed the replication log');
    } catch (err) {
      this.log.warn({ err: String(err) }, 'cluster: trimming the replication log failed');
    }
  }

  /**
   * Elected: before accepting mutations, pull from every reachable peer what it holds and this node
   * lacks, then record in the new epoch and ship. Bounded: a peer that does not answer within half
   * the TTL (frozen, cut off) is left behind (its shipper pulls from it once it answers), so failover
   * stays within 3 × TTL.
   */
  private async takeOver(epoch: number): Promise<void> {
    const ttlMs = this.o.settings.electionTtlSeconds * 1000;
    let peers: PeerInfo[] = [];
    try {
      peers = await this.registeredPeers();
    } catch (err) {
      this.log.warn({ err: String(err) }, 'cluster: cannot list the peers to catch up from');
    }
    peers = [...new Map([...this.replicator!.peers(), ...peers].map((p) => [p.nodeId, p])).values()];
    await Promise.all(peers.map(async (peer) => {
      try {
        const pulled = await pullFrom({ changeLog: this.changes, applier: this.applierInstance!, client: this.client!, epoch: () => epoch }, peer, ttlMs / 2);
        if (pulled > 0) this.log.warn({ peer: peer.nodeId, entries: pulled }, 'cluster: caught up from a peer before leading');
      } catch (err) {
        this.log.warn({ peer: peer.nodeId, err: String((err as Error)?.message ?? err) }, 'cluster: could not catch up from a peer before leading');
      }
    }));
    if (!this.elected || this.epoch !== epoch || this.stopped) return;
    this.changes.startRecording(epoch);
    this.replicator!.setPeers(peers);
    this.ready = true;
    this.replicator!.start();
    try {
      await this.o.leadership.leading();
    } catch (err) {
      this.log.error({ err: String((err as Error)?.stack ?? err) }, 'cluster: work on taking the lead failed');
    }
    this.log.warn({ epoch, node: this.nodeId, peers: peers.length }, 'cluster: this node leads and accepts mutations');
  }

  /**
   * The leader found this node behind what its log keeps: take a full snapshot from it (see
   * snapshot.ts). One at a time; false when one is already running or this node cannot take one.
   */
  startResync(): boolean {
    if (this.resyncing || this.isLeader() || !this.leaderUrl) return false;
    this.resyncing = true;
    void this.resync(this.leaderUrl).finally(() => (this.resyncing = false));
    return true;
  }

  private async resync(leader: string): Promise<void> {
    const dir = snapshotDir(this.o.settings.dataDir, 'in');
    const began = Date.now();
    this.log.warn({ leader }, 'cluster: this node is behind what the leader\'s log keeps; taking a full snapshot of the leader');
    try {
      const file = path.join(dir, 'timeseries.tar');
      const got = await this.client!.download(leader, '/svcapi/cluster/snapshot/timeseries', file, 120_000);
      if (got.status !== 200) throw new Error(`the leader answered the time-series snapshot with ${got.status}`);
      const tsPosition = JSON.parse(String(got.headers['x-historian-position'] ?? '{}')) as Position;
      await this.o.snapshots.installTimeseriesSnapshot(file, leader);
      const reply = await this.client!.request(leader, 'POST', '/svcapi/cluster/snapshot/metadata', { timeoutMs: 120_000 });
      if (reply.status !== 200) throw new Error(`the leader answered the metadata snapshot with ${reply.status}: ${reply.body.toString('utf8', 0, 200)}`);
      const snapshot = JSON.parse(reply.body.toString('utf8')) as MetadataSnapshot;
      if (this.isLeader()) throw new Error('this node was elected meanwhile');
      const position = lowerPosition(tsPosition, snapshot.position);
      // The store's events tell the caches (streams end and replay, accounts, the tag map, the monitor).
      const installed = installMetadata(this.o.meta.wholeStore, this.changes, snapshot, position);
      this.log.warn({ leader, ...installed, position, ms: Date.now() - began }, 'cluster: installed the leader\'s snapshot; following its log from here');
    } catch (err) {
      this.log.error({ leader, err: String((err as Error)?.message ?? err) }, 'cluster: taking a snapshot of the leader failed; the leader asks again');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  private stepDown(why: string): void {
    const was = this.elected;
    this.elected = false;
    this.ready = false;
    this.leaseValidUntil = 0;
    this.changes?.stopRecording();
    this.replicator?.stop();
    if (!was) return;
    this.log.warn({ why }, 'cluster: this node no longer leads');
    try {
      this.o.leadership.following();
    } catch (err) {
      this.log.error({ err: String((err as Error)?.stack ?? err) }, 'cluster: work on giving up the lead failed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.peerPoll) clearInterval(this.peerPoll);
    if (this.trimTimer) clearInterval(this.trimTimer);
    this.stepDown('stopping');
    this.client?.close();
    await this.registration?.revoke().catch(() => {});
    try {
      await this.campaign?.resign(); // a clean stop hands leadership on at once
    } catch {
      // the lease expires by itself
    }
    await this.observer?.cancel().catch(() => {});
    this.etcd?.close();
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
    const ttlMs = this.o.settings.electionTtlSeconds * 1000;
    const campaign = this.election!.campaign(this.o.settings.advertiseUrl);
    this.campaign = campaign;
    // etcd3 keeps the campaign's lease and key revision private; the fencing needs both.
    const internals = campaign as unknown as CampaignInternals;
    const lease = internals.lease;
    lease.on('keepaliveFired', () => (this.keepaliveSentAt = Date.now()));
    lease.on('keepaliveSucceeded', () => {
      if (this.campaign === campaign && this.keepaliveSentAt > 0) this.leaseValidUntil = this.keepaliveSentAt + ttlMs - FENCE_MARGIN_MS;
    });
    campaign.on('elected', () => {
      if (this.campaign === campaign) void this.confirmElected(campaign, internals, ttlMs);
    });
    campaign.on('error', (err) => {
      if (this.campaign !== campaign) return; // an abandoned campaign
      this.campaign = null;
      const was = this.elected;
      this.stepDown('campaign failed');
      this.log.warn({ err: String(err), wasLeader: was }, 'cluster: campaign failed (lease lost or etcd unreachable); campaigning again');
      this.campaignAgain();
    });
  }

  private campaignAgain(): void {
    if (this.stopped) return;
    this.retry = setTimeout(() => this.runCampaign(), 1000);
    this.retry.unref();
  }

  /**
   * The client library says "elected" when the keys before this node's are gone, without checking
   * that its own key and lease still exist: a node frozen past its TTL (its key gone with its lease)
   * would be "elected" beside the real leader when the previous one goes. So etcd is asked: the
   * lease must still live (a keepalive answered with a TTL) and the election's leader must be this
   * node. The fence starts from that keepalive.
   */
  private async confirmElected(campaign: NonNullable<typeof this.campaign>, internals: CampaignInternals, ttlMs: number): Promise<void> {
    const sentAt = Date.now();
    try {
      const answer = await internals.lease.keepaliveOnce();
      if (!(Number(answer.TTL) > 0)) throw new Error('the lease has expired');
      const leader = await this.election!.leader();
      if (leader !== this.o.settings.advertiseUrl) throw new Error(`etcd names ${leader ?? 'nobody'} as the leader`);
    } catch (err) {
      if (this.campaign !== campaign) return;
      this.log.warn({ err: String((err as Error)?.message ?? err) }, 'cluster: "elected" by a campaign etcd no longer holds; campaigning again');
      this.campaign = null;
      void campaign.resign().catch(() => {});
      this.campaignAgain();
      return;
    }
    if (this.campaign !== campaign || this.stopped) return;
    const revision = Number(internals.keyRevision);
    this.epoch = Number.isFinite(revision) ? revision : this.epoch + 1;
    this.leaseValidUntil = Math.max(this.leaseValidUntil, sentAt + ttlMs - FENCE_MARGIN_MS);
    this.elected = true;
    this.ready = false;
    this.admitEpoch(this.epoch);
    this.log.warn({ epoch: this.epoch, node: this.nodeId }, 'cluster: elected; catching up from the peers before leading');
    void this.takeOver(this.epoch);
  }

  private readState(): { highestEpoch: number } {
    try {
      const state = JSON.parse(fs.readFileSync(path.join(this.o.settings.dataDir, STATE_FILE), 'utf8')) as { highestEpoch?: unknown };
      return { highestEpoch: typeof state.highestEpoch === 'number' ? state.highestEpoch : 0 };
    } catch {
      return { highestEpoch: 0 };
    }
  }

  private writeState(): void {
    const file = path.join(this.o.settings.dataDir, STATE_FILE);
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ highestEpoch: this.highestEpoch }), { mode: PRIVATE_FILE_MODE });
    fs.renameSync(`${file}.tmp`, file);
  }
}
