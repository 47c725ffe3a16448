// The `historian` command end to end: against a stopped data dir (the command opens it itself)
// and against the running service that holds it (through its HTTPS routes, with an operator token
// the service audits), with --url and an API key, and the exit codes scripts rely on.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import jwt from 'jsonwebtoken';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, tempDir, type TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';
import { historian, run, settingsFileOf } from './support.js';

/** A new, never started data dir with the test settings beside it. */
function freshDataDir(): string {
  const dataDir = path.join(tempDir('historian-cli-'), 'data');
  fs.writeFileSync(settingsFileOf(dataDir), JSON.stringify({ auth: { scryptCost: 1024 } }));
  return dataDir;
}

describe('on a stopped data dir', () => {
  const dataDir = freshDataDir();

  test('user add, list, passwd and delete; the new account logs in once the service runs', async () => {
    const added = await historian(dataDir, ['--json', 'user', 'add', 'op@plant.example', '--role', 'read-only', '--password-stdin'], { input: 'first-password-1\n' });
    assert.equal(added.code, 0, added.stderr);
    assert.equal(added.json.email, 'op@plant.example');
    assert.equal(added.json.role, 'read-only');
    assert.equal(added.json.password, undefined, 'a password given is not printed back');

    const listed = await historian(dataDir, ['--json', 'user', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(listed.json.map((u: { email: string }) => u.email).sort(), [ADMIN_EMAIL, 'op@plant.example']);

    const changed = await historian(dataDir, ['--json', 'user', 'passwd', 'OP@plant.example', '--generate']);
    assert.equal(changed.code, 0, changed.stderr);
    const generated = changed.json.password as string;
    assert.ok(generated.length >= 20);

    // Nothing is left holding the data dir: the service starts on it, and the new password works.
    assert.equal(fs.existsSync(path.join(dataDir, 'service.json')), false);
    const service = await startService({ dataDir });
    try {
      assert.equal((await service.post('/svcapi/login', { email: 'op@plant.example', password: 'first-password-1' })).status, 401);
      assert.equal((await service.post('/svcapi/login', { email: 'op@plant.example', password: generated })).status, 200);
    } finally {
      await service.stop();
    }

    const deleted = await historian(dataDir, ['user', 'delete', 'op@plant.example']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /deleted op@plant\.example/);
    const again = await historian(dataDir, ['--json', 'user', 'list']);
    assert.deepEqual(again.json.map((u: { email: string }) => u.email), [ADMIN_EMAIL]);
  });

  test('refusals of the service are exit 1 with its words in one line; usage errors are exit 2', async () => {
    const duplicate = await historian(dataDir, ['user', 'add', ADMIN_EMAIL, '--password-stdin'], { input: 'another-password-1\n' });
    assert.equal(duplicate.code, 1);
    assert.match(duplicate.stderr, /^historian: POST \/svcapi\/users: 409 /m);
    assert.doesNotMatch(duplicate.stderr, /\n\s+at /, 'no stack trace');

    const missing = await historian(dataDir, ['user', 'passwd', 'nobody@plant.example', '--generate']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no account "nobody@plant\.example"/);

    for (const args of [['frobnicate'], ['user', 'add'], ['user', 'add', 'x@plant.example', '--role', 'root'], ['--no-such-option'], ['api-key', 'create']]) {
      const usage = await historian(dataDir, args);
      assert.equal(usage.code, 2, `${args.join(' ')}: ${usage.stderr}`);
      assert.match(usage.stderr, /^historian: /, args.join(' '));
    }
    const help = await run(['user', 'add', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--password-stdin/);
  });

  test('backup now, list, download (sha256 checked) and restore', async () => {
    const made = await historian(dataDir, ['--json', 'backup', 'now', '--kind', 'all']);
    assert.equal(made.code, 0, made.stderr);
    assert.deepEqual(made.json.map((f: { kind: string }) => f.kind).sort(), ['sqlite', 'timeseries']);
    const listed = await historian(dataDir, ['--json', 'backup', 'list']);
    const sqlite = listed.json.find((f: { kind: string }) => f.kind === 'sqlite');
    assert.ok(sqlite);

    const away = tempDir('historian-cli-away-');
    const got = await historian(dataDir, ['--json', 'backup', 'download', sqlite.file_name, '-o', away]);
    assert.equal(got.code, 0, got.stderr);
    const copy = fs.readFileSync(path.join(away, sqlite.file_name));
    assert.equal(crypto.createHash('sha256').update(copy).digest('hex'), sqlite.sha256);
    assert.equal(fs.existsSync(path.join(away, `${sqlite.file_name}.partial`)), false);

    // A partial file of the first half resumes with a range; a wrong one is replaced.
    fs.writeFileSync(path.join(away, 'resumed.sqlite.partial'), copy.subarray(0, copy.length >> 1));
    const resumed = await historian(dataDir, ['--json', 'backup', 'download', sqlite.file_name, '-o', path.join(away, 'resumed.sqlite')]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(resumed.json.resumed_from, copy.length >> 1);
    assert.deepEqual(fs.readFileSync(path.join(away, 'resumed.sqlite')), copy);

    // Made after the backup, gone after restoring it.
    assert.equal((await historian(dataDir, ['user', 'add', 'late@plant.example', '--generate'])).code, 0);
    const restored = await historian(dataDir, ['backup', 'restore', sqlite.file_name]);
    assert.equal(restored.code, 0, restored.stderr);
    const users = await historian(dataDir, ['--json', 'user', 'list']);
    assert.equal(users.json.some((u: { email: string }) => u.email === 'late@plant.example'), false);

    const climbing = await historian(dataDir, ['backup', 'download', '../outside.sqlite', '-o', away]);
    assert.equal(climbing.code, 1);
    assert.match(climbing.stderr, /is not a backup's file name/);
    assert.equal(fs.existsSync(path.join(away, '..', 'outside.sqlite')), false);

    const unknown = await historian(dataDir, ['backup', 'restore', 'sqlite-19700101T000000000Z.sqlite']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no backup/);
  });

  test('backup now and restore carry secrets/ with a passphrase read from standard input', async () => {
    const made = await historian(dataDir, ['--json', 'backup', 'now', '--kind', 'sqlite', '--secrets-passphrase-stdin'], { input: 'a long enough passphrase\n' });
    assert.equal(made.code, 0, made.stderr);
    assert.equal(made.json.length, 1);
    assert.equal(made.json[0].secrets, true);
    const wrong = await historian(dataDir, ['backup', 'restore', made.json[0].file_name, '--secrets-passphrase-stdin'], { input: 'not the passphrase at all\n' });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /400 .*secrets_passphrase/);
    assert.ok(!wrong.stderr.includes('not the passphrase at all'), 'the passphrase is not echoed');
    const restored = await historian(dataDir, ['--json', 'backup', 'restore', made.json[0].file_name, '--secrets-passphrase-stdin'], { input: 'a long enough passphrase\n' });
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(restored.json.secrets_restored, true);
  });

  test('import and export through the command: a round trip, and a bad line is exit 1 naming it', async () => {
    const work = tempDir('historian-cli-data-');
    const csv = path.join(work, 'points.csv');
    fs.writeFileSync(csv, 'time,tag,value\n1764170215000,TI-101,71.25\n1764170216000,TI-101,71.5\n1764170215000,"PT,7",2\n');
    const imported = await historian(dataDir, ['--json', 'import', '--collection', 'acme/north/boiler-1/main', '--create', csv]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(imported.json.points, 3);
    assert.equal(fs.existsSync(`${csv}.import-state`), false, 'a completed import leaves no state');

    const exported = await historian(dataDir, ['export', '--collection', 'acme/north/boiler-1/main', '--format', 'csv']);
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(exported.stdout.trim().split(/\r?\n/), ['time,tag,value', '1764170215000,"PT,7",2', '1764170215000,TI-101,71.25', '1764170216000,TI-101,71.5']);
    assert.match(exported.stderr, /exported 3 points of 2 series/);

    const lp = path.join(work, 'copy.lp');
    assert.equal((await historian(dataDir, ['export', '--collection', 'acme/north/boiler-1/main', '--format', 'lp', '-o', lp])).code, 0);
    const copied = await historian(dataDir, ['--json', 'import', '--collection', 'acme/north/copy/main', '--create', lp]);
    assert.equal(copied.code, 0, copied.stderr);
    const again = await historian(dataDir, ['export', '--collection', 'acme/north/copy/main']);
    assert.equal(again.stdout, exported.stdout);

    const bad = path.join(work, 'bad.csv');
    fs.writeFileSync(bad, 'time,tag,value\n1764170217000,TI-101,abcde\n');
    const refused = await historian(dataDir, ['import', '--collection', 'acme/north/boiler-1/main', bad]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /bad\.csv: line 2: value "abcde" is not a finite number/);
    const missing = await historian(dataDir, ['import', '--collection', 'acme/north/nowhere/main', csv]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /acme\/north\/nowhere\/main/);
  });

  test('check: exit 0 on a sound data dir, changing nothing; exit 1 naming a damaged file', async () => {
    const snapshot = () => {
      const files = (fs.readdirSync(dataDir, { recursive: true }) as string[]).sort();
      return files.map((f) => {
        const full = path.join(dataDir, f);
        return fs.statSync(full).isFile() ? `${f} ${crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex')}` : f;
      });
    };
    const before = snapshot();
    const sound = await historian(dataDir, ['--json', 'check']);
    assert.equal(sound.code, 0, sound.stdout + sound.stderr);
    assert.equal(sound.json.ok, true);
    assert.ok(sound.json.checked.sqlite >= 1 && sound.json.checked.dayFiles >= 1, JSON.stringify(sound.json.checked));
    assert.deepEqual(snapshot(), before, 'check changed nothing');

    const dayLog = (fs.readdirSync(path.join(dataDir, 'ts'), { recursive: true }) as string[]).map((f) => path.join(dataDir, 'ts', f)).find((f) => fs.statSync(f).isFile() && /\d{4}-?\d{2}-?\d{2}/.test(path.basename(f)) && fs.statSync(f).size > 64);
    assert.ok(dayLog, 'the imports made a day file');
    const copy = fs.readFileSync(dayLog);
    const damaged = Buffer.from(copy);
    damaged[damaged.length >> 1] ^= 0xff;
    // A second write after the damaged one makes it damage before intact data, not a torn tail.
    fs.writeFileSync(dayLog, damaged);
    try {
      const found = await historian(dataDir, ['check']);
      assert.equal(found.code, 1, found.stdout + found.stderr);
      assert.match(found.stdout, new RegExp(`PROBLEM ts/.*${path.basename(dayLog).replace(/[.]/g, '\\.')}`));
    } finally {
      fs.writeFileSync(dayLog, copy);
    }
    const nowhere = await run(['--data-dir', path.join(dataDir, 'no-such'), 'check']);
    assert.equal(nowhere.code, 1);
    assert.match(nowhere.stderr, /no data dir at/);
  });

  test('a generated first-admin password file is removed once that password is changed', async () => {
    const dir = freshDataDir();
    const first = await historian(dir, ['--json', 'user', 'list'], { env: { HISTORIAN_ADMIN_PASSWORD: undefined } });
    assert.equal(first.code, 0, first.stderr);
    const file = path.join(dir, 'secrets', 'admin-password.txt');
    assert.ok(fs.existsSync(file), 'the first start made the password file');
    const rotated = await historian(dir, ['--json', 'user', 'passwd', ADMIN_EMAIL, '--generate'], { env: { HISTORIAN_ADMIN_PASSWORD: undefined } });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(rotated.json.removed, file);
    assert.equal(fs.existsSync(file), false);
  });
});

describe('on a running service', () => {
  let service: TestService;
  let adminToken: string;
  before(async () => {
    service = await startService();
    adminToken = await service.adminToken();
  });
  after(() => service.dispose());

  test('commands go through the running service, which writes an audit line naming the command', async () => {
    const added = await historian(service.dataDir, ['--json', 'user', 'add', 'live@plant.example', '--password-stdin'], { input: 'live-password-1\n' });
    assert.equal(added.code, 0, added.stderr);
    // The service itself answers the new account at once (no restart: it made it).
    assert.equal((await service.post('/svcapi/login', { email: 'live@plant.example', password: 'live-password-1' })).status, 200);
    await waitFor(
      () => service.logs().some((l) => String(l.msg).startsWith('audit: the historian command') && l.command === 'user add' && l.email === ADMIN_EMAIL),
      'the service logs an audit line for the command',
    );
  });

  test('api-key create for another account, used over --url; keys cannot make keys; revoke ends it', async () => {
    const made = await historian(service.dataDir, ['--json', 'api-key', 'create', '--name', 'ops', '--user', ADMIN_EMAIL, '--expires', '30d']);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.json.key, /^hk_/);
    assert.ok(made.json.expires_ms > Date.now() + 29 * 86_400_000);
    const vague = await historian(service.dataDir, ['api-key', 'create', '--name', 'vague', '--expires', 'soon']);
    assert.equal(vague.code, 1);
    assert.match(vague.stderr, /--expires "soon": give a duration like 90d/);
    const caFile = path.join(service.dataDir, 'tls', 'ca.crt');

    const remote = await run(['--url', service.baseUrl, '--ca-file', caFile, '--json', 'user', 'list'], { env: { HISTORIAN_API_KEY: made.json.key } });
    assert.equal(remote.code, 0, remote.stderr);
    assert.ok(remote.json.some((u: { email: string }) => u.email === ADMIN_EMAIL));

    const minting = await run(['--url', service.baseUrl, '--ca-file', caFile, 'api-key', 'create', '--name', 'more'], { env: { HISTORIAN_API_KEY: made.json.key } });
    assert.equal(minting.code, 1);
    assert.match(minting.stderr, /cannot make keys/);

    const listed = await historian(service.dataDir, ['--json', 'api-key', 'list']);
    assert.ok(listed.json.some((k: { id: string; prefix: string }) => k.id === made.json.id && made.json.key.startsWith(k.prefix)));
    assert.ok(!listed.stdout.includes(made.json.key), 'a list never shows a key');
    assert.equal((await historian(service.dataDir, ['api-key', 'revoke', made.json.id])).code, 0);
    const refused = await run(['--url', service.baseUrl, '--ca-file', caFile, 'user', 'list'], { env: { HISTORIAN_API_KEY: made.json.key } });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /401 invalid token/);
    assert.equal((await run(['--url', service.baseUrl, 'user', 'list'], { env: { HISTORIAN_API_KEY: undefined } })).code, 1);
  });

  test('an operator token signed for longer than ten minutes, or without the secret, is refused', async () => {
    const secret = Buffer.from(fs.readFileSync(path.join(service.dataDir, 'secrets', 'jwt.secret'), 'utf8').trim(), 'hex');
    const long = jwt.sign({ operator: { command: 'forged', pid: 1 } }, secret, { algorithm: 'HS256', subject: ADMIN_EMAIL, expiresIn: 3600 });
    assert.equal((await service.get('/svcapi/me', long)).status, 401);
    const otherSecret = jwt.sign({ operator: { command: 'forged', pid: 1 } }, crypto.randomBytes(48), { algorithm: 'HS256', subject: ADMIN_EMAIL, expiresIn: 60 });
    assert.equal((await service.get('/svcapi/me', otherSecret)).status, 401);
    const good = jwt.sign({ operator: { command: 'test', pid: 1 } }, secret, { algorithm: 'HS256', subject: ADMIN_EMAIL, expiresIn: 60 });
    const me = await service.get('/svcapi/me', good);
    assert.equal(me.status, 200);
    // It runs with the account's current role: an operator token for a read-only account stays read-only.
    const reader = jwt.sign({ operator: { command: 'test', pid: 1 } }, secret, { algorithm: 'HS256', subject: 'live@plant.example', expiresIn: 60 });
    await service.request('PUT', `/svcapi/users/${(await service.get(`/svcapi/users?filter=${encodeURIComponent(JSON.stringify({ where: { email: 'live@plant.example' } }))}`, adminToken)).body[0].id}`, { body: { role: 'read-only' }, token: adminToken });
    assert.equal((await service.post('/svcapi/users', { email: 'x@plant.example', password: 'x-password-12', role: 'admin' }, reader)).status, 403);
  });

  test('the password of a running service\'s admin rotates in one command; old tokens stop working', async () => {
    const rotated = await historian(service.dataDir, ['--json', 'user', 'passwd', ADMIN_EMAIL, '--password-stdin'], { input: 'rotated-password-2\n' });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal((await service.get('/svcapi/me', adminToken)).status, 401);
    assert.equal((await service.post('/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD })).status, 401);
    assert.equal((await service.post('/svcapi/login', { email: ADMIN_EMAIL, password: 'rotated-password-2' })).status, 200);
  });
});
