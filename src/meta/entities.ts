// The entity store: generic CRUD over every registry table, with row scoping
// applied to every statement and the per-entity rules (entity-rules.ts) applied to
// every write. All writes run in one SQLite transaction each, so a request
// that fails half-way (a 403 found after the insert, a duplicate in a bulk
// create) leaves nothing behind; work that must wait for the commit (moving
// collection folders) is undone with the write when it fails.

import { randomUUID } from 'node:crypto';
import { ServiceError, badRequest, conflict, forbidden, notFound } from '../../shared/errors.js';
import type { Db } from './database.js';
import { compileOrder, compileWhere, type Filter, type Where } from './filter.js';
import type { EntityDef, Registry, Relation } from './registry.js';
import { builtInRules, MASK, type EntityRules, type WriteContext } from './entity-rules.js';
import { ident } from './schema.js';
import type { AccessGrant, GrantSql } from './access-grant.js';
import { parseId, parseMeta, pickFields, splitEntity, toWire, type RowRecord, type SplitEntity } from './wire.js';

export type Entity = Record<string, unknown>;

/**
 * Where other subsystems plug into entity changes (monitor rules from tagmeta
 * limits, collection folders following org/site/unit names). Called inside
 * the write transaction, with the caller's access grant; throwing aborts the write.
 */
export interface EntityHooks {
  afterCreate?(def: EntityDef, entity: Entity, grant: AccessGrant): void;
  afterUpdate?(def: EntityDef, before: Entity, after: Entity, grant: AccessGrant): void;
  /** Every row that is about to go, cascaded children included (children first). */
  beforeDelete?(def: EntityDef, entity: Entity): void;
  /**
   * Right after a write transaction commits, synchronously (nothing else can run in between):
   * where hooks act on what the write did once it is certain (the notification fan-out).
   */
  afterCommit?(): void;
  /** After a write transaction rolled back: drop what the hooks gathered for it. */
  afterRollback?(): void;
}

/**
 * Work a hook asks to run once its write has committed (moving collection
 * folders and the like). When a job fails, the jobs of the same write that
 * already ran are reverted, the others dropped, and the rows the write changed
 * are put back, so rows and files agree; the caller gets the job's error.
 */
export interface DeferredJob {
  run(): Promise<void>;
  /** Undoes a completed run when a later job of the same write fails (reports its own failures). */
  revert?(): Promise<void>;
  /** Called instead of run when the write rolled back or an earlier job of it failed. */
  drop?(): void;
}

/** One write's deferred jobs and how to put back the rows it updated. */
interface WriteBatch {
  jobs: DeferredJob[];
  undo: Array<() => void>;
}

export class EntityStore {
  private readonly hooks: EntityHooks[] = [];
  private readonly addedRules = new Map<string, EntityRules>();
  /** The write transaction in progress, if any. */
  private writing: WriteBatch | null = null;
  /** Committed writes whose deferred jobs have not run yet. */
  private committed: WriteBatch[] = [];

  constructor(
    readonly db: Db,
    readonly registry: Registry,
    private readonly maxListRows: number,
    /** The service clock (rules read it: a notification's expiry). */
    readonly now: () => number = Date.now,
  ) {}

  /** A stored row as callers see it: the wire form, secrets of the table's rules masked. */
  private wire(def: EntityDef, row: RowRecord): Record<string, unknown> {
    const out = toWire(def, row);
    const masked = this.rulesOf(def.table).maskedFields;
    if (masked) for (const field of masked) if (out[field] !== undefined && out[field] !== null && out[field] !== '') out[field] = MASK;
    return out;
  }

  addHooks(hooks: EntityHooks): void {
    this.hooks.push(hooks);
  }

  /** Rules of a table that need state the built-in ones cannot hold (the connector's key for `connections`). */
  addRules(table: string, rules: EntityRules): void {
    if (this.addedRules.has(table)) throw new Error(`the rules of ${table} are given twice`);
    this.addedRules.set(table, rules);
  }

  private rulesOf(table: string): EntityRules {
    return this.addedRules.get(table) ?? builtInRules(table);
  }

  /**
   * The stored meta_data of row `rawId`, secrets as stored (not masked), once the caller is shown
   * to read it: for the one module that unseals a table's secrets (the connector's connections).
   */
  storedMeta(def: EntityDef, grant: AccessGrant, rawId: unknown): Record<string, unknown> {
    const row = this.readable(def, grant, parseId(def, rawId));
    return parseMeta(row.meta_data);
  }

  /** For hooks: runs `job` after the current write commits (dropped if it rolls back). */
  defer(job: DeferredJob | (() => Promise<void>)): void {
    if (!this.writing) throw new Error('defer() is for entity hooks, inside a write');
    this.writing.jobs.push(typeof job === 'function' ? { run: job } : job);
  }

  /**
   * Runs the deferred work of the writes made so far; routes await it before replying. A write
   * whose work fails is undone (see DeferredJob) and its error thrown, naming the undo.
   */
  async settle(): Promise<void> {
    const batches = this.committed;
    this.committed = [];
    let failure: unknown;
    for (const batch of batches) {
      try {
        await this.runDeferred(batch);
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) throw failure;
  }

  private async runDeferred({ jobs, undo }: WriteBatch): Promise<void> {
    const done: DeferredJob[] = [];
    for (let i = 0; i < jobs.length; i++) {
      try {
        await jobs[i].run();
        done.push(jobs[i]);
      } catch (err) {
        for (const rest of jobs.slice(i + 1)) rest.drop?.();
        // Only updates can be undone (a delete's rows are gone); its error then goes out as it is.
        if (undo.length === 0) throw err;
        for (const job of done.reverse()) if (job.revert) await job.revert().catch(() => {});
        this.db.transaction(() => {
          for (const restore of undo.slice().reverse()) restore();
        })();
        throw undoneError(err);
      }
    }
  }

  /** One write transaction; deferred work queued by a failed one is dropped. */
  private tx<T>(fn: () => T): T {
    const batch: WriteBatch = { jobs: [], undo: [] };
    this.writing = batch;
    try {
      let result: T;
      try {
        result = this.db.transaction(fn)();
      } catch (err) {
        for (const h of this.hooks) h.afterRollback?.();
        throw err;
      }
      if (batch.jobs.length > 0) this.committed.push(batch);
      this.writing = null;
      for (const h of this.hooks) h.afterCommit?.();
      return result;
    } catch (err) {
      for (const job of batch.jobs) job.drop?.();
      throw err;
    } finally {
      this.writing = null;
    }
  }

  // ---- reads -------------------------------------------------------------

  list(def: EntityDef, grant: AccessGrant, filter: Filter = {}, extra?: Where): Entity[] {
    const rows = this.selectRows(def, grant, 'read', combine(filter.where, extra), filter);
    const entities = rows.map((row) => this.wire(def, row));
    if (filter.include?.length) this.expandIncludes(def, grant, entities, filter.include);
    return filter.fields || filter.excludeFields ? entities.map((e) => pickFields(e, filter)) : entities;
  }

  count(def: EntityDef, grant: AccessGrant, where?: Where): number {
    const { sql, params } = this.whereSql(def, grant, 'read', where);
    return this.db.prepare(`SELECT count(*) FROM ${ident(def.table)} WHERE ${sql}`).pluck().get(...params) as number;
  }

  /** One row by id: 404 "item not found" when missing, 403 when outside the grant. */
  get(def: EntityDef, grant: AccessGrant, rawId: unknown, filter: Filter = {}, extra?: Where): Entity {
    const id = parseId(def, rawId);
    const row = this.readable(def, grant, id, extra);
    const entity = this.wire(def, row);
    if (filter.include?.length) this.expandIncludes(def, grant, [entity], filter.include);
    return pickFields(entity, filter);
  }

  findOne(def: EntityDef, grant: AccessGrant, filter: Filter = {}, extra?: Where): Entity {
    const [first] = this.list(def, grant, { ...filter, limit: 1 }, extra);
    if (!first) throw notFound('no matching record');
    return first;
  }

  exists(def: EntityDef, grant: AccessGrant, rawId: unknown): boolean {
    const id = parseId(def, rawId);
    const row = this.rowById(def, id);
    if (!row) return false;
    if (!this.allowed(def, grant, 'read', id)) {
      if (this.rulesOf(def.table).invisibleIsAbsent) return false;
      throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
    }
    return true;
  }

  /**
   * What the caller may do with row `rawId` (for things that follow a row's scoping without being
   * rows of its table, as attachments do): `absent` (no such row), `none` (outside the grant),
   * `read` or `write`.
   */
  accessTo(def: EntityDef, grant: AccessGrant, rawId: unknown): 'absent' | 'none' | 'read' | 'write' {
    const id = parseId(def, rawId);
    if (!this.rowById(def, id)) return 'absent';
    if (this.allowed(def, grant, 'write', id)) return 'write';
    return this.allowed(def, grant, 'read', id) ? 'read' : 'none';
  }

  // ---- writes ------------------------------------------------------------

  create(def: EntityDef, grant: AccessGrant, body: unknown, injected?: Record<string, unknown>): Entity {
    return this.tx(() => this.insertOne(def, grant, body, injected));
  }

  createMany(def: EntityDef, grant: AccessGrant, bodies: unknown): Entity[] {
    if (!Array.isArray(bodies)) throw badRequest('body must be a JSON array of objects');
    return this.tx(() =>
      bodies.map((body, i) => {
        try {
          return this.insertOne(def, grant, body);
        } catch (err) {
          if (err instanceof ServiceError) throw new ServiceError(err.code, `item ${i}: ${err.message}`);
          throw err;
        }
      }),
    );
  }

  /** PUT /{id}: real columns replaced where given, meta_data merged. */
  merge(def: EntityDef, grant: AccessGrant, rawId: unknown, body: unknown): Entity {
    const id = parseId(def, rawId);
    return this.tx(() => this.updateOne(def, grant, id, splitEntity(def, body)));
  }

  /** PATCH: updates when the body has an id that exists, inserts otherwise. */
  upsert(def: EntityDef, grant: AccessGrant, body: unknown): Entity {
    const split = splitEntity(def, body);
    return this.tx(() => {
      if (split.id !== undefined && this.rowById(def, split.id)) return this.updateOne(def, grant, split.id, split);
      return this.insertOne(def, grant, body);
    });
  }

  /** POST /update: merges `body` into every writable row matching `where`; returns how many. */
  updateWhere(def: EntityDef, grant: AccessGrant, where: Where | undefined, body: unknown): number {
    this.checkAdminWrites(def, grant);
    const split = splitEntity(def, body);
    if (split.id !== undefined) throw badRequest('id cannot be changed by update-all');
    return this.tx(() => {
      const rows = this.selectRows(def, grant, 'write', where, {});
      for (const row of rows) this.updateOne(def, grant, row.id, split, row);
      return rows.length;
    });
  }

  /** DELETE /{id}: 0 when missing, 403 outside the grant; cascades to children. */
  deleteById(def: EntityDef, grant: AccessGrant, rawId: unknown, extra?: Where): number {
    this.checkAdminWrites(def, grant);
    const id = parseId(def, rawId);
    return this.tx(() => {
      const row = this.rowById(def, id, extra);
      if (!row) return 0;
      if (!this.allowed(def, grant, 'write', id)) {
        if (this.hidden(def, grant, id)) return 0;
        throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
      }
      this.deleteCascade(def, [row]);
      return 1;
    });
  }

  deleteWhere(def: EntityDef, grant: AccessGrant, where: Where | undefined): number {
    this.checkAdminWrites(def, grant);
    return this.tx(() => {
      const rows = this.selectRows(def, grant, 'write', where, {});
      this.deleteCascade(def, rows);
      return rows.length;
    });
  }

  // ---- internals ---------------------------------------------------------

  private insertOne(def: EntityDef, grant: AccessGrant, body: unknown, injected?: Record<string, unknown>): Entity {
    const split = splitEntity(def, injected ? { ...(body as object), ...injected } : body);
    const rules = this.rulesOf(def.table);
    const ctx = writeContext(split, true, this.now());
    if ((rules.adminCreatesOnly || rules.adminWritesOnly) && !grant.isAdmin) throw forbidden(`only an admin can create ${def.urlNames[0]}`);
    this.checkAdminOnlyFields(rules, grant, split, null);
    rules.prepare?.(split, ctx);
    this.checkParents(def, grant, split, null);
    if (def.textId && split.id === undefined) split.id = randomUUID();
    rules.validate?.(this.wire(def, { id: split.id ?? 0, meta_data: JSON.stringify(split.meta), ...split.columns }), ctx);
    this.checkUniqueName(def, rules, split, null);
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
    if (!this.allowed(def, grant, 'write', id)) {
      throw forbidden(`cannot create ${def.urlNames[0]} outside your access grant`);
    }
    const entity = this.wire(def, this.rowById(def, id)!);
    for (const h of this.hooks) h.afterCreate?.(def, entity, grant);
    return entity;
  }

  private updateOne(def: EntityDef, grant: AccessGrant, id: number | string, split: SplitEntity, known?: RowRecord): Entity {
    this.checkAdminWrites(def, grant);
    const row = known ?? this.rowById(def, id);
    if (!row) throw notFound('item not found');
    if (!known && !this.allowed(def, grant, 'write', id)) {
      if (this.hidden(def, grant, id)) throw notFound('item not found');
      throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
    }
    const rules = this.rulesOf(def.table);
    const ctx = writeContext(split, false, this.now());
    const currentMeta = parseMeta(row.meta_data);
    this.checkAdminOnlyFields(rules, grant, split, currentMeta);
    rules.prepare?.(split, ctx);
    this.checkParents(def, grant, split, row);
    const meta = { ...currentMeta, ...split.meta };
    rules.validate?.(this.wire(def, { ...row, ...split.columns, meta_data: JSON.stringify(meta) }), ctx);
    this.checkUniqueName(def, rules, split, row);
    const names = ['meta_data', ...Object.keys(split.columns)];
    const values = [JSON.stringify(meta), ...Object.values(split.columns)];
    try {
      this.db
        .prepare(`UPDATE ${ident(def.table)} SET ${names.map((n) => `${ident(n)} = ?`).join(', ')} WHERE id = ?`)
        .run(...values, id);
    } catch (err) {
      throw translateSqliteError(err, def);
    }
    if (!this.allowed(def, grant, 'write', id)) throw forbidden(`cannot move ${def.urlNames[0]} ${id} outside your access grant`);
    const stored = this.rowById(def, id)!;
    this.writing?.undo.push(() => this.restore(def, row, stored, split));
    const after = this.wire(def, stored);
    const before = this.wire(def, row);
    for (const h of this.hooks) h.afterUpdate?.(def, before, after, grant);
    return after;
  }

  /**
   * Puts back what one update changed (after its deferred work failed), field by field and only
   * where nothing has changed that field since.
   */
  private restore(def: EntityDef, before: RowRecord, after: RowRecord, split: SplitEntity): void {
    const current = this.rowById(def, before.id);
    if (!current) return;
    const assignments: string[] = [];
    const values: unknown[] = [];
    for (const column of Object.keys(split.columns)) {
      if (current[column] !== after[column]) continue;
      assignments.push(`${ident(column)} = ?`);
      values.push(before[column] ?? null);
    }
    const meta = parseMeta(current.meta_data);
    const was = parseMeta(before.meta_data);
    const became = parseMeta(after.meta_data);
    for (const key of Object.keys(split.meta)) {
      if (JSON.stringify(meta[key]) !== JSON.stringify(became[key])) continue;
      if (key in was) meta[key] = was[key];
      else delete meta[key];
    }
    assignments.push('meta_data = ?');
    values.push(JSON.stringify(meta));
    this.db.prepare(`UPDATE ${ident(def.table)} SET ${assignments.join(', ')} WHERE id = ?`).run(...values, before.id);
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
      const entity = this.wire(def, row);
      for (const h of this.hooks) h.beforeDelete?.(def, entity);
    }
    this.db.prepare(`DELETE FROM ${ident(def.table)} WHERE id IN (SELECT value FROM json_each(?))`).run(ids);
  }

  private checkAdminOnlyFields(rules: EntityRules, grant: AccessGrant, split: SplitEntity, current: Record<string, unknown> | null): void {
    if (grant.isAdmin) return;
    const masked = rules.maskedFields ?? [];
    for (const field of rules.adminOnlyFields ?? []) {
      // A masked secret written back as read ("********") over a stored one changes nothing.
      if (masked.includes(field) && split.meta[field] === MASK && current?.[field] !== undefined) continue;
      if (field in split.meta && JSON.stringify(split.meta[field]) !== JSON.stringify(current?.[field])) {
        throw forbidden(`only an admin can set ${field}`);
      }
    }
  }

  /**
   * A non-admin's write that sets a foreign key (on create, or to a new value on update) must
   * name a parent inside the grant: the row predicate alone would let a row granted by id
   * (a unit) be moved under any parent.
   */
  private checkParents(def: EntityDef, grant: AccessGrant, split: SplitEntity, row: RowRecord | null): void {
    if (grant.isAdmin) return;
    for (const { column, parent } of this.registry.parentsOf(def)) {
      const value = split.columns[column];
      if (value === null || value === undefined || (row && row[column] === value)) continue;
      if (!this.allowed(parent, grant, 'write', value)) {
        throw forbidden(`cannot set ${column} to ${value}: ${parent.urlNames[0]} ${value} is outside your access grant`);
      }
    }
  }

  /** 409 when the write gives a row the name (and parent) of another row, for tables whose rules say so. */
  private checkUniqueName(def: EntityDef, rules: EntityRules, split: SplitEntity, row: RowRecord | null): void {
    const unique = rules.uniqueName;
    if (!unique) return;
    const { within } = unique;
    const field = unique.field ?? 'name';
    const setsName = field in split.meta;
    const setsParent = within !== null && within in split.columns;
    if (row && !setsName && !setsParent) return;
    const currentName = row ? parseMeta(row.meta_data)[field] : undefined;
    const name = setsName ? split.meta[field] : currentName;
    if (typeof name !== 'string') return; // binds no collection
    const parent = within === null ? null : setsParent ? split.columns[within] : ((row?.[within] as number | null | undefined) ?? null);
    if (row && name === currentName && (within === null || parent === row[within])) return; // unchanged
    // json_valid first: a row whose meta_data SQLite cannot parse must not make this check fail.
    // The path is spliced, not bound, so that an index on this expression serves the check (migration 13).
    const conditions = [`(CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.${field}') END) = ?`];
    const params: unknown[] = [name];
    if (within !== null) {
      conditions.push(`${ident(within)} IS ?`);
      params.push(parent);
    }
    if (row) {
      conditions.push('id <> ?');
      params.push(row.id);
    }
    if (this.db.prepare(`SELECT 1 FROM ${ident(def.table)} WHERE ${conditions.join(' AND ')} LIMIT 1`).get(...params)) {
      throw conflict(`DUPLICATE: ${unique.noun} named ${JSON.stringify(name)} already exists${unique.parentNoun ? ` in this ${unique.parentNoun}` : ''}`);
    }
  }

  private rowById(def: EntityDef, id: number | string, extra?: Where): RowRecord | undefined {
    const where = compileWhere(extra, { columns: this.registry.realColumns(def) });
    return this.db.prepare(`SELECT * FROM ${ident(def.table)} WHERE id = ? AND ${where.sql}`).get(id, ...where.params) as RowRecord | undefined;
  }

  private readable(def: EntityDef, grant: AccessGrant, id: number | string, extra?: Where): RowRecord {
    const row = this.rowById(def, id, extra);
    if (!row) throw notFound('item not found');
    if (!this.allowed(def, grant, 'read', id)) {
      if (this.rulesOf(def.table).invisibleIsAbsent) throw notFound('item not found');
      throw forbidden(`${def.urlNames[0]} ${id} is outside your access grant`);
    }
    return row;
  }

  /** A row the caller may not even see, of a table whose rules make such rows read as absent. */
  private hidden(def: EntityDef, grant: AccessGrant, id: number | string): boolean {
    return this.rulesOf(def.table).invisibleIsAbsent === true && !this.allowed(def, grant, 'read', id);
  }

  /** Tables whose rules keep every change for admins (rows all tenants share): 403 for the others. */
  private checkAdminWrites(def: EntityDef, grant: AccessGrant): void {
    if (this.rulesOf(def.table).adminWritesOnly && !grant.isAdmin) throw forbidden(`only an admin can change or delete ${def.urlNames[0]}`);
  }

  private allowed(def: EntityDef, grant: AccessGrant, access: 'read' | 'write', id: number | string): boolean {
    if (grant.isAdmin) return true;
    const p = grant.predicate(def, access, this.now());
    return this.db.prepare(`SELECT 1 FROM ${ident(def.table)} WHERE id = ? AND ${p.sql}`).get(id, ...p.params) !== undefined;
  }

  private whereSql(def: EntityDef, grant: AccessGrant, access: 'read' | 'write', where: Where | undefined): GrantSql {
    const compiled = compileWhere(where, { columns: this.registry.realColumns(def) });
    const p = grant.predicate(def, access, this.now());
    return { sql: `(${compiled.sql}) AND ${p.sql}`, params: [...compiled.params, ...p.params] };
  }

  private selectRows(def: EntityDef, grant: AccessGrant, access: 'read' | 'write', where: Where | undefined, filter: Filter): RowRecord[] {
    const { sql, params } = this.whereSql(def, grant, access, where);
    const order = compileOrder(filter.order, { columns: this.registry.realColumns(def) });
    const limit = Math.min(filter.limit ?? this.maxListRows, this.maxListRows);
    return this.db
      .prepare(`SELECT * FROM ${ident(def.table)} WHERE ${sql} ${order.sql} LIMIT ? OFFSET ?`)
      .all(...params, ...order.params, limit, filter.skip ?? 0) as RowRecord[];
  }

  /** `include`: children as arrays, parents as one-element arrays; scoping applies to both. */
  private expandIncludes(def: EntityDef, grant: AccessGrant, entities: Entity[], include: readonly string[]): void {
    const relations = this.registry.relationNames(def);
    for (const name of include) {
      const found = relations.get(name);
      if (!found) throw badRequest(`unknown relation '${name}' for ${def.urlNames[0]}; known: ${[...relations.keys()].join(', ')}`);
      const { relation, direction } = found;
      if (direction === 'children') this.includeChildren(relation, grant, entities, name);
      else this.includeParent(relation, grant, entities, name);
    }
  }

  private includeChildren(relation: Relation, grant: AccessGrant, entities: Entity[], name: string): void {
    const ids = entities.map((e) => Number(e.id));
    const children = this.list(relation.child, grant, { where: { [relation.column]: { inq: ids } } });
    const byParent = new Map<string, Entity[]>();
    for (const child of children) {
      const key = String(child[relation.column]);
      let group = byParent.get(key);
      if (!group) byParent.set(key, (group = []));
      group.push(child);
    }
    for (const entity of entities) entity[name] = byParent.get(String(entity.id)) ?? [];
  }

  private includeParent(relation: Relation, grant: AccessGrant, entities: Entity[], name: string): void {
    const ids = [...new Set(entities.map((e) => e[relation.column]).filter((v) => v !== null && v !== undefined).map(Number))];
    const parents = ids.length ? this.list(relation.parent, grant, { where: { id: { inq: ids } } }) : [];
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

function writeContext(split: SplitEntity, creating: boolean, now: number): WriteContext {
  return { creating, now, given: new Set([...Object.keys(split.columns), ...Object.keys(split.meta)]) };
}

/** The error of a failed deferred job, saying that the write was undone. */
function undoneError(err: unknown): ServiceError {
  if (!(err instanceof ServiceError)) return new ServiceError('INTERNAL', 'a follow-up step of the change failed; the change was undone');
  return new ServiceError(err.code, `${err.message}; the change was undone`, { headers: err.headers });
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
