// Finds the scope fields (organization, site, unit, grid) of a write body
// without decoding its points, so the main thread can pick the shard that
// owns the collection. Top-level keys are read; every other value is skipped
// structurally (strings, brackets), and the scan stops as soon as all four
// fields are known, which is immediate for bodies that put scope first.
// Anything unexpected returns what was found so far: the storage worker does
// the real validation, and decides the scope that is both checked against the
// caller's grant and written to (so a body that reads one way here and another
// way there gains nothing). `duplicateScopeKey` is the worker's check that no
// scope key appears twice, for the decoders that would silently keep the last
// (msgpack maps, the HSW1 scope object); the JSON scanner checks as it reads.

import { isCompleteScope as isComplete, isScopeField, SCOPE_FIELDS, type ScopeFields as PeekedScope } from '../shared/scope.js';

const decoder = new TextDecoder();

/**
 * The scope fields a body names, as far as a quick look tells; {} when it cannot tell, or when
 * a scope key comes twice before the four are known (the worker then refuses the body).
 */
export function peekScope(body: Uint8Array, contentType: string): PeekedScope {
  try {
    if (contentType.startsWith('application/octet-stream')) return peekBinary(body);
    if (contentType.startsWith('application/msgpack') || contentType.startsWith('application/x-msgpack')) return peekMsgpack(body);
    return peekJson(body);
  } catch {
    return {};
  }
}

/** Records a scope field; false for one seen before (the peek then gives up, see peekScope). */
function take(scope: PeekedScope, key: string, value: unknown): boolean {
  if (!isScopeField(key)) return true;
  if (scope[key] !== undefined) return false;
  if (typeof value === 'string') scope[key] = value;
  return true;
}

// ---- HSW1: the scope is a small JSON object in the header ----------------

function peekBinary(body: Uint8Array): PeekedScope {
  if (body.length < 14 || body[0] !== 0x48 || body[1] !== 0x53 || body[2] !== 0x57 || body[3] !== 0x31) return {};
  const length = body[12] | (body[13] << 8);
  if (duplicateJsonKey(body.subarray(14, 14 + length)) !== null) return {};
  const parsed = JSON.parse(decoder.decode(body.subarray(14, 14 + length))) as Record<string, unknown>;
  const scope: PeekedScope = {};
  for (const key of SCOPE_FIELDS) take(scope, key, parsed[key]);
  return scope;
}

// ---- JSON ----------------------------------------------------------------

function peekJson(b: Uint8Array): PeekedScope {
  const scope: PeekedScope = {};
  let i = skipSpace(b, 0);
  if (b[i] !== 0x7b) return scope;
  i++;
  for (;;) {
    i = skipSpace(b, i);
    if (b[i] !== 0x22) return scope;
    const keyEnd = stringEnd(b, i);
    const key = jsonKey(b, i, keyEnd);
    i = skipSpace(b, keyEnd + 1);
    if (b[i] !== 0x3a) return scope;
    i = skipSpace(b, i + 1);
    if (isScopeField(key) && b[i] === 0x22) {
      const end = stringEnd(b, i);
      if (!take(scope, key, JSON.parse(decoder.decode(b.subarray(i, end + 1))))) return {};
      i = end + 1;
      if (isComplete(scope)) return scope;
    } else {
      i = skipValue(b, i);
    }
    i = skipSpace(b, i);
    if (b[i] !== 0x2c) return scope;
    i++;
  }
}

/** A JSON key string's value: escapes (`"organ\u0069zation"`) decoded like any JSON reader does. */
function jsonKey(b: Uint8Array, open: number, close: number): string {
  const raw = b.subarray(open + 1, close);
  return raw.includes(0x5c) ? (JSON.parse(decoder.decode(b.subarray(open, close + 1))) as string) : decoder.decode(raw);
}

/**
 * The first scope key that appears more than once among the top-level keys of a msgpack body
 * or of an HSW1 body's scope object, or null. Keys are compared as decoded strings.
 */
export function duplicateScopeKey(body: Uint8Array, contentType: string): string | null {
  if (contentType.startsWith('application/octet-stream')) {
    if (body.length < 14) return null;
    const length = body[12] | (body[13] << 8);
    return duplicateJsonKey(body.subarray(14, 14 + length));
  }
  if (contentType.startsWith('application/msgpack') || contentType.startsWith('application/x-msgpack')) return duplicateMsgpackKey(body);
  return duplicateJsonKey(body);
}

function duplicateJsonKey(b: Uint8Array): string | null {
  const seen = new Set<string>();
  try {
    let i = skipSpace(b, 0);
    if (b[i] !== 0x7b) return null;
    i++;
    for (;;) {
      i = skipSpace(b, i);
      if (b[i] !== 0x22) return null;
      const keyEnd = stringEnd(b, i);
      const key = jsonKey(b, i, keyEnd);
      if (isScopeField(key)) {
        if (seen.has(key)) return key;
        seen.add(key);
      }
      i = skipSpace(b, keyEnd + 1);
      if (b[i] !== 0x3a) return null;
      i = skipValue(b, skipSpace(b, i + 1));
      i = skipSpace(b, i);
      if (b[i] !== 0x2c) return null;
      i++;
    }
  } catch {
    return null; // malformed: the decoder reports it
  }
}

function duplicateMsgpackKey(b: Uint8Array): string | null {
  const seen = new Set<string>();
  try {
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const map = readMapHeader(b, view);
    if (!map) return null;
    let i = map.next;
    for (let e = 0; e < map.entries; e++) {
      const key = readMsgpackString(b, view, i);
      if (key) {
        if (isScopeField(key.value)) {
          if (seen.has(key.value)) return key.value;
          seen.add(key.value);
        }
        i = key.next;
      } else {
        i = skipMsgpack(b, view, i);
      }
      i = skipMsgpack(b, view, i);
    }
    return null;
  } catch {
    return null;
  }
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}

/** Index of the closing quote of the string starting at `i`. */
function stringEnd(b: Uint8Array, i: number): number {
  for (let j = i + 1; j < b.length; j++) {
    if (b[j] === 0x5c) j++;
    else if (b[j] === 0x22) return j;
  }
  throw new Error('unterminated string');
}

/** Index just past the value starting at `i`: nested brackets counted, strings skipped whole. */
function skipValue(b: Uint8Array, i: number): number {
  const first = b[i];
  if (first === 0x22) return stringEnd(b, i) + 1;
  if (first !== 0x7b && first !== 0x5b) {
    while (i < b.length && b[i] !== 0x2c && b[i] !== 0x7d && b[i] !== 0x5d) i++;
    return i;
  }
  let depth = 0;
  for (; i < b.length; i++) {
    const c = b[i];
    if (c === 0x22) i = stringEnd(b, i);
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  throw new Error('unterminated value');
}

// ---- msgpack -------------------------------------------------------------

/** The entry count of a msgpack map at the start of the body and where its first key starts; null when the body is no map. */
function readMapHeader(b: Uint8Array, view: DataView): { entries: number; next: number } | null {
  const t = b[0];
  if (t >= 0x80 && t <= 0x8f) return { entries: t & 0x0f, next: 1 };
  if (t === 0xde) return { entries: view.getUint16(1), next: 3 };
  if (t === 0xdf) return { entries: view.getUint32(1), next: 5 };
  return null;
}

function peekMsgpack(b: Uint8Array): PeekedScope {
  const scope: PeekedScope = {};
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const map = readMapHeader(b, view);
  if (!map) return scope;
  let i = map.next;
  for (let e = 0; e < map.entries; e++) {
    const key = readMsgpackString(b, view, i);
    if (!key) return scope;
    i = key.next;
    if (isScopeField(key.value)) {
      const value = readMsgpackString(b, view, i);
      if (!value) return scope;
      if (!take(scope, key.value, value.value)) return {};
      i = value.next;
      if (isComplete(scope)) return scope;
    } else {
      i = skipMsgpack(b, view, i);
    }
  }
  return scope;
}

function readMsgpackString(b: Uint8Array, view: DataView, i: number): { value: string; next: number } | null {
  const t = b[i];
  let length: number;
  let start: number;
  if (t >= 0xa0 && t <= 0xbf) {
    length = t & 0x1f;
    start = i + 1;
  } else if (t === 0xd9) {
    length = b[i + 1];
    start = i + 2;
  } else if (t === 0xda) {
    length = view.getUint16(i + 1);
    start = i + 3;
  } else if (t === 0xdb) {
    length = view.getUint32(i + 1);
    start = i + 5;
  } else return null;
  return { value: decoder.decode(b.subarray(start, start + length)), next: start + length };
}

/** Index just past the msgpack value at `i`. */
function skipMsgpack(b: Uint8Array, view: DataView, i: number): number {
  let pending = 1;
  while (pending > 0) {
    if (i >= b.length) throw new Error('truncated msgpack');
    pending--;
    const t = b[i];
    if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) i += 1;
    else if (t >= 0x80 && t <= 0x8f) { pending += 2 * (t & 0x0f); i += 1; }
    else if (t >= 0x90 && t <= 0x9f) { pending += t & 0x0f; i += 1; }
    else if (t >= 0xa0 && t <= 0xbf) i += 1 + (t & 0x1f);
    else if (t === 0xcc || t === 0xd0) i += 2;
    else if (t === 0xcd || t === 0xd1) i += 3;
    else if (t === 0xca || t === 0xce || t === 0xd2) i += 5;
    else if (t === 0xcb || t === 0xcf || t === 0xd3) i += 9;
    else if (t === 0xd9 || t === 0xc4) i += 2 + b[i + 1];
    else if (t === 0xda || t === 0xc5) i += 3 + view.getUint16(i + 1);
    else if (t === 0xdb || t === 0xc6) i += 5 + view.getUint32(i + 1);
    else if (t === 0xdc) { pending += view.getUint16(i + 1); i += 3; }
    else if (t === 0xdd) { pending += view.getUint32(i + 1); i += 5; }
    else if (t === 0xde) { pending += 2 * view.getUint16(i + 1); i += 3; }
    else if (t === 0xdf) { pending += 2 * view.getUint32(i + 1); i += 5; }
    else if (t === 0xd4) i += 3;
    else if (t === 0xd5) i += 4;
    else if (t === 0xd6) i += 6;
    else if (t === 0xd7) i += 10;
    else if (t === 0xd8) i += 18;
    else if (t === 0xc7) i += 3 + b[i + 1];
    else if (t === 0xc8) i += 4 + view.getUint16(i + 1);
    else if (t === 0xc9) i += 6 + view.getUint32(i + 1);
    else throw new Error(`unknown msgpack type 0x${t.toString(16)}`);
  }
  return i;
}
