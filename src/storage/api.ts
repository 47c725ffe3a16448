// What the storage subsystem offers the others, each as a narrow interface (a capability): who
// needs collections gets collections, who writes gets a writer, the monitor gets its sampler,
// live data its feed, the backup the store's maintenance, the cluster its replication hooks.
// Nobody outside storage/ sees the shards, the catalog or the workers.

import { capability } from '../host/plugin.js';
import type { ResponseStream } from '../http/route.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { Signal } from '../signal.js';
import type { BackupMark, CollectionRecord, LineCounts, LivePoints, MonitorSample, MonitorSampleRequest, ResultFormat, SeriesListing, SeriesRequest, WriteFrameHeader, WriteMode } from '../../shared/protocol.js';
import type { CollectionScope, ScopeFields } from '../../shared/scope.js';

export type { CollectionRecord, LivePoints, SeriesListing, SeriesRequest, WriteMode };

/** The tags a query reads from one collection. */
export interface QueryGroup {
  collectionId: string;
  series: SeriesRequest[];
}

export type WriteResult = { success: true; points: number; lines?: LineCounts } | { success: false; error: string };

/** What the ingest and cluster paths add to a write (see WriteFrameHeader). */
export interface WriteOptions {
  /** The ingest client's collection: the scope fields the body (or a line) does not name. */
  defaultScope?: CollectionScope;
  rows?: boolean;
  lineProtocol?: WriteFrameHeader['lineProtocol'];
  contentEncoding?: 'gzip' | 'snappy';
  maxDecodedBytes?: number;
  maxDecodedSetting?: string;
  backfill?: boolean;
  /** Create missing collections (default: storage.autoCreateCollections). */
  autoCreate?: boolean;
  /** Applied from another node of a cluster: not recorded for replication again. */
  replicated?: boolean;
  /** Answer only once the cluster's write acknowledgement (cluster.writeAck) is met: /svcapi/write. */
  awaitReplica?: boolean;
  /**
   * Who wrote, for the points-written counters of GET /metrics: the HTTP route's pattern
   * (`req.route`), or a name in parentheses for writes of no route (`(connector backfill)`).
   * Never sent to the workers nor replicated.
   */
  route?: string;
}

/** Which collections exist and whom they are open to. */
export interface Collections {
  /** The collections `grant` reaches. */
  visible(grant: AccessGrant): CollectionRecord[];
  /** Whether a collection exists (whoever asks). */
  exists(id: string): boolean;
  /** Whether `grant` reaches collection `id` (false for a missing one too). */
  canReach(grant: AccessGrant, id: string): boolean;
  /** Whether `grant` reaches the unit of `scope` (organization, site, unit). */
  reachesUnit(grant: AccessGrant, scope: Pick<CollectionScope, 'organization' | 'site' | 'unit'>): boolean;
  /** The units `grant` reaches as `org/site/unit` paths, or null for everything (admins). */
  unitPaths(grant: AccessGrant): string[] | null;
  /** The collection a tag belongs to (tag-to-scope map); null when it was never written or bound. */
  collectionOfTag(tag: string): string | null;
  /** The unit entity a collection is bound to (by names), or null. */
  unitIdOf(collectionId: string): number | null;
  /** Collection ids bound to a unit entity. */
  collectionsOfUnit(unitId: number): string[];
}

/** Writes points through the storage workers, as the write routes do. */
export interface PointWriter {
  write(grant: AccessGrant, body: Uint8Array, contentType: string, mode: WriteMode, signal: AbortSignal, options?: WriteOptions): Promise<WriteResult>;
  /** The largest write body a shard's ring takes (storage.requestRingBytes). */
  readonly maxBodyBytes: number;
  /** Most distinct UTC days (per collection) one write may hold (storage.maxDaysPerWrite); a write with more is refused. */
  readonly maxDaysPerWrite: number;
}

/** Reads points, as the query routes do: tags grouped by collection, results streamed. */
export interface PointReader {
  /** Groups tags by collection: the explicit scope (all four fields), else the tag map. 400 for a tag the caller cannot read. */
  resolve(grant: AccessGrant, fields: ScopeFields, tags: string[]): QueryGroup[];
  query(groups: QueryGroup[], start: number, end: number, format: ResultFormat, out: ResponseStream, signal: AbortSignal): Promise<void>;
  lastValues(groups: QueryGroup[]): Promise<Record<string, [number, number] | null>>;
  /**
   * The series of one collection `grant` reaches (404 otherwise), or of every one it reaches
   * (null), whose names match `glob`: WIRE.md part 3, GET /svcapi/series.
   */
  listSeries(grant: AccessGrant, collectionId: string | null, glob: string, limit: number): Promise<{ series: SeriesListing[]; total: number; has_more: boolean }>;
  /** A number that changes whenever a write on this node adds series to the collection (caches of listings key on it). */
  seriesVersion(collectionId: string): number;
  /**
   * The result of a query held in memory, by series key (the request's label, else its tag),
   * for answers built on the main thread (InfluxQL). Refused with a 400 naming `limitSetting`
   * once the encoded result passes `maxBytes`: callers aggregate in the workers (pipelines) so
   * that what comes back is small.
   */
  collect(groups: QueryGroup[], start: number, end: number, signal: AbortSignal, maxBytes: number, limitSetting: string): Promise<Map<string, CollectedSeries>>;
}

/** A collected series: its points in time order. */
export interface CollectedSeries {
  ts: Float64Array;
  values: Float64Array;
}

/** What the monitor reads of the workers: a tick's sample of watched tags, and tag indexes. */
export interface MonitorSampler {
  sample(requests: MonitorSampleRequest[]): Promise<MonitorSample[]>;
  /** Each tag's index in the collection's tag dictionary (-1: never written). */
  tagIndexes(collectionId: string, tags: string[]): Promise<number[]>;
}

/** The points of watched tags as they are written (live data). */
export interface LiveFeed {
  /**
   * Changes which tags of a collection the owning worker hands back as they are written: a delta
   * (tags newly watched, tags no longer watched), kept across worker restarts.
   */
  watch(collectionId: string, add: string[], remove: string[]): Promise<void>;
  /** Tags the storage workers watch, as they last reported (every collection together). */
  readonly watchedTags: number;
  /** Emitted with the watched points of every live write (never backfills). */
  readonly points: Signal<[points: LivePoints[]]>;
}

/** What a backup and a restore of the time-series store need. */
export interface StoreMaintenance {
  /** A backup's instant: every shard hard-links its files under `stagingDir` with writes held for the moment it takes. */
  backupMark(stagingDir: string): Promise<BackupMark>;
  /** Runs `swap` with the ts folder out of the workers' hands, then opens what is there; the collections found. */
  withStoreDetached<T>(swap: () => Promise<T>): Promise<{ result: T; collections: number }>;
  /**
   * A restore begins (before its checks and unpacking): from now until the returned function is
   * called, writes, seals and catalog changes answer 503, since the restore would drop them.
   */
  beginRestore(): () => void;
}

/** A change to the collection catalog, as replication records and replays it. */
export type CollectionChange =
  | { op: 'create' | 'update'; scope: CollectionScope; extra: Record<string, unknown> }
  /** The folders of an org, site or unit that was renamed or moved. */
  | { op: 'relocate'; from: readonly string[]; to: readonly string[] }
  /** The collections of an org, site or unit that was deleted. */
  | { op: 'remove'; ids: string[] };

/**
 * A write about to be stored, as a recorder sees it: it records it durably before the write is
 * stored (so a crash between the two cannot leave it stored and unrecorded), then learns whether
 * it was stored.
 */
export interface RecordedWrite {
  /** Stored: what the write waits for before it answers when it asked for the cluster's acknowledgement, or null. */
  stored(): Promise<void> | null;
  refused(): void;
}

/** How the cluster's replication follows this node's own changes to the time series. */
export interface ReplicationHooks {
  /** `record` is called with every write not applied from another node, before it is stored. */
  recordWrites(record: (body: Uint8Array, contentType: string, mode: WriteMode, options: WriteOptions) => RecordedWrite): void;
  /** Every catalog change not applied from another node. */
  readonly collectionChanged: Signal<[change: CollectionChange]>;
  /** Replays a catalog change another node made (not recorded again). */
  applyCollectionChange(change: CollectionChange, grant: AccessGrant): Promise<void>;
}

/**
 * The free-disk floor of the data volume (storage.minFreeBytes), for whatever else writes there
 * (blob uploads): one guard, so the bytes each accepts count against the same floor.
 */
export interface DiskFloor {
  /** Throws 507 when `bytes` more would take the volume under the floor; otherwise holds them back until release. */
  reserve(bytes: number): void;
  /** Gives back reserved bytes once they are on disk (or will not be written). */
  release(bytes: number): void;
}

export const COLLECTIONS = capability<Collections>('storage.collections');
export const POINT_WRITER = capability<PointWriter>('storage.point-writer');
export const POINT_READER = capability<PointReader>('storage.point-reader');
export const MONITOR_SAMPLER = capability<MonitorSampler>('storage.monitor-sampler');
export const LIVE_FEED = capability<LiveFeed>('storage.live-feed');
export const STORE_MAINTENANCE = capability<StoreMaintenance>('storage.maintenance');
export const REPLICATION_HOOKS = capability<ReplicationHooks>('storage.replication-hooks');
export const DISK_FLOOR = capability<DiskFloor>('storage.disk-floor');
