/**
 * The rANS-coded value modes of the column codec (COLUMNS.md): mode 4 codes a block's deltas
 * with one static table, mode 5 the residuals of a moving mean (column-predict.ts). The encoder
 * side prepares a mode's stream in scratch and reports its exact size, so encodeValues
 * (columns.ts) can compare it with the other modes before writing the winner.
 * Pure TypeScript, no I/O.
 */

import { ByteReader, ByteWriter, intsFor, POW10, SCRATCH_KEEP_POINTS, svarintLength, uvarintLength, VALUES_MODE_SCALED_PREDICTED, VALUES_MODE_SCALED_RANS } from './column-base.js';
import { predictionResiduals, PREDICT_LIMIT, PREDICT_MAX_SHIFT, PREDICT_MIN_SHIFT, residualEntropyBits } from './column-predict.js';
import { normaliseFrequencies, ransBoundBytes, ransDecode, ransDecodePredicted, ransEncode, RANS_MAX_SYMBOLS, RANS_TOTAL } from './rans.js';

// rANS encoder scratch: the deltas as symbols, their counts and table, and the coded stream
// (filled backwards from its end). Like intsFor's (column-base.ts), reused up to SCRATCH_KEEP_POINTS.
let ransSymbols = new Uint16Array(0);
let residuals = new Float64Array(0);
/** Residual histograms of choosePredictor: spans beyond the rANS alphabet are not worth measuring. */
const entropyCounts = new Uint32Array(RANS_MAX_SYMBOLS);
let ransOut = new Uint8Array(0);
const ransCounts = new Uint32Array(RANS_MAX_SYMBOLS);
const ransFreqs = new Uint16Array(RANS_MAX_SYMBOLS);
/** What prepareRans left for writeRans: the stream's buffer and start, smallest delta, alphabet size. */
let preparedStream: Uint8Array = new Uint8Array(0);
let ransMin = 0;
let ransSize = 0;
let ransStart = 0;

function residualsFor(n: number): Float64Array {
  if (n > SCRATCH_KEEP_POINTS) return new Float64Array(n);
  if (residuals.length < n) residuals = new Float64Array(Math.max(n, 2 * residuals.length, 1024));
  return residuals;
}

/**
 * The predictor shift (1..4) whose residuals have the smallest order-0 entropy, if that is
 * below the deltas' (mode 4) or `force` is set; 0 when the deltas do as well, the values are
 * too large for exact sums, or there are too few of them. Entropy ranks the candidates (their
 * tables are about the same size); the caller then compares exact encoded sizes.
 */
export function choosePredictor(ints: Float64Array, count: number, force: boolean): number {
  if (count < (force ? 2 : 3)) return 0;
  for (let i = 0; i < count; i++) if (!(Math.abs(ints[i]!) <= PREDICT_LIMIT)) return 0;
  const n = count - 1;
  const r = residualsFor(n);
  for (let i = 1; i < count; i++) r[i - 1] = ints[i]! - ints[i - 1]!;
  let bestBits = force ? Infinity : residualEntropyBits(r, n, entropyCounts);
  let best = 0;
  for (let shift = PREDICT_MIN_SHIFT; shift <= PREDICT_MAX_SHIFT; shift++) {
    predictionResiduals(ints, count, shift, r);
    const bits = residualEntropyBits(r, n, entropyCounts);
    if (bits < bestBits || (force && best === 0)) {
      bestBits = bits;
      best = shift;
    }
  }
  return best;
}

/**
 * Codes the residuals with one rANS table into the scratch and returns the exact size of the
 * encoding: mode 4 (shift 0: the residuals are the deltas) or mode 5 (the residuals of the
 * mean of 2^shift previous values). Infinity when the residuals span RANS_MAX_SYMBOLS values
 * or more (or there are none).
 */
export function prepareRans(ints: Float64Array, count: number, shift: number): number {
  if (count < 2) return Infinity;
  const n = count - 1;
  const r = residualsFor(n);
  if (shift === 0) for (let i = 1; i < count; i++) r[i - 1] = ints[i]! - ints[i - 1]!;
  else predictionResiduals(ints, count, shift, r);
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const d = r[i]!;
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  if (!(hi - lo < RANS_MAX_SYMBOLS)) return Infinity;
  const size = hi - lo + 1;
  let symbols = ransSymbols;
  if (symbols.length < n) symbols = n > SCRATCH_KEEP_POINTS ? new Uint16Array(n) : (ransSymbols = new Uint16Array(Math.max(n, 2 * symbols.length, 1024)));
  const bound = ransBoundBytes(n);
  let out: Uint8Array;
  if (n > SCRATCH_KEEP_POINTS) out = new Uint8Array(bound);
  else {
    if (ransOut.length < bound) ransOut = new Uint8Array(Math.max(bound, 2 * ransOut.length, 4096));
    out = ransOut.subarray(ransOut.length - bound); // the encoder fills from the end
  }
  ransCounts.fill(0, 0, size);
  for (let i = 0; i < n; i++) {
    const s = r[i]! - lo;
    symbols[i] = s;
    ransCounts[s]!++;
  }
  normaliseFrequencies(ransCounts, size, ransFreqs);
  ransStart = ransEncode(symbols, n, ransFreqs, size, out);
  preparedStream = out;
  ransMin = lo;
  ransSize = size;
  let tableBytes = 0;
  for (let s = 0; s < size; s++) tableBytes += uvarintLength(ransFreqs[s]!);
  const streamBytes = out.length - ransStart;
  return (shift === 0 ? 1 : 2) + svarintLength(ints[0]!) + svarintLength(lo) + uvarintLength(size - 1) + tableBytes + uvarintLength(streamBytes) + streamBytes;
}

/**
 * Mode 4 (shift 0) or 5, from what prepareRans left: mode 5's shift byte, n0, smallest
 * residual, table, stream length, stream.
 */
export function writeRans(ints: Float64Array, k: number, shift: number, w: ByteWriter): void {
  if (shift === 0) w.u8((VALUES_MODE_SCALED_RANS << 4) | k);
  else {
    w.u8((VALUES_MODE_SCALED_PREDICTED << 4) | k);
    w.u8(shift);
  }
  w.svarint(ints[0]!);
  w.svarint(ransMin);
  w.uvarint(ransSize - 1);
  for (let s = 0; s < ransSize; s++) w.uvarint(ransFreqs[s]!);
  const stream = preparedStream.subarray(ransStart);
  w.uvarint(stream.length);
  w.raw(stream);
}

let decodedSymbols = new Uint16Array(0);
const decodedFreqs = new Uint16Array(RANS_MAX_SYMBOLS);

/** Mode 4 (shift 0) or mode 5 (residuals of the mean of 2^shift previous integers). */
export function decodeRans(r: ByteReader, count: number, k: number, shift: number, out: Float64Array): void {
  const p = POW10[k]!;
  let n = r.svarint();
  out[0] = n / p;
  const min = r.svarint();
  const size = r.uvarint() + 1;
  if (size > RANS_MAX_SYMBOLS) {
    r.fail(`rANS alphabet of ${size} symbols above ${RANS_MAX_SYMBOLS}`);
    return;
  }
  for (let s = 0; s < size; s++) decodedFreqs[s] = Math.min(r.uvarint(), RANS_TOTAL + 1); // a sum check follows
  const length = r.uvarint();
  const at = r.take(length);
  if (at < 0) return;
  if (shift !== 0) {
    const problem = ransDecodePredicted(r.buf, at, at + length, decodedFreqs, size, count, n, min, shift, PREDICT_LIMIT, intsFor(count), p, out);
    if (problem !== null) r.fail(problem);
    return;
  }
  const deltas = count - 1;
  let symbols = decodedSymbols;
  if (symbols.length < deltas) symbols = deltas > SCRATCH_KEEP_POINTS ? new Uint16Array(deltas) : (decodedSymbols = new Uint16Array(Math.max(deltas, 2 * symbols.length, 1024)));
  const problem = ransDecode(r.buf, at, at + length, decodedFreqs, size, symbols, deltas);
  if (problem !== null) {
    r.fail(problem);
    return;
  }
  for (let i = 1; i < count; i++) {
    n += min + symbols[i - 1]!;
    out[i] = n / p;
  }
}
