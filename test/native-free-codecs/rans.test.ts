import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normaliseFrequencies, ransBoundBytes, ransDecode, ransEncode, RANS_MAX_SYMBOLS, RANS_TOTAL } from '../../native-free-codecs/rans.js';
import { prng } from '../support/prng.js';

test('frequencies sum to 4096, every counted symbol keeps at least 1, uncounted ones get 0', () => {
  const rnd = prng(9);
  const cases: Array<(s: number) => number> = [
    () => 1, // 1024 singletons: all round to 1 of 4096, the rest goes to one symbol
    (s) => (s % 3 === 0 ? 0 : Math.floor(rnd() * 1000)),
    (s) => (s === 0 ? 1_000_000 : 1), // one dominant symbol, many rare ones
    (s) => (s < 2 ? 1 : 0),
  ];
  for (const [i, count] of cases.entries()) {
    const counts = Uint32Array.from({ length: RANS_MAX_SYMBOLS }, (_, s) => count(s));
    if (counts.every((c) => c === 0)) counts[0] = 1;
    const freqs = new Uint16Array(RANS_MAX_SYMBOLS);
    normaliseFrequencies(counts, RANS_MAX_SYMBOLS, freqs);
    assert.equal(freqs.reduce((a, b) => a + b, 0), RANS_TOTAL, `case ${i}`);
    for (let s = 0; s < RANS_MAX_SYMBOLS; s++) assert.equal(freqs[s]! > 0, counts[s]! > 0, `case ${i}, symbol ${s}`);
  }
});

test('encode then decode gives the symbols back; the stream stays within its bound', () => {
  const rnd = prng(4);
  for (const [n, size] of [[1, 1], [1, 2], [1000, 1], [5000, 3], [20_000, 91], [3000, 1024]] as const) {
    const symbols = Uint16Array.from({ length: n }, () => Math.floor(rnd() ** 2 * size));
    const counts = new Uint32Array(size);
    for (const s of symbols) counts[s]!++;
    const freqs = new Uint16Array(size);
    normaliseFrequencies(counts, size, freqs);
    const out = new Uint8Array(ransBoundBytes(n));
    const start = ransEncode(symbols, n, freqs, size, out);
    assert.ok(start >= 0);
    const back = new Uint16Array(n);
    assert.equal(ransDecode(out, start, out.length, freqs, size, back, n), null, `${n} symbols of ${size}`);
    assert.deepEqual(back, symbols);
    // Decoding one symbol more than was coded is caught, except when one symbol has all 4096
    // slots: such symbols carry no information (the count comes from the block header).
    if (freqs.filter((f) => f > 0).length > 1) assert.notEqual(ransDecode(out, start, out.length, freqs, size, new Uint16Array(n + 1), n + 1), null);
  }
});
