// The Sparkplug B codec against itself (round trips of every datatype) and against payloads
// built independently by protobufjs from the published schema (written out below), so both
// sides cannot share a mistake; garbage must end in WriteBodyError, never another throw or a hang.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { WriteBodyError } from '../../native-free-codecs/point-batch.js';
import {
  decodeSparkplugPayload,
  encodeRebirthRequest,
  encodeSparkplugPayload,
  isNumericType,
  metricNumber,
  SparkplugType as T,
  type SparkplugMetricInput,
} from '../../native-free-codecs/sparkplug-b.js';
import { prng } from '../support/prng.js';

/** The fields of sparkplug_b.proto that matter here, as the Eclipse Sparkplug spec numbers them. */
const SCHEMA = `
syntax = "proto2";
package spb;
message Payload {
  message DataSet {
    message DataSetValue {
      oneof value { uint32 int_value = 1; uint64 long_value = 2; float float_value = 3; double double_value = 4; bool boolean_value = 5; string string_value = 6; }
    }
    message Row { repeated DataSetValue elements = 1; }
    optional uint64 num_of_columns = 1;
    repeated string columns = 2;
    repeated uint32 types = 3;
    repeated Row rows = 4;
  }
  message Template {
    optional string version = 1;
    repeated Metric metrics = 2;
    optional string template_ref = 4;
    optional bool is_definition = 5;
  }
  message PropertyValue {
    optional uint32 type = 1;
    optional bool is_null = 2;
    oneof value { uint32 int_value = 3; uint64 long_value = 4; float float_value = 5; double double_value = 6; bool boolean_value = 7; string string_value = 8; }
  }
  message PropertySet { repeated string keys = 1; repeated PropertyValue values = 2; }
  message MetaData { optional bool is_multi_part = 1; optional string content_type = 2; optional uint64 size = 3; }
  message Metric {
    optional string name = 1;
    optional uint64 alias = 2;
    optional uint64 timestamp = 3;
    optional uint32 datatype = 4;
    optional bool is_historical = 5;
    optional bool is_transient = 6;
    optional bool is_null = 7;
    optional MetaData metadata = 8;
    optional PropertySet properties = 9;
    oneof value {
      uint32 int_value = 10; uint64 long_value = 11; float float_value = 12; double double_value = 13;
      bool boolean_value = 14; string string_value = 15; bytes bytes_value = 16;
      DataSet dataset_value = 17; Template template_value = 18;
    }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
  optional string uuid = 4;
  optional bytes body = 5;
}
`;
const root = protobuf.parse(SCHEMA).root;
const Payload = root.lookupType('spb.Payload');
const DataSet = root.lookupType('spb.Payload.DataSet');

function pbEncode(object: Record<string, unknown>): Uint8Array {
  const problem = Payload.verify(object);
  if (problem) throw new Error(problem);
  // encode() takes the plain object: fromObject would turn 64-bit {low, high} into a rounded number
  return Payload.encode(object).finish();
}

const TS = 1_700_000_000_123;

test('every numeric datatype round-trips, extremes included', () => {
  const cases: Array<[number, number[]]> = [
    [T.Int8, [0, 1, -1, 127, -128]],
    [T.Int16, [0, -1, 32767, -32768]],
    [T.Int32, [0, -1, 2147483647, -2147483648]],
    [T.Int64, [0, -1, 2 ** 53 - 1, -(2 ** 53) + 1, 1_700_000_000_000]],
    [T.UInt8, [0, 255]],
    [T.UInt16, [0, 65535]],
    [T.UInt32, [0, 4294967295]],
    [T.UInt64, [0, 2 ** 53 - 1, 2 ** 40]],
    [T.Float, [0, 1.5, -2.25, 3.4028234663852886e38]],
    [T.Double, [0, Math.PI, -1e-300, Number.MAX_VALUE]],
    [T.Boolean, [1, 0]],
  ];
  for (const [datatype, values] of cases) {
    const metrics: SparkplugMetricInput[] = values.map((v, i) => ({
      name: `m${i}`,
      alias: i + 1,
      timestamp: TS + i,
      datatype,
      value: datatype === T.Boolean ? v === 1 : v,
    }));
    const decoded = decodeSparkplugPayload(encodeSparkplugPayload({ timestamp: TS, seq: 7, metrics }));
    assert.equal(decoded.seq, 7);
    assert.equal(decoded.timestamp, TS);
    assert.equal(isNumericType(datatype), true);
    assert.deepEqual(decoded.metrics.map((m) => metricNumber(m, datatype)), values, `datatype ${datatype}`);
    assert.deepEqual(decoded.metrics.map((m) => [m.name, m.alias, m.timestamp, m.datatype]), values.map((_, i) => [`m${i}`, i + 1, TS + i, datatype]));
  }
});

test('non-numeric datatypes round-trip and read as no number', () => {
  const dataset = DataSet.encode(DataSet.fromObject({ numOfColumns: 1, columns: ['a'], types: [T.Int32], rows: [{ elements: [{ intValue: 5 }] }] })).finish();
  const metrics: SparkplugMetricInput[] = [
    { name: 's', datatype: T.String, value: 'héllo' },
    { name: 't', datatype: T.Text, value: 'text' },
    { name: 'u', datatype: T.UUID, value: '0b5b7c0e-0000-4000-8000-000000000000' },
    { name: 'd', datatype: T.DateTime, value: TS },
    { name: 'b', datatype: T.Bytes, value: new Uint8Array([1, 2, 3]) },
    { name: 'f', datatype: T.File, value: new Uint8Array([9]) },
    { name: 'ds', datatype: T.DataSet, value: dataset },
    { name: 'tp', datatype: T.Template, value: new Uint8Array([10, 1, 0x31]) },
    { name: 'n', datatype: T.Double, isNull: true },
    { name: 'h', datatype: T.Double, isHistorical: true, isTransient: true, value: 2 },
    { alias: 5, datatype: T.Int16, omitDatatype: true, value: -3 },
  ];
  const [s, t, u, d, b, f, ds, tp, n, h, untyped] = decodeSparkplugPayload(encodeSparkplugPayload({ uuid: 'abc', body: new Uint8Array([7]), metrics })).metrics;
  assert.deepEqual([s!.field, s!.text, t!.text, u!.text], ['string', 'héllo', 'text', '0b5b7c0e-0000-4000-8000-000000000000']);
  assert.deepEqual([d!.field, d!.number], ['long', TS]);
  assert.deepEqual([b!.field, [...b!.bytes!], f!.field, [...f!.bytes!]], ['bytes', [1, 2, 3], 'bytes', [9]]);
  assert.deepEqual([ds!.field, [...ds!.bytes!]], ['dataset', [...dataset]]);
  assert.equal(tp!.field, 'template');
  assert.deepEqual([n!.isNull, n!.field], [true, undefined]);
  assert.deepEqual([h!.isHistorical, h!.isTransient, metricNumber(h!, T.Double)], [true, true, 2]);
  assert.deepEqual([untyped!.datatype, untyped!.field, metricNumber(untyped!, T.Int16)], [undefined, 'int', -3]);
  for (const [m, type] of [[s, T.String], [d, T.DateTime], [b, T.Bytes], [ds, T.DataSet], [tp, T.Template], [n, T.Double]] as const) {
    assert.equal(metricNumber(m!, type), null, `datatype ${type}`);
    assert.equal(isNumericType(type), type === T.Double);
  }
});

test('payloads protobufjs built from the schema decode as the schema says', () => {
  const bytes = pbEncode({
    timestamp: TS,
    seq: 255,
    uuid: 'u-1',
    metrics: [
      { name: 'Inputs/A', alias: 1, timestamp: TS + 1, datatype: T.Int32, intValue: 0xffffffd6 }, // -42 sign-extended
      { name: 'Inputs/B', alias: 2, datatype: T.Int16, intValue: 0xffa9 }, // -87 not extended
      { alias: 3, datatype: T.Int64, longValue: { low: 0xfffffffb, high: 0xffffffff, unsigned: true } },
      { alias: 4, datatype: T.UInt64, longValue: { low: 0xffffffff, high: 0xffffffff, unsigned: true } },
      { alias: 5, datatype: T.Float, floatValue: 0.5 },
      { alias: 6, datatype: T.Double, doubleValue: -12.125, isHistorical: true },
      { alias: 7, datatype: T.Boolean, booleanValue: true },
      { alias: 8, datatype: T.String, stringValue: 'off' },
      { alias: 9, datatype: T.DataSet, datasetValue: { numOfColumns: 1, columns: ['x'], types: [T.Double], rows: [{ elements: [{ doubleValue: 1 }] }] } },
      { alias: 10, datatype: T.Double, doubleValue: 3, properties: { keys: ['Quality'], values: [{ type: T.Int32, intValue: 192 }] }, metadata: { contentType: 'x' } },
      { alias: 11, datatype: T.UInt32, longValue: 4000000000 }, // the reference implementation's UInt32 in long_value
      { alias: 12, datatype: T.Int8, isNull: true },
    ],
  });
  const p = decodeSparkplugPayload(bytes);
  assert.deepEqual([p.timestamp, p.seq, p.uuid, p.metrics.length], [TS, 255, 'u-1', 12]);
  const m = p.metrics;
  assert.deepEqual([m[0]!.name, m[0]!.alias, m[0]!.timestamp, metricNumber(m[0]!, T.Int32)], ['Inputs/A', 1, TS + 1, -42]);
  assert.equal(metricNumber(m[1]!, T.Int16), -87);
  assert.equal(metricNumber(m[2]!, T.Int64), -5);
  assert.equal(metricNumber(m[3]!, T.UInt64), 2 ** 64); // beyond 2^53: rounded, as documented
  assert.equal(metricNumber(m[4]!, T.Float), 0.5);
  assert.deepEqual([metricNumber(m[5]!, T.Double), m[5]!.isHistorical], [-12.125, true]);
  assert.equal(metricNumber(m[6]!, T.Boolean), 1);
  assert.deepEqual([m[7]!.text, metricNumber(m[7]!, T.String)], ['off', null]);
  assert.deepEqual([m[8]!.field, metricNumber(m[8]!, T.DataSet)], ['dataset', null]);
  assert.equal(metricNumber(m[9]!, T.Double), 3);
  assert.equal(metricNumber(m[10]!, T.UInt32), 4000000000);
  assert.deepEqual([m[11]!.isNull, metricNumber(m[11]!, T.Int8)], [true, null]);
});

test('what the codec encodes, protobufjs decodes to the same fields', () => {
  const bytes = encodeSparkplugPayload({
    timestamp: TS,
    seq: 3,
    metrics: [
      { name: 'a', alias: 1, datatype: T.Int32, value: -7 },
      { name: 'b', alias: 2, datatype: T.Int64, value: -7 },
      { name: 'c', alias: 3, datatype: T.Float, value: 1.25 },
      { name: 'd', alias: 4, datatype: T.String, value: 'x' },
    ],
  });
  const o = Payload.toObject(Payload.decode(bytes), { longs: String }) as any;
  assert.deepEqual([o.timestamp, o.seq, o.metrics.length], [String(TS), '3', 4]);
  assert.equal(o.metrics[0].intValue, 0xfffffff9);
  assert.equal(o.metrics[1].longValue, '18446744073709551609');
  assert.equal(o.metrics[2].floatValue, 1.25);
  assert.equal(o.metrics[3].stringValue, 'x');
  const rebirth = Payload.toObject(Payload.decode(encodeRebirthRequest(TS)), { longs: Number }) as any;
  assert.deepEqual(rebirth.metrics.map((x: any) => [x.name, x.datatype, x.booleanValue]), [['Node Control/Rebirth', T.Boolean, true]]);
});

test('garbage, truncations and wrong wire types end in WriteBodyError, never another error or a hang', () => {
  const good = encodeSparkplugPayload({ timestamp: TS, seq: 1, metrics: [{ name: 'x', alias: 1, datatype: T.Double, value: 1 }, { alias: 2, datatype: T.String, value: 'abc' }] });
  const inputs: Uint8Array[] = [
    new Uint8Array([0x00]), // field 0
    new Uint8Array([0x0f]), // wire type 7
    new Uint8Array([0x12, 0x05, 0x0a]), // metric longer than the payload
    new Uint8Array([0x0a, 0x01]), // timestamp as length-delimited
    new Uint8Array([0x12, 0x02, 0x0a, 0x01, 0xff]), // truncated inside a metric
    new Uint8Array([0x12, 0x03, 0x0a, 0x01, 0xff]), // name not UTF-8
    new Uint8Array([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // varint over 10 bytes
  ];
  for (let cut = 1; cut < good.length; cut++) inputs.push(good.subarray(0, cut));
  const random = prng(42);
  for (let i = 0; i < 2000; i++) {
    const b = new Uint8Array(1 + Math.floor(random() * 64));
    for (let k = 0; k < b.length; k++) b[k] = Math.floor(random() * 256);
    inputs.push(b);
    const flipped = good.slice();
    flipped[Math.floor(random() * flipped.length)] ^= 1 << Math.floor(random() * 8);
    inputs.push(flipped);
  }
  let refused = 0;
  for (const input of inputs) {
    try {
      decodeSparkplugPayload(input);
    } catch (err) {
      assert.ok(err instanceof WriteBodyError, `${err} for ${Buffer.from(input).toString('hex')}`);
      refused++;
    }
  }
  assert.ok(refused >= 7, `${refused} refused`);
});
