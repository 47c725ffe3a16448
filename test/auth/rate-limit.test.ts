import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LoginLockout, SlidingWindowLimiter } from '../../src/auth/rate-limit.js';

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
