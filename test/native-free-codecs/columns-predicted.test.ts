// Value mode 5 (codec version 4): rANS-coded residuals of a moving mean (COLUMNS.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ByteReader, ByteWriter, decodeValues, encodeValues, VALUES_MODE_SCALED_PREDICTED, VALUES_MODE_SCALED_RANS } from '../../native-free-codecs/columns.js';
import { predictionResiduals, undoPrediction } from '../../native-free-codecs/column-predict.js';
import { prng } from '../support/prng.js';

/** A slowly drifting level plus Gaussian noise of `noise`, quantised to `decimals` (what plants send). */
function noisyAnalog(seed: number, count: number, noise = 0.0004, decimals = 4, level = 42.1234): Float64Array {
  const rnd = prng(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const q = 10 ** decimals;
  let x = level;
  return Float64Array.from({ length: count }, () => {
    x += gauss() * noise * 0.2;
    return Math.round((x + gauss() * noise) * q) / q;
  });
}

function encode(values: Float64Array, mode = 0): Uint8Array {
  const w = new ByteWriter(16);
  encodeValues(values, values.length, w, mode);
  return w.bytes().slice();
}

function decode(bytes: Uint8Array, count: number): Float64Array {
  const r = new ByteReader(bytes);
  const out = new Float64Array(count);
  decodeValues(r, count, out);
  assert.equal(r.remaining, 0, 'whole column consumed');
  return out;
}

function assertSame(got: Float64Array, want: Float64Array, what: string): void {
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) assert.fail(`${what}: value ${i} is ${got[i]}, wrote ${want[i]}`);
}

test('noisy 4-decimal values: the writers pick mode 5, smaller than the deltas of mode 4', () => {
  const values = noisyAnalog(1, 16_384);
  const auto = encode(values);
  const deltas = encode(values, VALUES_MODE_SCALED_RANS);
  assert.equal(auto[0], (VALUES_MODE_SCALED_PREDICTED << 4) | 4);
  assert.ok(auto.length < deltas.length * 0.95, `mode 5 ${auto.length} bytes, mode 4 ${deltas.length}`);
  assertSame(decode(auto, values.length), values, 'noisy');
});

test('a pure random walk keeps mode 4: its deltas are already independent', () => {
  const rnd = prng(2);
  let x = 200;
  const walk = Float64Array.from({ length: 16_384 }, () => (x = Math.round((x + (rnd() + rnd() + rnd() + rnd() - 2) * 0.3) * 100) / 100));
  assert.equal(encode(walk)[0]! >> 4, VALUES_MODE_SCALED_RANS);
});

test('mode 5 round-trips exactly: every shift, short columns, constants, steps, counters with resets, -0 neighbours', () => {
  const rnd = prng(3);
  const cases: Record<string, Float64Array> = {
    'two values': Float64Array.of(1.5, -2.25),
    'three values': Float64Array.of(0, 0.0001, -0.0001),
    constant: new Float64Array(1000).fill(17.125),
    'constant zero': new Float64Array(300),
    steps: Float64Array.from({ length: 5000 }, (_, i) => Math.floor(i / 700) * 2.5 - 3),
    'counter with resets': (() => {
      let c = 0;
      return Float64Array.from({ length: 5000 }, () => (c = rnd() < 0.002 ? 0 : c + Math.floor(rnd() * 9)));
    })(),
    'negative noisy': noisyAnalog(4, 3000, 0.001, 4, -7.5),
    'large noisy (around 1e9 at 4 decimals, n near 2^43)': noisyAnalog(5, 3000, 0.0003, 4, 987_654_321.1234),
    'integers at the 2^48 limit': Float64Array.of(2 ** 48, 2 ** 48 - 1, 2 ** 48, 2 ** 48 - 3, -(2 ** 48), -(2 ** 48) + 5),
    'small decimals (scale 9)': Float64Array.from({ length: 500 }, () => Math.round(rnd() * 300) / 1e9),
  };
  for (const [name, values] of Object.entries(cases)) {
    for (const mode of [0, VALUES_MODE_SCALED_PREDICTED]) {
      const bytes = encode(values, mode);
      assertSame(decode(bytes, values.length), values, `${name}, mode ${mode}`);
    }
    // A reset or a jump of 2^49 makes residuals span more than one rANS table's 1024 symbols.
    const wide = name === 'counter with resets' || name === 'integers at the 2^48 limit';
    const forced = encode(values, VALUES_MODE_SCALED_PREDICTED);
    assert.equal(forced[0]! >> 4 === VALUES_MODE_SCALED_PREDICTED, !wide, `${name}: written in mode 5 unless its residuals span 1024 or more`);
  }
  // Beyond what mode 5 can hold, forcing it falls back to an exact older mode.
  for (const values of [Float64Array.of(2 ** 48 + 1, 0, 1), Float64Array.of(3), Float64Array.of(NaN, 1, 2), Float64Array.of(1, -0, 1), Float64Array.of(Infinity, 0, -Infinity)]) {
    const bytes = encode(values, VALUES_MODE_SCALED_PREDICTED);
    assert.notEqual(bytes[0]! >> 4, VALUES_MODE_SCALED_PREDICTED);
    assertSame(decode(bytes, values.length), values, `fallback for ${[...values].join(', ')}`);
  }
});

test('property: random noisy, stepped and mixed columns round-trip in mode 5 and by choice', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rnd = prng(seed * 31);
    const count = 2 + Math.floor(rnd() ** 2 * 6000);
    const decimals = Math.floor(rnd() * 7);
    const values = noisyAnalog(seed, count, rnd() * 10 ** (2 - decimals), decimals, (rnd() - 0.5) * 10 ** Math.floor(rnd() * 8));
    // Now and then a step or an outlier.
    if (seed % 3 === 0) for (let i = Math.floor(rnd() * count); i < count; i++) values[i] = Math.round((values[i]! + 100) * 10 ** decimals) / 10 ** decimals;
    if (seed % 5 === 0) values[Math.floor(rnd() * count)] = Math.round(rnd() * 1e6) / 10 ** decimals;
    for (const mode of [0, VALUES_MODE_SCALED_PREDICTED]) assertSame(decode(encode(values, mode), count), values, `seed ${seed}, mode ${mode}`);
  }
});

test('predictionResiduals and undoPrediction are inverses for every shift', () => {
  const rnd = prng(9);
  const ints = Float64Array.from({ length: 777 }, () => Math.floor((rnd() - 0.5) * 2 ** 49));
  const residuals = new Float64Array(776);
  for (let shift = 1; shift <= 4; shift++) {
    predictionResiduals(ints, 777, shift, residuals);
    let min = Infinity;
    for (const r of residuals) min = Math.min(min, r);
    // undoPrediction takes residuals as min + symbol; symbols fit 16 bits only for small spans,
    // so check the arithmetic on a slice whose residuals are small: a constant run.
    const flat = new Float64Array(40).fill(ints[0]!);
    const flatResiduals = new Float64Array(39);
    predictionResiduals(flat, 40, shift, flatResiduals);
    assert.ok(flatResiduals.every((r) => r === 0));
    const back = new Float64Array(40);
    const scaled = new Float64Array(40);
    assert.equal(undoPrediction(flat[0]!, 0, new Uint16Array(39), 40, shift, back, 1000, scaled), true);
    assert.deepEqual([...back], [...flat]);
    assert.deepEqual([...scaled], [...flat].map((v) => v / 1000));
    assert.ok(Number.isFinite(min));
  }
  // Values pushed beyond ±2^48 by corrupt residuals are refused.
  assert.equal(undoPrediction(2 ** 48, 5, new Uint16Array(3), 4, 1, new Float64Array(4), 1, new Float64Array(4)), false);
});

test('COLUMNS.md example bytes: mode 5', () => {
  // [10, 12, 11, 13] at k = 0, shift 1 (mean of 2; before the first value the history is 10, 10):
  // predictions 10, 11, 11, residuals 2, 0, 2; min 0, symbols 2, 0, 2 over an alphabet of 3,
  // counts 1, 0, 2 -> frequencies 1365, 0, 2731.
  const values = Float64Array.of(10, 12, 11, 13);
  const w = new ByteWriter();
  encodeValues(values, 4, w, VALUES_MODE_SCALED_PREDICTED);
  const bytes = [...w.bytes()];
  // 0x50 header, shift 1, svarint 10 = 0x14, svarint min 0, uvarint size - 1 = 2, 1365 = 0xd5 0x0a, 0, 2731 = 0xab 0x15, stream length 4.
  assert.deepEqual(bytes.slice(0, 11), [0x50, 0x01, 0x14, 0x00, 0x02, 0xd5, 0x0a, 0x00, 0xab, 0x15, 0x04]);
  assert.equal(bytes.length, 15);
  assertSame(decode(w.bytes(), 4), values, 'example');
});

test('mode 5: decoders throw on truncated or corrupt columns', () => {
  const values = noisyAnalog(6, 3000);
  const bytes = encode(values, VALUES_MODE_SCALED_PREDICTED);
  for (const cut of [0, 1, 2, 4, 12, bytes.length - 1]) {
    assert.throws(() => decode(bytes.subarray(0, cut), 3000), /decodeValues: read past end/, `cut at ${cut}`);
  }
  for (const shift of [0, 5, 255]) {
    const bad = bytes.slice();
    bad[1] = shift;
    assert.throws(() => decode(bad, 3000), new RegExp(`predictor shift ${shift} outside 1..4`));
  }
  let caught = 0;
  for (let i = bytes.length - 200; i < bytes.length; i++) {
    const bad = bytes.slice();
    bad[i]! ^= 0x5a;
    try {
      decodeValues(new ByteReader(bad), 3000, new Float64Array(3000));
    } catch (err) {
      assert.match((err as Error).message, /decodeValues: (rANS|predicted)/);
      caught++;
    }
  }
  assert.ok(caught > 150, `${caught} of 200 corrupted streams detected`);
  // n0 = 2^50 (beyond what mode 5 writes), two residuals of 0: refused, not decoded inexactly.
  const w = new ByteWriter();
  w.u8(0x51);
  w.u8(1);
  w.svarint(2 ** 50);
  const tail = encode(Float64Array.of(0, 0, 0), VALUES_MODE_SCALED_PREDICTED).subarray(3);
  w.raw(tail);
  assert.throws(() => decode(w.bytes(), 3), /predicted values beyond ±2\^48/);
});
