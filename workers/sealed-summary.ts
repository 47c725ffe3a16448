/**
 * The summary section of sealed day files (formats 3 and 4; README.md beside this file, "Sealed day
 * file"): per tag, the min and max of its final points in each 30-minute UTC slot of the day.
 * A `min` or `max` bucket query whose buckets are made of whole slots reads at most 48 values
 * of such a day instead of decoding its points, and gets the same buckets (query-runner.ts).
 *
 * Format 4 stores a tag's slot values as two columns (native-free-codecs/columns.ts: the present
 * slots' minima, then their maxima) instead of 16 raw bytes a slot: a noisy tag's day summary
 * drops from 784 bytes to about 140 with its entry (0.0016 instead of 0.0091 bytes a point at
 * 1 s, issue 33). The directory entry's reserved u16 then holds the length of those columns.
 *
 * Min and max are taken exactly as BucketStream takes them (aggregators.ts): NaN is ignored, a
 * slot with no other value is empty, and in time order a value replaces the one held only when
 * strictly smaller (larger), so the min of slot minima is the very value the points would give.
 */

import fs from 'node:fs';
import { ByteReader, ByteWriter, decodeValues, encodeValues } from '../native-free-codecs/columns.js';
import { crc32c } from './crc32.js';
import { readFully } from './durable-fs.js';
import { firstIndexOf } from './sorted-ids.js';
import { DAY_MS } from './utc-day.js';

export const SUMMARY_SLOT_MS = 1_800_000;
export const SUMMARY_SLOTS = DAY_MS / SUMMARY_SLOT_MS;
export const SUMMARY_MAGIC = 0x4d535348; // "HSSM"
/** magic u32, slot width ms u32, tag count u32, reserved u32 = 0. */
export const SUMMARY_HEADER_BYTES = 16;
/**
 * tag id u32, slots 0..31 bits u32, slots 32..47 bits u16, u16 (format 3: reserved = 0;
 * format 4: the byte length of the tag's coded values), crc32c(values) u32.
 */
export const SUMMARY_ENTRY_BYTES = 16;
/** A present slot's (min f64, max f64). */
const SLOT_VALUE_BYTES = 16;

export type SummaryKind = 'min' | 'max';

/** Where a format 3 file's summary section is, from its trailer. */
export interface SummarySpan {
  offset: number;
  length: number;
  /** crc32c of the section's header and directory (each tag's values have their own). */
  crc: number;
}

/** Builds one sealed file's summary section as its tags are added (increasing tag id). */
export class SummaryBuilder {
  private readonly directory = new ByteWriter(1024);
  private readonly values = new ByteWriter(4096);
  private tags = 0;
  private readonly min = new Float64Array(SUMMARY_SLOTS);
  private readonly max = new Float64Array(SUMMARY_SLOTS);
  private readonly seen = new Uint8Array(SUMMARY_SLOTS);
  private readonly scratch = new Uint8Array(SUMMARY_SLOTS * SLOT_VALUE_BYTES);
  private readonly entry = new Uint8Array(SUMMARY_ENTRY_BYTES);
  private readonly coded = new ByteWriter(1024);

  /** `coded`: format 4's column-coded values; false writes format 3's raw f64 pairs. */
  constructor(private readonly codedValues = true) {}

  /** Adds a tag's final points of the day starting at `dayStart` (sorted, one per timestamp). */
  add(tagId: number, dayStart: number, ts: Float64Array, values: Float64Array, count: number): void {
    this.beginTag();
    this.addPoints(dayStart, ts, values, count);
    this.endTag(tagId);
  }

  /** Starts a tag whose points come in time-ordered runs (addPoints), then endTag. */
  beginTag(): void {
    this.min.fill(Infinity);
    this.max.fill(-Infinity);
    this.seen.fill(0);
  }

  /** Adds points later than every point added to this tag so far (sorted, one per timestamp). */
  addPoints(dayStart: number, ts: Float64Array, values: Float64Array, count: number): void {
    const { min, max, seen } = this;
    // The points are sorted: each slot is one run of them.
    for (let k = 0; k < count; ) {
      const s = Math.floor((ts[k]! - dayStart) / SUMMARY_SLOT_MS);
      const slotEnd = dayStart + (s + 1) * SUMMARY_SLOT_MS;
      let lo = min[s]!;
      let hi = max[s]!;
      let n = 0;
      for (; k < count && ts[k]! < slotEnd; k++) {
        const v = values[k]!;
        if (v !== v) continue; // NaN
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        n++;
      }
      min[s] = lo;
      max[s] = hi;
      if (n > 0) seen[s] = 1;
    }
  }

  /** Writes the tag's entry from what addPoints gathered. */
  endTag(tagId: number): void {
    const { min, max, seen } = this;
    const out = new DataView(this.scratch.buffer);
    let lo = 0;
    let hi = 0;
    let n = 0;
    for (let s = 0; s < SUMMARY_SLOTS; s++) {
      if (seen[s] === 0) continue;
      if (s < 32) lo |= 1 << s;
      else hi |= 1 << (s - 32);
      if (this.codedValues) {
        // Packed to the front: the present slots' minima (kept in min) and maxima.
        min[n] = min[s]!;
        max[n] = max[s]!;
      } else {
        out.setFloat64(n * SLOT_VALUE_BYTES, min[s]!, true);
        out.setFloat64(n * SLOT_VALUE_BYTES + 8, max[s]!, true);
      }
      n++;
    }
    let bytes: Uint8Array = this.scratch.subarray(0, n * SLOT_VALUE_BYTES);
    if (this.codedValues) {
      // At most 2 x (1 + 48 x 9) bytes (float mode), well inside the u16 length.
      this.coded.reset();
      encodeValues(min, n, this.coded);
      encodeValues(max, n, this.coded);
      bytes = this.coded.bytes();
    }
    const e = new DataView(this.entry.buffer);
    e.setUint32(0, tagId, true);
    e.setUint32(4, lo >>> 0, true);
    e.setUint16(8, hi, true);
    e.setUint16(10, this.codedValues ? bytes.length : 0, true);
    e.setUint32(12, crc32c(bytes), true);
    this.directory.raw(this.entry);
    this.values.raw(bytes);
    this.tags++;
  }

  /** The whole section and the crc32c of its header and directory (for the trailer). */
  finish(): { section: Uint8Array; crc: number } {
    const head = SUMMARY_HEADER_BYTES + this.directory.length;
    const section = new Uint8Array(head + this.values.length);
    const view = new DataView(section.buffer);
    view.setUint32(0, SUMMARY_MAGIC, true);
    view.setUint32(4, SUMMARY_SLOT_MS, true);
    view.setUint32(8, this.tags, true);
    view.setUint32(12, 0, true);
    section.set(this.directory.bytes(), SUMMARY_HEADER_BYTES);
    section.set(this.values.bytes(), head);
    return { section, crc: crc32c(section, 0, head) };
  }
}

/** A summary section's directory in memory (read on first use, kept with the file's footer). */
export class SummaryDirectory {
  /** Tags whose values failed their checksum: read from their points from then on. */
  readonly bad = new Set<number>();

  private constructor(
    readonly path: string,
    readonly tagIds: Uint32Array,
    readonly low: Uint32Array,
    readonly high: Uint16Array,
    readonly checksums: Uint32Array,
    /** File offset of each tag's values. */
    readonly offsets: Float64Array,
    /** Format 4: byte length of each tag's coded values; null for format 3's raw pairs. */
    readonly codedLengths: Uint16Array | null,
  ) {}

  /**
   * Reads and checks the header and directory of the section at `span`; `dataEnd` is where the
   * file's blocks end (the section lies between them and the footer); `version` is the sealed
   * file's (4 codes the values). Throws naming the fault.
   */
  static read(filePath: string, span: SummarySpan, dataEnd: number, footerOffset: number, version: number, givenFd?: number): SummaryDirectory {
    const bad = (why: string) => new Error(`${filePath}: summary ${why}`);
    if (span.offset < dataEnd || span.offset + span.length !== footerOffset || span.length < SUMMARY_HEADER_BYTES) throw bad(`section [${span.offset}, +${span.length}) does not lie between the blocks and the footer`);
    const fd = givenFd ?? fs.openSync(filePath, 'r');
    try {
      const header = new Uint8Array(SUMMARY_HEADER_BYTES);
      readFully(fd, header, 0, SUMMARY_HEADER_BYTES, span.offset);
      const hv = new DataView(header.buffer);
      const n = hv.getUint32(8, true);
      const head = SUMMARY_HEADER_BYTES + n * SUMMARY_ENTRY_BYTES;
      if (hv.getUint32(0, true) !== SUMMARY_MAGIC || hv.getUint32(4, true) !== SUMMARY_SLOT_MS || head > span.length) throw bad('header is not one of 30-minute slots that fits its section');
      const bytes = new Uint8Array(head);
      if (readFully(fd, bytes, 0, head, span.offset) !== head) throw bad(`at byte ${span.offset}: cut short`);
      if (crc32c(bytes) !== span.crc) throw bad(`at byte ${span.offset}: directory checksum mismatch`);
      const view = new DataView(bytes.buffer);
      const coded = version >= 4;
      const dir = new SummaryDirectory(filePath, new Uint32Array(n), new Uint32Array(n), new Uint16Array(n), new Uint32Array(n), new Float64Array(n), coded ? new Uint16Array(n) : null);
      let at = span.offset + head;
      for (let i = 0; i < n; i++) {
        const p = SUMMARY_HEADER_BYTES + i * SUMMARY_ENTRY_BYTES;
        dir.tagIds[i] = view.getUint32(p, true);
        if (i > 0 && dir.tagIds[i]! <= dir.tagIds[i - 1]!) throw bad('directory out of tag order');
        dir.low[i] = view.getUint32(p + 4, true);
        dir.high[i] = view.getUint16(p + 8, true);
        dir.checksums[i] = view.getUint32(p + 12, true);
        dir.offsets[i] = at;
        if (dir.codedLengths !== null) at += dir.codedLengths[i] = view.getUint16(p + 10, true);
        else at += slotCount(dir.low[i]!, dir.high[i]!) * SLOT_VALUE_BYTES;
      }
      if (at !== span.offset + span.length) throw bad(`values take ${at - span.offset - head} bytes, the section has ${span.length - head}`);
      return dir;
    } finally {
      if (givenFd === undefined) fs.closeSync(fd);
    }
  }

  /** The tag's directory entry, or -1. */
  find(tagId: number): number {
    return firstIndexOf(this.tagIds, tagId);
  }

  /**
   * Entry `e`'s non-empty slots as points (slot start, its min or max) into ts and values (room
   * for SUMMARY_SLOTS); their count. Throws when the values fail their checksum. Reads through
   * `fd` when given.
   */
  slots(e: number, kind: SummaryKind, dayStart: number, ts: Float64Array, values: Float64Array, givenFd?: number): number {
    const low = this.low[e]!;
    const high = this.high[e]!;
    const n = slotCount(low, high);
    if (n === 0) return 0;
    const bytes = new Uint8Array(this.codedLengths !== null ? this.codedLengths[e]! : n * SLOT_VALUE_BYTES);
    const fd = givenFd ?? fs.openSync(this.path, 'r');
    try {
      if (readFully(fd, bytes, 0, bytes.length, this.offsets[e]!) !== bytes.length) throw new Error(`${this.path}: summary of tag ${this.tagIds[e]} at byte ${this.offsets[e]} cut short`);
    } finally {
      if (givenFd === undefined) fs.closeSync(fd);
    }
    if (crc32c(bytes) !== this.checksums[e]) throw new Error(`${this.path}: summary of tag ${this.tagIds[e]} at byte ${this.offsets[e]} fails its checksum`);
    if (this.codedLengths !== null) {
      // Minima then maxima, n each (48 at most): both are decoded, so either query checks the whole.
      const r = new ByteReader(bytes);
      decodeValues(r, n, kind === 'min' ? values : otherColumn);
      decodeValues(r, n, kind === 'max' ? values : otherColumn);
      if (r.remaining !== 0) throw new Error(`${this.path}: summary of tag ${this.tagIds[e]} at byte ${this.offsets[e]} has ${r.remaining} bytes left over`);
      let k = 0;
      for (let s = 0; s < SUMMARY_SLOTS; s++) if (hasSlot(low, high, s)) ts[k++] = dayStart + s * SUMMARY_SLOT_MS;
      return k;
    }
    const view = new DataView(bytes.buffer);
    const at = kind === 'min' ? 0 : 8;
    let k = 0;
    for (let s = 0; s < SUMMARY_SLOTS; s++) {
      if (!hasSlot(low, high, s)) continue;
      ts[k] = dayStart + s * SUMMARY_SLOT_MS;
      values[k] = view.getFloat64(k * SLOT_VALUE_BYTES + at, true);
      k++;
    }
    return k;
  }
}

/** Where slots() decodes the column it was not asked for. */
const otherColumn = new Float64Array(SUMMARY_SLOTS);

function hasSlot(low: number, high: number, s: number): boolean {
  return s < 32 ? ((low >>> s) & 1) === 1 : ((high >>> (s - 32)) & 1) === 1;
}

function slotCount(low: number, high: number): number {
  let n = 0;
  for (let s = 0; s < SUMMARY_SLOTS; s++) if (hasSlot(low, high, s)) n++;
  return n;
}
