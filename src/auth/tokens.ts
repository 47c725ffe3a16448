// Access tokens: JWT HS256 with the algorithm pinned on verify (so `alg: none`
// and RS/HS confusion are refused), signed with a secret made on first start
// and kept in the data dir so tokens survive restarts. Verified tokens are
// cached for a short while because HMAC + JSON parsing per request shows up
// under high-rate ingest; a cached entry never outlives its token.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { unauthorized } from '../http/errors.js';

export type Role = 'admin' | 'read-write' | 'read-only';
export const ROLES: readonly Role[] = ['admin', 'read-write', 'read-only'];

/** Token claims. Grants are entity ids as strings. */
export interface Claims {
  sub: string;
  role: Role;
  units_id: string[];
  sites_id: string[];
  orgs_id: string[];
  /** Expiry, seconds since the epoch. */
  exp: number;
}

export type GrantClaims = Omit<Claims, 'exp'>;

const SECRET_FILE = 'jwt.secret';

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

export class TokenService {
  private readonly cache = new Map<string, { claims: Claims; until: number }>();
  /** Subject -> epoch seconds; tokens of that subject issued at or before it are refused. */
  private readonly revoked = new Map<string, number>();

  constructor(
    private readonly secret: Buffer,
    private readonly lifetimeSeconds: number,
    private readonly cacheSeconds: number,
    private readonly cacheMaxEntries: number,
  ) {}

  sign(claims: GrantClaims): string {
    return jwt.sign(
      { role: claims.role, units_id: claims.units_id, sites_id: claims.sites_id, orgs_id: claims.orgs_id },
      this.secret,
      { algorithm: 'HS256', subject: claims.sub, expiresIn: this.lifetimeSeconds },
    );
  }

  /** Accepts `Bearer <token>` or a bare token; throws 401 on anything else. */
  verifyHeader(header: string | undefined): Claims {
    if (!header) throw unauthorized('missing token');
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : header.trim();
    if (!token) throw unauthorized('missing token');
    return this.verify(token);
  }

  verify(token: string): Claims {
    const nowSeconds = Date.now() / 1000;
    const cached = this.cache.get(token);
    if (cached) {
      if (cached.until > nowSeconds) return cached.claims;
      this.cache.delete(token);
    }
    let payload: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(token, this.secret, { algorithms: ['HS256'] });
      if (typeof decoded === 'string') throw new Error('string payload');
      payload = decoded;
    } catch (err) {
      const expired = err instanceof jwt.TokenExpiredError;
      throw unauthorized(expired ? 'token expired' : 'invalid token');
    }
    const claims = toClaims(payload);
    if (!claims) throw unauthorized('invalid token claims');
    const revokedAt = this.revoked.get(claims.sub);
    if (revokedAt !== undefined && (payload.iat ?? 0) <= revokedAt) throw unauthorized('token revoked');
    this.remember(token, claims, nowSeconds);
    return claims;
  }

  /** Refuses every token of `subject` issued up to `atSeconds` (account deleted). */
  revokeSubject(subject: string, atSeconds: number): void {
    this.revoked.set(subject, atSeconds);
    for (const [token, entry] of this.cache) if (entry.claims.sub === subject) this.cache.delete(token);
  }

  private remember(token: string, claims: Claims, nowSeconds: number): void {
    if (this.cacheSeconds <= 0) return;
    if (this.cache.size >= this.cacheMaxEntries) this.cache.clear();
    // The cached entry ends at the earlier of the token's expiry and the cache window.
    this.cache.set(token, { claims: Object.freeze(claims), until: Math.min(claims.exp, nowSeconds + this.cacheSeconds) });
  }
}

function toClaims(p: jwt.JwtPayload): Claims | null {
  if (typeof p.sub !== 'string' || typeof p.exp !== 'number') return null;
  if (!ROLES.includes(p.role)) return null;
  const ids = (v: unknown): string[] | null =>
    Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number') ? v.map(String) : null;
  const units = ids(p.units_id);
  const sites = ids(p.sites_id);
  const orgs = ids(p.orgs_id);
  if (!units || !sites || !orgs) return null;
  return { sub: p.sub, role: p.role, units_id: units, sites_id: sites, orgs_id: orgs, exp: p.exp };
}
