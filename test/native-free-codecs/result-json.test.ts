import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonPointWriter } from '../../native-free-codecs/result-json.js';

function seeded(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

test('points are written exactly as JSON.stringify writes them', () => {
  const rnd = seeded(7);
  const special = [0, -0, 1, -1, 0.1, 0.01, 0.05, 0.5, 1.25, -3.07, 99.99, 100, 1e-7, 1e21, 123456789.12, 0.1 + 0.2, 5e-324,
    1.7976931348623157e308, 2 ** 53, 2 ** 53 / 100, 4503599627370495.5, 12.345, -0.001, 1234567890123.45,
    0.0001, -0.0001, 0.00005, 1.0001, 1.001, 1.01, 1.1, 99.9999, 214748.3647, 214748.36475, 2147483647.9999, 2147483648.0001, 0.1234, 0.12345];
  const values: number[] = [...special];
  for (let i = 0; i < 20000; i++) {
    const kind = i % 6;
    if (kind === 0) values.push(Math.round((rnd() - 0.5) * 1e7) / 100);
    else if (kind === 4) values.push(Math.round((rnd() - 0.5) * 1e9) / 10000);
    else if (kind === 5) values.push(Math.round((rnd() - 0.5) * 2e4) / 10 ** Math.floor(rnd() * 7));
    else if (kind === 1) values.push((rnd() - 0.5) * 10 ** Math.floor(rnd() * 30 - 10));
    else if (kind === 2) values.push(Math.floor(rnd() * 1e6));
    else values.push(Math.round(rnd() * 1e4) / 10);
  }
  const ts = Float64Array.from(values, (_, i) => 1700000000000 + i * 1000);
  const vs = Float64Array.from(values);
  const w = new JsonPointWriter(16);
  w.key('TI-101 "quoted"');
  w.raw(0x5b);
  w.points(ts, vs, 0, 100, false);
  w.points(ts, vs, 100, vs.length, true);
  w.raw(0x5d);
  const text = `{${new TextDecoder().decode(w.bytes())}}`;
  const expected = JSON.stringify({ 'TI-101 "quoted"': values.map((v, i) => [ts[i], v]) });
  assert.equal(text, expected);
  const parsed = JSON.parse(text)['TI-101 "quoted"'] as number[][];
  parsed.forEach(([, v], i) => assert.ok(Object.is(v, values[i]) || (v === 0 && values[i] === 0), `value ${values[i]}`));
});

test('integers at every digit-count and 2^31 / 10^8 boundary are written like JSON', () => {
  const edges = [0, 9, 10, 99, 100, 12345678, 99999999, 100000000, 2147483647, 2147483648, 10000000000, 100000000099, 1768003200000, 9007199254740991];
  const w = new JsonPointWriter(8);
  for (const t of edges) {
    w.reset();
    w.pair(t, t % 1000 / 100);
    assert.equal(new TextDecoder().decode(w.bytes()), JSON.stringify([t, t % 1000 / 100]), String(t));
  }
});

test('one run of points crossing every timestamp boundary and the 2^31 whole-part limit', () => {
  // The leading digits of a timestamp are cached across a run; each change of them must show.
  const ts = Float64Array.from([0, 9, 99999999, 100000000, 2147483647, 2147483648, 9999999999, 10000000000, 1768099999999, 1768100000000, 1768100000001, 9007199254740991]);
  const values = [21474836.47, 2147483647.99, 2147483648.01, -2147483648.5, -2147483647.25, NaN, Infinity, -Infinity, -0, 0.1 + 0.2, 1e21, 42];
  const w = new JsonPointWriter(8);
  w.points(ts, Float64Array.from(values), 0, ts.length, false);
  const expected = JSON.stringify(values.map((v, i) => [ts[i], v])).slice(1, -1);
  assert.equal(new TextDecoder().decode(w.bytes()), expected);
  assert.match(expected, /\[2147483648,null\]/, 'NaN and the infinities are null, as in JSON.stringify');
});

test('every digit count of a timestamp and of a whole part, each side of the 10^4 and 10^8 store splits', () => {
  const integers: number[] = [];
  for (let power = 1; power <= 1e10; power *= 10) integers.push(power - 1, power);
  const ts = Float64Array.from(integers);
  const values = integers.map((n, i) => (i % 3 === 0 ? n : i % 3 === 1 ? n + 0.5 : -(n + 0.07)));
  const w = new JsonPointWriter(8);
  w.points(ts, Float64Array.from(values), 0, ts.length, true);
  assert.equal(new TextDecoder().decode(w.bytes()), `,${JSON.stringify(values.map((v, i) => [ts[i], v])).slice(1, -1)}`);
});

test('pair writes one [ts, value]', () => {
  const w = new JsonPointWriter(4);
  w.pair(0, -12.5);
  assert.equal(new TextDecoder().decode(w.bytes()), '[0,-12.5]');
});
