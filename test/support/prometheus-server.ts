// A real Prometheus server for tests: Debian's `prometheus` (2.42), scraping what the test
// tells it to. Each start gets its own temp dir (its YAML config, its TSDB) and a free loopback
// port; it is ready once `/-/ready` answers 200. `query` asks its own HTTP API
// (`/api/v1/query`), which is how a test sees what Prometheus made of a scrape. Output is kept
// for failure messages; stop sends SIGTERM, waits for the exit (SIGKILL after 10 s) and removes
// the temp dir. Named prometheus-server.ts beside another harness in the making (prometheus.ts);
// the two are to be merged.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

export const PROMETHEUS_BIN = '/usr/bin/prometheus';

/** A `skip` reason for node:test when the server is not installed, else false. */
export const prometheusSkip: string | false = fs.existsSync(PROMETHEUS_BIN) ? false : `${PROMETHEUS_BIN} is not installed (apt-get install prometheus)`;

/** One scrape job, as it goes under `scrape_configs` (written as JSON, which is YAML). */
export interface ScrapeJob {
  job_name: string;
  [setting: string]: unknown;
}

/** An answer of Prometheus's HTTP API: `{status, data}` or `{status: "error", errorType, error}`. */
export interface ApiAnswer {
  status: number;
  json: any;
  text: string;
}

export class PrometheusServer {
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
      if (this.output.length > 300) this.output.splice(0, this.output.length - 300);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
  }

  /**
   * Starts Prometheus with `jobs` (every job scraped each `scrapeIntervalSeconds`) and waits until
   * it is ready; tries another port if the one picked was taken meanwhile.
   */
  static async start(jobs: readonly ScrapeJob[], scrapeIntervalSeconds = 1): Promise<PrometheusServer> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prometheus-test-'));
      const port = await freePort();
      const configFile = path.join(dir, 'prometheus.yml');
      const interval = `${scrapeIntervalSeconds}s`;
      fs.writeFileSync(configFile, JSON.stringify({ global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval }, scrape_configs: jobs }, null, 2));
      const child = spawn(
        PROMETHEUS_BIN,
        [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
        { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
      );
      const server = new PrometheusServer(child, port, dir);
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

  /** The last lines Prometheus wrote (for failure messages). */
  get log(): string {
    return this.output.join('\n');
  }

  /** GET on Prometheus's own HTTP server. */
  get(urlPath: string): Promise<ApiAnswer> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: this.port, method: 'GET', path: urlPath, agent: false }, (res) => {
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
          resolve({ status: res.statusCode ?? 0, json, text });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** An instant query; the `data.result` vector, or throws with Prometheus's error. */
  async query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
    const res = await this.get(`/api/v1/query?${new URLSearchParams({ query: promql })}`);
    if (res.status !== 200 || res.json?.status !== 'success') throw new Error(`Prometheus answered ${res.status} to ${promql}: ${res.text}`);
    return res.json.data.result;
  }

  /** The scrape targets as Prometheus sees them (health, last error), for failure messages. */
  async targets(): Promise<string> {
    const res = await this.get('/api/v1/targets');
    return JSON.stringify(res.json?.data?.activeTargets?.map((t: Record<string, unknown>) => ({ url: t.scrapeUrl, health: t.health, lastError: t.lastError })) ?? res.text);
  }

  /** Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its dir. */
  async stop(): Promise<void> {
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
        if ((await this.get('/-/ready')).status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > until) throw new Error(`prometheus was not ready within ${timeoutMs} ms:\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
