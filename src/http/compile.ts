// Per-route validators (ajv) and serializers (fast-json-stringify), compiled
// once at start from the route declarations. Validation errors become a 400
// naming the field; a serializer exists for every response that declares a
// JSON schema, so replies are written without generic JSON.stringify.

import { Ajv, type ErrorObject, type SchemaValidateFunction, type ValidateFunction } from 'ajv';
import fastJsonStringifyModule from 'fast-json-stringify';
import { badRequest } from '../../shared/errors.js';
import type { JsonSchema, RouteDef } from './route.js';
import { RouteStats } from './route-stats.js';
import { parseTimeParam, TIME_PARAM_FORMS } from './time-param.js';

// fast-json-stringify is CommonJS with a default export; NodeNext sees the namespace.
const fastJsonStringify =
  (fastJsonStringifyModule as unknown as { default: typeof fastJsonStringifyModule }).default ?? fastJsonStringifyModule;

// Bodies: exact types, defaults filled in. Query strings and path params arrive
// as strings, so those validators coerce (and wrap single values into arrays).
const bodyAjv = new Ajv({ allErrors: false, useDefaults: true, strict: false });
// passContext: a validator called as validate.call(context, data) hands the context to our
// keywords (x-time reads the request's `now` there).
const textAjv = new Ajv({ allErrors: false, useDefaults: true, coerceTypes: 'array', strict: false, passContext: true });

/** What validating one request's path and query needs besides the values. */
export interface ValidationContext {
  /** The service clock's time for this request (epoch ms): what `now` in a time parameter means. */
  now: number;
}

/**
 * `x-time: true` on a string parameter: the value is read by the one time grammar
 * (time-param.ts) and replaced by its epoch ms, so the handler gets a number whatever form the
 * client used. A default of 'now' therefore means the request's time.
 */
const readTime: SchemaValidateFunction = function (this: ValidationContext | undefined, _schema, data, _parentSchema, where) {
  const parsed = typeof data === 'string' ? parseTimeParam(data, this?.now ?? Date.now()) : { ok: false as const };
  if (!parsed.ok) {
    readTime.errors = [{ keyword: 'x-time', message: `is not a time${parsed.detail ? ` (${parsed.detail})` : ''}; use ${TIME_PARAM_FORMS}`, params: {} }];
    return false;
  }
  if (where) where.parentData[where.parentDataProperty] = parsed.ms;
  return true;
};
textAjv.addKeyword({ keyword: 'x-time', schemaType: 'boolean', modifying: true, errors: true, validate: readTime });

export type Serializer = (value: unknown) => string;

export interface CompiledRoute<G = unknown> {
  def: RouteDef<G>;
  validateParams: ValidateFunction | null;
  validateQuery: ValidateFunction | null;
  validateBody: ValidateFunction | null;
  serializers: Map<number, Serializer>;
  /** Its requests by status class and their durations (GET /metrics). */
  stats: RouteStats;
}

// Generated routes (hundreds of entity routes) share schema objects; compiling
// each object once keeps start-up fast.
const serializerCache = new WeakMap<JsonSchema, Serializer>();
const bodyCache = new WeakMap<JsonSchema, ValidateFunction>();
const textCache = new WeakMap<JsonSchema, ValidateFunction>();

function cached<T>(cache: WeakMap<JsonSchema, T>, schema: JsonSchema, make: () => T): T {
  let value = cache.get(schema);
  if (value === undefined) cache.set(schema, (value = make()));
  return value;
}

export function compileRoute<G>(def: RouteDef<G>): CompiledRoute<G> {
  const serializers = new Map<number, Serializer>();
  for (const [status, response] of Object.entries(def.responses)) {
    const schema = response.schema;
    if (schema && !response.contentType) {
      serializers.set(Number(status), cached(serializerCache, schema, () => fastJsonStringify(schema as never) as Serializer));
    }
  }
  const text = (schema: JsonSchema | undefined) => (schema ? cached(textCache, schema, () => textAjv.compile(schema)) : null);
  return {
    def,
    validateParams: text(def.params),
    validateQuery: text(def.query),
    validateBody: def.body ? cached(bodyCache, def.body, () => bodyAjv.compile(def.body!)) : null,
    serializers,
    stats: new RouteStats(def.method, def.path),
  };
}

/** Runs `validate` on `value` (which it may coerce in place) or throws a 400 naming the field. */
export function check(validate: ValidateFunction | null, value: unknown, where: 'body' | 'query' | 'path', context?: ValidationContext): void {
  if (!validate || validate.call(context, value)) return;
  throw badRequest(describe(validate.errors?.[0], where));
}

function describe(error: ErrorObject | undefined, where: 'body' | 'query' | 'path'): string {
  if (!error) return `invalid ${where}`;
  const noun = where === 'body' ? 'body field' : where === 'query' ? 'query parameter' : 'path parameter';
  const field = error.instancePath.split('/').slice(1).map(unescapePointer).join('.');
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      return `missing ${noun} '${field ? `${field}.` : ''}${missing}'`;
    }
    case 'additionalProperties': {
      const extra = (error.params as { additionalProperty: string }).additionalProperty;
      return `unknown ${noun} '${field ? `${field}.` : ''}${extra}'`;
    }
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.map((v) => String(v)).join(', ');
      return `${noun} '${field}' must be one of ${allowed}`;
    }
    default:
      return field ? `${noun} '${field}' ${error.message ?? 'is invalid'}` : `${where} ${error.message ?? 'is invalid'}`;
  }
}

function unescapePointer(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Schema helpers for route declarations. */
export const S = {
  string: (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...extra }),
  integer: (extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...extra }),
  boolean: (): JsonSchema => ({ type: 'boolean' }),
  array: (items: JsonSchema, extra: JsonSchema = {}): JsonSchema => ({ type: 'array', items, ...extra }),
  /**
   * A time query parameter: epoch ms, ISO 8601 or relative to now (time-param.ts); the handler
   * sees epoch ms. `extra.default: 'now'` makes it optional, meaning the request's time.
   */
  time: (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', 'x-time': true, description: `a time: ${TIME_PARAM_FORMS}`, ...extra }),
  object: (properties: Record<string, JsonSchema>, required: string[] = [], extra: JsonSchema = {}): JsonSchema => ({
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...extra,
  }),
};
