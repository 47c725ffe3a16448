// The org / site / unit rows as the rest of the service reads them: by id, by names, and down
// the hierarchy. Time-series collections are bound to units by names (storage/access.ts), grants
// expand down it (access-grant.ts), notifications are scoped by it. The one place that resolves
// a name path, so every caller reads a row whose meta_data SQLite cannot parse the same way: as
// a row without a name (json_valid first; a bare json_extract would fail the whole statement).

import type { Db } from '../database.js';

/** The `name` of a row of table alias `t`, or NULL when its meta_data is not JSON. */
const name = (t: string) => `(CASE WHEN json_valid(${t}.meta_data) THEN json_extract(${t}.meta_data, '$.name') END)`;

/** A level of the hierarchy, as its table is named. */
export type HierarchyTable = 'orgs' | 'sites' | 'units';

export interface GrantIds {
  orgs: number[];
  sites: number[];
  units: number[];
}

export class Hierarchy {
  private readonly unitsByNames;
  private readonly namesOfUnits;
  private readonly orgsByName;
  private readonly sitesByNames;
  private readonly orgName;
  private readonly siteNames;
  private readonly unitNames;
  private readonly sitesOfOrgs;
  private readonly unitsOfSites;
  private readonly sitesOfUnits;
  private readonly orgsOfSites;
  private readonly exists: Record<HierarchyTable, ReturnType<Db['prepare']>>;

  constructor(db: Db) {
    this.unitsByNames = db
      .prepare<[string, string, string], number>(
        `SELECT u.id FROM units u JOIN sites s ON u.siteId = s.id JOIN orgs o ON s.orgsId = o.id
          WHERE ${name('u')} = ? AND ${name('s')} = ? AND ${name('o')} = ?`,
      )
      .pluck();
    this.namesOfUnits = db.prepare<[string], { org: unknown; site: unknown; unit: unknown }>(
      `SELECT ${name('o')} AS org, ${name('s')} AS site, ${name('u')} AS unit
         FROM units u JOIN sites s ON u.siteId = s.id JOIN orgs o ON s.orgsId = o.id
        WHERE u.id IN (SELECT value FROM json_each(?))`,
    );
    this.orgsByName = db.prepare<[string], number>(`SELECT o.id FROM orgs o WHERE ${name('o')} = ?`).pluck();
    this.sitesByNames = db.prepare<[string, string], number>(`SELECT s.id FROM sites s JOIN orgs o ON s.orgsId = o.id WHERE ${name('o')} = ? AND ${name('s')} = ?`).pluck();
    this.orgName = db.prepare<[number], unknown>(`SELECT ${name('o')} FROM orgs o WHERE o.id = ?`).pluck();
    this.siteNames = db.prepare<[number], { org: unknown; site: unknown }>(`SELECT ${name('o')} AS org, ${name('s')} AS site FROM sites s JOIN orgs o ON s.orgsId = o.id WHERE s.id = ?`);
    this.unitNames = db.prepare<[number], { org: unknown; site: unknown; unit: unknown }>(
      `SELECT ${name('o')} AS org, ${name('s')} AS site, ${name('u')} AS unit FROM units u JOIN sites s ON u.siteId = s.id JOIN orgs o ON s.orgsId = o.id WHERE u.id = ?`,
    );
    const column = (sql: string) => db.prepare<[string], number | null>(sql).pluck();
    this.sitesOfOrgs = column('SELECT id FROM sites WHERE orgsId IN (SELECT value FROM json_each(?))');
    this.unitsOfSites = column('SELECT id FROM units WHERE siteId IN (SELECT value FROM json_each(?))');
    this.sitesOfUnits = column('SELECT siteId FROM units WHERE id IN (SELECT value FROM json_each(?))');
    this.orgsOfSites = column('SELECT orgsId FROM sites WHERE id IN (SELECT value FROM json_each(?))');
    this.exists = {
      orgs: db.prepare('SELECT 1 FROM orgs WHERE id = ?'),
      sites: db.prepare('SELECT 1 FROM sites WHERE id = ?'),
      units: db.prepare('SELECT 1 FROM units WHERE id = ?'),
    };
  }

  /** Unit ids bound to a path of names (usually one; rows stored before names were unique may share a path). */
  unitIds(org: string, site: string, unit: string): number[] {
    return this.unitsByNames.all(unit, site, org);
  }

  /** Ids of the org, site or unit rows named by a path of names: [org], [org, site] or [org, site, unit]. */
  idsByNames(table: HierarchyTable, names: readonly string[]): number[] {
    if (table === 'orgs') return this.orgsByName.all(names[0]!);
    if (table === 'sites') return this.sitesByNames.all(names[0]!, names[1]!);
    return this.unitIds(names[0]!, names[1]!, names[2]!);
  }

  /** `org/site/unit` names of these units (units with a part unnamed are left out). */
  unitPaths(unitIds: Iterable<number>): string[] {
    return this.namesOfUnits
      .all(JSON.stringify([...unitIds]))
      .filter((r) => typeof r.org === 'string' && typeof r.site === 'string' && typeof r.unit === 'string')
      .map((r) => `${r.org as string}/${r.site as string}/${r.unit as string}`);
  }

  /** The names of the levels above a row and of the row itself: an org's [org], a site's [org, site], a unit's [org, site, unit]; null when one is unnamed or missing. */
  namesOf(table: HierarchyTable, id: number): string[] | null {
    if (table === 'orgs') {
      const org = this.orgName.get(id);
      return typeof org === 'string' ? [org] : null;
    }
    if (table === 'sites') {
      const row = this.siteNames.get(id);
      return row && typeof row.org === 'string' && typeof row.site === 'string' ? [row.org, row.site] : null;
    }
    const row = this.unitNames.get(id);
    return row && typeof row.org === 'string' && typeof row.site === 'string' && typeof row.unit === 'string' ? [row.org, row.site, row.unit] : null;
  }

  /** Whether row `id` of an org, site or unit table exists. */
  has(table: HierarchyTable, id: number): boolean {
    return this.exists[table].get(id) !== undefined;
  }

  /**
   * A grant's ids expanded down the hierarchy (the sites of granted orgs, the units of covered
   * sites) and up for reading (the site and org of a granted unit, so a client can navigate to it).
   */
  expand(granted: GrantIds): GrantIds & { readOrgs: number[]; readSites: number[] } {
    const ids = (statement: { all(json: string): Array<number | null> }, of: number[]) => statement.all(JSON.stringify(of)).filter((v): v is number => v !== null);
    const sites = [...new Set([...granted.sites, ...ids(this.sitesOfOrgs, granted.orgs)])];
    const units = [...new Set([...granted.units, ...ids(this.unitsOfSites, sites)])];
    const readSites = [...new Set([...sites, ...ids(this.sitesOfUnits, units)])];
    const readOrgs = [...new Set([...granted.orgs, ...ids(this.orgsOfSites, readSites)])];
    return { orgs: granted.orgs, sites, units, readOrgs, readSites };
  }
}
