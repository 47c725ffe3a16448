/**
 * The Sparkplug B payload (Eclipse Sparkplug, `sparkplug_b.proto`, proto2) on the protobuf wire
 * format by hand (protobuf-wire.ts): a decoder for untrusted MQTT payloads and an encoder for
 * tests, benchmarks and the NCMD Rebirth request. Pure TypeScript: runs in a browser.
 *
 *   Payload { 1: uint64 timestamp; 2: repeated Metric; 3: uint64 seq; 4: string uuid; 5: bytes body }
 *   Metric  { 1: string name; 2: uint64 alias; 3: uint64 timestamp; 4: uint32 datatype;
 *             5: bool is_historical; 6: bool is_transient; 7: bool is_null; 8: MetaData (skipped);
 *             9: PropertySet (skipped); oneof value { 10: uint32 int_value; 11: uint64 long_value;
 *             12: float; 13: double; 14: bool; 15: string; 16: bytes; 17: DataSet; 18: Template;
 *             19: extension } }
 *
 * Values are kept as the field that carried them, and read as a number for a datatype by
 * metricNumber(): signed types travel as their two's complement in the unsigned fields, and
 * publishers differ in whether they sign-extend (Int8 -1 as 0xFF or 0xFFFFFFFF), so only the
 * type's own bits are read. 64-bit values become Numbers: exact within ±2^53, rounded beyond.
 * DataSet, Template and extension values are not decoded (the collector skips them); their
 * bytes are kept.
 *
 * Anything a valid encoder cannot have produced throws WriteBodyError `malformed`.
 */

import { malformed, utf8Encoder, utf8String } from './point-batch.js';
import { delimitedSize, ProtoReader, ProtoWriter, varintSize, WIRE_FIXED32, WIRE_FIXED64, WIRE_LENGTH_DELIMITED, WIRE_VARINT } from './protobuf-wire.js';

/** Sparkplug datatypes (the Metric's `datatype`). */
export const SparkplugType = {
  Unknown: 0, Int8: 1, Int16: 2, Int32: 3, Int64: 4, UInt8: 5, UInt16: 6, UInt32: 7, UInt64: 8,
  Float: 9, Double: 10, Boolean: 11, String: 12, DateTime: 13, Text: 14, UUID: 15, DataSet: 16,
  Bytes: 17, File: 18, Template: 19, PropertySet: 20, PropertySetList: 21,
} as const;

/** Which field of the Metric's `value` oneof was present. */
export type SparkplugValueField = 'int' | 'long' | 'float' | 'double' | 'boolean' | 'string' | 'bytes' | 'dataset' | 'template' | 'extension';

export interface SparkplugMetric {
  name?: string;
  alias?: number;
  timestamp?: number;
  datatype?: number;
  isHistorical: boolean;
  isTransient: boolean;
  isNull: boolean;
  /** The value's field, undefined when the metric has none. The last one wins, as in protobuf. */
  field?: SparkplugValueField;
  /** int: the uint32; long: the int64 (two's complement read as signed); float, double; boolean 1/0. */
  number: number;
  /** string value. */
  text?: string;
  /** bytes value, or the undecoded DataSet / Template / extension message. */
  bytes?: Uint8Array;
}

export interface SparkplugPayload {
  timestamp?: number;
  seq?: number;
  uuid?: string;
  body?: Uint8Array;
  metrics: SparkplugMetric[];
}

const TWO_POW_64 = 18446744073709551616;
const EMPTY = new Uint8Array(0);

// ---- decoding ------------------------------------------------------------------------------

/** Decodes a Sparkplug B payload; throws WriteBodyError `malformed` for bytes no encoder makes. */
export function decodeSparkplugPayload(buf: Uint8Array): SparkplugPayload {
  const r = new ProtoReader(buf);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const payload: SparkplugPayload = { metrics: [] };
  while (r.pos < r.end) {
    const key = r.key();
    switch (key >>> 3) {
      case 1:
        r.expectWire(key, WIRE_VARINT, 'Payload.timestamp');
        payload.timestamp = r.varint();
        break;
      case 2: {
        r.expectWire(key, WIRE_LENGTH_DELIMITED, 'Payload.metrics');
        const end = r.delimitedEnd('Payload.metrics');
        payload.metrics.push(decodeMetric(r, view, end));
        break;
      }
      case 3:
        r.expectWire(key, WIRE_VARINT, 'Payload.seq');
        payload.seq = r.varint();
        break;
      case 4: {
        r.expectWire(key, WIRE_LENGTH_DELIMITED, 'Payload.uuid');
        const end = r.delimitedEnd('Payload.uuid');
        payload.uuid = utf8String(buf, r.pos, end, 'Payload.uuid');
        r.pos = end;
        break;
      }
      case 5: {
        r.expectWire(key, WIRE_LENGTH_DELIMITED, 'Payload.body');
        const end = r.delimitedEnd('Payload.body');
        payload.body = buf.slice(r.pos, end);
        r.pos = end;
        break;
      }
      default:
        r.skip(key);
    }
  }
  return payload;
}

function decodeMetric(r: ProtoReader, view: DataView, end: number): SparkplugMetric {
  const outer = r.end;
  r.end = end;
  const buf = r.buf;
  const m: SparkplugMetric = { isHistorical: false, isTransient: false, isNull: false, number: 0 };
  while (r.pos < end) {
    const key = r.key();
    const field = key >>> 3;
    switch (field) {
      case 1: {
        r.expectWire(key, WIRE_LENGTH_DELIMITED, 'Metric.name');
        const e = r.delimitedEnd('Metric.name');
        m.name = utf8String(buf, r.pos, e, 'Metric.name');
        r.pos = e;
        break;
      }
      case 2:
        r.expectWire(key, WIRE_VARINT, 'Metric.alias');
        m.alias = r.varint();
        break;
      case 3:
        r.expectWire(key, WIRE_VARINT, 'Metric.timestamp');
        m.timestamp = r.varint();
        break;
      case 4:
        r.expectWire(key, WIRE_VARINT, 'Metric.datatype');
        m.datatype = r.varint();
        break;
      case 5:
      case 6:
      case 7: {
        r.expectWire(key, WIRE_VARINT, 'Metric flag');
        const on = r.varint() !== 0;
        if (field === 5) m.isHistorical = on;
        else if (field === 6) m.isTransient = on;
        else m.isNull = on;
        break;
      }
      case 10:
        r.expectWire(key, WIRE_VARINT, 'Metric.int_value');
        // uint32 on the wire; an encoder that wrote a sign-extended int keeps only the low 32 bits here
        m.number = r.int64() % 4294967296;
        if (m.number < 0) m.number += 4294967296;
        m.field = 'int';
        break;
      case 11:
        r.expectWire(key, WIRE_VARINT, 'Metric.long_value');
        m.number = r.int64();
        m.field = 'long';
        break;
      case 12:
        r.expectWire(key, WIRE_FIXED32, 'Metric.float_value');
        m.number = view.getFloat32(r.fixed(4, 'Metric.float_value'), true);
        m.field = 'float';
        break;
      case 13:
        r.expectWire(key, WIRE_FIXED64, 'Metric.double_value');
        m.number = view.getFloat64(r.fixed(8, 'Metric.double_value'), true);
        m.field = 'double';
        break;
      case 14:
        r.expectWire(key, WIRE_VARINT, 'Metric.boolean_value');
        m.number = r.varint() !== 0 ? 1 : 0;
        m.field = 'boolean';
        break;
      case 15: {
        r.expectWire(key, WIRE_LENGTH_DELIMITED, 'Metric.string_value');
        const e = r.delimitedEnd('Metric.string_value');
        m.text = utf8String(buf, r.pos, e, 'Metric.string_value');
        m.field = 'string';
        r.pos = e;
        break;
      }
      case 16:
      case 17:
      case 18:
      case 19: {
        const what = field === 16 ? 'bytes' : field === 17 ? 'dataset' : field === 18 ? 'template' : 'extension';
        r.expectWire(key, WIRE_LENGTH_DELIMITED, `Metric.${what}_value`);
        const e = r.delimitedEnd(`Metric.${what}_value`);
        m.bytes = buf.slice(r.pos, e);
        m.field = what;
        r.pos = e;
        break;
      }
      default:
        r.skip(key);
    }
  }
  r.end = outer;
  return m;
}

/** Datatypes whose values the historian stores (as numbers; Boolean as 1/0). */
export function isNumericType(datatype: number): boolean {
  return (datatype >= SparkplugType.Int8 && datatype <= SparkplugType.Boolean);
}

/**
 * The metric's value as a number for `datatype` (from the metric or its birth certificate), or
 * null when the metric has no numeric value of that type (strings, bytes, datasets, templates,
 * DateTime, null metrics, a value in a field the type does not use).
 */
export function metricNumber(m: SparkplugMetric, datatype: number): number | null {
  if (m.isNull || m.field === undefined) return null;
  const f = m.field;
  const v = m.number;
  const integer = f === 'int' || f === 'long';
  switch (datatype) {
    case SparkplugType.Int8:
      return integer ? (v << 24) >> 24 : null;
    case SparkplugType.Int16:
      return integer ? (v << 16) >> 16 : null;
    case SparkplugType.Int32:
      return integer ? v | 0 : null;
    case SparkplugType.UInt8:
      return integer ? v & 0xff : null;
    case SparkplugType.UInt16:
      return integer ? v & 0xffff : null;
    case SparkplugType.UInt32:
      return integer ? v >>> 0 : null;
    case SparkplugType.Int64:
      return integer ? v : null;
    case SparkplugType.UInt64:
      return f === 'long' ? (v < 0 ? v + TWO_POW_64 : v) : f === 'int' ? v : null;
    case SparkplugType.Float:
    case SparkplugType.Double:
      return f === 'float' || f === 'double' ? v : null;
    case SparkplugType.Boolean:
      return f === 'boolean' ? v : null;
    default:
      return null;
  }
}

// ---- encoding ------------------------------------------------------------------------------

export interface SparkplugMetricInput {
  name?: string;
  alias?: number;
  timestamp?: number;
  datatype: number;
  isHistorical?: boolean;
  isTransient?: boolean;
  isNull?: boolean;
  /** Writes no `datatype` (as the spec recommends for DATA messages); the value is still encoded by it. */
  omitDatatype?: boolean;
  /**
   * By datatype: a number for the integer types, DateTime, Float and Double; a boolean for
   * Boolean; a string for String, Text, UUID; bytes for Bytes and File; the encoded message
   * bytes for DataSet and Template. Omitted (or isNull) for no value.
   */
  value?: number | boolean | string | Uint8Array;
}

export interface SparkplugPayloadInput {
  timestamp?: number;
  seq?: number;
  uuid?: string;
  body?: Uint8Array;
  metrics: readonly SparkplugMetricInput[];
}

/** The value field and its payload bytes a metric is written with. */
interface EncodedValue {
  field: number;
  wire: number;
  /** varint value, or float bits for fixed fields */
  number: number;
  bytes: Uint8Array;
}

function encodeValue(m: SparkplugMetricInput): EncodedValue | null {
  const v = m.value;
  if (m.isNull || v === undefined) return null;
  const T = SparkplugType;
  const t = m.datatype;
  if (t >= T.Int8 && t <= T.UInt32 && t !== T.Int64) {
    // int_value: a signed value as its 32-bit two's complement (sign-extended, as Eclipse Tahu writes it)
    return { field: 10, wire: WIRE_VARINT, number: Number(v) >>> 0, bytes: EMPTY };
  }
  if (t === T.Int64 || t === T.UInt64 || t === T.DateTime) return { field: 11, wire: WIRE_VARINT, number: Number(v), bytes: EMPTY };
  if (t === T.Float) return { field: 12, wire: WIRE_FIXED32, number: Number(v), bytes: EMPTY };
  if (t === T.Double) return { field: 13, wire: WIRE_FIXED64, number: Number(v), bytes: EMPTY };
  if (t === T.Boolean) return { field: 14, wire: WIRE_VARINT, number: v ? 1 : 0, bytes: EMPTY };
  if (t === T.String || t === T.Text || t === T.UUID) return { field: 15, wire: WIRE_LENGTH_DELIMITED, number: 0, bytes: utf8Encoder.encode(String(v)) };
  const bytes = v instanceof Uint8Array ? v : EMPTY;
  if (t === T.Bytes || t === T.File) return { field: 16, wire: WIRE_LENGTH_DELIMITED, number: 0, bytes };
  if (t === T.DataSet) return { field: 17, wire: WIRE_LENGTH_DELIMITED, number: 0, bytes };
  if (t === T.Template) return { field: 18, wire: WIRE_LENGTH_DELIMITED, number: 0, bytes };
  return null;
}

function valueSize(e: EncodedValue): number {
  const key = varintSize(e.field * 8);
  if (e.wire === WIRE_VARINT) return key + varintSize(e.number);
  if (e.wire === WIRE_FIXED32) return key + 4;
  if (e.wire === WIRE_FIXED64) return key + 8;
  return delimitedSize(e.field, e.bytes.length);
}

interface MetricPlan {
  m: SparkplugMetricInput;
  name: Uint8Array | null;
  value: EncodedValue | null;
  size: number;
}

function planMetric(m: SparkplugMetricInput): MetricPlan {
  const name = m.name === undefined ? null : utf8Encoder.encode(m.name);
  const value = encodeValue(m);
  let size = 0;
  if (name) size += delimitedSize(1, name.length);
  if (m.alias !== undefined) size += 1 + varintSize(m.alias);
  if (m.timestamp !== undefined) size += 1 + varintSize(m.timestamp);
  if (!m.omitDatatype) size += 1 + varintSize(m.datatype);
  if (m.isHistorical) size += 2;
  if (m.isTransient) size += 2;
  if (m.isNull) size += 2;
  if (value) size += valueSize(value);
  return { m, name, value, size };
}

/** Encodes a payload (tests, benchmarks, NCMD). Numbers are integers below 2^53 where the field is an integer. */
export function encodeSparkplugPayload(p: SparkplugPayloadInput): Uint8Array {
  const plans = p.metrics.map(planMetric);
  const uuid = p.uuid === undefined ? null : utf8Encoder.encode(p.uuid);
  let size = 0;
  if (p.timestamp !== undefined) size += 1 + varintSize(p.timestamp);
  for (const plan of plans) size += delimitedSize(2, plan.size);
  if (p.seq !== undefined) size += 1 + varintSize(p.seq);
  if (uuid) size += delimitedSize(4, uuid.length);
  if (p.body) size += delimitedSize(5, p.body.length);
  const w = new ProtoWriter(size);
  const scratch = new DataView(new ArrayBuffer(8));
  if (p.timestamp !== undefined) {
    w.key(1, WIRE_VARINT);
    w.varint(p.timestamp);
  }
  for (const { m, name, value, size: metricSize } of plans) {
    w.delimited(2, metricSize);
    if (name) w.bytes(1, name);
    if (m.alias !== undefined) {
      w.key(2, WIRE_VARINT);
      w.varint(m.alias);
    }
    if (m.timestamp !== undefined) {
      w.key(3, WIRE_VARINT);
      w.varint(m.timestamp);
    }
    if (!m.omitDatatype) {
      w.key(4, WIRE_VARINT);
      w.varint(m.datatype);
    }
    for (const [field, on] of [[5, m.isHistorical], [6, m.isTransient], [7, m.isNull]] as const) {
      if (!on) continue;
      w.key(field, WIRE_VARINT);
      w.varint(1);
    }
    if (!value) continue;
    if (value.wire === WIRE_LENGTH_DELIMITED) {
      w.bytes(value.field, value.bytes);
      continue;
    }
    w.key(value.field, value.wire);
    if (value.wire === WIRE_VARINT) w.varint(value.number);
    else {
      const n = value.wire === WIRE_FIXED32 ? 4 : 8;
      if (n === 4) scratch.setFloat32(0, value.number, true);
      else scratch.setFloat64(0, value.number, true);
      for (let k = 0; k < n; k++) w.buf[w.pos + k] = scratch.getUint8(k);
      w.pos += n;
    }
  }
  if (p.seq !== undefined) {
    w.key(3, WIRE_VARINT);
    w.varint(p.seq);
  }
  if (uuid) w.bytes(4, uuid);
  if (p.body) w.bytes(5, p.body);
  if (w.pos !== size) throw new Error(`sparkplug-b: encoded ${w.pos} bytes, planned ${size}`);
  return w.buf;
}

/** The NCMD payload that asks an edge node to publish its births again (`Node Control/Rebirth` true). */
export function encodeRebirthRequest(timestamp: number): Uint8Array {
  return encodeSparkplugPayload({
    timestamp,
    metrics: [{ name: 'Node Control/Rebirth', timestamp, datatype: SparkplugType.Boolean, value: true }],
  });
}
