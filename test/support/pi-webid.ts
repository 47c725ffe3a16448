// WebID 2.0 as PI Web API writes them, for the PI Web API simulator (pi-simulator.ts).
//
//   <type><version><marker>[owner]<payload>
//
//   type     F (Full), I (IDOnly), P (PathOnly)          version  always 1 (WebID 2.0)
//   marker   RS asset server, RD asset database, Em element, Ab attribute
//   owner    one letter, attributes only: E (the attribute belongs to an element)
//   payload  IDOnly:   the GUIDs, 22 base64url characters each (16 bytes in .NET order)
//            Full:     the GUIDs, then the upper-cased path without its leading \\ in base64url
//            PathOnly: the upper-cased path only
//
// The GUIDs of a WebID: a server names itself; a database its server and itself; an element
// its server and itself (not its database); an attribute its server, its element and itself.
// Clients treat WebIDs as opaque, so what matters is that ours look like PI's and decode back.

export type WebIdType = 'Full' | 'IDOnly' | 'PathOnly';
export type WebIdKind = 'AssetServer' | 'AssetDatabase' | 'Element' | 'Attribute';

export interface WebIdParts {
  type: WebIdType;
  kind: WebIdKind;
  /** Lower-case hyphenated GUIDs, outermost first; empty for PathOnly. */
  ids: string[];
  /** Upper-cased path without the leading `\\` (Full and PathOnly); undefined for IDOnly. */
  path?: string;
}

export class WebIdError extends Error {}

const TYPE_LETTER: Record<WebIdType, string> = { Full: 'F', IDOnly: 'I', PathOnly: 'P' };
const TYPE_OF_LETTER: Record<string, WebIdType> = { F: 'Full', I: 'IDOnly', P: 'PathOnly' };
const MARKER: Record<WebIdKind, string> = { AssetServer: 'RS', AssetDatabase: 'RD', Element: 'Em', Attribute: 'Ab' };
const KIND_OF_MARKER: Record<string, WebIdKind> = { RS: 'AssetServer', RD: 'AssetDatabase', Em: 'Element', Ab: 'Attribute' };
const ID_COUNT: Record<WebIdKind, number> = { AssetServer: 1, AssetDatabase: 2, Element: 2, Attribute: 3 };
const ELEMENT_OWNER = 'E';
const VERSION = '1';
const GUID_CHARS = 22;
const GUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** A GUID as .NET's Guid.ToByteArray lays it out: the first three groups little-endian, the rest as written. */
function guidBytes(guid: string): Buffer {
  if (!GUID_PATTERN.test(guid)) throw new WebIdError(`not a GUID: ${guid}`);
  const hex = guid.replace(/-/g, '');
  const bytes = Buffer.from(hex, 'hex');
  bytes.subarray(0, 4).reverse();
  bytes.subarray(4, 6).reverse();
  bytes.subarray(6, 8).reverse();
  return bytes;
}

function guidFromBytes(bytes: Buffer): string {
  const b = Buffer.from(bytes);
  b.subarray(0, 4).reverse();
  b.subarray(4, 6).reverse();
  b.subarray(6, 8).reverse();
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The path as a WebID carries it: without the leading `\\`, upper-cased. */
export function webIdPath(path: string): string {
  return path.replace(/^\\\\/, '').toUpperCase();
}

export function encodeWebId(type: WebIdType, kind: WebIdKind, ids: string[], path: string): string {
  if (ids.length !== ID_COUNT[kind]) throw new WebIdError(`a ${kind} WebID takes ${ID_COUNT[kind]} GUIDs, not ${ids.length}`);
  const header = TYPE_LETTER[type] + VERSION + MARKER[kind] + (kind === 'Attribute' ? ELEMENT_OWNER : '');
  const encodedIds = ids.map((id) => guidBytes(id).toString('base64url')).join('');
  const encodedPath = Buffer.from(webIdPath(path), 'utf8').toString('base64url');
  if (type === 'IDOnly') return header + encodedIds;
  if (type === 'PathOnly') return header + encodedPath;
  return header + encodedIds + encodedPath;
}

/** Reads a WebID back into its parts; throws WebIdError when it is not one this simulator could have written. */
export function decodeWebId(webId: string): WebIdParts {
  const type = TYPE_OF_LETTER[webId[0] ?? ''];
  if (type === undefined || webId[1] !== VERSION) throw new WebIdError(`unknown WebID type or version in '${webId}'`);
  const kind = KIND_OF_MARKER[webId.slice(2, 4)];
  if (kind === undefined) throw new WebIdError(`unknown object marker in WebID '${webId}'`);
  let rest = webId.slice(4);
  if (kind === 'Attribute') {
    if (rest[0] !== ELEMENT_OWNER) throw new WebIdError(`unknown attribute owner in WebID '${webId}'`);
    rest = rest.slice(1);
  }
  if (!BASE64URL.test(rest)) throw new WebIdError(`WebID '${webId}' is not base64url`);
  const ids: string[] = [];
  if (type !== 'PathOnly') {
    for (let i = 0; i < ID_COUNT[kind]; i++) {
      const chunk = rest.slice(0, GUID_CHARS);
      if (chunk.length < GUID_CHARS) throw new WebIdError(`WebID '${webId}' is too short`);
      ids.push(guidFromBytes(Buffer.from(chunk, 'base64url')));
      rest = rest.slice(GUID_CHARS);
    }
  }
  if (type === 'IDOnly') {
    if (rest !== '') throw new WebIdError(`WebID '${webId}' is too long`);
    return { type, kind, ids };
  }
  if (rest === '') throw new WebIdError(`WebID '${webId}' has no path`);
  const path = Buffer.from(rest, 'base64url').toString('utf8');
  return { type, kind, ids, path };
}
