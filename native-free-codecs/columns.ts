/**
 * Column compression for sealed day files: one tag's sorted, deduplicated points become a
 * timestamp column and a value column, each a stream of varints. The storage worker lz4s the
 * result. Pure TypeScript (no Node built-ins) so a browser can decode a block too.
 *
 * Byte layout: COLUMNS.md beside this file. Any change to the bytes bumps COLUMN_CODEC_VERSION.
 *
 * Errors: encoders throw on input they cannot represent exactly. Decoders read through a
 * ByteReader whose errors are sticky (a read past the end yields 0 and records the first
 * failure), so the hot loops carry no exceptions; each public decode function checks the reader
 * once at its end and throws an Error naming the first failure.
 */

/** Version of the byte layout described in COLUMNS.md. */
export const COLUMN_CODEC_VERSION = 1;

/** A varint of a value below 2^56 never needs more than 8 bytes; more means corrupt input. */
const MAX_VARINT_BYTES = 8;

/** Growable byte buffer; reuse it across blocks with reset() to avoid reallocating. */
export class ByteWriter {
  private buf: Uint8Array;
  /** Bytes written so far. */
  length = 0;

  constructor(initialCapacity = 1024) {
    this.buf = new Uint8Array(Math.max(16, initialCapacity));
  }

  /** Forgets the content but keeps the buffer. */
  reset(): void {
    this.length = 0;
  }

  /** A view of the bytes written; valid until the next write or reset. */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  /** Makes room for n more bytes, doubling so appends stay amortised O(1). */
  ensure(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.length++] = v;
  }

  raw(src: Uint8Array): void {
    this.ensure(src.length);
    this.buf.set(src, this.length);
    this.length += src.length;
  }

  /** Unsigned LEB128 of an integer in 0..2^53 (exact: no 32-bit operator touches a large value). */
  uvarint(v: number): void {
    this.ensure(MAX_VARINT_BYTES);
    const buf = this.buf;
    let p = this.length;
    while (v >= 0x80000000) {
      buf[p++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    while (v > 0x7f) {
      buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[p++] = v;
    this.length = p;
  }

  /**
   * Zigzag signed varint of an integer with |v| <= 2^53. Zigzag maps v to 2m + s (s the sign
   * bit); 2m + s itself can exceed 2^53 and lose its low bit as a double, so the first byte is
   * built from m's low 6 bits and the sign, and the rest is m / 64 as plain LEB128 groups.
   * The bytes are identical to ordinary zigzag LEB128.
   */
  svarint(v: number): void {
    const s = v < 0 ? 1 : 0;
    const m = s === 1 ? -v - 1 : v;
    const rest = Math.floor(m / 64);
    const first = ((m % 64) << 1) | s;
    if (rest === 0) {
      this.u8(first);
      return;
    }
    this.u8(first | 0x80);
    this.uvarint(rest);
  }
}

/** Bounds-checked reader with a sticky error (see the file comment). */
export class ByteReader {
  pos: number;
  /** First failure, or null; once set, every read returns 0. */
  error: string | null = null;
  private readonly buf: Uint8Array;
  private readonly end: number;

  constructor(buf: Uint8Array, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  fail(message: string): void {
    if (this.error === null) this.error = `${message} at byte ${this.pos}`;
  }

  /** Throws the sticky error, if any, prefixed with what was being decoded. */
  check(what: string): void {
    if (this.error !== null) throw new Error(`${what}: ${this.error}`);
  }

  u8(): number {
    if (this.pos >= this.end) {
      this.fail('read past end');
      return 0;
    }
    return this.buf[this.pos++]!;
  }

  uvarint(): number {
    let b = this.u8();
    if (b < 0x80) return b;
    let v = b & 0x7f;
    let mul = 128;
    for (let i = 1; i < MAX_VARINT_BYTES; i++) {
      b = this.u8();
      v += (b & 0x7f) * mul;
      if (b < 0x80) {
        if (v > Number.MAX_SAFE_INTEGER + 1) this.fail('varint above 2^53');
        return v;
      }
      mul *= 128;
    }
    this.fail('varint longer than 8 bytes');
    return 0;
  }

  /** Inverse of ByteWriter.svarint. */
  svarint(): number {
    const b = this.u8();
    const s = b & 1;
    let m = (b >> 1) & 0x3f;
    if (b >= 0x80) m += this.uvarint() * 64;
    if (m > Number.MAX_SAFE_INTEGER + 1) this.fail('signed varint above 2^53');
    return s === 1 ? -m - 1 : m;
  }
}

// ---------------------------------------------------------------------------------------------
// Timestamps: first value, first delta, then delta-of-deltas with runs of zeros collapsed.

/**
 * Zero runs, shared by the timestamp delta-of-deltas and the scaled value deltas: a non-zero d
 * is written as svarint(d); a 0 byte is followed by a varint n and stands for n + 1 zeros.
 * svarint(d) never starts with a 0 byte for d != 0, so 0 is free to be the run marker.
 */
function writeZeroRun(w: ByteWriter, run: number): void {
  w.u8(0);
  w.uvarint(run - 1);
}

/**
 * Encodes `count` integer timestamps (0..2^53-1, non-decreasing). Regular series cost a
 * handful of bytes in total: the delta-of-deltas are all zero and collapse into one run.
 */
export function encodeTimestamps(ts: Float64Array, count: number, w: ByteWriter): void {
  if (count < 0 || count > ts.length) throw new RangeError(`encodeTimestamps: count ${count} outside 0..${ts.length}`);
  if (count === 0) return;
  let prev = ts[0]!;
  if (!Number.isSafeInteger(prev) || prev < 0) {
    throw new RangeError(`encodeTimestamps: timestamp ${prev} at 0 is not an integer in 0..2^53-1`);
  }
  w.uvarint(prev);
  let prevDelta = 0;
  let run = 0;
  for (let i = 1; i < count; i++) {
    const t = ts[i]!;
    // Sorted safe integers keep every delta in 0..2^53-1 and every delta-of-delta within
    // ±(2^53-1), so all arithmetic below is exact.
    if (!Number.isSafeInteger(t) || t < prev) {
      throw new RangeError(`encodeTimestamps: timestamp ${t} at ${i} is not an integer >= the previous one (${prev})`);
    }
    const delta = t - prev;
    if (i === 1) {
      w.svarint(delta);
    } else {
      const dod = delta - prevDelta;
      if (dod === 0) {
        run++;
      } else {
        if (run > 0) {
          writeZeroRun(w, run);
          run = 0;
        }
        w.svarint(dod);
      }
    }
    prevDelta = delta;
    prev = t;
  }
  if (run > 0) writeZeroRun(w, run);
}

/** Decodes `count` timestamps into out[0..count). Throws if the bytes are short or corrupt. */
export function decodeTimestamps(r: ByteReader, count: number, out: Float64Array): void {
  if (count < 0 || count > out.length) throw new RangeError(`decodeTimestamps: count ${count} outside 0..${out.length}`);
  if (count === 0) return;
  let prev = r.uvarint();
  out[0] = prev;
  if (count > 1) {
    let delta = r.svarint();
    prev += delta;
    out[1] = prev;
    let i = 2;
    while (i < count && r.error === null) {
      const dod = r.svarint();
      if (dod === 0) {
        const run = r.uvarint() + 1;
        if (run > count - i) {
          r.fail(`zero run of ${run} exceeds the ${count - i} timestamps left`);
          break;
        }
        for (const end = i + run; i < end; i++) {
          prev += delta;
          out[i] = prev;
        }
      } else {
        delta += dod;
        prev += delta;
        out[i++] = prev;
      }
    }
  }
  r.check('decodeTimestamps');
}

// ---------------------------------------------------------------------------------------------
// Values: decimal-scaled integers when exact, otherwise XOR of float64 bits.

/** Header byte: high nibble is the mode, low nibble the decimal scale k (scaled mode only). */
export const VALUES_MODE_SCALED = 1;
export const VALUES_MODE_FLOAT = 2;
const MAX_SCALE = 9;
/** Scaled integers stay within ±2^52 so every delta (|d| <= 2^53) is still exact. */
const SCALED_LIMIT = 2 ** 52;
const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/**
 * The integer that v becomes at scale k, or NaN when v is not exactly int / 10^k. Decoding
 * divides by 10^k (an exact double), and a correctly rounded division gives back the same
 * double as the decimal text the value came from; Object.is rejects -0 (the `+ 0` turns the
 * integer into +0) and NaN cannot pass the range check.
 */
function scaledInt(v: number, k: number): number {
  const p = POW10[k]!;
  const n = Math.round(v * p) + 0;
  if (!(Math.abs(n) <= SCALED_LIMIT)) return NaN;
  return Object.is(n / p, v) ? n : NaN;
}

/** Smallest scale that makes every value an exact integer, or -1 when none does. */
function chooseScale(values: Float64Array, count: number): number {
  let k = 0;
  for (let i = 0; i < count; i++) {
    const v = values[i]!;
    while (Number.isNaN(scaledInt(v, k))) {
      if (++k > MAX_SCALE) return -1;
    }
  }
  // A value that fitted a smaller k almost always fits a larger one too; confirm rather than
  // assume (range limit, rounding), and give up on scaling if it does not.
  if (k > 0) {
    for (let i = 0; i < count; i++) if (Number.isNaN(scaledInt(values[i]!, k))) return -1;
  }
  return k;
}

/** Views a Float64Array's bits as 32-bit halves; LO/HI pick the halves on this host. */
function bitsView(a: Float64Array, count: number): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, count * 2);
}
// Every engine in use is little-endian; the check keeps the stored bytes the same elsewhere.
const LO = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 0 : 1;
const HI = 1 - LO;

/**
 * Encodes `count` float64 values exactly. Scaled mode when some k in 0..9 makes every value an
 * exact decimal integer (sensor readings with few decimals, setpoints, states, counters);
 * float mode otherwise (NaN, ±Infinity, -0, full-precision doubles), which keeps every bit,
 * NaN payloads included.
 */
export function encodeValues(values: Float64Array, count: number, w: ByteWriter): void {
  if (count < 0 || count > values.length) throw new RangeError(`encodeValues: count ${count} outside 0..${values.length}`);
  if (count === 0) return;
  const k = chooseScale(values, count);
  if (k >= 0) encodeScaled(values, count, k, w);
  else encodeFloat(values, count, w);
}

function encodeScaled(values: Float64Array, count: number, k: number, w: ByteWriter): void {
  w.u8((VALUES_MODE_SCALED << 4) | k);
  let prev = scaledInt(values[0]!, k);
  w.svarint(prev);
  let run = 0;
  for (let i = 1; i < count; i++) {
    const n = scaledInt(values[i]!, k);
    const d = n - prev;
    if (d === 0) {
      run++;
    } else {
      if (run > 0) {
        writeZeroRun(w, run);
        run = 0;
      }
      w.svarint(d);
    }
    prev = n;
  }
  if (run > 0) writeZeroRun(w, run);
}

/**
 * Float mode, per value: x = bits XOR previous bits (the first value XORs with 0). A control
 * byte (lead << 4) | trail gives the zero bytes at the top and bottom of x, then the
 * 8 - lead - trail middle bytes follow, least significant first. x = 0 is written as lead 8 with
 * the low nibble holding repeats - 1, so up to 16 repeated values cost one byte.
 */
function encodeFloat(values: Float64Array, count: number, w: ByteWriter): void {
  w.u8(VALUES_MODE_FLOAT << 4);
  const bits = bitsView(values, count);
  let prevLo = 0;
  let prevHi = 0;
  let repeats = 0;
  for (let i = 0; i < count; i++) {
    const lo = bits[2 * i + LO]!;
    const hi = bits[2 * i + HI]!;
    const xLo = (lo ^ prevLo) >>> 0;
    const xHi = (hi ^ prevHi) >>> 0;
    prevLo = lo;
    prevHi = hi;
    if (xLo === 0 && xHi === 0) {
      if (++repeats === 16) {
        w.u8(0x8f);
        repeats = 0;
      }
      continue;
    }
    if (repeats > 0) {
      w.u8(0x80 | (repeats - 1));
      repeats = 0;
    }
    const lead = xHi !== 0 ? Math.clz32(xHi) >>> 3 : 4 + (Math.clz32(xLo) >>> 3);
    const trail = xLo !== 0 ? ctz32(xLo) >>> 3 : 4 + (ctz32(xHi) >>> 3);
    w.ensure(9);
    w.u8((lead << 4) | trail);
    for (let b = trail; b < 8 - lead; b++) w.u8(b < 4 ? (xLo >>> (8 * b)) & 0xff : (xHi >>> (8 * (b - 4))) & 0xff);
  }
  if (repeats > 0) w.u8(0x80 | (repeats - 1));
}

function ctz32(x: number): number {
  return x === 0 ? 32 : 31 - Math.clz32(x & -x);
}

/** Decodes `count` values into out[0..count). Throws if the bytes are short or corrupt. */
export function decodeValues(r: ByteReader, count: number, out: Float64Array): void {
  if (count < 0 || count > out.length) throw new RangeError(`decodeValues: count ${count} outside 0..${out.length}`);
  if (count === 0) return;
  const header = r.u8();
  const mode = header >> 4;
  const k = header & 0x0f;
  if (mode === VALUES_MODE_SCALED && k <= MAX_SCALE) decodeScaled(r, count, k, out);
  else if (mode === VALUES_MODE_FLOAT && k === 0) decodeFloat(r, count, out);
  else r.fail(`unknown values header 0x${header.toString(16)}`);
  r.check('decodeValues');
}

function decodeScaled(r: ByteReader, count: number, k: number, out: Float64Array): void {
  const p = POW10[k]!;
  let n = r.svarint();
  out[0] = n / p;
  let i = 1;
  while (i < count && r.error === null) {
    const d = r.svarint();
    if (d === 0) {
      const run = r.uvarint() + 1;
      if (run > count - i) {
        r.fail(`zero run of ${run} exceeds the ${count - i} values left`);
        return;
      }
      const v = n / p;
      out.fill(v, i, i + run);
      i += run;
    } else {
      n += d;
      out[i++] = n / p;
    }
  }
}

function decodeFloat(r: ByteReader, count: number, out: Float64Array): void {
  // Writing the halves straight into out's bytes keeps NaN payloads that a number would lose.
  const bits = bitsView(out, count);
  let lo = 0;
  let hi = 0;
  let i = 0;
  while (i < count && r.error === null) {
    const control = r.u8();
    const lead = control >> 4;
    const trail = control & 0x0f;
    if (lead === 8) {
      const repeats = trail + 1;
      if (repeats > count - i) {
        r.fail(`repeat of ${repeats} exceeds the ${count - i} values left`);
        return;
      }
      for (const end = i + repeats; i < end; i++) {
        bits[2 * i + LO] = lo;
        bits[2 * i + HI] = hi;
      }
      continue;
    }
    if (lead + trail >= 8) {
      r.fail(`bad float control byte 0x${control.toString(16)}`);
      return;
    }
    let xLo = 0;
    let xHi = 0;
    for (let b = trail; b < 8 - lead; b++) {
      const byte = r.u8();
      if (b < 4) xLo |= byte << (8 * b);
      else xHi |= byte << (8 * (b - 4));
    }
    lo = (lo ^ xLo) >>> 0;
    hi = (hi ^ xHi) >>> 0;
    bits[2 * i + LO] = lo;
    bits[2 * i + HI] = hi;
    i++;
  }
}
