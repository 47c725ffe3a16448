// Requests to /ingest/v2 shaped the way InfluxDB writers send them: the 1.x and 2.x write
// paths, Content-Length or chunked bodies, gzip, and replays of Telegraf's `influxdb` and
// `influxdb_v2` outputs (Telegraf itself is not installable here). The replays follow
// Telegraf's plugins/outputs/influxdb{,_v2}/http.go: URL and query parameter order as Go's
// url.Values.Encode writes them, the headers it sets, a gzip body of unknown length (so Go
// sends it chunked), one line per metric in its serializer's format, and on 413 the
// influxdb_v2 output's single split of the batch into two halves.

import https from 'node:https';
import zlib from 'node:zlib';
import type { HttpResult, TestService } from './harness.js';
import { goFloatText } from '../../native-free-codecs/number-text.js';

export type ApiForm = '1.x' | '2.x';

/** `/ingest/v2/write?db=…` (1.x) or `/ingest/v2/api/v2/write?bucket=…` (2.x), extra parameters in the order given. */
export function writePath(form: ApiForm, target: string | null, params: Record<string, string> = {}): string {
  const query = new URLSearchParams();
  if (target !== null) query.set(form === '1.x' ? 'db' : 'bucket', target);
  for (const [k, v] of Object.entries(params)) query.set(k, v);
  const qs = query.toString();
  return `${form === '1.x' ? '/ingest/v2/write' : '/ingest/v2/api/v2/write'}${qs ? `?${qs}` : ''}`;
}

export const basicAuth = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export interface SendOptions {
  headers?: Record<string, string>;
  /** No Content-Length: the body goes out in chunks of this many bytes (Transfer-Encoding: chunked). */
  chunkBytes?: number;
}

/**
 * One HTTPS request trusting the service's CA. Unlike the harness it can send a body of
 * unknown length, and it keeps the answer when the server replies before the whole body is
 * sent (a 413 checked while streaming) and then resets the connection.
 */
export function send(svc: TestService, method: string, path: string, body: Buffer | string | null, opts: SendOptions = {}): Promise<HttpResult> {
  const payload = body === null ? null : Buffer.from(body);
  const headers: Record<string, string> = { ...opts.headers };
  if (payload && opts.chunkBytes === undefined) headers['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = https.request(
      { host: '127.0.0.1', servername: 'localhost', port: svc.port, method, path, headers, ca: svc.ca, agent: false },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString('utf8');
          let parsed: unknown;
          if (String(res.headers['content-type'] ?? '').includes('json')) {
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, text, body: parsed });
        });
        res.on('error', (err) => (answered ? undefined : reject(err)));
      },
    );
    req.on('error', (err) => {
      // A reset after the answer arrived is the server refusing the rest of the body.
      if (!answered) reject(err);
    });
    if (payload) {
      const step = opts.chunkBytes ?? payload.length;
      for (let at = 0; at < payload.length; at += step) req.write(payload.subarray(at, at + step));
    }
    req.end();
  });
}

// ---- Telegraf ------------------------------------------------------------------------------

/** The User-Agent of a Telegraf release (internal.ProductToken: `Telegraf/<version> Go/<go version>`). */
export const TELEGRAF_USER_AGENT = 'Telegraf/1.36.2 Go/1.25.1';

export interface TelegrafMetric {
  name: string;
  tags: Record<string, string>;
  /** number = float64, bigint = int64 (`i`), boolean, string. */
  fields: Array<[string, number | bigint | boolean | string]>;
  /** Epoch ms; written as ns, Telegraf's only precision. */
  timeMs: number;
}

const escapeKey = (s: string) => s.replace(/[\t\n\f\r ,=]/g, (c) => ESCAPES[c]);
const escapeName = (s: string) => s.replace(/[\t\n\f\r ,]/g, (c) => ESCAPES[c]);
const ESCAPES: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r', ' ': '\\ ', ',': '\\,', '=': '\\=' };

/** One metric as Telegraf's influx serializer writes it: tags sorted by key, `\n` ended. */
export function telegrafLine(m: TelegrafMetric): string {
  const tags = Object.keys(m.tags)
    .sort()
    .map((k) => `,${escapeKey(k)}=${escapeKey(m.tags[k])}`)
    .join('');
  const fields = m.fields
    .map(([k, v]) => {
      const value =
        typeof v === 'bigint' ? `${v}i`
        : typeof v === 'boolean' ? String(v)
        : typeof v === 'string' ? `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`
        : goFloatText(v);
      return `${escapeKey(k)}=${value}`;
    })
    .join(',');
  return `${escapeName(m.name)}${tags} ${fields} ${BigInt(m.timeMs) * 1_000_000n}\n`;
}

export interface TelegrafRequest {
  path: string;
  lines: number;
  status: number;
  body: unknown;
}

/** Go's url.Values.Encode: keys sorted, QueryEscape (space as `+`). */
function goQuery(params: Record<string, string>): string {
  return Object.keys(params)
    .sort()
    .map((k) => `${goQueryEscape(k)}=${goQueryEscape(params[k])}`)
    .join('&');
}
const goQueryEscape = (s: string) => encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The body Telegraf streams: the serialized batch through gzip, sent chunked (length unknown to Go). */
function gzipStream(lines: string[]): { payload: Buffer; decodedBytes: number } {
  const text = lines.join('');
  return { payload: zlib.gzipSync(text), decodedBytes: Buffer.byteLength(text) };
}

export interface TelegrafV1Output {
  /** `urls = ["https://host:port/ingest/v2"]` */
  database: string;
  retentionPolicy?: string;
  username: string;
  password: string;
}

/**
 * Telegraf's `influxdb` output: at connect (skip_database_creation = false, the default) a
 * `CREATE DATABASE` query, whose failure it only logs; then per batch
 * `POST /write?db=…[&rp=…]`. Any 4xx answer makes it drop the batch (it logs "will be
 * dropped"); it never splits a batch.
 */
export class TelegrafV1 {
  readonly requests: TelegrafRequest[] = [];

  constructor(private readonly svc: TestService, private readonly out: TelegrafV1Output) {}

  private get authHeaders(): Record<string, string> {
    return { 'user-agent': TELEGRAF_USER_AGENT, authorization: basicAuth(this.out.username, this.out.password), 'accept-encoding': 'gzip' };
  }

  async connect(): Promise<HttpResult> {
    const form = goQuery({ q: `CREATE DATABASE "${this.out.database}"` });
    return send(this.svc, 'POST', '/ingest/v2/query', form, { headers: { ...this.authHeaders, 'content-type': 'application/x-www-form-urlencoded' } });
  }

  /** One batch (metric_batch_size metrics); the answer as Telegraf got it. */
  async write(batch: TelegrafMetric[]): Promise<TelegrafRequest> {
    const params: Record<string, string> = { db: this.out.database };
    if (this.out.retentionPolicy) params.rp = this.out.retentionPolicy;
    const path = `/ingest/v2/write?${goQuery(params)}`;
    const { payload } = gzipStream(batch.map(telegrafLine));
    const res = await send(this.svc, 'POST', path, payload, {
      headers: { 'content-type': 'text/plain; charset=utf-8', ...this.authHeaders, 'content-encoding': 'gzip' },
      chunkBytes: 32 * 1024,
    });
    const entry = { path, lines: batch.length, status: res.status, body: res.body ?? res.text };
    this.requests.push(entry);
    return entry;
  }
}

export interface TelegrafV2Output {
  /** `urls = ["https://host:port/ingest/v2"]` */
  bucket: string;
  organization: string;
  token: string;
}

/**
 * Telegraf's `influxdb_v2` output (content_encoding "gzip", its default):
 * `POST /api/v2/write?bucket=…&org=…` with `Authorization: Token …`. On 413 it splits the
 * batch once into two halves and writes each (splitAndWriteBatch); a half answered 413
 * again fails the write, and Telegraf would retry the whole batch at the next flush.
 */
export class TelegrafV2 {
  readonly requests: TelegrafRequest[] = [];

  constructor(private readonly svc: TestService, private readonly out: TelegrafV2Output) {}

  /** Write as the output's Write() does; resolves to null on success, else the failing answer. */
  async write(batch: TelegrafMetric[]): Promise<TelegrafRequest | null> {
    const first = await this.writeBatch(batch);
    if (first.status === 204) return null;
    if (first.status !== 413) return first;
    const mid = Math.floor(batch.length / 2);
    const left = await this.writeBatch(batch.slice(0, mid));
    if (left.status !== 204) return left;
    const right = await this.writeBatch(batch.slice(mid));
    return right.status === 204 ? null : right;
  }

  private async writeBatch(batch: TelegrafMetric[]): Promise<TelegrafRequest> {
    const path = `/ingest/v2/api/v2/write?${goQuery({ bucket: this.out.bucket, org: this.out.organization })}`;
    const { payload } = gzipStream(batch.map(telegrafLine));
    const res = await send(this.svc, 'POST', path, payload, {
      headers: {
        'content-encoding': 'gzip',
        'content-type': 'text/plain; charset=utf-8',
        authorization: `Token ${this.out.token}`,
        'user-agent': TELEGRAF_USER_AGENT,
        'accept-encoding': 'gzip',
      },
      chunkBytes: 32 * 1024,
    });
    const entry = { path, lines: batch.length, status: res.status, body: res.body ?? res.text };
    this.requests.push(entry);
    return entry;
  }
}

/** Bytes of a batch once decoded, as the server counts it against ingest.maxBodyBytes. */
export const decodedBytes = (batch: TelegrafMetric[]) => gzipStream(batch.map(telegrafLine)).decodedBytes;
