// A streamed result is the envelope from result-envelope.ts around fragments that separate
// writers (one per shard) produced: joined, it must decode as one answer in each format.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unpack } from 'msgpackr';
import { JsonPointWriter } from '../../native-free-codecs/result-json.js';
import { MsgpackPointWriter } from '../../native-free-codecs/result-msgpack.js';
import { decodeFormat1, Format1Writer } from '../../native-free-codecs/result-binary.js';
import { resultHead, resultTail, type ResultFormat } from '../../native-free-codecs/result-envelope.js';

const SERIES = [
  { name: 'TI-101', ts: [1_700_000_000_000, 1_700_000_001_000], values: [20.5, 21.25] },
  { name: 'PI-201', ts: [1_700_000_000_500], values: [3] },
  { name: 'FI-301', ts: [], values: [] },
];

/** One shard's fragment of one series, as the storage worker writes it. */
function fragment(format: ResultFormat, s: (typeof SERIES)[number], first: boolean): Uint8Array {
  const ts = Float64Array.from(s.ts);
  const vs = Float64Array.from(s.values);
  if (format === 'json') {
    const w = new JsonPointWriter(16);
    if (!first) w.raw(0x2c);
    w.key(s.name);
    w.raw(0x5b);
    w.points(ts, vs, 0, ts.length, false);
    w.raw(0x5d);
    return w.bytes().slice();
  }
  if (format === 'msgpack') {
    const w = new MsgpackPointWriter(16);
    w.str(s.name);
    w.arrayHeader(ts.length);
    w.points(ts, vs, 0, ts.length);
    return w.bytes().slice();
  }
  const w = new Format1Writer(16, { header: false });
  w.beginTag(s.name, ts.length);
  w.pointsFrom(ts, vs);
  return w.take().slice();
}

function assemble(format: ResultFormat): Uint8Array {
  const parts = [resultHead(format, SERIES.length), ...SERIES.map((s, i) => fragment(format, s, i === 0)), resultTail(format)];
  return Buffer.concat(parts);
}

const expected = Object.fromEntries(SERIES.map((s) => [s.name, s.ts.map((t, i) => [t, s.values[i]])]));

test('JSON: `{`, the fragments, `}`', () => {
  assert.deepEqual(JSON.parse(Buffer.from(assemble('json')).toString('utf8')), expected);
});

test('msgpack: a map header of the series count, then the fragments', () => {
  assert.deepEqual(unpack(assemble('msgpack')), expected);
});

test('binary format 1: "HSB1" and the series count, then headerless tags', () => {
  const tags = decodeFormat1(assemble('binary1'));
  assert.deepEqual(
    tags.map((t) => [t.name, [...t.timestamps], [...t.values]]),
    SERIES.map((s) => [s.name, s.ts, s.values]),
  );
});

test('a headerless format 1 writer keeps a tag open across take() and has no finished body', () => {
  const w = new Format1Writer(16, { header: false });
  w.beginTag('x', 2);
  w.point(1, 1);
  const first = w.take().slice();
  w.point(2, 2);
  const second = w.take().slice();
  const body = Buffer.concat([resultHead('binary1', 1), first, second]);
  assert.deepEqual([...decodeFormat1(body)[0]!.timestamps], [1, 2]);
  assert.throws(() => w.finish(), /no finished body/);
});
