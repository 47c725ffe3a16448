import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32c } from '../../workers/crc32.js';

/** Bit-at-a-time CRC-32C, the definition the table-driven code must match. */
function reference(bytes: Uint8Array, start: number, end: number): number {
  let crc = ~0;
  for (let i = start; i < end; i++) {
    crc ^= bytes[i]!;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return ~crc >>> 0;
}

test('CRC-32C check value and every start alignment, length and word/byte path', () => {
  assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
  const buf = new Uint8Array(600);
  for (let i = 0; i < buf.length; i++) buf[i] = (i * 2654435761) >>> 24;
  for (const view of [buf, buf.subarray(1), buf.subarray(2), buf.subarray(3)]) {
    for (let start = 0; start < 9; start++) {
      for (let end = start; end < 300; end += 13) assert.equal(crc32c(view, start, end), reference(view, start, end), `offset ${view.byteOffset}, ${start}..${end}`);
    }
  }
});
