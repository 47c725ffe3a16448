// A production install, as deploy/README.md does it: `npm pack` of this checkout (the prepack
// script builds), then `npm install --omit=dev --omit=peer` of the tarball in an empty folder with
// the allowScripts of deploy/package.json. The install compiles better-sqlite3 with node-gyp
// (there is no prebuilt binary to fetch here), about a minute on two cores: one install for the
// whole file. Then the installed `historian` serves, writes and queries, under the memory settings.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, tempDir, type TestService } from '../api/harness.js';
import { envWithoutNpm, isRunning, lockHeld, MEMORY_ENV, POINTS, processInfo, queryBack, ROOT, run, servicePid, createAndWrite, withoutUndefined } from './support.js';

const npmEnv = () => withoutUndefined({ ...process.env, ...envWithoutNpm() });

describe('packed install', () => {
  let work: string;
  let app: string;
  let dataDir: string;
  let packed: string[];

  before(async () => {
    work = tempDir('historian-pack-');
    app = path.join(work, 'app');
    dataDir = path.join(work, 'data');
    fs.mkdirSync(app);
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, env: npmEnv() });
    const [info] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packed = info!.files.map((f) => f.path);
    fs.copyFileSync(path.join(ROOT, 'deploy', 'package.json'), path.join(app, 'package.json'));
    await run('npm', ['install', '--omit=dev', '--omit=peer', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, info!.filename)], { cwd: app, env: npmEnv() });
  });
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  test('the tarball holds the built program, the settings, the unit and the launcher, and no sources, tests or maps', () => {
    for (const file of ['package.json', 'README.md', 'bin/historian.js', 'scripts/build.js', 'dist/src/main.js', 'dist/workers/storage-worker.js', 'config/default.json', 'config/schema.json', 'deploy/historian.service', 'deploy/package.json', 'dist/ui-assets/index.html']) {
      assert.ok(packed.includes(file), `the tarball has ${file}`);
    }
    assert.ok(packed.some((f) => /^dist\/ui-assets\/console-.*\.js\.br$/.test(f)) && packed.some((f) => /^dist\/ui-assets\/console-.*\.js\.gz$/.test(f)), 'the console bundle with its br and gzip forms');
    assert.deepEqual(packed.filter((f) => /^(src|test|bench|ui|workers|shared|client|dist\/test|dist\/bench|dist\/ui)\//.test(f) || /\.(ts|map)$/.test(f)), []);
  });

  test('the install has no build tools, and links the `historian` command', () => {
    const modules = path.join(app, 'node_modules');
    for (const tool of ['typescript', 'esbuild', '.bin/tsc', '.bin/esbuild']) assert.ok(!fs.existsSync(path.join(modules, tool)), `${tool} is not installed`);
    assert.ok(fs.existsSync(path.join(modules, 'better-sqlite3')), 'the dependencies are');
    assert.equal(fs.realpathSync(path.join(modules, '.bin', 'historian')), path.join(modules, 'historian', 'bin', 'historian.js'));
  });

  test('`historian serve` runs the service under the memory settings (the operator\'s values win); write and query; SIGTERM stops it cleanly', async () => {
    const svc = await startService({
      dataDir,
      command: [path.join(app, 'node_modules', '.bin', 'historian'), 'serve'],
      cwd: app,
      env: { ...envWithoutNpm(), ...Object.fromEntries(Object.keys(MEMORY_ENV).map((k) => [k, undefined])), NODE_OPTIONS: undefined, MALLOC_ARENA_MAX: '4' },
    });
    try {
      const pid = servicePid(svc);
      assert.notEqual(pid, svc.child.pid, 'the launcher started the service as its own process');
      const service = processInfo(pid);
      assert.equal(service.ppid, svc.child.pid);
      assert.deepEqual(
        Object.keys(MEMORY_ENV).map((k) => service.env[k]),
        ['4', MEMORY_ENV.MALLOC_TRIM_THRESHOLD_, MEMORY_ENV.MALLOC_TOP_PAD_],
      );
      assert.ok(service.argv.includes('--max-semi-space-size=1'), service.argv.join(' '));
      assert.ok(service.argv.some((a) => a.endsWith(path.join('node_modules', 'historian', 'bin', 'historian.js'))), 'the installed launcher');

      const token = await svc.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      await createAndWrite(svc, token);
      assert.deepEqual(await queryBack(svc, token), { 'TI-101': POINTS });
      assert.equal(lockHeld(dataDir), true, 'the service holds the data dir');

      assert.deepEqual(await svc.stop('SIGTERM'), { code: 0, signal: null });
      assert.ok(svc.logs().some((l) => l.msg === 'stopped'), 'the service shut down cleanly');
      assert.equal(isRunning(pid), false, 'the service process is gone with the launcher');
      assert.equal(lockHeld(dataDir), false, 'the data dir lock is released');
      assert.equal(fs.existsSync(path.join(dataDir, 'service.pid')), false);
    } finally {
      await svc.stop('SIGKILL');
    }
  });

  test('`npm start` in the installed package starts the built code (no build, no TypeScript) on the same data', async () => {
    const svc = await startService({ dataDir, command: ['npm', 'start'], cwd: path.join(app, 'node_modules', 'historian'), env: envWithoutNpm() });
    try {
      const token = await svc.login(ADMIN_EMAIL, ADMIN_PASSWORD);
      assert.deepEqual(await queryBack(svc, token), { 'TI-101': POINTS }, 'the points written before the restart');
      assert.deepEqual(await svc.stop('SIGTERM'), { code: 0, signal: null });
      assert.equal(lockHeld(dataDir), false);
    } finally {
      await svc.stop('SIGKILL');
    }
  });
});
