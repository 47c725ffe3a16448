// Per-key request limits for the auth routes: a fixed-size sliding window of
// request times (per email, per client address) and a lockout after repeated
// failed logins (per email and client address). Memory is bounded: idle keys
// are swept.

import { hextets, mappedIpv4 } from './address.js';

export class SlidingWindowLimiter {
  private readonly hits = new Map<string, number[]>();
  private lastSweep = 0;

  constructor(private readonly limit: number, private readonly windowMs: number, private readonly now = Date.now) {}

  /** Records a request for `key`; false when it is over the limit (the request is still counted). */
  take(key: string): boolean {
    const now = this.now();
    this.sweep(now);
    const cutoff = now - this.windowMs;
    let times = this.hits.get(key);
    if (!times) this.hits.set(key, (times = []));
    while (times.length > 0 && times[0] <= cutoff) times.shift();
    // Keep at most limit+1 entries: enough to know we are over, no more.
    if (times.length > this.limit) times.shift();
    times.push(now);
    return times.length <= this.limit;
  }

  /** Seconds until `key` may make a request again. */
  retryAfterSeconds(key: string): number {
    const times = this.hits.get(key);
    if (!times || times.length === 0) return 0;
    return Math.max(1, Math.ceil((times[0] + this.windowMs - this.now()) / 1000));
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const [key, times] of this.hits) {
      if (times.length === 0 || times[times.length - 1] <= now - this.windowMs) this.hits.delete(key);
    }
  }
}

/** Locks a key for `lockMs` after `maxFailures` failures within `lockMs`. */
export class LoginLockout {
  private readonly failures = new Map<string, { times: number[]; lockedUntil: number }>();

  constructor(private readonly maxFailures: number, private readonly lockMs: number, private readonly now = Date.now) {}

  /** Milliseconds left on the lock, 0 when not locked. */
  lockedFor(key: string): number {
    const entry = this.failures.get(key);
    if (!entry) return 0;
    const left = entry.lockedUntil - this.now();
    if (left > 0) return left;
    if (entry.lockedUntil !== 0) this.failures.delete(key); // lock served: start clean
    return 0;
  }

  recordFailure(key: string): void {
    const now = this.now();
    if (this.failures.size > 100_000) this.sweep(now);
    let entry = this.failures.get(key);
    if (!entry) this.failures.set(key, (entry = { times: [], lockedUntil: 0 }));
    entry.times = entry.times.filter((t) => t > now - this.lockMs);
    entry.times.push(now);
    if (entry.times.length >= this.maxFailures) entry.lockedUntil = now + this.lockMs;
  }

  recordSuccess(key: string): void {
    this.failures.delete(key);
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.failures) {
      if (entry.lockedUntil < now && entry.times.every((t) => t <= now - this.lockMs)) this.failures.delete(key);
    }
  }
}

/**
 * The key a client address is limited under: an IPv4 client (also when it
 * arrives IPv4-mapped) by its dotted address; other IPv6 clients by their /64,
 * since one host commonly holds a whole /64 and could otherwise take a fresh
 * address per request. Takes the address in any IPv6 spelling: uWS's eight
 * full hextets or the compressed form.
 */
export function clientKey(remoteAddress: string): string {
  const parts = hextets(remoteAddress);
  if (!parts) return remoteAddress; // dotted already, or a form we do not know: use as is
  return mappedIpv4(parts) ?? `${parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
}

