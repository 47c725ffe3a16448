import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeFormat1,
  decodeFormat2,
  encodeFormat2,
  Format1Writer,
  isValid,
  timestampsAsNumbers,
} from '../../native-free-codecs/result-binary.js';
import { prng } from '../support/prng.js';

// One conformance suite: every case goes through both formats, and each encoding is read back
// by the library decoder and by the reference decoders below, written from the text of
// ../shared/WIRE.md ("Query results") with a DataView, field by field.

interface RefTag {
  name: string;
  ts: number[];
  values: number[];
}

const MAX = Number.MAX_SAFE_INTEGER;

function u64(view: DataView, at: number): number {
  return Number(view.getBigUint64(at, true));
}

function utf8(bytes: Uint8Array, at: number, length: number): string {
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(at, at + length));
}

/** Format 1 per WIRE.md: "HSB1", u32 tag count; per tag u16 name length, name, u32 count, count × (u64, f32). */
function referenceDecode1(bytes: Uint8Array): RefTag[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  assert.equal(utf8(bytes, 0, 4), 'HSB1');
  const tagCount = view.getUint32(4, true);
  let at = 8;
  const tags: RefTag[] = [];
  for (let t = 0; t < tagCount; t++) {
    const nameLength = view.getUint16(at, true);
    const name = utf8(bytes, at + 2, nameLength);
    at += 2 + nameLength;
    const count = view.getUint32(at, true);
    at += 4;
    const tag: RefTag = { name, ts: [], values: [] };
    for (let i = 0; i < count; i++) {
      tag.ts.push(u64(view, at));
      tag.values.push(view.getFloat32(at + 8, true));
      at += 12;
    }
    tags.push(tag);
  }
  assert.equal(at, bytes.length, 'format 1: no bytes after the last tag');
  return tags;
}

interface Ref2 {
  rows: number[];
  tags: Array<{ name: string; valid: boolean[]; values: number[] }>;
  /** Offset of every array (timestamps, each bitmap, each values array) from the body start. */
  arrayOffsets: number[];
}

/** Format 2 per WIRE.md, checking that every padding byte is zero. */
function referenceDecode2(bytes: Uint8Array): Ref2 {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const padTo8 = (at: number): number => {
    while (at % 8 !== 0) assert.equal(bytes[at++], 0, `padding byte ${at - 1} is zero`);
    return at;
  };
  assert.equal(utf8(bytes, 0, 4), 'HSB2');
  const tagCount = view.getUint32(4, true);
  const rowCount = view.getUint32(8, true);
  let at = padTo8(12);
  const out: Ref2 = { rows: [], tags: [], arrayOffsets: [at] };
  for (let r = 0; r < rowCount; r++, at += 8) out.rows.push(u64(view, at));
  for (let t = 0; t < tagCount; t++) {
    const nameLength = view.getUint16(at, true);
    const name = utf8(bytes, at + 2, nameLength);
    at = padTo8(at + 2 + nameLength);
    out.arrayOffsets.push(at);
    const valid: boolean[] = [];
    for (let r = 0; r < rowCount; r++) valid.push(((bytes[at + Math.floor(r / 8)]! >> r % 8) & 1) === 1);
    // Bits past the last row are padding too.
    for (let r = rowCount; r < Math.ceil(rowCount / 8) * 8; r++) assert.equal((bytes[at + Math.floor(r / 8)]! >> r % 8) & 1, 0);
    at = padTo8(at + Math.ceil(rowCount / 8));
    out.arrayOffsets.push(at);
    const values: number[] = [];
    for (let r = 0; r < rowCount; r++, at += 4) values.push(view.getFloat32(at, true));
    at = padTo8(at);
    out.tags.push({ name, valid, values });
  }
  assert.equal(at, bytes.length, 'format 2: no bytes after the last tag');
  return out;
}

// ---------------------------------------------------------------------------------------------
// Hand-computed bodies

test('format 1: hand-computed 1-tag 2-point body, byte for byte', () => {
  // prettier-ignore
  const expected = [
    0x48, 0x53, 0x42, 0x31,                         // "HSB1"
    0x01, 0x00, 0x00, 0x00,                         // 1 tag
    0x02, 0x00, 0x61, 0x62,                         // name length 2, "ab"
    0x02, 0x00, 0x00, 0x00,                         // 2 points
    0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // ts 1000
    0x00, 0x00, 0xc0, 0x3f,                         // 1.5f
    0x05, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // ts 2^32 + 5
    0x00, 0x00, 0x00, 0xc0,                         // -2f
  ];
  const w = new Format1Writer();
  w.beginTag('ab', 2);
  w.point(1000, 1.5);
  w.point(2 ** 32 + 5, -2);
  const body = w.finish();
  assert.deepEqual([...body], expected);
  assert.deepEqual(referenceDecode1(Uint8Array.from(expected)), [{ name: 'ab', ts: [1000, 2 ** 32 + 5], values: [1.5, -2] }]);
  const [tag] = decodeFormat1(body);
  assert.equal(tag!.name, 'ab');
  assert.deepEqual([...tag!.timestamps], [1000, 2 ** 32 + 5]);
  assert.deepEqual([...tag!.values], [1.5, -2]);
});

test('format 2: hand-computed 2-tag 3-row body, byte for byte', () => {
  // prettier-ignore
  const expected = [
    0x48, 0x53, 0x42, 0x32, 0x02, 0x00, 0x00, 0x00, // "HSB2", 2 tags
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 3 rows, padding
    0x01, 0, 0, 0, 0, 0, 0, 0,                      // ts 1      @16
    0x02, 0, 0, 0, 0, 0, 0, 0,                      // ts 2
    0x03, 0, 0, 0, 0, 0, 0, 0,                      // ts 3
    0x01, 0x00, 0x61, 0, 0, 0, 0, 0,                // "a", padding   @40
    0x05, 0, 0, 0, 0, 0, 0, 0,                      // bitmap 101     @48
    0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0,             // 1f, 0 (invalid) @56
    0x00, 0x00, 0x00, 0x40, 0, 0, 0, 0,             // 2f, padding
    0x01, 0x00, 0x62, 0, 0, 0, 0, 0,                // "b", padding   @72
    0x06, 0, 0, 0, 0, 0, 0, 0,                      // bitmap 110     @80
    0, 0, 0, 0, 0x00, 0x00, 0x00, 0x3f,             // 0 (invalid), 0.5f @88
    0x00, 0x00, 0x80, 0xbf, 0, 0, 0, 0,             // -1f, padding
  ];
  const body = encodeFormat2([
    { name: 'a', timestamps: Float64Array.of(1, 3), values: Float64Array.of(1, 2) },
    { name: 'b', timestamps: Float64Array.of(2, 3), values: Float64Array.of(0.5, -1) },
  ]);
  assert.deepEqual([...body], expected);
  const ref = referenceDecode2(Uint8Array.from(expected));
  assert.deepEqual(ref.rows, [1, 2, 3]);
  assert.deepEqual(ref.arrayOffsets, [16, 48, 56, 80, 88]);
  assert.deepEqual(ref.tags, [
    { name: 'a', valid: [true, false, true], values: [1, 0, 2] },
    { name: 'b', valid: [false, true, true], values: [0, 0.5, -1] },
  ]);
  const decoded = decodeFormat2(body);
  assert.deepEqual([...timestampsAsNumbers(decoded.timestamps)], [1, 2, 3]);
  assert.deepEqual(decoded.tags.map((t) => [t.name, [0, 1, 2].map((r) => isValid(t.valid, r)), [...t.values]]), [
    ['a', [true, false, true], [1, 0, 2]],
    ['b', [false, true, true], [0, 0.5, -1]],
  ]);
});

// ---------------------------------------------------------------------------------------------
// Conformance cases through both formats

interface Case {
  name: string;
  series: Array<{ name: string; ts: number[]; values: number[] }>;
}


function randomCase(seed: number): Case {
  const rnd = prng(seed);
  const timeline: number[] = [];
  let t = Math.floor(rnd() * 2 ** 45);
  for (let i = 0, n = Math.floor(rnd() * 300); i < n; i++) timeline.push((t += 1 + Math.floor(rnd() * 5000)));
  const tagCount = Math.floor(rnd() * 8);
  const series = Array.from({ length: tagCount }, (_, s) => {
    const keep = rnd();
    const ts = timeline.filter(() => rnd() < keep);
    return { name: `tag-${seed}-${s}`, ts, values: ts.map(() => (rnd() - 0.5) * 1000) };
  });
  return { name: `random seed ${seed}`, series };
}

const cases: Case[] = [
  { name: 'no tags', series: [] },
  { name: 'one tag with no points', series: [{ name: 'empty', ts: [], values: [] }] },
  { name: 'empty name and unicode names', series: [
    { name: '', ts: [1], values: [1] },
    { name: 'température °C ⚙️', ts: [1, 2], values: [20.5, 21] },
    { name: 'ünit/ß', ts: [0], values: [0] },
  ] },
  { name: 'single point', series: [{ name: 'x', ts: [T(0)], values: [42] }] },
  { name: 'timestamps at 0 and near 2^53-1', series: [
    { name: 'edges', ts: [0, 1, 2 ** 32 - 1, 2 ** 32, MAX - 1, MAX], values: [1, 2, 3, 4, 5, 6] },
    { name: 'top', ts: [MAX], values: [7] },
  ] },
  { name: 'special values (cast to f32)', series: [
    { name: 'v', ts: [1, 2, 3, 4, 5, 6, 7, 8, 9], values: [NaN, Infinity, -Infinity, -0, 5e-324, 1e40, 0.1 + 0.2, 3.4028234663852886e38, 16777217] },
  ] },
  { name: 'disjoint tags', series: [
    { name: 'a', ts: [1, 2, 3], values: [1, 2, 3] },
    { name: 'b', ts: [10, 20], values: [10, 20] },
  ] },
  { name: 'interleaved tags, rows not a multiple of 8', series: [
    { name: 'odd', ts: [1, 3, 5, 7, 9, 11, 13], values: [1, 3, 5, 7, 9, 11, 13] },
    { name: 'even', ts: [2, 4, 6, 8, 10, 12], values: [2, 4, 6, 8, 10, 12] },
    { name: 'all', ts: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], values: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
  ] },
  ...Array.from({ length: 60 }, (_, i) => randomCase(i + 1)),
];

function T(i: number): number {
  return Date.UTC(2024, 5, 1) + i * 1000;
}

function assertSameTags(actual: RefTag[], c: Case, label: string): void {
  assert.equal(actual.length, c.series.length, `${label}: tag count`);
  c.series.forEach((s, i) => {
    const a = actual[i]!;
    assert.equal(a.name, s.name, `${label}: name of tag ${i}`);
    assert.deepEqual(a.ts, s.ts, `${label}: timestamps of ${s.name}`);
    assert.equal(a.values.length, s.values.length);
    s.values.forEach((v, j) => {
      if (!Object.is(a.values[j], Math.fround(v))) assert.fail(`${label}: ${s.name}[${j}] is ${a.values[j]}, expected f32 of ${v}`);
    });
  });
}

interface Format {
  name: string;
  encode(c: Case): Uint8Array;
  /** Per-tag points, as the library decoder sees them. */
  decode(body: Uint8Array): RefTag[];
  /** Per-tag points, as the reference decoder sees them. */
  reference(body: Uint8Array): RefTag[];
}

/** Format 2 rows back to per-tag points (the rows where the tag is valid). */
function rowsToTags(rows: number[], tags: Array<{ name: string; valid: (r: number) => boolean; value: (r: number) => number }>): RefTag[] {
  return tags.map((t) => {
    const out: RefTag = { name: t.name, ts: [], values: [] };
    rows.forEach((ts, r) => {
      if (t.valid(r)) {
        out.ts.push(ts);
        out.values.push(t.value(r));
      } else {
        assert.equal(t.value(r), 0, `${t.name}: invalid row ${r} holds 0`);
      }
    });
    return out;
  });
}

const formats: Format[] = [
  {
    name: 'format 1',
    encode(c) {
      const w = new Format1Writer(1); // start tiny so growth is exercised
      c.series.forEach((s, i) => {
        w.beginTag(s.name, s.ts.length);
        if (i % 2 === 0) {
          s.ts.forEach((t, j) => w.point(t, s.values[j]!));
        } else {
          const half = s.ts.length >> 1;
          const ts = Float64Array.from(s.ts);
          const values = Float64Array.from(s.values);
          w.pointsFrom(ts, values, 0, half);
          w.pointsFrom(ts, values, half, ts.length);
        }
      });
      return w.finish();
    },
    decode: (body) => decodeFormat1(body).map((t) => ({ name: t.name, ts: [...t.timestamps], values: [...t.values] })),
    reference: referenceDecode1,
  },
  {
    name: 'format 2',
    encode: (c) =>
      encodeFormat2(c.series.map((s) => ({ name: s.name, timestamps: Float64Array.from(s.ts), values: Float64Array.from(s.values) }))),
    decode(body) {
      const d = decodeFormat2(body);
      return rowsToTags(
        [...timestampsAsNumbers(d.timestamps)],
        d.tags.map((t) => ({ name: t.name, valid: (r) => isValid(t.valid, r), value: (r) => t.values[r]! })),
      );
    },
    reference(body) {
      const ref = referenceDecode2(body);
      assert.deepEqual(ref.rows, [...new Set(ref.rows)].sort((a, b) => a - b), 'rows are sorted and distinct');
      assert.ok(ref.arrayOffsets.every((o) => o % 8 === 0), `every array starts on 8: ${ref.arrayOffsets}`);
      return rowsToTags(
        ref.rows,
        ref.tags.map((t) => ({ name: t.name, valid: (r) => t.valid[r]!, value: (r) => t.values[r]! })),
      );
    },
  },
];

for (const format of formats) {
  test(`${format.name}: conformance cases round-trip through library and reference decoders`, () => {
    for (const c of cases) {
      const body = format.encode(c);
      assertSameTags(format.decode(body), c, `${format.name} / ${c.name} / library`);
      assertSameTags(format.reference(body), c, `${format.name} / ${c.name} / reference`);
      // The body still decodes from an odd offset inside a larger buffer.
      const shifted = new Uint8Array(body.length + 3);
      shifted.set(body, 3);
      assertSameTags(format.decode(shifted.subarray(3)), c, `${format.name} / ${c.name} / at offset 3`);
    }
  });

  test(`${format.name}: truncated bodies, trailing bytes and a wrong magic are errors`, () => {
    const body = format.encode(cases.find((c) => c.name === 'disjoint tags')!);
    for (const cut of [0, 3, 8, body.length - 1]) {
      assert.throws(() => format.decode(body.subarray(0, cut)), /truncated/, `cut at ${cut}`);
    }
    const longer = new Uint8Array(body.length + 8);
    longer.set(body);
    assert.throws(() => format.decode(longer), /8 trailing bytes/);
    const wrong = body.slice();
    wrong[3] = 0x39;
    assert.throws(() => format.decode(wrong), /magic/);
  });
}

// ---------------------------------------------------------------------------------------------
// Format-specific properties

test('format 2: arrays are views into the body when it is 8-aligned, copies otherwise', () => {
  const c = cases.find((x) => x.name === 'interleaved tags, rows not a multiple of 8')!;
  const body = formats[1]!.encode(c);
  const d = decodeFormat2(body);
  assert.ok(d.timestamps instanceof BigUint64Array);
  assert.equal(d.timestamps.buffer, body.buffer);
  assert.equal(d.timestamps.byteOffset % 8, 0);
  for (const t of d.tags) {
    assert.equal(t.values.buffer, body.buffer);
    assert.equal(t.valid.buffer, body.buffer);
    assert.equal(t.values.byteOffset % 8, 0);
    assert.equal(t.valid.byteOffset % 8, 0);
  }
  const shifted = new Uint8Array(body.length + 4);
  shifted.set(body, 4);
  const copy = decodeFormat2(shifted.subarray(4));
  assert.notEqual(copy.timestamps.buffer, shifted.buffer);
  assert.deepEqual([...copy.timestamps], [...d.timestamps]);
});

test('format 2: the bitmap marks exactly the rows where each tag has a point', () => {
  const rnd = prng(99);
  const a = { name: 'a', timestamps: Float64Array.of(5, 6, 9, 100, 101, 2 ** 40), values: Float64Array.of(1, 2, 3, 4, 5, 6) };
  const b = { name: 'b', timestamps: Float64Array.of(1, 6, 7, 8, 100), values: Float64Array.of(7, 8, 9, 10, 11) };
  const big = Float64Array.from({ length: 1000 }, (_, i) => 3 * i + 1);
  const c = { name: 'c', timestamps: big, values: big.map(() => rnd()), count: 500 };
  const d = decodeFormat2(encodeFormat2([a, b, c]));
  const rows = [...timestampsAsNumbers(d.timestamps)];
  const expectedRows = [...new Set([...a.timestamps, ...b.timestamps, ...big.subarray(0, 500)])].sort((x, y) => x - y);
  assert.deepEqual(rows, expectedRows);
  const all: Array<{ name: string; timestamps: Float64Array; values: Float64Array; count?: number }> = [a, b, c];
  for (const [i, s] of all.entries()) {
    const tag = d.tags[i]!;
    assert.equal(tag.valid.length, Math.ceil(rows.length / 8));
    const own = new Map([...s.timestamps.subarray(0, s.count ?? s.timestamps.length)].map((t, j) => [t, s.values[j]!]));
    rows.forEach((t, r) => {
      assert.equal(isValid(tag.valid, r), own.has(t), `${s.name} row ${r} (ts ${t})`);
      assert.equal(tag.values[r], own.has(t) ? Math.fround(own.get(t)!) : 0);
    });
  }
});

test('format 2: a repeated timestamp within a tag keeps the last value', () => {
  const dup = { name: 'dup', timestamps: Float64Array.of(1, 2, 2, 3), values: Float64Array.of(1, 2, 5, 3) };
  const d = decodeFormat2(encodeFormat2([dup]));
  assert.deepEqual([...timestampsAsNumbers(d.timestamps)], [1, 2, 3]);
  assert.deepEqual([...d.tags[0]!.values], [1, 5, 3]);
  // Merged with other tags, the repeat still makes one row.
  const other = { name: 'other', timestamps: Float64Array.of(0, 2, 4), values: Float64Array.of(7, 8, 9) };
  const d3 = decodeFormat2(encodeFormat2([dup, other, dup]));
  assert.deepEqual([...timestampsAsNumbers(d3.timestamps)], [0, 1, 2, 3, 4]);
  assert.deepEqual([...d3.tags[0]!.values], [0, 1, 5, 3, 0]);
  assert.deepEqual([...d3.tags[1]!.values], [7, 0, 8, 0, 9]);
});

test('format 2: encoder rejects unsorted series and counts beyond the arrays', () => {
  assert.throws(() => encodeFormat2([{ name: 'x', timestamps: Float64Array.of(2, 1), values: Float64Array.of(1, 2) }]), /not ascending/);
  assert.throws(() => encodeFormat2([{ name: 'x', timestamps: Float64Array.of(1), values: Float64Array.of(1), count: 2 }]), /exceeds its arrays/);
});

test('timestampsAsNumbers: exact up to 2^53-1, and a Float64Array passes through', () => {
  const big = BigUint64Array.of(0n, 1n, 2n ** 32n - 1n, 2n ** 32n, BigInt(MAX));
  assert.deepEqual([...timestampsAsNumbers(big)], [0, 1, 2 ** 32 - 1, 2 ** 32, MAX]);
  const f = Float64Array.of(1, 2);
  assert.equal(timestampsAsNumbers(f), f);
});

test('Format1Writer: declared counts are enforced, names are bounded, reset reuses the buffer', () => {
  const w = new Format1Writer();
  w.beginTag('a', 1);
  assert.throws(() => w.beginTag('b', 0), /missing 1 points/);
  w.point(1, 1);
  assert.throws(() => w.point(2, 2), /more points than the tag declared/);
  assert.throws(() => w.pointsFrom(Float64Array.of(1), Float64Array.of(1)), /more points/);
  assert.throws(() => w.beginTag('x'.repeat(65536), 0), /exceeds 65535/);
  w.beginTag('é'.repeat(32767) + 'x', 0); // 65535 UTF-8 bytes fits
  w.beginTag('c', 2);
  w.point(3, 3);
  assert.throws(() => w.finish(), /missing 1 points/);
  w.point(4, 4);
  assert.deepEqual(
    decodeFormat1(w.finish()).map((t) => [t.name.length, [...t.timestamps]]),
    [[1, [1]], [32768, []], [1, [3, 4]]],
  );
  w.reset();
  assert.deepEqual([...w.finish()], [0x48, 0x53, 0x42, 0x31, 0, 0, 0, 0]);
});

test('format 1 and 2: invalid UTF-8 in a name is an error', () => {
  const body = Uint8Array.of(0x48, 0x53, 0x42, 0x31, 1, 0, 0, 0, 1, 0, 0xff, 0, 0, 0, 0);
  assert.throws(() => decodeFormat1(body), /not valid UTF-8/);
});
