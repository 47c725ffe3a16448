// Waiting for something the service does in its own time (a batched log line,
// a buffer flush, a worker restart): poll for the condition itself instead of
// sleeping a fixed time, which is either too short on a loaded machine or
// longer than needed everywhere else. A condition that never holds fails the
// test with the description given; it never passes silently.

import assert from 'node:assert/strict';

export interface WaitOptions {
  /** How long the condition may take before the test fails; generous, since it only costs time on failure. */
  timeoutMs?: number;
  /** Pause between two checks. */
  intervalMs?: number;
}

/**
 * Resolves once `condition` holds; fails with `message` (an AssertionError, as assert.ok would)
 * when it has not held within `timeoutMs`.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  message: string,
  { timeoutMs = 10_000, intervalMs = 20 }: WaitOptions = {},
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) assert.fail(`${message} (not within ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
