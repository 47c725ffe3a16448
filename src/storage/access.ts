// Binding between time-series collections and metadata entities: a
// collection belongs to the unit entity whose name matches its unit, under
// the site named like its site, under the org named like its organization.
// A non-admin reaches a collection only when that unit is inside its grant
// (an org or site grant covers the units below it), so a new account with no
// grant sees no data.

import type { Db } from '../meta/database.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { CollectionScope } from '../../shared/scope.js';

export class CollectionAccess {
  private readonly unitsByNames;
  private readonly namesOfUnits;

  constructor(db: Db) {
    // Guarded by json_valid: one stored meta_data SQLite cannot read would otherwise fail this scan for every caller.
    this.unitsByNames = db
      .prepare<[string, string, string], number>(
        `SELECT u.id FROM units u
           JOIN sites s ON u.siteId = s.id
           JOIN orgs o ON s.orgsId = o.id
          WHERE CASE WHEN json_valid(u.meta_data) THEN json_extract(u.meta_data, '$.name') END = ?
            AND CASE WHEN json_valid(s.meta_data) THEN json_extract(s.meta_data, '$.name') END = ?
            AND CASE WHEN json_valid(o.meta_data) THEN json_extract(o.meta_data, '$.name') END = ?`,
      )
      .pluck();
    const name = (t: string) => `CASE WHEN json_valid(${t}.meta_data) THEN json_extract(${t}.meta_data, '$.name') END`;
    this.namesOfUnits = db.prepare<[string]>(
      `SELECT ${name('o')} AS org, ${name('s')} AS site, ${name('u')} AS unit FROM units u
         JOIN sites s ON u.siteId = s.id
         JOIN orgs o ON s.orgsId = o.id
        WHERE u.id IN (SELECT value FROM json_each(?))`,
    );
  }

  /** Unit entity ids bound to a collection scope (usually one). */
  unitIds(scope: Pick<CollectionScope, 'organization' | 'site' | 'unit'>): number[] {
    return this.unitsByNames.all(scope.unit, scope.site, scope.organization);
  }

  /**
   * The units inside the caller's grant as `organization/site/unit` names (collection ids
   * without their grid), or null for admins: what a storage worker checks a write against.
   */
  unitPaths(grant: AccessGrant): string[] | null {
    const granted = grant.grantedUnits();
    if (granted === null) return null;
    const rows = this.namesOfUnits.all(JSON.stringify([...granted])) as Array<{ org: unknown; site: unknown; unit: unknown }>;
    return rows.filter((r) => typeof r.org === 'string' && typeof r.site === 'string' && typeof r.unit === 'string').map((r) => `${r.org}/${r.site}/${r.unit}`);
  }

  canAccess(grant: AccessGrant, record: Pick<CollectionScope, 'organization' | 'site' | 'unit'>): boolean {
    const granted = grant.grantedUnits();
    if (granted === null) return true;
    return this.unitIds(record).some((id) => granted.has(id));
  }

  filter<T extends Pick<CollectionScope, 'organization' | 'site' | 'unit'>>(grant: AccessGrant, records: T[]): T[] {
    if (grant.isAdmin) return records;
    return records.filter((r) => this.canAccess(grant, r));
  }
}
