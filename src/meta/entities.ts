// The entity store: generic CRUD over every registry table, with row scoping
// applied to every statement. All writes run in one SQLite transaction each,
// so a request that fails half-way (a 403 found after the insert, a
// duplicate in a bulk create) leaves nothing behind.

import { randomUUID } from 'node:crypto';
import { checkEmail } from '../auth/email.js';
import { ROLES } from '../auth/tokens.js';
import { HttpError, badRequest, conflict, forbidden, notFound } from '../http/errors.js';
import type { Db } from './database.js';
import { compileOrder, compileWhere, type Filter, type Where } from './filter.js';
import type { EntityDef, Registry, Relation } from './registry.js';
import { ident } from './schema.js';
import type { Scope, ScopeSql } from './scope.js';
import { parseId, parseMeta, pickFields, splitEntity, toWire, type RowRecord, type SplitEntity } from './wire.js';

export type Entity = Record<string, unknown>;

/**
 * Where other subsystems plug into entity changes (monitor rules from tagmeta
 * limits, collection folders following org/site/unit names). Called inside
 * the write transaction; throwing aborts the write.
 */
export interface EntityHooks {
  afterCreate?(def: EntityDef, entity: Entity): void;
  afterUpdate?(def: EntityDef, before: Entity, after: Entity): void;
  /** Every row that is about to go, cascaded children included (children first). */
  beforeDelete?(def: EntityDef, entity: Entity): void;
}

/** Fields only an admin may set: a non-admin must not grant itself a role or scope. */
const ADMIN_ONLY_FIELDS: Record<string, string[]> = { users: ['role'], userprofiles: ['accessAllowed'] };

export class EntityStore {
  private readonly hooks: EntityHooks[] = [];
  /** Work a hook asked to run once the write has committed (file moves and the like). */
  private deferred: Array<() => Promise<void>> = [];

  constructor(
    readonly db: Db,
    readonly registry: Registry,
    private readonly maxListRows: number,
  ) {}

  addHooks(hooks: EntityHooks): void {
    this.hooks.push(hooks);
  }

  /** For hooks: runs `job` after the current write commits (dropped if it rolls back). */
  defer(job: () => Promise<void>): void {
    this.deferred.push(job);
  }

  /** Runs the deferred work of the writes made so far; routes await it before replying. */
  async settle(): Promise<void> {
    const jobs = this.deferred;
    this.deferred = [];
    for (const job of jobs) await job();
  }

  /** One write transaction; deferred work queued by a failed one is discarded. */
  private tx<T>(fn: () => T): T {
    const mark = this.deferred.length;
    try {
      return this.db.transaction(fn)();
    } catch (err) {
      this.deferred.length = mark;
      throw err;
    }
  }

  // ---- reads -------------------------------------------------------------

  list(def: EntityDef, scope: Scope, filter: Filter = {}, extra?: Where): Entity[] {
    const rows = this.selectRows(def, scope, 'read', combine(filter.where, extra), filter);
    const entities = rows.map((row) => toWire(def, row));
    if (filter.include?.length) this.expandIncludes(def, scope, entities, filter.include);
    return filter.fields || filter.excludeFields ? entities.map((e) => pickFields(e, filter)) : entities;
  }

  count(def: EntityDef, scope: Scope, where?: Where): number {
    const { sql, params } = this.whereSql(def, scope, 'read', where);
    return this.db.prepare(`SELECT count(*) FROM ${ident(def.table)} WHERE ${sql}`).pluck().get(...params) as number;
  }

  /** One row by id: 404 "item not found" when missing, 403 when outside the grant. */
  get(def: EntityDef, scope: Scope, rawId: unknown, filter: Filter = {}, extra?: Where): Entity {
    const id = parseId(def, rawId);
    const row = this.readable(def, scope, id, extra);
    const entity = toWire(def, row);
    if (filter.include?.length) this.expandIncludes(def, scope, [entity], filter.include);
    return pickFields(entity, filter);
  }

  findOne(def: EntityDef, scope: Scope, filter: Filter = {}, extra?: Where): Entity {
    const [first] = this.list(def, scope, { ...filter, limit: 1 }, extra);
    if (!first) throw notFound('no matching record');
    return first;
  }

  exists(def: EntityDef, scope: Scope, rawId: unknown): boolean {
    const id = parseId(def, rawId);
    const row = this.rowById(def, id);
    if (!row) return false;
    if (!this.allowed(def, scope, 'read', id)) throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
    return true;
  }

  // ---- writes ------------------------------------------------------------

  create(def: EntityDef, scope: Scope, body: unknown, injected?: Record<string, unknown>): Entity {
    return this.tx(() => this.insertOne(def, scope, body, injected));
  }

  createMany(def: EntityDef, scope: Scope, bodies: unknown): Entity[] {
    if (!Array.isArray(bodies)) throw badRequest('body must be a JSON array of objects');
    return this.tx(() =>
      bodies.map((body, i) => {
        try {
          return this.insertOne(def, scope, body);
        } catch (err) {
          if (err instanceof HttpError) throw new HttpError(err.code, `item ${i}: ${err.message}`);
          throw err;
        }
      }),
    );
  }

  /** PUT /{id}: real columns replaced where given, meta_data merged. */
  merge(def: EntityDef, scope: Scope, rawId: unknown, body: unknown): Entity {
    const id = parseId(def, rawId);
    return this.tx(() => this.updateOne(def, scope, id, splitEntity(def, body)));
  }

  /** PATCH: updates when the body has an id that exists, inserts otherwise. */
  upsert(def: EntityDef, scope: Scope, body: unknown): Entity {
    const split = splitEntity(def, body);
    return this.tx(() => {
      if (split.id !== undefined && this.rowById(def, split.id)) return this.updateOne(def, scope, split.id, split);
      return this.insertOne(def, scope, body);
    });
  }

  /** POST /update: merges `body` into every writable row matching `where`; returns how many. */
  updateWhere(def: EntityDef, scope: Scope, where: Where | undefined, body: unknown): number {
    const split = splitEntity(def, body);
    if (split.id !== undefined) throw badRequest('id cannot be changed by update-all');
    return this.tx(() => {
      const rows = this.selectRows(def, scope, 'write', where, {});
      for (const row of rows) this.updateOne(def, scope, row.id, split, row);
      return rows.length;
    });
  }

  /** DELETE /{id}: 0 when missing, 403 outside the grant; cascades to children. */
  deleteById(def: EntityDef, scope: Scope, rawId: unknown, extra?: Where): number {
    const id = parseId(def, rawId);
    return this.tx(() => {
      const row = this.rowById(def, id, extra);
      if (!row) return 0;
      if (!this.allowed(def, scope, 'write', id)) throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
      this.deleteCascade(def, [row]);
      return 1;
    });
  }

  deleteWhere(def: EntityDef, scope: Scope, where: Where | undefined): number {
    return this.tx(() => {
      const rows = this.selectRows(def, scope, 'write', where, {});
      this.deleteCascade(def, rows);
      return rows.length;
    });
  }

  // ---- internals ---------------------------------------------------------

  private insertOne(def: EntityDef, scope: Scope, body: unknown, injected?: Record<string, unknown>): Entity {
    const split = splitEntity(def, injected ? { ...(body as object), ...injected } : body);
    this.checkAdminOnlyFields(def, scope, split, null);
    this.normalize(def, split);
    if (def.textId && split.id === undefined) split.id = randomUUID();
    const names = ['meta_data', ...Object.keys(split.columns)];
    const values: unknown[] = [JSON.stringify(split.meta), ...Object.values(split.columns)];
    if (split.id !== undefined) {
      names.unshift('id');
      values.unshift(split.id);
    }
    let id: number | string;
    try {
      const result = this.db
        .prepare(`INSERT INTO ${ident(def.table)} (${names.map(ident).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`)
        .run(...values);
      id = split.id ?? Number(result.lastInsertRowid);
    } catch (err) {
      throw translateSqliteError(err, def);
    }
    if (!this.allowed(def, scope, 'write', id)) {
      throw forbidden(`cannot create ${def.urlNames[0]} outside your access grant`);
    }
    const entity = toWire(def, this.rowById(def, id)!);
    for (const h of this.hooks) h.afterCreate?.(def, entity);
    return entity;
  }

  private updateOne(def: EntityDef, scope: Scope, id: number | string, split: SplitEntity, known?: RowRecord): Entity {
    const row = known ?? this.rowById(def, id);
    if (!row) throw notFound('item not found');
    if (!known && !this.allowed(def, scope, 'write', id)) throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
    const currentMeta = parseMeta(row.meta_data);
    this.checkAdminOnlyFields(def, scope, split, currentMeta);
    this.normalize(def, split);
    const meta = { ...currentMeta, ...split.meta };
    const names = ['meta_data', ...Object.keys(split.columns)];
    const values = [JSON.stringify(meta), ...Object.values(split.columns)];
    try {
      this.db
        .prepare(`UPDATE ${ident(def.table)} SET ${names.map((n) => `${ident(n)} = ?`).join(', ')} WHERE id = ?`)
        .run(...values, id);
    } catch (err) {
      throw translateSqliteError(err, def);
    }
    if (!this.allowed(def, scope, 'write', id)) throw forbidden(`cannot move ${def.urlNames[0]} ${id} outside your access grant`);
    const after = toWire(def, this.rowById(def, id)!);
    const before = toWire(def, row);
    for (const h of this.hooks) h.afterUpdate?.(def, before, after);
    return after;
  }

  /** Deletes rows and, first, every row below them in the foreign-key graph. */
  private deleteCascade(def: EntityDef, rows: RowRecord[], depth = 0): void {
    if (rows.length === 0) return;
    if (depth > 16) throw new Error(`cascade too deep at ${def.table}`);
    const ids = JSON.stringify(rows.map((r) => r.id));
    for (const relation of this.registry.childrenOf(def)) {
      const children = this.db
        .prepare(`SELECT * FROM ${ident(relation.child.table)} WHERE ${ident(relation.column)} IN (SELECT value FROM json_each(?))`)
        .all(ids) as RowRecord[];
      this.deleteCascade(relation.child, children, depth + 1);
    }
    for (const row of rows) {
      const entity = toWire(def, row);
      for (const h of this.hooks) h.beforeDelete?.(def, entity);
    }
    this.db.prepare(`DELETE FROM ${ident(def.table)} WHERE id IN (SELECT value FROM json_each(?))`).run(ids);
  }

  private checkAdminOnlyFields(def: EntityDef, scope: Scope, split: SplitEntity, current: Record<string, unknown> | null): void {
    if (scope.isAdmin) return;
    for (const field of ADMIN_ONLY_FIELDS[def.table] ?? []) {
      if (field in split.meta && JSON.stringify(split.meta[field]) !== JSON.stringify(current?.[field])) {
        throw forbidden(`only an admin can set ${field}`);
      }
    }
  }

  private normalize(def: EntityDef, split: SplitEntity): void {
    if (def.table !== 'users') return;
    if (typeof split.columns.email === 'string') {
      // The same normal form and rules as register, so the account can log in under the email it was given.
      const checked = checkEmail(split.columns.email);
      if (!checked.ok) throw badRequest(checked.error);
      split.columns.email = checked.email;
    }
    if ('role' in split.meta && !ROLES.includes(split.meta.role as never)) {
      throw badRequest(`role must be one of ${ROLES.join(', ')}`);
    }
  }

  private rowById(def: EntityDef, id: number | string, extra?: Where): RowRecord | undefined {
    const where = compileWhere(extra, { columns: this.registry.realColumns(def) });
    return this.db.prepare(`SELECT * FROM ${ident(def.table)} WHERE id = ? AND ${where.sql}`).get(id, ...where.params) as RowRecord | undefined;
  }

  private readable(def: EntityDef, scope: Scope, id: number | string, extra?: Where): RowRecord {
    const row = this.rowById(def, id, extra);
    if (!row) throw notFound('item not found');
    if (!this.allowed(def, scope, 'read', id)) throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
    return row;
  }

  private allowed(def: EntityDef, scope: Scope, access: 'read' | 'write', id: number | string): boolean {
    if (scope.isAdmin) return true;
    const p = scope.predicate(def, access);
    return this.db.prepare(`SELECT 1 FROM ${ident(def.table)} WHERE id = ? AND ${p.sql}`).get(id, ...p.params) !== undefined;
  }

  private whereSql(def: EntityDef, scope: Scope, access: 'read' | 'write', where: Where | undefined): ScopeSql {
    const compiled = compileWhere(where, { columns: this.registry.realColumns(def) });
    const p = scope.predicate(def, access);
    return { sql: `(${compiled.sql}) AND ${p.sql}`, params: [...compiled.params, ...p.params] };
  }

  private selectRows(def: EntityDef, scope: Scope, access: 'read' | 'write', where: Where | undefined, filter: Filter): RowRecord[] {
    const { sql, params } = this.whereSql(def, scope, access, where);
    const order = compileOrder(filter.order, { columns: this.registry.realColumns(def) });
    const limit = Math.min(filter.limit ?? this.maxListRows, this.maxListRows);
    return this.db
      .prepare(`SELECT * FROM ${ident(def.table)} WHERE ${sql} ${order.sql} LIMIT ? OFFSET ?`)
      .all(...params, ...order.params, limit, filter.skip ?? 0) as RowRecord[];
  }

  /** `include`: children as arrays, parents as one-element arrays; scoping applies to both. */
  private expandIncludes(def: EntityDef, scope: Scope, entities: Entity[], include: readonly string[]): void {
    const relations = this.registry.relationNames(def);
    for (const name of include) {
      const found = relations.get(name);
      if (!found) throw badRequest(`unknown relation '${name}' for ${def.urlNames[0]}; known: ${[...relations.keys()].join(', ')}`);
      const { relation, direction } = found;
      if (direction === 'children') this.includeChildren(relation, scope, entities, name);
      else this.includeParent(relation, scope, entities, name);
    }
  }

  private includeChildren(relation: Relation, scope: Scope, entities: Entity[], name: string): void {
    const ids = entities.map((e) => Number(e.id));
    const children = this.list(relation.child, scope, { where: { [relation.column]: { inq: ids } } });
    const byParent = new Map<string, Entity[]>();
    for (const child of children) {
      const key = String(child[relation.column]);
      let group = byParent.get(key);
      if (!group) byParent.set(key, (group = []));
      group.push(child);
    }
    for (const entity of entities) entity[name] = byParent.get(String(entity.id)) ?? [];
  }

  private includeParent(relation: Relation, scope: Scope, entities: Entity[], name: string): void {
    const ids = [...new Set(entities.map((e) => e[relation.column]).filter((v) => v !== null && v !== undefined).map(Number))];
    const parents = ids.length ? this.list(relation.parent, scope, { where: { id: { inq: ids } } }) : [];
    const byId = new Map(parents.map((p) => [String(p.id), p]));
    for (const entity of entities) {
      const parent = byId.get(String(entity[relation.column]));
      entity[name] = parent ? [parent] : [];
    }
  }
}

function combine(a: Where | undefined, b: Where | undefined): Where | undefined {
  if (!a || Object.keys(a).length === 0) return b;
  if (!b) return a;
  return { and: [a, b] };
}

function translateSqliteError(err: unknown, def: EntityDef): unknown {
  const code = (err as { code?: string }).code ?? '';
  const message = (err as Error).message ?? '';
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const column = /UNIQUE constraint failed: \w+\.(\w+)/.exec(message)?.[1] ?? 'id';
    return conflict(`DUPLICATE: ${def.urlNames[0]} with this ${column} already exists`);
  }
  if (code === 'SQLITE_CONSTRAINT_NOTNULL') {
    const column = /NOT NULL constraint failed: \w+\.(\w+)/.exec(message)?.[1] ?? 'a field';
    return badRequest(`${column} is required`);
  }
  return err;
}
