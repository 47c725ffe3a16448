// A real Prometheus for tests: Debian's `prometheus` (2.42), the reference for the Prometheus
// compatibility of WIRE.md part 3 (remote write into the service, remote read from it, scrapes
// of /metrics, PromQL answers to compare). Each start gets its own temp dir (config file, TSDB,
// any files the test puts beside them, such as a CA) and a free loopback port, waits for
// `/-/ready`, and keeps the process's last output lines for failure messages. The config is
// given as an object and written as YAML; it may depend on the port and dir chosen (a
// self-scrape names its own address). Plain HTTP: it is a test peer on loopback.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { freePort } from './ports.js';

export const PROMETHEUS_BIN = '/usr/bin/prometheus';

/** A `skip` reason for node:test when Prometheus is not installed, else false. */
export const prometheusSkip: string | false = fs.existsSync(PROMETHEUS_BIN) ? false : `${PROMETHEUS_BIN} is not installed (apt-get install prometheus)`;

/** Where a Prometheus runs, for a config that refers to itself or to files beside it. */
export interface PrometheusPlace {
  port: number;
  /** The temp dir: the config, `data/` (the TSDB) and the `files` live here. */
  dir: string;
  /** The absolute path of one of `files`. */
  file(name: string): string;
}

export interface PrometheusOptions {
  /** prometheus.yml as an object (global, scrape_configs, remote_write, remote_read, …). */
  config: Record<string, unknown> | ((place: PrometheusPlace) => Record<string, unknown>);
  /** Files written into the dir before the start (a CA certificate, a password file): name to content. */
  files?: Record<string, string | Uint8Array>;
  /** More command-line flags (`--storage.tsdb.retention.time=1h`, `--web.enable-lifecycle`, …). */
  flags?: string[];
  /** Longest wait for `/-/ready`; default 30 s. */
  readyTimeoutMs?: number;
}

export interface PrometheusAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: any;
}

/** Lines of output kept for failure messages. */
const KEPT_LINES = 300;

/** One running Prometheus. */
export class Prometheus {
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
      if (this.output.length > KEPT_LINES) this.output.splice(0, this.output.length - KEPT_LINES);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
  }

  /** Starts Prometheus and waits until `/-/ready` answers 200; tries another port if the one picked was taken meanwhile. */
  static async start(opts: PrometheusOptions): Promise<Prometheus> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prometheus-test-'));
      const port = await freePort();
      const place: PrometheusPlace = { port, dir, file: (name) => path.join(dir, name) };
      for (const [name, content] of Object.entries(opts.files ?? {})) fs.writeFileSync(place.file(name), content);
      const config = typeof opts.config === 'function' ? opts.config(place) : opts.config;
      const configFile = path.join(dir, 'prometheus.yml');
      fs.writeFileSync(configFile, toYaml(config));
      const args = [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        ...(opts.flags ?? []),
      ];
      const child = spawn(PROMETHEUS_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      const server = new Prometheus(child, port, dir);
      try {
        await server.waitReady(opts.readyTimeoutMs ?? 30_000);
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

  /** The last lines Prometheus wrote (for failure messages). */
  get log(): string {
    return this.output.join('\n');
  }

  /** Any HTTP request to the server. */
  request(method: string, urlPath: string, body: string | Buffer | null = null, headers: Record<string, string> = {}): Promise<PrometheusAnswer> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: this.port, method, path: urlPath, agent: this.agent, headers: { ...headers, ...(body !== null ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
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

  /** `GET /api/v1/<endpoint>?<params>`: the `data` of a success, else an Error with the answer and the server's log. */
  async api(endpoint: string, params: Record<string, string> = {}): Promise<any> {
    const res = await this.request('GET', `/api/v1/${endpoint}?${new URLSearchParams(params)}`);
    if (res.status !== 200 || res.json?.status !== 'success') throw new Error(`prometheus /api/v1/${endpoint} ${JSON.stringify(params)}: ${res.status} ${res.text}\n${this.log}`);
    return res.json.data;
  }

  /** An instant query's result (`/api/v1/query`), at `time` (unix seconds) or now. */
  query(promql: string, time?: number): Promise<any> {
    return this.api('query', { query: promql, ...(time !== undefined ? { time: String(time) } : {}) });
  }

  /** A range query's result (`/api/v1/query_range`), times in unix seconds. */
  queryRange(promql: string, start: number, end: number, step: number): Promise<any> {
    return this.api('query_range', { query: promql, start: String(start), end: String(end), step: String(step) });
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
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`prometheus exited (${this.child.exitCode ?? this.child.signalCode}) before it was ready:\n${this.log}`);
      try {
        if ((await this.request('GET', '/-/ready')).status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > until) throw new Error(`prometheus was not ready within ${timeoutMs} ms:\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
