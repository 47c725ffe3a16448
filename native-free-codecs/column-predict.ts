/**
 * The predictor of value mode 5 (COLUMNS.md): each scaled integer is predicted as the floor of
 * the mean of the N values before it (N = 2^shift, 2..16; before the first value the history is
 * the first value repeated). A noisy measurement around a slowly moving level is predicted
 * better by such a mean than by the previous value: a delta carries the noise twice (this
 * point's and the previous one's), a residual from a mean of 8 about 1.06 times. On noisy
 * 4-decimal data that is 0.3 to 0.4 bits a point less than the deltas (bench:disk).
 *
 * Exactness: every |n| <= PREDICT_LIMIT, so a sum of 16 stays below 2^53, and a power-of-two
 * division and its floor are exact. Pure TypeScript, no I/O.
 */

export const PREDICT_LIMIT = 2 ** 48;
export const PREDICT_MIN_SHIFT = 1;
export const PREDICT_MAX_SHIFT = 4;

/** out[t - 1] = ints[t] - prediction(t) for t in 1..count-1. Requires count >= 2 and |ints| <= PREDICT_LIMIT. */
export function predictionResiduals(ints: Float64Array, count: number, shift: number, out: Float64Array): void {
  const n = 1 << shift;
  const first = ints[0]!;
  let sum = first * n;
  for (let t = 1; t < count; t++) {
    const v = ints[t]!;
    out[t - 1] = v - Math.floor(sum / n);
    sum += v - ints[t - n < 0 ? 0 : t - n]!;
  }
}

/**
 * Inverse of predictionResiduals, the reference for tests (the decoder runs the same arithmetic
 * inside its rANS loop: rans.ts ransDecodePredicted), fused with the decimal scaling: ints[t] = residual(t) +
 * prediction(t), the residual being `min + symbols[t - 1]`, and out[t] = ints[t] / scale.
 * Returns false when a value leaves ±PREDICT_LIMIT (corrupt input: the sums would stop being
 * exact); the sums stay exact while every value so far is in range, so flagging any value out
 * of range catches that before an inexact sum could matter.
 */
export function undoPrediction(first: number, min: number, symbols: Uint16Array, count: number, shift: number, ints: Float64Array, scale: number, out: Float64Array): boolean {
  const n = 1 << shift;
  const inv = 1 / n; // a power of two: sum * inv is exactly sum / n
  ints[0] = first;
  out[0] = first / scale;
  let sum = first * n;
  let inRange = Math.abs(first) <= PREDICT_LIMIT;
  const head = Math.min(n, count);
  for (let t = 1; t < head; t++) {
    const v = min + symbols[t - 1]! + Math.floor(sum * inv);
    ints[t] = v;
    out[t] = v / scale;
    sum += v - first;
    if (!(v <= PREDICT_LIMIT && v >= -PREDICT_LIMIT)) inRange = false;
  }
  for (let t = head; t < count; t++) {
    const v = min + symbols[t - 1]! + Math.floor(sum * inv);
    ints[t] = v;
    out[t] = v / scale;
    sum += v - ints[t - n]!;
    if (!(v <= PREDICT_LIMIT && v >= -PREDICT_LIMIT)) inRange = false;
  }
  return inRange;
}

/**
 * Order-0 entropy, in bits, of residuals[0..n) whose values span less than `counts.length`;
 * Infinity when they span more. `counts` is scratch.
 */
export function residualEntropyBits(residuals: Float64Array, n: number, counts: Uint32Array): number {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const r = residuals[i]!;
    if (r < lo) lo = r;
    if (r > hi) hi = r;
  }
  const size = hi - lo + 1;
  if (!(size <= counts.length)) return Infinity;
  counts.fill(0, 0, size);
  for (let i = 0; i < n; i++) counts[residuals[i]! - lo]!++;
  let bits = 0;
  for (let s = 0; s < size; s++) {
    const c = counts[s]!;
    if (c > 0) bits -= c * Math.log2(c / n);
  }
  return bits;
}
