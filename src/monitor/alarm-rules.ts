// Alarm rules as the API shows them (WIRE part 2 "Monitor"), their checks, and their rows.

import { randomBytes } from 'node:crypto';
import { badRequest } from '../../shared/errors.js';
import { NOTIFICATION_SEVERITIES } from '../meta/entity-rules.js';
import type { AlarmKind, Phase, RuleLimits, RuleState } from './evaluate.js';

export interface AlarmRule extends RuleLimits {
  id: string;
  collection_id: string;
  tag: string;
  tag_index: number | null;
  name: string;
  enabled: boolean;
  severity: (typeof NOTIFICATION_SEVERITIES)[number];
  notify: boolean;
  tagmetaId: string | null;
}

/** A rule with its evaluation state, as stored. */
export interface StoredRule extends AlarmRule {
  origin: 'api' | 'tagmeta' | 'units';
  state: RuleState;
}

/** Fields a caller sets; id, tag_index and tagmetaId are the service's. */
const SETTABLE = ['collection_id', 'tag', 'name', 'enabled', 'limHi', 'limLo', 'deadband', 'on_delay_ms', 'off_delay_ms', 'stale_after_ms', 'severity', 'notify'] as const;
const SERVICE_SET = new Set(['id', 'tag_index', 'tagmetaId']);

export const newRuleId = () => `r-${randomBytes(6).toString('hex')}`;
export const newEventId = () => `e-${randomBytes(8).toString('hex')}`;

/**
 * A rule from a request body: a create checks a whole rule (defaults filled in), an update
 * (`base` given) the rule as it will be after the change. 400 naming the field.
 */
export function ruleFromBody(body: unknown, base: AlarmRule | null): Omit<AlarmRule, 'id' | 'tag_index' | 'tagmetaId'> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object (an alarm rule)');
  const given = body as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (SERVICE_SET.has(key)) {
      if (base && given[key] === (base as unknown as Record<string, unknown>)[key]) continue; // echoed back unchanged
      throw badRequest(`${key} is set by the service`);
    }
    if (!(SETTABLE as readonly string[]).includes(key)) throw badRequest(`unknown field '${key}' (an alarm rule has ${SETTABLE.join(', ')})`);
  }
  const pick = <T>(key: (typeof SETTABLE)[number], fallback: T): unknown => (key in given ? given[key] : base ? (base as unknown as Record<string, unknown>)[key] : fallback);
  const rule = {
    collection_id: text(pick('collection_id', undefined), 'collection_id'),
    tag: text(pick('tag', undefined), 'tag'),
    name: optionalText(pick('name', ''), 'name'),
    enabled: bool(pick('enabled', true), 'enabled'),
    limHi: optionalNumber(pick('limHi', null), 'limHi'),
    limLo: optionalNumber(pick('limLo', null), 'limLo'),
    deadband: number(pick('deadband', 0), 'deadband', 0),
    on_delay_ms: integer(pick('on_delay_ms', 0), 'on_delay_ms'),
    off_delay_ms: integer(pick('off_delay_ms', 0), 'off_delay_ms'),
    stale_after_ms: pick('stale_after_ms', null) === null ? null : integer(pick('stale_after_ms', null), 'stale_after_ms', 1),
    severity: severity(pick('severity', 'warn')),
    notify: bool(pick('notify', true), 'notify'),
  };
  if (rule.limHi === null && rule.limLo === null && rule.stale_after_ms === null) {
    throw badRequest('a rule needs at least one of limHi, limLo, stale_after_ms');
  }
  if (rule.limHi !== null && rule.limLo !== null && rule.limLo >= rule.limHi) throw badRequest(`limLo (${rule.limLo}) must be below limHi (${rule.limHi})`);
  return rule;
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw badRequest(`${field} is required (a non-empty string)`);
  if (value.length > 1024) throw badRequest(`${field} must be at most 1024 characters`);
  return value;
}

function optionalText(value: unknown, field: string): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') throw badRequest(`${field} must be a string`);
  if (value.length > 1024) throw badRequest(`${field} must be at most 1024 characters`);
  return value;
}

function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw badRequest(`${field} must be true or false`);
  return value;
}

function number(value: unknown, field: string, min = -Infinity): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(`${field} must be a finite number`);
  if (value < min) throw badRequest(`${field} must be at least ${min}`);
  return value;
}

function optionalNumber(value: unknown, field: string): number | null {
  return value === null || value === undefined ? null : number(value, field);
}

function integer(value: unknown, field: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw badRequest(`${field} must be a whole number of milliseconds`);
  if (value < min) throw badRequest(`${field} must be at least ${min}`);
  return value;
}

function severity(value: unknown): AlarmRule['severity'] {
  if (!NOTIFICATION_SEVERITIES.includes(value as never)) throw badRequest(`severity must be one of ${NOTIFICATION_SEVERITIES.join(', ')}`);
  return value as AlarmRule['severity'];
}

/** A stored row to the rule (and its state). */
export function ruleOfRow(row: Record<string, unknown>): StoredRule {
  return {
    id: row.id as string,
    collection_id: row.collection_id as string,
    tag: row.tag as string,
    tag_index: (row.tag_index as number | null) ?? null,
    name: row.name as string,
    enabled: row.enabled === 1,
    limHi: (row.limHi as number | null) ?? null,
    limLo: (row.limLo as number | null) ?? null,
    deadband: row.deadband as number,
    on_delay_ms: row.on_delay_ms as number,
    off_delay_ms: row.off_delay_ms as number,
    stale_after_ms: (row.stale_after_ms as number | null) ?? null,
    severity: row.severity as AlarmRule['severity'],
    notify: row.notify === 1,
    tagmetaId: (row.tagmetaId as string | null) ?? null,
    origin: row.origin as StoredRule['origin'],
    state: { phase: row.phase as Phase, kind: (row.kind as AlarmKind | null) ?? null, since: (row.since_ms as number | null) ?? null, eventId: (row.event_id as string | null) ?? null },
  };
}

/** The API shape of a rule (no state, no origin). */
export function ruleView(rule: StoredRule): AlarmRule {
  const { origin: _origin, state: _state, ...view } = rule;
  return view;
}

/** A finite number as it is, anything else (NaN from a sample, a missing limit) as null. */
export function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
