/**
 * The two binary query result formats of ../shared/WIRE.md ("Query results"), little-endian:
 *
 * - format 1, `fast_query_binary`: "HSB1", u32 tags; per tag u16 name length, UTF-8 name,
 *   u32 points, then points × (u64 ts, f32 value), packed, 12 bytes a point.
 * - format 2, `fast_query_optimised`: "HSB2", u32 tags, u32 rows, pad to 8, rows × u64 ts (the
 *   sorted union); per tag u16 name length, UTF-8 name, pad, validity bitmap of ceil(rows/8)
 *   bytes (bit i least significant first), pad, rows × f32 (0 where invalid), pad. Every array
 *   starts on an 8-byte boundary, so a client views it in place.
 *
 * Timestamps are integers 0..2^53-1 (numbers in, numbers or u64 out). Encoders throw on input
 * the format cannot hold; decoders throw an Error naming the first problem (truncated body,
 * wrong magic, trailing bytes). Pure TypeScript: runs in a browser.
 */

import { GrowableBytes } from './byte-buffer.js';

const TWO_POW_32 = 4294967296;
const MAGIC_1 = 0x31425348; // "HSB1" read as a little-endian u32
const MAGIC_2 = 0x32425348; // "HSB2"
const MAX_NAME_BYTES = 0xffff;
const MAX_U32 = 0xffffffff;
/** Typed-array views read the host's byte order; only a little-endian host may view in place. */
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

function encodeName(name: string, what: string): Uint8Array {
  const bytes = utf8Encoder.encode(name);
  if (bytes.length > MAX_NAME_BYTES) {
    throw new RangeError(`${what}: tag name of ${bytes.length} UTF-8 bytes exceeds ${MAX_NAME_BYTES}`);
  }
  return bytes;
}

function decodeName(bytes: Uint8Array, start: number, length: number, what: string): string {
  try {
    return utf8Decoder.decode(bytes.subarray(start, start + length));
  } catch {
    throw new Error(`${what}: tag name at byte ${start} is not valid UTF-8`);
  }
}

function pad8(n: number): number {
  return (n + 7) & ~7;
}

// ---------------------------------------------------------------------------------------------
// Format 1

/** "HSB1" and the u32 tag count. */
const FORMAT1_HEADER_BYTES = 8;

/** The header of a format 1 body of `tagCount` tags; the tags follow it. */
export function format1Header(tagCount: number): Uint8Array {
  if (!Number.isInteger(tagCount) || tagCount < 0 || tagCount > MAX_U32) throw new RangeError(`format1Header: tag count ${tagCount} is not a u32`);
  const header = new Uint8Array(FORMAT1_HEADER_BYTES);
  const view = new DataView(header.buffer);
  view.setUint32(0, MAGIC_1, true);
  view.setUint32(4, tagCount, true);
  return header;
}

/**
 * Streaming encoder for format 1: beginTag, then exactly pointCount points (point or
 * pointsFrom), repeated; finish() patches the tag count and returns a view of the internal
 * buffer. reset() reuses that buffer, so consume the previous result first.
 *
 * With `{ header: false }` it writes tags only, for a producer whose tags are one part of a body
 * that someone else heads (format1Header, or resultHead in result-envelope.ts): the storage
 * worker streams them with take(), and finish() is not available.
 */
export class Format1Writer extends GrowableBytes {
  private tagCount = 0;
  /** Points the current tag still expects; writing more or fewer is a caller bug. */
  private pending = 0;
  /** Where the tags start: after the header, or at 0. */
  private readonly start: number;

  constructor(initialCapacity = 4096, options: { header?: boolean } = {}) {
    super(Math.max(64, initialCapacity));
    this.start = options.header === false ? 0 : FORMAT1_HEADER_BYTES;
    this.reset();
  }

  override reset(): void {
    if (this.start > 0) this.view.setUint32(0, MAGIC_1, true);
    this.len = this.start;
    this.tagCount = 0;
    this.pending = 0;
  }

  beginTag(name: string, pointCount: number): void {
    if (this.pending !== 0) throw new Error(`Format1Writer: previous tag is missing ${this.pending} points`);
    if (!Number.isInteger(pointCount) || pointCount < 0 || pointCount > MAX_U32) {
      throw new RangeError(`Format1Writer: point count ${pointCount} is not a u32`);
    }
    if (this.tagCount === MAX_U32) throw new RangeError('Format1Writer: too many tags');
    const nameBytes = encodeName(name, 'Format1Writer');
    this.ensure(2 + nameBytes.length + 4);
    this.view.setUint16(this.len, nameBytes.length, true);
    this.buf.set(nameBytes, this.len + 2);
    this.len += 2 + nameBytes.length;
    this.view.setUint32(this.len, pointCount, true);
    this.len += 4;
    this.tagCount++;
    this.pending = pointCount;
  }

  /** One point; ts an integer in 0..2^53-1 (written as two u32 halves), value cast to f32. */
  point(ts: number, value: number): void {
    if (this.pending === 0) throw new Error('Format1Writer: more points than the tag declared');
    this.pending--;
    this.ensure(12);
    const v = this.view;
    const p = this.len;
    v.setUint32(p, ts >>> 0, true);
    v.setUint32(p + 4, Math.floor(ts / TWO_POW_32), true);
    v.setFloat32(p + 8, value, true);
    this.len = p + 12;
  }

  /** Points [start, end) of two parallel arrays, in one bounds check and one loop. */
  pointsFrom(ts: Float64Array, values: Float64Array, start = 0, end = ts.length): void {
    const n = end - start;
    if (n < 0 || start < 0 || end > ts.length || end > values.length) {
      throw new RangeError(`Format1Writer: range ${start}..${end} outside the arrays`);
    }
    if (n > this.pending) throw new Error('Format1Writer: more points than the tag declared');
    this.pending -= n;
    this.ensure(n * 12);
    const v = this.view;
    let p = this.len;
    for (let i = start; i < end; i++) {
      const t = ts[i]!;
      v.setUint32(p, t >>> 0, true);
      v.setUint32(p + 4, Math.floor(t / TWO_POW_32), true);
      v.setFloat32(p + 8, values[i]!, true);
      p += 12;
    }
    this.len = p;
  }

  /**
   * For a producer that streams a large result: the tag bytes written since the previous call
   * (a view, valid until the next write), keeping the current tag's state so its points can go
   * on. The header, if any, is not part of it.
   */
  take(): Uint8Array {
    const tags = this.buf.subarray(this.start, this.len);
    this.len = this.start;
    return tags;
  }

  /** The finished body: a view of the internal buffer, valid until reset or the next write. */
  finish(): Uint8Array {
    if (this.start === 0) throw new Error('Format1Writer: a writer without a header has no finished body; use take()');
    if (this.pending !== 0) throw new Error(`Format1Writer: last tag is missing ${this.pending} points`);
    this.view.setUint32(4, this.tagCount, true);
    return this.buf.subarray(0, this.len);
  }
}

export interface Format1Tag {
  name: string;
  /** u64 timestamps as numbers (exact up to 2^53). */
  timestamps: Float64Array;
  values: Float32Array;
}

/** Decodes a format 1 body; points are copied out (12-byte records are not alignable). */
export function decodeFormat1(bytes: Uint8Array): Format1Tag[] {
  const what = 'format 1';
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (at: number, n: number, part: string): void => {
    if (at + n > bytes.length) throw new Error(`${what}: truncated ${part} at byte ${at} (body is ${bytes.length} bytes)`);
  };
  need(0, 8, 'header');
  if (view.getUint32(0, true) !== MAGIC_1) throw new Error(`${what}: magic is not "HSB1"`);
  const tagCount = view.getUint32(4, true);
  const tags: Format1Tag[] = [];
  let p = 8;
  for (let t = 0; t < tagCount; t++) {
    need(p, 2, 'name length');
    const nameLength = view.getUint16(p, true);
    need(p + 2, nameLength + 4, 'tag header');
    const name = decodeName(bytes, p + 2, nameLength, what);
    p += 2 + nameLength;
    const count = view.getUint32(p, true);
    p += 4;
    need(p, count * 12, `points of tag ${JSON.stringify(name)}`);
    const timestamps = new Float64Array(count);
    const values = new Float32Array(count);
    for (let i = 0; i < count; i++, p += 12) {
      timestamps[i] = view.getUint32(p, true) + view.getUint32(p + 4, true) * TWO_POW_32;
      values[i] = view.getFloat32(p + 8, true);
    }
    tags.push({ name, timestamps, values });
  }
  if (p !== bytes.length) throw new Error(`${what}: ${bytes.length - p} trailing bytes after the last tag`);
  return tags;
}

// ---------------------------------------------------------------------------------------------
// Format 2

export interface Format2Series {
  name: string;
  /** Ascending integers 0..2^53-1; a repeated timestamp keeps its last value. */
  timestamps: Float64Array;
  values: Float64Array;
  /** Points to use from the front of the arrays; defaults to timestamps.length. */
  count?: number;
}

/** Sorted, duplicate-free union of two ascending arrays. */
function mergeUnique(a: Float64Array, b: Float64Array): Float64Array {
  const out = new Float64Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  let last = NaN; // differs from every timestamp
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    const t = x <= y ? x : y;
    if (x <= y) i++;
    if (y <= x) j++;
    if (t !== last) out[n++] = last = t;
  }
  for (; i < a.length; i++) if (a[i] !== last) out[n++] = last = a[i]!;
  for (; j < b.length; j++) if (b[j] !== last) out[n++] = last = b[j]!;
  return out.subarray(0, n);
}

/**
 * Sorted union of every series' timestamps: a k-way merge done as a balanced tree of two-way
 * merges (log2 k linear passes). Tight typed-array loops beat a heap here, and tags that share
 * timestamps, the usual case, shrink to one array after the first pass.
 */
function unionTimestamps(series: readonly Format2Series[], counts: readonly number[]): Float64Array {
  let level = series.map((s, i) => s.timestamps.subarray(0, counts[i]));
  if (level.length === 0) return new Float64Array(0);
  if (level.length === 1) return mergeUnique(level[0]!, new Float64Array(0));
  while (level.length > 1) {
    const next: Float64Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(mergeUnique(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return level[0]!;
}

/** Encodes series as a format 2 body; values are cast to f32. */
export function encodeFormat2(series: readonly Format2Series[]): Uint8Array {
  const what = 'encodeFormat2';
  if (series.length > MAX_U32) throw new RangeError(`${what}: too many tags`);
  const counts = series.map((s) => {
    const c = s.count ?? s.timestamps.length;
    if (!Number.isInteger(c) || c < 0 || c > s.timestamps.length || c > s.values.length) {
      throw new RangeError(`${what}: count ${c} of tag ${JSON.stringify(s.name)} exceeds its arrays`);
    }
    for (let i = 1; i < c; i++) {
      if (!(s.timestamps[i]! >= s.timestamps[i - 1]!)) {
        throw new RangeError(`${what}: timestamps of tag ${JSON.stringify(s.name)} are not ascending at ${i}`);
      }
    }
    return c;
  });
  const names = series.map((s) => encodeName(s.name, what));
  const union = unionTimestamps(series, counts);
  const rows = union.length;
  if (rows > MAX_U32) throw new RangeError(`${what}: too many rows`);
  const bitmapBytes = Math.ceil(rows / 8);

  let size = 16 + rows * 8;
  for (const name of names) size += pad8(2 + name.length) + pad8(bitmapBytes) + pad8(rows * 4);
  // A fresh buffer is zero-filled, which provides every padding byte and every invalid value.
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC_2, true);
  view.setUint32(4, series.length, true);
  view.setUint32(8, rows, true);
  // The fresh buffer is aligned, so the arrays are written through host-order typed views
  // (much faster than a DataView per element) and swapped afterwards on a big-endian host.
  const halves = new Uint32Array(out.buffer, 16, rows * 2);
  for (let r = 0; r < rows; r++) {
    const t = union[r]!;
    halves[2 * r] = t >>> 0;
    halves[2 * r + 1] = Math.floor(t / TWO_POW_32);
  }
  if (!HOST_LE) swapToLittleEndian(out, 16, rows, 8);
  let p = 16 + rows * 8;
  for (let s = 0; s < series.length; s++) {
    const name = names[s]!;
    view.setUint16(p, name.length, true);
    out.set(name, p + 2);
    const bitmapAt = pad8(p + 2 + name.length);
    const valuesAt = pad8(bitmapAt + bitmapBytes);
    const f32 = new Float32Array(out.buffer, valuesAt, rows);
    const { timestamps, values } = series[s]!;
    const count = counts[s]!;
    // Both sides are sorted, so one forward walk over the rows places every point.
    let row = 0;
    for (let i = 0; i < count; i++) {
      const t = timestamps[i]!;
      while (union[row]! < t) row++;
      out[bitmapAt + (row >> 3)] |= 1 << (row & 7);
      f32[row] = values[i]!;
    }
    if (!HOST_LE) swapToLittleEndian(out, valuesAt, rows, 4);
    p = pad8(valuesAt + rows * 4);
  }
  return out;
}

/** Reverses the bytes of `count` elements of `width` bytes starting at `at`. */
function swapToLittleEndian(bytes: Uint8Array, at: number, count: number, width: number): void {
  for (let e = at, end = at + count * width; e < end; e += width) bytes.subarray(e, e + width).reverse();
}

export interface Format2Tag {
  name: string;
  /** Validity bitmap, ceil(rows/8) bytes; read it with isValid. */
  valid: Uint8Array;
  /** One f32 per row, 0 where the tag has no value. */
  values: Float32Array;
}

export interface Format2Result {
  /**
   * The row timestamps. decodeFormat2 gives a BigUint64Array (the u64s as stored); convert with
   * timestampsAsNumbers when numbers are wanted.
   */
  timestamps: BigUint64Array | Float64Array;
  tags: Format2Tag[];
}

/**
 * Decodes a format 2 body. On a little-endian host with bytes.byteOffset a multiple of 8 (true
 * for a fetched ArrayBuffer or a fresh Uint8Array), every array is a view into bytes.buffer and
 * nothing is copied; otherwise the body is copied once so the views can be aligned.
 */
export function decodeFormat2(bytes: Uint8Array): Format2Result {
  const what = 'format 2';
  const need = (at: number, n: number, part: string): void => {
    if (at + n > bytes.length) throw new Error(`${what}: truncated ${part} at byte ${at} (body is ${bytes.length} bytes)`);
  };
  need(0, 16, 'header');
  const body = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (view.getUint32(0, true) !== MAGIC_2) throw new Error(`${what}: magic is not "HSB2"`);
  const tagCount = view.getUint32(4, true);
  const rows = view.getUint32(8, true);
  const bitmapBytes = Math.ceil(rows / 8);
  need(16, rows * 8, 'timestamps');
  const timestamps = HOST_LE
    ? new BigUint64Array(body.buffer, body.byteOffset + 16, rows)
    : BigUint64Array.from({ length: rows }, (_, r) => view.getBigUint64(16 + r * 8, true));
  let p = 16 + rows * 8;
  const tags: Format2Tag[] = [];
  for (let t = 0; t < tagCount; t++) {
    need(p, 2, 'name length');
    const nameLength = view.getUint16(p, true);
    need(p + 2, nameLength, 'tag name');
    const name = decodeName(body, p + 2, nameLength, what);
    const bitmapAt = pad8(p + 2 + nameLength);
    const valuesAt = pad8(bitmapAt + bitmapBytes);
    const end = pad8(valuesAt + rows * 4);
    need(bitmapAt, end - bitmapAt, `bitmap and values of tag ${JSON.stringify(name)}`);
    const valid = body.subarray(bitmapAt, bitmapAt + bitmapBytes);
    const values = HOST_LE
      ? new Float32Array(body.buffer, body.byteOffset + valuesAt, rows)
      : Float32Array.from({ length: rows }, (_, r) => view.getFloat32(valuesAt + r * 4, true));
    tags.push({ name, valid, values });
    p = end;
  }
  if (p !== bytes.length) throw new Error(`${what}: ${bytes.length - p} trailing bytes after the last tag`);
  return { timestamps, tags };
}

/** Whether row `row` of a format 2 validity bitmap is set. */
export function isValid(bitmap: Uint8Array, row: number): boolean {
  return ((bitmap[row >> 3]! >> (row & 7)) & 1) === 1;
}

/** Row timestamps as numbers (exact up to 2^53); a Float64Array is returned as it is. */
export function timestampsAsNumbers(timestamps: BigUint64Array | Float64Array): Float64Array {
  if (timestamps instanceof Float64Array) return timestamps;
  const out = new Float64Array(timestamps.length);
  if (HOST_LE) {
    // Two u32 halves avoid a BigInt conversion per row.
    const halves = new Uint32Array(timestamps.buffer, timestamps.byteOffset, timestamps.length * 2);
    for (let i = 0; i < out.length; i++) out[i] = halves[2 * i]! + halves[2 * i + 1]! * TWO_POW_32;
  } else {
    for (let i = 0; i < out.length; i++) out[i] = Number(timestamps[i]!);
  }
  return out;
}
