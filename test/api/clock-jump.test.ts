// The service clock jumping across a UTC day boundary during ingest (issue 34, "faults"), with
// the debug clock (debug.clockRoute: POST /svcapi/_debug/advance_clock, src/clock.ts) standing in
// for a wall clock stepped forward. Line protocol lines without a timestamp take the service's
// time (WIRE.md "a line with no timestamp takes the server time"), so the lines before the jump
// land in the old day and the lines after it in the new one, as do points written with their own
// timestamps on either side of midnight; seal_now then seals the old day (it is before the
// service's today) and keeps the new one open; every acknowledged point is there exactly once,
// also after a kill -9 and restart.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startService, type TestService } from './harness.js';

const DAY = 86_400_000;
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'default' };
const CLIENT = 'clock-client';
const CONFIG = { debug: { clockRoute: true }, storage: { shards: 1 } };

const enc = encodeURIComponent;
const dayOf = (ms: number) => Math.floor(ms / DAY);

async function read(svc: TestService, token: string, tags: string[], start: number, end: number): Promise<Record<string, Array<[number, number]>>> {
  const res = await svc.get(`/svcapi/fast_query?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=${start}&end=${end}${Object.entries(SCOPE).map(([k, v]) => `&${k}=${enc(v)}`).join('')}`, token);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

function lines(svc: TestService, token: string, body: string) {
  return svc.request('POST', `/write?db=${enc(CLIENT)}&precision=ms`, { token, rawBody: body, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

test('a clock jump across midnight during ingest: points land in the days of their times, the old day seals, nothing is lost', { timeout: 120_000 }, async (t) => {
  const svc = await startService({ config: CONFIG });
  t.after(() => svc.dispose());
  let admin = await svc.adminToken();
  const client = await svc.post('/svcapi/ingestconfigs', { name: 'clock', clientId: CLIENT, organization: SCOPE.organization, site: SCOPE.site, unit: SCOPE.unit }, admin);
  assert.equal(client.status, 200, client.text);

  // Before the jump: lines without a timestamp (the service's now) and points with their own times up to midnight.
  const wallBefore = Date.now();
  const oldDay = dayOf(wallBefore);
  const midnight = (oldDay + 1) * DAY;
  for (let i = 0; i < 5; i++) assert.equal((await lines(svc, admin, `flow v=${i}`)).status, 204);
  const edge = await svc.post('/svcapi/write', { ...SCOPE, tags: { EDGE: [[midnight - 1, 1], [midnight - 1000, 2]] } }, admin);
  assert.equal(edge.body?.success, true, edge.text);

  // The jump: past midnight (one minute after it), while nothing else changes.
  await svc.advanceAuthClock(Math.ceil((midnight + 60_000 - Date.now()) / 1000), admin);
  admin = await svc.adminToken(); // a token issued at the new time

  for (let i = 5; i < 10; i++) assert.equal((await lines(svc, admin, `flow v=${i}`)).status, 204);
  const after = await svc.post('/svcapi/write', { ...SCOPE, tags: { EDGE: [[midnight, 3], [midnight + 1000, 4]] } }, admin);
  assert.equal(after.body?.success, true, after.text);

  const check = async (svcNow: TestService, token: string, when: string) => {
    const got = await read(svcNow, token, ['flow.v', 'EDGE'], oldDay * DAY, midnight + 2 * DAY);
    const flow = got['flow.v'] ?? [];
    assert.deepEqual(flow.map(([, v]) => v).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], `${when}: every line once: ${JSON.stringify(flow)}`);
    for (const [ts, v] of flow) {
      assert.equal(dayOf(ts), v < 5 ? oldDay : oldDay + 1, `${when}: the line v=${v} (${new Date(ts).toISOString()}) is in the day of the service clock when it was written`);
    }
    assert.deepEqual(got.EDGE, [[midnight - 1000, 2], [midnight - 1, 1], [midnight, 3], [midnight + 1000, 4]], `${when}: the points around midnight`);
  };
  await check(svc, admin, 'after the jump');

  // seal_now seals what is before the service's today: the old day, not the new one.
  const sealed = await svc.post('/svcapi/seal_now', {}, admin);
  assert.equal(sealed.body?.success, true, sealed.text);
  const dir = path.join(svc.dataDir, 'ts', ...Object.values(SCOPE).map(enc));
  const files = fs.readdirSync(dir);
  const stamp = (day: number) => new Date(day * DAY).toISOString().slice(0, 10).replace(/-/g, '');
  assert.ok(files.includes(`sealed-${stamp(oldDay)}.hsd`), `the old day is sealed: ${files.join(', ')}`);
  assert.ok(!files.includes(`sealed-${stamp(oldDay + 1)}.hsd`), `the service's today is not sealed: ${files.join(', ')}`);
  await check(svc, admin, 'after seal_now');

  // And after kill -9 (the service clock starts at the wall clock again: the data stays where it is).
  assert.deepEqual(await svc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
  const again = await startService({ dataDir: svc.dataDir, config: CONFIG });
  t.after(() => again.stop('SIGKILL'));
  await check(again, await again.adminToken(), 'after kill -9 and a restart');
});
