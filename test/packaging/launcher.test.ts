// bin/historian.js, the `historian` command of this checkout: the memory settings it starts the
// service with, what it does when one of the two processes dies, and a checkout never built.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startService, tempDir } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';
import { envWithoutNpm, isRunning, LAUNCHER, lockHeld, MEMORY_ENV, processInfo, servicePid } from './support.js';

/** The test's environment without any memory setting, so the launcher's own show. */
const CLEAN = { ...envWithoutNpm(), ...Object.fromEntries(Object.keys(MEMORY_ENV).map((k) => [k, undefined])), NODE_OPTIONS: undefined };

test('a checkout never built: one line saying what to run, exit 1', () => {
  const dir = tempDir('historian-unbuilt-');
  try {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.cpSync(path.dirname(LAUNCHER), path.join(dir, 'bin'), { recursive: true }); // the launcher and its settings file
    const res = spawnSync(process.execPath, [path.join(dir, 'bin', 'historian.js'), 'serve'], { encoding: 'utf8' });
    assert.equal(res.status, 1);
    assert.equal(res.stderr, 'historian: not built; run `npm run build` (or `npm start` in a checkout)\n');
    assert.equal(res.stdout, '');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the README\'s memory settings by default; the launcher killed (kill -9): the service stops cleanly by itself', async () => {
  const svc = await startService({ command: [process.execPath, LAUNCHER, 'serve'], env: CLEAN });
  const pid = servicePid(svc);
  try {
    const service = processInfo(pid);
    assert.equal(service.ppid, svc.child.pid);
    for (const [name, value] of Object.entries(MEMORY_ENV)) assert.equal(service.env[name], value, name);
    assert.ok(service.argv.includes('--max-semi-space-size=1'), service.argv.join(' '));

    svc.child.kill('SIGKILL');
    await waitFor(() => svc.logs().some((l) => l.msg === 'stopped'), 'the service shuts down cleanly once its launcher is gone');
    await waitFor(() => !isRunning(pid), 'and exits');
    assert.equal(lockHeld(svc.dataDir), false);
    assert.equal(fs.existsSync(path.join(svc.dataDir, 'service.pid')), false);
  } finally {
    if (isRunning(pid)) process.kill(pid, 'SIGKILL'); // an orphan would hold the test's pipes open
    await svc.dispose();
  }
});

test('the service killed: the launcher dies of the same signal', async () => {
  const svc = await startService({ command: [process.execPath, LAUNCHER], env: CLEAN });
  try {
    process.kill(servicePid(svc), 'SIGKILL');
    await waitFor(() => svc.child.exitCode !== null || svc.child.signalCode !== null, 'the launcher exits');
    assert.equal(svc.child.signalCode, 'SIGKILL');
  } finally {
    await svc.dispose();
  }
});

test('settings given by the operator already (a unit, NODE_OPTIONS): one process, with their values', async () => {
  const svc = await startService({
    command: [process.execPath, LAUNCHER, 'serve'],
    env: { ...CLEAN, MALLOC_ARENA_MAX: '1', MALLOC_TRIM_THRESHOLD_: '131072', MALLOC_TOP_PAD_: '0', NODE_OPTIONS: '--max-semi-space-size=2' },
  });
  try {
    const pid = servicePid(svc);
    assert.equal(pid, svc.child.pid, 'no second process');
    assert.equal(processInfo(pid).env.MALLOC_TRIM_THRESHOLD_, '131072');
    assert.deepEqual(await svc.stop('SIGTERM'), { code: 0, signal: null });
  } finally {
    await svc.dispose();
  }
});
