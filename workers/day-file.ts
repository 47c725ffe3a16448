/**
 * Day logs: `active-YYYYMMDD.log` (the current data of a UTC day) and `late-YYYYMMDD.log`
 * (points for a day that is already sealed). Both are append-only sequences of framed blocks
 * and are their own write-ahead log: a block is visible only once it is completely in the file,
 * and on open every block is checked and the file is cut at the first one that is not whole.
 * Byte layout: README.md beside this file ("Day log").
 *
 * Nothing of the points is kept in memory: a BlockIndex per log (block-index.ts) remembers where
 * each tag's blocks are and which time range each covers, and queries read the blocks back (the page cache keeps them
 * warm). All typed-array views handed out point into a shared read window and are valid only
 * until the next read.
 */

import fs from 'node:fs';
import path from 'node:path';
import { crc32c } from './crc32.js';
import { readFully, writeFully } from './durable-fs.js';
import { PRIVATE_FILE_MODE } from '../shared/file-modes.js';
import { internal, ServiceError } from '../shared/errors.js';
import { dayStartMs, DAY_MS } from './utc-day.js';
import { BlockIndex } from './block-index.js';

// Blocks are viewed in place as Float64Arrays, which read the host's byte order.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('the storage engine needs a little-endian host');

export const DAY_LOG_MAGIC = 0x4c445348; // "HSDL" read as a little-endian u32
export const DAY_LOG_VERSION = 1;
export const DAY_LOG_HEADER_BYTES = 16;
/** u32 payload length, u32 crc32c(payload), then the payload's u32 tag id and u32 count. */
export const BLOCK_HEADER_BYTES = 16;
/** Keeps a payload length inside u32 and one block's read within a sane buffer (256 MiB). */
export const MAX_BLOCK_POINTS = 1 << 24;

export type DayLogKind = 'active' | 'late';

/** Receives one block's points; the views are valid only during the call. */
export type BlockVisitor = (tagId: number, ts: Float64Array, values: Float64Array, count: number) => void;

export function blockBytes(count: number): number {
  return BLOCK_HEADER_BYTES + 16 * count;
}

export function dayLogName(kind: DayLogKind, dayText: string): string {
  return `${kind}-${dayText}.log`;
}

/** The file's header does not belong to a day log of this day; the file is not ours to cut. */
export class BadDayLogHeader extends ServiceError {
  constructor(message: string) {
    super('INTERNAL', message);
  }
}

// ---------------------------------------------------------------------------------------------

const WINDOW_BYTES = 1 << 20;

/**
 * One reusable read buffer per thread. It always starts at a block boundary (a multiple of 8
 * in the file) on an 8-aligned ArrayBuffer, so a block's timestamps and values can be viewed as
 * Float64Arrays without copying. `owner` ties the bytes to the file they came from.
 */
class ReadWindow {
  bytes = new Uint8Array(WINDOW_BYTES);
  view = new DataView(this.bytes.buffer);
  /** A DayLog, or whatever object a read-only walk (the data-dir check) passes as the file's identity. */
  owner: object | null = null;
  start = 0;
  end = 0;

  holds(owner: object, pos: number, length: number): boolean {
    return this.owner === owner && pos >= this.start && pos + length <= this.end;
  }

  /** Reads [pos, pos + length) of the file (fewer bytes at its end); returns the bytes read. */
  load(owner: object, fd: number, pos: number, length: number): number {
    if (length > this.bytes.length || (this.bytes.length > 4 * WINDOW_BYTES && length <= WINDOW_BYTES)) {
      this.bytes = new Uint8Array(Math.max(length, WINDOW_BYTES));
      this.view = new DataView(this.bytes.buffer);
    }
    this.owner = null; // stays unowned if the read throws
    const n = readFully(fd, this.bytes, 0, length, pos);
    this.owner = owner;
    this.start = pos;
    this.end = pos + n;
    return n;
  }

  forget(owner: object): void {
    if (this.owner === owner) this.owner = null;
  }
}

const readWindow = new ReadWindow();

// ---------------------------------------------------------------------------------------------

/**
 * Builds the blocks of one append in one reused buffer, so each day log gets a single write.
 * After add(), minTs/maxTs/valueAtMaxTs describe the block just added (no result object per block).
 */
export class BlockEncoder {
  private bytes = new Uint8Array(64 * 1024);
  private view = new DataView(this.bytes.buffer);
  length = 0;
  /** Time range of the block just added, and the value at its latest timestamp (the later point wins a tie). */
  minTs = 0;
  maxTs = 0;
  valueAtMaxTs = 0;

  reset(): void {
    this.length = 0;
    // A huge append should not pin its buffer for the life of the worker.
    if (this.bytes.length > 64 * 1024 * 1024) {
      this.bytes = new Uint8Array(64 * 1024);
      this.view = new DataView(this.bytes.buffer);
    }
  }

  /** The blocks built since reset(); valid until the next add() or reset(). */
  encoded(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  /** Appends one block of points [from, from + count); returns its offset in encoded(). */
  add(tagId: number, ts: Float64Array, values: Float64Array, from: number, count: number): number {
    const at = this.length;
    const size = blockBytes(count);
    this.ensure(at + size);
    const view = this.view;
    view.setUint32(at + 8, tagId, true);
    view.setUint32(at + 12, count, true);
    const blockTs = new Float64Array(this.bytes.buffer, at + BLOCK_HEADER_BYTES, count);
    blockTs.set(ts.subarray(from, from + count));
    new Float64Array(this.bytes.buffer, at + BLOCK_HEADER_BYTES + 8 * count, count).set(values.subarray(from, from + count));
    let min = Infinity;
    let max = -Infinity;
    let latest = 0;
    for (let i = 0; i < count; i++) {
      let t = blockTs[i]!;
      if (t === 0) blockTs[i] = t = 0; // -0 is stored as 0: the sealed codec keeps no sign on timestamps
      if (t < min) min = t;
      if (t >= max) {
        max = t;
        latest = i;
      }
    }
    view.setUint32(at, size - 8, true);
    view.setUint32(at + 4, crc32c(this.bytes, at + 8, at + size), true);
    this.length = at + size;
    this.minTs = min;
    this.maxTs = max;
    this.valueAtMaxTs = values[from + latest]!;
    return at;
  }

  private ensure(size: number): void {
    if (size <= this.bytes.length) return;
    let next = this.bytes.length * 2;
    while (next < size) next *= 2;
    const bytes = new Uint8Array(next);
    bytes.set(this.bytes.subarray(0, this.length));
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer);
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Bounds the number of day-log descriptors a worker holds (a backfill can touch hundreds of
 * days). Least recently used logs are closed and reopened on their next use.
 */
export class OpenFiles {
  private readonly lru = new Map<DayLog, true>();

  constructor(private readonly max: number) {}

  get count(): number {
    return this.lru.size;
  }

  /** The log's descriptor, opening it if needed; marks it most recently used. */
  fd(log: DayLog): number {
    if (this.lru.delete(log)) {
      this.lru.set(log, true);
      return log.descriptor;
    }
    log.reopen();
    this.lru.set(log, true);
    for (const oldest of this.lru.keys()) {
      if (this.lru.size <= this.max) break;
      if (oldest === log) continue;
      this.lru.delete(oldest);
      oldest.release();
    }
    return log.descriptor;
  }

  /** Registers a log opened elsewhere (at creation or recovery). */
  adopt(log: DayLog): void {
    this.lru.set(log, true);
    for (const oldest of this.lru.keys()) {
      if (this.lru.size <= this.max) break;
      if (oldest === log) continue;
      this.lru.delete(oldest);
      oldest.release();
    }
  }

  /** Closes the log's descriptor and stops tracking it. */
  forget(log: DayLog): void {
    this.lru.delete(log);
    log.release();
  }
}

// ---------------------------------------------------------------------------------------------

export interface DayLogOpenResult {
  log: DayLog;
  /** Bytes cut from a torn tail (0 for a clean file). */
  bytesCut: number;
  /** Blocks found intact. */
  blocks: number;
}

/** What a compaction reads of a day log: its tags, their point counts, and its blocks in file order. */
export interface LogSource {
  tagIds(): Iterable<number>;
  pointsOf(tagId: number): number;
  visitInFileOrder(visit: BlockVisitor): void;
}

export class DayLog implements LogSource {
  /** Changes once, when the log is frozen (renamed for compaction off the shard's thread). */
  path: string;
  readonly day: number;
  readonly kind: DayLogKind;
  /** Length of the verified file: where the next block goes. */
  size = 0;
  /** Wall-clock ms of the last append (the file's mtime after a restart). */
  lastWriteAt = 0;
  /** Written with 'fsync' durability since the last fdatasync. */
  needsSync = false;
  /** A failed write could not be undone, or an fdatasync failed: refuse appends until recovery has verified the file. */
  broken = false;
  /** Created, and no fsync of its folder since: its name may not survive a power loss yet. */
  private entryUnsynced = false;
  private fd = -1;
  private readonly files: OpenFiles;
  private readonly blocks = new BlockIndex();

  private constructor(filePath: string, day: number, kind: DayLogKind, files: OpenFiles) {
    this.path = filePath;
    this.day = day;
    this.kind = kind;
    this.files = files;
  }

  get descriptor(): number {
    return this.fd;
  }

  /** Points in this log (each block's count: a rewritten timestamp counts each time) and their time range. */
  pointStats(): { points: number; minTs: number; maxTs: number } {
    let points = 0;
    let minTs = Infinity;
    let maxTs = -Infinity;
    const index = this.blocks;
    for (let b = 0; b < index.blocks; b++) {
      points += index.count(b);
      if (index.min(b) < minTs) minTs = index.min(b);
      if (index.max(b) > maxTs) maxTs = index.max(b);
    }
    return { points, minTs, maxTs };
  }

  /**
   * Opens (creating when absent) the day log, verifies every block and cuts a torn tail.
   * `tagCount` is the size of the tag dictionary: a block naming a tag id beyond it cannot have
   * been written (the dictionary is logged first) and counts as damage. `onBlock` sees each
   * intact block, to rebuild last values.
   */
  static open(filePath: string, day: number, kind: DayLogKind, files: OpenFiles, tagCount: number, onBlock: BlockVisitor): DayLogOpenResult {
    const dayLog = new DayLog(filePath, day, kind, files);
    dayLog.fd = fs.openSync(filePath, 'a+', PRIVATE_FILE_MODE);
    try {
      const stat = fs.fstatSync(dayLog.fd);
      dayLog.lastWriteAt = stat.mtimeMs;
      let bytesCut = 0;
      let blocks = 0;
      if (stat.size < DAY_LOG_HEADER_BYTES) {
        // New file, or a crash before its header was whole.
        bytesCut = stat.size;
        if (stat.size > 0) fs.ftruncateSync(dayLog.fd, 0);
        writeFully(dayLog.fd, encodeHeader(day));
        // No fsync here: a write of many days would pay two per day. The first 'fsync' append
        // syncs the file and, once per folder, its entry (ShardStore.syncPending); until then a
        // crash leaves at most a short or headerless file, which open() rewrites as empty.
        dayLog.entryUnsynced = true;
        dayLog.size = DAY_LOG_HEADER_BYTES;
      } else {
        checkDayLogHeader(dayLog.fd, filePath, day);
        const verified = dayLog.verifyBlocks(stat.size, tagCount, onBlock);
        blocks = verified.blocks;
        dayLog.size = verified.end;
        if (verified.end < stat.size) {
          bytesCut = stat.size - verified.end;
          fs.ftruncateSync(dayLog.fd, verified.end);
          fs.fdatasyncSync(dayLog.fd);
        }
      }
      readWindow.forget(dayLog); // it may hold bytes of the cut tail
      files.adopt(dayLog);
      return { log: dayLog, bytesCut, blocks };
    } catch (err) {
      fs.closeSync(dayLog.fd);
      dayLog.fd = -1;
      throw err;
    }
  }

  /** Walks the blocks from the header on, indexing each; stops at the first one that is short or damaged. */
  private verifyBlocks(fileSize: number, tagCount: number, onBlock: BlockVisitor): DayLogWalk {
    return walkDayLogBlocks(this.fd, this, this.day, DAY_LOG_HEADER_BYTES, fileSize, tagCount, (tagId, offset, count, minTs, maxTs, ts, values) => {
      this.index(tagId, offset, count, minTs, maxTs);
      onBlock(tagId, ts, values, count);
    });
  }

  /** The file was renamed (frozen): reopens go to the new name; the open descriptor stays valid. */
  movedTo(newPath: string): void {
    this.path = newPath;
  }

  /** Reopens after the descriptor was released; the file must still be as we left it. */
  reopen(): void {
    if (this.fd >= 0) return;
    const fd = fs.openSync(this.path, 'a+', PRIVATE_FILE_MODE);
    const size = fs.fstatSync(fd).size;
    if (size !== this.size) {
      fs.closeSync(fd);
      throw internal(`${this.path} is ${size} bytes, expected ${this.size}: changed outside the storage worker`);
    }
    this.fd = fd;
  }

  /** Closes the descriptor (the log stays usable: the next access reopens it). */
  release(): void {
    if (this.fd < 0) return;
    if (this.needsSync) {
      fs.fdatasyncSync(this.fd);
      this.needsSync = false;
    }
    fs.closeSync(this.fd);
    this.fd = -1;
    readWindow.forget(this);
  }

  /**
   * Appends encoded blocks in one write and returns the file offset of their start. When the
   * write fails the file is cut back to where it was, so a partial block never stays behind.
   */
  append(bytes: Uint8Array): number {
    if (this.broken) throw internal(`${this.path} had a failed write that could not be undone; it is repaired on the next recovery`);
    const fd = this.files.fd(this);
    const at = this.size;
    try {
      writeFully(fd, bytes);
    } catch (err) {
      this.truncateTo(at);
      throw err;
    }
    this.size = at + bytes.length;
    this.lastWriteAt = Date.now();
    return at;
  }

  /** Undoes appends back to `size` (a later day of the same request failed). */
  truncateTo(size: number): void {
    try {
      fs.ftruncateSync(this.files.fd(this), size);
      this.size = size;
    } catch {
      this.broken = true;
    }
    readWindow.forget(this);
  }

  /** Records a block written at `offset` (after the write succeeded: log first, then visible). */
  index(tagId: number, offset: number, count: number, minTs: number, maxTs: number): void {
    this.blocks.push(tagId, offset, count, minTs, maxTs);
  }

  /** Blocks indexed in memory for this log (36 bytes each: what compaction bounds). */
  get blockCount(): number {
    return this.blocks.blocks;
  }

  /** Points in the tag's blocks. */
  pointsOf(tagId: number): number {
    return this.blocks.pointsOf(tagId);
  }

  hasTag(tagId: number): boolean {
    return this.blocks.first(tagId) >= 0;
  }

  tagIds(): IterableIterator<number> {
    return this.blocks.tagIds();
  }

  sync(): void {
    if (!this.needsSync) return;
    fs.fdatasyncSync(this.files.fd(this));
    this.needsSync = false;
  }

  /** The folder whose fsync would make this new file's name durable, or null once one has. */
  get unsyncedFolder(): string | null {
    return this.entryUnsynced ? path.dirname(this.path) : null;
  }

  /** Its folder was fsynced after it was created. */
  folderSynced(): void {
    this.entryUnsynced = false;
  }

  /**
   * Visits every block in file order, reading the file front to back in windows: a compaction
   * or seal reads each byte once (a window per block of every tag read a log of interleaved
   * tags once per block). The blocks were verified when indexed; their headers are checked
   * against the index again.
   */
  visitInFileOrder(visit: BlockVisitor): void {
    const index = this.blocks;
    for (let b = 0; b < index.blocks; b++) {
      const offset = index.offset(b);
      const count = index.count(b);
      if (!readWindow.holds(this, offset, blockBytes(count))) this.loadWindow(offset, count, Math.min(Math.max(blockBytes(count), WINDOW_BYTES), this.size - offset));
      this.visitBlock(offset, count, -1, visit);
    }
  }

  /**
   * Visits, in file order, every block of the tag whose time range meets [lo, hi]. Neighbouring
   * wanted blocks are read with one syscall when they fit in the read readWindow.
   */
  forEachBlock(tagId: number, lo: number, hi: number, visit: BlockVisitor): void {
    const index = this.blocks;
    for (let b = index.first(tagId); b >= 0; b = index.next(b)) {
      if (index.max(b) < lo || index.min(b) > hi) continue;
      const offset = index.offset(b);
      const count = index.count(b);
      if (!readWindow.holds(this, offset, blockBytes(count))) {
        // Up to the last wanted block of the tag that fits in the window with this one.
        let end = offset + blockBytes(count);
        for (let k = index.next(b); k >= 0; k = index.next(k)) {
          if (index.max(k) < lo || index.min(k) > hi) continue;
          const kEnd = index.offset(k) + blockBytes(index.count(k));
          if (kEnd - offset > WINDOW_BYTES) break;
          end = kEnd;
        }
        this.loadWindow(offset, count, end - offset);
      }
      this.visitBlock(offset, count, tagId, visit);
    }
  }

  /** Loads `bytes` bytes from `offset` into the read window; they must hold the whole block there. */
  private loadWindow(offset: number, count: number, bytes: number): void {
    if (readWindow.load(this, this.files.fd(this), offset, bytes) < blockBytes(count)) throw internal(`${this.path}: block at ${offset} is beyond the end of the file`);
  }

  /**
   * Visits the block at `offset` (of `count` points, as the index says), which the read window
   * holds. Its header must agree with the index, and name `tagId` unless that is -1.
   */
  private visitBlock(offset: number, count: number, tagId: number, visit: BlockVisitor): void {
    const at = offset - readWindow.start;
    const view = readWindow.view;
    const headerTag = view.getUint32(at + 8, true);
    if (view.getUint32(at, true) !== 8 + 16 * count || (tagId !== -1 && headerTag !== tagId) || view.getUint32(at + 12, true) !== count) {
      throw internal(`${this.path}: block at ${offset} does not match its index`);
    }
    const buffer = readWindow.bytes.buffer;
    visit(headerTag, new Float64Array(buffer, at + BLOCK_HEADER_BYTES, count), new Float64Array(buffer, at + BLOCK_HEADER_BYTES + 8 * count, count), count);
  }
}

/** Where a walk over a day log's blocks stopped short of the end of the file, and why. */
export interface DayLogStop {
  /** File offset of the block that failed. */
  at: number;
  /** What failed: the bytes left, the length fields, the checksum, the tag id or the timestamps. */
  cause: 'short' | 'length' | 'checksum' | 'tag' | 'timestamps';
  reason: string;
  /**
   * The failing block's length fields are sound and it lies inside the file, so `size` (its
   * bytes) says where the next block would start; it failed its checksum, tag id or timestamps.
   */
  whole: boolean;
  size: number;
}

export interface DayLogWalk {
  /** Where the intact blocks end: recovery cuts the file here. */
  end: number;
  blocks: number;
  /** Null when the walk reached the end of the file (or `maxBlocks`). */
  stop: DayLogStop | null;
}

/** Receives each intact block with its offset and time range; the views are valid only during the call. */
export type VerifiedBlockVisitor = (tagId: number, offset: number, count: number, minTs: number, maxTs: number, ts: Float64Array, values: Float64Array) => void;

/**
 * The one verification of day-log blocks, shared by recovery (DayLog.open cuts the file at
 * `end`) and the read-only data-dir check: from `from` on, each block's length must fit its
 * count and the file, its checksum match, its tag id be below `tagCount` (the dictionary is
 * logged before any block naming an id) and its timestamps be integers inside the day. Reads go
 * through the thread's read window under `owner`, so memory stays bounded whatever the size.
 */
export function walkDayLogBlocks(fd: number, owner: object, day: number, from: number, fileSize: number, tagCount: number, visit: VerifiedBlockVisitor, maxBlocks = Infinity): DayLogWalk {
  const dayStart = dayStartMs(day);
  const dayEnd = dayStart + DAY_MS;
  let pos = from;
  let blocks = 0;
  const stopped = (cause: DayLogStop['cause'], reason: string, size = 0): DayLogWalk => ({ end: pos, blocks, stop: { at: pos, cause, reason, whole: size > 0, size } });
  while (blocks < maxBlocks) {
    if (fileSize - pos < BLOCK_HEADER_BYTES) {
      return pos === fileSize ? { end: pos, blocks, stop: null } : stopped('short', `${fileSize - pos} bytes, too few for a block header`);
    }
    if (!readWindow.holds(owner, pos, BLOCK_HEADER_BYTES)) readWindow.load(owner, fd, pos, Math.min(WINDOW_BYTES, fileSize - pos));
    let at = pos - readWindow.start;
    const payloadLength = readWindow.view.getUint32(at, true);
    const count = readWindow.view.getUint32(at + 12, true);
    if (payloadLength !== 8 + 16 * count || count > MAX_BLOCK_POINTS) return stopped('length', `length ${payloadLength} does not fit a block of ${count} points`);
    const size = 8 + payloadLength;
    if (pos + size > fileSize) return stopped('short', `a block of ${size} bytes runs past the end of the file (${fileSize - pos} bytes left)`);
    if (!readWindow.holds(owner, pos, size)) {
      readWindow.load(owner, fd, pos, Math.min(Math.max(size, WINDOW_BYTES), fileSize - pos));
      at = 0;
    }
    const bytes = readWindow.bytes;
    if (crc32c(bytes, at + 8, at + size) !== readWindow.view.getUint32(at + 4, true)) return stopped('checksum', 'checksum mismatch', size);
    const tagId = readWindow.view.getUint32(at + 8, true);
    if (tagId >= tagCount) return stopped('tag', `tag id ${tagId} is not in the dictionary (${tagCount} tags)`, size);
    const ts = new Float64Array(bytes.buffer, at + BLOCK_HEADER_BYTES, count);
    let min = Infinity;
    let max = -Infinity;
    let integers = true;
    for (let i = 0; i < count; i++) {
      const t = ts[i]!;
      if (t < min) min = t;
      if (t > max) max = t;
      if (Math.floor(t) !== t) integers = false;
    }
    // A whole block with points outside its day or fractional timestamps was never written by us.
    if (count > 0 && (min < dayStart || max >= dayEnd || !integers)) return stopped('timestamps', 'timestamps outside the day or not integers', size);
    if (count > 0) visit(tagId, pos, count, min, max, ts, new Float64Array(bytes.buffer, at + BLOCK_HEADER_BYTES + 8 * count, count));
    blocks++;
    pos += size;
  }
  return { end: pos, blocks, stop: null };
}

/**
 * A frozen day log read by the compaction thread, which has none of the shard's block index:
 * the shard sends each tag's point count, and the blocks are read front to back from the file's
 * first `size` bytes (what the shard had verified and indexed). Each block's length fields are
 * checked again; the checksums were checked when the blocks were written or recovered.
 */
export class FrozenLogFile implements LogSource {
  private readonly counts = new Map<number, number>();

  constructor(
    readonly path: string,
    private readonly size: number,
    tagIds: ArrayLike<number>,
    points: ArrayLike<number>,
  ) {
    for (let i = 0; i < tagIds.length; i++) this.counts.set(tagIds[i]!, points[i]!);
  }

  tagIds(): Iterable<number> {
    return this.counts.keys();
  }

  pointsOf(tagId: number): number {
    return this.counts.get(tagId) ?? 0;
  }

  visitInFileOrder(visit: BlockVisitor): void {
    const fd = fs.openSync(this.path, 'r');
    try {
      let pos = DAY_LOG_HEADER_BYTES;
      while (pos < this.size) {
        if (!readWindow.holds(this, pos, BLOCK_HEADER_BYTES)) readWindow.load(this, fd, pos, Math.min(WINDOW_BYTES, this.size - pos));
        let at = pos - readWindow.start;
        const count = readWindow.view.getUint32(at + 12, true);
        const size = blockBytes(count);
        if (readWindow.view.getUint32(at, true) !== 8 + 16 * count || pos + size > this.size) throw internal(`${this.path}: block at ${pos} does not fit the log`);
        if (!readWindow.holds(this, pos, size)) {
          readWindow.load(this, fd, pos, Math.min(Math.max(size, WINDOW_BYTES), this.size - pos));
          at = 0;
        }
        const buffer = readWindow.bytes.buffer;
        visit(readWindow.view.getUint32(at + 8, true), new Float64Array(buffer, at + BLOCK_HEADER_BYTES, count), new Float64Array(buffer, at + BLOCK_HEADER_BYTES + 8 * count, count), count);
        pos += size;
      }
    } finally {
      readWindow.forget(this);
      fs.closeSync(fd);
    }
  }
}

function encodeHeader(day: number): Uint8Array {
  const header = new Uint8Array(DAY_LOG_HEADER_BYTES);
  const view = new DataView(header.buffer);
  view.setUint32(0, DAY_LOG_MAGIC, true);
  view.setUint16(4, DAY_LOG_VERSION, true);
  view.setUint16(6, 0, true);
  view.setUint32(8, day, true);
  view.setUint32(12, crc32c(header, 0, 12), true);
  return header;
}

/** Throws BadDayLogHeader for a file that is not a day log of `day`, or an error for a version this build does not read. */
export function checkDayLogHeader(fd: number, filePath: string, day: number): void {
  const header = new Uint8Array(DAY_LOG_HEADER_BYTES);
  readFully(fd, header, 0, DAY_LOG_HEADER_BYTES, 0);
  const view = new DataView(header.buffer);
  if (view.getUint32(0, true) !== DAY_LOG_MAGIC || view.getUint32(12, true) !== crc32c(header, 0, 12)) {
    throw new BadDayLogHeader(`${filePath}: not a day log (bad magic or header checksum)`);
  }
  const version = view.getUint16(4, true);
  if (version !== DAY_LOG_VERSION) throw internal(`${filePath}: day log format version ${version} is not supported (this build reads ${DAY_LOG_VERSION})`);
  if (view.getUint32(8, true) !== day) throw new BadDayLogHeader(`${filePath}: header names day ${view.getUint32(8, true)}, the file name day ${day}`);
}
