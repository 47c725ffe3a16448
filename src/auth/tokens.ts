// Access tokens: JWT HS256 with the algorithm pinned on verify (so `alg: none`
// and RS/HS confusion are refused), signed with a secret made on first start
// and kept in the data dir so tokens survive restarts. Verified signatures are
// cached for a short while because HMAC + JSON parsing per request shows up
// under high-rate ingest; a cached entry never outlives its token.
//
// A token says who the caller is, not what they may do: the role and grants
// of a request are the account's current ones (AccountStore.current, a map
// lookup while nothing changed), so a deletion, demotion or grant change takes
// effect on the next request. The token's role and grant claims are for
// clients to read. A token also carries the account's stamp, which changes
// with the password, so a password change ends every older token.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { unauthorized } from '../../shared/errors.js';
import type { Claims, GrantClaims } from '../http/caller.js';
import { ServiceClock } from '../clock.js';
import { MAX_OPERATOR_TOKEN_SECONDS, operatorClaimOf, secretFromFile, type OperatorClaim } from '../operator-token.js';


/** The account side of verification (AccountStore). */
export interface CurrentAccounts {
  /** Current role, grants and stamp of the account `subject`; null when there is none. */
  current(subject: string): (GrantClaims & { readonly stamp: string }) | null;
}

/** What a verified token itself says. */
interface TokenFacts {
  sub: string;
  /** The password stamp; null for an operator token (operator-token.ts), which carries none. */
  stamp: string | null;
  exp: number;
  operator: OperatorClaim | null;
}

/** Told once per operator token the service verifies (the audit line). */
export type OperatorTokenAudit = (email: string, claim: OperatorClaim) => void;

const SECRET_FILE = 'jwt.secret';

/** The 401 of a token that does not verify; a refused API key gets the very same (api-keys.ts). */
export const INVALID_TOKEN = 'invalid token';

/** Reads the signing secret, creating it (0600) on first start. */
export function loadOrCreateSecret(dataDir: string): Buffer {
  const file = path.join(dataDir, 'secrets', SECRET_FILE);
  try {
    const hex = fs.readFileSync(file, 'utf8').trim();
    if (hex.length >= 64) return Buffer.from(hex, 'hex');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const secret = crypto.randomBytes(48);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, secret.toString('hex'), { mode: 0o600 });
  fs.renameSync(tmp, file);
  return secret;
}

/** The signing secret a cluster's nodes share (cluster.secretFile): at least 32 bytes, hex or raw. */
export function readClusterSecret(file: string | null): Buffer {
  if (!file) throw new Error('cluster.secretFile is required when cluster.enabled is true (every node reads the same one)');
  const secret = secretFromFile(fs.readFileSync(file));
  if (secret.length < 32) throw new Error(`cluster.secretFile ${file} holds ${secret.length} bytes; at least 32 are needed`);
  return secret;
}

type AccountNow = NonNullable<ReturnType<CurrentAccounts['current']>>;

/** A verified token, and the claims it last ran with for the account state they were built from. */
interface CachedToken {
  facts: TokenFacts;
  until: number;
  account: AccountNow | null;
  claims: Claims | null;
}

export class TokenService {
  private readonly cache = new Map<string, CachedToken>();

  constructor(
    private readonly secret: Buffer,
    private readonly lifetimeSeconds: number,
    private readonly cacheSeconds: number,
    private readonly cacheMaxEntries: number,
    private readonly accounts: CurrentAccounts,
    /** The time tokens are issued and checked at; the login limits read the same clock (routes/auth.ts). */
    readonly clock = new ServiceClock(),
    private readonly auditOperator: OperatorTokenAudit = () => {},
  ) {}

  /** The same tokens verified with another cache window and bound (the ingest routes keep theirs longer). */
  withCache(cacheSeconds: number, cacheMaxEntries: number): TokenService {
    const sibling = new TokenService(this.secret, this.lifetimeSeconds, cacheSeconds, cacheMaxEntries, this.accounts, this.clock, this.auditOperator);
    this.siblings.push(sibling);
    return sibling;
  }

  /** Services made by withCache, whose caches forgetAll() clears too. */
  private readonly siblings: TokenService[] = [];

  /** Drops every verified token (the metadata store was replaced: accounts may differ). */
  forgetAll(): void {
    this.cache.clear();
    for (const other of this.siblings) other.cache.clear();
  }

  sign(account: GrantClaims & { readonly stamp: string }): string {
    const iat = Math.floor(this.clock.now() / 1000); // jsonwebtoken counts expiresIn from iat
    return jwt.sign(
      { role: account.role, units_id: account.units_id, sites_id: account.sites_id, orgs_id: account.orgs_id, stamp: account.stamp, iat },
      this.secret,
      { algorithm: 'HS256', subject: account.sub, expiresIn: this.lifetimeSeconds },
    );
  }

  /** Accepts `Bearer <token>` or a bare token; throws 401 on anything else. */
  verifyHeader(header: string | undefined): Claims {
    if (!header) throw unauthorized('missing token');
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : header.trim();
    if (!token) throw unauthorized('missing token');
    return this.verify(token);
  }

  /** The claims a request with `token` runs with: its subject, and the account's current role and grants. */
  verify(token: string): Claims {
    const entry = this.verifySignature(token);
    const facts = entry.facts;
    const account = this.accounts.current(facts.sub);
    if (!account) {
      this.cache.delete(token); // a deleted account's token is not kept
      throw unauthorized('the account of this token no longer exists');
    }
    if (facts.stamp !== null && account.stamp !== facts.stamp) throw unauthorized('token revoked: the password changed since it was issued; log in again');
    // The account state object is replaced whenever the account changes, so the same object means the same claims.
    if (entry.account === account && entry.claims) return entry.claims;
    const claims: Claims = Object.freeze({
      sub: facts.sub, role: account.role,
      units_id: account.units_id, sites_id: account.sites_id, orgs_id: account.orgs_id,
      exp: facts.exp,
    });
    entry.account = account;
    entry.claims = claims;
    return claims;
  }

  private verifySignature(token: string): CachedToken {
    const nowSeconds = this.clock.now() / 1000;
    const cached = this.cache.get(token);
    if (cached) {
      if (cached.until > nowSeconds) return cached;
      this.cache.delete(token);
    }
    let payload: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(token, this.secret, { algorithms: ['HS256'], clockTimestamp: Math.floor(nowSeconds) });
      if (typeof decoded === 'string') throw new Error('string payload');
      payload = decoded;
    } catch (err) {
      const expired = err instanceof jwt.TokenExpiredError;
      throw unauthorized(expired ? 'token expired' : INVALID_TOKEN);
    }
    const facts = toFacts(payload);
    if (!facts) throw unauthorized('invalid token claims (a token from before this version: log in again)');
    if (facts.operator) {
      // Short-lived by construction: one signed for longer was not made by the historian command.
      if (typeof payload.iat !== 'number' || facts.exp - payload.iat > MAX_OPERATOR_TOKEN_SECONDS) throw unauthorized(INVALID_TOKEN);
      this.auditOperator(facts.sub, facts.operator);
    }
    // The cached entry ends at the earlier of the token's expiry and the cache window.
    const entry: CachedToken = { facts, until: Math.min(facts.exp, nowSeconds + this.cacheSeconds), account: null, claims: null };
    if (this.cacheSeconds > 0) {
      if (this.cache.size >= this.cacheMaxEntries) this.cache.clear();
      this.cache.set(token, entry);
    }
    return entry;
  }
}

function toFacts(p: jwt.JwtPayload): TokenFacts | null {
  if (typeof p.sub !== 'string' || typeof p.exp !== 'number') return null;
  const operator = operatorClaimOf(p);
  if (operator) return { sub: p.sub, stamp: null, exp: p.exp, operator };
  if (typeof p.stamp !== 'string') return null;
  return { sub: p.sub, stamp: p.stamp, exp: p.exp, operator: null };
}
