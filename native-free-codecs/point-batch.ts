/**
 * What every write-body decoder (write-body-json.ts, write-body-object.ts, write-body-hsw1.ts)
 * builds and throws: the columnar PointBatch, WriteBodyError, the BatchBuilder that collects
 * points and merges repeated tags, and the rules of write-body.ts shared by all formats
 * (timestamps, tag names, scope fields). Pure TypeScript: runs in a browser.
 */

import { SCOPE_FIELDS, type ScopeFields as WriteScope } from '../shared/scope.js';

export type { WriteScope };

/**
 * A series' label set (WIRE.md part 3 "Series identity"): label names to values, names sorted.
 * Line protocol gives `measurement`, `field` and the line's non-scope tags.
 */
export type SeriesLabels = Readonly<Record<string, string>>;

export interface PointBatch {
  /** Scope fields present in the body. */
  scope: WriteScope;
  /** Distinct tag names in order of appearance. */
  tagNames: string[];
  /**
   * The label set of each tag (same index as tagNames; null or absent: no labels). Kept with the
   * series when the write creates it, or when it was stored without labels before.
   */
  labels?: ReadonlyArray<SeriesLabels | null>;
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

export const MAX_TIMESTAMP = 9007199254740991; // 2^53 - 1

/** 2^53: integers below it are exact doubles. */
export const TWO_POW_53 = 9007199254740992;

/** Every power of ten a double holds exactly; beyond 1e22 they are rounded. */
const POW10 = new Float64Array([
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
  1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]);

/**
 * m × 10^exponent by Clinger's fast path, the text decoders' shared number step: when the digits
 * read as an integer m stay below 2^53 and the exponent is within ±22, m and 10^|exponent| are
 * exact doubles, so one IEEE multiplication or division rounds correctly. NaN outside that
 * range: the caller then parses the token text with Number(), which is always correct.
 */
export function exactDecimal(m: number, exponent: number): number {
  if (m >= TWO_POW_53 || exponent < -22 || exponent > 22) return NaN;
  return exponent === 0 ? m : exponent > 0 ? m * POW10[exponent] : m / POW10[-exponent];
}

/** Bytes known to be ASCII as a string (chunked: fromCharCode.apply takes the view as its argument list). */
export function asciiString(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i += 4096) {
    s += String.fromCharCode.apply(null, b.subarray(i, Math.min(end, i + 4096)) as unknown as number[]);
  }
  return s;
}
const MAX_TAG_NAME_BYTES = 256;

export const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function malformed(message: string): never {
  throw new WriteBodyError('malformed', message);
}

/** A tag name for a message: JSON-quoted, cut short so a huge bogus name stays readable. */
export function q(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

/** What a decoder accepts beyond the rules of the formats. */
export interface DecodeLimits {
  /**
   * The smallest timestamp accepted (the service's storage.minTimestampMs, named in the
   * rejection); 0, the default, accepts every timestamp the formats allow.
   */
  minTimestampMs?: number;
}

/** An integer in minTimestampMs..2^53-1. */
export function isTimestamp(t: number, minTimestampMs: number): boolean {
  return t >= minTimestampMs && t <= MAX_TIMESTAMP && Math.floor(t) === t;
}

/**
 * Below this, a timestamp under the minimum reads as epoch seconds (up to the year 5138) rather
 * than as old milliseconds: the usual mistake of clients used to seconds (Influx line protocol).
 */
const SECONDS_BELOW = 1e11;

/** Why `got` (a number, or what was there instead, described) is not an accepted timestamp. */
export function timestampProblem(got: number | string, minTimestampMs: number): string {
  if (typeof got === 'number' && got >= 0 && got < minTimestampMs && Math.floor(got) === got) {
    const hint = got < SECONDS_BELOW && got * 1000 >= minTimestampMs ? '; it looks like epoch seconds, send milliseconds' : '';
    return `timestamp ${got} is before storage.minTimestampMs (${minTimestampMs})${hint}`;
  }
  return `timestamp must be an integer in 0..2^53-1, got ${got}`;
}

/** Why `name` cannot be a tag name, or null when it can. */
export function tagNameProblem(name: string): string | null {
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

export function utf8String(b: Uint8Array, start: number, end: number, what: string): string {
  try {
    return utf8Decoder.decode(b.subarray(start, end));
  } catch {
    return malformed(`${what} is not valid UTF-8`);
  }
}

/** An object's own entries (a plain object, or a Map with string keys), or null when it is not one. */
export function entriesOf(x: unknown): Array<[string, unknown]> | null {
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

export function field(entries: Array<[string, unknown]>, name: string): unknown {
  let found: unknown;
  for (const [k, v] of entries) if (k === name) found = v;
  return found;
}

/** The scope fields of a decoded object (a msgpack body, the HSW1 scope); a non-string one is malformed. */
export function scopeOf(entries: Array<[string, unknown]>, what: string): WriteScope {
  const scope: WriteScope = {};
  for (const name of SCOPE_FIELDS) {
    const v = field(entries, name);
    if (v === undefined) continue;
    if (typeof v !== 'string') malformed(`${what}"${name}" must be a string`);
    scope[name] = v;
  }
  return scope;
}

/**
 * Collects points and tag segments for any decoder. A segment is one occurrence of a tag
 * (one JSON key, one binary column); finish() merges repeated tags.
 */
export class BatchBuilder {
  timestamps: Float64Array;
  values: Float64Array;
  count = 0;
  readonly tagNames: string[] = [];
  /** Per segment: its tag index and its first point. */
  readonly segTag: number[] = [];
  readonly segStart: number[] = [];
  /** First reason to reject the body, kept so the rest is still checked for shape. */
  rejection: string | null = null;
  /** DecodeLimits.minTimestampMs, 0 when not given. */
  readonly minTimestampMs: number;
  private readonly tagIds = new Map<string, number>();
  private repeated = false;

  constructor(capacity: number, limits: DecodeLimits = {}) {
    this.timestamps = new Float64Array(capacity);
    this.values = new Float64Array(capacity);
    this.minTimestampMs = limits.minTimestampMs ?? 0;
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
