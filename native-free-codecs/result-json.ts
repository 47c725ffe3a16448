// Writes query results as JSON bytes straight into a reusable buffer:
// `"tag":[[ts,value],...]`. No per-point strings: timestamps are written digit
// by digit, and values too when they have at most two decimals (the common
// industrial case), which is exactly what JSON.stringify would print (see
// writeValue). Other values fall back to Number#toString, which is the
// shortest round-trip form, the same as JSON.stringify.

import { GrowableBytes } from './byte-buffer.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;

const encoder = new TextEncoder();

/**
 * "0000".."9999" as ASCII quadruples packed little-endian into one 32-bit word each (40 KB):
 * four digits go out in one unaligned store, and the last d of them are `QUADS[n] >>> 8 * (4 - d)`.
 * One store per field instead of one per byte halved the encode time of raw JSON queries.
 */
const QUADS = new Uint32Array(10000);
for (let i = 0; i < 10000; i++) {
  const digit = (place: number) => ZERO + (Math.floor(i / place) % 10);
  QUADS[i] = digit(1000) | (digit(100) << 8) | (digit(10) << 16) | (digit(1) << 24);
}

/** ".dd" for cents 0..99 packed like QUADS (the fourth byte is zero and gets overwritten). */
const CENTS = new Uint32Array(100);
for (let i = 0; i < 100; i++) CENTS[i] = DOT | ((ZERO + Math.floor(i / 10)) << 8) | ((ZERO + (i % 10)) << 16);

/** "00".."99" as ASCII byte pairs. */
const DIGIT_PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  DIGIT_PAIRS[i * 2] = ZERO + Math.floor(i / 10);
  DIGIT_PAIRS[i * 2 + 1] = ZERO + (i % 10);
}

/** `,[` as one little-endian 16-bit store. */
const COMMA_OPEN = COMMA | (OPEN << 8);

export class JsonPointWriter extends GrowableBytes {
  constructor(initialCapacity = 1 << 16) {
    super(initialCapacity);
  }

  raw(byte: number): void {
    this.ensure(1);
    this.buf[this.len++] = byte;
  }

  /** `"name":` with JSON string escaping. */
  key(name: string): void {
    const quoted = encoder.encode(JSON.stringify(name));
    this.ensure(quoted.length + 1);
    this.buf.set(quoted, this.len);
    this.len += quoted.length;
    this.buf[this.len++] = COLON;
  }

  /** `[ts,value],[ts,value]...` for points [from, to); `leadingComma` when continuing an array. */
  points(ts: Float64Array, values: Float64Array, from: number, to: number, leadingComma: boolean): void {
    // One reservation for the whole run (MAX_POINT_BYTES covers a point and the up to three
    // bytes a 32-bit store may write past its field), then a local buffer, view and position:
    // field writes per byte were a third of the encode time.
    this.ensure((to - from) * MAX_POINT_BYTES);
    const buf = this.buf;
    const view = this.view;
    let p = this.len;
    // Epoch-ms timestamps share their digits above 10^8 for 27 hours at a time: those are
    // formatted once per run and stored as two words, the low eight digits are two QUADS.
    let headOf = -1;
    let headLength = 0;
    let headLow = 0;
    let headHigh = 0;
    for (let i = from; i < to; i++) {
      if (i > from || leadingComma) {
        view.setUint16(p, COMMA_OPEN, true);
        p += 2;
      } else buf[p++] = OPEN;
      const t = ts[i];
      if (t < 2147483648) p = writeSmall(buf, view, p, t);
      else {
        const high = Math.floor(t / 100000000);
        if (high !== headOf) {
          headOf = high;
          headLength = writeSmall(HEAD, HEAD_VIEW, 0, high);
          headLow = HEAD_VIEW.getUint32(0, true);
          headHigh = HEAD_VIEW.getUint32(4, true);
        }
        // high < 2^53 / 10^8 has at most eight digits; the bytes stored past them are overwritten.
        view.setUint32(p, headLow, true);
        view.setUint32(p + 4, headHigh, true);
        p += headLength;
        p = writeEightDigits(view, p, t - high * 100000000);
      }
      buf[p++] = COMMA;
      p = writeValue(buf, view, p, values[i]);
      buf[p++] = CLOSE;
    }
    this.len = p;
  }

  /** `[ts,value]`, for last values. */
  pair(ts: number, value: number): void {
    this.ensure(MAX_POINT_BYTES);
    const buf = this.buf;
    let p = this.len;
    buf[p++] = OPEN;
    p = writeInteger(buf, this.view, p, ts);
    buf[p++] = COMMA;
    p = writeValue(buf, this.view, p, value);
    buf[p++] = CLOSE;
    this.len = p;
  }

  ascii(text: string): void {
    this.ensure(text.length);
    for (let i = 0; i < text.length; i++) this.buf[this.len++] = text.charCodeAt(i);
  }
}

const MAX_POINT_BYTES = 48;

/** Scratch for the shared leading digits of a run of timestamps (workers are single-threaded). */
const HEAD = new Uint8Array(16);
const HEAD_VIEW = new DataView(HEAD.buffer);

/**
 * Writes `v` as JSON.stringify would at `p`; returns the position after it. Callers reserve
 * MAX_POINT_BYTES: it may store up to three bytes past the number. (The CSV writer uses it too.)
 */
export function writeValue(buf: Uint8Array, view: DataView, p: number, v: number): number {
  // Two-decimal fast path: when k/100 reproduces v exactly, the decimal k/100 is the unique
  // shortest round-trip string of v (other decimals with as few digits are at least 0.01 away,
  // far beyond v's ulp), hence what Number#toString prints. |k| < 2^31 · 100 keeps the whole
  // part in 32-bit arithmetic. NaN and the infinities fail one of the two tests.
  const k = Math.round(v * 100);
  if (k / 100 !== v || !(k < MAX_CENTS && k > -MAX_CENTS)) {
    return writeAscii(buf, p, Number.isFinite(v) ? String(v) : 'null'); // JSON cannot carry NaN/Infinity
  }
  let n = k;
  if (n < 0) {
    buf[p++] = MINUS;
    n = -n;
  }
  const whole = Math.floor(n / 100);
  const cents = n - whole * 100;
  p = writeSmall(buf, view, p, whole);
  if (cents !== 0) {
    view.setUint32(p, CENTS[cents], true);
    p += cents % 10 === 0 ? 2 : 3; // "x.5", not "x.50"
  }
  return p;
}

const MAX_CENTS = 2147483648 * 100;

function writeAscii(buf: Uint8Array, p: number, text: string): number {
  for (let i = 0; i < text.length; i++) buf[p++] = text.charCodeAt(i);
  return p;
}

/** A non-negative integer below 2^53 (a timestamp of `pair`, a CSV time); may store up to three bytes past it. */
export function writeInteger(buf: Uint8Array, view: DataView, p: number, n: number): number {
  if (n < 2147483648) return writeSmall(buf, view, p, n);
  const high = Math.floor(n / 100000000);
  p = writeSmall(buf, view, p, high);
  return writeEightDigits(view, p, n - high * 100000000);
}

/**
 * 0 <= n < 2^31, in 32-bit integer arithmetic; below 10^8 as one or two QUADS stores
 * (may write up to three bytes past the digits, inside the caller's reservation).
 */
function writeSmall(buf: Uint8Array, view: DataView, p: number, n: number): number {
  if (n < 10000) {
    const digits = n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : 4;
    view.setUint32(p, QUADS[n] >>> ((4 - digits) << 3), true);
    return p + digits;
  }
  if (n < 100000000) {
    const high = (n / 10000) | 0;
    const digits = high < 10 ? 1 : high < 100 ? 2 : high < 1000 ? 3 : 4;
    view.setUint32(p, QUADS[high] >>> ((4 - digits) << 3), true);
    view.setUint32(p + digits, QUADS[n - high * 10000], true);
    return p + digits + 4;
  }
  // Nine or ten digits: two per step from the pair table, written backwards.
  const end = p + (n < 1000000000 ? 9 : 10);
  let q = end;
  while (n >= 100) {
    const next = (n / 100) | 0;
    const r = (n - next * 100) * 2;
    buf[--q] = DIGIT_PAIRS[r + 1];
    buf[--q] = DIGIT_PAIRS[r];
    n = next;
  }
  if (n >= 10) {
    buf[--q] = DIGIT_PAIRS[n * 2 + 1];
    buf[--q] = DIGIT_PAIRS[n * 2];
  } else {
    buf[--q] = ZERO + n;
  }
  return end;
}

/** Exactly eight digits, zero-padded; 0 <= n < 10^8: two QUADS stores. */
function writeEightDigits(view: DataView, p: number, n: number): number {
  const high = (n / 10000) | 0;
  view.setUint32(p, QUADS[high], true);
  view.setUint32(p + 4, QUADS[n - high * 10000], true);
  return p + 8;
}
