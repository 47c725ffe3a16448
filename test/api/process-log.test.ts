// The process log over real HTTPS (WIRE part 2 "Process log", notes/backup-decisions.md):
// backups, restores and seals register as jobs with their outcome; filters, limits, one job,
// unknown ids.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';
import { BACKUP, createCollection, makeSeries, newestBackups, restore, runBackup, scopeOf, T0, writeSeries, type Job } from './backup-support.js';

const JOB_KEYS = ['id', 'kind', 'status', 'started_ms', 'finished_ms', 'progress', 'message', 'error'].sort();
const SCOPE = scopeOf('acme', 'north', 'boiler-1', 'main');

describe('process log', () => {
  let svc: TestService;
  let admin: string;
  let firstBackup: Job;
  let secondBackup: Job;
  let restoreJobId: string;
  let sealJob: Job;
  const log = async (query = '') => {
    const res = await svc.get(`/svcapi/process-log${query}`, admin);
    assert.equal(res.status, 200, `process-log${query}: ${res.text}`);
    return res.body as { jobs: Job[]; total_count: number };
  };

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 } } });
    admin = await svc.adminToken();
    await createCollection(svc, admin, SCOPE);
    await writeSeries(svc, admin, SCOPE, makeSeries('P', 2, 200, T0, 60_000));
    firstBackup = await runBackup(svc, admin, 'sqlite');
    await new Promise((resolve) => setTimeout(resolve, 5)); // the next job starts in a later millisecond
    secondBackup = await runBackup(svc, admin, 'all');
    const { sqlite } = await newestBackups(svc, admin);
    const restored = await restore(svc, admin, 'sqlite', sqlite.file_name);
    assert.equal(restored.status, 200, restored.text);
    restoreJobId = restored.body.job_id;
    assert.equal(typeof restoreJobId, 'string');
    const before = (await log('?kind=seal')).total_count;
    const seal = await svc.post('/svcapi/seal_now', {}, admin);
    assert.equal(seal.body.success, true, seal.text);
    const seals = await log('?kind=seal');
    assert.equal(seals.total_count, before + 1, 'one seal job per seal_now');
    sealJob = seals.jobs[0];
  });
  after(() => svc.dispose());

  test('jobs of kind backup, restore and seal are listed newest first with their outcome', async () => {
    const { jobs, total_count } = await log();
    assert.equal(total_count, jobs.length, 'fewer than 100 jobs: all listed');
    for (const job of jobs) assert.deepEqual(Object.keys(job).sort(), JOB_KEYS, JSON.stringify(job));
    for (let i = 1; i < jobs.length; i++) assert.ok(jobs[i - 1].started_ms >= jobs[i].started_ms, 'newest first');
    const byId = new Map(jobs.map((j) => [j.id, j]));
    for (const [id, kind] of [[firstBackup.id, 'backup'], [secondBackup.id, 'backup'], [restoreJobId, 'restore'], [sealJob.id, 'seal']]) {
      const job = byId.get(id);
      assert.ok(job, `job ${id} (${kind}) is listed`);
      assert.equal(job.kind, kind);
      assert.equal(job.status, 'done', JSON.stringify(job));
      assert.equal(job.progress, 1, JSON.stringify(job));
      assert.equal(job.error, null);
      assert.equal(typeof job.message, 'string');
      assert.equal(typeof job.started_ms, 'number');
      assert.equal(typeof job.finished_ms, 'number');
      assert.ok(job.finished_ms! >= job.started_ms, JSON.stringify(job));
      assert.ok(job.started_ms > Date.now() - 10 * 60_000 && job.finished_ms! <= Date.now(), `times in ms: ${JSON.stringify(job)}`);
    }
    assert.equal(jobs.filter((j) => j.kind === 'backup').length, 2, 'one backup job per run, whatever the kind');
  });

  test('one job by id; an unknown id is 404', async () => {
    const res = await svc.get(`/svcapi/process-log/${encodeURIComponent(restoreJobId)}`, admin);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), JOB_KEYS);
    assert.equal(res.body.id, restoreJobId);
    assert.equal(res.body.kind, 'restore');
    const unknownId = /^\d+$/.test(restoreJobId) ? String(BigInt(restoreJobId) + 1_000_000n) : `${restoreJobId.slice(0, -1)}${restoreJobId.endsWith('0') ? '1' : '0'}`;
    for (const id of [unknownId, 'no-such-job']) {
      const missing = await svc.get(`/svcapi/process-log/${encodeURIComponent(id)}`, admin);
      assert.equal(missing.status, 404, `${id}: ${missing.text}`);
    }
  });

  test('filters: kind, status, from_ms, limit; total_count counts all matches', async () => {
    const all = await log();
    const backups = await log('?kind=backup');
    assert.deepEqual(backups.jobs.map((j) => j.id), all.jobs.filter((j) => j.kind === 'backup').map((j) => j.id));
    assert.equal(backups.total_count, 2);
    const restores = await log('?kind=restore');
    assert.deepEqual(restores.jobs.map((j) => j.id), [restoreJobId]);
    assert.deepEqual(await log('?kind=backfill'), { jobs: [], total_count: 0 });

    const done = await log('?status=done');
    assert.ok(done.jobs.length >= 4 && done.jobs.every((j) => j.status === 'done'));
    assert.deepEqual(await log('?status=failed'), { jobs: [], total_count: 0 });
    assert.deepEqual(await log('?kind=backup&status=running'), { jobs: [], total_count: 0 });

    const since = await log(`?kind=backup&from_ms=${secondBackup.started_ms}`);
    assert.deepEqual(since.jobs.map((j) => j.id), [secondBackup.id], 'from_ms leaves out the earlier backup');
    assert.equal(since.total_count, 1);
    assert.deepEqual(await log(`?from_ms=${Date.now() + 60_000}`), { jobs: [], total_count: 0 });

    const one = await log('?limit=1');
    assert.equal(one.jobs.length, 1);
    assert.equal(one.jobs[0].id, all.jobs[0].id, 'the newest');
    assert.equal(one.total_count, all.total_count, 'total_count is the count of all matches, not of the page');
    const twoBackups = await log('?kind=backup&limit=1');
    assert.deepEqual(twoBackups.jobs.map((j) => j.id), [secondBackup.id]);
    assert.equal(twoBackups.total_count, 2);
    assert.equal((await log('?limit=1000')).jobs.length, all.jobs.length);
  });

  test('bad filter values are 400 naming them', async () => {
    const cases: Array<[string, RegExp]> = [
      ['limit=0', /limit/],
      ['limit=1001', /limit/],
      ['limit=-1', /limit/],
      ['limit=abc', /limit/],
      ['limit=1.5', /limit/],
      ['kind=everything', /kind/],
      ['status=sleeping', /status/],
      ['from_ms=yesterday', /from_ms/],
    ];
    for (const [query, field] of cases) {
      const res = await svc.get(`/svcapi/process-log?${query}`, admin);
      assert.equal(res.status, 400, `${query}: ${res.status} ${res.text}`);
      assert.match(String(res.body?.error), field, `${query}: ${res.text}`);
    }
  });

  test('the backup job shows in backup status while it runs and in the log when done', async () => {
    const run = await svc.post(`${BACKUP}/run`, { kind: 'sqlite' }, admin);
    assert.equal(run.status, 200, run.text);
    const jobId = run.body.job_id as string;
    const listed = await log('?kind=backup&limit=1');
    assert.equal(listed.jobs[0].id, jobId, 'the new job is listed at once, running or done');
    assert.ok(['running', 'done'].includes(listed.jobs[0].status));
    assert.ok(listed.jobs[0].progress >= 0 && listed.jobs[0].progress <= 1);
    if (listed.jobs[0].status === 'running') assert.equal(listed.jobs[0].finished_ms, null, 'finished_ms is null while running');
  });
});

describe('process log: the notification purge', () => {
  test('each purge run is a job of kind purge', async () => {
    const svc = await startService({ config: { notifications: { retention_interval_seconds: 1 } } });
    try {
      const admin = await svc.adminToken();
      let purges: Job[] = [];
      await waitFor(async () => {
        purges = (await svc.get('/svcapi/process-log?kind=purge&status=done', admin)).body?.jobs ?? [];
        return purges.length >= 1;
      }, 'a purge job is logged', { timeoutMs: 15_000, intervalMs: 200 });
      assert.equal(purges[0].kind, 'purge');
      assert.equal(purges[0].progress, 1);
      assert.equal(purges[0].error, null);
    } finally {
      await svc.dispose();
    }
  });
});
