import { test } from 'node:test';
import assert from 'node:assert/strict';
// The reference: lz4_flex through lz4-napi, which wrote every sealed block before lz4-block.ts.
import { compressSync, uncompressSync } from 'lz4-napi';
import { Lz4Compressor, Lz4Error, lz4Decompress, lz4DecompressedLength, lz4MaxCompressedLength } from '../../native-free-codecs/lz4-block.js';
import { ByteWriter, encodeTimestamps, encodeValues } from '../../native-free-codecs/columns.js';
import { prng } from '../support/prng.js';

/** Inputs of every kind the codec meets: around the format's end margins, runs, patterns, noise, real columns. */
function inputs(): Array<[string, Uint8Array]> {
  const rnd = prng(34);
  const cases: Array<[string, Uint8Array]> = [];
  for (const n of [0, 1, 4, 5, 11, 12, 13, 14, 16, 17, 20, 64]) cases.push([`${n} zeros`, new Uint8Array(n)]);
  for (const n of [12, 13, 30, 300, 70_000]) cases.push([`${n} random bytes`, Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256))]);
  cases.push(['a 3-byte pattern, overlapping matches', Uint8Array.from({ length: 5000 }, (_, i) => [7, 8, 9][i % 3]!)]);
  cases.push(['a run of 100,000 bytes (lengths of many 255s)', new Uint8Array(100_000).fill(0x41)]);
  cases.push(['text', new TextEncoder().encode('the quick brown fox jumps over the lazy dog; '.repeat(40) + 'and stops.')]);
  cases.push(['repeats 70,000 bytes apart (past the 65,535 offset)', (() => {
    const head = Uint8Array.from({ length: 70_000 }, () => Math.floor(rnd() * 256));
    const out = new Uint8Array(140_000);
    out.set(head, 0);
    out.set(head, 70_000);
    return out;
  })()]);
  cases.push(['sparse: mostly zeros, a random byte in 50', Uint8Array.from({ length: 20_000 }, () => (rnd() < 0.02 ? Math.floor(rnd() * 256) : 0))]);
  // Column bytes as sealed blocks hold them: a setpoint that rarely moves, a noisy walk, a counter.
  const series: Array<[string, (i: number) => number]> = [
    ['setpoint', (i) => (i < 8000 ? 50 : 55)],
    ['noisy walk', (i) => Math.round((20 + Math.sin(i / 900) + (rnd() - 0.5) * 0.02) * 100) / 100],
    ['counter', (i) => i * 3],
  ];
  for (const [name, value] of series) {
    const n = 16_384;
    const ts = Float64Array.from({ length: n }, (_, i) => 1_700_000_000_000 + i * 1000 + (i % 97 === 0 ? 3 : 0));
    const values = Float64Array.from({ length: n }, (_, i) => value(i));
    const w = new ByteWriter(1024);
    encodeTimestamps(ts, n, w);
    encodeValues(values, n, w);
    cases.push([`columns of a ${name}`, w.bytes().slice()]);
  }
  return cases;
}

test('what it compresses, the reference decompresses, and so does it; within lz4MaxCompressedLength', () => {
  const compressor = new Lz4Compressor();
  for (const [name, input] of inputs()) {
    const out = new Uint8Array(lz4MaxCompressedLength(input.length));
    const n = compressor.compress(input, out);
    assert.ok(n <= out.length, name);
    const block = out.subarray(0, n);
    assert.equal(lz4DecompressedLength(block), input.length, name);
    assert.deepEqual(new Uint8Array(uncompressSync(Buffer.from(block))), input, `${name}: the reference decodes it`);
    const back = new Uint8Array(input.length + 7).fill(0xee);
    assert.equal(lz4Decompress(block, back), input.length, name);
    assert.deepEqual(back.subarray(0, input.length), input, name);
    assert.ok(back.subarray(input.length).every((b) => b === 0xee), `${name}: nothing written past the length`);
  }
});

test("blocks the reference wrote (every sealed file before this codec) decompress to the same bytes", () => {
  for (const [name, input] of inputs()) {
    const block = compressSync(Buffer.from(input));
    const out = new Uint8Array(lz4DecompressedLength(block));
    assert.equal(lz4Decompress(block, out), input.length, name);
    assert.deepEqual(out, input, name);
  }
});

test('it compresses about as well as the reference: within 10% (and 16 bytes) of its size on each input', () => {
  const compressor = new Lz4Compressor();
  for (const [name, input] of inputs()) {
    const ours = compressor.compress(input, new Uint8Array(lz4MaxCompressedLength(input.length)));
    const theirs = compressSync(Buffer.from(input)).length;
    assert.ok(ours <= theirs * 1.1 + 16, `${name}: ${ours} bytes against the reference's ${theirs}`);
  }
  // And it finds matches: a repeated text shrinks to a small fraction.
  const text = new TextEncoder().encode('pump 7 discharge pressure; '.repeat(200));
  assert.ok(compressor.compress(text, new Uint8Array(lz4MaxCompressedLength(text.length))) < text.length / 20);
});

test('one compressor over many blocks: its kept table never matches into an earlier block', () => {
  const rnd = prng(5);
  const compressor = new Lz4Compressor();
  const long = Uint8Array.from({ length: 50_000 }, () => Math.floor(rnd() * 4));
  const out = new Uint8Array(lz4MaxCompressedLength(long.length));
  for (let round = 0; round < 200; round++) {
    // Alternate a long block and short ones that share its bytes: stale entries would point past a short input.
    const input = round % 2 === 0 ? long : long.subarray(round * 7, round * 7 + 13 + (round % 50));
    const n = compressor.compress(input, out);
    const back = new Uint8Array(input.length);
    lz4Decompress(out.subarray(0, n), back);
    assert.deepEqual(back, input, `round ${round}`);
  }
});

test('compress writes from the given offset and refuses an output without room for the worst case', () => {
  const compressor = new Lz4Compressor();
  const input = new TextEncoder().encode('abcabcabcabcabcabcabcabc');
  const out = new Uint8Array(10 + lz4MaxCompressedLength(input.length)).fill(0xaa);
  const end = compressor.compress(input, out, 10);
  assert.ok(out.subarray(0, 10).every((b) => b === 0xaa));
  const back = new Uint8Array(input.length);
  lz4Decompress(out.subarray(10, end), back);
  assert.deepEqual(back, input);
  assert.throws(() => compressor.compress(input, new Uint8Array(lz4MaxCompressedLength(input.length) - 1)), RangeError);
  assert.throws(() => lz4Decompress(out.subarray(10, end), new Uint8Array(input.length - 1)), RangeError);
});

test('damaged blocks throw Lz4Error naming the fault, and never write past the declared length', () => {
  const block = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/ /g, ''), 'hex'));
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ['too short', block('05000000'), /too short/],
    ['literals past the end', block('05000000 50 6865'), /run past the block's end/],
    ['literals past the declared length', block('02000000 30 616263'), /past the declared 2 bytes/],
    ['offset zero', block('08000000 40 61626364 0000 00'), /offset 0 /],
    ['offset before the start', block('08000000 40 61626364 0500 00'), /offset 5 /],
    ['match past the declared length', block('06000000 40 61626364 0400 00'), /runs past the declared 6 bytes/],
    ['offset cut short', block('08000000 40 61626364 04'), /offset cut short/],
    ['ends after a match', block('08000000 40 61626364 0400'), /without its last literals/],
    ['shorter than declared', block('09000000 50 6162636465'), /decompresses to 5 bytes, it declares 9/],
    ['literal length runs off', block('40000000 f0 ffff'), /literal length runs past/],
    ['match length runs off', block('40000000 4f 61626364 0400 ff'), /match length runs past/],
  ];
  for (const [name, bytes, message] of cases) {
    const out = new Uint8Array(128);
    assert.throws(() => lz4Decompress(bytes, out.subarray(0, Math.min(128, 64))), (err: unknown) => err instanceof Lz4Error && message.test(err.message), name);
  }
});

test('fuzz: flipped, cut and spliced blocks either decode within bounds or throw Lz4Error', () => {
  const rnd = prng(77);
  const compressor = new Lz4Compressor();
  const sources = inputs().map(([, input]) => input).filter((input) => input.length > 0 && input.length < 30_000);
  let decoded = 0;
  let refused = 0;
  for (let round = 0; round < 3000; round++) {
    const input = sources[round % sources.length]!;
    const out = new Uint8Array(lz4MaxCompressedLength(input.length));
    const block = out.slice(0, compressor.compress(input, out));
    const damaged = block.slice(0, rnd() < 0.2 ? 5 + Math.floor(rnd() * (block.length - 5)) : block.length);
    for (let k = 0, flips = 1 + Math.floor(rnd() * 3); k < flips; k++) damaged[4 + Math.floor(rnd() * (damaged.length - 4))] ^= 1 << Math.floor(rnd() * 8);
    const room = lz4DecompressedLength(damaged);
    if (room > 1 << 20) continue; // a flipped size byte: the caller bounds the allocation (sealed-file.ts)
    const target = new Uint8Array(room + 16).fill(0x5a);
    try {
      const n = lz4Decompress(damaged, target.subarray(0, room));
      assert.equal(n, room);
      decoded++;
    } catch (err) {
      assert.ok(err instanceof Lz4Error, `round ${round}: ${(err as Error).message}`);
      refused++;
    }
    assert.ok(target.subarray(room).every((b) => b === 0x5a), `round ${round}: written past the declared length`);
  }
  assert.ok(refused > 1000 && decoded > 100, `refused ${refused}, decoded ${decoded}`);
});
