// Blobs on a real, small volume (issue 34 items 6 and 13): uploads stop at the free-disk floor
// (storage.minFreeBytes) and at blob.quotaBytesPerUser with 507 and leave no partial file,
// concurrent uploads near a full volume never answer 500, a service restarted on a full volume
// starts read-only and says why, downloads are served as attachments, and a key belongs to its
// uploader. The volume is a 64 MiB tmpfs (the tests run as root), unmounted in `after`.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKUP, runBackup, sha256, type FileInfo } from './backup-support.js';
import { blobFiles, generated, upload } from './blob-support.js';
import { startService, type TestService } from './harness.js';
import { mountTmpfs, releaseVolume, type Volume } from '../support/tmpfs.js';
import { waitFor } from '../support/wait-for.js';

const MiB = 1024 * 1024;
const FLOOR = 16 * MiB;
const QUOTA = 20 * MiB;
const CONFIG = { storage: { minFreeBytes: FLOOR }, blob: { quotaBytesPerUser: QUOTA } };

describe('blobs on a small volume', () => {
  let volume: Volume;
  let svc: TestService;
  let admin: string;
  let seed = 1;

  /**
   * PUTs `size` bytes under `key` (a key used once). A refusal part-way is read on a kept-alive
   * connection the service keeps reading; should the connection be reset all the same (a worker
   * or the disk failing under the upload), the status is the one the service logged.
   */
  const put = async (key: string, size: number, token: string, chunked = false): Promise<{ status: number; text: string; body: any }> => {
    const res = await upload(svc, `/svcapi/blob/${key}`, generated(size, seed++), { token, contentLength: chunked ? null : size });
    if (res.status !== 0) return res;
    let logged: Record<string, unknown> | undefined;
    await waitFor(() => (logged = svc.logs().find((l) => l.msg === 'request' && l.path === `/svcapi/blob/${key}`)) !== undefined, `the service logged PUT ${key}`);
    return { status: Number(logged!.status), text: `(connection reset; logged ${logged!.status})`, body: undefined };
  };

  before(async () => {
    volume = mountTmpfs(64 * MiB);
    svc = await startService({ dataDir: volume.dir, config: CONFIG });
    admin = await svc.adminToken();
  });
  after(() => releaseVolume(svc, volume));

  test('a blob is served as a download (attachment, nosniff, CSP sandbox), never rendered', async () => {
    const owner = await svc.newUser('page@plant.test');
    const html = '<script>fetch("/svcapi/users")</script>';
    const res = await svc.request('PUT', '/svcapi/blob/pages/evil.html', { rawBody: html, token: owner, headers: { 'content-type': 'text/html' } });
    assert.equal(res.status, 201, res.text);
    const got = await svc.get('/svcapi/blob/pages/evil.html', owner);
    assert.equal(got.status, 200);
    assert.equal(got.text, html);
    assert.equal(got.headers['content-type'], 'text/html');
    assert.match(String(got.headers['content-disposition']), /^attachment\b/);
    assert.equal(got.headers['x-content-type-options'], 'nosniff');
    assert.match(String(got.headers['content-security-policy']), /\bsandbox\b/);
    assert.match(String(got.headers['content-security-policy']), /default-src 'none'/);
  });

  test('only the uploader or an admin may replace or delete a key (403 for anyone else)', async () => {
    const alice = await svc.newUser('alice@plant.test');
    const mallory = await svc.newUser('mallory@plant.test');
    assert.equal((await svc.request('PUT', '/svcapi/blob/alice/report.csv', { rawBody: 'a,b\n1,2\n', token: alice })).status, 201);
    const overwrite = await svc.request('PUT', '/svcapi/blob/alice/report.csv', { rawBody: 'pwned', token: mallory });
    assert.equal(overwrite.status, 403, overwrite.text);
    assert.match(overwrite.body.error, /another account/);
    const chunked = await upload(svc, '/svcapi/blob/alice/report.csv', [Buffer.from('pwned')], { token: mallory, contentLength: null });
    assert.equal(chunked.status, 403, chunked.text);
    const remove = await svc.request('DELETE', '/svcapi/blob/alice/report.csv', { token: mallory });
    assert.equal(remove.status, 403, remove.text);
    assert.equal((await svc.get('/svcapi/blob/alice/report.csv', mallory)).text, 'a,b\n1,2\n', 'anyone still reads it');
    // The uploader replaces it (200), an admin deletes it.
    assert.equal((await svc.request('PUT', '/svcapi/blob/alice/report.csv', { rawBody: 'a,b\n3,4\n', token: alice })).status, 200);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/alice/report.csv', { token: admin })).status, 204);
    // A deleted key is free again.
    assert.equal((await svc.request('PUT', '/svcapi/blob/alice/report.csv', { rawBody: 'mine now', token: mallory })).status, 201);
  });

  test('an upload past blob.quotaBytesPerUser is 507 naming the setting, before or while the bytes arrive, and leaves no file', async () => {
    const user = await svc.newUser('quota@plant.test');
    const first = await put("q/one.bin", 12 * MiB, user);
    assert.equal(first.status, 201, first.text);
    // A declared length past the quota is refused before any byte is read.
    const declared = await upload(svc, '/svcapi/blob/q/two.bin', [], { token: user, contentLength: 12 * MiB, headOnly: true });
    assert.equal(declared.status, 507, declared.text);
    assert.match(declared.body.error, /blob\.quotaBytesPerUser/);
    const chunked = await put('q/two.bin', 12 * MiB, user, true);
    assert.equal(chunked.status, 507, chunked.text);
    assert.equal((await svc.get('/svcapi/blob/q/two.bin', user)).status, 404);
    await waitFor(() => blobFiles(svc.dataDir).temporary.length === 0, 'the refused uploads leave no temporary file');
    // Replacing its own key does not count the bytes it replaces; deleting makes room.
    assert.equal((await put('q/one.bin', 14 * MiB, user)).status, 200);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/q/one.bin', { token: user })).status, 204);
    assert.equal((await put('q/three.bin', 12 * MiB, user)).status, 201);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/q/three.bin', { token: user })).status, 204);
  });

  test('uploads stop at storage.minFreeBytes with 507 (no 500, no partial file), concurrent ones too', async () => {
    const statuses: number[] = [];
    let lowest = volume.free();
    let refused: { status: number; text: string; body: any } | null = null;
    // Accounts with no grants, each under its quota, as in the report.
    for (let i = 0; i < 8 && !refused; i++) {
      const token = await svc.newUser(`filler${i}@plant.test`);
      for (let j = 0; j < 2 && !refused; j++) {
        const res = await put(`fill/${i}/${j}.bin`, 8 * MiB, token);
        statuses.push(res.status);
        lowest = Math.min(lowest, volume.free());
        if (res.status !== 201) refused = res;
      }
    }
    assert.ok(refused, `uploads were never refused (statuses ${statuses.join(',')})`);
    assert.equal(refused.status, 507, refused.text);
    if (refused.body) assert.match(refused.body.error, /storage\.minFreeBytes/);
    // One upload chunk may be in flight past the floor, not a whole blob.
    assert.ok(lowest >= FLOOR - MiB, `free space went down to ${lowest} bytes, floor ${FLOOR}`);
    await waitFor(() => blobFiles(svc.dataDir).temporary.length === 0, 'a refused upload leaves no temporary file');

    // Near the floor, several at once, declared and chunked: each 201 or 507, never a 500.
    const tokens = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => svc.newUser(`racer${i}@plant.test`)));
    const results = await Promise.all(tokens.map((token, i) => put(`race/${i}.bin`, 3 * MiB, token, i % 2 === 1)));
    for (const res of results) assert.ok(res.status === 201 || res.status === 507, `a concurrent upload answered ${res.status}: ${res.text}`);
    assert.ok(volume.free() >= FLOOR - 6 * MiB, `free space ${volume.free()} bytes`);
    await waitFor(() => blobFiles(svc.dataDir).temporary.length === 0, 'concurrent refused uploads leave no temporary file');
  });

  test('with no floor, uploads into a volume that runs out are 507 (ENOSPC), never 500, and leave no partial file', async () => {
    await svc.stop('SIGTERM');
    svc = await startService({ dataDir: volume.dir, config: { ...CONFIG, storage: { minFreeBytes: 0 }, blob: { quotaBytesPerUser: 0 } } });
    admin = await svc.adminToken();
    // Fill the volume behind the service's back to 2 MiB, then send more than that, at once.
    volume.fill(2 * MiB, 'filler-enospc');
    const results = await Promise.all([0, 1, 2, 3].map((i) => put(`enospc/${i}.bin`, 3 * MiB, admin, i % 2 === 1)));
    for (const res of results) assert.ok(res.status === 201 || res.status === 507, `an upload answered ${res.status}: ${res.text}`);
    assert.ok(results.some((res) => res.status === 507), 'some upload was refused');
    await waitFor(() => blobFiles(svc.dataDir).temporary.length === 0, 'uploads that hit ENOSPC leave no temporary file');
  });

  test('restarted on a full volume the service starts read-only: health says why, reads, backup downloads and deletes work, writes are 507', async (t) => {
    await runBackup(svc, admin, 'sqlite');
    await svc.stop('SIGTERM');
    volume.fill(0, 'filler-full');
    assert.ok(volume.free() < 64 * 1024, `the volume is full (${volume.free()} bytes free)`);
    svc = await startService({ dataDir: volume.dir, config: CONFIG });
    admin = await svc.adminToken();
    t.diagnostic(`free after a start on the full volume: ${volume.free()} bytes`);
    const health = await svc.get('/svcapi/health', admin);
    assert.equal(health.body.acceptsWrites, false, health.text);
    assert.equal(health.body.subsystems.storage.status, 'degraded', health.text);
    assert.match(health.body.subsystems.storage.reason, /storage\.minFreeBytes/);
    assert.equal(health.body.subsystems.blobs.status, 'ok', health.text);
    // Reads: a blob stored before.
    const list = await svc.get('/svcapi/blob?prefix=fill/', admin);
    assert.equal(list.status, 200, list.text);
    assert.ok(list.body.items.length > 0);
    const first = list.body.items[0].key as string;
    const got = await svc.get(`/svcapi/blob/${first}`, admin);
    assert.equal(got.status, 200);
    const backups = (await svc.get(`${BACKUP}/list`, admin)).body.sqlite_backups as FileInfo[];
    assert.equal(backups.length, 1);
    const backup = await svc.get(`${BACKUP}/download/${backups[0]!.file_name}`, admin);
    assert.equal(backup.status, 200, backup.text);
    assert.equal(sha256(backup.bytes), backups[0]!.sha256);
    // Writes are 507 (a blob, points).
    const putRes = await svc.request('PUT', '/svcapi/blob/more.bin', { rawBody: 'x', token: admin });
    assert.equal(putRes.status, 507, putRes.text);
    const write = await svc.post('/svcapi/write', { organization: 'o', site: 's', unit: 'u', grid: 'g', tags: { t: [[1_700_000_000_000, 1]] } }, admin);
    assert.equal(write.status, 507, write.text);
    // Deletes work, and make room.
    for (const item of list.body.items as Array<{ key: string }>) {
      const del = await svc.request('DELETE', `/svcapi/blob/${item.key}`, { token: admin });
      assert.equal(del.status, 204, del.text);
    }
    assert.ok(volume.free() > 8 * MiB, `deleting blobs freed space (${volume.free()} bytes free)`);
  });
});
