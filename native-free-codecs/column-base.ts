/**
 * What the column codec's files share (columns.ts, column-rans.ts): the byte writer and reader,
 * varint sizes, the value modes' header ids, decimal powers and the encoder's integer scratch.
 * Pure TypeScript, no I/O. Byte layout: COLUMNS.md.
 */

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

  /** Appends src[0..n), all of src by default. */
  raw(src: Uint8Array, n = src.length): void {
    this.ensure(n);
    this.buf.set(n === src.length ? src : src.subarray(0, n), this.length);
    this.length += n;
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
  /** The bytes read from; bulk readers index it after reserving a range with take(). */
  readonly buf: Uint8Array;
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

  /**
   * Reserves the next n bytes for a caller that reads them from `buf` itself: returns their
   * start and moves past them, or records 'read past end' and returns -1 when fewer remain.
   */
  take(n: number): number {
    if (n > this.end - this.pos) {
      this.fail('read past end');
      return -1;
    }
    const at = this.pos;
    this.pos += n;
    return at;
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

/** Header byte: high nibble is the mode, low nibble the decimal scale k (scaled modes only). */
export const VALUES_MODE_SCALED = 1;
export const VALUES_MODE_FLOAT = 2;
/** Since codec version 2: the scaled integers' deltas bit-packed in frames (COLUMNS.md). */
export const VALUES_MODE_SCALED_PACKED = 3;
/** Since codec version 3: the scaled integers' deltas entropy-coded with one rANS table (COLUMNS.md). */
export const VALUES_MODE_SCALED_RANS = 4;
/** Since codec version 4: rANS-coded residuals of a mean of the previous 2^shift integers (COLUMNS.md). */
export const VALUES_MODE_SCALED_PREDICTED = 5;
export const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

// Encoder scratch, reused across calls (encoding is synchronous, so one set per thread is
// enough). Columns longer than SCRATCH_KEEP_POINTS get their own arrays for that call, so a
// rare huge column does not pin memory; sealed blocks are at most 16,384 points.
export const SCRATCH_KEEP_POINTS = 1 << 17;
let scratchInts = new Float64Array(0);

/** Scratch for `count` scaled integers (the encoder's, and mode 5's decoder's). */
export function intsFor(count: number): Float64Array {
  if (count > SCRATCH_KEEP_POINTS) return new Float64Array(count);
  if (scratchInts.length < count) scratchInts = new Float64Array(Math.min(SCRATCH_KEEP_POINTS, Math.max(count, 2 * scratchInts.length, 1024)));
  return scratchInts;
}

/** Bytes of uvarint(v), 0 <= v <= 2^53. */
export function uvarintLength(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Bytes of svarint(v), |v| <= 2^53 (see ByteWriter.svarint). */
export function svarintLength(v: number): number {
  const m = v < 0 ? -v - 1 : v;
  return m < 64 ? 1 : 1 + uvarintLength(Math.floor(m / 64));
}
