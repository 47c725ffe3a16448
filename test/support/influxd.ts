// A real InfluxDB 1.x server for tests: Debian's `influxd` (package `influxdb`, 1.6), the
// reference the InfluxDB API at the root is compared with (issue 28). Each start gets its own
// temp dir (meta, data, wal) and free loopback ports for HTTP and the RPC bind address, so
// neither the packaged service on 8086/8088 nor another test's server is in the way; reporting,
// the monitor's store, continuous queries and the HTTP access log are off. Plain HTTP: it is a
// test peer on loopback. `query` returns the parsed JSON answer of `/query`, GET or POST form.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PeerProcess, startWithRetries, type PeerAnswer } from './peer-process.js';
import { freePort } from './ports.js';

export const INFLUXD_BIN = '/usr/bin/influxd';
export const INFLUX_CLI_BIN = '/usr/bin/influx';

/** A `skip` reason for node:test when the server is not installed, else false. */
export const influxdSkip: string | false = fs.existsSync(INFLUXD_BIN) ? false : `${INFLUXD_BIN} is not installed (apt-get install influxdb; .ci/run does)`;
/** The same for the CLI. */
export const influxCliSkip: string | false = fs.existsSync(INFLUX_CLI_BIN) ? false : `${INFLUX_CLI_BIN} is not installed (apt-get install influxdb-client; .ci/run does)`;

export type InfluxAnswer = PeerAnswer;

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
export class Influxd extends PeerProcess {
  protected readonly name = 'influxd';

  /** Starts influxd and waits until `/ping` answers 204; tries new ports if the ones picked were taken meanwhile. */
  static async start(): Promise<Influxd> {
    return startWithRetries(async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'influxd-test-'));
      const port = await freePort();
      const rpcPort = await freePort();
      const configFile = path.join(dir, 'influxd.conf');
      fs.writeFileSync(configFile, influxdConfig({ dir, port, rpcPort }));
      // INFLUXDB_* variables would override the file's settings: none reaches the server.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('INFLUXDB_')));
      const server = new Influxd(spawn(INFLUXD_BIN, ['-config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env }), port, dir);
      try {
        await server.waitReady(30_000, async () => (await server.request('GET', '/ping')).status === 204, 'answering /ping');
        return server;
      } catch (err) {
        await server.stop();
        throw err;
      }
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
