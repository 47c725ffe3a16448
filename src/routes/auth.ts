// Accounts and tokens: register, login, me, me/details, admin user delete.
// Register always answers 200 (success or not), as the contract says; the
// per-email rate limit answers 429 on register and login alike, because a
// client that retries needs the status to back off.

import { decoy, hashPassword, verifyPassword } from '../auth/passwords.js';
import { LoginLockout, SlidingWindowLimiter } from '../auth/rate-limit.js';
import { normalizeEmail } from '../auth/users.js';
import { S } from '../http/compile.js';
import { HttpError, badRequest, notFound } from '../http/errors.js';
import type { RouteDef } from '../http/route.js';
import { Scope } from '../meta/scope.js';
import type { ServiceContext } from './context.js';

const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+$/;
const INVALID_CREDENTIALS = 'invalid username or password';

const successSchema = S.object({ success: S.boolean(), message: S.string(), error: S.string() }, ['success']);

export function authRoutes(ctx: ServiceContext): RouteDef[] {
  const { accounts, tokens, config } = ctx;
  const auth = config.auth;
  const limiter = new SlidingWindowLimiter(auth.rateLimitRequests, auth.rateLimitWindowSeconds * 1000);
  const lockout = new LoginLockout(auth.lockoutFailures, auth.lockoutSeconds * 1000);

  const enforceRateLimit = (email: string) => {
    if (!limiter.take(email)) {
      throw new HttpError('RATE_LIMITED', 'too many requests for this email; try again later', {
        'retry-after': String(limiter.retryAfterSeconds(email)),
      });
    }
  };

  return [
    {
      method: 'POST', path: '/svcapi/register', auth: 'public', tag: 'Authentication',
      summary: 'Create an account (role read-write, no grants)',
      description: 'Always HTTP 200: `{success: true, message}` or `{success: false, error}` (for example when the email exists). 429 when the per-email rate limit is exceeded.',
      // Field types are checked in the handler so that a bad field is still a 200 with success false.
      body: S.object({ name: { default: '' }, email: { default: '' }, password: { default: '' } }),
      responses: { 200: { description: 'outcome', schema: successSchema } },
      handler: async (req) => {
        const body = req.body as { name: unknown; email: unknown; password: unknown };
        const refuse = (error: string) => ({ body: { success: false, error } });
        if (typeof body.email !== 'string') return refuse('email must be a string');
        const email = normalizeEmail(body.email);
        enforceRateLimit(email);
        if (typeof body.name !== 'string') return refuse('name must be a string');
        if (typeof body.password !== 'string') return refuse('password must be a string');
        if (!EMAIL_PATTERN.test(email)) return refuse('email is required and must look like name@host');
        if (body.password.length < auth.minPasswordLength) {
          return refuse(`password must be at least ${auth.minPasswordLength} characters`);
        }
        if (accounts.find(email)) return refuse('email already registered');
        const hash = await hashPassword(body.password, auth.scryptCost);
        if (!accounts.create(email, hash, body.name, 'read-write')) return refuse('email already registered');
        ctx.log.info({ email }, 'account registered');
        return { body: { success: true, message: 'account created' } };
      },
    },
    {
      method: 'POST', path: '/svcapi/login', auth: 'public', tag: 'Authentication',
      summary: 'Exchange email and password for an access token',
      description: `401 "${INVALID_CREDENTIALS}" on a wrong email or password; 429 over the per-email rate limit, or while the account is locked after repeated failures (even with the right password).`,
      body: S.object({ email: S.string(), password: S.string(), name: S.string() }, ['email', 'password']),
      responses: {
        200: { description: 'token', schema: S.object({ token: S.string() }, ['token']) },
        401: { description: 'wrong credentials' },
        429: { description: 'rate limited or locked' },
      },
      handler: async (req) => {
        const body = req.body as { email: string; password: string };
        const email = normalizeEmail(body.email);
        enforceRateLimit(email);
        const lockedMs = lockout.lockedFor(email);
        if (lockedMs > 0) {
          const minutes = Math.ceil(lockedMs / 60_000);
          throw new HttpError('ACCOUNT_LOCKED', `account locked after repeated failed logins; try again in ${minutes} minute(s)`, {
            'retry-after': String(Math.ceil(lockedMs / 1000)),
          });
        }
        const account = accounts.find(email);
        // Verify against a decoy when the account is missing so timing does not reveal which emails exist.
        const ok = await verifyPassword(body.password, account?.passwordHash ?? (await decoy(auth.scryptCost)));
        if (!account || !ok) {
          lockout.recordFailure(email);
          throw new HttpError('BAD_CREDENTIALS', INVALID_CREDENTIALS);
        }
        lockout.recordSuccess(email);
        return { body: { token: tokens.sign(accounts.claimsFor(account)) } };
      },
    },
    {
      method: 'GET', path: '/svcapi/me', auth: 'jwt', tag: 'Authentication',
      summary: 'Who the token belongs to',
      responses: { 200: { description: 'subject and role', schema: S.object({ user_id: S.string(), role: S.string() }, ['user_id', 'role']) } },
      handler: (req) => ({ body: { user_id: req.user!.sub, role: req.user!.role } }),
    },
    {
      method: 'GET', path: '/svcapi/me/details', auth: 'jwt', tag: 'Authentication',
      summary: "Whether the caller's unit has a configured collection",
      responses: { 200: { description: 'details', schema: S.object({ unitConfigured: S.boolean() }, ['unitConfigured']) } },
      handler: (req) => ({ body: { unitConfigured: ctx.storage.unitConfigured(Scope.of(ctx.db, ctx.entities.registry, req.user!)) } }),
    },
    {
      method: 'POST', path: '/svcapi/admin/user/delete', auth: 'admin', tag: 'Authentication',
      summary: 'Delete an account by email (admin)',
      description: 'Tokens already issued to the account stop working at once.',
      body: S.object({ email: S.string() }, ['email']),
      responses: {
        200: { description: 'deleted', schema: S.object({ success: S.boolean() }, ['success']) },
        404: { description: 'no such user' },
      },
      handler: (req) => {
        const email = normalizeEmail((req.body as { email: string }).email);
        if (!email) throw badRequest('email is required');
        if (email === req.user!.sub) throw badRequest('an admin cannot delete their own account');
        const now = Math.floor(Date.now() / 1000);
        if (accounts.delete(email, now) === 0) throw notFound(`user ${email} not found`);
        tokens.revokeSubject(email, now);
        ctx.log.info({ email, by: req.user!.sub }, 'account deleted');
        return { body: { success: true } };
      },
    },
  ];
}
