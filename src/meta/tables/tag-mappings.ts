// Tag mappings: an external tag spec (how a plant system or a connector names
// a point, e.g. `\\PI-SRV\SINUSOID` or `opc:ns=2;s=Boiler1.TI101`) mapped to a
// storage tag and the collection scope it lives in. Kept in the metadata
// store; used by write_tag_mapping and fast_query_tag_mapping.

import { badRequest, conflict, notFound } from '../../../shared/errors.js';
import type { Db } from '../database.js';
import { parseMeta } from '../wire.js';
import { SCOPE_FIELDS, type CollectionScope } from '../../../shared/scope.js';
import { collectionId as idOf, validateScope } from '../../../shared/scope-path.js';

export interface TagMapping extends CollectionScope {
  id: string;
  external: string;
  tag: string;
  [extra: string]: unknown;
}

interface Row extends CollectionScope {
  id: number;
  external: string;
  tag: string;
  meta_data: string;
}

const COLUMNS = ['external', 'tag', ...SCOPE_FIELDS] as const;
const MAX_LIST = 100_000;

export class TagMappingStore {
  constructor(private readonly db: Db) {}

  list(filter: Partial<Record<(typeof COLUMNS)[number], string>> = {}): TagMapping[] {
    const keys = COLUMNS.filter((c) => filter[c] !== undefined);
    const where = keys.length ? `WHERE ${keys.map((k) => `"${k}" = ?`).join(' AND ')}` : '';
    const rows = this.db.prepare(`SELECT * FROM tag_mappings ${where} ORDER BY id LIMIT ${MAX_LIST}`).all(...keys.map((k) => filter[k])) as Row[];
    return rows.map(toWire);
  }

  get(id: string): TagMapping {
    const row = this.db.prepare('SELECT * FROM tag_mappings WHERE id = ?').get(Number(id)) as Row | undefined;
    if (!row) throw notFound('item not found');
    return toWire(row);
  }

  /** The mappings of these external specs; 400 naming the first one that has none. */
  resolve(externals: readonly string[]): Map<string, TagMapping> {
    const found = new Map<string, TagMapping>();
    const lookup = this.db.prepare('SELECT * FROM tag_mappings WHERE external = ?');
    for (const external of externals) {
      const row = lookup.get(external) as Row | undefined;
      if (!row) throw badRequest(`no tag mapping for "${external}"`);
      found.set(external, toWire(row));
    }
    return found;
  }

  create(body: unknown): TagMapping {
    const { columns, meta } = split(body, true);
    try {
      const result = this.db
        .prepare('INSERT INTO tag_mappings (external, tag, organization, site, unit, grid, meta_data) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(columns.external, columns.tag, columns.organization, columns.site, columns.unit, columns.grid, JSON.stringify(meta));
      return this.get(String(result.lastInsertRowid));
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw conflict(`DUPLICATE: a mapping for "${columns.external}" already exists`);
      throw err;
    }
  }

  createMany(bodies: unknown): TagMapping[] {
    if (!Array.isArray(bodies)) throw badRequest('body must be a JSON array of mappings');
    return this.db.transaction(() => bodies.map((b) => this.create(b)))();
  }

  update(id: string, body: unknown): TagMapping {
    const current = this.get(id);
    const { columns, meta } = split({ ...current, ...(body as object) }, true);
    try {
      this.db
        .prepare('UPDATE tag_mappings SET external = ?, tag = ?, organization = ?, site = ?, unit = ?, grid = ?, meta_data = ? WHERE id = ?')
        .run(columns.external, columns.tag, columns.organization, columns.site, columns.unit, columns.grid, JSON.stringify(meta), Number(id));
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw conflict(`DUPLICATE: a mapping for "${columns.external}" already exists`);
      throw err;
    }
    return this.get(id);
  }

  delete(id: string): number {
    return this.db.prepare('DELETE FROM tag_mappings WHERE id = ?').run(Number(id)).changes;
  }
}

export function collectionOfMapping(m: TagMapping): string {
  return idOf(m);
}

function split(body: unknown, requireAll: boolean): { columns: Record<(typeof COLUMNS)[number], string>; meta: Record<string, unknown> } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('a mapping must be a JSON object');
  const b = body as Record<string, unknown>;
  const columns = {} as Record<(typeof COLUMNS)[number], string>;
  for (const c of COLUMNS) {
    const value = b[c];
    if (typeof value !== 'string' || value.length === 0) {
      if (requireAll) throw badRequest(`mapping field ${c} must be a non-empty string`);
      continue;
    }
    columns[c] = value;
  }
  validateScope(columns);
  const meta: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) if (!(COLUMNS as readonly string[]).includes(k) && k !== 'id') meta[k] = v;
  return { columns, meta };
}

function toWire(row: Row): TagMapping {
  const { meta_data: metaText, id, ...columns } = row;
  return { ...parseMeta(metaText), id: String(id), ...columns };
}
