/**
 * What a shard does to its days besides appending to them: compacting day logs that passed their
 * limits into parts, merging parts of similar size, and sealing days. A compaction freezes the
 * day's logs (renames them; new points go to fresh logs) and hands them to the shard's
 * compaction thread, so the write that passed the limit does not wait for it; large merges and
 * seals run on the shard's thread as one job at a time, a slice per call. Files and their order
 * on disk: day-compaction.ts; the store's read path reads what this leaves.
 */

import fs from 'node:fs';
import path from 'node:path';
import type { Collection, DayPart, FrozenLogs } from './collection.js';
import { MERGE_CANCELLED, type CompactionThread } from './compaction-client.js';
import type { DayLog, OpenFiles } from './day-file.js';
import type { DayMerger } from './day-merge.js';
import { DayFileJob, PARTS_PER_MERGE, partsToMerge } from './day-compaction.js';
import { debugPause } from './debug-pause.js';
import { fsyncDir, removeIfPresent } from './durable-fs.js';
import type { FooterCache } from './footer-cache.js';
import type { SealedIndex } from './sealed-file.js';
import { dayEndMs, dayOf } from './utc-day.js';
import type { WorkerLog } from './worker-log.js';

export interface SealOptions {
  /** Only this collection; all open collections when absent. */
  collectionId?: string;
  now: number;
  /** A day is sealed once it ended this long ago (and a late log once it is this long idle). */
  graceMs: number;
  /** seal_now: every day before today's UTC day, and every late log, whatever the grace. */
  force: boolean;
  /** Stop once a day's seal ends this long after the call began (`more` then says days are left). */
  budgetMs?: number;
  /**
   * Days (`<collection id> <day>`) sealed or being sealed by this pass, over its calls: each is
   * sealed once per pass, so points that keep arriving for a day cannot keep a pass going.
   */
  sealedThisPass?: Set<string>;
  /**
   * Writes are coming in (a background pass that waited a second for a pause and got none):
   * merges of parts wait, unless a day has MERGE_ANYWAY_PARTS parts. A merge bounds neither
   * memory nor recovery, only the files a query opens, and during a burst it took CPU from the
   * writes (line protocol ingest, bench/README.md "Compaction off the shard's thread").
   */
  writesBusy?: boolean;
}

/** The shard's state the maintenance works on (owned by ShardStore). */
export interface MaintainedShard {
  collections: ReadonlyMap<string, Collection>;
  files: OpenFiles;
  /** Day logs owed an fdatasync at the next group commit. */
  pending: Set<DayLog>;
  footers: FooterCache;
  merger: DayMerger;
  log: WorkerLog;
  /** storage.dayLogCompactBlocks and dayLogCompactBytes. */
  compactBlocks: number;
  compactBytes: number;
  /** A seal whose sealed file and parts hold more points runs as a job in slices. */
  sealAtOncePoints: number;
  /** Where frozen logs are compacted; null: on the shard's thread, at once. */
  compactor: CompactionThread | null;
}

/** The shard's logs together may hold this many times the per-day compaction limits. */
const SHARD_LOG_BUDGET_FACTOR = 4;
/**
 * Frozen sets the compaction thread may have waiting; a compaction beyond that runs on the
 * shard's thread (taking the day's frozen logs with it), so a thread that falls behind the
 * writes cannot let frozen logs, and their block index in memory, pile up.
 */
const MAX_COMPACTIONS_WAITING = 4;
/** Parts a day may have before a merge runs also while writes are busy (three merges' worth). */
const MERGE_ANYWAY_PARTS = 3 * PARTS_PER_MERGE;
/** A failed compaction is tried again after this long. */
const COMPACTION_RETRY_MS = 10_000;

/** What a compaction or merge wrote, for its log line. */
interface WrittenFile {
  points: number;
  bytes: number;
  ms: number;
}

/** The day's logs new points go to, in write order: active, then late. */
function writableLogsOf(collection: Collection, day: number): DayLog[] {
  return [collection.active.get(day), collection.late.get(day)].filter((l): l is DayLog => l !== undefined);
}

/** The merge or seal under way, in slices (at most one per shard). */
interface RunningJob {
  collection: Collection;
  /** 'seal': into the sealed file (the parts then go); 'merge': parts into one part. */
  kind: 'seal' | 'merge';
  parts: DayPart[];
  job: DayFileJob;
}

export class DayMaintenance {
  private readonly collections: ReadonlyMap<string, Collection>;
  private readonly files: OpenFiles;
  private readonly pending: Set<DayLog>;
  private readonly footers: FooterCache;
  private readonly merger: DayMerger;
  private readonly log: WorkerLog;
  private readonly compactBlocks: number;
  private readonly compactBytes: number;
  private readonly sealAtOncePoints: number;
  private readonly compactor: CompactionThread | null;
  /** Collections with frozen logs not handed to the compaction thread (recovered, or a failed try). */
  private readonly unsubmitted = new Set<Collection>();
  private tmpSequence = 0;
  /** Compactions handed to the thread and not answered yet. */
  private compactionsWaiting = 0;
  /** Parts the thread is merging: a pass does not ask for a merge of them again. */
  private readonly merging = new Set<DayPart>();
  /** The merges the thread has, by request id: cancelled when their day is sealed or their collection closed. */
  private readonly mergesInFlight = new Map<number, { collection: Collection; day: number }>();
  /** Blocks appended since the shard's logs were last counted against their budget. */
  private blocksSinceBudgetCheck = 0;
  private running: RunningJob | null = null;
  /** Set by a compaction: parts may be due for a merge (the worker then runs a seal pass soon). */
  maintenanceWanted = false;
  /** Compactions since this store was made (BUFFER_STATS). */
  compactions = 0;

  constructor(shard: MaintainedShard) {
    this.collections = shard.collections;
    this.files = shard.files;
    this.pending = shard.pending;
    this.footers = shard.footers;
    this.merger = shard.merger;
    this.log = shard.log;
    this.compactBlocks = shard.compactBlocks;
    this.compactBytes = shard.compactBytes;
    this.sealAtOncePoints = shard.sealAtOncePoints;
    this.compactor = shard.compactor;
  }

  /** True while a job of the collection is under way. */
  runsFor(collection: Collection): boolean {
    return this.running?.collection === collection;
  }

  /**
   * Seals finished days: per day, sealed + parts + active + late points become one new sealed
   * file, then the parts and logs are deleted. With `force` (seal_now) every day before today's
   * UTC day and every late log is sealed; otherwise a day once it ended `graceMs` ago, and a late
   * log once it has also been idle for `graceMs` (so a trickle of late points does not rewrite
   * the day on every call). Between seals, parts of similar size are merged. A job under way (a
   * large seal or a merge, day-compaction.ts) goes on first; `more` says work is left when the
   * budget ran out.
   */
  seal(collections: readonly Collection[], opts: SealOptions): { sealedDays: number; more: boolean } {
    const today = dayOf(opts.now);
    const stopAt = performance.now() + (opts.budgetMs ?? Infinity);
    let sealedDays = 0;
    if (this.running !== null) {
      const kind = this.running.kind;
      if (!this.advanceJob(stopAt)) return { sealedDays, more: true };
      if (kind === 'seal') sealedDays++;
      if (performance.now() >= stopAt) return { sealedDays, more: true };
    }
    for (const collection of collections) {
      // The tag log moves into meta.json at seal, but not at every seal pass of a collection
      // that keeps adding series: only once the log is a fair share of the dictionary, so each
      // rewrite of meta.json is paid for by as many new series (O(1) per series, amortised).
      if (collection.tagLogRecords > Math.max(1000, collection.tagNames.length / 8)) collection.compactTags();
      for (const day of collection.days()) {
        const active = collection.active.get(day);
        const late = collection.late.get(day);
        const parts = collection.parts.get(day);
        if (active === undefined && late === undefined && parts === undefined && !collection.frozen.has(day)) continue;
        const due = opts.force
          ? day < today || late !== undefined
          : dayEndMs(day) + 1 + opts.graceMs <= opts.now && (late === undefined || late.lastWriteAt + opts.graceMs <= opts.now);
        const key = `${collection.id} ${day}`;
        if (due && opts.sealedThisPass?.has(key) !== true) {
          if (!this.sealDay(collection, day, stopAt, () => opts.sealedThisPass?.add(key))) return { sealedDays, more: true };
          opts.sealedThisPass?.add(key);
          sealedDays++;
          collection.compactTags();
          if (performance.now() >= stopAt) return { sealedDays, more: true };
        } else if (parts !== undefined && this.running === null) {
          const merge = partsToMerge(parts);
          if (merge === null || merge.some((part) => this.merging.has(part))) continue;
          if (opts.writesBusy === true && parts.length < MERGE_ANYWAY_PARTS) {
            this.maintenanceWanted = true; // the next pass looks again
            continue;
          }
          if (this.compactor !== null) {
            this.submitMerge(collection, day, merge);
            continue;
          }
          this.startJob(collection, 'merge', day, merge);
          if (!this.advanceJob(stopAt) || performance.now() >= stopAt) return { sealedDays, more: true };
        }
      }
    }
    return { sealedDays, more: false };
  }

  /**
   * Seals a day: its sealed file, parts and logs into one new sealed file. A small day is sealed
   * at once (true); a large one has its logs compacted into a part and then its sealed file and
   * parts merged by a job in slices (false until done, also while another job runs).
   */
  private sealDay(collection: Collection, day: number, stopAt: number, jobStarted: () => void): boolean {
    if (this.running !== null && this.running.collection === collection && this.running.job.day === day) return false;
    this.cancelMerges(collection, day); // the seal takes the parts a merge of the day has
    collection.syncTags(); // the sealed file names tag ids: their records go to disk first
    const inputs = this.footers.ofDay(collection, day);
    let points = 0;
    for (const index of inputs) for (let e = 0; e < index.entryCount; e++) points += index.counts[e]!;
    if (points > this.sealAtOncePoints) {
      if (this.running !== null) return false; // one job at a time: this one comes after
      this.compactDay(collection, day);
      this.startJob(collection, 'seal', day, collection.parts.get(day) ?? []);
      jobStarted();
      return this.advanceJob(stopAt);
    }
    const logs = this.logsOf(collection, day);
    const job = new DayFileJob(day, 'sealed', collection.sealedPath(day), inputs, logs, this.merger);
    const index = job.runAtOnce();
    this.retireSeal(collection, day, index, collection.parts.get(day) ?? [], logs, job);
    return true;
  }

  /**
   * Compacts the day's logs, frozen ones included, into a new part on this thread and deletes
   * them: the points stay where queries find them, the logs' memory and recovery time go.
   */
  private compactDay(collection: Collection, day: number): void {
    const logs = this.logsOf(collection, day);
    if (logs.length === 0) return;
    collection.syncTags(); // the part names tag ids: their records go to disk first
    const generation = collection.nextPartGeneration++;
    const job = new DayFileJob(day, 'part', collection.partPath(day, generation), [], logs, this.merger);
    const index = job.runAtOnce();
    this.retireCompaction(collection, day, generation, logs, index, { points: job.points, bytes: index.fileBytes, ms: Math.round(performance.now() - job.startedAt) });
  }

  /**
   * Part `generation`, durable under its name, holds `logs`: it joins the day's parts and the logs
   * go. `index` is its footer when this thread wrote it (the compaction thread's is read on use).
   */
  private retireCompaction(collection: Collection, day: number, generation: number, logs: readonly DayLog[], index: SealedIndex | null, written: WrittenFile, thread = false): void {
    const part = collection.addPart(day, generation, written.bytes);
    if (index !== null) this.footers.put(collection, index);
    let blocks = 0;
    for (const dayLog of logs) blocks += dayLog.blockCount;
    this.dropLogs(collection, logs);
    fsyncDir(collection.dir);
    this.compactions++;
    this.maintenanceWanted = true;
    this.log.info({ event: 'day-compacted', collection: collection.id, day: path.basename(part.path), blocks, ...written, ...(thread ? { thread } : {}) }, 'compacted day logs into a part');
  }

  /**
   * The merge of `parts` is durable under the newest one's name: it takes that part's place and
   * the others go, oldest first. `index` is its footer when this thread wrote it; otherwise the
   * newest part's cached footer is dropped (it describes the file replaced).
   */
  private retireMerge(collection: Collection, day: number, parts: readonly DayPart[], index: SealedIndex | null, written: WrittenFile, thread = false): void {
    const newest = parts[parts.length - 1]!;
    collection.addPart(day, newest.generation, written.bytes);
    if (index !== null) this.footers.put(collection, index);
    else this.footers.forget(collection, newest.path);
    this.dropParts(collection, day, parts, newest.generation);
    fsyncDir(collection.dir);
    this.log.info({ event: 'parts-merged', collection: collection.id, day: path.basename(newest.path), parts: parts.length, ...written, ...(thread ? { thread } : {}) }, 'merged parts of a day');
  }

  /**
   * Compaction without holding the shard's thread: the day's writable logs are renamed to frozen
   * names (`active-YYYYMMDD-GGGGGGGG.log`, G the generation their part will take) and handed to
   * the compaction thread; new points of the day go to fresh logs. Queries read the frozen logs
   * (after the parts, before the fresh logs) until the part is in place. With no thread, or too
   * many compactions waiting for it, the day is compacted here at once.
   */
  private compactSoon(collection: Collection, day: number): void {
    const logs = writableLogsOf(collection, day);
    if (logs.length === 0) return;
    if (this.compactor === null || this.compactionsWaiting >= MAX_COMPACTIONS_WAITING || logs.some((l) => l.broken)) {
      this.compactDay(collection, day);
      return;
    }
    collection.syncTags(); // the part names tag ids: their records go to disk first
    const generation = collection.nextPartGeneration++;
    for (const dayLog of logs) {
      const frozenPath = collection.frozenPath(dayLog.kind, day, generation);
      fs.renameSync(dayLog.path, frozenPath);
      dayLog.movedTo(frozenPath);
      collection.forgetLog(dayLog);
      collection.addFrozen(day, generation, dayLog);
    }
    fsyncDir(collection.dir); // the renames before any point goes to a fresh log of the same name
    for (const dayLog of logs) dayLog.folderSynced();
    this.submit(collection, day, collection.frozen.get(day)!.find((set) => set.generation === generation)!);
  }

  /** Hands a frozen set to the compaction thread; the part is moved in place when it answers. */
  private submit(collection: Collection, day: number, set: FrozenLogs): void {
    set.submitted = true;
    const outputPath = collection.partPath(day, set.generation);
    // A name of its own per request: a request of a collection closed and reopened meanwhile
    // must not share (and have removed) the file of the next one. Recovery removes *.tmp.
    const tmpPath = `${outputPath}.${++this.tmpSequence}.tmp`;
    const logs = set.logs.map((dayLog) => {
      const ids = Uint32Array.from(dayLog.tagIds());
      return { path: dayLog.path, size: dayLog.size, tagIds: ids, points: Float64Array.from(ids, (id) => dayLog.pointsOf(id)) };
    });
    this.compactionsWaiting++;
    this.compactor!.submit({ day, outputPath, tmpPath, inputs: [], logs }, (outcome) => {
      this.compactionsWaiting--;
      // The set may be gone: sealed or compacted on this thread meanwhile, or its collection closed.
      const current = this.collections.get(collection.id) === collection && (collection.frozen.get(day) ?? []).includes(set);
      const retryLater = (err: string, msg: string) => {
        removeIfPresent(tmpPath);
        set.submitted = false;
        this.unsubmitted.add(collection);
        this.compactionPausedUntil = performance.now() + COMPACTION_RETRY_MS;
        this.log.warn({ event: 'compaction-failed', collection: collection.id, day, err }, `${msg}; trying again in 10 s`);
      };
      if (!current) {
        removeIfPresent(tmpPath);
        return;
      }
      if (!outcome.ok) {
        retryLater(outcome.error, 'could not compact day logs into a part');
        return;
      }
      try {
        debugPause('seal-before-rename');
        fs.renameSync(tmpPath, outputPath);
        fsyncDir(collection.dir);
        this.retireCompaction(collection, day, set.generation, [...set.logs], null, { points: outcome.points, bytes: outcome.bytes, ms: outcome.ms }, true);
      } catch (err) {
        retryLater(String(err), 'could not put a compacted part in place');
      }
    });
  }

  /**
   * Hands a merge to the compaction thread. Its answer is used only if every input is still the
   * day's part it was (a seal or another merge may have taken them meanwhile); the merged file
   * then replaces the newest input under its name, and the others are deleted oldest first, as
   * a merge on this thread does (advanceJob).
   */
  private submitMerge(collection: Collection, day: number, parts: DayPart[]): void {
    const newest = parts[parts.length - 1]!;
    const tmpPath = `${newest.path}.${++this.tmpSequence}.tmp`;
    for (const part of parts) this.merging.add(part);
    const id = this.compactor!.submit({ day, outputPath: newest.path, tmpPath, inputs: parts.map((part) => part.path), logs: [] }, (outcome) => {
      this.mergesInFlight.delete(id);
      for (const part of parts) this.merging.delete(part);
      const list = collection.parts.get(day) ?? [];
      const current = this.collections.get(collection.id) === collection && parts.every((part) => list.includes(part));
      if (!current || !outcome.ok) {
        removeIfPresent(tmpPath);
        if (!outcome.ok && outcome.error === MERGE_CANCELLED) this.log.info({ event: 'merge-cancelled', collection: collection.id, day }, 'dropped a merge of parts the seal or a close took');
        else if (current && !outcome.ok) this.log.warn({ event: 'merge-failed', collection: collection.id, day, err: outcome.error }, 'could not merge parts of a day; the next pass tries again');
        return;
      }
      try {
        fs.renameSync(tmpPath, newest.path);
        fsyncDir(collection.dir);
        this.retireMerge(collection, day, parts, null, { points: outcome.points, bytes: outcome.bytes, ms: outcome.ms }, true);
      } catch (err) {
        removeIfPresent(tmpPath);
        this.log.warn({ event: 'merge-failed', collection: collection.id, day, err: String(err) }, 'could not put merged parts in place; the next pass tries again');
      }
    });
    this.mergesInFlight.set(id, { collection, day });
  }

  /**
   * Cancels the thread's merges of a collection (of one day when given): a seal of the day, or
   * the collection's close, makes their answers moot, and a large merge would hold the thread
   * (and a close waiting for it) for seconds.
   */
  cancelMerges(collection: Collection, day?: number): void {
    for (const [id, merge] of this.mergesInFlight) {
      if (merge.collection === collection && (day === undefined || merge.day === day)) this.compactor?.cancel(id);
    }
  }

  /** Frozen logs found at recovery (a compaction a crash interrupted) go to the compaction thread, or are compacted here. */
  adopt(collection: Collection): void {
    if (collection.frozen.size === 0) return;
    this.unsubmitted.add(collection);
    this.submitWaiting();
  }

  /** Submits frozen sets that are not with the compaction thread (recovered, or a failed try whose pause is over). */
  private submitWaiting(): void {
    if (this.unsubmitted.size === 0 || performance.now() < this.compactionPausedUntil) return;
    const collections = [...this.unsubmitted];
    this.unsubmitted.clear();
    for (const collection of collections) {
      if (this.collections.get(collection.id) !== collection) continue;
      for (const [day, sets] of collection.frozen) {
        if (!sets.some((set) => !set.submitted)) continue;
        if (this.compactor === null || this.compactionsWaiting >= MAX_COMPACTIONS_WAITING) this.compactDay(collection, day);
        else for (const set of sets) if (!set.submitted) this.submit(collection, day, set);
      }
    }
  }

  /** Resolves once the compaction thread has answered every request made so far. */
  compactionsSettled(): Promise<void> {
    return this.compactor === null ? Promise.resolve() : this.compactor.settled();
  }

  /**
   * After an append: compacts the days whose logs passed a limit, and now and then the largest
   * days while the shard's logs together are over budget. A failure is logged, never thrown (the
   * append is stored; the logs stay as they are) and the next try waits a while.
   */
  compactOversized(collection: Collection, written: readonly DayLog[], newBlocks: number): void {
    if (performance.now() < this.compactionPausedUntil) return;
    try {
      this.submitWaiting();
      for (const dayLog of written) {
        if ((dayLog.blockCount >= this.compactBlocks || dayLog.size >= this.compactBytes) && (collection.active.get(dayLog.day) === dayLog || collection.late.get(dayLog.day) === dayLog)) this.compactSoon(collection, dayLog.day);
      }
      this.blocksSinceBudgetCheck += newBlocks;
      if (this.blocksSinceBudgetCheck < this.compactBlocks / 8) return;
      this.blocksSinceBudgetCheck = 0;
      for (;;) {
        let blocks = 0;
        let bytes = 0;
        let largest: { collection: Collection; day: number; blocks: number } | null = null;
        for (const c of this.collections.values()) {
          for (const dayLog of c.writableLogs()) {
            blocks += dayLog.blockCount;
            bytes += dayLog.size;
            if (largest === null || dayLog.blockCount > largest.blocks) largest = { collection: c, day: dayLog.day, blocks: dayLog.blockCount };
          }
        }
        if (largest === null || (blocks <= SHARD_LOG_BUDGET_FACTOR * this.compactBlocks && bytes <= SHARD_LOG_BUDGET_FACTOR * this.compactBytes)) return;
        this.compactSoon(largest.collection, largest.day);
      }
    } catch (err) {
      this.compactionPausedUntil = performance.now() + 10_000;
      this.log.warn({ event: 'compaction-failed', collection: collection.id, err: String(err) }, 'could not compact day logs into a part; trying again in 10 s');
    }
  }

  private compactionPausedUntil = 0;

  /** The day's logs in write order: frozen ones by generation, then active, then late. */
  private logsOf(collection: Collection, day: number): DayLog[] {
    const logs: DayLog[] = [];
    for (const set of collection.frozen.get(day) ?? []) logs.push(...set.logs);
    logs.push(...writableLogsOf(collection, day));
    return logs;
  }

  /** Forgets and deletes day logs whose points a durable sealed file or part now holds. */
  private dropLogs(collection: Collection, logs: readonly DayLog[]): void {
    for (const dayLog of logs) {
      this.pending.delete(dayLog);
      dayLog.needsSync = false;
      this.files.forget(dayLog);
      collection.forgetLog(dayLog);
      removeIfPresent(dayLog.path);
    }
  }

  /**
   * Deletes parts a durable file now holds, oldest first: should a crash stop this half way, the
   * parts left are the newest of them, so merging them again after that file gives the same
   * answers (each holds later writes than what it leaves out).
   */
  private dropParts(collection: Collection, day: number, parts: readonly DayPart[], keepGeneration = -1): void {
    for (const part of [...parts].sort((a, b) => a.generation - b.generation)) {
      if (part.generation === keepGeneration) continue;
      this.footers.forget(collection, part.path);
      removeIfPresent(part.path);
      collection.dropPart(day, part.generation);
    }
  }

  /** The sealed file just written is durable under its name: its parts and logs go. */
  private retireSeal(collection: Collection, day: number, index: SealedIndex, parts: readonly DayPart[], logs: readonly DayLog[], job: DayFileJob): void {
    debugPause('seal-after-rename');
    collection.sealedBytes.set(day, index.fileBytes);
    this.footers.put(collection, index);
    this.dropParts(collection, day, parts);
    this.dropLogs(collection, logs);
    debugPause('seal-logs-removed');
    fsyncDir(collection.dir);
    this.log.info(
      { event: 'day-sealed', collection: collection.id, day: path.basename(index.path), tags: index.entryCount, points: job.points, parts: parts.length, bytes: index.fileBytes, ms: Math.round(performance.now() - job.startedAt) },
      'sealed a day',
    );
  }

  /** Starts a job over `parts` (a seal: every part of the day, and its sealed file), none of the day's logs. */
  private startJob(collection: Collection, kind: 'seal' | 'merge', day: number, parts: DayPart[]): void {
    const inputs = kind === 'seal' ? this.footers.ofDay(collection, day) : parts.map((part) => this.footers.get(collection, part.path, day));
    // A merge's file takes the newest input's name (and so its place among the day's parts).
    const output = kind === 'seal' ? collection.sealedPath(day) : parts[parts.length - 1]!.path;
    this.running = { collection, kind, parts: [...parts], job: new DayFileJob(day, kind === 'seal' ? 'sealed' : 'part', output, inputs, [], this.merger) };
  }

  /** Runs the job until done (true, its inputs retired) or `stopAt` (false). */
  private advanceJob(stopAt: number): boolean {
    const running = this.running!;
    let index: SealedIndex;
    try {
      if (!running.job.step(stopAt)) return false;
      this.running = null;
      index = running.job.finish();
    } catch (err) {
      this.running = null;
      running.job.abort();
      throw err;
    }
    const { collection, job, parts } = running;
    if (running.kind === 'seal') {
      this.retireSeal(collection, job.day, index, parts, [], job);
      return true;
    }
    this.retireMerge(collection, job.day, parts, index, { points: job.points, bytes: index.fileBytes, ms: Math.round(performance.now() - job.startedAt) });
    return true;
  }

  /** Gives up the job under way (its collection is being closed, or the store recovers). */
  stopJob(): void {
    if (this.running === null) return;
    this.running.job.abort();
    this.running = null;
  }
}
