// Secrets with a sqlite backup (issue 32 "Backups you can take away", README "Backup and
// restore"): service A saves a PI Web API connection and an MQTT collector, each with a password,
// and takes a sqlite backup with a passphrase; the file is downloaded and dropped into the backup
// folder of a fresh service B (its own connections.key). Restored there with the passphrase, B
// uses both passwords at once (the PI simulator answers only the right Basic credentials; the
// broker lets the collector in only with its password) and after a restart; without it, the rows
// come back and the secrets answer a clear error; a wrong passphrase changes nothing. The
// passphrase is in no log line and neither it nor a secret is in the backup file in clear.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Mosquitto, mosquittoSkip } from '../support/mosquitto.js';
import { PiSimulator, plantModel } from '../support/pi-simulator.js';
import { waitFor } from '../support/wait-for.js';
import { BACKUP, backupDirOf, listBackups, runBackup, waitForJob, waitNotRunning, type FileInfo } from './backup-support.js';
import { PI_PASSWORD, PI_TOKEN, PI_USER, assertError, browseOk, connector } from './connector-support.js';
import { startService, type HttpResult, type TestService } from './harness.js';

const PASSPHRASE = `take-away ${crypto.randomBytes(6).toString('hex')} pass`;
const BROKER_USER = 'historian';
const BROKER_PASSWORD = `broker-${crypto.randomBytes(6).toString('hex')}-Wq4`;
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler', grid: 'main' };

describe('secrets travel with a sqlite backup, sealed with a passphrase', { skip: mosquittoSkip }, () => {
  let sim: PiSimulator;
  let broker: Mosquitto;
  let a: TestService;
  let b: TestService;
  let adminA: string;
  let adminB: string;
  let connectionId: string;
  let collectorId: string;
  let certA: string;
  let carried: FileInfo;
  /** The backup's bytes as downloaded from A. */
  let backupBytes: Buffer;
  const restarts: TestService[] = [];

  const key = (svc: TestService) => fs.readFileSync(path.join(svc.dataDir, 'secrets', 'connections.key'));
  const certificate = async (svc: TestService, token: string) => {
    const res = await svc.get('/svcapi/collectors/opcua/certificate', token);
    assert.equal(res.status, 200, res.text);
    return res.text;
  };
  const restoreSqlite = (svc: TestService, token: string, body: Record<string, unknown>) => svc.post(`${BACKUP}/restore/sqlite`, body, token);
  const collectorStatus = async (svc: TestService, token: string) => {
    const res = await svc.get(`/svcapi/collectors/${collectorId}/status`, token);
    assert.equal(res.status, 200, res.text);
    return res.body as { state: string; error?: string };
  };
  const untilCollector = async (svc: TestService, token: string, ok: (s: { state: string; error?: string }) => boolean, what: string) => {
    let last: unknown;
    await waitFor(async () => ok((last = await collectorStatus(svc, token)) as { state: string }), `${what} (last status ${JSON.stringify(last)})`, { timeoutMs: 20_000, intervalMs: 100 });
  };
  const orgNames = async (svc: TestService, token: string) => ((await svc.get('/svcapi/orgs', token)).body as Array<{ name: string }>).map((o) => o.name).sort();

  before(async () => {
    sim = await PiSimulator.start({ auth: { basic: { username: PI_USER, password: PI_PASSWORD }, bearer: { token: PI_TOKEN } } }, plantModel().spec);
    broker = await Mosquitto.start({ users: { [BROKER_USER]: BROKER_PASSWORD } });
    a = await startService();
    adminA = await a.adminToken();
    b = await startService();
    adminB = await b.adminToken();
  });
  after(async () => {
    for (const svc of [a, b, ...restarts]) await svc?.dispose();
    await broker?.dispose();
    await sim?.stop();
  });

  test('A: a saved connection and a collector with passwords, in use; a sqlite backup with the passphrase carries the secrets', async () => {
    const saved = await a.post('/svcapi/connections', { name: 'plant-pi', base_url: sim.baseUrl, auth: 'basic', username: PI_USER, password: PI_PASSWORD, ca_pem: sim.caPem }, adminA);
    assert.equal(saved.status, 200, saved.text);
    connectionId = String(saved.body.id);
    await browseOk(a, adminA, 'list_asset_servers', { connection_id: connectionId });
    const collector = await a.post('/svcapi/collectors', {
      name: 'line 1', kind: 'mqtt', enabled: true, ...SCOPE,
      connection: { url: broker.url, username: BROKER_USER, password: BROKER_PASSWORD, client_id: 'hist-secrets-test' },
      items: [{ topic: 'plant/line1/+/temp', format: 'value' }],
    }, adminA);
    assert.equal(collector.status, 200, collector.text);
    collectorId = collector.body.id;
    await untilCollector(a, adminA, (s) => s.state === 'connected', 'the collector logs in to the broker on A');
    certA = await certificate(a, adminA);

    const job = await runBackup(a, adminA, 'sqlite');
    const plain = (await listBackups(a, adminA)).sqlite_backups[0]!;
    assert.equal(plain.secrets, undefined, `a backup without a passphrase carries no secrets: ${JSON.stringify(plain)}`);
    assert.doesNotMatch(job.message ?? '', /secrets/);

    const run = await a.post(`${BACKUP}/run`, { kind: 'sqlite', secrets_passphrase: PASSPHRASE }, adminA);
    assert.equal(run.status, 200, run.text);
    assert.equal((await waitForJob(a, adminA, run.body.job_id)).status, 'done');
    await waitNotRunning(a, adminA);
    carried = (await listBackups(a, adminA)).sqlite_backups[0]!;
    assert.notEqual(carried.file_name, plain.file_name);
    assert.equal(carried.secrets, true, JSON.stringify(carried));

    const download = await a.request('GET', `${BACKUP}/download/${carried.file_name}`, { token: adminA });
    assert.equal(download.status, 200, download.text);
    backupBytes = download.bytes;
    assert.equal(crypto.createHash('sha256').update(backupBytes).digest('hex'), carried.sha256);
    // Nothing in clear: not the passphrase, the key (as stored, hex, or its raw bytes), a password, the certificate's private key.
    const keyText = key(a).toString('utf8').trim();
    const privateKey = fs.readFileSync(path.join(a.dataDir, 'secrets', 'opcua', 'application-key.pem'), 'utf8');
    const body = privateKey.split('\n').find((line) => line.length > 40)!;
    for (const [what, needle] of [
      ['the passphrase', Buffer.from(PASSPHRASE)], ['the connections key', Buffer.from(keyText)], ['the key bytes', Buffer.from(keyText, 'hex')],
      ['the key in base64', Buffer.from(Buffer.from(keyText).toString('base64').slice(0, 40))],
      ['the PI password', Buffer.from(PI_PASSWORD)], ['the broker password', Buffer.from(BROKER_PASSWORD)], ['the OPC UA private key', Buffer.from(body)],
    ] as const) {
      assert.equal(backupBytes.includes(needle), false, `the backup file holds ${what} in clear`);
    }
  });

  test('bad passphrases and kinds are 400 naming the field; nothing starts', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ kind: 'sqlite', secrets_passphrase: 'short-11chr' }, /secrets_passphrase/],
      [{ kind: 'all', secrets_passphrase: 1234567890123 }, /secrets_passphrase/],
      [{ kind: 'sqlite', secrets_passphrase: '' }, /secrets_passphrase/],
      [{ kind: 'timeseries', secrets_passphrase: PASSPHRASE }, /secrets_passphrase.*sqlite/],
    ];
    const before = (await a.get('/svcapi/process-log?kind=backup&limit=1000', adminA)).body.total_count;
    for (const [body, pattern] of cases) {
      const res = await a.post(`${BACKUP}/run`, body, adminA);
      assertError(res, 400, pattern, `run ${JSON.stringify({ ...body, secrets_passphrase: typeof body.secrets_passphrase })}`);
      assert.ok(!res.text.includes(PASSPHRASE), 'the answer does not repeat the passphrase');
    }
    assert.equal((await a.get('/svcapi/process-log?kind=backup&limit=1000', adminA)).body.total_count, before, 'no backup job was started');
    assertError(await a.post(`${BACKUP}/restore/sqlite`, { file_name: carried.file_name, secrets_passphrase: 'too-short' }, adminA), 400, /secrets_passphrase/, 'restore with a short passphrase');
    assertError(await a.post(`${BACKUP}/restore/timeseries`, { file_name: 'timeseries-20260101T000000000Z.tar', secrets_passphrase: PASSPHRASE }, adminA), 400, /secrets_passphrase/, 'a timeseries restore with a passphrase');
  });

  test('B: the file taken away is listed with its secrets; a wrong passphrase is 400 and B is as it was', async () => {
    const made = await b.post('/svcapi/orgs', { name: 'b-only' }, adminB);
    assert.equal(made.status, 200, made.text);
    const keyB = key(b);
    assert.notDeepEqual(keyB, key(a), 'B has its own key');
    const certB = await certificate(b, adminB);
    assert.notEqual(certB, certA, 'B has its own OPC UA certificate');

    const dir = await backupDirOf(b, adminB);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, carried.file_name), backupBytes);
    const listed = (await listBackups(b, adminB)).sqlite_backups.find((f) => f.file_name === carried.file_name);
    assert.ok(listed, 'B lists the file it was given');
    assert.equal(listed.secrets, true, `B sees from the file itself that it carries secrets: ${JSON.stringify(listed)}`);
    assert.equal(listed.sha256, carried.sha256);

    const wrong = await restoreSqlite(b, adminB, { file_name: carried.file_name, secrets_passphrase: `${PASSPHRASE}x` });
    assertError(wrong, 400, /secrets_passphrase/, 'a wrong passphrase');
    assert.deepEqual(await orgNames(b, adminB), ['b-only'], 'the metadata store is as it was');
    assert.deepEqual(key(b), keyB, 'the key is as it was');
    assert.equal(await certificate(b, adminB), certB, 'the certificate is as it was');
    assert.deepEqual(fs.readdirSync(path.join(b.dataDir, 'secrets')).filter((n) => n.includes('restore')), [], 'nothing staged is left');
  });

  test('B: restored without the passphrase, the rows are back and their secrets answer a clear error', async () => {
    const res = await restoreSqlite(b, adminB, { file_name: carried.file_name });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.secrets_restored, false, res.text);
    assert.match(res.body.message, /secrets_passphrase/, 'the answer says the secrets were left out');
    adminB = await b.adminToken();
    assert.deepEqual(await orgNames(b, adminB), [], 'the rows are A\'s');
    const from = sim.requests.length;
    assertError(await connector(b, adminB, 'list_asset_servers', { connection_id: connectionId }), 400, /password cannot be decrypted/, 'the saved connection without its key');
    assert.equal(sim.requests.length, from, 'nothing was sent upstream');
    await untilCollector(b, adminB, (s) => s.state === 'failed' && /connections\.key/.test(s.error ?? ''), 'the restored collector says its secrets do not open');
    assert.notEqual(await certificate(b, adminB), certA);
  });

  test('B: restored with the passphrase, both passwords work at once, and after a restart', async () => {
    const res = await restoreSqlite(b, adminB, { file_name: carried.file_name, secrets_passphrase: PASSPHRASE });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.secrets_restored, true, res.text);
    assert.equal(res.body.restored.kind, 'sqlite');
    adminB = await b.adminToken();

    assert.deepEqual(key(b), key(a), 'B has A\'s connections key');
    for (const file of ['connections.key', 'opcua/application-cert.pem', 'opcua/application-key.pem']) {
      assert.equal(fs.statSync(path.join(b.dataDir, 'secrets', file)).mode & 0o777, 0o600, `${file} is private`);
    }
    assert.equal(await certificate(b, adminB), certA, 'B serves A\'s OPC UA certificate, which the PLCs trust');
    const from = sim.requests.length;
    await browseOk(b, adminB, 'list_asset_servers', { connection_id: connectionId });
    const sent = sim.requests.slice(from);
    assert.ok(sent.length > 0);
    for (const r of sent) assert.equal(r.headers.authorization, `Basic ${Buffer.from(`${PI_USER}:${PI_PASSWORD}`).toString('base64')}`, 'the upstream got the saved password');
    await untilCollector(b, adminB, (s) => s.state === 'connected', 'the restored collector logs in to the broker with its password');
    assert.deepEqual(fs.readdirSync(path.join(b.dataDir, 'secrets')).filter((n) => n.includes('restore')), [], 'nothing staged or kept is left');

    // The files are what the next start reads.
    await b.stop();
    const again = await startService({ dataDir: b.dataDir });
    restarts.push(again);
    const admin = await again.adminToken();
    await browseOk(again, admin, 'list_asset_servers', { connection_id: connectionId });
    await untilCollector(again, admin, (s) => s.state === 'connected', 'the collector logs in after a restart');
  });

  test('a passphrase for a backup without secrets is 400 naming it; the passphrase is in no log line', async () => {
    const live = restarts.at(-1)!;
    const admin = await live.adminToken();
    await runBackup(live, admin, 'sqlite');
    const plain = (await listBackups(live, admin)).sqlite_backups[0]!;
    assert.equal(plain.secrets, undefined);
    const res: HttpResult = await restoreSqlite(live, admin, { file_name: plain.file_name, secrets_passphrase: PASSPHRASE });
    assertError(res, 400, /secrets_passphrase.*no secrets/, 'a passphrase for a backup without secrets');

    for (const [svc, token] of [[a, adminA], [live, admin]] as const) {
      const jobs = await svc.get('/svcapi/process-log?limit=1000', token);
      assert.equal(jobs.status, 200, jobs.text);
      if (svc === live) assert.ok(jobs.body.jobs.some((j: { message: string }) => /its secrets restored/.test(j.message ?? '')), `B's process log says the secrets were restored: ${jobs.text.slice(0, 600)}`);
      assert.ok(!jobs.text.includes(PASSPHRASE), 'no process-log job holds the passphrase');
    }
    const lines = [...a.logLines, ...b.logLines, ...live.logLines];
    assert.ok(lines.some((l) => l.includes('secrets_restored')), 'the restores are logged');
    for (const line of lines) {
      for (const secret of [PASSPHRASE, PI_PASSWORD, BROKER_PASSWORD]) assert.ok(!line.includes(secret), `a log line holds a secret: ${line.slice(0, 300)}`);
    }
  });
});
