/**
 * Writing one sealed-format file (a sealed day or a part) from what a day already has: sealed
 * files and parts (immutable inputs, read through their footers) and, for a compaction or a
 * small seal, its day logs (read front to back, each byte once).
 *
 * Why parts exist: a day log keeps a 36-byte index entry in memory per block (a block per tag
 * per write request) and is read through at every recovery, so a busy day's log grew memory and
 * restart time with every point written (issue 34: 310 MiB of index after 30 minutes at a tenth
 * of capacity). The store compacts a day's logs into a part once they pass a size, so memory
 * and recovery are bounded by that size; parts of similar size are merged in the background
 * (merges that would hold the shard's thread too long run in slices), and the seal at the
 * day's end merges the sealed file, the parts and the logs into the one sealed file.
 */

import fs from 'node:fs';
import type { LogSource } from './day-file.js';
import type { DayMerger } from './day-merge.js';
import { SEALED_BLOCK_POINTS, SealedFileWriter, type SealedIndex } from './sealed-file.js';
import type { DayPart } from './collection.js';
import { dayEndMs, dayStartMs } from './utc-day.js';
import { debugPause } from './debug-pause.js';

/** Points of one pass over a day's logs held in memory at once (16 bytes each). */
export const GATHER_POINTS = 1 << 20;

/**
 * The passes' buffers, kept for the next compaction of this thread (each compaction allocated
 * 16 MiB afresh, which the worker's GC returned late: a soak saw its ArrayBuffers swing 25-98
 * MiB). A pass larger than GATHER_POINTS (one tag with more points) gets buffers of its own.
 */
let gatherTs = new Float64Array(0);
let gatherValues = new Float64Array(0);

/** A pass over day logs: the points of tags [tagIds] in write order, tag i at [starts[i], starts[i + 1]). */
interface GatheredPass {
  tagIds: number[];
  starts: number[];
  ts: Float64Array;
  values: Float64Array;
}

/**
 * The points of the day's logs (in the order given: active, then late) by tag, in passes of at
 * most `maxPoints` points (a tag with more gets a pass of its own). Each pass reads every log
 * front to back once.
 */
export function* gatherLogs(logs: readonly LogSource[], maxPoints = GATHER_POINTS): Generator<GatheredPass> {
  const counts = new Map<number, number>();
  for (const log of logs) for (const id of log.tagIds()) counts.set(id, (counts.get(id) ?? 0) + log.pointsOf(id));
  const ids = [...counts.keys()].sort((a, b) => a - b);
  for (let first = 0; first < ids.length; ) {
    const tagIds: number[] = [];
    const starts: number[] = [0];
    let points = 0;
    for (; first < ids.length && (tagIds.length === 0 || points + counts.get(ids[first]!)! <= maxPoints); first++) {
      tagIds.push(ids[first]!);
      points += counts.get(ids[first]!)!;
      starts.push(points);
    }
    let ts = gatherTs;
    let values = gatherValues;
    if (ts.length < points) {
      ts = new Float64Array(Math.max(points, Math.min(GATHER_POINTS, 2 * ts.length)));
      values = new Float64Array(ts.length);
      if (ts.length <= GATHER_POINTS) {
        gatherTs = ts;
        gatherValues = values;
      }
    }
    const cursor = new Map<number, number>();
    tagIds.forEach((id, i) => cursor.set(id, starts[i]!));
    for (const log of logs) {
      log.visitInFileOrder((tagId, blockTs, blockValues, count) => {
        const at = cursor.get(tagId);
        if (at === undefined) return;
        ts.set(blockTs.subarray(0, count), at);
        values.set(blockValues.subarray(0, count), at);
        cursor.set(tagId, at + count);
      });
    }
    yield { tagIds, starts, ts, values };
  }
}

/**
 * Merges, per tag in id order, the day's immutable inputs (oldest first) and optionally its
 * logs into one new sealed-format file. `step` may be called with a deadline, again and again,
 * when there are no logs: inputs do not change under it (only a job replaces them), while logs
 * may take new writes between two steps, so a job with logs runs in one step.
 */
export class DayFileJob {
  private readonly writer: SealedFileWriter;
  private readonly tagIds: number[];
  private readonly fds: number[];
  private readonly passes: Generator<GatheredPass> | null;
  private pass: GatheredPass | null = null;
  private passAt = 0;
  private next = 0;
  /** Points written so far. */
  points = 0;
  readonly startedAt = performance.now();

  constructor(
    readonly day: number,
    /**
     * 'sealed': the day's sealed file, coded for size, where the fault tests' seal phases apply;
     * 'part': a part, which a merge or the day's seal rewrites, coded for speed.
     */
    readonly output: 'sealed' | 'part',
    readonly outputPath: string,
    /** Sealed file and parts, oldest first. */
    readonly inputs: readonly SealedIndex[],
    readonly logs: readonly LogSource[],
    private readonly merger: DayMerger,
    /** The compaction thread writes under a name of its own and leaves the rename to the shard. */
    private readonly placement: { tmpPath?: string; rename: boolean } = { rename: true },
  ) {
    const ids = new Set<number>();
    for (const input of inputs) for (const id of input.tagIds) ids.add(id);
    for (const log of logs) for (const id of log.tagIds()) ids.add(id);
    this.tagIds = [...ids].sort((a, b) => a - b);
    this.passes = logs.length > 0 ? gatherLogs(logs) : null;
    this.fds = [];
    try {
      for (const input of inputs) this.fds.push(fs.openSync(input.path, 'r'));
      this.writer = new SealedFileWriter(outputPath, day, undefined, output === 'sealed' ? 'best' : 'fast', placement.tmpPath);
    } catch (err) {
      this.closeInputs();
      throw err;
    }
  }

  /** Writes tags until done (true) or `deadline` (performance.now()) has passed (false). */
  step(deadline = Infinity): boolean {
    const dayStart = dayStartMs(this.day);
    const dayEnd = dayEndMs(this.day);
    while (this.next < this.tagIds.length) {
      const n = this.writeTag(this.tagIds[this.next++]!, dayStart, dayEnd);
      if (n > 0 && this.output === 'sealed') debugPause('seal-writing');
      this.points += n;
      if (this.passes === null && performance.now() >= deadline) break;
    }
    return this.next >= this.tagIds.length;
  }

  /**
   * Writes one tag: its runs (each input's blocks, oldest input first, then the logs' points,
   * sorted) merged a window at a time. A window ends at the earliest last timestamp among the
   * runs' current blocks, so it holds at most one block of each run and every point of the
   * runs up to that time: memory stays a few blocks whatever the tag's day holds. (The whole
   * day of a tag went through the merger at once: a busy tag's merge took five buffers of its
   * every point, 100 MiB and more that the thread allocated and dropped job after job.)
   */
  private writeTag(tagId: number, dayStart: number, dayEnd: number): number {
    const merger = this.merger;
    const runs: TagRun[] = [];
    for (let i = 0; i < this.inputs.length; i++) {
      const run = fileRun(i);
      if (run.open(this.inputs[i]!, tagId, dayStart, dayEnd, this.fds[i]!)) runs.push(run);
    }
    const pass = this.passFor(tagId);
    if (pass !== null) {
      const at = this.passAt;
      merger.begin(dayStart, dayStart, dayEnd);
      merger.add(pass.ts, pass.values, pass.starts[at]!, pass.starts[at + 1]! - pass.starts[at]!);
      const n = merger.finish(); // before resultTs and resultValues are read: it sets them
      logRun.hold(merger.resultTs, merger.resultValues, n);
      runs.push(logRun);
    }
    let written = 0;
    for (;;) {
      let until = Infinity;
      for (const run of runs) {
        if (run.at >= run.n && !run.next()) continue;
        until = Math.min(until, run.ts[run.n - 1]!);
      }
      if (until === Infinity) break;
      merger.begin(dayStart, dayStart, dayEnd);
      for (const run of runs) {
        let k = run.at;
        while (k < run.n && run.ts[k]! <= until) k++;
        if (k > run.at) merger.add(run.ts, run.values, run.at, k - run.at);
        run.at = k;
      }
      const n = merger.finish();
      this.writer.addPoints(tagId, merger.resultTs, merger.resultValues, n);
      written += n;
    }
    this.writer.endTag();
    return written;
  }

  /** Writes the whole file in one go (a job with logs must): its footer; on a failure nothing is left of it. */
  runAtOnce(): SealedIndex {
    try {
      this.step();
      return this.finish();
    } catch (err) {
      this.abort();
      throw err;
    }
  }

  /** Makes the file durable under its name; the caller then retires the inputs. */
  finish(): SealedIndex {
    try {
      return this.writer.finish(this.placement.rename);
    } finally {
      this.closeInputs();
      this.merger.shrink();
    }
  }

  abort(): void {
    this.writer.abort();
    this.closeInputs();
    this.merger.shrink();
  }

  /** The current log pass if it holds `tagId` (passes and tags both go up), else null. */
  private passFor(tagId: number): GatheredPass | null {
    if (this.passes === null) return null;
    for (;;) {
      if (this.pass !== null) {
        while (this.passAt < this.pass.tagIds.length && this.pass.tagIds[this.passAt]! < tagId) this.passAt++;
        if (this.passAt < this.pass.tagIds.length) return this.pass.tagIds[this.passAt] === tagId ? this.pass : null;
      }
      const next = this.passes.next();
      if (next.done) return null;
      this.pass = next.value;
      this.passAt = 0;
    }
  }

  private closeInputs(): void {
    for (const fd of this.fds.splice(0)) fs.closeSync(fd);
  }
}

/** A tag's points in time order, a block at a time: [at, n) of ts/values not yet merged. */
interface TagRun {
  ts: Float64Array;
  values: Float64Array;
  at: number;
  n: number;
  /** Loads the next block; false when there is none. */
  next(): boolean;
}

/** Buffers above this many points are dropped after the block that grew them (blocks hold SEALED_BLOCK_POINTS). */
const KEEP_RUN_POINTS = 1 << 16;

/** One sealed file's or part's blocks of a tag that meet [lo, hi], decoded one at a time into buffers the run keeps. */
class FileRun implements TagRun {
  ts = new Float64Array(0);
  values = new Float64Array(0);
  at = 0;
  n = 0;
  private index: SealedIndex | null = null;
  private fd = -1;
  private entry = 0;
  private end = 0;
  private lo = 0;
  private hi = 0;

  /** Starts on `tagId`'s blocks of `index`; false when the file has none. */
  open(index: SealedIndex, tagId: number, lo: number, hi: number, fd: number): boolean {
    const first = index.find(tagId);
    this.at = this.n = 0;
    if (first < 0) return false;
    this.index = index;
    this.fd = fd;
    this.entry = first;
    this.end = index.endOf(first);
    this.lo = lo;
    this.hi = hi;
    return true;
  }

  next(): boolean {
    const index = this.index!;
    while (this.entry < this.end) {
      const e = this.entry++;
      if (index.maxTs[e]! < this.lo || index.minTs[e]! > this.hi) continue;
      const count = index.counts[e]!;
      if (this.ts.length < count || this.ts.length > KEEP_RUN_POINTS) {
        this.ts = new Float64Array(Math.max(count, Math.min(SEALED_BLOCK_POINTS, KEEP_RUN_POINTS)));
        this.values = new Float64Array(this.ts.length);
      }
      index.decode(e, this.ts, this.values, this.fd);
      this.at = 0;
      this.n = count;
      return true;
    }
    this.at = this.n = 0;
    return false;
  }
}

/** The logs' points of a tag, sorted and deduplicated: one block, in buffers kept for the next tag. */
class LogRun implements TagRun {
  ts = new Float64Array(0);
  values = new Float64Array(0);
  at = 0;
  n = 0;

  hold(ts: Float64Array, values: Float64Array, n: number): void {
    if (this.ts.length < n || this.ts.length > GATHER_POINTS) {
      this.ts = new Float64Array(Math.max(n, Math.min(GATHER_POINTS, 2 * this.ts.length)));
      this.values = new Float64Array(this.ts.length);
    }
    this.ts.set(ts.subarray(0, n));
    this.values.set(values.subarray(0, n));
    this.at = 0;
    this.n = n;
  }

  next(): boolean {
    return false;
  }
}

/** The thread's runs, kept between tags and jobs (a tag's merge runs within one step, so jobs never share them at once). */
const fileRuns: FileRun[] = [];
const logRun = new LogRun();

function fileRun(i: number): FileRun {
  while (fileRuns.length <= i) fileRuns.push(new FileRun());
  return fileRuns[i]!;
}

/** Adds the tag's blocks of a sealed file or part that meet [lo, hi] to the merger. */
export function addFileBlocks(index: SealedIndex, tagId: number, lo: number, hi: number, merger: DayMerger, fd?: number): void {
  const first = index.find(tagId);
  if (first < 0) return;
  for (let e = first, end = index.endOf(first); e < end; e++) {
    if (index.maxTs[e]! < lo || index.minTs[e]! > hi) continue;
    const count = index.counts[e]!;
    const at = merger.reserve(count);
    index.decode(e, merger.tsBuffer.subarray(at, at + count), merger.valueBuffer.subarray(at, at + count), fd);
    merger.commit(count);
  }
}

/** Parts a day may collect before the newest ones of similar size are merged. */
export const PARTS_PER_MERGE = 8;
/** Size tiers are powers of PARTS_PER_MERGE above this many bytes. */
const TIER_BASE_BYTES = 64 * 1024;

function tierOf(part: DayPart): number {
  return Math.max(0, Math.floor(Math.log(Math.max(1, part.bytes / TIER_BASE_BYTES)) / Math.log(PARTS_PER_MERGE)));
}

/**
 * The parts to merge next, or null: once PARTS_PER_MERGE parts of one size tier (sizes within a
 * power of PARTS_PER_MERGE) lie among the newest parts of that tier or below, those newest parts
 * (a merge takes a run of generations, so that the merged part keeps its place in write order).
 * Older parts are larger (they are merges), so each point is rewritten about once per tier:
 * log8 of the day's size over 64 KiB times, and a large part never for a few small ones.
 */
export function partsToMerge(parts: readonly DayPart[]): DayPart[] | null {
  if (parts.length < PARTS_PER_MERGE) return null;
  const tiers = parts.map(tierOf);
  for (let tier = 0; tier <= Math.max(...tiers); tier++) {
    let from = parts.length;
    let ofTier = 0;
    for (; from > 0 && tiers[from - 1]! <= tier; from--) if (tiers[from - 1] === tier) ofTier++;
    if (ofTier >= PARTS_PER_MERGE) return parts.slice(from);
  }
  return null;
}
