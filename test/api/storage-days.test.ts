// Day files a write may open (issue 34 item 4): every distinct UTC day of a collection in a write
// is a day log created now and sealed later on the shard's one thread, so a 1 MB body of 30,000
// lines on 30,000 days made 30,001 files and held the shard (and every other tenant's writes)
// for 18 s. storage.maxDaysPerWrite refuses such a body whole, on every write path, before a
// file is made; storage.maxUnsealedDaysPerCollection bounds what writes add up to between seals.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import { encodeWriteRequest, type EncodableSeries } from '../../native-free-codecs/prom-remote.js';
import { snappyCompress } from '../../native-free-codecs/snappy.js';
import { accountHelpers, type Account } from './accounts.js';
import { shardOf } from '../../shared/shard-hash.js';
import { startService, type HttpResult, type TestService } from './harness.js';
import { send } from './influx-wire.js';

const DAY = 86_400_000;
/** 1976-01-01: 30,000 days from here end in 2058; all of them are past storage.minTimestampMs. */
const D0 = Date.UTC(1976, 0, 1);
const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const idOf = (s: Record<string, string>) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;
/** The shard (of 2) of the collection the unsealed-days test fills: the other tenant and the backfills share it. */
const SHARD = shardOf(idOf({ ...ACME, grid: 'unsealed' }), 2);
const onShard = (scope: Record<string, string>, prefix: string, skip = 0) => {
  for (let i = 0, found = 0; ; i++) if (shardOf(idOf({ ...scope, grid: `${prefix}${i}` }), 2) === SHARD && found++ === skip) return `${prefix}${i}`;
};
const OTHER = { organization: 'other', site: 'south', unit: 'press-1', grid: '' };
OTHER.grid = onShard(OTHER, 'main');
const BACKFILLS = [onShard(ACME, 'backfill-'), onShard(ACME, 'backfill-', 1)];
const scopeTags = (s: Record<string, string>) => `organization=${s.organization},site=${s.site},unit=${s.unit},grid=${s.grid}`;
const MAX_DAYS = 366; // the default of storage.maxDaysPerWrite
const MAX_UNSEALED = 1000; // the default of storage.maxUnsealedDaysPerCollection

/** Polls `check` until it holds (generous: the machine may be loaded). */
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; ) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`timed out waiting until ${what}`);
}

/** Day logs and sealed day files under the data dir. */
function dayFiles(dataDir: string): number {
  const names = fs.readdirSync(path.join(dataDir, 'ts'), { recursive: true }) as string[];
  return names.filter((name) => /^(active|late)-\d+\.log$|^sealed-\d+\.hsd$/.test(path.basename(name))).length;
}

/** `count` lines of one series, one a day from `from`, at 06:00 UTC. */
function lineBody(scope: Record<string, string>, measurement: string, from: number, count: number): string {
  return Array.from({ length: count }, (_, i) => `${measurement},${scopeTags(scope)} v=${i} ${from + i * DAY + 6 * 3_600_000}`).join('\n');
}

describe('storage.maxDaysPerWrite and storage.maxUnsealedDaysPerCollection', () => {
  let svc: TestService;
  let admin: string;
  let other: Account;
  const helpers = accountHelpers(() => svc, () => admin);

  const lines = (body: string, urlPath = '/ingest/v2/write?db=days-client&precision=ms'): Promise<HttpResult> =>
    send(svc, 'POST', urlPath, body, { headers: { authorization: `Bearer ${admin}`, 'content-type': 'text/plain' } });

  /** The points of one tag in [start, end]. */
  async function points(scope: Record<string, string>, tag: string, start = D0 - DAY, end = D0 + 40_000 * DAY): Promise<Array<[number, number]>> {
    const res = await svc.post('/svcapi/fast_query', { start_absolute: start, end_absolute: end, ...scope, metrics: [{ name: tag }] }, admin);
    assert.equal(res.status, 200, res.text);
    return res.body[tag] ?? [];
  }

  before(async () => {
    // Seals only on seal_now: the background pass cannot close day logs in the middle of a test.
    svc = await startService({ config: { storage: { shards: 2, sealGraceMs: 1000 * 365 * DAY } } });
    admin = await svc.adminToken();
    await helpers.mk('units', { name: ACME.unit, siteId: await helpers.mk('sites', { name: ACME.site, orgsId: await helpers.mk('orgs', { name: ACME.organization }) }) });
    const otherUnit = await helpers.mk('units', { name: OTHER.unit, siteId: await helpers.mk('sites', { name: OTHER.site, orgsId: await helpers.mk('orgs', { name: OTHER.organization }) }) });
    await helpers.mk('ingestconfigs', { clientId: 'days-client', organization: ACME.organization, site: ACME.site, unit: ACME.unit, grid: ACME.grid });
    for (const grid of ['main', 'json', 'limit', 'unsealed', ...BACKFILLS]) {
      assert.equal((await svc.post('/svcapi/create_collection', { ...ACME, grid }, admin)).status, 200);
    }
    assert.equal((await svc.post('/svcapi/create_collection', OTHER, admin)).status, 200);
    other = await helpers.account('other-tenant@plant.test', { units: [otherUnit] });
  });
  after(() => svc?.dispose());

  test('a 1 MB line protocol body on 30,000 days is a 400 naming the setting, and not one file or point of it is stored', async () => {
    const body = lineBody(ACME, 'spread', D0, 30_000);
    assert.ok(body.length > 1_000_000 && body.length < 10_000_000, `body of ${body.length} bytes`);
    const filesBefore = dayFiles(svc.dataDir);
    for (const urlPath of ['/ingest/v2/write?db=days-client&precision=ms', '/write?db=days-client&precision=ms', '/ingest/v2/api/v2/write?bucket=days-client&precision=ms']) {
      const res = await lines(body, urlPath);
      assert.equal(res.status, 400, `${urlPath}: ${res.text}`);
      const message = res.body.error ?? res.body.message;
      assert.match(message, /storage\.maxDaysPerWrite \(366\)/, urlPath);
      assert.match(message, /nothing of this write was stored/, urlPath);
    }
    assert.equal(dayFiles(svc.dataDir), filesBefore, 'no day file was created');
    assert.deepEqual(await points(ACME, 'spread.v'), []);
  });

  test('every other write path refuses such a body whole too: JSON, columnar, HSW1, buffered, ingest, remote write; days count per collection', async () => {
    const scope = { ...ACME, grid: 'json' };
    const timestamps = Array.from({ length: MAX_DAYS + 1 }, (_, i) => D0 + i * DAY);
    const filesBefore = dayFiles(svc.dataDir);
    const refusedJson = (res: HttpResult, what: string) => {
      // WIRE.md: a well-formed body /svcapi/write cannot accept is HTTP 200 {success: false}.
      assert.equal(res.status, 200, `${what}: ${res.text}`);
      assert.equal(res.body.success, false, `${what}: ${res.text}`);
      assert.match(res.body.error, /storage\.maxDaysPerWrite \(366\)/, what);
    };
    const tagKeyed = { ...scope, tags: { many: timestamps.map((t, i) => [t, i]) } };
    for (const route of ['/svcapi/write', '/svcapi/write_fast', '/svcapi/write_buffered']) refusedJson(await svc.post(route, tagKeyed, admin), route);
    refusedJson(await svc.post('/svcapi/write', { ...scope, timestamps, columns: { many: timestamps.map((_, i) => i) } }, admin), 'columnar');
    const hsw1 = Buffer.from(encodeBinaryBatch(scope, timestamps, [{ name: 'many', values: timestamps.map((_, i) => i) }]));
    refusedJson(await svc.request('POST', '/svcapi/write', { rawBody: hsw1, token: admin, headers: { 'content-type': 'application/octet-stream' } }), 'HSW1');
    refusedJson(await svc.post('/ingest/days-client/json', tagKeyed, admin), 'ingest');
    // Counted per collection: two tags on the same 200 days are 200 day files, but two
    // collections (reached over the tag map, on both shards) on 200 days each are 400.
    const first200 = timestamps.slice(0, 200);
    assert.equal((await svc.post('/svcapi/write', { ...scope, tags: { a: first200.map((t) => [t, 1]), b: first200.map((t) => [t, 2]) } }, admin)).body.success, true);
    assert.equal((await svc.post('/svcapi/write', { ...ACME, tags: { solo: [[D0, 1]] } }, admin)).body.success, true);
    refusedJson(await svc.post('/svcapi/write', { tags: { a: first200.map((t) => [t, 3]), solo: first200.map((t) => [t, 3]) } }, admin), 'two collections over the tag map');
    const byMap = await svc.post('/svcapi/write', { tags: { a: timestamps.slice(200, 300).map((t) => [t, 4]), solo: timestamps.slice(0, 100).map((t) => [t, 4]) } }, admin);
    assert.deepEqual(byMap.body, { success: true, points: 200 }, byMap.text);
    const series: EncodableSeries[] = [
      { labels: [['__name__', 'wide'], ...Object.entries(scope)] as Array<[string, string]>, timestamps, values: timestamps.map((_, i) => i) },
    ];
    const remote = await svc.request('POST', '/api/v1/write?db=days-client', {
      rawBody: Buffer.from(snappyCompress(encodeWriteRequest(series))),
      token: admin,
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', 'x-prometheus-remote-write-version': '0.1.0' },
    });
    assert.equal(remote.status, 400, remote.text);
    assert.match(remote.body.error, /storage\.maxDaysPerWrite \(366\)/);
    assert.equal(dayFiles(svc.dataDir), filesBefore + 200 + 1 + 100 + 99, 'only the accepted writes made day files');
    assert.deepEqual((await points(scope, 'a')).map(([, v]) => v), [...Array(200).fill(1), ...Array(100).fill(4)]);
    assert.deepEqual(await points(scope, 'many'), []);
    assert.deepEqual(await points(scope, 'wide'), []);
  });

  test('a body on exactly storage.maxDaysPerWrite days is stored, every point of it', async () => {
    const scope = { ...ACME, grid: 'limit' };
    const filesBefore = dayFiles(svc.dataDir);
    const res = await lines(lineBody(scope, 'edge', D0, MAX_DAYS));
    assert.equal(res.status, 204, res.text);
    assert.equal(dayFiles(svc.dataDir), filesBefore + MAX_DAYS);
    const got = await points(scope, 'edge.v');
    assert.equal(got.length, MAX_DAYS);
    assert.deepEqual(got[MAX_DAYS - 1], [D0 + (MAX_DAYS - 1) * DAY + 6 * 3_600_000, MAX_DAYS - 1]);
  });

  test('another tenant writes while backfills of the largest allowed size run on the same shards', async () => {
    const backfills = BACKFILLS.flatMap((grid, g) =>
      [0, 1].map((k) => lines(lineBody({ ...ACME, grid }, `bf${k}`, D0 + (g * 2 + k) * MAX_DAYS * DAY, MAX_DAYS))),
    );
    const tenant: Array<Promise<HttpResult>> = [];
    const now = Date.now();
    for (let i = 0; i < 5; i++) tenant.push(svc.post('/svcapi/write', { ...OTHER, tags: { live: [[now + i, i]] } }, other.token));
    for (const res of await Promise.all(tenant)) assert.deepEqual(res.body, { success: true, points: 1 }, res.text);
    for (const res of await Promise.all(backfills)) assert.equal(res.status, 204, res.text);
    const live = await svc.post('/svcapi/fast_query', { start_absolute: now - 1000, end_absolute: now + 1000, ...OTHER, metrics: [{ name: 'live' }] }, other.token);
    assert.equal(live.body.live.length, 5, live.text);
    for (const grid of BACKFILLS) {
      for (const k of [0, 1]) assert.equal((await points({ ...ACME, grid }, `bf${k}.v`)).length, MAX_DAYS, `${grid} bf${k}`);
    }
  });

  test('buffered writes count the days their pending points will open: the flush is never the one past storage.maxUnsealedDaysPerCollection', async () => {
    const scope = { ...ACME, grid: 'buffered' };
    assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
    const write = (k: number) => svc.post('/svcapi/write_buffered', { ...scope, tags: { b: Array.from({ length: MAX_DAYS }, (_, i) => [D0 + (k * MAX_DAYS + i) * DAY, k]) } }, admin);
    assert.equal((await write(0)).body.success, true);
    assert.equal((await write(1)).body.success, true);
    const third = await write(2);
    assert.equal(third.body.success, false, third.text);
    assert.match(third.body.error, /storage\.maxUnsealedDaysPerCollection \(1000\)/);
    await waitFor(async () => (await points(scope, 'b')).length === 2 * MAX_DAYS, 'the buffer is flushed');
    assert.equal((await write(2)).body.success, false, 'still refused once flushed');
  });

  test('storage.maxUnsealedDaysPerCollection refuses a write that would open too many day logs, until a seal closes them', async () => {
    const scope = { ...ACME, grid: 'unsealed' };
    const write = (k: number) => lines(lineBody(scope, 'u', D0 + k * MAX_DAYS * DAY, MAX_DAYS));
    assert.equal((await write(0)).status, 204);
    assert.equal((await write(1)).status, 204);
    const filesBefore = dayFiles(svc.dataDir);
    const refused = await write(2);
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.error, new RegExp(`would have ${3 * MAX_DAYS} unsealed day files, more than storage\\.maxUnsealedDaysPerCollection \\(${MAX_UNSEALED}\\)`));
    assert.match(refused.body.error, /seal_now/);
    assert.equal(dayFiles(svc.dataDir), filesBefore);
    // JSON: the same refusal, in the shape of /svcapi/write.
    const jsonBody = { ...scope, tags: { j: Array.from({ length: MAX_DAYS }, (_, i) => [D0 + (2 * MAX_DAYS + i) * DAY, 1]) } };
    const json = await svc.post('/svcapi/write', jsonBody, admin);
    assert.equal(json.body.success, false, json.text);
    assert.match(json.body.error, /storage\.maxUnsealedDaysPerCollection/);
    // Days whose logs are open already open nothing: a full write on them is taken.
    const reopen = await svc.post('/svcapi/write', { ...scope, tags: { j: Array.from({ length: MAX_DAYS }, (_, i) => [D0 + i * DAY, 1]) } }, admin);
    assert.equal(reopen.body.success, true, reopen.text);
    assert.equal(dayFiles(svc.dataDir), filesBefore);
    assert.equal((await points(scope, 'u.v', D0 + 2 * MAX_DAYS * DAY, D0 + 4 * MAX_DAYS * DAY)).length, 0);
    // A write another node accepted is applied whatever this node has left unsealed: nodes seal
    // at their own times, and the same writes must land on each.
    const shadow = await svc.request('POST', '/svcapi/shadow_write', { token: admin, rawBody: JSON.stringify(jsonBody), headers: { 'content-type': 'application/json', 'x-historian-epoch': '0', 'x-historian-seq': '1' } });
    assert.deepEqual(shadow.body, { success: true, points: MAX_DAYS }, shadow.text);
    // Sealing closes the day logs: the same write now goes through. The seal of these 1098 days
    // goes in slices: another tenant's write sent meanwhile is answered before it ends (sealed
    // in one piece, 1000 days held the shard for 17 s).
    const order: string[] = [];
    const sealing = svc.post('/svcapi/seal_now', { collection: Object.values(scope).join('/') }, admin).then((res) => (order.push('seal'), res));
    await waitFor(async () => ((await svc.get('/svcapi/write_buffer_stats', admin)).body.shards as Array<{ sealedDays: number }>).some((s) => s.sealedDays > 0), 'the seal began');
    const live = await svc.post('/svcapi/write', { ...OTHER, tags: { during: [[Date.now(), 1]] } }, other.token);
    order.push('write');
    assert.deepEqual(live.body, { success: true, points: 1 }, live.text);
    const sealed = await sealing;
    assert.equal(sealed.status, 200, sealed.text);
    assert.equal(sealed.body.sealedDays, 3 * MAX_DAYS, sealed.text);
    assert.deepEqual(order, ['write', 'seal']);
    assert.equal((await write(2)).status, 204);
    assert.equal((await points(scope, 'u.v')).length, 3 * MAX_DAYS);
  });
});

describe('a collection at storage.maxUnsealedDaysPerCollection has its due days sealed at once', () => {
  let svc: TestService;
  let admin: string;
  const scope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'kick' };
  const write = (k: number) => svc.post('/svcapi/write', { ...scope, tags: { t: Array.from({ length: 5 }, (_, i) => [D0 + (k * 5 + i) * DAY, i]) } }, admin);

  before(async () => {
    // The background pass runs every 60 s at this grace: a retry that succeeds within 20 s was let in by the seal the refusal asked for.
    svc = await startService({ config: { storage: { maxDaysPerWrite: 5, maxUnsealedDaysPerCollection: 5 } } });
    admin = await svc.adminToken();
    const mk = async (url: string, body: object) => (await svc.post(`/svcapi/${url}`, body, admin)).body.id as string;
    await mk('units', { name: scope.unit, siteId: await mk('sites', { name: scope.site, orgsId: await mk('orgs', { name: scope.organization }) }) });
    assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
  });
  after(() => svc?.dispose());

  test('the refused write goes through on a retry soon after, without seal_now', async () => {
    assert.deepEqual((await write(0)).body, { success: true, points: 5 });
    const refused = await write(1);
    assert.equal(refused.body.success, false, refused.text);
    assert.match(refused.body.error, /would have 10 unsealed day files, more than storage\.maxUnsealedDaysPerCollection \(5\)/);
    let last: HttpResult | null = null;
    await waitFor(async () => (last = await write(1)).body.success === true, 'a retry is taken', 20_000);
    assert.deepEqual(last!.body, { success: true, points: 5 });
    assert.equal(dayFiles(svc.dataDir), 10, 'five sealed days and five day logs');
  });
});
