import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientKey, LoginLockout, SlidingWindowLimiter } from '../../src/http/rate-limit.js';

test('the sliding window allows `limit` requests per window per key', () => {
  let now = 1_000_000;
  const limiter = new SlidingWindowLimiter(3, 60_000, () => now);
  assert.deepEqual([1, 2, 3, 4].map(() => limiter.take('a')), [true, true, true, false]);
  assert.equal(limiter.take('b'), true, 'keys are independent');
  now += 30_000;
  assert.equal(limiter.take('a'), false, 'still inside the window');
  now += 30_001;
  assert.equal(limiter.take('a'), true, 'the oldest requests left the window');
  assert.ok(limiter.retryAfterSeconds('a') > 0);
});

test('the lockout starts at maxFailures, ends after lockMs, and success clears failures', () => {
  let now = 0;
  const lockout = new LoginLockout(3, 900_000, () => now);
  lockout.recordFailure('x');
  lockout.recordFailure('x');
  lockout.recordSuccess('x');
  lockout.recordFailure('x');
  lockout.recordFailure('x');
  assert.equal(lockout.lockedFor('x'), 0, 'success reset the count');
  lockout.recordFailure('x');
  assert.equal(lockout.lockedFor('x'), 900_000);
  now += 899_999;
  assert.equal(lockout.lockedFor('x'), 1);
  now += 1;
  assert.equal(lockout.lockedFor('x'), 0);
  lockout.recordFailure('x');
  assert.equal(lockout.lockedFor('x'), 0, 'a served lock starts clean');
});

test('client keys: IPv4 (as uWS gives it, IPv4-mapped) by address, IPv6 by /64', () => {
  assert.equal(clientKey('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1');
  assert.equal(clientKey('0000:0000:0000:0000:0000:ffff:c0a8:0a0b'), '192.168.10.11');
  assert.equal(clientKey('2001:0db8:0001:0002:0000:0000:0000:0001'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:0db8:0001:0002:abcd:ef01:2345:6789'), '2001:db8:1:2::/64', 'one /64, one key');
  // The compressed spellings the server now logs and limits by.
  assert.equal(clientKey('::ffff:7f00:1'), '127.0.0.1');
  assert.equal(clientKey('127.0.0.1'), '127.0.0.1');
  assert.equal(clientKey('::1'), '0:0:0:0::/64');
  assert.equal(clientKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8::1::2'), '2001:db8::1::2', 'not an address: used as is');
  assert.notEqual(clientKey('2001:0db8:0001:0003:0000:0000:0000:0001'), clientKey('2001:0db8:0001:0002:0000:0000:0000:0001'));
  assert.equal(clientKey('10.0.0.1'), '10.0.0.1');
});
