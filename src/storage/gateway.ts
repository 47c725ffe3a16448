// The shard gateway: how the main thread reaches the storage workers. It finds the shard that
// owns a collection, hands it write bodies as bytes (it never parses one: scope-peek reads only
// the top-level scope keys) and relays results as the workers stream them (it never scans a day
// file). What a write tells the rest of the service goes out as events: the collections and tags
// it created (into the directory), the points of live-watched tags (LiveFeed.points), and, before
// it is stored, the write itself to whoever records writes (the cluster's replication).

import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { ResponseStream } from '../http/route.js';
import { Signal } from '../signal.js';
import { resultHead, resultTail } from '../../native-free-codecs/result-envelope.js';
import { decodeF64Fragments } from '../../native-free-codecs/result-f64.js';
import { peekScope } from '../../native-free-codecs/scope-peek.js';
import { badRequest, ServiceError } from '../../shared/errors.js';
import { OP, type BufferStats, type LivePoints, type MonitorSample, type MonitorSampleRequest, type SeriesListing, type ResultFormat, type WriteFrameHeader, type WriteMode, type WriteOutcome } from '../../shared/protocol.js';
import { isCompleteScope } from '../../shared/scope.js';
import { collectionId as idOf, parseCollectionId } from '../../shared/scope-path.js';
import type { CollectedSeries, LiveFeed, MonitorSampler, PointWriter, QueryGroup, RecordedWrite, WriteOptions, WriteResult } from './api.js';
import type { CollectionDirectory } from './directory.js';
import type { DiskGuard } from './disk-guard.js';
import type { Shard, ShardPool } from './shards.js';
import type { StoreGate } from './store-gate.js';
import { REPLICATED_WRITES, UNNAMED_WRITES, WriteCounters } from './write-counters.js';

export type WriteRecorder = (body: Uint8Array, contentType: string, mode: WriteMode, options: WriteOptions) => RecordedWrite;

/** What a write records when nobody records writes (a single node): shared, so a write allocates nothing for it. */
const NOT_RECORDED: readonly RecordedWrite[] = Object.freeze([]);

export interface GatewaySettings {
  autoCreateCollections: boolean;
  queryTimeoutMs: number;
  maxDaysPerWrite: number;
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

export class ShardGateway implements PointWriter, MonitorSampler, LiveFeed {
  readonly points = new Signal<[points: LivePoints[]]>();
  /** Points and bytes stored, by route and durability (GET /metrics). */
  readonly writes = new WriteCounters();
  private readonly recorders: WriteRecorder[] = [];
  /** The live-watched tags per collection, kept to send again to a restarted worker. */
  /** Per shard, the tags its worker said it watches after the last change. */
  private readonly watchedPerShard = new Map<number, number>();
  private roundRobin = 0;

  constructor(
    private readonly shards: ShardPool,
    private readonly directory: CollectionDirectory,
    private readonly gate: StoreGate,
    private readonly disk: DiskGuard,
    private readonly settings: GatewaySettings,
    private readonly log: Logger,
    /** The service clock: seal_now seals the days before its today (a debug clock moved ahead included). */
    private readonly now: () => number = Date.now,
  ) {}

  get maxBodyBytes(): number {
    return this.shards.shards[0].maxBodyBytes;
  }

  get maxDaysPerWrite(): number {
    return this.settings.maxDaysPerWrite;
  }

  /** `record` sees every write not applied from another node, before it is stored. */
  recordWrites(record: WriteRecorder): void {
    this.recorders.push(record);
  }

  // ---- writes --------------------------------------------------------------

  async write(grant: AccessGrant, body: Uint8Array, contentType: string, mode: WriteMode, signal: AbortSignal, options: WriteOptions = {}): Promise<WriteResult> {
    this.gate.refuseChanges();
    // The body's size is held against the free-disk floor until it is on disk (disk-guard.ts).
    this.disk.reserve(body.byteLength);
    try {
      return await this.writeReserved(grant, body, contentType, mode, signal, options);
    } finally {
      this.disk.written(body.byteLength, mode !== 'buffered');
    }
  }

  private async writeReserved(grant: AccessGrant, body: Uint8Array, contentType: string, mode: WriteMode, signal: AbortSignal, options: WriteOptions): Promise<WriteResult> {
    await this.gate.enter();
    // Recorded (the body copied) before it is stored; the pooled body buffer goes back only later.
    const recorded = options.replicated || this.recorders.length === 0 ? NOT_RECORDED : this.recorders.map((record) => record(body, contentType, mode, options));
    let result: WriteResult;
    try {
      result = await this.writeNow(grant, body, contentType, mode, options);
    } catch (err) {
      for (const r of recorded) r.refused();
      throw err;
    } finally {
      this.gate.leave();
    }
    if (!result.success) for (const r of recorded) r.refused();
    else {
      this.writes.count(options.route ?? (options.replicated ? REPLICATED_WRITES : UNNAMED_WRITES), mode, result.points, body.byteLength);
      for (const r of recorded) {
        const acknowledged = r.stored();
        if (acknowledged && options.awaitReplica) await acknowledged;
      }
    }
    return result;
  }

  private async writeNow(grant: AccessGrant, body: Uint8Array, contentType: string, mode: WriteMode, options: WriteOptions): Promise<WriteResult> {
    const { defaultScope, replicated: _replicated, awaitReplica: _awaitReplica, route: _route, ...extra } = options;
    // Bodies only the worker can read (compressed, line protocol) have no scope to peek at.
    const peeked = options.contentEncoding || options.lineProtocol ? {} : peekScope(body, contentType);
    const scope = defaultScope ? { ...defaultScope, ...peeked } : peeked;
    const autoCreate = options.autoCreate ?? this.settings.autoCreateCollections;
    // The peeked scope only picks the shard (and turns a plain 403 away early): the worker
    // decodes the scope itself and checks it against the caller's units, so a body that
    // peeks one way and decodes another (repeated or escaped keys) gains nothing.
    const allowedUnits = this.directory.unitPaths(grant);
    let shard: Shard;
    if (isCompleteScope(scope)) {
      const id = idOf(scope);
      parseCollectionId(id); // names that cannot be folders are a 400 here, before any worker sees them
      if (allowedUnits && !allowedUnits.includes(id.slice(0, id.lastIndexOf('/')))) throw new ServiceError('FORBIDDEN', `collection ${id} is outside your access grant`);
      shard = this.shards.shardFor(id);
    } else {
      // No scope in the body: a worker resolves tags through the tag map and forwards what it does not own.
      shard = this.shards.shards[this.roundRobin++ % this.shards.shards.length];
    }
    const header: WriteFrameHeader = { mode, contentType, autoCreate, allowedUnits, ...(defaultScope ? { defaultScope } : {}), ...(options.replicated ? { replicated: true } : {}), ...extra };
    const outcome = await shard.write(body, header);
    return this.settle(outcome, header);
  }

  private async settle(outcome: WriteOutcome, header: WriteFrameHeader): Promise<WriteResult> {
    if (outcome.error) throw ServiceError.fromWire(outcome.error);
    if (outcome.refused) return { success: false, error: outcome.refused };
    this.absorb(outcome);
    let points = outcome.points;
    for (const { collectionId, body, labels, contentType } of outcome.forward) {
      const owner = this.shards.shardFor(collectionId);
      const forwarded = await owner.write(body, { mode: header.mode, contentType: contentType ?? 'application/octet-stream', autoCreate: header.autoCreate, allowedUnits: null, collectionId, ...(labels ? { labels } : {}), ...(header.backfill ? { backfill: true } : {}), ...(header.replicated ? { replicated: true } : {}) });
      if (forwarded.error) throw ServiceError.fromWire(forwarded.error);
      if (forwarded.refused) return { success: false, error: forwarded.refused };
      this.absorb(forwarded);
      points += forwarded.points;
    }
    return outcome.lines ? { success: true, points, lines: outcome.lines } : { success: true, points };
  }

  /** Bumped whenever a write adds series to a collection (the workers report them), for caches of series listings. */
  private readonly seriesVersions = new Map<string, number>();

  /** A number that changes whenever a write adds series to `collectionId` on this node. */
  seriesVersion(collectionId: string): number {
    return this.seriesVersions.get(collectionId) ?? 0;
  }

  private absorb(outcome: WriteOutcome): void {
    for (const record of outcome.created) this.directory.catalog.remember(record);
    for (const { collectionId, tags } of outcome.learned) {
      this.directory.tagScopes.learn(collectionId, tags);
      this.seriesVersions.set(collectionId, (this.seriesVersions.get(collectionId) ?? 0) + 1);
    }
    if (outcome.live) this.points.emit(outcome.live);
  }

  // ---- reads ---------------------------------------------------------------

  /**
   * Streams the result in `format`: JSON `{tag: [[ts, value], ...]}`, the same as a msgpack map,
   * or binary format 1. The envelope is written here; each collection's series come from its
   * shard as fragments.
   */
  async query(groups: QueryGroup[], start: number, end: number, format: ResultFormat, out: ResponseStream, signal: AbortSignal): Promise<void> {
    this.gate.refuseWhileRestoring();
    const deadline = Date.now() + this.settings.queryTimeoutMs;
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

  /**
   * The result of a query in memory (msgpack from the workers, decoded here), refused with a
   * 400 naming `limitSetting` once it passes `maxBytes` encoded.
   */
  async collect(groups: QueryGroup[], start: number, end: number, signal: AbortSignal, maxBytes: number, limitSetting: string): Promise<Map<string, CollectedSeries>> {
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    let tooLarge = false;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    // The shards send a result as far as their credit goes and wait for the bytes to be taken
    // (onFlushed): here every chunk is taken as it comes, so credit is given back at once.
    const flushed = new Set<(bytes: number) => void>();
    const sink: ResponseStream = {
      write(chunk) {
        if (tooLarge) return;
        const part = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk.slice();
        bytes += part.byteLength;
        if (bytes > maxBytes) {
          tooLarge = true;
          stop.abort();
          return;
        }
        chunks.push(part);
        queueMicrotask(() => {
          for (const listener of flushed) listener(part.byteLength);
        });
      },
      queuedBytes: 0,
      onFlushed: (listener) => {
        flushed.add(listener);
        return () => flushed.delete(listener);
      },
      get aborted() {
        return tooLarge || signal.aborted;
      },
      cut() {
        stop.abort();
      },
    };
    try {
      await this.query(groups, start, end, 'f64', sink, stop.signal);
    } catch (err) {
      if (!tooLarge) throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (tooLarge) throw badRequest(`the query needs more than ${limitSetting} (${maxBytes} bytes) of points on the main thread: narrow the time range, or aggregate (GROUP BY time)`);
    return decodeF64Fragments(Buffer.concat(chunks));
  }

  /** Binary format 2 for one collection, built by its shard. */
  async queryTable(group: QueryGroup, start: number, end: number, out: ResponseStream, signal: AbortSignal): Promise<void> {
    this.gate.refuseWhileRestoring();
    const deadline = Date.now() + this.settings.queryTimeoutMs;
    const { collectionId, series } = group;
    await this.shards.shardFor(collectionId).stream(
      (seq, slot) => ({ op: OP.QUERY_TABLE, seq, slot, deadline, collectionId, series, start, end }),
      out,
      signal,
      deadline,
    );
  }

  /**
   * The series of one collection the caller may see (404 otherwise) or, with null, of every
   * visible collection, whose tag names match `glob`: the first `limit`, ordered by collection
   * then tag name, with their labels and last points, and how many match in all.
   */
  async listSeries(grant: AccessGrant, collectionId: string | null, glob: string, limit: number): Promise<{ series: SeriesListing[]; total: number; has_more: boolean }> {
    this.gate.refuseWhileRestoring();
    const ids = collectionId !== null ? [idOf(this.directory.get(grant, collectionId))] : this.directory.visible(grant).map((record) => idOf(record));
    const byShard = new Map<Shard, string[]>();
    for (const id of ids) {
      const shard = this.shards.shardFor(id);
      const list = byShard.get(shard);
      if (list) list.push(id);
      else byShard.set(shard, [id]);
    }
    const replies = await Promise.all([...byShard].map(([shard, collections]) => shard.call({ op: OP.LIST_SERIES, collections, glob, limit })));
    const position = new Map(ids.map((id, i) => [id, i]));
    // Each shard answered in collection order, name order within; a stable sort by collection merges them.
    const series = replies.flatMap((r) => r.series).sort((a, b) => position.get(a.collection)! - position.get(b.collection)!).slice(0, limit);
    const total = replies.reduce((n, r) => n + r.total, 0);
    return { series, total, has_more: total > series.length };
  }

  async lastValues(groups: QueryGroup[]): Promise<Record<string, [number, number] | null>> {
    this.gate.refuseWhileRestoring();
    const replies = await Promise.all(
      groups.map(({ collectionId, series }) => this.shards.shardFor(collectionId).call({ op: OP.LAST_VALUES, collectionId, tags: series.map((s) => s.tag) })),
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
    this.gate.refuseChanges();
    let replies: number[];
    if (collectionId !== null) {
      this.directory.get(grant, collectionId);
      replies = [await this.shards.shardFor(collectionId).call({ op: OP.SEAL, collectionId, force: true, nowMs: this.now() })];
    } else if (grant.isAdmin) {
      replies = await Promise.all(this.shards.shards.map((s) => s.call({ op: OP.SEAL, collectionId: null, force: true, nowMs: this.now() })));
    } else {
      const ids = this.directory.visible(grant).map((r) => idOf(r));
      replies = await Promise.all(ids.map((id) => this.shards.shardFor(id).call({ op: OP.SEAL, collectionId: id, force: true, nowMs: this.now() })));
    }
    return replies.reduce((n, days) => n + days, 0);
  }

  async bufferStats(): Promise<BufferStats[]> {
    return Promise.all(this.shards.shards.map((s) => s.call({ op: OP.BUFFER_STATS })));
  }

  // ---- the monitor's sample ---------------------------------------------------

  /** One monitor tick: one MONITOR_SAMPLE task per shard for the collections it owns, in parallel, each ahead of the writes queued in its ring. */
  async sample(requests: MonitorSampleRequest[]): Promise<MonitorSample[]> {
    this.gate.refuseWhileRestoring();
    const byShard = new Map<Shard, MonitorSampleRequest[]>();
    for (const request of requests) {
      const shard = this.shards.shardFor(request.collectionId);
      let list = byShard.get(shard);
      if (!list) byShard.set(shard, (list = []));
      list.push(request);
    }
    const replies = await Promise.all([...byShard].map(([shard, collections]) => shard.callFirst({ op: OP.MONITOR_SAMPLE, collections, framesTaken: shard.framesTaken })));
    return replies.flat();
  }

  async tagIndexes(collectionId: string, tags: string[]): Promise<number[]> {
    return this.shards.shardFor(collectionId).call({ op: OP.TAG_INDEXES, collectionId, tags });
  }

  // ---- live data -------------------------------------------------------------

  async watch(collectionId: string, add: string[], remove: string[]): Promise<void> {
    const shard = this.shards.shardFor(collectionId);
    this.watchedPerShard.set(shard.index, await shard.watchLive(collectionId, add, remove));
  }

  get watchedTags(): number {
    let total = 0;
    for (const count of this.watchedPerShard.values()) total += count;
    return total;
  }

  /**
   * A restarted worker is told again which tags of its collections are watched. It already
   * started with them (StorageWorkerData.liveWatches); this is a backstop for a change made
   * while it was starting.
   */
  rewatch(shardIndex: number): void {
    this.watchedPerShard.set(shardIndex, 0);
    const shard = this.shards.shards[shardIndex];
    for (const [collectionId, tags] of shard.liveWatches) {
      shard.call({ op: OP.LIVE_WATCH, collectionId, add: [...tags], remove: [], replace: true }).then((count) => this.watchedPerShard.set(shardIndex, count)).catch((err) => this.log.warn({ err: String(err), collectionId }, 'live watch could not be sent again to a restarted storage worker'));
    }
  }

}
