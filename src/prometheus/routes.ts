// Prometheus' HTTP query API (WIRE.md part 3 "Prometheus compatibility"): instant and range
// queries, series, label names and values, metadata and build information, GET and POST form,
// answering `{"status":"success","data":…}` or `{"status":"error","errorType","error"}` with
// Prometheus' status codes (400 bad_data, 422 execution, 503 timeout). Credentials as the
// InfluxDB routes take them (Bearer or Token with a JWT or an API key, Basic, `u`/`p`): Grafana's
// datasource and promtool send Basic or a header.

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import type { InfluxCredentials } from '../ingest/api.js';
import type { Reply } from '../http/route.js';
import { get, METRIC_NAME } from './labels.js';
import { typeOf, type Expr, type LabelMatcher } from './promql/ast.js';
import { evaluate } from './promql/engine.js';
import { parseDuration, parsePromQL, PromQLParseError } from './promql/parse.js';
import { PromQLError, type ErrorType } from './promql/values.js';
import { instantData, metricJson, rangeData } from './results.js';
import { groupedWindows, type CatalogSeries, type SeriesSource } from './series-source.js';

const FORM = 'application/x-www-form-urlencoded';
const TAG = 'Prometheus';
const CHUNK_BYTES = 64 * 1024;
/** Prometheus refuses range queries of more points than this per series. */
const MAX_POINTS_PER_SERIES = 11_000;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const STATUS_OF: Record<ErrorType, number> = { bad_data: 400, execution: 422, timeout: 503, canceled: 503, internal: 500 };
/** The Prometheus release whose API and PromQL semantics the service follows. */
export const PROMETHEUS_VERSION = '2.42.0';

export interface PromSettings {
  maxSamples: number;
  timeoutMs: number;
}

function fail(errorType: ErrorType, error: string): Reply {
  return { status: STATUS_OF[errorType], body: { status: 'error', errorType, error } };
}

class BadParameter extends Error {}

function badParameter(name: string, message: string): BadParameter {
  return new BadParameter(`invalid parameter ${JSON.stringify(name)}: ${message}`);
}

/** The parameters of a GET (query string) or POST (form body, URL parameters count too); repeated keys as arrays. */
function paramsOf(req: Request): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const add = (k: string, v: unknown) => {
    const list = (out[k] ??= []);
    if (Array.isArray(v)) list.push(...v.map(String));
    else if (v !== undefined) list.push(String(v));
  };
  for (const [k, v] of Object.entries(req.query)) add(k, v);
  if (req.method === 'POST' && req.rawBody && req.rawBody.length > 0) {
    for (const [k, v] of new URLSearchParams(Buffer.from(req.rawBody).toString('utf8'))) add(k, v);
  }
  return out;
}

function one(params: Record<string, string[]>, name: string): string | undefined {
  return params[name]?.[0];
}

/** Seconds as a decimal number (the times and durations of the parameters). */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** A time as Prometheus reads it: unix seconds with decimals (ms kept), or RFC 3339. */
export function parseTime(text: string, name: string): number {
  if (DECIMAL.test(text)) {
    const seconds = Number(text);
    const whole = Math.trunc(seconds);
    return whole * 1000 + Math.round((seconds - whole) * 1000);
  }
  if (RFC3339.test(text)) {
    const ms = Date.parse(text);
    if (Number.isFinite(ms)) return ms;
  }
  throw badParameter(name, `cannot parse ${JSON.stringify(text)} to a valid timestamp`);
}

/** A duration parameter: seconds with decimals, or a PromQL duration (`5m`, `1h30m`). */
function durationParam(text: string, name: string): number {
  if (DECIMAL.test(text)) return Math.round(Number(text) * 1000);
  try {
    return parseDuration(text);
  } catch {
    throw badParameter(name, `cannot parse ${JSON.stringify(text)} to a valid duration`);
  }
}

function parseQueryParam(text: string | undefined): Expr {
  try {
    return parsePromQL(text ?? '');
  } catch (err) {
    if (err instanceof PromQLParseError) throw badParameter('query', err.message);
    throw err;
  }
}

const TYPE_NAMES = { scalar: 'scalar', vector: 'instant vector', matrix: 'range vector', string: 'string' } as const;

/** The selectors of `match[]`: each must be a vector selector. */
function matchSelectors(values: string[] | undefined, required: boolean): LabelMatcher[][] | null {
  if (!values || values.length === 0) {
    if (required) throw new BadParameter('no match[] parameter provided');
    return null;
  }
  return values.map((text) => {
    let expr: Expr;
    try {
      expr = parsePromQL(text);
    } catch (err) {
      if (err instanceof PromQLParseError) throw badParameter('match[]', err.message);
      throw err;
    }
    if (expr.kind !== 'vectorSelector') throw badParameter('match[]', `1:1: parse error: expected type instant vector selector, got ${TYPE_NAMES[typeOf(expr)]}`);
    return expr.matchers;
  });
}

export function prometheusRoutes(source: SeriesSource, credentials: InfluxCredentials, settings: PromSettings, now: () => number): Route[] {
  const authenticate = (src: Parameters<NonNullable<Route['authenticate']>>[0]) => credentials.authenticate(src);

  /** Runs `work`, turning PromQL and parameter errors into Prometheus' error answers. */
  const guarded = async (work: () => Promise<Reply>): Promise<Reply> => {
    try {
      return await work();
    } catch (err) {
      if (err instanceof BadParameter) return fail('bad_data', err.message);
      if (err instanceof PromQLError) return fail(err.errorType, err.message);
      throw err;
    }
  };

  const success = (pieces: Iterable<string>): Reply => ({
    status: 200,
    contentType: 'application/json',
    stream: async (out) => {
      let buffer = '{"status":"success","data":';
      for (const piece of pieces) {
        buffer += piece;
        if (buffer.length >= CHUNK_BYTES) {
          if (out.aborted) return;
          await out.write(buffer);
          buffer = '';
        }
      }
      await out.write(`${buffer}}`);
    },
  });

  const query = (req: Request, range: boolean): Promise<Reply> =>
    guarded(async () => {
      const params = paramsOf(req);
      const expr = parseQueryParam(one(params, 'query'));
      let start: number;
      let end: number;
      let step: number;
      if (range) {
        start = parseTime(one(params, 'start') ?? '', 'start');
        end = parseTime(one(params, 'end') ?? '', 'end');
        if (end < start) throw badParameter('end', 'end timestamp must not be before start time');
        step = durationParam(one(params, 'step') ?? '', 'step');
        if (step <= 0) throw badParameter('step', 'zero or negative query resolution step widths are not accepted. Try a positive integer');
        if ((end - start) / step > MAX_POINTS_PER_SERIES) {
          throw new BadParameter('exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)');
        }
        const type = typeOf(expr);
        if (type !== 'scalar' && type !== 'vector') throw new BadParameter(`invalid expression type ${JSON.stringify(TYPE_NAMES[type])} for range query, must be Scalar or instant Vector`);
      } else {
        const at = one(params, 'time');
        start = end = at === undefined || at === '' ? now() : parseTime(at, 'time');
        step = 1;
      }
      const timeoutText = one(params, 'timeout');
      const timeout = Math.min(settings.timeoutMs, timeoutText ? durationParam(timeoutText, 'timeout') : Infinity);
      const controller = new AbortController();
      // A timeout of 0 has expired already (Prometheus' context.WithTimeout does the same).
      if (timeout <= 0) controller.abort();
      const timer = setTimeout(() => controller.abort(), timeout);
      const onClose = () => controller.abort();
      req.signal.addEventListener('abort', onClose, { once: true });
      try {
        const { value, grid } = await evaluate(expr, {
          start, end, step, signal: controller.signal, maxSamples: settings.maxSamples,
          source: {
            select: async (matchers, from, to) => source.samples(await source.match(req.grant, matchers), from, to, controller.signal),
            windows: async (matchers, from, to, window) => source.samples(await source.match(req.grant, matchers), from, to, controller.signal, [window]),
            groups: async (matchers, from, to, window, op, groupOf) => groupedWindows(source, await source.match(req.grant, matchers), from, to, controller.signal, window, op, groupOf),
          },
        });
        return success(range ? rangeData(value, grid) : instantData(value, start));
      } catch (err) {
        if (controller.signal.aborted && !req.signal.aborted) throw new PromQLError('timeout', 'query timed out in expression evaluation');
        throw err;
      } finally {
        clearTimeout(timer);
        req.signal.removeEventListener('abort', onClose);
      }
    });

  /** The series matching any of `match[]` (every visible series without it). */
  const matching = async (req: Request, selectors: LabelMatcher[][] | null): Promise<CatalogSeries[]> => {
    if (selectors === null) return source.catalog(req.grant);
    const seen = new Set<CatalogSeries>();
    for (const matchers of selectors) for (const s of await source.match(req.grant, matchers)) seen.add(s);
    return [...seen];
  };

  const seriesRoute = (req: Request) =>
    guarded(async () => {
      const params = paramsOf(req);
      const selectors = matchSelectors(params['match[]'], true);
      const found = await matching(req, selectors);
      return success(['[', found.map((s) => metricJson(s.labels)).join(','), ']']);
    });

  const labelsRoute = (req: Request) =>
    guarded(async () => {
      const params = paramsOf(req);
      const names = new Set<string>();
      for (const s of await matching(req, matchSelectors(params['match[]'], false))) for (const [k] of s.labels) names.add(k);
      return success([JSON.stringify([...names].sort())]);
    });

  const valuesRoute = (req: Request) =>
    guarded(async () => {
      const name = String(req.params.name);
      if (!LABEL_NAME.test(name)) throw new BadParameter(`invalid label name: ${JSON.stringify(name)}`);
      const params = paramsOf(req);
      const values = new Set<string>();
      for (const s of await matching(req, matchSelectors(params['match[]'], false))) {
        const v = get(s.labels, name);
        if (v !== '') values.add(v);
      }
      return success([JSON.stringify([...values].sort())]);
    });

  const both = (path: string, summary: string, description: string, handler: (req: Request) => Promise<Reply>): Route[] => [
    { method: 'GET', path, auth: 'jwt', tag: TAG, summary, description, authenticate, errorShape: 'prometheus', responses: { 200: { description: '`{"status":"success","data":…}`', contentType: 'application/json' } }, handler },
    {
      method: 'POST', path, auth: 'jwt', tag: TAG, summary: `${summary} (form body)`, description, authenticate, errorShape: 'prometheus', mutates: false,
      rawBody: { contentTypes: [FORM], description: 'the parameters as application/x-www-form-urlencoded (URL parameters count too)' },
      responses: { 200: { description: 'as GET', contentType: 'application/json' } },
      handler,
    },
  ];

  const errors = 'Errors `{"status":"error","errorType","error"}`: 400 bad_data (parameters, parse errors), 422 execution (matching errors, promql.maxSamples, promql.maxSeries), 503 timeout (promql.timeoutMs or `timeout`).';
  return [
    ...both('/api/v1/query', 'PromQL instant query', `\`query\`, \`time\` (unix seconds or RFC 3339; default now), \`timeout\`. ${errors}`, (req) => query(req, false)),
    ...both('/api/v1/query_range', 'PromQL range query', `\`query\`, \`start\`, \`end\`, \`step\` (seconds or a duration), \`timeout\`. At most 11,000 steps. ${errors}`, (req) => query(req, true)),
    ...both('/api/v1/series', 'Series matching match[] selectors', '`match[]` (one or more series selectors), `start`, `end` (accepted; every visible series matches whatever its time range).', seriesRoute),
    ...both('/api/v1/labels', 'Label names', '`match[]` optional: only the series it selects.', labelsRoute),
    {
      method: 'GET', path: '/api/v1/label/{name}/values', auth: 'jwt', tag: TAG, summary: 'Values of one label', description: '`match[]` optional: only the series it selects.', authenticate, errorShape: 'prometheus',
      params: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      responses: { 200: { description: '`{"status":"success","data":[…]}`', contentType: 'application/json' } },
      handler: valuesRoute,
    },
    {
      method: 'GET', path: '/api/v1/metadata', auth: 'jwt', tag: TAG, summary: 'Metric metadata (none is kept: always empty)', authenticate, errorShape: 'prometheus',
      responses: { 200: { description: '`{"status":"success","data":{}}`', contentType: 'application/json' } },
      handler: () => ({ body: { status: 'success', data: {} } }),
    },
    {
      method: 'GET', path: '/api/v1/status/buildinfo', auth: 'jwt', tag: TAG, summary: 'The Prometheus release whose API is served', authenticate, errorShape: 'prometheus',
      responses: { 200: { description: 'build information', contentType: 'application/json' } },
      handler: () => ({
        body: { status: 'success', data: { version: PROMETHEUS_VERSION, revision: 'historian', branch: 'historian', buildUser: 'historian', buildDate: '', goVersion: '' } },
      }),
    },
  ];
}
