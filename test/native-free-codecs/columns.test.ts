import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ByteReader,
  ByteWriter,
  COLUMN_CODEC_VERSION,
  decodeTimestamps,
  decodeValues,
  encodeTimestamps,
  encodeValues,
  VALUES_MODE_FLOAT,
  VALUES_MODE_SCALED,
} from '../../native-free-codecs/columns.js';
import { prng } from '../support/prng.js';

// One conformance suite: every series, industrial or adversarial, goes through the same
// round trip (timestamps then values in one block), compared bit for bit.


const DAY = 86_400;
const T0 = Date.UTC(2024, 5, 1); // ms

interface Series {
  ts: Float64Array;
  values: Float64Array;
}

function regularTimestamps(count: number, stepMs = 1000, start = T0): Float64Array {
  return Float64Array.from({ length: count }, (_, i) => start + i * stepMs);
}

/** Industrial value kinds, each over regular 1 s timestamps. */
const industrial: Record<string, (rnd: () => number, count: number) => Float64Array> = {
  'random walk, 2 decimals': (rnd, count) => {
    let x = 50 + rnd() * 450;
    return Float64Array.from({ length: count }, () => {
      x = Math.min(500, Math.max(50, x + (rnd() - 0.5) * 0.6));
      return Math.round(x * 100) / 100;
    });
  },
  'stepping setpoint': (rnd, count) => {
    let sp = 60;
    return Float64Array.from({ length: count }, () => {
      if (rnd() < 1 / 900) sp = Math.round((40 + rnd() * 60) * 2) / 2;
      return sp;
    });
  },
  'on/off state': (rnd, count) => {
    let s = 0;
    return Float64Array.from({ length: count }, () => {
      if (rnd() < 1 / 300) s = 1 - s;
      return s;
    });
  },
  'increasing counter': (rnd, count) => {
    let c = 1_000_000;
    return Float64Array.from({ length: count }, () => (c += Math.floor(rnd() * 8)));
  },
  'full-precision floats': (rnd, count) => {
    let x = 20;
    return Float64Array.from({ length: count }, () => (x += (rnd() - 0.5) * 0.1));
  },
};

function nanWithPayload(payload: number): number {
  const a = new Float64Array(1);
  const u = new Uint32Array(a.buffer);
  u[0] = payload;
  u[1] = 0x7ff80000;
  return a[0]!;
}

/** Adversarial cases: [timestamps, values]. */
function adversarial(): Record<string, Series> {
  const MAX = Number.MAX_SAFE_INTEGER;
  const v = (...xs: number[]) => Float64Array.from(xs);
  const t = (...xs: number[]) => Float64Array.from(xs);
  const seq = (n: number) => regularTimestamps(n);
  return {
    'zero points': { ts: t(), values: v() },
    'single point': { ts: t(T0), values: v(42.5) },
    'single -0': { ts: t(0), values: v(-0) },
    'single NaN': { ts: t(MAX), values: v(NaN) },
    'specials': {
      ts: seq(9),
      values: v(NaN, Infinity, -Infinity, -0, 0, 5e-324, -5e-324, Number.MAX_VALUE, -Number.MAX_VALUE),
    },
    '0.1 + 0.2 and friends': { ts: seq(5), values: v(0.1 + 0.2, 0.3, 0.1, 1 / 3, 2 / 3) },
    'decimals with one -0': { ts: seq(4), values: v(1.25, -0, 3.5, 2) },
    'scale 9 values': { ts: seq(3), values: v(1e-9, 123.456789012, -0.000000001) },
    'integers at the ±2^52 edge': { ts: seq(4), values: v(2 ** 52, -(2 ** 52), 2 ** 52, 0) },
    'integers beyond 2^52': { ts: seq(3), values: v(2 ** 53, -(2 ** 53), 2 ** 53 - 1) },
    'huge values': { ts: seq(3), values: v(1e300, -1e300, 1e21) },
    'NaN payloads': { ts: seq(4), values: v(nanWithPayload(1), nanWithPayload(0xdeadbeef), NaN, nanWithPayload(1)) },
    '20 repeats of NaN': { ts: seq(20), values: new Float64Array(20).fill(NaN) },
    'timestamps near 2^53-1': { ts: t(MAX - 3000, MAX - 2000, MAX - 1000, MAX - 1, MAX), values: v(1, 2, 3, 4, 5) },
    'first and last timestamps of the range': { ts: t(0, MAX), values: v(1, 2) },
    'largest negative delta-of-delta': { ts: t(0, MAX - 1, MAX), values: v(0, 0, 0) },
    'equal timestamps': { ts: t(5, 5, 5, 6), values: v(1, 1, 1, 1) },
    'irregular with gaps': (() => {
      const rnd = prng(7);
      let x = T0;
      const ts = Float64Array.from({ length: 5000 }, () => {
        x += rnd() < 0.01 ? Math.floor(rnd() * 3_600_000) : 1000 + Math.floor((rnd() - 0.5) * 40);
        return x;
      });
      return { ts, values: industrial['random walk, 2 decimals']!(rnd, 5000) };
    })(),
  };
}

function bits(a: Float64Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

interface Sizes {
  tsBytes: number;
  valueBytes: number;
  mode: number;
}

/** Encodes both columns into one block, decodes them back, asserts bit equality. */
function roundTrip(name: string, s: Series, w = new ByteWriter(16)): Sizes {
  const count = s.ts.length;
  w.reset();
  encodeTimestamps(s.ts, count, w);
  const tsBytes = w.length;
  encodeValues(s.values, count, w);
  const block = w.bytes().slice();
  const r = new ByteReader(block);
  const ts = new Float64Array(count);
  const values = new Float64Array(count);
  decodeTimestamps(r, count, ts);
  assert.equal(r.pos, tsBytes, `${name}: timestamp column length`);
  decodeValues(r, count, values);
  assert.equal(r.pos, block.length, `${name}: whole block consumed`);
  for (let i = 0; i < count; i++) {
    if (!Object.is(ts[i], s.ts[i])) assert.fail(`${name}: timestamp ${i} is ${ts[i]}, wrote ${s.ts[i]}`);
    if (!Object.is(values[i], s.values[i])) assert.fail(`${name}: value ${i} is ${values[i]}, wrote ${s.values[i]}`);
  }
  assert.deepEqual(bits(values), bits(s.values), `${name}: value bits`);
  return { tsBytes, valueBytes: block.length - tsBytes, mode: count > 0 ? block[tsBytes]! >> 4 : 0 };
}

test('codec version is 1', () => {
  assert.equal(COLUMN_CODEC_VERSION, 1);
});

for (const [name, series] of Object.entries(adversarial())) {
  test(`round trip: ${name}`, () => {
    roundTrip(name, series);
  });
}

test('scaled mode only when exact; float mode keeps NaN, ±Infinity and -0', () => {
  const modeOf = (...xs: number[]) => roundTrip('mode', { ts: regularTimestamps(xs.length), values: Float64Array.from(xs) }).mode;
  assert.equal(modeOf(1.25, 3, 400.5), VALUES_MODE_SCALED);
  assert.equal(modeOf(0.1 + 0.2), VALUES_MODE_FLOAT);
  assert.equal(modeOf(1, -0), VALUES_MODE_FLOAT);
  assert.equal(modeOf(1, NaN), VALUES_MODE_FLOAT);
  assert.equal(modeOf(Infinity), VALUES_MODE_FLOAT);
  assert.equal(modeOf(5e-324), VALUES_MODE_FLOAT);
  assert.equal(modeOf(1e-10), VALUES_MODE_FLOAT);
});

test('COLUMNS.md example bytes: [1.5, 1.5, 1.5]', () => {
  const w = new ByteWriter();
  encodeValues(Float64Array.of(1.5, 1.5, 1.5), 3, w);
  assert.deepEqual([...w.bytes()], [0x11, 0x1e, 0x00, 0x01]);
});

/** Reference zigzag LEB128 in BigInt, written from the COLUMNS.md text. */
function referenceVarint(v: bigint, signed: boolean): number[] {
  let u = signed ? (v >= 0n ? 2n * v : -2n * v - 1n) : v;
  const out: number[] = [];
  do {
    const b = Number(u & 0x7fn);
    u >>= 7n;
    out.push(u > 0n ? b | 0x80 : b);
  } while (u > 0n);
  return out;
}

test('varints match a BigInt reference up to 2^53, both directions', () => {
  const rnd = prng(3);
  const unsigned = [0, 1, 63, 64, 127, 128, 16383, 16384, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 52 + 1, 2 ** 53 - 1, 2 ** 53];
  for (let i = 0; i < 200; i++) unsigned.push(Math.floor(rnd() * 2 ** 53));
  const signed = unsigned.flatMap((u) => [u, -u, -u - 1].filter((x) => Math.abs(x) <= 2 ** 53));
  const w = new ByteWriter(1);
  for (const u of unsigned) {
    w.reset();
    w.uvarint(u);
    assert.deepEqual([...w.bytes()], referenceVarint(BigInt(u), false), `uvarint ${u}`);
    const r = new ByteReader(w.bytes());
    assert.equal(r.uvarint(), u);
    assert.equal(r.remaining, 0);
  }
  for (const s of signed) {
    w.reset();
    w.svarint(s);
    assert.deepEqual([...w.bytes()], referenceVarint(BigInt(s), true), `svarint ${s}`);
    const r = new ByteReader(w.bytes());
    assert.ok(Object.is(r.svarint(), s + 0), `svarint ${s}`);
  }
});

test('property: random series of every kind and length round-trip exactly', () => {
  const kinds = Object.values(industrial);
  const w = new ByteWriter(8);
  for (let seed = 1; seed <= 300; seed++) {
    const rnd = prng(seed);
    const count = [0, 1, 2, 3][seed % 4]! + (seed % 5 === 0 ? 0 : Math.floor(rnd() ** 3 * 3000));
    const values = kinds[seed % kinds.length]!(rnd, count);
    // Mix in adversarial values now and then.
    if (seed % 7 === 0 && count > 0) values[Math.floor(rnd() * count)] = [NaN, -0, Infinity, 5e-324, 0.1 + 0.2][seed % 5]!;
    let t = Math.floor(rnd() * 2 ** 52);
    const regular = seed % 3 === 0;
    const ts = Float64Array.from({ length: count }, () => {
      t += regular ? 1000 : Math.floor(rnd() ** 4 * 1e7);
      return t;
    });
    roundTrip(`seed ${seed}`, { ts, values }, w);
  }
});

test('bytes per point for a day of 1 s industrial series (before lz4)', () => {
  const rows: Array<{ kind: string; 'ts B/pt': number; 'values B/pt': number; mode: string }> = [];
  const ts = regularTimestamps(DAY);
  const limits: Record<string, number> = {
    'random walk, 2 decimals': 3,
    'stepping setpoint': 0.1,
    'on/off state': 0.1,
    'increasing counter': 1.5,
    'full-precision floats': 9,
  };
  for (const [kind, make] of Object.entries(industrial)) {
    const sizes = roundTrip(kind, { ts, values: make(prng(11), DAY) });
    const tsPerPoint = sizes.tsBytes / DAY;
    const valuesPerPoint = sizes.valueBytes / DAY;
    rows.push({
      kind,
      'ts B/pt': Number(tsPerPoint.toFixed(5)),
      'values B/pt': Number(valuesPerPoint.toFixed(3)),
      mode: sizes.mode === VALUES_MODE_SCALED ? 'scaled' : 'float',
    });
    assert.ok(tsPerPoint < 0.01, `${kind}: ${tsPerPoint} timestamp bytes per point`);
    assert.ok(valuesPerPoint < limits[kind]!, `${kind}: ${valuesPerPoint} value bytes per point`);
  }
  const jitter = prng(5);
  let t = T0;
  const jittered = Float64Array.from({ length: DAY }, () => (t += 1000 + Math.floor((jitter() - 0.5) * 20)));
  const jitteredSizes = roundTrip('jittered', { ts: jittered, values: new Float64Array(DAY) });
  rows.push({ kind: 'timestamps 1 s ± 10 ms jitter', 'ts B/pt': Number((jitteredSizes.tsBytes / DAY).toFixed(3)), 'values B/pt': 0, mode: '-' });
  assert.ok(jitteredSizes.tsBytes / DAY < 1.5);
  console.table(rows);
});

test('encoders reject input they cannot represent exactly', () => {
  const w = new ByteWriter();
  assert.throws(() => encodeTimestamps(Float64Array.of(2, 1), 2, w), /not an integer >= the previous one/);
  assert.throws(() => encodeTimestamps(Float64Array.of(1.5), 1, w), /not an integer in 0..2\^53-1/);
  assert.throws(() => encodeTimestamps(Float64Array.of(-1), 1, w), /not an integer/);
  assert.throws(() => encodeTimestamps(Float64Array.of(2 ** 53), 1, w), /not an integer/);
  assert.throws(() => encodeTimestamps(Float64Array.of(1, 2 ** 53), 2, w), /not an integer/);
  assert.throws(() => encodeValues(Float64Array.of(1), 2, w), /count 2 outside/);
});

test('decoders throw on truncated or corrupt columns', () => {
  const w = new ByteWriter();
  const ts = regularTimestamps(100, 997);
  ts[50]! += 3;
  encodeTimestamps(ts, 100, w);
  const tsBytes = w.bytes().slice();
  w.reset();
  encodeValues(industrial['full-precision floats']!(prng(1), 100), 100, w);
  const valueBytes = w.bytes().slice();
  for (const cut of [0, 1, tsBytes.length - 1]) {
    assert.throws(() => decodeTimestamps(new ByteReader(tsBytes.subarray(0, cut)), 100, new Float64Array(100)), /decodeTimestamps: read past end/);
  }
  for (const cut of [0, 1, valueBytes.length - 1]) {
    assert.throws(() => decodeValues(new ByteReader(valueBytes.subarray(0, cut)), 100, new Float64Array(100)), /decodeValues: read past end/);
  }
  // Asking for more points than were encoded runs off the end too.
  assert.throws(() => decodeTimestamps(new ByteReader(tsBytes), 101, new Float64Array(101)), /read past end/);
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x30)), 1, new Float64Array(1)), /unknown values header 0x30/);
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x10, 0x02, 0x00, 0x05)), 3, new Float64Array(3)), /zero run of 6 exceeds/);
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x20, 0x8f)), 3, new Float64Array(3)), /repeat of 16 exceeds/);
  const r = new ByteReader(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01));
  r.uvarint();
  assert.match(r.error ?? '', /varint longer than 8 bytes/);
});

test('ByteWriter grows from a tiny buffer and reuses it after reset', () => {
  const w = new ByteWriter(1);
  for (let i = 0; i < 1000; i++) w.uvarint(i * 1_000_003);
  const first = w.bytes().slice();
  w.reset();
  assert.equal(w.length, 0);
  for (let i = 0; i < 1000; i++) w.uvarint(i * 1_000_003);
  assert.deepEqual(w.bytes(), first);
  const r = new ByteReader(first);
  for (let i = 0; i < 1000; i++) assert.equal(r.uvarint(), i * 1_000_003);
  assert.equal(r.error, null);
});
