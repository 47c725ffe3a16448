// Accounts as the auth routes see them. Rows live in the `users` entity table;
// the role is a key of meta_data, the grants are `accessAllowed` of the user's
// `userprofiles` rows (meta/tables/accounts.ts reads them). Emails are
// identities, normalised where they enter (meta/email.ts).
//
// Every request runs with the account's current role and grants, not the ones
// in its token: `current()` answers from a per-email cache that the entity
// store's hooks (and this class's own writes) clear synchronously whenever a
// `users` or `userprofiles` row changes or goes, cascades included, so a
// change takes effect on the next request and an unchanged account costs a
// map lookup, not a query. A change from elsewhere (a restore, a replicated
// row) clears the whole cache (the auth plugin subscribes to the store's events).

import crypto from 'node:crypto';
import type { AccountsTable, UserRow } from '../meta/tables/accounts.js';
import type { EntityHooks } from '../meta/entities.js';
import { normalizeEmail } from '../meta/email.js';
import { ROLES, type GrantClaims, type Role } from '../http/caller.js';

export { normalizeEmail };

export interface Account {
  id: number;
  email: string;
  passwordHash: string | null;
  name: string;
  role: Role;
}

/** What a request runs with, plus the stamp its token must carry. */
export interface AccountState extends GrantClaims {
  readonly id: number;
  /**
   * Changes when the password changes or the account is deleted and made
   * again (a keyed hash of id and password hash); a token carries the stamp
   * it was issued under, so older tokens stop working.
   */
  readonly stamp: string;
}

/** Bound on cached accounts (deleted subjects included); over it the cache starts again. */
const MAX_CACHED_ACCOUNTS = 100_000;

export class AccountStore {
  private readonly stampKey: Buffer;
  /** Email -> current state, or null for "no such account" (a deleted account's tokens keep coming). */
  private readonly states = new Map<string, AccountState | null>();

  constructor(private readonly table: AccountsTable, secret: Buffer) {
    this.stampKey = crypto.createHmac('sha256', secret).update('account stamps').digest();
  }

  setRole(email: string, role: Role): void {
    const normalized = normalizeEmail(email);
    this.table.setRole(normalized, role);
    this.states.delete(normalized);
  }

  find(email: string): Account | null {
    const row = this.table.byEmailAddress(normalizeEmail(email));
    return row ? toAccount(row) : null;
  }

  /** Creates an account; false when the email is taken. */
  create(email: string, passwordHash: string, name: string, role: Role): boolean {
    const normalized = normalizeEmail(email);
    try {
      return this.table.insert(normalized, passwordHash, name, JSON.stringify({ role }));
    } finally {
      this.states.delete(normalized);
    }
  }

  /**
   * Removes the account; number removed (0 or 1). Its tokens stop working
   * because `current()` no longer finds it (the `revoked_subjects` table of
   * migration 1 is no longer needed for that and is left unused).
   */
  delete(email: string): number {
    const normalized = normalizeEmail(email);
    const removed = this.table.delete(normalized);
    this.states.delete(normalized);
    return removed;
  }

  /** Forgets every account state (rows changed outside the entity store: a restore, a replicated change). */
  forgetAll(): void {
    this.states.clear();
  }

  /** The account's current role, grants and stamp; null when it does not exist. */
  current(email: string): AccountState | null {
    const cached = this.states.get(email);
    if (cached !== undefined) return cached;
    const row = this.table.byEmailAddress(email);
    const state = row ? this.stateOf(toAccount(row)) : null;
    if (this.states.size >= MAX_CACHED_ACCOUNTS) this.states.clear();
    this.states.set(email, state);
    return state;
  }

  /**
   * The state to sign a token with after a login verified `account`'s
   * password; null when the account was deleted or its password changed
   * meanwhile (the password just proven is then not the current one).
   */
  stateAfterLogin(account: Account): AccountState | null {
    const row = this.table.byEmailAddress(account.email);
    if (!row || row.id !== account.id || row.password !== account.passwordHash) return null;
    return this.current(account.email);
  }

  /** Hooks that keep `current()` exact: any write to a user or its profiles clears that user's entry. */
  entityHooks(): EntityHooks {
    const changed = (table: string, entity: Record<string, unknown>) => {
      if (table === 'users' && typeof entity.email === 'string') this.states.delete(entity.email);
      if (table === 'userprofiles' && entity.usersId !== null && entity.usersId !== undefined) this.forgetId(Number(entity.usersId));
    };
    return {
      afterCreate: (def, entity) => changed(def.table, entity),
      afterUpdate: (def, before, after) => {
        changed(def.table, before);
        changed(def.table, after);
      },
      beforeDelete: (def, entity) => changed(def.table, entity),
    };
  }

  private forgetId(id: number): void {
    for (const [email, state] of this.states) if (state?.id === id) this.states.delete(email);
  }

  /**
   * Role, grants and stamp of an account. Grants are the union of
   * `accessAllowed` (`{orgs?: [ids], sites: [ids], units: [ids]}`) over the user's profiles.
   */
  private stateOf(account: Account): AccountState {
    const grants = { orgs: new Set<string>(), sites: new Set<string>(), units: new Set<string>() };
    for (const text of this.table.profiles(account.id)) {
      let access: unknown;
      try {
        access = (JSON.parse(text) as { accessAllowed?: unknown }).accessAllowed;
      } catch {
        continue;
      }
      if (!access || typeof access !== 'object') continue;
      for (const level of ['orgs', 'sites', 'units'] as const) {
        const ids = (access as Record<string, unknown>)[level];
        if (Array.isArray(ids)) for (const id of ids) if (typeof id === 'string' || typeof id === 'number') grants[level].add(String(id));
      }
    }
    const stamp = crypto
      .createHmac('sha256', this.stampKey)
      .update(`${account.id}\n${account.passwordHash ?? ''}`)
      .digest('base64url')
      .slice(0, 22);
    return Object.freeze({
      id: account.id, sub: account.email, role: account.role, stamp,
      units_id: [...grants.units], sites_id: [...grants.sites], orgs_id: [...grants.orgs],
    });
  }
}

function toAccount(row: UserRow): Account {
  let meta: Record<string, unknown> = {};
  try {
    meta = JSON.parse(row.meta_data) as Record<string, unknown>;
  } catch {
    // a hand-edited row with broken JSON: treat as no extra fields
  }
  const role = ROLES.includes(meta.role as Role) ? (meta.role as Role) : 'read-write';
  return { id: row.id, email: row.email, passwordHash: row.password, name: row.username ?? '', role };
}
