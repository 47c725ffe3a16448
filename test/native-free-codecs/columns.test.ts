import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lz4Compressor, lz4MaxCompressedLength } from '../../native-free-codecs/lz4-block.js';
import {
  ByteReader,
  ByteWriter,
  COLUMN_CODEC_VERSION,
  decodeTimestamps,
  decodeValues,
  encodeTimestamps,
  encodeValues,
  READABLE_COLUMN_CODEC_VERSIONS,
  VALUES_MODE_FLOAT,
  VALUES_MODE_SCALED,
  VALUES_MODE_SCALED_PACKED,
  VALUES_MODE_SCALED_PREDICTED,
  VALUES_MODE_SCALED_RANS,
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

/**
 * Encodes both columns into one block, decodes them back, asserts bit equality. scaledMode 0 is
 * the writers' choice; 1 or 3 forces that mode whenever the values scale.
 */
function roundTrip(name: string, s: Series, w = new ByteWriter(16), scaledMode = 0): Sizes {
  const count = s.ts.length;
  w.reset();
  encodeTimestamps(s.ts, count, w);
  const tsBytes = w.length;
  encodeValues(s.values, count, w, scaledMode);
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

test('codec version is 4; versions 1 to 4 are readable', () => {
  assert.equal(COLUMN_CODEC_VERSION, 4);
  assert.deepEqual(READABLE_COLUMN_CODEC_VERSIONS, [1, 2, 3, 4]);
});

/** The ways a scaled column can be written: the writers' choice, mode 1, mode 3, mode 4, mode 5. */
const SCALED_MODES = [0, VALUES_MODE_SCALED, VALUES_MODE_SCALED_PACKED, VALUES_MODE_SCALED_RANS, VALUES_MODE_SCALED_PREDICTED];

for (const [name, series] of Object.entries(adversarial())) {
  test(`round trip: ${name}`, () => {
    for (const mode of SCALED_MODES) roundTrip(`${name} (scaled mode ${mode})`, series, undefined, mode);
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
    for (const mode of SCALED_MODES) roundTrip(`seed ${seed} (scaled mode ${mode})`, { ts, values }, w, mode);
  }
});

const MODE_NAMES: Record<number, string> = { [VALUES_MODE_SCALED]: 'scaled', [VALUES_MODE_FLOAT]: 'float', [VALUES_MODE_SCALED_PACKED]: 'packed', [VALUES_MODE_SCALED_RANS]: 'rANS' };
/** Points per block in a sealed day file (workers/sealed-file.ts SEALED_BLOCK_POINTS). */
const SEALED_BLOCK_POINTS = 16_384;

/**
 * Bytes a sealed day file spends on one tag-day: blocks of 16,384 points, each the timestamps
 * and values columns, lz4-compressed as the storage worker does (its 4-byte length prefix
 * included). The 40-byte footer entry per block is not counted here.
 */
function sealedBlockBytes(ts: Float64Array, values: Float64Array): number {
  const w = new ByteWriter(64 * 1024);
  const lz4 = new Lz4Compressor();
  let total = 0;
  for (let from = 0; from < ts.length; from += SEALED_BLOCK_POINTS) {
    const n = Math.min(SEALED_BLOCK_POINTS, ts.length - from);
    w.reset();
    encodeTimestamps(ts.subarray(from, from + n), n, w);
    encodeValues(values.subarray(from, from + n), n, w);
    const columns = w.bytes();
    total += lz4.compress(columns, new Uint8Array(lz4MaxCompressedLength(columns.length)));
  }
  return total;
}

test('bytes per point for a day of 1 s industrial series (raw, and lz4 as sealed)', () => {
  const rows: Array<Record<string, number | string>> = [];
  const ts = regularTimestamps(DAY);
  // Limits on the value column (raw) and on what a sealed file stores (lz4 blocks).
  const limits: Record<string, number> = {
    'random walk, 2 decimals': 0.85,
    'stepping setpoint': 0.05,
    'on/off state': 0.05,
    'increasing counter': 0.5,
    'full-precision floats': 9,
  };
  const benchmarkKinds = ['random walk, 2 decimals', 'stepping setpoint', 'on/off state', 'increasing counter'];
  let benchmarkBytes = 0;
  for (const [kind, make] of Object.entries(industrial)) {
    const values = make(prng(11), DAY);
    const sizes = roundTrip(kind, { ts, values });
    const tsPerPoint = sizes.tsBytes / DAY;
    const valuesPerPoint = sizes.valueBytes / DAY;
    const sealed = sealedBlockBytes(ts, values);
    const sealedPerPoint = sealed / DAY;
    if (benchmarkKinds.includes(kind)) benchmarkBytes += sealed + Math.ceil(DAY / SEALED_BLOCK_POINTS) * 40;
    rows.push({
      kind,
      mode: MODE_NAMES[sizes.mode]!,
      'ts B/pt': Number(tsPerPoint.toFixed(5)),
      'values B/pt': Number(valuesPerPoint.toFixed(4)),
      'sealed (lz4) B/pt': Number(sealedPerPoint.toFixed(4)),
    });
    assert.ok(tsPerPoint < 0.01, `${kind}: ${tsPerPoint} timestamp bytes per point`);
    assert.ok(valuesPerPoint < limits[kind]!, `${kind}: ${valuesPerPoint} value bytes per point`);
    assert.ok(sealedPerPoint < limits[kind]!, `${kind}: ${sealedPerPoint} sealed bytes per point`);
  }
  // The benchmark data set: a quarter each of walks, setpoints, states and counters, with the
  // footer entries (40 bytes per block) counted.
  const benchmarkPerPoint = benchmarkBytes / (4 * DAY);
  rows.push({ kind: 'benchmark mix (1/4 each of the first four, + footer)', mode: '-', 'sealed (lz4) B/pt': Number(benchmarkPerPoint.toFixed(4)) });
  assert.ok(benchmarkPerPoint < 0.295, `benchmark mix: ${benchmarkPerPoint} sealed bytes per point`);
  const jitter = prng(5);
  let t = T0;
  const jittered = Float64Array.from({ length: DAY }, () => (t += 1000 + Math.floor((jitter() - 0.5) * 20)));
  const jitteredSizes = roundTrip('jittered', { ts: jittered, values: new Float64Array(DAY) });
  rows.push({ kind: 'timestamps 1 s ± 10 ms jitter', mode: '-', 'ts B/pt': Number((jitteredSizes.tsBytes / DAY).toFixed(3)), 'values B/pt': 0 });
  assert.ok(jitteredSizes.tsBytes / DAY < 1.5);
  console.table(rows);
});

// ---------------------------------------------------------------------------------------------
// Packed mode (VALUES_MODE_SCALED_PACKED, codec version 2).

/** A packed column read back by a BigInt reference decoder written from the COLUMNS.md text. */
interface PackedColumn {
  k: number;
  ints: bigint[];
  /** One entry per frame header: width, and for width 0 the number of frames it stands for. */
  frames: Array<{ width: number; min: bigint; frames: number }>;
}

function referencePacked(bytes: Uint8Array, count: number): PackedColumn {
  let pos = 0;
  const byte = () => {
    assert.ok(pos < bytes.length, 'reference decoder ran past the end');
    return bytes[pos++]!;
  };
  const uvarint = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = byte();
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (b < 0x80) return v;
    }
  };
  const svarint = () => {
    const z = uvarint();
    return z & 1n ? -(z >> 1n) - 1n : z >> 1n;
  };
  const header = byte();
  assert.equal(header >> 4, VALUES_MODE_SCALED_PACKED, 'packed mode header');
  const k = header & 0x0f;
  let n = svarint();
  const ints = [n];
  const frames: PackedColumn['frames'] = [];
  while (ints.length < count) {
    const width = byte();
    const min = svarint();
    if (width === 0) {
      const r = Number(uvarint()) + 1;
      frames.push({ width, min, frames: r });
      for (let i = 0; i < r * 128 && ints.length < count; i++) ints.push((n += min));
      continue;
    }
    assert.ok(width <= 53, `width ${width}`);
    const points = Math.min(128, count - ints.length);
    const length = Math.ceil((points * width) / 8);
    let field = 0n; // the frame's bytes as one little-endian integer
    for (let i = length - 1; i >= 0; i--) field = (field << 8n) | BigInt(bytes[pos + i]!);
    pos += length;
    frames.push({ width, min, frames: 1 });
    const mask = (1n << BigInt(width)) - 1n;
    for (let i = 0; i < points; i++) ints.push((n += min + ((field >> BigInt(i * width)) & mask)));
  }
  assert.equal(pos, bytes.length, 'reference decoder consumed the column');
  return { k, ints, frames };
}

/** Encodes, checks the mode, decodes both ways; returns the reference decoder's view. */
function packedRoundTrip(name: string, values: Float64Array, scaledMode = VALUES_MODE_SCALED_PACKED): PackedColumn {
  const count = values.length;
  const sizes = roundTrip(name, { ts: regularTimestamps(count), values }, undefined, scaledMode);
  assert.equal(sizes.mode, VALUES_MODE_SCALED_PACKED, `${name}: mode`);
  const w = new ByteWriter();
  encodeValues(values, count, w, scaledMode);
  const column = referencePacked(w.bytes(), count);
  const p = 10 ** column.k;
  column.ints.forEach((n, i) => {
    if (!Object.is(Number(n) / p, values[i])) assert.fail(`${name}: reference decoder value ${i} is ${Number(n) / p}, wrote ${values[i]}`);
  });
  return column;
}

/** Random integer in 0..m-1 for m up to 2^53, all bits random. */
function randomBelow(rnd: () => number, m: number): number {
  return (Math.floor(rnd() * 2 ** 21) * 2 ** 32 + Math.floor(rnd() * 2 ** 32)) % m;
}

/**
 * Integers whose deltas are uniform in -2^(w-1) .. 2^(w-1)-1 (the first frame holds both ends,
 * a span of exactly 2^w - 1, so it packs at width w). A delta d that would leave ±2^52 is
 * replaced by -1 - d, which stays in the range and in the span.
 */
function widthSeries(width: number, count: number, seed: number): Float64Array {
  const rnd = prng(seed);
  const half = 2 ** (width - 1);
  const out = new Float64Array(count);
  let n = 0;
  for (let i = 1; i < count; i++) {
    let d = i === 1 ? -half : i === 2 ? half - 1 : randomBelow(rnd, 2 * half) - half;
    if (Math.abs(n + d) > 2 ** 52) d = -1 - d;
    out[i] = n += d;
  }
  return out;
}

test('packed mode: every width 1..53 round-trips, full frames and a partial last frame', () => {
  for (let width = 1; width <= 53; width++) {
    const count = 1 + 3 * 128 + 57;
    const values = widthSeries(width, count, width);
    const column = packedRoundTrip(`width ${width}`, values);
    assert.equal(column.frames.reduce((sum, f) => sum + f.frames, 0), 4, `width ${width}: frames`);
    assert.equal(column.frames[0]!.width, width, `width ${width}: first frame`);
    assert.ok(column.frames.every((f) => f.width <= width), `width ${width}: no frame wider`);
    if (width >= 4) assert.equal(roundTrip(`width ${width}, auto`, { ts: regularTimestamps(count), values }).mode, VALUES_MODE_SCALED_PACKED);
  }
});

test('packed mode: deltas near ±2^52 and the 2^53 span limit', () => {
  const max = 2 ** 52;
  // Width 53: deltas -2^52 and 2^52 - 1 in one frame (and -2^52 + 1, -2^52 + 3, 2^52 - 1 again).
  const edge = Float64Array.of(max, 0, max - 1, 0, -max, -1, max - 2, 1, -max + 1, 0);
  let column = packedRoundTrip('deltas ±2^52', edge);
  assert.equal(column.frames[0]!.width, 53);
  // A full frame of deltas alternating -2^52 and 2^52 - 1: 64, 64 - 2^52, 63, 63 - 2^52, ..., 0.
  const alternating = Float64Array.from({ length: 129 }, (_, i) => 64 - Math.floor(i / 2) - (i % 2) * max);
  column = packedRoundTrip('deltas alternating -2^52, 2^52 - 1', alternating);
  assert.deepEqual(column.frames.map((f) => f.width), [53]);
  // A span of 2^53 (deltas -2^52 and +2^52) cannot be packed exactly: mode 1 instead.
  const span = Float64Array.of(0, -max, 0, 5);
  for (const mode of SCALED_MODES) assert.equal(roundTrip('span 2^53', { ts: regularTimestamps(4), values: span }, undefined, mode).mode, VALUES_MODE_SCALED);
  const wide = Float64Array.of(max, -max, max, -max, max);
  for (const mode of SCALED_MODES) assert.equal(roundTrip('deltas ±2^53', { ts: regularTimestamps(5), values: wide }, undefined, mode).mode, VALUES_MODE_SCALED);
  // Widths 31, 32, 33 around the 32-bit split, with negative deltas.
  for (const width of [31, 32, 33]) {
    const values = widthSeries(width, 300, 100 + width);
    assert.equal(packedRoundTrip(`width ${width} with negative deltas`, values).frames[0]!.width, width);
  }
});

test('packed mode: every count around the frame boundaries', () => {
  const walk = industrial['random walk, 2 decimals']!(prng(21), 16_385 + 130);
  for (const count of [1, 2, 3, 64, 127, 128, 129, 130, 255, 256, 257, 258, 1000, 16_384, 16_385, 16_386]) {
    const values = walk.subarray(0, count).slice();
    const column = packedRoundTrip(`walk of ${count}`, values);
    assert.ok(column.k <= 2);
    const frames = column.frames.reduce((sum, f) => sum + f.frames, 0);
    assert.equal(frames, Math.ceil((count - 1) / 128), `walk of ${count}: frames`);
  }
});

test('packed mode: negative decimals, constant frames and runs of them, mixed', () => {
  const rnd = prng(33);
  const values: number[] = [];
  let n = -123_456; // k = 3
  const push = (count: number, step: () => number) => {
    for (let i = 0; i < count; i++) values.push((n += step()) / 1000);
  };
  push(1, () => 0);
  push(300, () => Math.floor(rnd() * 41) - 20); // walk
  push(128 * 5, () => 0); // flat: one run of frames (depending on alignment, 4 or 5 of them)
  push(128 * 3, () => -7); // falling at a constant rate
  push(700, () => Math.floor(rnd() * 3) - 1); // noise of ±1
  push(2, () => 1_000_000_007); // a jump
  push(128 * 40, () => 0); // long flat tail, ends in a partial frame
  const column = packedRoundTrip('mixed', Float64Array.from(values), 0);
  assert.equal(column.k, 3);
  const constant = column.frames.filter((f) => f.width === 0);
  assert.ok(constant.some((f) => f.frames >= 4 && f.min === 0n), 'flat run');
  assert.ok(constant.some((f) => f.min === -7n), 'constant slope');
  assert.ok(column.frames.at(-1)!.width === 0 && column.frames.at(-1)!.frames >= 39, 'flat tail');
  // Counters: a constant increment is one frame header for the whole column.
  const counter = Float64Array.from({ length: 5000 }, (_, i) => 2 ** 52 - 5 * 5000 + 5 * i);
  assert.deepEqual(packedRoundTrip('counter +5', counter, 0).frames, [{ width: 0, min: 5n, frames: 40 }]);
});

test('automatic choice: rANS for dense series, mode 1 where it is shorter', () => {
  const modeOf = (values: Float64Array) => roundTrip('choice', { ts: regularTimestamps(values.length), values }).mode;
  // Deltas uniform over 61 values: 5.93 bits each against 6 plus frame headers when packed;
  // over 8 values 3 bits either way, but no frame headers.
  assert.equal(modeOf(industrial['random walk, 2 decimals']!(prng(1), 16_384)), VALUES_MODE_SCALED_RANS);
  assert.equal(modeOf(industrial['increasing counter']!(prng(1), 16_384)), VALUES_MODE_SCALED_RANS);
  // Peaked deltas (a sensor's noise) and uniform ones over 51 values (log2 51 = 5.67 of 6 bits).
  const rnd = prng(2);
  let x = 200;
  const noisy = Float64Array.from({ length: 16_384 }, () => (x = Math.round((x + (rnd() + rnd() + rnd() + rnd() - 2) * 0.3) * 100) / 100));
  assert.equal(modeOf(noisy), VALUES_MODE_SCALED_RANS);
  let y = 300;
  const walk51 = Float64Array.from({ length: 16_384 }, () => (y = Math.round((y + (Math.floor(rnd() * 51) - 25) / 100) * 100) / 100));
  assert.equal(modeOf(walk51), VALUES_MODE_SCALED_RANS);
  // Mostly-zero deltas: a setpoint's 18 steps of many sizes are cheapest as mode 1's zero runs
  // (81 bytes; a table for its wide alphabet costs more); a state's 55 flips of ±1 cost 201
  // bytes as runs but 83 as rANS, where a standstill takes a fraction of a bit.
  assert.equal(modeOf(industrial['stepping setpoint']!(prng(1), 16_384)), VALUES_MODE_SCALED);
  assert.equal(modeOf(industrial['on/off state']!(prng(1), 16_384)), VALUES_MODE_SCALED_RANS);
  assert.equal(modeOf(industrial['full-precision floats']!(prng(1), 16_384)), VALUES_MODE_FLOAT);
  // Deltas spanning 1024 values or more are beyond one rANS table: packed mode then.
  const wide = Float64Array.from({ length: 5000 }, (_, i) => (i * 7919) % 3001);
  assert.equal(modeOf(wide), VALUES_MODE_SCALED_PACKED);
  // The chosen encoding is the shortest of the three scaled modes.
  for (const [kind, make] of Object.entries(industrial)) {
    for (const count of [2, 100, 129, 5000]) {
      const values = make(prng(count), count);
      const length = (mode: number) => {
        const w = new ByteWriter();
        encodeValues(values, count, w, mode);
        return w.length;
      };
      const best = Math.min(length(VALUES_MODE_SCALED), length(VALUES_MODE_SCALED_PACKED), length(VALUES_MODE_SCALED_RANS));
      // Mode 5 is tried with the predictor its entropy ranks first, and only when that beats the deltas'.
      const auto = length(0);
      assert.ok(auto === best || (auto < best && auto === length(VALUES_MODE_SCALED_PREDICTED)), `${kind}, ${count}: ${auto} bytes, best of modes 1, 3, 4 ${best}`);
    }
  }
  assert.throws(() => encodeValues(Float64Array.of(1), 1, new ByteWriter(), 2), /scaledMode 2 is not/);
});

test('COLUMNS.md example bytes: rANS mode', () => {
  // [5, 6, 6, 7] at k = 0: deltas 1, 0, 1; min 0, so symbols 1, 0, 1 over an alphabet of 2,
  // counts 1 and 2 -> frequencies 1365 and 2731 (of 4096).
  const w = new ByteWriter();
  encodeValues(Float64Array.of(5, 6, 6, 7), 4, w, VALUES_MODE_SCALED_RANS);
  const bytes = [...w.bytes()];
  // 0x40 header; svarint 5 = 0x0a; svarint min 0; uvarint size - 1 = 1; 1365 = 0xd5 0x0a;
  // 2731 = 0xab 0x15; then the stream length and the stream (4 state bytes, nothing renormalised).
  assert.deepEqual(bytes.slice(0, 9), [0x40, 0x0a, 0x00, 0x01, 0xd5, 0x0a, 0xab, 0x15, 0x04]);
  assert.equal(bytes.length, 13);
  const out = new Float64Array(4);
  decodeValues(new ByteReader(w.bytes()), 4, out);
  assert.deepEqual([...out], [5, 6, 6, 7]);
});

test('rANS mode: every alphabet size up to the 1024 limit, skewed and flat, round-trips', () => {
  for (const size of [1, 2, 3, 17, 255, 256, 1023, 1024]) {
    for (const skew of [1, 4]) {
      const rnd = prng(size * skew);
      // Deltas -3 .. size - 4, the extremes placed once so the alphabet is exactly `size`.
      const values = new Float64Array(20_000);
      for (let i = 1; i < values.length; i++) {
        const delta = i === 1 ? size - 4 : i === 2 ? -3 : Math.floor(rnd() ** skew * size) - 3;
        values[i] = values[i - 1]! + delta;
      }
      const { mode } = roundTrip(`alphabet ${size}, skew ${skew}`, { ts: regularTimestamps(values.length), values }, undefined, VALUES_MODE_SCALED_RANS);
      assert.equal(mode, VALUES_MODE_SCALED_RANS, `alphabet ${size}`);
    }
  }
});

test('rANS mode: decoders throw on truncated or corrupt columns', () => {
  const values = industrial['random walk, 2 decimals']!(prng(4), 3000);
  const w = new ByteWriter();
  encodeValues(values, 3000, w, VALUES_MODE_SCALED_RANS);
  const bytes = w.bytes().slice();
  assert.equal(bytes[0]! >> 4, VALUES_MODE_SCALED_RANS);
  for (const cut of [0, 1, 3, 10, bytes.length - 1]) {
    assert.throws(() => decodeValues(new ByteReader(bytes.subarray(0, cut)), 3000, new Float64Array(3000)), /decodeValues: read past end/, `cut at ${cut}`);
  }
  // Every flipped byte of the stream is either caught or decodes to other points, never hangs.
  const streamStart = bytes.length - 200;
  let caught = 0;
  for (let i = streamStart; i < bytes.length; i++) {
    const bad = bytes.slice();
    bad[i]! ^= 0x5a;
    try {
      decodeValues(new ByteReader(bad), 3000, new Float64Array(3000));
    } catch (err) {
      assert.match((err as Error).message, /decodeValues: rANS/);
      caught++;
    }
  }
  assert.ok(caught > 150, `${caught} of 200 corrupted streams detected`);
  // header, n0 = 0, min 0, alphabet 2 with frequencies 1 + 1 (not 4096)
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x40, 0x00, 0x00, 0x01, 0x01, 0x01, 0x04, 0, 0, 0x80, 0)), 3, new Float64Array(3)), /rANS frequencies sum to 2, not 4096/);
  // an alphabet of 1025 symbols
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x40, 0x00, 0x00, 0x80, 0x08)), 3, new Float64Array(3)), /alphabet of 1025 symbols above 1024/);
  // Asking for more points than were written: the stream runs out or does not end in its first state.
  assert.throws(() => decodeValues(new ByteReader(bytes), 3001, new Float64Array(3001)), /decodeValues: rANS/);
});

test('COLUMNS.md example bytes: packed mode', () => {
  // [10.5, 10.75, 10.5, 11, 11] at k = 2: n = 1050, deltas 25, -25, 50, 0; min -25, so the
  // packed fields are 50, 0, 75, 25 at width 7 (75 < 128).
  const w = new ByteWriter();
  encodeValues(Float64Array.of(10.5, 10.75, 10.5, 11, 11), 5, w, VALUES_MODE_SCALED_PACKED);
  // 0x32 header; svarint 1050 = 0xb4 0x10; width 7; svarint -25 = 0x31; 28 bits in 4 bytes:
  // 50 | 0 << 7 | 75 << 14 | 25 << 21 = 0x032d_c032, little-endian.
  assert.deepEqual([...w.bytes()], [0x32, 0xb4, 0x10, 0x07, 0x31, 0x32, 0xc0, 0x32, 0x03]);
  const out = new Float64Array(5);
  decodeValues(new ByteReader(w.bytes()), 5, out);
  assert.deepEqual([...out], [10.5, 10.75, 10.5, 11, 11]);
});

// Columns written by codec version 1 (this file's encoder before version 2), kept as bytes:
// version 1 files on disk must decode to the same values forever.
const VERSION_1_COLUMNS: Array<{ name: string; values: number[]; bytes: number[] }> = [
  {
    name: 'scaled, k = 2, zero runs, negative and large deltas',
    values: [182.5, 182.5, 182.5, 182.51, 182.49, -3.07, 1000000.25, 1000000.25, 1000000.25, 0, -0.01],
    bytes: [0x12, 0x94, 0x9d, 0x02, 0x00, 0x01, 0x02, 0x03, 0xf7, 0xa1, 0x02, 0x98, 0x89, 0xaf, 0x5f, 0x00, 0x01, 0xb1, 0x84, 0xaf, 0x5f, 0x01],
  },
  {
    name: 'scaled, k = 0, ±2^52',
    values: [2 ** 52, -(2 ** 52), 2 ** 52, 0, 7, 7, 7, 7, 12, 5],
    bytes: [
      0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
      0x80, 0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0e, 0x00, 0x02, 0x0a, 0x0d,
    ],
  },
  {
    name: 'float',
    values: [0.1 + 0.2, NaN, -0, 1 / 3, 1 / 3, Infinity],
    bytes: [
      0x20, 0x00, 0x34, 0x33, 0x33, 0x33, 0x33, 0x33, 0xd3, 0x3f, 0x00, 0x34, 0x33, 0x33, 0x33, 0x33, 0x33, 0x2b, 0x40, 0x06, 0xf8, 0xff, 0x00,
      0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xd5, 0xbf, 0x80, 0x00, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x25, 0x40,
    ],
  },
];

test('codec version 1 columns still decode to the same values', () => {
  for (const { name, values, bytes } of VERSION_1_COLUMNS) {
    const r = new ByteReader(Uint8Array.from(bytes));
    const out = new Float64Array(values.length);
    decodeValues(r, values.length, out);
    assert.equal(r.remaining, 0, name);
    values.forEach((v, i) => assert.ok(Object.is(out[i], v), `${name}: value ${i} is ${out[i]}, was ${v}`));
    // Modes 1 and 2 are unchanged in version 2: forcing mode 1 writes the same bytes.
    const w = new ByteWriter();
    encodeValues(Float64Array.from(values), values.length, w, VALUES_MODE_SCALED);
    assert.deepEqual([...w.bytes()], bytes, `${name}: re-encoded`);
  }
  // A whole version 1 block: 5 timestamps (12 bytes), then values [20.5, 20.5, 20.75, 20.25, 19].
  const block = Uint8Array.of(
    0x80, 0xa8, 0xe2, 0x88, 0xfd, 0x31, 0xd0, 0x0f, 0x00, 0x01, 0xe8, 0x07, 0x12, 0x84, 0x20, 0x00, 0x00, 0x32, 0x63, 0xf9, 0x01,
  );
  const r = new ByteReader(block);
  const ts = new Float64Array(5);
  const values = new Float64Array(5);
  decodeTimestamps(r, 5, ts);
  decodeValues(r, 5, values);
  assert.equal(r.remaining, 0);
  assert.deepEqual([...ts], [1717200000000, 1717200001000, 1717200002000, 1717200003000, 1717200004500]);
  assert.deepEqual([...values], [20.5, 20.5, 20.75, 20.25, 19]);
});

test('packed mode: decoders throw on truncated or corrupt columns', () => {
  const values = industrial['random walk, 2 decimals']!(prng(4), 300);
  const w = new ByteWriter();
  encodeValues(values, 300, w, VALUES_MODE_SCALED_PACKED);
  const bytes = w.bytes().slice();
  assert.equal(bytes[0]! >> 4, VALUES_MODE_SCALED_PACKED);
  for (const cut of [0, 1, 3, 4, 5, 60, bytes.length - 1]) {
    assert.throws(() => decodeValues(new ByteReader(bytes.subarray(0, cut)), 300, new Float64Array(300)), /decodeValues: read past end/, `cut at ${cut}`);
  }
  // Asking for more points than were written runs off the end once the last frame's padding
  // bits (at most 7) cannot hold them; the point count itself comes from the block's header.
  assert.throws(() => decodeValues(new ByteReader(bytes), 310, new Float64Array(310)), /read past end/);
  // header, n0 = 0, width 54, min 0
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x30, 0x00, 54, 0x00)), 2, new Float64Array(2)), /frame width 54 above 53/);
  // a run of 3 constant frames where 2 are left (130 values = 129 deltas)
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x30, 0x00, 0x00, 0x02, 0x02)), 130, new Float64Array(130)), /run of 3 constant frames exceeds the 2 frames left/);
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
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x60)), 1, new Float64Array(1)), /unknown values header 0x60/);
  assert.throws(() => decodeValues(new ByteReader(Uint8Array.of(0x3a, 0x00)), 1, new Float64Array(1)), /unknown values header 0x3a/);
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
