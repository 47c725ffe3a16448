/**
 * The read-only check of one collection folder (`historian check`): its tag dictionary, every
 * day log and every sealed file, through the same readers the storage uses (day-file.ts,
 * sealed-file.ts, sealed-summary.ts, collection.ts), so what passes here is what the service
 * reads. Files are opened 'r' and nothing is written, renamed or created.
 *
 * Day logs are judged as recovery (DayLog.open) would treat them: it cuts the file at the first
 * block that fails. A failure with no intact block after it is a torn tail (a write a crash or
 * the running writer left incomplete): a note. A failure with intact blocks after it, or a
 * whole block naming an unknown tag or foreign timestamps, would lose data at the cut: a problem.
 */

import fs from 'node:fs';
import path from 'node:path';
import { BadDayLogHeader, checkDayLogHeader, DAY_LOG_HEADER_BYTES, walkDayLogBlocks, type DayLogStop, type DayLogWalk } from './day-file.js';
import { DAY_LOG_FILE, META_FILE, PART_FILE, readDictionary, SEALED_FILE } from './collection.js';
import { SEALED_BLOCK_POINTS, SealedIndex } from './sealed-file.js';
import { SUMMARY_SLOT_MS, SUMMARY_SLOTS, SummaryDirectory } from './sealed-summary.js';
import { parseTagLog, TAG_LOG_FILE } from './tag-log.js';
import { dayStartMs, DAY_MS, parseDay } from './utc-day.js';
import type { CollectionScope } from '../shared/scope.js';
import type { TimeSeriesChecked } from '../shared/check-protocol.js';

/** Where the check's findings and progress go; `file` is relative to the data dir. */
export interface CheckSink {
  problem(file: string, text: string): void;
  note(file: string, text: string): void;
  /** `bytes` more were read, in `file`. */
  advance(file: string, bytes: number): void;
}

/** Progress is reported at least every this many bytes inside a file. */
const PROGRESS_BYTES = 8 * 1024 * 1024;
/** Ids are not checked against a dictionary that could not be read (its problem is reported). */
const ANY_TAG = 2 ** 32;

export class CollectionCheck {
  private tagCount = ANY_TAG;
  private dictionaryRead = false;

  constructor(
    private readonly dir: string,
    /** The folder relative to the data dir. */
    private readonly rel: string,
    private readonly scope: CollectionScope,
    private readonly running: boolean,
    private readonly sink: CheckSink,
    private readonly checked: TimeSeriesChecked,
  ) {}

  /** Checks the dictionary, then every file of `names` (the folder's listing). */
  run(names: readonly string[]): void {
    this.checkDictionary();
    const sealedDays = new Set<number>();
    for (const name of names) {
      const day = dayOfName(SEALED_FILE, name, 1);
      if (day !== null) sealedDays.add(day);
    }
    for (const name of [...names].sort()) {
      const file = this.relative(name);
      if (name === META_FILE || name === TAG_LOG_FILE) continue;
      if (name.endsWith('.tmp')) {
        this.sink.note(file, this.running ? 'a file being replaced (a seal or dictionary rewrite under way)' : 'left by a write that a stop interrupted; removed at next start (the original is intact)');
        continue;
      }
      if (/\.log\.bad-\d+$/.test(name)) {
        this.sink.note(file, 'a day log set aside by recovery (its header was not ours); the service does not read it');
        continue;
      }
      const sealed = SEALED_FILE.exec(name) ?? PART_FILE.exec(name); // a part is a sealed file of part of a day
      const dayLog = DAY_LOG_FILE.exec(name);
      const day = sealed ? dayOfName(SEALED_FILE.test(name) ? SEALED_FILE : PART_FILE, name, 1) : dayLog ? dayOfName(DAY_LOG_FILE, name, 2) : null;
      if ((sealed || dayLog) && day === null) this.sink.note(file, 'its name is not a real date; the service passes it over');
      else if (sealed) this.guarded(name, () => this.checkSealed(name, day!));
      else if (dayLog) this.guarded(name, () => this.checkDayLog(name, day!, dayLog[1] === 'active' && sealedDays.has(day!)));
      else this.sink.note(file, 'not a storage file; the service passes it over');
    }
  }

  private relative(name: string): string {
    return path.join(this.rel, name);
  }

  /** Runs one file's check; a file a running service sealed or removed meanwhile is a note. */
  private guarded(name: string, check: () => void): void {
    try {
      check();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && this.running) this.sink.note(this.relative(name), 'sealed or removed by the service while it was being checked');
      else this.sink.problem(this.relative(name), withoutPath(err, path.join(this.dir, name)));
    }
  }

  // -------------------------------------------------------------------------------------------

  /** Loads meta.json and tags.log as recovery does; reports what recovery would refuse or drop. */
  private checkDictionary(): void {
    this.checked.dictionaries++;
    const metaRel = this.relative(META_FILE);
    const logRel = this.relative(TAG_LOG_FILE);
    for (const [name, rel] of [[META_FILE, metaRel], [TAG_LOG_FILE, logRel]] as const) {
      const bytes = sizeOf(path.join(this.dir, name));
      this.checked.bytes += bytes;
      this.sink.advance(rel, bytes);
    }
    let dictionary: ReturnType<typeof readDictionary>;
    try {
      dictionary = readDictionary(this.dir, this.scope);
    } catch (err) {
      this.sink.problem(metaRel, `${withoutPath(err, path.join(this.dir, META_FILE))}; the service cannot open this collection`);
      return;
    }
    this.tagCount = dictionary.tags.length;
    this.dictionaryRead = true;
    const { logged, applied } = dictionary;
    if (applied < logged.records.length) {
      const record = logged.records[applied]!;
      this.sink.problem(
        logRel,
        `record ${applied + 1} (tag id ${record.id}) does not continue the dictionary of ${dictionary.tags.length} tags (an id out of sequence, a bad or repeated name, or labels of an unknown tag): the next start drops it and the ${logged.records.length - applied - 1} records after it`,
      );
    }
    if (logged.goodBytes < logged.fileBytes) this.judgeTagLogTail(logRel, logged.goodBytes);
  }

  /** The log stops being readable at `good`: a torn last record, or damage with good records after it. */
  private judgeTagLogTail(file: string, good: number): void {
    const bytes = fs.readFileSync(path.join(this.dir, TAG_LOG_FILE));
    let later = -1;
    for (let nl = bytes.indexOf(0x0a, good); nl >= 0 && later < 0; nl = bytes.indexOf(0x0a, nl + 1)) {
      if (parseTagLog(bytes.subarray(nl + 1)).records.length > 0) later = nl + 1;
    }
    const cut = bytes.length - good;
    if (later >= 0) this.sink.problem(file, `record at byte ${good} is damaged: the next start cuts the log there, losing ${cut} bytes (a good record follows at byte ${later})`);
    else if (this.running) this.sink.note(file, `last record at byte ${good} is incomplete; the service may be appending it`);
    else this.sink.note(file, `torn last record at byte ${good}: ${cut} bytes will be truncated at next start`);
  }

  /** With the service running, a tag may have been added after the dictionary was read: read it again. */
  private reloadDictionary(): boolean {
    if (!this.running || !this.dictionaryRead) return false;
    const before = this.tagCount;
    try {
      this.tagCount = readDictionary(this.dir, this.scope).tags.length;
    } catch {
      return false; // being replaced this instant: the first reading stands
    }
    return this.tagCount > before;
  }

  // -------------------------------------------------------------------------------------------

  private checkDayLog(name: string, day: number, dayIsSealed: boolean): void {
    const file = this.relative(name);
    const full = path.join(this.dir, name);
    const fd = fs.openSync(full, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      this.checked.dayFiles++;
      this.checked.bytes += size;
      if (dayIsSealed) this.sink.note(file, 'a day log beside the sealed file of its day (a seal stopped after its rename): merged again at the next seal');
      if (size < DAY_LOG_HEADER_BYTES) {
        if (this.running) this.sink.note(file, `${size} bytes: being created`);
        else this.sink.note(file, `${size} bytes, shorter than its header: rewritten as an empty day log at next start`);
        this.sink.advance(file, size);
        return;
      }
      try {
        checkDayLogHeader(fd, full, day);
      } catch (err) {
        const moved = err instanceof BadDayLogHeader ? `; the next start moves it aside as ${name}.bad-<ms> and serves none of its points` : '';
        this.sink.problem(file, `header at byte 0: ${withoutPath(err, full)}${moved}`);
        this.sink.advance(file, size);
        return;
      }
      let walk = this.walkDayLog(fd, file, day, size);
      if (walk.stop?.cause === 'tag' && this.reloadDictionary()) walk = this.walkDayLog(fd, file, day, size);
      if (walk.stop !== null) this.judgeDayLogStop(fd, file, day, size, walk.stop);
    } finally {
      fs.closeSync(fd);
    }
  }

  private walkDayLog(fd: number, file: string, day: number, size: number): DayLogWalk {
    let reported = 0;
    const walk = walkDayLogBlocks(fd, {}, day, DAY_LOG_HEADER_BYTES, size, this.tagCount, (_tag, offset) => {
      if (offset - reported < PROGRESS_BYTES) return;
      this.sink.advance(file, offset - reported);
      reported = offset;
    });
    this.sink.advance(file, size - reported);
    return walk;
  }

  /** Recovery cuts the file at `stop.at`; says whether that loses intact blocks. */
  private judgeDayLogStop(fd: number, file: string, day: number, size: number, stop: DayLogStop): void {
    const cut = `the next start cuts the file there, losing ${size - stop.at} bytes`;
    // A whole block with a good checksum that names an unknown tag or foreign times was never a torn write.
    if (stop.cause === 'tag' || stop.cause === 'timestamps') {
      this.sink.problem(file, `block at byte ${stop.at}: ${stop.reason}; ${cut}`);
      return;
    }
    const later = this.nextIntactBlock(fd, day, size, stop);
    if (later >= 0) this.sink.problem(file, `block at byte ${stop.at}: ${stop.reason}; ${cut} (an intact block follows at byte ${later})`);
    else if (this.running) this.sink.note(file, `last block at byte ${stop.at} is incomplete (${stop.reason}); the service may be appending it`);
    else this.sink.note(file, `torn tail at byte ${stop.at} (${stop.reason}): ${size - stop.at} bytes will be truncated at next start`);
  }

  /** The offset of the first intact block after the failed one, or -1 when none follows (a torn tail). */
  private nextIntactBlock(fd: number, day: number, size: number, stop: DayLogStop): number {
    const owner = {};
    const intactAt = (at: number) => walkDayLogBlocks(fd, owner, day, at, size, this.tagCount, () => {}, 1).blocks === 1;
    // A block damaged inside keeps its length fields: the next one starts right after it.
    if (stop.whole && intactAt(stop.at + stop.size)) return stop.at + stop.size;
    // Otherwise look at every place a block may start (blocks are 8-byte aligned).
    for (let at = stop.at + 8; at + 16 <= size; at += 8) if (intactAt(at)) return at;
    return -1;
  }

  // -------------------------------------------------------------------------------------------

  private checkSealed(name: string, day: number): void {
    const file = this.relative(name);
    const full = path.join(this.dir, name);
    // One descriptor for footer, blocks and summary: a seal that replaces the file meanwhile cannot mix two files.
    const fd = fs.openSync(full, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      this.checked.sealedFiles++;
      this.checked.bytes += size;
      let index: SealedIndex;
      try {
        index = SealedIndex.read(full, day, fd);
      } catch (err) {
        this.sink.problem(file, withoutPath(err, full));
        this.sink.advance(file, size);
        return;
      }
      new SealedCheck(this, index, fd, file).run();
      this.sink.advance(file, size);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** For SealedCheck: whether the dictionary has the id (read again once when the service runs). */
  knows(tagId: number): boolean {
    return tagId < this.tagCount || (this.reloadDictionary() && tagId < this.tagCount);
  }

  get dictionarySize(): number {
    return this.tagCount;
  }

  report(file: string, text: string): void {
    this.sink.problem(file, text);
  }
}

/**
 * Every block of one sealed file: its checksum and columns (SealedIndex.decode), its points
 * sorted and one per timestamp inside the footer's range, its tag in the dictionary; and for
 * formats 3 and 4 the summary section: its checksums, its tags those of the footer, and each slot's
 * min and max the ones the points give (computed in time order as SummaryBuilder does).
 */
class SealedCheck {
  private ts = new Float64Array(0);
  private values = new Float64Array(0);
  private readonly min = new Float64Array(SUMMARY_SLOTS);
  private readonly max = new Float64Array(SUMMARY_SLOTS);
  /** Slots with a non-NaN value (their min may be +Infinity, so it cannot say so itself). */
  private readonly seen = new Uint8Array(SUMMARY_SLOTS);
  private readonly slotTs = new Float64Array(SUMMARY_SLOTS);
  private readonly slotValues = new Float64Array(SUMMARY_SLOTS);
  private summary: SummaryDirectory | null = null;

  constructor(
    private readonly owner: CollectionCheck,
    private readonly index: SealedIndex,
    private readonly fd: number,
    private readonly file: string,
  ) {}

  run(): void {
    const index = this.index;
    if (index.summarySpan !== null) this.readSummary();
    const maxPoints = index.version >= 2 ? SEALED_BLOCK_POINTS : DAY_MS;
    let previousEnd = 0;
    for (let first = 0; first < index.entryCount; ) {
      const tagId = index.tagIds[first]!;
      const end = index.endOf(first);
      if (!this.owner.knows(tagId)) this.problem(`footer entry ${first} names tag id ${tagId}, which is not in the dictionary (${this.owner.dictionarySize} tags)`);
      this.min.fill(Infinity);
      this.max.fill(-Infinity);
      this.seen.fill(0);
      let decoded = true;
      for (let e = first; e < end; e++) {
        const offset = index.offsets[e]!;
        if (offset < previousEnd) this.problem(`block ${e} at byte ${offset} overlaps the block before it (which ends at byte ${previousEnd})`);
        previousEnd = Math.max(previousEnd, offset + index.lengths[e]!);
        decoded = this.checkBlock(e, maxPoints) && decoded;
      }
      if (this.summary !== null && decoded) this.compareSummary(tagId);
      first = end;
    }
  }

  private problem(text: string): void {
    this.owner.report(this.file, text);
  }

  /** Decodes and checks block `e`, folding its points into the slot extremes; false when it could not be read. */
  private checkBlock(e: number, maxPoints: number): boolean {
    const index = this.index;
    const count = index.counts[e]!;
    const at = `block ${e} (tag ${index.tagIds[e]}) at byte ${index.offsets[e]}`;
    if (count < 1 || count > maxPoints) {
      this.problem(`${at}: ${count} points, a format ${index.version} block holds 1..${maxPoints}`);
      return false;
    }
    if (this.ts.length < count) {
      this.ts = new Float64Array(count);
      this.values = new Float64Array(count);
    }
    try {
      index.decode(e, this.ts, this.values, this.fd);
    } catch (err) {
      this.problem(withoutPath(err, index.path).replace(/^block of tag \d+ at byte \d+ /, `${at}: `));
      return false;
    }
    const { ts, values } = this;
    for (let i = 0; i < count; i++) {
      const t = ts[i]!;
      if (Math.floor(t) !== t || (i > 0 && t <= ts[i - 1]!)) {
        this.problem(`${at}: timestamp ${i} (${t}) is not an integer above the one before it`);
        return false;
      }
    }
    if (ts[0] !== index.minTs[e] || ts[count - 1] !== index.maxTs[e]) {
      this.problem(`${at}: its points span [${ts[0]}, ${ts[count - 1]}], its footer entry says [${index.minTs[e]}, ${index.maxTs[e]}]`);
      return false;
    }
    const dayStart = dayStartMs(index.day);
    for (let i = 0; i < count; i++) {
      const v = values[i]!;
      if (v !== v) continue; // NaN takes no part in a slot's min or max
      const s = Math.floor((ts[i]! - dayStart) / SUMMARY_SLOT_MS);
      if (v < this.min[s]!) this.min[s] = v;
      if (v > this.max[s]!) this.max[s] = v;
      this.seen[s] = 1;
    }
    return true;
  }

  private readSummary(): void {
    const index = this.index;
    try {
      this.summary = SummaryDirectory.read(index.path, index.summarySpan!, index.dataEnd, index.footerOffset, index.version, this.fd);
    } catch (err) {
      this.problem(`${withoutPath(err, index.path)} (min and max queries of this day read its points instead)`);
      return;
    }
    const footerTags = [...new Set(index.tagIds)];
    const summaryTags = [...this.summary.tagIds];
    const missing = footerTags.find((id, i) => summaryTags[i] !== id) ?? (summaryTags.length > footerTags.length ? summaryTags[footerTags.length] : undefined);
    if (missing !== undefined) this.problem(`summary: its directory lists ${summaryTags.length} tags, the footer ${footerTags.length}; they differ at tag ${missing}`);
  }

  /** The summary's slots of the tag against the extremes its points gave. */
  private compareSummary(tagId: number): void {
    const summary = this.summary!;
    const e = summary.find(tagId);
    if (e < 0) return; // reported with the directory
    const dayStart = dayStartMs(this.index.day);
    for (const kind of ['min', 'max'] as const) {
      const expected = kind === 'min' ? this.min : this.max;
      let n: number;
      try {
        n = summary.slots(e, kind, dayStart, this.slotTs, this.slotValues, this.fd);
      } catch (err) {
        this.problem(`${withoutPath(err, this.index.path)} (min and max queries of this tag read its points instead)`);
        return;
      }
      let k = 0;
      for (let s = 0; s < SUMMARY_SLOTS; s++) {
        const present = this.seen[s] === 1;
        const listed = k < n && this.slotTs[k] === dayStart + s * SUMMARY_SLOT_MS;
        if (present !== listed || (present && !Object.is(this.slotValues[k], expected[s]))) {
          const says = listed ? String(this.slotValues[k]) : 'nothing';
          const gives = present ? String(expected[s]) : 'nothing';
          this.problem(`summary of tag ${tagId}, slot ${s}: ${kind} ${says} where the points give ${gives} (min and max queries would answer it)`);
          return;
        }
        if (listed) k++;
      }
    }
  }
}

/** The day of a file name matched by `pattern` (its date in group `group`), or null. */
function dayOfName(pattern: RegExp, name: string, group: number): number | null {
  const m = pattern.exec(name);
  return m ? parseDay(m[group]!) : null;
}

function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** An error's message without the `<path>: ` the readers put in front (the report names the file). */
export function withoutPath(err: unknown, file: string): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.startsWith(`${file}: `) ? message.slice(file.length + 2) : message;
}
