// API keys (WIRE.md part 3 "API keys"): long-lived credentials for tools (Grafana, Prometheus,
// Telegraf, collectors), made by a logged-in user, shown once, revoked one by one.
//
// A key is `hk_` and 40 random base62 characters (238 bits). Only its SHA-256 is stored: a key
// cannot be guessed, so a fast hash is enough, and checking one costs a hash and a map lookup,
// not a scrypt, on every request of a collector that writes many times a second. Every row of
// `api_keys` is kept here in memory by hash; create and revoke change the map at once (so a
// revoked key is refused on the very next request), and a change from elsewhere (a restore, a
// replicated row) reloads it.
//
// A key says who made it, not what it may do: each use runs as the creator's current account
// (AccountStore.current, the same live lookup tokens use), with the lower of the key's role and
// the creator's current role, and the creator's current grants. A deleted creator kills the key
// (an account made again under the same email has another id, so old keys stay dead). Every
// refusal (unknown, revoked, expired, dead creator) is the same 401 as a bad token, so nothing
// tells a revoked key from a made-up one.
//
// `last_used_ms` is kept in memory at each use and written in batches (ApiKeys.saveUses, every
// few seconds and at stop), never one SQLite write per request.

import crypto from 'node:crypto';
import type { ServiceClock } from '../clock.js';
import { ROLES, type Claims, type Role } from '../http/caller.js';
import type { EntityHooks } from '../meta/entities.js';
import type { ApiKeyRow, ApiKeysTable } from '../meta/tables/api-keys.js';
import { badRequest, forbidden, notFound, unauthorized } from '../../shared/errors.js';
import type { AccountState } from './accounts.js';
import { API_KEY_PREFIX } from './api.js';
import { INVALID_TOKEN } from './tokens.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_CHARS = 40;
/** Characters of a key shown in lists (`hk_` and 7 more: about 42 of its 238 bits). */
const PREFIX_CHARS = API_KEY_PREFIX.length + 7;
export const MAX_NAME_CHARS = 100;
/** Keys one account may hold; a bound on what a user can make the service keep in memory. */
export const MAX_KEYS_PER_ACCOUNT = 100;
/** Claims.exp of a key that never expires (seconds; nothing compares it with the clock). */
const NEVER = Number.MAX_SAFE_INTEGER;

/** The account side (AccountStore): the current state of an account by email. */
export interface KeyOwners {
  current(email: string): AccountState | null;
}

/** What a caller sees of a key in a list: never the key, never its hash. */
export interface ApiKeyView {
  id: string;
  name: string;
  role: Role;
  prefix: string;
  created_ms: number;
  expires_ms: number | null;
  last_used_ms: number | null;
  /** The creator's email, in an admin's list. */
  owner?: string;
}

/** The answer to a create: the key itself, this once. */
export interface CreatedApiKey {
  id: string;
  name: string;
  role: Role;
  key: string;
  prefix: string;
  created_ms: number;
  expires_ms: number | null;
}

export interface NewKeyRequest {
  name: string;
  role?: Role;
  expires_ms?: number | null;
}

/** A key as kept in memory, with the claims of its last use for the account state they came from. */
interface KeyRecord {
  row: ApiKeyRow;
  role: Role;
  account: AccountState | null;
  claims: Claims | null;
}

export class ApiKeys {
  private byHash = new Map<string, KeyRecord>();
  private byId = new Map<string, KeyRecord>();
  /** Last use of each key since the last batch was written: key id -> epoch ms. */
  private readonly unsavedUses = new Map<string, number>();

  constructor(
    private readonly table: ApiKeysTable,
    private readonly owners: KeyOwners,
    private readonly clock: ServiceClock,
  ) {}

  /** Reads every row (at start, and again when the table changed outside this class). */
  reload(): void {
    const byHash = new Map<string, KeyRecord>();
    const byId = new Map<string, KeyRecord>();
    for (const row of this.table.all()) {
      // A use not written yet is newer than the row.
      const unsaved = this.unsavedUses.get(row.id);
      if (unsaved !== undefined && unsaved > (row.last_used_ms ?? 0)) row.last_used_ms = unsaved;
      // A role this build does not know (a hand-edited row) gives the least.
      const record: KeyRecord = { row, role: ROLES.includes(row.role as Role) ? (row.role as Role) : 'read-only', account: null, claims: null };
      byHash.set(row.key_hash, record);
      byId.set(row.id, record);
    }
    this.byHash = byHash;
    this.byId = byId;
    for (const id of this.unsavedUses.keys()) if (!byId.has(id)) this.unsavedUses.delete(id);
  }

  /** The claims a request with `key` runs with, or the 401 of a bad token. */
  verify(key: string): Claims {
    const record = this.byHash.get(hashOf(key));
    const now = this.clock.now();
    if (!record || (record.row.expires_ms !== null && record.row.expires_ms <= now)) throw unauthorized(INVALID_TOKEN);
    const account = this.owners.current(record.row.owner);
    if (!account || account.id !== record.row.owner_id) throw unauthorized(INVALID_TOKEN);
    record.row.last_used_ms = now;
    this.unsavedUses.set(record.row.id, now);
    // The account state object is replaced whenever the account changes, so the same object means the same claims.
    if (record.account === account && record.claims) return record.claims;
    const claims: Claims = Object.freeze({
      sub: account.sub, role: lowerRole(record.role, account.role),
      units_id: account.units_id, sites_id: account.sites_id, orgs_id: account.orgs_id,
      exp: record.row.expires_ms === null ? NEVER : Math.floor(record.row.expires_ms / 1000),
      apiKey: record.row.id,
    });
    record.account = account;
    record.claims = claims;
    return claims;
  }

  /** Makes a key for the caller (who logged in with a password, not with a key). */
  create(caller: Claims, asked: NewKeyRequest): CreatedApiKey {
    refuseKeyCallers(caller, 'created');
    const creator = this.accountOf(caller);
    const name = asked.name.trim();
    if (name === '') throw badRequest("body field 'name' must not be blank");
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(name)) throw badRequest("body field 'name' must not contain control characters");
    const role = asked.role ?? creator.role;
    if (rank(role) < rank(creator.role)) throw forbidden(`body field 'role' (${role}) exceeds your own role (${creator.role}): a key's role may not be higher than its creator's`);
    const now = this.clock.now();
    const expires = asked.expires_ms ?? null;
    if (expires !== null && expires <= now) throw badRequest(`body field 'expires_ms' must be in the future (epoch milliseconds; now is ${now}), or null for a key that does not expire`);
    let held = 0;
    for (const record of this.byId.values()) if (record.row.owner_id === creator.id) held++;
    if (held >= MAX_KEYS_PER_ACCOUNT) throw badRequest(`an account may hold at most ${MAX_KEYS_PER_ACCOUNT} API keys; revoke one first`);
    const key = newKey();
    const row: ApiKeyRow = {
      id: crypto.randomUUID(), owner: creator.sub, owner_id: creator.id, name, role, key_hash: hashOf(key),
      prefix: key.slice(0, PREFIX_CHARS), created_ms: now, expires_ms: expires, last_used_ms: null,
    };
    this.table.insert(row);
    const record: KeyRecord = { row, role, account: null, claims: null };
    this.byHash.set(row.key_hash, record);
    this.byId.set(row.id, record);
    return { id: row.id, name, role, key, prefix: row.prefix, created_ms: now, expires_ms: expires };
  }

  /** The caller's keys, oldest first; an admin's list holds everyone's, with their owners. */
  list(caller: Claims): ApiKeyView[] {
    const admin = caller.role === 'admin';
    const ownerId = admin ? null : this.accountOf(caller).id;
    const views: ApiKeyView[] = [];
    for (const { row, role } of this.byId.values()) {
      if (ownerId !== null && row.owner_id !== ownerId) continue;
      const view: ApiKeyView = {
        id: row.id, name: row.name, role, prefix: row.prefix,
        created_ms: row.created_ms, expires_ms: row.expires_ms, last_used_ms: row.last_used_ms,
      };
      if (admin) view.owner = row.owner;
      views.push(view);
    }
    return views.sort((a, b) => a.created_ms - b.created_ms || (a.id < b.id ? -1 : 1));
  }

  /** Revokes one of the caller's keys (an admin's: anyone's); a key the caller may not see is 404, like a missing one. */
  revoke(caller: Claims, id: string): void {
    refuseKeyCallers(caller, 'revoked');
    const record = this.byId.get(id);
    const mine = record !== undefined && (caller.role === 'admin' || record.row.owner_id === this.accountOf(caller).id);
    if (!record || !mine) throw notFound('no such API key among those you may revoke'); // the id is not echoed: it could be a key pasted by mistake
    this.table.delete(id);
    this.forget(record);
  }

  /** The keys of a deleted account go with it (POST /svcapi/admin/user/delete). */
  deleteOwnedBy(ownerId: number): void {
    this.table.deleteOwnedBy(ownerId);
    for (const record of [...this.byId.values()]) if (record.row.owner_id === ownerId) this.forget(record);
  }

  /**
   * Hooks that delete a user's keys with the user, however the entity store deletes it (by id, by
   * `where`, their own row), in the same transaction; the memory follows once it commits. (A key
   * of a deleted account is refused anyway: its owner no longer exists.)
   */
  entityHooks(): EntityHooks {
    let deleted = false;
    return {
      beforeDelete: (def, entity) => {
        if (def.table !== 'users' || entity.id === null || entity.id === undefined) return;
        this.table.deleteOwnedBy(Number(entity.id));
        deleted = true;
      },
      afterCommit: () => {
        if (deleted) this.reload();
        deleted = false;
      },
      afterRollback: () => {
        deleted = false;
      },
    };
  }

  /** Writes the uses seen since the last batch (one transaction); called every few seconds and at stop. */
  saveUses(): void {
    if (this.unsavedUses.size === 0) return;
    const batch = new Map(this.unsavedUses);
    this.unsavedUses.clear();
    try {
      this.table.setLastUsed(batch);
    } catch (err) {
      // Kept for the next batch (a newer use of the same key wins).
      for (const [id, at] of batch) if (!this.unsavedUses.has(id)) this.unsavedUses.set(id, at);
      throw err;
    }
  }

  /** Uses not written yet belong to a store that is being replaced: they go with it. */
  dropUnsavedUses(): void {
    this.unsavedUses.clear();
  }

  private forget(record: KeyRecord): void {
    this.byHash.delete(record.row.key_hash);
    this.byId.delete(record.row.id);
    this.unsavedUses.delete(record.row.id);
  }

  private accountOf(caller: Claims): AccountState {
    const account = this.owners.current(caller.sub);
    if (!account) throw unauthorized('the account of this token no longer exists');
    return account;
  }
}

/** A leaked key must not mint longer-lived ones, nor revoke the keys of the tools that still work. */
function refuseKeyCallers(caller: Claims, what: 'created' | 'revoked'): void {
  if (caller.apiKey !== undefined) throw forbidden(`API keys cannot be ${what} with an API key: log in with your password and use the token`);
}

/** Roles from most to least power: a larger rank is less. */
const rank = (role: Role): number => ROLES.indexOf(role);

/** The lesser of two roles. */
function lowerRole(a: Role, b: Role): Role {
  return rank(a) >= rank(b) ? a : b;
}

function hashOf(key: string): string {
  return crypto.hash('sha256', key, 'hex');
}

/** `hk_` and 40 characters drawn uniformly from the 62 letters and digits. */
function newKey(): string {
  let key = API_KEY_PREFIX;
  while (key.length < API_KEY_PREFIX.length + KEY_CHARS) {
    for (const byte of crypto.randomBytes(64)) {
      // 248 = 4 × 62: bytes above it are dropped so that every character is equally likely.
      if (byte >= 248) continue;
      key += ALPHABET[byte % 62];
      if (key.length === API_KEY_PREFIX.length + KEY_CHARS) break;
    }
  }
  return key;
}
