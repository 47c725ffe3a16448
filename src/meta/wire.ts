// The flat entity convention. On the wire an entity is one flat object; in
// SQLite it is `id`, real columns and a `meta_data` JSON document. Writing
// splits the object (every key that is not a real column goes to meta_data);
// reading hoists meta_data keys back and turns `id` and foreign keys into
// strings. Values inside meta_data are never converted.

import { jsonTextNestsDeeperThan } from '../http/body-guard.js';
import { badRequest } from '../../shared/errors.js';
import type { ColumnDef, EntityDef } from './registry.js';

export type SqlValue = string | number | null;

export interface RowRecord {
  id: number | string;
  meta_data: string;
  [column: string]: unknown;
}

/** A request body split into what goes where. */
export interface SplitEntity {
  /** Present when the body carries an id. */
  id?: number | string;
  columns: Record<string, SqlValue>;
  meta: Record<string, unknown>;
}

const WHOLE_NUMBER = /^(0|[1-9][0-9]{0,15})$/;

export function parseId(def: EntityDef, raw: unknown, field = 'id'): number | string {
  if (def.textId) {
    if (typeof raw === 'string' && raw.length > 0 && raw.length <= 512) return raw;
    if (typeof raw === 'number' && Number.isFinite(raw)) return String(raw);
    throw badRequest(`${field} must be a non-empty string`);
  }
  return parseIntegerId(raw, field);
}

/** A whole-number id (integer, or its decimal string), else 400 naming `field`. */
export function parseIntegerId(raw: unknown, field: string): number {
  if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0) return raw;
  if (typeof raw === 'string' && WHOLE_NUMBER.test(raw) && Number.isSafeInteger(Number(raw))) return Number(raw);
  throw badRequest(`${field} must be an id (a whole number), got ${JSON.stringify(raw)}`);
}

export function splitEntity(def: EntityDef, body: unknown): SplitEntity {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object');
  const split: SplitEntity = { columns: {}, meta: {} };
  const columns = new Map(def.columns.map((c) => [c.name, c]));
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    if (key === 'id') {
      if (value !== null && value !== undefined) split.id = parseId(def, value);
      continue;
    }
    if (key === 'meta_data') throw badRequest('meta_data is not a field; send its keys at the top level');
    const column = columns.get(key);
    if (column) split.columns[key] = toColumnValue(column, value);
    else if (value !== undefined) split.meta[key] = value;
  }
  return split;
}

function toColumnValue(column: ColumnDef, value: unknown): SqlValue {
  if (value === null || value === undefined) return null;
  switch (column.kind) {
    case 'fk':
      return parseIntegerId(value, column.name);
    case 'text':
    case 'secret':
      if (typeof value !== 'string') throw badRequest(`${column.name} must be a string`);
      return value;
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw badRequest(`${column.name} must be an integer`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw badRequest(`${column.name} must be true or false`);
      return value ? 1 : 0;
    case 'json':
      return JSON.stringify(value);
  }
}

/**
 * SQLite reads JSON up to 1000 levels deep, and JSON.stringify overflows the
 * stack a few thousand levels down. Stored JSON deeper than this (written
 * before `server.maxJsonDepth` existed, or by another path) reads as absent,
 * like invalid JSON, so that the filters and the reply agree and neither fails.
 */
export const MAX_STORED_JSON_DEPTH = 1000;

/** Stored JSON text to a value, or `undefined` when it is not valid JSON or nests too deeply. */
function parseStoredJson(text: unknown): unknown {
  if (typeof text !== 'string' && !Buffer.isBuffer(text)) return undefined;
  const json = String(text);
  // a document deeper than the limit holds more than twice as many characters (one to open and one to close each level)
  if (json.length > 2 * MAX_STORED_JSON_DEPTH && jsonTextNestsDeeperThan(json, MAX_STORED_JSON_DEPTH)) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/** A row's meta_data as an object; `{}` when the stored text is not a readable JSON object. */
export function parseMeta(text: string): Record<string, unknown> {
  const meta = parseStoredJson(text);
  return meta && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : {};
}

/** Row to flat wire object: id first, then meta_data keys, then real columns (which win on a clash). */
export function toWire(def: EntityDef, row: RowRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: String(row.id) };
  const meta = parseMeta(row.meta_data);
  for (const key in meta) if (key !== 'id') out[key] = meta[key];
  for (const column of def.columns) {
    const value = row[column.name];
    switch (column.kind) {
      case 'secret':
        delete out[column.name];
        break;
      case 'fk':
        out[column.name] = value === null || value === undefined ? null : String(value);
        break;
      case 'boolean':
        out[column.name] = value === null || value === undefined ? null : value === 1;
        break;
      case 'json':
        out[column.name] = typeof value === 'string' ? parseJsonColumn(value) : null;
        break;
      default:
        out[column.name] = value ?? null;
    }
  }
  return out;
}

function parseJsonColumn(text: string): unknown {
  return parseStoredJson(text) ?? null;
}

/** Applies the filter's `fields`: only the named ones, or all but the excluded ones. */
export function pickFields(
  entity: Record<string, unknown>,
  selection: { fields?: readonly string[]; excludeFields?: readonly string[] },
): Record<string, unknown> {
  const { fields, excludeFields } = selection;
  if (fields && fields.length > 0) {
    const out: Record<string, unknown> = {};
    for (const f of fields) if (f in entity) out[f] = entity[f];
    return out;
  }
  if (excludeFields && excludeFields.length > 0) {
    const out = { ...entity };
    for (const f of excludeFields) delete out[f];
    return out;
  }
  return entity;
}
