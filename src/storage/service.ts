// The time-series side of the main thread: routes call this; it finds the
// owning shard, checks access, hands bytes to workers and relays results.
// It never parses a write body (scope-peek reads only top-level keys) and
// never scans a day file.

import fs from 'node:fs';
import os from 'node:os';
import type { Config } from '../config.js';
import { HttpError, badRequest, forbidden, notFound } from '../http/errors.js';
import type { ResponseStream } from '../http/route.js';
import type { Logger } from '../log.js';
import type { Db } from '../meta/database.js';
import type { Entity, EntityHooks } from '../meta/entities.js';
import type { EntityDef } from '../meta/registry.js';
import type { Scope } from '../meta/scope.js';
import { isComplete, peekScope } from '../../native-free-codecs/scope-peek.js';
import { OP, type BufferStats, type CollectionRecord, type ResultFormat, type ScopeFields, type SeriesRequest, type WriteMode, type WriteOutcome } from '../../workers/protocol.js';
import type { MetricRequest } from './query-spec.js';
import { collectionId as idOf, parseCollectionId, SCOPE_FIELDS as SCOPE_NAMES } from '../../workers/scope-path.js';
import { CollectionAccess } from './access.js';
import { CollectionCatalog, type Scope4 } from './catalog.js';
import { ShardPool, type Shard } from './shards.js';
import { TagScopes } from './tag-scopes.js';

export interface QueryGroup {
  collectionId: string;
  series: SeriesRequest[];
}


/** What precedes the shards' fragments: `{`, a msgpack map header, or the HSB1 header. */
function envelopeStart(format: ResultFormat, seriesCount: number): Uint8Array | string {
  if (format === 'json') return '{';
  if (format === 'msgpack') return Uint8Array.of(0xdf, seriesCount >>> 24, (seriesCount >>> 16) & 0xff, (seriesCount >>> 8) & 0xff, seriesCount & 0xff);
  const header = new Uint8Array(8);
  header.set([0x48, 0x53, 0x42, 0x31]);
  new DataView(header.buffer).setUint32(4, seriesCount, true);
  return header;
}

/** `out`, with `prefix` sent just before the first chunk written to it. */
function afterPrefix(out: ResponseStream, prefix: Uint8Array | string): ResponseStream {
  let pending: Uint8Array | string | null = prefix;
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
    get aborted() {
      return out.aborted;
    },
  };
}

export type WriteResult = { success: true; points: number } | { success: false; error: string };

export class StorageService {
  readonly shards: ShardPool;
  readonly catalog: CollectionCatalog;
  readonly tagScopes: TagScopes;
  readonly access: CollectionAccess;
  private roundRobin = 0;
  private diskCheckedAt = 0;
  private diskLow = false;

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
      log,
    });
    this.catalog = new CollectionCatalog(config.dataDir, this.shards, log);
    this.tagScopes = new TagScopes(db, () => this.shards.tagMapChanged());
    this.access = new CollectionAccess(db);
  }

  async start(): Promise<void> {
    await this.shards.ready();
    this.catalog.load();
  }

  async close(): Promise<void> {
    await this.shards.close();
  }

  get maxBodyBytes(): number {
    return this.shards.shards[0].maxBodyBytes;
  }

  // ---- collections ---------------------------------------------------------

  visibleCollections(scope: Scope): CollectionRecord[] {
    return this.access.filter(scope, this.catalog.list());
  }

  collection(scope: Scope, id: string): CollectionRecord {
    const record = this.catalog.get(id);
    if (!record) throw notFound(`collection ${id} not found`);
    if (!this.access.canAccess(scope, record)) throw forbidden(`collection ${id} is outside your access grant`);
    return record;
  }

  async createCollection(scope: Scope, fields: Scope4, extra: Record<string, unknown>): Promise<CollectionRecord> {
    if (!this.access.canAccess(scope, fields)) throw forbidden('the collection\'s unit is outside your access grant');
    return this.catalog.create(fields, extra);
  }

  async updateCollection(scope: Scope, fields: Scope4, extra: Record<string, unknown>): Promise<CollectionRecord> {
    const id = idOf(fields);
    this.collection(scope, id);
    return this.catalog.update(id, extra);
  }

  /** Whether one of the caller's granted units (any unit, for admins) has a collection. */
  unitConfigured(scope: Scope): boolean {
    return this.visibleCollections(scope).length > 0;
  }

  // ---- writes --------------------------------------------------------------

  async write(scope: Scope, body: Uint8Array, contentType: string, mode: WriteMode, signal: AbortSignal): Promise<WriteResult> {
    this.checkDisk();
    const peeked = peekScope(body, contentType);
    const autoCreate = this.config.storage.autoCreateCollections;
    let shard: Shard;
    let allowed: string[] | null = null;
    if (isComplete(peeked)) {
      const id = idOf(peeked);
      parseCollectionId(id); // names that cannot be folders are a 400 here, before any worker sees them
      const known = this.catalog.get(id);
      if (!scope.isAdmin && !this.access.canAccess(scope, known ?? peeked)) throw forbidden(`collection ${id} is outside your access grant`);
      shard = this.shards.shardFor(id);
    } else {
      // No scope in the body: a worker resolves tags through the tag map and forwards what it does not own.
      shard = this.shards.shards[this.roundRobin++ % this.shards.shards.length];
      if (!scope.isAdmin) allowed = this.visibleCollections(scope).map((r) => idOf(r));
    }
    const reply = await shard.write(body, { mode, contentType, autoCreate, allowed });
    return this.settle(reply.write!, mode, autoCreate);
  }

  private async settle(outcome: WriteOutcome, mode: WriteMode, autoCreate: boolean): Promise<WriteResult> {
    if (outcome.error) throw HttpError.fromWire(outcome.error);
    if (outcome.refused) return { success: false, error: outcome.refused };
    this.absorb(outcome);
    let points = outcome.points;
    for (const { collectionId, body } of outcome.forward) {
      const owner = this.shards.shardFor(collectionId);
      const reply = await owner.write(body, { mode, contentType: 'application/octet-stream', autoCreate, allowed: null, collectionId });
      const forwarded = reply.write!;
      if (forwarded.error) throw HttpError.fromWire(forwarded.error);
      if (forwarded.refused) return { success: false, error: forwarded.refused };
      this.absorb(forwarded);
      points += forwarded.points;
    }
    return { success: true, points };
  }

  private absorb(outcome: WriteOutcome): void {
    for (const record of outcome.created) this.catalog.remember(record);
    for (const { collectionId, tags } of outcome.learned) this.tagScopes.learn(collectionId, tags);
  }

  /** 507 while free space on the data volume is under storage.minFreeBytes (checked at most once a second). */
  private checkDisk(): void {
    const now = Date.now();
    if (now - this.diskCheckedAt > 1000) {
      this.diskCheckedAt = now;
      try {
        const stats = fs.statfsSync(this.config.dataDir);
        this.diskLow = stats.bavail * stats.bsize < this.config.storage.minFreeBytes;
      } catch {
        this.diskLow = false;
      }
    }
    if (this.diskLow) throw new HttpError('INSUFFICIENT_STORAGE', `free disk space is below storage.minFreeBytes (${this.config.storage.minFreeBytes} bytes); writes are refused, reads go on`);
  }

  // ---- reads ---------------------------------------------------------------

  /** Groups tags by collection: the explicit scope, else the tag-to-scope map. */
  resolve(scope: Scope, fields: ScopeFields, tags: string[]): QueryGroup[] {
    return this.resolveMetrics(scope, [...new Set(tags)].map((name) => ({ name, scope: fields, pipeline: [] })));
  }

  /** Each metric's collection (its scope, else the tag map), grouped by collection; a repeated name keeps its last request. */
  resolveMetrics(scope: Scope, metrics: MetricRequest[]): QueryGroup[] {
    const byName = new Map<string, { collectionId: string; request: SeriesRequest }>();
    for (const metric of metrics) {
      byName.delete(metric.name);
      byName.set(metric.name, { collectionId: this.collectionFor(scope, metric.scope, metric.name), request: { tag: metric.name, pipeline: metric.pipeline } });
    }
    const groups = new Map<string, SeriesRequest[]>();
    for (const { collectionId, request } of byName.values()) {
      let group = groups.get(collectionId);
      if (!group) groups.set(collectionId, (group = []));
      group.push(request);
    }
    return [...groups].map(([collectionId, series]) => ({ collectionId, series }));
  }

  private collectionFor(scope: Scope, fields: ScopeFields, tag: string): string {
    const given = SCOPE_NAMES.filter((k) => fields[k] !== undefined);
    let id: string | null;
    if (given.length > 0) {
      const missing = SCOPE_NAMES.find((k) => fields[k] === undefined);
      if (missing) throw badRequest(`missing scope field '${missing}' (give all four scope fields, or none to use the tag map)`);
      id = idOf(fields as Scope4);
    } else {
      id = this.tagScopes.collectionOf(tag);
      if (!id) throw badRequest(`unknown tag "${tag}": it is in no collection; give organization, site, unit and grid`);
    }
    this.collection(scope, id);
    return id;
  }

  /**
   * Streams the result in `format`: JSON `{tag: [[ts, value], ...]}`, the same as a
   * msgpack map, or binary format 1. The envelope is written here; each
   * collection's series come from its shard as fragments.
   */
  async query(groups: QueryGroup[], start: number, end: number, format: ResultFormat, out: ResponseStream, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + this.config.storage.queryTimeoutMs;
    const total = groups.reduce((n, g) => n + g.series.length, 0);
    // The envelope waits for the first result bytes: a query refused before it produced any
    // (too much memory, a bad collection) is then still a clean error reply, not a cut stream.
    const body = afterPrefix(out, envelopeStart(format, total));
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
    body.write(format === 'json' ? '}' : '');
  }

  /** Binary format 2 for one collection, built by its shard. */
  async queryTable(group: QueryGroup, start: number, end: number, out: ResponseStream, signal: AbortSignal): Promise<void> {
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
    const replies = await Promise.all(
      groups.map(({ collectionId, series }) =>
        this.shards.shardFor(collectionId).call({ op: OP.LAST_VALUES, collectionId, tags: series.map((s) => s.tag) }),
      ),
    );
    // Keys in request order, whichever shard answered first.
    const result: Record<string, [number, number] | null> = {};
    groups.forEach(({ series }, g) => series.forEach((s, i) => (result[s.label ?? s.tag] = replies[g].last![i])));
    return result;
  }

  async seal(collectionId: string | null): Promise<number> {
    const targets = collectionId ? [this.shards.shardFor(collectionId)] : this.shards.shards;
    const replies = await Promise.all(targets.map((s) => s.call({ op: OP.SEAL, collectionId, force: true })));
    return replies.reduce((n, r) => n + (r.sealedDays ?? 0), 0);
  }

  async bufferStats(): Promise<BufferStats[]> {
    return Promise.all(this.shards.shards.map(async (s) => (await s.call({ op: OP.BUFFER_STATS })).stats!));
  }

  // ---- metadata side effects ----------------------------------------------

  /**
   * Entity hooks: renaming an org, site or unit renames the collection folder;
   * deleting one removes its collections; a tagmeta row with a dataTagId maps
   * that tag to its unit's collection (when the unit has exactly one).
   */
  entityHooks(defer: (job: () => Promise<void>) => void): EntityHooks {
    const level = (table: string) => (table === 'orgs' ? 0 : table === 'sites' ? 1 : 2) as 0 | 1 | 2;
    const isScopeTable = (def: EntityDef) => def.table === 'orgs' || def.table === 'sites' || def.table === 'units';
    return {
      afterCreate: (def, entity) => this.mapDataTag(def, entity),
      afterUpdate: (def, before, after) => {
        this.mapDataTag(def, after);
        if (!isScopeTable(def) || before.name === after.name) return;
        const parents = this.namePath(def.table, before);
        const from = before.name;
        const to = after.name;
        if (!parents || typeof from !== 'string' || typeof to !== 'string') return;
        defer(async () => {
          const renamed = await this.catalog.renameLevel(level(def.table), parents, from, to);
          for (const [oldId, newId] of renamed) this.tagScopes.renamePrefix(oldId, newId);
        });
      },
      beforeDelete: (def, entity) => {
        if (!isScopeTable(def) || typeof entity.name !== 'string') return;
        const parents = this.namePath(def.table, entity);
        if (!parents) return;
        const keys = ['organization', 'site', 'unit'] as const;
        const names = [...parents, entity.name];
        const doomed = this.catalog.list().filter((r) => keys.slice(0, level(def.table) + 1).every((k, i) => r[k] === names[i]));
        if (doomed.length === 0) return;
        defer(async () => {
          await this.catalog.remove(doomed);
          for (const r of doomed) this.tagScopes.removeCollection(idOf(r));
        });
      },
    };
  }

  private mapDataTag(def: EntityDef, entity: Entity): void {
    if (def.table !== 'tagmeta' || typeof entity.dataTagId !== 'string' || !entity.unitsId) return;
    const unit = this.db.prepare(
      `SELECT json_extract(u.meta_data, '$.name') AS unit, json_extract(s.meta_data, '$.name') AS site, json_extract(o.meta_data, '$.name') AS org
         FROM units u JOIN sites s ON u.siteId = s.id JOIN orgs o ON s.orgsId = o.id WHERE u.id = ?`,
    ).get(Number(entity.unitsId)) as { unit: string; site: string; org: string } | undefined;
    if (!unit) return;
    const matches = this.catalog.list().filter((r) => r.organization === unit.org && r.site === unit.site && r.unit === unit.unit);
    if (matches.length === 1) this.tagScopes.learn(idOf(matches[0]), [entity.dataTagId]);
  }

  /** Names of the org (and site) above an org/site/unit entity, outermost first. */
  private namePath(table: string, entity: Entity): string[] | null {
    if (table === 'orgs') return [];
    if (table === 'sites') {
      const org = this.db.prepare("SELECT json_extract(meta_data, '$.name') FROM orgs WHERE id = ?").pluck().get(Number(entity.orgsId)) as string | undefined;
      return typeof org === 'string' ? [org] : null;
    }
    const row = this.db.prepare(
      `SELECT json_extract(s.meta_data, '$.name') AS site, json_extract(o.meta_data, '$.name') AS org
         FROM sites s JOIN orgs o ON s.orgsId = o.id WHERE s.id = ?`,
    ).get(Number(entity.siteId)) as { site: string; org: string } | undefined;
    return row && typeof row.site === 'string' && typeof row.org === 'string' ? [row.org, row.site] : null;
  }
}
