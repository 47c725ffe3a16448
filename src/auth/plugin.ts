// The auth subsystem: accounts, tokens, API keys and password checks, the register / login / me
// and API key routes, and the first admin. Every other part checks credentials through what this
// provides.

import { definePlugin, provide } from '../host/plugin.js';
import type { EntityHooks } from '../meta/entities.js';
import { StartupError } from '../startup.js';
import { AccountStore } from './accounts.js';
import { apiKeyRoutes } from './api-key-routes.js';
import { ApiKeys } from './api-keys.js';
import { ACCOUNTS, CREDENTIALS, PASSWORD_CHECK, PASSWORD_HASHER, SIGNING_SECRET } from './api.js';
import { CredentialCheck } from './credentials.js';
import { adminEmailOf, ensureAdmin } from './first-admin.js';
import { PasswordLogin } from './password-login.js';
import { hashPassword } from './passwords.js';
import { authRoutes } from './routes.js';
import { loadOrCreateSecret, readClusterSecret, TokenService } from './tokens.js';

/** Tables whose rows the account cache mirrors. */
const ACCOUNT_TABLES = ['users', 'userprofiles', 'revoked_subjects'];
/** How often the last uses of API keys are written (and once more at stop): one transaction, however many requests. */
const KEY_USES_SAVE_MS = 5000;

export const authPlugin = definePlugin({
  name: 'auth',
  settings: (config, env) => ({
    ...config.auth,
    dataDir: config.dataDir,
    clockRoute: config.debug.clockRoute,
    /** A cluster's nodes share one signing secret, so a token from one node works on all. */
    clusterSecretFile: config.cluster.enabled ? config.cluster.secretFile : undefined,
    adminPassword: env.HISTORIAN_ADMIN_PASSWORD,
  }),
  provides: [CREDENTIALS, PASSWORD_CHECK, ACCOUNTS, PASSWORD_HASHER, SIGNING_SECRET],
  check(settings) {
    adminEmailOf(settings.adminEmail);
    if (settings.clusterSecretFile !== undefined) {
      try {
        readClusterSecret(settings.clusterSecretFile);
      } catch (err) {
        throw new StartupError((err as Error).message);
      }
    }
  },
  create({ settings, meta, clock, log, leadership }) {
    const adminEmail = adminEmailOf(settings.adminEmail);
    const secret = settings.clusterSecretFile !== undefined ? readClusterSecret(settings.clusterSecretFile) : loadOrCreateSecret(settings.dataDir);
    const accounts = new AccountStore(meta.accounts, secret);
    const tokens = new TokenService(secret, settings.tokenLifetimeSeconds, settings.tokenCacheSeconds, settings.tokenCacheMaxEntries, accounts, clock, (email, claim) =>
      log.info({ email, command: claim.command, pid: claim.pid }, 'audit: the historian command acted as this account with a token signed by the data dir\'s own secret'),
    );
    const login = new PasswordLogin(accounts, settings, log, clock);
    const apiKeys = new ApiKeys(meta.apiKeys, accounts, clock);
    const credentials = new CredentialCheck(tokens, apiKeys);
    const followTables = (tables: ReadonlySet<string>) => {
      if (ACCOUNT_TABLES.some((t) => tables.has(t))) {
        accounts.forgetAll();
        tokens.forgetAll();
      }
      if (tables.has('api_keys')) apiKeys.reload();
    };
    meta.events.replacing.subscribe(() => apiKeys.dropUnsavedUses());
    meta.events.replaced.subscribe(followTables);
    meta.events.tablesChanged.subscribe((change) => followTables(change.tables));
    leadership.onLeading(() => ensureAdmin(accounts, { email: adminEmail, password: settings.adminPassword, dataDir: settings.dataDir, scryptCost: settings.scryptCost }, log));
    /** Only a leader writes: on a secondary the rows are the leader's (uses seen here wait until this node leads). */
    const saveKeyUses = () => {
      if (!leadership.leads()) return;
      try {
        apiKeys.saveUses();
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'API keys: last uses not written; kept for the next batch');
      }
    };
    let saving: NodeJS.Timeout | undefined;
    return {
      start() {
        apiKeys.reload();
        saving = setInterval(saveKeyUses, KEY_USES_SAVE_MS);
        saving.unref();
      },
      stop() {
        clearInterval(saving);
        saveKeyUses();
      },
      provide: [
        provide(CREDENTIALS, {
          verifyHeader: (header) => credentials.verifyHeader(header),
          verify: (credential) => credentials.verify(credential),
          cached: (seconds, maxEntries) => credentials.withTokenCache(seconds, maxEntries),
        }),
        provide(PASSWORD_CHECK, login),
        provide(ACCOUNTS, accounts),
        provide(PASSWORD_HASHER, { hash: (password) => hashPassword(password, settings.scryptCost) }),
        provide(SIGNING_SECRET, secret),
      ],
      routes: [...authRoutes({ accounts, apiKeys, tokens, login, clock, settings, clockRoute: settings.clockRoute, log }), ...apiKeyRoutes(apiKeys)],
      entityHooks: bothHooks(accounts.entityHooks(), apiKeys.entityHooks()),
    };
  },
});

/** Two sets of entity hooks as one (the host takes one per plugin), each called in turn. */
function bothHooks(a: EntityHooks, b: EntityHooks): EntityHooks {
  return {
    afterCreate: (...args) => (a.afterCreate?.(...args), b.afterCreate?.(...args)),
    afterUpdate: (...args) => (a.afterUpdate?.(...args), b.afterUpdate?.(...args)),
    beforeDelete: (...args) => (a.beforeDelete?.(...args), b.beforeDelete?.(...args)),
    afterCommit: () => (a.afterCommit?.(), b.afterCommit?.()),
    afterRollback: () => (a.afterRollback?.(), b.afterRollback?.()),
  };
}
