/**
 * The scope of a time series: the four names that make a collection (organization / site /
 * unit / grid), declared once for every part of the program: main thread, storage workers and
 * the codecs. Pure TypeScript with no imports, so native-free-codecs/ may use it.
 *
 * "Scope" means these four names only; what a caller may reach is its access grant
 * (src/meta/access-grant.ts).
 */

export const SCOPE_FIELDS = ['organization', 'site', 'unit', 'grid'] as const;
export type ScopeField = (typeof SCOPE_FIELDS)[number];

/** All four names: one collection. */
export type CollectionScope = Record<ScopeField, string>;

/** The scope fields a body, a query or a request names: any of the four, or none (the tag map decides). */
export type ScopeFields = Partial<CollectionScope>;

export function isCompleteScope(scope: ScopeFields): scope is CollectionScope {
  return scope.organization !== undefined && scope.site !== undefined && scope.unit !== undefined && scope.grid !== undefined;
}

export function isScopeField(key: string): key is ScopeField {
  return key === 'organization' || key === 'site' || key === 'unit' || key === 'grid';
}
