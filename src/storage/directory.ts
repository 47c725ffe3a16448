// The collection directory: which collections exist (the catalog), who reaches them (the
// binding of collections to unit entities, CollectionAccess), and which collection a tag belongs
// to (the tag-to-scope map). Every lookup goes through the caller's grant: a collection outside
// it answers as a missing one does, so another tenant's names never leak.

import type { AccessGrant } from '../meta/access-grant.js';
import type { Hierarchy } from '../meta/tables/hierarchy.js';
import { Signal } from '../signal.js';
import { badRequest, forbidden, notFound, ServiceError } from '../../shared/errors.js';
import type { CollectionRecord, SeriesRequest } from '../../shared/protocol.js';
import { SCOPE_FIELDS, type CollectionScope, type ScopeFields } from '../../shared/scope.js';
import { collectionId as idOf } from '../../shared/scope-path.js';
import type { CollectionAccess } from './access.js';
import type { CollectionChange, Collections, QueryGroup } from './api.js';
import type { CollectionCatalog } from './catalog.js';
import type { DiskGuard } from './disk-guard.js';
import type { MetricRequest } from './query-spec.js';
import type { StoreGate } from './store-gate.js';
import type { TagScopes } from './tag-scopes.js';

export class CollectionDirectory implements Collections {
  /** Catalog changes made here (not those replayed from another node): replication records them. */
  readonly changed = new Signal<[change: CollectionChange]>();

  constructor(
    readonly catalog: CollectionCatalog,
    readonly access: CollectionAccess,
    readonly tagScopes: TagScopes,
    private readonly hierarchy: Hierarchy,
    /** Read by the entity hooks that move or remove collection folders (rename-following.ts). */
    readonly gate: StoreGate,
    private readonly disk: DiskGuard,
  ) {}

  // ---- reading ------------------------------------------------------------------

  visible(grant: AccessGrant): CollectionRecord[] {
    return this.access.filter(grant, this.catalog.list());
  }

  /** One collection the caller may see; 404 alike for a missing one and one outside the grant. */
  get(grant: AccessGrant, id: string): CollectionRecord {
    const record = this.catalog.get(id);
    if (!record || !this.access.canAccess(grant, record)) throw notFound(`collection ${id} not found`);
    return record;
  }

  exists(id: string): boolean {
    return this.catalog.get(id) !== undefined;
  }

  canReach(grant: AccessGrant, id: string): boolean {
    const record = this.catalog.get(id);
    return record !== undefined && this.access.canAccess(grant, record);
  }

  reachesUnit(grant: AccessGrant, scope: Pick<CollectionScope, 'organization' | 'site' | 'unit'>): boolean {
    return this.access.canAccess(grant, scope);
  }

  unitPaths(grant: AccessGrant): string[] | null {
    return this.access.unitPaths(grant);
  }

  /** Whether one of the caller's granted units (any unit, for admins) has a collection. */
  unitConfigured(grant: AccessGrant): boolean {
    return this.visible(grant).length > 0;
  }

  collectionOfTag(tag: string): string | null {
    return this.tagScopes.collectionOf(tag);
  }

  unitIdOf(collectionId: string): number | null {
    const record = this.catalog.get(collectionId);
    return record ? (this.access.unitIds(record)[0] ?? null) : null;
  }

  collectionsOfUnit(unitId: number): string[] {
    const names = this.hierarchy.namesOf('units', unitId);
    return names ? this.catalog.under(names).map((r) => idOf(r)) : [];
  }

  // ---- queries: which collection each tag is in -----------------------------------

  /** Groups tags by collection: the explicit scope, else the tag-to-scope map. */
  resolve(grant: AccessGrant, fields: ScopeFields, tags: string[]): QueryGroup[] {
    return this.resolveMetrics(grant, [...new Set(tags)].map((name) => ({ name, scope: fields, pipeline: [] })));
  }

  /** Each metric's collection (its scope, else the tag map), grouped by collection; a repeated name keeps its last request. */
  resolveMetrics(grant: AccessGrant, metrics: MetricRequest[]): QueryGroup[] {
    const byName = new Map<string, { collectionId: string; request: SeriesRequest }>();
    for (const metric of metrics) {
      byName.delete(metric.name);
      byName.set(metric.name, { collectionId: this.collectionFor(grant, metric.scope, metric.name), request: { tag: metric.name, pipeline: metric.pipeline } });
    }
    const groups = new Map<string, SeriesRequest[]>();
    for (const { collectionId, request } of byName.values()) {
      let group = groups.get(collectionId);
      if (!group) groups.set(collectionId, (group = []));
      group.push(request);
    }
    return [...groups].map(([collectionId, series]) => ({ collectionId, series }));
  }

  private collectionFor(grant: AccessGrant, fields: ScopeFields, tag: string): string {
    const given = SCOPE_FIELDS.filter((k) => fields[k] !== undefined);
    let id: string | null;
    if (given.length > 0) {
      const missing = SCOPE_FIELDS.find((k) => fields[k] === undefined);
      if (missing) throw badRequest(`missing scope field '${missing}' (give all four scope fields, or none to use the tag map)`);
      id = idOf(fields as CollectionScope);
    } else {
      id = this.tagScopes.collectionOf(tag);
      // A tag of a collection the caller may not see is as unknown as one of no collection:
      // naming that collection would tell another tenant's names (and that the tag exists).
      if (!id || !this.canReach(grant, id)) throw badRequest(`unknown tag "${tag}": it is in no collection you can read; give organization, site, unit and grid`);
    }
    this.get(grant, id);
    return id;
  }

  // ---- changing the catalog ---------------------------------------------------------

  async create(grant: AccessGrant, scope: CollectionScope, extra: Record<string, unknown>, replicated = false): Promise<CollectionRecord> {
    this.gate.refuseChanges();
    if (!this.access.canAccess(grant, scope)) throw forbidden('the collection\'s unit is outside your access grant');
    this.disk.check();
    const record = await this.catalog.create(scope, extra);
    if (!replicated) this.changed.emit({ op: 'create', scope, extra });
    return record;
  }

  async update(grant: AccessGrant, scope: CollectionScope, extra: Record<string, unknown>, replicated = false): Promise<CollectionRecord> {
    this.gate.refuseChanges();
    const id = idOf(scope);
    this.get(grant, id);
    this.disk.check();
    const record = await this.catalog.update(id, extra);
    if (!replicated) this.changed.emit({ op: 'update', scope, extra });
    return record;
  }

  /** Replays a catalog change another node made (the cluster's applier); not recorded again. */
  async applyReplicated(change: CollectionChange, grant: AccessGrant): Promise<void> {
    switch (change.op) {
      case 'create':
        try {
          await this.create(grant, change.scope, change.extra, true);
        } catch (err) {
          // Already made (a replicated write that created it first) is the state wanted.
          if (!(err instanceof ServiceError && err.status === 409)) throw err;
        }
        return;
      case 'update':
        await this.update(grant, change.scope, change.extra, true);
        return;
      case 'relocate':
        this.gate.refuseChanges();
        await this.relocate(change.from, change.to);
        return;
      case 'remove':
        this.gate.refuseChanges();
        await this.remove(change.ids.map((id) => this.catalog.get(id)).filter((r): r is CollectionRecord => r !== undefined));
        return;
    }
  }

  /** Moves the collections of an org, site or unit to new names; their tags follow. */
  async relocate(from: readonly string[], to: readonly string[]): Promise<void> {
    const renamed = await this.catalog.relocate(from, to);
    for (const [oldId, newId] of renamed) this.tagScopes.renameCollection(oldId, newId);
  }

  /** Removes collections and frees their tags. */
  async remove(records: CollectionRecord[]): Promise<void> {
    await this.catalog.remove(records);
    for (const r of records) this.tagScopes.removeCollection(idOf(r));
  }
}
