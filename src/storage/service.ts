// The time-series side of the main thread: routes call this; it finds the
// owning shard, checks access, hands bytes to workers and relays results.
// It never parses a write body (scope-peek reads only top-level keys) and
// never scans a day file.

import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import type { Config } from '../config.js';
import { ServiceError, badRequest, conflict, forbidden, notFound, unavailable } from '../../shared/errors.js';
import type { ResponseStream } from '../http/route.js';
import type { Logger } from '../log.js';
import type { Db } from '../meta/database.js';
import type { DeferredJob, Entity, EntityHooks } from '../meta/entities.js';
import type { EntityDef } from '../meta/registry.js';
import type { AccessGrant } from '../meta/access-grant.js';
import { resultHead, resultTail } from '../../native-free-codecs/result-envelope.js';
import { peekScope } from '../../native-free-codecs/scope-peek.js';
import { OP, type BackupMark, type BufferStats, type CollectionRecord, type LineCounts, type LivePoints, type MonitorSample, type MonitorSampleRequest, type ResultFormat, type SeriesRequest, type WriteFrameHeader, type WriteMode, type WriteOutcome } from '../../shared/protocol.js';
import { isCompleteScope, SCOPE_FIELDS, type CollectionScope, type ScopeFields } from '../../shared/scope.js';
import type { MetricRequest } from './query-spec.js';
import { collectionDir, collectionId as idOf, parseCollectionId } from '../../shared/scope-path.js';
import { CollectionAccess } from './access.js';
import type { Health } from '../subsystems.js';
import { CollectionCatalog } from './catalog.js';
import { ShardPool, type Shard } from './shards.js';
import { TagScopes } from './tag-scopes.js';

export interface QueryGroup {
  collectionId: string;
  series: SeriesRequest[];
}


/** `out`, with `prefix` sent just before the first chunk written to it. */
function afterPrefix(out: ResponseStream, prefix: Uint8Array): ResponseStream {
  let pending: Uint8Array | null = prefix;
  return {
    write(chunk) {
      if (pending !== null) {
        void out.write(pending);
        pending = null;
      }
      return out.write(chunk);
    },
    get queuedBytes() {
      return out.queuedBytes;
    },
    onFlushed: (listener) => out.onFlushed(listener),
    cut: () => out.cut(),
    get aborted() {
      return out.aborted;
    },
  };
}

export type WriteResult = { success: true; points: number; lines?: LineCounts } | { success: false; error: string };

/** What the ingest routes add to a write (see WriteFrameHeader). */
export interface WriteOptions {
  /** The ingest client's collection: the scope fields the body (or a line) does not name. */
  defaultScope?: CollectionScope;
  rows?: boolean;
  lineProtocol?: WriteFrameHeader['lineProtocol'];
  contentEncoding?: 'gzip';
  maxDecodedBytes?: number;
  maxDecodedSetting?: string;
  backfill?: boolean;
  /** Create missing collections (default: storage.autoCreateCollections). */
  autoCreate?: boolean;
  /** Applied from another node of a cluster: not recorded for replication again. */
  replicated?: boolean;
  /** Answer only once the cluster's write acknowledgement (cluster.writeAck) is met: /svcapi/write. */
  awaitReplica?: boolean;
}

/**
 * What the cluster's replication (src/cluster/) learns of this node's own changes to the time
 * series. Each call records the change durably before it returns; a write is recorded before it is
 * stored (so a crash between the two cannot leave it stored and unrecorded), and its commit gives
 * back what to wait for when the write asks for the cluster's acknowledgement.
 */
export interface StorageReplication {
  /** Logs a write before it is stored; the handle commits it once stored (giving what to wait for) or abandons it. */
  willWrite(body: Uint8Array, contentType: string, mode: WriteMode, options: WriteOptions): { stored(): Promise<void> | null; refused(): void };
  collectionChanged(change: CollectionChange): void;
}

/** A change to the collection catalog, as replication records and replays it. */
export type CollectionChange =
  | { op: 'create' | 'update'; scope: CollectionScope; extra: Record<string, unknown> }
  /** The folders of an org, site or unit that was renamed or moved. */
  | { op: 'relocate'; from: readonly string[]; to: readonly string[] }
  /** The collections of an org, site or unit that was deleted. */
  | { op: 'remove'; ids: string[] };

export class StorageService {
  readonly shards: ShardPool;
  readonly catalog: CollectionCatalog;
  readonly tagScopes: TagScopes;
  readonly access: CollectionAccess;
  /** Set by the cluster service on a node of a cluster. */
  replication: StorageReplication | null = null;
  /** Told of the written points of live-watched tags (src/live/hub.ts). */
  liveListener: ((points: LivePoints[]) => void) | null = null;
  /** The live-watched tags per collection, kept to send again to a restarted worker. */
  private readonly liveWatches = new Map<string, string[]>();
  private roundRobin = 0;
  private diskCheckedAt = 0;
  private diskLow = false;
  /** Set once start() succeeded; entity changes that must move folders wait for it. */
  private running = false;
  /** Why the free space could not be read at the last check, or null. */
  private diskUnknown: string | null = null;

  constructor(private readonly config: Config, private readonly db: Db, private readonly log: Logger) {
    const s = config.storage;
    this.shards = new ShardPool({
      // One core is left to the main thread (TLS, HTTP, copying bodies into the rings): on two
      // cores one worker ingested a single collection faster than two did, in 25 MiB less.
      count: s.shards > 0 ? s.shards : Math.max(1, os.availableParallelism() - 1),
      dataDir: config.dataDir,
      requestRingBytes: s.requestRingBytes,
      resultRingBytes: s.resultRingBytes,
      bufferCapacityPoints: s.bufferCapacityPoints,
      flushIntervalMs: s.flushIntervalMs,
      sealGraceMs: s.sealGraceMs,
      resultStallTimeoutMs: s.resultStallTimeoutMs,
      writeTimeoutMs: s.writeTimeoutMs,
      queryMemoryBytes: s.queryMemoryBytes,
      workerYoungGenerationMb: 6,
      onWorkerRestarted: (index) => this.rewatchLive(index),
      log,
      logLevel: config.log.level,
      minTimestampMs: s.minTimestampMs,
    });
    this.catalog = new CollectionCatalog(config.dataDir, this.shards, log);
    this.tagScopes = new TagScopes(db, () => this.shards.tagMapChanged(), (id) => this.catalog.get(id) !== undefined);
    this.access = new CollectionAccess(db);
  }

  /** Recovers every shard and reads the collection list; on failure the workers are stopped again. */
  async start(): Promise<void> {
    try {
      await this.shards.ready();
      this.catalog.load();
    } catch (err) {
      await this.shards.close().catch(() => {});
      throw err;
    }
    this.running = true;
  }

  /** For GET /svcapi/health: the disk guard, and shards whose worker is being replaced. */
  health(): Health {
    const restarting = this.shards.shards.filter((s) => s.restarting).map((s) => s.index);
    let disk: string | null = null;
    try {
      this.checkDisk();
    } catch (err) {
      disk = (err as Error).message;
    }
    if (disk) return { status: 'degraded', reason: disk, acceptsWrites: false };
    if (restarting.length > 0) return { status: 'degraded', reason: `storage shard(s) ${restarting.join(', ')} restarting after a worker failure` };
    return { status: 'ok' };
  }

  async close(): Promise<void> {
    await this.shards.close();
  }

  get maxBodyBytes(): number {
    return this.shards.shards[0].maxBodyBytes;
  }

  // ---- collections ---------------------------------------------------------

  visibleCollections(grant: AccessGrant): CollectionRecord[] {
    return this.access.filter(grant, this.catalog.list());
  }

  /** One collection the caller may see; 404 alike for a missing one and one outside the grant. */
  collection(grant: AccessGrant, id: string): CollectionRecord {
    const record = this.catalog.get(id);
    if (!record || !this.access.canAccess(grant, record)) throw notFound(`collection ${id} not found`);
    return record;
  }

  async createCollection(grant: AccessGrant, scope: CollectionScope, extra: Record<string, unknown>, replicated = false): Promise<CollectionRecord> {
    this.refuseWhileRestoring();
    if (!this.access.canAccess(grant, scope)) throw forbidden('the collection\'s unit is outside your access grant');
    this.checkDisk();
    const record = await this.catalog.create(scope, extra);
    if (!replicated) this.replication?.collectionChanged({ op: 'create', scope, extra });
    return record;
  }

  async updateCollection(grant: AccessGrant, scope: CollectionScope, extra: Record<string, unknown>, replicated = false): Promise<CollectionRecord> {
    this.refuseWhileRestoring();
    const id = idOf(scope);
    this.collection(grant, id);
    this.checkDisk();
    const record = await this.catalog.update(id, extra);
    if (!replicated) this.replication?.collectionChanged({ op: 'update', scope, extra });
    return record;
  }

  /** Replays a catalog change the leader made (src/cluster/applier.ts); not recorded again. */
  async applyReplicated(change: CollectionChange, grant: AccessGrant): Promise<void> {
    switch (change.op) {
      case 'create':
        try {
          await this.createCollection(grant, change.scope, change.extra, true);
        } catch (err) {
          // Already made (a replicated write that created it first) is the state wanted.
          if (!(err instanceof ServiceError && err.status === 409)) throw err;
        }
        return;
      case 'update':
        await this.updateCollection(grant, change.scope, change.extra, true);
        return;
      case 'relocate': {
        this.refuseWhileRestoring();
        const renamed = await this.catalog.relocate(change.from, change.to);
        for (const [oldId, newId] of renamed) this.tagScopes.renameCollection(oldId, newId);
        return;
      }
      case 'remove': {
        this.refuseWhileRestoring();
        const doomed = change.ids.map((id) => this.catalog.get(id)).filter((r): r is CollectionRecord => r !== undefined);
        await this.catalog.remove(doomed);
        for (const r of doomed) this.tagScopes.removeCollection(idOf(r));
        return;
      }
    }
  }

  private visible(grant: AccessGrant, id: string): boolean {
    const record = this.catalog.get(id);
    return record !== undefined && this.access.canAccess(grant, record);
  }

  /** Whether one of the caller's granted units (any unit, for admins) has a collection. */
  unitConfigured(grant: AccessGrant): boolean {
    return this.visibleCollections(grant).length > 0;
  }

  // ---- for the monitor -----------------------------------------------------

  /** Whether the storage workers run (the monitor cannot start without them). */
  get isRunning(): boolean {
    return this.running;
  }

  /** The collection a tag belongs to, from the tag-to-scope map; null when it was never written. */
  collectionOfTag(tag: string): string | null {
    return this.tagScopes.collectionOf(tag);
  }

  /** Whether a collection exists (whoever asks). */
  hasCollection(id: string): boolean {
    return this.catalog.get(id) !== undefined;
  }

  /** Whether the caller may reach collection `id` (false for a missing one too). */
  canReach(grant: AccessGrant, id: string): boolean {
    return this.visible(grant, id);
  }

  /** The unit entity a collection is bound to (by names), or null. */
  unitIdOf(collectionId: string): number | null {
    const record = this.catalog.get(collectionId);
    return record ? (this.access.unitIds(record)[0] ?? null) : null;
  }

  /** Collection ids bound to a unit entity. */
  collectionsOfUnit(unitId: number): string[] {
    const names = this.namePath('units', { siteId: this.db.prepare('SELECT siteId FROM units WHERE id = ?').pluck().get(unitId) } as Entity);
    const unit = this.db.prepare("SELECT json_extract(meta_data, '$.name') FROM units WHERE id = ?").pluck().get(unitId) as unknown;
    if (!names || typeof unit !== 'string') return [];
    return this.catalog.under([...names, unit]).map((r) => idOf(r));
  }

  /** Each tag's index in the collection's tag dictionary (-1: never written). */
  async tagIndexes(collectionId: string, tags: string[]): Promise<number[]> {
    return this.shards.shardFor(collectionId).call({ op: OP.TAG_INDEXES, collectionId, tags });
  }

  /** One monitor tick: one MONITOR_SAMPLE task per shard for the collections it owns, in parallel. */
  async monitorSample(requests: MonitorSampleRequest[]): Promise<MonitorSample[]> {
    this.refuseWhileRestoring();
    const byShard = new Map<Shard, MonitorSampleRequest[]>();
    for (const request of requests) {
      const shard = this.shards.shardFor(request.collectionId);
      let list = byShard.get(shard);
      if (!list) byShard.set(shard, (list = []));
      list.push(request);
    }
    const replies = await Promise.all([...byShard].map(([shard, collections]) => shard.call({ op: OP.MONITOR_SAMPLE, collections })));
    return replies.flat();
  }

  // ---- writes --------------------------------------------------------------

  async write(grant: AccessGrant, body: Uint8Array, contentType: string, mode: WriteMode, signal: AbortSignal, options: WriteOptions = {}): Promise<WriteResult> {
    this.refuseWhileRestoring();
    while (this.writeGate) await this.writeGate.promise;
    this.writesInFlight++;
    // Logged (the body copied) before it is stored; the pooled body buffer goes back only later.
    const logged = options.replicated ? null : this.replication?.willWrite(body, contentType, mode, options) ?? null;
    let result: WriteResult;
    try {
      result = await this.writeNow(grant, body, contentType, mode, options);
    } catch (err) {
      logged?.refused();
      throw err;
    } finally {
      if (--this.writesInFlight === 0) for (const wake of this.writesDrained.splice(0)) wake();
    }
    if (logged) {
      if (!result.success) logged.refused();
      else {
        const acknowledged = logged.stored();
        if (acknowledged && options.awaitReplica) await acknowledged;
      }
    }
    return result;
  }

  // ---- backup and restore --------------------------------------------------

  /** Writes in the storage service (from entry to their answer, forwards included). */
  private writesInFlight = 0;
  private readonly writesDrained: Array<() => void> = [];
  /** Set while new writes wait (a backup's instant); they go on when it resolves. */
  private writeGate: { promise: Promise<void>; open: () => void } | null = null;
  /** Set while a restore replaces the ts folder: writes and queries answer 503. */
  private restoring = false;

  private refuseWhileRestoring(): void {
    if (this.restoring) throw new ServiceError('UNAVAILABLE', 'a time-series restore is running; retry when it has finished', { headers: { 'retry-after': '5' } });
  }

  /** Holds new writes and waits for the ones under way to be answered. */
  private async quiesceWrites(): Promise<() => void> {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    const gate = { promise, open };
    while (this.writeGate) await this.writeGate.promise;
    this.writeGate = gate;
    if (this.writesInFlight > 0) await new Promise<void>((resolve) => this.writesDrained.push(resolve));
    return () => {
      if (this.writeGate === gate) this.writeGate = null;
      open();
    };
  }

  /**
   * A time-series backup's instant: new writes wait, the ones under way finish, then every shard
   * flushes and hard-links its files under `stagingDir` at once; writes go on right after (the
   * links take milliseconds). Every write is then wholly before the instant or wholly after it.
   */
  async backupMark(stagingDir: string): Promise<BackupMark> {
    this.refuseWhileRestoring();
    const resume = await this.quiesceWrites();
    try {
      const marks = await Promise.all(this.shards.shards.map((shard) => shard.call({ op: OP.BACKUP_MARK, stagingDir })));
      return { files: marks.flatMap((m) => m.files), collections: marks.flatMap((m) => m.collections) };
    } finally {
      resume();
    }
  }

  /**
   * Runs `swap` with the ts folder out of the workers' hands: writes and queries answer 503, the
   * workers flush and close every collection, `swap` moves folders, and the workers open what is
   * there afterwards (also when `swap` failed, after it has put things back). The collection
   * catalog and the tag map are rebuilt from what the workers opened.
   */
  async withStoreDetached<T>(swap: () => Promise<T>): Promise<{ result: T; collections: number }> {
    this.refuseWhileRestoring();
    const resume = await this.quiesceWrites();
    this.restoring = true;
    try {
      await Promise.all(this.shards.shards.map((shard) => shard.call({ op: OP.DETACH })));
      let result: T;
      try {
        result = await swap();
      } finally {
        await this.reattach();
      }
      return { result, collections: this.catalog.list().length };
    } finally {
      this.restoring = false;
      resume();
    }
  }

  /** Every shard opens its collections from disk; the catalog and the tag map follow. */
  private async reattach(): Promise<void> {
    await Promise.all(this.shards.shards.map((shard) => shard.call({ op: OP.ATTACH })));
    this.catalog.load();
    for (const record of this.catalog.list()) {
      const id = idOf(record);
      this.tagScopes.learn(id, await this.tagNamesOf(id));
    }
    this.tagScopes.notifyChanged();
  }

  /** The tag dictionary of a collection, from its meta.json. */
  private async tagNamesOf(collectionId: string): Promise<string[]> {
    try {
      const meta = JSON.parse(await fs.promises.readFile(path.join(collectionDir(this.config.dataDir, parseCollectionId(collectionId)), 'meta.json'), 'utf8')) as { tags?: unknown };
      return Array.isArray(meta.tags) ? meta.tags.filter((t): t is string => typeof t === 'string') : [];
    } catch {
      return [];
    }
  }

  private async writeNow(grant: AccessGrant, body: Uint8Array, contentType: string, mode: WriteMode, options: WriteOptions): Promise<WriteResult> {
    this.checkDisk();
    const { defaultScope, replicated: _replicated, awaitReplica: _awaitReplica, ...extra } = options;
    // Bodies only the worker can read (compressed, line protocol) have no scope to peek at.
    const peeked = options.contentEncoding || options.lineProtocol ? {} : peekScope(body, contentType);
    const scope = defaultScope ? { ...defaultScope, ...peeked } : peeked;
    const autoCreate = options.autoCreate ?? this.config.storage.autoCreateCollections;
    // The peeked scope only picks the shard (and turns a plain 403 away early): the worker
    // decodes the scope itself and checks it against the caller's units, so a body that
    // peeks one way and decodes another (repeated or escaped keys) gains nothing.
    const allowedUnits = this.access.unitPaths(grant);
    let shard: Shard;
    if (isCompleteScope(scope)) {
      const id = idOf(scope);
      parseCollectionId(id); // names that cannot be folders are a 400 here, before any worker sees them
      if (allowedUnits && !allowedUnits.includes(id.slice(0, id.lastIndexOf('/')))) throw forbidden(`collection ${id} is outside your access grant`);
      shard = this.shards.shardFor(id);
    } else {
      // No scope in the body: a worker resolves tags through the tag map and forwards what it does not own.
      shard = this.shards.shards[this.roundRobin++ % this.shards.shards.length];
    }
    const header: WriteFrameHeader = { mode, contentType, autoCreate, allowedUnits, ...(defaultScope ? { defaultScope } : {}), ...extra };
    const outcome = await shard.write(body, header);
    return this.settle(outcome, header);
  }

  private async settle(outcome: WriteOutcome, header: WriteFrameHeader): Promise<WriteResult> {
    if (outcome.error) throw ServiceError.fromWire(outcome.error);
    if (outcome.refused) return { success: false, error: outcome.refused };
    this.absorb(outcome);
    let points = outcome.points;
    for (const { collectionId, body } of outcome.forward) {
      const owner = this.shards.shardFor(collectionId);
      const forwarded = await owner.write(body, { mode: header.mode, contentType: 'application/octet-stream', autoCreate: header.autoCreate, allowedUnits: null, collectionId, ...(header.backfill ? { backfill: true } : {}) });
      if (forwarded.error) throw ServiceError.fromWire(forwarded.error);
      if (forwarded.refused) return { success: false, error: forwarded.refused };
      this.absorb(forwarded);
      points += forwarded.points;
    }
    return outcome.lines ? { success: true, points, lines: outcome.lines } : { success: true, points };
  }

  private absorb(outcome: WriteOutcome): void {
    for (const record of outcome.created) this.catalog.remember(record);
    for (const { collectionId, tags } of outcome.learned) this.tagScopes.learn(collectionId, tags);
    if (outcome.live && this.liveListener) this.liveListener(outcome.live);
  }

  // ---- live data -------------------------------------------------------------

  /** Which tags of a collection the owning worker sends back as they are written (empty: none). */
  async watchLive(collectionId: string, tags: string[]): Promise<void> {
    if (tags.length === 0) this.liveWatches.delete(collectionId);
    else this.liveWatches.set(collectionId, tags);
    await this.shards.shardFor(collectionId).call({ op: OP.LIVE_WATCH, collectionId, tags });
  }

  private rewatchLive(shardIndex: number): void {
    for (const [collectionId, tags] of this.liveWatches) {
      const shard = this.shards.shardFor(collectionId);
      if (shard.index !== shardIndex) continue;
      shard.call({ op: OP.LIVE_WATCH, collectionId, tags }).catch((err) => this.log.warn({ err: String(err), collectionId }, 'live watch could not be sent again to a restarted storage worker'));
    }
  }

  /**
   * 507 while free space on the data volume is under storage.minFreeBytes (checked at most once
   * a second), for every path that adds data: writes of every mode and route, and collection
   * creates and updates. A volume whose free space cannot be read counts as full: writing
   * blind onto it is how a disk fills up.
   */
  checkDisk(): void {
    const now = Date.now();
    if (now - this.diskCheckedAt > 1000) {
      this.diskCheckedAt = now;
      try {
        const stats = fs.statfsSync(this.config.dataDir);
        this.diskLow = stats.bavail * stats.bsize < this.config.storage.minFreeBytes;
        this.diskUnknown = null;
      } catch (err) {
        this.diskLow = true;
        if (this.diskUnknown === null) this.log.error({ err: String(err), dataDir: this.config.dataDir }, 'cannot read the free space of the data volume; refusing writes until it can be read');
        this.diskUnknown = String((err as Error)?.message ?? err);
      }
    }
    if (this.diskUnknown !== null) {
      throw new ServiceError('INSUFFICIENT_STORAGE', 'the free space of the data volume cannot be read; writes are refused until it can (storage.minFreeBytes), reads go on');
    }
    if (this.diskLow) throw new ServiceError('INSUFFICIENT_STORAGE', `free disk space is below storage.minFreeBytes (${this.config.storage.minFreeBytes} bytes); writes are refused, reads go on`);
  }

  // ---- reads ---------------------------------------------------------------

  /** Groups tags by collection: the explicit scope, else the tag-to-scope map. */
  resolve(grant: AccessGrant, fields: ScopeFields, tags: string[]): QueryGroup[] {
    return this.resolveMetrics(grant, [...new Set(tags)].map((name) => ({ name, scope: fields, pipeline: [] })));
  }

  /** Each metric's collection (its scope, else the tag map), grouped by collection; a repeated name keeps its last request. */
  resolveMetrics(grant: AccessGrant, metrics: MetricRequest[]): QueryGroup[] {
    const byName = new Map<string, { collectionId: string; request: SeriesRequest }>();
    for (const metric of metrics) {
      byName.delete(metric.name);
      byName.set(metric.name, { collectionId: this.collectionFor(grant, metric.scope, metric.name), request: { tag: metric.name, pipeline: metric.pipeline } });
    }
    const groups = new Map<string, SeriesRequest[]>();
    for (const { collectionId, request } of byName.values()) {
      let group = groups.get(collectionId);
      if (!group) groups.set(collectionId, (group = []));
      group.push(request);
    }
    return [...groups].map(([collectionId, series]) => ({ collectionId, series }));
  }

  private collectionFor(grant: AccessGrant, fields: ScopeFields, tag: string): string {
    const given = SCOPE_FIELDS.filter((k) => fields[k] !== undefined);
    let id: string | null;
    if (given.length > 0) {
      const missing = SCOPE_FIELDS.find((k) => fields[k] === undefined);
      if (missing) throw badRequest(`missing scope field '${missing}' (give all four scope fields, or none to use the tag map)`);
      id = idOf(fields as CollectionScope);
    } else {
      id = this.tagScopes.collectionOf(tag);
      // A tag of a collection the caller may not see is as unknown as one of no collection:
      // naming that collection would tell another tenant's names (and that the tag exists).
      if (!id || !this.visible(grant, id)) throw badRequest(`unknown tag "${tag}": it is in no collection you can read; give organization, site, unit and grid`);
    }
    this.collection(grant, id);
    return id;
  }

  /**
   * Streams the result in `format`: JSON `{tag: [[ts, value], ...]}`, the same as a
   * msgpack map, or binary format 1. The envelope is written here; each
   * collection's series come from its shard as fragments.
   */
  async query(groups: QueryGroup[], start: number, end: number, format: ResultFormat, out: ResponseStream, signal: AbortSignal): Promise<void> {
    this.refuseWhileRestoring();
    const deadline = Date.now() + this.config.storage.queryTimeoutMs;
    const total = groups.reduce((n, g) => n + g.series.length, 0);
    // The envelope waits for the first result bytes: a query refused before it produced any
    // (too much memory, a bad collection) is then still a clean error reply, not a cut stream.
    const body = afterPrefix(out, resultHead(format, total));
    let first = true;
    for (const { collectionId, series } of groups) {
      await this.shards.shardFor(collectionId).stream(
        (seq, slot) => ({ op: OP.QUERY, seq, slot, deadline, collectionId, series, start, end, format, first }),
        body,
        signal,
        deadline,
      );
      first = false;
    }
    body.write(resultTail(format));
  }

  /** Binary format 2 for one collection, built by its shard. */
  async queryTable(group: QueryGroup, start: number, end: number, out: ResponseStream, signal: AbortSignal): Promise<void> {
    this.refuseWhileRestoring();
    const deadline = Date.now() + this.config.storage.queryTimeoutMs;
    const { collectionId, series } = group;
    await this.shards.shardFor(collectionId).stream(
      (seq, slot) => ({ op: OP.QUERY_TABLE, seq, slot, deadline, collectionId, series, start, end }),
      out,
      signal,
      deadline,
    );
  }

  async lastValues(groups: QueryGroup[]): Promise<Record<string, [number, number] | null>> {
    this.refuseWhileRestoring();
    const replies = await Promise.all(
      groups.map(({ collectionId, series }) =>
        this.shards.shardFor(collectionId).call({ op: OP.LAST_VALUES, collectionId, tags: series.map((s) => s.tag) }),
      ),
    );
    // Keys in request order, whichever shard answered first.
    const result: Record<string, [number, number] | null> = {};
    groups.forEach(({ series }, g) => series.forEach((s, i) => (result[s.label ?? s.tag] = replies[g][i])));
    return result;
  }

  /**
   * Seals finished days now: of one collection the caller may see (404 otherwise), or, with
   * null, of every collection for an admin and of the caller's own collections for others.
   */
  async seal(grant: AccessGrant, collectionId: string | null): Promise<number> {
    this.refuseWhileRestoring();
    let replies: number[];
    if (collectionId !== null) {
      this.collection(grant, collectionId);
      replies = [await this.shards.shardFor(collectionId).call({ op: OP.SEAL, collectionId, force: true })];
    } else if (grant.isAdmin) {
      replies = await Promise.all(this.shards.shards.map((s) => s.call({ op: OP.SEAL, collectionId: null, force: true })));
    } else {
      const ids = this.visibleCollections(grant).map((r) => idOf(r));
      replies = await Promise.all(ids.map((id) => this.shards.shardFor(id).call({ op: OP.SEAL, collectionId: id, force: true })));
    }
    return replies.reduce((n, days) => n + days, 0);
  }

  async bufferStats(): Promise<BufferStats[]> {
    return Promise.all(this.shards.shards.map((s) => s.call({ op: OP.BUFFER_STATS })));
  }

  // ---- metadata side effects ----------------------------------------------

  /** Folder moves of org/site/unit renames: queued by writes not yet settled, and whether one is running. */
  private readonly moves = { queued: 0, running: false };

  /**
   * Entity hooks: renaming or moving an org, site or unit moves its collection
   * folders (all or nothing: checked before the commit, undone with the entity
   * change if the move fails after it); deleting one removes its collections;
   * a tagmeta row with a dataTagId binds that tag to its unit's collection
   * (when the unit has exactly one, and no other collection owns the tag).
   */
  entityHooks(defer: (job: DeferredJob) => void): EntityHooks {
    const isScopeTable = (def: EntityDef) => def.table === 'orgs' || def.table === 'sites' || def.table === 'units';
    return {
      afterCreate: (def, entity, grant) => this.mapDataTag(def, entity, null, grant, defer),
      afterUpdate: (def, before, after, grant) => {
        this.mapDataTag(def, after, before, grant, defer);
        if (isScopeTable(def)) this.followRename(def, before, after, defer);
      },
      beforeDelete: (def, entity) => {
        if (!isScopeTable(def)) return;
        this.requireRunning();
        const names = this.scopePath(def.table, entity);
        // Rows stored before names were unique may share a path: the collections stay with the one left.
        if (!names || this.bindersOf(def.table, names).some((id) => String(id) !== String(entity.id))) return;
        const doomed = this.catalog.under(names);
        if (doomed.length === 0) return;
        defer({
          run: async () => {
            await this.catalog.remove(doomed);
            for (const r of doomed) this.tagScopes.removeCollection(idOf(r));
            this.replication?.collectionChanged({ op: 'remove', ids: doomed.map(idOf) });
          },
        });
      },
    };
  }

  private requireRunning(): void {
    if (!this.running) {
      throw new ServiceError('UNAVAILABLE', 'the storage subsystem is not running, so org, site and unit renames, moves and deletes (which move collection folders) wait for it');
    }
  }

  /**
   * An org, site or unit whose name or parent changed: its collections must follow (the binding
   * is by names), and it must not come to bind collections it did not have. Everything that can
   * be checked is checked here, before the commit.
   */
  private followRename(def: EntityDef, before: Entity, after: Entity, defer: (job: DeferredJob) => void): void {
    const from = this.scopePath(def.table, before);
    const to = this.scopePath(def.table, after);
    if (from && to && from.every((name, i) => name === to[i])) return;
    if (!from && !to) return;
    this.requireRunning();
    if (this.moves.running) {
      // Checks below read the catalog, which a running move is changing.
      throw new ServiceError('UNAVAILABLE', 'collections of another org, site or unit are being moved; retry in a moment', { headers: { 'retry-after': '1' } });
    }
    if (to && this.catalog.under(to).length > 0) {
      throw conflict(`DUPLICATE: collections already exist under ${to.join('/')}; a rename or move does not merge into them`);
    }
    const affected = from ? this.catalog.under(from) : [];
    if (affected.length === 0) return;
    if (!to) {
      throw conflict(`${def.urlNames[0]} ${String(after.id)} has collections, so it needs a name, and parents with names, for their folders`);
    }
    this.catalog.checkRelocation(from!, to);
    const kind = def.urlNames[0]!.replace(/s$/, '');
    const move = async (source: readonly string[], target: readonly string[]) => {
      let renamed: Array<[string, string]>;
      try {
        renamed = await this.catalog.relocate(source, target);
      } catch (err) {
        this.log.warn({ err, from: source.join('/'), to: target.join('/') }, 'collection folders could not be moved');
        if (err instanceof ServiceError) throw err;
        const code = (err as NodeJS.ErrnoException).code ?? 'error';
        const inTheWay = ['EEXIST', 'ENOTEMPTY', 'ENOTDIR', 'EISDIR'].includes(code);
        throw new ServiceError(inTheWay ? 'CONFLICT' : 'INTERNAL', `the collection folders of ${kind} ${source.join('/')} could not be moved to ${target.join('/')} (${code})`);
      }
      for (const [oldId, newId] of renamed) this.tagScopes.renameCollection(oldId, newId);
      this.replication?.collectionChanged({ op: 'relocate', from: source, to: target });
    };
    const finished = () => {
      if (--this.moves.queued === 0) this.moves.running = false;
    };
    defer({
      run: async () => {
        this.moves.running = true;
        try {
          await move(from!, to);
        } finally {
          finished();
        }
      },
      revert: async () => {
        this.moves.queued++;
        this.moves.running = true;
        try {
          await move(to, from!);
        } finally {
          finished();
        }
      },
      drop: finished,
    });
    this.moves.queued++; // after defer(): drop() is only ever called once the hook has returned
  }

  /**
   * Binds a tagmeta row's dataTagId to its unit's collection (when the unit has exactly one).
   * A tag another collection owns is not re-bound: 409, naming that collection to admins only.
   */
  private mapDataTag(def: EntityDef, entity: Entity, before: Entity | null, grant: AccessGrant, defer: (job: DeferredJob) => void): void {
    if (def.table !== 'tagmeta' || typeof entity.dataTagId !== 'string' || !entity.unitsId) return;
    if (before && before.dataTagId === entity.dataTagId && before.unitsId === entity.unitsId) return; // binding unchanged
    const unit = this.db.prepare(
      `SELECT json_extract(u.meta_data, '$.name') AS unit, json_extract(s.meta_data, '$.name') AS site, json_extract(o.meta_data, '$.name') AS org
         FROM units u JOIN sites s ON u.siteId = s.id JOIN orgs o ON s.orgsId = o.id WHERE u.id = ?`,
    ).get(Number(entity.unitsId)) as { unit: unknown; site: unknown; org: unknown } | undefined;
    if (!unit || typeof unit.org !== 'string' || typeof unit.site !== 'string' || typeof unit.unit !== 'string') return;
    const matches = this.catalog.under([unit.org, unit.site, unit.unit]);
    if (matches.length !== 1) return;
    const { owner, changed } = this.tagScopes.claim(idOf(matches[0]!), entity.dataTagId);
    if (owner !== null) {
      const named = grant.isAdmin ? ` (${owner})` : '';
      throw conflict(`DUPLICATE: tag ${JSON.stringify(entity.dataTagId)} already belongs to another collection${named}; a tag is in one collection only`);
    }
    // Workers re-read the map once the binding is committed, not before.
    if (changed) defer({ run: async () => this.tagScopes.notifyChanged() });
  }

  /** Ids of the org, site or unit rows bound to a path of names (one, unless stored data has duplicates). */
  private bindersOf(table: string, names: readonly string[]): number[] {
    if (table === 'units') return this.access.unitIds({ organization: names[0]!, site: names[1]!, unit: names[2]! });
    const name = (alias: string) => `(CASE WHEN json_valid(${alias}.meta_data) THEN json_extract(${alias}.meta_data, '$.name') END)`;
    const sql =
      table === 'orgs'
        ? `SELECT o.id FROM orgs o WHERE ${name('o')} = ?`
        : `SELECT s.id FROM sites s JOIN orgs o ON s.orgsId = o.id WHERE ${name('o')} = ? AND ${name('s')} = ?`;
    return this.db.prepare(sql).pluck().all(...names) as number[];
  }

  /** Names of an org ([org]), site ([org, site]) or unit ([org, site, unit]); null when one is missing. */
  private scopePath(table: string, entity: Entity): string[] | null {
    if (typeof entity.name !== 'string') return null;
    const parents = this.namePath(table, entity);
    return parents ? [...parents, entity.name] : null;
  }

  /** Names of the org (and site) above an org/site/unit entity, outermost first. */
  private namePath(table: string, entity: Entity): string[] | null {
    if (table === 'orgs') return [];
    if (table === 'sites') {
      const org = this.db.prepare("SELECT json_extract(meta_data, '$.name') FROM orgs WHERE id = ?").pluck().get(Number(entity.orgsId)) as unknown;
      return typeof org === 'string' ? [org] : null;
    }
    const row = this.db.prepare(
      `SELECT json_extract(s.meta_data, '$.name') AS site, json_extract(o.meta_data, '$.name') AS org
         FROM sites s JOIN orgs o ON s.orgsId = o.id WHERE s.id = ?`,
    ).get(Number(entity.siteId)) as { site: unknown; org: unknown } | undefined;
    return row && typeof row.site === 'string' && typeof row.org === 'string' ? [row.org, row.site] : null;
  }
}
