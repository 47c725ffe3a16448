// Nesting limits for decoded request bodies. A body nested thousands of
// levels deep decodes fine (V8's JSON.parse does not recurse) but then
// overflows the stack of every recursive walk after it (JSON.stringify,
// schema validation), and SQLite refuses to read JSON deeper than 1000 levels,
// so one such stored row would break every filtered query on its table. The
// depth is therefore checked before a body is decoded: over the raw JSON
// bytes in one pass, and over decoded msgpack values without recursion.

import { ServiceError } from '../../shared/errors.js';

/** Default of `server.maxJsonDepth`. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

let maxJsonDepth = DEFAULT_MAX_JSON_DEPTH;

/** Sets the limit the checks below apply (`server.maxJsonDepth`); called once at start. */
export function configureBodyGuard(options: { maxJsonDepth: number }): void {
  maxJsonDepth = options.maxJsonDepth;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether JSON bytes open more than `maxDepth` objects and arrays inside each
 * other. One pass, brackets inside strings ignored; malformed input is left
 * for the parser to refuse. Stops at the first level past the limit.
 */
export function jsonBytesNestDeeperThan(bytes: Uint8Array, maxDepth: number): boolean {
  let depth = 0;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      // skip the string; a backslash escapes the byte after it
      for (i++; i < length; i++) {
        const inner = bytes[i];
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** The same test over JSON text (stored meta_data); the characters that matter are ASCII, so UTF-16 code units work alike. */
export function jsonTextNestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      for (i++; i < length; i++) {
        const inner = text.charCodeAt(i);
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * Whether a decoded value nests arrays, objects, Maps and Sets more than
 * `maxDepth` levels deep. Iterative, with an explicit stack; stops at the
 * first level past the limit, so a cycle is refused rather than followed.
 */
export function valueNestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const pending: unknown[] = [value];
  const depths: number[] = [0];
  while (pending.length > 0) {
    const item = pending.pop();
    const depth = depths.pop()!;
    if (item === null || typeof item !== 'object' || ArrayBuffer.isView(item) || item instanceof ArrayBuffer || item instanceof Date) {
      continue; // scalars, byte arrays, dates: leaves
    }
    let children: Iterable<unknown>;
    if (Array.isArray(item)) children = item;
    else if (item instanceof Map || item instanceof Set) children = item.values();
    else children = Object.values(item); // plain objects, and records a decoder built with a class of its own
    if (depth + 1 > maxDepth) return true;
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        pending.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

function tooDeep(): ServiceError {
  return new ServiceError('BAD_REQUEST', `request body nests objects and arrays more than ${maxJsonDepth} levels deep (server.maxJsonDepth)`);
}

/** 400 naming `server.maxJsonDepth` when a JSON body nests too deeply; run before JSON.parse. */
export function checkJsonBodyDepth(bytes: Uint8Array): void {
  if (jsonBytesNestDeeperThan(bytes, maxJsonDepth)) throw tooDeep();
}

/** 400 naming `server.maxJsonDepth` when a decoded (msgpack) body nests too deeply. */
export function checkDecodedBodyDepth(value: unknown): void {
  if (valueNestsDeeperThan(value, maxJsonDepth)) throw tooDeep();
}
