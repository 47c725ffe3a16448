// Test-only: HISTORIAN_DEBUG_PAUSE_AT=<phase> makes the storage worker that reaches that phase
// write one log line (event "debug-pause") and then block for good, so a fault test can kill -9
// the service at a named step of a seal instead of hoping to hit it by timing. Unset (always,
// outside tests) every call is one comparison against undefined.
//
// Phases: seal-writing (the temporary sealed file has its first tag), seal-before-rename (the
// temporary file complete and fsynced; for a part from the compaction thread, on the shard's
// thread as it is about to move the part in place), seal-after-rename (the sealed file in place, the day
// logs still there), seal-logs-removed (the day logs deleted, the folder not yet fsynced);
// backup-marked (a backup's instant taken: the shard's files linked into the staging folder).

const PAUSE_AT = process.env.HISTORIAN_DEBUG_PAUSE_AT;

export type DebugPhase = 'seal-writing' | 'seal-before-rename' | 'seal-after-rename' | 'seal-logs-removed' | 'backup-marked';

export function debugPause(phase: DebugPhase): void {
  if (PAUSE_AT === undefined || PAUSE_AT !== phase) return;
  // Written straight to stdout (not through the shard's logger) so the line is out before the block.
  process.stdout.write(`${JSON.stringify({ level: 40, time: Date.now(), service: 'historian', event: 'debug-pause', phase, msg: 'paused at a debug phase (HISTORIAN_DEBUG_PAUSE_AT)' })}\n`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
