/**
 * The JSON write-body decoder (write-body.ts has the shapes and rules): a byte-level scanner that
 * fills one PointBatch with no per-point objects, strings or arrays. Its hot loop is tuned
 * against bench/write-body-decoders.ts (comments below say which choices were measured).
 * Pure TypeScript: runs in a browser.
 */

import { SCOPE_FIELDS, type ScopeField } from '../shared/scope.js';
import { asciiString, BatchBuilder, exactDecimal, isTimestamp, malformed, q, timestampProblem, utf8Encoder, utf8String, type DecodeLimits, type PointBatch, type WriteScope } from './point-batch.js';


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

/** Latin-1/ASCII bytes to a string in a few calls, not one concatenation per byte. */
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

  constructor(bytes: Uint8Array, limits: DecodeLimits) {
    // Tag-keyed points take about 16..25 bytes each ("[1700000000000,12.34],").
    super(Math.max(16, bytes.length >>> 4), limits);
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
    this.readTagObject('tags', (name) => this.readPoints(name));
  }

  /**
   * The object at p (on its `{`) that maps tag names to what `readValue` reads: a segment is
   * opened per key, then its value is read. A closure per tag, not per point.
   */
  private readTagObject(section: string, readValue: (name: string) => void): void {
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
      readValue(name);
      c = this.ws();
      if (c === COMMA) {
        this.p++;
        c = this.ws();
      } else if (c === RBRACE) {
        this.p++;
        return;
      } else this.failAt(`',' or '}' in "${section}"`);
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
    // end); with the one-compare ws() below, about 15% more points/s in bench/write-body-decoders.ts.
    let ts = this.timestamps;
    let vs = this.values;
    let n = this.count;
    const minTs = this.minTimestampMs;
    for (let i = 0; ; i++) {
      if (c !== LBRACKET) this.pointShape(name, i, "'['");
      this.p++;
      c = this.ws();
      let t = 0;
      if (c === MINUS || (c >= D0 && c <= D9)) {
        t = this.number();
        if (!isTimestamp(t, minTs)) this.reject(`tag ${q(name)} point ${i}: ${timestampProblem(t, minTs)}`);
      } else {
        if (c === RBRACKET || c === COMMA) this.pointShape(name, i, 'a timestamp');
        this.reject(`tag ${q(name)} point ${i}: ${timestampProblem(this.kindHere(), minTs)}`);
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
          if (!isTimestamp(t, this.minTimestampMs)) this.reject(`timestamps index ${n}: ${timestampProblem(t, this.minTimestampMs)}`);
        } else {
          if (c === RBRACKET || c === COMMA) this.failAt(`a timestamp at timestamps index ${n}`);
          this.reject(`timestamps index ${n}: ${timestampProblem(this.kindHere(), this.minTimestampMs)}`);
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
    this.readTagObject('columns', (name) => this.readColumn(name));
  }

  /** One column's `[value|null, …]`. */
  private readColumn(name: string): void {
    if (this.b[this.p] !== LBRACKET) malformed(`column ${q(name)} must be an array of values`);
    this.p++;
    let r = 0;
    let c = this.ws();
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
    // One compare for the usual non-space byte (see the readPoints note on bench/write-body-decoders.ts).
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
    else {
      v = exactDecimal(m, exponent);
      if (v !== v) return Number(asciiString(b, start, p));
    }
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
export function decodeJsonWriteBody(bytes: Uint8Array, limits: DecodeLimits = {}): PointBatch {
  return new JsonScanner(bytes, limits).decode();
}
