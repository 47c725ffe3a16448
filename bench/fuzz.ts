/**
 * Seeded, bounded fuzzer of the whole HTTP API (issue 12, "Done when").
 *
 *   npm run bench:fuzz -- [--requests 50000] [--seed 1] [--concurrency 6] [--timeout-ms 20000] [--big-tag-points 400000]
 *                         [--max-response-bytes 1048576] [--json report.json] [--trace requests.jsonl] [--keep]
 *
 * It starts the real service (temp data dir), reads the route list from the service's own
 * `GET /svcapi/openapi.yaml`, so a new route is fuzzed without editing this file, builds a small
 * world (two tenants with entities, collections, points, tag mappings and accounts), then sends
 * requests: first one for every operation of the document, then operations picked at random,
 * one route group at a time so the 650 generated entity routes do not drown the rest. About
 * a third are valid; the rest carry one or two mutations (wrong types, huge numbers, deep
 * nesting, odd unicode, duplicate keys, bad content types, truncated bodies, bad or foreign
 * tokens, odd paths, unknown routes and methods, raw HTTP).
 *
 * Every request is generated from its own PRNG, seeded from (seed, index), so request N of a
 * seed is the same request whatever the responses were; the world is fixed before the first one.
 *
 * What counts as a failure:
 * - any 5xx, except 503 and 507 with the backpressure messages the contract allows (request
 *   ring full, write buffer full, disk below the floor; only storage routes can say them); a 503
 *   because a shard "did not answer in time" or "is restarting" is a failure (a stall or a
 *   crashed worker);
 * - no complete answer within the per-request timeout (a hang), or the connection cut without
 *   an answer (raw bytes that are not HTTP may be refused by closing);
 * - a HEAD request whose answer breaks the next request on the same keep-alive connection;
 * - at the end: `/ingest/health` not answering 200, or a log line holding a token or password
 *   the fuzzer used or was given.
 * Responses larger than `--max-response-bytes` are read that far and then abandoned, as a
 * vanishing client would (never a failure by itself).
 *
 * Each failure class (kind, status, route) is reported with its count, the server's error
 * messages for it, and the smallest request seen, replayed once more at the end.
 */

import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pack } from 'msgpackr';
import { parse as parseYaml } from 'yaml';
import { encodeBinaryBatch } from '../native-free-codecs/write-body.js';
import { prng } from '../test/support/prng.js';
import { PROTOCOL_GROUP, PROTOCOL_KINDS, protocolDraft, runWsFuzz } from './fuzz-protocols.js';

// ---- types ------------------------------------------------------------------------------------

type JsonSchema = { [key: string]: any };

/** One operation of the OpenAPI document. */
export interface Operation {
  method: string;
  /** Template as in the document: `/svcapi/orgs/{id}`. */
  path: string;
  group: string;
  isPublic: boolean;
  pathParams: string[];
  query: Array<{ name: string; required: boolean; schema: JsonSchema }>;
  body: { required: boolean; types: string[]; schema: JsonSchema | undefined } | null;
}

/** Where the fuzzer sends requests and finds the service's output. */
export interface FuzzTarget {
  port: number;
  /** PEM of the CA the client trusts. */
  ca: string;
  /** Every output line of the service so far (pino JSON lines). */
  logLines: () => readonly string[];
  /** The service's data dir, to sign crafted tokens with its secret; null when unknown. */
  dataDir: string | null;
  adminEmail: string;
  adminPassword: string;
}

export interface FuzzOptions {
  seed: number;
  requests: number;
  concurrency: number;
  /** Every request must be answered in full within this (generous) time. */
  timeoutMs: number;
  /** A response is read this far, then abandoned. */
  maxResponseBytes: number;
  /**
   * Points of one extra tag, BIG, written at setup (HSW1), so that valid queries stream results
   * larger than `maxResponseBytes` and get abandoned half way, as a vanishing client would.
   */
  bigTagPoints: number;
  /** WebSocket sessions of fuzzed live-data messages, run beside the HTTP requests (default requests / 500). */
  wsSessions?: number;
  progress?: (done: number, total: number) => void;
  /** Called with every request and its outcome (the CLI's --trace). */
  trace?: (entry: { index: number; route: string; mutations: string[]; identity: string; status: number | null; error: string | null; abandoned: boolean; ms: number; text: string }) => void;
}

export type FailureKind = 'server-error' | 'unavailable' | 'hang' | 'connection' | 'keep-alive' | 'token-in-log' | 'health' | 'websocket';

export interface Failure {
  kind: FailureKind;
  /** `kind status METHOD template`: one class per route and status. */
  key: string;
  status: number | null;
  route: string;
  count: number;
  /** Server error messages seen for this route and status (log lines, reply bodies). */
  messages: string[];
  /** The smallest request of the class, readable. */
  example: string;
  mutations: string[];
  /** Whether replaying the example after the run gave the same outcome; null when not replayed. */
  reproduced: boolean | null;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  operations: number;
  operationsExercised: number;
  byGroup: Record<string, number>;
  byStatus: Record<string, number>;
  byMutation: Record<string, number>;
  abandonedLargeResponses: number;
  /** Requests the fuzzer itself failed to build (a bug here, not in the service); the first message. */
  generatorErrors: number;
  generatorError: string | null;
  durationMs: number;
  healthOk: boolean;
  /** The live data socket: sessions, messages sent, upgrades refused (401), closes by code. */
  ws: { sessions: number; messages: number; refused: number; closes: Record<string, number> };
  failures: Failure[];
}

// ---- the route list ---------------------------------------------------------------------------

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Operations of the OpenAPI document, grouped as the issue lists them. */
export function operationsOf(yamlText: string): Operation[] {
  const doc = parseYaml(yamlText) as { paths: Record<string, Record<string, any>> };
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = (op.parameters ?? []) as Array<{ name: string; in: string; required?: boolean; schema?: JsonSchema }>;
      const content = op.requestBody?.content as Record<string, { schema?: JsonSchema }> | undefined;
      ops.push({
        method: method.toUpperCase(),
        path: template,
        group: groupOf(String(op.tags?.[0] ?? 'untagged'), template),
        isPublic: Array.isArray(op.security) && op.security.length === 0,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: p.required === true, schema: p.schema ?? {} })),
        body: content
          ? { required: op.requestBody.required === true, types: Object.keys(content), schema: content['application/json']?.schema }
          : null,
      });
    }
  }
  return ops;
}

/** Entity routes are one group per shape (generic, nested); every other tag is its own group. */
function groupOf(tag: string, template: string): string {
  if (!tag.startsWith('Entity:')) return tag;
  return (template.match(/\{/g) ?? []).length >= 2 || /\{id\}\/[a-z-]+/i.test(template) ? 'entities nested' : 'entities generic';
}

export const UNKNOWN_ROUTE = 'unknown routes';
export const UNKNOWN_METHOD = 'unknown methods';

// ---- HTTP -------------------------------------------------------------------------------------

interface WireRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** A fresh connection (odd methods, HEAD checks, huge heads); keep-alive otherwise. */
  fresh?: boolean;
  /** Bytes written as they are on a fresh TLS connection instead of an HTTP request. */
  raw?: Buffer;
  /** How much of the reply body to keep as text (2 KiB unless set). */
  keepBytes?: number;
}

interface Outcome {
  status: number | null;
  /** Transport error (reset, timeout, parse error). */
  error: string | null;
  timedOut: boolean;
  abandoned: boolean;
  ms: number;
  /** First bytes of the reply body as text. */
  text: string;
}

/**
 * How long a raw request that does not write may wait: a few hundred bytes on a fresh connection
 * are answered in milliseconds (uWS closes a silent connection only after its 10 s idle timeout,
 * which would make every unanswered one cost 10 s). Raw writes get the full timeout, as a write
 * may wait for its shard.
 */
const RAW_TIMEOUT_MS = 2000;

class Transport {
  private readonly agent: https.Agent;

  constructor(private readonly target: FuzzTarget, sockets: number, private readonly timeoutMs: number, private readonly maxResponseBytes: number) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: sockets, ca: target.ca });
  }

  send(r: WireRequest): Promise<Outcome> {
    return r.raw ? this.sendRaw(r.raw, r.method === 'POST' ? this.timeoutMs : RAW_TIMEOUT_MS) : this.sendHttp(r, r.fresh ? false : this.agent);
  }

  private sendHttp(r: WireRequest, agent: https.Agent | false): Promise<Outcome> {
    const started = performance.now();
    return new Promise((resolve) => {
      let settled = false;
      const finish = (o: Omit<Outcome, 'ms'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...o, ms: performance.now() - started });
      };
      let req: ReturnType<typeof https.request>;
      try {
        req = https.request({
          host: '127.0.0.1', servername: 'localhost', port: this.target.port, method: r.method, path: r.path,
          headers: { ...r.headers, ...(r.body ? { 'content-length': String(r.body.length) } : {}) },
          agent, ca: this.target.ca,
        });
      } catch (err) {
        // The client refused to send it (a character Node does not allow in a header or path).
        resolve({ status: null, error: `not sent: ${(err as Error).message}`, timedOut: false, abandoned: false, ms: 0, text: '' });
        return;
      }
      const timer = setTimeout(() => {
        req.destroy();
        finish({ status: null, error: `no complete answer within ${this.timeoutMs} ms`, timedOut: true, abandoned: false, text: '' });
      }, this.timeoutMs);
      const keep = r.keepBytes ?? 2048;
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        // An event stream (the notification stream) never completes: its first bytes are the
        // answer, and leaving then is a vanishing client.
        const endless = res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        res.on('data', (c: Buffer) => {
          if (bytes < keep) chunks.push(c);
          bytes += c.length;
          if (bytes > this.maxResponseBytes || endless) {
            req.destroy();
            finish({ status: res.statusCode ?? null, error: null, timedOut: false, abandoned: true, text: Buffer.concat(chunks).subarray(0, keep).toString('utf8') });
          }
        });
        res.on('end', () => finish({ status: res.statusCode ?? null, error: null, timedOut: false, abandoned: false, text: Buffer.concat(chunks).subarray(0, keep).toString('utf8') }));
        res.on('error', (err) => finish({ status: res.statusCode ?? null, error: `reply cut: ${err.message}`, timedOut: false, abandoned: false, text: '' }));
        res.on('aborted', () => finish({ status: res.statusCode ?? null, error: 'reply cut: aborted', timedOut: false, abandoned: false, text: '' }));
      });
      req.on('error', (err) => finish({ status: null, error: (err as NodeJS.ErrnoException).code ?? err.message, timedOut: false, abandoned: false, text: '' }));
      req.end(r.body);
    });
  }

  /** Raw bytes on their own connection; the answer is read until the server closes or has sent one whole reply. */
  private sendRaw(bytes: Buffer, waitMs: number): Promise<Outcome> {
    const started = performance.now();
    return new Promise((resolve) => {
      let settled = false;
      let received = Buffer.alloc(0);
      const socket = tls.connect({ host: '127.0.0.1', port: this.target.port, servername: 'localhost', ca: this.target.ca });
      const finish = (o: Omit<Outcome, 'ms'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        resolve({ ...o, ms: performance.now() - started });
      };
      const parsed = () => {
        const head = received.indexOf('\r\n\r\n');
        if (head < 0) return null;
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(received.subarray(0, 16).toString('latin1'))?.[1] ?? NaN);
        const headers = received.subarray(0, head).toString('latin1');
        const length = /\r\ncontent-length: *(\d+)/i.exec(headers);
        const body = received.subarray(head + 4);
        if (length && body.length >= Number(length[1])) return { status, text: body.subarray(0, 2048).toString('utf8') };
        return null;
      };
      const timeoutMs = Math.min(this.timeoutMs, waitMs);
      const timer = setTimeout(() => finish({ status: null, error: `no answer within ${timeoutMs} ms`, timedOut: true, abandoned: false, text: '' }), timeoutMs);
      // Not end(): uWS takes the client's half-close for a close and drops what it has not answered.
      socket.on('secureConnect', () => socket.write(bytes));
      socket.on('data', (c: Buffer) => {
        received = Buffer.concat([received, c]);
        const reply = parsed();
        if (reply) finish({ status: Number.isNaN(reply.status) ? null : reply.status, error: null, timedOut: false, abandoned: false, text: reply.text });
      });
      socket.on('error', (err) => finish({ status: null, error: (err as NodeJS.ErrnoException).code ?? err.message, timedOut: false, abandoned: false, text: '' }));
      socket.on('close', () => {
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(received.subarray(0, 16).toString('latin1'))?.[1] ?? NaN);
        // The server may answer a bad request with a status line alone, or just close.
        finish({ status: Number.isNaN(status) ? null : status, error: Number.isNaN(status) ? 'closed without an answer' : null, timedOut: false, abandoned: false, text: '' });
      });
    });
  }

  /** A HEAD and then a GET on one keep-alive connection: the GET must still be answered. */
  async headThenGet(headPath: string, headers: Record<string, string>): Promise<{ head: Outcome; next: Outcome }> {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: this.target.ca });
    try {
      const head = await this.sendHttp({ method: 'HEAD', path: headPath, headers }, agent);
      const next = await this.sendHttp({ method: 'GET', path: '/ingest/health', headers: {} }, agent);
      return { head, next };
    } finally {
      agent.destroy();
    }
  }

  close(): void {
    this.agent.destroy();
  }
}

// ---- the world --------------------------------------------------------------------------------

interface Scope4 {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

interface Identity {
  name: string;
  /** Header value (without `Bearer `), or null for none. */
  token: string | null;
}

/** What the run knows before the first fuzzed request; requests are generated from it alone. */
export interface World {
  identities: Identity[];
  collections: Scope4[];
  tagsOf: string[][];
  externals: string[];
  mappingIds: string[];
  /** Entity ids by table. */
  ids: Record<string, string[]>;
  /** Entity URL name to table, and each table's columns (from `/svcapi/_schema`). */
  tableOf: Record<string, string>;
  columnsOf: Record<string, Array<{ name: string; type: string; references?: string }>>;
  urlNames: string[];
  emails: string[];
  /** First and last timestamp of the written points. */
  window: [number, number];
  /** Strings that must never appear in a log line: every token and password of the run. */
  secrets: Set<string>;
  /** Crafted tokens by name; empty without the signing secret. */
  crafted: Record<string, string>;
}

const DAY = 86_400_000;
// Two finished UTC days (sealed at setup) and the current one.
const T0 = Date.UTC(2026, 0, 10);

const TENANTS: Array<{ scope: Scope4; tags: string[] }> = [
  { scope: { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' }, tags: ['TI-101', 'PI-202', 'FI-303', 'LI-404'] },
  { scope: { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'aux' }, tags: ['TI-101', 'XA-1'] },
  { scope: { organization: 'evil', site: 's2', unit: 'u2', grid: 'main' }, tags: ['TB-1', 'TB-2', 'TI-901'] },
];

class SetupClient {
  constructor(private readonly transport: Transport) {}

  async call(method: string, p: string, token: string | null, body?: unknown): Promise<{ status: number | null; json: any; text: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    const out = await this.transport.send({ method, path: p, headers, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)), keepBytes: 1 << 20 });
    let json: any;
    try {
      json = JSON.parse(out.text);
    } catch {
      json = undefined;
    }
    return { status: out.status, json, text: out.text };
  }

  async must(method: string, p: string, token: string | null, body?: unknown): Promise<any> {
    const r = await this.call(method, p, token, body);
    if (r.status !== 200 || (r.json && r.json.success === false)) throw new Error(`setup: ${method} ${p} answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r.json;
  }
}

async function buildWorld(target: FuzzTarget, transport: Transport, seed: number, bigTagPoints: number): Promise<World> {
  const c = new SetupClient(transport);
  const secrets = new Set<string>();
  const login = async (email: string, password: string) => {
    secrets.add(password);
    const token = (await c.must('POST', '/svcapi/login', null, { email, password })).token as string;
    secrets.add(token);
    return token;
  };
  const admin = await login(target.adminEmail, target.adminPassword);
  const ids: Record<string, string[]> = {};
  const make = async (url: string, table: string, body: object) => {
    const id = String((await c.must('POST', `/svcapi/${url}`, admin, body)).id);
    (ids[table] ??= []).push(id);
    return id;
  };

  // Two tenants: acme (two collections on one unit) and evil.
  const unitIds: string[] = [];
  for (const [org, site, unit] of [['acme', 'north', 'boiler-1'], ['evil', 's2', 'u2']] as const) {
    const orgId = await make('orgs', 'orgs', { name: org });
    const siteId = await make('sites', 'sites', { name: site, orgsId: orgId });
    const unitId = await make('units', 'units', { name: unit, siteId });
    unitIds.push(unitId);
    const eq = await make('equipment', 'equipment', { name: `${unit} pump`, unitsId: unitId });
    await make('tagmeta', 'tagmeta', { unitsId: unitId, equipmentId: eq, dataTagId: `${org}-tag` });
    const dash = await make('dashboards', 'dashboards', { name: `${org} dashboard`, unitsId: unitId });
    await make('dashboard-plots', 'dashboardplots', { name: 'plot', dashboardsId: dash });
    const client = await make('clients', 'clients', { name: `${org} client`, orgsId: orgId });
    await make('ingestconfigs', 'ingestconfigs', { name: 'cfg', clientsId: client, unitsId: unitId });
    for (const table of ['statuses', 'incidents', 'configs']) await make(table, table, { name: `${org} ${table}`, unitsId: unitId, severity: 2 });
  }
  await make('labels', 'labels', { name: 'shared label' });

  // Collections with points over two finished days (sealed) and today.
  const rnd = prng(seed);
  const now = Date.now();
  for (const { scope, tags } of TENANTS) {
    await c.must('POST', '/svcapi/create_collection', admin, { ...scope, description: `fuzz ${scope.grid}` });
    const points: Record<string, Array<[number, number]>> = {};
    for (const tag of tags) {
      points[tag] = [];
      for (let i = 0; i < 120; i++) points[tag].push([T0 + Math.floor((i * 2 * DAY) / 120), Math.round(rnd() * 10000) / 100]);
      points[tag].push([now - 1000, 1]);
    }
    await c.must('POST', '/svcapi/write', admin, { ...scope, tags: points });
  }
  if (bigTagPoints > 0) {
    // One point a second from T0, in HSW1 bodies under the request ring's 4 MiB.
    for (let from = 0; from < bigTagPoints; from += 200_000) {
      const timestamps = Array.from({ length: Math.min(200_000, bigTagPoints - from) }, (_, i) => T0 + (from + i) * 1000);
      const bytes = Buffer.from(encodeBinaryBatch(TENANTS[0]!.scope, timestamps, [{ name: 'BIG', values: timestamps.map((_, i) => (i % 1000) / 10) }]));
      const r = await transport.send({ method: 'POST', path: '/svcapi/write_fast', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/octet-stream' }, body: bytes });
      if (r.status !== 200 || !r.text.includes('"success":true')) throw new Error(`setup: writing BIG answered ${r.status}: ${r.text.slice(0, 200)}`);
    }
  }
  await c.must('POST', '/svcapi/seal_now', admin, {});

  // Tag mappings, one per tenant.
  const externals = ['plant-a/TI-101', 'plant-b/TB-1'];
  const mappingIds: string[] = [];
  for (const [i, t] of [TENANTS[0], TENANTS[2]].entries()) {
    const m = await c.must('POST', '/svcapi/tag_mappings', admin, { external: externals[i], tag: t.tags[0], ...t.scope });
    mappingIds.push(String(m.id));
  }

  // Accounts: one per tenant, a read-only one, one without grants.
  const password = `fuzz-password-${seed}`;
  const emails: string[] = [];
  const account = async (email: string, role: string, access: object | null) => {
    await c.must('POST', '/svcapi/users', admin, { email, password, role });
    const user = await c.must('GET', `/svcapi/users/findOne?filter=${encodeURIComponent(JSON.stringify({ where: { email } }))}`, admin);
    (ids.users ??= []).push(String(user.id));
    if (access) {
      const profile = await c.must('POST', '/svcapi/userprofiles', admin, { usersId: user.id, accessAllowed: access });
      (ids.userprofiles ??= []).push(String(profile.id));
    }
    emails.push(email);
    return login(email, password);
  };
  const identities: Identity[] = [
    { name: 'admin', token: admin },
    { name: 'tenant-a', token: await account('a@fuzz.test', 'read-write', { units: [unitIds[0]] }) },
    { name: 'tenant-b', token: await account('b@fuzz.test', 'read-write', { units: [unitIds[1]] }) },
    { name: 'read-only', token: await account('ro@fuzz.test', 'read-only', { orgs: [ids.orgs[0]] }) },
    { name: 'no-grant', token: await account('nogrant@fuzz.test', 'read-write', null) },
  ];

  // Tables, URL names and columns, from the service itself.
  const schema = (await c.must('GET', '/svcapi/_schema', admin)) as Record<string, { urlNames: string[]; columns: Array<{ name: string; type: string }>; relations: Array<{ column: string; references: string }> }>;
  const tableOf: Record<string, string> = {};
  const columnsOf: World['columnsOf'] = {};
  for (const [table, s] of Object.entries(schema)) {
    for (const url of s.urlNames) tableOf[url] = table;
    columnsOf[table] = s.columns
      .filter((col) => col.name !== 'id' && col.name !== 'meta_data')
      .map((col) => ({ ...col, references: s.relations.find((r) => r.column === col.name)?.references }));
  }

  return {
    identities,
    collections: TENANTS.map((t) => t.scope),
    tagsOf: TENANTS.map((t, i) => (i === 0 && bigTagPoints > 0 ? [...t.tags, 'BIG'] : t.tags)),
    externals,
    mappingIds,
    ids,
    tableOf,
    columnsOf,
    urlNames: Object.keys(tableOf),
    emails: [target.adminEmail, ...emails],
    window: [T0, now],
    secrets,
    crafted: craftTokens(target, secrets),
  };
}

/** Tokens signed with the service's own secret: expired, odd claims, unknown subject. */
function craftTokens(target: FuzzTarget, secrets: Set<string>): Record<string, string> {
  if (!target.dataDir) return {};
  let secretHex: string;
  try {
    secretHex = fs.readFileSync(path.join(target.dataDir, 'secrets', 'jwt.secret'), 'utf8').trim();
  } catch {
    return {};
  }
  const key = Buffer.from(secretHex, 'hex');
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const sign = (payload: object, header: object = { alg: 'HS256', typ: 'JWT' }) => {
    const head = `${b64(header)}.${b64(payload)}`;
    const token = `${head}.${createHmac('sha256', key).update(head).digest('base64url')}`;
    secrets.add(token);
    return token;
  };
  const now = Math.floor(Date.now() / 1000);
  const base = { role: 'admin', units_id: [], sites_id: [], orgs_id: [], iat: now };
  return {
    expired: sign({ ...base, sub: 'admin@fuzz.test', exp: now - 60, iat: now - 3600 }),
    'unknown-subject': sign({ ...base, sub: 'ghost@fuzz.test', role: 'read-write', units_id: ['1'], exp: now + 3600 }),
    'odd-claims': sign({ sub: 'x'.repeat(5000), role: 'read-write', units_id: [{ $gt: 0 }], sites_id: '1', orgs_id: null, exp: now + 3600 }),
    'role-root': sign({ ...base, sub: 'root@fuzz.test', role: 'root', exp: now + 3600 }),
    'numeric-grants': sign({ ...base, sub: 'n@fuzz.test', role: 'read-write', units_id: [1e308, -1, 1.5], exp: now + 3600 }),
    'typ-none-header': sign({ ...base, sub: 'admin@fuzz.test', exp: now + 3600 }, { alg: 'HS256', typ: 'none', kid: '../../etc/passwd' }),
  };
}

// ---- generation -------------------------------------------------------------------------------

type Rng = () => number;

export class Gen {
  /** The collection this request is about (index into world.collections), or -1 for a made-up one. */
  readonly scopeIndex: number;
  constructor(readonly r: Rng, readonly world: World) {
    this.scopeIndex = r() < 0.9 ? this.int(0, world.collections.length - 1) : -1;
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.r() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.r() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.r() < p;
  }

  scope(): Scope4 {
    return this.scopeIndex >= 0 ? this.world.collections[this.scopeIndex]! : { organization: 'nowhere', site: this.word(), unit: this.word(), grid: 'main' };
  }
  tags(): string[] {
    const known = this.scopeIndex >= 0 ? this.world.tagsOf[this.scopeIndex]! : this.world.tagsOf[0]!;
    const n = this.int(1, Math.min(4, known.length));
    const out = Array.from({ length: n }, () => this.pick(known));
    if (this.chance(0.15)) out.push(this.chance(0.5) ? this.word() : this.pick(this.world.tagsOf.flat()));
    return [...new Set(out)];
  }
  word(): string {
    return this.pick(['alpha', 'beta', 'TI-101', 'x', 'new-tag', 'Ω', 'a b', 'acme', 'main', '42']) + (this.chance(0.5) ? String(this.int(0, 99)) : '');
  }
  time(which: 'start' | 'end'): number {
    const [first, last] = this.world.window;
    if (this.chance(0.1)) return this.pick([0, 1, 9007199254740991, 1720000000000, 1721000000000]);
    return which === 'start' ? first - this.int(0, 3) * DAY : last + this.int(0, 2) * DAY;
  }
  entityId(table?: string): string {
    const pool = table ? (this.world.ids[table] ?? []) : Object.values(this.world.ids).flat();
    if (pool.length > 0 && this.chance(0.8)) return this.pick(pool);
    return this.pick(['0', '1', '2', '999999', '-1', 'abc']);
  }
  aggregators(): object[] {
    const unit = this.pick(['milliseconds', 'seconds', 'minutes', 'hours', 'days']);
    const sampling = { value: this.pick([1, 5, 30, 60]), unit: unit === 'milliseconds' ? 'minutes' : unit };
    return Array.from({ length: this.int(0, 2) }, () => {
      const name = this.pick(['avg', 'min', 'max', 'sum', 'count', 'first', 'last', 'dev', 'gaps', 'percentile', 'diff', 'rate', 'sampler', 'scale', 'div', 'filter', 'trim']);
      switch (name) {
        case 'percentile':
          return { name, sampling, percentile: this.pick([0.5, 0.99]) };
        case 'rate':
        case 'sampler':
          return { name, unit: 'seconds' };
        case 'scale':
          return { name, factor: this.pick([2, 0.001, -1]) };
        case 'div':
          return { name, divisor: this.pick([2, 10]) };
        case 'filter':
          return { name, filter_op: this.pick(['lt', 'gt', 'equal']), threshold: 50 };
        case 'trim':
          return { name, trim: this.pick(['first', 'last', 'both']) };
        case 'diff':
          return { name };
        default:
          return { name, sampling };
      }
    });
  }
  where(): object {
    const field = this.pick(['name', 'id', 'severity', 'unitsId', 'email', 'meta.x', 'description']);
    const value = this.pick<unknown>(['acme', 1, 'boiler-1', true, null, 2]);
    switch (this.int(0, 8)) {
      case 0:
        return {};
      case 1:
        return { [field]: value };
      case 2:
        return { [field]: { [this.pick(['gt', 'gte', 'lt', 'lte', 'neq', 'eq'])]: value } };
      case 3:
        return { [field]: { inq: [value, 'x', 3] } };
      case 4:
        return { [field]: { between: [0, 10] } };
      case 5:
        return { [field]: { [this.pick(['like', 'nlike', 'ilike'])]: '%a%' } };
      case 6:
        return { [field]: { regexp: this.pick(['/^a/', '/a*b/i', '^acme$']) } };
      case 7:
        return { or: [{ name: 'acme' }, { [field]: { exists: true } }] };
      default:
        return { and: [{ name: { neq: 'x' } }, { id: { gt: 0 } }] };
    }
  }
  filter(): object {
    const f: Record<string, unknown> = {};
    if (this.chance(0.7)) f.where = this.where();
    if (this.chance(0.3)) f.limit = this.pick([1, 10, 0, 100000]);
    if (this.chance(0.2)) f.skip = this.pick([0, 1, 5]);
    if (this.chance(0.3)) f.order = this.pick(['name ASC', 'id DESC', ['name DESC', 'id ASC']]);
    if (this.chance(0.2)) f.fields = this.pick([['id', 'name'], { name: true }, { meta_data: false }]);
    if (this.chance(0.2)) f.include = this.pick(['sites', ['units'], 'equipment', 'nothing']);
    return f;
  }

  /** A value for a named field: the world's names where the name says what it is, else the schema. */
  field(name: string, schema: JsonSchema | undefined, depth = 0): unknown {
    const s = this.scope();
    switch (name) {
      case 'organization':
      case 'site':
      case 'unit':
      case 'grid':
        return s[name];
      case 'tags':
        return schema?.type === 'object' ? { organization: [s.organization], site: [s.site], unit: [s.unit], grid: [s.grid] } : this.tags();
      case 'tag':
        return this.pick(this.tags());
      case 'external':
        return this.chance(0.8) ? this.pick(this.world.externals) : `ext/${this.word()}`;
      case 'start':
      case 'start_absolute':
        return this.time('start');
      case 'end':
      case 'end_absolute':
        return this.time('end');
      case 'start_relative':
      case 'end_relative':
        return { value: this.int(1, 30), unit: this.pick(['days', 'hours', 'weeks']) };
      case 'metrics':
        return this.tags().map((tagName) => (this.chance(0.7) ? { name: tagName, ...(this.chance(0.5) ? { aggregators: this.aggregators() } : {}) } : { name: tagName, tags: this.field('tags', { type: 'object' }) }));
      case 'pipeline':
      case 'aggregators':
        return this.aggregators();
      case 'data':
        return Object.fromEntries(
          (this.chance(0.8) ? [this.pick(this.world.externals)] : [`ext/${this.word()}`]).map((ext) => [ext, this.points(this.int(1, 5))]),
        );
      case 'email':
        return this.chance(0.7) ? `${this.word().replace(/\W/g, '')}${this.int(0, 9999)}@fuzz.test` : this.pick(this.world.emails);
      case 'password':
        return this.pick(['fuzz-password-x', 'short', '', 'p'.repeat(200)]);
      case 'collection':
        return Object.values(s).join('/');
      case 'shard':
        return this.int(0, 3);
      default:
        return this.fromSchema(schema ?? {}, depth);
    }
  }

  points(n: number): Array<[number, number]> {
    const [first, last] = this.world.window;
    return Array.from({ length: n }, () => [this.chance(0.8) ? first + this.int(0, Math.max(1, Math.floor((last - first) / 1000))) * 1000 : last + this.int(-5000, 5000), Math.round(this.r() * 1e6) / 100]);
  }

  fromSchema(schema: JsonSchema, depth = 0): unknown {
    if (Array.isArray(schema.enum)) return this.pick(schema.enum);
    if ('default' in schema && this.chance(0.3)) return schema.default;
    const type = Array.isArray(schema.type) ? this.pick(schema.type) : schema.type;
    switch (type) {
      case 'integer': {
        const min = typeof schema.minimum === 'number' ? schema.minimum : 0;
        const max = typeof schema.maximum === 'number' ? Math.min(schema.maximum, min + 1_000_000) : min + 1000;
        return this.int(min, max);
      }
      case 'number':
        return Math.round(this.r() * 100000) / 100;
      case 'boolean':
        return this.chance(0.5);
      case 'string':
        return schema.pattern === '^[0-9]+$' ? String(this.int(1, 20)) : this.word();
      case 'array': {
        if (depth > 3) return [];
        const n = this.int(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, (schema.minItems ?? 0) + 3));
        return Array.from({ length: n }, () => this.fromSchema(schema.items ?? {}, depth + 1));
      }
      case 'object':
      case undefined: {
        if (depth > 3) return {};
        const out: Record<string, unknown> = {};
        const required = new Set<string>(schema.required ?? []);
        for (const [k, sub] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
          if (required.has(k) || this.chance(0.5)) out[k] = this.field(k, sub, depth + 1);
        }
        return out;
      }
      default:
        return null;
    }
  }

  /** An entity row for `table`: its real columns (foreign keys from the world) and a few meta_data fields. */
  entity(table: string): Record<string, unknown> {
    const row: Record<string, unknown> = { name: `${this.word()} ${this.int(0, 999)}` };
    for (const col of this.world.columnsOf[table] ?? []) {
      if (!this.chance(0.85)) continue;
      if (col.references) row[col.name] = this.entityId(col.references);
      else if (col.name === 'email') row.email = this.field('email', undefined);
      else if (col.name === 'password') row.password = 'fuzz-password-y';
      else if (col.type === 'integer') row[col.name] = this.int(0, 10);
      else if (col.type === 'boolean') row[col.name] = this.chance(0.5);
      else if (col.type === 'json') row[col.name] = { a: [1, 2], b: this.word() };
      else row[col.name] = this.word();
    }
    if (this.chance(0.5)) row.description = this.word();
    if (this.chance(0.3)) row.meta = { nested: { k: this.int(0, 9) } };
    if (table === 'userprofiles' && this.chance(0.5)) row.accessAllowed = { units: [this.entityId('units')], sites: [], orgs: [] };
    if (table === 'users' && this.chance(0.2)) row.role = this.pick(['admin', 'read-only', 'read-write', 'root']);
    return row;
  }
}

// ---- a request: valid form, then mutations ----------------------------------------------------

/** The body before encoding, so that mutations can work on values or on bytes. */
type Body =
  | { kind: 'json'; value: unknown; contentType: string }
  | { kind: 'bytes'; bytes: Buffer; contentType: string };

export interface Draft {
  op: Operation | null;
  group: string;
  method: string;
  pathParams: Record<string, string>;
  /** Query as ordered pairs, already percent-encoded. */
  query: Array<[string, string]>;
  headers: Record<string, string>;
  identity: string;
  body: Body | null;
  /** Literal text spliced into the JSON for placeholders (raw numbers, deep nesting, duplicate keys). */
  splices: Map<string, string>;
  mutations: string[];
  fresh: boolean;
  raw: Buffer | null;
  /** Path built by a route-level mutation, replacing the template. */
  pathOverride: string | null;
}

/** encodeURIComponent that also takes lone surrogates (sent as the invalid UTF-8 bytes ED A0 80). */
function enc(s: string): string {
  // With the u flag the class matches only surrogates that are not half of a pair.
  return s.split(/([\ud800-\udfff])/u).map((part) => (/^[\ud800-\udfff]$/u.test(part) ? '%ED%A0%80' : encodeURIComponent(part))).join('');
}

function draftFor(op: Operation, g: Gen): Draft {
  const d: Draft = {
    op, group: op.group, method: op.method, pathParams: {}, query: [], headers: {}, identity: 'none', body: null,
    splices: new Map(), mutations: [], fresh: false, raw: null, pathOverride: null,
  };
  const segments = op.path.split('/');
  const urlName = segments[2] ?? '';
  const table = g.world.tableOf[urlName];
  const destructive = op.method === 'DELETE' || /\/admin\/user\/delete$/.test(op.path);
  for (const name of op.pathParams) {
    // Segment before the parameter names the entity (/orgs/{id}, /sites/{childId}).
    const before = segments[segments.indexOf(`{${name}}`) - 1] ?? '';
    const paramTable = g.world.tableOf[before];
    let value: string;
    if (name === 'model') value = g.pick(g.world.urlNames);
    else if (name === 'relationship') value = g.pick([...g.world.urlNames, 'parent', 'nothing']);
    else if (op.path.includes('tag_mappings')) value = g.chance(0.8) ? g.pick(g.world.mappingIds) : String(g.int(1, 50));
    else if (op.path.includes('/collection/')) value = Object.values(g.scope()).join('/');
    else if (op.path.startsWith('/sensordata/')) value = String(g.int(0, 5));
    // The run's own accounts stay: deleting them would only turn the rest of the run into 401s.
    else if (destructive && (paramTable === 'users' || paramTable === 'userprofiles')) value = String(g.int(1000, 2000));
    // Deleting a tenant's org, site or unit removes its collections: seldom, so valid requests stay valid.
    else if (destructive && ['orgs', 'sites', 'units'].includes(paramTable ?? '') && g.chance(0.9)) value = String(g.int(1000, 2000));
    else value = g.entityId(paramTable);
    d.pathParams[name] = value;
  }
  for (const q of op.query) {
    if (!q.required && !g.chance(q.name === 'filter' || q.name === 'where' ? 0.6 : 0.5)) continue;
    if (q.name === 'filter') d.query.push(['filter', enc(JSON.stringify(g.filter()))]);
    else if (q.name === 'where') d.query.push(['where', enc(JSON.stringify(g.where()))]);
    else {
      const v = g.field(q.name, q.schema);
      for (const one of Array.isArray(v) ? v : [v]) d.query.push([q.name, enc(typeof one === 'string' ? one : JSON.stringify(one))]);
    }
  }
  // Deleting or updating by where without one hits every row (where={} too): kept rare, so the world
  // the valid requests are built on lasts the run; never on accounts.
  const byWhere = (op.method === 'DELETE' && op.query.some((q) => q.name === 'where')) || op.path.endsWith('/update');
  if (byWhere && (g.chance(0.9) || !d.query.some(([k]) => k === 'where' || k === 'filter'))) {
    d.query = d.query.filter(([k]) => k !== 'where' && k !== 'filter');
    d.query.push(['where', enc(JSON.stringify(g.chance(0.9) ? { name: `gone-${g.int(0, 99)}` } : {}))]);
  }
  if (op.method === 'DELETE' && (table === 'users' || table === 'userprofiles')) {
    d.query = d.query.filter(([k]) => k !== 'where' && k !== 'filter');
    d.query.push(['where', enc(JSON.stringify({ email: 'nobody@fuzz.test' }))]);
  }

  if (op.body) {
    const types = op.body.types;
    if (types.includes('application/octet-stream') && types.includes('application/msgpack')) {
      d.body = pointsBody(g);
    } else if (op.body.schema && (op.body.schema.properties || op.body.schema.type === 'array' && op.body.schema.items?.properties)) {
      d.body = { kind: 'json', value: g.fromSchema(op.body.schema), contentType: 'application/json' };
    } else if (table) {
      const value = op.path.endsWith('/bulk') ? [g.entity(table), g.entity(table)] : g.entity(childTable(op.path, g.world) ?? table);
      d.body = { kind: 'json', value, contentType: 'application/json' };
    } else {
      d.body = { kind: 'json', value: g.fromSchema(op.body.schema ?? {}), contentType: 'application/json' };
    }
    if (destructive && d.body.kind === 'json' && d.body.value && typeof d.body.value === 'object' && 'email' in (d.body.value as object)) {
      (d.body.value as Record<string, unknown>).email = `gone-${g.int(0, 99)}@fuzz.test`;
    }
    // Renaming the tenants' rows would move their collections away from the valid requests; seldom.
    const renames = op.method === 'PUT' || op.method === 'PATCH' || op.path.endsWith('/update');
    if (renames && table && d.body.kind === 'json' && d.body.value && typeof d.body.value === 'object' && !Array.isArray(d.body.value) && g.chance(0.9)) {
      delete (d.body.value as Record<string, unknown>).name;
    }
  }

  if (!op.isPublic) {
    const identity = g.pick(g.world.identities);
    d.identity = identity.name;
    if (identity.token) d.headers.authorization = `Bearer ${identity.token}`;
  }
  if (g.chance(0.05)) d.headers.accept = 'application/msgpack';
  return d;
}

/** For nested routes the body is a row of the last named entity (/orgs/{id}/sites → sites). */
function childTable(template: string, world: World): string | undefined {
  const names = template.split('/').filter((s) => s && !s.startsWith('{') && s !== 'svcapi');
  for (let i = names.length - 1; i >= 0; i--) if (world.tableOf[names[i]!]) return world.tableOf[names[i]!];
  return undefined;
}

/** A write body in one of the four encodings (tag keyed or columnar JSON, msgpack, HSW1). */
function pointsBody(g: Gen): Body {
  const tags = g.tags();
  const scope = g.chance(0.85) ? g.scope() : null;
  const n = g.int(1, 20);
  const encoding = g.pick(['json', 'json', 'columnar', 'msgpack', 'hsw1']);
  if (encoding === 'hsw1') {
    const timestamps = g.points(n).map(([ts]) => ts);
    const bytes = encodeBinaryBatch(scope ?? {}, timestamps, tags.map((name) => ({ name, values: timestamps.map(() => Math.round(g.r() * 1000) / 10) })));
    return { kind: 'bytes', bytes: Buffer.from(bytes), contentType: 'application/octet-stream' };
  }
  const value =
    encoding === 'columnar'
      ? (() => {
          const timestamps = g.points(n).map(([ts]) => ts);
          return { ...scope, timestamps, columns: Object.fromEntries(tags.map((t) => [t, timestamps.map(() => (g.chance(0.1) ? null : g.int(0, 1000) / 10))])) };
        })()
      : { ...scope, tags: Object.fromEntries(tags.map((t) => [t, g.points(n)])) };
  if (encoding === 'msgpack') return { kind: 'bytes', bytes: Buffer.from(pack(value)), contentType: 'application/msgpack' };
  return { kind: 'json', value, contentType: 'application/json' };
}

const ODD_STRINGS = [
  '\u0000', '\ud800', '\udfff\ud800', '\u202e\u0645\u0631\u062d\u0628\u0627', '\u200b', '\ufeff', 'e\u0301\u0301\u0301', '\ud83d\ude00\ud83d\udc69\u200d\ud83d\udc69\u200d\ud83d\udc67',
  '\u0430\u0441m\u0435', '..', '../../etc/passwd', '%2e%2e%2f', 'a/b', 'C:\\con\\aux', "'; DROP TABLE users; --", '$where', '__proto__', 'constructor',
  '\u0000'.repeat(64), 'x'.repeat(100_000), '\u{10ffff}', '\r\nX-Injected: 1', '{"$gt": ""}',
];
const HUGE_NUMBERS = ['1e308', '-1e308', '1e309', '-1e309', '9007199254740993', '18446744073709551616', '123456789012345678901234567890', '-0', '0.1e-400', '1.7976931348623157e308', '4.9e-324'];
const BAD_CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/msgpack', 'application/octet-stream', 'application/json; charset=utf-16', 'application/xml', '', '*/*', 'application/x-msgpack'];

/** Every path to a node of a JSON value (objects and arrays), root first. */
function nodePaths(value: unknown, at: Array<string | number> = [], out: Array<Array<string | number>> = [], budget = { n: 200 }): Array<Array<string | number>> {
  if (budget.n-- <= 0) return out;
  out.push(at);
  if (Array.isArray(value)) value.slice(0, 20).forEach((v, i) => nodePaths(v, [...at, i], out, budget));
  else if (value && typeof value === 'object') for (const k of Object.keys(value).slice(0, 20)) nodePaths((value as Record<string, unknown>)[k], [...at, k], out, budget);
  return out;
}

function setAt(root: unknown, at: Array<string | number>, value: unknown): unknown {
  if (at.length === 0) return value;
  let node = root as Record<string | number, unknown>;
  for (const key of at.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[at[at.length - 1]!] = value;
  return root;
}

/** Placeholder string spliced into the encoded JSON (so the value can be text JSON.stringify cannot make). */
function splice(d: Draft, text: string): string {
  const marker = `__fuzz_splice_${d.splices.size}__`;
  d.splices.set(`"${marker}"`, text);
  return marker;
}

type Mutation = (d: Draft, g: Gen) => boolean;

/** Body mutations; each returns false when it does not apply to this draft. */
const BODY_MUTATIONS: Record<string, Mutation> = {
  'wrong-type': (d, g) => {
    if (d.body?.kind !== 'json') return false;
    const at = g.pick(nodePaths(d.body.value));
    d.body.value = setAt(d.body.value, at, g.pick<unknown>([42, 'text', [], {}, null, true, [[1, 2]], -1, { $gt: 0 }]));
    return true;
  },
  'huge-number': (d, g) => {
    if (d.body?.kind !== 'json') return false;
    const at = g.pick(nodePaths(d.body.value));
    d.body.value = setAt(d.body.value, at, splice(d, g.pick(HUGE_NUMBERS)));
    return true;
  },
  'deep-nesting': (d, g) => {
    if (d.body?.kind !== 'json') return false;
    const depth = g.pick([64, 1001, 5000, 20000]);
    const open = g.chance(0.5) ? '[' : '{"a":';
    const close = open === '[' ? ']' : '}';
    const at = g.pick(nodePaths(d.body.value));
    d.body.value = setAt(d.body.value, at, splice(d, `${open.repeat(depth)}1${close.repeat(depth)}`));
    return true;
  },
  'odd-unicode': (d, g) => {
    if (d.body?.kind !== 'json') return false;
    const odd = g.pick(ODD_STRINGS);
    const at = g.pick(nodePaths(d.body.value));
    const target = at.length === 0 ? d.body.value : null;
    if (g.chance(0.4) && at.length > 0 && typeof at[at.length - 1] === 'string') {
      // Odd key: rename the node's key.
      const parentPath = at.slice(0, -1);
      let parent = d.body.value as Record<string, unknown>;
      for (const k of parentPath) parent = parent[k as string] as Record<string, unknown>;
      const key = at[at.length - 1] as string;
      parent[`${key}${odd}`] = parent[key];
      delete parent[key];
    } else if (target === null) {
      d.body.value = setAt(d.body.value, at, odd);
    } else {
      d.body.value = odd;
    }
    return true;
  },
  'duplicate-keys': (d, g) => {
    if (d.body?.kind !== 'json' || !d.body.value || typeof d.body.value !== 'object' || Array.isArray(d.body.value)) return false;
    const obj = d.body.value as Record<string, unknown>;
    const key = g.chance(0.6) ? g.pick(['organization', 'site', 'unit', 'grid', 'email', 'tags', 'id', 'role']) : g.pick(Object.keys(obj).concat('name'));
    const other = g.pick<unknown>(['evil', 's2', 'u2', 'main', 'admin', 1, {}]);
    // A first and a second value for the same key, and sometimes the key spelled with escapes.
    const spelled = g.chance(0.3) ? key.replace(/[a-z]/, (ch) => `\\u00${ch.charCodeAt(0).toString(16)}`) : key;
    obj.__fuzz_dup__ = splice(d, 'null');
    d.splices.set('"__fuzz_dup__":null', `"${spelled}":${JSON.stringify(other)}`);
    return true;
  },
  'bad-content-type': (d, g) => {
    if (!d.body) return false;
    d.body.contentType = g.pick(BAD_CONTENT_TYPES);
    return true;
  },
  'truncated-body': (d, g) => {
    if (!d.body) return false;
    const bytes = encodeBody(d);
    if (bytes.length < 2) return false;
    d.body = { kind: 'bytes', bytes: bytes.subarray(0, g.int(1, bytes.length - 1)), contentType: d.body.contentType };
    d.splices.clear();
    return true;
  },
  'empty-body': (d) => {
    if (!d.body) return false;
    d.body = { kind: 'bytes', bytes: Buffer.alloc(0), contentType: d.body.contentType };
    return true;
  },
  'garbage-body': (d, g) => {
    const bytes = Buffer.from(Array.from({ length: g.int(1, 300) }, () => g.int(0, 255)));
    if (g.chance(0.3)) bytes.write('HSW1', 0, 'latin1');
    d.body = { kind: 'bytes', bytes, contentType: d.body?.contentType ?? g.pick(BAD_CONTENT_TYPES) };
    return true;
  },
  'odd-msgpack': (d, g) => {
    if (d.body?.kind !== 'json' && !d.op?.body?.types.includes('application/msgpack')) return false;
    const value = d.body?.kind === 'json' ? d.body.value : {};
    const weird = g.pick<unknown>([new Map<unknown, unknown>([[1, 2], [{}, 'x']]), new Date(0), Buffer.from('bin'), 2n ** 70n, new Set([1]), [undefined], { __proto__: { polluted: true } }]);
    const mixed = value && typeof value === 'object' && !Array.isArray(value) ? { ...value, [g.pick(['tags', 'organization', 'email', 'metrics', 'x'])]: weird } : weird;
    let bytes: Buffer;
    try {
      bytes = Buffer.from(pack(mixed));
    } catch {
      return false;
    }
    d.body = { kind: 'bytes', bytes, contentType: 'application/msgpack' };
    d.splices.clear();
    return true;
  },
  'large-body': (d, g) => {
    if (d.body?.kind !== 'json') return false;
    const at = g.pick(nodePaths(d.body.value));
    d.body.value = setAt(d.body.value, at, Array.from({ length: g.pick([10_001, 50_000]) }, (_, i) => i));
    return true;
  },
};

/** Mutations that know the shapes of point bodies and queries (they apply only where those are). */
const DOMAIN_MUTATIONS: Record<string, Mutation> = {
  'odd-tag-name': (d, g) => {
    const name = g.pick(['', '\u0000', '..', 'a/b', 'T'.repeat(70_000), '\ud800', '\u202eTI', 'TI-101\u0000x', ' TI-101', 'tags', '__proto__', '%00']);
    const value = d.body?.kind === 'json' ? (d.body.value as Record<string, unknown>) : null;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const map = (value.tags && typeof value.tags === 'object' && !Array.isArray(value.tags) ? value.tags : value.columns ?? value.data) as Record<string, unknown> | undefined;
      if (map && typeof map === 'object' && !Array.isArray(map)) {
        const key = Object.keys(map)[0];
        if (key !== undefined) {
          map[name] = map[key];
          delete map[key];
          return true;
        }
      }
      if (Array.isArray(value.tags) || Array.isArray(value.metrics)) {
        if (Array.isArray(value.tags)) value.tags = [name, ...value.tags.slice(1)];
        else (value.metrics as Array<Record<string, unknown>>)[0] = { name };
        return true;
      }
    }
    if (d.body?.contentType === 'application/octet-stream' && name.length < 65_536) {
      const ts = g.points(2).map(([t]) => t);
      d.body = { kind: 'bytes', bytes: Buffer.from(encodeBinaryBatch(g.scope(), ts, [{ name, values: [1, 2] }])), contentType: d.body.contentType };
      return true;
    }
    if (d.query.some(([k]) => k === 'tags')) {
      d.query.push(['tags', enc(name)]);
      return true;
    }
    return false;
  },
  'odd-points': (d, g) => {
    const oddTs = g.pick<number>([-1, 0, 1.5, 2 ** 53, 2 ** 53 + 2, 1e300, Number.NaN, Number.POSITIVE_INFINITY, -0, 99_999_999_999]);
    const oddValue = g.pick<number>([Number.NaN, Number.POSITIVE_INFINITY, -0, 1.7976931348623157e308, 5e-324, -1e308]);
    if (d.body?.contentType === 'application/octet-stream' && d.op?.body?.types.includes('application/octet-stream')) {
      const rows = g.pick([1, 3, 100_000]);
      const ts = Array.from({ length: Math.min(rows, 1000) }, (_, i) => (i === 0 ? oddTs : g.world.window[0] + i * 1000));
      const bytes = Buffer.from(encodeBinaryBatch(g.scope(), ts, [{ name: g.pick(g.tags()), values: ts.map(() => oddValue) }]));
      if (rows > 1000) bytes.writeUInt32LE(rows, 8); // a row count the body does not hold
      d.body = { kind: 'bytes', bytes, contentType: d.body.contentType };
      return true;
    }
    const value = d.body?.kind === 'json' ? d.body.value : null;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
    const tags = (value as Record<string, unknown>).tags ?? (value as Record<string, unknown>).data;
    if (!tags || typeof tags !== 'object' || Array.isArray(tags)) return false;
    const first = Object.keys(tags)[0];
    if (first === undefined) return false;
    // Text JSON cannot say NaN: those become the raw numbers the parser must refuse.
    const show = (n: number) => (Number.isFinite(n) ? n : splice(d, g.pick(['NaN', 'Infinity', '1e400', '-1e400'])));
    (tags as Record<string, unknown>)[first] = g.pick<unknown>([
      [[show(oddTs), 1]],
      [[g.world.window[0], show(oddValue)]],
      [[g.world.window[0]]],
      [[g.world.window[0], 1, 2]],
      [[String(g.world.window[0]), '1']],
      Array.from({ length: 20_000 }, (_, i) => [g.world.window[0] + i, i]),
      {},
    ]);
    return true;
  },
  'odd-aggregator': (d, g) => {
    const value = d.body?.kind === 'json' ? (d.body.value as Record<string, unknown>) : null;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
    const odd = g.pick<object>([
      { name: 'avg', sampling: { value: 0, unit: 'seconds' } },
      { name: 'avg', sampling: { value: -1, unit: 'minutes' } },
      { name: 'avg', sampling: { value: 1e308, unit: 'years' } },
      { name: 'gaps', sampling: { value: 1, unit: 'milliseconds' } },
      { name: 'avg', sampling: { value: 1, unit: 'fortnights' } },
      { name: 'percentile', sampling: { value: 1, unit: 'minutes' }, percentile: 2 },
      { name: 'div', divisor: 0 },
      { name: 'scale', factor: 'x' },
      { name: 'filter', filter_op: 'regex', threshold: {} },
      { name: 'sampler', unit: 'eons' },
      { name: 'trim', trim: 'middle' },
      { name: 'constructor' },
      { sampling: { value: 1, unit: 'seconds' } },
    ]);
    if (Array.isArray(value.metrics) && value.metrics.length > 0 && typeof value.metrics[0] === 'object') {
      (value.metrics[0] as Record<string, unknown>).aggregators = [odd];
    } else if ('aggregators' in value || d.op?.path.includes('fast_query')) {
      value[g.chance(0.5) ? 'aggregators' : 'pipeline'] = [odd];
    } else {
      return false;
    }
    if (g.chance(0.5)) {
      // The whole range of time, where a bucket count guard must answer before any work.
      value.start_absolute = 0;
      value.end_absolute = 9007199254740991;
      if ('start' in value) Object.assign(value, { start: 0, end: 9007199254740991 });
    }
    return true;
  },
};

const TOKEN_MUTATIONS: Record<string, Mutation> = {
  'no-token': (d) => {
    delete d.headers.authorization;
    d.identity = 'none';
    return true;
  },
  'bad-token': (d, g) => {
    const valid = g.pick(g.world.identities).token ?? 'x';
    const [h, p, s] = valid.split('.');
    const tamperedPayload = Buffer.from(JSON.stringify({ sub: 'admin@localhost', role: 'admin', units_id: [], sites_id: [], orgs_id: [], exp: 9999999999 })).toString('base64url');
    const choice = g.pick([
      ['empty', 'Bearer '],
      ['garbage', 'Bearer not-a-token'],
      ['three-dots', 'Bearer a.b.c'],
      ['alg-none', `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${tamperedPayload}.`],
      ['tampered', `Bearer ${h}.${tamperedPayload}.${s}`],
      ['truncated', `Bearer ${valid.slice(0, -5)}`],
      ['appended', `Bearer ${valid}x`],
      ['wrong-scheme', `Basic ${Buffer.from('admin:admin').toString('base64')}`],
      ['lowercase-bearer', `bearer ${valid}`],
      ['double-space', `Bearer  ${valid}`],
      ['huge', `Bearer ${'A'.repeat(12_000)}`],
      ['bare', valid],
      ['payload-only', `Bearer ${p}`],
    ] as const);
    d.headers.authorization = choice[1];
    d.identity = `bad-token:${choice[0]}`;
    return true;
  },
  'other-identity': (d, g) => {
    const crafted = Object.entries(g.world.crafted);
    if (crafted.length > 0 && g.chance(0.4)) {
      const [name, token] = g.pick(crafted);
      d.headers.authorization = `Bearer ${token}`;
      d.identity = `crafted:${name}`;
    } else {
      const id = g.pick(g.world.identities);
      if (id.token) d.headers.authorization = `Bearer ${id.token}`;
      d.identity = id.name;
    }
    return true;
  },
  'token-in-query': (d, g) => {
    const id = g.pick(g.world.identities);
    if (!id.token) return false;
    const name = g.pick(['access_token', 'token', 'access%5Ftoken', 'ACCESS_TOKEN', '%61ccess_token', 'Authorization']);
    d.query.push([name, id.token]);
    if (g.chance(0.5)) delete d.headers.authorization;
    d.identity = `query:${name}`;
    return true;
  },
};

const QUERY_MUTATIONS: Record<string, Mutation> = {
  'query-drop-required': (d) => {
    const required = d.op?.query.find((q) => q.required);
    if (!required) return false;
    d.query = d.query.filter(([k]) => k !== required.name);
    return true;
  },
  'query-wrong-value': (d, g) => {
    if (d.query.length === 0 && !d.op?.query.length) return false;
    const name = d.query.length > 0 ? g.pick(d.query)[0] : g.pick(d.op!.query).name;
    d.query.push([name, enc(g.pick(['abc', '-1', '1e309', '9007199254740993', '', '[]', '{', 'null', '1.5', '0x10', ' 1']))]);
    return true;
  },
  'query-odd-encoding': (d, g) => {
    d.query.push([g.pick(['filter', 'where', 'tags', 'start', 'x', 'filter[where][name][regexp]', 'filter[where][a][inq][]', 'filter[limit]']), g.pick(['%', '%zz', '%00', '%ff%fe', '%u0041', '%C0%AE%C0%AE', enc(g.pick(ODD_STRINGS).slice(0, 200)), '%E2%80%AE'])]);
    return true;
  },
  'query-filter-odd': (d, g) => {
    if (!d.op?.query.some((q) => q.name === 'filter')) return false;
    const odd = g.pick<unknown>([
      { where: { name: { regexp: '/(a+)+$/' } } },
      { where: { 'meta_data.$': 1 } },
      { where: { name: { inq: Array.from({ length: 5000 }, (_, i) => i) } } },
      { order: 'name; DROP TABLE users' },
      { limit: -1, skip: -5 },
      { limit: 1e308 },
      { where: { or: Array.from({ length: 200 }, () => ({ name: 'a' })) } },
      { fields: { password: true } },
      { include: ['users', 'userprofiles', 'password'] },
      { where: { '__proto__': { x: 1 } } },
      'not json',
    ]);
    d.query = d.query.filter(([k]) => k !== 'filter');
    d.query.push(['filter', enc(typeof odd === 'string' ? odd : JSON.stringify(odd))]);
    return true;
  },
  'query-long': (d, g) => {
    // The tag list of a GET query past the URL length uWS reads (~16 KB), or a long value.
    const [n, width] = g.pick([[100, 4], [600, 40], [2000, 60]] as const);
    for (let i = 0; i < n; i++) d.query.push(['tags', `T${String(i).padStart(width, '0')}`]);
    return true;
  },
};

const PATH_MUTATIONS: Record<string, Mutation> = {
  'path-odd-id': (d, g) => {
    const names = Object.keys(d.pathParams);
    if (names.length === 0) return false;
    d.pathParams[g.pick(names)] = g.pick(['0', '-1', '1.5', '99999999999999999999999', '1e3', 'abc', '%00', '%2e%2e', '..%2f..%2f', '%2F', enc('\u202e'), 'x'.repeat(2000), '%', ' ', '+', 'null', 'undefined', '__proto__']);
    return true;
  },
  'wrong-method': (d, g) => {
    d.method = g.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => m !== d.method));
    return true;
  },
};

/** Whole requests outside the route table. */
function unknownRouteDraft(g: Gen): Draft {
  const d: Draft = {
    op: null, group: UNKNOWN_ROUTE, method: g.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']), pathParams: {}, query: [], headers: {}, identity: 'none', body: null,
    splices: new Map(), mutations: ['unknown-route'], fresh: false, raw: null, pathOverride: null,
  };
  d.pathOverride = g.pick([
    `/svcapi/${g.word().replace(/\W/g, '')}`, '/', '/svcapi', '/svcapi/', '//svcapi//orgs', '/svcapi/ORGS', '/svcapi/orgs/', '/svcapi/orgs/1/2/3/4/5/6/7',
    '/svcapi/../../etc/passwd', '/svcapi/%2e%2e/%2e%2e/etc/passwd', '/elog/events', '/dataflow/ems/x', '/svcapi/update_password', '/svcapi/notifications/stream',
    `/svcapi/${'a/'.repeat(200)}`, '/svcapi/orgs%00', '/svcapi/orgs;x=1', `/${enc('\u202e')}`, '/svcapi/_debug/crash_shard', '/ingest/health/', '/svcapi/openapi.yaml/x',
  ]);
  if (d.method !== 'GET' && g.chance(0.5)) d.body = { kind: 'json', value: { a: 1 }, contentType: 'application/json' };
  if (g.chance(0.5)) {
    const id = g.pick(g.world.identities);
    if (id.token) d.headers.authorization = `Bearer ${id.token}`;
    d.identity = id.name;
  }
  return d;
}

const ODD_METHODS = ['OPTIONS', 'TRACE', 'PROPFIND', 'FOO', 'M-SEARCH', 'LINK', 'PURGE'];

/** Methods the table has no route for, HTTP that Node's client would not send, HEAD. */
/** Raw requests made so far in a run (its world), so their kinds go round. */
const rawTurns = new WeakMap<World, number>();

function unknownMethodDraft(g: Gen, ops: Operation[]): Draft {
  const op = g.pick(ops);
  const d = draftFor(op, g);
  d.group = UNKNOWN_METHOD;
  d.fresh = true;
  const kind = g.pick(['method', 'method', 'method', 'head', 'head', 'head', 'raw']);
  if (kind === 'method') {
    d.method = g.pick(ODD_METHODS);
    d.mutations.push(`method-${d.method}`);
  } else if (kind === 'head') {
    d.method = 'HEAD';
    d.body = null;
    d.mutations.push('head-keep-alive');
  } else {
    // In turn, not at random: a few dozen raw requests then cover every kind whatever the seed.
    const kinds = [...VALID_RAW, ...INVALID_RAW];
    const turn = rawTurns.get(g.world) ?? 0;
    rawTurns.set(g.world, turn + 1);
    const target = kinds[turn % kinds.length]!;
    d.mutations.push(`raw-${target}`);
    d.raw = rawRequest(target, g, d);
  }
  return d;
}

/** Raw requests that are valid HTTP/1.x: each deserves an answer (a 4xx at worst). */
const VALID_RAW = ['chunked-body', 'huge-header', 'http10', 'pipelined'];
/** Raw requests that are not valid HTTP: closing the connection is a fine answer, a hang is not. */
const INVALID_RAW = ['chunked-bad-size', 'length-mismatch', 'bytes-in-path', 'bad-request-line'];

function rawRequest(kind: string, g: Gen, d: Draft): Buffer {
  const auth = d.headers.authorization ? `authorization: ${d.headers.authorization}\r\n` : '';
  const body = Buffer.from(JSON.stringify({ organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main', tags: { 'TI-101': [[Date.now(), 1]] } }));
  const head = (extra: string, target = '/svcapi/write') => Buffer.from(`POST ${target} HTTP/1.1\r\nhost: localhost\r\n${auth}content-type: application/json\r\nconnection: close\r\n${extra}\r\n`, 'latin1');
  switch (kind) {
    case 'chunked-body':
    case 'chunked-bad-size': {
      const half = Math.floor(body.length / 2);
      const chunk = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
      return Buffer.concat([head('transfer-encoding: chunked\r\n'), chunk(body.subarray(0, half)), chunk(body.subarray(half)), Buffer.from(kind === 'chunked-body' ? '0\r\n\r\n' : 'zz\r\n\r\n')]);
    }
    case 'huge-header':
      return Buffer.concat([Buffer.from(`GET /ingest/health HTTP/1.1\r\nhost: localhost\r\nx-big: ${'b'.repeat(g.pick([8000, 20_000, 70_000]))}\r\nconnection: close\r\n\r\n`)]);
    case 'length-mismatch':
      return Buffer.concat([head(`content-length: ${body.length - 10}\r\ncontent-length: ${body.length}\r\n`), body]);
    case 'bytes-in-path':
      return Buffer.concat([Buffer.from('GET /svcapi/orgs/'), Buffer.from([0xff, 0xfe, 0x00, 0xc0, 0xae]), Buffer.from(` HTTP/1.1\r\nhost: localhost\r\n${auth}connection: close\r\n\r\n`)]);
    case 'http10':
      return Buffer.from(`GET /ingest/health HTTP/1.0\r\nhost: localhost\r\n\r\n`);
    case 'pipelined':
      return Buffer.from(`GET /ingest/health HTTP/1.1\r\nhost: localhost\r\n\r\nGET /ingest/health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n`);
    default:
      return Buffer.from(g.pick(['GET\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', ' / HTTP/1.1\r\n\r\n', 'GET /ingest/health HTTP/1.1\r\nbad header line\r\n\r\n', '\r\n\r\n\r\n']));
  }
}

function encodeBody(d: Draft): Buffer {
  if (!d.body) return Buffer.alloc(0);
  if (d.body.kind === 'bytes') return d.body.bytes;
  let text = JSON.stringify(d.body.value) ?? 'null';
  for (const [marker, raw] of d.splices) text = text.split(marker).join(raw);
  return Buffer.from(text, 'utf8');
}

function pathOf(d: Draft): string {
  let p = d.pathOverride ?? d.op!.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = d.pathParams[name] ?? '1';
    // Mutated ids are already in their wire form; generated ones are encoded here.
    return /%|^\s|\s$/.test(v) || v.length > 500 ? v.replace(/ /g, '%20') : enc(v);
  });
  if (d.query.length > 0) p += `?${d.query.map(([k, v]) => `${k}=${v}`).join('&')}`;
  return p;
}

function toWire(d: Draft): WireRequest {
  const headers = { ...d.headers };
  let body: Buffer | undefined;
  if (d.body) {
    body = encodeBody(d);
    if (d.body.contentType) headers['content-type'] = d.body.contentType;
  }
  // A raw request is a POST when it carries a write body (its first bytes say so).
  const method = d.raw ? d.raw.subarray(0, 5).toString('latin1').split(' ')[0]! : d.method;
  return { method, path: pathOf(d), headers, body, fresh: d.fresh || d.method !== d.op?.method, raw: d.raw ?? undefined };
}

const MUTATION_FAMILIES: Array<Record<string, Mutation>> = [BODY_MUTATIONS, DOMAIN_MUTATIONS, TOKEN_MUTATIONS, QUERY_MUTATIONS, PATH_MUTATIONS];

/** Every mutation the generator applies, by the name the report counts it under. */
export const MUTATION_NAMES: readonly string[] = [
  ...MUTATION_FAMILIES.flatMap((family) => Object.keys(family)),
  'unknown-route',
  'head-keep-alive',
  ...PROTOCOL_KINDS.map((k) => `protocol-${k}`),
  ...ODD_METHODS.map((m) => `method-${m}`),
  ...[...VALID_RAW, ...INVALID_RAW].map((k) => `raw-${k}`),
];

/** Request number `index` of the run: the same for the same seed and world, whatever came before. */
function generate(index: number, seed: number, world: World, ops: Operation[], groups: Map<string, Operation[]>): Draft {
  const g = new Gen(prng((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0), world);
  // First every operation once (valid, so each route is reached at least once as intended), then at random.
  if (index < ops.length) return draftFor(ops[index]!, g);
  const names = [...groups.keys(), UNKNOWN_ROUTE, UNKNOWN_METHOD, PROTOCOL_GROUP];
  const group = g.pick(names);
  if (group === UNKNOWN_ROUTE) return unknownRouteDraft(g);
  if (group === UNKNOWN_METHOD) return unknownMethodDraft(g, ops);
  // Bodies and queries the document cannot describe; mostly sent as built, so they reach the parsers.
  const protocol = group === PROTOCOL_GROUP ? protocolDraft(g, ops, (op) => draftFor(op, g)) : null;
  if (group === PROTOCOL_GROUP && (!protocol || g.chance(0.6))) return protocol ?? unknownRouteDraft(g);
  const d = protocol ?? draftFor(g.pick(groups.get(group)!), g);
  if (!protocol && g.chance(0.35)) return d; // valid
  const count = (g.chance(0.75) ? 1 : 2) + (protocol ? 1 : 0);
  for (let tries = 0; d.mutations.length < count && tries < 12; tries++) {
    const family = d.body && g.chance(0.45) ? BODY_MUTATIONS : g.pick(MUTATION_FAMILIES);
    const name = g.pick(Object.keys(family));
    if (family[name]!(d, g)) d.mutations.push(name);
  }
  return d;
}

// ---- judging ----------------------------------------------------------------------------------

/**
 * Backpressure the contract allows: a full ring or buffer, the disk floor, a rename waiting for
 * another one's folder move (Retry-After 1), request bodies over their shared budget. Not a
 * stall or a crash.
 */
const ALLOWED_UNAVAILABLE =
  /request ring full|write buffer of shard \d+ is full|below storage\.minFreeBytes|no space left|are being moved; retry in a moment|server\.maxBodyBytesInFlight/;

/**
 * The proxied services' upstreams are not set under fuzz (no Qdrant or agent service to point
 * at): their routes answer the documented 501 naming the setting (a HEAD, without the body).
 */
const ALLOWED_NOT_CONFIGURED = /"(vector\.qdrantUrl|adk\.baseUrl) is not set"/;

function judge(d: Draft, o: Outcome): { kind: FailureKind; status: number | null } | null {
  if (o.timedOut) return d.raw && INVALID_RAW.some((k) => d.mutations.includes(`raw-${k}`)) ? null : { kind: 'hang', status: null };
  if (o.error && !o.abandoned) {
    if (o.error.startsWith('not sent')) return null;
    // Closing the connection is a fine answer to bytes that are not HTTP.
    if (d.raw && INVALID_RAW.some((k) => d.mutations.includes(`raw-${k}`))) return null;
    return { kind: 'connection', status: o.status };
  }
  if (o.status !== null && o.status >= 500) {
    if ((o.status === 503 || o.status === 507) && ALLOWED_UNAVAILABLE.test(o.text)) return null;
    // PromQL past its timeout (the request's `timeout`, e.g. 0, or promql.timeoutMs): 503 errorType timeout, as Prometheus answers (README).
    if (o.status === 503 && /"errorType":"timeout"/.test(o.text) && /^\/api\/v1\/query/.test(d.op?.path ?? '')) return null;
    // The group of the route itself: a HEAD or odd method drafted from a proxied route (group "unknown methods") too.
    if (o.status === 501 && (d.op?.group ?? d.group) === 'Proxied services' && (o.text === '' || ALLOWED_NOT_CONFIGURED.test(o.text))) return null;
    return { kind: o.status === 503 ? 'unavailable' : 'server-error', status: o.status };
  }
  return null;
}

const LONG_URL = 16 * 1024;

/** The route part of a failure class: the template, or what the request was when the route does not matter. */
function routeOf(d: Draft, w?: WireRequest, kind?: FailureKind): string {
  // A connection cut on a long URL is about its length, whatever the route.
  if (kind === 'connection' && w && w.path.length > LONG_URL) return `any route (URL over ${LONG_URL / 1024} KiB)`;
  if (d.group === UNKNOWN_ROUTE) return `${d.method} (${UNKNOWN_ROUTE})`;
  if (d.raw) return `${d.mutations.at(-1)} (raw HTTP)`;
  if (d.group === UNKNOWN_METHOD) return `${d.method} (any route)`;
  return `${d.method} ${d.op!.path}`;
}

/** A request as a reader (or curl) needs it: method, path, headers with tokens named, body. */
function hideSecrets(text: string, secrets: Set<string>): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 8 && out.includes(secret)) out = out.split(secret).join('<token>');
  return out;
}

function describeRequest(d: Draft, w: WireRequest, secrets: Set<string>): string {
  const hide = (s: string) => hideSecrets(s, secrets);
  if (w.raw) return `raw TLS bytes: ${JSON.stringify(hide(w.raw.subarray(0, 400).toString('latin1')))}${w.raw.length > 400 ? ` … (${w.raw.length} bytes)` : ''}`;
  const headers = Object.entries(w.headers).map(([k, v]) => (k === 'authorization' ? `authorization: <${d.identity}>` : `${k}: ${hide(v).slice(0, 100)}`));
  let body = '';
  if (w.body && w.body.length > 0) {
    const isText = !d.body || d.body.contentType.includes('json') || d.body.kind === 'json';
    const shown = isText ? JSON.stringify(hide(w.body.subarray(0, 600).toString('utf8'))) : `hex ${w.body.subarray(0, 200).toString('hex')}`;
    body = ` body(${w.body.length} bytes): ${shown}${w.body.length > 600 ? ' …' : ''}`;
  }
  const p = hide(w.path);
  return `${w.method} ${p.length > 400 ? `${p.slice(0, 400)}… (${p.length} chars)` : p} [${headers.join('; ')}]${body}`;
}

const size = (w: WireRequest) => (w.raw?.length ?? 0) + w.path.length + (w.body?.length ?? 0);

// ---- the run ----------------------------------------------------------------------------------

export async function runFuzz(target: FuzzTarget, options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const transport = new Transport(target, options.concurrency, options.timeoutMs, options.maxResponseBytes);
  try {
    const ops = operationsOf(await fetchText(target, '/svcapi/openapi.yaml'));
    const groups = new Map<string, Operation[]>();
    for (const op of ops) groups.set(op.group, [...(groups.get(op.group) ?? []), op]);
    const world = await buildWorld(target, transport, options.seed, options.bigTagPoints);

    const failures = new Map<string, Failure & { exampleSize: number; exampleDraft: Draft; exampleWire: WireRequest }>();
    const report: FuzzReport = {
      seed: options.seed, requests: 0, operations: ops.length, operationsExercised: 0, byGroup: {}, byStatus: {}, byMutation: {},
      abandonedLargeResponses: 0, generatorErrors: 0, generatorError: null, durationMs: 0, healthOk: false, failures: [],
      ws: { sessions: 0, messages: 0, refused: 0, closes: {} },
    };
    const exercised = new Set<string>();
    const record = (kind: FailureKind, status: number | null, route: string, d: Draft, w: WireRequest, message: string | null) => {
      const key = `${kind} ${status ?? '-'} ${route}`;
      let f = failures.get(key);
      if (!f) {
        f = { kind, key, status, route, count: 0, messages: [], example: '', mutations: [], reproduced: null, exampleSize: Infinity, exampleDraft: d, exampleWire: w };
        failures.set(key, f);
      }
      f.count++;
      if (message && f.messages.length < 5 && !f.messages.includes(message)) f.messages.push(hideSecrets(message, world.secrets));
      if (size(w) < f.exampleSize) {
        f.exampleSize = size(w);
        f.exampleDraft = d;
        f.exampleWire = w;
      }
    };

    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < options.requests) {
        const index = next++;
        let d: Draft;
        let w: WireRequest;
        try {
          d = generate(index, options.seed, world, ops, groups);
          w = toWire(d);
        } catch (err) {
          report.generatorErrors++;
          report.generatorError ??= `request ${index}: ${(err as Error).stack ?? String(err)}`;
          options.progress?.(++done, options.requests);
          continue;
        }
        report.byGroup[d.group] = (report.byGroup[d.group] ?? 0) + 1;
        for (const m of d.mutations) report.byMutation[m] = (report.byMutation[m] ?? 0) + 1;
        if (d.op && d.method === d.op.method) exercised.add(`${d.op.method} ${d.op.path}`);
        let o: Outcome;
        if (d.mutations.includes('head-keep-alive')) {
          const { head, next: after } = await transport.headThenGet(w.path, w.headers);
          o = head;
          if (!head.timedOut && !head.error && (after.status !== 200 || after.error)) {
            record('keep-alive', head.status, 'HEAD (any route)', d, w, `next request on the connection: ${after.status ?? after.error}`);
          }
        } else {
          o = await transport.send(w);
        }
        report.requests++;
        const statusKey = o.status === null ? (o.timedOut ? 'timeout' : 'no answer') : String(o.status);
        report.byStatus[statusKey] = (report.byStatus[statusKey] ?? 0) + 1;
        if (o.abandoned) report.abandonedLargeResponses++;
        options.trace?.({ index, route: routeOf(d), mutations: d.mutations, identity: d.identity, status: o.status, error: o.error, abandoned: o.abandoned, ms: Math.round(o.ms), text: o.text.slice(0, 200) });
        const verdict = judge(d, o);
        if (verdict) record(verdict.kind, verdict.status, routeOf(d, w, verdict.kind), d, w, messageOf(o));
        options.progress?.(++done, options.requests);
      }
    };
    // The live data socket, beside the HTTP requests (so a wedged hub or shard shows on both).
    const wsRun = runWsFuzz(target, world, options.seed, options.wsSessions ?? Math.ceil(options.requests / 500), (rng) => new Gen(rng, world)).then((ws) => {
      report.ws = { sessions: ws.sessions, messages: ws.messages, refused: ws.refused, closes: ws.closes };
      const d = unknownRouteDraft(new Gen(prng(0), world));
      for (const problem of ws.failures) record('websocket', null, 'GET /svcapi/ws (live data socket)', d, { method: 'GET', path: '/svcapi/ws', headers: {} }, problem);
    });
    await Promise.all([...Array.from({ length: options.concurrency }, worker), wsRun]);
    report.operationsExercised = exercised.size;

    // The service must still answer.
    const health = await transport.send({ method: 'GET', path: '/ingest/health', headers: {}, fresh: true });
    report.healthOk = health.status === 200 && /"ok"/.test(health.text);
    if (!report.healthOk) {
      const d = unknownRouteDraft(new Gen(prng(0), world));
      record('health', health.status, 'GET /ingest/health', d, { method: 'GET', path: '/ingest/health', headers: {} }, health.error ?? health.text.slice(0, 200));
    }

    // Server-side messages of 5xx replies, from the log (the reply only says "internal error").
    const serverErrors = errorLinesByPath(target.logLines());
    for (const f of failures.values()) {
      if (f.kind !== 'server-error' && f.kind !== 'unavailable') continue;
      const [method, template = ''] = f.route.split(' ');
      for (const [logRequest, messages] of serverErrors) {
        const [logMethod, logPath = ''] = logRequest.split(' ');
        if (logMethod !== method || !matchesTemplate(template, logPath)) continue;
        for (const m of messages) if (f.messages.length < 8 && !f.messages.includes(m)) f.messages.push(m);
      }
    }

    // Replay the smallest example of each class once, on a fresh connection, to say whether it reproduces on its own.
    if (report.healthOk) {
      for (const f of failures.values()) {
        if (f.kind === 'token-in-log' || f.kind === 'health' || f.kind === 'websocket') continue;
        const o = f.kind === 'keep-alive'
          ? await transport.headThenGet(f.exampleWire.path, f.exampleWire.headers).then(({ head, next: after }) => ({ ...head, status: after.status !== 200 || after.error ? head.status : -1 }))
          : await transport.send({ ...f.exampleWire, fresh: true });
        const again = f.kind === 'keep-alive' ? (o.status === -1 ? null : { kind: f.kind, status: f.status }) : judge(f.exampleDraft, o);
        f.reproduced = again !== null && again.kind === f.kind && again.status === f.status;
      }
    }

    // No token or password of the run in any log line.
    for (const line of target.logLines()) {
      if (![...world.secrets].some((secret) => secret.length >= 8 && line.includes(secret))) continue;
      const hidden = hideSecrets(line, world.secrets);
      const at = hidden.indexOf('<token>');
      const shown = `${at > 250 ? '…' : ''}${hidden.slice(Math.max(0, at - 250), at + 150)}${at + 150 < hidden.length ? '…' : ''}`;
      // One class per query parameter that carried it (or per log message when it was not a query).
      const where = /[?&]([^=&]+)=<token>/.exec(hidden)?.[1] ?? /"msg":"([^"]+)"/.exec(hidden)?.[1] ?? 'log line';
      const d = unknownRouteDraft(new Gen(prng(0), world));
      record('token-in-log', null, where, d, { method: '-', path: shown, headers: {} }, shown);
    }

    report.failures = [...failures.values()].map(({ exampleSize: _s, exampleDraft, exampleWire, ...f }) => ({
      ...f,
      example: f.kind === 'token-in-log' ? exampleWire.path : describeRequest(exampleDraft, exampleWire, world.secrets),
      mutations: exampleDraft.mutations,
    }));
    report.failures.sort((a, b) => a.key.localeCompare(b.key));
    report.durationMs = performance.now() - started;
    return report;
  } finally {
    transport.close();
  }
}

function messageOf(o: Outcome): string | null {
  if (o.error) return o.error;
  try {
    const body = JSON.parse(o.text) as { error?: string; message?: string };
    return (body.error ?? body.message ?? o.text).slice(0, 200);
  } catch {
    return o.text.slice(0, 200) || null;
  }
}

/** Error messages of `request failed` log lines (5xx), by `METHOD path`. */
function errorLinesByPath(lines: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of lines) {
    if (!line.includes('"request failed"') && !line.includes('"level":50')) continue;
    try {
      const entry = JSON.parse(line) as { method?: string; path?: string; err?: { message?: string; type?: string }; msg?: string };
      if (!entry.path || !entry.method) continue;
      const message = `${entry.err?.type ?? ''}: ${entry.err?.message ?? entry.msg ?? ''}`.replace(/\d{3,}/g, 'N').slice(0, 200);
      const key = `${entry.method} ${entry.path}`;
      const list = out.get(key) ?? [];
      if (!list.includes(message)) list.push(message);
      out.set(key, list);
    } catch {
      // not JSON
    }
  }
  return out;
}

function matchesTemplate(template: string, actual: string): boolean {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${template.split(/\{\w+\}/).map(literal).join('[^/]+')}$`).test(actual.split('?')[0]!);
}

/** The whole body of a GET (the document is larger than the judge's excerpt). */
function fetchText(target: FuzzTarget, p: string): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', servername: 'localhost', port: target.port, path: p, ca: target.ca }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`GET ${p} answered ${res.statusCode}`))));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

// ---- report -----------------------------------------------------------------------------------

export function formatReport(r: FuzzReport): string {
  const lines: string[] = [];
  lines.push(`# Fuzz run, seed ${r.seed}`, '');
  lines.push(`${r.requests} requests in ${(r.durationMs / 1000).toFixed(1)} s; ${r.operationsExercised} of ${r.operations} operations of the OpenAPI document reached with their own method; ${r.abandonedLargeResponses} responses abandoned at the size cap; /ingest/health at the end: ${r.healthOk ? 'ok' : 'FAILED'}`, '');
  lines.push('| group | requests |', '|---|---|', ...Object.entries(r.byGroup).sort().map(([k, v]) => `| ${k} | ${v} |`), '');
  lines.push(`Live data socket: ${r.ws.sessions} sessions, ${r.ws.messages} messages, ${r.ws.refused} upgrades refused (401); closes ${Object.entries(r.ws.closes).sort().map(([k, v]) => `${k} ×${v}`).join(', ') || 'none'}`, '');
  lines.push(`Statuses: ${Object.entries(r.byStatus).sort().map(([k, v]) => `${k} ×${v}`).join(', ')}`, '');
  lines.push(`Mutations: ${Object.entries(r.byMutation).sort().map(([k, v]) => `${k} ×${v}`).join(', ')}`, '');
  if (r.generatorErrors > 0) lines.push(`⚠ ${r.generatorErrors} requests could not be built (a fuzzer bug); first: ${r.generatorError}`, '');
  if (r.failures.length === 0) {
    lines.push('No failures.');
  } else {
    lines.push(`## ${r.failures.length} failure classes`, '');
    for (const f of r.failures) {
      lines.push(`- **${f.key}** ×${f.count}${f.reproduced === null ? '' : f.reproduced ? ' (reproduced on replay)' : ' (not reproduced on replay)'}`);
      if (f.messages.length > 0) lines.push(`  - messages: ${f.messages.map((m) => JSON.stringify(m)).join('; ')}`);
      lines.push(`  - mutations: ${f.mutations.join(', ') || 'none (valid request)'}`);
      lines.push(`  - smallest request: \`${f.example.replace(/`/g, "'")}\``);
    }
  }
  return lines.join('\n');
}

// ---- command line -----------------------------------------------------------------------------

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      'timeout-ms': { type: 'string' },
      'max-response-bytes': { type: 'string' },
      'big-tag-points': { type: 'string' },
      json: { type: 'string' },
      trace: { type: 'string' },
      keep: { type: 'boolean' },
    },
    strict: true,
  });
  const n = (name: string, fallback: number) => {
    const raw = (values as Record<string, unknown>)[name];
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a non-negative integer, got ${String(raw)}`);
    return v;
  };
  const options: FuzzOptions = {
    seed: n('seed', 1),
    requests: n('requests', 50_000),
    concurrency: n('concurrency', 6),
    timeoutMs: n('timeout-ms', 20_000),
    maxResponseBytes: n('max-response-bytes', 1024 * 1024),
    bigTagPoints: n('big-tag-points', 400_000),
    progress: (done, total) => {
      if (done % 1000 === 0 || done === total) process.stderr.write(`  ${done} / ${total}\n`);
    },
  };
  if (typeof values.trace === 'string') {
    const out = fs.openSync(values.trace, 'w');
    options.trace = (entry) => fs.writeSync(out, `${JSON.stringify(entry)}\n`);
  }
  const { startService, ADMIN_EMAIL, ADMIN_PASSWORD } = await import('../test/api/harness.js');
  const service = await startService({ config: FUZZ_SERVICE_SETTINGS });
  process.stderr.write(`fuzzing the service on port ${service.port} (data dir ${service.dataDir}), seed ${options.seed}, ${options.requests} requests\n`);
  let report: FuzzReport;
  try {
    report = await runFuzz({ port: service.port, ca: service.ca, logLines: () => service.logLines, dataDir: service.dataDir, adminEmail: ADMIN_EMAIL, adminPassword: ADMIN_PASSWORD }, options);
  } finally {
    if (values.keep) await service.stop();
    else await service.dispose();
  }
  console.log(formatReport(report));
  if (typeof values.json === 'string') fs.writeFileSync(values.json, JSON.stringify(report, null, 1));
  process.exitCode = report.failures.length > 0 ? 1 : 0;
}

/**
 * Settings of the service under fuzz: two shards (so cross-shard paths run), a disk floor the
 * test machine always clears (a 507 would hide the rest), and 5 s for a worker to answer a write
 * so that a stalled shard shows up as a 503 long before the fuzzer's own timeout.
 */
export const FUZZ_SERVICE_SETTINGS = {
  storage: { shards: 2, flushIntervalMs: 200, minFreeBytes: 1024 * 1024, writeTimeoutMs: 5000, resultStallTimeoutMs: 5000 },
};

if (process.argv[1] && import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href) {
  main().catch((err) => {
    process.stderr.write(`fuzz: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(2);
  });
}
