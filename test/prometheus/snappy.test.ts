// The snappy block codec (native-free-codecs/snappy.ts): round trips, hand-made blocks of every
// element kind, every kind of corrupt input refused cleanly, the size bound checked before any
// allocation, mutated blocks that must throw SnappyError or decode to exactly the declared
// length, and both directions against Google's libsnappy (through python3's ctypes) when the
// machine has it.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { snappyCompress, snappyDecompress, SnappyError, snappyMaxCompressedLength, snappyUncompressedLength } from '../../native-free-codecs/snappy.js';
import { prng } from '../support/prng.js';

const MiB = 1 << 20;

/** Inputs of many shapes: empty, tiny, random (incompressible), repetitive, text-like, past one 64 KiB fragment. */
function samples(): Array<{ name: string; bytes: Uint8Array }> {
  const random = prng(7);
  const rand = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
  const text = (n: number) => {
    const words = ['up', 'job', '"prometheus"', 'instance', 'localhost:9090', '__name__', 'scrape_duration_seconds', '{', '}', ',', '='];
    let s = '';
    while (s.length < n) s += words[Math.floor(random() * words.length)];
    return new TextEncoder().encode(s.slice(0, n));
  };
  const pattern = (n: number, period: number) => Uint8Array.from({ length: n }, (_, i) => (i % period) * 37);
  return [
    { name: 'empty', bytes: new Uint8Array(0) },
    { name: '1 byte', bytes: Uint8Array.of(42) },
    { name: '15 bytes (below the input margin)', bytes: rand(15) },
    { name: '16 zero bytes', bytes: new Uint8Array(16) },
    { name: 'random 1000', bytes: rand(1000) },
    { name: 'zeros 100 000', bytes: new Uint8Array(100_000) },
    { name: 'period 3 (overlapping copies)', bytes: pattern(5000, 3) },
    { name: 'period 1500 (1-byte offsets and 2-byte offsets)', bytes: pattern(40_000, 1500) },
    { name: 'text 200 000 (several fragments)', bytes: text(200_000) },
    { name: 'random 70 000 (literals over 65 536 bytes)', bytes: rand(70_000) },
    { name: 'random 300 000, twice', bytes: (() => { const r = rand(300_000); const b = new Uint8Array(600_000); b.set(r); b.set(r, 300_000); return b; })() },
  ];
}

function assertSnappyError(fn: () => unknown, kind: 'corrupt' | 'too-large', pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof SnappyError, `a SnappyError, got ${String(err)}`);
    assert.equal(err.kind, kind);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('snappy block format', () => {
  test('every sample round trips, within the bound on compressed size; repetitive input shrinks', () => {
    for (const { name, bytes } of samples()) {
      const packed = snappyCompress(bytes);
      assert.ok(packed.length <= snappyMaxCompressedLength(bytes.length), name);
      assert.equal(snappyUncompressedLength(packed), bytes.length, name);
      assert.deepEqual(snappyDecompress(packed, bytes.length), bytes, name);
    }
    assert.ok(snappyCompress(new Uint8Array(100_000)).length < 5000, 'zeros compress well');
    const text = samples().find((s) => s.name.startsWith('text'))!.bytes;
    assert.ok(snappyCompress(text).length < text.length / 2, 'text compresses');
  });

  test('hand-made blocks: literals with 0 to 4 length bytes, 1-, 2- and 4-byte offset copies, an overlapping copy', () => {
    const lit = (bytes: number[]) => [(bytes.length - 1) << 2, ...bytes];
    // "abcd" literal, then copy-1 (len 8, offset 4): "abcdabcdabcd"
    assert.deepEqual([...snappyDecompress(Uint8Array.of(12, ...lit([97, 98, 99, 100]), 1 | ((8 - 4) << 2), 4), 100)], [...'abcdabcdabcd'].map((c) => c.charCodeAt(0)));
    // "x" then copy-2 of 9 at offset 1 (overlapping: a run)
    assert.deepEqual([...snappyDecompress(Uint8Array.of(10, ...lit([120]), 2 | ((9 - 1) << 2), 1, 0), 100)], new Array(10).fill(120));
    // "ab" then copy-4 of 4 at offset 2
    assert.deepEqual([...snappyDecompress(Uint8Array.of(6, ...lit([97, 98]), 3 | ((4 - 1) << 2), 2, 0, 0, 0), 100)], [97, 98, 97, 98, 97, 98]);
    // literal lengths written in 1, 2, 3 and 4 extra bytes (60..63)
    for (const [tag, extra] of [[60, [99]], [61, [99, 0]], [62, [99, 0, 0]], [63, [99, 0, 0, 0]]] as Array<[number, number[]]>) {
      const body = Uint8Array.of(100, tag << 2, ...extra, ...new Array(100).fill(5));
      assert.deepEqual(snappyDecompress(body, 100), new Uint8Array(100).fill(5), `literal tag ${tag}`);
    }
  });

  test('corrupt blocks are refused by name, never read or written out of bounds', () => {
    const cases: Array<[string, number[], RegExp]> = [
      ['empty input', [], /empty input/],
      ['truncated preamble', [0x80], /truncated length preamble/],
      ['preamble over 5 bytes', [0x80, 0x80, 0x80, 0x80, 0x80, 0x01], /longer than 5 bytes/],
      ['preamble over 2^32 - 1', [0xff, 0xff, 0xff, 0xff, 0x7f], /above 2\^32 - 1/],
      ['copy offset 0', [4, 0, 97, 1, 0], /copy offset 0/],
      ['copy before the start', [8, 0, 97, 1 | (3 << 2), 5], /copy offset 5 .* before the start/],
      ['literal past the input', [10, 9 << 2, 1, 2], /runs past the end of the input/],
      ['literal past the declared length', [2, 3 << 2, 1, 2, 3, 4], /more than the declared 2 bytes/],
      ['copy past the declared length', [5, 0, 97, 2 | (9 << 2), 1, 0], /more than the declared 5 bytes/],
      ['short of the declared length', [9, 1 << 2, 1, 2], /make 2 bytes, the preamble declares 9/],
      ['truncated literal length', [70, 60 << 2], /truncated literal length/],
      ['truncated 1-byte-offset copy', [5, 0, 97, 1], /truncated copy/],
      ['truncated 2-byte-offset copy', [5, 0, 97, 2, 1], /truncated copy/],
      ['truncated 4-byte-offset copy', [5, 0, 97, 3, 1, 0, 0], /truncated copy/],
    ];
    for (const [name, bytes, pattern] of cases) assertSnappyError(() => snappyDecompress(Uint8Array.from(bytes), MiB), 'corrupt', pattern);
  });

  test('a snappy bomb is refused from its preamble, naming the size, before anything is allocated', () => {
    // Five bytes claiming 4 GiB - 1: allocating first would take seconds (or fail); the check is instant.
    const bomb = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f, 0, 1);
    const started = performance.now();
    assertSnappyError(() => snappyDecompress(bomb, 10 * MiB), 'too-large', /claims 4294967295 bytes uncompressed, more than the limit of 10485760/);
    assert.ok(performance.now() - started < 50, 'refused without work');
    try {
      snappyDecompress(bomb, 10 * MiB);
    } catch (err) {
      assert.equal((err as SnappyError).claimedBytes, 4294967295);
    }
    // A real body one byte over the limit is refused the same way; at the limit it decodes.
    const body = snappyCompress(new Uint8Array(1001));
    assertSnappyError(() => snappyDecompress(body, 1000), 'too-large', /claims 1001 bytes/);
    assert.equal(snappyDecompress(body, 1001).length, 1001);
  });

  test('mutated, truncated and random blocks throw SnappyError or decode to exactly the declared length', () => {
    const random = prng(99);
    const originals = samples().filter((s) => s.bytes.length > 0 && s.bytes.length <= 200_000).map((s) => snappyCompress(s.bytes));
    let decoded = 0;
    let refused = 0;
    const attempt = (block: Uint8Array) => {
      try {
        const out = snappyDecompress(block, 4 * MiB);
        assert.equal(out.length, snappyUncompressedLength(block));
        decoded++;
      } catch (err) {
        assert.ok(err instanceof SnappyError, `only SnappyError escapes, got ${String((err as Error)?.stack ?? err)}`);
        refused++;
      }
    };
    for (let round = 0; round < 3000; round++) {
      const original = originals[round % originals.length];
      const block = original.slice(0, round % 3 === 0 ? Math.floor(random() * original.length) : original.length);
      for (let flips = 1 + Math.floor(random() * 4); flips > 0 && block.length > 0; flips--) block[Math.floor(random() * block.length)] ^= 1 << Math.floor(random() * 8);
      attempt(block);
    }
    for (let round = 0; round < 1000; round++) attempt(Uint8Array.from({ length: Math.floor(random() * 64) }, () => Math.floor(random() * 256)));
    assert.ok(decoded > 0 && refused > 0, `both outcomes seen (${decoded} decoded, ${refused} refused)`);
  });

  const libsnappy = referenceSnappy();
  test('against Google libsnappy (python3 ctypes): it decodes ours, we decode its', { skip: libsnappy === null ? 'libsnappy.so.1 is not installed (apt-get install libsnappy1v5)' : false }, () => {
    const inputs = samples();
    const theirs = libsnappy!('compress', inputs.map((s) => s.bytes));
    theirs.forEach((block, i) => assert.deepEqual(snappyDecompress(block, inputs[i].bytes.length), inputs[i].bytes, `we decode libsnappy's ${inputs[i].name}`));
    const ours = libsnappy!('uncompress', inputs.map((s) => snappyCompress(s.bytes)));
    ours.forEach((bytes, i) => assert.deepEqual(bytes, inputs[i].bytes, `libsnappy decodes our ${inputs[i].name}`));
  });
});

const REFERENCE_SCRIPT = `
import ctypes, sys, os
lib = ctypes.CDLL('libsnappy.so.1')
lib.snappy_max_compressed_length.restype = ctypes.c_size_t
mode, folder, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(count):
    data = open(os.path.join(folder, '%d.in' % i), 'rb').read()
    n = ctypes.c_size_t(0)
    if mode == 'compress':
        n.value = lib.snappy_max_compressed_length(ctypes.c_size_t(len(data)))
        status = 0
    else:
        status = lib.snappy_uncompressed_length(data, ctypes.c_size_t(len(data)), ctypes.byref(n))
    out = ctypes.create_string_buffer(max(1, n.value))
    if status == 0:
        fn = lib.snappy_compress if mode == 'compress' else lib.snappy_uncompress
        status = fn(data, ctypes.c_size_t(len(data)), out, ctypes.byref(n))
    if status != 0:
        sys.exit('snappy status %d on input %d' % (status, i))
    open(os.path.join(folder, '%d.out' % i), 'wb').write(out.raw[:n.value])
`;

/** libsnappy through python3's ctypes, or null when either is missing. */
function referenceSnappy(): ((mode: 'compress' | 'uncompress', inputs: Uint8Array[]) => Uint8Array[]) | null {
  const probe = spawnSync('python3', ['-c', "import ctypes; ctypes.CDLL('libsnappy.so.1')"], { stdio: 'ignore' });
  if (probe.status !== 0) return null;
  return (mode, inputs) => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'snappy-reference-'));
    try {
      inputs.forEach((bytes, i) => fs.writeFileSync(path.join(folder, `${i}.in`), bytes));
      const run = spawnSync('python3', ['-c', REFERENCE_SCRIPT, mode, folder, String(inputs.length)], { encoding: 'utf8' });
      assert.equal(run.status, 0, `libsnappy ${mode}: ${run.stderr}`);
      return inputs.map((_, i) => new Uint8Array(fs.readFileSync(path.join(folder, `${i}.out`))));
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  };
}
