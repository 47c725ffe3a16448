import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, parseDocument, visit } from 'yaml';
import { buildOpenApi, toOpenApiSchema, toYaml, type OpenApiDocument } from '../../src/http/openapi.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { RouteDef } from '../../src/http/route.js';

const noop = () => ({});

function fakeRoutes(): RouteDef[] {
  return [
    {
      method: 'GET', path: '/health', auth: 'public', tag: 'system', summary: 'Liveness',
      responses: { 200: { description: 'ok', schema: { type: 'object', properties: { status: { const: 'ok' } } } } },
      handler: noop,
    },
    {
      method: 'POST', path: '/svcapi/tags', auth: 'jwt', tag: 'tags', summary: 'Create a tag',
      body: {
        $id: 'createTag', $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: ['name'],
        properties: {
          name: { type: 'string', examples: ['pump1.flow'] },
          unit: { type: ['string', 'null'] },
          limits: { type: 'object', patternProperties: { '^(lo|hi)$': { type: ['number', 'null'] } }, additionalProperties: false },
          kind: { anyOf: [{ const: 'analog' }, { const: 'digital' }] },
        },
      },
      responses: { 201: { description: 'created', schema: { type: 'object', properties: { id: { type: 'integer' } } } } },
      handler: noop,
    },
    {
      method: 'DELETE', path: '/svcapi/scope/{scope}/tag/{id}', auth: 'admin', tag: 'tags', summary: 'Delete a tag',
      params: { type: 'object', properties: { id: { type: 'string', pattern: '^[0-9]+$', description: 'tag id' } } },
      query: {
        type: 'object', required: ['reason'],
        properties: { reason: { type: 'string' }, cascade: { type: 'array', items: { type: 'string' } } },
      },
      responses: { 204: { description: 'deleted' }, 403: { description: 'tag is protected' } },
      handler: noop,
    },
    {
      method: 'POST', path: '/svcapi/values/query', auth: 'jwt', tag: 'values', summary: 'Query raw values', mutates: false,
      rawBody: { contentTypes: ['application/msgpack', 'application/json'], description: 'a query, msgpack or JSON' },
      responses: { 200: { description: 'packed values', contentType: 'application/octet-stream' } },
      handler: noop,
    },
  ];
}

function build() {
  const routes = fakeRoutes();
  const before = structuredClone(routes.map(({ handler: _h, ...rest }) => rest));
  const doc = buildOpenApi(routes);
  return { routes, before, doc };
}

/** Every schema object reachable from the document, however deep. */
function* walk(value: unknown): Generator<Record<string, unknown>> {
  if (Array.isArray(value)) for (const item of value) yield* walk(item);
  else if (value && typeof value === 'object') {
    yield value as Record<string, unknown>;
    for (const child of Object.values(value)) yield* walk(child);
  }
}

test('every route appears under its path and method', () => {
  const { routes, doc } = build();
  for (const route of routes) {
    const op = doc.paths[route.path]?.[route.method.toLowerCase()];
    assert.ok(op, `${route.method} ${route.path}`);
    assert.equal(op.summary, route.summary);
    assert.deepEqual(op.tags, [route.tag]);
  }
});

test('operationIds are unique and use only [A-Za-z0-9_]', () => {
  const { doc } = build();
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[A-Za-z0-9_]+$/);
  // Paths that sanitise to the same words still get distinct ids.
  const clash = buildOpenApi([
    { ...fakeRoutes()[0]!, path: '/a-b' },
    { ...fakeRoutes()[0]!, path: '/a_b' },
  ]);
  assert.notEqual(clash.paths['/a-b']!.get!.operationId, clash.paths['/a_b']!.get!.operationId);
});

test('security follows the auth level and the description says it', () => {
  const { doc } = build();
  const health = doc.paths['/health']!.get!;
  const create = doc.paths['/svcapi/tags']!.post!;
  const remove = doc.paths['/svcapi/scope/{scope}/tag/{id}']!.delete!;
  const query = doc.paths['/svcapi/values/query']!.post!;
  assert.deepEqual(health.security, []);
  assert.deepEqual(create.security, [{ bearerAuth: [] }]);
  assert.deepEqual(remove.security, [{ bearerAuth: [] }]);
  assert.deepEqual(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  assert.match(remove.description, /Auth: admin role required/);
  assert.match(remove.description, /Mutating: read-only accounts get 403/);
  assert.doesNotMatch(query.description, /Mutating/);
  assert.equal(health.responses['401'], undefined);
  assert.ok(create.responses['401'] && create.responses['403']);
});

test('document header', () => {
  const { doc } = build();
  assert.equal(doc.openapi, '3.0.3');
  assert.equal(doc.info.version, '0.1.0');
  assert.equal(doc.info.title, 'Historian API');
  assert.deepEqual(doc.servers, [{ url: '/' }]);
  assert.equal(buildOpenApi([], { title: 'Other' }).info.title, 'Other');
});

test('parameters, bodies and responses', () => {
  const { doc } = build();
  const remove = doc.paths['/svcapi/scope/{scope}/tag/{id}']!.delete!;
  const byName = Object.fromEntries(remove.parameters!.map((p) => [p.name, p]));
  assert.deepEqual(byName.scope, { name: 'scope', in: 'path', required: true, schema: { type: 'string' } });
  assert.deepEqual(byName.id, { name: 'id', in: 'path', required: true, description: 'tag id', schema: { type: 'string', pattern: '^[0-9]+$' } });
  assert.equal(byName.reason!.required, true);
  assert.equal(byName.cascade!.required, false);
  assert.equal(byName.cascade!.style, 'form');
  assert.equal(byName.cascade!.explode, true);
  // The route's own 403 wins over the generic one.
  assert.equal(remove.responses['403']!.description, 'tag is protected');
  assert.deepEqual(Object.keys(remove.responses), ['204', '400', '401', '403', '500']);

  const query = doc.paths['/svcapi/values/query']!.post!;
  assert.equal(query.requestBody!.description, 'a query, msgpack or JSON');
  assert.deepEqual(query.requestBody!.content['application/msgpack'], { schema: { type: 'string', format: 'binary' } });
  assert.ok(query.requestBody!.content['application/json']);
  assert.deepEqual(query.responses['200']!.content, { 'application/octet-stream': { schema: { type: 'string' } } });
  assert.ok(query.responses['413'] && query.responses['400']);

  const create = doc.paths['/svcapi/tags']!.post!;
  assert.ok(create.requestBody!.content['application/json']!.schema);
  assert.ok(create.responses['413']);
  assert.deepEqual(create.responses['500']!.content!['application/json']!.schema, { $ref: '#/components/schemas/Error' });
  assert.equal(doc.paths['/health']!.get!.responses['400'], undefined);
  assert.ok(doc.components.schemas.Error);
});

test('converted schemas contain no const, array type, $id, $schema or examples', () => {
  const { doc } = build();
  for (const node of walk(doc.paths)) {
    assert.ok(!('const' in node), JSON.stringify(node));
    assert.ok(!('$id' in node) && !('$schema' in node) && !('examples' in node) && !('patternProperties' in node));
    if ('type' in node && typeof node.type !== 'string') {
      // Only legitimate when `type` is a property name inside `properties`.
      assert.ok(typeof node.type === 'object' && !Array.isArray(node.type), JSON.stringify(node));
    }
  }
  const body = doc.paths['/svcapi/tags']!.post!.requestBody!.content['application/json']!.schema!;
  const props = body.properties as Record<string, Record<string, unknown>>;
  assert.deepEqual(props.unit, { type: 'string', nullable: true });
  assert.deepEqual(props.kind, { anyOf: [{ enum: ['analog'] }, { enum: ['digital'] }] });
  assert.deepEqual(props.limits, { type: 'object', additionalProperties: { type: 'number', nullable: true } });
});

test('toOpenApiSchema edge cases', () => {
  assert.deepEqual(toOpenApiSchema({ const: null }), { enum: [null], nullable: true });
  assert.deepEqual(toOpenApiSchema({ type: ['string', 'integer', 'null'] }), {
    anyOf: [{ type: 'string' }, { type: 'integer' }], nullable: true,
  });
  assert.deepEqual(toOpenApiSchema({ type: 'number', exclusiveMinimum: 0 }), { type: 'number', minimum: 0, exclusiveMinimum: true });
  assert.deepEqual(toOpenApiSchema({ type: 'array', items: { type: ['boolean', 'null'] } }), {
    type: 'array', items: { type: 'boolean', nullable: true },
  });
});

test('route schemas are not mutated', () => {
  const { routes, before } = build();
  assert.deepEqual(routes.map(({ handler: _h, ...rest }) => rest), before);
});

test('toYaml round-trips', () => {
  const { doc } = build();
  const text = toYaml(doc);
  assert.deepEqual(parse(text), JSON.parse(JSON.stringify(doc)) as OpenApiDocument);
  // A shared object would become an anchor + alias with yaml's defaults.
  const shared = { type: 'string' };
  let aliases = 0;
  visit(parseDocument(toYaml({ a: shared, b: shared })), { Alias: () => void aliases++ });
  assert.equal(aliases, 0);
});

test('info.description lists every error code and the error rules', () => {
  const { doc } = build();
  for (const [code, entry] of Object.entries(ERROR_CODES)) {
    assert.ok(doc.info.description.includes(code), code);
    assert.ok(doc.info.description.includes(entry.meaning), code);
  }
  assert.match(doc.info.description, /404/);
  assert.match(doc.info.description, /405/);
  assert.match(doc.info.description, /"status": "error"/);
});

test('a {name+} path (the rest of the path) is a plain {name} path parameter in the document', () => {
  const doc = buildOpenApi([
    {
      method: 'GET', path: '/svcapi/adk/{path+}', auth: 'jwt', tag: 'proxy', summary: 'Forward',
      params: { type: 'object', properties: { path: { type: 'string', description: 'may hold /' } } },
      responses: { 200: { description: 'the answer', contentType: '*/*' } },
    },
  ]);
  assert.deepEqual(Object.keys(doc.paths), ['/svcapi/adk/{path}']);
  const op = doc.paths['/svcapi/adk/{path}']!.get!;
  assert.equal(op.operationId, 'get_svcapi_adk_by_path');
  assert.deepEqual(op.parameters, [{ name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'may hold /' }]);
});
