/**
 * Write-body decoders for ../shared/WIRE.md "Write bodies":
 *
 * - JSON, tag keyed: `{scope…, "tags": {"<tag>": [[ts, value], …]}}`
 * - JSON, columnar: `{scope…, "timestamps": [ts, …], "columns": {"<tag>": [value|null, …]}}`
 * - the same two shapes already decoded by another parser (msgpack): decodeWriteObject
 * - binary columnar batch "HSW1": u32 tags, u32 rows, u16 scope length + scope JSON, pad to 8,
 *   rows × f64 timestamps; per tag u16 name length, UTF-8 name, pad to 8, rows × f64 values
 *   (NaN = no value). Little-endian; padding counts from the start of the body.
 *
 * Every decoder returns one columnar PointBatch (no per-point objects or arrays).
 *
 * Errors: WriteBodyError `malformed` (not JSON, wrong shape: HTTP 400) is thrown where it is
 * found. `rejected` (well formed but not acceptable: HTTP 200 success:false) is sticky: the first
 * one is kept and the decoder goes on, so a body that is also malformed further on is reported
 * as malformed, and the rejection is thrown once at the end.
 *
 * Rules shared by all decoders:
 * - scope fields (organization, site, unit, grid) are strings, else malformed;
 * - a timestamp is an integer in 0..2^53-1 (-0 is stored as 0), a value a finite number;
 * - a tag name is 1..256 bytes of UTF-8, with no control character (Unicode Cc: U+0000..U+001F,
 *   U+007F..U+009F) and no unpaired surrogate;
 * - a tag named twice (a repeated JSON key, a repeated binary name) has its points merged,
 *   in order of appearance.
 *
 * Pure TypeScript whose only import is the pure shared/scope.ts: runs in a browser
 * (TextDecoder/TextEncoder are the only globals used beyond the language).
 */

import { SCOPE_FIELDS, type ScopeField, type ScopeFields as WriteScope } from '../shared/scope.js';

export type { WriteScope };

export interface PointBatch {
  /** Scope fields present in the body. */
  scope: WriteScope;
  /** Distinct tag names in order of appearance. */
  tagNames: string[];
  /** Length tagNames.length + 1: tag i's points are [tagStart[i], tagStart[i + 1]). */
  tagStart: Uint32Array;
  /** Epoch milliseconds; at least pointCount long. */
  timestamps: Float64Array;
  values: Float64Array;
  pointCount: number;
}

export class WriteBodyError extends Error {
  /** `malformed`: not JSON or wrong shape (400). `rejected`: well formed, not acceptable (200 success:false). */
  readonly kind: 'malformed' | 'rejected';

  constructor(kind: 'malformed' | 'rejected', message: string) {
    super(message);
    this.name = 'WriteBodyError';
    this.kind = kind;
  }
}

const MAX_TIMESTAMP = 9007199254740991; // 2^53 - 1
const MAX_TIMESTAMP_BIGINT = 9007199254740991n;
const TWO_POW_53 = 9007199254740992;
const MAX_TAG_NAME_BYTES = 256;

/** Every power of ten a double holds exactly; beyond 1e22 they are rounded. */
const POW10 = new Float64Array([
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
  1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]);

/** Typed-array views read the host's byte order; only a little-endian host may view in place. */
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const BINARY_MAGIC = 0x31575348; // "HSW1" read as a little-endian u32
const BINARY_HEADER_BYTES = 14;
const MAX_U16 = 0xffff;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

// JSON bytes.
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const D0 = 0x30;
const D1 = 0x31;
const D9 = 0x39;
const COLON = 0x3a;
const UPPER_E = 0x45;
const LBRACKET = 0x5b;
const BACKSLASH = 0x5c;
const RBRACKET = 0x5d;
const LOWER_E = 0x65;
const LOWER_U = 0x75;
const LBRACE = 0x7b;
const RBRACE = 0x7d;

/** What a backslash escape other than \u stands for, by the byte after the backslash. */
const SHORT_ESCAPES: Record<number, string> = {
  0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t',
};

const LITERAL_TRUE = bytesOf('true');
const LITERAL_FALSE = bytesOf('false');
const LITERAL_NULL = bytesOf('null');

/** Top-level keys the JSON scanner recognises, compared as bytes when unescaped. */
const TOP_KEYS = [...SCOPE_FIELDS, 'tags', 'timestamps', 'columns'] as const;
const TOP_KEY_BYTES = TOP_KEYS.map(bytesOf);
const KEY_OTHER = -1;
const KEY_TAGS = 4;
const KEY_TIMESTAMPS = 5;

// String scan flags.
const HAS_ESCAPE = 1;
const NON_ASCII = 2;

function bytesOf(ascii: string): Uint8Array {
  return utf8Encoder.encode(ascii);
}

function malformed(message: string): never {
  throw new WriteBodyError('malformed', message);
}

/** A tag name for a message: JSON-quoted, cut short so a huge bogus name stays readable. */
function q(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

function isTimestamp(t: number): boolean {
  return t >= 0 && t <= MAX_TIMESTAMP && Math.floor(t) === t;
}

function timestampProblem(got: string): string {
  return `timestamp must be an integer in 0..2^53-1, got ${got}`;
}

/** Why `name` cannot be a tag name, or null when it can. */
function tagNameProblem(name: string): string | null {
  if (name.length === 0) return 'name must not be empty';
  let bytes = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      return `name must not contain control characters (U+${c.toString(16).padStart(4, '0').toUpperCase()} at ${i})`;
    }
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c < 0xd800 || c > 0xdfff) bytes += 3;
    else if (c <= 0xdbff && i + 1 < name.length && (name.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else return `name must be valid Unicode (unpaired surrogate at ${i})`;
  }
  if (bytes > MAX_TAG_NAME_BYTES) return `name is ${bytes} bytes of UTF-8, longer than ${MAX_TAG_NAME_BYTES}`;
  return null;
}

/** Latin-1/ASCII bytes to a string in a few calls, not one concatenation per byte. */
function asciiString(b: Uint8Array, start: number, end: number): string {
  // fromCharCode.apply takes the view as its argument list; chunks stay below engine argument caps.
  let s = '';
  for (let i = start; i < end; i += 4096) {
    s += String.fromCharCode.apply(null, b.subarray(i, Math.min(end, i + 4096)) as unknown as number[]);
  }
  return s;
}

function utf8String(b: Uint8Array, start: number, end: number, what: string): string {
  try {
    return utf8Decoder.decode(b.subarray(start, end));
  } catch {
    return malformed(`${what} is not valid UTF-8`);
  }
}

/**
 * Collects points and tag segments for any decoder. A segment is one occurrence of a tag
 * (one JSON key, one binary column); finish() merges repeated tags.
 */
class BatchBuilder {
  timestamps: Float64Array;
  values: Float64Array;
  count = 0;
  readonly tagNames: string[] = [];
  /** Per segment: its tag index and its first point. */
  readonly segTag: number[] = [];
  readonly segStart: number[] = [];
  /** First reason to reject the body, kept so the rest is still checked for shape. */
  rejection: string | null = null;
  private readonly tagIds = new Map<string, number>();
  private repeated = false;

  constructor(capacity: number) {
    this.timestamps = new Float64Array(capacity);
    this.values = new Float64Array(capacity);
  }

  reject(message: string): void {
    if (this.rejection === null) this.rejection = message;
  }

  /** Starts a segment of tag `name` at the current point; validates the name when first seen. */
  openTag(name: string): number {
    let id = this.tagIds.get(name);
    if (id === undefined) {
      id = this.tagNames.length;
      this.tagNames.push(name);
      this.tagIds.set(name, id);
      const problem = tagNameProblem(name);
      if (problem !== null) this.reject(`tag ${q(name)} (key ${this.segTag.length}): ${problem}`);
    } else {
      this.repeated = true;
    }
    this.segTag.push(id);
    this.segStart.push(this.count);
    return id;
  }

  /** Makes room for at least `need` points in total, doubling so appends stay amortised O(1). */
  grow(need: number): void {
    let size = Math.max(16, this.values.length * 2);
    while (size < need) size *= 2;
    const ts = new Float64Array(size);
    const vs = new Float64Array(size);
    ts.set(this.timestamps.subarray(0, this.count));
    vs.set(this.values.subarray(0, this.count));
    this.timestamps = ts;
    this.values = vs;
  }

  /**
   * Appends the rows of one column: src[srcStart + r] at rowTs[r], NaN rows skipped. The caller
   * has made room. src may be this.values itself when srcStart >= count (in-place compaction:
   * the write position never passes the read position).
   */
  appendRows(src: Float64Array, srcStart: number, rowTs: Float64Array, rowCount: number, tag: number): void {
    const ts = this.timestamps;
    const vs = this.values;
    let n = this.count;
    for (let r = 0; r < rowCount; r++) {
      const v = src[srcStart + r];
      if (v !== v) continue;
      if (v - v !== 0) {
        this.reject(`tag ${q(this.tagNames[tag])} row ${r}: value must be a finite number, got ${v}`);
        continue;
      }
      ts[n] = rowTs[r] + 0; // + 0 turns a -0 timestamp into 0
      vs[n] = v;
      n++;
    }
    this.count = n;
  }

  finish(scope: WriteScope): PointBatch {
    if (this.rejection !== null) throw new WriteBodyError('rejected', this.rejection);
    const k = this.tagNames.length;
    const n = this.count;
    const tagStart = new Uint32Array(k + 1);
    if (!this.repeated) {
      // One segment per tag, in tag order: the points are already grouped.
      for (let i = 0; i < k; i++) tagStart[i] = this.segStart[i];
      tagStart[k] = n;
      return this.batch(scope, tagStart, this.timestamps, this.values);
    }
    const segs = this.segTag.length;
    const segEnd = (s: number): number => (s + 1 < segs ? this.segStart[s + 1] : n);
    for (let s = 0; s < segs; s++) tagStart[this.segTag[s] + 1] += segEnd(s) - this.segStart[s];
    for (let i = 1; i <= k; i++) tagStart[i] += tagStart[i - 1];
    const cursor = tagStart.slice(0, k);
    const ts = new Float64Array(n);
    const vs = new Float64Array(n);
    for (let s = 0; s < segs; s++) {
      const from = this.segStart[s];
      const to = segEnd(s);
      const at = cursor[this.segTag[s]];
      ts.set(this.timestamps.subarray(from, to), at);
      vs.set(this.values.subarray(from, to), at);
      cursor[this.segTag[s]] = at + to - from;
    }
    return this.batch(scope, tagStart, ts, vs);
  }

  private batch(scope: WriteScope, tagStart: Uint32Array, ts: Float64Array, vs: Float64Array): PointBatch {
    const n = this.count;
    return { scope, tagNames: this.tagNames, tagStart, timestamps: ts.subarray(0, n), values: vs.subarray(0, n), pointCount: n };
  }
}

// ---------------------------------------------------------------------------------------------
// JSON bytes

/**
 * A byte-level scanner over one JSON write body. Positions are byte offsets into `b`; reading
 * past the end yields undefined, which matches no expected byte, so the bounds are checked only
 * where a loop would otherwise run on (strings) and when a mismatch is reported.
 */
class JsonScanner extends BatchBuilder {
  private readonly b: Uint8Array;
  private p = 0;
  private readonly scope: WriteScope = {};
  private sawTags = false;
  private sawColumns = false;
  /** Columnar rows from "timestamps"; rowCount -1 until that key is read. */
  private rowTs: Float64Array = new Float64Array(0);
  private rowCount = -1;
  /** Columnar: values each column had, per segment (checked against rowCount at the end). */
  private readonly columnRows: number[] = [];
  /** Content of the last string scanned: [strStart, strEnd) and its HAS_ESCAPE/NON_ASCII flags. */
  private strStart = 0;
  private strEnd = 0;

  constructor(bytes: Uint8Array) {
    // Tag-keyed points take about 16..25 bytes each ("[1700000000000,12.34],").
    super(Math.max(16, bytes.length >>> 4));
    this.b = bytes;
  }

  decode(): PointBatch {
    const b = this.b;
    if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) this.p = 3; // a UTF-8 byte order mark
    if (this.ws() !== LBRACE) this.failAt("'{' (a write body is a JSON object)");
    this.p++;
    let c = this.ws();
    if (c !== RBRACE) {
      for (;;) {
        if (c !== QUOTE) this.failAt('a key string');
        const key = this.topKey();
        this.colon();
        if (key === KEY_OTHER) this.skipValue();
        else if (key < KEY_TAGS) this.readScopeField(SCOPE_FIELDS[key]);
        else if (key === KEY_TAGS) this.readTagKeyed();
        else if (key === KEY_TIMESTAMPS) this.readTimestamps();
        else this.readColumns(); // the last key, "columns"
        c = this.ws();
        if (c === COMMA) {
          this.p++;
          c = this.ws();
        } else if (c === RBRACE) break;
        else this.failAt("',' or '}'");
      }
    }
    this.p++;
    this.ws();
    if (this.p < b.length) this.failAt('the end of the body after the top-level object');
    if (!this.sawTags) this.compactColumns();
    return this.finish(this.scope);
  }

  // -- structure ------------------------------------------------------------------------------

  private readScopeField(field: ScopeField): void {
    // The last of two would win here while a reader of the first decided access: refuse both.
    if (this.scope[field] !== undefined) malformed(`"${field}" appears more than once`);
    if (this.b[this.p] !== QUOTE) malformed(`"${field}" must be a string`);
    this.scope[field] = this.readString(`"${field}"`);
  }

  private readTagKeyed(): void {
    if (this.sawTags) malformed('"tags" appears twice');
    if (this.sawColumns || this.rowCount >= 0) malformed('a body has either "tags" or "timestamps" and "columns", not both');
    this.sawTags = true;
    if (this.b[this.p] !== LBRACE) malformed('"tags" must be an object mapping tag names to [[timestamp, value], …]');
    this.p++;
    let c = this.ws();
    if (c === RBRACE) {
      this.p++;
      return;
    }
    for (;;) {
      if (c !== QUOTE) this.failAt('a tag name string');
      const name = this.readString('a tag name');
      this.openTag(name);
      this.colon();
      this.readPoints(name);
      c = this.ws();
      if (c === COMMA) {
        this.p++;
        c = this.ws();
      } else if (c === RBRACE) {
        this.p++;
        return;
      } else this.failAt("',' or '}' in \"tags\"");
    }
  }

  /** The hot loop: one tag's `[[ts, value], …]`. */
  private readPoints(name: string): void {
    if (this.b[this.p] !== LBRACKET) malformed(`tag ${q(name)} must be an array of [timestamp, value] points`);
    this.p++;
    let c = this.ws();
    if (c === RBRACKET) {
      this.p++;
      return;
    }
    // The output arrays and count live in locals for the loop (written back on grow and at the
    // end); with the one-compare ws() below, about 15% more points/s in bench/points-decoder.ts.
    let ts = this.timestamps;
    let vs = this.values;
    let n = this.count;
    for (let i = 0; ; i++) {
      if (c !== LBRACKET) this.pointShape(name, i, "'['");
      this.p++;
      c = this.ws();
      let t = 0;
      if (c === MINUS || (c >= D0 && c <= D9)) {
        t = this.number();
        if (!isTimestamp(t)) this.reject(`tag ${q(name)} point ${i}: ${timestampProblem(String(t))}`);
      } else {
        if (c === RBRACKET || c === COMMA) this.pointShape(name, i, 'a timestamp');
        this.reject(`tag ${q(name)} point ${i}: ${timestampProblem(this.kindHere())}`);
        this.skipValue();
      }
      if (this.ws() !== COMMA) this.pointShape(name, i, "','");
      this.p++;
      c = this.ws();
      let v = 0;
      if (c === MINUS || (c >= D0 && c <= D9)) {
        v = this.number();
        if (v - v !== 0) this.reject(`tag ${q(name)} point ${i}: value must be a finite number, got ${v}`);
      } else {
        if (c === RBRACKET || c === COMMA) this.pointShape(name, i, 'a value');
        this.reject(`tag ${q(name)} point ${i}: value must be a finite number, got ${this.kindHere()}`);
        this.skipValue();
      }
      if (this.ws() !== RBRACKET) this.pointShape(name, i, "']'");
      this.p++;
      if (n === vs.length) {
        this.count = n;
        this.grow(n + 1);
        ts = this.timestamps;
        vs = this.values;
      }
      ts[n] = t + 0; // + 0 turns a -0 timestamp into 0
      vs[n] = v;
      n++;
      c = this.ws();
      if (c === COMMA) {
        this.p++;
        c = this.ws();
      } else if (c === RBRACKET) {
        this.p++;
        this.count = n;
        return;
      } else this.failAt(`',' or ']' after tag ${q(name)} point ${i}`);
    }
  }

  private readTimestamps(): void {
    if (this.rowCount >= 0) malformed('"timestamps" appears twice');
    if (this.sawTags) malformed('a body has either "tags" or "timestamps" and "columns", not both');
    if (this.b[this.p] !== LBRACKET) malformed('"timestamps" must be an array');
    this.p++;
    let rows = new Float64Array(Math.max(16, this.b.length >>> 6));
    let n = 0;
    let c = this.ws();
    if (c !== RBRACKET) {
      for (;;) {
        let t = 0;
        if (c === MINUS || (c >= D0 && c <= D9)) {
          t = this.number();
          if (!isTimestamp(t)) this.reject(`timestamps index ${n}: ${timestampProblem(String(t))}`);
        } else {
          if (c === RBRACKET || c === COMMA) this.failAt(`a timestamp at timestamps index ${n}`);
          this.reject(`timestamps index ${n}: ${timestampProblem(this.kindHere())}`);
          this.skipValue();
        }
        if (n === rows.length) {
          const bigger = new Float64Array(n * 2);
          bigger.set(rows);
          rows = bigger;
        }
        rows[n++] = t + 0;
        c = this.ws();
        if (c === COMMA) {
          this.p++;
          c = this.ws();
        } else if (c === RBRACKET) break;
        else this.failAt(`',' or ']' after timestamps index ${n - 1}`);
      }
    }
    this.p++;
    this.rowTs = rows;
    this.rowCount = n;
  }

  /** Reads every column's raw values (NaN for null) into this.values; compactColumns() pairs them with rows. */
  private readColumns(): void {
    if (this.sawColumns) malformed('"columns" appears twice');
    if (this.sawTags) malformed('a body has either "tags" or "timestamps" and "columns", not both');
    this.sawColumns = true;
    if (this.b[this.p] !== LBRACE) malformed('"columns" must be an object mapping tag names to value arrays');
    this.p++;
    let c = this.ws();
    if (c === RBRACE) {
      this.p++;
      return;
    }
    for (;;) {
      if (c !== QUOTE) this.failAt('a tag name string');
      const name = this.readString('a tag name');
      this.openTag(name);
      this.colon();
      if (this.b[this.p] !== LBRACKET) malformed(`column ${q(name)} must be an array of values`);
      this.p++;
      let r = 0;
      c = this.ws();
      if (c !== RBRACKET) {
        for (;; r++) {
          let v = NaN;
          if (c === MINUS || (c >= D0 && c <= D9)) v = this.number(); // infinities are rejected when compacting
          else if (c === LITERAL_NULL[0]) this.literal(LITERAL_NULL);
          else {
            if (c === RBRACKET || c === COMMA) this.failAt(`a value at column ${q(name)} row ${r}`);
            this.reject(`tag ${q(name)} row ${r}: value must be a finite number or null, got ${this.kindHere()}`);
            this.skipValue();
          }
          const n = this.count;
          if (n === this.values.length) this.grow(n + 1);
          this.values[n] = v;
          this.count = n + 1;
          c = this.ws();
          if (c === COMMA) {
            this.p++;
            c = this.ws();
          } else if (c === RBRACKET) break;
          else this.failAt(`',' or ']' after column ${q(name)} row ${r}`);
        }
        r++;
      }
      this.p++;
      this.columnRows.push(r);
      c = this.ws();
      if (c === COMMA) {
        this.p++;
        c = this.ws();
      } else if (c === RBRACE) {
        this.p++;
        return;
      } else this.failAt("',' or '}' in \"columns\"");
    }
  }

  /** Columnar body: checks column lengths, then pairs values with row timestamps in place. */
  private compactColumns(): void {
    if (!this.sawColumns && this.rowCount < 0) malformed('a write body needs "tags", or "timestamps" and "columns"');
    if (!this.sawColumns) malformed('"columns" is missing (a body with "timestamps" is columnar)');
    if (this.rowCount < 0) malformed('"timestamps" is missing (a body with "columns" is columnar)');
    const rows = this.rowCount;
    for (let s = 0; s < this.columnRows.length; s++) {
      if (this.columnRows[s] !== rows) {
        malformed(`column ${q(this.tagNames[this.segTag[s]])} has ${this.columnRows[s]} values but "timestamps" has ${rows}`);
      }
    }
    this.count = 0;
    for (let s = 0; s < this.segTag.length; s++) {
      const rawStart = this.segStart[s];
      this.segStart[s] = this.count;
      this.appendRows(this.values, rawStart, this.rowTs, rows, this.segTag[s]);
    }
  }

  // -- tokens ---------------------------------------------------------------------------------

  /** Skips JSON whitespace; returns the byte there (undefined at the end). */
  private ws(): number {
    const b = this.b;
    let p = this.p;
    let c = b[p];
    // One compare for the usual non-space byte (see the readPoints note on bench/points-decoder.ts).
    while (c <= SPACE && (c === SPACE || c === LF || c === CR || c === TAB)) c = b[++p];
    this.p = p;
    return c;
  }

  private colon(): void {
    if (this.ws() !== COLON) this.failAt("':'");
    this.p++;
    this.ws();
  }

  /**
   * A JSON number at p, bit-identical to JSON.parse. Fast path (Clinger): when the digits,
   * read as an integer m, stay below 2^53 and the decimal exponent e is within ±22, both m and
   * 10^|e| are exact doubles, so one IEEE multiplication or division rounds correctly. Anything
   * else goes to Number() on the token text, which is always correct.
   */
  private number(): number {
    const b = this.b;
    const start = this.p;
    let p = start;
    let c = b[p];
    const negative = c === MINUS;
    if (negative) c = b[++p];
    let m = 0;
    if (c === D0) {
      c = b[++p];
      if (c >= D0 && c <= D9) this.failNumber(p, 'no leading zero in a number');
    } else if (c >= D1 && c <= D9) {
      do {
        m = m * 10 + (c - D0);
        c = b[++p];
      } while (c >= D0 && c <= D9);
    } else this.failNumber(p, 'a digit');
    let exponent = 0;
    if (c === DOT) {
      c = b[++p];
      if (!(c >= D0 && c <= D9)) this.failNumber(p, 'a digit after the decimal point');
      do {
        m = m * 10 + (c - D0);
        exponent--;
        c = b[++p];
      } while (c >= D0 && c <= D9);
    }
    if (c === LOWER_E || c === UPPER_E) {
      c = b[++p];
      const negativeExponent = c === MINUS;
      if (negativeExponent || c === PLUS) c = b[++p];
      if (!(c >= D0 && c <= D9)) this.failNumber(p, 'a digit in the exponent');
      let e = 0;
      do {
        if (e < 100000) e = e * 10 + (c - D0); // any larger exponent over- or underflows anyway
        c = b[++p];
      } while (c >= D0 && c <= D9);
      exponent += negativeExponent ? -e : e;
    }
    this.p = p;
    let v: number;
    // m only grows, so a final m below 2^53 means every step was exact.
    if (m === 0) v = 0;
    else if (m < TWO_POW_53 && exponent >= -22 && exponent <= 22) {
      v = exponent === 0 ? m : exponent > 0 ? m * POW10[exponent] : m / POW10[-exponent];
    } else return Number(asciiString(b, start, p));
    return negative ? -v : v;
  }

  private failNumber(p: number, expected: string): never {
    this.p = p;
    return this.failAt(expected);
  }

  /**
   * Scans the string at p (on its opening quote), checking escapes and control bytes; leaves
   * its content in [strStart, strEnd) and returns HAS_ESCAPE | NON_ASCII flags.
   */
  private scanString(): number {
    const b = this.b;
    const end = b.length;
    let p = this.p + 1;
    const start = p;
    let flags = 0;
    for (;;) {
      if (p >= end) {
        this.p = p;
        this.failAt('\'"\' (unterminated string)');
      }
      const c = b[p];
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        flags |= HAS_ESCAPE;
        const e = b[p + 1];
        if (e === LOWER_U) {
          if (hexValue(b, p + 2) < 0) {
            this.p = p;
            this.failAt('four hex digits after \\u');
          }
          p += 6;
        } else if (e !== undefined && SHORT_ESCAPES[e] !== undefined) p += 2;
        else {
          this.p = p;
          this.failAt('a valid escape after \\');
        }
        continue;
      }
      if (c < SPACE) {
        this.p = p;
        this.failAt('no raw control character inside a string');
      }
      if (c >= 0x80) flags |= NON_ASCII;
      p++;
    }
    this.strStart = start;
    this.strEnd = p;
    this.p = p + 1;
    return flags;
  }

  private readString(what: string): string {
    const flags = this.scanString();
    const b = this.b;
    const start = this.strStart;
    const end = this.strEnd;
    if (flags === 0) return asciiString(b, start, end);
    if ((flags & HAS_ESCAPE) === 0) return utf8String(b, start, end, what);
    let out = '';
    let run = start;
    for (let i = start; i < end; ) {
      if (b[i] !== BACKSLASH) {
        i++;
        continue;
      }
      // Runs between escapes end on an ASCII backslash, so no UTF-8 sequence is split.
      if (i > run) out += (flags & NON_ASCII) === 0 ? asciiString(b, run, i) : utf8String(b, run, i, what);
      const e = b[i + 1];
      if (e === LOWER_U) {
        out += String.fromCharCode(hexValue(b, i + 2)); // surrogate pairs arrive as two \u escapes
        i += 6;
      } else {
        out += SHORT_ESCAPES[e];
        i += 2;
      }
      run = i;
    }
    if (run < end) out += (flags & NON_ASCII) === 0 ? asciiString(b, run, end) : utf8String(b, run, end, what);
    return out;
  }

  /** Reads a key at p and returns its index in TOP_KEYS, or KEY_OTHER. */
  private topKey(): number {
    const flags = this.scanString();
    if ((flags & HAS_ESCAPE) !== 0) {
      this.p = this.strStart - 1;
      const key = this.readString('a key');
      return (TOP_KEYS as readonly string[]).indexOf(key);
    }
    const b = this.b;
    const start = this.strStart;
    const len = this.strEnd - start;
    outer: for (let k = 0; k < TOP_KEY_BYTES.length; k++) {
      const want = TOP_KEY_BYTES[k];
      if (want.length !== len) continue;
      for (let i = 0; i < len; i++) if (b[start + i] !== want[i]) continue outer;
      return k;
    }
    return KEY_OTHER;
  }

  private literal(word: Uint8Array): void {
    const b = this.b;
    for (let i = 0; i < word.length; i++) {
      if (b[this.p + i] !== word[i]) {
        this.p += i;
        this.failAt(`'${asciiString(word, 0, word.length)}'`);
      }
    }
    this.p += word.length;
  }

  /** Skips any JSON value at p, checking its syntax; iterative so deep nesting cannot overflow the stack. */
  private skipValue(): void {
    const closers: number[] = [];
    for (;;) {
      // A value starts here.
      let c = this.b[this.p];
      if (c === LBRACE || c === LBRACKET) {
        const close = c === LBRACE ? RBRACE : RBRACKET;
        this.p++;
        c = this.ws();
        if (c === close) this.p++;
        else {
          closers.push(close);
          if (close === RBRACE) this.skipKeyColon(c);
          continue;
        }
      } else if (c === QUOTE) this.scanString();
      else if (c === MINUS || (c >= D0 && c <= D9)) this.number();
      else if (c === LITERAL_TRUE[0]) this.literal(LITERAL_TRUE);
      else if (c === LITERAL_FALSE[0]) this.literal(LITERAL_FALSE);
      else if (c === LITERAL_NULL[0]) this.literal(LITERAL_NULL);
      else this.failAt('a JSON value');
      // A value ended: close containers or move to the next element.
      for (;;) {
        if (closers.length === 0) return;
        const close = closers[closers.length - 1];
        c = this.ws();
        if (c === COMMA) {
          this.p++;
          c = this.ws();
          if (close === RBRACE) this.skipKeyColon(c);
          break;
        }
        if (c !== close) this.failAt(close === RBRACE ? "',' or '}'" : "',' or ']'");
        this.p++;
        closers.pop();
      }
    }
  }

  private skipKeyColon(c: number): void {
    if (c !== QUOTE) this.failAt('a key string');
    this.scanString();
    this.colon();
  }

  /** The kind of the JSON value at p, for messages. */
  private kindHere(): string {
    const c = this.b[this.p];
    if (c === QUOTE) return 'a string';
    if (c === LBRACE) return 'an object';
    if (c === LBRACKET) return 'an array';
    if (c === LITERAL_NULL[0]) return 'null';
    if (c === LITERAL_TRUE[0] || c === LITERAL_FALSE[0]) return 'a boolean';
    return 'an unexpected byte';
  }

  private pointShape(name: string, i: number, expected: string): never {
    return this.failAt(`${expected} (tag ${q(name)} point ${i} must be a [timestamp, value] array)`);
  }

  private failAt(expected: string): never {
    const b = this.b;
    const p = this.p;
    let found: string;
    if (p >= b.length) found = 'the end of the body';
    else if (b[p] > SPACE && b[p] < 0x7f) found = `'${String.fromCharCode(b[p])}'`;
    else found = `byte 0x${b[p].toString(16).padStart(2, '0')}`;
    return malformed(`malformed JSON at byte ${p}: expected ${expected}, found ${found}`);
  }
}

/** The value of four hex digits at b[i..i+3], or -1 when they are not hex. */
function hexValue(b: Uint8Array, i: number): number {
  let v = 0;
  for (let k = i; k < i + 4; k++) {
    const c = b[k];
    let d: number;
    if (c >= D0 && c <= D9) d = c - D0;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x57; // a..f
    else if (c >= 0x41 && c <= 0x46) d = c - 0x37; // A..F
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

/**
 * Decodes a JSON write body (either shape of WIRE.md) from its UTF-8 bytes.
 * Throws WriteBodyError: `malformed` for bad JSON or shape, `rejected` for unacceptable content.
 */
export function decodeJsonWriteBody(bytes: Uint8Array): PointBatch {
  return new JsonScanner(bytes).decode();
}

// ---------------------------------------------------------------------------------------------
// Decoded objects (msgpack)

/** An object's own entries (a plain object, or a Map with string keys), or null when it is not one. */
function entriesOf(x: unknown): Array<[string, unknown]> | null {
  if (x instanceof Map) {
    const out: Array<[string, unknown]> = [];
    for (const [k, v] of x) {
      if (typeof k !== 'string') return null;
      out.push([k, v]);
    }
    return out;
  }
  if (typeof x !== 'object' || x === null || Array.isArray(x) || ArrayBuffer.isView(x) || x instanceof Date) return null;
  return Object.entries(x);
}

function field(entries: Array<[string, unknown]>, name: string): unknown {
  let found: unknown;
  for (const [k, v] of entries) if (k === name) found = v;
  return found;
}

function isList(x: unknown): x is ArrayLike<unknown> {
  return Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  switch (typeof x) {
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean';
    case 'number':
      return String(x);
    case 'bigint':
      return `${x}n`;
    case 'undefined':
      return 'undefined';
    default:
      return 'an object';
  }
}

/** A decoded timestamp as a number, or NaN when it is not a valid timestamp. */
function objectTimestamp(x: unknown): number {
  let t = NaN;
  if (typeof x === 'number') t = x;
  else if (typeof x === 'bigint') t = x >= 0n && x <= MAX_TIMESTAMP_BIGINT ? Number(x) : NaN;
  else if (x instanceof Date) t = x.getTime(); // msgpack's timestamp extension decodes to Date
  return isTimestamp(t) ? t + 0 : NaN;
}

/** A decoded value as a number (a bigint rounded to the nearest), or NaN when it is not finite. */
function objectValue(x: unknown): number {
  if (typeof x === 'number') return x - x === 0 ? x : NaN;
  return typeof x === 'bigint' ? Number(x) : NaN;
}

// Rejection messages are built only on failure: no string work per point.
function rejectTimestamp(out: BatchBuilder, where: string, x: unknown): void {
  out.reject(`${where}: ${timestampProblem(x instanceof Date ? String(x.getTime()) : describe(x))}`);
}

function rejectValue(out: BatchBuilder, where: string, x: unknown, nullAllowed: boolean): void {
  out.reject(`${where}: value must be a finite number${nullAllowed ? ' or null' : ''}, got ${describe(x)}`);
}

/**
 * Decodes a write body already parsed by another decoder (msgpack): the same two shapes, rules
 * and errors as decodeJsonWriteBody. Maps may be plain objects or Maps with string keys;
 * timestamps and values may be numbers or bigints, timestamps also Dates. Tag order is the
 * object's key order.
 */
export function decodeWriteObject(obj: unknown): PointBatch {
  const body = entriesOf(obj);
  if (body === null) malformed('a write body must be an object');
  const scope: WriteScope = {};
  for (const name of SCOPE_FIELDS) {
    const v = field(body, name);
    if (v === undefined) continue;
    if (typeof v !== 'string') malformed(`"${name}" must be a string`);
    scope[name] = v;
  }
  const tags = field(body, 'tags');
  const timestamps = field(body, 'timestamps');
  const columns = field(body, 'columns');
  if (tags !== undefined && (timestamps !== undefined || columns !== undefined)) {
    malformed('a body has either "tags" or "timestamps" and "columns", not both');
  }
  if (tags !== undefined) return decodeTagObject(tags, scope);
  if (timestamps === undefined && columns === undefined) malformed('a write body needs "tags", or "timestamps" and "columns"');
  if (columns === undefined) malformed('"columns" is missing (a body with "timestamps" is columnar)');
  if (timestamps === undefined) malformed('"timestamps" is missing (a body with "columns" is columnar)');
  return decodeColumnObject(timestamps, columns, scope);
}

function decodeTagObject(tags: unknown, scope: WriteScope): PointBatch {
  const entries = entriesOf(tags);
  if (entries === null) malformed('"tags" must be an object mapping tag names to [[timestamp, value], …]');
  let total = 0;
  for (const [, points] of entries) if (isList(points)) total += points.length;
  const out = new BatchBuilder(total);
  for (const [name, points] of entries) {
    out.openTag(name);
    if (!isList(points)) malformed(`tag ${q(name)} must be an array of [timestamp, value] points`);
    for (let i = 0; i < points.length; i++) {
      const point = points[i];
      if (!isList(point) || point.length !== 2) malformed(`tag ${q(name)} point ${i} must be a [timestamp, value] array`);
      const t = objectTimestamp(point[0]);
      const v = objectValue(point[1]);
      if (t !== t) rejectTimestamp(out, `tag ${q(name)} point ${i}`, point[0]);
      if (v !== v) rejectValue(out, `tag ${q(name)} point ${i}`, point[1], false);
      out.timestamps[out.count] = t;
      out.values[out.count] = v;
      out.count++;
    }
  }
  return out.finish(scope);
}

function decodeColumnObject(timestamps: unknown, columns: unknown, scope: WriteScope): PointBatch {
  if (!isList(timestamps)) malformed('"timestamps" must be an array');
  const entries = entriesOf(columns);
  if (entries === null) malformed('"columns" must be an object mapping tag names to value arrays');
  const rows = timestamps.length;
  for (const [name, column] of entries) {
    if (!isList(column)) malformed(`column ${q(name)} must be an array of values`);
    if (column.length !== rows) malformed(`column ${q(name)} has ${column.length} values but "timestamps" has ${rows}`);
  }
  const out = new BatchBuilder(rows * entries.length);
  const rowTs = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    rowTs[r] = objectTimestamp(timestamps[r]);
    if (rowTs[r] !== rowTs[r]) rejectTimestamp(out, `timestamps index ${r}`, timestamps[r]);
  }
  for (const [name, column] of entries as Array<[string, ArrayLike<unknown>]>) {
    out.openTag(name);
    for (let r = 0; r < rows; r++) {
      const x = column[r];
      if (x === null) continue;
      out.timestamps[out.count] = rowTs[r];
      const v = objectValue(x);
      if (v !== v) rejectValue(out, `tag ${q(name)} row ${r}`, x, true);
      out.values[out.count] = v;
      out.count++;
    }
  }
  return out.finish(scope);
}

// ---------------------------------------------------------------------------------------------
// Binary columnar batch "HSW1"

function align8(n: number): number {
  return (n + 7) & ~7;
}

/** n f64s at byte `offset` of an 8-aligned body: a view on little-endian hosts, else a copy. */
function f64s(bytes: Uint8Array, offset: number, n: number): Float64Array {
  if (HOST_LE) return new Float64Array(bytes.buffer, bytes.byteOffset + offset, n);
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, n * 8);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
  return out;
}

function binaryScope(bytes: Uint8Array): WriteScope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8String(bytes, 0, bytes.length, 'binary batch: the scope'));
  } catch (err) {
    if (err instanceof WriteBodyError) throw err;
    malformed('binary batch: the scope is not valid JSON');
  }
  const entries = entriesOf(parsed);
  if (entries === null) malformed('binary batch: the scope must be a JSON object');
  const scope: WriteScope = {};
  for (const name of SCOPE_FIELDS) {
    const v = field(entries, name);
    if (v === undefined) continue;
    if (typeof v !== 'string') malformed(`binary batch: "${name}" must be a string`);
    scope[name] = v;
  }
  return scope;
}

/**
 * Decodes an `application/octet-stream` write body ("HSW1"). NaN values are gaps; ±Infinity and
 * invalid timestamps are rejected; wrong lengths (truncated or trailing bytes) are malformed.
 */
export function decodeBinaryBatch(bytes: Uint8Array): PointBatch {
  // The format pads every f64 array to a multiple of 8 from the body's start, so one aligned
  // copy of a misaligned body lets every array be viewed in place.
  // (new Uint8Array(view) copies; a Node Buffer's slice() would not.)
  if (bytes.byteOffset % 8 !== 0) bytes = new Uint8Array(bytes);
  const len = bytes.length;
  if (len < BINARY_HEADER_BYTES) malformed(`binary batch: ${len} bytes is shorter than the ${BINARY_HEADER_BYTES}-byte header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  if (dv.getUint32(0, true) !== BINARY_MAGIC) malformed('binary batch: does not start with "HSW1"');
  const tagCount = dv.getUint32(4, true);
  const rowCount = dv.getUint32(8, true);
  const scopeLength = dv.getUint16(12, true);
  let off = BINARY_HEADER_BYTES + scopeLength;
  if (off > len) malformed(`binary batch: truncated scope (${scopeLength} bytes declared, ${len - BINARY_HEADER_BYTES} present)`);
  const scope = binaryScope(bytes.subarray(BINARY_HEADER_BYTES, off));
  off = align8(off);
  if (off > len) malformed(`binary batch: truncated padding after the scope (the timestamps start at byte ${off}, the body has ${len})`);
  const columnBytes = rowCount * 8;
  if (off + columnBytes > len) {
    malformed(`binary batch: truncated timestamps (${rowCount} rows need ${columnBytes} bytes at byte ${off}, ${Math.max(0, len - off)} present)`);
  }
  const rowTs = f64s(bytes, off, rowCount);
  off += columnBytes;
  // Each tag takes at least 8 bytes of header and padding plus its values: refuse a count the
  // body cannot hold before allocating anything for it.
  const room = Math.floor((len - off) / (8 + columnBytes));
  if (tagCount > room) malformed(`binary batch: truncated (${tagCount} tags declared, the body holds at most ${room})`);

  const names: string[] = [];
  const valueOffsets: number[] = [];
  for (let t = 0; t < tagCount; t++) {
    if (off + 2 > len) malformed(`binary batch: truncated at the name length of tag ${t}`);
    const nameStart = off + 2;
    const nameEnd = nameStart + dv.getUint16(off, true);
    if (nameEnd > len) malformed(`binary batch: truncated name of tag ${t}`);
    const name = utf8String(bytes, nameStart, nameEnd, `binary batch: the name of tag ${t}`);
    off = align8(nameEnd);
    if (off + columnBytes > len) {
      malformed(`binary batch: truncated values of tag ${t} ${q(name)} (${columnBytes} bytes at byte ${off}, ${Math.max(0, len - off)} present)`);
    }
    names.push(name);
    valueOffsets.push(off);
    off += columnBytes;
  }
  if (off !== len) malformed(`binary batch: ${len - off} bytes after the last tag`);

  const out = new BatchBuilder(tagCount * rowCount);
  for (let r = 0; r < rowCount; r++) {
    if (!isTimestamp(rowTs[r])) {
      out.reject(`timestamps index ${r}: ${timestampProblem(String(rowTs[r]))}`);
      break;
    }
  }
  for (let t = 0; t < tagCount; t++) {
    const tag = out.openTag(names[t]);
    out.appendRows(f64s(bytes, valueOffsets[t], rowCount), 0, rowTs, rowCount, tag);
  }
  return out.finish(scope);
}

function writeF64s(buf: Uint8Array, dv: DataView, offset: number, src: Float64Array | readonly number[]): void {
  if (HOST_LE) new Float64Array(buf.buffer, buf.byteOffset + offset, src.length).set(src);
  else for (let i = 0; i < src.length; i++) dv.setFloat64(offset + i * 8, src[i], true);
}

/**
 * Encodes a binary write batch ("HSW1"); for clients and tests. Every column must be as long
 * as `timestamps` (NaN = no value). Values are written as given: the server validates them.
 */
export function encodeBinaryBatch(
  scope: WriteScope,
  timestamps: Float64Array | readonly number[],
  columns: ReadonlyArray<{ name: string; values: Float64Array | readonly number[] }>,
): Uint8Array {
  const rows = timestamps.length;
  const scopeFields: WriteScope = {};
  for (const name of SCOPE_FIELDS) if (typeof scope[name] === 'string') scopeFields[name] = scope[name];
  const scopeBytes = utf8Encoder.encode(JSON.stringify(scopeFields));
  if (scopeBytes.length > MAX_U16) throw new RangeError(`encodeBinaryBatch: scope of ${scopeBytes.length} bytes exceeds ${MAX_U16}`);
  const nameBytes = columns.map((column) => {
    const encoded = utf8Encoder.encode(column.name);
    if (encoded.length > MAX_U16) throw new RangeError(`encodeBinaryBatch: tag name ${q(column.name)} exceeds ${MAX_U16} bytes`);
    if (column.values.length !== rows) {
      throw new RangeError(`encodeBinaryBatch: column ${q(column.name)} has ${column.values.length} values, timestamps has ${rows}`);
    }
    return encoded;
  });
  let size = align8(BINARY_HEADER_BYTES + scopeBytes.length) + rows * 8;
  for (const name of nameBytes) size += align8(2 + name.length) + rows * 8;

  const buf = new Uint8Array(size); // zero-filled, so the padding is already written
  const dv = new DataView(buf.buffer);
  dv.setUint32(0, BINARY_MAGIC, true);
  dv.setUint32(4, columns.length, true);
  dv.setUint32(8, rows, true);
  dv.setUint16(12, scopeBytes.length, true);
  buf.set(scopeBytes, BINARY_HEADER_BYTES);
  let off = align8(BINARY_HEADER_BYTES + scopeBytes.length);
  writeF64s(buf, dv, off, timestamps);
  off += rows * 8;
  for (let t = 0; t < columns.length; t++) {
    dv.setUint16(off, nameBytes[t].length, true);
    buf.set(nameBytes[t], off + 2);
    off = align8(off + 2 + nameBytes[t].length);
    writeF64s(buf, dv, off, columns[t].values);
    off += rows * 8;
  }
  return buf;
}
