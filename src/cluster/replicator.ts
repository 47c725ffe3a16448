// The leader's side of replication: one shipper per peer sends the log, in order, from where that
// peer stands; acknowledgements move the peer's cursor, wake writes waiting under writeAck "one",
// and give each peer's lag and queued bytes. The queue of a peer is the shared log after its
// cursor, so it is durable (SQLite) and bounded by the log's own size and age limits.
//
// A shipper starts with a handshake: the peer says which (epoch, seq) it holds. What the peer holds
// and this node lacks (a former leader's writes that never reached anyone else) is pulled and
// applied here first, then shipped to everyone; shipping starts after the last entry the peer has.
// A peer that lacks entries this node no longer keeps is asked to take a full snapshot
// (snapshot.ts); until it has, its lag is null.
//
// Every answer says where the peer stands; what every node holds (the lowest position, epoch by
// epoch) is trimmed from this log, and sent with each batch (X-Historian-Held) so that the peers
// trim theirs too.

import { ServiceError } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import { decodeFrames, encodeFrames, type ReplicationFrame } from '../../native-free-codecs/replication-frames.js';
import type { Applier } from './applier.js';
import type { ChangeLog, LogEntry, Position } from './change-log.js';
import type { PeerClient } from './peer-client.js';

const BATCH_ENTRIES = 2000;
const BATCH_BYTES = 8 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;
const IDLE_WAIT_MS = 1000;
const RETRY_MS = [250, 500, 1000, 2000];
/** How often a peer taking a snapshot is asked where it stands. */
const RESYNC_CHECK_MS = 2000;
/** Trimming what every node holds runs at most this often (each run deletes what came meanwhile). */
const TRIM_HELD_MS = 1000;

export interface PeerInfo {
  nodeId: string;
  url: string;
}

export interface PeerStatus {
  node_id: string;
  url: string;
  lag_ms: number | null;
  queued_bytes: number;
}

interface ReplicateAnswer {
  held: number;
  error: string | null;
  position: Position;
}

export interface ReplicatorOptions {
  changeLog: ChangeLog;
  applier: Applier;
  client: PeerClient;
  log: Logger;
  /** The epoch this node leads in (sent with every request; a peer refuses an older one). */
  epoch: () => number;
  /** Whether this node may still ship (it leads, and its lease surely holds). */
  leads: () => boolean;
  /** What every node holds, to send with each batch (the header's value); null when not known. */
  held?: () => Position | null;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export function toFrame(entry: LogEntry): ReplicationFrame {
  return { epoch: entry.epoch, seq: entry.seq, kind: entry.kind, meta: entry.meta, created_ms: entry.created_ms, body: entry.body };
}

/** Pulls from `peer` everything it holds that this node lacks and applies it here; returns how many entries came. */
export async function pullFrom(o: Pick<ReplicatorOptions, 'changeLog' | 'applier' | 'client' | 'epoch'>, peer: PeerInfo, timeoutMs: number): Promise<number> {
  let total = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`pulling from ${peer.nodeId} took longer than ${timeoutMs} ms`);
    const reply = await o.client.request(peer.url, 'POST', '/svcapi/cluster/pull', {
      body: Buffer.from(JSON.stringify({ position: o.changeLog.position(), max_bytes: BATCH_BYTES })),
      headers: { 'content-type': 'application/json' },
      timeoutMs: left,
    });
    if (reply.status !== 200) throw new Error(`${peer.url} answered the pull with ${reply.status}: ${reply.body.toString('utf8', 0, 300)}`);
    const frames = decodeFrames(reply.body);
    if (frames.length === 0) return total;
    const { held, error } = await o.applier.apply(frames);
    total += held;
    if (error) throw new Error(`applying what ${peer.nodeId} holds: ${error}`);
  }
}

class PeerShipper {
  /** Local log id up to which the peer holds everything; null until a handshake says. */
  private cursor: number | null = null;
  acked = 0;
  reached = false;
  /** Where the peer stands, as its last answer said; null until one did. */
  position: Position | null = null;
  needsSnapshot = false;
  private running = false;
  private wakeUp: (() => void) | null = null;
  private failures = 0;
  /** The X-Historian-Held last sent to this peer. */
  private heldSent = '';

  constructor(readonly peer: PeerInfo, private readonly o: ReplicatorOptions, private readonly onAck: () => void, private readonly onIdle: () => void) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.cursor = null;
    void this.run();
  }

  stop(): void {
    this.running = false;
    this.wake();
  }

  wake(): void {
    const wake = this.wakeUp;
    this.wakeUp = null;
    wake?.();
  }

  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, ms);
      timer.unref();
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    while (this.running && this.o.leads()) {
      try {
        if (this.cursor === null) {
          const cursor = await this.handshake();
          if (cursor === 'gap') {
            if (!this.needsSnapshot) this.o.log.warn({ peer: this.peer.nodeId }, 'cluster: this peer lacks entries the log no longer keeps (cluster.queueMaxBytes / queueMaxAgeHours); asking it to take a snapshot');
            this.needsSnapshot = true;
            await this.askResync();
            await this.idle(RESYNC_CHECK_MS);
            continue;
          }
          this.needsSnapshot = false;
          this.cursor = cursor;
          this.markAcked(cursor);
        }
        const entries = this.o.changeLog.read(this.cursor, BATCH_ENTRIES, BATCH_BYTES);
        if (entries.length === 0) {
          // Caught up: the peer still hears what every node now holds (an empty batch), to trim it.
          this.onIdle();
          const held = JSON.stringify(this.o.held?.() ?? null);
          if (held !== 'null' && held !== this.heldSent) await this.send([]);
          else await this.idle(IDLE_WAIT_MS);
          continue;
        }
        const answer = await this.send(entries.map(toFrame));
        if (answer.held > 0) {
          this.cursor = entries[answer.held - 1].id;
          this.markAcked(this.cursor);
        }
        if (answer.error) {
          this.o.log.warn({ peer: this.peer.nodeId, err: answer.error }, 'cluster: the peer could not apply an entry yet; retrying');
          await this.idle(500);
        }
        this.failures = 0;
      } catch (err) {
        this.cursor = null;
        if (this.failures++ === 0) this.o.log.warn({ peer: this.peer.nodeId, url: this.peer.url, err: String((err as Error)?.message ?? err) }, 'cluster: shipping to a peer failed; retrying');
        await this.idle(RETRY_MS[Math.min(this.failures - 1, RETRY_MS.length - 1)]);
      }
    }
    this.running = false;
  }

  private markAcked(id: number): void {
    this.reached = true;
    this.acked = id;
    this.onAck();
  }

  private async handshake(): Promise<number | 'gap'> {
    const { position } = await this.send([]);
    this.position = position;
    const mine = this.o.changeLog.position();
    const theyHaveMore = Object.entries(position).some(([epoch, seq]) => seq > (mine[epoch] ?? 0));
    if (theyHaveMore) {
      const pulled = await pullFrom(this.o, this.peer, REQUEST_TIMEOUT_MS);
      this.o.log.warn({ peer: this.peer.nodeId, entries: pulled }, 'cluster: pulled what a peer held and this leader lacked (a former leader\'s writes)');
    }
    return this.o.changeLog.cursorFor(position);
  }

  private async askResync(): Promise<void> {
    const reply = await this.o.client.request(this.peer.url, 'POST', '/svcapi/cluster/resync', { timeoutMs: REQUEST_TIMEOUT_MS, headers: { 'x-historian-epoch': String(this.o.epoch()) } });
    if (reply.status !== 202) throw new Error(`${this.peer.url} answered the resync request with ${reply.status}: ${reply.body.toString('utf8', 0, 300)}`);
  }

  private async send(frames: ReplicationFrame[]): Promise<ReplicateAnswer> {
    const held = this.o.held?.() ?? null;
    this.heldSent = JSON.stringify(held);
    const reply = await this.o.client.request(this.peer.url, 'POST', '/svcapi/cluster/replicate', {
      body: encodeFrames(frames),
      headers: { 'content-type': 'application/octet-stream', 'x-historian-epoch': String(this.o.epoch()), ...(held ? { 'x-historian-held': JSON.stringify(held) } : {}) },
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    if (reply.status !== 200) throw new Error(`${this.peer.url} answered ${reply.status}: ${reply.body.toString('utf8', 0, 300)}`);
    const answer = JSON.parse(reply.body.toString('utf8')) as ReplicateAnswer;
    this.position = answer.position;
    return answer;
  }
}

export class Replicator {
  private readonly shippers = new Map<string, PeerShipper>();
  private waiters: Array<{ id: number; resolve: () => void }> = [];
  private active = false;
  private lastTrim = 0;
  private lastTrimmed = '';
  private readonly o: ReplicatorOptions;

  constructor(options: ReplicatorOptions) {
    this.o = { ...options, held: () => this.heldByAll() };
    for (const row of this.o.changeLog.knownPeers()) {
      this.shippers.set(row.node_id, new PeerShipper({ nodeId: row.node_id, url: row.url }, this.o, () => this.acked(), () => this.trimHeld()));
    }
  }

  private acked(): void {
    this.settleWaiters();
    if (Date.now() - this.lastTrim >= TRIM_HELD_MS) this.trimHeld();
  }

  /** Drops what every node holds from this log (once more when a shipper is caught up, so nothing held is left behind). */
  private trimHeld(): void {
    const held = this.heldByAll();
    const key = JSON.stringify(held);
    if (!held || key === this.lastTrimmed) return;
    this.lastTrim = Date.now();
    this.lastTrimmed = key;
    try {
      this.o.changeLog.trimHeld(held);
    } catch (err) {
      this.o.log.warn({ err: String((err as Error)?.message ?? err) }, 'cluster: trimming what every peer holds failed');
    }
  }

  /**
   * Per epoch, the highest seq every node holds (this one and every peer it knows): the lowest of
   * their positions. Null while some peer's position is not known (it has not answered since this
   * node leads): nothing is trimmed for it then but by size and age.
   */
  heldByAll(): Position | null {
    if (this.shippers.size === 0) return null;
    const held = this.o.changeLog.position();
    for (const s of this.shippers.values()) {
      if (!s.position) return null;
      for (const epoch of Object.keys(held)) held[epoch] = Math.min(held[epoch], s.position[epoch] ?? 0);
    }
    return held;
  }

  /** Peers registered now (etcd); a peer seen once stays known (its lag shows while it is away). */
  setPeers(peers: readonly PeerInfo[]): void {
    for (const peer of peers) {
      const known = this.shippers.get(peer.nodeId);
      if (known && known.peer.url === peer.url) continue;
      known?.stop();
      this.o.changeLog.rememberPeer(peer.nodeId, peer.url, Date.now());
      const shipper = new PeerShipper(peer, this.o, () => this.acked(), () => this.trimHeld());
      this.shippers.set(peer.nodeId, shipper);
      if (this.active) shipper.start();
    }
  }

  peers(): PeerInfo[] {
    return [...this.shippers.values()].map((s) => s.peer);
  }

  start(): void {
    this.active = true;
    for (const s of this.shippers.values()) s.start();
  }

  stop(): void {
    this.active = false;
    for (const s of this.shippers.values()) s.stop();
  }

  /** New entries are in the log. */
  wake(): void {
    for (const s of this.shippers.values()) s.wake();
  }

  /** Resolves once some peer holds log entry `id`; 503 after `timeoutMs` (the entry stays, and ships later). */
  waitForAck(id: number, timeoutMs: number): Promise<void> {
    if (this.maxAcked() >= id) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        id,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new ServiceError('UNAVAILABLE', `no secondary acknowledged the write within cluster.ackTimeoutMs (${timeoutMs} ms); it is stored on this node and replicates when a secondary is back, so a retry is harmless`, { headers: { 'retry-after': '1' } }));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private maxAcked(): number {
    let max = 0;
    for (const s of this.shippers.values()) if (s.reached) max = Math.max(max, s.acked);
    return max;
  }

  private settleWaiters(): void {
    if (this.waiters.length === 0) return;
    const acked = this.maxAcked();
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.id <= acked) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  status(): PeerStatus[] {
    const last = this.o.changeLog.lastId();
    const now = Date.now();
    return [...this.shippers.values()].map((s) => {
      let lag: number | null = null;
      if (s.reached && !s.needsSnapshot) {
        if (s.acked >= last) lag = 0;
        else {
          // What it lacks may have been trimmed meanwhile: then it is behind by more than is known.
          const oldest = this.o.changeLog.oldestAfter(s.acked);
          lag = oldest === null ? null : Math.max(0, now - oldest);
        }
      }
      return { node_id: s.peer.nodeId, url: s.peer.url, lag_ms: lag, queued_bytes: s.acked >= last ? 0 : this.o.changeLog.bytesAfter(s.acked) };
    });
  }
}
