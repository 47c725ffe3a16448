// The four notification routes of the contract (create, mark read, unread count, the SSE
// stream); list, get, count, findOne, update and delete come from the generic entity routes,
// which apply the same visibility through the entity store.

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { NOTIFICATION_SEVERITIES, NOTIFICATION_SOURCES } from '../meta/entity-rules.js';
import { parseIntegerId } from '../meta/wire.js';
import { badRequest } from '../../shared/errors.js';
import type { NotificationService } from './service.js';

const idOrEmpty = { type: ['string', 'integer', 'null'] } as JsonSchema;
const CREATE_BODY: JsonSchema = S.object(
  {
    severity: S.string({ enum: [...NOTIFICATION_SEVERITIES] }),
    source: S.string({ enum: [...NOTIFICATION_SOURCES] }),
    title: S.string({ description: 'at most 120 bytes (UTF-8)' }),
    body: S.string({ description: 'at most 2048 bytes (UTF-8)' }),
    userId: { ...idOrEmpty, description: "recipient: an email, or a user's id; null or absent for a broadcast" },
    orgsId: { ...idOrEmpty, description: 'scope of a broadcast' },
    sitesId: { ...idOrEmpty, description: 'scope of a broadcast' },
    unitsId: { ...idOrEmpty, description: 'scope of a broadcast' },
    link: { type: ['string', 'null'] },
    redirect: S.boolean(),
    payload: { type: ['object', 'null'], description: 'at most 16384 bytes of JSON' },
    sourceRef: { type: ['string', 'null'] },
    expiresAt: { type: ['integer', 'null'], description: 'epoch ms, not in the past' },
  },
  ['severity', 'source', 'title', 'body'],
  { additionalProperties: false },
);
const NOTIFICATION: JsonSchema = { type: 'object', additionalProperties: true };
const ID_PARAMS = S.object({ id: S.string({ description: 'notification id' }) }, ['id']);
const STREAM_QUERY = S.object({
  access_token: S.string({ description: 'the token, for clients that cannot set headers (EventSource); never logged' }),
  lastEventId: S.string({ description: 'Last-Event-ID for clients that cannot set headers' }),
});

export function notificationRoutes(notifications: NotificationService): Route[] {
  const tag = 'Notifications';
  return [
    {
      method: 'POST', path: '/svcapi/notifications', auth: 'admin', tag,
      summary: 'Create a notification (admin); it reaches the connected streams at once',
      body: CREATE_BODY,
      responses: { 201: { description: 'the stored notification', schema: NOTIFICATION } },
      handler: (req) => ({ status: 201, body: notifications.create(req.grant, req.body as Record<string, unknown>) }),
    },
    {
      method: 'POST', path: '/svcapi/notifications/{id}/read', auth: 'jwt', tag, params: ID_PARAMS,
      // Reading is not changing data: a read-only account marks its notifications read too.
      mutates: false,
      summary: 'Mark a notification read (the first readAt is kept)',
      responses: {
        200: { description: 'read', schema: S.object({ id: S.string(), readAt: S.integer() }, ['id', 'readAt']) },
        404: { description: 'absent or not visible to the caller (not distinguished)' },
      },
      handler: (req) => ({ body: notifications.markRead(req.grant, req.params.id) }),
    },
    {
      method: 'GET', path: '/svcapi/notifications/unread-count', auth: 'jwt', tag,
      summary: 'How many notifications the caller can see are unread',
      responses: { 200: { description: 'count', schema: S.object({ count: S.integer() }, ['count']) } },
      handler: (req) => ({ body: { count: notifications.unreadCount(req.grant) } }),
    },
    {
      method: 'GET', path: '/svcapi/notifications/stream', auth: 'jwt', tag, query: STREAM_QUERY,
      tokenInQuery: true,
      longLived: true,
      summary: 'Server-Sent Events: replay, replay-complete, then live notifications',
      description:
        'Token in the Authorization header or the access_token query parameter. Replays the visible rows not yet delivered to the caller (or those after Last-Event-ID / lastEventId), oldest first, at most 100, then `replay-complete`, then live `notification` events; a keepalive comment every notifications.keepaliveSeconds.',
      responses: { 200: { description: 'event stream', contentType: 'text/event-stream' } },
      handler: (req) => {
        const lastEventId = lastEventIdOf(req);
        const token = req.headers.authorization ?? (req.query.access_token as string);
        return {
          contentType: 'text/event-stream',
          headers: { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
          stream: (out) => notifications.hub.serve(out, { claims: req.user!, token, lastEventId, signal: req.signal }),
        };
      },
    },
  ];
}

/** Last-Event-ID (header) or lastEventId (query, for clients that cannot set headers): a notification id. */
function lastEventIdOf(req: Request): number | null {
  const header = req.headers['last-event-id'];
  const raw = header !== undefined && header !== '' ? header : req.query.lastEventId;
  if (raw === undefined || raw === '') return null;
  const name = header !== undefined && header !== '' ? 'Last-Event-ID' : 'lastEventId';
  if (typeof raw !== 'string') throw badRequest(`${name} must be given once`);
  // A notification id, read as every entity id is.
  return parseIntegerId(raw.trim(), name);
}
