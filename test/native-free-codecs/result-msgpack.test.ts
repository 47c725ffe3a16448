import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Unpackr, unpack } from 'msgpackr';
import { JsonPointWriter } from '../../native-free-codecs/result-json.js';
import { MsgpackPointWriter } from '../../native-free-codecs/result-msgpack.js';

// Timestamps reach 2^53-1, so uint64 must come back as numbers (msgpackr's default is BigInt).
const unpackr = new Unpackr({ int64AsType: 'number', mapsAsObjects: true });
const decode = (bytes: Uint8Array): unknown => unpackr.unpack(bytes);

function seeded(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

/** JSON prints -0 as 0; msgpack float64 keeps the sign. Everything else must match exactly. */
function withoutNegativeZero(value: unknown): unknown {
  if (value === 0) return 0;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNegativeZero(v)]));
  }
  return value;
}

const EDGE_TIMESTAMPS = [0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 1700000000000, 2 ** 53 - 2, 2 ** 53 - 1];
const EDGE_VALUES = [0, -0, 1, -1, 0.1 + 0.2, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308, 2 ** 53, 1e21, 1e-7, 71.25,
  NaN, Infinity, -Infinity];

interface Series {
  name: string;
  ts: Float64Array;
  values: Float64Array;
}

function randomSeries(rnd: () => number, name: string, count: number): Series {
  const ts = new Float64Array(count);
  const values = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const kind = i % 5;
    if (i < EDGE_TIMESTAMPS.length) ts[i] = EDGE_TIMESTAMPS[i]!;
    else if (kind === 0) ts[i] = Math.floor(rnd() * 2 ** 53);
    else if (kind === 1) ts[i] = Math.floor(rnd() * 2 ** 33); // straddles 2^32
    else if (kind === 2) ts[i] = Math.floor(rnd() * 70000); // uint8/uint16/uint32 boundaries
    else ts[i] = 1700000000000 + i * 1000;
    if (i < EDGE_VALUES.length) values[i] = EDGE_VALUES[i]!;
    else if (kind === 0) values[i] = Math.round((rnd() - 0.5) * 1e7) / 100;
    else if (kind === 1) values[i] = (rnd() - 0.5) * 10 ** Math.floor(rnd() * 60 - 30);
    else if (kind === 2) values[i] = Math.floor(rnd() * 1e6);
    else values[i] = rnd();
  }
  return { name, ts, values };
}

/** The same map written by both writers, in chunks, the way a shard streams a tag. */
function writeBoth(series: Series[], chunk: number): { json: unknown; msgpack: unknown; bytes: Uint8Array } {
  const j = new JsonPointWriter(16);
  const m = new MsgpackPointWriter(16);
  j.raw(0x7b);
  m.mapHeader(series.length);
  series.forEach((s, index) => {
    if (index > 0) j.raw(0x2c);
    j.key(s.name);
    j.raw(0x5b);
    m.str(s.name);
    m.arrayHeader(s.ts.length);
    for (let from = 0; from < s.ts.length; from += chunk) {
      const to = Math.min(s.ts.length, from + chunk);
      j.points(s.ts, s.values, from, to, from > 0);
      m.points(s.ts, s.values, from, to);
    }
    j.raw(0x5d);
  });
  j.raw(0x7d);
  const bytes = m.bytes().slice();
  return { json: JSON.parse(new TextDecoder().decode(j.bytes())), msgpack: decode(bytes), bytes };
}

test('a random point map decodes to exactly what JSON.parse gives for the JSON writer', () => {
  const rnd = seeded(11);
  const names = ['TI-101', 'PI 202 "quoted"', 'Temperatur Kessel Süd', '温度センサー', '🔥 flame 🔥', 'x'.repeat(31), 'y'.repeat(32),
    'z'.repeat(255), 'w'.repeat(256), 'v'.repeat(70000), '', '\u0000\n\t', '123'];
  for (let i = names.length; i < 40; i++) names.push(`tag-${i}-é`); // 40 tags: map16
  const sizes = [0, 1, 15, 16, 17, 300, 65535, 65536, 70001]; // fixarray, array16, array32
  const series = names.map((name, i) => randomSeries(rnd, name, sizes[i % sizes.length]!));
  const { json, msgpack } = writeBoth(series, 4096);
  assert.deepEqual(withoutNegativeZero(msgpack), json);
  // Sanity: the JSON side really holds the edge cases compared above.
  const first = (json as Record<string, Array<[number, number | null]>>)['123']!;
  assert.deepEqual(first.slice(0, 3), [[0, 0], [1, 0], [127, 1]]);
});

test('many seeds, small maps: every header and number encoding agrees with JSON', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rnd = seeded(seed);
    const tagCount = Math.floor(rnd() * 20);
    const series = Array.from({ length: tagCount }, (_, i) => randomSeries(rnd, `t${seed}-${i}-${'ü'.repeat(Math.floor(rnd() * 40))}`, Math.floor(rnd() * 40)));
    const { json, msgpack } = writeBoth(series, 1 + Math.floor(rnd() * 7));
    assert.deepEqual(withoutNegativeZero(msgpack), json, `seed ${seed}`);
  }
});

test('last values: {tag: [ts, value] | null} like the JSON lastlist', () => {
  const entries: Array<[string, [number, number] | null]> = [
    ['A', [2 ** 53 - 1, 1.5]],
    ['B', null],
    ['Ω', [2 ** 32, -0.1]],
    ['C', [5, NaN]],
    ['D', [300, 0]],
  ];
  const m = new MsgpackPointWriter(1);
  const j = new JsonPointWriter(1);
  m.mapHeader(entries.length);
  j.raw(0x7b);
  entries.forEach(([name, last], i) => {
    m.str(name);
    if (i > 0) j.raw(0x2c);
    j.key(name);
    if (last) {
      m.pair(last[0], last[1]);
      j.pair(last[0], last[1]);
    } else {
      m.nil();
      j.ascii('null');
    }
  });
  j.raw(0x7d);
  const json = JSON.parse(new TextDecoder().decode(j.bytes()));
  assert.deepEqual(decode(m.bytes()), json);
  assert.deepEqual(json, { A: [2 ** 53 - 1, 1.5], B: null, Ω: [2 ** 32, -0.1], C: [5, null], D: [300, 0] });
});

test('timestamps below 2^32 take the smallest unsigned encoding, larger ones float64; values are always float64', () => {
  const encodings: Array<[number, number[]]> = [
    [0, [0x00]],
    [127, [0x7f]],
    [128, [0xcc, 0x80]],
    [255, [0xcc, 0xff]],
    [256, [0xcd, 0x01, 0x00]],
    [65535, [0xcd, 0xff, 0xff]],
    [65536, [0xce, 0x00, 0x01, 0x00, 0x00]],
    [2 ** 32 - 1, [0xce, 0xff, 0xff, 0xff, 0xff]],
    [2 ** 32, [0xcb, 0x41, 0xf0, 0, 0, 0, 0, 0, 0]],
    [2 ** 53 - 1, [0xcb, 0x43, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]],
  ];
  const w = new MsgpackPointWriter(4);
  for (const [ts, head] of encodings) {
    w.reset();
    w.pair(ts, 1);
    assert.deepEqual([...w.bytes()], [0x92, ...head, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0], `ts ${ts}`);
  }
  w.reset();
  w.pair(1, 2); // a small integer value is still float64, so its type never depends on its size
  assert.deepEqual([...w.bytes()], [0x92, 0x01, 0xcb, 0x40, 0, 0, 0, 0, 0, 0, 0]);
  w.reset();
  w.pair(1, NaN);
  assert.deepEqual([...w.bytes()], [0x92, 0x01, 0xc0]);
  // msgpackr's default decoder gives plain numbers for epoch-ms timestamps (no BigInt).
  w.reset();
  w.pair(1768003200000, 1);
  assert.deepEqual(unpack(w.bytes()), [1768003200000, 1]);
});

test('map, array and string headers switch size at the msgpack limits', () => {
  const w = new MsgpackPointWriter();
  const headers: Array<[(n: number) => void, number, number[]]> = [
    [(n) => w.mapHeader(n), 15, [0x8f]],
    [(n) => w.mapHeader(n), 16, [0xde, 0x00, 0x10]],
    [(n) => w.mapHeader(n), 65535, [0xde, 0xff, 0xff]],
    [(n) => w.mapHeader(n), 65536, [0xdf, 0x00, 0x01, 0x00, 0x00]],
    [(n) => w.arrayHeader(n), 0, [0x90]],
    [(n) => w.arrayHeader(n), 15, [0x9f]],
    [(n) => w.arrayHeader(n), 16, [0xdc, 0x00, 0x10]],
    [(n) => w.arrayHeader(n), 65536, [0xdd, 0x00, 0x01, 0x00, 0x00]],
  ];
  for (const [write, n, expected] of headers) {
    w.reset();
    write(n);
    assert.deepEqual([...w.bytes()], expected, `count ${n}`);
  }
  const strings: Array<[string, number[]]> = [
    ['', [0xa0]],
    ['a'.repeat(31), [0xbf]],
    ['a'.repeat(32), [0xd9, 32]],
    ['é'.repeat(128), [0xda, 0x01, 0x00]], // 128 characters, 256 UTF-8 bytes
    ['a'.repeat(65536), [0xdb, 0x00, 0x01, 0x00, 0x00]],
  ];
  for (const [s, head] of strings) {
    w.reset();
    w.str(s);
    assert.deepEqual([...w.bytes().subarray(0, head.length)], head, `string of ${s.length}`);
    assert.equal(decode(w.bytes()), s);
  }
  // A map32 decodes too (its entries are irrelevant here, so nil values).
  w.reset();
  w.mapHeader(65536);
  for (let i = 0; i < 65536; i++) {
    w.str(`k${i}`);
    w.nil();
  }
  const big = decode(w.bytes()) as Record<string, null>;
  assert.equal(Object.keys(big).length, 65536);
  assert.equal(big.k65535, null);
});

test('reset reuses the buffer; bad input throws', () => {
  const w = new MsgpackPointWriter(8);
  w.arrayHeader(1);
  w.pair(1, 1);
  const first = w.bytes().slice();
  w.reset();
  assert.equal(w.length, 0);
  w.arrayHeader(1);
  w.pair(1, 1);
  assert.deepEqual(w.bytes(), first);
  assert.throws(() => w.pair(-1, 0), RangeError);
  assert.throws(() => w.pair(1.5, 0), RangeError);
  assert.throws(() => w.pair(2 ** 53, 0), RangeError);
  assert.throws(() => w.mapHeader(-1), RangeError);
  assert.throws(() => w.arrayHeader(2 ** 32), RangeError);
  assert.throws(() => w.points(new Float64Array(2), new Float64Array(1), 0, 2), RangeError);
});
