// Builds the OpenAPI 3.0.3 document from the route table. Nothing here is
// written by hand per route: paths, parameters, bodies, security and the
// automatic error responses all follow from each `RouteSpec`, so the document
// cannot drift from what the router actually serves.

import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { ERROR_CODES } from '../../shared/errors.js';
import { ERROR_SCHEMA } from './errors.js';
import { mutates, type JsonSchema, type RouteSpec } from './route.js';

export const API_VERSION = '0.1.0';
const DEFAULT_TITLE = 'Historian API';
const DEFAULT_INTRO = 'HTTP API of the industrial time-series historian.';
const JSON_TYPE = 'application/json';
const ERROR_REF = { $ref: '#/components/schemas/Error' } as const;

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  description?: string;
  schema: JsonSchema;
  style?: 'form';
  explode?: boolean;
}

export interface OpenApiMediaType {
  schema?: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  content?: Record<string, OpenApiMediaType>;
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; description?: string; content: Record<string, OpenApiMediaType> };
  responses: Record<string, OpenApiResponse>;
}

export interface OpenApiDocument {
  openapi: '3.0.3';
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string }>;
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: {
    securitySchemes: Record<string, { type: 'http'; scheme: 'bearer' | 'basic'; bearerFormat?: string; description?: string }>;
    schemas: Record<string, JsonSchema>;
  };
}

export function buildOpenApi(
  routes: readonly RouteSpec[],
  info?: { title?: string; description?: string },
): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];
  const usedOperationIds = new Set<string>();

  for (const route of routes) {
    const method = route.method.toLowerCase();
    const pathItem = (paths[documentPath(route.path)] ??= {});
    // A second declaration would silently replace the first in the document
    // while the router serves only one of them; fail loudly instead.
    if (pathItem[method]) throw new Error(`duplicate route ${route.method} ${route.path}`);
    pathItem[method] = buildOperation(route, uniqueOperationId(route, usedOperationIds));
    if (!tags.includes(route.tag)) tags.push(route.tag);
  }

  return {
    openapi: '3.0.3',
    info: {
      title: info?.title ?? DEFAULT_TITLE,
      version: API_VERSION,
      description: describeApi(info?.description ?? DEFAULT_INTRO),
    },
    servers: [{ url: '/' }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        basicAuth: { type: 'http', scheme: 'basic', description: 'an account email and password (ingest routes, as InfluxDB clients send them; `Token <jwt>` and `u`/`p` work there too)' },
      },
      schemas: { Error: toOpenApiSchema(ERROR_SCHEMA) },
    },
  };
}

/** YAML form of the document; no anchors, so every schema reads on its own. */
export function toYaml(doc: object): string {
  // Loaded on the first request for the document, not at start (about 3 MiB resident).
  const { stringify } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  return stringify(doc, { aliasDuplicateObjects: false, lineWidth: 0 });
}

function buildOperation(route: RouteSpec, operationId: string): OpenApiOperation {
  const operation: OpenApiOperation = {
    operationId,
    summary: route.summary,
    description: describeRoute(route),
    tags: [route.tag],
    security: route.auth === 'public' ? [] : route.authenticate ? [{ bearerAuth: [] }, { basicAuth: [] }] : [{ bearerAuth: [] }],
    responses: {},
  };
  const parameters = [...pathParameters(route), ...queryParameters(route)];
  if (parameters.length > 0) operation.parameters = parameters;
  const requestBody = buildRequestBody(route);
  if (requestBody) operation.requestBody = requestBody;
  operation.responses = buildResponses(route);
  return operation;
}

function describeRoute(route: RouteSpec): string {
  const authText = {
    public: 'Auth: public, no token needed',
    jwt: 'Auth: bearer token or API key required',
    admin: 'Auth: admin role required',
  }[route.auth];
  const parts = [route.description, authText];
  if (mutates(route)) parts.push(route.openToReadOnly ? "Mutating, open to read-only accounts: it changes only the caller's own credentials" : 'Mutating: read-only accounts get 403');
  return parts.filter((part): part is string => Boolean(part)).join('\n\n');
}

/** `GET /svcapi/tag/{id}/values` → `get_svcapi_tag_by_id_values`. */
function uniqueOperationId(route: RouteSpec, used: Set<string>): string {
  const words = documentPath(route.path)
    .split('/')
    .filter(Boolean)
    .map((segment) => segment.replace(/^\{(.+)\}$/, 'by_$1'));
  const base = [route.method.toLowerCase(), ...(words.length ? words : ['root'])]
    .join('_')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  // Different paths can sanitise to the same id (`/a-b`, `/a_b`); the suffix
  // depends only on route order, so the output stays deterministic.
  let id = base;
  for (let n = 2; used.has(id); n++) id = `${base}_${n}`;
  used.add(id);
  return id;
}

function templateNames(path: string): string[] {
  return [...documentPath(path).matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
}

/** The router's `{rest+}` (the rest of the path) is a plain `{rest}` to OpenAPI, which has no such form; the parameter says it may hold `/`. */
function documentPath(path: string): string {
  return path.replace(/\{([^}]+)\+\}/g, '{$1}');
}

function pathParameters(route: RouteSpec): OpenApiParameter[] {
  const declared = schemaProperties(route.params);
  // The template is authoritative: OpenAPI rejects a path parameter that is
  // not in the path, and requires one for every `{name}` that is.
  return templateNames(route.path).map((name) =>
    parameter(name, 'path', true, declared[name] ?? { type: 'string' }),
  );
}

function queryParameters(route: RouteSpec): OpenApiParameter[] {
  const required = new Set(Array.isArray(route.query?.required) ? (route.query.required as string[]) : []);
  return Object.entries(schemaProperties(route.query)).map(([name, schema]) =>
    parameter(name, 'query', required.has(name), schema),
  );
}

function parameter(name: string, location: 'path' | 'query', required: boolean, schema: JsonSchema): OpenApiParameter {
  const converted = toOpenApiSchema(schema);
  const result: OpenApiParameter = { name, in: location, required, schema: converted };
  // A description belongs on the parameter, where documentation tools show it.
  if (typeof converted.description === 'string') {
    result.description = converted.description;
    delete converted.description;
  }
  // Repeated keys (`?tag=a&tag=b`) are how the router delivers arrays.
  if (location === 'query' && converted.type === 'array') {
    result.style = 'form';
    result.explode = true;
  }
  return result;
}

function buildRequestBody(route: RouteSpec): OpenApiOperation['requestBody'] {
  const content: Record<string, OpenApiMediaType> = {};
  if (route.rawBody) {
    for (const contentType of route.rawBody.contentTypes) {
      content[contentType] = { schema: isJsonType(contentType) ? {} : { type: 'string', format: 'binary' } };
    }
  }
  if (route.streamBody) content['*/*'] = { schema: { type: 'string', format: 'binary' } };
  if (route.body) content[JSON_TYPE] = { schema: toOpenApiSchema(route.body) };
  if (Object.keys(content).length === 0) return undefined;
  const description = route.rawBody?.description ?? route.streamBody?.description;
  return { required: true, ...(description ? { description } : {}), content };
}

function buildResponses(route: RouteSpec): Record<string, OpenApiResponse> {
  const responses: Record<string, OpenApiResponse> = {};
  for (const [status, def] of Object.entries(route.responses)) {
    const contentType = def.contentType ?? JSON_TYPE;
    const schema = def.schema ? toOpenApiSchema(def.schema) : isJsonType(contentType) ? undefined : { type: 'string' };
    responses[status] = schema ? { description: def.description, content: { [contentType]: { schema } } } : { description: def.description };
  }

  const hasBody = Boolean(route.body || route.rawBody || route.streamBody);
  const errorStatuses: number[] = [];
  if (route.params || route.query || hasBody || templateNames(route.path).length > 0) errorStatuses.push(400);
  if (route.auth !== 'public') errorStatuses.push(401, 403);
  if (hasBody) errorStatuses.push(413);
  if (route.rawBody) errorStatuses.push(415);
  errorStatuses.push(500);
  for (const status of errorStatuses) {
    // The route's own declaration is more specific than the generic one.
    responses[String(status)] ??= {
      description: describeErrorStatus(status),
      content: { [JSON_TYPE]: { schema: { ...ERROR_REF } } },
    };
  }

  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}

function describeErrorStatus(status: number): string {
  const matching = Object.entries(ERROR_CODES).filter(([, entry]) => entry.status === status);
  return matching.map(([code, entry]) => `${code}: ${entry.meaning}`).join('; ') || `HTTP ${status}`;
}

function describeApi(intro: string): string {
  const escapeCell = (text: string) => text.replace(/\|/g, '\\|');
  const rows = Object.entries(ERROR_CODES).map(
    ([code, entry]) => `| \`${code}\` | ${entry.status} | ${escapeCell(entry.meaning)} |`,
  );
  return [
    intro,
    '',
    '## Errors',
    '',
    'Every error reply is JSON of the shape `{"error": "<message>"}`, or `{"status": "error", "message": "<message>"}` on routes that use that shape.',
    'An unknown path gives 404; a known path called with a method it does not serve gives 405 (this is not repeated on each operation).',
    '',
    '| Code | Status | Meaning |',
    '| --- | --- | --- |',
    ...rows,
  ].join('\n');
}

function isJsonType(contentType: string): boolean {
  const essence = contentType.split(';')[0]!.trim().toLowerCase();
  return essence === JSON_TYPE || essence.endsWith('+json');
}

function schemaProperties(schema: JsonSchema | undefined): Record<string, JsonSchema> {
  const properties = schema?.properties;
  return isSchemaObject(properties) ? (properties as Record<string, JsonSchema>) : {};
}

function isSchemaObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Keywords of JSON Schema draft 7 (as used by ajv / fast-json-stringify) that
// the OpenAPI 3.0 schema object does not allow and that carry no meaning for readers.
const DROPPED_KEYWORDS = new Set(['$id', '$schema', '$comment', 'examples']);
const SCHEMA_MAP_KEYWORDS = ['properties', 'definitions'];
const SCHEMA_LIST_KEYWORDS = ['oneOf', 'anyOf', 'allOf'];

/**
 * Converts a draft-7 JSON Schema to an OpenAPI 3.0 schema object. Returns a
 * fresh object: route schemas are shared with the validators and serializers,
 * which must keep seeing the original.
 */
export function toOpenApiSchema(schema: JsonSchema | Readonly<Record<string, unknown>>): JsonSchema {
  const out: JsonSchema = {};
  let nullable = false;
  let typeUnion: JsonSchema[] | undefined;

  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED_KEYWORDS.has(key)) continue;
    if (key === 'const') {
      out.enum = [structuredClone(value)];
      if (value === null) nullable = true;
    } else if (key === 'type' && Array.isArray(value)) {
      const types = value.filter((type) => type !== 'null');
      nullable ||= types.length < value.length;
      if (types.length === 1) out.type = types[0];
      // Several non-null types have no 3.0 spelling except a union.
      else if (types.length > 1) typeUnion = types.map((type) => ({ type }));
    } else if (key === 'type' && value === 'null') {
      nullable = true;
    } else if (key === 'enum' && Array.isArray(value)) {
      out.enum = structuredClone(value);
      if (value.includes(null)) nullable = true;
    } else if ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && typeof value === 'number') {
      // Draft 6+ puts the bound in the keyword; 3.0 wants the draft 4 boolean form.
      out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
      out[key] = true;
    } else if (SCHEMA_MAP_KEYWORDS.includes(key) && isSchemaObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, isSchemaObject(sub) ? toOpenApiSchema(sub) : structuredClone(sub)]),
      );
    } else if (SCHEMA_LIST_KEYWORDS.includes(key) && Array.isArray(value)) {
      out[key] = value.map((sub) => (isSchemaObject(sub) ? toOpenApiSchema(sub) : structuredClone(sub)));
    } else if (key === 'items' && Array.isArray(value)) {
      // Tuple form is not in 3.0; keep the element types as a union.
      out.items = { anyOf: value.map((sub) => toOpenApiSchema(sub as JsonSchema)) };
    } else if ((key === 'items' || key === 'additionalProperties' || key === 'not') && isSchemaObject(value)) {
      out[key] = toOpenApiSchema(value);
    } else if (key === 'patternProperties') {
      continue; // folded into additionalProperties below
    } else {
      out[key] = structuredClone(value);
    }
  }

  // 3.0 has no patternProperties; the closest statement is "other keys hold
  // values like these", which is what additionalProperties says.
  if (isSchemaObject(schema.patternProperties)) {
    const patterns = Object.values(schema.patternProperties).filter(isSchemaObject).map((sub) => toOpenApiSchema(sub));
    const existing = out.additionalProperties;
    const alternatives = isSchemaObject(existing) ? [existing, ...patterns] : patterns;
    if (alternatives.length === 1) out.additionalProperties = alternatives[0];
    else if (alternatives.length > 1) out.additionalProperties = { anyOf: alternatives };
  }
  if (typeUnion) {
    // Both must hold, so an existing anyOf cannot simply absorb the type union.
    if (out.anyOf) out.allOf = [...((out.allOf as unknown[] | undefined) ?? []), { anyOf: typeUnion }];
    else out.anyOf = typeUnion;
  }
  if (nullable) out.nullable = true;
  return out;
}
