// The caller's access grant: row-level access, applied inside the entity store
// so no route can skip it. ("Scope" is the four names of a time series,
// shared/scope.ts; this is what a caller may reach.)
//
// A caller's grant (token claims `orgs_id`, `sites_id`, `units_id`) covers
// the granted orgs, the sites of granted orgs and the granted sites, and the
// units of all those sites plus the granted units. Site and unit rows are
// judged by their foreign key as well as by id, so a site created in a
// granted org (or a unit under a covered site) is inside at once. Rows of
// other tables belong to the hierarchy through their foreign keys: a row is
// inside when it names at least one parent and every parent it names is
// inside (one foreign parent is enough to put a row outside, for reading and
// for writing). Reading also reaches the ancestors of granted rows (the site
// and org of a granted unit), so a client can navigate to its units;
// changing them does not. Users see and change only their own account rows.
// Tables with no path to the hierarchy are shared by every logged-in caller.
//
// The entity store adds what a predicate over the stored row cannot say: a
// write that sets a foreign key must name a parent inside the grant.

import type { Claims } from '../http/caller.js';
import type { Hierarchy } from './tables/hierarchy.js';
import type { EntityDef, Registry } from './registry.js';
import { ident } from './schema.js';

export type Access = 'read' | 'write';

/** The columns of a notification that decide who may see it (ids as numbers). */
export interface NotificationAudienceFields {
  userId: string | null;
  orgsId: number | null;
  sitesId: number | null;
  unitsId: number | null;
  expiresAt: number | null;
}

export interface GrantSql {
  sql: string;
  params: unknown[];
}

const EVERYTHING: GrantSql = { sql: '1', params: [] };

export class AccessGrant {
  readonly isAdmin: boolean;
  readonly subject: string;
  private readonly sets: { orgs: string; sites: string; units: string; readOrgs: string; readSites: string } | null;
  /** The granted id sets as Sets, made on first use by seesNotification. */
  private idSets: { orgs: Set<number>; sites: Set<number>; units: Set<number> } | null = null;

  private constructor(
    private readonly registry: Registry,
    claims: Pick<Claims, 'sub' | 'role' | 'orgs_id' | 'sites_id' | 'units_id'>,
    hierarchy: Hierarchy | null,
  ) {
    this.isAdmin = claims.role === 'admin';
    this.subject = claims.sub;
    this.sets = this.isAdmin || !hierarchy ? null : expandGrant(hierarchy, claims);
  }

  /** The grant of `claims`, expanded through the hierarchy as it is now (MetaStore.grantOf is the usual way in). */
  static of(hierarchy: Hierarchy, registry: Registry, claims: Pick<Claims, 'sub' | 'role' | 'orgs_id' | 'sites_id' | 'units_id'>): AccessGrant {
    return new AccessGrant(registry, claims, hierarchy);
  }

  /** Everything, for the service's own work (a replicated write, a notification the monitor sends): `subject` names who acts. */
  static everything(registry: Registry, subject: string): AccessGrant {
    return new AccessGrant(registry, { sub: subject, role: 'admin', orgs_id: [], sites_id: [], units_id: [] }, null);
  }

  /** Units inside the grant (orgs and sites expanded); null for admins, who reach everything. */
  grantedUnits(): Set<number> | null {
    if (this.isAdmin || !this.sets) return null;
    return new Set(JSON.parse(this.sets.units) as number[]);
  }

  /**
   * Boolean SQL over columns of `def.table` that is true for rows the caller may read or change
   * at time `now` (a notification's expiry).
   */
  predicate(def: EntityDef, access: Access, now: number): GrantSql {
    if (this.isAdmin || !this.sets) return EVERYTHING;
    if (def.table === 'notifications') return this.notificationPredicate(access, now);
    return this.rowPredicate(def, access, 0);
  }

  /**
   * Whether the caller may see notification `n` at `now`: the same rule as notificationPredicate,
   * in memory, for the live stream (each new row is matched against every connected stream; the
   * test test/meta/notification-visibility.test.ts holds the two to the same answers).
   */
  seesNotification(n: NotificationAudienceFields, now: number): boolean {
    if (this.isAdmin || !this.sets) return true;
    if (n.expiresAt !== null && n.expiresAt <= now) return false;
    if (n.userId !== null) return n.userId === this.subject;
    const ids = (this.idSets ??= {
      orgs: new Set(JSON.parse(this.sets.orgs) as number[]),
      sites: new Set(JSON.parse(this.sets.sites) as number[]),
      units: new Set(JSON.parse(this.sets.units) as number[]),
    });
    if (n.unitsId !== null) return ids.units.has(n.unitsId);
    if (n.sitesId !== null) return ids.sites.has(n.sitesId);
    if (n.orgsId !== null) return ids.orgs.has(n.orgsId);
    return true;
  }

  /**
   * Notifications (SPEC "Notifications", WIRE part 2): a row addressed to a user (userId, an
   * email) is that user's alone; a broadcast (userId null) is visible when its most specific scope
   * column lies in the grant (unitsId in the granted units, else sitesId in the granted sites,
   * else orgsId in the granted orgs, orgs and sites counting everything below them; no scope at
   * all is system-wide); an expired row is nobody's but the admins'. Only rows addressed to the
   * caller are the caller's to change.
   */
  private notificationPredicate(access: Access, now: number): GrantSql {
    const sets = this.sets!;
    const t = ident('notifications');
    const live = `(${t}."expiresAt" IS NULL OR ${t}."expiresAt" > ?)`;
    if (access === 'write') return { sql: `(${t}."userId" = ? AND ${live})`, params: [this.subject, now] };
    const inSet = (column: string) => `${t}.${ident(column)} IN (SELECT value FROM json_each(?))`;
    return {
      sql:
        `(${live} AND (${t}."userId" = ? OR (${t}."userId" IS NULL AND CASE` +
        ` WHEN ${t}."unitsId" IS NOT NULL THEN ${inSet('unitsId')}` +
        ` WHEN ${t}."sitesId" IS NOT NULL THEN ${inSet('sitesId')}` +
        ` WHEN ${t}."orgsId" IS NOT NULL THEN ${inSet('orgsId')}` +
        ` ELSE 1 END)))`,
      params: [now, this.subject, sets.units, sets.sites, sets.orgs],
    };
  }

  private rowPredicate(def: EntityDef, access: Access, depth: number): GrantSql {
    const sets = this.sets!;
    const t = ident(def.table);
    const inSet = (column: string, set: string): GrantSql => ({
      sql: `${t}.${ident(column)} IN (SELECT value FROM json_each(?))`,
      params: [set],
    });
    switch (def.table) {
      case 'orgs':
        return inSet('id', access === 'read' ? sets.readOrgs : sets.orgs);
      case 'sites': {
        // By id (granted, or found under a granted org when the request began) or by its org.
        const byId = inSet('id', access === 'read' ? sets.readSites : sets.sites);
        const byOrg = inSet('orgsId', sets.orgs);
        return { sql: `(${byId.sql} OR ${byOrg.sql})`, params: [...byId.params, ...byOrg.params] };
      }
      case 'units': {
        const byId = inSet('id', sets.units);
        const sites = this.rowPredicate(this.registry.table('sites'), 'write', depth + 1);
        return {
          sql: `(${byId.sql} OR ${t}."siteId" IN (SELECT "sites".id FROM "sites" WHERE ${sites.sql}))`,
          params: [...byId.params, ...sites.params],
        };
      }
      case 'users':
        return { sql: `${t}."email" = ?`, params: [this.subject] };
    }
    const parents = this.registry.parentsOf(def);
    if (parents.length === 0) return EVERYTHING;
    if (depth > 8) return { sql: '0', params: [] };
    // Inside when it names a parent and every parent it names is inside (parents are judged for
    // writing: an ancestor readable only for navigation does not open its other children).
    const named = parents.map((relation) => `${t}.${ident(relation.column)} IS NOT NULL`).join(' OR ');
    const parts = parents.map((relation) => {
      const column = `${t}.${ident(relation.column)}`;
      const parentSql = this.rowPredicate(relation.parent, 'write', depth + 1);
      return {
        sql: `(${column} IS NULL OR ${column} IN (SELECT ${ident(relation.parent.table)}.id FROM ${ident(relation.parent.table)} WHERE ${parentSql.sql}))`,
        params: parentSql.params,
      };
    });
    return { sql: `((${named}) AND ${parts.map((p) => p.sql).join(' AND ')})`, params: parts.flatMap((p) => p.params) };
  }
}

function ids(values: readonly string[]): number[] {
  return values.map(Number).filter((n) => Number.isSafeInteger(n));
}

/** Expands the claims down the hierarchy (and up, for reading) into id sets, as JSON arrays for json_each. */
function expandGrant(hierarchy: Hierarchy, claims: Pick<Claims, 'orgs_id' | 'sites_id' | 'units_id'>) {
  const sets = hierarchy.expand({ orgs: ids(claims.orgs_id), sites: ids(claims.sites_id), units: ids(claims.units_id) });
  return {
    orgs: JSON.stringify(sets.orgs),
    sites: JSON.stringify(sets.sites),
    units: JSON.stringify(sets.units),
    readOrgs: JSON.stringify(sets.readOrgs),
    readSites: JSON.stringify(sets.readSites),
  };
}
