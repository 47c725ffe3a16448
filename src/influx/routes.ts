// The InfluxDB 1.x query endpoint at the root (WIRE.md part 3): `GET|POST /query?db=&q=&epoch=`
// for the `influx` CLI and Grafana's InfluxDB datasource. Credentials as for ingest (Bearer or
// Token with a JWT or an API key, Basic, `u`/`p`). A query that does not parse is a 400 with
// InfluxDB's message; a statement that fails answers its error inside the results (HTTP 200).

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import type { InfluxCredentials } from '../ingest/api.js';
import type { Reply } from '../http/route.js';
import { badRequest } from '../../shared/errors.js';
import type { Executor } from './executor.js';
import { InfluxQLParseError, parseQuery } from './influxql/parser.js';
import { epochOf, RESULTS_HEAD, RESULTS_TAIL, statementBytes } from './results.js';

const VERSION_HEADERS = { 'x-influxdb-version': '1.8.10', 'x-influxdb-build': 'OSS' };
const FORM = 'application/x-www-form-urlencoded';
/** Bytes handed to the socket at a time, so a slow reader paces the answer. */
const CHUNK_BYTES = 64 * 1024;

export function influxRoutes(executor: Executor, credentials: InfluxCredentials, now: () => number): Route[] {
  const authenticate = (source: Parameters<NonNullable<Route['authenticate']>>[0]) => credentials.authenticate(source);

  const answer = async (req: Request, params: Record<string, unknown>): Promise<Reply> => {
    const q = params.q;
    if (typeof q !== 'string' || q.trim() === '') throw badRequest('missing required parameter "q"');
    const epoch = epochOf(params.epoch);
    if (epoch === undefined) throw badRequest(`epoch must be one of ns, u, µ, ms, s, m, h, got ${JSON.stringify(params.epoch)}`);
    let bound: Record<string, unknown> | undefined;
    if (typeof params.params === 'string' && params.params !== '') {
      try {
        bound = JSON.parse(params.params) as Record<string, unknown>;
      } catch (err) {
        return { status: 400, headers: VERSION_HEADERS, body: { error: `error parsing query parameters: ${(err as Error).message}` } };
      }
      if (bound === null || typeof bound !== 'object' || Array.isArray(bound)) return { status: 400, headers: VERSION_HEADERS, body: { error: 'error parsing query parameters: params must be a JSON object' } };
    }
    let statements;
    try {
      statements = parseQuery(q, { nowMs: now(), ...(bound ? { params: bound } : {}) });
    } catch (err) {
      if (err instanceof InfluxQLParseError) return { status: 400, headers: VERSION_HEADERS, body: { error: `error parsing query: ${err.message}` } };
      throw err;
    }
    // Only comments or `;`: no statement, and InfluxDB answers an empty object.
    if (statements.length === 0) return { status: 200, headers: VERSION_HEADERS, body: {} };
    const db = typeof params.db === 'string' && params.db !== '' ? params.db : null;
    const budget = { remaining: executor.requestBudgetBytes };
    const run = (i: number) => executor.run(statements[i]!, { grant: req.grant, db, signal: req.signal, budget });
    // The first statement runs before the answer starts: a refusal of the storage layer (503 while
    // a shard's worker restarts) is then an HTTP status the client can retry on, not a cut connection.
    const first = await run(0);
    // Streamed statement by statement: one statement's answer is held at a time, and a client that
    // stops reading is cut off after storage.resultStallTimeoutMs, as on the other query routes.
    return {
      status: 200,
      headers: VERSION_HEADERS,
      contentType: 'application/json',
      stream: async (out) => {
        await out.write(RESULTS_HEAD);
        for (let i = 0; i < statements.length; i++) {
          if (out.aborted) return;
          const result = i === 0 ? first : await run(i);
          if (i > 0) await out.write(',');
          const bytes = statementBytes(result, i, epoch);
          for (let at = 0; at < bytes.length; at += CHUNK_BYTES) await out.write(bytes.subarray(at, Math.min(bytes.length, at + CHUNK_BYTES)));
        }
        await out.write(RESULTS_TAIL);
      },
    };
  };

  const description =
    'InfluxDB 1.x query API (WIRE.md part 3): `db` names an ingest client or a collection id (`org/site/unit/grid`); `q` holds InfluxQL statements separated by `;` ' +
    '(SHOW DATABASES, MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, SERIES, RETENTION POLICIES; SELECT with the functions, GROUP BY, fill, ORDER BY time DESC, LIMIT/OFFSET/SLIMIT/SOFFSET); ' +
    '`epoch` ns|u|ms|s|m|h for integer times (RFC 3339 without it); `params` a JSON object of bound parameters (`$name`). Credentials: Bearer or Token (JWT or API key), Basic, `u`/`p`. A statement that fails has `error` in its result.';

  return [
    {
      method: 'GET', path: '/query', auth: 'jwt', tag: 'InfluxDB 1.x', summary: 'InfluxQL query (InfluxDB 1.x API)', description, authenticate,
      responses: { 200: { description: '`{"results": [{"statement_id", "series"?: [{"name", "tags"?, "columns", "values"}], "error"?}]}`', contentType: 'application/json' }, 400: { description: '`{"error": "error parsing query: …"}`' } },
      handler: (req) => answer(req, req.query),
    },
    {
      method: 'POST', path: '/query', auth: 'jwt', tag: 'InfluxDB 1.x', summary: 'InfluxQL query, parameters as a form body', description, authenticate, mutates: false,
      rawBody: { contentTypes: [FORM], description: 'q, db, epoch as application/x-www-form-urlencoded (URL parameters count too)' },
      responses: { 200: { description: 'as GET', contentType: 'application/json' }, 400: { description: '`{"error": "error parsing query: …"}`' } },
      handler: (req) => {
        const form = Object.fromEntries(new URLSearchParams(Buffer.from(req.rawBody ?? new Uint8Array()).toString('utf8')));
        return answer(req, { ...req.query, ...form });
      },
    },
  ];
}
