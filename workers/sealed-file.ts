/**
 * Sealed day files (`sealed-YYYYMMDD.hsd`): one immutable file per collection per finished UTC
 * day. Per tag, the sorted, deduplicated points are column-encoded (native-free-codecs/columns.ts:
 * timestamps then values) and lz4-compressed; a footer indexes the tags. A query reads the footer
 * once (SealedIndex, a few dozen bytes per tag, cached by the store) and then only the block of
 * the tag it wants. Format 3 adds per-slot min/max summaries (sealed-summary.ts) between the
 * blocks and the footer; format 4 codes those summaries as value columns. Byte layout: README.md
 * beside this file ("Sealed day file").
 *
 * Writing: SealedFileWriter fills `<name>.tmp`, fsyncs it, renames it over the final name and
 * fsyncs the folder, so a reader sees either the old file or the whole new one.
 */

import fs from 'node:fs';
import path from 'node:path';
import { ByteReader, ByteWriter, COLUMN_CODEC_VERSION, decodeTimestamps, decodeValues, encodeTimestamps, encodeValues, READABLE_COLUMN_CODEC_VERSIONS } from '../native-free-codecs/columns.js';
import { Lz4Compressor, lz4Decompress, lz4DecompressedLength, lz4MaxCompressedLength } from '../native-free-codecs/lz4-block.js';
import { crc32c } from './crc32.js';
import { debugPause } from './debug-pause.js';
import { fsyncDir, readFully, removeIfPresent, writeFully } from './durable-fs.js';
import { PRIVATE_FILE_MODE } from '../shared/file-modes.js';
import { internal } from '../shared/errors.js';
import { dayStartMs, DAY_MS } from './utc-day.js';
import { SummaryBuilder, type SummaryDirectory, type SummarySpan } from './sealed-summary.js';
import { firstIndexOf } from './sorted-ids.js';

export const SEALED_MAGIC = 0x53445348; // "HSDS" read as a little-endian u32
export const SEALED_FOOTER_MAGIC = 0x46445348; // "HSDF"
/**
 * 2: a tag's day is split into blocks of at most SEALED_BLOCK_POINTS points (several footer
 * entries per tag, in time order), so a short query decodes one block instead of the whole day.
 * 3: adds the summary section (per-slot min and max of each tag) and its place in the trailer.
 * 4: the summary's values are column-coded (sealed-summary.ts); everything else as format 3.
 * Version 1 and 2 files are read as they are (they have no summaries).
 */
export const SEALED_VERSION = 4;
export const READABLE_VERSIONS: readonly number[] = [1, 2, 3, 4];
/** About 4.5 hours at 1 s: small enough for short reads, large enough that per-block overhead stays under 1%. */
export const SEALED_BLOCK_POINTS = 16384;
export const SEALED_HEADER_BYTES = 16;
export const FOOTER_ENTRY_BYTES = 40;
/** u32 footer length, u32 crc32c(footer), u32 magic. */
export const TRAILER_BYTES = 12;
/** Format 3 puts u32 summary length and u32 crc32c(summary header and directory) before the trailer. */
export const SUMMARY_TRAILER_BYTES = 8;

export function sealedFileName(dayText: string): string {
  return `sealed-${dayText}.hsd`;
}

/** Column-encoding buffer shared by every seal of this thread (single-threaded by design). */
let columnWriter = new ByteWriter(64 * 1024);
const lz4 = new Lz4Compressor();

/**
 * The thread's buffers for one block at a time: its lz4 bytes (read or written) and its columns.
 * Kept between blocks, since a fresh buffer per block (two per block read, one per block
 * written) was freed late and left the threads' allocator holding the memory (issue 34); a
 * buffer grown past KEEP_BLOCK_BYTES by an unusual block is dropped after it.
 */
const KEEP_BLOCK_BYTES = 1 << 20;

class KeptBytes<T extends Uint8Array> {
  private kept: T;

  constructor(private readonly make: (n: number) => T) {
    this.kept = make(64 * 1024);
  }

  /** A buffer of at least `bytes`: the kept one, or a larger one, kept in turn up to KEEP_BLOCK_BYTES. */
  take(bytes: number): T {
    if (this.kept.length >= bytes) return this.kept;
    const buffer = this.make(Math.max(bytes, Math.min(KEEP_BLOCK_BYTES, 2 * this.kept.length)));
    if (buffer.length <= KEEP_BLOCK_BYTES) this.kept = buffer;
    return buffer;
  }
}

const blockScratch = new KeptBytes((n) => Buffer.allocUnsafe(n));
const columnScratch = new KeptBytes((n) => new Uint8Array(n));

/** The footer of one sealed file, in memory: entries sorted by tag id. */
export class SealedIndex {
  constructor(
    readonly path: string,
    readonly day: number,
    readonly fileBytes: number,
    readonly tagIds: Uint32Array,
    readonly counts: Uint32Array,
    readonly offsets: Float64Array,
    readonly lengths: Uint32Array,
    readonly checksums: Uint32Array,
    readonly minTs: Float64Array,
    readonly maxTs: Float64Array,
    /** Format 3: where the summary section is (checked when first used); null before. */
    readonly summarySpan: SummarySpan | null = null,
    /** Where the footer starts (the summary section ends there). */
    readonly footerOffset = 0,
  ) {}

  /** The header's format version (1 to 4). */
  version = SEALED_VERSION;

  /** The summary directory once read: null when there is none or it failed its checks (ShardStore). */
  summary: SummaryDirectory | null | undefined = undefined;

  /** Where the last block ends. */
  get dataEnd(): number {
    let end = SEALED_HEADER_BYTES;
    for (let e = 0; e < this.offsets.length; e++) end = Math.max(end, this.offsets[e]! + this.lengths[e]!);
    return end;
  }

  get entryCount(): number {
    return this.tagIds.length;
  }

  /** Index of the tag's first entry (its blocks follow in time order), or -1. */
  find(tagId: number): number {
    return firstIndexOf(this.tagIds, tagId);
  }

  /** One past the tag's last entry, given its first. */
  endOf(first: number): number {
    const tagId = this.tagIds[first];
    let e = first;
    while (e < this.tagIds.length && this.tagIds[e] === tagId) e++;
    return e;
  }

  /**
   * Reads and checks the header and footer of a sealed file; through `fd` when given (the
   * data-dir check reads the footer and the blocks of one open file, even if a seal replaces it).
   */
  static read(filePath: string, day: number, givenFd?: number): SealedIndex {
    const fd = givenFd ?? fs.openSync(filePath, 'r');
    try {
      const fileBytes = fs.fstatSync(fd).size;
      const bad = (why: string) => internal(`${filePath}: ${why}`);
      if (fileBytes < SEALED_HEADER_BYTES + TRAILER_BYTES) throw bad(`only ${fileBytes} bytes, too short for a sealed file`);

      const header = new Uint8Array(SEALED_HEADER_BYTES);
      readFully(fd, header, 0, SEALED_HEADER_BYTES, 0);
      const hv = new DataView(header.buffer);
      if (hv.getUint32(0, true) !== SEALED_MAGIC || hv.getUint32(12, true) !== crc32c(header, 0, 12)) throw bad('header at byte 0: bad magic or header checksum');
      const version = hv.getUint16(4, true);
      const codecVersion = hv.getUint16(6, true);
      if (!READABLE_VERSIONS.includes(version)) throw bad(`sealed format version ${version} is not supported (this build reads ${READABLE_VERSIONS.join(', ')})`);
      if (!READABLE_COLUMN_CODEC_VERSIONS.includes(codecVersion)) {
        throw bad(`column codec version ${codecVersion} is not supported (this build reads ${READABLE_COLUMN_CODEC_VERSIONS.join(', ')})`);
      }
      if (hv.getUint32(8, true) !== day) throw bad(`header names day ${hv.getUint32(8, true)}, the file name day ${day}`);

      // Format 3's summary fields come just before the 12 bytes every format ends with.
      const extra = version >= 3 ? SUMMARY_TRAILER_BYTES : 0;
      if (fileBytes < SEALED_HEADER_BYTES + extra + TRAILER_BYTES) throw bad(`only ${fileBytes} bytes, too short for a version ${version} sealed file`);
      const trailer = new Uint8Array(extra + TRAILER_BYTES);
      readFully(fd, trailer, 0, trailer.length, fileBytes - trailer.length);
      const tv = new DataView(trailer.buffer);
      const footerBytes = tv.getUint32(extra, true);
      if (tv.getUint32(extra + 8, true) !== SEALED_FOOTER_MAGIC) throw bad(`trailer at byte ${fileBytes - TRAILER_BYTES}: bad footer magic`);
      const footerOffset = fileBytes - trailer.length - footerBytes;
      if (footerBytes % FOOTER_ENTRY_BYTES !== 0 || footerOffset < SEALED_HEADER_BYTES) throw bad(`trailer at byte ${fileBytes - TRAILER_BYTES}: bad footer length ${footerBytes}`);
      const footer = new Uint8Array(footerBytes);
      if (readFully(fd, footer, 0, footerBytes, footerOffset) !== footerBytes) throw bad(`footer at byte ${footerOffset}: cut short`);
      if (crc32c(footer) !== tv.getUint32(extra + 4, true)) throw bad(`footer at byte ${footerOffset}: checksum mismatch`);
      // Not checked here: a bad summary must not make the points unreadable (see ShardStore).
      const summarySpan = extra > 0 ? { offset: footerOffset - tv.getUint32(0, true), length: tv.getUint32(0, true), crc: tv.getUint32(4, true) } : null;

      const n = footerBytes / FOOTER_ENTRY_BYTES;
      const index = new SealedIndex(
        filePath, day, fileBytes, new Uint32Array(n), new Uint32Array(n), new Float64Array(n), new Uint32Array(n), new Uint32Array(n), new Float64Array(n), new Float64Array(n), summarySpan, footerOffset,
      );
      const fv = new DataView(footer.buffer);
      const dayStart = dayStartMs(day);
      for (let i = 0; i < n; i++) {
        const p = i * FOOTER_ENTRY_BYTES;
        const tagId = fv.getUint32(p, true);
        const offset = fv.getUint32(p + 8, true) + fv.getUint32(p + 12, true) * 2 ** 32;
        const length = fv.getUint32(p + 16, true);
        const minTs = fv.getFloat64(p + 24, true);
        const maxTs = fv.getFloat64(p + 32, true);
        // Entries are ordered by tag, then (blocks of one tag) by time without overlap.
        if (i > 0 && (tagId < index.tagIds[i - 1]! || (tagId === index.tagIds[i - 1]! && minTs <= index.maxTs[i - 1]!))) {
          throw bad(`footer entry ${i} at byte ${footerOffset + p}: entries out of tag and time order`);
        }
        if (offset < SEALED_HEADER_BYTES || offset + length > footerOffset) throw bad(`footer entry ${i} at byte ${footerOffset + p}: block of tag ${tagId} lies outside the data area`);
        if (!(minTs >= dayStart && maxTs < dayStart + DAY_MS && minTs <= maxTs)) throw bad(`footer entry ${i} at byte ${footerOffset + p}: block of tag ${tagId} has a time range outside the day`);
        index.tagIds[i] = tagId;
        index.counts[i] = fv.getUint32(p + 4, true);
        index.offsets[i] = offset;
        index.lengths[i] = length;
        index.checksums[i] = fv.getUint32(p + 20, true);
        index.minTs[i] = minTs;
        index.maxTs[i] = maxTs;
      }
      index.version = version;
      return index;
    } finally {
      if (givenFd === undefined) fs.closeSync(fd);
    }
  }

  /** Decodes entry `e` into ts[0..count) and values[0..count) (count = counts[e]); reads through `fd` when given. */
  decode(e: number, ts: Float64Array, values: Float64Array, givenFd?: number): void {
    const count = this.counts[e]!;
    const length = this.lengths[e]!;
    const block = blockScratch.take(length).subarray(0, length);
    const fd = givenFd ?? fs.openSync(this.path, 'r');
    try {
      if (readFully(fd, block, 0, length, this.offsets[e]!) !== length) throw internal(`${this.path}: block of tag ${this.tagIds[e]} at byte ${this.offsets[e]} cut short`);
    } finally {
      if (givenFd === undefined) fs.closeSync(fd);
    }
    if (crc32c(block) !== this.checksums[e]) throw internal(`${this.path}: block of tag ${this.tagIds[e]} at byte ${this.offsets[e]} fails its checksum`);
    try {
      const columnBytes = lz4DecompressedLength(block);
      // Far more than any column mode takes (a float is 8 bytes, a varint at most 10): a damaged length, not a block.
      if (columnBytes > 32 * count + 65536) throw new Error(`it declares ${columnBytes} bytes of columns for ${count} points`);
      const columns = columnScratch.take(columnBytes);
      lz4Decompress(block, columns);
      const reader = new ByteReader(columns, 0, columnBytes);
      decodeTimestamps(reader, count, ts.subarray(0, count));
      decodeValues(reader, count, values.subarray(0, count));
      if (reader.remaining !== 0) throw new Error(`${reader.remaining} bytes left over`);
    } catch (err) {
      throw internal(`${this.path}: block of tag ${this.tagIds[e]} at byte ${this.offsets[e]} does not decode: ${(err as Error).message}`);
    }
  }
}

/**
 * A tag's points that do not fill a block yet (SealedFileWriter.addPoints), in buffers kept for
 * the thread's next writer: a writer takes a pair while a tag is open and gives it back when the
 * tag ends (two writers of one shard, a seal and a compaction, may be open at once).
 */
interface PendingBlock {
  ts: Float64Array;
  values: Float64Array;
}
const sparePending: PendingBlock[] = [];

/** Blocks are gathered up to this many bytes and written with one call (a part of 10,000 small tags made 10,000 writes). */
const WRITE_BATCH_BYTES = 1 << 20;

/** Writes one sealed file; tags must be added in increasing tag id order. */
export class SealedFileWriter {
  private readonly tmpPath: string;
  private fd: number;
  /** Where the next block goes (blocks not yet written included). */
  private position = SEALED_HEADER_BYTES;
  /** Blocks not written yet, from file offset `batchStart`. */
  private batch = Buffer.allocUnsafe(WRITE_BATCH_BYTES);
  private batchLength = 0;
  private batchStart = SEALED_HEADER_BYTES;
  private readonly tagIds: number[] = [];
  private readonly counts: number[] = [];
  private readonly offsets: number[] = [];
  private readonly lengths: number[] = [];
  private readonly checksums: number[] = [];
  private readonly minTs: number[] = [];
  private readonly maxTs: number[] = [];
  private readonly summary: SummaryBuilder;
  private readonly version: number;
  /** The tag addPoints is adding, or -1; its first `pending` points not yet in a block wait in `held`. */
  private openTag = -1;
  private pending = 0;
  private held: PendingBlock | null = null;

  constructor(
    private readonly finalPath: string,
    private readonly day: number,
    /**
     * 3 writes what the builds before issue 33 wrote, format 3 with column codec 3 (tests of
     * reading old data dirs); seals use the current format 4 with codec 4.
     */
    private readonly columnCodecVersion = COLUMN_CODEC_VERSION,
    /**
     * 'fast' leaves the rANS value modes out: for parts, which a merge or the day's seal rewrites
     * (compaction runs on the shard's thread right after a write: 87 to 51 ns a point, 0.65 to
     * 0.79 B a point); sealed days get 'best'.
     */
    private readonly effort: 'best' | 'fast' = 'best',
    /** Where the file is written before its rename (a compaction thread names its own, per job). */
    tmpPath = `${finalPath}.tmp`,
  ) {
    const version = (this.version = columnCodecVersion === COLUMN_CODEC_VERSION ? SEALED_VERSION : 3);
    this.summary = new SummaryBuilder(version >= 4);
    this.tmpPath = tmpPath;
    this.fd = fs.openSync(this.tmpPath, 'w', PRIVATE_FILE_MODE);
    const header = new Uint8Array(SEALED_HEADER_BYTES);
    const view = new DataView(header.buffer);
    view.setUint32(0, SEALED_MAGIC, true);
    view.setUint16(4, version, true);
    view.setUint16(6, columnCodecVersion, true);
    view.setUint32(8, day, true);
    view.setUint32(12, crc32c(header, 0, 12), true);
    try {
      writeFully(this.fd, header, 0);
    } catch (err) {
      this.abort();
      throw err;
    }
  }

  /** Adds a tag's points: sorted by timestamp, one point per timestamp, count >= 1. */
  addTag(tagId: number, ts: Float64Array, values: Float64Array, count: number): void {
    this.addPoints(tagId, ts, values, count);
    this.endTag();
  }

  /**
   * Adds points of a tag in runs: each run later than the tag's points so far (sorted, one point
   * per timestamp), a new tag id (above every earlier one) ending the tag before it. Blocks take
   * SEALED_BLOCK_POINTS points whatever the runs, so a merge can hand a tag over window by window.
   */
  addPoints(tagId: number, ts: Float64Array, values: Float64Array, count: number): void {
    if (count === 0) return;
    if (tagId !== this.openTag) {
      this.endTag();
      const previous = this.tagIds.length > 0 ? this.tagIds[this.tagIds.length - 1]! : -1;
      if (tagId <= previous) throw internal(`sealed file tags out of order: ${tagId} after ${previous}`);
      this.openTag = tagId;
      this.summary.beginTag();
    }
    this.summary.addPoints(dayStartMs(this.day), ts, values, count);
    for (let from = 0; from < count; ) {
      if (this.pending === 0 && count - from >= SEALED_BLOCK_POINTS) {
        this.addBlock(tagId, ts.subarray(from, from + SEALED_BLOCK_POINTS), values.subarray(from, from + SEALED_BLOCK_POINTS), SEALED_BLOCK_POINTS);
        from += SEALED_BLOCK_POINTS;
        continue;
      }
      const n = Math.min(SEALED_BLOCK_POINTS - this.pending, count - from);
      const held = (this.held ??= sparePending.pop() ?? { ts: new Float64Array(SEALED_BLOCK_POINTS), values: new Float64Array(SEALED_BLOCK_POINTS) });
      held.ts.set(ts.subarray(from, from + n), this.pending);
      held.values.set(values.subarray(from, from + n), this.pending);
      this.pending += n;
      from += n;
      if (this.pending === SEALED_BLOCK_POINTS) this.flushPending();
    }
  }

  /** Writes the open tag's last block and its summary entry. */
  endTag(): void {
    if (this.openTag < 0) return;
    this.flushPending();
    this.summary.endTag(this.openTag);
    this.openTag = -1;
  }

  private flushPending(): void {
    if (this.pending > 0) this.addBlock(this.openTag, this.held!.ts, this.held!.values, this.pending);
    this.pending = 0;
    this.giveBackPending();
  }

  private giveBackPending(): void {
    if (this.held !== null && sparePending.length < 2) sparePending.push(this.held);
    this.held = null;
  }

  private addBlock(tagId: number, ts: Float64Array, values: Float64Array, count: number): void {
    const w = columnWriter;
    w.reset();
    encodeTimestamps(ts, count, w);
    encodeValues(values, count, w, 0, this.columnCodecVersion, this.effort === 'best');
    const columns = w.bytes();
    const out = blockScratch.take(lz4MaxCompressedLength(columns.length));
    const block = out.subarray(0, lz4.compress(columns, out));
    if (w.length > 16 * 1024 * 1024) columnWriter = new ByteWriter(64 * 1024); // do not pin a huge buffer
    if (block.length > 0xffffffff) throw internal(`tag ${tagId} compresses to ${block.length} bytes, more than a sealed block can hold`);
    this.queue(block);
    this.tagIds.push(tagId);
    this.counts.push(count);
    this.offsets.push(this.position);
    this.lengths.push(block.length);
    this.checksums.push(crc32c(block));
    this.minTs.push(ts[0]!);
    this.maxTs.push(ts[count - 1]!);
    this.position += block.length;
  }

  /** Adds a block at `position` to the batch, writing the batch first when it would not fit. */
  private queue(block: Uint8Array): void {
    if (this.batchLength + block.length > this.batch.length) this.flushBatch();
    if (block.length > this.batch.length) {
      writeFully(this.fd, block, this.position);
      this.batchStart = this.position + block.length;
      return;
    }
    this.batch.set(block, this.batchLength);
    this.batchLength += block.length;
  }

  private flushBatch(): void {
    if (this.batchLength > 0) writeFully(this.fd, this.batch.subarray(0, this.batchLength), this.batchStart);
    this.batchStart += this.batchLength;
    this.batchLength = 0;
  }

  /**
   * Writes the summary section and the footer, makes the file durable and moves it to its final
   * name; with `rename` false it stays under its temporary name (the index then names that), for
   * the shard to move in place (a compaction thread's part).
   */
  finish(rename = true): SealedIndex {
    this.endTag();
    this.flushBatch();
    this.batch = Buffer.alloc(0);
    const { section, crc: summaryCrc } = this.summary.finish();
    const summaryOffset = this.position;
    writeFully(this.fd, section, summaryOffset);
    this.position += section.length;
    const n = this.tagIds.length;
    const footerBytes = n * FOOTER_ENTRY_BYTES;
    const tail = new Uint8Array(footerBytes + SUMMARY_TRAILER_BYTES + TRAILER_BYTES);
    const view = new DataView(tail.buffer);
    for (let i = 0; i < n; i++) {
      const p = i * FOOTER_ENTRY_BYTES;
      const offset = this.offsets[i]!;
      view.setUint32(p, this.tagIds[i]!, true);
      view.setUint32(p + 4, this.counts[i]!, true);
      view.setUint32(p + 8, offset % 2 ** 32, true);
      view.setUint32(p + 12, Math.floor(offset / 2 ** 32), true);
      view.setUint32(p + 16, this.lengths[i]!, true);
      view.setUint32(p + 20, this.checksums[i]!, true);
      view.setFloat64(p + 24, this.minTs[i]!, true);
      view.setFloat64(p + 32, this.maxTs[i]!, true);
    }
    view.setUint32(footerBytes, section.length, true);
    view.setUint32(footerBytes + 4, summaryCrc, true);
    const trailer = footerBytes + SUMMARY_TRAILER_BYTES;
    view.setUint32(trailer, footerBytes, true);
    view.setUint32(trailer + 4, crc32c(tail, 0, footerBytes), true);
    view.setUint32(trailer + 8, SEALED_FOOTER_MAGIC, true);
    const footerOffset = this.position;
    writeFully(this.fd, tail, footerOffset);
    fs.fsyncSync(this.fd);
    fs.closeSync(this.fd);
    this.fd = -1;
    if (rename) {
      debugPause('seal-before-rename');
      fs.renameSync(this.tmpPath, this.finalPath);
      fsyncDir(path.dirname(this.finalPath));
    }
    const index = new SealedIndex(
      rename ? this.finalPath : this.tmpPath,
      this.day,
      this.position + tail.length,
      Uint32Array.from(this.tagIds),
      Uint32Array.from(this.counts),
      Float64Array.from(this.offsets),
      Uint32Array.from(this.lengths),
      Uint32Array.from(this.checksums),
      Float64Array.from(this.minTs),
      Float64Array.from(this.maxTs),
      { offset: summaryOffset, length: section.length, crc: summaryCrc },
      footerOffset,
    );
    index.version = this.version;
    return index;
  }

  /** Gives up: closes and removes the temporary file (the final name is untouched). */
  abort(): void {
    this.pending = 0;
    this.openTag = -1;
    this.giveBackPending();
    if (this.fd >= 0) {
      fs.closeSync(this.fd);
      this.fd = -1;
    }
    removeIfPresent(this.tmpPath);
  }
}
