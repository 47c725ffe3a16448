// Writes query results as CSV (RFC 4180; WIRE.md part 3 "Time parameters and CSV") straight into
// a reusable buffer: after the header `time,tag,value`, one row `time,tag,value` per point,
// CRLF line ends. `time` is epoch ms, or ISO 8601 UTC with milliseconds
// (2024-06-01T00:00:00.000Z). A tag is quoted when it holds a comma, a quote, CR or LF, with its
// quotes doubled; it is encoded once per series and copied into each row. Values are printed as
// the JSON writer prints them (the shortest text that reads back to the same double), except
// that CSV can say what JSON cannot: -0 is `-0`, the infinities are `Infinity` / `-Infinity`
// (Python's float() and pandas read both), and NaN (no value: the `gaps` aggregator's markers)
// is an empty field, which pandas reads as NaN.
//
// Pure TypeScript: runs in a browser.

import { GrowableBytes } from './byte-buffer.js';
import { writeInteger, writeValue } from './result-json.js';

/** How the `time` column is written: epoch milliseconds or ISO 8601 UTC. */
export type CsvTimeFormat = 'ms' | 'iso';

/** The header row: every CSV result starts with it, also one without points. */
export const CSV_HEADER = 'time,tag,value\r\n';

const COMMA = 0x2c;
const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;
const MINUS = 0x2d;
const ZERO = 0x30;
const COLON = 0x3a;
const DOT = 0x2e;

const DAY_MS = 86_400_000;
/** A row's bytes besides its tag: an ISO time (27 with a six-digit year), two commas, a value (at most 24), CRLF, and slack for the writers' 32-bit stores. */
const MAX_ROW_BYTES = 64;

const encoder = new TextEncoder();

/** "00".."99" as ASCII byte pairs. */
const DIGIT_PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  DIGIT_PAIRS[i * 2] = ZERO + Math.floor(i / 10);
  DIGIT_PAIRS[i * 2 + 1] = ZERO + (i % 10);
}

/** The bytes of `name` as one CSV field: quoted (quotes doubled) when it holds a comma, a quote, CR or LF. */
export function csvField(name: string): Uint8Array {
  const needsQuotes = /[",\r\n]/.test(name);
  return encoder.encode(needsQuotes ? `"${name.replace(/"/g, '""')}"` : name);
}

export class CsvPointWriter extends GrowableBytes {
  /** `,<tag>,` of the series being written. */
  private tagField: Uint8Array = Uint8Array.of(COMMA, COMMA);
  /** The ISO date part (`2024-06-01T`, or `+012345-06-01T` past year 9999) of the day `isoDay`, kept across rows. */
  private readonly isoDate = new Uint8Array(16);
  private isoDateLength = 0;
  private isoDay = Number.NaN;

  constructor(
    initialCapacity = 1 << 16,
    private timeFormat: CsvTimeFormat = 'ms',
  ) {
    super(initialCapacity);
  }

  /** The time format of the rows that follow (a pooled writer serves queries of either). */
  setTimeFormat(format: CsvTimeFormat): void {
    this.timeFormat = format;
  }

  /** The rows that follow are of tag `name`. */
  beginSeries(name: string): void {
    const field = csvField(name);
    const withCommas = new Uint8Array(field.length + 2);
    withCommas[0] = COMMA;
    withCommas.set(field, 1);
    withCommas[withCommas.length - 1] = COMMA;
    this.tagField = withCommas;
  }

  /** One row per point [from, to). */
  rows(ts: Float64Array, values: Float64Array, from: number, to: number): void {
    const tagField = this.tagField;
    const tagBytes = tagField.length;
    this.ensure((to - from) * (MAX_ROW_BYTES + tagBytes));
    const buf = this.buf;
    const view = this.view;
    const iso = this.timeFormat === 'iso';
    let p = this.len;
    for (let i = from; i < to; i++) {
      p = iso ? this.writeIsoTime(buf, p, ts[i]) : writeInteger(buf, view, p, ts[i]);
      // Tags are mostly a few bytes: a loop beats set() on a subarray at that size.
      for (let k = 0; k < tagBytes; k++) buf[p++] = tagField[k];
      const v = values[i];
      if (v === v) {
        if (v === 0 && 1 / v < 0) {
          buf[p++] = MINUS;
          buf[p++] = ZERO;
        } else if (v === Infinity || v === -Infinity) p = writeAscii(buf, p, v > 0 ? 'Infinity' : '-Infinity');
        else p = writeValue(buf, view, p, v);
      }
      buf[p++] = CR;
      buf[p++] = LF;
    }
    this.len = p;
  }

  /** `YYYY-MM-DDTHH:MM:SS.mmmZ` of epoch ms `t` (0 <= t < 2^53, an integer) at `p`. */
  private writeIsoTime(buf: Uint8Array, p: number, t: number): number {
    const day = Math.floor(t / DAY_MS);
    if (day !== this.isoDay) this.setIsoDate(day);
    const date = this.isoDate;
    for (let k = 0; k < this.isoDateLength; k++) buf[p++] = date[k];
    let rest = t - day * DAY_MS;
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    const millis = rest - seconds * 1000;
    p = writePair(buf, p, hours);
    buf[p++] = COLON;
    p = writePair(buf, p, minutes);
    buf[p++] = COLON;
    p = writePair(buf, p, seconds);
    buf[p++] = DOT;
    buf[p++] = ZERO + Math.floor(millis / 100);
    p = writePair(buf, p, millis % 100);
    buf[p++] = 0x5a; // Z
    return p;
  }

  private setIsoDate(day: number): void {
    const { year, month, dayOfMonth } = civilFromDays(day);
    // Past year 9999 ISO 8601 needs the expanded form, a sign and six digits (as Date#toISOString writes it).
    const text = `${year > 9999 ? `+${String(year).padStart(6, '0')}` : String(year).padStart(4, '0')}-${pad2(month)}-${pad2(dayOfMonth)}T`;
    for (let k = 0; k < text.length; k++) this.isoDate[k] = text.charCodeAt(k);
    this.isoDateLength = text.length;
    this.isoDay = day;
  }
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

function writePair(buf: Uint8Array, p: number, n: number): number {
  buf[p] = DIGIT_PAIRS[n * 2];
  buf[p + 1] = DIGIT_PAIRS[n * 2 + 1];
  return p + 2;
}

function writeAscii(buf: Uint8Array, p: number, text: string): number {
  for (let i = 0; i < text.length; i++) buf[p++] = text.charCodeAt(i);
  return p;
}

/** The proleptic Gregorian date of a day number (days since 1970-01-01): the well-known era arithmetic. */
export function civilFromDays(days: number): { year: number; month: number; dayOfMonth: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const dayOfEra = z - era * 146097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36524) - Math.floor(dayOfEra / 146096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153);
  const dayOfMonth = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfMonth };
}
