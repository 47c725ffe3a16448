// deploy/historian.service: checked by systemd's own parser (systemd-analyze verify, Debian's
// `systemd` package; no running systemd is needed), and the promise its hardening rests on, that
// the service writes nothing outside its data dir, checked by running it where nothing else is
// writable: in a mount namespace with every file system read-only but the data dir (what
// ProtectSystem=strict and ProtectHome do), where the machine allows one (root, here and in CI).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { backupDirOf, runBackup } from '../api/backup-support.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, tempDir } from '../api/harness.js';
import { createAndWrite, envWithoutNpm, LAUNCHER, POINTS, queryBack, ROOT } from './support.js';

const UNIT = path.join(ROOT, 'deploy', 'historian.service');
const INSTALLED = '/opt/historian/node_modules/.bin/historian';

/** The unit with ExecStart naming this checkout's launcher: verify checks that the command exists. */
function unitForThisCheckout(dir: string, extra = ''): string {
  const text = fs.readFileSync(UNIT, 'utf8');
  assert.ok(text.includes(`ExecStart=${INSTALLED} serve\n`), 'the unit starts the installed command');
  const file = path.join(dir, 'historian.service');
  fs.writeFileSync(file, text.replace(`ExecStart=${INSTALLED}`, `ExecStart=${LAUNCHER}`).replace('[Service]\n', `[Service]\n${extra}`));
  return file;
}

function verify(file: string) {
  return spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
}

/** `Key=value` lines of a section ([Service]), a key given more than once keeping each value. */
function section(name: string): Map<string, string[]> {
  const lines = fs.readFileSync(UNIT, 'utf8').split('\n');
  const start = lines.indexOf(`[${name}]`);
  assert.ok(start >= 0, `the unit has [${name}]`);
  const out = new Map<string, string[]>();
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('[')) break;
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) out.set(m[1]!, [...(out.get(m[1]!) ?? []), m[2]!]);
  }
  return out;
}

describe('systemd unit', () => {
  let dir: string;
  before(() => {
    dir = tempDir('historian-unit-');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('systemd-analyze verify accepts it and says nothing about it', () => {
    const res = verify(unitForThisCheckout(dir));
    assert.equal(res.status, 0, res.stderr);
    assert.deepEqual(res.stderr.split('\n').filter((l) => l.includes('historian.service')), []);
    // The same check notices a key systemd does not know, so silence above means a clean unit.
    const bad = verify(unitForThisCheckout(dir, 'ProtectSystm=strict\n'));
    assert.ok(bad.stderr.split('\n').some((l) => l.includes('historian.service') && l.includes('ProtectSystm')), bad.stderr);
  });

  test('its own account, the data dir as StateDirectory, restarts, and the hardening', () => {
    const service = section('Service');
    const one = (key: string) => service.get(key)?.at(-1);
    assert.equal(one('User'), 'historian');
    assert.equal(one('StateDirectory'), 'historian');
    assert.equal(one('WorkingDirectory'), '/var/lib/historian');
    assert.ok(service.get('Environment')?.includes('HISTORIAN_DATA_DIR=/var/lib/historian'));
    assert.equal(one('Restart'), 'on-failure');
    assert.equal(one('LimitNOFILE'), '65536');
    assert.equal(one('KillSignal'), 'SIGTERM');
    for (const key of ['NoNewPrivileges', 'PrivateTmp', 'PrivateDevices', 'ProtectHome', 'ProtectKernelTunables', 'ProtectKernelModules', 'ProtectKernelLogs', 'ProtectControlGroups', 'RestrictNamespaces', 'LockPersonality', 'RestrictRealtime']) {
      assert.equal(one(key), 'yes', key);
    }
    assert.equal(one('ProtectSystem'), 'strict');
    assert.equal(one('CapabilityBoundingSet'), '');
    assert.equal(one('UMask'), '0077');
    assert.equal(one('MemoryDenyWriteExecute'), undefined, "V8's JIT needs writable, then executable memory");
    assert.equal(one('ReadWritePaths'), undefined, 'nothing writable beyond the StateDirectory');
  });

  test('the service writes nothing outside its data dir (read-only file systems, an empty home, working dir and TMPDIR)', async (t) => {
    const dataDir = path.join(dir, 'data');
    const home = path.join(dir, 'home');
    const cwd = path.join(dir, 'cwd');
    const tmp = path.join(dir, 'tmp');
    for (const d of [dataDir, home, cwd, tmp]) fs.mkdirSync(d);
    // A private mount namespace: the data dir bound on itself, then every other mount but the
    // kernel's (/proc, /sys, /dev) read-only; the probe proves it before the service starts.
    const sandbox =
      'mount --bind "$1" "$1" && ' +
      'for m in $(awk \'{print $5}\' /proc/self/mountinfo | sort -u); do case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|"$1") ;; *) mount -o remount,bind,ro "$m" 2>/dev/null ;; esac; done; ' +
      'if touch "$PWD/probe" 2>/dev/null; then echo "sandbox: the working dir is writable" >&2; exit 97; fi; ' +
      'exec "$2" "$3" serve';
    const canSandbox = spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0;
    if (!canSandbox) t.diagnostic('no mount namespace here (needs root): only the empty folders are checked');
    const command = canSandbox ? ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', sandbox, 'sh', dataDir, process.execPath, LAUNCHER] : [process.execPath, LAUNCHER, 'serve'];
    const svc = await startService({ dataDir, command, cwd, env: { ...envWithoutNpm(), HOME: home, TMPDIR: tmp } });
    try {
      const token = await svc.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      await createAndWrite(svc, token);
      assert.deepEqual(await queryBack(svc, token), { 'TI-101': POINTS });
      const health = await svc.get('/svcapi/health');
      assert.equal(health.body?.status, 'ok', health.text);
      // Backups too (time-series archives are staged and packed on disk), by default in the data dir.
      await runBackup(svc, token, 'all');
      assert.ok((await backupDirOf(svc, token)).startsWith(dataDir + path.sep));
      assert.deepEqual(await svc.stop('SIGTERM'), { code: 0, signal: null });
      assert.deepEqual(svc.logs().filter((l) => (l.level as number) >= 50), [], 'no error logged');
      for (const d of [home, cwd, tmp]) assert.deepEqual(fs.readdirSync(d), [], `${d} stays empty`);
      assert.ok(fs.existsSync(path.join(dataDir, 'metadata.sqlite')), 'the data dir was written');
    } finally {
      await svc.dispose();
    }
  });
});
