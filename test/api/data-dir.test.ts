// The data dir holds password hashes, the token secret, private keys and every
// stored value: after the real service has written metadata and time series,
// nothing in it may be open to other accounts (issue 12 item 15).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, tempDir, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const DAY = 86_400_000;

/** Every entry under `dir` (not following symbolic links) with its permission bits. */
function walk(dir: string): Array<{ rel: string; mode: number; isDir: boolean }> {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    const stat = fs.lstatSync(full);
    const here = { rel: full, mode: stat.mode & 0o777, isDir: stat.isDirectory() };
    return entry.isDirectory() ? [here, ...walk(full)] : [here];
  });
}

/** Writes metadata (an account, an entity) and time series (active day file, sealed days, buffer flush). */
async function writeEverything(svc: TestService): Promise<void> {
  const admin = await svc.adminToken();
  await svc.newUser('reader@example.test');
  const org = await svc.post('/svcapi/orgs', { name: 'acme' }, admin);
  assert.ok(org.status < 300, org.text);
  const created = await svc.post('/svcapi/create_collection', SCOPE, admin);
  assert.equal(created.body.success, true, created.text);
  const today = Date.now();
  const written = await svc.post('/svcapi/write', { ...SCOPE, tags: { 'TI-1': [[today - 3 * DAY, 1], [today - 2 * DAY, 2], [today, 3]] } }, admin);
  assert.equal(written.body.success, true, written.text);
  const buffered = await svc.post('/svcapi/write_buffered', { ...SCOPE, tags: { 'TI-2': [[today, 4]] } }, admin);
  assert.equal(buffered.body.success, true, buffered.text);
  await waitFor(async () => {
    const stats = (await svc.get('/svcapi/write_buffer_stats', admin)).body;
    return stats.pendingPoints === 0 && stats.shards.some((s: { flushes: number }) => s.flushes > 0);
  }, 'the write buffer is flushed');
  const sealed = await svc.post('/svcapi/seal_now', {}, admin);
  assert.ok(sealed.body.sealedDays >= 2, sealed.text);
}

function assertPrivate(dataDir: string): void {
  const entries = [{ rel: dataDir, mode: fs.statSync(dataDir).mode & 0o777, isDir: true }, ...walk(dataDir)];
  const names = entries.map((e) => path.relative(dataDir, e.rel));
  // The files the item is about are all there, so the modes below cover them.
  for (const expected of ['metadata.sqlite', 'metadata.sqlite-wal', 'metadata.sqlite-shm', 'secrets/jwt.secret', 'tls/ca.key', 'tls/server.key']) {
    assert.ok(names.includes(expected), `${expected} in ${names.join(', ')}`);
  }
  const collection = 'ts/acme/north/boiler-1/main';
  assert.ok(names.includes(`${collection}/meta.json`), names.join(', '));
  assert.ok(names.some((n) => n.startsWith(`${collection}/sealed-`)), 'a sealed file');
  assert.ok(names.some((n) => n.startsWith(`${collection}/`) && !n.endsWith('meta.json') && !n.includes('sealed-')), 'an active day file');

  const open = entries
    .filter((e) => (e.isDir ? e.mode !== 0o700 : (e.mode & 0o077) !== 0))
    // The public certificates may stay readable.
    .filter((e) => !/^tls\/(ca|server)\.crt$/.test(path.relative(dataDir, e.rel)))
    .map((e) => `${path.relative(dataDir, e.rel) || '.'} ${e.mode.toString(8)}`);
  assert.deepEqual(open, [], 'directories are 0700 and files 0600');
}

test('a fresh data dir is private to the service account after metadata and time series are written', async (t) => {
  const parent = tempDir();
  t.after(() => fs.rmSync(parent, { recursive: true, force: true }));
  // A path that does not exist yet, so the service creates the data dir itself.
  const svc = await startService({ dataDir: path.join(parent, 'data'), config: { storage: { shards: 2, flushIntervalMs: 100 } } });
  t.after(() => svc.dispose());
  await writeEverything(svc);
  assertPrivate(svc.dataDir);
  // Nothing the service made was ever open to others: a fresh start has nothing to tighten.
  assert.equal(svc.logs().some((l) => typeof l.msg === 'string' && l.msg.includes('removed their group and other permissions')), false);
});

test('a data dir left open by an earlier version is made private at start, and the log says so', async (t) => {
  const parent = tempDir();
  t.after(() => fs.rmSync(parent, { recursive: true, force: true }));
  const dataDir = path.join(parent, 'data');
  const config = { storage: { shards: 2, flushIntervalMs: 100 } };
  const first = await startService({ dataDir, config });
  await writeEverything(first);
  await first.stop();

  // What earlier versions left: 0755 folders and 0644 files.
  for (const entry of walk(dataDir)) fs.chmodSync(entry.rel, entry.isDir ? 0o755 : 0o644);
  fs.chmodSync(dataDir, 0o755);

  const second = await startService({ dataDir, config });
  t.after(() => second.dispose());
  assertPrivate(dataDir);
  const line = second.logs().find((l) => typeof l.msg === 'string' && l.msg.includes('removed their group and other permissions'));
  assert.ok(line, 'a log line names the tightening');
  assert.ok((line.count as number) > 10, `count ${String(line.count)}`);
  assert.ok((line.paths as string[]).includes('metadata.sqlite'), String(line.paths));
  // The service works on the tightened dir.
  const admin = await second.adminToken();
  assert.equal((await second.get('/svcapi/collection', admin)).status, 200);
});
