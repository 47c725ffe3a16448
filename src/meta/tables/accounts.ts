// The `users` table and the grants of its `userprofiles` rows, as the account code reads and
// writes them (auth/accounts.ts keeps the cache; the entity routes write users through the
// entity store like any table).

import type { Db } from '../database.js';

/** A `users` row as stored. */
export interface UserRow {
  id: number;
  email: string;
  password: string | null;
  username: string | null;
  meta_data: string;
}

const ROLE = "CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.role') END";

export class AccountsTable {
  private readonly byEmail;
  private readonly insertRow;
  private readonly removeByEmail;
  private readonly setRoleOf;
  private readonly profilesOf;
  private readonly admins;
  private readonly emailById;

  constructor(db: Db) {
    this.byEmail = db.prepare<[string], UserRow>('SELECT id, email, password, username, meta_data FROM users WHERE email = ?');
    this.insertRow = db.prepare<[string, string, string, string]>('INSERT INTO users (email, password, username, meta_data) VALUES (?, ?, ?, ?)');
    this.removeByEmail = db.prepare<[string]>('DELETE FROM users WHERE email = ?');
    this.setRoleOf = db.prepare<[string, string]>("UPDATE users SET meta_data = json_set(meta_data, '$.role', ?) WHERE email = ?");
    this.profilesOf = db.prepare<[number], string>('SELECT meta_data FROM userprofiles WHERE usersId = ?').pluck();
    this.admins = db.prepare<[], string>(`SELECT email FROM users WHERE ${ROLE} = 'admin'`).pluck();
    this.emailById = db.prepare<[number], string>('SELECT email FROM users WHERE id = ?').pluck();
  }

  byEmailAddress(email: string): UserRow | undefined {
    return this.byEmail.get(email);
  }

  /** Inserts an account; false when the email is taken. */
  insert(email: string, passwordHash: string, name: string, metaJson: string): boolean {
    try {
      this.insertRow.run(email, passwordHash, name, metaJson);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') return false;
      throw err;
    }
  }

  /** Rows removed (0 or 1). */
  delete(email: string): number {
    return this.removeByEmail.run(email).changes;
  }

  setRole(email: string, role: string): void {
    this.setRoleOf.run(role, email);
  }

  /** The meta_data of every profile of a user (their `accessAllowed` are its grants). */
  profiles(userId: number): string[] {
    return this.profilesOf.all(userId);
  }

  /** Emails of the accounts whose role is admin (those told of what concerns everyone: a failed backup). */
  adminEmails(): string[] {
    return this.admins.all();
  }

  /** The email of user `id`, or undefined. */
  emailOf(id: number): string | undefined {
    return this.emailById.get(id);
  }
}
