// /svcapi/connector/* (SPEC "Asset-hierarchy connector", WIRE.md part 2): browsing a PI Web API
// and backfilling recorded values. Every body carries a connection (its fields, admins only, or
// a saved `connection_id`).

import type { Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { ConnectorService } from './service.js';

const CONNECTION_PROPS: Record<string, JsonSchema> = {
  connection_id: { type: ['string', 'integer'] },
  base_url: S.string(),
  auth: S.string({ enum: ['basic', 'bearer', 'anonymous'] }),
  username: S.string(),
  password: S.string(),
  token: S.string(),
  verify_tls: S.boolean(),
  ca_pem: S.string(),
  timeout_ms: S.integer(),
};
const ITEMS: JsonSchema = S.object({ items: S.array({ type: 'object', additionalProperties: true }), total: S.integer() }, ['items', 'total']);

export function connectorRoutes(connector: ConnectorService): Route[] {
  const tag = 'Connector';
  const browse = (path: string, summary: string, extra: Record<string, JsonSchema>, required: string[], run: (body: Record<string, unknown>, grant: AccessGrant) => Promise<unknown>): Route => ({
    method: 'POST', path, auth: 'jwt', tag, mutates: false, summary,
    description: 'Connection: `connection_id` of a saved /svcapi/connections row, or its fields (admins only). `{items, total}` after reading every page. 502 naming the upstream status when the PI Web API fails, times out, refuses the credentials or cannot be verified (TLS).',
    body: S.object({ ...CONNECTION_PROPS, ...extra }, required, { additionalProperties: false }),
    responses: { 200: { description: 'items', schema: ITEMS }, 502: { description: 'upstream failure' } },
    handler: async (req) => ({ body: await run(req.body as Record<string, unknown>, req.grant) }),
  });
  return [
    browse('/svcapi/connector/list_asset_servers', 'Asset servers of a PI Web API', {}, [], (b, g) => connector.listAssetServers(b, g)),
    browse('/svcapi/connector/list_databases', 'Asset databases of an asset server', { web_id: S.string() }, ['web_id'], (b, g) => connector.listDatabases(b, g)),
    browse('/svcapi/connector/list_children', 'Child elements of a database or an element', { web_id: S.string(), is_database: S.boolean() }, ['web_id', 'is_database'], (b, g) => connector.listChildren(b, g)),
    browse('/svcapi/connector/list_attributes', 'Attributes of an element (extension)', { web_id: S.string() }, ['web_id'], (b, g) => connector.listAttributes(b, g)),
    {
      method: 'POST', path: '/svcapi/connector/backfill', auth: 'jwt', tag,
      summary: 'Copy recorded values of attributes into a collection, as a background job',
      description:
        'Body: the connection, `attributes: [{web_id, tag}]`, `organization`, `site`, `unit`, `grid`, `start`, `end` (epoch ms, inclusive). Answers `{job_id}` at once; progress in the process log. ' +
        'Values with `Good: false` or a non-numeric `Value` (digital states) are skipped and counted. Written through the backfill path (no alarms); resumed after a restart from the last written timestamp.',
      body: {
        type: 'object',
        properties: {
          ...CONNECTION_PROPS,
          attributes: S.array(S.object({ web_id: S.string(), tag: S.string() }, ['web_id', 'tag'])),
          organization: S.string(), site: S.string(), unit: S.string(), grid: S.string(), start: S.integer(), end: S.integer(),
        },
        required: ['attributes', 'organization', 'site', 'unit', 'grid', 'start', 'end'],
        additionalProperties: false,
      },
      responses: { 200: { description: 'started', schema: S.object({ job_id: S.string() }, ['job_id']) } },
      handler: (req) => ({ body: connector.startBackfill(req.body as Record<string, unknown>, req.user!) }),
    },
  ];
}
