// The Prometheus remote write / read codecs (native-free-codecs/prom-remote.ts, protobuf-wire.ts,
// write-body-prom.ts), checked against protobufjs reading and writing the same bytes from the
// prompb schema: our encoders' bytes as protobufjs decodes them, protobufjs' bytes (unknown
// fields of every wire type, packed and unpacked enums, metadata, exemplars, histograms) as we
// decode them; the validation rules; truncated, bit-flipped and random bodies, which must throw
// WriteBodyError or decode; and the mapping to tags, labels and collections.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import protobuf from 'protobufjs';
import { WriteBodyError } from '../../native-free-codecs/point-batch.js';
import { decodeReadRequest, decodeWriteRequest, encodeReadRequest, encodeReadResponse, encodeWriteRequest, MAX_LABELS_PER_SERIES, type EncodableSeries, type Label } from '../../native-free-codecs/prom-remote.js';
import { ProtoReader, ProtoWriter, varintSize } from '../../native-free-codecs/protobuf-wire.js';
import { promPointsByCollection, promSeriesName } from '../../native-free-codecs/write-body-prom.js';
import { prng } from '../support/prng.js';

const PROMPB = `
syntax = "proto3";
package prometheus;
message WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
message MetricMetadata { int32 type = 1; string metric_family_name = 2; string help = 4; string unit = 5; }
message Sample { double value = 1; int64 timestamp = 2; }
message Exemplar { repeated Label labels = 1; double value = 2; int64 timestamp = 3; }
message Histogram { uint64 count_int = 1; double sum = 3; sint32 schema = 4; repeated sint64 positive_deltas = 12; int64 timestamp = 15; }
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
message Label { string name = 1; string value = 2; }
message LabelMatcher { enum Type { EQ = 0; NEQ = 1; RE = 2; NRE = 3; } Type type = 1; string name = 2; string value = 3; }
message ReadHints { int64 step_ms = 1; string func = 2; int64 start_ms = 3; int64 end_ms = 4; repeated string grouping = 5; bool by = 6; int64 range_ms = 7; }
message Query { int64 start_timestamp_ms = 1; int64 end_timestamp_ms = 2; repeated LabelMatcher matchers = 3; ReadHints hints = 4; }
message ReadRequest { enum ResponseType { SAMPLES = 0; STREAMED_XOR_CHUNKS = 1; } repeated Query queries = 1; repeated ResponseType accepted_response_types = 2; }
message UnpackedReadRequest { repeated Query queries = 1; repeated int32 accepted_response_types = 2 [packed = false]; }
message QueryResult { repeated TimeSeries timeseries = 1; }
message ReadResponse { repeated QueryResult results = 1; }
`;

/** A later schema with fields we do not know, of every wire type (groups are proto2). */
const FUTURE = `
syntax = "proto2";
package future;
message Label { optional string name = 1; optional string value = 2; optional fixed32 f32 = 7; optional group Note = 8 { optional string text = 1; optional fixed64 x = 2; } }
message Sample { optional double value = 1; optional int64 timestamp = 2; optional sint64 extra = 9; optional bytes blob = 10; optional fixed32 f32 = 11; }
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; optional fixed64 f64 = 6; repeated uint32 packed_ints = 7 [packed = true]; optional group Extra = 8 { optional int32 a = 1; } }
message WriteRequest { repeated TimeSeries timeseries = 1; optional string note = 5; optional fixed32 f32 = 6; }
`;

const prompb = protobuf.parse(PROMPB).root;
const future = protobuf.parse(FUTURE).root;
const type = (name: string, root = prompb) => root.lookupType(name);
const toObject = (t: protobuf.Type, bytes: Uint8Array) => t.toObject(t.decode(bytes), { longs: Number, enums: String, defaults: true, arrays: true });

const STALE_BITS = 0x7ff0000000000002n;
/** A Float64Array whose elements have these bit patterns (a JavaScript array would quiet a signalling NaN). */
const bitsToFloats = (bits: bigint[]) => new Float64Array(BigUint64Array.from(bits).buffer);
const bitsOf = (values: Float64Array, from = 0, to = values.length) => [...new BigUint64Array(values.buffer, values.byteOffset + from * 8, to - from)];
const T0 = 1_750_000_000_000;

/** Random series: labels in order, values of every kind (the stale marker, NaN, ±Inf, -0, integers, fractions). */
function randomSeries(random: () => number, count: number): EncodableSeries[] {
  const special = [STALE_BITS, 0x7ff8000000000000n, 0x7ff0000000000000n, 0xfff0000000000000n, 0x8000000000000000n, 0x7ff800000000beefn];
  return Array.from({ length: count }, (_, s) => {
    const labels: Label[] = [['__name__', `metric_${s % 7}`], ['instance', `host-${s}:9100`], ['job', random() < 0.5 ? 'node' : 'ünïcode ✓']];
    const n = Math.floor(random() * 6);
    const bits = Array.from({ length: n }, () => {
      const r = random();
      if (r < 0.3) return special[Math.floor(random() * special.length)];
      const f = new Float64Array([r < 0.6 ? Math.floor(random() * 1000) : random() * 1e6 - 5e5]);
      return new BigUint64Array(f.buffer)[0];
    });
    return { labels, timestamps: Array.from({ length: n }, (_, i) => T0 + i * 15_000 + s), values: bitsToFloats(bits) };
  });
}

function assertMalformed(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof WriteBodyError, `a WriteBodyError, got ${String(err)}`);
    assert.equal(err.kind, 'malformed');
    assert.match(err.message, pattern);
    return true;
  });
}

describe('protobuf wire primitives', () => {
  test('varints from 0 to 2^53 - 1 and negative int64s round trip, sized exactly', () => {
    const values = [0, 1, 127, 128, 300, 2 ** 28 - 1, 2 ** 28, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35, T0, 2 ** 53 - 1, -1, -2, -T0, -(2 ** 53) + 1];
    for (const v of values) {
      const w = new ProtoWriter(varintSize(v));
      w.varint(v);
      assert.equal(w.pos, w.buf.length, `size of ${v}`);
      const r = new ProtoReader(w.buf);
      assert.equal(r.int64(), v, `int64 ${v}`);
      assert.equal(r.pos, w.buf.length);
      const viaProtobufjs = protobuf.Reader.create(w.buf).int64();
      assert.equal(typeof viaProtobufjs === 'number' ? viaProtobufjs : Number(viaProtobufjs.toString()), v, `protobufjs reads ${v}`);
    }
  });

  test('varints over 10 bytes or 64 bits, truncated ones and field number 0 are malformed', () => {
    assertMalformed(() => new ProtoReader(new Uint8Array(11).fill(0x80)).varint(), /longer than 10 bytes/);
    assertMalformed(() => new ProtoReader(Uint8Array.of(...new Array(9).fill(0xff), 0x02)).varint(), /above 64 bits/);
    assertMalformed(() => new ProtoReader(Uint8Array.of(0x80, 0x80)).varint(), /truncated varint/);
    assertMalformed(() => new ProtoReader(Uint8Array.of(0x02)).key(), /field number 0/);
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x0f)), /wire type 7/);
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x2c)), /end of group .* with no group open/);
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x5b, 0x08, 0x01)), /group of field 11 is not closed/);
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x5b, 0x64)), /group of field 11 closed as field 12/);
  });
});

describe('WriteRequest', () => {
  test('our encoder, read by protobufjs: the same labels, timestamps and value bits', () => {
    const series = randomSeries(prng(1), 200);
    const decoded = toObject(type('prometheus.WriteRequest'), encodeWriteRequest(series)) as { timeseries: Array<{ labels: Array<{ name: string; value: string }>; samples: Array<{ value: number; timestamp: number }> }> };
    assert.equal(decoded.timeseries.length, series.length);
    decoded.timeseries.forEach((ts, s) => {
      assert.deepEqual(ts.labels.map((l) => [l.name, l.value]), series[s].labels);
      assert.deepEqual(ts.samples.map((x) => x.timestamp), [...series[s].timestamps as number[]]);
      ts.samples.forEach((x, i) => {
        const expected = series[s].values[i];
        if (Number.isNaN(expected)) assert.ok(Number.isNaN(x.value));
        else assert.ok(Object.is(x.value, expected), `series ${s} sample ${i}`);
      });
    });
  });

  test('protobufjs bytes, read by us: series, samples bit for bit, metadata, exemplars and histograms skipped and counted', () => {
    const series = randomSeries(prng(2), 100);
    const t = type('prometheus.WriteRequest');
    const message = t.fromObject({
      timeseries: series.map((s, i) => ({
        labels: s.labels.map(([name, value]) => ({ name, value })),
        samples: Array.from(s.timestamps, (ts, k) => ({ value: s.values[k], timestamp: ts })),
        ...(i % 10 === 0 ? { exemplars: [{ labels: [{ name: 'trace_id', value: 'abc' }], value: 1, timestamp: T0 }], histograms: [{ countInt: 3, sum: 1.5, schema: -1, positiveDeltas: [1, -1], timestamp: T0 }] } : {}),
      })),
      metadata: [{ type: 1, metricFamilyName: 'up', help: 'Up.', unit: '' }],
    });
    const batch = decodeWriteRequest(t.encode(message).finish(), { minTimestampMs: 1e11 });
    assert.deepEqual(batch.skipped, { exemplars: 10, histograms: 10, metadata: 1 });
    assert.equal(batch.series.length, series.length);
    series.forEach((s, i) => {
      assert.deepEqual(batch.series[i].labels, [...s.labels].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
      const from = batch.seriesStart[i];
      const to = batch.seriesStart[i + 1];
      assert.deepEqual([...batch.timestamps.subarray(from, to)], [...s.timestamps as number[]]);
      // protobufjs writes doubles through a Float64Array: the NaN payloads reach the bytes, and we keep them
      assert.deepEqual(bitsOf(batch.values, from, to), bitsOf(s.values as Float64Array), `series ${i}`);
    });
  });

  test('the stale marker and every special value survive our encoder and decoder bit for bit', () => {
    const bits = [STALE_BITS, 0x7ff8000000000000n, 0x7ff0000000000000n, 0xfff0000000000000n, 0x8000000000000000n, 0x7ff4000000000001n, 0xfff8000000000000n];
    const batch = decodeWriteRequest(encodeWriteRequest([{ labels: [['__name__', 'x']], timestamps: bits.map((_, i) => T0 + i), values: bitsToFloats(bits) }]));
    assert.deepEqual(bitsOf(batch.values, 0, batch.sampleCount), bits);
  });

  test('fields of every wire type we do not know are skipped, groups included', () => {
    const t = type('future.WriteRequest', future);
    const bytes = t.encode(t.fromObject({
      note: 'from a later version', f32: 7,
      timeseries: [{
        labels: [{ name: '__name__', value: 'up', f32: 1, note: { text: 'x', x: 5 } }, { name: 'job', value: 'j' }],
        samples: [{ value: 1, timestamp: T0, extra: -5, blob: Uint8Array.of(1, 2, 3), f32: 9 }, { value: 0, timestamp: T0 + 1 }],
        f64: 3, packedInts: [1, 2, 300], extra: { a: 4 },
      }],
    })).finish();
    const batch = decodeWriteRequest(bytes);
    assert.deepEqual(batch.series, [{ labels: [['__name__', 'up'], ['job', 'j']] }]);
    assert.deepEqual([...batch.timestamps.subarray(0, 2)], [T0, T0 + 1]);
    assert.deepEqual([...batch.values.subarray(0, 2)], [1, 0]);
  });

  test('a sample without value or timestamp (proto3 leaves zeros out) reads as zero; a zero timestamp is refused below the minimum', () => {
    const t = type('prometheus.WriteRequest');
    const bytes = t.encode(t.fromObject({ timeseries: [{ labels: [{ name: '__name__', value: 'z' }], samples: [{ value: 0, timestamp: T0 }] }] })).finish();
    const batch = decodeWriteRequest(bytes, { minTimestampMs: 1e11 });
    assert.deepEqual([batch.timestamps[0], batch.values[0]], [T0, 0]);
    const noTime = t.encode(t.fromObject({ timeseries: [{ labels: [{ name: '__name__', value: 'z' }], samples: [{ value: 2 }] }] })).finish();
    assertMalformed(() => decodeWriteRequest(noTime, { minTimestampMs: 1e11 }), /timeseries 0 \{__name__="z"\} sample 0: timestamp 0 is before storage.minTimestampMs \(100000000000\)/);
  });

  test('labels: empty values dropped, sorted, no __name__ accepted; refused by name when invalid, repeated, too many or none', () => {
    const one = (labels: Label[], timestamps = [T0]) => encodeWriteRequest([{ labels, timestamps, values: new Float64Array(timestamps.length) }]);
    assert.deepEqual(decodeWriteRequest(one([['z', '1'], ['empty', ''], ['a', '2']])).series[0].labels, [['a', '2'], ['z', '1']]);
    assertMalformed(() => decodeWriteRequest(one([['1abc', 'x']])), /timeseries 0: label name "1abc" must match \[a-zA-Z_\]\[a-zA-Z0-9_\]\*/);
    assertMalformed(() => decodeWriteRequest(one([['a-b', 'x']])), /label name "a-b"/);
    assertMalformed(() => decodeWriteRequest(one([['', 'x']])), /label name ""/);
    assertMalformed(() => decodeWriteRequest(one([['job', 'a'], ['job', 'b']])), /timeseries 0 \{job="a", job="b"\}: label job appears more than once/);
    assertMalformed(() => decodeWriteRequest(one(Array.from({ length: MAX_LABELS_PER_SERIES + 1 }, (_, i) => [`l${i}`, 'v'] as Label))), /more than 256 labels \(MAX_LABELS_PER_SERIES\)/);
    assert.equal(decodeWriteRequest(one(Array.from({ length: MAX_LABELS_PER_SERIES }, (_, i) => [`l${i}`, 'v'] as Label))).series[0].labels.length, MAX_LABELS_PER_SERIES);
    assertMalformed(() => decodeWriteRequest(one([['only_empty', '']])), /timeseries 0 has no label with a value/);
    // A value of invalid UTF-8: a lone continuation byte in place of a character.
    const bad = one([['__name__', 'up'], ['job', 'aé']]);
    const at = bad.indexOf(0xc3);
    bad[at] = 0x80;
    bad[at + 1] = 0x41;
    assertMalformed(() => decodeWriteRequest(bad), /timeseries 0: the value of label job is not valid UTF-8/);
  });

  test('timestamps outside 0..2^53-1 or below minTimestampMs are refused, naming the series and sample', () => {
    const at = (ts: number, min = 0) => () => decodeWriteRequest(encodeWriteRequest([{ labels: [['__name__', 'up'], ['job', 'j']], timestamps: [T0, ts], values: new Float64Array(2) }]), { minTimestampMs: min });
    assertMalformed(at(-1), /timeseries 0 \{__name__="up", job="j"\} sample 1: timestamp must be an integer in 0\.\.2\^53-1, got -1/);
    assertMalformed(at(-T0), /got -1750000000000/);
    assertMalformed(at(2 ** 53), /got 9007199254740992/);
    assertMalformed(at(1_750_000_000, 1e11), /before storage.minTimestampMs \(100000000000\); it looks like epoch seconds/);
    assert.equal(at(2 ** 53 - 1)().sampleCount, 2);
  });

  test('known fields with the wrong wire type are malformed, naming the field', () => {
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x08, 0x01)), /WriteRequest.timeseries \(field 1\) has wire type 0, expected 2/);
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x0a, 0x02, 0x10, 0x01)), /TimeSeries.samples \(field 2\) has wire type 0/);
    assertMalformed(() => decodeWriteRequest(Uint8Array.of(0x0a, 0x04, 0x12, 0x02, 0x08, 0x01)), /Sample.value \(field 1\) has wire type 0, expected 1/);
  });

  test('truncated bodies: malformed exactly where protobufjs fails too; never an exception of another kind', () => {
    const t = type('prometheus.WriteRequest');
    const body = encodeWriteRequest(randomSeries(prng(3), 8));
    for (let cut = 0; cut < body.length; cut++) {
      const part = body.subarray(0, cut);
      let theirs = true;
      try {
        t.decode(part);
      } catch {
        theirs = false;
      }
      try {
        decodeWriteRequest(part);
        assert.ok(theirs, `cut at ${cut}: we decoded what protobufjs refuses`);
      } catch (err) {
        assert.ok(err instanceof WriteBodyError, `cut at ${cut}: ${String(err)}`);
        // protobufjs does not check labels: a cut leaving a series with no label is ours alone to refuse
        if (theirs) assert.match(err.message, /no label with a value/, `cut at ${cut}: protobufjs decodes it`);
      }
    }
  });

  test('bit-flipped and random bodies throw WriteBodyError or decode', () => {
    const random = prng(4);
    const body = encodeWriteRequest(randomSeries(random, 20));
    let decoded = 0;
    let refused = 0;
    for (let round = 0; round < 5000; round++) {
      const mutated = round % 5 === 4 ? Uint8Array.from({ length: Math.floor(random() * 200) }, () => Math.floor(random() * 256)) : body.slice();
      if (round % 5 !== 4) for (let f = 1 + Math.floor(random() * 3); f > 0; f--) mutated[Math.floor(random() * mutated.length)] ^= 1 << Math.floor(random() * 8);
      try {
        const batch = decodeWriteRequest(mutated);
        assert.equal(batch.seriesStart.length, batch.series.length + 1);
        assert.equal(batch.seriesStart[batch.series.length], batch.sampleCount);
        decoded++;
      } catch (err) {
        assert.ok(err instanceof WriteBodyError, `round ${round}: ${String((err as Error)?.stack ?? err)}`);
        refused++;
      }
    }
    assert.ok(decoded > 0 && refused > 0, `${decoded} decoded, ${refused} refused`);
  });
});

describe('ReadRequest and ReadResponse', () => {
  const request = {
    queries: [
      { startTimestampMs: T0 - 3_600_000, endTimestampMs: T0, matchers: [{ type: 'EQ' as const, name: '__name__', value: 'up' }, { type: 'NRE' as const, name: 'job', value: 'a|b' }], hints: { stepMs: 15000, func: 'rate', startMs: T0 - 3_600_000, endMs: T0, grouping: ['job'], by: true, rangeMs: 300000 } },
      { startTimestampMs: -5_000, endTimestampMs: 0, matchers: [{ type: 'NEQ' as const, name: 'x', value: 'ü' }, { type: 'RE' as const, name: 'y', value: '.+' }] },
    ],
    acceptedResponseTypes: [1, 0],
  };

  test('our ReadRequest, read by protobufjs, and back', () => {
    const bytes = encodeReadRequest(request);
    const theirs = toObject(type('prometheus.ReadRequest'), bytes) as any;
    assert.deepEqual(theirs.acceptedResponseTypes, ['STREAMED_XOR_CHUNKS', 'SAMPLES']);
    assert.equal(theirs.queries[1].startTimestampMs, -5000);
    assert.deepEqual(theirs.queries[0].matchers[1], { type: 'NRE', name: 'job', value: 'a|b' });
    assert.deepEqual(theirs.queries[0].hints, { stepMs: 15000, func: 'rate', startMs: T0 - 3_600_000, endMs: T0, grouping: ['job'], by: true, rangeMs: 300000 });
    const ours = decodeReadRequest(bytes);
    assert.deepEqual(ours.acceptedResponseTypes, [1, 0]);
    assert.deepEqual(ours.queries[0], request.queries[0]);
    assert.deepEqual(ours.queries[1], { ...request.queries[1], hints: null });
  });

  test('protobufjs ReadRequests, accepted_response_types packed and unpacked, read by us', () => {
    for (const name of ['prometheus.ReadRequest', 'prometheus.UnpackedReadRequest']) {
      const t = type(name);
      const bytes = t.encode(t.fromObject({ queries: [{ startTimestampMs: 1, endTimestampMs: T0, matchers: [{ type: 2, name: '__name__', value: 'up.*' }] }], acceptedResponseTypes: [0, 1] })).finish();
      const ours = decodeReadRequest(bytes);
      assert.deepEqual(ours.acceptedResponseTypes, [0, 1], name);
      assert.deepEqual(ours.queries, [{ startTimestampMs: 1, endTimestampMs: T0, matchers: [{ type: 'RE', name: '__name__', value: 'up.*' }], hints: null }], name);
    }
    // a Query holding a LabelMatcher of type 9
    assertMalformed(() => decodeReadRequest(Uint8Array.of(0x0a, 0x04, 0x1a, 0x02, 0x08, 0x09)), /matcher type 9 is none of EQ=0 NEQ=1 RE=2 NRE=3/);
  });

  test('our ReadResponse, read by protobufjs: results in order, labels sorted, values bit for bit', () => {
    const series = randomSeries(prng(5), 30).map((s) => ({ ...s, labels: [...s.labels].reverse() }));
    const bytes = encodeReadResponse([series.slice(0, 10), [], series.slice(10)]);
    const theirs = toObject(type('prometheus.ReadResponse'), bytes) as any;
    assert.deepEqual(theirs.results.map((r: any) => r.timeseries.length), [10, 0, 20]);
    const all = [...theirs.results[0].timeseries, ...theirs.results[2].timeseries];
    all.forEach((ts: any, i: number) => {
      assert.deepEqual(ts.labels.map((l: any) => [l.name, l.value]), [...series[i].labels].reverse());
      const values = new Float64Array(ts.samples.map((x: any) => x.value));
      ts.samples.forEach((x: any, k: number) => assert.ok(Object.is(x.value, series[i].values[k]) || (Number.isNaN(x.value) && Number.isNaN(series[i].values[k]))));
      assert.equal(values.length, series[i].timestamps.length);
    });
    // Bit for bit, read with our own decoder (a ReadResponse's TimeSeries are WriteRequest's, one level down).
    const r = new ProtoReader(bytes);
    r.key();
    const end = r.delimitedEnd('QueryResult');
    const firstResult = decodeWriteRequest(bytes.subarray(r.pos, end));
    assert.deepEqual(bitsOf(firstResult.values, 0, firstResult.sampleCount), series.slice(0, 10).flatMap((s) => bitsOf(s.values as Float64Array)));
  });
});

describe('remote-write series as tags (write-body-prom.ts)', () => {
  const base = { organization: 'acme', site: 'north', unit: 'b1', grid: 'default' };
  const write = (series: EncodableSeries[]) => promPointsByCollection(decodeWriteRequest(encodeWriteRequest(series)), base);
  const one = (labels: Label[], values = [1]) => ({ labels, timestamps: values.map((_, i) => T0 + i), values: new Float64Array(values) });

  test('the canonical series text: keys sorted, scope labels and __name__ out of the braces, escapes as Prometheus prints them', () => {
    assert.equal(promSeriesName([['__name__', 'up'], ['instance', 'h:9090'], ['job', 'prometheus']]), 'up{instance="h:9090",job="prometheus"}');
    assert.equal(promSeriesName([['__name__', 'up'], ['grid', 'g'], ['organization', 'o']]), 'up');
    assert.equal(promSeriesName([['job', 'x'], ['zone', 'a']]), '{job="x",zone="a"}');
    assert.equal(promSeriesName([['a', 'back\\slash "quoted"\nline']]), '{a="back\\\\slash \\"quoted\\"\\nline"}');
    assert.equal(promSeriesName([['site', 's']]), '{}');
  });

  test('scope labels choose the collection over the client\'s scope; the other labels stay with the series, frozen and shared', () => {
    const groups = write([
      one([['__name__', 'up'], ['job', 'a']]),
      one([['__name__', 'up'], ['grid', 'fast'], ['job', 'a'], ['unit', 'b2']], [2, 3]),
      one([['__name__', 'up'], ['job', 'a']], [4]),
      one([['__name__', 'temp'], ['site', 'south']], [5]),
    ]);
    assert.deepEqual(groups.map((g) => g.scope), [base, { ...base, unit: 'b2', grid: 'fast' }, { ...base, site: 'south' }]);
    const [own, b2, south] = groups.map((g) => g.batch);
    assert.deepEqual(own.tagNames, ['up{job="a"}']);
    assert.deepEqual([...own.values], [1, 4], 'two TimeSeries of one label set are one tag, in body order');
    assert.deepEqual(own.labels, [{ __name__: 'up', job: 'a' }]);
    assert.ok(Object.isFrozen(own.labels![0]));
    assert.deepEqual(b2.tagNames, ['up{job="a"}']);
    assert.deepEqual(b2.labels, [{ __name__: 'up', job: 'a' }], 'scope labels are not kept');
    assert.deepEqual([...b2.values], [2, 3]);
    assert.deepEqual(south.tagNames, ['temp']);
  });

  test('series with no samples give no tag; a series text over the tag-name limit is malformed, naming it', () => {
    const groups = write([one([['__name__', 'empty']], []), one([['__name__', 'x']])]);
    assert.deepEqual(groups[0].batch.tagNames, ['x']);
    assertMalformed(() => write([one([['__name__', 'long'], ['a', 'v'.repeat(300)]])]), /timeseries 0 "long\{a=\\"v+…": the series text is the tag name, and name is \d+ bytes of UTF-8, longer than 256/);
    assertMalformed(() => write([one([['__name__', 'tab'], ['a', 'x\ty']])]), /"tab\{a=\\"x\\ty\\"}": the series text is the tag name, and name must not contain control characters \(U\+0009/);
  });

  test('values keep their bits through the mapping (the stale marker among them)', () => {
    const values = bitsToFloats([STALE_BITS, 0x7ff0000000000000n, 0x3ff0000000000000n]);
    const [group] = promPointsByCollection(decodeWriteRequest(encodeWriteRequest([{ labels: [['__name__', 's']], timestamps: [T0, T0 + 1, T0 + 2], values }])), base);
    assert.deepEqual(bitsOf(group.batch.values), [STALE_BITS, 0x7ff0000000000000n, 0x3ff0000000000000n]);
  });
});
