// Writes query results as JSON bytes straight into a reusable buffer:
// `"tag":[[ts,value],...]`. No per-point strings: timestamps are written digit
// by digit, and values too when they have at most four decimals (the common
// industrial case), which is exactly what JSON.stringify would print (see
// writeValue). Other values fall back to Number#toString, which is the
// shortest round-trip form, the same as JSON.stringify.

import { GrowableBytes } from './byte-buffer.js';
import { writeEightDigits, writeInteger, writeSmall, writeValue } from './number-text.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN = 0x5b;
const CLOSE = 0x5d;

const encoder = new TextEncoder();

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
