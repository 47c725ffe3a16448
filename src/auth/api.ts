// What the auth subsystem offers the others: checking a token or an API key, checking a password
// (with the login's limits and lockout), an account's current role and grants, hashing a password
// for a write of the users table, and the secret the service signs with (a cluster's nodes share
// it).

import { capability } from '../host/plugin.js';
import type { Claims } from '../http/caller.js';
import type { AccountState } from './accounts.js';

export type { AccountState };

/** What every API key starts with: a credential with it is checked as a key, never as a token or a password. */
export const API_KEY_PREFIX = 'hk_';

/** Whether `credential` is to be checked as an API key (a JWT never starts with `hk_`). */
export function isApiKey(credential: string): boolean {
  return credential.startsWith(API_KEY_PREFIX);
}

/** Checks tokens and API keys. */
export interface TokenVerifier {
  /**
   * An `Authorization` header: `Bearer <token or key>`, `Token <token or key>`, a bare token or
   * key, or Basic with any user name and an API key as the password; 401 on anything else.
   */
  verifyHeader(header: string | undefined): Claims;
  /** A token or an API key. */
  verify(credential: string): Claims;
}

export interface Credentials extends TokenVerifier {
  /** The same verification with its own token cache window and bound (a collector sends one token many times a second). */
  cached(cacheSeconds: number, cacheMaxEntries: number): TokenVerifier;
}

/** The one password check (login, Basic credentials of the ingest routes), with its limits and lockout. */
export interface PasswordCheck {
  /** The account state of a valid email (canonical form) and password; 401, 429 otherwise. */
  check(email: string, password: string, remoteAddress: string, path: string): Promise<AccountState>;
}

export interface Accounts {
  /** The account's current role, grants and stamp; null when it does not exist. */
  current(email: string): AccountState | null;
}

export interface PasswordHasher {
  /** The stored form of a password (scrypt at auth.scryptCost). */
  hash(password: string): Promise<string>;
}

export const CREDENTIALS = capability<Credentials>('auth.credentials');
export const PASSWORD_CHECK = capability<PasswordCheck>('auth.password-check');
export const ACCOUNTS = capability<Accounts>('auth.accounts');
export const PASSWORD_HASHER = capability<PasswordHasher>('auth.password-hasher');
/** The secret tokens are signed with; a cluster's nodes share it (cluster.secretFile) and sign node credentials with it. */
export const SIGNING_SECRET = capability<Buffer>('auth.signing-secret');
