// The monitor routes (SPEC "Monitoring", WIRE part 2 "Monitor"). Reads need a token, changes a
// read-write or admin token (WIRE "Access to monitor and backup routes"), the global on/off
// switch an admin token; with the setting
// compat.openMonitorAndBackup they need none and run with an admin's reach, as the legacy build.

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { AuthLevel, JsonSchema } from '../http/route.js';
import type { AccessGrant } from '../meta/access-grant.js';
import { badRequest } from '../../shared/errors.js';
import { EVENT_STATUSES, type MonitorService } from './service.js';

const OK = S.object({ ok: S.boolean() }, ['ok']);
const ANY: JsonSchema = { type: 'object', additionalProperties: true };
const ANY_LIST: JsonSchema = { type: 'array', items: ANY };
const ID = S.object({ id: S.string() }, ['id']);
const EVENT_ID = S.object({ event_id: S.string() }, ['event_id']);
const TICK_RATE = S.integer({ minimum: 100, description: 'milliseconds between ticks (at least 100)' });
const EVENTS = S.object({ events: ANY_LIST, total_count: S.integer(), has_more: S.boolean() }, ['events', 'total_count', 'has_more']);
const int64 = (description: string) => S.integer({ description });

/**
 * `open`: compat.openMonitorAndBackup, the routes answer without a token, with `everything` (an
 * admin's reach) for a caller who sent none.
 */
export function monitorRoutes(monitor: MonitorService, open: boolean, everything: AccessGrant): Route[] {
  const grantOf = (req: Request) => (req.user ? req.grant : everything);
  const auth: AuthLevel = open ? 'public' : 'jwt';
  const tag = 'Monitoring';
  const base = '/svcapi/monitor';
  const route = (def: Omit<Route, 'auth' | 'tag'> & { auth?: AuthLevel }): Route => ({ auth, tag, ...def });

  return [
    route({
      method: 'GET', path: `${base}/alarm/snapshot`, summary: 'The latest evaluation of every monitored collection',
      responses: { 200: { description: 'snapshot', schema: ANY } },
      handler: (req) => ({ body: monitor.snapshot(grantOf(req)) }),
    }),
    route({
      method: 'GET', path: `${base}/alarm/summary`, summary: 'Counts of the latest tick', query: S.object({ collection_id: S.string() }),
      responses: { 200: { description: 'summary', schema: S.object({ collection_count: S.integer(), triggered_tags: S.integer(), timestamp_ms: S.integer(), tick_number: S.integer(), evaluation_duration_ms: { type: 'number' } }) } },
      handler: (req) => ({ body: monitor.summary(grantOf(req), req.query.collection_id as string | undefined) }),
    }),
    route({
      method: 'GET', path: `${base}/alarm/triggered-only`, summary: 'The snapshot of collections with at least one triggered tag', query: S.object({ collection_id: S.string() }),
      responses: { 200: { description: 'snapshot', schema: ANY } },
      handler: (req) => ({ body: monitor.snapshot(grantOf(req), true, req.query.collection_id as string | undefined) }),
    }),
    route({
      method: 'GET', path: `${base}/alarm/events`, summary: 'Alarm events, newest first',
      query: S.object({
        from_ms: int64('started at or after (epoch ms)'), to_ms: int64('started at or before (epoch ms)'), collection_id: S.string(),
        tag_index: S.integer({ minimum: 0 }), rule_id: S.string(), status: S.string({ enum: [...EVENT_STATUSES] }),
        limit: S.integer({ minimum: 1, maximum: 1000, default: 100 }), offset: S.integer({ minimum: 0, default: 0 }),
      }),
      responses: { 200: { description: 'a page of events', schema: EVENTS } },
      handler: (req) => ({ body: monitor.events(grantOf(req), req.query as never) }),
    }),
    route({
      method: 'GET', path: `${base}/alarm/events/active`, summary: 'Unresolved (active or acknowledged) events',
      responses: { 200: { description: 'events', schema: S.object({ events: ANY_LIST, total_count: S.integer() }, ['events', 'total_count']) } },
      handler: (req) => ({ body: monitor.activeEvents(grantOf(req)) }),
    }),
    route({
      method: 'GET', path: `${base}/alarm/events/stats`, summary: 'Event statistics over a time range',
      query: S.object({ from_ms: int64('from (epoch ms)'), to_ms: int64('to (epoch ms)') }, ['from_ms', 'to_ms']),
      responses: { 200: { description: 'statistics', schema: ANY } },
      handler: (req) => {
        const { from_ms, to_ms } = req.query as { from_ms: number; to_ms: number };
        if (from_ms > to_ms) throw badRequest('from_ms must not be after to_ms');
        return { body: monitor.stats(grantOf(req), from_ms, to_ms) };
      },
    }),
    route({
      method: 'DELETE', path: `${base}/alarm/events/cleanup`, summary: 'Delete resolved events that started before older_than_ms',
      body: S.object({ older_than_ms: int64('epoch-ms cut-off') }, ['older_than_ms'], { additionalProperties: false }),
      responses: { 200: { description: 'deleted', schema: S.object({ deleted_count: S.integer() }, ['deleted_count']) } },
      handler: (req) => ({ body: { deleted_count: monitor.cleanup(grantOf(req), (req.body as { older_than_ms: number }).older_than_ms) } }),
    }),
    route({
      method: 'GET', path: `${base}/alarm/events/{event_id}`, params: EVENT_ID, summary: 'One alarm event',
      responses: { 200: { description: 'event', schema: ANY }, 404: { description: 'unknown event' } },
      handler: (req) => ({ body: monitor.event(grantOf(req), req.params.event_id) }),
    }),
    route({
      method: 'POST', path: `${base}/alarm/events/{event_id}/ack`, params: EVENT_ID, summary: 'Acknowledge an active event (extension)',
      responses: { 200: { description: 'acknowledged', schema: OK }, 404: { description: 'unknown event' }, 409: { description: 'already resolved' } },
      handler: (req) => {
        monitor.ack(grantOf(req), req.params.event_id, req.user?.sub ?? 'anonymous');
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'POST', path: `${base}/rule`, summary: 'Create an alarm rule', body: ANY,
      responses: { 201: { description: 'created', schema: S.object({ id: S.string() }, ['id']) } },
      handler: async (req) => ({ status: 201, body: await monitor.createRule(grantOf(req), req.body) }),
    }),
    route({
      method: 'GET', path: `${base}/rule`, summary: 'Alarm rules', query: S.object({ collection_id: S.string(), tag_index: S.integer({ minimum: 0 }), enabled: S.boolean() }),
      responses: { 200: { description: 'rules', schema: ANY_LIST } },
      handler: (req) => ({ body: monitor.rules(grantOf(req), req.query as never) }),
    }),
    route({
      method: 'GET', path: `${base}/rule/{id}`, params: ID, summary: 'One alarm rule',
      responses: { 200: { description: 'rule', schema: ANY }, 404: { description: 'unknown rule' } },
      handler: (req) => ({ body: monitor.rule(grantOf(req), req.params.id) }),
    }),
    route({
      method: 'PUT', path: `${base}/rule/{id}`, params: ID, body: ANY, summary: 'Change an alarm rule (fields not given keep their value)',
      responses: { 200: { description: 'changed', schema: OK }, 404: { description: 'unknown rule' } },
      handler: async (req) => {
        await monitor.updateRule(grantOf(req), req.params.id, req.body);
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'DELETE', path: `${base}/rule/{id}`, params: ID, summary: 'Delete an alarm rule (an event it holds open is resolved)',
      responses: { 200: { description: 'deleted', schema: OK }, 404: { description: 'unknown rule' } },
      handler: (req) => {
        monitor.deleteRule(grantOf(req), req.params.id);
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'GET', path: `${base}/config`, summary: 'Whether the monitor runs',
      responses: { 200: { description: 'config', schema: S.object({ enabled: S.boolean() }, ['enabled']) } },
      handler: () => ({ body: monitor.config() }),
    }),
    // Global: it switches alarms off for every tenant, so only an admin may (a read-write caller
    // changes only what lies inside its grant). compat.openMonitorAndBackup keeps the legacy hole.
    route({
      auth: open ? 'public' : 'admin',
      method: 'PUT', path: `${base}/config`, summary: 'Turn the monitor on or off (admin: it affects every tenant)', body: S.object({ enabled: S.boolean() }, ['enabled'], { additionalProperties: false }),
      responses: { 200: { description: 'done', schema: OK } },
      handler: (req) => {
        monitor.setEnabled((req.body as { enabled: boolean }).enabled);
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'GET', path: `${base}/collections`, summary: 'Collections and whether each is monitored',
      responses: { 200: { description: 'collections', schema: { type: 'array', items: S.object({ id: S.string(), enabled: S.boolean(), description: S.string(), tick_rate_ms: S.integer() }) } } },
      handler: (req) => ({ body: monitor.collections(grantOf(req)) }),
    }),
    route({
      method: 'PUT', path: `${base}/collections/{id}/enable`, params: ID, body: S.object({ tick_rate_ms: TICK_RATE }, [], { additionalProperties: false }),
      summary: 'Monitor a collection (id URL-encoded), optionally at a tick rate',
      responses: { 200: { description: 'done', schema: OK }, 404: { description: 'unknown collection' } },
      handler: (req) => {
        monitor.setCollection(grantOf(req), req.params.id, { enabled: true, tickRateMs: (req.body as { tick_rate_ms?: number } | undefined)?.tick_rate_ms });
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'PUT', path: `${base}/collections/{id}/disable`, params: ID, summary: 'Stop monitoring a collection',
      responses: { 200: { description: 'done', schema: OK }, 404: { description: 'unknown collection' } },
      handler: (req) => {
        monitor.setCollection(grantOf(req), req.params.id, { enabled: false });
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'PUT', path: `${base}/collections/{id}/tick-rate`, params: ID, body: S.object({ tick_rate_ms: TICK_RATE }, ['tick_rate_ms'], { additionalProperties: false }),
      summary: "Set a collection's tick rate",
      responses: { 200: { description: 'done', schema: OK }, 404: { description: 'unknown collection' } },
      handler: (req) => {
        monitor.setCollection(grantOf(req), req.params.id, { tickRateMs: (req.body as { tick_rate_ms: number }).tick_rate_ms });
        return { body: { ok: true } };
      },
    }),
    route({
      method: 'GET', path: `${base}/status`, summary: 'Monitor status',
      responses: { 200: { description: 'status', schema: S.object({ enabled: S.boolean(), collection_count: S.integer(), rule_count: S.integer(), last_snapshot_ms: S.integer(), tick_number: S.integer() }) } },
      handler: () => ({ body: monitor.status() }),
    }),
  ];
}
