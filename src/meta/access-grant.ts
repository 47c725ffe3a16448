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

import type { Claims } from '../auth/tokens.js';
import type { Db } from './database.js';
import type { EntityDef, Registry } from './registry.js';
import { ident } from './schema.js';

export type Access = 'read' | 'write';

export interface GrantSql {
  sql: string;
  params: unknown[];
}

const EVERYTHING: GrantSql = { sql: '1', params: [] };

export class AccessGrant {
  readonly isAdmin: boolean;
  readonly subject: string;
  private readonly sets: { orgs: string; sites: string; units: string; readOrgs: string; readSites: string } | null;

  private constructor(
    private readonly registry: Registry,
    claims: Pick<Claims, 'sub' | 'role' | 'orgs_id' | 'sites_id' | 'units_id'>,
    db: Db | null,
  ) {
    this.isAdmin = claims.role === 'admin';
    this.subject = claims.sub;
    this.sets = this.isAdmin || !db ? null : expandGrant(db, claims);
  }

  static of(db: Db, registry: Registry, claims: Pick<Claims, 'sub' | 'role' | 'orgs_id' | 'sites_id' | 'units_id'>): AccessGrant {
    return new AccessGrant(registry, claims, db);
  }

  /** Units inside the grant (orgs and sites expanded); null for admins, who reach everything. */
  grantedUnits(): Set<number> | null {
    if (this.isAdmin || !this.sets) return null;
    return new Set(JSON.parse(this.sets.units) as number[]);
  }

  /** Boolean SQL over columns of `def.table` that is true for rows the caller may read or change. */
  predicate(def: EntityDef, access: Access): GrantSql {
    if (this.isAdmin || !this.sets) return EVERYTHING;
    return this.rowPredicate(def, access, 0);
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
      case 'notifications': {
        if (access === 'write') return { sql: `${t}."userId" = ?`, params: [this.subject] };
        // A broadcast is visible when every scope column it sets is inside the grant (none set: system-wide).
        const scoped = [inSet('orgsId', sets.orgs), inSet('sitesId', sets.sites), inSet('unitsId', sets.units)];
        const columns = ['orgsId', 'sitesId', 'unitsId'];
        return {
          sql: `(${t}."userId" = ? OR (${t}."userId" IS NULL AND ${scoped.map((s, i) => `(${t}.${ident(columns[i])} IS NULL OR ${s.sql})`).join(' AND ')}))`,
          params: [this.subject, ...scoped.flatMap((s) => s.params)],
        };
      }
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
function expandGrant(db: Db, claims: Pick<Claims, 'orgs_id' | 'sites_id' | 'units_id'>) {
  const orgs = ids(claims.orgs_id);
  const column = (sql: string, param: number[]) =>
    (db.prepare(sql).pluck().all(JSON.stringify(param)) as Array<number | null>).filter((v): v is number => v !== null);
  const sites = [...new Set([...ids(claims.sites_id), ...column('SELECT id FROM sites WHERE orgsId IN (SELECT value FROM json_each(?))', orgs)])];
  const units = [...new Set([...ids(claims.units_id), ...column('SELECT id FROM units WHERE siteId IN (SELECT value FROM json_each(?))', sites)])];
  const readSites = [...new Set([...sites, ...column('SELECT siteId FROM units WHERE id IN (SELECT value FROM json_each(?))', units)])];
  const readOrgs = [...new Set([...orgs, ...column('SELECT orgsId FROM sites WHERE id IN (SELECT value FROM json_each(?))', readSites)])];
  return {
    orgs: JSON.stringify(orgs),
    sites: JSON.stringify(sites),
    units: JSON.stringify(units),
    readOrgs: JSON.stringify(readOrgs),
    readSites: JSON.stringify(readSites),
  };
}
