// The service: check what can fail before anything is made (the settings the plugins check, the
// port, the data dir's lock), open the metadata store, build and start the plugins (host/), serve
// HTTPS, and shut down cleanly on SIGTERM/SIGINT: stop accepting, close long-lived streams, finish
// in-flight requests, stop the plugins in reverse order, exit 0. The list below is the service:
// adding a subsystem is one folder and one line. `historian serve` (src/cli/) runs serve(); run
// directly (`node dist/src/main.js`, as before the command existed) this file serves too.

import fs from 'node:fs';
import net from 'node:net';
import { pathToFileURL } from 'node:url';
import { CREDENTIALS } from './auth/api.js';
import { authPlugin } from './auth/plugin.js';
import { backupPlugin } from './backup/plugin.js';
import { ServiceClock } from './clock.js';
import { clusterPlugin } from './cluster/plugin.js';
import { collectorsPlugin } from './collectors/plugin.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { connectorPlugin } from './connector/plugin.js';
import { consolePlugin } from './console/plugin.js';
import { claimDataDir, recordServiceAddress, type DataDirLock } from './data-dir.js';
import { entitiesPlugin } from './entities/plugin.js';
import { blobsPlugin } from './files/plugin.js';
import { LEADERSHIP_CONTROL, METRIC_SOURCES, SERVICE_INFO } from './host/builtins.js';
import { PluginHost } from './host/host.js';
import { LeadershipState } from './host/leadership.js';
import { provide, type Environment, type Plugin, type Route } from './host/plugin.js';
import { configureBodyGuard } from './http/body-guard.js';
import { ensureCertificates } from './http/certificates.js';
import { HttpServer } from './http/server.js';
import { ingestPlugin } from './ingest/plugin.js';
import { influxPlugin } from './influx/plugin.js';
import { processLogPlugin } from './jobs/plugin.js';
import { prometheusPlugin } from './prometheus/plugin.js';
import { livePlugin } from './live/plugin.js';
import { createLogger, flushLogs, type Logger } from './log.js';
import { MetaStore } from './meta/store.js';
import type { MetricSource } from './metric-source.js';
import { metricsPlugin } from './metrics/plugin.js';
import { monitorPlugin } from './monitor/plugin.js';
import { notificationsPlugin } from './notifications/plugin.js';
import { proxiesPlugin } from './proxy/plugin.js';
import { servicePlugin } from './service/plugin.js';
import { parseArgs, StartupError, USAGE } from './startup.js';
import { storagePlugin } from './storage/plugin.js';

/**
 * The subsystems of the service. The host builds them after what they need; otherwise in this
 * order, which is also the order of /svcapi/health. Routes the contract lists as not mounted
 * (update_password, /elog/*, /dataflow/ems/*) are deliberately absent, so they answer 404.
 */
export const PLUGINS: readonly Plugin<any, any>[] = [
  servicePlugin,
  authPlugin,
  entitiesPlugin,
  processLogPlugin,
  notificationsPlugin,
  storagePlugin,
  ingestPlugin,
  influxPlugin,
  prometheusPlugin,
  backupPlugin,
  connectorPlugin,
  collectorsPlugin,
  monitorPlugin,
  blobsPlugin,
  livePlugin,
  proxiesPlugin,
  clusterPlugin,
  metricsPlugin,
  consolePlugin,
];

export interface RunningService {
  port: number;
  stop(): Promise<void>;
}

export const VERSION = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * The subsystems the historian command starts when it opens a stopped data dir itself (to write,
 * back up or manage users): the stores and their routes, without what reaches outside or acts on
 * its own (collectors, the connector, the monitor's alarms, proxies, the cluster).
 */
export const MAINTENANCE_PLUGINS: readonly Plugin<any, any>[] = [
  servicePlugin, authPlugin, entitiesPlugin, processLogPlugin, notificationsPlugin, storagePlugin,
  ingestPlugin, influxPlugin, backupPlugin, blobsPlugin,
];

export interface StartOptions {
  /** The subsystems to run; every one by default. */
  plugins?: readonly Plugin<any, any>[];
}

export async function startService(config: Config, log: Logger, env: Environment = process.env, opts: StartOptions = {}): Promise<RunningService> {
  const plugins = opts.plugins ?? PLUGINS;
  // What can fail is checked before anything is made: a start that cannot go on leaves no CA,
  // admin password or store behind in a new data dir.
  PluginHost.check(plugins, config, env);
  // A data dir in use is locked first (its holder is the clearer message); a new or empty one is
  // touched only once the port is known to be free.
  let lock: DataDirLock | null = holdsAnything(config.dataDir) ? claimDataDir(config.dataDir, log) : null;
  const cleanups: Array<() => void | Promise<void>> = [];
  const undo = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    lock?.release();
  };
  try {
    await checkPortFree(config.server.host, config.server.port);
    lock ??= claimDataDir(config.dataDir, log);
    const tls = ensureCertificates(config.dataDir, config.tls, log);
    const clock = new ServiceClock();
    const meta = MetaStore.open({ dataDir: config.dataDir, maxListRows: config.meta.maxListRows, regexpBudgetSteps: config.meta.regexpBudgetSteps }, clock, log);
    cleanups.push(() => meta.close());
    const leadership = new LeadershipState(config.cluster.enabled);

    let port = config.server.port;
    let routes: Route[] = [];
    let host!: PluginHost;
    const serviceInfo = { health: () => host.health(), routes: () => routes, port: () => port, caFile: tls.caFile };
    // The HTTP server's families join once it is made (before the first scrape can arrive).
    let metricSources: readonly MetricSource[] = [];
    host = new PluginHost(plugins, { log, clock, meta, leadership }, config, env, [
      provide(SERVICE_INFO, serviceInfo),
      provide(LEADERSHIP_CONTROL, leadership),
      provide(METRIC_SOURCES, { all: () => metricSources }),
    ]);
    routes = host.routes();
    metricSources = [...meta.metricSources(), ...host.metricSources()];
    await host.start(log);
    cleanups.push(() => host.stop(log));
    await leadership.serviceStarted();
    configureBodyGuard({ maxJsonDepth: config.server.maxJsonDepth });
    const credentials = host.capability(CREDENTIALS);
    const server = new HttpServer({
      routes,
      verifyToken: (header) => credentials.verifyHeader(header),
      grantOf: (user) => meta.grantOf(user),
      admit: (route) => host.admit(route),
      webSocket: host.webSocket(),
      log,
      limits: {
        maxBodyBytes: config.server.maxBodyBytes,
        maxJsonBodyBytes: config.server.maxJsonBodyBytes,
        maxPublicBodyBytes: config.server.maxPublicBodyBytes,
        maxBodyBytesInFlight: config.server.maxBodyBytesInFlight,
        maxUrlBytes: config.server.maxUrlBytes,
        maxHeaderBytes: config.server.maxHeaderBytes,
      },
      tls,
      streamStallTimeoutMs: config.storage.resultStallTimeoutMs,
      now: clock.now,
    });
    metricSources = [...server.metricSources(), ...metricSources];
    port = await server.listen(config.server.host, config.server.port);
    log.info(
      { version: VERSION, pid: process.pid, address: `https://${config.server.host || '0.0.0.0'}:${port}`, port, dataDir: config.dataDir, caFile: tls.caFile },
      'listening',
    );
    recordServiceAddress(config.dataDir, { pid: process.pid, url: `https://${localHost(config.server.host)}:${port}`, caFile: tls.caFile });
    flushLogs(); // whoever waits for this line should not wait for the batch

    return {
      port,
      async stop() {
        await server.close(config.server.shutdownGraceMs);
        await undo();
      },
    };
  } catch (err) {
    await undo();
    throw err;
  }
}

/** How this machine reaches a service listening on `host` (every address: loopback). */
function localHost(host: string): string {
  if (host === '' || host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** Whether `dir` exists with something in it (a data dir that may be another process's). */
function holdsAnything(dir: string): boolean {
  try {
    return fs.readdirSync(dir).length > 0;
  } catch {
    return false;
  }
}

/**
 * Whether `port` can be bound, before anything is made: a plain listen and close (port 0, any
 * free port, needs no check). The server binds it for real moments later; a process that takes
 * it in between still gets the same one-line refusal from there.
 */
function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EADDRNOTAVAIL' || err.code === 'EACCES') {
        reject(new StartupError(`cannot listen on ${host || '*'}:${port}: the port is in use or the address is not this machine's (server.host, server.port / HISTORIAN_PORT)`));
      } else reject(err);
    });
    probe.listen({ host: host || undefined, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** The old entry's command line (`node dist/src/main.js [--help|--version]`). */
async function main(): Promise<void> {
  try {
    const asked = parseArgs(process.argv.slice(2));
    if (asked === 'help') return void process.stdout.write(USAGE);
    if (asked === 'version') return void process.stdout.write(`historian ${VERSION}\n`);
  } catch (err) {
    if (err instanceof StartupError) fail(err.message);
    throw err;
  }
  await serve();
}

/** Runs the service until SIGTERM/SIGINT (`historian serve`); a start that fails exits 1 with one line. */
export async function serve(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  // A reader that went away (a closed pipe) must not crash the service or hold up its shutdown.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  const log = createLogger(config.log.level, config.log.format);
  let service: RunningService;
  try {
    service = await startService(config, log);
  } catch (err) {
    flushLogs();
    if (err instanceof StartupError || err instanceof ConfigError) fail(err.message);
    throw err;
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    service.stop().then(
      () => {
        log.info('stopped');
        flushLogs();
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'shutdown failed');
        flushLogs();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

function fail(message: string): never {
  process.stderr.write(`historian: ${message}\n`);
  process.exit(1);
}

/** Whether this module is the process's entry (run as `node dist/src/main.js`), not imported. */
function isEntry(): boolean {
  try {
    return process.argv[1] !== undefined && pathToFileURL(fs.realpathSync(process.argv[1])).href === import.meta.url;
  } catch {
    return false;
  }
}

if (isEntry()) {
  main().catch((err) => {
    flushLogs();
    process.stderr.write(`historian: failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}
