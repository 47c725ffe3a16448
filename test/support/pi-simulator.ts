// A PI Web API simulator for the connector's tests: a real HTTP(S) server on loopback that
// answers the asset-hierarchy and recorded-data routes with the shapes AVEVA documents, from
// a deterministic model (pi-model.ts), with WebID 2.0 identifiers (pi-webid.ts) and PI time
// strings (pi-time.ts).
//
//   const sim = await PiSimulator.start({ auth: { basic: { username: 'u', password: 'p' } } }, plantModel().spec);
//   t.after(() => sim.stop());
//   // sim.baseUrl is https://localhost:<port>/piwebapi, trusted through sim.caPem
//
// Like PI Web API it answers lists as {"Links": {}, "Items": [...]}, errors as
// {"Errors": ["..."]}, pages element and attribute lists by startIndex/maxCount (default 1000),
// caps recorded values at maxCount (default 1000, so a client pages by time), and honours
// selectedFields. Each test can add latency, failing statuses, hangs and dropped connections,
// and read back every request the simulator saw.
//
// Simulated, not copied: messages are our own words; only the shapes follow the documentation.
// What is not simulated answers 404 (routes) or 400 (parameters) rather than guessing.

import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import forge from 'node-forge';
import {
  isNumericType,
  PiModel,
  type AttributeNode,
  type DatabaseNode,
  type ElementNode,
  type ModelNode,
  type PiModelSpec,
  type RecordedSource,
  type RecordedTally,
  type RecordedValue,
  type ServerNode,
} from './pi-model.js';
import { formatPiTime, parsePiTime, TimeStringError } from './pi-time.js';
import { decodeWebId, WebIdError, type WebIdKind, type WebIdType } from './pi-webid.js';

export * from './pi-model.js';
export * from './pi-time.js';
export * from './pi-webid.js';

export interface PiAuthConfig {
  /** Accept `Authorization: Basic` with exactly these credentials. */
  basic?: { username: string; password: string };
  /** Accept `Authorization: Bearer` with exactly this token. */
  bearer?: { token: string };
}

export interface PiSimulatorOptions {
  /** HTTPS with the simulator's own CA (default true); false for plain HTTP. */
  tls?: boolean;
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Neither basic nor bearer (the default): anonymous, credentials are ignored. */
  auth?: PiAuthConfig;
  /** PI's EnableCSRFDefense: refuse POST, PUT, PATCH and DELETE without X-Requested-With. Default true. */
  csrfDefense?: boolean;
  /** Freeze the clock (`*` in time strings) at this instant; by default it follows the real clock. */
  nowMs?: number;
  /** The WebID type answered when a request names none (PI's WebIDType setting). Default Full. */
  webIdType?: WebIdType;
  /** PI's MaxReturnedItemsPerCall: a larger maxCount on recorded data is refused. Default 150,000. */
  maxReturnedItemsPerCall?: number;
}

/**
 * Which requests a fault or a count applies to: a string matches when the request path
 * (without query) contains it; a RegExp is tested against path and query (`/a/b?x=1`).
 */
export type PathMatch = string | RegExp;

export interface SeenRequest {
  method: string;
  /** The path as sent, without the query. */
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** The status answered; undefined while waiting, for hung requests and dropped connections. */
  status?: number;
}

type FaultAction = { status: number } | 'hang' | 'reset';
interface FaultRule {
  match: PathMatch | undefined;
  remaining: number;
  action: FaultAction;
}

const DEFAULT_PAGE_SIZE = 1000;
const CSRF_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const WEBID_TYPES: Record<string, WebIdType> = { full: 'Full', idonly: 'IDOnly', pathonly: 'PathOnly' };
const BOUNDARY_TYPES = new Set(['inside', 'outside', 'interpolated']);
const KIND_LABEL: Record<WebIdKind, string> = {
  AssetServer: 'asset server',
  AssetDatabase: 'asset database',
  Element: 'element',
  Attribute: 'attribute',
};

/** An answer other than 200: written as PI writes errors, {"Errors": [...]}. */
class PiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string | string[]> = {},
  ) {
    super(message);
  }
}

function matches(match: PathMatch | undefined, url: URL): boolean {
  if (match === undefined) return true;
  if (typeof match === 'string') return url.pathname.includes(match);
  match.lastIndex = 0;
  return match.test(url.pathname + url.search);
}

/** Query parameters by name, case-insensitively (PI Web API is ASP.NET: names ignore case). */
class Query {
  private readonly values = new Map<string, string[]>();

  constructor(params: URLSearchParams) {
    for (const [key, value] of params) {
      const k = key.toLowerCase();
      const list = this.values.get(k);
      if (list) list.push(value);
      else this.values.set(k, [value]);
    }
  }

  get(name: string): string | undefined {
    return this.values.get(name.toLowerCase())?.[0];
  }

  all(name: string): string[] {
    return this.values.get(name.toLowerCase()) ?? [];
  }

  int(name: string, fallback: number, min: number): number {
    const raw = this.get(name);
    if (raw === undefined || raw === '') return fallback;
    if (!/^-?\d+$/.test(raw.trim())) throw new PiError(400, `The value '${raw}' of parameter '${name}' is not a whole number.`);
    const n = Number(raw);
    if (n < min) throw new PiError(400, `Parameter '${name}' must be at least ${min}, got ${raw}.`);
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.get(name);
    if (raw === undefined || raw === '') return fallback;
    if (/^true$/i.test(raw)) return true;
    if (/^false$/i.test(raw)) return false;
    throw new PiError(400, `The value '${raw}' of parameter '${name}' is not true or false.`);
  }
}

/**
 * Keeps only the fields named by selectedFields (`Items.Name;Items.WebId`): each path walks
 * objects by key (ignoring case) and passes through arrays to their elements.
 */
export function selectFields(value: unknown, selectedFields: string): unknown {
  const paths = selectedFields
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map((p) => p.split('.').map((k) => k.toLowerCase()));
  return paths.length === 0 ? value : select(value, paths);
}

function select(value: unknown, paths: string[][]): unknown {
  if (paths.some((p) => p.length === 0) || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => select(v, paths));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const below = paths.filter((p) => p[0] === key.toLowerCase()).map((p) => p.slice(1));
    if (below.length > 0) out[key] = select(v, below);
  }
  return out;
}

/** PI's name filters: `*` any run of characters, `?` one character, the rest literal, ignoring case. */
function wildcard(filter: string): RegExp {
  const body = filter.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

interface Certificates {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** A throw-away CA and a server certificate it signs for localhost, 127.0.0.1 and ::1. */
function makeCertificates(): Certificates {
  const rsa = () => {
    // Node's native key generation takes milliseconds where forge's takes seconds.
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
    return { keyPem, key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e) };
  };
  const certificate = (publicKey: forge.pki.PublicKey) => {
    const cert = forge.pki.createCertificate();
    cert.publicKey = publicKey;
    cert.serialNumber = '01' + crypto.randomBytes(15).toString('hex');
    cert.validity.notBefore = new Date(Date.now() - 60 * 60_000);
    cert.validity.notAfter = new Date(Date.now() + 7 * 24 * 60 * 60_000);
    return cert;
  };

  const ca = rsa();
  const caCert = certificate(ca.publicKey);
  const caName = [{ name: 'commonName', value: `PI Web API simulator CA ${crypto.randomBytes(4).toString('hex')}` }];
  caCert.setSubject(caName);
  caCert.setIssuer(caName);
  caCert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  caCert.sign(ca.key, forge.md.sha256.create());

  const server = rsa();
  const cert = certificate(server.publicKey);
  cert.setSubject([{ name: 'commonName', value: 'localhost' }]);
  cert.setIssuer(caName);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'localhost' },
        { type: 7, ip: '127.0.0.1' },
        { type: 7, ip: '::1' },
      ],
    },
  ]);
  cert.sign(ca.key, forge.md.sha256.create());
  return { caPem: forge.pki.certificateToPem(caCert), certPem: forge.pki.certificateToPem(cert), keyPem: server.keyPem };
}

interface Ctx {
  webIdType: WebIdType;
}

interface RecordedQuery {
  start: number;
  end: number;
  boundary: 'inside' | 'outside' | 'interpolated';
  maxCount: number;
}

export class PiSimulator {
  /** `http(s)://localhost:<port>/piwebapi`. */
  readonly baseUrl: string;
  /** The PEM of the CA that signed the server certificate; empty for plain HTTP. */
  readonly caPem: string;
  readonly port: number;
  readonly model: PiModel;
  /** Every request seen, in arrival order, including refused and faulted ones. */
  readonly requests: SeenRequest[] = [];

  private auth: PiAuthConfig;
  private readonly csrfDefense: boolean;
  private readonly defaultWebIdType: WebIdType;
  private readonly maxReturnedItemsPerCall: number;
  private frozenNow: number | null;
  private faults: FaultRule[] = [];
  private latency: { ms: number; match: PathMatch | undefined } | null = null;
  private readonly hung = new Set<http.ServerResponse>();
  private readonly sleeping = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  private stopped = false;

  private constructor(
    private readonly servers: http.Server[],
    port: number,
    tls: boolean,
    caPem: string,
    model: PiModel,
    options: PiSimulatorOptions,
  ) {
    this.port = port;
    this.baseUrl = `${tls ? 'https' : 'http'}://localhost:${port}/piwebapi`;
    this.caPem = caPem;
    this.model = model;
    this.auth = options.auth ?? {};
    this.csrfDefense = options.csrfDefense ?? true;
    this.defaultWebIdType = options.webIdType ?? 'Full';
    this.maxReturnedItemsPerCall = options.maxReturnedItemsPerCall ?? 150_000;
    this.frozenNow = options.nowMs ?? null;
  }

  /**
   * Builds the model and listens on loopback (127.0.0.1, and ::1 where the host has it, on the
   * same port, so `localhost` works whichever address it resolves to).
   */
  static async start(options: PiSimulatorOptions, spec: PiModelSpec): Promise<PiSimulator> {
    const model = new PiModel(spec);
    const tls = options.tls ?? true;
    const certificates = tls ? makeCertificates() : null;
    let simulator: PiSimulator | null = null;
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => void simulator!.handle(req, res);
    const create = () =>
      certificates ? https.createServer({ key: certificates.keyPem, cert: certificates.certPem }, handler) : http.createServer(handler);
    const listen = (server: http.Server, port: number, host: string) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });

    const v4 = create();
    await listen(v4, options.port ?? 0, '127.0.0.1');
    const port = (v4.address() as AddressInfo).port;
    const servers = [v4];
    const v6 = create();
    try {
      await listen(v6, port, '::1');
      servers.push(v6);
    } catch {
      // No IPv6 loopback here (or the port is taken there): 127.0.0.1 alone serves localhost.
    }
    simulator = new PiSimulator(servers, port, tls, certificates?.caPem ?? '', model, options);
    return simulator;
  }

  /** Closes the listeners and every connection, hung ones included. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const sleeper of this.sleeping) {
      clearTimeout(sleeper.timer);
      sleeper.wake();
    }
    this.sleeping.clear();
    for (const res of this.hung) res.destroy();
    this.hung.clear();
    await Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
  }

  // --- clock -------------------------------------------------------------------------------

  /** The server's current time, what `*` means. */
  now(): number {
    return this.frozenNow ?? Date.now();
  }

  setNow(ms: number): void {
    this.frozenNow = ms;
  }

  /** Moves a frozen clock on (freezing it at the real time first if it was running). */
  advance(ms: number): void {
    this.frozenNow = this.now() + ms;
  }

  useRealClock(): void {
    this.frozenNow = null;
  }

  // --- auth --------------------------------------------------------------------------------

  /** Changes what credentials are accepted from the next request on (e.g. a rotated password). */
  setAuth(auth: PiAuthConfig): void {
    this.auth = auth;
  }

  // --- faults ------------------------------------------------------------------------------

  /** Delays every matching request by `ms` before anything else happens to it; 0 removes the delay. */
  setLatency(ms: number, match?: PathMatch): void {
    this.latency = ms > 0 ? { ms, match } : null;
  }

  /** The next `count` matching requests answer `status` (an HTML page, as a proxy or IIS would send). */
  failNext(count: number, status = 503, match?: PathMatch): void {
    this.faults.push({ match, remaining: count, action: { status } });
  }

  /** Every matching request answers `status` until clearFaults(). */
  failMatching(match: PathMatch, status = 502): void {
    this.faults.push({ match, remaining: Infinity, action: { status } });
  }

  /** Matching requests are read and never answered (until the client gives up or stop()). */
  hang(match?: PathMatch, count = Infinity): void {
    this.faults.push({ match, remaining: count, action: 'hang' });
  }

  /** Matching requests have their connection closed without an answer. */
  resetConnections(match?: PathMatch, count = Infinity): void {
    this.faults.push({ match, remaining: count, action: 'reset' });
  }

  /** Removes every fault and the latency; requests already hung stay hung. */
  clearFaults(): void {
    this.faults = [];
    this.latency = null;
  }

  /** Requests hanging now; it drops when a client closes its connection (e.g. on its timeout). */
  get hungCount(): number {
    return this.hung.size;
  }

  // --- what was seen -----------------------------------------------------------------------

  requestsTo(match?: PathMatch): SeenRequest[] {
    return this.requests.filter((r) => matches(match, new URL(`${r.path}?${r.query}`, 'http://x')));
  }

  count(match?: PathMatch): number {
    return this.requestsTo(match).length;
  }

  /** How many requests each path received. */
  countsByPath(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of this.requests) counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
    return counts;
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  // --- the model, for tests ----------------------------------------------------------------

  /** The object at a display path (`\\PIAF01\Plant\Site North|Temperature`); throws when there is none. */
  node(path: string): ModelNode {
    const node = this.model.byDisplayPath(path);
    if (!node) throw new Error(`no object at ${path} in the simulated model`);
    return node;
  }

  webIdOf(path: string, type: WebIdType = this.defaultWebIdType): string {
    return this.model.webId(this.node(path), type);
  }

  /** The object a WebID (any type this simulator writes) names; throws when it names none. */
  nodeOfWebId(webId: string): ModelNode {
    const kind = decodeWebId(webId).kind;
    return this.resolve(webId, kind);
  }

  /** Every recorded value of the attribute at `path` in [startMs, endMs]. */
  recordedValues(path: string, startMs: number, endMs: number): RecordedValue[] {
    return [...this.model.recordedBetween(this.attributeAt(path), startMs, endMs)];
  }

  tally(path: string, startMs: number, endMs: number): RecordedTally {
    return this.model.tally(this.attributeAt(path), startMs, endMs);
  }

  private attributeAt(path: string): AttributeNode {
    const node = this.node(path);
    if (node.kind !== 'Attribute') throw new Error(`${path} is not an attribute`);
    return node;
  }

  // --- serving -----------------------------------------------------------------------------

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const sleeper = {
        timer: setTimeout(() => {
          this.sleeping.delete(sleeper);
          resolve();
        }, ms),
        wake: resolve,
      };
      this.sleeping.add(sleeper);
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator');
    const seen: SeenRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers };
    this.requests.push(seen);
    req.resume(); // bodies are not read, only drained
    try {
      if (this.latency && matches(this.latency.match, url)) await this.sleep(this.latency.ms);
      if (this.stopped) return;

      const fault = this.faults.find((f) => f.remaining > 0 && matches(f.match, url));
      if (fault) {
        fault.remaining--;
        if (fault.action === 'hang') {
          this.hung.add(res);
          res.on('close', () => this.hung.delete(res));
          return;
        }
        if (fault.action === 'reset') {
          req.socket.destroy();
          return;
        }
        const { status } = fault.action;
        const reason = http.STATUS_CODES[status] ?? 'Error';
        const page = `<html><head><title>${status} ${reason}</title></head><body><h1>${reason}</h1><p>Fault injected by the PI Web API simulator.</p></body></html>`;
        seen.status = status;
        res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(page) });
        res.end(page);
        return;
      }

      const body = this.answer(req, url);
      this.sendJson(res, seen, 200, body);
    } catch (err) {
      if (err instanceof PiError) this.sendJson(res, seen, err.status, { Errors: [err.message] }, err.headers);
      else this.sendJson(res, seen, 500, { Errors: [`Simulator fault: ${(err as Error).message}`] });
    }
  }

  private sendJson(res: http.ServerResponse, seen: SeenRequest, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
    if (res.destroyed) return;
    const text = JSON.stringify(body);
    seen.status = status;
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  }

  private authenticated(req: http.IncomingMessage): boolean {
    const { basic, bearer } = this.auth;
    if (!basic && !bearer) return true;
    const header = (req.headers.authorization ?? '').trim();
    const space = header.indexOf(' ');
    const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
    const credential = space < 0 ? '' : header.slice(space + 1).trim();
    if (basic && scheme === 'basic') {
      const decoded = Buffer.from(credential, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      return colon >= 0 && decoded.slice(0, colon) === basic.username && decoded.slice(colon + 1) === basic.password;
    }
    if (bearer && scheme === 'bearer') return credential === bearer.token;
    return false;
  }

  /** The JSON body of a 200 answer; anything else is thrown as a PiError. */
  private answer(req: http.IncomingMessage, url: URL): unknown {
    if (!this.authenticated(req)) {
      const host = (req.headers.host ?? 'localhost').replace(/:\d+$/, '');
      const challenges: string[] = [];
      if (this.auth.basic) challenges.push(`Basic realm="${host}"`);
      if (this.auth.bearer) challenges.push('Bearer');
      throw new PiError(401, 'Authentication failed: send valid credentials.', { 'WWW-Authenticate': challenges });
    }
    const method = (req.method ?? 'GET').toUpperCase();
    if (this.csrfDefense && CSRF_METHODS.has(method) && !req.headers['x-requested-with']) {
      throw new PiError(403, `A ${method} request must carry the X-Requested-With header (CSRF defence).`);
    }

    const segments = url.pathname.split('/').filter((s) => s !== '');
    if (segments[0]?.toLowerCase() !== 'piwebapi') throw new PiError(404, `Nothing is served at ${url.pathname}.`);
    if (method !== 'GET') throw new PiError(405, `The simulator serves GET only, not ${method}.`, { Allow: 'GET' });

    const q = new Query(url.searchParams);
    const ctx: Ctx = { webIdType: this.webIdTypeOf(q) };
    let decoded: string[];
    try {
      decoded = segments.slice(1).map(decodeURIComponent);
    } catch {
      throw new PiError(400, `The path ${url.pathname} has a malformed percent-escape.`);
    }
    const body = this.route(decoded, q, ctx);
    if (body === undefined) throw new PiError(404, `The simulator has no route for GET ${url.pathname}.`);
    const selected = q.get('selectedFields');
    return selected === undefined ? body : selectFields(body, selected);
  }

  private webIdTypeOf(q: Query): WebIdType {
    const raw = q.get('webIdType');
    if (raw === undefined || raw === '') return this.defaultWebIdType;
    const type = WEBID_TYPES[raw.toLowerCase()];
    if (!type) throw new PiError(400, `webIdType '${raw}' is not one the simulator writes (Full, IDOnly, PathOnly).`);
    return type;
  }

  private route(path: string[], q: Query, ctx: Ctx): unknown {
    const [collection = '', id, action, ...extra] = path;
    if (extra.length > 0) return undefined;
    const c = collection.toLowerCase();
    const a = action?.toLowerCase();

    if (c === '' && id === undefined) return this.rootJson();

    if (c === 'assetservers') {
      if (id === undefined) {
        const path = q.get('path');
        const name = q.get('name');
        if (path !== undefined) return this.serverJson(this.byPath(path, 'AssetServer'), ctx);
        if (name !== undefined) {
          const server = this.model.servers.find((s) => s.name.toLowerCase() === name.toLowerCase());
          if (!server) throw new PiError(404, `No asset server is named '${name}'.`);
          return this.serverJson(server, ctx);
        }
        return this.list(this.model.servers.map((s) => this.serverJson(s, ctx)));
      }
      const server = this.resolve(id, 'AssetServer');
      if (a === undefined) return this.serverJson(server, ctx);
      if (a === 'assetdatabases') {
        if (!server.isConnected) throw new PiError(502, `Asset server '${server.name}' cannot be reached.`);
        return this.list(server.databases.map((d) => this.databaseJson(d, ctx)));
      }
      return undefined;
    }

    if (c === 'assetdatabases') {
      if (id === undefined) return this.databaseJson(this.byPath(this.required(q, 'path'), 'AssetDatabase'), ctx);
      const database = this.resolve(id, 'AssetDatabase');
      if (a === undefined) return this.databaseJson(database, ctx);
      if (a === 'elements') return this.list(this.pageElements(database.elements, q).map((e) => this.elementJson(e, ctx)));
      return undefined;
    }

    if (c === 'elements') {
      if (id === undefined) return this.elementJson(this.byPath(this.required(q, 'path'), 'Element'), ctx);
      const element = this.resolve(id, 'Element');
      if (a === undefined) return this.elementJson(element, ctx);
      if (a === 'elements') return this.list(this.pageElements(element.elements, q).map((e) => this.elementJson(e, ctx)));
      if (a === 'attributes') return this.list(this.pageAttributes(element.attributes, q).map((x) => this.attributeJson(x, ctx)));
      return undefined;
    }

    if (c === 'attributes') {
      if (id === undefined) return this.attributeJson(this.byPath(this.required(q, 'path'), 'Attribute'), ctx);
      const attribute = this.resolve(id, 'Attribute');
      if (a === undefined) return this.attributeJson(attribute, ctx);
      if (a === 'attributes') return this.list(this.pageAttributes(attribute.attributes, q).map((x) => this.attributeJson(x, ctx)));
      return undefined;
    }

    if (c === 'streams' && id !== undefined && a === 'recorded') {
      const attribute = this.resolve(id, 'Attribute');
      const values = this.recorded(attribute, this.recordedQuery(q));
      return { Links: {}, Items: values.map((v) => this.timedValueJson(v, attribute)), UnitsAbbreviation: attribute.units?.abbreviation ?? '' };
    }

    if (c === 'streamsets') {
      if (id?.toLowerCase() === 'recorded' && action === undefined) {
        const webIds = q.all('webId');
        if (webIds.length === 0) throw new PiError(400, 'At least one webId parameter is required.');
        const rq = this.recordedQuery(q);
        return this.list(webIds.map((w) => this.streamValuesOrException(w, rq, ctx)));
      }
      if (id !== undefined && a === 'recorded') {
        const element = this.resolve(id, 'Element');
        const rq = this.recordedQuery(q);
        const streams = element.attributes.filter((x) => x.recorded !== null);
        return this.list(streams.map((x) => this.streamValuesJson(x, this.recorded(x, rq), ctx)));
      }
      return undefined;
    }
    return undefined;
  }

  private required(q: Query, name: string): string {
    const value = q.get(name);
    if (value === undefined || value === '') throw new PiError(400, `Parameter '${name}' is required.`);
    return value;
  }

  private list(items: unknown[]): { Links: Record<string, string>; Items: unknown[] } {
    return { Links: {}, Items: items };
  }

  private resolve<K extends WebIdKind>(webId: string, kind: K): Extract<ModelNode, { kind: K }> {
    let parts;
    try {
      parts = decodeWebId(webId);
    } catch (err) {
      if (err instanceof WebIdError) throw new PiError(400, `'${webId}' is not a valid WebID: ${err.message}.`);
      throw err;
    }
    if (parts.kind !== kind) throw new PiError(400, `WebID '${webId}' names an ${KIND_LABEL[parts.kind]}, not an ${KIND_LABEL[kind]}.`);
    const node = parts.type === 'PathOnly' ? this.model.byDisplayPath(`\\\\${parts.path}`) : this.model.byGuid(parts.ids.at(-1)!);
    const sameOwners = node !== undefined && (parts.type === 'PathOnly' || this.model.webIdGuids(node).join() === parts.ids.join());
    if (!node || node.kind !== kind || !sameOwners) throw new PiError(404, `The ${KIND_LABEL[kind]} of WebID '${webId}' does not exist.`);
    return node as Extract<ModelNode, { kind: K }>;
  }

  private byPath<K extends WebIdKind>(path: string, kind: K): Extract<ModelNode, { kind: K }> {
    const node = this.model.byDisplayPath(path);
    if (!node || node.kind !== kind) throw new PiError(404, `No ${KIND_LABEL[kind]} at path '${path}'.`);
    return node as Extract<ModelNode, { kind: K }>;
  }

  private page<T extends { name: string; templateName?: string }>(all: T[], q: Query): T[] {
    const startIndex = q.int('startIndex', 0, 0);
    const maxCount = q.int('maxCount', DEFAULT_PAGE_SIZE, 1);
    let list = all;
    const nameFilter = q.get('nameFilter');
    if (nameFilter !== undefined && nameFilter !== '') {
      const re = wildcard(nameFilter);
      list = list.filter((x) => re.test(x.name));
    }
    const templateName = q.get('templateName');
    if (templateName !== undefined && templateName !== '') {
      list = list.filter((x) => x.templateName?.toLowerCase() === templateName.toLowerCase());
    }
    const sortField = q.get('sortField');
    if (sortField !== undefined && sortField.toLowerCase() !== 'name') {
      throw new PiError(400, `sortField '${sortField}' is not simulated (only Name).`);
    }
    const sortOrder = (q.get('sortOrder') ?? 'Ascending').toLowerCase();
    if (sortOrder !== 'ascending' && sortOrder !== 'descending') throw new PiError(400, `sortOrder '${q.get('sortOrder')}' is not Ascending or Descending.`);
    if (sortOrder === 'descending') list = [...list].reverse();
    return list.slice(startIndex, startIndex + maxCount);
  }

  private pageElements(roots: ElementNode[], q: Query): ElementNode[] {
    if (!q.bool('searchFullHierarchy', false)) return this.page(roots, q);
    const all: ElementNode[] = [];
    const walk = (list: ElementNode[]) => {
      for (const e of list) {
        all.push(e);
        walk(e.elements);
      }
    };
    walk(roots);
    return this.page(all, q);
  }

  private pageAttributes(roots: AttributeNode[], q: Query): AttributeNode[] {
    if (!q.bool('searchFullHierarchy', false)) return this.page(roots, q);
    const all: AttributeNode[] = [];
    const walk = (list: AttributeNode[]) => {
      for (const x of list) {
        all.push(x);
        walk(x.attributes);
      }
    };
    walk(roots);
    return this.page(all, q);
  }

  private time(q: Query, name: string, fallback: string): number {
    const text = q.get(name) ?? fallback;
    try {
      return parsePiTime(text, this.now());
    } catch (err) {
      if (err instanceof TimeStringError) throw new PiError(400, `Parameter '${name}': ${err.message}.`);
      throw err;
    }
  }

  /** The recorded-data parameters of a request; a bad one fails the whole call. */
  private recordedQuery(q: Query): RecordedQuery {
    const start = this.time(q, 'startTime', '*-1d');
    const end = this.time(q, 'endTime', '*');
    const boundary = (q.get('boundaryType') ?? 'Inside').toLowerCase();
    if (!BOUNDARY_TYPES.has(boundary)) throw new PiError(400, `boundaryType '${q.get('boundaryType')}' is not Inside, Outside or Interpolated.`);
    const maxCount = q.int('maxCount', DEFAULT_PAGE_SIZE, 1);
    if (maxCount > this.maxReturnedItemsPerCall) {
      throw new PiError(400, `maxCount ${maxCount} is over the limit of ${this.maxReturnedItemsPerCall} values per call.`);
    }
    return { start, end, boundary: boundary as RecordedQuery['boundary'], maxCount };
  }

  /**
   * Recorded values as PI returns them: Inside (default) the values in the range, Outside
   * also the nearest value beyond each end, Interpolated values made at both ends; time
   * descending when endTime is before startTime; never more than maxCount.
   */
  private recorded(attribute: AttributeNode, { start, end, boundary, maxCount }: RecordedQuery): RecordedValue[] {
    const source = attribute.recorded;
    if (!source) return [];

    const lo = Math.min(start, end);
    const hi = Math.max(start, end);
    let first = source.firstAtOrAfter(lo);
    let last = source.lastAtOrBefore(hi);
    if (boundary === 'outside') {
      const before = source.lastAtOrBefore(lo);
      const after = source.firstAtOrAfter(hi);
      if (before >= 0) first = before;
      if (after < source.count) last = after;
    }
    const atLo = boundary === 'interpolated' ? this.interpolate(source, lo, attribute.step) : null;
    const atHi = boundary === 'interpolated' && hi !== lo ? this.interpolate(source, hi, attribute.step) : null;

    const out: RecordedValue[] = [];
    const add = (v: RecordedValue | null) => {
      if (v && out.length < maxCount) out.push(v);
    };
    if (end >= start) {
      add(atLo);
      for (let i = first; i <= last && out.length < maxCount; i++) out.push(source.at(i));
      add(atHi);
    } else {
      add(atHi);
      for (let i = last; i >= first && out.length < maxCount; i--) out.push(source.at(i));
      add(atLo);
    }
    return out;
  }

  /** A value made at `ms` when none is recorded there: linear between good numbers, else the last value held. */
  private interpolate(source: RecordedSource, ms: number, step: boolean): RecordedValue | null {
    const after = source.firstAtOrAfter(ms);
    if (after < source.count && source.timestampAt(after) === ms) return null;
    const before = source.lastAtOrBefore(ms);
    if (before < 0) return null;
    const b = source.at(before);
    const held = { ...b, timestampMs: ms };
    if (step || after >= source.count || !b.good || typeof b.value !== 'number') return held;
    const a = source.at(after);
    if (!a.good || typeof a.value !== 'number') return held;
    const share = (ms - b.timestampMs) / (a.timestampMs - b.timestampMs);
    return { ...held, value: b.value + (a.value - b.value) * share };
  }

  /** One stream of a stream set; a WebID that fails fails its own stream only, as a WebException. */
  private streamValuesOrException(webId: string, rq: RecordedQuery, ctx: Ctx): unknown {
    let attribute: AttributeNode;
    try {
      attribute = this.resolve(webId, 'Attribute');
    } catch (err) {
      if (!(err instanceof PiError)) throw err;
      return { WebId: webId, Items: [], WebException: { StatusCode: err.status, Errors: [err.message] } };
    }
    return this.streamValuesJson(attribute, this.recorded(attribute, rq), ctx);
  }

  // --- representations ---------------------------------------------------------------------

  private rootJson(): unknown {
    const base = this.baseUrl;
    return {
      Links: {
        Self: `${base}/`,
        AssetServers: `${base}/assetservers`,
        DataServers: `${base}/dataservers`,
        Search: `${base}/search`,
        System: `${base}/system`,
      },
    };
  }

  private serverJson(server: ServerNode, ctx: Ctx): unknown {
    const webId = this.model.webId(server, ctx.webIdType);
    const self = `${this.baseUrl}/assetservers/${webId}`;
    return {
      WebId: webId,
      Id: server.id,
      Name: server.name,
      Description: server.description,
      Path: server.path,
      IsConnected: server.isConnected,
      ServerVersion: server.serverVersion,
      ServerTime: formatPiTime(this.now()),
      ExtendedProperties: {},
      Links: {
        Self: self,
        Databases: `${self}/assetdatabases`,
        Security: `${self}/security`,
        SecurityEntries: `${self}/securityentries`,
        SecurityIdentities: `${self}/securityidentities`,
        SecurityMappings: `${self}/securitymappings`,
        UnitClasses: `${self}/unitclasses`,
        AnalysisRulePlugIns: `${self}/analysisruleplugins`,
        TimeRulePlugIns: `${self}/timeruleplugins`,
        NotificationContactTemplates: `${self}/notificationcontacttemplates`,
        NotificationPlugIns: `${self}/notificationplugins`,
      },
    };
  }

  private databaseJson(database: DatabaseNode, ctx: Ctx): unknown {
    const webId = this.model.webId(database, ctx.webIdType);
    const self = `${this.baseUrl}/assetdatabases/${webId}`;
    return {
      WebId: webId,
      Id: database.id,
      Name: database.name,
      Description: database.description,
      Path: database.path,
      ExtendedProperties: {},
      Links: {
        Self: self,
        Elements: `${self}/elements`,
        ElementTemplates: `${self}/elementtemplates`,
        EventFrames: `${self}/eventframes`,
        AssetServer: `${this.baseUrl}/assetservers/${this.model.webId(database.server, ctx.webIdType)}`,
        ElementCategories: `${self}/elementcategories`,
        AttributeCategories: `${self}/attributecategories`,
        TableCategories: `${self}/tablecategories`,
        AnalysisCategories: `${self}/analysiscategories`,
        AnalysisTemplates: `${self}/analysistemplates`,
        EnumerationSets: `${self}/enumerationsets`,
        Tables: `${self}/tables`,
        Security: `${self}/security`,
        SecurityEntries: `${self}/securityentries`,
      },
    };
  }

  private elementJson(element: ElementNode, ctx: Ctx): unknown {
    const webId = this.model.webId(element, ctx.webIdType);
    const self = `${this.baseUrl}/elements/${webId}`;
    const streamset = `${this.baseUrl}/streamsets/${webId}`;
    const links: Record<string, string> = {
      Self: self,
      Analyses: `${self}/analyses`,
      Attributes: `${self}/attributes`,
      Elements: `${self}/elements`,
      Database: `${this.baseUrl}/assetdatabases/${this.model.webId(element.database, ctx.webIdType)}`,
    };
    if (element.parent) links.Parent = `${this.baseUrl}/elements/${this.model.webId(element.parent, ctx.webIdType)}`;
    Object.assign(links, {
      Categories: `${self}/categories`,
      EventFrames: `${self}/eventframes`,
      InterpolatedData: `${streamset}/interpolated`,
      RecordedData: `${streamset}/recorded`,
      PlotData: `${streamset}/plot`,
      SummaryData: `${streamset}/summary`,
      Value: `${streamset}/value`,
      EndValue: `${streamset}/end`,
      Security: `${self}/security`,
      SecurityEntries: `${self}/securityentries`,
      NotificationRules: `${self}/notificationrules`,
    });
    return {
      WebId: webId,
      Id: element.id,
      Name: element.name,
      Description: element.description,
      Path: element.path,
      TemplateName: element.templateName,
      HasChildren: element.elements.length > 0,
      CategoryNames: element.categoryNames,
      ExtendedProperties: {},
      Links: links,
    };
  }

  private attributeJson(attribute: AttributeNode, ctx: Ctx): unknown {
    const webId = this.model.webId(attribute, ctx.webIdType);
    const self = `${this.baseUrl}/attributes/${webId}`;
    const stream = `${this.baseUrl}/streams/${webId}`;
    const links: Record<string, string> = {
      Self: self,
      Attributes: `${self}/attributes`,
      Element: `${this.baseUrl}/elements/${this.model.webId(attribute.element, ctx.webIdType)}`,
    };
    if (attribute.parent) links.Parent = `${this.baseUrl}/attributes/${this.model.webId(attribute.parent, ctx.webIdType)}`;
    Object.assign(links, {
      InterpolatedData: `${stream}/interpolated`,
      RecordedData: `${stream}/recorded`,
      PlotData: `${stream}/plot`,
      SummaryData: `${stream}/summary`,
      Value: `${stream}/value`,
      EndValue: `${stream}/end`,
      Categories: `${self}/categories`,
    });
    const tag = attribute.path
      .slice(attribute.element.database.path.length + 1)
      .replace(/[\\|]/g, '.')
      .toUpperCase();
    const json: Record<string, unknown> = {
      WebId: webId,
      Id: attribute.id,
      Name: attribute.name,
      Description: attribute.description,
      Path: attribute.path,
      Type: attribute.type,
      TypeQualifier: attribute.typeQualifier,
      DefaultUnitsName: attribute.units?.name ?? '',
      DisplayDigits: -5,
      DataReferencePlugIn: attribute.dataReference ?? '',
      ConfigString: attribute.dataReference === 'PI Point' ? `\\\\PIDA01\\${tag}` : '',
      IsConfigurationItem: attribute.dataReference === null,
      IsExcluded: false,
      IsHidden: false,
      IsManualDataEntry: false,
      HasChildren: attribute.attributes.length > 0,
      CategoryNames: attribute.categoryNames,
      Step: attribute.step,
      TraitName: '',
      DefaultUnitsNameAbbreviation: attribute.units?.abbreviation ?? '',
    };
    if (isNumericType(attribute.type)) {
      json.Span = 100;
      json.Zero = 0;
    }
    json.Links = links;
    return json;
  }

  private timedValueJson(v: RecordedValue, attribute: AttributeNode): unknown {
    return {
      Timestamp: formatPiTime(v.timestampMs),
      Value: v.value,
      UnitsAbbreviation: v.good ? (attribute.units?.abbreviation ?? '') : '',
      Good: v.good,
      Questionable: v.questionable,
      Substituted: v.substituted,
      Annotated: v.annotated,
    };
  }

  private streamValuesJson(attribute: AttributeNode, values: RecordedValue[], ctx: Ctx): unknown {
    const webId = this.model.webId(attribute, ctx.webIdType);
    return {
      WebId: webId,
      Name: attribute.name,
      Path: attribute.path,
      Links: { Source: `${this.baseUrl}/attributes/${webId}` },
      Items: values.map((v) => this.timedValueJson(v, attribute)),
      UnitsAbbreviation: attribute.units?.abbreviation ?? '',
    };
  }
}
