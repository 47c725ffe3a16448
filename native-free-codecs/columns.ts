/**
 * Column compression for sealed day files: one tag's sorted, deduplicated points become a
 * timestamp column and a value column: varints, and for values that move every point,
 * bit-packed or rANS-coded deltas, or rANS-coded residuals of a moving mean (the rANS modes are
 * in column-rans.ts, the shared byte reader and writer in column-base.ts). The storage worker
 * lz4s the result. Pure TypeScript (no Node built-ins) so a browser can decode a block too.
 *
 * Byte layout: COLUMNS.md beside this file. Any change to the bytes bumps COLUMN_CODEC_VERSION.
 *
 * Errors: encoders throw on input they cannot represent exactly. Decoders read through a
 * ByteReader whose errors are sticky (a read past the end yields 0 and records the first
 * failure), so the hot loops carry no exceptions; each public decode function checks the reader
 * once at its end and throws an Error naming the first failure.
 */

/**
 * Version of the byte layout described in COLUMNS.md. 2 added the bit-packed value mode
 * (VALUES_MODE_SCALED_PACKED), 3 the entropy-coded one (VALUES_MODE_SCALED_RANS), 4 the
 * entropy-coded residuals of a moving-mean predictor (VALUES_MODE_SCALED_PREDICTED);
 * everything an older writer produced is still valid input, so this build reads all four
 * (READABLE_COLUMN_CODEC_VERSIONS) and writes 4.
 */
export const COLUMN_CODEC_VERSION = 4;
/** Codec versions decodeTimestamps/decodeValues understand (the header field of stored data). */
export const READABLE_COLUMN_CODEC_VERSIONS: readonly number[] = [1, 2, 3, 4];

import {
  ByteReader, ByteWriter, intsFor, POW10, SCRATCH_KEEP_POINTS, svarintLength, uvarintLength,
  VALUES_MODE_FLOAT, VALUES_MODE_SCALED, VALUES_MODE_SCALED_PACKED, VALUES_MODE_SCALED_PREDICTED, VALUES_MODE_SCALED_RANS,
} from './column-base.js';
import { PREDICT_MAX_SHIFT, PREDICT_MIN_SHIFT } from './column-predict.js';
import { choosePredictor, decodeRans, prepareRans, writeRans } from './column-rans.js';

// The byte reader and writer and the mode ids live in column-base.ts (shared with column-rans.ts).
export { ByteReader, ByteWriter, VALUES_MODE_FLOAT, VALUES_MODE_SCALED, VALUES_MODE_SCALED_PACKED, VALUES_MODE_SCALED_PREDICTED, VALUES_MODE_SCALED_RANS };

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
// Values: decimal-scaled integers when exact (as varints or bit-packed deltas, whichever is
// shorter), otherwise XOR of float64 bits.

const MAX_SCALE = 9;
/** Scaled integers stay within ±2^52 so every delta (|d| <= 2^53) is still exact. */
const SCALED_LIMIT = 2 ** 52;
/** Deltas per frame in the packed mode; a full frame is 16 * width bytes, whole 32-bit words. */
const FRAME = 128;
/**
 * Widest packed field. A frame packs delta - min, which must stay below 2^53 to be exact as a
 * double; a frame whose deltas span 2^53 or more (possible: deltas reach ±2^53) cannot be
 * packed, and the column is then written in mode 1.
 */
const MAX_WIDTH = 53;
const TWO32 = 4294967296;
/** Frame width that marks "cannot be packed" in the encoder's scratch (never written). */
const UNPACKABLE = 255;

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

/**
 * Smallest scale at which each value on its own is an exact integer, or -1 when none does.
 * scaleInto confirms the scale for the whole column.
 */
function chooseScale(values: Float64Array, count: number): number {
  let k = 0;
  for (let i = 0; i < count; i++) {
    const v = values[i]!;
    while (Number.isNaN(scaledInt(v, k))) {
      if (++k > MAX_SCALE) return -1;
    }
  }
  return k;
}

// Encoder scratch, reused across calls (encoding is synchronous, so one set per thread is
// enough). Columns longer than SCRATCH_KEEP_POINTS get their own arrays for that call, so a
// rare huge column does not pin memory; sealed blocks are at most 16,384 points.
let scratchFrameMin = new Float64Array(0);
let scratchFrameWidth = new Uint8Array(0);
/** One packed frame: at most FRAME * MAX_WIDTH bits. */
const packBuf = new Uint8Array((FRAME * MAX_WIDTH) / 8);

/**
 * Fills ints[0..count) with the values scaled by 10^k; false when some value is not exact at k
 * (a value that fitted a smaller k almost always fits a larger one too, but range limit and
 * rounding are confirmed rather than assumed).
 */
function scaleInto(values: Float64Array, count: number, k: number, ints: Float64Array): boolean {
  for (let i = 0; i < count; i++) {
    const n = scaledInt(values[i]!, k);
    if (Number.isNaN(n)) return false;
    ints[i] = n;
  }
  return true;
}

/** Views a Float64Array's bits as 32-bit halves; LO/HI pick the halves on this host. */
function bitsView(a: Float64Array, count: number): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, count * 2);
}
// Every engine in use is little-endian; the check keeps the stored bytes the same elsewhere.
const LO = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 0 : 1;
const HI = 1 - LO;

/**
 * Encodes `count` float64 values exactly. When some k in 0..9 makes every value an exact
 * decimal integer (sensor readings with few decimals, setpoints, states, counters), the
 * integers are written in mode 1 (varint deltas, zero runs), mode 3 (bit-packed deltas),
 * mode 4 (rANS-coded deltas) or mode 5 (rANS-coded residuals of a moving mean), whichever is
 * fewest bytes (on a tie the lower mode number, the simpler decoder);
 * float mode otherwise (NaN, ±Infinity, -0, full-precision doubles), which keeps every bit,
 * NaN payloads included.
 *
 * `tryRans` false leaves modes 4 and 5 out (a part, rewritten later, is written 40% faster for
 * about 20% more bytes). `scaledMode` is for tests and measurements: 1, 3, 4 or 5 forces that mode whenever the values
 * scale and the mode can hold them (3: deltas spanning less than 2^53 per frame; 4 and 5: an
 * alphabet below 1024; 5: |n| <= 2^48, at least 2 values), the shorter of 1 and 3 otherwise.
 * Writers leave it at 0. `codecVersion` 3 chooses as the version 3 writers did (no mode 5), so
 * tests can make the files older builds wrote; 4 or absent is this version.
 */
export function encodeValues(values: Float64Array, count: number, w: ByteWriter, scaledMode = 0, codecVersion = COLUMN_CODEC_VERSION, tryRans = true): void {
  if (count < 0 || count > values.length) throw new RangeError(`encodeValues: count ${count} outside 0..${values.length}`);
  if (scaledMode !== 0 && scaledMode !== VALUES_MODE_SCALED && scaledMode !== VALUES_MODE_SCALED_PACKED && scaledMode !== VALUES_MODE_SCALED_RANS && scaledMode !== VALUES_MODE_SCALED_PREDICTED) {
    throw new RangeError(`encodeValues: scaledMode ${scaledMode} is not 0 or one of the scaled modes 1, 3, 4, 5`);
  }
  if (codecVersion !== 3 && codecVersion !== COLUMN_CODEC_VERSION) throw new RangeError(`encodeValues: codec version ${codecVersion} is not 3 or ${COLUMN_CODEC_VERSION}`);
  if (codecVersion === 3 && scaledMode === VALUES_MODE_SCALED_PREDICTED) throw new RangeError('encodeValues: mode 5 needs codec version 4');
  if (count === 0) return;
  const k = chooseScale(values, count);
  const ints = k >= 0 ? intsFor(count) : null;
  if (ints === null || !scaleInto(values, count, k, ints)) {
    encodeFloat(values, count, w);
    return;
  }
  const frames = Math.ceil((count - 1) / FRAME);
  let frameMin = scratchFrameMin;
  let frameWidth = scratchFrameWidth;
  if (frames > frameMin.length) {
    if (count > SCRATCH_KEEP_POINTS) {
      frameMin = new Float64Array(frames);
      frameWidth = new Uint8Array(frames);
    } else {
      const size = Math.ceil((ints.length - 1) / FRAME);
      frameMin = scratchFrameMin = new Float64Array(size);
      frameWidth = scratchFrameWidth = new Uint8Array(size);
    }
  }
  const varintBytes = analyseDeltas(ints, count, frameMin, frameWidth);
  const packedBytes = packedSize(ints, count, frameMin, frameWidth);
  const chooses = scaledMode === 0 || scaledMode === VALUES_MODE_SCALED_RANS || scaledMode === VALUES_MODE_SCALED_PREDICTED;
  // A block of a few points (a part of many sparse tags) does not pay for a rANS table: trying
  // it was a fifth of such a compaction's time. Mode 1 or 3 then, whichever is shorter (version
  // 3 writers tried rANS at every size, and codecVersion 3 still chooses as they did).
  if (chooses && !(scaledMode === 0 && codecVersion >= 4 && (count < RANS_MIN_POINTS || !tryRans))) {
    // Strictly shorter than the others, so ties keep the simpler modes. Decoding cost is close
    // enough not to weigh: 7 ns a point for rANS, 4 to 9 for bit unpacking by width
    // (node dist/bench/result-codecs.js); mode 5 decodes as fast as mode 4 (its running mean
    // overlaps the rANS loop), but costs twice the encoding time to choose (sealing only).
    const best = Math.min(varintBytes, packedBytes);
    const forcePredicted = scaledMode === VALUES_MODE_SCALED_PREDICTED;
    const shift = scaledMode === VALUES_MODE_SCALED_RANS || codecVersion < 4 ? 0 : choosePredictor(ints, count, forcePredicted);
    const ransBytes = forcePredicted ? Infinity : prepareRans(ints, count, 0);
    // Mode 5 is prepared last, so the scratch holds its stream when it wins.
    const predictedBytes = shift > 0 ? prepareRans(ints, count, shift) : Infinity;
    if (forcePredicted ? predictedBytes !== Infinity : predictedBytes < Math.min(best, ransBytes)) {
      writeRans(ints, k, shift, w);
      return;
    }
    if (scaledMode === VALUES_MODE_SCALED_RANS ? ransBytes !== Infinity : ransBytes < best) {
      if (shift > 0) prepareRans(ints, count, 0);
      writeRans(ints, k, 0, w);
      return;
    }
  }
  const packed = chooses ? packedBytes < varintBytes : scaledMode === VALUES_MODE_SCALED_PACKED && packedBytes !== Infinity;
  if (packed) encodePacked(ints, count, k, frameMin, frameWidth, w);
  else encodeScaled(ints, count, k, w);
}

/** Below this many values the rANS modes are not tried (their table alone outweighs a few deltas). */
export const RANS_MIN_POINTS = 32;

/** Bits needed for an integer in 0..2^53-1. */
function bitLength(v: number): number {
  return v < TWO32 ? 32 - Math.clz32(v) : 64 - Math.clz32(Math.floor(v / TWO32));
}

/**
 * One pass over the deltas: fills each frame's minimum delta and packed width (UNPACKABLE when
 * its deltas span 2^53 or more) and returns the exact size of the mode 1 encoding.
 */
function analyseDeltas(ints: Float64Array, count: number, frameMin: Float64Array, frameWidth: Uint8Array): number {
  let bytes = 1 + svarintLength(ints[0]!);
  let run = 0;
  let prev = ints[0]!;
  for (let f = 0, start = 1; start < count; f++, start += FRAME) {
    const end = Math.min(count, start + FRAME);
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = start; i < end; i++) {
      const n = ints[i]!;
      const d = n - prev; // exact: |n|, |prev| <= 2^52
      prev = n;
      if (d < lo) lo = d;
      if (d > hi) hi = d;
      if (d === 0) {
        run++;
      } else {
        if (run > 0) {
          bytes += 1 + uvarintLength(run - 1);
          run = 0;
        }
        bytes += svarintLength(d);
      }
    }
    // hi - lo is exact whenever the true span is below 2^53, and a span of 2^53 or more never
    // rounds below 2^53, so the comparison is exact too.
    const span = hi - lo;
    frameMin[f] = lo;
    frameWidth[f] = span < 2 ** MAX_WIDTH ? bitLength(span) : UNPACKABLE;
  }
  if (run > 0) bytes += 1 + uvarintLength(run - 1);
  return bytes;
}

/** Frames from f on that have width 0 and the same minimum as frame f (at least 1). */
function constantFrameRun(f: number, frames: number, frameMin: Float64Array, frameWidth: Uint8Array): number {
  const min = frameMin[f]!;
  let r = 1;
  while (f + r < frames && frameWidth[f + r] === 0 && frameMin[f + r] === min) r++;
  return r;
}

/** Exact size of the mode 3 encoding, or Infinity when a frame cannot be packed. */
function packedSize(ints: Float64Array, count: number, frameMin: Float64Array, frameWidth: Uint8Array): number {
  const frames = Math.ceil((count - 1) / FRAME);
  let bytes = 1 + svarintLength(ints[0]!);
  for (let f = 0; f < frames; ) {
    const width = frameWidth[f]!;
    if (width === UNPACKABLE) return Infinity;
    if (width === 0) {
      const r = constantFrameRun(f, frames, frameMin, frameWidth);
      bytes += 1 + svarintLength(frameMin[f]!) + uvarintLength(r - 1);
      f += r;
    } else {
      const n = Math.min(FRAME, count - 1 - f * FRAME);
      bytes += 1 + svarintLength(frameMin[f]!) + Math.ceil((n * width) / 8);
      f++;
    }
  }
  return bytes;
}

/** Mode 1: svarint n0, then svarint deltas with zero runs. */
function encodeScaled(ints: Float64Array, count: number, k: number, w: ByteWriter): void {
  w.u8((VALUES_MODE_SCALED << 4) | k);
  let prev = ints[0]!;
  w.svarint(prev);
  let run = 0;
  for (let i = 1; i < count; i++) {
    const n = ints[i]!;
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

// Bit packer state: bits not yet written sit at the bottom of packAcc (packHave of them, 0..31);
// whole 32-bit words go to packBuf as 4 little-endian bytes.
let packAcc = 0;
let packHave = 0;
let packLen = 0;

/** Appends the low b bits (1..32) of x, an integer in 0..2^32-1, least significant bit first. */
function putBits(x: number, b: number): void {
  packAcc |= x << packHave; // bits pushed past bit 31 are picked up below
  const total = packHave + b;
  if (total < 32) {
    packHave = total;
    return;
  }
  const p = packLen;
  packBuf[p] = packAcc;
  packBuf[p + 1] = packAcc >>> 8;
  packBuf[p + 2] = packAcc >>> 16;
  packBuf[p + 3] = packAcc >>> 24;
  packLen = p + 4;
  packAcc = packHave === 0 ? 0 : x >>> (32 - packHave);
  packHave = total - 32;
}

/** Writes the last partial word: as many bytes as its bits need. */
function flushBits(): void {
  for (let b = 0; b < packHave; b += 8) packBuf[packLen++] = packAcc >>> b;
  packAcc = 0;
  packHave = 0;
}

/**
 * Mode 3: svarint n0, then per frame of up to 128 deltas: width byte w, svarint(min delta),
 * then each delta - min in w bits, LSB first; a width 0 frame carries uvarint(r - 1) instead,
 * standing for r frames whose deltas all equal min.
 */
function encodePacked(ints: Float64Array, count: number, k: number, frameMin: Float64Array, frameWidth: Uint8Array, w: ByteWriter): void {
  w.u8((VALUES_MODE_SCALED_PACKED << 4) | k);
  w.svarint(ints[0]!);
  const frames = Math.ceil((count - 1) / FRAME);
  for (let f = 0; f < frames; ) {
    const width = frameWidth[f]!;
    const min = frameMin[f]!;
    if (width === 0) {
      const r = constantFrameRun(f, frames, frameMin, frameWidth);
      w.u8(0);
      w.svarint(min);
      w.uvarint(r - 1);
      f += r;
      continue;
    }
    w.u8(width);
    w.svarint(min);
    const start = 1 + f * FRAME;
    const end = Math.min(count, start + FRAME);
    packLen = 0;
    if (width <= 32) {
      for (let i = start; i < end; i++) putBits(ints[i]! - ints[i - 1]! - min, width);
    } else {
      // 33..53 bits: the low 32 bits, then the rest; v < 2^53, so % and / are exact.
      for (let i = start; i < end; i++) {
        const v = ints[i]! - ints[i - 1]! - min;
        const lo = v % TWO32;
        putBits(lo, 32);
        putBits((v - lo) / TWO32, width - 32);
      }
    }
    flushBits();
    w.raw(packBuf, packLen);
    f++;
  }
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

/**
 * Decodes `count` values into out[0..count). Throws if the bytes are short or corrupt. Reads
 * every mode of every codec version (mode 3 exists since version 2).
 */
export function decodeValues(r: ByteReader, count: number, out: Float64Array): void {
  if (count < 0 || count > out.length) throw new RangeError(`decodeValues: count ${count} outside 0..${out.length}`);
  if (count === 0) return;
  const header = r.u8();
  const mode = header >> 4;
  const k = header & 0x0f;
  if (mode === VALUES_MODE_SCALED && k <= MAX_SCALE) decodeScaled(r, count, k, out);
  else if (mode === VALUES_MODE_SCALED_PACKED && k <= MAX_SCALE) decodePacked(r, count, k, out);
  else if (mode === VALUES_MODE_SCALED_RANS && k <= MAX_SCALE) decodeRans(r, count, k, 0, out);
  else if (mode === VALUES_MODE_SCALED_PREDICTED && k <= MAX_SCALE) {
    const shift = r.u8();
    if (shift >= PREDICT_MIN_SHIFT && shift <= PREDICT_MAX_SHIFT) decodeRans(r, count, k, shift, out);
    else r.fail(`predictor shift ${shift} outside ${PREDICT_MIN_SHIFT}..${PREDICT_MAX_SHIFT}`);
  }
  else if (mode === VALUES_MODE_FLOAT && k === 0) decodeFloat(r, count, out);
  else r.fail(`unknown values header 0x${header.toString(16)}`);
  bitBuf = NO_BYTES; // do not keep the caller's buffer alive
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

// Bit reader state for one frame: bytes bitPos..bitEnd of bitBuf, and the bits already loaded
// but not yet used at the bottom of bitAcc (bitHave of them, 0..31). Past bitEnd reads zeros.
const NO_BYTES = new Uint8Array(0);
let bitBuf: Uint8Array = NO_BYTES;
let bitPos = 0;
let bitEnd = 0;
let bitAcc = 0;
let bitHave = 0;

/** The next b bits (1..32), least significant first, as an integer in 0..2^32-1. */
function getBits(b: number): number {
  const mask = 0xffffffff >>> (32 - b);
  if (bitHave >= b) {
    const x = (bitAcc & mask) >>> 0;
    bitAcc = b === 32 ? 0 : bitAcc >>> b;
    bitHave -= b;
    return x;
  }
  let word: number;
  const p = bitPos;
  if (p + 4 <= bitEnd) {
    word = bitBuf[p]! | (bitBuf[p + 1]! << 8) | (bitBuf[p + 2]! << 16) | (bitBuf[p + 3]! << 24);
  } else {
    word = 0;
    for (let q = p; q < bitEnd; q++) word |= bitBuf[q]! << (8 * (q - p));
  }
  bitPos = p + 4;
  const x = ((bitAcc | (word << bitHave)) & mask) >>> 0;
  const used = b - bitHave; // 1..32 bits taken from this word
  bitAcc = used === 32 ? 0 : word >>> used;
  bitHave = 32 - used;
  return x;
}

function decodePacked(r: ByteReader, count: number, k: number, out: Float64Array): void {
  const p = POW10[k]!;
  let n = r.svarint();
  out[0] = n / p;
  let i = 1;
  while (i < count && r.error === null) {
    const width = r.u8();
    const min = r.svarint();
    if (width === 0) {
      const frames = r.uvarint() + 1;
      const framesLeft = Math.ceil((count - i) / FRAME);
      if (frames > framesLeft) {
        r.fail(`run of ${frames} constant frames exceeds the ${framesLeft} frames left`);
        return;
      }
      const end = Math.min(count, i + frames * FRAME);
      if (min === 0) {
        out.fill(n / p, i, end);
        i = end;
      } else {
        for (; i < end; i++) {
          n += min;
          out[i] = n / p;
        }
      }
      continue;
    }
    if (width > MAX_WIDTH) {
      r.fail(`frame width ${width} above ${MAX_WIDTH}`);
      return;
    }
    const end = Math.min(count, i + FRAME);
    const bytes = Math.ceil(((end - i) * width) / 8);
    const at = r.take(bytes);
    if (at < 0) return;
    bitBuf = r.buf;
    bitPos = at;
    bitEnd = at + bytes;
    bitAcc = 0;
    bitHave = 0;
    if (width <= 32) {
      for (; i < end; i++) {
        n += min + getBits(width);
        out[i] = n / p;
      }
    } else {
      for (; i < end; i++) {
        const lo = getBits(32);
        n += min + (getBits(width - 32) * TWO32 + lo);
        out[i] = n / p;
      }
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
