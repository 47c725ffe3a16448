/**
 * Collection ids and their folders. A collection id is `organization/site/unit/grid`; each name
 * becomes one folder level under `<dataDir>/ts/`, percent-encoded byte by byte so that only
 * `[A-Za-z0-9_-]` and `%XX` ever reach the file system: `.`, `..`, `/`, `\`, NUL, spaces and
 * every non-ASCII byte are escaped. Hex digits are always upper case and the decoder accepts
 * only that canonical form, so one name has exactly one folder.
 */

import path from 'node:path';
import { badRequest } from './errors.js';
import { SCOPE_FIELDS, type CollectionScope, type ScopeField } from './scope.js';

export const MAX_SCOPE_NAME_BYTES = 200;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });
const HEX = '0123456789ABCDEF';

/** Bytes that stand for themselves in a folder name. */
const KEEPS: boolean[] = Array.from(
  { length: 256 },
  (_, b) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x2d,
);

const CONTROL_CHAR = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Folder-safe form of a scope name: every UTF-8 byte outside [A-Za-z0-9_-] becomes %XX. */
export function encodeScopeName(name: string): string {
  const bytes = utf8Encoder.encode(name);
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    out += KEEPS[b] ? String.fromCharCode(b) : `%${HEX[b >> 4]}${HEX[b & 15]}`;
  }
  return out;
}

/**
 * Inverse of encodeScopeName. Accepts only the canonical encoding (upper-case hex, escapes only
 * where needed), so one name has exactly one folder.
 */
export function decodeScopeName(encoded: string): string {
  const bytes = new Uint8Array(encoded.length);
  let n = 0;
  for (let i = 0; i < encoded.length; i++) {
    const c = encoded.charCodeAt(i);
    if (c === 0x25) {
      if (i + 2 >= encoded.length) throw notEncoded(encoded);
      const hi = HEX.indexOf(encoded[i + 1]!);
      const lo = HEX.indexOf(encoded[i + 2]!);
      const b = (hi << 4) | lo;
      if (hi < 0 || lo < 0 || KEEPS[b]) throw notEncoded(encoded);
      bytes[n++] = b;
      i += 2;
    } else if (c < 256 && KEEPS[c]) {
      bytes[n++] = c;
    } else {
      throw notEncoded(encoded);
    }
  }
  try {
    return utf8Decoder.decode(bytes.subarray(0, n));
  } catch {
    throw notEncoded(encoded);
  }
}

function notEncoded(encoded: string) {
  return badRequest(`folder name ${JSON.stringify(encoded)} is not an encoded scope name`);
}

/** Throws BAD_REQUEST naming the field when `value` cannot be a scope name. */
export function validateScopeName(field: ScopeField, value: unknown): string {
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes < 1 || bytes > MAX_SCOPE_NAME_BYTES) {
    throw badRequest(`${field} name must be 1..${MAX_SCOPE_NAME_BYTES} bytes of UTF-8 (got ${bytes})`);
  }
  if (value.includes('/')) throw badRequest(`${field} name must not contain '/'`);
  if (CONTROL_CHAR.test(value)) throw badRequest(`${field} name must not contain control characters`);
  if (LONE_SURROGATE.test(value)) throw badRequest(`${field} name must be valid Unicode (unpaired surrogate)`);
  return value;
}

/** Validates every field and returns a clean scope (no extra keys). */
export function validateScope(scope: Partial<Record<ScopeField, unknown>>): CollectionScope {
  return {
    organization: validateScopeName('organization', scope.organization),
    site: validateScopeName('site', scope.site),
    unit: validateScopeName('unit', scope.unit),
    grid: validateScopeName('grid', scope.grid),
  };
}

export function collectionId(scope: CollectionScope): string {
  const s = validateScope(scope);
  return `${s.organization}/${s.site}/${s.unit}/${s.grid}`;
}

export function parseCollectionId(id: string): CollectionScope {
  if (typeof id !== 'string') throw badRequest('collection id must be a string');
  const parts = id.split('/');
  if (parts.length !== 4) throw badRequest(`collection id must be organization/site/unit/grid, got ${parts.length} part(s)`);
  return validateScope({ organization: parts[0], site: parts[1], unit: parts[2], grid: parts[3] });
}

/**
 * `<dataDir>/ts/<enc(org)>/<enc(site)>/<enc(unit)>/<enc(grid)>`. Safe for any non-empty names,
 * valid or not (the encoding alone keeps the path four levels below `<dataDir>/ts`); callers
 * validate separately to give the user a precise message.
 */
export function collectionDir(dataDir: string, scope: CollectionScope): string {
  const levels = SCOPE_FIELDS.map((field) => {
    const name = scope[field];
    if (typeof name !== 'string' || name.length === 0) throw badRequest(`${field} name must be 1..${MAX_SCOPE_NAME_BYTES} bytes of UTF-8 (got 0)`);
    return encodeScopeName(name);
  });
  return path.join(dataDir, 'ts', ...levels);
}
