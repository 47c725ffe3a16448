/**
 * InfluxDB line protocol, parsed straight from the request bytes for `/ingest/v2`
 * (../shared/WIRE.md part 2 "Ingest"). Pure TypeScript: runs in a browser.
 *
 *   measurement[,tagKey=tagValue…] fieldKey=fieldValue[,fieldKey=fieldValue…] [timestamp]
 *
 * Output: one columnar LineProtocolBatch, no per-point objects. Each point is a series index,
 * a field index, an epoch-ms timestamp and a value. A series is a measurement with its tags,
 * mapped as WIRE says: tags named organization/site/unit/grid become its `scope`, the others
 * join `name` in sorted key order (`m,a=1,b=2`); the historian tag of a point is
 * `<series name>.<field key>` (lineTagName). Series and field keys are interned by their raw
 * bytes, so a series seen before costs a hash and a byte compare, not a string.
 *
 * Values: float, integer (`i`), unsigned (`u`) and boolean (1 / 0) fields are points. String
 * fields are skipped and counted (`stringFields`), as WIRE says; a line of only strings is good
 * and gives no point. NaN and ±Inf are refused (the reference refuses them; storage keeps finite
 * values only), as is a float out of the double range.
 *
 * Partial write: a bad line is dropped whole (none of its fields is kept) and the parser goes
 * on; `rejectedLines` counts them and `firstError` has the first one's 1-based line number and
 * what is wrong. partialWriteMessage() is WIRE's `partial write: … dropped=<n>` text. The
 * parser never throws on any input (LineProtocolError only for a bad precision argument).
 *
 * Rules, after the line protocol reference:
 * - lines end at LF (CRLF accepted); blank lines and lines whose first non-blank byte is `#`
 *   are skipped; spaces and tabs before a line are skipped;
 * - escapes: in a measurement `\,` `\ `; in tag keys, tag values and field keys `\,` `\=` `\ `;
 *   everywhere `\\` is one backslash; a backslash before any other byte is a literal backslash.
 *   String fields: `\"` and `\\`; a quoted string may span lines (as in InfluxDB);
 * - measurement, tag keys, tag values and field keys are not empty; a tag key appears once;
 *   a repeated field key in a line gives two points;
 * - floats: every decimal form Go's strconv prints or parses (`1`, `-1.5`, `.5`, `5.`,
 *   `1e+20`, `1E-5`, leading zeros), no leading `+`, no hex or binary-exponent forms;
 *   integers fit int64, unsigned uint64 (values above 2^53 are rounded to the nearest double);
 *   booleans t T true True TRUE f F false False FALSE;
 * - timestamp: an int64 in the given precision (ns, us, ms, s; default ns), converted to epoch
 *   ms rounding down; none means the caller's `nowMs`. The result must be an integer in
 *   minTimestampMs..2^53-1 (the store's rule), else the line is bad;
 * - the historian tag name must be a valid tag name (point-batch.ts tagNameProblem: at most
 *   256 bytes of UTF-8, no control character), and names must be valid UTF-8.
 */

import { isScopeField, type ScopeField } from '../shared/scope.js';
import { asciiString, exactDecimal, MAX_TIMESTAMP, tagNameProblem, TWO_POW_53, type WriteScope } from './point-batch.js';

export type Precision = 'ns' | 'us' | 'ms' | 's';

export interface LineProtocolOptions {
  /** Unit of the timestamps in the body; `ns` when not given. */
  precision?: Precision;
  /** Epoch ms given to lines without a timestamp (the server time of the request). */
  nowMs: number;
  /** The smallest timestamp accepted (storage.minTimestampMs); 0 when not given. */
  minTimestampMs?: number;
  /**
   * Series sections already read, kept by the caller from one body to the next (a collector
   * sends the same series in every batch), so each is taken apart once, not once per body.
   */
  seriesCache?: LineSeriesCache;
  /**
   * Point columns to parse into, kept by a caller that parses body after body (a storage
   * worker): no four fresh arrays a body for the GC. The batch's arrays are then views of them,
   * valid until the next parse with the same columns.
   */
  columns?: LineColumns;
}

/** Reusable point columns for parseLineProtocol (LineProtocolOptions.columns); grown as needed. */
export class LineColumns {
  pointSeries: Uint32Array = new Uint32Array(0);
  pointField: Uint32Array = new Uint32Array(0);
  timestamps: Float64Array = new Float64Array(0);
  values: Float64Array = new Float64Array(0);
}

/** What a series section says: the series, its identity by content, its name's UTF-8 length. */
interface SeriesDescription {
  series: LineSeries;
  content: string;
  nameBytes: number;
}

/**
 * Series sections by their raw bytes, or why the section is bad. Bounded. Found by the FNV-1a
 * hash the parser has already taken and a compare with a copy of the bytes (a latin1 string
 * key cost a string build and its hashing per series per body).
 */
export class LineSeriesCache {
  private readonly byHash = new Map<number, Array<{ raw: Uint8Array; known: SeriesDescription | string }>>();
  private size = 0;

  constructor(private readonly maxEntries = 50_000) {}

  get entries(): number {
    return this.size;
  }

  find(hash: number, b: Uint8Array, start: number, end: number): SeriesDescription | string | undefined {
    const list = this.byHash.get(hash);
    if (list === undefined) return undefined;
    const len = end - start;
    for (const { raw, known } of list) {
      if (raw.length !== len) continue;
      let i = 0;
      while (i < len && raw[i] === b[start + i]) i++;
      if (i === len) return known;
    }
    return undefined;
  }

  remember(hash: number, b: Uint8Array, start: number, end: number, known: SeriesDescription | string): void {
    if (this.size >= this.maxEntries) {
      this.byHash.clear();
      this.size = 0;
    }
    const entry = { raw: b.slice(start, end), known };
    const list = this.byHash.get(hash);
    if (list === undefined) this.byHash.set(hash, [entry]);
    else list.push(entry);
    this.size++;
  }
}

export interface LineSeries {
  measurement: string;
  /** Every tag of the line, sorted by key (byte order of the UTF-16 strings). */
  tags: Array<[string, string]>;
  /** The scope tags (organization, site, unit, grid) of the line; the route fills the rest from the client. */
  scope: WriteScope;
  /** `<measurement>[,<k>=<v>…]` over the non-scope tags in key order, unescaped. */
  name: string;
}

export interface LineProblem {
  /** 1-based line number in the body. */
  line: number;
  message: string;
}

export interface LineProtocolBatch {
  /**
   * Distinct series (by content: the same tags in another order are one series). A series
   * read on a line dropped later (a bad field) stays listed with no point; go by the points.
   */
  series: LineSeries[];
  /** Distinct field keys, unescaped. */
  fieldKeys: string[];
  pointCount: number;
  /** Per point (the first pointCount entries): index into series, index into fieldKeys, epoch ms, value. */
  pointSeries: Uint32Array;
  pointField: Uint32Array;
  timestamps: Float64Array;
  values: Float64Array;
  /** Lines that held a point or a string field (good lines; comments and blank lines excluded). */
  acceptedLines: number;
  rejectedLines: number;
  /** String field values skipped on good lines. */
  stringFields: number;
  firstError: LineProblem | null;
}

export class LineProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LineProtocolError';
  }
}

/** The historian tag of point i: `<series name>.<field key>`. */
export function lineTagName(batch: LineProtocolBatch, i: number): string {
  return `${batch.series[batch.pointSeries[i]].name}.${batch.fieldKeys[batch.pointField[i]]}`;
}

/** WIRE's partial-write error text, or null when every line was good. */
export function partialWriteMessage(batch: LineProtocolBatch): string | null {
  const e = batch.firstError;
  if (e === null) return null;
  return `partial write: line ${e.line}: ${e.message} dropped=${batch.rejectedLines}`;
}

export function parseLineProtocol(body: Uint8Array, options: LineProtocolOptions): LineProtocolBatch {
  return new LineParser(body, options).parse();
}

// Bytes.
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const HASH = 0x23;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const D0 = 0x30;
const D9 = 0x39;
const EQUALS = 0x3d;
const UPPER_E = 0x45;
const UPPER_F = 0x46;
const UPPER_I = 0x49;
const UPPER_N = 0x4e;
const UPPER_T = 0x54;
const BACKSLASH = 0x5c;
const LOWER_E = 0x65;
const LOWER_F = 0x66;
const LOWER_I = 0x69;
const LOWER_N = 0x6e;
const LOWER_T = 0x74;
const LOWER_U = 0x75;

/** FNV-1a's 32-bit offset basis, as a signed int32. */
const FNV_OFFSET = 0x811c9dc5 | 0;

// What fieldValue read.
const POINT = 1;
const STRING = 2;
const INT64_MAX_DIGITS = asciiBytes('9223372036854775807');
const INT64_MIN_DIGITS = asciiBytes('9223372036854775808');
const UINT64_MAX_DIGITS = asciiBytes('18446744073709551615');
const BOOLEAN_WORDS = ['t', 'T', 'true', 'True', 'TRUE', 'f', 'F', 'false', 'False', 'FALSE'].map(asciiBytes);
const MAX_NAME_BYTES = 256;

/** Digits of a timestamp dropped to reach ms, by precision (s multiplies instead). */
const DROPPED_DIGITS: Record<Precision, number> = { ns: 6, us: 3, ms: 0, s: -3 };

// Which bytes a backslash escapes in a measurement and in keys / tag values.
const MEASUREMENT_ESCAPES = new Uint8Array(256);
const KEY_ESCAPES = new Uint8Array(256);
for (const c of [COMMA, SPACE, BACKSLASH]) MEASUREMENT_ESCAPES[c] = 1;
for (const c of [COMMA, SPACE, BACKSLASH, EQUALS]) KEY_ESCAPES[c] = 1;

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

function asciiBytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** A text for a message: quoted, cut short so a huge bogus token stays readable. */
function quoted(b: Uint8Array, start: number, end: number): string {
  let s = '';
  const stop = Math.min(end, start + 64);
  for (let i = start; i < stop; i++) s += String.fromCharCode(b[i]);
  return JSON.stringify(end > stop ? `${s}…` : s);
}

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** A problem with one line: caught by the line loop, which drops the line. */
class LineFault {
  constructor(readonly message: string) {}
}

function fault(message: string): never {
  throw new LineFault(message);
}

/**
 * Raw byte strings (a series section, a field key) to an index, by an FNV-1a hash of the bytes
 * and a compare against the first occurrence, which stays in the body.
 */
class RawInterner {
  private readonly byHash = new Map<number, number[]>();
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  /** Per entry: what it stands for (an index), or -1 with a problem. */
  readonly targets: number[] = [];
  readonly problems: Array<string | null> = [];
  /** Per entry: the entry that followed it last time (-1: none yet), the guess for the next line or field. */
  readonly next: number[] = [];
  /** Per series entry: the raw field key its line began with last time (-1: none yet). */
  readonly firstField: number[] = [];
  private readonly view: DataView;

  constructor(private readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  find(hash: number, start: number, end: number): number {
    const ids = this.byHash.get(hash);
    if (ids === undefined) return -1;
    const len = end - start;
    for (const id of ids) {
      const s = this.starts[id];
      if (this.ends[id] - s === len && this.sameBytes(s, start, len)) return id;
    }
    return -1;
  }

  /** Length of entry `id` when the bytes at `at` are exactly it followed by `stop`; else -1. */
  matchAt(id: number, at: number, stop: number): number {
    const s = this.starts[id];
    const len = this.ends[id] - s;
    return at + len < this.b.length && this.b[at + len] === stop && this.sameBytes(s, at, len) ? len : -1;
  }

  /** Whether b[x, x+len) equals b[y, y+len): four bytes a step, then the rest. */
  sameBytes(x: number, y: number, len: number): boolean {
    const view = this.view;
    let i = 0;
    // Eight bytes a step with one branch (a series section is ~75 bytes); little-endian reads
    // need no byte swap on x86.
    for (; i + 8 <= len; i += 8) {
      if (((view.getInt32(x + i, true) ^ view.getInt32(y + i, true)) | (view.getInt32(x + i + 4, true) ^ view.getInt32(y + i + 4, true))) !== 0) return false;
    }
    for (; i + 4 <= len; i += 4) if (view.getInt32(x + i, true) !== view.getInt32(y + i, true)) return false;
    const b = this.b;
    for (; i < len; i++) if (b[x + i] !== b[y + i]) return false;
    return true;
  }

  add(hash: number, start: number, end: number, target: number, problem: string | null): number {
    const id = this.starts.length;
    this.starts.push(start);
    this.ends.push(end);
    this.targets.push(target);
    this.problems.push(problem);
    this.next.push(-1);
    this.firstField.push(-1);
    const ids = this.byHash.get(hash);
    if (ids === undefined) this.byHash.set(hash, [id]);
    else ids.push(id);
    return id;
  }
}

class LineParser {
  private readonly b: Uint8Array;
  private readonly n: number;
  private p = 0;
  private line = 0;
  private readonly nowMs: number;
  private readonly minTimestampMs: number;
  private readonly precision: Precision;
  private readonly droppedDigits: number;

  private readonly columns: LineColumns | undefined;
  private pointSeries: Uint32Array;
  private pointField: Uint32Array;
  private timestamps: Float64Array;
  private values: Float64Array;
  private count = 0;

  private readonly series: LineSeries[] = [];
  private readonly seriesNameBytes: number[] = [];
  private readonly seriesByContent = new Map<string, number>();
  private readonly rawSeries: RawInterner;
  private readonly seriesCache: LineSeriesCache | undefined;
  /** The raw series of the previous good section (-1: none yet). */
  private previousRaw = -1;
  /** Digits of the previous timestamp (0: none yet): the next one most likely has as many. */
  private timestampDigits = 0;
  /** Where the digits of the last timestamp read on the fast path start (-1: none), and its value. */
  private lastTimestampAt = -1;
  private lastTimestampMs = 0;
  private readonly fieldKeys: string[] = [];
  private readonly fieldKeyBytes: number[] = [];
  private readonly fieldByName = new Map<string, number>();
  private readonly rawFields: RawInterner;

  private acceptedLines = 0;
  private rejectedLines = 0;
  private stringFields = 0;
  private firstError: LineProblem | null = null;
  /** Scratch for unescaping names (only for series and keys not seen before). */
  private scratch = new Uint8Array(256);

  constructor(body: Uint8Array, options: LineProtocolOptions) {
    const precision = options.precision ?? 'ns';
    if (!Object.hasOwn(DROPPED_DIGITS, precision)) throw new LineProtocolError(`precision must be ns, us, ms or s, got ${JSON.stringify(precision)}`);
    this.b = body;
    this.n = body.length;
    this.precision = precision;
    this.droppedDigits = DROPPED_DIGITS[precision];
    this.nowMs = options.nowMs;
    this.minTimestampMs = options.minTimestampMs ?? 0;
    // Grown by doubling: sized for ~64 bytes a point, most bodies need no growth or one.
    const capacity = Math.max(16, body.length >>> 6);
    const columns = options.columns;
    this.columns = columns;
    if (columns && columns.values.length >= capacity) {
      ({ pointSeries: this.pointSeries, pointField: this.pointField, timestamps: this.timestamps, values: this.values } = columns);
    } else {
      this.pointSeries = new Uint32Array(capacity);
      this.pointField = new Uint32Array(capacity);
      this.timestamps = new Float64Array(capacity);
      this.values = new Float64Array(capacity);
      this.keepColumns();
    }
    this.rawSeries = new RawInterner(body);
    this.rawFields = new RawInterner(body);
    this.seriesCache = options.seriesCache;
  }

  parse(): LineProtocolBatch {
    const b = this.b;
    const n = this.n;
    while (this.p < n) {
      this.line++;
      let p = this.p;
      let c = b[p];
      while (c === SPACE || c === TAB) c = b[++p];
      this.p = p;
      if (p >= n) break;
      if (c === LF) {
        this.p = p + 1;
        continue;
      }
      if (c === CR && b[p + 1] === LF) {
        this.p = p + 2;
        continue;
      }
      if (c === HASH) {
        this.skipLine();
        continue;
      }
      const countBefore = this.count;
      const stringsBefore = this.stringFields;
      try {
        this.parseLine();
        this.acceptedLines++;
      } catch (e) {
        if (!(e instanceof LineFault)) throw e;
        this.count = countBefore;
        this.stringFields = stringsBefore;
        this.rejectedLines++;
        if (this.firstError === null) this.firstError = { line: this.line, message: e.message };
        this.skipLine();
      }
    }
    return {
      series: this.series,
      fieldKeys: this.fieldKeys,
      pointCount: this.count,
      pointSeries: this.pointSeries.subarray(0, this.count),
      pointField: this.pointField.subarray(0, this.count),
      timestamps: this.timestamps.subarray(0, this.count),
      values: this.values.subarray(0, this.count),
      acceptedLines: this.acceptedLines,
      rejectedLines: this.rejectedLines,
      stringFields: this.stringFields,
      firstError: this.firstError,
    };
  }

  /** Moves past the next LF (or to the end). */
  private skipLine(): void {
    const i = this.b.indexOf(LF, this.p);
    this.p = i < 0 ? this.n : i + 1;
  }

  /** At the end of a line: LF, CRLF or the end of the body (not consumed). */
  private atLineEnd(p: number): boolean {
    if (p >= this.n) return true; // before the read: an out-of-bounds read slows this load site down for good
    const c = this.b[p];
    return c === LF || (c === CR && this.b[p + 1] === LF);
  }

  /** One line from p (on its first byte); leaves p after its LF. */
  private parseLine(): void {
    const b = this.b;
    const n = this.n;
    // The series section: up to the first unescaped space. Batches repeat their series in the
    // same order line after line (a collector gathers its inputs the same way every interval),
    // so the series that followed the previous line's last time, or the previous line's own, is
    // tried first: a byte compare, with no scan for the end and no hash.
    const start = this.p;
    const rawSeries = this.rawSeries;
    const previous = this.previousRaw;
    let raw = -1;
    let p = start;
    if (previous >= 0) {
      const guess = rawSeries.next[previous];
      let len = guess >= 0 ? rawSeries.matchAt(guess, start, SPACE) : -1;
      if (len >= 0) raw = guess;
      else if ((len = rawSeries.matchAt(previous, start, SPACE)) >= 0) raw = previous;
      p = start + Math.max(0, len);
    }
    if (raw < 0) {
      // FNV-1a's offset basis as an int32: started as the double 2166136261, the hash stayed a
      // double through the loop, which then ran several times slower (measured).
      let hash = FNV_OFFSET;
      for (;;) {
        if (p >= n) break; // (b[n] would be an out-of-bounds read, which slows every read of this loop)
        const c = b[p];
        if (c === SPACE || c === LF) break;
        if (c === CR && b[p + 1] === LF) break;
        hash = Math.imul(hash ^ c, 0x01000193);
        if (c === BACKSLASH && p + 1 < n && b[p + 1] !== LF) {
          p++;
          hash = Math.imul(hash ^ b[p], 0x01000193);
        }
        p++;
      }
      const end = p;
      if (b[p] !== SPACE) fault(start === end ? 'missing measurement' : 'missing fields (a line is "measurement[,tags] field=value[,…] [timestamp]")');
      raw = rawSeries.find(hash, start, end);
      if (raw < 0) raw = rawSeries.add(hash, start, end, ...this.newSeries(hash, start, end));
    }
    if (previous >= 0) rawSeries.next[previous] = raw;
    this.previousRaw = raw;
    const problem = this.rawSeries.problems[raw];
    if (problem !== null) fault(problem);
    const series = this.rawSeries.targets[raw];
    while (b[p] === SPACE) p++;
    this.p = p;
    if (this.atLineEnd(p)) fault('missing fields');

    // Fields: each appended as a point of this line, with the timestamp filled in at the end.
    const firstPoint = this.count;
    // The field keys are guessed like the series: the keys this series' lines had last time, in order.
    const rawFields = this.rawFields;
    let previousField = -1;
    for (;;) {
      const guess = previousField < 0 ? rawSeries.firstField[raw] : rawFields.next[previousField];
      const fieldRaw = this.fieldKey(guess);
      if (previousField < 0) rawSeries.firstField[raw] = fieldRaw;
      else rawFields.next[previousField] = fieldRaw;
      previousField = fieldRaw;
      const field = rawFields.targets[fieldRaw];
      const kind = this.fieldValue(field);
      if (kind === POINT) {
        const nameBytes = this.seriesNameBytes[series] + 1 + this.fieldKeyBytes[field];
        if (nameBytes > MAX_NAME_BYTES) {
          const name = `${this.series[series].name}.${this.fieldKeys[field]}`;
          fault(`tag ${JSON.stringify(`${name.slice(0, 64)}…`)} is ${nameBytes} bytes of UTF-8, longer than ${MAX_NAME_BYTES}`);
        }
        const i = this.count - 1;
        this.pointSeries[i] = series;
        this.pointField[i] = field;
      }
      p = this.p;
      const c = b[p];
      if (c === COMMA) {
        this.p = p + 1;
        continue;
      }
      if (c === SPACE || this.atLineEnd(p)) break;
      fault(`field ${JSON.stringify(this.fieldKeys[field])}: unexpected ${quoted(b, p, p + 1)} after the value`);
    }

    // Timestamp.
    while (b[p] === SPACE) p++;
    let t = this.nowMs;
    if (!this.atLineEnd(p)) {
      this.p = p;
      t = this.timestamp();
      p = this.p;
      while (b[p] === SPACE || b[p] === TAB) p++;
      if (!this.atLineEnd(p)) fault(`unexpected ${quoted(b, p, p + 1)} after the timestamp`);
    }
    for (let i = firstPoint; i < this.count; i++) this.timestamps[i] = t;
    // p is on the LF, the CR of a CRLF or the end (atLineEnd above): no search for the LF.
    this.p = p + (p >= this.n ? 0 : b[p] === LF ? 1 : 2);
  }

  // -- names ----------------------------------------------------------------------------------

  /** The unescaped text of [start, end) with `escapes`; a fault when it is not UTF-8. */
  private text(start: number, end: number, escapes: Uint8Array, what: string): string {
    const b = this.b;
    let out = b.subarray(start, end);
    if (out.includes(BACKSLASH)) {
      if (this.scratch.length < end - start) this.scratch = new Uint8Array(end - start);
      const s = this.scratch;
      let k = 0;
      for (let i = start; i < end; i++) {
        if (b[i] === BACKSLASH && i + 1 < end && escapes[b[i + 1]] === 1) i++;
        s[k++] = b[i];
      }
      out = s.subarray(0, k);
    }
    try {
      return utf8Decoder.decode(out);
    } catch {
      return fault(`${what} ${quoted(b, start, end)} is not valid UTF-8`);
    }
  }

  /** End of the escaped token from `start`: the first unescaped byte in `stops` or `end`. */
  private tokenEnd(start: number, end: number, stop1: number, stop2: number): number {
    const b = this.b;
    let i = start;
    while (i < end) {
      const c = b[i];
      if (c === stop1 || c === stop2) return i;
      i += c === BACKSLASH && i + 1 < end ? 2 : 1;
    }
    return end;
  }

  /** Parses a series section not seen before: [series index, null] or [-1, problem]. */
  private newSeries(hash: number, start: number, end: number): [number, string | null] {
    const cache = this.seriesCache;
    let known = cache?.find(hash, this.b, start, end);
    if (known === undefined) {
      try {
        known = this.describeSeries(start, end);
      } catch (e) {
        if (!(e instanceof LineFault)) throw e;
        known = e.message;
      }
      cache?.remember(hash, this.b, start, end, known);
    }
    if (typeof known === 'string') return [-1, known];
    let id = this.seriesByContent.get(known.content);
    if (id === undefined) {
      id = this.series.length;
      this.series.push(known.series);
      this.seriesNameBytes.push(known.nameBytes);
      this.seriesByContent.set(known.content, id);
    }
    return [id, null];
  }

  /** What a series section says (throws LineFault for a bad one). */
  private describeSeries(start: number, end: number): SeriesDescription {
    const mEnd = this.tokenEnd(start, end, COMMA, COMMA);
    if (mEnd === start) fault('missing measurement');
    const measurement = this.text(start, mEnd, MEASUREMENT_ESCAPES, 'measurement');
    const tags: Array<[string, string]> = [];
    let p = mEnd;
    while (p < end) {
      p++; // the comma
      const tEnd = this.tokenEnd(p, end, COMMA, COMMA);
      const eq = this.tokenEnd(p, tEnd, EQUALS, EQUALS);
      if (eq === p) fault(tEnd === p ? 'empty tag (two commas, or a trailing comma, in the tags)' : `missing tag key before ${quoted(this.b, p, tEnd)}`);
      if (eq === tEnd) fault(`tag ${quoted(this.b, p, tEnd)} has no '=' (an '=' in a key is escaped as \\=)`);
      if (eq + 1 === tEnd) fault(`tag ${quoted(this.b, p, eq)} has an empty value`);
      const key = this.text(p, eq, KEY_ESCAPES, 'tag key');
      const value = this.text(eq + 1, tEnd, KEY_ESCAPES, 'tag value');
      tags.push([key, value]);
      p = tEnd;
    }
    tags.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    for (let i = 1; i < tags.length; i++) if (tags[i][0] === tags[i - 1][0]) fault(`tag ${JSON.stringify(tags[i][0])} appears twice`);
    const scope: WriteScope = {};
    let name = measurement;
    for (const [k, v] of tags) {
      if (isScopeField(k)) scope[k as ScopeField] = v;
      else name += `,${k}=${v}`;
    }
    const problem = tagNameProblem(name);
    if (problem !== null) fault(`measurement and tags ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)}: ${problem}`);
    return { series: { measurement, tags, scope, name }, content: JSON.stringify([measurement, tags]), nameBytes: utf8Length(name) };
  }

  /** The raw field key at p, up to its unescaped '=' (`guess` is tried first); leaves p on the value. */
  private fieldKey(guess: number): number {
    const b = this.b;
    const n = this.n;
    const start = this.p;
    if (guess >= 0) {
      const len = this.rawFields.matchAt(guess, start, EQUALS);
      if (len > 0) {
        const problem = this.rawFields.problems[guess];
        if (problem !== null) fault(problem);
        this.p = start + len + 1;
        return guess;
      }
    }
    let p = start;
    let hash = FNV_OFFSET;
    for (;;) {
      if (p >= n) break;
      const c = b[p];
      if (c === EQUALS || c === COMMA || c === SPACE || c === LF) break;
      hash = Math.imul(hash ^ c, 0x01000193);
      if (c === BACKSLASH && p + 1 < n && b[p + 1] !== LF) {
        p++;
        hash = Math.imul(hash ^ b[p], 0x01000193);
      }
      p++;
    }
    if (b[p] !== EQUALS) {
      if (p === start) fault('missing field key');
      fault(`field ${quoted(b, start, p)} has no '=value'`);
    }
    if (p === start) fault('missing field key');
    let raw = this.rawFields.find(hash, start, p);
    if (raw < 0) {
      let target = -1;
      let problem: string | null = null;
      try {
        target = this.fieldOf(start, p);
      } catch (e) {
        if (!(e instanceof LineFault)) throw e;
        problem = e.message;
      }
      raw = this.rawFields.add(hash, start, p, target, problem);
    }
    const problem = this.rawFields.problems[raw];
    if (problem !== null) fault(problem);
    this.p = p + 1;
    return raw;
  }

  private fieldOf(start: number, end: number): number {
    const key = this.text(start, end, KEY_ESCAPES, 'field key');
    const problem = tagNameProblem(key);
    if (problem !== null) fault(`field key ${JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key)}: ${problem}`);
    let id = this.fieldByName.get(key);
    if (id === undefined) {
      id = this.fieldKeys.length;
      this.fieldKeys.push(key);
      this.fieldKeyBytes.push(utf8Length(key));
      this.fieldByName.set(key, id);
    }
    return id;
  }

  // -- values ---------------------------------------------------------------------------------

  /** The value at p; appends a point (series, field and time filled by the caller) or counts a string. */
  private fieldValue(field: number): number {
    const b = this.b;
    const p = this.p;
    const c = b[p];
    if (c === QUOTE) {
      this.skipString(field);
      this.stringFields++;
      return STRING;
    }
    let v: number;
    if ((c >= D0 && c <= D9) || c === MINUS || c === DOT) v = this.number(field);
    else if (c === LOWER_T || c === UPPER_T || c === LOWER_F || c === UPPER_F) v = this.boolean(field);
    else {
      const what = this.badValue(field, p);
      return fault(what);
    }
    if (this.count === this.values.length) this.grow();
    this.values[this.count++] = v;
    return POINT;
  }

  private badValue(field: number, p: number): string {
    const b = this.b;
    const name = JSON.stringify(this.fieldKeys[field]);
    let e = p;
    while (e < this.n && b[e] !== COMMA && b[e] !== SPACE && b[e] !== LF && b[e] !== CR) e++;
    const word = quoted(b, p, e).toLowerCase();
    if (word === '"nan"') return `field ${name}: NaN is not a value`;
    if (/^"[+-]?inf(inity)?"$/.test(word)) return `field ${name}: ${quoted(b, p, e)} is not a value (values must be finite)`;
    if (b[p] === PLUS) return `field ${name}: a number must not start with '+'`;
    if (e === p) return `field ${name}: missing value`;
    return `field ${name}: invalid value ${quoted(b, p, e)}`;
  }

  private boolean(field: number): number {
    const b = this.b;
    const p = this.p;
    let e = p;
    while (e < this.n && b[e] !== COMMA && b[e] !== SPACE && b[e] !== LF && !(b[e] === CR && b[e + 1] === LF)) e++;
    for (let w = 0; w < BOOLEAN_WORDS.length; w++) {
      const word = BOOLEAN_WORDS[w];
      if (word.length !== e - p) continue;
      let i = 0;
      while (i < word.length && word[i] === b[p + i]) i++;
      if (i === word.length) {
        this.p = e;
        return w < 5 ? 1 : 0;
      }
    }
    return fault(`field ${JSON.stringify(this.fieldKeys[field])}: invalid boolean ${quoted(b, p, e)} (t, T, true, True, TRUE, f, F, false, False, FALSE)`);
  }

  /** A quoted string at p (on its quote): `\"` and `\\` escaped; may span lines. Leaves p after it. */
  private skipString(field: number): void {
    const b = this.b;
    const n = this.n;
    const startLine = this.line;
    let p = this.p + 1;
    for (;;) {
      if (p >= n) {
        // The rest of the body was inside the string: the error is on the line it opened.
        this.p = n;
        this.line = startLine;
        fault(`field ${JSON.stringify(this.fieldKeys[field])}: string value has no closing quote`);
      }
      const c = b[p];
      if (c === QUOTE) break;
      if (c === BACKSLASH && (b[p + 1] === QUOTE || b[p + 1] === BACKSLASH)) p += 2;
      else {
        if (c === LF) this.line++;
        p++;
      }
    }
    this.p = p + 1;
  }

  /**
   * A float, or an integer with `i` / `u`, at p. Fast path (Clinger, point-batch.ts exactDecimal):
   * digits read as an integer below 2^53 and a decimal exponent within ±22 give a correctly
   * rounded double in one operation; anything else goes to Number() on the token text.
   */
  private number(field: number): number {
    const b = this.b;
    const start = this.p;
    let p = start;
    let c = b[p];
    const negative = c === MINUS;
    if (negative) c = b[++p];
    const digitsStart = p;
    let m = 0;
    while (c >= D0 && c <= D9) {
      m = m * 10 + (c - D0);
      c = b[++p];
    }
    const intDigits = p - digitsStart;
    let exponent = 0;
    let fraction = false;
    let fracDigits = 0;
    if (c === DOT) {
      fraction = true;
      c = b[++p];
      while (c >= D0 && c <= D9) {
        m = m * 10 + (c - D0);
        exponent--;
        fracDigits++;
        c = b[++p];
      }
    }
    if (intDigits + fracDigits === 0) {
      return fault(this.badValue(field, start));
    }
    let hasExponent = false;
    if (c === LOWER_E || c === UPPER_E) {
      hasExponent = true;
      c = b[++p];
      const negativeExponent = c === MINUS;
      if (negativeExponent || c === PLUS) c = b[++p];
      if (!(c >= D0 && c <= D9)) fault(`field ${JSON.stringify(this.fieldKeys[field])}: exponent without digits in ${quoted(b, start, p + 1)}`);
      let e = 0;
      do {
        if (e < 100000) e = e * 10 + (c - D0);
        c = b[++p];
      } while (c >= D0 && c <= D9);
      exponent += negativeExponent ? -e : e;
    }
    if (c === LOWER_I || c === LOWER_U) {
      const name = JSON.stringify(this.fieldKeys[field]);
      if (fraction || hasExponent) fault(`field ${name}: ${quoted(b, start, p + 1)} is not an integer`);
      if (c === LOWER_U && negative) fault(`field ${name}: unsigned ${quoted(b, start, p + 1)} must not be negative`);
      const limit = c === LOWER_U ? UINT64_MAX_DIGITS : negative ? INT64_MIN_DIGITS : INT64_MAX_DIGITS;
      if (!this.fits(digitsStart, p, limit)) fault(`field ${name}: ${quoted(b, start, p + 1)} is out of the ${c === LOWER_U ? 'uint64' : 'int64'} range`);
      this.p = p + 1;
      const v = m < TWO_POW_53 ? m : Number(asciiString(b, digitsStart, p));
      return negative ? 0 - v : v; // 0 - 0 is 0, not -0
    }
    this.p = p;
    if (m === 0) return 0; // -0.0 too: the store keeps no negative zero
    let v = exactDecimal(m, exponent);
    if (v !== v) {
      v = Number(asciiString(b, negative ? digitsStart : start, p));
      if (v === Infinity) fault(`field ${JSON.stringify(this.fieldKeys[field])}: ${quoted(b, start, p)} is out of the float64 range`);
    }
    return negative ? -v : v;
  }

  /** Whether the decimal digits [start, end) are at most `limit` (a digit string with no leading zero). */
  private fits(start: number, end: number, limit: Uint8Array): boolean {
    const b = this.b;
    while (start < end - 1 && b[start] === D0) start++;
    const len = end - start;
    if (len !== limit.length) return len < limit.length;
    for (let i = 0; i < len; i++) if (b[start + i] !== limit[i]) return b[start + i] < limit[i];
    return true;
  }

  /** The timestamp at p in the batch's precision, as epoch ms rounded down; leaves p after it. */
  private timestamp(): number {
    const b = this.b;
    const start = this.p;
    let p = start;
    const negative = b[p] === MINUS;
    if (negative) p++;
    const digitsStart = p;
    const n = this.n;
    // Timestamps of a batch have the same number of digits: read that many in one pass when the
    // byte after them ends the number (the usual case), else scan, check the range and read. A
    // 19-digit one is taken here only below 9·10^18, so always inside int64.
    const digits = this.timestampDigits;
    const guess = digitsStart + digits;
    if (!negative && digits > 0 && guess < n && !(b[guess] >= D0 && b[guess] <= D9) && (digits < 19 || (digits === 19 && b[digitsStart] < D9))) {
      // The previous line's timestamp again (a batch in time order has every series at one
      // time, then the next): a byte compare, no arithmetic.
      const last = this.lastTimestampAt;
      if (last >= 0 && this.rawFields.sameBytes(last, digitsStart, digits)) { // (either interner compares bytes of this body)
        this.p = guess;
        return this.lastTimestampMs;
      }
      const keepEnd = guess - Math.max(0, this.droppedDigits);
      let ms = 0;
      let i = digitsStart;
      for (; i < guess; i++) {
        const d = b[i] - D0;
        if (d < 0 || d > 9) break;
        if (i < keepEnd) ms = ms * 10 + d;
      }
      if (i === guess) {
        if (this.droppedDigits < 0) ms *= 1000;
        if (ms >= this.minTimestampMs && ms <= MAX_TIMESTAMP) {
          this.p = guess;
          this.lastTimestampAt = digitsStart;
          this.lastTimestampMs = ms;
          return ms;
        }
      }
    }
    while (p < n && b[p] >= D0 && b[p] <= D9) p++;
    if (this.timestampDigits !== p - digitsStart) this.lastTimestampAt = -1; // it had the old digit count
    this.timestampDigits = p - digitsStart;
    if (p === digitsStart) {
      let e = p;
      while (e < this.n && b[e] !== SPACE && b[e] !== LF && b[e] !== CR) e++;
      fault(`invalid timestamp ${quoted(b, start, e)} (an integer is expected)`);
    }
    if (!this.fits(digitsStart, p, negative ? INT64_MIN_DIGITS : INT64_MAX_DIGITS)) fault(`timestamp ${quoted(b, start, p)} is out of the int64 range`);
    this.p = p;
    // The kept digits of an int64 ns/us timestamp (at most 13 / 16 digits) and a ms one below
    // 2^53 are exact doubles; longer ones are out of range anyway.
    const dropped = this.droppedDigits;
    const keepEnd = dropped > 0 ? Math.max(digitsStart, p - dropped) : p;
    let ms = 0;
    for (let i = digitsStart; i < keepEnd; i++) ms = ms * 10 + (b[i] - D0);
    if (dropped < 0) ms *= 1000;
    if (negative) {
      let remainder = false;
      for (let i = keepEnd; i < p; i++) if (b[i] !== D0) remainder = true;
      ms = -ms - (remainder ? 1 : 0);
    }
    ms += 0; // -0 is 0
    if (ms < this.minTimestampMs || ms > MAX_TIMESTAMP) {
      const raw = quoted(b, start, p);
      if (ms >= 0 && ms < this.minTimestampMs) {
        fault(`timestamp ${raw} (precision ${this.precision}) is ${ms} ms, before storage.minTimestampMs (${this.minTimestampMs}); check the precision parameter`);
      }
      fault(`timestamp ${raw} (precision ${this.precision}) is ${ms} ms, outside 0..2^53-1`);
    }
    return ms;
  }

  private grow(): void {
    const size = this.values.length * 2;
    const ps = new Uint32Array(size);
    const pf = new Uint32Array(size);
    const ts = new Float64Array(size);
    const vs = new Float64Array(size);
    ps.set(this.pointSeries);
    pf.set(this.pointField);
    ts.set(this.timestamps);
    vs.set(this.values);
    this.pointSeries = ps;
    this.pointField = pf;
    this.timestamps = ts;
    this.values = vs;
    this.keepColumns();
  }

  /** Hands grown arrays back to the caller's columns, for the next body. */
  private keepColumns(): void {
    const c = this.columns;
    if (c === undefined) return;
    c.pointSeries = this.pointSeries;
    c.pointField = this.pointField;
    c.timestamps = this.timestamps;
    c.values = this.values;
  }
}

