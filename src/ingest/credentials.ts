// Who is calling an ingest route. Collectors send credentials in the forms InfluxDB clients use
// (WIRE.md part 2 "Ingest"): `Authorization: Bearer <jwt>` or `Token <jwt>`, `Authorization:
// Basic base64(email:password)`, or the query parameters `u` (email) and `p` (password). An API
// key (WIRE.md part 3) goes wherever a token or a password does: Bearer, Token, Basic with any
// user name and the key as password, `p` with any `u` (or none). It is told by its prefix before
// any password check, so a key costs no scrypt and never counts against the login limits.
//
// Collectors send the same credential with every request, many a second, so verified ones are
// kept for ingest.tokenCacheSeconds (never past a token's expiry): a token's signature check,
// and, for passwords, the scrypt check, which costs tens of milliseconds. A kept credential is
// still checked against the account on every request: a deleted account or a changed password
// (its stamp changes) ends it at once, and role and grants are always the current ones. Password
// checks go through the login's limits and lockout (PasswordLogin), so Basic credentials are no
// way around them. Cache keys of passwords are salted hashes, never the password itself.

import crypto from 'node:crypto';
import { isApiKey, type Accounts, type AccountState, type PasswordCheck, type TokenVerifier } from '../auth/api.js';
import type { ServiceClock } from '../clock.js';
import type { Claims } from '../http/caller.js';
import { checkEmail } from '../meta/email.js';
import { unauthorized } from '../../shared/errors.js';

export interface CredentialSource {
  headers: Readonly<Record<string, string>>;
  query: Record<string, unknown>;
  remoteAddress: string;
  path: string;
}

interface KeptPassword {
  email: string;
  stamp: string;
  /** Epoch seconds. */
  until: number;
}

export class IngestCredentials {
  private readonly passwords = new Map<string, KeptPassword>();
  private readonly salt = crypto.randomBytes(16);

  constructor(
    private readonly tokens: TokenVerifier,
    private readonly accounts: Accounts,
    private readonly login: PasswordCheck,
    private readonly clock: ServiceClock,
    private readonly cacheSeconds: number,
    private readonly cacheMaxEntries: number,
  ) {}

  authenticate(source: CredentialSource): Claims | Promise<Claims> {
    const header = source.headers.authorization;
    if (header !== undefined) {
      const space = header.indexOf(' ');
      const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
      const value = space < 0 ? '' : header.slice(space + 1).trim();
      if (scheme === 'bearer' || scheme === 'token') {
        if (!value) throw unauthorized('missing token');
        return this.tokens.verify(value);
      }
      if (scheme === 'basic') {
        const decoded = Buffer.from(value, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon < 0) throw unauthorized('Basic credentials must be base64(email:password)');
        const password = decoded.slice(colon + 1);
        if (isApiKey(password)) return this.tokens.verify(password);
        return this.password(decoded.slice(0, colon), password, source);
      }
      throw unauthorized('unsupported Authorization scheme (use Bearer, Token or Basic)');
    }
    const { u, p } = source.query;
    if (typeof p === 'string' && isApiKey(p)) return this.tokens.verify(p);
    if (typeof u === 'string' && typeof p === 'string') return this.password(u, p, source);
    throw unauthorized('missing credentials: send Authorization: Bearer|Token <token>, Basic email:password, or u and p');
  }

  private password(user: string, password: string, source: CredentialSource): Claims | Promise<Claims> {
    const checked = checkEmail(user);
    if (!checked.ok) throw unauthorized('the user name must be an account email');
    const email = checked.email;
    const key = crypto.createHash('sha256').update(this.salt).update(email).update('\u0000').update(password).digest('base64');
    const now = this.clock.now() / 1000;
    const kept = this.passwords.get(key);
    if (kept) {
      const account = this.accounts.current(kept.email);
      if (kept.until > now && account && account.stamp === kept.stamp) return claimsOf(email, account, kept.until);
      this.passwords.delete(key);
    }
    return this.login.check(email, password, source.remoteAddress, source.path).then((account) => {
      const until = Math.floor(now + this.cacheSeconds);
      if (this.cacheSeconds > 0) {
        if (this.passwords.size >= this.cacheMaxEntries) this.passwords.clear();
        this.passwords.set(key, { email, stamp: account.stamp, until });
      }
      return claimsOf(email, account, until);
    });
  }
}

function claimsOf(email: string, account: AccountState, until: number): Claims {
  return Object.freeze({ sub: email, role: account.role, units_id: account.units_id, sites_id: account.sites_id, orgs_id: account.orgs_id, exp: until });
}
