// The auth subsystem: accounts, tokens and password checks, the register / login / me routes,
// and the first admin. Every other part checks credentials through what this provides.

import { definePlugin, provide } from '../host/plugin.js';
import { StartupError } from '../startup.js';
import { AccountStore } from './accounts.js';
import { ACCOUNTS, CREDENTIALS, PASSWORD_CHECK, PASSWORD_HASHER, SIGNING_SECRET } from './api.js';
import { adminEmailOf, ensureAdmin } from './first-admin.js';
import { PasswordLogin } from './password-login.js';
import { hashPassword } from './passwords.js';
import { authRoutes } from './routes.js';
import { loadOrCreateSecret, readClusterSecret, TokenService } from './tokens.js';

/** Tables whose rows the account cache mirrors. */
const ACCOUNT_TABLES = ['users', 'userprofiles', 'revoked_subjects'];

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
    const tokens = new TokenService(secret, settings.tokenLifetimeSeconds, settings.tokenCacheSeconds, settings.tokenCacheMaxEntries, accounts, clock);
    const login = new PasswordLogin(accounts, settings, log, clock);
    const forgetAccounts = (tables: ReadonlySet<string>) => {
      if (!ACCOUNT_TABLES.some((t) => tables.has(t))) return;
      accounts.forgetAll();
      tokens.forgetAll();
    };
    meta.events.replaced.subscribe(forgetAccounts);
    meta.events.tablesChanged.subscribe((change) => forgetAccounts(change.tables));
    leadership.onLeading(() => ensureAdmin(accounts, { email: adminEmail, password: settings.adminPassword, dataDir: settings.dataDir, scryptCost: settings.scryptCost }, log));
    return {
      provide: [
        provide(CREDENTIALS, {
          verifyHeader: (header) => tokens.verifyHeader(header),
          verify: (token) => tokens.verify(token),
          cached: (seconds, maxEntries) => tokens.withCache(seconds, maxEntries),
        }),
        provide(PASSWORD_CHECK, login),
        provide(ACCOUNTS, accounts),
        provide(PASSWORD_HASHER, { hash: (password) => hashPassword(password, settings.scryptCost) }),
        provide(SIGNING_SECRET, secret),
      ],
      routes: authRoutes({ accounts, tokens, login, clock, settings, clockRoute: settings.clockRoute, log }),
      entityHooks: accounts.entityHooks(),
    };
  },
});
