// Per-entity rules: what the entity store enforces for one table on every
// write, whichever route it came through (create, bulk, PATCH, PUT, update-all,
// nested create), so no route can skip them. Dedicated routes of an entity
// (the notification routes) go through the same store and so the same rules.

import { checkEmail } from './email.js';
import { ROLES } from '../http/caller.js';
import { badRequest } from '../../shared/errors.js';
import type { SplitEntity } from './wire.js';

export interface WriteContext {
  creating: boolean;
  now: number;
  /** Fields the request sets (real columns and meta keys). */
  given: ReadonlySet<string>;
}

export interface EntityRules {
  /** Only an admin may create rows (everyone else: 403, whatever the route). */
  adminCreatesOnly?: boolean;
  /** Only an admin may create, change or delete rows (everyone else: 403, whatever the route). */
  adminWritesOnly?: boolean;
  /** Fields only an admin may set or change. */
  adminOnlyFields?: readonly string[];
  /** Rewrites the request before it is checked and stored (normal forms, fields the service sets). */
  prepare?(split: SplitEntity, ctx: WriteContext): void;
  /** Checks the row as it will be stored (wire form, after the merge); throws 400 naming the field. */
  validate?(row: Readonly<Record<string, unknown>>, ctx: WriteContext): void;
  /**
   * Rows that bind time-series collections by name (see storage/access.ts): no two rows may have
   * the same `name` under the same parent (`within`, or the whole table when null), or one would
   * reach the other's collections. Checked when a write sets the name or the parent.
   */
  uniqueName?: { within: string | null; noun: string; parentNoun?: string; field?: UniqueField };
  /**
   * A row outside the caller's read grant is answered as absent (404, count 0), not 403, so
   * its existence is not disclosed (notifications: "absent or invisible, not distinguished").
   */
  invisibleIsAbsent?: boolean;
  /**
   * Fields stored as secrets (encrypted by `prepare`): every read answers `"********"` for a
   * stored value; writing `"********"` back keeps the stored one.
   */
  maskedFields?: readonly string[];
}

/**
 * The meta key a `uniqueName` rule compares (default `name`): spliced into the SQL as a JSON path,
 * so it is a code constant of this type, never a name from a request.
 */
export type UniqueField = 'name' | 'clientId';

/** What a masked field reads as, and what written back keeps the stored secret. */
export const MASK = '********';

export const NOTIFICATION_SEVERITIES = ['info', 'warn', 'error', 'critical'] as const;
export const NOTIFICATION_SOURCES = ['monitor', 'process_manager', 'licensing', 'backup', 'system', 'admin', 'custom'] as const;
export const NOTIFICATION_LIMITS = { titleBytes: 120, bodyBytes: 2048, payloadBytes: 16384 } as const;

const ENTITY_RULES: Readonly<Record<string, EntityRules>> = {
  orgs: { uniqueName: { within: null, noun: 'an org' } },
  sites: { uniqueName: { within: 'orgsId', noun: 'a site', parentNoun: 'org' } },
  units: { uniqueName: { within: 'siteId', noun: 'a unit', parentNoun: 'site' } },
  users: {
    // A non-admin must not grant itself a role.
    adminOnlyFields: ['role'],
    prepare(split) {
      if (typeof split.columns.email === 'string') {
        // The same normal form and rules as register, so the account can log in under the email it was given.
        const checked = checkEmail(split.columns.email);
        if (!checked.ok) throw badRequest(checked.error);
        split.columns.email = checked.email;
      }
    },
    validate(row, ctx) {
      if (ctx.given.has('role') && !ROLES.includes(row.role as never)) throw badRequest(`role must be one of ${ROLES.join(', ')}`);
    },
  },
  // A non-admin must not widen its own grant.
  userprofiles: { adminOnlyFields: ['accessAllowed'] },
  // A collector names its ingest client by clientId (ingest/clients.ts) on every request: one row
  // per name, made and aimed by an admin only, so no tenant can take a name another collector
  // uses (its collector would get 409) or point a client at another unit. The 409 names the
  // clientId, never the row or unit that holds it. Looked up through migration 13's index.
  ingestconfigs: {
    adminCreatesOnly: true,
    adminOnlyFields: ['clientId', 'organization', 'site', 'unit'],
    uniqueName: { within: null, noun: 'an ingest client', field: 'clientId' },
  },
  // Rows every tenant shares (no path to the hierarchy, so no grant can bound them): read by
  // every caller, created, changed and deleted by admins only, so no account can change or
  // delete what all the others use.
  labels: { adminWritesOnly: true },
  profiles_lookups: { adminWritesOnly: true },
  configurations: { adminWritesOnly: true },
  notifications: {
    adminCreatesOnly: true,
    invisibleIsAbsent: true,
    prepare(split, ctx) {
      if (ctx.creating) {
        split.columns.createdAt = ctx.now;
        split.columns.redirect ??= 0; // a boolean: false unless asked
      }
      if (typeof split.columns.userId === 'string') {
        // Matched against token subjects, which are normalised emails.
        const checked = checkEmail(split.columns.userId);
        if (!checked.ok) throw badRequest(`userId must be the recipient's email: ${checked.error}`);
        split.columns.userId = checked.email;
      }
    },
    validate: validateNotification,
  },
};

/** The rules of `table` that hold whatever runs (a subsystem may add rules of its own tables: EntityStore.addRules). */
export function builtInRules(table: string): EntityRules {
  return ENTITY_RULES[table] ?? {};
}

/**
 * The contract's Notification shape (types of real columns are already checked by the wire
 * layer). A create checks every field; an update the fields it sets, so a row stored before a
 * rule existed does not block unrelated changes (marking it read).
 */
function validateNotification(n: Readonly<Record<string, unknown>>, ctx: WriteContext): void {
  const checks = (...fields: string[]) => ctx.creating || fields.some((f) => ctx.given.has(f));
  if (checks('severity')) oneOf('severity', n.severity, NOTIFICATION_SEVERITIES);
  if (checks('source')) oneOf('source', n.source, NOTIFICATION_SOURCES);
  if (checks('title')) boundedText('title', n.title, NOTIFICATION_LIMITS.titleBytes);
  if (checks('body')) boundedText('body', n.body, NOTIFICATION_LIMITS.bodyBytes);
  if (checks('payload') && n.payload !== null && n.payload !== undefined) {
    if (typeof n.payload !== 'object' || Array.isArray(n.payload)) throw badRequest('payload must be a JSON object');
    const bytes = Buffer.byteLength(JSON.stringify(n.payload), 'utf8');
    if (bytes > NOTIFICATION_LIMITS.payloadBytes) throw badRequest(`payload must be at most ${NOTIFICATION_LIMITS.payloadBytes} bytes of JSON (got ${bytes})`);
  }
  if (checks('redirect', 'link') && n.redirect === true && (typeof n.link !== 'string' || n.link.length === 0)) {
    throw badRequest('redirect true requires a link');
  }
  // Only a value being set now: a stored notification may expire while it is kept.
  if (ctx.given.has('expiresAt') && typeof n.expiresAt === 'number' && n.expiresAt < ctx.now) {
    throw badRequest('expiresAt must not be in the past');
  }
}

function oneOf(field: string, value: unknown, allowed: readonly string[]): void {
  if (value === null || value === undefined) throw badRequest(`${field} is required (one of ${allowed.join(', ')})`);
  if (!allowed.includes(value as string)) throw badRequest(`${field} must be one of ${allowed.join(', ')}`);
}

function boundedText(field: string, value: unknown, maxBytes: number): void {
  if (value === null || value === undefined) throw badRequest(`${field} is required`);
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > maxBytes) throw badRequest(`${field} must be at most ${maxBytes} bytes (got ${bytes})`);
}
