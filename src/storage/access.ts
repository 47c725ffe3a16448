// Binding between time-series collections and metadata entities: a
// collection belongs to the unit entity whose name matches its unit, under
// the site named like its site, under the org named like its organization.
// A non-admin reaches a collection only when that unit is inside its grant
// (an org or site grant covers the units below it), so a new account with no
// grant sees no data.

import type { AccessGrant } from '../meta/access-grant.js';
import type { Hierarchy } from '../meta/tables/hierarchy.js';
import type { CollectionScope } from '../../shared/scope.js';

export class CollectionAccess {
  constructor(private readonly hierarchy: Hierarchy) {}

  /** Unit entity ids bound to a collection scope (usually one). */
  unitIds(scope: Pick<CollectionScope, 'organization' | 'site' | 'unit'>): number[] {
    return this.hierarchy.unitIds(scope.organization, scope.site, scope.unit);
  }

  /**
   * The units inside the caller's grant as `organization/site/unit` names (collection ids
   * without their grid), or null for admins: what a storage worker checks a write against.
   */
  unitPaths(grant: AccessGrant): string[] | null {
    const granted = grant.grantedUnits();
    if (granted === null) return null;
    return this.hierarchy.unitPaths(granted);
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
