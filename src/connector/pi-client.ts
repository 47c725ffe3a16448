// A PI Web API client for the connector (WIRE.md part 2 "Asset-hierarchy connector"): GETs of the
// published REST resources with the connection's auth, TLS verification (on unless the connection
// says otherwise, with its own CA when it brings one) and timeout, every page of a list read,
// `selectedFields` to fetch only what is mapped. Upstream trouble is a 502 naming the upstream
// status; no credential ever appears in an error message or a log line.

import http from 'node:http';
import https from 'node:https';
import { ServiceError, badRequest } from '../../shared/errors.js';
import { checkedSegment } from '../http/upstream-path.js';

export interface PiConnection {
  baseUrl: URL;
  auth: 'basic' | 'bearer' | 'anonymous';
  username?: string;
  password?: string;
  token?: string;
  verifyTls: boolean;
  caPem?: string;
  timeoutMs: number;
}

/** One item of a PI Web API list (the fields the connector maps). */
export interface PiItem {
  WebId?: string;
  Name?: string;
  Path?: string;
  Description?: string;
  IsConnected?: boolean;
  TemplateName?: string;
  HasChildren?: boolean;
  Type?: string;
  DefaultUnitsName?: string;
  [k: string]: unknown;
}

export interface RecordedValue {
  Timestamp?: string;
  Value?: unknown;
  Good?: boolean;
}

/** Largest answer read from upstream; more is a 502 (a hostile or broken server cannot fill our memory). */
const MAX_RESPONSE_BYTES = 64 << 20;
/** PI Web API's own default page size for lists. */
const PAGE = 1000;
/** Bound on pages of one list (a server that pages forever). */
const MAX_PAGES = 10_000;

export class PiClient {
  private readonly agent: http.Agent;

  constructor(private readonly connection: PiConnection) {
    const options = { keepAlive: true, maxSockets: 4 };
    this.agent =
      connection.baseUrl.protocol === 'https:'
        ? new https.Agent({ ...options, rejectUnauthorized: connection.verifyTls, ...(connection.caPem ? { ca: connection.caPem } : {}) })
        : new http.Agent(options);
  }

  close(): void {
    this.agent.destroy();
  }

  /** Every item of a paged list (`startIndex`/`maxCount` until a short page). */
  async listAll(resource: string, fields: readonly string[], query: Record<string, string> = {}): Promise<PiItem[]> {
    const items: PiItem[] = [];
    for (let page = 0; page < MAX_PAGES; page++) {
      const body = await this.get(resource, { ...query, startIndex: String(page * PAGE), maxCount: String(PAGE), selectedFields: fields.map((f) => `Items.${f}`).join(';') });
      const got = itemsOf(body, resource);
      items.push(...got);
      if (got.length < PAGE) return items;
    }
    throw new ServiceError('BAD_GATEWAY', `upstream: ${resource} has more than ${MAX_PAGES * PAGE} items`);
  }

  /** A list the server answers whole (asset servers, databases). */
  async list(resource: string, fields: readonly string[]): Promise<PiItem[]> {
    return itemsOf(await this.get(resource, { selectedFields: fields.map((f) => `Items.${f}`).join(';') }), resource);
  }

  /** Recorded values of one attribute from `startMs` to `endMs` (inclusive), at most `maxCount`. */
  async recorded(webId: string, startMs: number, endMs: number, maxCount: number): Promise<RecordedValue[]> {
    // Checked here too: a backfill saved before web_ids were checked resumes through this.
    const body = await this.get(`/streams/${encodeURIComponent(checkedSegment(webId, 'web_id'))}/recorded`, {
      startTime: new Date(startMs).toISOString(),
      endTime: new Date(endMs).toISOString(),
      maxCount: String(maxCount),
      boundaryType: 'Inside',
      selectedFields: 'Items.Timestamp;Items.Value;Items.Good',
    });
    return itemsOf(body, 'recorded') as RecordedValue[];
  }

  /** GET `resource` (a path below the base URL) with `query`; the parsed JSON answer. */
  async get(resource: string, query: Record<string, string> = {}): Promise<unknown> {
    const base = this.connection.baseUrl;
    const url = new URL(base.href.replace(/\/+$/, '') + resource);
    // The URL parser resolves `.` and `..` segments (`%2e` forms too) and reads `\` as `/`: a
    // resource it changed would reach past the base path with the connection's credentials.
    if (url.pathname !== base.pathname.replace(/\/+$/, '') + resource) throw badRequest(`the PI Web API path ${resource} would not stay below the connection's base_url`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept: 'application/json', 'x-requested-with': 'XMLHttpRequest' };
    if (this.connection.auth === 'basic') {
      headers.authorization = `Basic ${Buffer.from(`${this.connection.username ?? ''}:${this.connection.password ?? ''}`).toString('base64')}`;
    } else if (this.connection.auth === 'bearer') {
      headers.authorization = `Bearer ${this.connection.token ?? ''}`;
    }
    const where = `${url.origin}${url.pathname}`;
    const timeoutMs = this.connection.timeoutMs;
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(url, { method: 'GET', headers, agent: this.agent }, (response) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        response.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > MAX_RESPONSE_BYTES) {
            request.destroy(upstream(`upstream answer from ${where} is larger than ${MAX_RESPONSE_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      });
      const timer = setTimeout(() => request.destroy(upstream(`upstream ${where} did not answer within ${timeoutMs} ms (timeout_ms)`)), timeoutMs);
      request.on('close', () => clearTimeout(timer));
      request.on('error', (err) => reject(err instanceof ServiceError ? err : upstream(`upstream ${where} unreachable: ${describeNetworkError(err)}`)));
      request.end();
    });
    if (status >= 400) {
      const detail = piErrors(text);
      throw upstream(`upstream ${status} from ${where}${detail ? `: ${detail}` : ''}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw upstream(`upstream ${where} answered ${status} with a body that is not JSON`);
    }
  }
}

function upstream(message: string): ServiceError {
  return new ServiceError('BAD_GATEWAY', message);
}

function itemsOf(body: unknown, resource: string): PiItem[] {
  const items = (body as { Items?: unknown })?.Items;
  if (!Array.isArray(items)) throw upstream(`upstream answer of ${resource} has no Items list`);
  return items.filter((i): i is PiItem => typeof i === 'object' && i !== null);
}

/** PI's `{"Errors": [...]}` (or `Message`) as one short line. */
function piErrors(text: string): string {
  try {
    const body = JSON.parse(text) as { Errors?: unknown; Message?: unknown };
    if (Array.isArray(body.Errors)) return body.Errors.map(String).join('; ').slice(0, 300);
    if (typeof body.Message === 'string') return body.Message.slice(0, 300);
  } catch {
    // not JSON: say nothing of it
  }
  return '';
}

function describeNetworkError(err: Error & { code?: string }): string {
  const code = err.code ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code) || /certificate/i.test(err.message)) {
    return `TLS verification failed (${code || err.message}); give the server's CA as ca_pem, or verify_tls false`;
  }
  return code || err.message;
}

/** A PI time string (ISO 8601, up to 7 fractional digits) as epoch ms (rounded down), or NaN. */
export function piTimestampMs(text: unknown): number {
  if (typeof text !== 'string') return NaN;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return NaN;
  const whole = Date.parse(`${m[1]}${m[3]}`);
  return whole + (m[2] ? Math.floor(Number(`0.${m[2]}`) * 1000 + 1e-9) : 0);
}
