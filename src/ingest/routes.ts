// The ingest routes (WIRE.md part 2 "Ingest"): the client / tag group routes and their backfill
// twin, the InfluxDB-compatible /ingest/v2 (1.x and 2.x write paths, ping, health) for Telegraf
// and the Influx client libraries, the same 1.x write and ping at the root for clients that take
// no path prefix (WIRE.md part 3 "InfluxDB 1.x compatibility at the root": the `influx` CLI,
// Grafana), Prometheus remote write 1.0 (WIRE.md part 3 "Prometheus compatibility"), and the
// counters. The bodies go to the storage workers undecoded (service.ts).

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema, Reply } from '../http/route.js';
import type { Precision } from '../../native-free-codecs/line-protocol.js';
import { badRequest, ServiceError } from '../../shared/errors.js';
import type { IngestService } from './service.js';

const tag = 'Ingest';
const BODY_TYPES = ['application/json', 'application/msgpack', 'application/octet-stream'];
const OUTCOME: JsonSchema = S.object({ success: S.boolean(), points: S.integer(), error: S.string() }, ['success']);
/** What every ping answers: the InfluxDB release whose 1.x API the service speaks (clients read the version to pick features). */
const VERSION_HEADER = { 'x-influxdb-version': '1.8.10', 'x-influxdb-build': 'OSS' };

/** The timestamp units the line protocol routes take, with InfluxDB 1.x's short forms. */
const PRECISIONS: Record<string, Precision> = { ns: 'ns', n: 'ns', us: 'us', u: 'us', µ: 'us', ms: 'ms', s: 's' };

function precisionOf(value: unknown): Precision {
  if (value === undefined || value === '') return 'ns';
  const precision = typeof value === 'string' ? PRECISIONS[value] : undefined;
  if (!precision) throw badRequest(`precision must be one of ns, us, ms, s (or n, u), got ${JSON.stringify(value)}`);
  return precision;
}

/** A required query parameter as one string. */
function required(req: Request, name: string): string {
  const value = req.query[name];
  if (typeof value !== 'string' || value === '') throw badRequest(`query parameter ${name} is required (the ingest client id)`);
  return value;
}

export function ingestRoutes(ingest: IngestService, maxBodyBytes: number): Route[] {
  const authenticate = (source: Parameters<NonNullable<Route['authenticate']>>[0]) => ingest.credentials.authenticate(source);
  const limits = { maxBodyBytes, maxBodySetting: 'ingest.maxBodyBytes' };

  const clientRoute = (path: string, backfill: boolean, summary: string): Route => ({
    method: 'POST', path, auth: 'jwt', tag, summary, authenticate, ...limits,
    description:
      '`client_id` names an ingestconfigs row (`clientId`); the collection is its organization/site/unit with its `grid`, else the `tag_group` segment, created on first write. ' +
      'Body: any /svcapi/write body (tag keyed, columnar, msgpack, HSW1) or rows `{ts, values: {tag: number}}` (or an array of them); scope fields in the body override the client\'s. ' +
      '`Content-Encoding: gzip` accepted. Durability of /svcapi/write_fast. 404 unknown or disabled client; 403 outside your grant; 413 above ingest.maxBodyBytes (sent or decoded); 429 with Retry-After above ingest.rateLimitPerMinute per client and caller (charged after the access check).' +
      (backfill ? ' Backfilled points never open or close alarms, and these writes wait behind live ingest.' : ''),
    params: S.object({ client_id: S.string(), tag_group: S.string() }, ['client_id', 'tag_group']),
    rawBody: { contentTypes: BODY_TYPES, description: 'points to write', bufferReused: true },
    responses: { 200: { description: '`{success: true, points}` or `{success: false, error}`', schema: OUTCOME } },
    handler: async (req) => {
      const result = await ingest.write(req, { clientId: req.params.client_id, tagGroup: req.params.tag_group, backfill });
      return { body: result.success ? { success: true, points: result.points } : result };
    },
  });

  /**
   * Every 503 of a line protocol or remote write says when to come back (WIRE part 2): Telegraf,
   * the Influx clients and Prometheus wait that long before they retry. A full request ring or a
   * shard that does not answer in time says nothing of its own.
   */
  const withRetryAfter = async (write: () => Promise<Reply>): Promise<Reply> => {
    try {
      return await write();
    } catch (err) {
      if (err instanceof ServiceError && err.status === 503 && !err.headers?.['retry-after']) {
        throw new ServiceError(err.code, err.message, { headers: { ...err.headers, 'retry-after': '1' } });
      }
      throw err;
    }
  };

  /** Answers a line protocol write: 204, or 400 partial write with the good lines written. */
  const lineReply = (req: Request, clientId: string, tagGroup: string | null, v2: boolean): Promise<Reply> => withRetryAfter(async () => {
    const result = await ingest.write(req, { clientId, tagGroup, backfill: false, precision: precisionOf(req.query.precision) });
    // Influx clients read their own error shapes: a body refused whole is answered like a partial write.
    if (!result.success) return { status: 400, body: v2 ? { code: 'invalid', message: result.error } : { error: result.error } };
    const partial = result.lines?.partialError ?? null;
    if (partial !== null) return { status: 400, body: v2 ? { code: 'invalid', message: partial } : { error: partial } };
    return { status: 204 };
  });
  const lineDescription =
    'InfluxDB line protocol. Tag `<measurement>.<field>`, non-scope line tags joined in key order (`m,a=1,b=2.f`); line tags organization/site/unit/grid override the client\'s scope. ' +
    'Auth: `Authorization: Bearer|Token <jwt or API key>`, Basic email:password (or any user name and an API key), or `u`/`p` (`p` may be an API key). `Content-Encoding: gzip` accepted. 204 on success; 400 `partial write: line <n>: … dropped=<k>` with the good lines written; 413, 429 as the other ingest routes.';
  const lineBody = { contentTypes: ['text/plain'], description: 'line protocol', bufferReused: true };

  /** The 1.x write, under /ingest/v2 (Telegraf's `urls` with a path) and at the root (clients with no path prefix). */
  const v1Write = (path: string, name: string): Route => ({
    method: 'POST', path, auth: 'jwt', tag, authenticate, ...limits,
    summary: `${name}: ?db=<client_id>[&rp=<tag group>][&precision=ns|us|ms|s|n|u]`,
    description: `${lineDescription} Grid: line tag, else the client's grid, else \`rp\`, else \`default\`. Errors \`{error}\`.`,
    query: { type: 'object', properties: { db: S.string(), rp: S.string(), precision: S.string() }, additionalProperties: true },
    rawBody: lineBody,
    responses: { 204: { description: 'written' }, 400: { description: 'partial write or bad request' } },
    handler: (req) => lineReply(req, required(req, 'db'), typeof req.query.rp === 'string' && req.query.rp !== '' ? req.query.rp : null, false),
  });

  /**
   * Prometheus remote write: 204, or 400 for a body refused whole (Prometheus drops it), and a
   * Retry-After on every 503 (Prometheus retries 5xx and 429, after that long when it is told).
   */
  const remoteWrite = (req: Request): Promise<Reply> => withRetryAfter(async () => {
    const result = await ingest.write(req, { clientId: required(req, 'db'), tagGroup: null, backfill: false, remoteWrite: true });
    return result.success ? { status: 204 } : { status: 400, body: { error: result.error } };
  });

  /** InfluxDB's ping (HEAD too, as every GET route): public, as InfluxDB's is. */
  const ping = (path: string): Route => ({
    method: 'GET', path, auth: 'public', tag,
    summary: 'InfluxDB ping: 204 with X-Influxdb-Version and X-Influxdb-Build',
    responses: { 204: { description: 'alive' } },
    handler: () => ({ status: 204, headers: VERSION_HEADER }),
  });

  return [
    clientRoute('/ingest/{client_id}/{tag_group}', false, 'Write points for an ingest client and tag group'),
    clientRoute('/ingest/backfill/{client_id}/{tag_group}', true, 'Write historical points (no alarms; yields to live ingest)'),
    v1Write('/ingest/v2/write', 'InfluxDB 1.x write'),
    v1Write('/write', 'InfluxDB 1.x write at the root (the same as /ingest/v2/write)'),
    {
      method: 'POST', path: '/ingest/v2/api/v2/write', auth: 'jwt', tag, authenticate, ...limits, errorShape: 'influx2',
      summary: 'InfluxDB 2.x write: ?bucket=<client_id>[/<tag group>][&org=…][&precision=ns|us|ms|s]',
      description: `${lineDescription} Grid: line tag, else the client's grid, else the bucket's part after \`/\`, else \`default\`. Errors \`{code, message}\` as InfluxDB 2.`,
      query: { type: 'object', properties: { bucket: S.string(), org: S.string(), precision: S.string() }, additionalProperties: true },
      rawBody: lineBody,
      responses: { 204: { description: 'written' }, 400: { description: 'partial write or bad request' } },
      handler: (req) => {
        const bucket = required(req, 'bucket');
        const slash = bucket.indexOf('/');
        return slash < 0 ? lineReply(req, bucket, null, true) : lineReply(req, bucket.slice(0, slash), bucket.slice(slash + 1) || null, true);
      },
    },
    {
      method: 'POST', path: '/api/v1/write', auth: 'jwt', tag, authenticate, ...limits,
      summary: 'Prometheus remote write 1.0: ?db=<client_id>',
      description:
        'Body: a snappy-compressed protobuf `WriteRequest` (`Content-Type: application/x-protobuf`, `Content-Encoding: snappy`, both required: 415 otherwise). ' +
        'Each series goes to the collection its labels organization/site/unit/grid name over the client\'s scope (grid: the client\'s, else `default`), as the tag `<__name__>{<k>="<v>",…}` (keys sorted, scope labels and `__name__` out of the braces), with its labels. ' +
        'Values as sent: NaN, ±Inf and the stale marker are stored bit for bit. Credentials as /ingest/v2 (`authorization: {credentials: <API key or JWT>}` in Prometheus). ' +
        '204 on success; 400 `{error}` for a body that does not decode (Prometheus drops it); 403 outside your grant; 413 above ingest.maxBodyBytes (sent or decompressed, refused from the snappy preamble); 429 and 503 with Retry-After (Prometheus retries).',
      query: { type: 'object', properties: { db: S.string() }, additionalProperties: true },
      rawBody: { contentTypes: ['application/x-protobuf'], description: 'snappy-compressed prompb.WriteRequest', bufferReused: true },
      responses: { 204: { description: 'written' }, 400: { description: 'the body does not decode, or cannot be stored' } },
      handler: remoteWrite,
    },
    ping('/ingest/v2/ping'),
    ping('/ping'),
    {
      method: 'GET', path: '/ingest/v2/health', auth: 'public', tag,
      summary: 'InfluxDB 2 health',
      responses: { 200: { description: 'ready', schema: S.object({ name: S.string(), message: S.string(), status: S.string(), version: S.string(), checks: S.array({}) }, ['status']) } },
      handler: () => ({ body: { name: 'historian', message: 'ready for queries and writes', status: 'pass', checks: [], version: VERSION_HEADER['x-influxdb-version'] } }),
    },
    {
      method: 'GET', path: '/svcapi/ingest/stats', auth: 'jwt', tag,
      summary: 'Ingest counters per client and tag group since start',
      description: 'Clients whose unit you can reach (all for admins).',
      responses: {
        200: {
          description: 'counters',
          schema: S.object({
            since: S.integer(),
            clients: S.array(S.object({
              clientId: S.string(), tagGroup: S.string(), requests: S.integer(), points: S.integer(), rejectedLines: S.integer(),
              skippedStringFields: S.integer(), rejectedRequests: S.integer(), rateLimited: S.integer(), lastSeen: { type: ['integer', 'null'] },
            })),
          }, ['since', 'clients']),
        },
      },
      handler: (req) => ({ body: { since: ingest.stats.since, clients: ingest.visibleStats(req) } }),
    },
  ];
}
