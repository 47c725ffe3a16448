// Numbers as ASCII digits written straight into a byte buffer, shared by the JSON and CSV result
// writers: integers (timestamps) digit by digit through lookup tables, values as JSON.stringify
// prints them (writeValue: a four-decimal fast path, else Number#toString, the shortest text
// that reads back to the same double). No per-number strings on the fast paths. Writers may
// store up to three bytes past a number (32-bit stores): callers reserve room for that.

const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;

/**
 * "0000".."9999" as ASCII quadruples packed little-endian into one 32-bit word each (40 KB):
 * four digits go out in one unaligned store, and the last d of them are `QUADS[n] >>> 8 * (4 - d)`.
 * One store per field instead of one per byte halved the encode time of raw JSON queries.
 */
export const QUADS = new Uint32Array(10000);
for (let i = 0; i < 10000; i++) {
  const digit = (place: number) => ZERO + (Math.floor(i / place) % 10);
  QUADS[i] = digit(1000) | (digit(100) << 8) | (digit(10) << 16) | (digit(1) << 24);
}

/** For a fraction 1..9999 of four decimals: how many of its digits are left once trailing zeros go. */
const FRACTION_DIGITS = new Uint8Array(10000);
for (let i = 1; i < 10000; i++) FRACTION_DIGITS[i] = i % 1000 === 0 ? 1 : i % 100 === 0 ? 2 : i % 10 === 0 ? 3 : 4;

/** "00".."99" as ASCII byte pairs. */
export const DIGIT_PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  DIGIT_PAIRS[i * 2] = ZERO + Math.floor(i / 10);
  DIGIT_PAIRS[i * 2 + 1] = ZERO + (i % 10);
}

/**
 * Writes `v` as JSON.stringify would at `p`; returns the position after it. May store up to
 * three bytes past the number: callers reserve room for that.
 */
export function writeValue(buf: Uint8Array, view: DataView, p: number, v: number): number {
  // Four-decimal fast path: when k/10^4 reproduces v exactly, the decimal k/10^4 without its
  // trailing zeros is the unique shortest round-trip string of v (any other decimal with as few
  // digits is at least 10^-4 away, far beyond v's ulp below 2^31), hence what Number#toString
  // prints. |k| < 2^31 · 10^4 keeps the whole part in 32-bit arithmetic. NaN and the
  // infinities fail one of the two tests. Plant values rarely carry more than four decimals.
  const k = Math.round(v * 10000);
  if (k / 10000 !== v || !(k < MAX_TEN_THOUSANDTHS && k > -MAX_TEN_THOUSANDTHS)) {
    return writeAscii(buf, p, Number.isFinite(v) ? String(v) : 'null'); // JSON cannot carry NaN/Infinity
  }
  let n = k;
  if (n < 0) {
    buf[p++] = MINUS;
    n = -n;
  }
  const whole = Math.floor(n / 10000);
  const fraction = n - whole * 10000;
  p = writeSmall(buf, view, p, whole);
  if (fraction !== 0) {
    buf[p] = DOT;
    view.setUint32(p + 1, QUADS[fraction], true); // "x.5", not "x.5000"
    p += 1 + FRACTION_DIGITS[fraction];
  }
  return p;
}

const MAX_TEN_THOUSANDTHS = 2147483648 * 10000;

export function writeAscii(buf: Uint8Array, p: number, text: string): number {
  for (let i = 0; i < text.length; i++) buf[p++] = text.charCodeAt(i);
  return p;
}

/** A non-negative integer below 2^53; may store up to three bytes past it. */
export function writeInteger(buf: Uint8Array, view: DataView, p: number, n: number): number {
  if (n < 2147483648) return writeSmall(buf, view, p, n);
  const high = Math.floor(n / 100000000);
  p = writeSmall(buf, view, p, high);
  return writeEightDigits(view, p, n - high * 100000000);
}

/**
 * 0 <= n < 2^31, in 32-bit integer arithmetic; below 10^8 as one or two QUADS stores
 * (may write up to three bytes past the digits, inside the caller's reservation).
 */
export function writeSmall(buf: Uint8Array, view: DataView, p: number, n: number): number {
  if (n < 10000) {
    const digits = n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : 4;
    view.setUint32(p, QUADS[n] >>> ((4 - digits) << 3), true);
    return p + digits;
  }
  if (n < 100000000) {
    const high = (n / 10000) | 0;
    const digits = high < 10 ? 1 : high < 100 ? 2 : high < 1000 ? 3 : 4;
    view.setUint32(p, QUADS[high] >>> ((4 - digits) << 3), true);
    view.setUint32(p + digits, QUADS[n - high * 10000], true);
    return p + digits + 4;
  }
  // Nine or ten digits: two per step from the pair table, written backwards.
  const end = p + (n < 1000000000 ? 9 : 10);
  let q = end;
  while (n >= 100) {
    const next = (n / 100) | 0;
    const r = (n - next * 100) * 2;
    buf[--q] = DIGIT_PAIRS[r + 1];
    buf[--q] = DIGIT_PAIRS[r];
    n = next;
  }
  if (n >= 10) {
    buf[--q] = DIGIT_PAIRS[n * 2 + 1];
    buf[--q] = DIGIT_PAIRS[n * 2];
  } else {
    buf[--q] = ZERO + n;
  }
  return end;
}

/** Exactly eight digits, zero-padded; 0 <= n < 10^8: two QUADS stores. */
export function writeEightDigits(view: DataView, p: number, n: number): number {
  const high = (n / 10000) | 0;
  view.setUint32(p, QUADS[high], true);
  view.setUint32(p + 4, QUADS[n - high * 10000], true);
  return p + 8;
}

/**
 * Go's strconv.FormatFloat(v, 'f', -1, 64): the shortest digits that round-trip, never an
 * exponent; `NaN`, `+Inf`, `-Inf`. How Prometheus writes sample values, and InfluxDB float fields.
 */
export function goFloatText(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  const text = String(v);
  const e = text.indexOf('e');
  if (e < 0) return text;
  const sign = text.startsWith('-') ? '-' : '';
  const mantissa = text.slice(sign.length, e);
  const exponent = Number(text.slice(e + 1));
  const digits = mantissa.replace('.', '');
  const point = (mantissa.indexOf('.') < 0 ? mantissa.length : mantissa.indexOf('.')) + exponent;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
