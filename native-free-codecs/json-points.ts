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

export class JsonPointWriter extends GrowableBytes {
  private readonly digits = new Uint8Array(24);

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
    for (let i = from; i < to; i++) {
      // A point is at most 2 + 16 + 1 + 25 + 1 bytes; reserve generously once per point.
      this.ensure(48);
      if (i > from || leadingComma) this.buf[this.len++] = COMMA;
      this.buf[this.len++] = OPEN;
      this.writeInteger(ts[i]);
      this.buf[this.len++] = COMMA;
      this.writeValue(values[i]);
      this.buf[this.len++] = CLOSE;
    }
  }

  /** `[ts,value]` or `null`, for last values. */
  pair(ts: number, value: number): void {
    this.ensure(48);
    this.buf[this.len++] = OPEN;
    this.writeInteger(ts);
    this.buf[this.len++] = COMMA;
    this.writeValue(value);
    this.buf[this.len++] = CLOSE;
  }

  ascii(text: string): void {
    this.ensure(text.length);
    for (let i = 0; i < text.length; i++) this.buf[this.len++] = text.charCodeAt(i);
  }

  private writeValue(v: number): void {
    if (!Number.isFinite(v)) {
      this.ascii('null'); // JSON cannot carry NaN/Infinity; the store never holds them
      return;
    }
    // Two-decimal fast path: when k/100 reproduces v exactly and |k| < 2^53,
    // the decimal k/100 is the unique shortest round-trip string of v (other
    // decimals with as few digits are at least 0.01 away, far beyond v's ulp),
    // hence what Number#toString prints.
    const k = Math.round(v * 100);
    if (k / 100 === v && k <= 9007199254740991 && k >= -9007199254740991) {
      let n = k;
      if (n < 0) {
        this.buf[this.len++] = MINUS;
        n = -n;
      }
      const whole = Math.floor(n / 100);
      const cents = n - whole * 100;
      this.writeInteger(whole);
      if (cents !== 0) {
        this.buf[this.len++] = DOT;
        const tens = Math.floor(cents / 10);
        const ones = cents - tens * 10;
        this.buf[this.len++] = ZERO + tens;
        if (ones !== 0) this.buf[this.len++] = ZERO + ones;
      }
      return;
    }
    this.ascii(String(v));
  }

  /** A non-negative integer below 2^53, digit by digit. */
  private writeInteger(n: number): void {
    if (n < 10) {
      this.buf[this.len++] = ZERO + n;
      return;
    }
    let count = 0;
    while (n >= 1) {
      const q = Math.floor(n / 10);
      this.digits[count++] = ZERO + (n - q * 10);
      n = q;
    }
    while (count > 0) this.buf[this.len++] = this.digits[--count];
  }
}

export const JSON_BYTES = { QUOTE, COMMA, COLON, OPEN, CLOSE, OPEN_OBJECT: 0x7b, CLOSE_OBJECT: 0x7d } as const;
