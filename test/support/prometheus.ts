// A real Prometheus for tests: Debian's `prometheus` (2.42), the reference for the Prometheus
// compatibility of WIRE.md part 3 (remote write into the service, remote read from it, scrapes
// of /metrics, PromQL answers to compare). Each start gets its own temp dir (config file, TSDB,
// any files the test puts beside them, such as a CA) and a free loopback port, waits for
// `/-/ready`, and keeps the process's last output lines for failure messages. The config is
// given as an object and written as YAML; it may depend on the port and dir chosen (a
// self-scrape names its own address). Plain HTTP: it is a test peer on loopback.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { PeerProcess, startWithRetries, type PeerAnswer } from './peer-process.js';
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

export type PrometheusAnswer = PeerAnswer;

/** One running Prometheus. */
export class Prometheus extends PeerProcess {
  protected readonly name = 'prometheus';

  /** Starts Prometheus and waits until `/-/ready` answers 200; tries another port if the one picked was taken meanwhile. */
  static async start(opts: PrometheusOptions): Promise<Prometheus> {
    return startWithRetries(async () => {
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
      const server = new Prometheus(spawn(PROMETHEUS_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] }), port, dir);
      try {
        await server.waitReady(opts.readyTimeoutMs ?? 30_000, async () => (await server.request('GET', '/-/ready')).status === 200, 'being ready');
        return server;
      } catch (err) {
        await server.stop();
        throw err;
      }
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
}
