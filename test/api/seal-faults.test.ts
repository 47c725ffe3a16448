// kill -9 of the whole service at every step of a seal (issue 34, "faults"). The worker is stopped
// at a named step by the test-only HISTORIAN_DEBUG_PAUSE_AT (workers/debug-pause.ts) instead of
// by timing: the temporary sealed file part-written, complete but not renamed, renamed with the
// day logs still there, the day logs removed before the folder is fsynced. After a restart every
// acknowledged point is there exactly once with its last written value, a second seal gives the
// same answers, and `historian check` finds no problem in the data dir.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, tempDir, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 10);
const CONFIG = { storage: { shards: 1 } };
const CLI = path.resolve('dist', 'src', 'cli', 'main.js');
const PHASES = ['seal-writing', 'seal-before-rename', 'seal-after-rename', 'seal-logs-removed'] as const;
const TAGS = ['TI-1', 'TI-2', 'PI-3', 'NEW-4'];

type Expected = Map<string, Map<number, number>>;

const enc = encodeURIComponent;
const queryUrl = (tags: string[], start: number, end: number) =>
  `/svcapi/fast_query?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=${start}&end=${end}${Object.entries(SCOPE).map(([k, v]) => `&${k}=${enc(v)}`).join('')}`;

/** Writes through /svcapi/write (answered once fsynced) and records what was acknowledged. */
async function write(svc: TestService, token: string, expected: Expected, tags: Record<string, Array<[number, number]>>): Promise<void> {
  const res = await svc.post('/svcapi/write', { ...SCOPE, tags }, token);
  assert.equal(res.body?.success, true, res.text);
  for (const [tag, points] of Object.entries(tags)) {
    const byTs = expected.get(tag) ?? new Map<number, number>();
    for (const [ts, value] of points) byTs.set(ts, value); // last write wins
    expected.set(tag, byTs);
  }
}

const series = (start: number, n: number, step: number, value: (i: number) => number): Array<[number, number]> =>
  Array.from({ length: n }, (_, i) => [start + i * step, value(i)]);

/** Every tag's points over the three days, exactly as acknowledged (each timestamp once, sorted). */
async function assertAllThere(svc: TestService, token: string, expected: Expected, when: string): Promise<void> {
  const res = await svc.get(queryUrl(TAGS, T0, T0 + 3 * DAY - 1), token);
  assert.equal(res.status, 200, res.text);
  for (const tag of TAGS) {
    const want = [...(expected.get(tag) ?? new Map()).entries()].sort((a, b) => a[0] - b[0]);
    const got = (res.body[tag] ?? []) as Array<[number, number]>;
    assert.equal(got.length, want.length, `${when}: ${tag} has ${got.length} points, ${want.length} were acknowledged`);
    assert.deepEqual(got, want, `${when}: ${tag}`);
  }
}

describe('kill -9 at every step of a seal', () => {
  /** The data dir as a kill -9 left it: two sealed days, a late log of one, an active log of a third (a new tag too); each case seals a copy. */
  let pristine = '';
  const expected: Expected = new Map();
  const copies: string[] = [];

  before(async () => {
    const first = await startService({ config: CONFIG });
    pristine = first.dataDir;
    try {
      const token = await first.adminToken();
      assert.equal((await first.post('/svcapi/create_collection', SCOPE, token)).body.success, true);
      for (let d = 0; d < 2; d++) {
        await write(first, token, expected, {
          'TI-1': series(T0 + d * DAY, 1500, 50_000, (i) => 50 + Math.sin(i / 30) * 10),
          'TI-2': series(T0 + d * DAY + 7_000, 800, 90_000, (i) => i * 0.25),
          'PI-3': series(T0 + d * DAY, 300, 250_000, (i) => -1 - i),
        });
      }
      const sealed = await first.post('/svcapi/seal_now', {}, token);
      assert.ok(sealed.body.sealedDays >= 2, sealed.text);
      await write(first, token, expected, { 'TI-1': [[T0 + 50_000, 999], [T0 + 50_001, 1000]], 'PI-3': [[T0 + DAY + 1, 7]] });
      await write(first, token, expected, {
        'TI-1': series(T0 + 2 * DAY, 600, 100_000, (i) => i % 17),
        'NEW-4': series(T0 + 2 * DAY, 10, 1000, (i) => i),
      });
    } finally {
      assert.deepEqual(await first.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    }
  });

  after(() => {
    for (const dir of [pristine, ...copies]) {
      if (!dir) continue;
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(path.join(dir, '..', `${path.basename(dir)}.config.json`), { force: true });
    }
  });

  for (const phase of PHASES) {
    test(`${phase}: after a restart every acknowledged point is there once, a new seal agrees, historian check is clean`, { timeout: 120_000 }, async (t) => {
      const dataDir = tempDir('historian-seal-fault-');
      copies.push(dataDir);
      fs.cpSync(pristine, dataDir, { recursive: true });

      // 1. The seal of those logs, stopped at the phase, then kill -9.
      const paused = await startService({ dataDir, config: CONFIG, env: { HISTORIAN_DEBUG_PAUSE_AT: phase } });
      t.after(() => paused.stop('SIGKILL'));
      let token = await paused.adminToken();
      await assertAllThere(paused, token, expected, 'before the seal');
      const sealing = paused.post('/svcapi/seal_now', {}, token).catch(() => null); // never answers: killed below
      await waitFor(() => paused.logs().some((l) => l.event === 'debug-pause' && l.phase === phase), `the seal reaches ${phase}`, { timeoutMs: 30_000 });
      assert.deepEqual(await paused.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
      await sealing;

      // 2. A restart finds every acknowledged point once; sealing again changes no answer.
      const again = await startService({ dataDir, config: CONFIG });
      t.after(() => again.stop('SIGKILL'));
      token = await again.adminToken();
      await assertAllThere(again, token, expected, `after kill -9 at ${phase}`);
      const resealed = await again.post('/svcapi/seal_now', {}, token);
      assert.equal(resealed.body.success, true, resealed.text);
      await assertAllThere(again, token, expected, `after kill -9 at ${phase} and a new seal`);
      assert.deepEqual(await again.stop(), { code: 0, signal: null });

      // 3. historian check on the stopped data dir.
      const check = spawnSync(process.execPath, [CLI, 'check', '--data-dir', dataDir], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(check.status, 0, `historian check after kill -9 at ${phase}:\n${check.stdout}\n${check.stderr}`);
      assert.ok(!fs.readdirSync(path.join(dataDir, 'ts', 'acme', 'north', 'boiler-1', 'main')).some((f) => f.startsWith('active-')), 'every day log was sealed');
    });
  }
});
