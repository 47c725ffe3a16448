// /svcapi/collectors (WIRE.md part 3 "Plant collectors"): the generic CRUD shape (list, get,
// create 200, update by PUT merging fields, delete), a collector's status, and the service's OPC UA
// application certificate. Reads for any token within the collector's unit; changes for read-write
// and admin (read-only callers get 403 from the router).

import { ServiceError } from '../../shared/errors.js';
import type { Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import type { DriverEnvironment, CollectorDriver } from './driver.js';
import type { CollectorService } from './service.js';

const FREE: JsonSchema = { type: 'object', additionalProperties: true };
const COLLECTOR = S.object(
  {
    id: S.string(), name: S.string(), kind: S.string(), enabled: S.boolean(),
    organization: S.string(), site: S.string(), unit: S.string(), grid: S.string(),
    connection: FREE, items: S.array(FREE),
  },
  ['id', 'name', 'kind', 'enabled', 'organization', 'site', 'unit', 'grid', 'connection', 'items'],
);
const STATUS = S.object(
  {
    state: S.string({ enum: ['connecting', 'connected', 'reconnecting', 'failed', 'disabled'] }), since_ms: S.integer(), error: S.string(),
    items: S.integer(), values_stored: S.integer(), values_skipped: S.integer(), last_value_ms: { type: ['integer', 'null'] },
  },
  ['state', 'since_ms', 'items', 'values_stored', 'values_skipped', 'last_value_ms'],
);
const ID = S.object({ id: S.string() }, ['id']);
const BODY_TEXT =
  '`{ name, kind: "opcua"|"mqtt", enabled?, organization, site, unit, grid, connection: {…}, items: […] }` (WIRE.md part 3 "Plant collectors"); ' +
  'secrets in `connection` (`password`, `private_key_pem`) are stored sealed and answered as `"********"` (sending that back keeps the stored one). ' +
  'A bad field is 400 naming it; a unit outside your grant 403.';

export function collectorRoutes(service: CollectorService, drivers: ReadonlyMap<string, CollectorDriver>, env: DriverEnvironment): Route[] {
  const tag = 'Collectors';
  return [
    {
      method: 'GET', path: '/svcapi/collectors', auth: 'jwt', tag,
      summary: 'Collectors within your grant',
      responses: { 200: { description: 'collectors', schema: S.array(COLLECTOR) } },
      handler: (req) => ({ body: service.list(req.grant) }),
    },
    {
      method: 'POST', path: '/svcapi/collectors', auth: 'jwt', tag, body: FREE,
      summary: 'Save a collector (it starts at once when enabled)', description: BODY_TEXT,
      responses: { 200: { description: 'the saved collector', schema: COLLECTOR }, 400: { description: 'a bad field' }, 403: { description: 'outside your grant, or read-only' } },
      handler: async (req) => ({ body: await service.create(req.user!, req.grant, req.body as Record<string, unknown>) }),
    },
    {
      method: 'GET', path: '/svcapi/collectors/opcua/certificate', auth: 'jwt', tag,
      summary: "The service's OPC UA application certificate (PEM), for an OPC UA server's trust list",
      responses: { 200: { description: 'PEM certificate', contentType: 'application/x-pem-file' } },
      handler: () => {
        const pem = drivers.get('opcua')?.applicationCertificatePem?.(env);
        if (!pem) throw new ServiceError('NOT_IMPLEMENTED', 'this build has no OPC UA collector');
        return { contentType: 'application/x-pem-file', body: pem, headers: { 'content-disposition': 'attachment; filename="historian-opcua.crt"' } };
      },
    },
    {
      method: 'GET', path: '/svcapi/collectors/{id}', auth: 'jwt', tag, params: ID,
      summary: 'One collector',
      responses: { 200: { description: 'the collector', schema: COLLECTOR }, 404: { description: 'missing or outside your grant' } },
      handler: (req) => ({ body: service.get(req.grant, req.params.id!) }),
    },
    {
      method: 'PUT', path: '/svcapi/collectors/{id}', auth: 'jwt', tag, params: ID, body: FREE,
      summary: 'Change a collector (fields given replace theirs; it restarts)', description: BODY_TEXT,
      responses: { 200: { description: 'the saved collector', schema: COLLECTOR }, 400: { description: 'a bad field' }, 404: { description: 'missing or outside your grant' } },
      handler: async (req) => ({ body: await service.update(req.user!, req.grant, req.params.id!, req.body as Record<string, unknown>) }),
    },
    {
      method: 'DELETE', path: '/svcapi/collectors/{id}', auth: 'jwt', tag, params: ID,
      summary: 'Stop and delete a collector',
      responses: { 200: { description: 'deleted', schema: S.object({ success: S.boolean() }, ['success']) }, 404: { description: 'missing or outside your grant' } },
      handler: async (req) => {
        await service.remove(req.grant, req.params.id!);
        return { body: { success: true } };
      },
    },
    {
      method: 'GET', path: '/svcapi/collectors/{id}/status', auth: 'jwt', tag, params: ID,
      summary: "A collector's state and counters on this node",
      description: '`state` is `connecting`, `connected`, `reconnecting`, `failed` (with `error`) or `disabled` (not enabled, or this node does not lead).',
      responses: { 200: { description: 'status', schema: STATUS }, 404: { description: 'missing or outside your grant' } },
      handler: (req) => ({ body: service.status(req.grant, req.params.id!) }),
    },
  ];
}
