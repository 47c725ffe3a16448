// Restore over real HTTPS (WIRE part 2 "Backup", notes/backup-decisions.md "Restore"): the
// drill (data A, backup, data B, restore both, exactly A), corrupted and badly named backups
// refused with the live store untouched, writes during a backup (in it or after it, never half),
// writes during a restore (503), and kill -9 mid-restore (old store or restored one, never a mix).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, type HttpResult, type TestService } from './harness.js';
import {
  BACKUP, DAY, T0, backupDirOf, collectionId, collectionIds, createCollection, enc, flipByte, makeSeries, merged, newestBackups, pointCount,
  readSeries, readTar, resignSidecar, restore, runBackup, scopeOf, waitForJob, waitForRunningJob, writeSeries, type Job, type Series,
} from './backup-support.js';

const PASSWORD = 'user-password-1';

describe('restore drill', () => {
  let svc: TestService;
  let admin: string;
  const MAIN = scopeOf('acme', 'north', 'boiler-1', 'main');
  const AUX = scopeOf('acme', 'south', 'pump-2', 'aux');
  const NEW = scopeOf('acme', 'east', 'new-unit', 'g');
  // Data A: sealed days and active day files in MAIN, active ones in AUX.
  const aSealedMain = makeSeries('M', 3, 500, T0, 300_000, 1);
  const aActiveMain = makeSeries('M', 3, 200, T0 + 8 * DAY, 1000, 2);
  const aAux = makeSeries('X', 2, 300, T0 + 2 * DAY, 60_000, 3);
  const aMain = merged(aSealedMain, aActiveMain);
  const A_POINTS = pointCount(aMain) + pointCount(aAux);
  // Data B: new points in both, one point of A overwritten, a tag only B has, a collection only B has.
  const bMain = merged(makeSeries('M', 3, 100, T0 + 9 * DAY, 1000, 4), { 'M-0': [[aSealedMain['M-0'][7][0], -123.5]] });
  const bAux = makeSeries('BONLY', 1, 50, T0 + 2 * DAY, 1000, 5);
  const bNew = makeSeries('NEWC', 1, 20, T0 + 3 * DAY, 1000, 6);
  let org: Record<string, unknown>;
  let site: Record<string, unknown>;
  let unit: Record<string, unknown>;
  let latecomerToken: string;

  const entity = (kind: string, id: unknown) => svc.get(`/svcapi/${kind}/${id}`, admin);
  const loginStatus = async (email: string) => (await svc.post('/svcapi/login', { email, password: PASSWORD })).status;
  /** Everything a test compares before and after a refused restore. */
  const liveSnapshot = async () => ({
    collections: await collectionIds(svc, admin),
    main: await readSeries(svc, admin, MAIN, [...Object.keys(aMain), 'EXTRA']),
    aux: await readSeries(svc, admin, AUX, Object.keys(aAux)),
    org: (await entity('orgs', org.id)).body,
    unit: (await entity('units', unit.id)).body,
    labels: (await svc.get('/svcapi/labels', admin)).body,
  });

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2, flushIntervalMs: 200 } } });
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  test('data A, backup, data B, restore sqlite and timeseries: exactly A again', async () => {
    // --- data A
    await createCollection(svc, admin, MAIN);
    await createCollection(svc, admin, AUX);
    await writeSeries(svc, admin, MAIN, aSealedMain);
    await writeSeries(svc, admin, AUX, aAux);
    assert.equal((await svc.post('/svcapi/seal_now', {}, admin)).body.success, true);
    await writeSeries(svc, admin, MAIN, aActiveMain);
    const mk = async (kind: string, body: object) => {
      const res = await svc.post(`/svcapi/${kind}`, body, admin);
      assert.equal(res.status, 200, res.text);
      return res.body as Record<string, unknown>;
    };
    org = await mk('orgs', { name: 'drill-org', country: 'NL' });
    site = await mk('sites', { name: 'drill-site', orgsId: org.id });
    unit = await mk('units', { name: 'drill-unit', siteId: site.id, capacity: 12.5 });
    await svc.newUser('keeper@plant.test', PASSWORD);
    const keyA = (await svc.post('/svcapi/api_keys', { name: 'in the backup' }, admin)).body as { id: string; key: string };
    assert.deepEqual(await readSeries(svc, admin, MAIN, Object.keys(aMain)), aMain, 'A reads back before the backup');

    const backup = await runBackup(svc, admin, 'all');
    const { sqlite, timeseries } = await newestBackups(svc, admin);
    assert.equal(timeseries.points, A_POINTS);

    // --- data B
    await writeSeries(svc, admin, MAIN, bMain);
    await writeSeries(svc, admin, AUX, bAux);
    await createCollection(svc, admin, NEW);
    await writeSeries(svc, admin, NEW, bNew);
    assert.equal((await svc.post('/svcapi/seal_now', {}, admin)).body.success, true, 'B seals days too');
    assert.deepEqual((await svc.request('DELETE', `/svcapi/units/${unit.id}`, { token: admin })).body, { count: 1 });
    assert.equal((await svc.request('PUT', `/svcapi/orgs/${org.id}`, { body: { country: 'DE' }, token: admin })).status, 200);
    assert.equal((await svc.post('/svcapi/admin/user/delete', { email: 'keeper@plant.test' }, admin)).status, 200);
    latecomerToken = await svc.newUser('latecomer@plant.test', PASSWORD);
    assert.equal((await svc.request('DELETE', `/svcapi/api_keys/${keyA.id}`, { token: admin })).status, 200);
    const keyB = (await svc.post('/svcapi/api_keys', { name: 'after the backup' }, admin)).body as { key: string };
    assert.equal((await svc.get('/svcapi/me', keyA.key)).status, 401, 'the key of A is revoked in B');
    assert.equal((await svc.get('/svcapi/me', keyB.key)).status, 200);
    // B is really there.
    assert.deepEqual(await readSeries(svc, admin, MAIN, Object.keys(aMain)), merged(aMain, bMain));
    assert.equal((await entity('units', unit.id)).status, 404);
    assert.equal(await loginStatus('keeper@plant.test'), 401);
    assert.deepEqual(await collectionIds(svc, admin), [collectionId(NEW), collectionId(AUX), collectionId(MAIN)].sort());

    // --- restore both
    const rs = await restore(svc, admin, 'sqlite', sqlite.file_name);
    assert.equal(rs.status, 200, rs.text);
    assert.equal(rs.body.success, true);
    assert.equal(rs.body.file_name, sqlite.file_name);
    assert.equal(rs.body.secrets_restored, false, 'a backup taken without a passphrase brings no secrets');
    assert.equal(typeof rs.body.job_id, 'string');
    assert.equal(rs.body.restored?.kind, 'sqlite', rs.text);
    assert.ok(Number.isInteger(rs.body.restored.tables) && rs.body.restored.tables > 0, rs.text);
    assert.ok(Number.isInteger(rs.body.restored.rows) && rs.body.restored.rows >= 5, `at least the org, site, unit and two users: ${rs.text}`);
    const rt = await restore(svc, admin, 'timeseries', timeseries.file_name);
    assert.equal(rt.status, 200, rt.text);
    assert.equal(rt.body.success, true);
    assert.equal(rt.body.file_name, timeseries.file_name);
    assert.equal(typeof rt.body.job_id, 'string');
    assert.deepEqual(rt.body.restored, { kind: 'timeseries', collections: 2, points: A_POINTS, blobs: 0 }, rt.text);

    // --- exactly A
    assert.equal((await svc.get('/svcapi/me', admin)).status, 200, 'the admin, who was in the backup, keeps a working token');
    const main = await readSeries(svc, admin, MAIN, Object.keys(aMain));
    assert.deepEqual(main, aMain, 'every point of A in MAIN, the overwritten one with its A value, none of B');
    assert.deepEqual(await readSeries(svc, admin, AUX, [...Object.keys(aAux), 'BONLY-0']), { ...aAux, 'BONLY-0': [] });
    assert.deepEqual(await collectionIds(svc, admin), [collectionId(AUX), collectionId(MAIN)].sort(), 'the collection B made is gone');
    assert.equal((await svc.get(`/svcapi/collection/${enc(collectionId(NEW))}`, admin)).status, 404);
    assert.ok(!fs.existsSync(path.join(svc.dataDir, 'ts', 'acme', 'east')), 'nor is it on disk');
    // The tag map is rebuilt: tags only B wrote resolve nowhere; A's do.
    for (const tag of ['NEWC-0', 'BONLY-0']) {
      const res = await svc.get(`/svcapi/fast_query?tags=${tag}&start=${T0}&end=${T0 + 10 * DAY}`, admin);
      assert.equal(res.status, 400, `${tag} after the restore: ${res.text}`);
    }
    const unscoped = await svc.get(`/svcapi/fast_query?tags=X-1&start=${T0}&end=${T0 + 30 * DAY}`, admin);
    assert.deepEqual(unscoped.body, { 'X-1': aAux['X-1'] });

    assert.deepEqual((await entity('orgs', org.id)).body, org, 'the org as it was');
    assert.deepEqual((await entity('sites', site.id)).body, site);
    assert.deepEqual((await entity('units', unit.id)).body, unit, 'the deleted unit is back');
    assert.equal(await loginStatus('keeper@plant.test'), 200, 'the deleted user logs in again');
    assert.equal(await loginStatus('latecomer@plant.test'), 401, 'the user made after the backup cannot');
    assert.equal((await svc.get('/svcapi/me', latecomerToken)).status, 401, "the latecomer's token stops working");
    assert.equal((await svc.get('/svcapi/me', keyA.key)).status, 200, 'the API key of A works again (its row is back)');
    assert.equal((await svc.get('/svcapi/me', keyB.key)).status, 401, 'the key made after the backup is refused at once');

    // Both restores are jobs; the store takes writes again.
    for (const id of [rs.body.job_id, rt.body.job_id]) {
      const job = (await svc.get(`/svcapi/process-log/${enc(id)}`, admin)).body as Job;
      assert.equal(job.kind, 'restore');
      assert.equal(job.status, 'done', JSON.stringify(job));
      assert.equal(job.progress, 1);
    }
    assert.equal((await svc.get(`/svcapi/process-log/${enc(backup.id)}`, admin)).body.status, 'done');
    const write = await svc.post('/svcapi/write', { ...MAIN, tags: { EXTRA: [[T0 + 12 * DAY, 1.25]] } }, admin);
    assert.equal(write.body?.success, true, write.text);
    assert.deepEqual(await readSeries(svc, admin, MAIN, ['EXTRA']), { EXTRA: [[T0 + 12 * DAY, 1.25]] });
    assert.equal((await svc.post('/svcapi/labels', { name: 'after-restore' }, admin)).status, 200, 'metadata takes writes again');
  });

  test('bad file names are 400, unknown ones 404, a file of the other kind 400', async () => {
    const { sqlite, timeseries } = await newestBackups(svc, admin);
    for (const kind of ['sqlite', 'timeseries'] as const) {
      for (const name of ['../x', 'a/b', 'a\\b', '..', `../${kind === 'sqlite' ? sqlite.file_name : timeseries.file_name}`, '/etc/passwd', '', 7, null]) {
        const res = await restore(svc, admin, kind, name);
        assert.equal(res.status, 400, `restore/${kind} ${JSON.stringify(name)}: ${res.status} ${res.text}`);
        assert.match(String(res.body?.error), /file_name/, `restore/${kind} ${JSON.stringify(name)}: ${res.text}`);
      }
      const missingField = await svc.post(`${BACKUP}/restore/${kind}`, {}, admin);
      assert.equal(missingField.status, 400, missingField.text);
      const unknown = await restore(svc, admin, kind, kind === 'sqlite' ? 'sqlite-20200101T000000000Z.sqlite' : 'timeseries-20200101T000000000Z.tar');
      assert.equal(unknown.status, 404, `unknown ${kind} backup: ${unknown.text}`);
    }
    const sqliteAsTs = await restore(svc, admin, 'timeseries', sqlite.file_name);
    assert.equal(sqliteAsTs.status, 400, `a sqlite file given to restore/timeseries: ${sqliteAsTs.text}`);
    const tsAsSqlite = await restore(svc, admin, 'sqlite', timeseries.file_name);
    assert.equal(tsAsSqlite.status, 400, `a timeseries file given to restore/sqlite: ${tsAsSqlite.text}`);
    const sidecar = await restore(svc, admin, 'sqlite', `${sqlite.file_name}.json`);
    assert.ok([400, 404].includes(sidecar.status), `a sidecar is no backup: ${sidecar.text}`);
  });

  test('corrupted backups (a flipped byte, a truncated file, a broken manifest) fail verification and leave the live store untouched', async () => {
    const live = await liveSnapshot();
    assert.deepEqual(live.main, { ...aMain, EXTRA: [[T0 + 12 * DAY, 1.25]] }, 'the live store is A plus the later write');
    const dir = await backupDirOf(svc, admin);
    const refused = async (kind: 'sqlite' | 'timeseries', fileName: string, what: string) => {
      const res: HttpResult = await restore(svc, admin, kind, fileName);
      assert.equal(res.status, 400, `${what}: ${res.status} ${res.text}`);
      assert.match(String(res.body?.error), /failed verification/, `${what}: ${res.text}`);
      assert.ok(String(res.body.error).includes(fileName), `${what}: the error names the file: ${res.text}`);
      assert.deepEqual(await liveSnapshot(), live, `${what}: the live store is as before`);
    };

    // A flipped byte inside a data file of the tar, and in the middle of the SQLite file.
    await runBackup(svc, admin, 'all');
    let b = await newestBackups(svc, admin);
    const tarFile = path.join(dir, b.timeseries.file_name);
    const tar = readTar(tarFile);
    const biggest = tar.entries.filter((e) => e.name.startsWith('ts/') && e.size > 0).sort((x, y) => y.size - x.size)[0];
    assert.ok(biggest, 'the tar holds data files');
    flipByte(tarFile, biggest.offset + Math.floor(biggest.size / 2));
    await refused('timeseries', b.timeseries.file_name, `a flipped byte in ${biggest.name}`);
    const sqliteFile = path.join(dir, b.sqlite.file_name);
    flipByte(sqliteFile, Math.floor(fs.statSync(sqliteFile).size / 2));
    await refused('sqlite', b.sqlite.file_name, 'a flipped byte in the SQLite backup');

    // Truncated files.
    await runBackup(svc, admin, 'all');
    b = await newestBackups(svc, admin);
    for (const [kind, info] of [['timeseries', b.timeseries], ['sqlite', b.sqlite]] as const) {
      const file = path.join(dir, info.file_name);
      fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2));
      await refused(kind, info.file_name, `a truncated ${kind} backup`);
    }

    // A manifest that is not JSON any more.
    await runBackup(svc, admin, 'timeseries');
    b = await newestBackups(svc, admin, ['timeseries']);
    const manifestTar = path.join(dir, b.timeseries.file_name);
    const manifest = readTar(manifestTar).entries[0];
    assert.equal(manifest.name, 'manifest.json');
    flipByte(manifestTar, manifest.offset);
    await refused('timeseries', b.timeseries.file_name, 'a broken manifest');

    // Damage the file's checksum does not reveal (the sidecar agrees with it): the manifest's
    // per-file checksums and SQLite's integrity_check still refuse it.
    await runBackup(svc, admin, 'all');
    b = await newestBackups(svc, admin);
    const inner = readTar(path.join(dir, b.timeseries.file_name)).entries.filter((e) => e.name.startsWith('ts/') && e.size > 0)[0];
    flipByte(path.join(dir, b.timeseries.file_name), inner.offset + Math.floor(inner.size / 2));
    resignSidecar(path.join(dir, b.timeseries.file_name));
    await refused('timeseries', b.timeseries.file_name, `a flipped byte in ${inner.name}, sidecar re-signed`);
    const damagedSqlite = path.join(dir, b.sqlite.file_name);
    fs.truncateSync(damagedSqlite, Math.floor(fs.statSync(damagedSqlite).size / 2));
    resignSidecar(damagedSqlite);
    await refused('sqlite', b.sqlite.file_name, 'a truncated SQLite backup, sidecar re-signed');
    await runBackup(svc, admin, 'sqlite');
    b = await newestBackups(svc, admin, ['sqlite']);
    const notSqlite = path.join(dir, b.sqlite.file_name);
    fs.writeFileSync(notSqlite, Buffer.alloc(fs.statSync(notSqlite).size, 0x5a));
    resignSidecar(notSqlite);
    await refused('sqlite', b.sqlite.file_name, 'a file that is no SQLite database, sidecar re-signed');
    await runBackup(svc, admin, 'timeseries');
    b = await newestBackups(svc, admin, ['timeseries']);
    const brokenManifest = path.join(dir, b.timeseries.file_name);
    flipByte(brokenManifest, readTar(brokenManifest).entries[0].offset);
    resignSidecar(brokenManifest);
    await refused('timeseries', b.timeseries.file_name, 'a broken manifest, sidecar re-signed');
    await runBackup(svc, admin, 'timeseries');
    b = await newestBackups(svc, admin, ['timeseries']);
    const truncatedTar = path.join(dir, b.timeseries.file_name);
    fs.truncateSync(truncatedTar, Math.floor(fs.statSync(truncatedTar).size / 2));
    resignSidecar(truncatedTar);
    await refused('timeseries', b.timeseries.file_name, 'a truncated tar, sidecar re-signed');

    // The service is not wedged: writes go on and a sound backup still restores.
    await runBackup(svc, admin, 'all');
    b = await newestBackups(svc, admin);
    assert.equal((await restore(svc, admin, 'timeseries', b.timeseries.file_name)).status, 200);
    assert.equal((await restore(svc, admin, 'sqlite', b.sqlite.file_name)).status, 200);
    assert.deepEqual(await liveSnapshot(), live, 'a sound backup of the live store restores to the same store');
  });
});

describe('writes during a backup', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService({ config: { storage: { shards: 2, flushIntervalMs: 200 } } });
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  test('every write lands; the backup holds, per tag, a prefix of the acknowledged requests, never half a request', async (t) => {
    const collections = [scopeOf('acme', 'north', 'w', 'one'), scopeOf('acme', 'south', 'w', 'two')];
    const preload = scopeOf('acme', 'north', 'w', 'preload');
    for (const scope of [...collections, preload]) await createCollection(svc, admin, scope);
    // Some volume, so the backup takes a moment while the writers go on.
    await writeSeries(svc, admin, preload, makeSeries('PRE', 4, 50_000, T0, 1000, 7), 12_500);

    const WRITERS = 4;
    const PER_TAG = 5; // points per tag per request
    type Phase = 'before' | 'during' | 'after';
    let phase: Phase = 'before';
    let stop = false;
    interface Sent { points: Series; sentIn: Phase; ok: boolean; answer: string }
    const sent: Sent[][] = Array.from({ length: WRITERS }, () => []);
    const tagsOf = (w: number) => [`W${w}-a`, `W${w}-b`];
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      const scope = collections[w % 2];
      for (let req = 0; !stop && req < 5000; req++) {
        const points: Series = {};
        tagsOf(w).forEach((tag, k) => {
          points[tag] = Array.from({ length: PER_TAG }, (_, i) => [T0 + 40 * DAY + (req * PER_TAG + i) * 1000, w * 1e6 + req * 10 + i + k / 4] as [number, number]);
        });
        const record: Sent = { points, sentIn: phase, ok: false, answer: '' };
        sent[w].push(record);
        const res = await svc.post('/svcapi/write', { ...scope, tags: points }, admin);
        record.ok = res.status === 200 && res.body?.success === true;
        record.answer = `${res.status} ${res.text.slice(0, 200)}`;
      }
    });
    const acked = (w: number) => sent[w].filter((s) => s.ok).length;
    await waitFor(() => sent.every((_, w) => acked(w) >= 3), 'every writer has written', { timeoutMs: 30_000 });
    const ackedBefore = sent.map((_, w) => acked(w));
    phase = 'during';
    const run = await svc.post(`${BACKUP}/run`, { kind: 'timeseries' }, admin);
    assert.equal(run.status, 200, run.text);
    const job = await waitForJob(svc, admin, run.body.job_id);
    phase = 'after';
    const sentBeforeDone = sent.map((s) => s.length);
    assert.equal(job.status, 'done', JSON.stringify(job));
    await waitFor(() => sent.every((_, w) => acked(w) >= sentBeforeDone[w] + 3), 'every writer writes after the backup', { timeoutMs: 30_000 });
    stop = true;
    await Promise.all(writers);

    const failed = sent.flat().filter((s) => !s.ok);
    assert.deepEqual(failed.map((s) => s.answer), [], 'writes continue during a backup: every request acknowledged');
    const duringCount = sent.flat().filter((s) => s.sentIn === 'during').length;
    t.diagnostic(`requests sent while the backup ran: ${duringCount}`);

    // The live store has every acknowledged point.
    const acknowledged = (w: number) => merged(...sent[w].filter((s) => s.ok).map((s) => s.points));
    for (let w = 0; w < WRITERS; w++) {
      assert.deepEqual(await readSeries(svc, admin, collections[w % 2], tagsOf(w)), acknowledged(w), `writer ${w}: all acknowledged points are live`);
    }

    // Restore that backup: per writer, its first k requests exactly, for one k in bounds.
    const { timeseries } = await newestBackups(svc, admin, ['timeseries']);
    const res = await restore(svc, admin, 'timeseries', timeseries.file_name);
    assert.equal(res.status, 200, res.text);
    const restoredK: number[] = [];
    for (let w = 0; w < WRITERS; w++) {
      const restored = await readSeries(svc, admin, collections[w % 2], tagsOf(w));
      const [a, b] = tagsOf(w).map((tag) => restored[tag].length);
      assert.equal(a % PER_TAG, 0, `writer ${w}: ${a} points of tag a is not a whole number of requests`);
      assert.equal(a, b, `writer ${w}: both tags of a request are in the backup or neither (${a} vs ${b} points)`);
      const k = a / PER_TAG;
      assert.deepEqual(restored, merged(...sent[w].slice(0, k).map((s) => s.points)), `writer ${w}: the restored points are the first ${k} requests, in write order`);
      assert.ok(k >= ackedBefore[w], `writer ${w}: requests acknowledged before the backup started are in it (${k} < ${ackedBefore[w]})`);
      assert.ok(k <= sentBeforeDone[w], `writer ${w}: requests sent after the backup finished are not in it (${k} > ${sentBeforeDone[w]})`);
      restoredK.push(k);
    }
    t.diagnostic(`restored requests per writer ${restoredK.join(', ')}; acknowledged before the backup ${ackedBefore.join(', ')}; sent before it finished ${sentBeforeDone.join(', ')}`);
    const pre = await readSeries(svc, admin, preload, ['PRE-0', 'PRE-3']);
    assert.equal(pre['PRE-0'].length, 50_000);
    assert.equal(pre['PRE-3'].length, 50_000);
  });
});

describe('slow restores (debug.restoreStepDelayMs)', () => {
  const CONFIG = { storage: { shards: 2, flushIntervalMs: 200 }, debug: { restoreStepDelayMs: 4000 } };
  let svc: TestService;
  let admin: string;
  const S1 = scopeOf('acme', 'north', 'slow', 'one');
  const S2 = scopeOf('acme', 'south', 'slow', 'two');
  const S3 = scopeOf('acme', 'west', 'slow', 'three');
  const TAGS = ['K-0', 'K-1', 'L-0'];

  /** The whole time-series store as the API shows it: collections and every tag these tests write. */
  const tsSnapshot = async () => {
    const collections = await collectionIds(svc, admin);
    const series: Record<string, Series | null> = {};
    for (const scope of [S1, S2, S3]) series[collectionId(scope)] = collections.includes(collectionId(scope)) ? await readSeries(svc, admin, scope, TAGS) : null;
    return { collections, series };
  };
  /** The metadata store as these tests see it: label names and who can log in. */
  const sqlSnapshot = async () => ({
    labels: ((await svc.get('/svcapi/labels', admin)).body as Array<{ name: string }>).map((l) => l.name).sort(),
    early: (await svc.post('/svcapi/login', { email: 'early@plant.test', password: PASSWORD })).status,
    late: (await svc.post('/svcapi/login', { email: 'late@plant.test', password: PASSWORD })).status,
  });
  const restartAfterKill = async () => {
    assert.deepEqual(await svc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    svc = await startService({ dataDir: svc.dataDir, config: CONFIG });
    admin = await svc.adminToken();
  };

  before(async () => {
    svc = await startService({ config: CONFIG });
    admin = await svc.adminToken();
    for (const scope of [S1, S2]) await createCollection(svc, admin, scope);
    await writeSeries(svc, admin, S1, makeSeries('K', 2, 300, T0, 60_000, 8));
    await writeSeries(svc, admin, S2, makeSeries('K', 2, 300, T0 + DAY, 60_000, 9));
  });
  after(() => svc.dispose());

  test('while a time-series restore runs, time-series changes answer 503 with Retry-After, metadata and reads go on, backups are 409', async (t) => {
    await runBackup(svc, admin, 'all');
    const { timeseries } = await newestBackups(svc, admin);
    const expected = await tsSnapshot();
    await writeSeries(svc, admin, S1, makeSeries('L', 1, 10, T0 + 5 * DAY, 1000, 10));

    const restoring = restore(svc, admin, 'timeseries', timeseries.file_name);
    const job = await waitForRunningJob(svc, admin, 'restore', 'swapping');
    const checks: Array<[string, () => Promise<HttpResult>, number]> = [
      ['POST /svcapi/write', () => svc.post('/svcapi/write', { ...S1, tags: { 'L-0': [[T0 + 6 * DAY, 1]] } }, admin), 503],
      ['POST /svcapi/write_fast', () => svc.post('/svcapi/write_fast', { ...S1, tags: { 'L-0': [[T0 + 6 * DAY, 1]] } }, admin), 503],
      ['POST /svcapi/create_collection', () => svc.post('/svcapi/create_collection', S3, admin), 503],
      ['POST /svcapi/labels', () => svc.post('/svcapi/labels', { name: 'during-restore' }, admin), 200],
      ['GET /svcapi/collection', () => svc.get('/svcapi/collection', admin), 200],
      ['GET /svcapi/labels', () => svc.get('/svcapi/labels', admin), 200],
      ['GET backup status', () => svc.get(`${BACKUP}/status`, admin), 200],
      ['POST backup run', () => svc.post(`${BACKUP}/run`, { kind: 'sqlite' }, admin), 409],
      ['POST restore/timeseries', () => restore(svc, admin, 'timeseries', timeseries.file_name), 409],
    ];
    const answers: Array<[string, HttpResult, number]> = [];
    for (const [what, call, want] of checks) answers.push([what, await call(), want]);
    const stillRunning = (await svc.get(`/svcapi/process-log/${enc(job.id)}`, admin)).body.status === 'running';
    if (stillRunning) {
      for (const [what, res, want] of answers) {
        assert.equal(res.status, want, `${what} during a restore: ${res.status} ${res.text}`);
        if (want === 503) assert.ok(res.headers['retry-after'], `${what}: 503 carries Retry-After`);
        if (want === 409) assert.match(String(res.body?.error), /already running/, what);
      }
    } else t.diagnostic('the restore finished before the checks: answers during a restore not asserted');

    const done = await restoring;
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.job_id, job.id, 'the running job was this restore');
    if (stillRunning) {
      assert.deepEqual(await tsSnapshot(), expected, 'the backup restored: the later L points are gone, nothing written during the restore');
      assert.ok((await sqlSnapshot()).labels.includes('during-restore'), 'a time-series restore leaves metadata changes made meanwhile');
    }
    assert.equal((await svc.post('/svcapi/write', { ...S1, tags: { 'L-0': [[T0 + 6 * DAY, 2]] } }, admin)).body.success, true, 'writes work after the restore');
    assert.equal((await svc.post('/svcapi/labels', { name: 'after-restore' }, admin)).status, 200);
  });

  test('kill -9 during a timeseries restore: after a restart the store is the old one or the backup, never a mix', async (t) => {
    await runBackup(svc, admin, 'timeseries');
    const { timeseries } = await newestBackups(svc, admin, ['timeseries']);
    const inBackup = await tsSnapshot();
    // The old store differs from the backup in every collection: new points, overwritten ones, a new collection.
    await writeSeries(svc, admin, S1, merged(makeSeries('L', 1, 50, T0 + 7 * DAY, 1000, 11), { 'K-0': [[T0, 999.5]] }));
    await writeSeries(svc, admin, S2, merged(makeSeries('L', 1, 50, T0 + 7 * DAY, 1000, 12), { 'K-1': [[T0 + DAY, -999.5]] }));
    await createCollection(svc, admin, S3);
    await writeSeries(svc, admin, S3, makeSeries('L', 1, 20, T0, 1000, 13));
    const old = await tsSnapshot();
    assert.notDeepEqual(old, inBackup);

    const restoring = restore(svc, admin, 'timeseries', timeseries.file_name).catch((err: Error) => err);
    await waitForRunningJob(svc, admin, 'restore', 'swapping');
    await restartAfterKill();
    await restoring; // its answer is lost with the process

    const now = await tsSnapshot();
    const isOld = isDeepStrictEqual(now, old);
    const isBackup = isDeepStrictEqual(now, inBackup);
    t.diagnostic(`after kill -9 mid-restore the store is ${isOld ? 'the old one' : isBackup ? "the backup's" : 'a mix'}`);
    assert.ok(isOld || isBackup, `the store after the restart is neither the old one nor the backup:\n${JSON.stringify(now).slice(0, 2000)}`);
    const write = await svc.post('/svcapi/write', { ...S1, tags: { 'L-0': [[T0 + 20 * DAY, 42]] } }, admin);
    assert.equal(write.body?.success, true, `the service answers writes: ${write.text}`);
    assert.deepEqual((await readSeries(svc, admin, S1, ['L-0']))['L-0'].at(-1), [T0 + 20 * DAY, 42]);
    assert.equal((await svc.get(`${BACKUP}/status`, admin)).body.running, false);
    await runBackup(svc, admin, 'timeseries'); // nothing is left holding the backup lock
  });

  test('kill -9 during a sqlite restore: after a restart the metadata is the old one or the backup, never a mix', async (t) => {
    for (const name of ['kept', 'to-delete']) assert.equal((await svc.post('/svcapi/labels', { name }, admin)).status, 200);
    await svc.newUser('early@plant.test', PASSWORD);
    await runBackup(svc, admin, 'sqlite');
    const { sqlite } = await newestBackups(svc, admin, ['sqlite']);
    const inBackup = await sqlSnapshot();
    assert.equal(inBackup.early, 200);
    assert.equal(inBackup.late, 401);
    const toDelete = ((await svc.get('/svcapi/labels', admin)).body as Array<{ id: string; name: string }>).find((l) => l.name === 'to-delete')!;
    assert.equal((await svc.request('DELETE', `/svcapi/labels/${toDelete.id}`, { token: admin })).status, 200);
    assert.equal((await svc.post('/svcapi/labels', { name: 'added-later' }, admin)).status, 200);
    assert.equal((await svc.post('/svcapi/admin/user/delete', { email: 'early@plant.test' }, admin)).status, 200);
    await svc.newUser('late@plant.test', PASSWORD);
    const old = await sqlSnapshot();
    assert.notDeepEqual(old, inBackup);

    const restoring = restore(svc, admin, 'sqlite', sqlite.file_name).catch((err: Error) => err);
    await waitForRunningJob(svc, admin, 'restore', 'swapping');
    await restartAfterKill();
    await restoring;

    const now = await sqlSnapshot();
    const isOld = isDeepStrictEqual(now, old);
    const isBackup = isDeepStrictEqual(now, inBackup);
    t.diagnostic(`after kill -9 mid-restore the metadata is ${isOld ? 'the old one' : isBackup ? "the backup's" : 'a mix'}`);
    assert.ok(isOld || isBackup, `metadata after the restart: ${JSON.stringify(now)}; old ${JSON.stringify(old)}; backup ${JSON.stringify(inBackup)}`);
    assert.equal((await svc.post('/svcapi/labels', { name: 'after-restart' }, admin)).status, 200, 'metadata takes writes');
    const write = await svc.post('/svcapi/write', { ...S1, tags: { 'L-0': [[T0 + 21 * DAY, 43]] } }, admin);
    assert.equal(write.body?.success, true, `the service answers writes: ${write.text}`);
  });
});
