/**
 * Prometheus remote write 1.0 and remote read (`prompb`, as in Prometheus' prompb/types.proto and
 * remote.proto) on the protobuf wire format by hand (protobuf-wire.ts). The bodies travel
 * snappy-compressed (snappy.ts); these functions see the protobuf bytes. Pure TypeScript: runs
 * in a browser.
 *
 *   WriteRequest  { 1: repeated TimeSeries; 3: repeated MetricMetadata (skipped, counted) }
 *   TimeSeries    { 1: repeated Label; 2: repeated Sample; 3: exemplars, 4: histograms (skipped, counted) }
 *   Label         { 1: string name; 2: string value }
 *   Sample        { 1: double value; 2: int64 timestamp (ms) }
 *   ReadRequest   { 1: repeated Query; 2: repeated ResponseType accepted_response_types (packed or not) }
 *   Query         { 1: int64 start_timestamp_ms; 2: int64 end_timestamp_ms; 3: repeated LabelMatcher; 4: ReadHints }
 *   LabelMatcher  { 1: Type type (EQ=0 NEQ=1 RE=2 NRE=3); 2: string name; 3: string value }
 *   ReadHints     { 1: int64 step_ms; 2: string func; 3: int64 start_ms; 4: int64 end_ms; 5: repeated string grouping; 6: bool by; 7: int64 range_ms }
 *   ReadResponse  { 1: repeated QueryResult }      QueryResult { 1: repeated TimeSeries }
 *
 * A decoded WriteRequest is columnar (RemoteWriteBatch): one object per series for its labels,
 * and the samples of every series in shared typed arrays, no object per sample. Values are
 * copied byte for byte, so every NaN payload survives, Prometheus' stale marker
 * (0x7ff0000000000002) included.
 *
 * Refused as WriteBodyError `malformed` (HTTP 400: Prometheus drops such a batch rather than
 * retrying it), naming the series where there is one: anything the wire reader refuses; a label
 * name or value that is not valid UTF-8; a label name not matching [a-zA-Z_][a-zA-Z0-9_]*; a
 * label name twice in one series; more than MAX_LABELS_PER_SERIES labels; a series left with no
 * label; a timestamp outside 0..2^53-1 or below RemoteWriteLimits.minTimestampMs. A label with
 * an empty value is dropped (Prometheus treats it as absent). A series without `__name__` is
 * accepted.
 */

import { asciiString, isTimestamp, malformed, MAX_TIMESTAMP, timestampProblem, utf8Encoder, utf8String } from './point-batch.js';
import { delimitedSize, ProtoReader, ProtoWriter, varintSize, WIRE_FIXED64, WIRE_LENGTH_DELIMITED, WIRE_VARINT } from './protobuf-wire.js';

/** More labels than this in one series is refused (Prometheus series have a handful; this bounds hostile bodies). */
export const MAX_LABELS_PER_SERIES = 256;

export type Label = readonly [name: string, value: string];

export interface RemoteWriteSeries {
  /** Sorted by name, empty values dropped. */
  labels: readonly Label[];
}

export interface RemoteWriteBatch {
  series: RemoteWriteSeries[];
  /** Length series.length + 1: series i's samples are [seriesStart[i], seriesStart[i + 1]). */
  seriesStart: Uint32Array;
  /** Epoch ms, at least sampleCount long. */
  timestamps: Float64Array;
  /** Bit for bit as sent (NaN payloads, ±Infinity, -0), at least sampleCount long. */
  values: Float64Array;
  sampleCount: number;
  /** What the body held that is not stored. */
  skipped: { exemplars: number; histograms: number; metadata: number };
}

export interface RemoteWriteLimits {
  /** The smallest timestamp accepted (storage.minTimestampMs); 0 by default. */
  minTimestampMs?: number;
}

const KEY_LABELS = (1 << 3) | WIRE_LENGTH_DELIMITED;
const KEY_SAMPLES = (2 << 3) | WIRE_LENGTH_DELIMITED;
const KEY_TIMESERIES = KEY_LABELS;
const KEY_VALUE = (1 << 3) | WIRE_FIXED64;
const KEY_TIMESTAMP = (2 << 3) | WIRE_VARINT;

/** A label name byte that may start a name: [a-zA-Z_]; and continue one: [a-zA-Z0-9_]. */
const NAME_START = new Uint8Array(256);
const NAME_PART = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const letter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
  NAME_START[c] = letter ? 1 : 0;
  NAME_PART[c] = letter || (c >= 0x30 && c <= 0x39) ? 1 : 0;
}

/**
 * Short ASCII strings seen lately, by a hash of their bytes: label names and most label values
 * repeat in every body a Prometheus sends (`__name__`, `job`, `instance`, metric names, hosts),
 * and one string per repetition was most of the decoder's garbage (bench/prom-remote-write.ts).
 * A slot holds the last string hashed to it; a hit is checked byte by byte, so a collision only
 * costs a new string.
 */
const INTERN_SLOTS = 1 << 13;
const INTERN_MAX_BYTES = 48;
const interned: string[] = new Array<string>(INTERN_SLOTS).fill('');

/** ASCII bytes as a string, the same string object as last time for short ones. */
function internAscii(buf: Uint8Array, start: number, end: number): string {
  const n = end - start;
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i], 0x01000193);
  const slot = (h >>> 0) & (INTERN_SLOTS - 1);
  const known = interned[slot];
  if (known.length === n) {
    let same = true;
    for (let i = 0; i < n; i++) {
      if (known.charCodeAt(i) !== buf[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return known;
  }
  let made = '';
  for (let i = start; i < end; i++) made += String.fromCharCode(buf[i]);
  interned[slot] = made;
  return made;
}

/** A string field's bytes as a string: ASCII without the decoder's call, the rest strictly (invalid UTF-8 is malformed). */
function text(buf: Uint8Array, start: number, end: number, what: () => string): string {
  if (end - start <= INTERN_MAX_BYTES) {
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (buf[i] >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return end === start ? '' : internAscii(buf, start, end);
  }
  return utf8String(buf, start, end, what());
}

/** Series text for messages: `{a="1", b="2"}`, cut short. */
function describe(names: readonly string[], values: readonly string[]): string {
  const text = `{${names.map((n, i) => `${n}=${JSON.stringify(values[i])}`).join(', ')}}`;
  return text.length > 120 ? `${text.slice(0, 120)}…}` : text;
}

/** Collects samples into typed arrays that double as they fill. */
class SampleColumns {
  timestamps: Float64Array;
  values: Float64Array;
  valueBytes: Uint8Array;
  count = 0;

  constructor(capacity: number) {
    this.timestamps = new Float64Array(capacity);
    this.values = new Float64Array(capacity);
    this.valueBytes = new Uint8Array(this.values.buffer);
  }

  /** Room for one more sample. */
  reserve(): void {
    if (this.count < this.values.length) return;
    const size = this.values.length * 2;
    const ts = new Float64Array(size);
    const vs = new Float64Array(size);
    ts.set(this.timestamps); // typed-array copies move bytes: NaN payloads stay as they are
    vs.set(this.values);
    this.timestamps = ts;
    this.values = vs;
    this.valueBytes = new Uint8Array(vs.buffer);
  }
}

/** Decodes a (decompressed) WriteRequest; see the header for what is refused. */
export function decodeWriteRequest(bytes: Uint8Array, limits: RemoteWriteLimits = {}): RemoteWriteBatch {
  const minTimestampMs = limits.minTimestampMs ?? 0;
  const r = new ProtoReader(bytes);
  // A sample takes about 18 bytes on the wire: start near that and double when needed.
  const samples = new SampleColumns(Math.max(64, Math.ceil(bytes.length / 16)));
  const series: RemoteWriteSeries[] = [];
  const starts: number[] = [0];
  const skipped = { exemplars: 0, histograms: 0, metadata: 0 };
  const names: string[] = [];
  const values: string[] = [];
  while (r.pos < r.end) {
    const key = r.key();
    if (key === KEY_TIMESERIES) {
      const seriesEnd = r.delimitedEnd('TimeSeries');
      const outerEnd = r.end;
      r.end = seriesEnd;
      const index = series.length;
      names.length = 0;
      values.length = 0;
      const first = samples.count;
      let badSample = -1;
      let badTimestamp = 0;
      while (r.pos < seriesEnd) {
        const field = r.key();
        if (field === KEY_SAMPLES) {
          const sampleEnd = r.delimitedEnd('Sample');
          r.end = sampleEnd;
          samples.reserve();
          const n = samples.count;
          let timestamp = 0;
          let valueAt = -1;
          while (r.pos < sampleEnd) {
            const k = r.key();
            if (k === KEY_VALUE) valueAt = r.fixed(8, 'Sample.value');
            else if (k === KEY_TIMESTAMP) timestamp = r.int64();
            else if (k >>> 3 === 1 || k >>> 3 === 2) r.expectWire(k, k >>> 3 === 1 ? WIRE_FIXED64 : WIRE_VARINT, k >>> 3 === 1 ? 'Sample.value' : 'Sample.timestamp');
            else r.skip(k);
          }
          r.end = seriesEnd;
          if (valueAt >= 0) r.copyDouble(valueAt, samples.valueBytes, n);
          else samples.values[n] = 0;
          if (badSample < 0 && !isTimestamp(timestamp, minTimestampMs)) {
            badSample = n - first;
            badTimestamp = timestamp;
          }
          samples.timestamps[n] = timestamp;
          samples.count = n + 1;
        } else if (field === KEY_LABELS) {
          if (names.length >= MAX_LABELS_PER_SERIES) malformed(`timeseries ${index} has more than ${MAX_LABELS_PER_SERIES} labels (MAX_LABELS_PER_SERIES)`);
          readLabel(r, r.delimitedEnd('Label'), seriesEnd, index, names, values);
        } else if (field >>> 3 === 3) {
          skipped.exemplars++;
          r.skip(field);
        } else if (field >>> 3 === 4) {
          skipped.histograms++;
          r.skip(field);
        } else if (field >>> 3 === 1 || field >>> 3 === 2) r.expectWire(field, WIRE_LENGTH_DELIMITED, field >>> 3 === 1 ? 'TimeSeries.labels' : 'TimeSeries.samples');
        else r.skip(field);
      }
      r.end = outerEnd;
      const labels = finishLabels(names, values, index);
      if (badSample >= 0) {
        const problem = badTimestamp > MAX_TIMESTAMP || badTimestamp < 0 ? `timestamp must be an integer in 0..2^53-1, got ${badTimestamp}` : timestampProblem(badTimestamp, minTimestampMs);
        malformed(`timeseries ${index} ${describe(names, values)} sample ${badSample}: ${problem}`);
      }
      series.push({ labels });
      starts.push(samples.count);
    } else if (key === ((3 << 3) | WIRE_LENGTH_DELIMITED)) {
      skipped.metadata++;
      r.skip(key);
    } else if (key >>> 3 === 1 || key >>> 3 === 3) r.expectWire(key, WIRE_LENGTH_DELIMITED, key >>> 3 === 1 ? 'WriteRequest.timeseries' : 'WriteRequest.metadata');
    else r.skip(key);
  }
  return { series, seriesStart: Uint32Array.from(starts), timestamps: samples.timestamps, values: samples.values, sampleCount: samples.count, skipped };
}

/** One Label message into names/values (name checked here; the rest in finishLabels). */
function readLabel(r: ProtoReader, labelEnd: number, seriesEnd: number, index: number, names: string[], values: string[]): void {
  r.end = labelEnd;
  let nameStart = 0;
  let nameEnd = 0;
  let valueStart = 0;
  let valueEnd = 0;
  while (r.pos < labelEnd) {
    const k = r.key();
    if (k === ((1 << 3) | WIRE_LENGTH_DELIMITED)) {
      nameEnd = r.delimitedEnd('Label.name');
      nameStart = r.pos;
      r.pos = nameEnd;
    } else if (k === ((2 << 3) | WIRE_LENGTH_DELIMITED)) {
      valueEnd = r.delimitedEnd('Label.value');
      valueStart = r.pos;
      r.pos = valueEnd;
    } else if (k >>> 3 === 1 || k >>> 3 === 2) r.expectWire(k, WIRE_LENGTH_DELIMITED, k >>> 3 === 1 ? 'Label.name' : 'Label.value');
    else r.skip(k);
  }
  r.end = seriesEnd;
  const buf = r.buf;
  let valid = nameEnd > nameStart && NAME_START[buf[nameStart]] === 1;
  for (let i = nameStart + 1; valid && i < nameEnd; i++) valid = NAME_PART[buf[i]] === 1;
  if (!valid) {
    const name = text(buf, nameStart, nameEnd, () => `timeseries ${index}: label name ${names.length}`);
    malformed(`timeseries ${index}: label name ${JSON.stringify(name)} must match [a-zA-Z_][a-zA-Z0-9_]*`);
  }
  const name = nameEnd - nameStart <= INTERN_MAX_BYTES ? internAscii(buf, nameStart, nameEnd) : asciiString(buf, nameStart, nameEnd);
  names.push(name);
  values.push(text(buf, valueStart, valueEnd, () => `timeseries ${index}: the value of label ${name}`));
}

/** The series' labels sorted by name, empty values dropped; a repeated name or no label left is malformed. */
function finishLabels(names: string[], values: string[], index: number): Label[] {
  // Insertion sort of a handful of labels, usually already in order (Prometheus sends them sorted).
  for (let i = 1; i < names.length; i++) {
    const name = names[i];
    const value = values[i];
    let j = i - 1;
    while (j >= 0 && names[j] > name) {
      names[j + 1] = names[j];
      values[j + 1] = values[j];
      j--;
    }
    names[j + 1] = name;
    values[j + 1] = value;
  }
  const labels: Label[] = [];
  for (let i = 0; i < names.length; i++) {
    if (i > 0 && names[i] === names[i - 1]) malformed(`timeseries ${index} ${describe(names, values)}: label ${names[i]} appears more than once`);
    if (values[i] !== '') labels.push([names[i], values[i]]);
  }
  if (labels.length === 0) malformed(`timeseries ${index} has no label with a value`);
  return labels;
}

// ---- remote read: the request ----------------------------------------------------------------

export const RESPONSE_TYPE_SAMPLES = 0;
export const RESPONSE_TYPE_STREAMED_XOR_CHUNKS = 1;

export type MatcherType = 'EQ' | 'NEQ' | 'RE' | 'NRE';
const MATCHER_TYPES: readonly MatcherType[] = ['EQ', 'NEQ', 'RE', 'NRE'];

export interface LabelMatcher {
  type: MatcherType;
  name: string;
  value: string;
}

export interface ReadHints {
  stepMs: number;
  func: string;
  startMs: number;
  endMs: number;
  grouping: string[];
  by: boolean;
  rangeMs: number;
}

export interface RemoteReadQuery {
  startTimestampMs: number;
  endTimestampMs: number;
  matchers: LabelMatcher[];
  hints: ReadHints | null;
}

export interface RemoteReadRequest {
  queries: RemoteReadQuery[];
  /** In the client's order of preference; empty means SAMPLES. */
  acceptedResponseTypes: number[];
}

function stringField(r: ProtoReader, what: string): string {
  const end = r.delimitedEnd(what);
  const start = r.pos;
  r.pos = end;
  return text(r.buf, start, end, () => what);
}

/** Runs `field` for every field of the length-delimited message the reader is at. */
function message(r: ProtoReader, what: string, field: (key: number) => void): void {
  const end = r.delimitedEnd(what);
  const outer = r.end;
  r.end = end;
  while (r.pos < end) field(r.key());
  r.end = outer;
}

/** Decodes a (decompressed) ReadRequest. */
export function decodeReadRequest(bytes: Uint8Array): RemoteReadRequest {
  const r = new ProtoReader(bytes);
  const queries: RemoteReadQuery[] = [];
  const acceptedResponseTypes: number[] = [];
  while (r.pos < r.end) {
    const key = r.key();
    if (key === ((1 << 3) | WIRE_LENGTH_DELIMITED)) {
      const query: RemoteReadQuery = { startTimestampMs: 0, endTimestampMs: 0, matchers: [], hints: null };
      const q = queries.length;
      message(r, 'Query', (k) => {
        if (k === ((1 << 3) | WIRE_VARINT)) query.startTimestampMs = r.int64();
        else if (k === ((2 << 3) | WIRE_VARINT)) query.endTimestampMs = r.int64();
        else if (k === ((3 << 3) | WIRE_LENGTH_DELIMITED)) query.matchers.push(readMatcher(r, q));
        else if (k === ((4 << 3) | WIRE_LENGTH_DELIMITED)) query.hints = readHints(r, query.hints);
        else if (k >>> 3 >= 1 && k >>> 3 <= 4) r.expectWire(k, k >>> 3 <= 2 ? WIRE_VARINT : WIRE_LENGTH_DELIMITED, `Query field ${k >>> 3}`);
        else r.skip(k);
      });
      queries.push(query);
    } else if (key === ((2 << 3) | WIRE_VARINT)) {
      acceptedResponseTypes.push(r.varint());
    } else if (key === ((2 << 3) | WIRE_LENGTH_DELIMITED)) {
      // packed: varints back to back
      const end = r.delimitedEnd('ReadRequest.accepted_response_types');
      const outer = r.end;
      r.end = end;
      while (r.pos < end) acceptedResponseTypes.push(r.varint());
      r.end = outer;
    } else if (key >>> 3 === 1) r.expectWire(key, WIRE_LENGTH_DELIMITED, 'ReadRequest.queries');
    else r.skip(key);
  }
  return { queries, acceptedResponseTypes };
}

function readMatcher(r: ProtoReader, query: number): LabelMatcher {
  let type = 0;
  let name = '';
  let value = '';
  message(r, 'LabelMatcher', (k) => {
    if (k === ((1 << 3) | WIRE_VARINT)) type = r.varint();
    else if (k === ((2 << 3) | WIRE_LENGTH_DELIMITED)) name = stringField(r, `query ${query}: a matcher's label name`);
    else if (k === ((3 << 3) | WIRE_LENGTH_DELIMITED)) value = stringField(r, `query ${query}: a matcher's value`);
    else if (k >>> 3 >= 1 && k >>> 3 <= 3) r.expectWire(k, k >>> 3 === 1 ? WIRE_VARINT : WIRE_LENGTH_DELIMITED, `LabelMatcher field ${k >>> 3}`);
    else r.skip(k);
  });
  if (!(type < MATCHER_TYPES.length)) malformed(`query ${query}: matcher type ${type} is none of EQ=0 NEQ=1 RE=2 NRE=3`);
  return { type: MATCHER_TYPES[type], name, value };
}

function readHints(r: ProtoReader, earlier: ReadHints | null): ReadHints {
  // A message field given twice is merged, as protobuf does.
  const hints: ReadHints = earlier ?? { stepMs: 0, func: '', startMs: 0, endMs: 0, grouping: [], by: false, rangeMs: 0 };
  message(r, 'ReadHints', (k) => {
    if (k === ((1 << 3) | WIRE_VARINT)) hints.stepMs = r.int64();
    else if (k === ((2 << 3) | WIRE_LENGTH_DELIMITED)) hints.func = stringField(r, 'ReadHints.func');
    else if (k === ((3 << 3) | WIRE_VARINT)) hints.startMs = r.int64();
    else if (k === ((4 << 3) | WIRE_VARINT)) hints.endMs = r.int64();
    else if (k === ((5 << 3) | WIRE_LENGTH_DELIMITED)) hints.grouping.push(stringField(r, 'ReadHints.grouping'));
    else if (k === ((6 << 3) | WIRE_VARINT)) hints.by = r.varint() !== 0;
    else if (k === ((7 << 3) | WIRE_VARINT)) hints.rangeMs = r.int64();
    else r.skip(k);
  });
  return hints;
}

// ---- encoders ----------------------------------------------------------------------------------

/** A series and its samples, for the encoders. */
export interface EncodableSeries {
  labels: readonly Label[];
  timestamps: ArrayLike<number>;
  /** A Float64Array keeps NaN payloads; a number[] may have lost them already (JavaScript arrays quiet signalling NaNs). */
  values: Float64Array | ArrayLike<number>;
}

/** Bytes of a Sample message. */
function sampleSize(timestamp: number): number {
  return 1 + 8 + 1 + varintSize(timestamp);
}

/** A series prepared for writing: its label strings as UTF-8, its sizes, its values as bytes. */
interface PreparedSeries {
  labelBytes: Uint8Array[];
  timestamps: ArrayLike<number>;
  valueBytes: Uint8Array;
  count: number;
  payload: number;
}

function prepare(series: EncodableSeries, sortLabels: boolean): PreparedSeries {
  const labels = sortLabels ? [...series.labels].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) : series.labels;
  const labelBytes: Uint8Array[] = [];
  let payload = 0;
  for (const [name, value] of labels) {
    const n = utf8Encoder.encode(name);
    const v = utf8Encoder.encode(value);
    labelBytes.push(n, v);
    payload += delimitedSize(1, delimitedSize(1, n.length) + delimitedSize(2, v.length));
  }
  const count = series.timestamps.length;
  if (series.values.length !== count) throw new RangeError(`series has ${count} timestamps and ${series.values.length} values`);
  for (let i = 0; i < count; i++) payload += delimitedSize(2, sampleSize(series.timestamps[i]));
  const values = series.values instanceof Float64Array ? series.values : Float64Array.from(series.values);
  return { labelBytes, timestamps: series.timestamps, valueBytes: new Uint8Array(values.buffer, values.byteOffset, count * 8), count, payload };
}

function writeSeries(w: ProtoWriter, field: number, s: PreparedSeries): void {
  w.delimited(field, s.payload);
  for (let l = 0; l < s.labelBytes.length; l += 2) {
    const n = s.labelBytes[l];
    const v = s.labelBytes[l + 1];
    w.delimited(1, delimitedSize(1, n.length) + delimitedSize(2, v.length));
    w.bytes(1, n);
    w.bytes(2, v);
  }
  for (let i = 0; i < s.count; i++) {
    const ts = s.timestamps[i];
    w.delimited(2, sampleSize(ts));
    w.double(1, s.valueBytes, i);
    w.key(2, WIRE_VARINT);
    w.varint(ts);
  }
}

/**
 * A WriteRequest of these series, labels in the order given (for tests and benchmarks: a body
 * Prometheus could send, or one it would not, with unsorted or repeated labels).
 */
export function encodeWriteRequest(series: readonly EncodableSeries[]): Uint8Array {
  const prepared = series.map((s) => prepare(s, false));
  const size = prepared.reduce((n, s) => n + delimitedSize(1, s.payload), 0);
  const w = new ProtoWriter(size);
  for (const s of prepared) writeSeries(w, 1, s);
  return w.buf;
}

/** A ReadResponse: one QueryResult per query, in the request's order; labels sorted by name, samples as given (in time order). */
export function encodeReadResponse(results: ReadonlyArray<readonly EncodableSeries[]>): Uint8Array {
  const prepared = results.map((series) => series.map((s) => prepare(s, true)));
  const resultSizes = prepared.map((series) => series.reduce((n, s) => n + delimitedSize(1, s.payload), 0));
  const size = resultSizes.reduce((n, bytes) => n + delimitedSize(1, bytes), 0);
  const w = new ProtoWriter(size);
  prepared.forEach((series, q) => {
    w.delimited(1, resultSizes[q]);
    for (const s of series) writeSeries(w, 1, s);
  });
  return w.buf;
}

/** A ReadRequest (for tests, and for a client of remote read). */
export function encodeReadRequest(request: { queries: ReadonlyArray<{ startTimestampMs: number; endTimestampMs: number; matchers: readonly LabelMatcher[]; hints?: Partial<ReadHints> }>; acceptedResponseTypes?: readonly number[] }): Uint8Array {
  const str = (field: number, s: string) => {
    const b = utf8Encoder.encode(s);
    return { field, b, size: delimitedSize(field, b.length) };
  };
  const int = (field: number, v: number) => ({ field, v, size: varintSize(field * 8) + varintSize(v) });
  const queries = request.queries.map((q) => {
    const matchers = q.matchers.map((m) => {
      const parts = [int(1, MATCHER_TYPES.indexOf(m.type)), str(2, m.name), str(3, m.value)];
      return { parts, size: parts.reduce((n, p) => n + p.size, 0) };
    });
    const h = q.hints;
    const hintParts = h ? [int(1, h.stepMs ?? 0), str(2, h.func ?? ''), int(3, h.startMs ?? 0), int(4, h.endMs ?? 0), ...(h.grouping ?? []).map((g) => str(5, g)), int(6, h.by ? 1 : 0), int(7, h.rangeMs ?? 0)] : null;
    const hintSize = hintParts ? hintParts.reduce((n, p) => n + p.size, 0) : 0;
    const size = int(1, q.startTimestampMs).size + int(2, q.endTimestampMs).size + matchers.reduce((n, m) => n + delimitedSize(3, m.size), 0) + (hintParts ? delimitedSize(4, hintSize) : 0);
    return { q, matchers, hintParts, hintSize, size };
  });
  const types = request.acceptedResponseTypes ?? [];
  const typesSize = types.reduce((n, t) => n + varintSize(t), 0);
  const size = queries.reduce((n, q) => n + delimitedSize(1, q.size), 0) + (types.length > 0 ? delimitedSize(2, typesSize) : 0);
  const w = new ProtoWriter(size);
  const put = (p: { field: number; size: number; b?: Uint8Array; v?: number }) => {
    if (p.b) w.bytes(p.field, p.b);
    else {
      w.key(p.field, WIRE_VARINT);
      w.varint(p.v!);
    }
  };
  for (const { q, matchers, hintParts, hintSize, size: querySize } of queries) {
    w.delimited(1, querySize);
    put(int(1, q.startTimestampMs));
    put(int(2, q.endTimestampMs));
    for (const m of matchers) {
      w.delimited(3, m.size);
      m.parts.forEach(put);
    }
    if (hintParts) {
      w.delimited(4, hintSize);
      hintParts.forEach(put);
    }
  }
  if (types.length > 0) {
    w.delimited(2, typesSize);
    for (const t of types) w.varint(t);
  }
  return w.buf;
}

// ---- remote read: the response (for clients of remote read: tests, tools) ----------------------

/** One query's series of a ReadResponse, labels and samples as encodeReadResponse wrote them. */
export interface ReadResultSeries {
  labels: readonly Label[];
  timestamps: Float64Array;
  values: Float64Array;
}

/**
 * Decodes a (decompressed) ReadResponse: per QueryResult, its series. A QueryResult holds
 * repeated TimeSeries in field 1, the shape of a WriteRequest, so each is read as one.
 */
export function decodeReadResponse(bytes: Uint8Array): { results: ReadResultSeries[][] } {
  const r = new ProtoReader(bytes);
  const results: ReadResultSeries[][] = [];
  while (r.pos < r.end) {
    const key = r.key();
    if (key !== ((1 << 3) | WIRE_LENGTH_DELIMITED)) {
      r.skip(key);
      continue;
    }
    const end = r.delimitedEnd('QueryResult');
    const batch = decodeWriteRequest(bytes.subarray(r.pos, end));
    r.pos = end;
    results.push(batch.series.map((s, i) => ({
      labels: s.labels,
      timestamps: batch.timestamps.slice(batch.seriesStart[i], batch.seriesStart[i + 1]),
      values: batch.values.slice(batch.seriesStart[i], batch.seriesStart[i + 1]),
    })));
  }
  return { results };
}
