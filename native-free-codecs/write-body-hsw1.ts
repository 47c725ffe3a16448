/**
 * HSW1, the binary columnar write batch (byte diagram in README.md): decoder and encoder.
 * Pure TypeScript: runs in a browser.
 */

import { SCOPE_FIELDS } from '../shared/scope.js';
import { BatchBuilder, entriesOf, isTimestamp, malformed, q, scopeOf, timestampProblem, utf8Encoder, utf8String, WriteBodyError, type DecodeLimits, type PointBatch, type WriteScope } from './point-batch.js';

/** Typed-array views read the host's byte order; only a little-endian host may view in place. */
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const BINARY_MAGIC = 0x31575348; // "HSW1" read as a little-endian u32
const BINARY_HEADER_BYTES = 14;
const MAX_U16 = 0xffff;

function align8(n: number): number {
  return (n + 7) & ~7;
}

/** n f64s at byte `offset` of an 8-aligned body: a view on little-endian hosts, else a copy. */
function f64s(bytes: Uint8Array, offset: number, n: number): Float64Array {
  if (HOST_LE) return new Float64Array(bytes.buffer, bytes.byteOffset + offset, n);
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, n * 8);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
  return out;
}

function binaryScope(bytes: Uint8Array): WriteScope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8String(bytes, 0, bytes.length, 'binary batch: the scope'));
  } catch (err) {
    if (err instanceof WriteBodyError) throw err;
    malformed('binary batch: the scope is not valid JSON');
  }
  const entries = entriesOf(parsed);
  if (entries === null) malformed('binary batch: the scope must be a JSON object');
  return scopeOf(entries, 'binary batch: ');
}

/**
 * Decodes an `application/octet-stream` write body ("HSW1"). NaN values are gaps; ±Infinity and
 * invalid timestamps are rejected; wrong lengths (truncated or trailing bytes) are malformed.
 */
export function decodeBinaryBatch(bytes: Uint8Array, limits: DecodeLimits = {}): PointBatch {
  // The format pads every f64 array to a multiple of 8 from the body's start, so one aligned
  // copy of a misaligned body lets every array be viewed in place.
  // (new Uint8Array(view) copies; a Node Buffer's slice() would not.)
  if (bytes.byteOffset % 8 !== 0) bytes = new Uint8Array(bytes);
  const len = bytes.length;
  if (len < BINARY_HEADER_BYTES) malformed(`binary batch: ${len} bytes is shorter than the ${BINARY_HEADER_BYTES}-byte header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  if (dv.getUint32(0, true) !== BINARY_MAGIC) malformed('binary batch: does not start with "HSW1"');
  const tagCount = dv.getUint32(4, true);
  const rowCount = dv.getUint32(8, true);
  const scopeLength = dv.getUint16(12, true);
  let off = BINARY_HEADER_BYTES + scopeLength;
  if (off > len) malformed(`binary batch: truncated scope (${scopeLength} bytes declared, ${len - BINARY_HEADER_BYTES} present)`);
  const scope = binaryScope(bytes.subarray(BINARY_HEADER_BYTES, off));
  off = align8(off);
  if (off > len) malformed(`binary batch: truncated padding after the scope (the timestamps start at byte ${off}, the body has ${len})`);
  const columnBytes = rowCount * 8;
  if (off + columnBytes > len) {
    malformed(`binary batch: truncated timestamps (${rowCount} rows need ${columnBytes} bytes at byte ${off}, ${Math.max(0, len - off)} present)`);
  }
  const rowTs = f64s(bytes, off, rowCount);
  off += columnBytes;
  // Each tag takes at least 8 bytes of header and padding plus its values: refuse a count the
  // body cannot hold before allocating anything for it.
  const room = Math.floor((len - off) / (8 + columnBytes));
  if (tagCount > room) malformed(`binary batch: truncated (${tagCount} tags declared, the body holds at most ${room})`);

  const names: string[] = [];
  const valueOffsets: number[] = [];
  for (let t = 0; t < tagCount; t++) {
    if (off + 2 > len) malformed(`binary batch: truncated at the name length of tag ${t}`);
    const nameStart = off + 2;
    const nameEnd = nameStart + dv.getUint16(off, true);
    if (nameEnd > len) malformed(`binary batch: truncated name of tag ${t}`);
    const name = utf8String(bytes, nameStart, nameEnd, `binary batch: the name of tag ${t}`);
    off = align8(nameEnd);
    if (off + columnBytes > len) {
      malformed(`binary batch: truncated values of tag ${t} ${q(name)} (${columnBytes} bytes at byte ${off}, ${Math.max(0, len - off)} present)`);
    }
    names.push(name);
    valueOffsets.push(off);
    off += columnBytes;
  }
  if (off !== len) malformed(`binary batch: ${len - off} bytes after the last tag`);

  const out = new BatchBuilder(tagCount * rowCount, limits);
  const minTs = out.minTimestampMs;
  for (let r = 0; r < rowCount; r++) {
    if (!isTimestamp(rowTs[r], minTs)) {
      out.reject(`timestamps index ${r}: ${timestampProblem(rowTs[r], minTs)}`);
      break;
    }
  }
  for (let t = 0; t < tagCount; t++) {
    const tag = out.openTag(names[t]);
    out.appendRows(f64s(bytes, valueOffsets[t], rowCount), 0, rowTs, rowCount, tag);
  }
  return out.finish(scope);
}

function writeF64s(buf: Uint8Array, dv: DataView, offset: number, src: Float64Array | readonly number[]): void {
  if (HOST_LE) new Float64Array(buf.buffer, buf.byteOffset + offset, src.length).set(src);
  else for (let i = 0; i < src.length; i++) dv.setFloat64(offset + i * 8, src[i], true);
}

/**
 * Encodes a binary write batch ("HSW1"); for clients and tests. Every column must be as long
 * as `timestamps` (NaN = no value). Values are written as given: the server validates them.
 */
export function encodeBinaryBatch(
  scope: WriteScope,
  timestamps: Float64Array | readonly number[],
  columns: ReadonlyArray<{ name: string; values: Float64Array | readonly number[] }>,
): Uint8Array {
  const rows = timestamps.length;
  const scopeFields: WriteScope = {};
  for (const name of SCOPE_FIELDS) if (typeof scope[name] === 'string') scopeFields[name] = scope[name];
  const scopeBytes = utf8Encoder.encode(JSON.stringify(scopeFields));
  if (scopeBytes.length > MAX_U16) throw new RangeError(`encodeBinaryBatch: scope of ${scopeBytes.length} bytes exceeds ${MAX_U16}`);
  const nameBytes = columns.map((column) => {
    const encoded = utf8Encoder.encode(column.name);
    if (encoded.length > MAX_U16) throw new RangeError(`encodeBinaryBatch: tag name ${q(column.name)} exceeds ${MAX_U16} bytes`);
    if (column.values.length !== rows) {
      throw new RangeError(`encodeBinaryBatch: column ${q(column.name)} has ${column.values.length} values, timestamps has ${rows}`);
    }
    return encoded;
  });
  let size = align8(BINARY_HEADER_BYTES + scopeBytes.length) + rows * 8;
  for (const name of nameBytes) size += align8(2 + name.length) + rows * 8;

  const buf = new Uint8Array(size); // zero-filled, so the padding is already written
  const dv = new DataView(buf.buffer);
  dv.setUint32(0, BINARY_MAGIC, true);
  dv.setUint32(4, columns.length, true);
  dv.setUint32(8, rows, true);
  dv.setUint16(12, scopeBytes.length, true);
  buf.set(scopeBytes, BINARY_HEADER_BYTES);
  let off = align8(BINARY_HEADER_BYTES + scopeBytes.length);
  writeF64s(buf, dv, off, timestamps);
  off += rows * 8;
  for (let t = 0; t < columns.length; t++) {
    dv.setUint16(off, nameBytes[t].length, true);
    buf.set(nameBytes[t], off + 2);
    off = align8(off + 2 + nameBytes[t].length);
    writeF64s(buf, dv, off, columns[t].values);
    off += rows * 8;
  }
  return buf;
}
