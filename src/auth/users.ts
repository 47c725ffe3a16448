// Accounts as the auth routes see them. Rows live in the `users` entity table;
// the role is a key of meta_data. Emails are identities: trimmed and
// lower-cased everywhere they enter.

import type { Db } from '../meta/database.js';
import { ROLES, type GrantClaims, type Role } from './tokens.js';

export interface Account {
  id: number;
  email: string;
  passwordHash: string | null;
  name: string;
  role: Role;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

interface UserRow {
  id: number;
  email: string;
  password: string | null;
  username: string | null;
  meta_data: string;
}

export class AccountStore {
  private readonly byEmail;
  private readonly insert;
  private readonly removeByEmail;
  private readonly markRevoked;

  constructor(private readonly db: Db) {
    this.byEmail = db.prepare<[string], UserRow>('SELECT id, email, password, username, meta_data FROM users WHERE email = ?');
    this.insert = db.prepare<[string, string, string, string]>(
      'INSERT INTO users (email, password, username, meta_data) VALUES (?, ?, ?, ?)',
    );
    this.removeByEmail = db.prepare<[string]>('DELETE FROM users WHERE email = ?');
    this.markRevoked = db.prepare<[string, number]>(
      'INSERT INTO revoked_subjects (email, revoked_at) VALUES (?, ?) ON CONFLICT(email) DO UPDATE SET revoked_at = excluded.revoked_at',
    );
  }

  setRole(email: string, role: Role): void {
    this.db
      .prepare("UPDATE users SET meta_data = json_set(meta_data, '$.role', ?) WHERE email = ?")
      .run(role, normalizeEmail(email));
  }

  /** Subjects whose earlier tokens are void, for the token service at start. */
  revokedSubjects(): Array<{ email: string; revoked_at: number }> {
    return this.db.prepare('SELECT email, revoked_at FROM revoked_subjects').all() as Array<{ email: string; revoked_at: number }>;
  }

  find(email: string): Account | null {
    const row = this.byEmail.get(normalizeEmail(email));
    if (!row) return null;
    let meta: Record<string, unknown> = {};
    try {
      meta = JSON.parse(row.meta_data) as Record<string, unknown>;
    } catch {
      // a hand-edited row with broken JSON: treat as no extra fields
    }
    const role = ROLES.includes(meta.role as Role) ? (meta.role as Role) : 'read-write';
    return { id: row.id, email: row.email, passwordHash: row.password, name: row.username ?? '', role };
  }

  /** Creates an account; false when the email is taken. */
  create(email: string, passwordHash: string, name: string, role: Role): boolean {
    try {
      this.insert.run(normalizeEmail(email), passwordHash, name, JSON.stringify({ role }));
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') return false;
      throw err;
    }
  }

  /** Removes the account and records the revocation of its tokens; number removed (0 or 1). */
  delete(email: string, atSeconds: number): number {
    const normalized = normalizeEmail(email);
    return this.db.transaction(() => {
      const removed = this.removeByEmail.run(normalized).changes;
      if (removed > 0) this.markRevoked.run(normalized, atSeconds);
      return removed;
    })();
  }

  /**
   * Token claims for an account. Grants are the union of `accessAllowed`
   * (`{orgs?: [ids], sites: [ids], units: [ids]}`) over the user's profiles.
   */
  claimsFor(account: Account): GrantClaims {
    const grants = { orgs: new Set<string>(), sites: new Set<string>(), units: new Set<string>() };
    const profiles = this.db.prepare('SELECT meta_data FROM userprofiles WHERE usersId = ?').pluck().all(account.id) as string[];
    for (const text of profiles) {
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
    return {
      sub: account.email, role: account.role,
      units_id: [...grants.units], sites_id: [...grants.sites], orgs_id: [...grants.orgs],
    };
  }
}
