/**
 * A static rANS entropy coder for small alphabets (symbols 0..1023), used by the entropy-coded
 * value mode of the column codec (COLUMNS.md, mode 4). Bit packing spends a whole number of
 * bits on every delta; a random walk whose deltas take 91 values needs log2(91) = 6.5 bits, not
 * 7, and a peaked distribution far less. rANS codes each symbol in -log2(freq / 4096) bits.
 *
 * State x is kept in [2^23, 2^31) so every step stays in exact 32-bit integer arithmetic;
 * renormalisation moves whole bytes. The encoder runs backwards over the symbols and fills its
 * output from the end, so the decoder reads forwards: four bytes of final state (little-endian),
 * then the bytes in the order it needs them. A correct stream leaves the decoder with the
 * encoder's initial state and no bytes over, which the decoder checks.
 *
 * Pure TypeScript, no I/O.
 */

export const RANS_SCALE_BITS = 12;
/** Frequencies of a table sum to exactly this. */
export const RANS_TOTAL = 1 << RANS_SCALE_BITS;
/** Largest alphabet a table may describe. */
export const RANS_MAX_SYMBOLS = 1024;

const LOWER = 1 << 23;
/** ((LOWER >> SCALE_BITS) << 8): with x below this times freq, one encode step stays below 2^31. */
const RENORM_FACTOR = (LOWER >>> RANS_SCALE_BITS) << 8;

/**
 * Turns symbol counts into frequencies that sum to RANS_TOTAL, every counted symbol at least 1
 * (so it stays codable) and every uncounted one 0. `size` symbols, at least one counted.
 */
export function normaliseFrequencies(counts: Uint32Array, size: number, freqs: Uint16Array): void {
  let total = 0;
  for (let s = 0; s < size; s++) total += counts[s]!;
  let sum = 0;
  for (let s = 0; s < size; s++) {
    const c = counts[s]!;
    const f = c === 0 ? 0 : Math.max(1, Math.round((c * RANS_TOTAL) / total));
    freqs[s] = f;
    sum += f;
  }
  // Rounding leaves the sum a little off; take from (or give to) the most frequent symbols,
  // where a unit costs the least precision. At most `size` units are off, so this ends quickly.
  while (sum !== RANS_TOTAL) {
    let best = -1;
    for (let s = 0; s < size; s++) if (freqs[s]! > (sum > RANS_TOTAL ? 1 : 0) && (best < 0 || freqs[s]! > freqs[best]!)) best = s;
    const step = sum > RANS_TOTAL ? -1 : 1;
    freqs[best] = freqs[best]! + step;
    sum += step;
  }
}

/** Bytes ransEncode may need for `n` symbols: at most two per symbol plus the state. */
export function ransBoundBytes(n: number): number {
  return 2 * n + 4;
}

/**
 * Encodes symbols[0..n) with `freqs` (summing to RANS_TOTAL, non-zero for every symbol used)
 * into out, which must hold ransBoundBytes(n) bytes. Returns the start of the stream: the
 * encoded bytes are out[start..out.length).
 */
export function ransEncode(symbols: Uint16Array, n: number, freqs: Uint16Array, size: number, out: Uint8Array): number {
  const cumulative = cumulativeOf(freqs, size);
  let x = LOWER;
  let p = out.length;
  for (let i = n - 1; i >= 0; i--) {
    const s = symbols[i]!;
    const f = freqs[s]!;
    const limit = RENORM_FACTOR * f;
    while (x >= limit) {
      out[--p] = x & 0xff;
      x >>>= 8;
    }
    const q = Math.floor(x / f);
    x = q * RANS_TOTAL + (x - q * f) + cumulative[s]!;
  }
  p -= 4;
  out[p] = x & 0xff;
  out[p + 1] = (x >>> 8) & 0xff;
  out[p + 2] = (x >>> 16) & 0xff;
  out[p + 3] = x >>> 24;
  return p;
}

/**
 * Decodes n symbols from buf[start..end) into symbols[0..n). Returns null, or what is wrong
 * with the stream (a table that does not sum to RANS_TOTAL, bytes missing or left over, a
 * final state that is not the encoder's first).
 */
export function ransDecode(buf: Uint8Array, start: number, end: number, freqs: Uint16Array, size: number, symbols: Uint16Array, n: number): string | null {
  const problem = prepareDecode(start, end, freqs, size);
  if (problem !== null) return problem;
  const cumulative = CUMULATIVE;
  const slotSymbol = SLOT_SYMBOL;
  let p = start;
  let x = (buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16) | (buf[p + 3]! << 24)) >>> 0;
  p += 4;
  const mask = RANS_TOTAL - 1;
  for (let i = 0; i < n; i++) {
    const slot = x & mask;
    const s = slotSymbol[slot]!;
    symbols[i] = s;
    x = freqs[s]! * (x >>> RANS_SCALE_BITS) + slot - cumulative[s]!;
    while (x < LOWER) {
      if (p >= end) return 'rANS stream ends early';
      x = (x << 8) | buf[p++]!;
    }
  }
  if (p !== end) return `rANS stream has ${end - p} bytes left over`;
  if (x !== LOWER) return 'rANS stream does not decode to its initial state';
  return null;
}

/**
 * ransDecode fused with value mode 5's moving-mean prediction (column-predict.ts): the symbol
 * chain and the running sum's chain are independent, so one loop lets the CPU overlap them
 * (about 7 ns a point against 10 for decoding symbols first). Decodes count - 1 residuals
 * `min + symbol`; ints[t] = residual + floor(mean of the 2^shift previous ints), ints[0] =
 * first, out[t] = ints[t] / scale. Returns null or what is wrong, as ransDecode does; a value
 * beyond ±limit is wrong too (its sums would no longer be exact).
 */
export function ransDecodePredicted(
  buf: Uint8Array, start: number, end: number, freqs: Uint16Array, size: number,
  count: number, first: number, min: number, shift: number, limit: number, ints: Float64Array, scale: number, out: Float64Array,
): string | null {
  const problem = prepareDecode(start, end, freqs, size);
  if (problem !== null) return problem;
  const cumulative = CUMULATIVE;
  const slotSymbol = SLOT_SYMBOL;
  let p = start;
  let x = (buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16) | (buf[p + 3]! << 24)) >>> 0;
  p += 4;
  const mask = RANS_TOTAL - 1;
  const window = 1 << shift;
  const inv = 1 / window; // a power of two: sum * inv is exactly sum / window
  ints[0] = first;
  out[0] = first / scale;
  let sum = first * window;
  let inRange = Math.abs(first) <= limit;
  for (let t = 1; t < count; t++) {
    const slot = x & mask;
    const s = slotSymbol[slot]!;
    x = freqs[s]! * (x >>> RANS_SCALE_BITS) + slot - cumulative[s]!;
    while (x < LOWER) {
      if (p >= end) return 'rANS stream ends early';
      x = (x << 8) | buf[p++]!;
    }
    const v = min + s + Math.floor(sum * inv);
    ints[t] = v;
    out[t] = v / scale;
    sum += v - ints[t < window ? 0 : t - window]!;
    if (!(v <= limit && v >= -limit)) inRange = false;
  }
  if (p !== end) return `rANS stream has ${end - p} bytes left over`;
  if (x !== LOWER) return 'rANS stream does not decode to its initial state';
  // The sums stay exact while every value so far is in range, so flagging any value out of
  // range catches corrupt input before an inexact sum could matter.
  return inRange ? null : `predicted values beyond ±2^${Math.log2(limit)}`;
}

/** Checks the table and the stream's minimum length, then fills CUMULATIVE and SLOT_SYMBOL. */
function prepareDecode(start: number, end: number, freqs: Uint16Array, size: number): string | null {
  let sum = 0;
  for (let s = 0; s < size; s++) sum += freqs[s]!;
  if (sum !== RANS_TOTAL) return `rANS frequencies sum to ${sum}, not ${RANS_TOTAL}`;
  if (end - start < 4) return 'rANS stream shorter than its state';
  const cumulative = cumulativeOf(freqs, size);
  for (let s = 0; s < size; s++) SLOT_SYMBOL.fill(s, cumulative[s]!, cumulative[s]! + freqs[s]!);
  return null;
}

/** Slot -> symbol for the table being decoded (decoding is synchronous: one per thread). */
const SLOT_SYMBOL = new Uint16Array(RANS_TOTAL);
const CUMULATIVE = new Uint32Array(RANS_MAX_SYMBOLS + 1);

function cumulativeOf(freqs: Uint16Array, size: number): Uint32Array {
  let c = 0;
  for (let s = 0; s < size; s++) {
    CUMULATIVE[s] = c;
    c += freqs[s]!;
  }
  CUMULATIVE[size] = c;
  return CUMULATIVE;
}
