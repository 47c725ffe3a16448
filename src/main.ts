// Process entry: read the command line and settings, take the data dir, open the core (metadata,
// accounts, tokens), start the subsystems (each declares its routes, start, stop and health;
// subsystems.ts), serve HTTPS, and shut down cleanly on SIGTERM/SIGINT: stop accepting, close
// long-lived streams, finish in-flight requests, stop subsystems in reverse order, exit 0.

import fs from 'node:fs';
import { ensureAdmin } from './auth/bootstrap.js';
import { PasswordLogin } from './auth/password-login.js';
import { JobLog } from './jobs/job-log.js';
import { BackupService } from './backup/service.js';
import { ConnectorService } from './connector/service.js';
import { recoverInterruptedRestore } from './backup/restore-marker.js';
import { loadOrCreateSecret, readClusterSecret, TokenService } from './auth/tokens.js';
import { ClusterService } from './cluster/service.js';
import { mutates } from './http/route.js';
import { ServiceError } from '../shared/errors.js';
import { AccountStore } from './auth/users.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { claimDataDir } from './data-dir.js';
import { configureBodyGuard } from './http/body-guard.js';
import { ensureCertificates } from './http/certificates.js';
import { HttpServer } from './http/server.js';
import { createLogger, flushLogs, type Logger } from './log.js';
import { openMetadataDb } from './meta/database.js';
import { WalCheckpointer } from './meta/checkpointer.js';
import { EntityStore } from './meta/entities.js';
import { registerSqlFunctions } from './meta/filter.js';
import { Registry } from './meta/registry.js';
import { AccessGrant } from './meta/access-grant.js';
import { syncEntitySchema } from './meta/schema.js';
import { StorageService } from './storage/service.js';
import { NotificationService } from './notifications/service.js';
import { ServiceClock } from './clock.js';
import { MonitorService } from './monitor/service.js';
import { LiveHub } from './live/hub.js';
import { BlobService } from './files/blobs.js';
import type { ServiceContext } from './routes/context.js';
import { buildSubsystems } from './routes/index.js';
import { parseArgs, StartupError, USAGE } from './startup.js';
import { SubsystemHost } from './subsystems.js';

export interface RunningService {
  port: number;
  stop(): Promise<void>;
}

export const VERSION = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export async function startService(config: Config, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const lock = claimDataDir(config.dataDir, log);
  const cleanups: Array<() => void | Promise<void>> = [() => lock.release()];
  const undo = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  try {
    const tls = ensureCertificates(config.dataDir, config.tls, log);
    const db = openMetadataDb(config.dataDir);
    cleanups.push(() => void db.close());
    const checkpointer = new WalCheckpointer(db, db.name, log);
    cleanups.push(() => checkpointer.stop());
    const registry = new Registry();
    syncEntitySchema(db, registry);
    registerSqlFunctions(db, { regexpBudgetSteps: config.meta.regexpBudgetSteps });
    const clock = new ServiceClock();
    const entities = new EntityStore(db, registry, config.meta.maxListRows, clock.now);
    // A restore a crash interrupted is finished or undone before the storage workers open the ts folder.
    const recovered = recoverInterruptedRestore(config.dataDir);
    if (recovered) log.warn({ dataDir: config.dataDir }, recovered);
    const storage = new StorageService(config, db, log);
    entities.addHooks(storage.entityHooks((job) => entities.defer(job)));
    const auth = config.auth;
    // A cluster's nodes share one signing secret, so a token from one node works on all.
    const secret = config.cluster.enabled ? readClusterSecret(config.cluster.secretFile) : loadOrCreateSecret(config.dataDir);
    const cluster = new ClusterService(config, log);
    const accounts = new AccountStore(db, secret);
    entities.addHooks(accounts.entityHooks());
    const tokens = new TokenService(secret, auth.tokenLifetimeSeconds, auth.tokenCacheSeconds, auth.tokenCacheMaxEntries, accounts, clock);
    const passwordLogin = new PasswordLogin(accounts, auth, log, clock);
    const jobs = new JobLog(db, clock, log, config.processLog.retentionDays);
    const notifications = new NotificationService({ db, entities, tokens, clock, log, settings: config.notifications, jobs });
    const monitor = new MonitorService({ db, storage, notifications, clock, log, settings: config.monitor, leads: () => cluster.isLeader() });
    entities.addHooks(monitor.entityHooks());
    const connector = new ConnectorService({ config, db, entities, storage, accounts, jobs, log });
    const backups = new BackupService({ config, db, registry, storage, accounts, tokens, notifications, monitor, jobs, clock, log });
    if (config.compat.openMonitorAndBackup) {
      log.warn('compat.openMonitorAndBackup is on: the monitor and backup routes answer without a token');
    }
    const blobs = new BlobService({ db, dataDir: config.dataDir, entities, log, now: clock.now });
    entities.addHooks(blobs.entityHooks());
    const live = new LiveHub({ db, registry, tokens, storage, settings: config.ws, log });
    const makeAdmin = () => ensureAdmin(accounts, { email: auth.adminEmail, password: env.HISTORIAN_ADMIN_PASSWORD, dataDir: config.dataDir, scryptCost: auth.scryptCost }, log);
    // On a cluster only the leader makes the first admin (once it has caught up); the others get it by replication.
    cluster.attach({
      db, storage, entities, accounts, tokens, monitor, notifications, backups, caFile: tls.caFile, secret,
      onLeading: async () => {
        await makeAdmin();
        connector.resumeInterrupted();
      },
      onFollowing: () => connector.pauseAll(),
    });
    if (!config.cluster.enabled) await makeAdmin();

    let port = config.server.port;
    let host!: SubsystemHost;
    const ctx: ServiceContext = { config, log, db, accounts, tokens, passwordLogin, jobs, tls, entities, storage, notifications, monitor, backups, connector, cluster, live, blobs, clusterSecret: config.cluster.enabled ? secret : null, boundPort: () => port, health: () => host.health(), routeTable: () => routes };
    host = new SubsystemHost(buildSubsystems(ctx), log);
    const routes = host.routes();
    await host.start();
    cleanups.push(() => host.stop());
    configureBodyGuard({ maxJsonDepth: config.server.maxJsonDepth });
    const server = new HttpServer({
      routes,
      verifyToken: (header) => tokens.verifyHeader(header),
      grantOf: (user) => AccessGrant.of(db, registry, user),
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
      webSocket: live.endpoint(),
      admit: (def) => {
        if (!mutates(def)) return null;
        if (!def.anyNode) {
          const notLeader = cluster.notLeader();
          if (notLeader) return notLeader;
        }
        const restoring = def.maintenanceExempt ? null : backups.maintenanceReason();
        return restoring ? new ServiceError('UNAVAILABLE', restoring, { headers: { 'retry-after': '5' } }) : null;
      },
    });
    port = await server.listen(config.server.host, config.server.port);
    log.info(
      { version: VERSION, pid: process.pid, address: `https://${config.server.host || '0.0.0.0'}:${port}`, port, dataDir: config.dataDir, caFile: tls.caFile },
      'listening',
    );
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

async function main(): Promise<void> {
  let config: Config;
  try {
    const asked = parseArgs(process.argv.slice(2));
    if (asked === 'help') return void process.stdout.write(USAGE);
    if (asked === 'version') return void process.stdout.write(`historian ${VERSION}\n`);
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StartupError) fail(err.message);
    throw err;
  }
  // A reader that went away (a closed pipe) must not crash the service or hold up its shutdown.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  const log = createLogger(config.log.level);
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

main().catch((err) => {
  flushLogs();
  process.stderr.write(`historian: failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
