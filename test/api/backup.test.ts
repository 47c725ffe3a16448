// Backup routes over real HTTPS (WIRE part 2 "Backup", notes/backup-decisions.md): access,
// config (defaults, merge, validation, persistence, directory), running a backup and what it
// leaves on disk (sha256, tar with manifest first, sidecars), one backup at a time, retention,
// and a backup that fails (status, job, admin notification).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { startService, tempDir, type TestService } from './harness.js';
import {
  BACKUP, DAY, T0, collectionCount, collectionId, createCollection, listBackups, makeSeries, merged, pointCount, readTar, runBackup,
  scopeOf, sha256, sha256File, tarEntryBytes, waitForJob, waitNotRunning, writeSeries, type Job,
} from './backup-support.js';

const DEFAULT_CONFIG = { enabled: true, interval_hours: 24, directory: 'backups', keep_sqlite: 7, keep_timeseries: 7 };
const HOUR = 3_600_000;

const MAIN = scopeOf('acme', 'north', 'boiler-1', 'main');
const AUX = scopeOf('acme', 'north', 'boiler-1', 'aux');
const BULK = scopeOf('acme', 'north', 'boiler-1', 'bulk');

describe('backup routes', () => {
  let svc: TestService;
  let admin: string;
  let readWrite: string;
  const putConfig = (body: unknown, token = admin) => svc.request('PUT', `${BACKUP}/config`, { body, token });
  const getConfig = async () => {
    const res = await svc.get(`${BACKUP}/config`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body;
  };
  const status = async () => {
    const res = await svc.get(`${BACKUP}/status`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body;
  };

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2, flushIntervalMs: 200 } } });
    admin = await svc.adminToken();
    readWrite = await svc.newUser('rw@plant.test');
  });
  after(() => svc.dispose());

  test('config defaults; status before any backup; next_backup_ms follows enabled and interval_hours without a restart', async () => {
    assert.deepEqual(await getConfig(), DEFAULT_CONFIG);
    const first = await status();
    for (const key of ['running', 'last_backup_ms', 'next_backup_ms', 'last_sqlite', 'last_timeseries']) assert.ok(key in first, `status has ${key}: ${JSON.stringify(first)}`);
    assert.equal(first.running, false);
    assert.equal(first.last_sqlite, null);
    assert.equal(first.last_timeseries, null);
    assert.equal(typeof first.next_backup_ms, 'number', 'enabled by default, so a next backup is planned');
    assert.ok(first.next_backup_ms > Date.now() + 23 * HOUR && first.next_backup_ms <= Date.now() + 24 * HOUR, `first backup interval_hours after start: ${first.next_backup_ms}`);

    assert.equal((await putConfig({ enabled: false })).status, 200);
    assert.equal((await status()).next_backup_ms, null, 'next_backup_ms is null while disabled');
    assert.equal((await putConfig({ enabled: true, interval_hours: 2 })).status, 200);
    const replanned = (await status()).next_backup_ms;
    assert.equal(typeof replanned, 'number');
    assert.ok(replanned > Date.now() && replanned <= Date.now() + 2 * HOUR, `interval_hours 2 applies at once: ${replanned}`);
    assert.equal((await putConfig({ interval_hours: 24 })).status, 200);
    assert.deepEqual(await getConfig(), DEFAULT_CONFIG);
  });

  test('PUT config merges (omitted fields keep their values) and answers the whole config', async () => {
    const res = await putConfig({ keep_sqlite: 3 });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { success: true, config: { ...DEFAULT_CONFIG, keep_sqlite: 3 } });
    const res2 = await putConfig({ interval_hours: 0.5, keep_timeseries: 1 });
    assert.deepEqual(res2.body, { success: true, config: { ...DEFAULT_CONFIG, keep_sqlite: 3, interval_hours: 0.5, keep_timeseries: 1 } });
    assert.deepEqual(await getConfig(), { ...DEFAULT_CONFIG, keep_sqlite: 3, interval_hours: 0.5, keep_timeseries: 1 });
    assert.equal((await putConfig({ interval_hours: 8760 })).status, 200, 'interval_hours 8760 is the upper bound, allowed');
    assert.equal((await putConfig(DEFAULT_CONFIG)).status, 200);
    assert.deepEqual(await getConfig(), DEFAULT_CONFIG);
  });

  test('PUT config: each bad value is 400 naming its field, an unknown field too, and nothing changes', async () => {
    const aFile = path.join(svc.dataDir, 'a-regular-file');
    fs.writeFileSync(aFile, 'not a directory');
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ enabled: 'yes' }, /enabled/],
      [{ enabled: 1 }, /enabled/],
      [{ enabled: null }, /enabled/],
      [{ interval_hours: 0 }, /interval_hours/],
      [{ interval_hours: -1 }, /interval_hours/],
      [{ interval_hours: 8761 }, /interval_hours/],
      [{ interval_hours: '24' }, /interval_hours/],
      [{ interval_hours: null }, /interval_hours/],
      [{ directory: '' }, /directory/],
      [{ directory: 7 }, /directory/],
      [{ directory: null }, /directory/],
      [{ directory: path.join(aFile, 'below') }, /directory/],
      [{ directory: 'a-regular-file/below' }, /directory/],
      [{ keep_sqlite: 0 }, /keep_sqlite/],
      [{ keep_sqlite: -2 }, /keep_sqlite/],
      [{ keep_sqlite: 1.5 }, /keep_sqlite/],
      [{ keep_sqlite: '3' }, /keep_sqlite/],
      [{ keep_timeseries: 0 }, /keep_timeseries/],
      [{ keep_timeseries: 2.5 }, /keep_timeseries/],
      [{ colour: 'blue' }, /colour/],
      // A good field next to a bad one: the good one is not applied either.
      [{ keep_sqlite: 3, interval_hours: 0 }, /interval_hours/],
    ];
    for (const [body, field] of cases) {
      const res = await putConfig(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)} answered ${res.status}: ${res.text}`);
      assert.match(String(res.body?.error), field, `${JSON.stringify(body)}: ${res.text}`);
    }
    const notObject = await svc.request('PUT', `${BACKUP}/config`, { rawBody: '[1]', token: admin, headers: { 'content-type': 'application/json' } });
    assert.equal(notObject.status, 400, notObject.text);
    assert.deepEqual(await getConfig(), DEFAULT_CONFIG);
    assert.ok(!fs.existsSync(path.join(svc.dataDir, 'a-regular-file', 'below')));
  });

  test('access: no token 401 and a read-write token 403 on every backup and process-log route; admin passes', async () => {
    const routes: Array<[string, string, unknown]> = [
      ['GET', `${BACKUP}/status`, undefined],
      ['GET', `${BACKUP}/list`, undefined],
      ['GET', `${BACKUP}/config`, undefined],
      ['PUT', `${BACKUP}/config`, { keep_sqlite: 1 }],
      ['POST', `${BACKUP}/run`, { kind: 'sqlite' }],
      ['POST', `${BACKUP}/restore/sqlite`, { file_name: 'sqlite-20260101T000000000Z.sqlite' }],
      ['POST', `${BACKUP}/restore/timeseries`, { file_name: 'timeseries-20260101T000000000Z.tar' }],
      ['GET', '/svcapi/process-log', undefined],
      ['GET', '/svcapi/process-log/1', undefined],
    ];
    for (const [method, url, body] of routes) {
      const none = await svc.request(method, url, { body });
      assert.equal(none.status, 401, `${method} ${url} without a token: ${none.text}`);
      const forbidden = await svc.request(method, url, { body, token: readWrite });
      assert.equal(forbidden.status, 403, `${method} ${url} with a read-write token: ${forbidden.text}`);
    }
    assert.deepEqual(await getConfig(), DEFAULT_CONFIG, 'the refused PUT changed nothing');
    assert.equal((await listBackups(svc, admin)).sqlite_backups.length, 0, 'the refused run made no backup');

    for (const url of [`${BACKUP}/status`, `${BACKUP}/list`, `${BACKUP}/config`, '/svcapi/process-log']) {
      assert.equal((await svc.get(url, admin)).status, 200, url);
    }
    assert.equal((await putConfig({})).status, 200, 'an empty PUT is a merge of nothing');
    const run = await svc.post(`${BACKUP}/run`, { kind: 'sqlite' }, admin);
    assert.equal(run.status, 200, run.text);
    const job = await waitForJob(svc, admin, run.body.job_id);
    assert.equal(job.status, 'done', JSON.stringify(job));
    assert.equal((await svc.get(`/svcapi/process-log/${encodeURIComponent(job.id)}`, admin)).status, 200);
    for (const kind of ['sqlite', 'timeseries']) {
      const name = kind === 'sqlite' ? 'sqlite-20260101T000000000Z.sqlite' : 'timeseries-20260101T000000000Z.tar';
      const res = await svc.post(`${BACKUP}/restore/${kind}`, { file_name: name }, admin);
      assert.equal(res.status, 404, `admin reaches restore/${kind}; an unknown file is 404: ${res.text}`);
    }
  });

  test('run: a bad kind is 400; the default kind is all', async () => {
    for (const kind of ['everything', 7, null]) {
      const res = await svc.post(`${BACKUP}/run`, { kind }, admin);
      assert.equal(res.status, 400, `kind ${JSON.stringify(kind)}: ${res.text}`);
      assert.match(String(res.body?.error), /kind/);
    }
    assert.equal((await putConfig({ directory: 'default-kind' })).status, 200);
    const res = await svc.post(`${BACKUP}/run`, {}, admin);
    assert.equal(res.status, 200, res.text);
    assert.equal((await waitForJob(svc, admin, res.body.job_id)).status, 'done');
    await waitNotRunning(svc, admin);
    const list = await listBackups(svc, admin);
    assert.equal(list.sqlite_backups.length, 1, JSON.stringify(list));
    assert.equal(list.timeseries_backups.length, 1, JSON.stringify(list));
    assert.equal((await putConfig({ directory: 'backups' })).status, 200);
  });

  test('run all: one sqlite and one timeseries backup whose size and sha256 are those of the files; the tar holds a manifest that matches', async () => {
    await createCollection(svc, admin, MAIN);
    await createCollection(svc, admin, AUX);
    // Sealed days (linked into the backup) and active day files (copied) in both collections.
    const sealedMain = makeSeries('M', 3, 600, T0, 300_000, 1);
    const sealedAux = makeSeries('X', 2, 400, T0 + DAY / 2, 240_000, 2);
    await writeSeries(svc, admin, MAIN, sealedMain);
    await writeSeries(svc, admin, AUX, sealedAux);
    const seal = await svc.post('/svcapi/seal_now', {}, admin);
    assert.equal(seal.body.success, true, seal.text);
    assert.ok(seal.body.sealedDays >= 1, seal.text);
    const activeMain = makeSeries('M', 3, 100, T0 + 10 * DAY, 1000, 3);
    const activeAux = makeSeries('X', 2, 50, T0 + 11 * DAY, 1000, 4);
    await writeSeries(svc, admin, MAIN, activeMain);
    await writeSeries(svc, admin, AUX, activeAux);
    const main = merged(sealedMain, activeMain);
    const aux = merged(sealedAux, activeAux);

    assert.equal((await putConfig({ directory: 'first' })).status, 200);
    const before = Date.now();
    const job = await runBackup(svc, admin, 'all');
    const afterJob = Date.now();
    assert.equal(job.kind, 'backup');
    assert.equal(job.progress, 1);
    assert.equal(job.error, null);
    assert.ok(job.finished_ms! >= job.started_ms, JSON.stringify(job));

    const list = await listBackups(svc, admin);
    assert.deepEqual(Object.keys(list).sort(), ['sqlite_backups', 'timeseries_backups']);
    assert.equal(list.sqlite_backups.length, 1, `one sqlite backup, sidecars not listed: ${JSON.stringify(list)}`);
    assert.equal(list.timeseries_backups.length, 1, `one timeseries backup: ${JSON.stringify(list)}`);
    const [sq] = list.sqlite_backups;
    const [ts] = list.timeseries_backups;
    assert.match(sq.file_name, /^sqlite-\d{8}T\d{9}Z\.sqlite$/);
    assert.match(ts.file_name, /^timeseries-\d{8}T\d{9}Z\.tar$/);
    assert.equal(sq.kind, 'sqlite');
    assert.equal(ts.kind, 'timeseries');
    const dir = path.join(svc.dataDir, 'first');
    for (const info of [sq, ts]) {
      const file = path.join(dir, info.file_name);
      assert.ok(fs.existsSync(file), `${info.file_name} is in the configured directory`);
      assert.equal(info.size_bytes, fs.statSync(file).size, `${info.file_name} size_bytes`);
      assert.equal(info.sha256, sha256File(file), `${info.file_name} sha256`);
      assert.ok(info.created_ms >= before - 1000 && info.created_ms <= afterJob, `${info.file_name} created_ms ${info.created_ms}`);
      assert.ok(fs.existsSync(`${file}.json`), `${info.file_name} has its sidecar`);
      const sidecar = JSON.parse(fs.readFileSync(`${file}.json`, 'utf8'));
      for (const [key, value] of Object.entries(info)) assert.deepEqual(sidecar[key], value, `the sidecar holds the file info: ${key}`);
    }
    assert.ok(!('collections' in sq) && !('points' in sq), `no collections/points on a sqlite file info: ${JSON.stringify(sq)}`);
    assert.equal(collectionCount(ts), 2, `collections: ${JSON.stringify(ts)}`);
    assert.equal(ts.points, pointCount(main) + pointCount(aux), 'points of the file info');

    // The SQLite backup is a sound database.
    const db = new Database(path.join(dir, sq.file_name), { readonly: true, fileMustExist: true });
    try {
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
      assert.ok((db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n > 0);
    } finally {
      db.close();
    }

    // The tar: manifest.json first, then the files it names, each with its size and sha256.
    const tar = readTar(path.join(dir, ts.file_name));
    assert.equal(tar.entries[0]?.name, 'manifest.json', `first entry: ${tar.entries.map((e) => e.name).slice(0, 5).join(', ')}`);
    const manifest = JSON.parse(tarEntryBytes(tar, tar.entries[0]).toString('utf8'));
    assert.equal(manifest.format, 1, 'format 1 while there is no blob content (format 2 adds it)');
    assert.equal(manifest.blobs, 0, 'no blob content in this store');
    assert.equal(manifest.kind, 'timeseries');
    assert.equal(typeof manifest.created_ms, 'number');
    const files = tar.entries.filter((e) => e.type === '0' || e.type === '\0');
    const inTar = new Map(files.map((e) => [e.name, e]));
    assert.ok(manifest.files.length > 0);
    for (const f of manifest.files as Array<{ path: string; size: number; sha256: string }>) {
      const entry = inTar.get(f.path) ?? inTar.get(`ts/${f.path}`);
      assert.ok(entry, `manifest file ${f.path} is in the tar`);
      assert.equal(entry.size, f.size, `${f.path} size`);
      assert.equal(sha256(tarEntryBytes(tar, entry)), f.sha256, `${f.path} sha256`);
    }
    const dataFiles = files.filter((e) => e.name !== 'manifest.json');
    assert.ok(dataFiles.every((e) => e.name.startsWith('ts/')), dataFiles.map((e) => e.name).join(', '));
    assert.equal(dataFiles.length, manifest.files.length, 'every file of the tar is in the manifest');
    assert.ok(dataFiles.some((e) => e.name.startsWith('ts/acme/north/boiler-1/main/') && path.basename(e.name).startsWith('sealed-')), 'a sealed file is in the tar');
    const byId = new Map((manifest.collections as Array<{ id: string; points: number; first_ms: number; last_ms: number }>).map((c) => [c.id, c]));
    for (const [scope, series] of [[MAIN, main], [AUX, aux]] as const) {
      const c = byId.get(collectionId(scope));
      assert.ok(c, `manifest names ${collectionId(scope)}: ${JSON.stringify(manifest.collections)}`);
      const all = Object.values(series).flat();
      assert.equal(c.points, all.length, `${c.id} points`);
      assert.equal(c.first_ms, Math.min(...all.map((p) => p[0])), `${c.id} first_ms`);
      assert.equal(c.last_ms, Math.max(...all.map((p) => p[0])), `${c.id} last_ms`);
    }

    const st = await status();
    assert.equal(st.running, false);
    assert.equal(typeof st.last_backup_ms, 'number');
    assert.equal(st.last_sqlite.ok, true);
    assert.equal(st.last_sqlite.file_name, sq.file_name);
    assert.equal(st.last_sqlite.error, null);
    assert.ok(st.last_sqlite.at_ms >= before && st.last_sqlite.at_ms <= afterJob, JSON.stringify(st.last_sqlite));
    assert.equal(typeof st.last_sqlite.duration_ms, 'number');
    assert.equal(st.last_timeseries.ok, true);
    assert.equal(st.last_timeseries.file_name, ts.file_name);
    assert.equal(st.last_timeseries.error, null);
  });

  test('a directory change moves where new backups go; list shows the current directory', async () => {
    const first = await listBackups(svc, admin);
    const elsewhere = path.join(tempDir('historian-backups-'), 'nested', 'dir');
    try {
      const put = await putConfig({ directory: elsewhere });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.config.directory, elsewhere);
      assert.deepEqual(await listBackups(svc, admin), { sqlite_backups: [], timeseries_backups: [] }, 'a new directory lists nothing yet');
      await runBackup(svc, admin, 'sqlite');
      const there = await listBackups(svc, admin);
      assert.equal(there.sqlite_backups.length, 1);
      assert.equal(there.timeseries_backups.length, 0);
      const file = path.join(elsewhere, there.sqlite_backups[0].file_name);
      assert.ok(fs.existsSync(file), 'the new backup is in the new (absolute) directory');
      assert.equal(there.sqlite_backups[0].sha256, sha256File(file));
      assert.ok(!fs.existsSync(path.join(svc.dataDir, 'first', there.sqlite_backups[0].file_name)), 'not in the old directory');

      assert.equal((await putConfig({ directory: 'first' })).status, 200);
      assert.deepEqual(await listBackups(svc, admin), first, 'back in the old directory, its backups are listed again');
    } finally {
      fs.rmSync(path.dirname(path.dirname(elsewhere)), { recursive: true, force: true });
    }
  });

  test('one backup at a time: a second run while one runs is 409 (asserted when caught running)', async (t) => {
    await createCollection(svc, admin, BULK);
    // Enough data that a time-series backup takes a moment.
    await writeSeries(svc, admin, BULK, makeSeries('B', 4, 60_000, T0 + 20 * DAY, 1000, 5), 15_000);
    assert.equal((await putConfig({ directory: 'concurrent' })).status, 200);
    let caught = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      const [a, b] = await Promise.all([svc.post(`${BACKUP}/run`, { kind: 'timeseries' }, admin), svc.post(`${BACKUP}/run`, { kind: 'timeseries' }, admin)]);
      const answers = [a, b];
      const accepted = answers.filter((r) => r.status === 200);
      const refused = answers.filter((r) => r.status === 409);
      assert.equal(accepted.length + refused.length, 2, `200 or 409 only: ${a.status} ${a.text} / ${b.status} ${b.text}`);
      assert.ok(accepted.length >= 1, 'one of two runs is accepted');
      for (const r of refused) assert.match(String(r.body?.error), /already running/);
      const jobs: Job[] = [];
      for (const r of accepted) jobs.push(await waitForJob(svc, admin, r.body.job_id));
      for (const job of jobs) assert.equal(job.status, 'done', JSON.stringify(job));
      if (jobs.length === 2) {
        // Both accepted: then the first had finished before the second started.
        const [x, y] = jobs.sort((p, q) => p.started_ms - q.started_ms);
        assert.ok(x.finished_ms! <= y.started_ms, `two backups ran at once: ${JSON.stringify(jobs)}`);
      } else caught++;
      await waitNotRunning(svc, admin);
    }
    // And while a backup runs, a status read says so (when caught).
    const run = await svc.post(`${BACKUP}/run`, { kind: 'timeseries' }, admin);
    assert.equal(run.status, 200, run.text);
    const duringStatus = (await svc.get(`${BACKUP}/status`, admin)).body;
    const readAt = Date.now();
    const job = await waitForJob(svc, admin, run.body.job_id);
    if (duringStatus.running !== true) {
      assert.equal(duringStatus.running, false);
      assert.ok(job.finished_ms! <= readAt, `status said not running while job ${JSON.stringify(job)} ran`);
    }
    await waitNotRunning(svc, admin);
    t.diagnostic(`second run caught while the first ran: ${caught} of 3 attempts`);
  });

  test('retention: with keep_* = 2, after 3 runs only the 2 newest of each kind remain, with their sidecars', async () => {
    assert.equal((await putConfig({ directory: 'retention', keep_sqlite: 2, keep_timeseries: 2 })).status, 200);
    const made: Array<{ sqlite: string; timeseries: string }> = [];
    for (let i = 0; i < 3; i++) {
      await runBackup(svc, admin, 'all');
      const st = await status();
      made.push({ sqlite: st.last_sqlite.file_name, timeseries: st.last_timeseries.file_name });
    }
    assert.equal(new Set(made.map((m) => m.sqlite)).size, 3, `three distinct sqlite backups: ${JSON.stringify(made)}`);
    const list = await listBackups(svc, admin);
    assert.deepEqual(list.sqlite_backups.map((b) => b.file_name), [made[2].sqlite, made[1].sqlite], 'the 2 newest sqlite, newest first');
    assert.deepEqual(list.timeseries_backups.map((b) => b.file_name), [made[2].timeseries, made[1].timeseries], 'the 2 newest timeseries, newest first');
    const onDisk = fs.readdirSync(path.join(svc.dataDir, 'retention')).sort();
    const kept = [made[1].sqlite, made[2].sqlite, made[1].timeseries, made[2].timeseries];
    assert.deepEqual(onDisk, [...kept, ...kept.map((f) => `${f}.json`)].sort(), 'the oldest and its sidecar are gone');
    assert.equal((await putConfig({ keep_sqlite: 7, keep_timeseries: 7, directory: 'first' })).status, 200);
  });

  test('a failed backup: job failed, last_*.ok false with error, a notification (source backup, severity error) to the admin', async () => {
    const notificationsBefore = await backupErrorNotifications();
    assert.equal((await putConfig({ directory: 'doomed' })).status, 200);
    // The directory was fine when configured; now a regular file stands where it was.
    const doomed = path.join(svc.dataDir, 'doomed');
    fs.rmSync(doomed, { recursive: true, force: true });
    fs.writeFileSync(doomed, 'a file, not a directory');

    for (const kind of ['sqlite', 'timeseries'] as const) {
      const run = await svc.post(`${BACKUP}/run`, { kind }, admin);
      assert.equal(run.status, 200, run.text);
      const job = await waitForJob(svc, admin, run.body.job_id);
      assert.equal(job.status, 'failed', JSON.stringify(job));
      assert.equal(job.kind, 'backup');
      assert.equal(typeof job.error, 'string');
      assert.ok(job.error!.length > 0);
      assert.equal(typeof job.finished_ms, 'number');
      const st = await waitNotRunning(svc, admin);
      const last = kind === 'sqlite' ? st.last_sqlite : st.last_timeseries;
      assert.equal(last.ok, false, `last_${kind}: ${JSON.stringify(last)}`);
      assert.equal(typeof last.error, 'string', `last_${kind}.error: ${JSON.stringify(last)}`);
      assert.ok(last.error.length > 0);
    }
    const rows = await backupErrorNotifications();
    assert.ok(rows.length >= notificationsBefore.length + 2, `a notification per failed backup: ${JSON.stringify(rows)}`);
    const seenByUser = (await svc.get('/svcapi/notifications', readWrite)).body as Array<Record<string, unknown>>;
    assert.ok(!seenByUser.some((n) => n.source === 'backup'), 'backup failures are for admins');
    assert.equal(fs.readFileSync(doomed, 'utf8'), 'a file, not a directory', 'the file in the way is untouched');

    // Once the directory is good again, backups succeed and the status says so.
    fs.rmSync(doomed);
    assert.equal((await putConfig({ directory: 'first' })).status, 200);
    await runBackup(svc, admin, 'all');
    const st = await status();
    assert.equal(st.last_sqlite.ok, true);
    assert.equal(st.last_sqlite.error, null);
    assert.equal(st.last_timeseries.ok, true);
  });

  async function backupErrorNotifications(): Promise<Array<Record<string, unknown>>> {
    const res = await svc.get('/svcapi/notifications', admin);
    assert.equal(res.status, 200, res.text);
    return (res.body as Array<Record<string, unknown>>).filter((n) => n.source === 'backup' && n.severity === 'error');
  }
});

describe('backup config persistence', () => {
  test('PUT config survives a kill -9 and restart; it lives in the data dir, not in SQLite', async () => {
    let svc = await startService();
    try {
      let admin = await svc.adminToken();
      const put = await svc.request('PUT', `${BACKUP}/config`, { body: { enabled: false, interval_hours: 12, keep_sqlite: 3 }, token: admin });
      assert.equal(put.status, 200, put.text);
      const expected = { ...DEFAULT_CONFIG, enabled: false, interval_hours: 12, keep_sqlite: 3 };
      assert.deepEqual(put.body.config, expected);
      assert.ok(fs.existsSync(path.join(svc.dataDir, 'backup-config.json')), 'backup-config.json in the data dir');
      await svc.stop('SIGKILL');
      svc = await startService({ dataDir: svc.dataDir });
      admin = await svc.adminToken();
      assert.deepEqual((await svc.get(`${BACKUP}/config`, admin)).body, expected);
      assert.equal((await svc.get(`${BACKUP}/status`, admin)).body.next_backup_ms, null, 'still disabled after the restart');
      const enable = await svc.request('PUT', `${BACKUP}/config`, { body: { enabled: true }, token: admin });
      assert.deepEqual(enable.body.config, { ...expected, enabled: true });
      const next = (await svc.get(`${BACKUP}/status`, admin)).body.next_backup_ms;
      assert.ok(typeof next === 'number' && next > Date.now() && next <= Date.now() + 12 * HOUR, `next_backup_ms after enabling: ${next}`);
    } finally {
      await svc.dispose();
    }
  });
});

describe('compat.openMonitorAndBackup', () => {
  test('opens the backup routes without a token; the process log still needs admin', async () => {
    const svc = await startService({ config: { compat: { openMonitorAndBackup: true } } });
    try {
      for (const url of [`${BACKUP}/status`, `${BACKUP}/list`, `${BACKUP}/config`]) assert.equal((await svc.get(url)).status, 200, url);
      assert.equal((await svc.get('/svcapi/process-log')).status, 401);
      const user = await svc.newUser('rw@plant.test');
      assert.equal((await svc.get('/svcapi/process-log', user)).status, 403);
    } finally {
      await svc.dispose();
    }
  });
});
