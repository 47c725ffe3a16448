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

import { civilFromDays } from '../shared/civil-date.js';
import { GrowableBytes } from './byte-buffer.js';
import { QUADS, writeAscii, writeEightDigits, writeSmall, writeValue } from './number-text.js';

/** How the `time` column is written: epoch milliseconds or ISO 8601 UTC. */
export type CsvTimeFormat = 'ms' | 'iso';

/** The header row: every CSV result starts with it, also one without points. */
export const CSV_HEADER = 'time,tag,value\r\n';

const COMMA = 0x2c;
const MINUS = 0x2d;
const ZERO = 0x30;
const DOT = 0x2e;
const Z = 0x5a;
/** CR LF as one little-endian 16-bit store. */
const CRLF = 0x0d | (0x0a << 8);

const MINUTE_MS = 60_000;
/**
 * A row's bytes besides its tag: an ISO time (27 with a six-digit year), two commas, a value (at
 * most 24), CRLF, and slack for the 32-bit stores that may write up to three bytes past a field.
 */
const MAX_ROW_BYTES = 64;

const encoder = new TextEncoder();

/** The bytes of `name` as one CSV field: quoted (quotes doubled) when it holds a comma, a quote, CR or LF. */
export function csvField(name: string): Uint8Array {
  const needsQuotes = /[",\r\n]/.test(name);
  return encoder.encode(needsQuotes ? `"${name.replace(/"/g, '""')}"` : name);
}

/** `bytes` as little-endian 32-bit words (zero-padded), to be copied a word per store. */
function asWords(bytes: Uint8Array): Uint32Array {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  return Uint32Array.from({ length: padded.length / 4 }, (_, k) => view.getUint32(k * 4, true));
}

/** Scratch for the shared leading digits of a run of epoch-ms times (workers are single-threaded). */
const HEAD = new Uint8Array(16);
const HEAD_VIEW = new DataView(HEAD.buffer);

export class CsvPointWriter extends GrowableBytes {
  /** `,<tag>,` of the series being written, as words, and its length in bytes. */
  private tagWords: Uint32Array = asWords(Uint8Array.of(COMMA, COMMA));
  private tagBytes = 2;
  /** `2024-06-01T12:34:` (or `+012345-06-01T12:34:` past year 9999) of the minute `isoMinute`, as words. */
  private isoPrefix: Uint32Array = new Uint32Array(5);
  private isoPrefixBytes = 0;
  private isoMinute = Number.NaN;

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
    this.tagWords = asWords(withCommas);
    this.tagBytes = withCommas.length;
  }

  /**
   * One row per point [from, to). Fields go out as whole 32-bit words where they can (the tag,
   * the time's leading digits or ISO minute, CRLF), each store allowed to spill up to three
   * bytes the next field overwrites. On the bench:peers data set (`node dist/bench/result-codecs.js`)
   * that took a row from 31.0 ns with per-byte copies to 18.1 (time_format=ms; iso 68.9 to 42.6),
   * against 15.0 for a JSON point.
   */
  rows(ts: Float64Array, values: Float64Array, from: number, to: number): void {
    const tagWords = this.tagWords;
    const tagBytes = this.tagBytes;
    this.ensure((to - from) * (MAX_ROW_BYTES + tagWords.length * 4));
    const buf = this.buf;
    const view = this.view;
    const iso = this.timeFormat === 'iso';
    let p = this.len;
    // Epoch-ms times share their digits above 10^8 for 27 hours at a time (as in result-json.ts;
    // written out in both loops on purpose: the shared run state as an object's fields, not
    // locals, made the JSON writer 20% slower, 15.0 -> 18.5 ns a point in bench/result-codecs.ts).
    let headOf = -1;
    let headLength = 0;
    let headLow = 0;
    let headHigh = 0;
    for (let i = from; i < to; i++) {
      const t = ts[i];
      if (iso) p = this.writeIsoTime(view, p, t);
      else if (t < 2147483648) p = writeSmall(buf, view, p, t);
      else {
        const high = Math.floor(t / 100000000);
        if (high !== headOf) {
          headOf = high;
          headLength = writeSmall(HEAD, HEAD_VIEW, 0, high);
          headLow = HEAD_VIEW.getUint32(0, true);
          headHigh = HEAD_VIEW.getUint32(4, true);
        }
        view.setUint32(p, headLow, true);
        view.setUint32(p + 4, headHigh, true);
        p += headLength;
        p = writeEightDigits(view, p, t - high * 100000000);
      }
      for (let k = 0; k < tagWords.length; k++) view.setUint32(p + k * 4, tagWords[k], true);
      p += tagBytes;
      const v = values[i];
      if (v === v) {
        if (v === 0 && 1 / v < 0) {
          buf[p++] = MINUS;
          buf[p++] = ZERO;
        } else if (v === Infinity || v === -Infinity) p = writeAscii(buf, p, v > 0 ? 'Infinity' : '-Infinity');
        else p = writeValue(buf, view, p, v);
      }
      view.setUint16(p, CRLF, true);
      p += 2;
    }
    this.len = p;
  }

  /** `YYYY-MM-DDTHH:MM:SS.mmmZ` of epoch ms `t` (0 <= t < 2^53, an integer) at `p`. */
  private writeIsoTime(view: DataView, p: number, t: number): number {
    const minute = Math.floor(t / MINUTE_MS);
    if (minute !== this.isoMinute) this.setIsoMinute(minute);
    const prefix = this.isoPrefix;
    for (let k = 0; k < prefix.length; k++) view.setUint32(p + k * 4, prefix[k], true);
    p += this.isoPrefixBytes;
    const inMinute = t - minute * MINUTE_MS;
    const seconds = (inMinute / 1000) | 0;
    // "SS" is the last two digits of QUADS[seconds]; ".mmm" the dot and the last three of QUADS[millis].
    view.setUint16(p, QUADS[seconds] >>> 16, true);
    view.setUint32(p + 2, DOT | (QUADS[inMinute - seconds * 1000] & 0xffffff00), true);
    view.setUint8(p + 6, Z);
    return p + 7;
  }

  private setIsoMinute(minute: number): void {
    const { year, month, dayOfMonth } = civilFromDays(Math.floor(minute / 1440));
    const inDay = minute - Math.floor(minute / 1440) * 1440;
    // Past year 9999 ISO 8601 needs the expanded form, a sign and six digits (as Date#toISOString writes it).
    const yearText = year > 9999 ? `+${String(year).padStart(6, '0')}` : String(year).padStart(4, '0');
    const text = `${yearText}-${pad2(month)}-${pad2(dayOfMonth)}T${pad2(Math.floor(inDay / 60))}:${pad2(inDay % 60)}:`;
    this.isoPrefix = asWords(encoder.encode(text));
    this.isoPrefixBytes = text.length;
    this.isoMinute = minute;
  }
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}
