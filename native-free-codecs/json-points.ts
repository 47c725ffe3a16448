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

/** "0000".."9999" as ASCII byte quadruples (40 KB): the low 8 digits of a timestamp in two reads. */
const DIGIT_QUADS = new Uint8Array(40000);
for (let i = 0; i < 10000; i++) {
  DIGIT_QUADS[i * 4] = 0x30 + Math.floor(i / 1000);
  DIGIT_QUADS[i * 4 + 1] = 0x30 + (Math.floor(i / 100) % 10);
  DIGIT_QUADS[i * 4 + 2] = 0x30 + (Math.floor(i / 10) % 10);
  DIGIT_QUADS[i * 4 + 3] = 0x30 + (i % 10);
}

/** "00".."99" as ASCII byte pairs. */
const DIGIT_PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  DIGIT_PAIRS[i * 2] = ZERO + Math.floor(i / 10);
  DIGIT_PAIRS[i * 2 + 1] = ZERO + (i % 10);
}

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
    // One reservation for the whole run (a point is at most 2 + 16 + 1 + 25 + 1 bytes), then
    // a local buffer and position: field writes per byte were a third of the encode time.
    this.ensure((to - from) * MAX_POINT_BYTES);
    const buf = this.buf;
    const head = this.head;
    let p = this.len;
    // Epoch-ms timestamps share their digits above 10^8 for 27 hours at a time:
    // those are formatted once per run and copied, the low eight come from the table.
    let headOf = -1;
    let headLength = 0;
    for (let i = from; i < to; i++) {
      if (i > from || leadingComma) buf[p++] = COMMA;
      buf[p++] = OPEN;
      const t = ts[i];
      if (t < 2147483648) p = writeSmall(buf, p, t);
      else {
        const high = Math.floor(t / 100000000);
        if (high !== headOf) {
          headOf = high;
          headLength = writeInteger(head, 0, high);
        }
        for (let j = 0; j < headLength; j++) buf[p++] = head[j];
        p = writeEightDigits(buf, p, t - high * 100000000);
      }
      buf[p++] = COMMA;
      p = writeValue(buf, p, values[i]);
      buf[p++] = CLOSE;
    }
    this.len = p;
  }

  /** Scratch for the shared leading digits of a run of timestamps. */
  private readonly head = new Uint8Array(16);

  /** `[ts,value]`, for last values. */
  pair(ts: number, value: number): void {
    this.ensure(MAX_POINT_BYTES);
    const buf = this.buf;
    let p = this.len;
    buf[p++] = OPEN;
    p = writeInteger(buf, p, ts);
    buf[p++] = COMMA;
    p = writeValue(buf, p, value);
    buf[p++] = CLOSE;
    this.len = p;
  }

  ascii(text: string): void {
    this.ensure(text.length);
    for (let i = 0; i < text.length; i++) this.buf[this.len++] = text.charCodeAt(i);
  }
}

const MAX_POINT_BYTES = 48;

/** Writes `v` as JSON.stringify would at `p`; returns the position after it. */
function writeValue(buf: Uint8Array, p: number, v: number): number {
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
  p = writeSmall(buf, p, whole);
  if (cents !== 0) {
    buf[p++] = DOT;
    buf[p++] = DIGIT_PAIRS[cents * 2];
    if (cents % 10 !== 0) buf[p++] = DIGIT_PAIRS[cents * 2 + 1];
  }
  return p;
}

const MAX_CENTS = 2147483648 * 100;

function writeAscii(buf: Uint8Array, p: number, text: string): number {
  for (let i = 0; i < text.length; i++) buf[p++] = text.charCodeAt(i);
  return p;
}

/**
 * A non-negative integer below 2^53. Two digits per step from a table, in
 * 32-bit integer arithmetic: epoch-ms timestamps are split into the part
 * above 10^8 and 8 zero-padded digits below it. (Digit-by-digit float
 * division cost 130 ns a point in raw JSON queries, bench:ingest profile.)
 */
function writeInteger(buf: Uint8Array, p: number, n: number): number {
  if (n < 2147483648) return writeSmall(buf, p, n);
  const high = Math.floor(n / 100000000);
  p = writeSmall(buf, p, high);
  return writeEightDigits(buf, p, n - high * 100000000);
}

/** 0 <= n < 2^31. */
function writeSmall(buf: Uint8Array, p: number, n: number): number {
  const digits = n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10000 ? 4 : n < 100000 ? 5 : n < 1000000 ? 6 : n < 10000000 ? 7 : n < 100000000 ? 8 : n < 1000000000 ? 9 : 10;
  const end = p + digits;
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

/** Exactly eight digits, zero-padded; 0 <= n < 10^8: two table lookups of four digits. */
function writeEightDigits(buf: Uint8Array, p: number, n: number): number {
  const high = ((n / 10000) | 0) * 4;
  const low = (n % 10000) * 4;
  buf[p] = DIGIT_QUADS[high];
  buf[p + 1] = DIGIT_QUADS[high + 1];
  buf[p + 2] = DIGIT_QUADS[high + 2];
  buf[p + 3] = DIGIT_QUADS[high + 3];
  buf[p + 4] = DIGIT_QUADS[low];
  buf[p + 5] = DIGIT_QUADS[low + 1];
  buf[p + 6] = DIGIT_QUADS[low + 2];
  buf[p + 7] = DIGIT_QUADS[low + 3];
  return p + 8;
}

export const JSON_BYTES = { QUOTE, COMMA, COLON, OPEN, CLOSE, OPEN_OBJECT: 0x7b, CLOSE_OBJECT: 0x7d } as const;
