// The POST query body (WIRE.md "POST query body"): KairosDB-like metrics with
// absolute or relative times, per-metric scope in `tags`, per-metric
// aggregators and a body-level pipeline. Parsed and validated on the main
// thread (bodies are small) so that every mistake is a 400 naming the field
// before any worker is involved.

import { badRequest } from '../../shared/errors.js';
import { AggregatorError, isSamplingStep, parseAggregators, parseTimeUnit, relativeToAbsolute, type AggregatorSpec } from '../../shared/aggregator-spec.js';
import { SCOPE_FIELDS, type ScopeFields } from '../../shared/scope.js';
import { UNIT_MS } from '../../shared/time-units.js';

export interface MetricRequest {
  name: string;
  /** Scope from the metric's `tags`, else the body's scope fields; may be empty (tag map). */
  scope: ScopeFields;
  pipeline: AggregatorSpec[];
}

export interface QuerySpec {
  start: number;
  end: number;
  metrics: MetricRequest[];
}

const MAX_TIME = 9007199254740991;

export function parseQueryBody(body: unknown, now = Date.now()): QuerySpec {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object');
  const b = body as Record<string, unknown>;
  try {
    const start = time(b, 'start', now);
    if (start === undefined) throw badRequest('missing body field start_absolute or start_relative');
    const end = time(b, 'end', now) ?? now;
    if (end < start) throw badRequest('the end time must not be before the start time');
    const pipeline = parseAggregators(b.pipeline, 'pipeline');
    if (!Array.isArray(b.metrics) || b.metrics.length === 0) throw badRequest('body field metrics must be a non-empty array');
    if (b.metrics.length > 10000) throw badRequest('body field metrics has more than 10000 entries');
    const bodyScope = scopeOf(b, 'body');
    const metrics = b.metrics.map((m, i): MetricRequest => {
      const path = `metrics[${i}]`;
      if (!m || typeof m !== 'object' || Array.isArray(m)) throw badRequest(`${path} must be an object`);
      const metric = m as Record<string, unknown>;
      if (typeof metric.name !== 'string' || metric.name.length === 0) throw badRequest(`${path}.name must be a non-empty string`);
      const own = metricScope(metric.tags, `${path}.tags`);
      return {
        name: metric.name,
        scope: Object.keys(own).length > 0 ? { ...bodyScope, ...own } : bodyScope,
        pipeline: [...parseAggregators(metric.aggregators, `${path}.aggregators`), ...pipeline],
      };
    });
    for (const m of metrics) checkBucketCount(m.pipeline, start, end);
    return { start, end, metrics };
  } catch (err) {
    if (err instanceof AggregatorError) throw badRequest(err.message);
    throw err;
  }
}

/** Buckets one sampling step may produce over the range; `gaps` would otherwise emit one marker per empty bucket. */
export const MAX_BUCKETS = 10_000_000;

export function checkBucketCount(pipeline: AggregatorSpec[], start: number, end: number): void {
  for (const step of pipeline) {
    if (!isSamplingStep(step)) continue;
    const buckets = (end - start) / (step.sampling.value * UNIT_MS[step.sampling.unit]);
    if (buckets > MAX_BUCKETS) {
      throw badRequest(`aggregator ${step.name}: sampling of ${step.sampling.value} ${step.sampling.unit} makes ${Math.ceil(buckets)} buckets over the range (at most ${MAX_BUCKETS}); use a wider sampling or a shorter range`);
    }
  }
}

function time(b: Record<string, unknown>, which: 'start' | 'end', now: number): number | undefined {
  const absolute = b[`${which}_absolute`];
  const relative = b[`${which}_relative`];
  if (absolute !== undefined) {
    if (typeof absolute !== 'number' || !Number.isInteger(absolute) || absolute < 0 || absolute > MAX_TIME) {
      throw badRequest(`${which}_absolute must be epoch milliseconds (an integer from 0 to 2^53-1)`);
    }
    return absolute;
  }
  if (relative === undefined) return undefined;
  if (!relative || typeof relative !== 'object') throw badRequest(`${which}_relative must be {value, unit}`);
  const r = relative as { value?: unknown; unit?: unknown };
  const value = typeof r.value === 'string' && /^\d+$/.test(r.value) ? Number(r.value) : r.value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw badRequest(`${which}_relative.value must be a non-negative integer`);
  return Math.max(0, relativeToAbsolute({ value, unit: parseTimeUnit(r.unit, `${which}_relative.unit`) }, now));
}

function scopeOf(source: Record<string, unknown>, where: string): ScopeFields {
  const scope: ScopeFields = {};
  for (const key of SCOPE_FIELDS) {
    const value = source[key];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.length === 0) throw badRequest(`${where} field ${key} must be a non-empty string`);
    scope[key] = value;
  }
  return scope;
}

/** KairosDB style `tags: {organization: ["acme"], ...}` (a plain string is accepted too). */
function metricScope(tags: unknown, path: string): ScopeFields {
  if (tags === undefined || tags === null) return {};
  if (typeof tags !== 'object' || Array.isArray(tags)) throw badRequest(`${path} must be an object of scope field to [name]`);
  const scope: ScopeFields = {};
  for (const key of SCOPE_FIELDS) {
    const value = (tags as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const name = Array.isArray(value) ? value[0] : value;
    if (Array.isArray(value) && value.length !== 1) throw badRequest(`${path}.${key} must name exactly one ${key}`);
    if (typeof name !== 'string' || name.length === 0) throw badRequest(`${path}.${key} must be a non-empty string or a one-element array of one`);
    scope[key] = name;
  }
  return scope;
}
