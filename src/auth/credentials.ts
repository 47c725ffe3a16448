// The one check of a bearer credential, for every route and stream: a JWT (tokens.ts) or an API
// key (api-keys.ts), told apart by the key's `hk_` prefix before anything is parsed, so a key
// never goes through JWT parsing and a token never through the key map.
//
// The `Authorization` header forms: `Bearer <credential>` (the prefix is optional, as it always
// was), `Token <credential>` (InfluxDB clients), and Basic whose password is an API key, with any
// user name (Grafana's and Prometheus' `basic_auth`). Basic with an account's password is for
// the ingest routes only (ingest/credentials.ts), which may take the time a scrypt check needs;
// here it fails like any credential that does not verify.

import type { Claims } from '../http/caller.js';
import { unauthorized } from '../../shared/errors.js';
import { isApiKey, type TokenVerifier } from './api.js';
import type { ApiKeys } from './api-keys.js';
import type { TokenService } from './tokens.js';

export class CredentialCheck implements TokenVerifier {
  constructor(
    private readonly tokens: TokenService,
    private readonly keys: ApiKeys,
  ) {}

  /** The same check with the tokens' own cache window and bound (keys need no cache: they are a map lookup). */
  withTokenCache(cacheSeconds: number, cacheMaxEntries: number): CredentialCheck {
    return new CredentialCheck(this.tokens.withCache(cacheSeconds, cacheMaxEntries), this.keys);
  }

  verifyHeader(header: string | undefined): Claims {
    const credential = header === undefined ? '' : credentialOf(header);
    if (!credential) throw unauthorized('missing token');
    return this.verify(credential);
  }

  verify(credential: string): Claims {
    return isApiKey(credential) ? this.keys.verify(credential) : this.tokens.verify(credential);
  }
}

/** The token or key an `Authorization` header carries (the header as it is when it names no scheme this knows). */
function credentialOf(header: string): string {
  const trimmed = header.trim();
  const space = trimmed.indexOf(' ');
  const scheme = (space < 0 ? trimmed : trimmed.slice(0, space)).toLowerCase();
  const rest = space < 0 ? '' : trimmed.slice(space + 1).trim();
  if (scheme === 'bearer' || scheme === 'token') return rest;
  if (scheme === 'basic' && rest) {
    const decoded = Buffer.from(rest, 'base64').toString('utf8');
    const password = decoded.slice(decoded.indexOf(':') + 1);
    if (decoded.includes(':') && isApiKey(password)) return password;
  }
  return trimmed;
}
