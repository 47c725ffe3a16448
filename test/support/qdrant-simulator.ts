// A Qdrant simulator for the proxy tests: a real HTTP server on loopback answering the REST
// endpoints Qdrant's JS client calls to create a collection, in Qdrant's shapes:
//
//   PUT /collections/{name}  {vectors: {size, distance}}  → 200 {result: true, status: "ok", time}
//   GET /collections/{name}                               → 200 {result: {config: {params: {vectors}}}, …} or 404
//   GET /collections                                      → 200 {result: {collections: [{name}]}, …}
//   GET /                                                 → 200 {title, version} (the client's version check)
//
// Errors as Qdrant writes them, `{status: {error: "…"}, time}`: 400 for a body that is not JSON,
// 422 for one that breaks the schema (size 1..65536, a known distance), 409 for a name in use,
// 404 for anything else. Tests can make the next answers fail (`failNext`), hang (`hang`), and
// read every request it saw.
//
// Simulated, not copied: messages are our own words in the spirit of Qdrant's; only the shapes
// follow its API reference.

import type http from 'node:http';
import { LoopbackServer } from './loopback-server.js';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Collection {
  size: number;
  distance: string;
}

const DISTANCES = new Set(['Cosine', 'Euclid', 'Dot', 'Manhattan']);
const MAX_SIZE = 65536;

export class QdrantSimulator {
  readonly collections = new Map<string, Collection>();
  readonly requests: SeenRequest[] = [];
  /** While true, requests are held without an answer (until `stop`). */
  hang = false;
  private failures: Array<{ status: number; body: string }> = [];
  private server!: LoopbackServer;

  static async start(): Promise<QdrantSimulator> {
    const sim = new QdrantSimulator();
    sim.server = await LoopbackServer.start((req, body, res) => sim.onRequest(req, body.toString('utf8'), res));
    return sim;
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  /** The next `count` requests answer `status` with `body` (raw text, or Qdrant's error shape when given a message). */
  failNext(status: number, message: string, { count = 1, raw = false }: { count?: number; raw?: boolean } = {}): void {
    const body = raw ? message : JSON.stringify({ status: { error: message }, time: 0 });
    for (let i = 0; i < count; i++) this.failures.push({ status, body });
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  private onRequest(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    this.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    if (this.hang) return this.server.hold(res);
    const failure = this.failures.shift();
    if (failure) return send(res, failure.status, failure.body);
    this.route(req.method ?? '', new URL(req.url ?? '/', 'http://sim'), body, res);
  }

  private route(method: string, url: URL, body: string, res: http.ServerResponse): void {
    const started = performance.now();
    const ok = (result: unknown) => send(res, 200, JSON.stringify({ result, status: 'ok', time: (performance.now() - started) / 1000 }));
    const error = (status: number, message: string) => send(res, status, JSON.stringify({ status: { error: message }, time: (performance.now() - started) / 1000 }));
    if (method === 'GET' && url.pathname === '/') return send(res, 200, JSON.stringify({ title: 'qdrant - vector search engine', version: '1.17.0' }));
    if (method === 'GET' && url.pathname === '/collections') return ok({ collections: [...this.collections.keys()].map((name) => ({ name })) });
    const m = /^\/collections\/([^/]+)$/.exec(url.pathname);
    if (!m) return error(404, `Not found: ${url.pathname}`);
    const name = decodeURIComponent(m[1]!);
    if (method === 'GET') {
      const c = this.collections.get(name);
      if (!c) return error(404, `Not found: Collection \`${name}\` doesn't exist!`);
      return ok({ status: 'green', config: { params: { vectors: { size: c.size, distance: c.distance } } } });
    }
    if (method !== 'PUT') return error(405, `method ${method} not allowed`);
    let spec: { vectors?: { size?: unknown; distance?: unknown } };
    try {
      spec = JSON.parse(body) as typeof spec;
    } catch (err) {
      return error(400, `Format error in JSON body: ${(err as Error).message}`);
    }
    const size = spec?.vectors?.size;
    const distance = spec?.vectors?.distance;
    if (!Number.isInteger(size) || (size as number) < 1 || (size as number) > MAX_SIZE) {
      return error(422, `Validation error in JSON body: [vectors.size: value ${String(size)} invalid, must be from 1 to ${MAX_SIZE}]`);
    }
    if (typeof distance !== 'string' || !DISTANCES.has(distance)) return error(422, `Validation error in JSON body: unknown distance ${String(distance)}`);
    if (this.collections.has(name)) return error(409, `Wrong input: Collection \`${name}\` already exists!`);
    this.collections.set(name, { size: size as number, distance });
    ok(true);
  }
}

function send(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
}
