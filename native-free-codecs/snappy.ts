/**
 * Snappy, the block format (not the framing format): what Prometheus remote write and remote
 * read put around their protobuf bodies (`Content-Encoding: snappy`). Pure TypeScript: runs in
 * a browser.
 *
 * A block is a varint preamble (the uncompressed length, at most 2^32 - 1), then elements until
 * the input ends. The low two bits of an element's tag byte give its kind:
 *
 *   00 literal   length - 1 in the upper six bits when below 60; 60..63 say that 1..4 bytes
 *                (little-endian) of length - 1 follow. Then the literal bytes.
 *   01 copy      length 4..11 in bits 2..4 (+ 4), offset bits 8..10 in bits 5..7, one byte of
 *                offset bits 0..7.
 *   10 copy      length 1..64 in the upper six bits (+ 1), two bytes of offset (LE).
 *   11 copy      length 1..64 as above, four bytes of offset (LE).
 *
 * A copy repeats `length` bytes starting `offset` bytes back in the output; offset 0 and offsets
 * before the start are corrupt, and a copy may overlap what it writes (offset < length repeats a
 * pattern). The output must come to exactly the preamble's length.
 *
 * The decoder is written for untrusted input: it checks the preamble against the caller's limit
 * before it allocates anything (a 10-byte body may claim 4 GiB), and every element against both
 * the input and the declared length, so nothing is ever read or written out of bounds.
 */

/** Why a snappy block was refused: `corrupt` (HTTP 400) or `too-large` (413, the preamble passes the caller's limit). */
export class SnappyError extends Error {
  readonly kind: 'corrupt' | 'too-large';
  /** What the preamble claims, for `too-large`. */
  readonly claimedBytes: number;

  constructor(kind: 'corrupt' | 'too-large', message: string, claimedBytes = 0) {
    super(message);
    this.name = 'SnappyError';
    this.kind = kind;
    this.claimedBytes = claimedBytes;
  }
}

function corrupt(message: string): never {
  throw new SnappyError('corrupt', `snappy: ${message}`);
}

/** The preamble: the uncompressed length and where the elements start. */
function preamble(bytes: Uint8Array): { length: number; start: number } {
  let length = 0;
  for (let i = 0; i < 5; i++) {
    if (i >= bytes.length) corrupt(bytes.length === 0 ? 'empty input (no length preamble)' : 'truncated length preamble');
    const b = bytes[i];
    length += (b & 0x7f) * 2 ** (7 * i);
    if (b < 0x80) {
      if (length > 0xffffffff) corrupt(`length preamble ${length} is above 2^32 - 1`);
      return { length, start: i + 1 };
    }
  }
  return corrupt('length preamble longer than 5 bytes');
}

/** The uncompressed length a snappy block declares (its preamble), without decoding it. */
export function snappyUncompressedLength(bytes: Uint8Array): number {
  return preamble(bytes).length;
}

/** Below this many bytes a plain loop beats set()/copyWithin(), which allocate or call out. */
const SHORT_COPY = 24;

/**
 * Decodes a snappy block. Throws SnappyError `too-large` (naming the claimed size) when the
 * preamble claims more than `maxBytes`, before allocating, and `corrupt` for anything that is
 * not a valid block: truncated elements, copies from before the start, output past the
 * declared length or short of it.
 */
export function snappyDecompress(bytes: Uint8Array, maxBytes: number): Uint8Array {
  const { length, start } = preamble(bytes);
  if (length > maxBytes) {
    throw new SnappyError('too-large', `snappy: the body claims ${length} bytes uncompressed, more than the limit of ${maxBytes}`, length);
  }
  const out = new Uint8Array(length);
  const end = bytes.length;
  let ip = start;
  let op = 0;
  while (ip < end) {
    const tag = bytes[ip++];
    const kind = tag & 3;
    if (kind === 0) {
      let n = tag >>> 2;
      if (n >= 60) {
        const extra = n - 59;
        if (ip + extra > end) corrupt(`truncated literal length at byte ${ip - 1}`);
        n = bytes[ip];
        if (extra > 1) n |= bytes[ip + 1] << 8;
        if (extra > 2) n |= bytes[ip + 2] << 16;
        if (extra > 3) n += bytes[ip + 3] * 0x1000000;
        ip += extra;
      }
      n += 1;
      if (n > end - ip) corrupt(`literal of ${n} bytes at byte ${ip} runs past the end of the input (${end} bytes)`);
      if (n > length - op) corrupt(`literal of ${n} bytes makes more than the declared ${length} bytes`);
      if (n < SHORT_COPY) for (let k = 0; k < n; k++) out[op + k] = bytes[ip + k];
      else out.set(bytes.subarray(ip, ip + n), op);
      ip += n;
      op += n;
      continue;
    }
    let n: number;
    let offset: number;
    if (kind === 1) {
      if (ip >= end) corrupt(`truncated copy at byte ${ip - 1}`);
      n = 4 + ((tag >>> 2) & 7);
      offset = ((tag >>> 5) << 8) | bytes[ip];
      ip += 1;
    } else if (kind === 2) {
      if (ip + 2 > end) corrupt(`truncated copy at byte ${ip - 1}`);
      n = 1 + (tag >>> 2);
      offset = bytes[ip] | (bytes[ip + 1] << 8);
      ip += 2;
    } else {
      if (ip + 4 > end) corrupt(`truncated copy at byte ${ip - 1}`);
      n = 1 + (tag >>> 2);
      offset = (bytes[ip] | (bytes[ip + 1] << 8) | (bytes[ip + 2] << 16)) + bytes[ip + 3] * 0x1000000;
      ip += 4;
    }
    if (offset === 0 || offset > op) corrupt(`copy offset ${offset} at output byte ${op} reaches before the start of the output`);
    if (n > length - op) corrupt(`copy of ${n} bytes makes more than the declared ${length} bytes`);
    const from = op - offset;
    // An overlapping copy (offset < n) repeats a pattern: byte by byte, each read sees the bytes just written.
    if (offset < n || n < SHORT_COPY) for (let k = 0; k < n; k++) out[op + k] = out[from + k];
    else out.copyWithin(op, from, from + n);
    op += n;
  }
  if (op !== length) corrupt(`the elements make ${op} bytes, the preamble declares ${length}`);
  return out;
}

// ---- compression ---------------------------------------------------------------------------

/** The compressor works on fragments of 64 KiB, so every copy offset fits two bytes. */
const FRAGMENT_BYTES = 1 << 16;
const HASH_BITS = 14;
/** Bytes at a fragment's end where no match starts (room to read 4 bytes ahead without checks). */
const INPUT_MARGIN = 15;

/** The most bytes snappyCompress can produce for `n` input bytes. */
export function snappyMaxCompressedLength(n: number): number {
  return 32 + n + Math.floor(n / 6);
}

function load32(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
}

function hash4(x: number): number {
  return Math.imul(x, 0x1e35a7bd) >>> (32 - HASH_BITS);
}

function writeVarint(out: Uint8Array, op: number, value: number): number {
  while (value >= 0x80) {
    out[op++] = (value & 0x7f) | 0x80;
    value = Math.floor(value / 128);
  }
  out[op++] = value;
  return op;
}

function emitLiteral(input: Uint8Array, from: number, to: number, out: Uint8Array, op: number): number {
  const n = to - from - 1;
  if (n < 60) out[op++] = n << 2;
  else if (n < 0x100) {
    out[op++] = 60 << 2;
    out[op++] = n;
  } else if (n < 0x10000) {
    out[op++] = 61 << 2;
    out[op++] = n & 0xff;
    out[op++] = n >>> 8;
  } else if (n < 0x1000000) {
    out[op++] = 62 << 2;
    out[op++] = n & 0xff;
    out[op++] = (n >>> 8) & 0xff;
    out[op++] = n >>> 16;
  } else {
    out[op++] = 63 << 2;
    out[op++] = n & 0xff;
    out[op++] = (n >>> 8) & 0xff;
    out[op++] = (n >>> 16) & 0xff;
    out[op++] = n >>> 24;
  }
  if (to - from < SHORT_COPY) for (let k = from; k < to; k++) out[op++] = input[k];
  else {
    out.set(input.subarray(from, to), op);
    op += to - from;
  }
  return op;
}

/** A copy of `n` >= 4 bytes from `offset` < 65536 back, as one or more copy elements. */
function emitCopy(out: Uint8Array, op: number, offset: number, n: number): number {
  // Long matches go out 64 bytes at a time; one of 60 keeps the rest at 4 or more (a 1-byte-offset copy needs 4).
  while (n >= 68) {
    out[op++] = 2 | (63 << 2);
    out[op++] = offset & 0xff;
    out[op++] = offset >>> 8;
    n -= 64;
  }
  if (n > 64) {
    out[op++] = 2 | (59 << 2);
    out[op++] = offset & 0xff;
    out[op++] = offset >>> 8;
    n -= 60;
  }
  if (n < 12 && offset < 2048) {
    out[op++] = 1 | ((n - 4) << 2) | ((offset >>> 8) << 5);
    out[op++] = offset & 0xff;
  } else {
    out[op++] = 2 | ((n - 1) << 2);
    out[op++] = offset & 0xff;
    out[op++] = offset >>> 8;
  }
  return op;
}

/**
 * One fragment [start, end) of the input: a hash table of the 4-byte sequences seen (positions
 * relative to the fragment) finds earlier occurrences; the bytes between matches go out as
 * literals. Where nothing matches for a while, the lookups spread out (every 32 misses add a
 * byte of stride), so incompressible input costs little.
 */
function compressFragment(input: Uint8Array, start: number, end: number, out: Uint8Array, op: number, table: Uint16Array): number {
  let nextEmit = start;
  if (end - start >= INPUT_MARGIN + 1) {
    table.fill(0);
    const ipLimit = end - INPUT_MARGIN;
    let ip = start + 1;
    let candidate = 0;
    search: for (;;) {
      let skip = 32;
      let nextIp = ip;
      do {
        ip = nextIp;
        nextIp = ip + (skip++ >>> 5);
        if (nextIp > ipLimit) break search;
        const h = hash4(load32(input, ip));
        candidate = start + table[h];
        table[h] = ip - start;
      } while (load32(input, ip) !== load32(input, candidate));
      op = emitLiteral(input, nextEmit, ip, out, op);
      // Copies, as long as the byte after each match starts another one.
      do {
        let a = candidate + 4;
        let b = ip + 4;
        while (b < end && input[a] === input[b]) {
          a++;
          b++;
        }
        op = emitCopy(out, op, ip - candidate, b - ip);
        ip = b;
        nextEmit = ip;
        if (ip >= ipLimit) break search;
        table[hash4(load32(input, ip - 1))] = ip - 1 - start;
        const h = hash4(load32(input, ip));
        candidate = start + table[h];
        table[h] = ip - start;
      } while (load32(input, ip) === load32(input, candidate));
      ip++;
    }
  }
  if (nextEmit < end) op = emitLiteral(input, nextEmit, end, out, op);
  return op;
}

/** Compresses `input` as one snappy block (readable by any snappy decoder). */
export function snappyCompress(input: Uint8Array): Uint8Array {
  if (input.length > 0xffffffff) throw new RangeError(`snappyCompress: ${input.length} bytes is more than a block holds (2^32 - 1)`);
  const out = new Uint8Array(snappyMaxCompressedLength(input.length));
  let op = writeVarint(out, 0, input.length);
  const table = new Uint16Array(1 << HASH_BITS);
  for (let start = 0; start < input.length; start += FRAGMENT_BYTES) {
    op = compressFragment(input, start, Math.min(input.length, start + FRAGMENT_BYTES), out, op, table);
  }
  return out.slice(0, op);
}
