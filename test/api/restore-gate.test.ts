// What waits for a time-series restore (issue 34 item 12; WIRE part 2 "Backup": "writes to the
// affected store answer 503 while it runs"). A large restore takes minutes; only changes to the
// time series, which the restore would swap away, answer 503 with Retry-After. Logins, tokens,
// metadata reads and writes and health go on, in both of its long phases: while the backup is
// checked and unpacked (queries still read the old store), and while the store is swapped.
// debug.restoreStepDelayMs holds the restore in each phase long enough to ask.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type HttpResult, type TestService } from './harness.js';
import {
  BACKUP, DAY, T0, enc, createCollection, makeSeries, newestBackups, readSeries, restore, runBackup, scopeOf, waitForRunningJob, writeSeries, type Job, type Series,
} from './backup-support.js';

const PASSWORD = 'operator-password-1';
const OPERATOR = 'operator@plant.test';

describe('a time-series restore holds up only changes to the time series', () => {
  let svc: TestService;
  let admin: string;
  const S1 = scopeOf('acme', 'north', 'gate', 'one');
  const S2 = scopeOf('acme', 'north', 'gate', 'two');
  let unitId: string;

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2, flushIntervalMs: 200 }, debug: { restoreStepDelayMs: 5000 } } });
    admin = await svc.adminToken();
    await svc.newUser(OPERATOR, PASSWORD);
    await createCollection(svc, admin, S1);
    await writeSeries(svc, admin, S1, makeSeries('G', 2, 200, T0, 60_000, 3));
    // The unit row S1 is bound to by names: renaming it moves the collection's folders.
    const made = async (kind: string, body: object) => {
      const res = await svc.post(`/svcapi/${kind}`, body, admin);
      assert.equal(res.status, 200, `${kind}: ${res.text}`);
      return res.body.id as string;
    };
    const org = await made('orgs', { name: S1.organization });
    const site = await made('sites', { name: S1.site, orgsId: org });
    unitId = await made('units', { name: S1.unit, siteId: site });
  });
  after(() => svc?.dispose());

  test('during the restore: login 200 (and its token works), metadata 200, health 200; time-series writes and catalog changes 503 with Retry-After; afterwards everything works', async (t) => {
    await runBackup(svc, admin, 'timeseries');
    const { timeseries } = await newestBackups(svc, admin, ['timeseries']);
    const inBackup: Series = await readSeries(svc, admin, S1, ['G-0', 'G-1']);
    await writeSeries(svc, admin, S1, makeSeries('G', 1, 5, T0 + 5 * DAY, 1000, 4));

    const restoring = restore(svc, admin, 'timeseries', timeseries.file_name);
    const job = await waitForRunningJob(svc, admin, 'restore');
    const phases: string[] = [];
    const logins: Array<[string, HttpResult]> = [];
    let label = 0;
    // Each phase the restore is caught in, once: `verified` (unpacked, not yet swapped), then `swapping`.
    for (const phase of ['verified', 'swapping']) {
      const caught = await waitForPhase(svc, admin, job.id, phase);
      if (!caught) continue;
      const login = await svc.post('/svcapi/login', { email: OPERATOR, password: PASSWORD });
      logins.push([phase, login]);
      const answers: Array<[string, HttpResult, number]> = [
        ['POST /svcapi/login', login, 200],
        ['GET /svcapi/me with that token', await svc.get('/svcapi/me', login.body?.token), 200],
        ['POST /svcapi/labels', await svc.post('/svcapi/labels', { name: `during-${phase}-${++label}` }, admin), 200],
        ['GET /svcapi/labels', await svc.get('/svcapi/labels', admin), 200],
        ['GET /svcapi/health', await svc.get('/svcapi/health'), 200],
        ['POST /svcapi/write', await svc.post('/svcapi/write', { ...S1, tags: { 'G-0': [[T0 + 6 * DAY, 1]] } }, admin), 503],
        ['POST /svcapi/write_fast', await svc.post('/svcapi/write_fast', { ...S1, tags: { 'G-0': [[T0 + 6 * DAY, 1]] } }, admin), 503],
        ['POST /svcapi/create_collection', await svc.post('/svcapi/create_collection', S2, admin), 503],
        ['PUT /svcapi/units/{id} renaming the unit of a collection', await svc.request('PUT', `/svcapi/units/${unitId}`, { body: { name: 'gate-renamed' }, token: admin }), 503],
      ];
      if (phase === 'verified') {
        const query = `/svcapi/fast_query?tags=G-0&start=${T0}&end=${T0 + 10 * DAY}&${Object.entries(S1).map(([k, v]) => `${k}=${enc(v)}`).join('&')}`;
        answers.push(['GET /svcapi/fast_query (the old store, until the swap)', await svc.get(query, admin), 200]);
      }
      const stillRunning = (await svc.get(`/svcapi/process-log/${enc(job.id)}`, admin)).body.status === 'running';
      // A login can only be refused by a restore: asserted whatever the timing.
      assert.equal(login.status, 200, `login while the restore is ${phase}: ${login.status} ${login.text}`);
      if (!stillRunning) {
        t.diagnostic(`the restore ended during the checks of its ${phase} phase: the 503s not asserted`);
        continue;
      }
      phases.push(phase);
      for (const [what, res, want] of answers) {
        assert.equal(res.status, want, `${what} while the restore is ${phase}: ${res.status} ${res.text.slice(0, 300)}`);
        if (want === 503) {
          assert.equal(res.headers['retry-after'], '5', `${what}: the 503 carries Retry-After`);
          assert.match(String(res.body?.error), /time-series restore is running/, what);
        }
      }
    }
    assert.ok(logins.length > 0, 'the restore was caught running at least once');
    t.diagnostic(`checked while the restore was: ${phases.join(', ') || 'never (too fast)'}`);

    const done = await restoring;
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.job_id, job.id);
    assert.deepEqual(await readSeries(svc, admin, S1, ['G-0', 'G-1']), inBackup, 'the backup is restored; nothing written during it');
    const labels = ((await svc.get('/svcapi/labels', admin)).body as Array<{ name: string }>).map((l) => l.name);
    for (let i = 1; i <= label; i++) assert.ok(labels.some((n) => n.endsWith(`-${i}`)), `the label made during the restore is kept: ${labels}`);
    assert.equal((await svc.post('/svcapi/write', { ...S1, tags: { 'G-0': [[T0 + 6 * DAY, 2]] } }, admin)).body?.success, true, 'writes work after the restore');
    assert.equal((await svc.get(`/svcapi/units/${unitId}`, admin)).body.name, S1.unit, 'the refused rename changed nothing');
    await createCollection(svc, admin, S2);
    assert.equal((await svc.post('/svcapi/login', { email: OPERATOR, password: PASSWORD })).status, 200);
    assert.equal((await svc.get(`${BACKUP}/status`, admin)).body.running, false);
  });
});

describe('a metadata restore', () => {
  let svc: TestService;
  let admin: string;

  before(async () => {
    svc = await startService({ config: { debug: { restoreStepDelayMs: 5000 } } });
    admin = await svc.adminToken();
    await svc.newUser(OPERATOR, PASSWORD);
  });
  after(() => svc?.dispose());

  test('during it: login 200 (it only reads accounts); metadata changes 503 with Retry-After; afterwards both work', async (t) => {
    await runBackup(svc, admin, 'sqlite');
    const { sqlite } = await newestBackups(svc, admin, ['sqlite']);
    const restoring = restore(svc, admin, 'sqlite', sqlite.file_name);
    const job = await waitForRunningJob(svc, admin, 'restore', 'swapping');
    const login = await svc.post('/svcapi/login', { email: OPERATOR, password: PASSWORD });
    const label = await svc.post('/svcapi/labels', { name: 'during-sqlite-restore' }, admin);
    const stillRunning = (await svc.get(`/svcapi/process-log/${enc(job.id)}`, admin)).body.status === 'running';
    assert.equal(login.status, 200, `login during a metadata restore: ${login.status} ${login.text}`);
    if (stillRunning) {
      assert.equal(label.status, 503, `a metadata change during a metadata restore: ${label.text}`);
      assert.equal(label.headers['retry-after'], '5');
      assert.match(String(label.body?.error), /restore of the metadata store is running/);
    } else t.diagnostic('the restore ended during the checks: the 503 not asserted');
    const done = await restoring;
    assert.equal(done.status, 200, done.text);
    assert.equal((await svc.post('/svcapi/labels', { name: 'after-sqlite-restore' }, admin)).status, 200);
    assert.equal((await svc.post('/svcapi/login', { email: OPERATOR, password: PASSWORD })).status, 200);
  });
});

/** Waits until the job shows `message` (true), or has gone past it or finished (false). */
async function waitForPhase(svc: TestService, admin: string, jobId: string, message: string): Promise<boolean> {
  const order = ['verifying', 'unpacking', 'verifying checksums', 'verified', 'swapping'];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const job = (await svc.get(`/svcapi/process-log/${enc(jobId)}`, admin)).body as Job;
    if (job.status !== 'running') return false;
    if (job.message === message) return true;
    const at = order.indexOf(String(job.message));
    if (at > order.indexOf(message)) return false;
    if (Date.now() > deadline) assert.fail(`the restore did not reach '${message}' within 60 s: ${JSON.stringify(job)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
