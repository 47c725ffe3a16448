// How a write entry's body is kept in the replication log and shipped (issue 33): packed, not as
// received. The leader packs once when it logs the write; secondaries keep and ship the packed
// bytes as they came, and unpack only to store the points.
//
// The packing is named by the entry's meta (`z`), so entries logged before it (no `z`: the body as
// received) read as before:
// - `cols`: an HSW1 body (already columnar) with its timestamps and each tag's values coded as the
//   storage codes a sealed block (native-free-codecs/columns.ts: delta-of-delta timestamps,
//   decimal-scaled or float values, every bit kept); the rest of the body (header, scope, names,
//   padding) as it is. 0.38 B/point on the bench data set against 8.8 as received, at a third of
//   brotli's CPU. The column decoders read every codec version, so an entry outlives a bump.
// - `br-dts`: an HSW1 body whose timestamps `cols` cannot code (not whole, or falling) with them
//   replaced by their differences, then brotli (quality 2).
// - `br`: brotli (quality 2) of any other body.
// A body that arrived compressed (gzip, snappy) is kept as it is.

import zlib from 'node:zlib';
import { ByteReader, ByteWriter, decodeTimestamps, decodeValues, encodeTimestamps, encodeValues, VALUES_MODE_SCALED_PACKED } from '../../native-free-codecs/columns.js';

export type BodyPacking = 'cols' | 'br' | 'br-dts';

/** Float64Array views of the body read the host's byte order: `cols` is written on little-endian hosts only. */
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const align8 = (n: number) => (n + 7) & ~7;

const HSW1_MAGIC = 0x31575348;
const HSW1_HEADER_BYTES = 14;
/** Below this, packing saves less than it costs. */
const MIN_PACKED_BYTES = 128;
const BROTLI_OPTIONS = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 2 } };

/** Where an HSW1 body's timestamps are, or null when `body` is not HSW1 (or is cut short). */
function hsw1Timestamps(body: Uint8Array): { offset: number; rows: number } | null {
  if (body.byteLength < HSW1_HEADER_BYTES) return null;
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (view.getUint32(0, true) !== HSW1_MAGIC) return null;
  const rows = view.getUint32(8, true);
  const offset = (HSW1_HEADER_BYTES + view.getUint16(12, true) + 7) & ~7;
  return offset + rows * 8 <= body.byteLength ? { offset, rows } : null;
}

/**
 * Differences of consecutive timestamps in place (a copy of `body`); null when one is not a safe
 * whole number (its difference would not give it back exactly): then the body is packed as it is.
 */
function differenced(body: Uint8Array, at: { offset: number; rows: number }): Buffer | null {
  const copy = Buffer.from(body);
  const view = new DataView(copy.buffer, copy.byteOffset, copy.byteLength);
  let prev = 0;
  for (let i = 0; i < at.rows; i++) {
    const p = at.offset + i * 8;
    const ts = view.getFloat64(p, true);
    if (!Number.isSafeInteger(ts)) return null;
    view.setFloat64(p, ts - prev, true);
    prev = ts;
  }
  return copy;
}

function undifferenced(body: Buffer): Buffer {
  const at = hsw1Timestamps(body);
  if (!at) throw new Error('a br-dts log entry whose body is not HSW1');
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let prev = 0;
  for (let i = 0; i < at.rows; i++) {
    const p = at.offset + i * 8;
    prev += view.getFloat64(p, true);
    view.setFloat64(p, prev, true);
  }
  return body;
}

/**
 * `cols`: u32 skeleton length, the skeleton (every byte of the body that is not an f64 array: the
 * header, scope and padding, then each tag's name and padding), the timestamps column, each tag's
 * values column. Null when the body does not walk as HSW1 or its timestamps are not whole,
 * non-negative and non-decreasing.
 */
function packColumns(body: Uint8Array, at: { offset: number; rows: number }): Uint8Array | null {
  if (!HOST_LE) return null;
  if (body.byteOffset % 8 !== 0) body = new Uint8Array(body); // aligned, for the f64 views
  const { offset, rows } = at;
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const ts = new Float64Array(body.buffer, body.byteOffset + offset, rows);
  for (let i = 0; i < rows; i++) {
    const t = ts[i]!;
    if (!Number.isSafeInteger(t) || t < 0 || (i > 0 && t < ts[i - 1]!)) return null;
  }
  const tags = view.getUint32(4, true);
  const heads: Array<[number, number]> = [[0, offset]];
  const valueOffsets: number[] = [];
  let off = offset + rows * 8;
  for (let t = 0; t < tags; t++) {
    if (off + 2 > body.byteLength) return null;
    const end = align8(off + 2 + view.getUint16(off, true));
    if (end + rows * 8 > body.byteLength) return null;
    heads.push([off, end]);
    valueOffsets.push(end);
    off = end + rows * 8;
  }
  if (off !== body.byteLength) return null;
  const w = new ByteWriter(Math.max(1024, body.byteLength >>> 3));
  const skeleton = heads.reduce((n, [from, to]) => n + to - from, 0);
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, skeleton, true);
  w.raw(length);
  for (const [from, to] of heads) w.raw(body.subarray(from, to));
  encodeTimestamps(ts, rows, w);
  // Bit-packed deltas (mode 3), not the storage's choice of the shortest: rANS (mode 4) saves a
  // fifth of these bytes for twice the CPU, and a log entry lives only until every node holds it.
  for (const v of valueOffsets) encodeValues(new Float64Array(body.buffer, body.byteOffset + v, rows), rows, w, VALUES_MODE_SCALED_PACKED);
  return w.bytes().slice();
}

function unpackColumns(packed: Uint8Array): Uint8Array {
  const pv = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const skeletonBytes = pv.getUint32(0, true);
  const skeleton = packed.subarray(4, 4 + skeletonBytes);
  const sv = new DataView(skeleton.buffer, skeleton.byteOffset, skeleton.byteLength);
  const tags = sv.getUint32(4, true);
  const rows = sv.getUint32(8, true);
  const prefix = align8(HSW1_HEADER_BYTES + sv.getUint16(12, true));
  const out = new Uint8Array(skeletonBytes + (1 + tags) * rows * 8); // offset 0: aligned
  const ov = new DataView(out.buffer);
  const r = new ByteReader(packed, 4 + skeletonBytes);
  out.set(skeleton.subarray(0, prefix), 0);
  decodeTimestamps(r, rows, new Float64Array(out.buffer, prefix, rows));
  let s = prefix;
  let o = prefix + rows * 8;
  for (let t = 0; t < tags; t++) {
    const head = align8(2 + sv.getUint16(s, true));
    out.set(skeleton.subarray(s, s + head), o);
    s += head;
    o += head;
    decodeValues(r, rows, new Float64Array(out.buffer, o, rows));
    o += rows * 8;
  }
  if (s !== skeletonBytes || o !== out.byteLength || ov.getUint32(0, true) !== HSW1_MAGIC) throw new Error('a cols log entry that does not rebuild an HSW1 body');
  return out;
}

/** The body to log for a write and how it is packed (undefined: kept as received). */
export function packBody(body: Uint8Array, contentEncoding: string | undefined): { body: Uint8Array; z?: BodyPacking } {
  if (contentEncoding || body.byteLength < MIN_PACKED_BYTES) return { body };
  const at = hsw1Timestamps(body);
  const cols = at ? packColumns(body, at) : null;
  if (cols) return { body: cols, z: 'cols' };
  const diffed = at ? differenced(body, at) : null;
  if (diffed) return { body: zlib.brotliCompressSync(diffed, BROTLI_OPTIONS), z: 'br-dts' };
  const packed = zlib.brotliCompressSync(body, BROTLI_OPTIONS);
  return packed.byteLength < body.byteLength ? { body: packed, z: 'br' } : { body };
}

/** The write body as it was received, from a logged entry's body and its `z`. */
export function unpackBody(body: Uint8Array, z: string | undefined): Uint8Array {
  switch (z) {
    case undefined:
      return body;
    case 'br':
      return zlib.brotliDecompressSync(body);
    case 'br-dts':
      return undifferenced(zlib.brotliDecompressSync(body));
    case 'cols':
      return unpackColumns(body);
    default:
      throw new Error(`a log entry packed as ${JSON.stringify(z)}, which this build does not know`);
  }
}
