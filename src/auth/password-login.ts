// Every place a password is checked (POST /svcapi/login, Basic and u/p credentials on the
// ingest routes) goes through one PasswordLogin, so they share the limits: requests per client
// address (a spray of distinct emails from one address), requests per email (guessing one
// account from many addresses), and a lockout after repeated failures keyed by email and client
// address, so failures from one address never lock the account's owner out from another. Every
// limit is checked before any password is hashed, so a refused request costs no scrypt.
//
// The limits read the service clock (src/clock.ts), which /svcapi/_debug/advance_clock moves.

import type { Config } from '../config.js';
import type { ServiceClock } from '../clock.js';
import { ServiceError } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import { decoy, verifyPassword } from './passwords.js';
import { clientKey, LoginLockout, SlidingWindowLimiter } from '../http/rate-limit.js';
import type { AccountState, AccountStore } from './accounts.js';

export const INVALID_CREDENTIALS = 'invalid username or password';

export class PasswordLogin {
  private readonly perEmail: SlidingWindowLimiter;
  private readonly perAddress: SlidingWindowLimiter;
  private readonly lockout: LoginLockout;

  constructor(
    private readonly accounts: AccountStore,
    private readonly settings: Config['auth'],
    private readonly log: Logger,
    clock: ServiceClock,
  ) {
    const windowMs = settings.rateLimitWindowSeconds * 1000;
    this.perEmail = new SlidingWindowLimiter(settings.rateLimitRequests, windowMs, clock.now);
    this.perAddress = new SlidingWindowLimiter(settings.rateLimitRequestsPerAddress, windowMs, clock.now);
    this.lockout = new LoginLockout(settings.lockoutFailures, settings.lockoutSeconds * 1000, clock.now);
  }

  /** First of the three limits: one address, whatever emails it names (429). Returns the address key. */
  limitAddress(remoteAddress: string, path: string): string {
    const client = clientKey(remoteAddress);
    if (!this.perAddress.take(client)) {
      this.log.warn({ remote: remoteAddress, path }, 'audit: register/login refused, too many requests from one address');
      throw new ServiceError('RATE_LIMITED', `too many register/login requests from your address (auth.rateLimitRequestsPerAddress); try again later`, { headers: {
        'retry-after': String(this.perAddress.retryAfterSeconds(client)),
      } });
    }
    return client;
  }

  /** Second limit: one email, from whatever addresses (429). */
  limitEmail(email: string): void {
    if (!this.perEmail.take(email)) {
      this.log.warn({ email }, 'audit: register/login refused, too many requests for one email');
      throw new ServiceError('RATE_LIMITED', 'too many requests for this email; try again later', { headers: {
        'retry-after': String(this.perEmail.retryAfterSeconds(email)),
      } });
    }
  }

  /**
   * The account state of a valid email and password, after the limits and the lockout; 401
   * (BAD_CREDENTIALS) otherwise. `email` is already in canonical form.
   */
  async check(email: string, password: string, remoteAddress: string, path: string): Promise<AccountState> {
    const client = this.limitAddress(remoteAddress, path);
    this.limitEmail(email);
    const lockKey = `${email}\n${client}`;
    const lockedMs = this.lockout.lockedFor(lockKey);
    if (lockedMs > 0) {
      this.log.warn({ email, remote: remoteAddress }, 'audit: login refused, locked after repeated failures');
      const minutes = Math.ceil(lockedMs / 60_000);
      throw new ServiceError('ACCOUNT_LOCKED', `account locked for your address after repeated failed logins; try again in ${minutes} minute(s)`, { headers: {
        'retry-after': String(Math.ceil(lockedMs / 1000)),
      } });
    }
    const account = this.accounts.find(email);
    // Verify against a decoy when the account is missing so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, account?.passwordHash ?? (await decoy(this.settings.scryptCost)));
    const state = account && ok ? this.accounts.stateAfterLogin(account) : null;
    if (!state) {
      this.lockout.recordFailure(lockKey);
      this.log.warn({ email, remote: remoteAddress, path, account: account ? 'exists' : 'none' }, 'audit: login failed');
      throw new ServiceError('BAD_CREDENTIALS', INVALID_CREDENTIALS);
    }
    this.lockout.recordSuccess(lockKey);
    return state;
  }
}
