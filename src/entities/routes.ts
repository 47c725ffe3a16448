// Generic entity routes, generated from the registry: the twelve CRUD routes
// per URL name, nested routes one and two levels down the foreign-key graph,
// the generic `/{model}/{id}/{relationship}`, and the introspection routes.
// Every handler goes through the EntityStore, which applies row scoping.

import type { PasswordHasher } from '../auth/api.js';
import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema, Reply } from '../http/route.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { EntityStore } from '../meta/entities.js';
import { parseFilterQuery, type Filter } from '../meta/filter.js';
import type { EntityDef, Relation } from '../meta/registry.js';
import { badRequest, notFound } from '../../shared/errors.js';

const ENTITY: JsonSchema = { type: 'object', additionalProperties: true };
const ENTITY_LIST: JsonSchema = { type: 'array', items: ENTITY };
const COUNT: JsonSchema = S.object({ count: S.integer() }, ['count']);
const EXISTS: JsonSchema = S.object({ exists: S.boolean() }, ['exists']);
const OBJECT_BODY: JsonSchema = { type: 'object', additionalProperties: true };
const ARRAY_BODY: JsonSchema = { type: 'array', items: OBJECT_BODY };
const FILTER_QUERY: JsonSchema = {
  type: 'object',
  properties: {
    filter: S.string({ description: 'JSON filter `{where, fields, include, limit, skip, order}`; the bracket form `filter[where][field][op]=value` is also accepted' }),
    where: S.string({ description: 'JSON where object (alternative to filter.where)' }),
  },
};
const ID = S.string({ description: 'entity id' });
const ID_PARAMS = S.object({ id: ID }, ['id']);

export function entityRoutes(store: EntityStore, passwords: PasswordHasher): Route[] {
  const { registry } = store;
  const filterOf = (req: Request): Filter => parseFilterQuery(req.rawQuery);
  const routes: Route[] = [];
  const settled = (body: unknown) => settleThen(store, body);

  /** Users: a password in any write is hashed before it reaches the store. */
  const prepare = async (def: EntityDef, body: unknown): Promise<unknown> => {
    if (def.table !== 'users') return body;
    const hashOne = async (item: unknown) => {
      if (!item || typeof item !== 'object' || !('password' in item)) return item;
      const { password } = item as { password: unknown };
      if (password === null || password === undefined) return item;
      if (typeof password !== 'string' || password.length === 0) throw badRequest('password must be a non-empty string');
      return { ...item, password: await passwords.hash(password) };
    };
    return Array.isArray(body) ? Promise.all(body.map(hashOne)) : hashOne(body);
  };

  for (const def of registry.entities) {
    for (const url of def.urlNames) {
      const base = `/svcapi/${url}`;
      const tag = `Entity: ${def.urlNames[0]}`;
      const name = url;
      const common = { auth: 'jwt' as const, tag };
      const withId = { params: ID_PARAMS };

      routes.push(
        {
          ...common, method: 'GET', path: base, summary: `List ${name} (filter: where, fields, include, limit, skip, order)`,
          query: FILTER_QUERY, responses: { 200: { description: 'entities', schema: ENTITY_LIST } },
          handler: (req) => ({ body: store.list(def, req.grant, filterOf(req)) }),
        },
        {
          ...common, method: 'PATCH', path: base, summary: `Update ${name} by the body's id, or insert when it has none`,
          body: OBJECT_BODY, responses: { 200: { description: 'entity', schema: ENTITY } },
          handler: async (req) => settled(store.upsert(def, req.grant, await prepare(def, req.body))),
        },
        {
          ...common, method: 'DELETE', path: base, summary: `Delete every ${name} row matching where (send where={} for all)`,
          query: FILTER_QUERY, responses: { 200: { description: 'count', schema: COUNT } },
          handler: (req) => {
            if (!/(^|&)(where|filter)([=[%])/.test(req.rawQuery)) throw badRequest('where is required (send where={} to delete every row)');
            return settled({ count: store.deleteWhere(def, req.grant, filterOf(req).where) });
          },
        },
        {
          ...common, method: 'POST', path: `${base}/bulk`, summary: `Create several ${name} (all or nothing)`,
          body: ARRAY_BODY, responses: { 200: { description: 'created entities', schema: ENTITY_LIST } },
          handler: async (req) => settled(store.createMany(def, req.grant, await prepare(def, req.body))),
        },
        {
          ...common, method: 'GET', path: `${base}/count`, summary: `Count ${name} matching where`,
          query: FILTER_QUERY, responses: { 200: { description: 'count', schema: COUNT } },
          handler: (req) => ({ body: { count: store.count(def, req.grant, filterOf(req).where) } }),
        },
        {
          ...common, method: 'GET', path: `${base}/findOne`, summary: `First ${name} matching the filter`,
          query: FILTER_QUERY, responses: { 200: { description: 'entity', schema: ENTITY }, 404: { description: 'no matching record' } },
          handler: (req) => ({ body: store.findOne(def, req.grant, filterOf(req)) }),
        },
        ...(['POST', 'PUT'] as const).map((method): Route => ({
          ...common, method, path: `${base}/update`, summary: `Merge the body into every ${name} matching where`,
          query: FILTER_QUERY, body: OBJECT_BODY, responses: { 200: { description: 'count', schema: COUNT } },
          handler: async (req) => settled({ count: store.updateWhere(def, req.grant, filterOf(req).where, await prepare(def, req.body)) }),
        })),
        {
          ...common, ...withId, method: 'GET', path: `${base}/{id}`, summary: `One ${name} (filter may carry include and fields)`,
          query: FILTER_QUERY, responses: { 200: { description: 'entity', schema: ENTITY }, 404: { description: 'item not found' } },
          handler: (req) => ({ body: store.get(def, req.grant, req.params.id, filterOf(req)) }),
        },
        {
          ...common, ...withId, method: 'PUT', path: `${base}/{id}`, summary: `Update one ${name}; fields merge into meta_data`,
          body: OBJECT_BODY, responses: { 200: { description: 'entity', schema: ENTITY }, 404: { description: 'item not found' } },
          handler: async (req) => settled(store.merge(def, req.grant, req.params.id, await prepare(def, req.body))),
        },
        {
          ...common, ...withId, method: 'DELETE', path: `${base}/{id}`, summary: `Delete one ${name} and, recursively, its children`,
          responses: { 200: { description: 'count', schema: COUNT } },
          handler: (req) => settled({ count: store.deleteById(def, req.grant, req.params.id) }),
        },
        {
          ...common, ...withId, method: 'GET', path: `${base}/{id}/exists`, summary: `Whether one ${name} exists`,
          responses: { 200: { description: 'exists', schema: EXISTS } },
          handler: (req) => ({ body: { exists: store.exists(def, req.grant, req.params.id) } }),
        },
      );
      // Notifications have their own create (admin, 201: routes/notifications.ts); every other entity uses the generic one.
      if (def.table !== 'notifications') {
        routes.push({
          ...common, method: 'POST', path: base, summary: `Create one ${name} (HTTP 200)`,
          body: OBJECT_BODY, responses: { 200: { description: 'created entity', schema: ENTITY } },
          handler: async (req) => settled(store.create(def, req.grant, await prepare(def, req.body))),
        });
      }
    }
  }

  routes.push(...nestedRoutes(store, filterOf, prepare));
  routes.push(...introspectionRoutes(store));
  return routes;
}

/** Replies once the side effects the write deferred (collection folders) are done. */
async function settleThen(store: EntityStore, body: unknown): Promise<Reply> {
  await store.settle();
  return { body };
}

type FilterOf = (req: Request) => Filter;
type Prepare = (def: EntityDef, body: unknown) => Promise<unknown>;

/**
 * `/{parent}/{id}/{child}` and `/{parent}/{id}/{child}/{childId}/{grandchild}`:
 * list, count, create (parent key injected), get one and delete one, each
 * only where the whole chain of ids matches.
 */
function nestedRoutes(store: EntityStore, filterOf: FilterOf, prepare: Prepare): Route[] {
  const { registry } = store;
  const settled = (body: unknown) => settleThen(store, body);
  const routes: Route[] = [];
  const idSchemas = new Map<string, JsonSchema>(); // shared so each is compiled once
  const ids = (names: string[]) => {
    const key = names.join(',');
    let schema = idSchemas.get(key);
    if (!schema) idSchemas.set(key, (schema = S.object(Object.fromEntries(names.map((n) => [n, ID])), names)));
    return schema;
  };

  /** One level of nesting: children of `relation.parent` row `parentId`. */
  const level = (prefix: string, parentParam: string, childParam: string, relation: Relation, checkChain: (req: Request, grant: AccessGrant) => void, paramNames: string[], tag: string) => {
    const { child, column } = relation;
    const url = child.urlNames[0];
    const path = `${prefix}/${url}`;
    const pin = (req: Request) => ({ [column]: req.params[parentParam] });
    routes.push(
      {
        method: 'GET', path, auth: 'jwt', tag, params: ids(paramNames), query: FILTER_QUERY,
        summary: `List ${url} of one ${relation.parent.urlNames[0]}`,
        responses: { 200: { description: 'entities', schema: ENTITY_LIST } },
        handler: (req) => {
          const grant = req.grant;
          checkChain(req, grant);
          return { body: store.list(child, grant, filterOf(req), pin(req)) };
        },
      },
      {
        method: 'GET', path: `${path}/count`, auth: 'jwt', tag, params: ids(paramNames), query: FILTER_QUERY,
        summary: `Count ${url} of one ${relation.parent.urlNames[0]}`,
        responses: { 200: { description: 'count', schema: COUNT } },
        handler: (req) => {
          const grant = req.grant;
          checkChain(req, grant);
          const where = filterOf(req).where;
          return { body: { count: store.count(child, grant, where ? { and: [where, pin(req)] } : pin(req)) } };
        },
      },
      {
        method: 'POST', path, auth: 'jwt', tag, params: ids(paramNames), body: OBJECT_BODY,
        summary: `Create a ${url} under one ${relation.parent.urlNames[0]} (its key is set from the path)`,
        responses: { 200: { description: 'created entity', schema: ENTITY } },
        handler: async (req) => {
          const grant = req.grant;
          checkChain(req, grant);
          return settled(store.create(child, grant, await prepare(child, req.body), pin(req)));
        },
      },
      {
        method: 'GET', path: `${path}/{${childParam}}`, auth: 'jwt', tag, params: ids([...paramNames, childParam]), query: FILTER_QUERY,
        summary: `One ${url} of one ${relation.parent.urlNames[0]}`,
        responses: { 200: { description: 'entity', schema: ENTITY }, 404: { description: 'item not found' } },
        handler: (req) => {
          const grant = req.grant;
          checkChain(req, grant);
          return { body: store.get(child, grant, req.params[childParam], filterOf(req), pin(req)) };
        },
      },
      {
        method: 'DELETE', path: `${path}/{${childParam}}`, auth: 'jwt', tag, params: ids([...paramNames, childParam]),
        summary: `Delete one ${url} only where it belongs to the ${relation.parent.urlNames[0]} in the path`,
        responses: { 200: { description: 'count', schema: COUNT } },
        handler: (req) => {
          const grant = req.grant;
          checkChain(req, grant);
          return settled({ count: store.deleteById(child, grant, req.params[childParam], pin(req)) });
        },
      },
    );
  };

  for (const first of registry.relations) {
    if (first.child.table === 'notifications') continue; // notification visibility has its own routes
    for (const parentUrl of first.parent.urlNames) {
      const tag = `Entity: ${first.parent.urlNames[0]}`;
      const prefix = `/svcapi/${parentUrl}/{id}`;
      // The parent must exist and be readable (404 / 403).
      const checkParent = (req: Request, grant: AccessGrant) => void store.get(first.parent, grant, req.params.id);
      level(prefix, 'id', 'childId', first, checkParent, ['id'], tag);

      for (const second of registry.childrenOf(first.child)) {
        if (second.child.table === 'notifications') continue;
        const prefix2 = `${prefix}/${first.child.urlNames[0]}/{childId}`;
        const checkChain = (req: Request, grant: AccessGrant) => {
          checkParent(req, grant);
          store.get(first.child, grant, req.params.childId, {}, { [first.column]: req.params.id });
        };
        level(prefix2, 'childId', 'grandchildId', second, checkChain, ['id', 'childId'], tag);
      }
    }
  }

  routes.push({
    method: 'GET', path: '/svcapi/{model}/{id}/{relationship}', auth: 'jwt', tag: 'Entities',
    summary: 'Related rows of one entity: children by URL name, or the parent (as a one-element array)',
    params: ids(['model', 'id', 'relationship']), query: FILTER_QUERY,
    responses: { 200: { description: 'entities', schema: ENTITY_LIST } },
    handler: (req) => {
      const def = registry.find(req.params.model);
      if (!def) throw notFound(`unknown model ${req.params.model}`);
      const found = registry.relationNames(def).get(req.params.relationship);
      if (!found) throw notFound(`${req.params.model} has no relationship ${req.params.relationship}`);
      const grant = req.grant;
      const entity = store.get(def, grant, req.params.id, { include: [req.params.relationship] });
      return { body: entity[req.params.relationship] as unknown[] };
    },
  });
  return routes;
}

function introspectionRoutes(store: EntityStore): Route[] {
  const { registry } = store;
  const tag = 'Entities';
  return [
    {
      method: 'GET', path: '/svcapi/_tables', auth: 'jwt', tag, summary: 'Entity table names',
      responses: { 200: { description: 'table names', schema: S.array(S.string()) } },
      handler: () => ({ body: registry.entities.map((d) => d.table) }),
    },
    {
      method: 'GET', path: '/svcapi/_schema', auth: 'jwt', tag, summary: 'Columns and foreign-key relations per table',
      responses: { 200: { description: 'schema', schema: { type: 'object', additionalProperties: true } } },
      handler: () => ({
        body: Object.fromEntries(
          registry.entities.map((def) => [
            def.table,
            {
              urlNames: def.urlNames,
              columns: [
                { name: 'id', type: def.textId ? 'string' : 'integer', primaryKey: true },
                { name: 'meta_data', type: 'json' },
                ...def.columns.filter((c) => c.kind !== 'secret' || def.table === 'users').map((c) => ({ name: c.name, type: c.kind === 'fk' ? 'integer' : c.kind })),
              ],
              relations: registry.parentsOf(def).map((r) => ({ column: r.column, references: r.parent.table, referencedColumn: 'id' })),
            },
          ]),
        ),
      }),
    },
    {
      method: 'GET', path: '/svcapi/dyn/_schema', auth: 'jwt', tag, summary: 'Relation map: belongs_to and has_many per table',
      responses: { 200: { description: 'relation map', schema: { type: 'object', additionalProperties: true } } },
      handler: () => ({
        body: {
          belongs_to: Object.fromEntries(
            registry.entities.map((def) => [def.table, registry.parentsOf(def).map((r) => ({ table: r.parent.table, foreignKey: r.column }))]),
          ),
          has_many: Object.fromEntries(
            registry.entities.map((def) => [def.table, registry.childrenOf(def).map((r) => ({ table: r.child.table, foreignKey: r.column }))]),
          ),
        },
      }),
    },
  ];
}
