/**
 * The file engine of one storage worker: every collection its shard owns, under
 * `<dataDir>/ts/<org>/<site>/<unit>/<grid>/`. Plain synchronous code for one thread; the
 * worker entry feeds it tasks one at a time.
 *
 * Write path: validate everything, log new tag names to tags.log, split the points by UTC
 * day, build one block per tag per day in a reused buffer, write each day log once, and only
 * then index the blocks (log first, visible after). A failed write is cut back out of every
 * file the request touched, so a write is all or nothing.
 *
 * Read path: per day, the tag's sealed blocks (if any), then those of the day's parts, then its
 * active and late blocks in file order, merged by DayMerger and handed to the caller's sink in
 * chunks.
 *
 * Compaction: a day's logs that pass storage.dayLogCompactBlocks or dayLogCompactBytes (or the
 * shard's logs together four times that) are frozen by the write that passed the limit and
 * written into a part by the shard's compaction thread, so memory and recovery stay bounded
 * however much a day holds, and writes do not wait for it (day-maintenance.ts,
 * day-compaction.ts, compaction-client.ts). Merges of parts and seals of large days run as a
 * job in slices.
 *
 * Layout and byte formats: README.md beside this file.
 */

import fs from 'node:fs';
import path from 'node:path';
import type { PointBatch, SeriesLabels } from '../native-free-codecs/write-body.js';
import { Collection, META_FILE, tagNameProblem, type CollectionOpenResult } from './collection.js';
import { addFileBlocks, GATHER_POINTS } from './day-compaction.js';
import { DayMaintenance, type SealOptions } from './day-maintenance.js';
import { CompactionThread, NO_THREAD_MEMORY, type ThreadMemory } from './compaction-client.js';
import { FooterCache } from './footer-cache.js';
import { TAG_LOG_FILE } from './tag-log.js';
import type { BackupMark, CollectionRecord, SeriesListing } from '../shared/protocol.js';
import type { Glob } from '../shared/glob.js';
import { BlockEncoder, OpenFiles, type DayLog } from './day-file.js';
import { DayMerger } from './day-merge.js';
import { DaySplitter } from './day-split.js';
import { fsyncDir, linkOrCopy } from './durable-fs.js';
import { SealedIndex } from './sealed-file.js';
import { SummaryDirectory, type SummaryKind } from './sealed-summary.js';
import { TagScan, type ScanOptions } from './tag-scan.js';
import type { CollectionScope } from '../shared/scope.js';
import { collectionDir, parseCollectionId, validateScope } from '../shared/scope-path.js';
import { walkCollectionFolders } from './collection-folders.js';
import { unsealedDaysMessage } from './day-bounds.js';
import { asStorageError, badRequest, notFound, ServiceError } from '../shared/errors.js';
import { dayEndMs, dayOf, dayStartMs } from './utc-day.js';
import { silentLog, type WorkerLog } from './worker-log.js';

export { TagScan, type ScanDay, type ScanOptions } from './tag-scan.js';

export type Durability = 'fsync' | 'os';

export interface ShardStoreOptions {
  dataDir: string;
  /** True for the collections this shard owns; the others are never opened. */
  owns: (collectionId: string) => boolean;
  log?: WorkerLog;
  /** Most day-log descriptors kept open at once (default 256). */
  maxOpenFiles?: number;
  /** Most sealed-file footers kept in memory at once (default 1024). */
  maxCachedFooters?: number;
  /** storage.maxSeriesPerCollection: a write that would add more series to a collection is refused. */
  maxSeriesPerCollection?: number;
  /** storage.maxUnsealedDaysPerCollection: a write that would open more day logs in a collection is refused. */
  maxUnsealedDaysPerCollection?: number;
  /** storage.dayLogCompactBlocks: a day's logs with this many blocks are compacted into a part (default 262144). */
  dayLogCompactBlocks?: number;
  /** storage.dayLogCompactBytes: ...or with this many bytes (default 16 MiB). */
  dayLogCompactBytes?: number;
  /** A seal whose sealed file and parts hold more points runs as a job in slices (tests make it small). */
  sealAtOncePoints?: number;
  /** Compact frozen day logs on a thread of their own (default), or on this one at once. */
  compactionThread?: boolean;
}

export type { SealOptions } from './day-maintenance.js';

/** Points handed to a scan's sink: views valid only during the call. */
export type ScanSink = (ts: Float64Array, values: Float64Array, count: number) => void;

const SCAN_CHUNK = 8192;
const NO_NAMES: ReadonlySet<string> = new Set();
const NO_DAYS: ReadonlySet<number> = new Set();
/** Longest a series listing may match names on the shard's thread (GET /svcapi/series). */
const LIST_SERIES_BUDGET_MS = 2000;
const MAX_IDLE_MERGERS = 1;
const MAX_TIMESTAMP = 2 ** 53 - 1;
export class ShardStore {
  private readonly dataDir: string;
  private readonly owns: (collectionId: string) => boolean;
  private readonly log: WorkerLog;
  private readonly collections = new Map<string, Collection>();
  private readonly files: OpenFiles;
  /** Day logs written with 'fsync' durability since the last syncPending(). */
  private readonly pending = new Set<DayLog>();
  /** Collections whose tag log was appended to since the last syncPending() (by any write: see syncPending). */
  private readonly pendingTags = new Set<Collection>();
  private readonly footers: FooterCache;
  private readonly maxSeriesPerCollection: number;
  private readonly maxUnsealedDays: number;
  private readonly splitter = new DaySplitter();
  private readonly encoder = new BlockEncoder();
  private readonly merger = new DayMerger();
  /** Day mergers of finished scans, ready for the next one. */
  private readonly idleMergers: DayMerger[] = [];
  /** Compaction, merges and seals (day-maintenance.ts). */
  private readonly maintenance: DayMaintenance;
  private readonly compactor: CompactionThread | null;

  constructor(opts: ShardStoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.owns = opts.owns;
    this.log = opts.log ?? silentLog;
    this.files = new OpenFiles(opts.maxOpenFiles ?? 256);
    this.footers = new FooterCache(opts.maxCachedFooters ?? 1024);
    this.maxSeriesPerCollection = opts.maxSeriesPerCollection ?? 1_000_000;
    this.maxUnsealedDays = opts.maxUnsealedDaysPerCollection ?? Infinity;
    this.compactor = opts.compactionThread === false ? null : new CompactionThread();
    this.maintenance = new DayMaintenance({
      collections: this.collections,
      files: this.files,
      pending: this.pending,
      footers: this.footers,
      merger: this.merger,
      log: this.log,
      compactBlocks: opts.dayLogCompactBlocks ?? 262_144,
      compactBytes: opts.dayLogCompactBytes ?? 16 * 1024 * 1024,
      sealAtOncePoints: opts.sealAtOncePoints ?? GATHER_POINTS,
      compactor: this.compactor,
    });
  }

  /** Resolves once every compaction handed to the compaction thread so far is answered (and its part in place). */
  compactionsSettled(): Promise<void> {
    return this.maintenance.compactionsSettled();
  }

  /** Set by a compaction: parts may be due for a merge (the worker then runs a seal pass soon). */
  get maintenanceWanted(): boolean {
    return this.maintenance.maintenanceWanted;
  }

  set maintenanceWanted(wanted: boolean) {
    this.maintenance.maintenanceWanted = wanted;
  }

  /** Day logs compacted into parts since this store was made. */
  get compactions(): number {
    return this.maintenance.compactions;
  }

  /** The compaction thread's own memory at its last answer (zeros when it does not run). */
  get compactionMemory(): ThreadMemory {
    return this.compactor?.memory ?? NO_THREAD_MEMORY;
  }

  /**
   * Opens every owned collection under `<dataDir>/ts`: temporary files of crashed writes are
   * removed, day logs verified and torn tails cut, block indexes and last values rebuilt.
   * Collections already open are closed and opened again.
   */
  recover(): { collections: number; blocks: number; bytesCut: number } {
    return this.guard(() => {
      for (const id of [...this.collections.keys()]) this.closeCollection(id);
      this.maintenance.stopJob();
      let blocks = 0;
      let bytesCut = 0;
      for (const scope of this.listScopes()) {
        const id = `${scope.organization}/${scope.site}/${scope.unit}/${scope.grid}`;
        if (!this.owns(id)) continue;
        try {
          const opened = this.loadCollection(scope);
          blocks += opened.blocks;
          bytesCut += opened.bytesCut;
        } catch (err) {
          // One damaged collection must not keep the rest of the shard offline; its files stay as they are.
          this.log.error({ event: 'collection-open-failed', collection: id, err }, `cannot open collection: ${(err as Error).message}`);
        }
      }
      return { collections: this.collections.size, blocks, bytesCut };
    });
  }

  createCollection(scope: CollectionScope, extra: Record<string, unknown> = {}): CollectionRecord {
    return this.guard(() => {
      const clean = validateScope(scope);
      const id = `${clean.organization}/${clean.site}/${clean.unit}/${clean.grid}`;
      if (!this.owns(id)) throw new ServiceError('INTERNAL', `collection ${id} does not belong to this shard`);
      if (this.find(id) !== null) throw new ServiceError('CONFLICT', `DUPLICATE: collection ${id} already exists`);
      const collection = Collection.create(this.dataDir, clean, extra, Date.now());
      this.collections.set(id, collection);
      return collection.getRecord();
    });
  }

  /**
   * (Re)opens an owned collection from its folder, e.g. after the caller moved it into place:
   * an open one is closed first, then its files are verified as by recover().
   */
  openCollection(id: string): CollectionRecord {
    return this.guard(() => {
      const scope = parseCollectionId(id);
      if (!this.owns(id)) throw new ServiceError('INTERNAL', `collection ${id} does not belong to this shard`);
      this.closeCollection(id);
      if (!fs.existsSync(path.join(collectionDir(this.dataDir, scope), META_FILE))) throw notFound(`collection ${id} not found`);
      return this.loadCollection(scope).collection.getRecord();
    });
  }

  updateCollection(id: string, fields: Record<string, unknown>): CollectionRecord {
    return this.guard(() => this.require(id).update(fields, Date.now()));
  }

  getCollection(id: string): CollectionRecord | null {
    return this.guard(() => this.find(id)?.getRecord() ?? null);
  }

  tagNames(collectionId: string): string[] {
    return this.guard(() => this.require(collectionId).tagNames.slice());
  }

  /**
   * Appends a batch, all or nothing: everything is validated before a byte is written, and a
   * failed write is cut back out of every file it touched. One block per tag per UTC day;
   * points of days already sealed go to that day's late log. With 'fsync' the caller calls
   * syncPending() before acknowledging (group commit); 'os' leaves flushing to the OS.
   */
  append(collectionId: string, batch: PointBatch, durability: Durability): { points: number; newTags: string[] } {
    return this.guard(() => {
      const collection = this.require(collectionId);
      validateBatch(batch);
      const { newTags, newLabels, relabel } = this.seriesChanges(collection, batch);
      if (collection.tagNames.length + newTags.length > this.maxSeriesPerCollection) {
        throw badRequest(seriesLimitMessage(collection.id, newTags[this.maxSeriesPerCollection - collection.tagNames.length]!, this.maxSeriesPerCollection));
      }
      collection.addTags(newTags, newLabels, relabel);
      if (newTags.length > 0 || relabel.length > 0) this.pendingTags.add(collection);
      if (batch.pointCount === 0) return { points: 0, newTags };

      const tagIds = batch.tagNames.map((name) => collection.tagId(name));
      const slices = this.splitter.split(batch);
      const sliceLogs: DayLog[] = [];
      const written: DayLog[] = [];
      const sizesBefore: number[] = [];
      try {
        for (let i = 0; i < slices.length; ) {
          const day = slices[i]!.day;
          const dayLog = collection.logForWrite(day, this.files);
          this.encoder.reset();
          const first = i;
          for (; i < slices.length && slices[i]!.day === day; i++) {
            const slice = slices[i]!;
            slice.fileOffset = this.encoder.add(tagIds[slice.tag]!, slice.ts, slice.values, slice.from, slice.count);
            slice.minTs = this.encoder.minTs;
            slice.maxTs = this.encoder.maxTs;
            slice.valueAtMaxTs = this.encoder.valueAtMaxTs;
            sliceLogs.push(dayLog);
          }
          const sizeBefore = dayLog.size;
          const at = dayLog.append(this.encoder.encoded()); // undoes itself when it fails
          written.push(dayLog);
          sizesBefore.push(sizeBefore);
          for (let k = first; k < i; k++) slices[k]!.fileOffset += at;
        }
      } catch (err) {
        for (let k = 0; k < written.length; k++) written[k]!.truncateTo(sizesBefore[k]!);
        throw err;
      } finally {
        this.encoder.reset();
        this.splitter.shrink();
      }

      // In the files: now make the blocks visible.
      for (let k = 0; k < slices.length; k++) {
        const slice = slices[k]!;
        const tagId = tagIds[slice.tag]!;
        sliceLogs[k]!.index(tagId, slice.fileOffset, slice.count, slice.minTs, slice.maxTs);
        collection.noteLatest(tagId, slice.maxTs, slice.valueAtMaxTs);
      }
      if (durability === 'fsync') {
        for (const dayLog of written) {
          dayLog.needsSync = true;
          this.pending.add(dayLog);
        }
      }
      this.maintenance.compactOversized(collection, written, slices.length);
      return { points: batch.pointCount, newTags };
    });
  }

  /**
   * The series a batch would add to a collection's dictionary (tags with points that it does not
   * know, with their labels), and the known tags without labels the batch gives labels to.
   */
  seriesChanges(collection: Collection, batch: PointBatch): { newTags: string[]; newLabels: Array<SeriesLabels | null>; relabel: Array<[number, SeriesLabels]> } {
    const newTags: string[] = [];
    const newLabels: Array<SeriesLabels | null> = [];
    const relabel: Array<[number, SeriesLabels]> = [];
    const labels = batch.labels;
    const seen = new Set<string>();
    for (let i = 0; i < batch.tagNames.length; i++) {
      const name = batch.tagNames[i]!;
      if (batch.tagStart[i + 1] === batch.tagStart[i] || seen.has(name)) continue;
      seen.add(name);
      const id = collection.tagId(name);
      const set = labels?.[i] ?? null;
      if (id < 0) {
        newTags.push(name);
        newLabels.push(set);
      } else if (set !== null && !collection.hasLabels(id)) {
        relabel.push([id, set]);
      }
    }
    return { newTags, newLabels, relabel };
  }

  /**
   * Why appending `batch` would pass storage.maxSeriesPerCollection, or null; for checking every
   * collection of a request before any of it is written. Unknown collections have no series yet;
   * `pending` are series not in the dictionary yet that buffered points will add.
   */
  seriesLimitProblem(collectionId: string, batch: PointBatch, pending: ReadonlySet<string> = NO_NAMES): string | null {
    const collection = this.find(collectionId);
    const known = (collection?.tagNames.length ?? 0) + pending.size;
    if (known + batch.tagNames.length <= this.maxSeriesPerCollection) return null; // the common case: no lookups
    let fresh = 0;
    for (let i = 0; i < batch.tagNames.length; i++) {
      const name = batch.tagNames[i]!;
      if (batch.tagStart[i + 1] === batch.tagStart[i] || (collection && collection.tagId(name) >= 0) || pending.has(name)) continue;
      if (known + ++fresh > this.maxSeriesPerCollection) return seriesLimitMessage(collectionId, name, this.maxSeriesPerCollection);
    }
    return null;
  }

  /**
   * Why writing points on `days` would pass storage.maxUnsealedDaysPerCollection, or null; for
   * checking every collection of a request before any of it is written. `pending` are days of
   * buffered points not flushed yet. A day counts when it has no day log open yet (a sealed
   * day's points go to its late log).
   */
  unsealedDaysProblem(collectionId: string, days: ReadonlySet<number>, pending: ReadonlySet<number> = NO_DAYS): string | null {
    const collection = this.find(collectionId);
    const open = collection === null ? 0 : collection.active.size + collection.late.size;
    if (open + days.size + pending.size <= this.maxUnsealedDays) return null; // the common case: no lookups
    const fresh = new Set<number>();
    for (const set of [pending, days]) {
      for (const day of set) {
        if (collection !== null && (collection.sealedBytes.has(day) ? collection.late : collection.active).has(day)) continue;
        fresh.add(day);
      }
    }
    return open + fresh.size > this.maxUnsealedDays ? unsealedDaysMessage(collectionId, open + fresh.size, this.maxUnsealedDays) : null;
  }

  /**
   * The group commit: fdatasync of every tag log appended to and then of every day log written
   * with 'fsync' durability since the last call, then one fsync per folder that got new day
   * files. Tag logs first, and all of them (also those an 'os' write appended to): a block synced
   * here may name a series an earlier write added.
   */
  syncPending(): void {
    this.guard(() => {
      for (const collection of this.pendingTags) {
        this.pendingTags.delete(collection); // a failure marks the log broken: the next write compacts it
        collection.syncTags();
      }
      // New files' names are made durable with one fsync per folder, not one per file.
      const folders = new Map<string, DayLog[]>();
      // A log leaves the set only once synced, so a failure leaves the others still owed.
      for (const dayLog of this.pending) {
        try {
          dayLog.sync();
        } catch (err) {
          // After a failed fdatasync the kernel may have dropped the dirty pages: trust nothing
          // more in this file until recovery has verified it.
          dayLog.broken = true;
          this.pending.delete(dayLog);
          throw err;
        }
        this.pending.delete(dayLog);
        const folder = dayLog.unsyncedFolder;
        if (folder === null) continue;
        const logs = folders.get(folder);
        if (logs === undefined) folders.set(folder, [dayLog]);
        else logs.push(dayLog);
      }
      // A failed folder fsync leaves the entries owed: the next 'fsync' append to them tries again.
      for (const [folder, logs] of folders) {
        fsyncDir(folder);
        for (const dayLog of logs) dayLog.folderSynced();
      }
    });
  }

  /**
   * Raw points of `tag` with start <= ts <= end, sorted, one per timestamp (later write wins;
   * late and active data beat sealed). `sink` gets chunks of at most 8192 points as views valid
   * only during the call. Returns the number of points. An unknown tag has none.
   */
  scanTag(collectionId: string, tag: string, start: number, end: number, sink: ScanSink): number {
    const scan = this.openScan(collectionId, tag, start, end);
    try {
      let total = 0;
      for (let day = scan.nextDay(); day; day = scan.nextDay()) {
        for (let from = 0; from < day.count; from += SCAN_CHUNK) {
          const to = Math.min(day.count, from + SCAN_CHUNK);
          sink(day.ts.subarray(from, to), day.values.subarray(from, to), to - from);
        }
        total += day.count;
      }
      return total;
    } finally {
      scan.close();
    }
  }

  /**
   * A scan of one tag that the caller advances a UTC day at a time, and may pause between
   * calls (a query waiting for its client): each day is merged into the scan's own buffers
   * when asked for, so writes and seals that happen meanwhile are seen from the next day on,
   * and other scans never share its buffers. Close it when done (its buffers are reused).
   * With `{summary}` (a min or max bucket query of whole summary slots; tag-scan.ts), whole
   * days the summaries may answer come as slot points instead (summaryScanDay).
   */
  openScan(collectionId: string, tag: string, start: number, end: number, options: ScanOptions = {}): TagScan {
    return this.guard(() => {
      const collection = this.require(collectionId);
      const tagId = collection.tagId(tag);
      let days: number[] = [];
      if (tagId >= 0 && start <= end) {
        const firstDay = dayOf(Math.max(start, 0));
        const lastDay = dayOf(Math.min(end, MAX_TIMESTAMP));
        days = collection.days().filter((d) => d >= firstDay && d <= lastDay);
      }
      const merger = this.idleMergers.pop() ?? new DayMerger();
      return new TagScan(this, collectionId, tagId, start, end, days, merger, options);
    });
  }

  /**
   * For TagScan in summary mode: a whole day's slot points (slot start, slot min or max) into
   * ts and values, and their count; -1 when the day must be merged from its points: not sealed,
   * or a day log beside the sealed file (its points may replace sealed ones: later write wins),
   * or no summary that passes its checks (format 1 and 2 files have none).
   */
  summaryScanDay(collectionId: string, tagId: number, day: number, kind: SummaryKind, ts: Float64Array, values: Float64Array): number {
    return this.guard(() => {
      const collection = this.require(collectionId);
      if (!collection.sealedBytes.has(day) || collection.active.has(day) || collection.late.has(day) || collection.parts.has(day) || collection.frozen.has(day)) return -1;
      const index = this.footers.sealed(collection, day);
      if (index.find(tagId) < 0) return 0; // no point of the tag that day
      const summary = this.summaryOf(index);
      const e = summary === null || summary.bad.has(tagId) ? -1 : summary.find(tagId);
      if (e < 0) return -1;
      try {
        return summary!.slots(e, kind, dayStartMs(day), ts, values);
      } catch (err) {
        summary!.bad.add(tagId);
        this.log.warn({ event: 'sealed-summary-bad', file: index.path, tagId, reason: (err as Error).message }, 'a sealed summary fails its checks: that day is read from its points');
        return -1;
      }
    });
  }

  /** For TagScan: merges one day of a tag into `merger`; the collection must still be open. */
  mergeScanDay(collectionId: string, tagId: number, day: number, start: number, end: number, merger: DayMerger): number {
    return this.guard(() => this.mergeTagDay(this.require(collectionId), day, tagId, start, end, merger));
  }

  /** For TagScan: takes its merger back for the next scan (at most a few are kept). */
  recycleMerger(merger: DayMerger): void {
    merger.shrink();
    if (this.idleMergers.length < MAX_IDLE_MERGERS) this.idleMergers.push(merger);
  }

  /** Whether this shard holds the collection (cheaper than getCollection, which copies its record). */
  hasCollection(id: string): boolean {
    return this.find(id) !== null;
  }

  /** The tag's index in the collection's tag dictionary; -1 when the tag or the collection is unknown. */
  tagIndex(collectionId: string, tag: string): number {
    return this.guard(() => this.find(collectionId)?.tagId(tag) ?? -1);
  }

  /**
   * Last values of many tags of one collection at once (the monitor's tick), by tag id (see
   * tagIndex; -1 is skipped): for tag i, its timestamp and value go to out[i * stride] and
   * out[i * stride + 1]; they stay NaN where there is none.
   */
  lastValuesInto(collectionId: string, tagIds: Int32Array, out: Float64Array, stride: number): void {
    this.guard(() => {
      const collection = this.require(collectionId);
      for (let i = 0; i < tagIds.length; i++) {
        const tagId = tagIds[i];
        if (tagId < 0) continue;
        if (collection.needsSealedLast(tagId)) this.lookUpSealedLast(collection, tagId);
        const last = collection.lastValue(tagId);
        if (last) {
          out[i * stride] = last[0];
          out[i * stride + 1] = last[1];
        }
      }
    });
  }

  /**
   * The series of `collectionIds` (in that order; unknown ones are passed over) whose tag names
   * match `glob`, each collection's in name order: the first `limit` with their labels and last
   * points, and how many match in all.
   */
  listSeries(collectionIds: readonly string[], glob: Glob, limit: number, budgetMs = LIST_SERIES_BUDGET_MS): { series: SeriesListing[]; total: number } {
    return this.guard(() => {
      const series: SeriesListing[] = [];
      let total = 0;
      // A listing runs on the shard's thread between writes: a pattern that is slow over many
      // names (`*a*b*c?d*`, say) stops instead of holding the shard's writes back for long.
      const deadline = performance.now() + budgetMs;
      const overBudget = () => performance.now() > deadline;
      for (const id of collectionIds) {
        const collection = this.find(id);
        if (!collection) continue;
        const matched = collection.listTags(glob.prefix, glob.matches, (tagId) => {
          if (series.length >= limit) return false;
          if (collection.needsSealedLast(tagId)) this.lookUpSealedLast(collection, tagId);
          const last = collection.lastValue(tagId);
          const labels = collection.labelsOf(tagId);
          series.push({ collection: id, tag: collection.tagNames[tagId]!, ...(labels ? { labels } : {}), last_ms: last ? last[0] : null, last_value: last ? last[1] : null });
          return series.length < limit;
        }, overBudget);
        if (matched < 0) {
          throw badRequest(`match took more than ${budgetMs} ms over the series of this shard and was stopped: give it a literal prefix (before the first * or ?) or name a collection`);
        }
        total += matched;
      }
      return { series, total };
    });
  }

  /** [timestamp, value] of the tag's latest point (a tie goes to the later write), or null. */
  lastValue(collectionId: string, tag: string): [number, number] | null {
    return this.guard(() => {
      const collection = this.require(collectionId);
      const tagId = collection.tagId(tag);
      if (tagId < 0) return null;
      if (collection.needsSealedLast(tagId)) this.lookUpSealedLast(collection, tagId);
      return collection.lastValue(tagId);
    });
  }

  /** See DayMaintenance.seal (day-maintenance.ts). */
  seal(opts: SealOptions): { sealedDays: number; more: boolean } {
    return this.guard(() => {
      const collections = opts.collectionId !== undefined ? [this.require(opts.collectionId)] : [...this.collections.values()];
      return this.maintenance.seal(collections, opts);
    });
  }

  /** Syncs and closes the collection's files and forgets it (the caller may then move its folder). */
  closeCollection(id: string): void {
    this.guard(() => {
      const collection = this.collections.get(id);
      if (collection === undefined) return;
      if (this.maintenance.runsFor(collection)) this.maintenance.stopJob();
      this.maintenance.cancelMerges(collection);
      collection.syncTags(); // before the day logs, whose blocks may name its new series
      this.pendingTags.delete(collection);
      let newFiles = false;
      for (const dayLog of collection.dayLogs()) {
        dayLog.sync();
        this.pending.delete(dayLog);
        this.files.forget(dayLog);
        newFiles ||= dayLog.unsyncedFolder !== null;
      }
      if (newFiles) fsyncDir(collection.dir);
      this.footers.forgetCollection(collection);
      collection.close();
      this.collections.delete(id);
    });
  }

  /**
   * A backup's view of this shard as of now (the caller has flushed the write buffer): every
   * file of every collection hard-linked under `stagingDir` with the same relative path as under
   * the data dir (copied where a link is impossible), and the byte length each day log has now.
   * Sealed files and meta.json are replaced by rename, never changed in place, so their links
   * stay as they are; day logs only grow past the recorded length (a failed append is cut back
   * to where it began), so their first `size` bytes stay as they are. Runs between writes.
   */
  backupMark(stagingDir: string): BackupMark {
    return this.guard(() => {
      this.syncPending();
      const mark: BackupMark = { files: [], collections: [] };
      for (const collection of this.collections.values()) {
        const relativeDir = path.relative(this.dataDir, collection.dir);
        const targetDir = path.join(stagingDir, relativeDir);
        fs.mkdirSync(targetDir, { recursive: true });
        const keep = (name: string, size: number, growing: boolean) => {
          linkOrCopy(path.join(collection.dir, name), path.join(targetDir, name), size);
          mark.files.push({ path: path.join(relativeDir, name), size, growing });
        };
        keep(META_FILE, fs.statSync(path.join(collection.dir, META_FILE)).size, false);
        if (fs.existsSync(collection.tagLogPath)) keep(TAG_LOG_FILE, collection.tagLogBytes, true);
        let points = 0;
        let first = Infinity;
        let last = -Infinity;
        const countPoints = (index: SealedIndex) => {
          for (let e = 0; e < index.entryCount; e++) {
            points += index.counts[e]!;
            if (index.minTs[e]! < first) first = index.minTs[e]!;
            if (index.maxTs[e]! > last) last = index.maxTs[e]!;
          }
        };
        for (const [day, bytes] of collection.sealedBytes) {
          keep(path.basename(collection.sealedPath(day)), bytes, false);
          countPoints(this.footers.sealed(collection, day));
        }
        // Parts are immutable too (a merge writes a new file and renames it).
        for (const [day, parts] of collection.parts) {
          for (const part of parts) {
            keep(path.basename(part.path), part.bytes, false);
            countPoints(this.footers.get(collection, part.path, day));
          }
        }
        for (const dayLog of collection.dayLogs()) {
          keep(path.basename(dayLog.path), dayLog.size, true);
          const stats = dayLog.pointStats();
          points += stats.points;
          if (stats.minTs < first) first = stats.minTs;
          if (stats.maxTs > last) last = stats.maxTs;
        }
        mark.collections.push({ id: collection.id, points, first_ms: points > 0 ? first : null, last_ms: points > 0 ? last : null });
      }
      return mark;
    });
  }

  /** Bytes are of day logs (active) and of sealed files and parts (sealed); logBlocks is what the logs' indexes hold in memory. */
  stats(): { collections: number; openFiles: number; activeBytes: number; sealedBytes: number; logBlocks: number; parts: number } {
    let activeBytes = 0;
    let sealedBytes = 0;
    let logBlocks = 0;
    let parts = 0;
    for (const collection of this.collections.values()) {
      for (const dayLog of collection.dayLogs()) {
        activeBytes += dayLog.size;
        logBlocks += dayLog.blockCount;
      }
      for (const list of collection.parts.values()) parts += list.length;
      for (const bytes of collection.sealedBytes.values()) sealedBytes += bytes;
      for (const parts of collection.parts.values()) for (const part of parts) sealedBytes += part.bytes;
    }
    return { collections: this.collections.size, openFiles: this.files.count, activeBytes, sealedBytes, logBlocks, parts };
  }

  close(): void {
    this.guard(() => {
      this.syncPending();
      for (const id of [...this.collections.keys()]) this.closeCollection(id);
      // After the collections: what the thread had is then dropped quietly (recovery compacts its frozen logs again).
      this.compactor?.close();
    });
  }

  // -------------------------------------------------------------------------------------------

  /** Runs a public method, turning file-system failures into ServiceErrors. */
  private guard<T>(body: () => T): T {
    try {
      return body();
    } catch (err) {
      throw asStorageError(err);
    }
  }

  private require(id: string): Collection {
    const collection = this.find(id);
    if (collection === null) throw notFound(`collection ${id} not found`);
    return collection;
  }

  /** The open collection, or an owned one on disk opened now (e.g. restored from a backup). */
  private find(id: string): Collection | null {
    const open = this.collections.get(id);
    if (open !== undefined) return open;
    const scope = parseCollectionId(id);
    if (!this.owns(id) || !fs.existsSync(path.join(collectionDir(this.dataDir, scope), META_FILE))) return null;
    return this.loadCollection(scope).collection;
  }

  private loadCollection(scope: CollectionScope): CollectionOpenResult {
    const opened = Collection.open(this.dataDir, scope, this.files, this.log);
    this.collections.set(opened.collection.id, opened.collection);
    this.maintenance.adopt(opened.collection);
    return opened;
  }

  /** Scopes of every folder four levels below `<dataDir>/ts` that holds a meta.json. */
  private listScopes(): CollectionScope[] {
    const scopes: CollectionScope[] = [];
    walkCollectionFolders(this.dataDir, {
      leaf: (dir, names) => {
        if (!fs.existsSync(path.join(dir, META_FILE))) return;
        try {
          scopes.push(validateScope({ organization: names[0], site: names[1], unit: names[2], grid: names[3] }));
        } catch (err) {
          this.log.warn({ event: 'collection-folder-ignored', dir, reason: (err as Error).message }, 'folder is not a valid collection');
        }
      },
      undecodable: (dir) => this.log.warn({ event: 'collection-folder-ignored', dir }, 'folder name is not an encoded scope name'),
    });
    return scopes;
  }

  /**
   * Gathers the tag's points of one day in write order (sealed, parts, frozen logs, then active
   * blocks, then late blocks, each in file order) and merges them; the result is in this.merger.
   */
  private mergeTagDay(collection: Collection, day: number, tagId: number, start: number, end: number, merger = this.merger): number {
    merger.begin(dayStartMs(day), start, end);
    const lo = Math.max(start, dayStartMs(day));
    const hi = Math.min(end, dayEndMs(day));
    // Only the blocks of the tag that overlap [lo, hi] are read and decoded.
    if (collection.sealedBytes.has(day)) addFileBlocks(this.footers.sealed(collection, day), tagId, lo, hi, merger);
    for (const part of collection.parts.get(day) ?? []) addFileBlocks(this.footers.get(collection, part.path, day), tagId, lo, hi, merger);
    const addBlock = (_tag: number, ts: Float64Array, values: Float64Array, count: number) => merger.add(ts, values, 0, count);
    for (const set of collection.frozen.get(day) ?? []) for (const dayLog of set.logs) dayLog.forEachBlock(tagId, lo, hi, addBlock);
    collection.active.get(day)?.forEachBlock(tagId, lo, hi, addBlock);
    collection.late.get(day)?.forEachBlock(tagId, lo, hi, addBlock);
    return merger.finish();
  }

  /** A sealed file's summary directory, read on first use and kept with its footer; null when there is none or it is bad. */
  private summaryOf(index: SealedIndex): SummaryDirectory | null {
    if (index.summary !== undefined) return index.summary;
    index.summary = null;
    if (index.summarySpan === null) return null;
    try {
      index.summary = SummaryDirectory.read(index.path, index.summarySpan, index.dataEnd, index.footerOffset, index.version);
    } catch (err) {
      // Logged once per cached footer; the points still answer every query exactly.
      this.log.warn({ event: 'sealed-summary-bad', file: index.path, reason: (err as Error).message }, 'a sealed summary fails its checks: the day is read from its points');
    }
    return index.summary;
  }

  /**
   * The newest sealed point of a tag: the newest day whose sealed file or parts list the tag
   * holds it (a sealed file or part has only its own day's points), as the last point of the
   * tag's last block in one of them; on a tie the later file (a part) wins.
   */
  private lookUpSealedLast(collection: Collection, tagId: number): void {
    const days = [...new Set([...collection.sealedBytes.keys(), ...collection.parts.keys()])].sort((a, b) => b - a);
    for (const day of days) {
      const files = this.footers.ofDay(collection, day);
      let found = false;
      let lastTs = -Infinity;
      let lastValue = 0;
      for (const index of files) {
        const first = index.find(tagId);
        if (first < 0) continue;
        const e = index.endOf(first) - 1; // the newest block holds the newest point
        const count = index.counts[e]!;
        const ts = new Float64Array(count);
        const values = new Float64Array(count);
        index.decode(e, ts, values);
        if (ts[count - 1]! >= lastTs) {
          found = true;
          lastTs = ts[count - 1]!;
          lastValue = values[count - 1]!;
        }
      }
      if (found) {
        collection.setSealedLast(tagId, true, lastTs, lastValue);
        return;
      }
    }
    collection.setSealedLast(tagId, false, 0, 0);
  }

}

/** Checks the batch's shape, tag names and timestamps; throws BAD_REQUEST naming the problem. */
/** The refusal of a write that would pass storage.maxSeriesPerCollection, naming the first series refused. */
export function seriesLimitMessage(collectionId: string, firstRefused: string, max: number): string {
  return `series ${JSON.stringify(firstRefused)} would pass storage.maxSeriesPerCollection (${max}) in collection ${collectionId}; nothing of this write was stored`;
}

function validateBatch(batch: PointBatch): void {
  const { tagNames, tagStart, timestamps, values, pointCount } = batch;
  if (!Number.isInteger(pointCount) || pointCount < 0 || pointCount > timestamps.length || pointCount > values.length) {
    throw badRequest(`batch pointCount ${pointCount} does not fit its arrays`);
  }
  if (batch.labels !== undefined && batch.labels.length !== tagNames.length) throw badRequest('batch labels do not match its tags');
  if (tagStart.length < tagNames.length + 1 || tagStart[0] !== 0 || tagStart[tagNames.length] !== pointCount) {
    throw badRequest('batch tagStart does not cover its points');
  }
  for (let i = 0; i < tagNames.length; i++) {
    if (tagStart[i + 1]! < tagStart[i]!) throw badRequest('batch tagStart is not ascending');
    const problem = tagNameProblem(tagNames[i]);
    if (problem !== null) throw badRequest(problem);
  }
  for (let i = 0; i < pointCount; i++) {
    const t = timestamps[i]!;
    if (!(t >= 0 && t <= MAX_TIMESTAMP && Math.floor(t) === t)) {
      throw badRequest(`timestamp must be an integer in 0..2^53-1, got ${t}`);
    }
  }
}
