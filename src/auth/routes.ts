// Accounts and tokens: register, login, me, me/details, admin user delete.
// Register always answers 200 (success or not), as the contract says, and the
// same success for an email that already has an account, so it cannot be used
// to find out which accounts exist (the attempt is logged). The rate limits
// answer 429 on register and login alike, because a client that retries needs
// the status to back off; every limit is checked before any password is
// hashed, so a refused request costs no scrypt.
//
// Limits: requests per client address (a spray of distinct emails from one
// address), requests per email (guessing one account from many addresses),
// and a lockout after repeated failed logins keyed by email and client
// address, so that failures from one address never lock the account's owner
// out from another.
//
// Every limit reads the service clock (src/clock.ts), which the
// debug route /svcapi/_debug/advance_clock moves forward when debug.clockRoute
// mounts it; otherwise that clock is the system clock.

import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import type { Route, GrantedRequest as Request } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { Logger } from '../log.js';
import { checkEmail } from '../meta/email.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { normalizeEmail, type AccountStore } from './accounts.js';
import type { ApiKeys } from './api-keys.js';
import { hashPassword } from './passwords.js';
import { INVALID_CREDENTIALS, type PasswordLogin } from './password-login.js';
import type { TokenService } from './tokens.js';

export interface AuthRouteDeps {
  accounts: AccountStore;
  /** Whose keys go with a deleted account. */
  apiKeys: ApiKeys;
  tokens: TokenService;
  login: PasswordLogin;
  clock: ServiceClock;
  settings: Config['auth'];
  /** debug.clockRoute: mounts POST /svcapi/_debug/advance_clock. */
  clockRoute: boolean;
  log: Logger;
}

/** The one success reply of register, for a new email and an existing one alike. */
const REGISTERED = 'registration received; log in with this email and password';

const successSchema = S.object({ success: S.boolean(), message: S.string(), error: S.string() }, ['success']);

export function authRoutes(deps: AuthRouteDeps): Route[] {
  const { accounts, tokens, clock, login, log } = deps;
  const auth = deps.settings;
  const limitAddress = (req: Request): string => login.limitAddress(req.remoteAddress, req.path);
  const limitEmail = (email: string) => login.limitEmail(email);

  const debugRoutes: Route[] = !deps.clockRoute ? [] : [
    {
      method: 'POST', path: '/svcapi/_debug/advance_clock', auth: 'admin', tag: 'Debug',
      summary: 'Move the service clock forward (mounted only with debug.clockRoute)',
      description: 'The clock of token expiry, the register/login rate limits, the lockout and notification times (expiry, retention); tests step past a window or a lock with it instead of waiting.',
      body: S.object({ seconds: S.integer({ minimum: 0, maximum: 366 * 86_400 }) }, ['seconds']),
      responses: { 200: { description: 'advanced', schema: successSchema } },
      handler: (req) => {
        const { seconds } = req.body as { seconds: number };
        clock.advance(seconds * 1000);
        log.warn({ seconds, aheadMs: clock.aheadMs }, 'service clock advanced (debug.clockRoute)');
        return { body: { success: true, message: `service clock advanced ${seconds} s; now ${clock.aheadMs / 1000} s ahead of the system clock` } };
      },
    },
  ];

  return [
    ...debugRoutes,
    {
      method: 'POST', path: '/svcapi/register', auth: 'public', tag: 'Authentication',
      summary: 'Create an account (role read-write, no grants)',
      description:
        'Always HTTP 200: `{success: true, message}`, also when the email already has an account (that account is left as it is, ' +
        'so the reply does not reveal which accounts exist), or `{success: false, error}` for invalid input. ' +
        '429 over the per-address or per-email rate limit.',
      // Field types are checked in the handler so that a bad field is still a 200 with success false.
      body: S.object({ name: { default: '' }, email: { default: '' }, password: { default: '' } }),
      responses: { 200: { description: 'outcome', schema: successSchema } },
      handler: async (req) => {
        limitAddress(req);
        const body = req.body as { name: unknown; email: unknown; password: unknown };
        const refuse = (error: string) => ({ body: { success: false, error } });
        if (typeof body.email !== 'string') return refuse('email must be a string');
        const checked = checkEmail(body.email);
        if (!checked.ok) return refuse(checked.error);
        const email = checked.email;
        limitEmail(email);
        if (typeof body.name !== 'string') return refuse('name must be a string');
        if (typeof body.password !== 'string') return refuse('password must be a string');
        if (body.password.length < auth.minPasswordLength) {
          return refuse(`password must be at least ${auth.minPasswordLength} characters`);
        }
        // Hash whether or not the email is taken, so the time taken does not tell either.
        const hash = await hashPassword(body.password, auth.scryptCost);
        if (!accounts.create(email, hash, body.name, 'read-write')) {
          log.info({ email }, 'register for an email that already has an account; nothing changed');
        } else {
          log.info({ email }, 'account registered');
        }
        return { body: { success: true, message: REGISTERED } };
      },
    },
    {
      // It only reads accounts (its limits are in memory): served during a metadata restore too.
      method: 'POST', path: '/svcapi/login', auth: 'public', tag: 'Authentication', anyNode: true, maintenanceExempt: true,
      summary: 'Exchange email and password for an access token',
      description:
        `401 "${INVALID_CREDENTIALS}" on a wrong email or password; 400 for an email that is not a valid address; ` +
        '429 over the per-address or per-email rate limit, or while this email is locked for your address after repeated failures (even with the right password).',
      body: S.object({ email: S.string(), password: S.string(), name: S.string() }, ['email', 'password']),
      responses: {
        200: { description: 'token', schema: S.object({ token: S.string() }, ['token']) },
        400: { description: 'malformed email' },
        401: { description: 'wrong credentials' },
        429: { description: 'rate limited or locked' },
      },
      handler: async (req) => {
        const body = req.body as { email: string; password: string };
        const checked = checkEmail(body.email);
        if (!checked.ok) {
          limitAddress(req); // a malformed email still counts against the address
          throw badRequest(checked.error);
        }
        const state = await login.check(checked.email, body.password, req.remoteAddress, req.path);
        return { body: { token: tokens.sign(state) } };
      },
    },
    {
      method: 'GET', path: '/svcapi/me', auth: 'jwt', tag: 'Authentication',
      summary: 'Who the token belongs to, with the account\'s current role',
      responses: { 200: { description: 'subject and role', schema: S.object({ user_id: S.string(), role: S.string() }, ['user_id', 'role']) } },
      handler: (req) => ({ body: { user_id: req.user!.sub, role: req.user!.role } }),
    },
    {
      method: 'POST', path: '/svcapi/admin/user/delete', auth: 'admin', tag: 'Authentication',
      summary: 'Delete an account by email (admin)',
      description: 'Tokens already issued to the account, and its API keys, stop working at once (the keys are deleted).',
      body: S.object({ email: S.string() }, ['email']),
      responses: {
        200: { description: 'deleted', schema: S.object({ success: S.boolean() }, ['success']) },
        404: { description: 'no such user' },
      },
      handler: (req) => {
        const raw = (req.body as { email: string }).email;
        // Canonical form when it is a valid address (an IDN domain in either spelling); else as stored by older versions.
        const checked = checkEmail(raw);
        const email = checked.ok ? checked.email : normalizeEmail(raw);
        if (!email) throw badRequest('email is required');
        if (email === req.user!.sub) throw badRequest('an admin cannot delete their own account');
        // Its tokens and keys stop working with this: they are checked against the account on every request.
        const account = accounts.find(email);
        if (accounts.delete(email) === 0) throw notFound(`user ${email} not found`);
        if (account) deps.apiKeys.deleteOwnedBy(account.id);
        log.info({ email, by: req.user!.sub }, 'account deleted');
        return { body: { success: true } };
      },
    },
  ];
}
