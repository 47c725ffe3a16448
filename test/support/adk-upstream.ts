// A tiny stand-in for an ADK agent service (a FastAPI app) for the proxy tests: a real HTTP server
// on loopback that records every request and answers, by path (below an optional base path):
//
//   /status/<code>?detail=<text>  → <code> with FastAPI's error shape {detail: <text>}
//   /text                         → 201 text/plain "plain answer"
//   /empty                        → 204
//   /hang                         → no answer (until `stop`)
//   anything else                 → 200 JSON echo {method, url, headers, body}

import type http from 'node:http';
import { LoopbackServer } from './loopback-server.js';

export interface SeenRequest {
  method: string;
  /** Path and query exactly as received. */
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The request head and body as they came, for "this string never reached us" checks. */
  raw: string;
  body: Buffer;
}

export class AdkUpstream {
  readonly requests: SeenRequest[] = [];
  private server!: LoopbackServer;

  private constructor(private readonly basePath: string) {}

  static async start(basePath = ''): Promise<AdkUpstream> {
    const upstream = new AdkUpstream(basePath);
    upstream.server = await LoopbackServer.start((req, body, res) => upstream.onRequest(req, body, res));
    return upstream;
  }

  /** What `adk.baseUrl` should be. */
  get url(): string {
    return `http://127.0.0.1:${this.server.port}${this.basePath}`;
  }

  stop(): Promise<void> {
    return this.server.stop();
  }

  private onRequest(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
    const url = req.url ?? '';
    const head = [`${req.method} ${url}`, ...pairs(req.rawHeaders)].join('\n');
    this.requests.push({ method: req.method ?? '', url, headers: req.headers, raw: `${head}\n\n${body.toString('latin1')}`, body });
    const parsed = new URL(url, 'http://upstream');
    const path = parsed.pathname.startsWith(this.basePath) ? parsed.pathname.slice(this.basePath.length) : parsed.pathname;
    const status = /^\/status\/(\d{3})$/.exec(path);
    if (status) {
      res.writeHead(Number(status[1]), { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ detail: parsed.searchParams.get('detail') ?? 'no detail' }));
    }
    if (path === '/text') {
      res.writeHead(201, { 'content-type': 'text/plain; charset=utf-8' });
      return void res.end('plain answer');
    }
    if (path === '/empty') {
      res.writeHead(204);
      return void res.end();
    }
    if (path === '/hang') return this.server.hold(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, url, headers: req.headers, body: body.toString('utf8') }));
  }
}

function pairs(raw: string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push(`${raw[i]}: ${raw[i + 1]}`);
  return lines;
}
