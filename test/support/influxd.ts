// A real InfluxDB 1.x server for tests: Debian's `influxd` (package `influxdb`, 1.6), the
// reference the InfluxDB API at the root is compared with (issue 28). Each start gets its own
// temp dir (meta, data, wal) and free loopback ports for HTTP and the RPC bind address, so
// neither the packaged service on 8086/8088 nor another test's server is in the way; reporting,
// the monitor's store, continuous queries and the HTTP access log are off. Plain HTTP: it is a
// test peer on loopback. `query` returns the parsed JSON answer of `/query`, GET or POST form.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

export const INFLUXD_BIN = '/usr/bin/influxd';
export const INFLUX_CLI_BIN = '/usr/bin/influx';

/** A `skip` reason for node:test when the server is not installed, else false. */
export const influxdSkip: string | false = fs.existsSync(INFLUXD_BIN) ? false : `${INFLUXD_BIN} is not installed (apt-get install influxdb; .ci/run does)`;
/** The same for the CLI. */
export const influxCliSkip: string | false = fs.existsSync(INFLUX_CLI_BIN) ? false : `${INFLUX_CLI_BIN} is not installed (apt-get install influxdb-client; .ci/run does)`;

export interface InfluxAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: any;
}

/**
 * How the parameters of `/query` travel; InfluxDB reads them from the URL and a form body alike.
 * - `GET`: all in the URL (Grafana's default HTTP method, node-influx, curl -G);
 * - `POST`: all in an `application/x-www-form-urlencoded` body;
 * - `POST grafana`: `q` in the form body, the others in the URL (Grafana's POST method);
 * - `POST cli`: all in the URL and an empty body with no Content-Type (the `influx` CLI, which
 *   also adds chunked=true).
 */
export type QueryForm = 'GET' | 'POST' | 'POST grafana' | 'POST cli';
export const QUERY_FORMS: readonly QueryForm[] = ['GET', 'POST', 'POST grafana', 'POST cli'];

export interface QueryOptions {
  db?: string;
  /** ns, u, µ, ms, s, m, h; none = RFC 3339 times. */
  epoch?: string;
  /** GET unless told. */
  form?: QueryForm;
  pretty?: boolean;
  /** Further parameters (rp, chunked, …). */
  params?: Record<string, string>;
}

/** The request InfluxDB's `/query` takes for `q` with `opts`: method, path with its query string, body and headers. */
export function queryRequest(q: string, opts: QueryOptions = {}): { method: 'GET' | 'POST'; path: string; body: string | null; headers: Record<string, string> } {
  const params = new URLSearchParams();
  if (opts.db !== undefined) params.set('db', opts.db);
  params.set('q', q);
  if (opts.epoch !== undefined) params.set('epoch', opts.epoch);
  if (opts.pretty) params.set('pretty', 'true');
  for (const [k, v] of Object.entries(opts.params ?? {})) params.set(k, v);
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  switch (opts.form ?? 'GET') {
    case 'GET':
      return { method: 'GET', path: `/query?${params}`, body: null, headers: {} };
    case 'POST':
      return { method: 'POST', path: '/query', body: params.toString(), headers: form };
    case 'POST grafana': {
      params.delete('q');
      return { method: 'POST', path: `/query?${params}`, body: new URLSearchParams({ q }).toString(), headers: form };
    }
    case 'POST cli':
      return { method: 'POST', path: `/query?${params}`, body: '', headers: {} };
  }
}

/** One running influxd. */
export class Influxd {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private readonly output: string[] = [];
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    readonly dir: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const keep = (chunk: Buffer) => {
      this.output.push(...chunk.toString().split('\n').filter(Boolean));
      if (this.output.length > 200) this.output.splice(0, this.output.length - 200);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
  }

  /** Starts influxd and waits until `/ping` answers 204; tries new ports if the ones picked were taken meanwhile. */
  static async start(): Promise<Influxd> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'influxd-test-'));
      const port = await freePort();
      const rpcPort = await freePort();
      const configFile = path.join(dir, 'influxd.conf');
      fs.writeFileSync(configFile, influxdConfig({ dir, port, rpcPort }));
      // INFLUXDB_* variables would override the file's settings: none reaches the server.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INFLUXDB_')));
      const child = spawn(INFLUXD_BIN, ['-config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env });
      const server = new Influxd(child, port, dir);
      try {
        await server.waitReady(30_000);
        return server;
      } catch (err) {
        lastError = err;
        await server.stop();
      }
    }
    throw lastError;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The last lines influxd wrote (for failure messages). */
  get log(): string {
    return this.output.join('\n');
  }

  /** Any HTTP request to the server. */
  request(method: string, urlPath: string, body: string | Buffer | null = null, headers: Record<string, string> = {}): Promise<InfluxAnswer> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: this.port, method, path: urlPath, agent: this.agent, headers: { ...headers, ...(body !== null ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            if (String(res.headers['content-type'] ?? '').includes('json')) {
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (body !== null) req.write(body);
      req.end();
    });
  }

  /** `/query` with `q`; the answer with its JSON parsed (a failed statement is still HTTP 200, as InfluxDB answers). */
  query(q: string, opts: QueryOptions = {}): Promise<InfluxAnswer> {
    const r = queryRequest(q, opts);
    return this.request(r.method, r.path, r.body, r.headers);
  }

  async createDatabase(name: string): Promise<void> {
    const res = await this.query(`CREATE DATABASE ${quoteIdent(name)}`, { form: 'POST' });
    if (res.status !== 200 || res.json?.results?.[0]?.error) throw new Error(`influxd CREATE DATABASE ${name}: ${res.status} ${res.text}`);
  }

  /** Writes line protocol (in bodies of at most `batchLines` lines); throws unless every body is answered 204. */
  async write(db: string, lines: readonly string[], precision: 'ns' | 'u' | 'ms' | 's' = 'ns', batchLines = 5000): Promise<void> {
    for (let at = 0; at < lines.length; at += batchLines) {
      const body = lines.slice(at, at + batchLines).join('\n');
      const res = await this.request('POST', `/write?${new URLSearchParams({ db, precision })}`, body, { 'content-type': 'text/plain; charset=utf-8' });
      if (res.status !== 204) throw new Error(`influxd write to ${db} (lines ${at}..): ${res.status} ${res.text}`);
    }
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its dir. */
  async stop(): Promise<void> {
    this.agent.destroy();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`influxd exited (${this.child.exitCode ?? this.child.signalCode}) before answering /ping:\n${this.log}`);
      try {
        const res = await this.request('GET', '/ping');
        if (res.status === 204) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > until) throw new Error(`influxd did not answer /ping within ${timeoutMs} ms:\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** An InfluxQL identifier in double quotes. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** What a run of influxd may change in its config (see influxdConfig). */
export interface InfluxdConfigOptions {
  dir: string;
  port: number;
  rpcPort: number;
  /** Serve HTTPS with this certificate and key (the bench's peers share one certificate). */
  https?: { certificate: string; privateKey: string };
  /** More lines of the [data] section (the bench's short cold durations, so compaction is quick). */
  data?: string[];
}

/**
 * The config: the defaults of 1.6 except our own dirs and ports, and nothing that writes data
 * or traffic of its own (reporting to InfluxData, the `_internal` monitor database, continuous
 * queries) or floods the output (HTTP access log, query log, logo). bench/peer-servers.ts starts
 * its peer with the same one.
 */
export function influxdConfig(o: InfluxdConfigOptions): string {
  return [
    'reporting-enabled = false',
    `bind-address = "127.0.0.1:${o.rpcPort}"`,
    '[meta]',
    `  dir = "${o.dir}/meta"`,
    '  logging-enabled = false',
    '[data]',
    `  dir = "${o.dir}/data"`,
    `  wal-dir = "${o.dir}/wal"`,
    '  query-log-enabled = false',
    ...(o.data ?? []).map((line) => `  ${line}`),
    '[monitor]',
    '  store-enabled = false',
    '[continuous_queries]',
    '  enabled = false',
    '[http]',
    '  enabled = true',
    `  bind-address = "127.0.0.1:${o.port}"`,
    '  log-enabled = false',
    '  auth-enabled = false',
    ...(o.https ? ['  https-enabled = true', `  https-certificate = "${o.https.certificate}"`, `  https-private-key = "${o.https.privateKey}"`] : []),
    '[logging]',
    '  level = "warn"',
    '  suppress-logo = true',
    '',
  ].join('\n');
}
