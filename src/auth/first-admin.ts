// The first admin. Its email is `auth.adminEmail` (HISTORIAN_ADMIN_EMAIL wins);
// its password is HISTORIAN_ADMIN_PASSWORD, or, when that is not set, a random
// one generated once and written to a 0600 file whose path (never the
// password) is logged. An existing account is left as it is, apart from
// making sure it keeps the admin role. Made once this node leads (at once on a
// single node; on a cluster by the leader, the others get it by replication).

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { checkEmail } from '../meta/email.js';
import { hashPassword } from './passwords.js';
import type { AccountStore } from './accounts.js';
import { StartupError } from '../startup.js';

/** The admin's email in canonical form; StartupError when the setting is not a usable address (the admin logs in through the same email rules as everyone). */
export function adminEmailOf(setting: string): string {
  const checked = checkEmail(setting);
  if (!checked.ok) throw new StartupError(`auth.adminEmail (or HISTORIAN_ADMIN_EMAIL) ${JSON.stringify(setting)} is not usable: ${checked.error}`);
  return checked.email;
}

export async function ensureAdmin(
  accounts: AccountStore,
  opts: { email: string; password: string | undefined; dataDir: string; scryptCost: number },
  log: Logger,
): Promise<void> {
  const email = adminEmailOf(opts.email);
  const existing = accounts.find(email);
  if (existing) {
    if (existing.role !== 'admin') accounts.setRole(existing.email, 'admin');
    return;
  }
  let password = opts.password;
  if (!password) {
    password = crypto.randomBytes(18).toString('base64url');
    const file = path.join(opts.dataDir, 'secrets', 'admin-password.txt');
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, `${email}\n${password}\n`, { mode: 0o600 });
    log.warn({ email, file }, 'created the first admin with a generated password; read it from the file and change it');
  } else {
    log.info({ email }, 'created the first admin from HISTORIAN_ADMIN_EMAIL/HISTORIAN_ADMIN_PASSWORD');
  }
  accounts.create(email, await hashPassword(password, opts.scryptCost), 'admin', 'admin');
}
