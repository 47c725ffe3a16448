// Who a request runs as: the subject of its credential, with the account's current role and
// grants. The HTTP layer applies a route's auth level from the role (admin routes, read-only
// accounts on mutating routes); what the grant ids open is the metadata layer's business
// (meta/access-grant.ts). Credentials themselves (tokens, passwords) are checked in auth/.

export type Role = 'admin' | 'read-write' | 'read-only';
export const ROLES: readonly Role[] = ['admin', 'read-write', 'read-only'];

/** What a request runs with: the credential's subject and expiry, the account's current role and grants (entity ids as strings). */
export interface Claims {
  sub: string;
  role: Role;
  units_id: string[];
  sites_id: string[];
  orgs_id: string[];
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** The id of the API key the request came with; absent for a token or a password. */
  apiKey?: string;
}

/** Claims without the expiry and the credential: an account's role and grants. */
export type GrantClaims = Omit<Claims, 'exp' | 'apiKey'>;
