// The text of one import chunk (whole lines) to its points, grouped by tag: CSV `time,tag,value`
// (RFC 4180), the line protocol a historian export writes (`<tag> value=<number> <ns>`, the tag
// name whole), and any other line protocol, read by the service's own parser and named as the
// ingest routes name it (`<measurement>[,<k>=<v>…].<field>`), so an import gives the tags a
// Telegraf write would. A bad line stops the chunk: LineError names it and what is wrong.

import { parseLineProtocol, type LineSeriesCache, type Precision } from '../../native-free-codecs/line-protocol.js';
import { tagNameProblem, type PointBatch } from '../../native-free-codecs/point-batch.js';
import { linePointsByCollection } from '../../native-free-codecs/write-body-line.js';
import { SCOPE_FIELDS, type CollectionScope } from '../../shared/scope.js';
import { parseCsvTime } from './times.js';

export class LineError extends Error {
  /** 1-based, counted from the start of the input. */
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'LineError';
  }
}

/** Points grouped by tag, each tag's in the order of the lines; what import-body.ts encodes. */
export type ChunkPoints = Pick<PointBatch, 'tagNames' | 'tagStart' | 'timestamps' | 'values' | 'pointCount'>;

export interface ParseContext {
  /** Line number of the chunk's first line. */
  firstLine: number;
  /** Times below it are refused here with a hint (storage.minTimestampMs, 10^11 by default). */
  minTimestampMs: number;
}

/** The first line of a historian export in line protocol; import reads such files with the tag name whole. */
export const EXPORT_MARKER = '# historian export v1';

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const HASH = 0x23;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const MAX_MS = 9007199254740991;

/** Collects points in line order, then groups them by tag (a stable counting sort). */
class Collector {
  private readonly tagOf = new Map<string, number>();
  readonly names: string[] = [];
  private tag = new Uint32Array(1024);
  private ts = new Float64Array(1024);
  private vs = new Float64Array(1024);
  count = 0;

  /** Index of the tag whose raw field text (latin1) is `raw`; `decode` names it the first time. */
  tagIndex(raw: string, decode: () => string): number {
    let t = this.tagOf.get(raw);
    if (t === undefined) {
      t = this.names.length;
      this.names.push(decode());
      this.tagOf.set(raw, t);
    }
    return t;
  }

  add(tag: number, ms: number, value: number): void {
    if (this.count === this.ts.length) this.grow();
    this.tag[this.count] = tag;
    this.ts[this.count] = ms;
    this.vs[this.count++] = value;
  }

  private grow(): void {
    const n = this.ts.length * 2;
    const tag = new Uint32Array(n);
    const ts = new Float64Array(n);
    const vs = new Float64Array(n);
    tag.set(this.tag);
    ts.set(this.ts);
    vs.set(this.vs);
    [this.tag, this.ts, this.vs] = [tag, ts, vs];
  }

  finish(): ChunkPoints {
    const tags = this.names.length;
    const tagStart = new Uint32Array(tags + 1);
    for (let i = 0; i < this.count; i++) tagStart[this.tag[i] + 1]++;
    for (let t = 0; t < tags; t++) tagStart[t + 1] += tagStart[t];
    const fill = tagStart.slice(0, tags);
    const timestamps = new Float64Array(this.count);
    const values = new Float64Array(this.count);
    for (let i = 0; i < this.count; i++) {
      const at = fill[this.tag[i]]++;
      timestamps[at] = this.ts[i];
      values[at] = this.vs[i];
    }
    return { tagNames: this.names, tagStart, timestamps, values, pointCount: this.count };
  }
}

/** A tag name from its bytes: valid UTF-8 and a name the store takes. */
function tagName(bytes: Uint8Array): string {
  let name: string;
  try {
    name = utf8.decode(bytes);
  } catch {
    throw new Error('the tag name is not valid UTF-8');
  }
  const problem = tagNameProblem(name);
  if (problem !== null) throw new Error(`tag ${JSON.stringify(name)}: ${problem}`);
  return name;
}

function checkTime(ms: number, text: () => string, ctx: ParseContext): void {
  if (ms < ctx.minTimestampMs) {
    throw new Error(`time ${text()} is before storage.minTimestampMs (${ctx.minTimestampMs}): epoch seconds? times are epoch milliseconds or RFC 3339`);
  }
}

/** A number field as the store takes it: decimal text of a finite number. */
function numberAt(buf: Buffer, start: number, end: number): number {
  for (let i = start; i < end; i++) {
    const c = buf[i];
    // Digits, sign, point, exponent: what Number() then reads exactly (no hex, no "Infinity", no blanks).
    if (!((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45)) return NaN;
  }
  return end > start ? Number(buf.toString('latin1', start, end)) : NaN;
}

/** Epoch-ms digits without a sign, or -1 when the text is anything else. */
function digitsAt(buf: Buffer, start: number, end: number): number {
  if (end === start || end - start > 16) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i] - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n <= MAX_MS ? n : -1;
}

// ---- CSV ------------------------------------------------------------------------------------

/** One CSV field from `p`: [start, end) of its text, where the next begins, and whether it was quoted. */
interface Field {
  start: number;
  end: number;
  next: number;
  quoted: boolean;
}

function csvField(buf: Buffer, p: number, end: number): Field {
  if (buf[p] !== QUOTE) {
    let q = p;
    while (q < end && buf[q] !== COMMA) {
      if (buf[q] === QUOTE) throw new Error('a quote inside a field that does not start with one (RFC 4180: quote the whole field)');
      q++;
    }
    return { start: p, end: q, next: q, quoted: false };
  }
  let q = p + 1;
  for (;;) {
    if (q >= end) throw new Error('a quoted field is not closed on its line (a tag name cannot hold a line break)');
    if (buf[q] === QUOTE) {
      if (buf[q + 1] === QUOTE && q + 1 < end) q += 2;
      else break;
    } else q++;
  }
  if (q + 1 < end && buf[q + 1] !== COMMA) throw new Error('a closing quote must end its field');
  return { start: p + 1, end: q, next: q + 1, quoted: true };
}

/** The text of a quoted field with its doubled quotes made single. */
function unquoted(buf: Buffer, f: Field): Uint8Array {
  const raw = buf.subarray(f.start, f.end);
  if (!f.quoted || !raw.includes(QUOTE)) return raw;
  return Buffer.from(raw.toString('latin1').replace(/""/g, '"'), 'latin1');
}

const HEADER = /^"?time"?,"?tag"?,"?value"?$/i;

/**
 * Points of CSV lines `time,tag,value`: time epoch ms or RFC 3339, tag quoted as RFC 4180 when it
 * holds a comma or a quote, value a finite decimal number. A header line is skipped where it
 * is the input's first line; blank lines are skipped.
 */
export function parseCsvChunk(buf: Buffer, ctx: ParseContext): ChunkPoints {
  const out = new Collector();
  let line = ctx.firstLine;
  // A UTF-8 byte order mark (spreadsheets write one) is not part of the first field.
  const bom = line === 1 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  for (let s = bom; s < buf.length; line++) {
    let e = buf.indexOf(LF, s);
    if (e < 0) e = buf.length;
    const next = e + 1;
    if (e > s && buf[e - 1] === CR) e--;
    try {
      if (e > s && !(line === 1 && HEADER.test(buf.toString('latin1', s, Math.min(e, s + 40)).trim()))) csvLine(buf, s, e, out, ctx);
    } catch (err) {
      throw new LineError(line, (err as Error).message);
    }
    s = next;
  }
  return out.finish();
}

function csvLine(buf: Buffer, s: number, e: number, out: Collector, ctx: ParseContext): void {
  const time = csvField(buf, s, e);
  if (time.next >= e) throw new Error('expected 3 fields time,tag,value, found 1');
  const tag = csvField(buf, time.next + 1, e);
  if (tag.next >= e) throw new Error('expected 3 fields time,tag,value, found 2');
  const value = csvField(buf, tag.next + 1, e);
  if (value.next < e) throw new Error('expected 3 fields time,tag,value, found more');

  let ms = digitsAt(buf, time.start, time.end);
  if (ms < 0) {
    const parsed = parseCsvTime(buf.toString('latin1', time.start, time.end));
    if (typeof parsed === 'string') throw new Error(parsed);
    ms = parsed;
  }
  checkTime(ms, () => buf.toString('latin1', time.start, time.end), ctx);
  if (tag.end === tag.start) throw new Error('the tag is empty');
  const t = out.tagIndex(buf.toString('latin1', tag.start, tag.end), () => tagName(unquoted(buf, tag)));
  const v = numberAt(buf, value.start, value.end);
  if (!Number.isFinite(v)) {
    const text = buf.subarray(value.start, value.end).toString('utf8');
    throw new Error(text === '' ? 'the value is empty' : `value ${JSON.stringify(text.slice(0, 40))} is not a finite number`);
  }
  out.add(t, ms, v);
}

// ---- line protocol as a historian export writes it --------------------------------------------

const EXPORT_SHAPE = 'a historian export line is <tag> value=<number> <time in ns>';

/**
 * Points of lines `<tag> value=<number> <ns>`, the tag name escaped as a measurement (`\,` `\ `
 * `\\`, and `\#` for a leading `#`, which would otherwise start a comment). Lines starting with
 * `#` are comments.
 */
export function parseExportLines(buf: Buffer, ctx: ParseContext): ChunkPoints {
  const out = new Collector();
  const scratch = Buffer.alloc(1024);
  let line = ctx.firstLine;
  for (let s = 0; s < buf.length; line++) {
    let e = buf.indexOf(LF, s);
    if (e < 0) e = buf.length;
    const next = e + 1;
    if (e > s && buf[e - 1] === CR) e--;
    try {
      if (e > s && buf[s] !== HASH) exportLine(buf, s, e, out, ctx, scratch);
    } catch (err) {
      throw new LineError(line, (err as Error).message);
    }
    s = next;
  }
  return out.finish();
}

function exportLine(buf: Buffer, s: number, e: number, out: Collector, ctx: ParseContext, scratch: Buffer): void {
  let p = s;
  let escaped = false;
  while (p < e && buf[p] !== SPACE) {
    if (buf[p] === COMMA) throw new Error(`the tag has an unescaped comma (${EXPORT_SHAPE}, with "," escaped as "\\,")`);
    if (buf[p] === BACKSLASH) {
      escaped = true;
      p++;
    }
    p++;
  }
  if (p >= e) throw new Error(`no value (${EXPORT_SHAPE})`);
  const nameEnd = p;
  if (buf.toString('latin1', p, p + 7) !== ' value=') throw new Error(`expected " value=" after the tag (${EXPORT_SHAPE})`);
  p += 7;
  const valueStart = p;
  while (p < e && buf[p] !== SPACE) p++;
  let valueEnd = p;
  if (buf[valueEnd - 1] === 0x69 || buf[valueEnd - 1] === 0x75) valueEnd--; // integer `i`, unsigned `u`
  const v = numberAt(buf, valueStart, valueEnd);
  if (!Number.isFinite(v)) throw new Error(`value ${JSON.stringify(buf.toString('latin1', valueStart, p).slice(0, 40))} is not a finite number`);
  if (p >= e) throw new Error(`no timestamp (${EXPORT_SHAPE})`);
  const tsStart = p + 1;
  const ms = nanosToMs(buf, tsStart, e);
  if (ms < 0) throw new Error(`timestamp ${JSON.stringify(buf.toString('latin1', tsStart, e).slice(0, 40))} is not nanoseconds since the epoch up to 2^53-1 ms`);
  checkTime(ms, () => `${buf.toString('latin1', tsStart, e)} ns`, ctx);
  const raw = buf.toString('latin1', s, nameEnd);
  const t = out.tagIndex(raw, () => {
    if (!escaped) return tagName(buf.subarray(s, nameEnd));
    const bytes = nameEnd - s <= scratch.length ? scratch : Buffer.alloc(nameEnd - s);
    let k = 0;
    for (let i = s; i < nameEnd; i++) {
      const c = buf[i];
      const n = buf[i + 1];
      if (c === BACKSLASH && i + 1 < nameEnd && (n === COMMA || n === SPACE || n === BACKSLASH || (n === HASH && i === s))) i++;
      bytes[k++] = buf[i];
    }
    return tagName(bytes.subarray(0, k));
  });
  out.add(t, ms, v);
}

/** Epoch ms of nanosecond digits, rounding down (the last six digits dropped), or -1. */
function nanosToMs(buf: Buffer, start: number, end: number): number {
  if (end === start) return -1;
  for (let i = start; i < end; i++) if (buf[i] < 0x30 || buf[i] > 0x39) return -1;
  return end - start <= 6 ? 0 : digitsAt(buf, start, end - 6);
}

/** The text a historian export writes for a tag name as a measurement (parseExportLines reads it back). */
export function exportMeasurement(tag: string): string {
  const escaped = tag.replace(/[\\, ]/g, (c) => `\\${c}`);
  return escaped.startsWith('#') ? `\\${escaped}` : escaped;
}

// ---- any other line protocol: the ingest routes' mapping ---------------------------------------

/**
 * Points of line protocol as the ingest routes store them (WIRE.md part 2 "Ingest"): the same
 * parser, the same tag names. Differences on purpose: a bad line fails the chunk instead of
 * being dropped; a line without a timestamp is refused (a rerun would write it at another time);
 * a line whose scope tags (organization, site, unit, grid) name another collection is refused
 * (an import writes one collection).
 */
export function parseLineProtocolChunk(buf: Buffer, ctx: ParseContext, precision: Precision, scope: CollectionScope, seriesCache?: LineSeriesCache): ChunkPoints {
  const lines = parseLineProtocol(buf, { precision, nowMs: NaN, minTimestampMs: ctx.minTimestampMs, seriesCache });
  if (lines.firstError) throw new LineError(ctx.firstLine + lines.firstError.line - 1, lines.firstError.message);
  for (let i = 0; i < lines.pointCount; i++) {
    if (Number.isNaN(lines.timestamps[i])) throw firstBadLine(buf, ctx, precision, 'no timestamp: an import needs one on every line', (b) => b.pointCount > 0 && Number.isNaN(b.timestamps[0]));
  }
  for (const series of lines.series) {
    const field = SCOPE_FIELDS.find((f) => series.scope[f] !== undefined && series.scope[f] !== scope[f]);
    if (field !== undefined) {
      const message = `line tag ${field}=${series.scope[field]} names another collection than ${SCOPE_FIELDS.map((f) => scope[f]).join('/')}; an import writes one collection`;
      throw firstBadLine(buf, ctx, precision, message, (b) => b.series.some((s) => s.scope[field] !== undefined && s.scope[field] !== scope[field]));
    }
  }
  const [only, ...more] = linePointsByCollection(lines, scope);
  if (more.length > 0) throw new Error('line protocol chunk spans collections'); // excluded by the scope check above
  return only ? only.batch : { tagNames: [], tagStart: new Uint32Array(1), timestamps: new Float64Array(0), values: new Float64Array(0), pointCount: 0 };
}

/** The LineError of the first line for which `bad` holds (parsed alone); the slow path of a refusal. */
function firstBadLine(buf: Buffer, ctx: ParseContext, precision: Precision, message: string, bad: (lines: ReturnType<typeof parseLineProtocol>) => boolean): LineError {
  let line = ctx.firstLine;
  for (let s = 0; s < buf.length; line++) {
    let e = buf.indexOf(LF, s);
    if (e < 0) e = buf.length;
    if (bad(parseLineProtocol(buf.subarray(s, e), { precision, nowMs: NaN }))) return new LineError(line, message);
    s = e + 1;
  }
  return new LineError(ctx.firstLine, message);
}
