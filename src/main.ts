// Process entry: load settings, open the stores, build the route table, serve
// HTTPS, and shut down cleanly on SIGTERM/SIGINT (stop accepting, finish
// in-flight requests, close stores, exit 0).

import { ensureAdmin } from './auth/bootstrap.js';
import { loadOrCreateSecret, TokenService } from './auth/tokens.js';
import { AccountStore } from './auth/users.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { prepareDataDir } from './data-dir.js';
import { configureBodyGuard } from './http/body-guard.js';
import { ensureCertificates } from './http/certificates.js';
import { HttpServer } from './http/server.js';
import { createLogger, flushLogs, type Logger } from './log.js';
import { openMetadataDb } from './meta/database.js';
import { EntityStore } from './meta/entities.js';
import { registerSqlFunctions } from './meta/filter.js';
import { Registry } from './meta/registry.js';
import { syncEntitySchema } from './meta/schema.js';
import { StorageService } from './storage/service.js';
import type { ServiceContext } from './routes/context.js';
import { buildRouteTable } from './routes/index.js';

export interface RunningService {
  port: number;
  stop(): Promise<void>;
}

export async function startService(config: Config, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  prepareDataDir(config.dataDir, log);
  const tls = ensureCertificates(config.dataDir, config.tls, log);
  const db = openMetadataDb(config.dataDir);
  const registry = new Registry();
  syncEntitySchema(db, registry);
  registerSqlFunctions(db, { regexpBudgetSteps: config.meta.regexpBudgetSteps });
  const entities = new EntityStore(db, registry, config.meta.maxListRows);
  const storage = new StorageService(config, db, log);
  await storage.start();
  entities.addHooks(storage.entityHooks((job) => entities.defer(job)));
  const auth = config.auth;
  const secret = loadOrCreateSecret(config.dataDir);
  const accounts = new AccountStore(db, secret);
  entities.addHooks(accounts.entityHooks());
  const tokens = new TokenService(secret, auth.tokenLifetimeSeconds, auth.tokenCacheSeconds, auth.tokenCacheMaxEntries, accounts);
  await ensureAdmin(accounts, { email: auth.adminEmail, password: env.HISTORIAN_ADMIN_PASSWORD, dataDir: config.dataDir, scryptCost: auth.scryptCost }, log);

  let port = config.server.port;
  const ctx: ServiceContext = { config, log, db, accounts, tokens, tls, entities, storage, boundPort: () => port };
  configureBodyGuard({ maxJsonDepth: config.server.maxJsonDepth });
  const server = new HttpServer({
    routes: buildRouteTable(ctx),
    tokens,
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
  });
  port = await server.listen(config.server.host, config.server.port);
  log.info({ port, dataDir: config.dataDir, caFile: tls.caFile }, 'listening');
  flushLogs(); // whoever waits for this line should not wait for the batch

  return {
    port,
    async stop() {
      await server.close(config.server.shutdownGraceMs);
      await storage.close();
      db.close();
    },
  };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`historian: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger(config.log.level);
  const service = await startService(config, log);
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

main().catch((err) => {
  flushLogs();
  process.stderr.write(`historian: failed to start: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
