// A small typed client for the historian's query routes, for dashboards and
// scripts. No Node built-ins: it runs in a browser on the global fetch, or on
// any fetch passed in (Node's global fetch cannot trust a private CA, so Node
// callers with the service's own CA pass a wrapper around node:https).
//
// Raw queries go out as GET with query parameters; KairosDB-style bodies
// (WIRE.md "POST query body") as POST to the same path. Binary answers are
// decoded with the format decoders of native-free-codecs/result-binary.ts.

import { decodeFormat1, decodeFormat2, type Format1Tag, type Format2Result } from '../native-free-codecs/result-binary.js';
import { SCOPE_FIELDS, type ScopeFields } from '../shared/scope.js';

/** The part of fetch the client uses; the global fetch fits it. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>;

export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

export interface FetchResponse {
  status: number;
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface HistorianClientOptions {
  /** e.g. `https://historian.local:3030`; a trailing slash is ignored. */
  baseUrl: string;
  /** A token from an earlier login; login() replaces it. */
  token?: string;
  /** Defaults to the global fetch. */
  fetch?: FetchLike;
}

/** The four names of a collection; give all four, or none to let the server's tag map decide. */
export type Scope = ScopeFields;

/** Raw points of `tags` with start <= ts <= end (epoch ms). */
export interface RawQuery extends Scope {
  tags: string[];
  start: number;
  end: number;
}

export type KairosTimeUnit = 'milliseconds' | 'seconds' | 'minutes' | 'hours' | 'days' | 'weeks' | 'months' | 'years';

/** One aggregator or pipeline step, e.g. `{name: 'avg', sampling: {value: 1, unit: 'minutes'}}`. */
export interface KairosAggregator {
  name: string;
  [parameter: string]: unknown;
}

/** The POST query body of WIRE.md; sent as it is. */
export interface KairosQuery extends Scope {
  start_absolute?: number;
  end_absolute?: number;
  start_relative?: { value: number; unit: KairosTimeUnit };
  end_relative?: { value: number; unit: KairosTimeUnit };
  metrics: Array<{ name: string; tags?: Record<string, string[]>; aggregators?: KairosAggregator[] }>;
  pipeline?: KairosAggregator[];
}

export type PointMap = Record<string, Array<[number, number]>>;
export type LastValues = Record<string, [number, number] | null>;

/** A non-2xx answer: `status`, the parsed body (or its text), and the server's message. */
export class HistorianError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown, message: string) {
    super(message);
    this.name = 'HistorianError';
    this.status = status;
    this.body = body;
  }
}

const JSON_TYPE = 'application/json';
const BINARY_TYPE = 'application/octet-stream';
const utf8 = new TextDecoder();

export class HistorianClient {
  /** Sent as `Authorization: Bearer <token>`; set by login(). */
  token: string | undefined;
  private readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;

  constructor(opts: HistorianClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    // Called through a closure: a browser's fetch throws when invoked with another `this`.
    this.fetchImpl = opts.fetch ?? ((url, init) => globalThis.fetch(url, init));
  }

  /** Logs in, keeps the token for the following calls and returns it. */
  async login(email: string, password: string): Promise<string> {
    const body = this.json(await this.send('POST', '/svcapi/login', JSON_TYPE, { email, password }, false)) as { token?: unknown };
    if (typeof body?.token !== 'string') throw new Error('login answered without a token');
    this.token = body.token;
    return body.token;
  }

  /** `{tag: [[ts, value], ...]}`, sorted by ts; a tag without points maps to []. */
  async query(q: RawQuery | KairosQuery): Promise<PointMap> {
    return this.json(await this.fetchQuery('/svcapi/fast_query', q, JSON_TYPE)) as PointMap;
  }

  /** Binary format 1: per tag, timestamps and values (values are f32 on the wire). */
  async queryBinary(q: RawQuery | KairosQuery): Promise<Format1Tag[]> {
    return decodeFormat1(await this.fetchQuery('/svcapi/fast_query_binary', q, BINARY_TYPE));
  }

  /**
   * Binary format 2: one shared timestamp array and per tag a validity bitmap and f32 values.
   * The body is a fresh ArrayBuffer, so on a little-endian host the arrays are views into it.
   */
  async queryOptimised(q: RawQuery | KairosQuery): Promise<Format2Result> {
    return decodeFormat2(await this.fetchQuery('/svcapi/fast_query_optimised', q, BINARY_TYPE));
  }

  /** `{tag: [ts, value]}`, null for a tag with no value. */
  async lastValues(q: Scope & { tags: string[] }): Promise<LastValues> {
    return this.json(await this.send('GET', `/svcapi/lastlist?${queryString(q)}`, JSON_TYPE)) as LastValues;
  }

  private fetchQuery(path: string, q: RawQuery | KairosQuery, accept: string): Promise<Uint8Array> {
    if ('metrics' in q) return this.send('POST', path, accept, q);
    return this.send('GET', `${path}?${queryString(q, q.start, q.end)}`, accept);
  }

  /** One request; resolves with the body of a 2xx answer, throws HistorianError otherwise. */
  private async send(method: string, path: string, accept: string, body?: unknown, auth = true): Promise<Uint8Array> {
    const headers: Record<string, string> = { accept };
    if (auth && this.token) headers.authorization = `Bearer ${this.token}`;
    const init: FetchInit = { method, headers };
    if (body !== undefined) {
      headers['content-type'] = JSON_TYPE;
      init.body = JSON.stringify(body);
    }
    const res = await this.fetchImpl(this.baseUrl + path, init);
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (res.status < 200 || res.status > 299) throw errorOf(res.status, bytes, `${method} ${path.split('?')[0]}`);
    return bytes;
  }

  private json(bytes: Uint8Array): unknown {
    return JSON.parse(utf8.decode(bytes));
  }
}

/** Repeated `tags=`, then start and end when given, then the scope fields that are set. */
function queryString(q: Scope & { tags: string[] }, start?: number, end?: number): string {
  const parts = q.tags.map((tag) => `tags=${encodeURIComponent(tag)}`);
  if (start !== undefined) parts.push(`start=${start}`);
  if (end !== undefined) parts.push(`end=${end}`);
  for (const key of SCOPE_FIELDS) {
    const value = q[key];
    if (value !== undefined) parts.push(`${key}=${encodeURIComponent(value)}`);
  }
  return parts.join('&');
}

/** The server answers `{error}` or `{status: "error", message}`; anything else keeps its text. */
function errorOf(status: number, bytes: Uint8Array, request: string): HistorianError {
  const text = utf8.decode(bytes);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  const fields = typeof body === 'object' && body !== null ? (body as { error?: unknown; message?: unknown }) : {};
  const serverMessage = typeof fields.error === 'string' ? fields.error : typeof fields.message === 'string' ? fields.message : undefined;
  return new HistorianError(status, body, serverMessage ?? `${request} answered ${status}`);
}
