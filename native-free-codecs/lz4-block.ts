/**
 * LZ4, the block format, behind a 4-byte little-endian count of the bytes it decompresses to:
 * the compression of a sealed file's blocks (the "size prepended" block that lz4_flex, through
 * lz4-napi, wrote for them before this file existed; files written by either read with either).
 * Pure TypeScript, and it works in buffers the caller keeps: the native binding returned a new
 * Buffer for every block, tens of thousands per compaction, and the threads' allocator kept
 * what they freed (issue 34: about 50 MiB of free memory held in glibc's arenas in the soak).
 *
 * A block is a run of sequences. Each starts with a token byte: the high nibble is the literal
 * count, the low nibble the match length less 4; a nibble of 15 says that bytes follow adding to
 * it (each 255 adds and goes on, a byte below 255 adds and ends). Then the literals, then a
 * 2-byte little-endian offset (1..65535 back into the output) and the match length's extra
 * bytes. The last sequence ends after its literals. A match may overlap what it writes (offset
 * below its length repeats a pattern).
 *
 * The format's end rules, which fast decoders rely on: the last 5 bytes are literals, and the
 * last match starts at least 12 bytes before the end. The compressor keeps them; the decoder
 * does not need them, and checks every sequence against both the input and the declared
 * length instead, so a damaged block throws and nothing is read or written out of bounds.
 */

/** A block that does not decode. */
export class Lz4Error extends Error {
  constructor(message: string) {
    super(`lz4: ${message}`);
    this.name = 'Lz4Error';
  }
}

const SIZE_BYTES = 4;
const MIN_MATCH = 4;
/** The last bytes of a block that are always literals. */
const LAST_LITERALS = 5;
/** No match starts within this many bytes of the end. */
const MATCH_START_MARGIN = 12;
const MAX_OFFSET = 65535;
const HASH_BITS = 12;
/** Literal runs up to this long are copied byte by byte (a subarray costs more below it). */
const SHORT_COPY = 16;

/** The byte count a block decompresses to (its first four bytes); throws when it has none. */
export function lz4DecompressedLength(block: Uint8Array): number {
  if (block.length < SIZE_BYTES + 1) throw new Lz4Error(`a block of ${block.length} bytes is too short`);
  return (block[0]! | (block[1]! << 8) | (block[2]! << 16)) + block[3]! * 2 ** 24;
}

/** Where the last readLengthRest stopped: its second result, without an object per call. */
let lengthEnd = 0;

/** The extra bytes of a length whose nibble is 15, from `ip`: each 255 adds and goes on, a byte below 255 adds and ends. */
function readLengthRest(block: Uint8Array, ip: number, what: 'literal' | 'match'): number {
  let sum = 0;
  let more: number;
  do {
    if (ip >= block.length) throw new Lz4Error(`${what} length runs past the end at byte ${ip}`);
    more = block[ip++]!;
    sum += more;
  } while (more === 255);
  lengthEnd = ip;
  return sum;
}

/**
 * Decompresses `block` into `out` (which must hold lz4DecompressedLength(block) bytes) and
 * returns the count. Throws Lz4Error for anything that is not exactly such a block.
 */
export function lz4Decompress(block: Uint8Array, out: Uint8Array): number {
  const n = lz4DecompressedLength(block);
  if (n > out.length) throw new RangeError(`lz4Decompress: the block decompresses to ${n} bytes, the output holds ${out.length}`);
  const end = block.length;
  let ip = SIZE_BYTES;
  let op = 0;
  for (;;) {
    if (ip >= end) throw new Lz4Error('the block ends after a match, without its last literals');
    const token = block[ip++]!;
    let literals = token >>> 4;
    if (literals === 15) {
      literals += readLengthRest(block, ip, 'literal');
      ip = lengthEnd;
    }
    if (ip + literals > end) throw new Lz4Error(`${literals} literals at byte ${ip} run past the block's end`);
    if (op + literals > n) throw new Lz4Error(`${literals} literals at byte ${ip} run past the declared ${n} bytes`);
    if (literals <= SHORT_COPY) for (let k = 0; k < literals; k++) out[op + k] = block[ip + k]!;
    else out.set(block.subarray(ip, ip + literals), op);
    ip += literals;
    op += literals;
    if (ip === end) break; // the last sequence: literals only
    if (ip + 2 > end) throw new Lz4Error(`match offset cut short at byte ${ip}`);
    const offset = block[ip]! | (block[ip + 1]! << 8);
    ip += 2;
    if (offset === 0 || offset > op) throw new Lz4Error(`match offset ${offset} at byte ${ip - 2} points before the output's start`);
    let length = token & 15;
    if (length === 15) {
      length += readLengthRest(block, ip, 'match');
      ip = lengthEnd;
    }
    length += MIN_MATCH;
    if (op + length > n) throw new Lz4Error(`a match of ${length} bytes at byte ${ip} runs past the declared ${n} bytes`);
    if (offset >= length) out.copyWithin(op, op - offset, op - offset + length);
    else for (let k = 0; k < length; k++) out[op + k] = out[op - offset + k]!; // overlapping: byte by byte repeats the pattern
    op += length;
  }
  if (op !== n) throw new Lz4Error(`the block decompresses to ${op} bytes, it declares ${n}`);
  return n;
}

/** The most bytes Lz4Compressor.compress can write for `n` input bytes. */
export function lz4MaxCompressedLength(n: number): number {
  return SIZE_BYTES + n + Math.floor(n / 255) + 16;
}

function load32(b: Uint8Array, i: number): number {
  return b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24);
}

function hash4(x: number): number {
  return Math.imul(x, 2654435761) >>> (32 - HASH_BITS);
}

/** Writes a length's extra bytes (the part at and above 15 in its nibble). */
function writeLengthRest(out: Uint8Array, op: number, rest: number): number {
  for (; rest >= 255; rest -= 255) out[op++] = 255;
  out[op++] = rest;
  return op;
}

/**
 * A greedy LZ4 compressor (hash table of 4-byte sequences, like lz4's fast mode) that keeps its
 * table between blocks: entries carry a running base, so the table is valid for a new block
 * without clearing it (a clear per block cost more than compressing a small one).
 */
export class Lz4Compressor {
  /** Position + base of the last 4-byte sequence with each hash; below `base`: from an earlier block. */
  private readonly table = new Int32Array(1 << HASH_BITS);
  private base = 1;

  /** Compresses `input` into `out` from `op` (room for lz4MaxCompressedLength(input.length)); returns the end. */
  compress(input: Uint8Array, out: Uint8Array, op = 0): number {
    const n = input.length;
    if (n > 0x7fffffff) throw new RangeError(`Lz4Compressor: ${n} bytes is more than a block holds`);
    if (out.length - op < lz4MaxCompressedLength(n)) throw new RangeError(`Lz4Compressor: the output has ${out.length - op} bytes of room, ${lz4MaxCompressedLength(n)} may be needed`);
    if (this.base + n > 0x3fffffff) {
      this.table.fill(0);
      this.base = 1;
    }
    const table = this.table;
    const base = this.base;
    this.base += n + 1;
    out[op] = n & 0xff;
    out[op + 1] = (n >>> 8) & 0xff;
    out[op + 2] = (n >>> 16) & 0xff;
    out[op + 3] = n >>> 24;
    op += SIZE_BYTES;
    let anchor = 0;
    if (n >= MATCH_START_MARGIN + 1) {
      const lastMatchStart = n - MATCH_START_MARGIN;
      const matchEnd = n - LAST_LITERALS;
      let ip = 0;
      table[hash4(load32(input, ip))] = base + ip;
      ip++;
      search: for (;;) {
        // Find a match; after 64 misses in a row, every further 64 look one byte further apart.
        let candidate = -1;
        for (let misses = 64; ; misses++) {
          if (ip > lastMatchStart) break search;
          const sequence = load32(input, ip);
          const h = hash4(sequence);
          const seen = table[h]! - base;
          table[h] = base + ip;
          if (seen >= 0 && ip - seen <= MAX_OFFSET && load32(input, seen) === sequence) {
            candidate = seen;
            break;
          }
          ip += misses >>> 6;
        }
        // Matches, one after another while the next position starts one.
        for (;;) {
          while (ip > anchor && candidate > 0 && input[ip - 1] === input[candidate - 1]) {
            ip--;
            candidate--;
          }
          let length = MIN_MATCH;
          while (ip + length < matchEnd && input[candidate + length] === input[ip + length]) length++;
          op = this.sequence(input, anchor, ip, out, op, ip - candidate, length);
          ip += length;
          anchor = ip;
          if (ip > lastMatchStart) break search;
          table[hash4(load32(input, ip - 2))] = base + ip - 2;
          const sequence = load32(input, ip);
          const h = hash4(sequence);
          const seen = table[h]! - base;
          table[h] = base + ip;
          if (!(seen >= 0 && ip - seen <= MAX_OFFSET && load32(input, seen) === sequence)) break;
          candidate = seen;
        }
        ip++;
      }
    }
    // The last literals.
    const literals = n - anchor;
    if (literals >= 15) {
      out[op++] = 15 << 4;
      op = writeLengthRest(out, op, literals - 15);
    } else out[op++] = literals << 4;
    out.set(input.subarray(anchor, n), op);
    return op + literals;
  }

  /** One sequence: the literals [from, to), then a match of `length` bytes `offset` back. */
  private sequence(input: Uint8Array, from: number, to: number, out: Uint8Array, op: number, offset: number, length: number): number {
    const literals = to - from;
    const matchRest = length - MIN_MATCH;
    const token = op++;
    out[token] = (literals >= 15 ? 15 << 4 : literals << 4) | (matchRest >= 15 ? 15 : matchRest);
    if (literals >= 15) op = writeLengthRest(out, op, literals - 15);
    if (literals <= SHORT_COPY) for (let k = 0; k < literals; k++) out[op + k] = input[from + k]!;
    else out.set(input.subarray(from, to), op);
    op += literals;
    out[op++] = offset & 0xff;
    out[op++] = offset >>> 8;
    if (matchRest >= 15) op = writeLengthRest(out, op, matchRest - 15);
    return op;
  }
}
