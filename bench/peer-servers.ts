// The peers our service is measured against (VictoriaMetrics and InfluxDB 1.x
// from Debian's packages) as child processes on HTTPS with the certificate
// our service uses, and the helpers the peer benchmarks share: readiness
// waits, flushing and compaction before disk is measured, the package
// version, reply checks and InfluxDB answer counting.

import { influxdConfig } from '../test/support/influxd.js';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCertificates } from '../src/http/certificates.js';
import { describeReply, int, Phases, sleep } from './runner.js';
import { diskUsage, freePort, HttpsClient, ServerProcess, tempDir, waitForQuiet, type DiskUsage, type OurService, type Reply } from './service.js';

export const VM_BIN = '/usr/bin/victoria-metrics';
export const INFLUX_BIN = '/usr/bin/influxd';
/** The database every InfluxDB run writes into (created at start). */
export const INFLUX_DB = 'bench';

/** Exits 1 naming the install command when a peer's binary is missing (the benchmarks install nothing). */
export function requirePeerBinaries(binaries: readonly string[] = [VM_BIN, INFLUX_BIN]): void {
  const missing = binaries.filter((bin) => !fs.existsSync(bin));
  if (missing.length === 0) return;
  process.stderr.write(`missing ${missing.join(' and ')}; install the peers first:\n  apt-get install -y victoria-metrics influxdb\n`);
  process.exit(1);
}

/** Certificate, key and CA (PEM text) every server of a run listens with. */
export interface PeerTls {
  crt: string;
  key: string;
  ca: string;
}

/** The certificate our service generated, so TLS costs every system the same. */
export function serviceTls(service: OurService): PeerTls {
  return { crt: path.join(service.dataDir, 'tls', 'server.crt'), key: path.join(service.dataDir, 'tls', 'server.key'), ca: service.ca };
}

/**
 * The same kind of certificate our service would generate, made by its own
 * code in `dir`, for a run in which our service does not start.
 */
export function generatedTls(dir: string): PeerTls {
  const files = ensureCertificates(dir, { certFile: null, keyFile: null, caFile: null });
  return { crt: files.certFile, key: files.keyFile, ca: fs.readFileSync(files.caFile!, 'utf8') };
}

/** A started peer: its process, a client on `connections` keep-alive sockets, and its data dir. */
export interface PeerServer {
  proc: ServerProcess;
  client: HttpsClient;
  /** Everything the peer stores: measured for disk use. */
  dataDir: string;
  /** Dirs and files to remove at the end of the run (unless --keep). */
  paths: string[];
  /** Debian package name and version. */
  version: string;
  /** A cheap GET (health or ping). */
  probePath: string;
  /** Closes the client and stops the process (SIGTERM: each peer flushes what it holds before it exits). */
  stop(): Promise<void>;
}

function peerServer(proc: ServerProcess, client: HttpsClient, dataDir: string, paths: string[], pkg: string, probePath: string): PeerServer {
  return {
    proc,
    client,
    dataDir,
    paths,
    version: packageVersion(pkg),
    probePath,
    async stop() {
      client.close();
      await proc.stop();
    },
  };
}

/** VictoriaMetrics single-node on HTTPS, ready for requests. */
export async function startVictoriaMetrics(tls: PeerTls, connections: number): Promise<PeerServer> {
  const dir = tempDir('bench-vm-');
  const port = await freePort();
  const proc = new ServerProcess('victoria-metrics', VM_BIN, [
    `-storageDataPath=${dir}`,
    `-httpListenAddr=127.0.0.1:${port}`,
    '-tls',
    `-tlsCertFile=${tls.crt}`,
    `-tlsKeyFile=${tls.key}`,
    '-retentionPeriod=100y', // the data set is dated 2024-01-01
    '-search.disableCache', // every query reads storage, as ours does
  ]);
  const client = new HttpsClient(port, tls.ca, connections);
  const server = peerServer(proc, client, dir, [dir], 'victoria-metrics', '/health');
  try {
    await waitReady(proc, () => client.get(server.probePath), (r) => r.status === 200);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

/**
 * Rows VictoriaMetrics ingested are buffered in memory for about a second:
 * flushes them, merges every part, and waits until no merge runs, nothing is
 * pending and the folder has stopped changing.
 */
export async function flushAndMergeVictoriaMetrics(vm: PeerServer): Promise<void> {
  expectStatus('GET /internal/force_flush', 200)(await vm.client.get('/internal/force_flush'));
  expectStatus('GET /internal/force_merge', 200)(await vm.client.get('/internal/force_merge'));
  // force_merge only starts a background merge.
  let last = -1;
  let steady = 0;
  await waitFor(180, async () => {
    const metrics = (await vm.client.get('/metrics')).body.toString();
    const busy = /^vm_(active_force_merges|active_merges|pending_rows)(\{[^}]*\})? [1-9]/m.test(metrics);
    const bytes = diskUsage(vm.dataDir).bytes;
    steady = !busy && bytes === last ? steady + 1 : 0;
    last = bytes;
    return steady >= 3;
  });
}

/** InfluxDB 1.x on HTTPS with the database INFLUX_DB created. */
export async function startInfluxDb(tls: PeerTls, connections: number): Promise<PeerServer> {
  const dir = tempDir('bench-influx-');
  const port = await freePort();
  const rpcPort = await freePort();
  const configFile = `${dir}.conf`;
  // The tests' config (test/support/influxd.ts) with HTTPS and short "cold" delays, so the
  // cache is snapshotted and fully compacted within seconds of the ingest instead of after 10
  // minutes and 4 hours.
  fs.writeFileSync(
    configFile,
    influxdConfig({
      dir, port, rpcPort,
      https: { certificate: tls.crt, privateKey: tls.key },
      data: ['cache-snapshot-write-cold-duration = "2s"', 'compact-full-write-cold-duration = "5s"'],
    }),
  );
  const proc = new ServerProcess('influxd', INFLUX_BIN, ['-config', configFile]);
  const client = new HttpsClient(port, tls.ca, connections);
  const server = peerServer(proc, client, dir, [dir, configFile], 'influxdb', '/ping');
  try {
    await waitReady(proc, () => client.get(server.probePath), (r) => r.status === 204);
    const created = await client.request('POST', '/query', `q=${encodeURIComponent(`CREATE DATABASE ${INFLUX_DB}`)}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expectStatus('POST /query CREATE DATABASE', 200)(created);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

export interface InfluxCompaction {
  disk: DiskUsage;
  settled: boolean;
  tsmFiles: number;
  walBytes: number;
}

/**
 * Waits until the WAL is empty and the shard is one TSM file with no
 * compaction in progress (size unchanged for 3 polls), or 180 s.
 */
export async function waitInfluxCompaction(dir: string): Promise<InfluxCompaction> {
  const deadline = Date.now() + 180_000;
  let lastBytes = -1;
  let steady = 0;
  for (;;) {
    await sleep(1000);
    const files = listFiles(path.join(dir, 'data'));
    const tsmFiles = files.filter((f) => f.endsWith('.tsm')).length;
    const compacting = files.some((f) => f.endsWith('.tmp'));
    const walBytes = diskUsage(path.join(dir, 'wal')).bytes;
    const disk = diskUsage(dir);
    steady = disk.bytes === lastBytes ? steady + 1 : 0;
    lastBytes = disk.bytes;
    const settled = walBytes === 0 && tsmFiles === 1 && !compacting && steady >= 3;
    if (settled || Date.now() > deadline) return { disk, settled, tsmFiles, walBytes };
    process.stderr.write(`  InfluxDB: waiting for compaction (${tsmFiles} TSM files, WAL ${int(walBytes)} bytes)\n`);
  }
}

/** How a compaction wait ended, for the report. */
export function describeInfluxCompaction(c: InfluxCompaction, seconds: number): string {
  return `${c.settled ? 'WAL snapshotted and fully compacted' : `NOT fully compacted (${c.tsmFiles} TSM files, ${int(c.walBytes)} WAL bytes)`} after ${seconds.toFixed(2)} s`;
}

/**
 * A run of several systems one after the other: the failures of its phases
 * (recorded, so that one system failing does not end the run), each server's
 * last log lines for the report, and the temp files to remove at the end.
 */
export class SystemRuns {
  readonly phases = new Phases();
  private readonly servers = new Map<string, ServerProcess>();
  private readonly paths: string[] = [];

  constructor(private readonly waitIdleSeconds: number) {}

  /** Runs one system's part after waiting for a quiet machine; a failure is recorded and null returned. */
  async system<T>(name: string, run: () => Promise<T>): Promise<T | null> {
    process.stderr.write(`${name}\n`);
    await waitForQuiet(this.waitIdleSeconds);
    return this.phases.run(`${name}: run`, run);
  }

  /** The server's last log lines go with the failures of the phases named `<name>: …`. */
  watch(name: string, proc: ServerProcess): void {
    this.servers.set(name, proc);
  }

  /** Removed by finish() unless --keep. */
  removeAtEnd(...paths: string[]): void {
    this.paths.push(...paths);
  }

  /** Markdown section with every failure and what the server said, or '' when none. */
  report(): string {
    return this.phases.report((phase) => this.servers.get(phase.split(':')[0])?.logTail(30) ?? []);
  }

  /** Removes our service's data dir and the temp files, or with `keep` names them; exit code 1 after a failure. */
  async finish(keep: boolean, service?: OurService): Promise<void> {
    if (keep) {
      process.stderr.write(`data dirs kept: ${[service?.dataDir, ...this.paths].filter(Boolean).join(' ')}\n`);
    } else {
      await service?.dispose();
      for (const p of this.paths) fs.rmSync(p, { recursive: true, force: true });
    }
    process.exitCode = this.phases.failures.length > 0 ? 1 : 0;
  }
}

export function expectStatus(what: string, status: number): (reply: Reply) => void {
  return (reply) => {
    if (reply.status !== status) throw describeReply(what, reply);
  };
}

export async function waitReady(proc: ServerProcess, probe: () => Promise<Reply>, ok: (r: Reply) => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!proc.running) throw new Error(`${proc.name} exited while starting:\n${proc.logTail().join('\n')}`);
    try {
      if (ok(await probe())) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${proc.name} not ready after 60 s:\n${proc.logTail().join('\n')}`);
    await sleep(100);
  }
}

async function waitFor(seconds: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`still not done after ${seconds} s`);
    await sleep(500);
  }
}

/** The Debian package's version (VictoriaMetrics' own -version prints nothing in this build). */
function packageVersion(pkg: string): string {
  try {
    return `${pkg} ${execFileSync('dpkg-query', ['-W', '-f', '${Version}', pkg], { encoding: 'utf8' }).trim()}`;
  } catch {
    return `${pkg} (version unknown)`;
  }
}

export function countLines(body: Buffer, count: (line: string) => number): number {
  let n = 0;
  for (const line of body.toString('utf8').split('\n')) if (line.trim() !== '') n += count(line);
  return n;
}

/** The series of one InfluxQL answer (one chunk of a chunked one); an error inside it is an error of the query. */
export function influxSeries(line: string): Array<{ values: unknown[][] }> {
  const chunk = JSON.parse(line) as { error?: string; results: Array<{ error?: string; series?: Array<{ values: unknown[][] }> }> };
  if (chunk.error) throw new Error(`InfluxDB query error: ${chunk.error}`);
  const series: Array<{ values: unknown[][] }> = [];
  for (const result of chunk.results) {
    if (result.error) throw new Error(`InfluxDB query error: ${result.error}`);
    series.push(...(result.series ?? []));
  }
  return series;
}

/** Rows of one chunk of a chunked InfluxQL answer. */
export function countInfluxChunk(line: string): number {
  return influxSeries(line).reduce((n, s) => n + s.values.length, 0);
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    for (const entry of fs.readdirSync(p, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(path.join(p, entry.name));
      else out.push(path.join(p, entry.name));
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out;
}
