// What metadata changes do to the time series, as entity hooks: collections are bound to units
// by names, so renaming or moving an org, site or unit moves its collection folders (all or
// nothing: checked before the commit, undone with the entity change if the move fails after
// it); deleting one removes its collections; a tagmeta row with a dataTagId binds that tag to its
// unit's collection (when the unit has exactly one, and no other collection owns the tag).

import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { DeferredJob, Entity, EntityHooks } from '../meta/entities.js';
import type { EntityDef } from '../meta/registry.js';
import type { Hierarchy, HierarchyTable } from '../meta/tables/hierarchy.js';
import { conflict, ServiceError } from '../../shared/errors.js';
import { collectionId as idOf } from '../../shared/scope-path.js';
import type { CollectionDirectory } from './directory.js';

const SCOPE_TABLES = new Set<string>(['orgs', 'sites', 'units']);
const isScopeTable = (def: EntityDef): def is EntityDef & { table: HierarchyTable } => SCOPE_TABLES.has(def.table);

export class RenameFollowing {
  /** Folder moves of org/site/unit renames: queued by writes not yet settled, and whether one is running. */
  private readonly moves = { queued: 0, running: false };

  constructor(
    private readonly directory: CollectionDirectory,
    private readonly hierarchy: Hierarchy,
    /** Whether the storage workers run (a move needs them). */
    private readonly running: () => boolean,
    private readonly log: Logger,
  ) {}

  entityHooks(defer: (job: DeferredJob) => void): EntityHooks {
    return {
      afterCreate: (def, entity, grant) => this.mapDataTag(def, entity, null, grant, defer),
      afterUpdate: (def, before, after, grant) => {
        this.mapDataTag(def, after, before, grant, defer);
        if (isScopeTable(def)) this.followRename(def, before, after, defer);
      },
      beforeDelete: (def, entity) => {
        if (!isScopeTable(def)) return;
        this.requireRunning();
        const names = this.scopePath(def.table, entity);
        // Rows stored before names were unique may share a path: the collections stay with the one left.
        if (!names || this.hierarchy.idsByNames(def.table, names).some((id) => String(id) !== String(entity.id))) return;
        const doomed = this.directory.catalog.under(names);
        if (doomed.length === 0) return;
        // Before the commit: a time-series restore under way would bring the folders back.
        this.directory.gate.refuseChanges();
        defer({
          run: async () => {
            await this.directory.remove(doomed);
            this.directory.changed.emit({ op: 'remove', ids: doomed.map(idOf) });
          },
        });
      },
    };
  }

  private requireRunning(): void {
    if (!this.running()) {
      throw new ServiceError('UNAVAILABLE', 'the storage subsystem is not running, so org, site and unit renames, moves and deletes (which move collection folders) wait for it');
    }
  }

  /**
   * An org, site or unit whose name or parent changed: its collections must follow (the binding
   * is by names), and it must not come to bind collections it did not have. Everything that can
   * be checked is checked here, before the commit.
   */
  private followRename(def: EntityDef & { table: HierarchyTable }, before: Entity, after: Entity, defer: (job: DeferredJob) => void): void {
    const from = this.scopePath(def.table, before);
    const to = this.scopePath(def.table, after);
    if (from && to && from.every((name, i) => name === to[i])) return;
    if (!from && !to) return;
    this.requireRunning();
    const { catalog } = this.directory;
    if (this.moves.running) {
      // Checks below read the catalog, which a running move is changing.
      throw new ServiceError('UNAVAILABLE', 'collections of another org, site or unit are being moved; retry in a moment', { headers: { 'retry-after': '1' } });
    }
    if (to && catalog.under(to).length > 0) {
      throw conflict(`DUPLICATE: collections already exist under ${to.join('/')}; a rename or move does not merge into them`);
    }
    const affected = from ? catalog.under(from) : [];
    if (affected.length === 0) return;
    this.directory.gate.refuseChanges(); // a time-series restore under way would undo the move
    if (!to) {
      throw conflict(`${def.urlNames[0]} ${String(after.id)} has collections, so it needs a name, and parents with names, for their folders`);
    }
    catalog.checkRelocation(from!, to);
    const kind = def.urlNames[0]!.replace(/s$/, '');
    const move = async (source: readonly string[], target: readonly string[]) => {
      try {
        await this.directory.relocate(source, target);
      } catch (err) {
        this.log.warn({ err, from: source.join('/'), to: target.join('/') }, 'collection folders could not be moved');
        if (err instanceof ServiceError) throw err;
        const code = (err as NodeJS.ErrnoException).code ?? 'error';
        const inTheWay = ['EEXIST', 'ENOTEMPTY', 'ENOTDIR', 'EISDIR'].includes(code);
        throw new ServiceError(inTheWay ? 'CONFLICT' : 'INTERNAL', `the collection folders of ${kind} ${source.join('/')} could not be moved to ${target.join('/')} (${code})`);
      }
      this.directory.changed.emit({ op: 'relocate', from: source, to: target });
    };
    const finished = () => {
      if (--this.moves.queued === 0) this.moves.running = false;
    };
    defer({
      run: async () => {
        this.moves.running = true;
        try {
          await move(from!, to);
        } finally {
          finished();
        }
      },
      revert: async () => {
        this.moves.queued++;
        this.moves.running = true;
        try {
          await move(to, from!);
        } finally {
          finished();
        }
      },
      drop: finished,
    });
    this.moves.queued++; // after defer(): drop() is only ever called once the hook has returned
  }

  /**
   * Binds a tagmeta row's dataTagId to its unit's collection (when the unit has exactly one).
   * A tag another collection owns is not re-bound: 409, naming that collection to admins only.
   */
  private mapDataTag(def: EntityDef, entity: Entity, before: Entity | null, grant: AccessGrant, defer: (job: DeferredJob) => void): void {
    if (def.table !== 'tagmeta' || typeof entity.dataTagId !== 'string' || !entity.unitsId) return;
    if (before && before.dataTagId === entity.dataTagId && before.unitsId === entity.unitsId) return; // binding unchanged
    const names = this.hierarchy.namesOf('units', Number(entity.unitsId));
    if (!names) return;
    const matches = this.directory.catalog.under(names);
    if (matches.length !== 1) return;
    const { owner, changed } = this.directory.tagScopes.claim(idOf(matches[0]!), entity.dataTagId);
    if (owner !== null) {
      const named = grant.isAdmin ? ` (${owner})` : '';
      throw conflict(`DUPLICATE: tag ${JSON.stringify(entity.dataTagId)} already belongs to another collection${named}; a tag is in one collection only`);
    }
    // Workers re-read the map once the binding is committed, not before.
    if (changed) defer({ run: async () => this.directory.tagScopes.notifyChanged() });
  }

  /** Names of an org ([org]), site ([org, site]) or unit ([org, site, unit]); null when one is missing. */
  private scopePath(table: HierarchyTable, entity: Entity): string[] | null {
    if (typeof entity.name !== 'string') return null;
    const parents = this.parentNames(table, entity);
    return parents ? [...parents, entity.name] : null;
  }

  /** Names of the org (and site) above an org/site/unit entity, outermost first. */
  private parentNames(table: HierarchyTable, entity: Entity): string[] | null {
    if (table === 'orgs') return [];
    if (table === 'sites') return this.hierarchy.namesOf('orgs', Number(entity.orgsId));
    return this.hierarchy.namesOf('sites', Number(entity.siteId));
  }
}
