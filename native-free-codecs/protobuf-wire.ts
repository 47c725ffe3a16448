/**
 * The protobuf wire format by hand, for the Prometheus remote write and read messages
 * (prom-remote.ts): a reader over untrusted bytes and a writer of exactly sized messages. Pure
 * TypeScript: runs in a browser.
 *
 * A message is a sequence of fields, each a varint key `field number << 3 | wire type` and a
 * payload: 0 varint (up to 10 bytes, 64 bits), 1 eight bytes, 2 a varint length and that many
 * bytes (strings, bytes, sub-messages, packed repeated scalars), 5 four bytes; 3 and 4 open and
 * close a group (deprecated, still skipped correctly). Fields may come in any order and repeat;
 * unknown ones are skipped whatever their wire type.
 *
 * The reader throws WriteBodyError `malformed` (HTTP 400 on the write routes) for anything a
 * valid encoder cannot have produced: truncation, a varint over 10 bytes, field number 0, wire
 * types 6 and 7, unbalanced groups, a length past the enclosing message.
 */

import { malformed } from './point-batch.js';

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LENGTH_DELIMITED = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

/** 2^32, for varints assembled without 64-bit integers. */
const TWO_POW_32 = 4294967296;
const TWO_POW_63 = 9223372036854775808;
/** Groups nested deeper than this are refused (a recursion bound on hostile input). */
const MAX_GROUP_DEPTH = 32;

/** Typed-array views read the host's byte order; the f64 copies below assume little-endian or swap. */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class ProtoReader {
  pos: number;

  constructor(
    readonly buf: Uint8Array,
    start = 0,
    /** Where the bytes the reader may read end. */
    public end = buf.length,
  ) {
    this.pos = start;
  }

  /** The two 32-bit halves of the last varint read past its first four bytes (see words()). */
  private high = 0;
  private low = 0;

  /**
   * A varint as a number: exact below 2^53; 2^53 or more when the encoded value is (a negative
   * int64 is 10 bytes of two's complement, so it reads as 2^63 or more: see int64()).
   */
  varint(): number {
    const buf = this.buf;
    const p = this.pos;
    if (p < this.end && buf[p] < 0x80) {
      this.pos = p + 1;
      return buf[p];
    }
    this.words();
    return this.high * TWO_POW_32 + this.low;
  }

  /** An int64 field: negative values are 10-byte varints of their two's complement. Exact within ±2^53. */
  int64(): number {
    const v = this.varint();
    if (v < TWO_POW_63) return v;
    return (this.high - TWO_POW_32) * TWO_POW_32 + this.low;
  }

  /** Reads a varint into this.high and this.low, in 32-bit arithmetic (no BigInt). */
  private words(): void {
    const buf = this.buf;
    const end = this.end;
    const at = this.pos;
    let p = at;
    let low = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (p >= end) malformed(`protobuf: truncated varint at byte ${at}`);
      const b = buf[p++];
      low |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = p;
        this.low = low >>> 0;
        this.high = 0;
        return;
      }
    }
    let high = 0;
    for (let i = 4; i < 10; i++) {
      if (p >= end) malformed(`protobuf: truncated varint at byte ${at}`);
      const b = buf[p++];
      if (i === 4) {
        // bits 28..34: the low four end the low word, the other three start the high one
        low = (low | ((b & 0x0f) << 28)) >>> 0;
        high = (b & 0x70) >>> 4;
      } else {
        high = (high | ((b & 0x7f) << (7 * i - 32))) >>> 0;
      }
      if (b < 0x80) {
        if (i === 9 && b > 1) malformed(`protobuf: varint above 64 bits at byte ${at}`);
        this.pos = p;
        this.low = low;
        this.high = high;
        return;
      }
    }
    malformed(`protobuf: varint longer than 10 bytes at byte ${at}`);
  }

  /** A field key: the field number (never 0) * 8 + wire type. */
  key(): number {
    const at = this.pos;
    const key = this.varint();
    if (key < 8) malformed(`protobuf: field number 0 at byte ${at}`);
    if (key > 0xffffffff) malformed(`protobuf: field key above 32 bits at byte ${at}`);
    return key;
  }

  /** Reads a length prefix and returns where the delimited bytes end (checked against the enclosing end). */
  delimitedEnd(what: string): number {
    const at = this.pos;
    const length = this.varint();
    if (length > this.end - this.pos) malformed(`protobuf: ${what} of ${length} bytes at byte ${at} runs past its enclosing message (${this.end - this.pos} bytes left)`);
    return this.pos + length;
  }

  /** Checks that `n` fixed bytes are there and returns where they start. */
  fixed(n: number, what: string): number {
    const at = this.pos;
    if (n > this.end - at) malformed(`protobuf: truncated ${what} at byte ${at}`);
    this.pos = at + n;
    return at;
  }

  /** The f64 in the 8 bytes at `at` written into element `index` of a Float64Array's bytes, bit for bit (NaN payloads kept). */
  copyDouble(at: number, outBytes: Uint8Array, index: number): void {
    const buf = this.buf;
    const o = index * 8;
    if (HOST_LITTLE_ENDIAN) {
      for (let k = 0; k < 8; k++) outBytes[o + k] = buf[at + k];
    } else {
      for (let k = 0; k < 8; k++) outBytes[o + k] = buf[at + 7 - k];
    }
  }

  /** Skips the payload of a field with this key (any wire type; groups to their matching end). */
  skip(key: number, depth = 0): void {
    const wire = key & 7;
    switch (wire) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_FIXED64:
        this.fixed(8, 'fixed64 field');
        return;
      case WIRE_LENGTH_DELIMITED:
        this.pos = this.delimitedEnd('length-delimited field');
        return;
      case WIRE_FIXED32:
        this.fixed(4, 'fixed32 field');
        return;
      case WIRE_START_GROUP: {
        if (depth >= MAX_GROUP_DEPTH) malformed(`protobuf: groups nested deeper than ${MAX_GROUP_DEPTH}`);
        const field = Math.floor(key / 8);
        for (;;) {
          if (this.pos >= this.end) malformed(`protobuf: group of field ${field} is not closed`);
          const inner = this.key();
          if ((inner & 7) === WIRE_END_GROUP) {
            if (Math.floor(inner / 8) !== field) malformed(`protobuf: group of field ${field} closed as field ${Math.floor(inner / 8)}`);
            return;
          }
          this.skip(inner, depth + 1);
        }
      }
      case WIRE_END_GROUP:
        return malformed(`protobuf: end of group of field ${Math.floor(key / 8)} with no group open, before byte ${this.pos}`);
      default:
        return malformed(`protobuf: wire type ${wire} (field ${Math.floor(key / 8)}) does not exist, before byte ${this.pos}`);
    }
  }

  /** Refuses a known field sent with another wire type (as gogo-protobuf, which Prometheus uses, does). */
  expectWire(key: number, wire: number, what: string): void {
    if ((key & 7) !== wire) malformed(`protobuf: ${what} (field ${Math.floor(key / 8)}) has wire type ${key & 7}, expected ${wire}, before byte ${this.pos}`);
  }
}

// ---- writing -------------------------------------------------------------------------------

/** Bytes a varint of `value` (0..2^53, or a negative int64 as its 10 bytes) takes. */
export function varintSize(value: number): number {
  if (value < 0) return 10;
  let n = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

/** Bytes of a length-delimited field: key, length, payload. */
export function delimitedSize(field: number, payloadBytes: number): number {
  return varintSize(field * 8) + varintSize(payloadBytes) + payloadBytes;
}

/** Writes into a buffer of the exact size the caller computed with the *Size helpers. */
export class ProtoWriter {
  readonly buf: Uint8Array;
  pos = 0;

  constructor(size: number) {
    this.buf = new Uint8Array(size);
  }

  /** A non-negative integer below 2^53, or a negative one as the 10-byte two's complement of an int64. */
  varint(value: number): void {
    const buf = this.buf;
    let p = this.pos;
    if (value < 0) {
      // two's complement over 64 bits: low word and high word, then the usual 7-bit groups
      let low = value % TWO_POW_32;
      let high = Math.floor(value / TWO_POW_32);
      low = low < 0 ? low + TWO_POW_32 : low;
      high = (high + TWO_POW_32) % TWO_POW_32;
      for (let i = 0; i < 9; i++) {
        buf[p++] = (low & 0x7f) | 0x80;
        low = (low >>> 7) | ((high & 0x7f) << 25);
        low >>>= 0;
        high >>>= 7;
      }
      buf[p++] = low & 1;
      this.pos = p;
      return;
    }
    while (value >= 128) {
      buf[p++] = (value % 128) | 0x80;
      value = Math.floor(value / 128);
    }
    buf[p++] = value;
    this.pos = p;
  }

  key(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** Key and length of a length-delimited field whose payload follows. */
  delimited(field: number, payloadBytes: number): void {
    this.key(field, WIRE_LENGTH_DELIMITED);
    this.varint(payloadBytes);
  }

  bytes(field: number, payload: Uint8Array): void {
    this.delimited(field, payload.length);
    this.buf.set(payload, this.pos);
    this.pos += payload.length;
  }

  /** A double field copied bit for bit from element `index` of a Float64Array's bytes (NaN payloads kept). */
  double(field: number, sourceBytes: Uint8Array, index: number): void {
    this.key(field, WIRE_FIXED64);
    const buf = this.buf;
    const p = this.pos;
    const o = index * 8;
    if (HOST_LITTLE_ENDIAN) for (let k = 0; k < 8; k++) buf[p + k] = sourceBytes[o + k];
    else for (let k = 0; k < 8; k++) buf[p + k] = sourceBytes[o + 7 - k];
    this.pos = p + 8;
  }
}
