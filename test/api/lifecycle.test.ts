// Start and stop as an operator meets them (issue 13): one process per data dir and per port,
// one-line reasons when a start cannot go on, --help and --version without side effects,
// npm start passing signals on, a closed stdout never holding up shutdown, a subsystem that
// fails to start answering 501 while the rest serves, health that tells the truth, and request
// logs an operator can follow.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { ADMIN_EMAIL, startService, tempDir } from './harness.js';
import { waitFor } from '../support/wait-for.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const VERSION = (JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

/** Runs main.js to its end with these settings; returns exit status and output. */
function runMain(env: Record<string, string>, args: string[] = []) {
  const run = spawnSync(process.execPath, [MAIN, ...args], { env: { ...process.env, HISTORIAN_PORT: '0', ...env }, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A start that must fail: exit 1 and exactly one line on stderr, no stack trace. */
function assertOneLineFailure(run: { status: number | null; stderr: string }, pattern: RegExp): void {
  assert.equal(run.status, 1, run.stderr);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line, got:\n${run.stderr}`);
  assert.match(lines[0], /^historian: /);
  assert.match(lines[0], pattern);
  assert.doesNotMatch(run.stderr, /\n\s+at /);
}


function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('one instance per data dir and per port', () => {
  test('a second start on the same data dir stops with a line naming the holder; on the same port, naming the port', async () => {
    const svc = await startService();
    try {
      const sameDir = runMain({ HISTORIAN_DATA_DIR: svc.dataDir });
      assertOneLineFailure(sameDir, new RegExp(`in use by process ${svc.child.pid}`));
      const otherDir = tempDir();
      try {
        const samePort = runMain({ HISTORIAN_DATA_DIR: otherDir, HISTORIAN_PORT: String(svc.port) });
        assertOneLineFailure(samePort, new RegExp(`cannot listen on \\*:${svc.port}: the port is in use`));
        // What could fail was checked before anything was made: no CA, admin password, store or lock left behind.
        assert.deepEqual(fs.readdirSync(otherDir), []);
        const newDir = path.join(otherDir, 'never-made');
        assertOneLineFailure(runMain({ HISTORIAN_DATA_DIR: newDir, HISTORIAN_PORT: String(svc.port) }), /the port is in use/);
        assert.equal(fs.existsSync(newDir), false, 'a data dir that did not exist is not made');
      } finally {
        fs.rmSync(otherDir, { recursive: true, force: true });
      }
      assert.equal((await svc.get('/ingest/health')).status, 200, 'the first one is untouched');
    } finally {
      await svc.dispose();
    }
  });

  test('the lock goes with its process, kill -9 included', async () => {
    const svc = await startService();
    await svc.stop('SIGKILL');
    const again = await startService({ dataDir: svc.dataDir });
    try {
      assert.equal((await again.get('/ingest/health')).status, 200);
    } finally {
      await again.dispose();
    }
  });
});

describe('starting', () => {
  test('--version and --help print and exit without touching the data dir', () => {
    const dataDir = path.join(tempDir(), 'never-made');
    const version = runMain({ HISTORIAN_DATA_DIR: dataDir }, ['--version']);
    assert.equal(version.status, 0);
    assert.equal(version.stdout, `historian ${VERSION}\n`);
    const help = runMain({ HISTORIAN_DATA_DIR: dataDir }, ['--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^Usage: /);
    assert.match(help.stdout, /--version/);
    assert.equal(fs.existsSync(dataDir), false);
    assertOneLineFailure(runMain({ HISTORIAN_DATA_DIR: dataDir }, ['--frobnicate']), /unknown argument/);
  });

  test('a data dir that is a file, or cannot be written, and half-given TLS settings stop the start in one line', () => {
    const dir = tempDir();
    try {
      const file = path.join(dir, 'a-file');
      fs.writeFileSync(file, 'x');
      assertOneLineFailure(runMain({ HISTORIAN_DATA_DIR: file }), /data dir .*a-file is a file, not a folder/);
      // /proc/self is a folder nobody can create files in, root included.
      assertOneLineFailure(runMain({ HISTORIAN_DATA_DIR: '/proc/self' }), /cannot write in the data dir \/proc\/self/);
      const config = path.join(dir, 'half-tls.json');
      fs.writeFileSync(config, JSON.stringify({ tls: { certFile: path.join(dir, 'server.crt') } }));
      assertOneLineFailure(runMain({ HISTORIAN_DATA_DIR: path.join(dir, 'data'), HISTORIAN_CONFIG: config }), /tls\.certFile is set but tls\.keyFile is not/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the start banner gives version, pid, address and data dir', async () => {
    const svc = await startService();
    try {
      const banner = svc.logs().find((l) => l.msg === 'listening')!;
      assert.equal(banner.version, VERSION);
      assert.equal(banner.pid, svc.child.pid);
      assert.equal(banner.address, `https://0.0.0.0:${svc.port}`);
      assert.equal(banner.dataDir, svc.dataDir);
    } finally {
      await svc.dispose();
    }
  });
});

describe('stopping', () => {
  test('SIGTERM to npm start reaches the server, which stops cleanly', async () => {
    const dataDir = tempDir();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: REPO,
      env: { ...process.env, HISTORIAN_PORT: '0', HISTORIAN_DATA_DIR: dataDir, HISTORIAN_ADMIN_PASSWORD: 'npm-start-password' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: what npm does with signals stays between npm and its children.
      detached: true,
    });
    let out = '';
    npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    // Both pipes end once every process writing them (npm and the server it started) has gone: then all they wrote has been read.
    const drained = Promise.all([npm.stdout!, npm.stderr!].map((pipe) => new Promise((resolve) => pipe.once('close', resolve))));
    try {
      const listening = () => out.split('\n').find((l) => l.includes('"msg":"listening"'));
      await waitFor(() => listening() !== undefined, 'the listening line', { timeoutMs: 60_000 });
      const banner = listening()!;
      const serverPid = (JSON.parse(banner) as { pid: number }).pid;
      assert.ok(alive(serverPid));
      npm.kill('SIGTERM');
      await exited;
      await waitFor(() => !alive(serverPid), 'the server process to end', { timeoutMs: 20_000 });
      await drained;
      assert.match(out, /"msg":"stopped"/, 'it shut down cleanly, not killed');
    } finally {
      npm.kill('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a closed stdout pipe does not hold up shutdown', async () => {
    const svc = await startService();
    try {
      svc.child.stdout!.destroy(); // the reader of the logs goes away
      await svc.get('/ingest/health'); // something to log into the closed pipe
      const { code } = await svc.stop('SIGTERM');
      assert.equal(code, 0);
    } finally {
      await svc.dispose();
    }
  });
});

describe('a subsystem that fails to start', () => {
  test('keeps its routes mounted answering 501 naming it and the cause; the rest serves; health says so', async () => {
    const dataDir = tempDir();
    // The time-series folder is a file: the storage workers cannot recover their shards.
    fs.writeFileSync(path.join(dataDir, 'ts'), 'not a folder');
    const svc = await startService({ dataDir });
    try {
      const admin = await svc.adminToken();
      for (const [method, url] of [['GET', '/svcapi/collection'], ['POST', '/svcapi/write'], ['GET', '/svcapi/fast_query?tags=A&start=0&end=1']]) {
        const res = await svc.request(method, url, { token: admin, ...(method === 'POST' ? { body: { tags: {} } } : {}) });
        assert.equal(res.status, 501, `${method} ${url}: ${res.text}`);
        assert.match(res.body.error, /^the storage subsystem is not available: it failed to start: /);
      }
      assert.equal((await svc.post('/svcapi/labels', { name: 'still works' }, admin)).status, 200);
      assert.equal((await svc.get('/ingest/health')).status, 200);
      const health = await svc.get('/svcapi/health');
      assert.equal(health.status, 503);
      assert.equal(health.body.status, 'degraded');
      assert.equal(health.body.acceptsWrites, false);
      assert.equal(health.body.subsystems.storage.status, 'failed');
      assert.match(health.body.subsystems.storage.reason, /^failed to start: /);
      assert.equal(health.body.subsystems.metadata.status, 'ok');
      // The monitor evaluates what the storage workers hold: it cannot start either, and says why.
      assert.equal(health.body.subsystems.monitor.status, 'failed');
      for (const url of ['/svcapi/monitor/status', '/svcapi/monitor/rule', '/svcapi/monitor/alarm/events']) {
        const res = await svc.get(url, admin);
        assert.equal(res.status, 501, `${url}: ${res.text}`);
        assert.match(res.body.error, /^the monitor subsystem is not available: it failed to start: the storage subsystem is not running/);
      }
      // Renaming an org would have to move folders the failed storage owns: it waits.
      const org = (await svc.post('/svcapi/orgs', { name: 'acme' }, admin)).body.id;
      assert.equal((await svc.request('PUT', `/svcapi/orgs/${org}`, { body: { name: 'acme-2' }, token: admin })).status, 503);
    } finally {
      await svc.dispose();
    }
  });
});

describe('health and request logs', () => {
  test('health reports every subsystem ok, and 503 with the reason while the disk guard refuses writes', async () => {
    const ok = await startService();
    try {
      const res = await ok.get('/svcapi/health');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {
        status: 'ok',
        acceptsWrites: true,
        subsystems: { service: { status: 'ok' }, auth: { status: 'ok' }, metadata: { status: 'ok' }, 'process-log': { status: 'ok' }, notifications: { status: 'ok' }, storage: { status: 'ok' }, ingest: { status: 'ok' }, influx: { status: 'ok' }, prometheus: { status: 'ok' }, backup: { status: 'ok' }, connector: { status: 'ok' }, collectors: { status: 'ok' }, live: { status: 'ok' }, blobs: { status: 'ok' }, cluster: { status: 'ok' }, monitor: { status: 'ok' }, proxies: { status: 'ok', configured: { 'vector.qdrantUrl': false, 'adk.baseUrl': false } }, metrics: { status: 'ok' }, console: { status: 'ok' } },
      });
    } finally {
      await ok.dispose();
    }
    const full = await startService({ config: { storage: { minFreeBytes: Number.MAX_SAFE_INTEGER } } });
    try {
      const res = await full.get('/svcapi/health');
      assert.equal(res.status, 503);
      assert.equal(res.body.subsystems.storage.status, 'degraded');
      assert.match(res.body.subsystems.storage.reason, /storage\.minFreeBytes/);
      assert.deepEqual((await full.get('/ingest/health')).body, { status: 'ok' });
    } finally {
      await full.dispose();
    }
  });

  test('request lines carry client address, user and a request id that the reply names; failed logins are audited at warn', async () => {
    const svc = await startService();
    try {
      const admin = await svc.adminToken();
      const res = await svc.get('/svcapi/me', admin);
      const id = res.headers['x-request-id'] as string;
      assert.match(id, /^[0-9a-f]{8}-[0-9a-z]+$/);
      const requestLine = () => svc.logs().find((l) => l.msg === 'request' && l.requestId === id);
      await waitFor(() => requestLine() !== undefined, 'the request line');
      const line = requestLine()!;
      assert.equal(line.user, ADMIN_EMAIL);
      assert.equal(line.remote, '127.0.0.1');
      assert.equal(line.path, '/svcapi/me');
      assert.equal((await svc.post('/svcapi/login', { email: ADMIN_EMAIL, password: 'wrong-password' })).status, 401);
      const auditLine = () => svc.logs().find((l) => l.msg === 'audit: login failed');
      await waitFor(() => auditLine() !== undefined, 'the audit line');
      const audit = auditLine()!;
      assert.equal(audit.level, 40);
      assert.equal(audit.email, ADMIN_EMAIL);
      assert.ok(!JSON.stringify(svc.logs()).includes('wrong-password'));
    } finally {
      await svc.dispose();
    }
  });
});
