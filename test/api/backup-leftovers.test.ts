// What a kill -9 during a backup or a restore leaves behind is removed at the next start, with a
// log line saying what and why (issue 34 item 11): the backup's `*.tar.partial` (and its staging
// links), a time-series restore's `restore-staging-<job>` (a full unpacked copy of the backup).
// Backups and restores work afterwards. What may still be needed is left alone: a partial file
// this data dir did not begin (another node may share the backup folder) and a swapped-out store
// that no restore marker names.
//
// The store holds a few large blob contents (they travel in time-series backups), so that packing
// and unpacking take long enough for the test to see the files appear and kill the service then.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generated, upload } from './blob-support.js';
import { startService, type TestService } from './harness.js';
import {
  BACKUP, T0, backupDirOf, createCollection, listBackups, makeSeries, newestBackups, readSeries, restore, runBackup, scopeOf, waitNotRunning, writeSeries, type Series,
} from './backup-support.js';

const CONFIG = { storage: { shards: 2, flushIntervalMs: 200 } };
const BLOBS = 4;
const BLOB_BYTES = 48 << 20;

/** Names in `dir` matching `pattern` (none when `dir` is missing). */
function namesIn(dir: string, pattern: RegExp): string[] {
  try {
    return fs.readdirSync(dir).filter((n) => pattern.test(n));
  } catch {
    return [];
  }
}

/** Polls (every few ms) until `dir` holds a name matching `pattern`; null when `stop` says to give up first. */
async function appears(dir: string, pattern: RegExp, stop: () => boolean, timeoutMs = 120_000): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = namesIn(dir, pattern)[0];
    if (found) return found;
    if (stop()) return null;
    if (Date.now() > deadline) assert.fail(`nothing matching ${pattern} appeared in ${dir} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('leftovers of backups and restores killed mid-way', () => {
  let svc: TestService;
  let admin: string;
  let backupDir: string;
  const S = scopeOf('acme', 'north', 'leftovers', 'g');
  const TAGS = ['V-0', 'V-1'];
  let expected: Series;

  const restart = async () => {
    if (svc.child.exitCode === null && svc.child.signalCode === null) svc.child.kill('SIGKILL');
    assert.equal((await svc.stop('SIGKILL')).signal, 'SIGKILL');
    svc = await startService({ dataDir: svc.dataDir, config: CONFIG });
    admin = await svc.adminToken();
  };
  const removalLogged = (name: string) =>
    svc.logs().some((l) => typeof l.msg === 'string' && l.msg.startsWith('removed ') && l.msg.includes(name) && /interrupted by a crash or kill/.test(l.msg));

  before(async () => {
    svc = await startService({ config: CONFIG });
    admin = await svc.adminToken();
    backupDir = await backupDirOf(svc, admin);
    await createCollection(svc, admin, S);
    await writeSeries(svc, admin, S, makeSeries('V', 2, 500, T0, 60_000, 7));
    expected = await readSeries(svc, admin, S, TAGS);
    for (let i = 0; i < BLOBS; i++) {
      const res = await upload(svc, `/svcapi/blob/leftovers/big-${i}`, generated(BLOB_BYTES, 100 + i), { token: admin });
      assert.ok(res.status === 200 || res.status === 201, `blob ${i}: ${res.status} ${res.text}`);
    }
  });
  after(() => svc?.dispose());

  test('kill -9 while a time-series backup writes its archive: the .partial file and staging are removed at start, logged; backups work after', async (t) => {
    let partial: string | null = null;
    for (let attempt = 1; attempt <= 3 && partial === null; attempt++) {
      const started = await svc.post(`${BACKUP}/run`, { kind: 'timeseries' }, admin);
      assert.equal(started.status, 200, started.text);
      let finished = false;
      const watch = setInterval(() => void svc.get(`${BACKUP}/status`, admin).then((r) => (finished ||= r.body?.running === false), () => {}), 200);
      const seen = await appears(backupDir, /^timeseries-.*\.tar\.partial$/, () => finished).finally(() => clearInterval(watch));
      if (seen) svc.child.kill('SIGKILL');
      await svc.stop('SIGKILL');
      // Killed after the rename, or finished before the file was seen: try again.
      if (seen && fs.existsSync(path.join(backupDir, seen))) partial = seen;
      else t.diagnostic(`attempt ${attempt}: the backup finished before it was killed`);
      await restart();
    }
    assert.ok(partial, 'a backup was killed while writing its archive');

    // `restart` already happened: the new process cleaned up at start.
    assert.deepEqual(namesIn(backupDir, /\.partial$/), [], 'no partial archive is left');
    assert.deepEqual(namesIn(svc.dataDir, /^backup-staging-/), [], 'no backup staging folder is left');
    assert.ok(removalLogged(partial), `a log line says ${partial} was removed and why:\n${svc.logLines.filter((l) => l.includes('removed')).join('\n')}`);
    assert.ok(!(await listBackups(svc, admin)).timeseries_backups.some((b) => b.file_name === partial!.replace(/\.partial$/, '')), 'the killed backup is not listed');

    await runBackup(svc, admin, 'timeseries');
    const { timeseries } = await newestBackups(svc, admin, ['timeseries']);
    assert.equal(timeseries.blobs, BLOBS, 'the new backup carries the blob contents');
    assert.deepEqual(namesIn(backupDir, /\.partial$/), []);
  });

  test('kill -9 while a time-series restore unpacks and verifies: restore-staging-<job> is removed at start, logged; the store is the old one; restores work after', async () => {
    await runBackup(svc, admin, 'timeseries');
    const { timeseries } = await newestBackups(svc, admin, ['timeseries']);
    // The live store differs from the backup, so a restore that went through would show.
    await writeSeries(svc, admin, S, { 'V-0': [[T0, -1.25]] });
    const old = await readSeries(svc, admin, S, TAGS);

    const restoring = restore(svc, admin, 'timeseries', timeseries.file_name).catch((err: Error) => err);
    const staging = await appears(svc.dataDir, /^restore-staging-/, () => false);
    svc.child.kill('SIGKILL');
    await restoring; // its answer is lost with the process
    assert.ok(staging);
    assert.ok(fs.existsSync(path.join(svc.dataDir, staging)), 'killed with the staging folder on disk');
    await restart();

    assert.deepEqual(namesIn(svc.dataDir, /^restore-staging-|^restore-in-progress/), [], 'no staging folder or marker is left');
    assert.ok(removalLogged(staging), `a log line says ${staging} was removed and why:\n${svc.logLines.filter((l) => l.includes('removed')).join('\n')}`);
    assert.deepEqual(await readSeries(svc, admin, S, TAGS), old, 'the store is the one before the restore');

    const done = await restore(svc, admin, 'timeseries', timeseries.file_name);
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(await readSeries(svc, admin, S, TAGS), expected, 'the backup is restored');
    assert.deepEqual(namesIn(svc.dataDir, /^restore-staging-|^ts-before-restore-|^restore-in-progress/), []);
    await waitNotRunning(svc, admin);
  });

  test('left alone at start: a partial file this data dir did not begin, and a swapped-out store no restore marker names (reported)', async () => {
    const foreign = 'timeseries-20260101T000000000Z.tar.partial';
    fs.writeFileSync(path.join(backupDir, foreign), 'another node may be writing this');
    const swappedOut = path.join(svc.dataDir, 'ts-before-restore-0000-lost-marker');
    fs.mkdirSync(path.join(swappedOut, 'x'), { recursive: true });
    fs.writeFileSync(path.join(swappedOut, 'x', 'keep.bin'), 'the only copy, perhaps');
    await restart();

    assert.ok(fs.existsSync(path.join(backupDir, foreign)), 'a partial file this data dir did not begin is kept');
    assert.ok(fs.existsSync(path.join(swappedOut, 'x', 'keep.bin')), 'a swapped-out store no marker names is kept');
    assert.ok(svc.logs().some((l) => typeof l.msg === 'string' && l.msg.startsWith('kept ts-before-restore-0000-lost-marker')), 'and reported');
    assert.deepEqual(await readSeries(svc, admin, S, TAGS), expected, 'the store is intact');
    fs.rmSync(path.join(backupDir, foreign));
    fs.rmSync(swappedOut, { recursive: true });
  });
});
