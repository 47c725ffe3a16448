// Writes query results as msgpack straight into a reusable buffer, the binary
// twin of JsonPointWriter: `{tag: [[ts, value], ...]}` for raw queries and
// `{tag: [ts, value] | null}` for last values, with no intermediate JS objects.
//
// Decoded, the output equals JSON.parse of the JSON answer (-0 aside):
// - timestamps below 2^32 use the smallest unsigned integer encoding
//   (positive fixint, uint8/16/32); larger ones (every epoch-ms timestamp)
//   are float64, which is exact below 2^53 and is what msgpackr's own packer
//   writes, so JavaScript decoders get plain numbers rather than BigInts;
// - values are always float64 (0xcb), so no value changes type with its size
//   and every written float64 survives exactly;
// - a non-finite value becomes nil, as JsonPointWriter writes null.
//
// A map or array header carries its count up front, so callers write the
// header first (the count of tags, or of points in [from, to)) and then the
// entries; that is what lets a shard stream one tag's fragment at a time.
// A method that throws (bad timestamp or count) may leave a partial entry:
// reset before reusing the writer.

import { GrowableBytes } from './byte-buffer.js';

const MAX_U32 = 0xffffffff;

const NIL = 0xc0;
const FLOAT64 = 0xcb;
const UINT8 = 0xcc;
const UINT16 = 0xcd;
const UINT32 = 0xce;
const STR8 = 0xd9;
const STR16 = 0xda;
const STR32 = 0xdb;
const ARRAY16 = 0xdc;
const ARRAY32 = 0xdd;
const MAP16 = 0xde;
const MAP32 = 0xdf;
const FIXARRAY_2 = 0x92; // every [ts, value] pair

const encoder = new TextEncoder();

export class MsgpackPointWriter extends GrowableBytes {
  constructor(initialCapacity = 1 << 16) {
    super(initialCapacity);
  }

  /** Header of a map of `count` entries; each entry is then a key and a value. */
  mapHeader(count: number): void {
    this.header(count, 0x80, MAP16, MAP32, 'map');
  }

  /** Header of an array of `count` elements. */
  arrayHeader(count: number): void {
    this.header(count, 0x90, ARRAY16, ARRAY32, 'array');
  }

  /** A UTF-8 string (tag names; lone surrogates become U+FFFD, as TextEncoder does). */
  str(s: string): void {
    const bytes = encoder.encode(s);
    const n = bytes.length;
    this.ensure(5 + n);
    const p = this.len;
    if (n < 32) {
      this.buf[p] = 0xa0 | n;
      this.len = p + 1;
    } else if (n <= 0xff) {
      this.buf[p] = STR8;
      this.buf[p + 1] = n;
      this.len = p + 2;
    } else if (n <= 0xffff) {
      this.buf[p] = STR16;
      this.view.setUint16(p + 1, n);
      this.len = p + 3;
    } else {
      if (n > MAX_U32) throw new RangeError(`MsgpackPointWriter: string of ${n} bytes is too long`);
      this.buf[p] = STR32;
      this.view.setUint32(p + 1, n);
      this.len = p + 5;
    }
    this.buf.set(bytes, this.len);
    this.len += n;
  }

  nil(): void {
    this.ensure(1);
    this.buf[this.len++] = NIL;
  }

  /** `[ts, value]`: ts an integer in 0..2^53-1, value a float64 (nil when not finite). */
  pair(ts: number, value: number): void {
    // A pair is at most 1 + 9 + 9 bytes.
    this.ensure(19);
    this.buf[this.len++] = FIXARRAY_2;
    this.writeTimestamp(ts);
    this.writeValue(value);
  }

  /** The pairs of points [from, to); write arrayHeader(to - from) before them. */
  points(ts: Float64Array, values: Float64Array, from: number, to: number): void {
    if (from < 0 || to < from || to > ts.length || to > values.length) {
      throw new RangeError(`MsgpackPointWriter: range ${from}..${to} outside the arrays`);
    }
    // One reservation for the whole range instead of one per point.
    this.ensure((to - from) * 19);
    for (let i = from; i < to; i++) {
      this.buf[this.len++] = FIXARRAY_2;
      this.writeTimestamp(ts[i]!);
      this.writeValue(values[i]!);
    }
  }

  private header(count: number, fix: number, code16: number, code32: number, what: string): void {
    if (!Number.isInteger(count) || count < 0 || count > MAX_U32) {
      throw new RangeError(`MsgpackPointWriter: ${what} count ${count} is not a u32`);
    }
    this.ensure(5);
    const p = this.len;
    if (count < 16) {
      this.buf[p] = fix | count;
      this.len = p + 1;
    } else if (count <= 0xffff) {
      this.buf[p] = code16;
      this.view.setUint16(p + 1, count);
      this.len = p + 3;
    } else {
      this.buf[p] = code32;
      this.view.setUint32(p + 1, count);
      this.len = p + 5;
    }
  }

  /** Smallest unsigned encoding; space is reserved by the caller. */
  private writeTimestamp(t: number): void {
    if (!(t >= 0 && Number.isSafeInteger(t))) {
      throw new RangeError(`MsgpackPointWriter: timestamp ${t} is not an integer in 0..2^53-1`);
    }
    const p = this.len;
    if (t < 0x80) {
      this.buf[p] = t;
      this.len = p + 1;
    } else if (t <= 0xff) {
      this.buf[p] = UINT8;
      this.buf[p + 1] = t;
      this.len = p + 2;
    } else if (t <= 0xffff) {
      this.buf[p] = UINT16;
      this.view.setUint16(p + 1, t);
      this.len = p + 3;
    } else if (t <= MAX_U32) {
      this.buf[p] = UINT32;
      this.view.setUint32(p + 1, t);
      this.len = p + 5;
    } else {
      // float64, not uint64: msgpackr (and so most JavaScript clients) decodes uint64 as a BigInt.
      this.buf[p] = FLOAT64;
      this.view.setFloat64(p + 1, t);
      this.len = p + 9;
    }
  }

  /** float64 big-endian, or nil where JSON would print null; space is reserved by the caller. */
  private writeValue(v: number): void {
    const p = this.len;
    if (!Number.isFinite(v)) {
      this.buf[p] = NIL;
      this.len = p + 1;
      return;
    }
    this.buf[p] = FLOAT64;
    this.view.setFloat64(p + 1, v);
    this.len = p + 9;
  }
}
