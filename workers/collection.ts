/**
 * One collection's state inside its storage worker: the record and tag dictionary of meta.json,
 * the open day logs, which days are sealed (and their cached footers), and the last value of
 * every tag. Only the shard that owns the collection ever holds one of these.
 *
 * The tag dictionary (each tag's name and optional label set) is meta.json as of its last
 * compaction plus tags.log (tag-log.ts): a new series is a record appended to the log before a
 * block that uses its id, so a block on disk always names a tag the dictionary knows. The log
 * is compacted into meta.json at open and at seal.
 */

import fs from 'node:fs';
import path from 'node:path';
import { BadDayLogHeader, DayLog, dayLogName, type DayLogKind, type OpenFiles } from './day-file.js';
import { makeDirsDurably, removeIfPresent, writeFileDurably } from './durable-fs.js';
import { sealedFileName, type SealedIndex } from './sealed-file.js';
import { badRequest, internal } from '../shared/errors.js';
import type { CollectionRecord } from '../shared/protocol.js';
import { SCOPE_FIELDS, type CollectionScope } from '../shared/scope.js';
import { collectionDir, collectionId } from '../shared/scope-path.js';
import { formatDay, parseDay } from './utc-day.js';
import type { WorkerLog } from './worker-log.js';
import { isLabels, readTagLog, TAG_LOG_FILE, TagLog, type TagLogRecord } from './tag-log.js';
import type { SeriesLabels } from '../native-free-codecs/write-body.js';
import { LabelSets } from './label-sets.js';
import { DAY_LOG_FILE, META_FILE, PART_FILE, SEALED_FILE } from '../shared/collection-files.js';

export { META_FILE, DAY_LOG_FILE, SEALED_FILE, PART_FILE } from '../shared/collection-files.js';
/** Format 2 adds `labels`; format 1 (no labels) is still read. */
export const META_VERSION = 2;
export const MAX_TAG_NAME_BYTES = 256;

export function partFileName(dayText: string, generation: number): string {
  return `part-${dayText}-${String(generation).padStart(8, '0')}.hsd`;
}

export function frozenLogName(kind: DayLogKind, dayText: string, generation: number): string {
  return `${kind}-${dayText}-${String(generation).padStart(8, '0')}.log`;
}

/**
 * A day's logs frozen for compaction off the shard's thread (active, then late: write order):
 * queries read them until part `generation` replaces them.
 */
export interface FrozenLogs {
  generation: number;
  logs: DayLog[];
  /** Handed to the compaction thread and not answered yet. */
  submitted: boolean;
}

/** One part of a day (see PART_FILE): later generations hold later writes. */
export interface DayPart {
  generation: number;
  path: string;
  bytes: number;
}

/** Why `name` cannot be a tag name (same rules as the write-body decoders), or null. */
export function tagNameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'tag name must be a string';
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes < 1 || bytes > MAX_TAG_NAME_BYTES) return `tag name must be 1..${MAX_TAG_NAME_BYTES} bytes of UTF-8 (got ${bytes})`;
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return `tag name ${JSON.stringify(name)} must not contain control characters`;
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(name)) {
    return `tag name ${JSON.stringify(name)} must be valid Unicode (unpaired surrogate)`;
  }
  return null;
}

/** Where a tag's newest sealed point stands: not looked up yet, in no sealed file, or known. */
const SEALED_LAST_UNKNOWN = 0;
const SEALED_LAST_NONE = 1;
const SEALED_LAST_KNOWN = 2;

export interface CollectionOpenResult {
  collection: Collection;
  blocks: number;
  bytesCut: number;
}

export class Collection {
  readonly id: string;
  readonly scope: CollectionScope;
  readonly dir: string;
  readonly tagNames: string[];
  /** Each tag's label set (same index as tagNames), packed. */
  private readonly tagLabels: LabelSets;
  readonly active = new Map<number, DayLog>();
  readonly late = new Map<number, DayLog>();
  /** Sealed days and their file sizes. */
  readonly sealedBytes = new Map<number, number>();
  /**
   * Per day, its parts in generation order: the day's logs compacted into sealed-format files
   * while the day is still written (DayMaintenance.compactDay). The day's points are its sealed
   * file, then its parts, then its active and late logs, later ones winning a tie.
   */
  readonly parts = new Map<number, DayPart[]>();
  /**
   * Per day, logs frozen and waiting to be compacted into parts, in generation order. They come
   * after the day's parts and before its active and late logs in write order: a frozen set's
   * generation is above every part's, and its part takes that generation.
   */
  readonly frozen = new Map<number, FrozenLogs[]>();
  /** The generation the next part gets (above every part and frozen log on disk). */
  nextPartGeneration = 1;
  /** Footers (of sealed files and parts, by path) read so far (the store bounds how many stay cached). */
  readonly sealedIndexes = new Map<string, SealedIndex>();
  private record: CollectionRecord;
  private readonly tagIds = new Map<string, number>();
  /** Latest point per tag among active and late data (-Infinity: none). */
  private readonly tagLog: TagLog;
  /** Tag ids sorted by name, for listing; ids from `sortedCount` on are not merged in yet. */
  private sortedIds = new Uint32Array(0);
  private sortedCount = 0;
  /** Each tag id's position in sortedIds. */
  private rankOf = new Uint32Array(0);
  private lastTs: Float64Array;
  private lastValues: Float64Array;
  /** Latest point per tag among sealed data, looked up on first use. */
  private sealedLastState: Uint8Array;
  private sealedLastTs: Float64Array;
  private sealedLastValues: Float64Array;

  private constructor(dir: string, scope: CollectionScope, record: CollectionRecord, tagNames: string[], tagLabels: Array<SeriesLabels | undefined>) {
    this.id = collectionId(scope);
    this.scope = scope;
    this.dir = dir;
    this.record = record;
    this.tagNames = tagNames;
    this.tagLabels = new LabelSets(tagLabels);
    this.tagLog = new TagLog(path.join(dir, TAG_LOG_FILE));
    tagNames.forEach((name, i) => this.tagIds.set(name, i));
    const capacity = Math.max(16, tagNames.length);
    this.lastTs = new Float64Array(capacity).fill(-Infinity);
    this.lastValues = new Float64Array(capacity);
    this.sealedLastState = new Uint8Array(capacity);
    this.sealedLastTs = new Float64Array(capacity);
    this.sealedLastValues = new Float64Array(capacity);
  }

  /** Creates the folder and meta.json. The caller has checked that the collection is new. */
  static create(dataDir: string, scope: CollectionScope, extra: Record<string, unknown>, now: number): Collection {
    const dir = collectionDir(dataDir, scope);
    const base: CollectionRecord = { ...scope, createdAt: now, updatedAt: now };
    const record = mergeFields(base, extra);
    makeDirsDurably(dir);
    const collection = new Collection(dir, scope, record, [], []);
    collection.writeMeta(record);
    return collection;
  }

  /**
   * Loads meta.json, removes temporary files a crash left behind, opens the day logs (cutting
   * torn tails) and rebuilds block indexes and last values.
   */
  static open(dataDir: string, scope: CollectionScope, files: OpenFiles, log: WorkerLog): CollectionOpenResult {
    const dir = collectionDir(dataDir, scope);
    const { record, tags, labels, logged, applied } = readDictionary(dir, scope);
    const collection = new Collection(dir, scope, record, tags, labels);
    if (applied < logged.records.length || logged.goodBytes < logged.fileBytes) {
      log.warn({ event: 'tag-log-tail-cut', collection: collection.id, recordsKept: applied, bytesCut: logged.fileBytes - logged.goodBytes }, 'cut the damaged tail of the tag log');
    }
    // Compaction at open: meta.json takes the logged tags, the log starts empty.
    if (logged.fileBytes > 0) {
      collection.writeMeta(record);
      collection.tagLog.reset();
    }

    const logs: { kind: DayLogKind; day: number; name: string; generation: number }[] = [];
    for (const name of fs.readdirSync(dir).sort()) {
      if (name.endsWith('.tmp')) {
        // A seal, meta.json or tag log rewrite that crashed before its rename: the originals are intact.
        removeIfPresent(path.join(dir, name));
        log.info({ event: 'tmp-file-removed', collection: collection.id, file: name }, 'removed a temporary file left by a crash');
        continue;
      }
      const sealed = SEALED_FILE.exec(name);
      if (sealed) {
        const day = parseDay(sealed[1]!);
        if (day !== null) collection.sealedBytes.set(day, fs.statSync(path.join(dir, name)).size);
        continue;
      }
      const part = PART_FILE.exec(name);
      if (part) {
        const day = parseDay(part[1]!);
        if (day !== null) collection.addPart(day, Number(part[2]), fs.statSync(path.join(dir, name)).size);
        continue;
      }
      const dayLog = DAY_LOG_FILE.exec(name);
      const day = dayLog ? parseDay(dayLog[2]!) : null;
      if (dayLog && day !== null) logs.push({ kind: dayLog[1] as DayLogKind, day, name, generation: dayLog[3] === undefined ? Infinity : Number(dayLog[3]) });
    }

    // Write order, which last values are rebuilt in: frozen logs by generation, then active
    // logs before late ones (on an equal timestamp the late point is the later write).
    logs.sort((a, b) => (a.generation !== b.generation ? a.generation - b.generation : a.kind === b.kind ? a.day - b.day : a.kind === 'active' ? -1 : 1));
    let blocks = 0;
    let bytesCut = 0;
    for (const { kind, day, name, generation } of logs) {
      const file = path.join(dir, name);
      if (generation !== Infinity && (collection.parts.get(day) ?? []).some((part) => part.generation >= generation)) {
        // Frozen logs whose part was written (a crash came before they were deleted): the part
        // holds their points, and reading them after a newer part would undo later writes.
        removeIfPresent(file);
        log.info({ event: 'frozen-log-removed', collection: collection.id, file: name }, 'removed a frozen day log that its part already holds');
        continue;
      }
      try {
        const opened = DayLog.open(file, day, kind, files, collection.tagNames.length, collection.noteBlock);
        if (generation === Infinity) (kind === 'active' ? collection.active : collection.late).set(day, opened.log);
        else collection.addFrozen(day, generation, opened.log);
        blocks += opened.blocks;
        bytesCut += opened.bytesCut;
        if (opened.bytesCut > 0) {
          log.warn({ event: 'torn-tail-cut', collection: collection.id, file: name, bytesCut: opened.bytesCut, blocksKept: opened.blocks }, `cut ${opened.bytesCut} bytes of torn tail`);
        }
        if (kind === 'active' && collection.sealedBytes.has(day)) {
          // A seal that crashed after its rename: the sealed file holds these points already.
          // Merging them again at the next seal is harmless, so the file is kept, not trusted away.
          log.info({ event: 'active-after-seal', collection: collection.id, file: name }, 'day log of a sealed day will be merged again at the next seal');
        }
      } catch (err) {
        if (!(err instanceof BadDayLogHeader)) throw err;
        // Not a file we wrote: set it aside rather than cut or overwrite it.
        const aside = `${file}.bad-${Date.now()}`;
        fs.renameSync(file, aside);
        log.warn({ event: 'day-log-quarantined', collection: collection.id, file: name, movedTo: path.basename(aside), reason: err.message }, 'moved aside a day log with a bad header');
      }
    }
    return { collection, blocks, bytesCut };
  }

  /** A copy, so callers cannot change the stored record. */
  getRecord(): CollectionRecord {
    return structuredClone(this.record);
  }

  /** Merges fields into the record and rewrites meta.json (scope fields cannot change). */
  update(fields: Record<string, unknown>, now: number): CollectionRecord {
    const next = mergeFields({ ...this.record, updatedAt: Math.max(now, this.record.updatedAt) }, fields);
    this.writeMeta(next);
    this.record = next;
    if (this.tagLog.records > 0) this.tagLog.reset(); // meta.json has every tag now
    return this.getRecord();
  }

  tagId(name: string): number {
    return this.tagIds.get(name) ?? -1;
  }

  /** The tag's label set (a fresh object), or undefined. */
  labelsOf(tagId: number): SeriesLabels | undefined {
    return this.tagLabels.get(tagId);
  }

  hasLabels(tagId: number): boolean {
    return this.tagLabels.has(tagId);
  }

  /**
   * Adds tags to the dictionary (with their labels, where given) and gives labels to existing
   * tags that had none: the tag log first, memory after (a failed write changes nothing).
   */
  addTags(names: readonly string[], labels: ReadonlyArray<SeriesLabels | null | undefined> = [], relabel: ReadonlyArray<[number, SeriesLabels]> = []): void {
    // After a failed append or fdatasync of the log, the records since its last sync may be gone:
    // meta.json rewritten from memory makes them durable before any block may name their ids.
    if (this.tagLog.broken) this.compactTags();
    if (names.length === 0 && relabel.length === 0) return;
    const records: TagLogRecord[] = names.map((name, i) => ({ kind: 'tag', id: this.tagNames.length + i, name, labels: labels[i] ?? null }));
    for (const [id, set] of relabel) records.push({ kind: 'labels', id, labels: set });
    this.tagLog.append(records);
    names.forEach((name, i) => {
      this.tagIds.set(name, this.tagNames.length);
      this.tagNames.push(name);
      this.tagLabels.push(labels[i]);
    });
    for (const [id, set] of relabel) this.tagLabels.set(id, set);
    if (this.tagNames.length > this.lastTs.length) this.growTagArrays(this.tagNames.length);
  }

  /** Moves the tag log into meta.json (at seal: keeps the log short and the next open quick). */
  compactTags(): void {
    if (this.tagLog.records === 0 && !this.tagLog.broken) return;
    this.writeMeta(this.record);
    this.tagLog.reset();
  }

  /**
   * fdatasync of the records appended since the last one (the group commit, before any day
   * log's). After a failed one the records may be gone from the disk: meta.json rewritten from
   * memory holds them instead (the failure itself was thrown to the commit that met it).
   */
  syncTags(): void {
    if (this.tagLog.broken) this.compactTags();
    else this.tagLog.sync();
  }

  /** Bytes of the tag log (what a backup copies of it; the file may hold no more than that that counts). */
  get tagLogBytes(): number {
    return this.tagLog.bytes;
  }

  /** Records in the tag log since the last compaction. */
  get tagLogRecords(): number {
    return this.tagLog.records;
  }

  get tagLogPath(): string {
    return this.tagLog.path;
  }

  /** Closes the tag log's descriptor (the collection is being closed). */
  close(): void {
    this.tagLog.close();
  }

  /**
   * Tag ids whose names `matches` accepts, in name order (UTF-16 code units), calling `take`
   * for each until it returns false; the number matched (all of them, also past the last taken),
   * or -1 when `overBudget` (asked every 256 names) said to stop. Names with the literal
   * `prefix` are found by binary search, the rest are not looked at.
   */
  listTags(prefix: string, matches: ((name: string) => boolean) | null, take: (id: number) => boolean, overBudget: () => boolean = () => false): number {
    const sorted = this.sortedTagIds();
    const names = this.tagNames;
    if (prefix === '' && matches !== null) {
      // Every name must be looked at: in id order, the order they lie in memory (a walk in name
      // order missed the cache at every name, 5x slower), collecting the name ranks of the hits.
      const ranks = this.rankOf;
      let hits = new Uint32Array(64);
      let count = 0;
      for (let id = 0; id < names.length; id++) {
        if ((id & 255) === 0 && overBudget()) return -1;
        if (!matches(names[id]!)) continue;
        if (count === hits.length) {
          const grown = new Uint32Array(hits.length * 2);
          grown.set(hits);
          hits = grown;
        }
        hits[count++] = ranks[id]!;
      }
      const inOrder = hits.subarray(0, count).sort();
      for (let k = 0; k < count && take(sorted[inOrder[k]!]!); k++);
      return count;
    }
    let count = 0;
    let taking = true;
    const from = prefix === '' ? 0 : lowerBound(sorted, names, prefix);
    for (let k = from; k < sorted.length; k++) {
      const id = sorted[k]!;
      const name = names[id]!;
      if (prefix !== '' && !name.startsWith(prefix)) break; // past the names with the prefix
      if (((k - from) & 255) === 0 && overBudget()) return -1;
      if (matches !== null && !matches(name)) continue;
      count++;
      if (taking) taking = take(id);
    }
    return count;
  }

  /** The ids sorted by name; tags added since the last call are sorted and merged in. */
  private sortedTagIds(): Uint32Array {
    const total = this.tagNames.length;
    if (this.sortedCount === total) return this.sortedIds;
    const names = this.tagNames;
    const byName = (a: number, b: number): number => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : 0);
    const fresh = Array.from({ length: total - this.sortedCount }, (_, i) => this.sortedCount + i).sort(byName);
    const old = this.sortedIds;
    const merged = new Uint32Array(total);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < old.length && j < fresh.length) merged[k++] = byName(old[i]!, fresh[j]!) <= 0 ? old[i++]! : fresh[j++]!;
    while (i < old.length) merged[k++] = old[i++]!;
    while (j < fresh.length) merged[k++] = fresh[j++]!;
    this.sortedIds = merged;
    this.sortedCount = total;
    const rankOf = new Uint32Array(total);
    for (let r = 0; r < total; r++) rankOf[merged[r]!] = r;
    this.rankOf = rankOf;
    return merged;
  }

  logPath(kind: DayLogKind, day: number): string {
    return path.join(this.dir, dayLogName(kind, formatDay(day)));
  }

  sealedPath(day: number): string {
    return path.join(this.dir, sealedFileName(formatDay(day)));
  }

  partPath(day: number, generation: number): string {
    return path.join(this.dir, partFileName(formatDay(day), generation));
  }

  /** Registers a part (found at open or just written), keeping the day's parts in generation order. */
  addPart(day: number, generation: number, bytes: number): DayPart {
    const part: DayPart = { generation, path: this.partPath(day, generation), bytes };
    const list = this.parts.get(day) ?? [];
    const at = list.findIndex((p) => p.generation >= generation);
    if (at < 0) list.push(part);
    else if (list[at]!.generation === generation) list[at] = part;
    else list.splice(at, 0, part);
    this.parts.set(day, list);
    if (generation >= this.nextPartGeneration) this.nextPartGeneration = generation + 1;
    return part;
  }

  /** Forgets a part whose file was removed. */
  dropPart(day: number, generation: number): void {
    const list = this.parts.get(day);
    if (list === undefined) return;
    const rest = list.filter((p) => p.generation !== generation);
    if (rest.length > 0) this.parts.set(day, rest);
    else this.parts.delete(day);
  }

  /** Adds a frozen day log (recovery, or DayMaintenance.compactSoon), keeping generation and write order. */
  addFrozen(day: number, generation: number, dayLog: DayLog): void {
    const list = this.frozen.get(day) ?? [];
    let set = list.find((f) => f.generation === generation);
    if (set === undefined) {
      set = { generation, logs: [], submitted: false };
      list.push(set);
      list.sort((a, b) => a.generation - b.generation);
    }
    set.logs.push(dayLog);
    set.logs.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'active' ? -1 : 1));
    this.frozen.set(day, list);
    if (generation >= this.nextPartGeneration) this.nextPartGeneration = generation + 1;
  }

  /** Forgets a day log (its points are in a sealed file or part now), wherever it is: active, late or frozen. */
  forgetLog(dayLog: DayLog): void {
    const logs = dayLog.kind === 'active' ? this.active : this.late;
    if (logs.get(dayLog.day) === dayLog) logs.delete(dayLog.day);
    const list = this.frozen.get(dayLog.day);
    if (list === undefined) return;
    for (const set of list) set.logs = set.logs.filter((l) => l !== dayLog);
    const rest = list.filter((set) => set.logs.length > 0);
    if (rest.length > 0) this.frozen.set(dayLog.day, rest);
    else this.frozen.delete(dayLog.day);
  }

  frozenPath(kind: DayLogKind, day: number, generation: number): string {
    return path.join(this.dir, frozenLogName(kind, formatDay(day), generation));
  }

  /** The log new points of `day` go to: the late log once the day is sealed, else the active one. */
  logForWrite(day: number, files: OpenFiles): DayLog {
    const kind: DayLogKind = this.sealedBytes.has(day) ? 'late' : 'active';
    const logs = kind === 'active' ? this.active : this.late;
    let dayLog = logs.get(day);
    if (dayLog === undefined) {
      dayLog = DayLog.open(this.logPath(kind, day), day, kind, files, this.tagNames.length, this.noteBlock).log;
      logs.set(day, dayLog);
    }
    return dayLog;
  }

  /** Every day with data, ascending. */
  days(): number[] {
    const days = new Set<number>(this.sealedBytes.keys());
    for (const day of this.parts.keys()) days.add(day);
    for (const day of this.active.keys()) days.add(day);
    for (const day of this.late.keys()) days.add(day);
    for (const day of this.frozen.keys()) days.add(day);
    return [...days].sort((a, b) => a - b);
  }

  /** Every open day log: frozen ones too. */
  *dayLogs(): IterableIterator<DayLog> {
    yield* this.writableLogs();
    for (const list of this.frozen.values()) for (const set of list) yield* set.logs;
  }

  /** The day logs new points go to (not the frozen ones). */
  *writableLogs(): IterableIterator<DayLog> {
    yield* this.active.values();
    yield* this.late.values();
  }

  /** Folds a block into the last values (blocks come in write order; a tie goes to the later). */
  readonly noteBlock = (tagId: number, ts: Float64Array, values: Float64Array, count: number): void => {
    let lastTs = this.lastTs[tagId]!;
    let latest = -1;
    for (let i = 0; i < count; i++) {
      const t = ts[i]!;
      if (t >= lastTs) {
        lastTs = t;
        latest = i;
      }
    }
    if (latest >= 0) {
      this.lastTs[tagId] = lastTs;
      this.lastValues[tagId] = values[latest]!;
    }
  };

  /** Folds one appended block's latest point into the last values. */
  noteLatest(tagId: number, ts: number, value: number): void {
    if (ts >= this.lastTs[tagId]!) {
      this.lastTs[tagId] = ts;
      this.lastValues[tagId] = value;
    }
  }

  /** True when the sealed side of the tag's last value still has to be looked up. */
  needsSealedLast(tagId: number): boolean {
    return this.sealedLastState[tagId] === SEALED_LAST_UNKNOWN && (this.sealedBytes.size > 0 || this.parts.size > 0);
  }

  setSealedLast(tagId: number, found: boolean, ts: number, value: number): void {
    this.sealedLastState[tagId] = found ? SEALED_LAST_KNOWN : SEALED_LAST_NONE;
    this.sealedLastTs[tagId] = ts;
    this.sealedLastValues[tagId] = value;
  }

  /**
   * Latest point of the tag. Every point not in a sealed file or part at lookup time is covered by the
   * active/late side (it was replayed at open or appended since), and sealing and compaction only move such
   * points, so the newer of the two sides is the answer; on a tie the active/late side wins, as
   * it holds the later write.
   */
  lastValue(tagId: number): [number, number] | null {
    const ts = this.lastTs[tagId]!;
    if (this.sealedLastState[tagId] === SEALED_LAST_KNOWN && this.sealedLastTs[tagId]! > ts) {
      return [this.sealedLastTs[tagId]!, this.sealedLastValues[tagId]!];
    }
    return ts === -Infinity ? null : [ts, this.lastValues[tagId]!];
  }

  private growTagArrays(need: number): void {
    let size = this.lastTs.length * 2;
    while (size < need) size *= 2;
    const grow = <T extends Float64Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(size);
      b.set(a);
      return b;
    };
    const lastTs = new Float64Array(size).fill(-Infinity);
    lastTs.set(this.lastTs);
    this.lastTs = lastTs;
    this.lastValues = grow(this.lastValues, (n) => new Float64Array(n));
    this.sealedLastState = grow(this.sealedLastState, (n) => new Uint8Array(n));
    this.sealedLastTs = grow(this.sealedLastTs, (n) => new Float64Array(n));
    this.sealedLastValues = grow(this.sealedLastValues, (n) => new Float64Array(n));
  }

  /** meta.json with the record and the whole dictionary (labels as a sparse map by tag id). */
  private writeMeta(record: CollectionRecord): void {
    const labels: Record<string, SeriesLabels> = {};
    for (const id of this.tagLabels.ids()) labels[id] = this.tagLabels.get(id)!;
    const meta = { version: META_VERSION, collection: record, tags: this.tagNames, labels };
    writeFileDurably(path.join(this.dir, META_FILE), `${JSON.stringify(meta)}\n`);
  }
}

/**
 * The record with `fields` merged in. Scope fields are the collection's identity (its folder)
 * and may only repeat their value; createdAt/updatedAt belong to the store. The result is a
 * JSON round trip, so what is returned is exactly what meta.json will give back after a restart.
 */
function mergeFields(base: CollectionRecord, fields: Record<string, unknown>): CollectionRecord {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) throw badRequest('collection fields must be a JSON object');
  const next: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(fields)) {
    if ((SCOPE_FIELDS as readonly string[]).includes(key)) {
      if (value !== base[key]) throw badRequest(`${key} cannot be changed: it is part of the collection id`);
      continue;
    }
    if (key === 'createdAt' || key === 'updatedAt') continue;
    if (value === undefined) delete next[key];
    // defineProperty: a key named __proto__ becomes a plain field, not the object's prototype.
    else Object.defineProperty(next, key, { value, enumerable: true, writable: true, configurable: true });
  }
  let json: string;
  try {
    json = JSON.stringify(next);
  } catch (err) {
    throw badRequest(`collection fields must be JSON values: ${(err as Error).message}`);
  }
  return JSON.parse(json) as CollectionRecord;
}

/** A collection's record and tag dictionary as recovery loads them, and what of tags.log was good. */
export interface TagDictionary {
  record: CollectionRecord;
  tags: string[];
  labels: Array<SeriesLabels | undefined>;
  logged: { records: TagLogRecord[]; goodBytes: number; fileBytes: number };
  /** How many of logged.records the dictionary took (the rest are dropped with the log's tail). */
  applied: number;
}

/**
 * meta.json plus the good records of tags.log; throws when meta.json cannot be used. The log is
 * read first, so a compaction between the two reads (the data-dir check reads beside a running
 * service) only brings records meta.json has already, which are passed over, never a tag missed.
 */
export function readDictionary(dir: string, scope: CollectionScope): TagDictionary {
  const logged = readTagLog(path.join(dir, TAG_LOG_FILE));
  const { record, tags, labels } = readMeta(path.join(dir, META_FILE), scope);
  const applied = applyTagLog(tags, labels, logged.records);
  return { record, tags, labels, logged, applied };
}

function readMeta(file: string, scope: CollectionScope): { record: CollectionRecord; tags: string[]; labels: Array<SeriesLabels | undefined> } {
  let meta: { version?: unknown; collection?: Record<string, unknown>; tags?: unknown; labels?: unknown };
  try {
    meta = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof meta;
  } catch (err) {
    throw internal(`${file}: cannot read: ${(err as Error).message}`);
  }
  if (meta.version !== 1 && meta.version !== META_VERSION) throw internal(`${file}: meta version ${String(meta.version)} is not supported (this build reads ${META_VERSION})`);
  const record = meta.collection;
  if (record === null || typeof record !== 'object') throw internal(`${file}: no collection record`);
  for (const field of SCOPE_FIELDS) {
    if (record[field] !== scope[field]) throw internal(`${file}: ${field} ${JSON.stringify(record[field])} does not match its folder`);
  }
  const tags = meta.tags;
  if (!Array.isArray(tags) || tags.some((t) => tagNameProblem(t) !== null) || new Set(tags).size !== tags.length) {
    throw internal(`${file}: tag dictionary is not a list of distinct tag names`);
  }
  const labels = new Array<SeriesLabels | undefined>(tags.length).fill(undefined);
  if (meta.labels !== undefined) {
    if (meta.labels === null || typeof meta.labels !== 'object' || Array.isArray(meta.labels)) throw internal(`${file}: labels is not a map of tag ids to label sets`);
    for (const [key, set] of Object.entries(meta.labels)) {
      const id = Number(key);
      if (!Number.isInteger(id) || id < 0 || id >= tags.length || !isLabels(set)) throw internal(`${file}: labels of tag ${JSON.stringify(key)} are not a label set of a known tag`);
      labels[id] = set;
    }
  }
  return { record: record as CollectionRecord, tags: tags as string[], labels };
}

/**
 * Applies tag log records to the dictionary read from meta.json (in place); returns how many
 * records were good. Records of ids meta.json has already were compacted before a crash.
 */
function applyTagLog(tags: string[], labels: Array<SeriesLabels | undefined>, records: readonly TagLogRecord[]): number {
  const known = new Set(tags);
  for (let r = 0; r < records.length; r++) {
    const record = records[r]!;
    if (record.kind === 'labels') {
      if (record.id >= tags.length) return r;
      labels[record.id] = record.labels;
      continue;
    }
    if (record.id < tags.length) continue;
    if (record.id !== tags.length || tagNameProblem(record.name) !== null || known.has(record.name)) return r;
    known.add(record.name);
    tags.push(record.name);
    labels.push(record.labels ?? undefined);
  }
  return records.length;
}

/** First position in `sorted` whose name is not below `key`. */
function lowerBound(sorted: Uint32Array, names: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (names[sorted[mid]!]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
