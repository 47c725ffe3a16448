// The service's clock: what token expiry and the token cache, the register/login
// rate-limit windows, the lockout after failed logins, and notification times
// (createdAt, expiry, the retention purge), the time a line protocol line without a timestamp
// takes, and the "today" before which seal_now seals, read. It is
// the wall clock plus an offset that starts at 0 and only ever moves forward,
// through POST /svcapi/_debug/advance_clock, which is mounted only with the
// setting debug.clockRoute; so a test steps past a 15-minute lockout instead
// of sleeping through it. With the route off the offset stays 0 and `now` is
// Date.now().

export class ServiceClock {
  private offsetMs = 0;

  /** Milliseconds since the epoch, as the service sees them. */
  readonly now = (): number => Date.now() + this.offsetMs;

  /** How far ahead of the wall clock this clock is, in milliseconds. */
  get aheadMs(): number {
    return this.offsetMs;
  }

  /** Moves the clock forward by `ms` (never back, so every window and lock only ever runs out). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`the auth clock only moves forward (asked to move ${ms} ms)`);
    this.offsetMs += ms;
  }
}
