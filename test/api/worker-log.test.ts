// The storage workers' own log lines: pino-compatible JSON on the service's stdout, and no line
// below the log.level setting. A service started at `warn` is spawned here directly, since the
// harness waits for the `listening` line, which is logged at `info`.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { collectionDir } from '../../shared/scope-path.js';
import { freePort } from '../support/ports.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, rawRequest, startService, tempDir } from './harness.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };

type Line = Record<string, unknown>;

/** Polls `check` every 50 ms until it returns true; fails with `what` after `timeoutMs`. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function parse(lines: string[]): Line[] {
  return lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Line];
    } catch {
      return [];
    }
  });
}

describe('storage worker log', () => {
  const dataDir = tempDir();
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test('at info: the worker writes pino-compatible lines with its shard', async () => {
    const svc = await startService({ dataDir });
    try {
      const admin = await svc.adminToken();
      assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).body.success, true);
      const write = await svc.post('/svcapi/write', { ...SCOPE, tags: { 'TI-101': [[Date.UTC(2026, 0, 10), 1]] } }, admin);
      assert.equal(write.body.success, true, write.text);
      await until(() => svc.logs().some((l) => l.msg === 'shard recovered'), 'the worker line "shard recovered"');
      const line = svc.logs().find((l) => l.msg === 'shard recovered')!;
      assert.equal(line.level, 30);
      assert.equal(typeof line.time, 'number');
      assert.equal(line.service, 'historian');
      assert.equal(line.shard, 0);
    } finally {
      await svc.stop();
    }
  });

  test('at warn: no worker line below warn, and its warnings still come', async () => {
    // A torn tail on the active day log: recovery cuts it and says so at warn.
    const dir = collectionDir(dataDir, SCOPE);
    const active = fs.readdirSync(dir).find((f) => f.startsWith('active-'));
    assert.ok(active, 'the first service left an active day log');
    fs.appendFileSync(path.join(dir, active), Buffer.from([1, 2, 3, 4, 5]));

    const port = await freePort();
    const child = spawn(process.execPath, [MAIN], {
      env: { ...process.env, HISTORIAN_PORT: String(port), HISTORIAN_DATA_DIR: dataDir, HISTORIAN_LOG_LEVEL: 'warn', HISTORIAN_ADMIN_EMAIL: ADMIN_EMAIL, HISTORIAN_ADMIN_PASSWORD: ADMIN_PASSWORD },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const out: string[] = [];
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const parts = (pending + chunk.toString()).split('\n');
      pending = parts.pop()!;
      out.push(...parts);
    });
    child.stderr.on('data', (chunk: Buffer) => out.push(chunk.toString()));
    try {
      await until(async () => {
        if (child.exitCode !== null) throw new Error(`the service exited: ${out.join('\n')}`);
        const res = await rawRequest({ port, method: 'GET', path: '/ingest/health', rejectUnauthorized: false }).catch(() => null);
        return res?.status === 200;
      }, 'the service at warn to answer /ingest/health');
      await until(() => parse(out).some((l) => l.event === 'torn-tail-cut'), 'the worker warning "torn-tail-cut"');
      const lines = parse(out);
      const cut = lines.find((l) => l.event === 'torn-tail-cut')!;
      assert.equal(cut.level, 40);
      assert.equal(cut.shard, 0);
      assert.deepEqual(lines.filter((l) => typeof l.level !== 'number' || l.level < 40), [], 'no line below warn');
      assert.ok(!lines.some((l) => l.msg === 'shard recovered'), 'the info line of recovery is not written');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });
});
