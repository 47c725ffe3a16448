// GET /api/admin/backup/download/{file_name}: a backup taken away whole or by ranges, checked
// against the sha256 /list gives; names that are not backups are 400 and never reach the file
// system; only an admin downloads, also when compat.openMonitorAndBackup opens the other routes.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { download } from './blob-support.js';
import { BACKUP, runBackup, sha256, type FileInfo } from './backup-support.js';
import { startService, type TestService } from './harness.js';

describe('backup download', () => {
  let svc: TestService;
  let admin: string;
  let files: FileInfo[];

  before(async () => {
    svc = await startService({ config: { storage: { autoCreateCollections: true }, compat: { openMonitorAndBackup: true } } });
    admin = await svc.adminToken();
    // Enough points for a time-series backup of a few MB, so a slow reader meets backpressure.
    const noisy = (k: number) => Array.from({ length: 60_000 }, (_, i) => [1_700_000_000_000 + i * 1000, Math.round((k * 100 + Math.sin(i / 50) * 20 + ((i * 7919 + k) % 97) / 10) * 100) / 100]);
    for (const k of [1, 2, 3, 4]) {
      const res = await svc.post('/svcapi/write', { organization: 'o', site: 's', unit: 'u', grid: 'g', tags: { [`tag-${k}`]: noisy(k) } }, admin);
      assert.equal(res.body?.success, true, res.text.slice(0, 200));
    }
    await runBackup(svc, admin, 'all');
    const list = (await svc.get(`${BACKUP}/list`, admin)).body as { sqlite_backups: FileInfo[]; timeseries_backups: FileInfo[] };
    files = [...list.sqlite_backups, ...list.timeseries_backups];
    assert.equal(files.length, 2);
  });
  after(() => svc?.dispose());

  test('each backup downloads whole with its sha256, and by ranges', async () => {
    for (const info of files) {
      const whole = await svc.request('GET', `${BACKUP}/download/${info.file_name}`, { token: admin });
      assert.equal(whole.status, 200, whole.text);
      assert.equal(whole.bytes.length, info.size_bytes);
      assert.equal(sha256(whole.bytes), info.sha256);
      assert.equal(whole.headers['x-historian-sha256'], info.sha256);
      assert.equal(whole.headers.etag, `"${info.sha256}"`);
      assert.equal(whole.headers['content-type'], 'application/octet-stream');
      assert.equal(whole.headers['content-disposition'], `attachment; filename="${info.file_name}"`);
      assert.deepEqual(whole.bytes, fs.readFileSync(path.join(svc.dataDir, 'backups', info.file_name)));

      const part = await svc.request('GET', `${BACKUP}/download/${info.file_name}`, { token: admin, headers: { range: 'bytes=10-109' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers['content-range'], `bytes 10-109/${info.size_bytes}`);
      assert.deepEqual(part.bytes, whole.bytes.subarray(10, 110));
      const tail = await svc.request('GET', `${BACKUP}/download/${info.file_name}`, { token: admin, headers: { range: 'bytes=-7' } });
      assert.deepEqual(tail.bytes, whole.bytes.subarray(whole.bytes.length - 7));
      assert.equal((await svc.request('GET', `${BACKUP}/download/${info.file_name}`, { token: admin, headers: { range: `bytes=${info.size_bytes}-` } })).status, 416);
      assert.equal((await svc.request('GET', `${BACKUP}/download/${info.file_name}`, { token: admin, headers: { 'if-none-match': `"${info.sha256}"` } })).status, 304);
    }
  });

  test('names that are not backups are 400, an absent one 404; only an admin downloads', async () => {
    for (const name of ['..%2Fmetadata.sqlite', 'metadata.sqlite', '%2E%2E', 'sqlite-20260101T000000000Z.sqlite.json', 'sqlite-x.sqlite', '%00']) {
      const res = await svc.request('GET', `${BACKUP}/download/${name}`, { token: admin });
      assert.ok(res.status === 400 || res.status === 404, `${name}: ${res.status} ${res.text}`);
      assert.ok(!res.bytes.includes(Buffer.from('SQLite format 3')), `${name} gave no file`);
    }
    assert.equal((await svc.request('GET', `${BACKUP}/download/sqlite-20200101T000000000Z.sqlite`, { token: admin })).status, 404);
    const name = files[0]!.file_name;
    assert.equal((await svc.request('GET', `${BACKUP}/download/${name}`)).status, 401, 'no token, although compat.openMonitorAndBackup opens /list');
    assert.equal((await svc.get(`${BACKUP}/list`)).status, 200, 'the compat setting is on');
    const user = await svc.newUser('backup-download-user@plant.test');
    assert.equal((await svc.request('GET', `${BACKUP}/download/${name}`, { token: user })).status, 403);
  });

  test('a slow reader gets the whole backup; one that vanishes part-way does not disturb the next', async () => {
    const info = files.reduce((a, b) => (b.size_bytes > a.size_bytes ? b : a));
    assert.ok(info.size_bytes > 1_000_000, `a backup of ${info.size_bytes} bytes`);
    const url = `${BACKUP}/download/${info.file_name}`;
    const slow = await download(svc, url, { token: admin, pauseEvery: 128 * 1024, pauseMs: 20 });
    assert.equal(slow.complete, true);
    assert.equal(slow.size, info.size_bytes);
    assert.equal(slow.sha256, info.sha256);
    const gone = await download(svc, url, { token: admin, vanishAfter: 256 * 1024 });
    assert.equal(gone.complete, false);
    const next = await download(svc, url, { token: admin });
    assert.equal(next.sha256, info.sha256);
    assert.equal((await svc.get('/svcapi/health', admin)).status, 200);
  });
});
