// The monitor's management routes (issue 15), checked from the contract alone: SPEC "Monitoring"
// and the monitor shapes, WIRE part 2 "Access to monitor and backup routes" and "Monitor", and the
// lead's decisions for issue 15. Rules (CRUD, validation naming the field, list filters), the
// monitor switch, monitored collections and their tick rates, status, and who may do what:
// no token 401, read-only 403 on changes, another tenant sees nothing of a collection outside
// its grant. Evaluation, events and notifications are in monitor-alarms.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';
import { M, Plant, collectionIdOf, enc, nextTsRun, q, type Scope } from './monitor-support.js';

const ACME: Scope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const ACME_AUX: Scope = { ...ACME, grid: 'aux' };
const ACME_SPARE: Scope = { ...ACME, grid: 'spare' };
const ACME_OFF: Scope = { ...ACME, grid: 'off' };
const ACME_FRESH: Scope = { ...ACME, grid: 'fresh' };
/** Touched by no test but the one about rules making a collection monitored. */
const ACME_NEW: Scope = { ...ACME, grid: 'new' };
const EVIL: Scope = { organization: 'evil', site: 's2', unit: 'u2', grid: 'main' };
const DEFAULT_TICK_MS = 1000;

describe('monitor routes', () => {
  let svc: TestService;
  let admin: string;
  let plant: Plant;
  let acmeUnit: string;
  let evilUnit: string;
  let rw: { email: string; token: string };
  let ro: { email: string; token: string };
  let evil: { email: string; token: string };
  const call = (token: string | undefined, method: string, url: string, body?: unknown) => plant.call(token, method, url, body);
  const cid = collectionIdOf(ACME);

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    plant = new Plant(() => svc, () => admin);
    for (const s of [ACME, ACME_AUX, ACME_SPARE, ACME_OFF, ACME_FRESH, ACME_NEW, EVIL]) await plant.collection(s);
    acmeUnit = await plant.unitOf(ACME);
    evilUnit = await plant.unitOf(EVIL);
    rw = await plant.account('rw@acme.test', 'read-write', [acmeUnit]);
    ro = await plant.account('ro@acme.test', 'read-only', [acmeUnit]);
    evil = await plant.account('mallory@evil.test', 'read-write', [evilUnit]);
  });
  after(() => svc.dispose());

  test('rule CRUD: POST 201 {id}, GET with the defaults, PUT {ok}, listed, DELETE {ok}, then 404', async () => {
    const created = await call(admin, 'POST', `${M}/rule`, { collection_id: cid, tag: 'TI-101', limHi: 500 });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(Object.keys(created.body), ['id']);
    assert.match(created.body.id, /^r-/);
    const id = created.body.id as string;

    const got = await call(admin, 'GET', `${M}/rule/${enc(id)}`);
    assert.equal(got.status, 200, got.text);
    const rule = got.body;
    assert.equal(rule.id, id);
    assert.equal(rule.collection_id, cid);
    assert.equal(rule.tag, 'TI-101');
    assert.equal(rule.limHi, 500);
    assert.equal(rule.limLo ?? null, null, 'limLo not given');
    assert.equal(rule.deadband, 0);
    assert.equal(rule.on_delay_ms, 0);
    assert.equal(rule.off_delay_ms, 0);
    assert.equal(rule.stale_after_ms, null);
    assert.equal(rule.severity, 'warn');
    assert.equal(rule.enabled, true);
    assert.equal(rule.notify, true);
    assert.equal(rule.name, '');
    assert.equal(rule.tag_index, null, 'the tag was never written to the collection');
    assert.equal(rule.tagmetaId ?? null, null, 'not made from a tagmeta row');

    const full = {
      collection_id: cid, tag: 'TI-101', name: 'Drum temperature', enabled: false, limHi: 520, limLo: 20, deadband: 2,
      on_delay_ms: 5000, off_delay_ms: 1000, stale_after_ms: 60_000, severity: 'critical', notify: false,
    };
    const put = await call(admin, 'PUT', `${M}/rule/${enc(id)}`, full);
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body, { ok: true });
    const updated = (await call(admin, 'GET', `${M}/rule/${enc(id)}`)).body;
    for (const [key, value] of Object.entries(full)) assert.deepEqual(updated[key], value, key);
    assert.equal(updated.id, id);

    const list = await call(admin, 'GET', `${M}/rule`);
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    assert.deepEqual(list.body.find((r: any) => r.id === id), updated, 'the list carries the same rule as GET /rule/{id}');

    const del = await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body, { ok: true });
    assert.equal((await call(admin, 'GET', `${M}/rule/${enc(id)}`)).status, 404);
    assert.equal((await call(admin, 'DELETE', `${M}/rule/${enc(id)}`)).status, 404);
    assert.equal((await call(admin, 'PUT', `${M}/rule/${enc(id)}`, full)).status, 404);
    assert.ok(!(await call(admin, 'GET', `${M}/rule`)).body.some((r: any) => r.id === id));
  });

  test('an invalid rule is 400 naming the field; nothing is created', async () => {
    const base = { collection_id: cid, tag: 'VAL-1', limHi: 100 };
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['collection_id missing', { tag: 'VAL-1', limHi: 100 }, /collection_id/],
      ['collection_id not a string', { ...base, collection_id: 42 }, /collection_id/],
      ['collection_id unknown', { ...base, collection_id: 'acme/north/boiler-1/none' }, /collection_id/],
      ['tag missing', { collection_id: cid, limHi: 100 }, /\btag\b/],
      ['tag empty', { ...base, tag: '' }, /\btag\b/],
      ['no limit at all', { collection_id: cid, tag: 'VAL-1' }, /limHi|limLo|stale_after_ms/],
      ['limHi not a number', { ...base, limHi: 'high' }, /limHi/],
      ['limLo not a number', { ...base, limLo: '5' }, /limLo/],
      ['limLo above limHi', { ...base, limHi: 10, limLo: 20 }, /limLo|limHi/],
      ['limLo equal to limHi', { ...base, limHi: 10, limLo: 10 }, /limLo|limHi/],
      ['deadband negative', { ...base, deadband: -1 }, /deadband/],
      ['on_delay_ms negative', { ...base, on_delay_ms: -5 }, /on_delay_ms/],
      ['on_delay_ms fractional', { ...base, on_delay_ms: 1.5 }, /on_delay_ms/],
      ['off_delay_ms negative', { ...base, off_delay_ms: -1 }, /off_delay_ms/],
      ['stale_after_ms zero', { ...base, stale_after_ms: 0 }, /stale_after_ms/],
      ['stale_after_ms text', { ...base, stale_after_ms: 'soon' }, /stale_after_ms/],
      ['severity unknown', { ...base, severity: 'fatal' }, /severity/],
      ['enabled not a boolean', { ...base, enabled: 'yes' }, /enabled/],
      ['notify not a boolean', { ...base, notify: 1 }, /notify/],
      ['name not a string', { ...base, name: 5 }, /name/],
      ['unknown field', { ...base, colour: 'red' }, /colour/],
      ['id given', { ...base, id: 'r-mine' }, /\bid\b/],
      ['tag_index given', { ...base, tag_index: 3 }, /tag_index/],
      ['tagmetaId given', { ...base, tagmetaId: '12' }, /tagmetaId/],
    ];
    const before = (await call(admin, 'GET', `${M}/rule`)).body.length;
    for (const [what, body, pattern] of cases) {
      const res = await call(admin, 'POST', `${M}/rule`, body);
      assert.equal(res.status, 400, `${what}: ${res.status} ${res.text}`);
      assert.match(res.body.error, pattern, what);
    }
    const notJson = await svc.request('POST', `${M}/rule`, { rawBody: '{"collection_id": ', token: admin, headers: { 'content-type': 'application/json' } });
    assert.equal(notJson.status, 400);
    assert.equal((await call(admin, 'GET', `${M}/rule`)).body.length, before, 'no invalid rule was stored');

    // PUT checks field values the same way and leaves the rule as it was. Left out: fields missing
    // (whether PUT replaces or merges is not the contract's to say), fields the service sets
    // (whether a PUT may echo them back), and the collection (moving a rule is another matter).
    const id = await plant.rule(base);
    const skipped = new Set(['collection_id missing', 'tag missing', 'no limit at all', 'id given', 'tag_index given', 'tagmetaId given', 'collection_id unknown', 'collection_id not a string']);
    for (const [what, body, pattern] of cases.filter(([what]) => !skipped.has(what))) {
      const sent = { ...base, ...body };
      const res = await call(admin, 'PUT', `${M}/rule/${enc(id)}`, sent);
      assert.equal(res.status, 400, `PUT ${what}: ${res.status} ${res.text}`);
      assert.match(res.body.error, pattern, `PUT ${what}`);
    }
    const still = (await call(admin, 'GET', `${M}/rule/${enc(id)}`)).body;
    assert.equal(still.limHi, 100);
    assert.equal(still.tag, 'VAL-1');
    assert.equal(still.severity, 'warn');
    await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
  });

  test('tag_index is null until the tag exists in the collection, then its index in the tag dictionary', async () => {
    const fresh = collectionIdOf(ACME_FRESH);
    await call(admin, 'PUT', `${M}/collections/${enc(fresh)}/enable`, { tick_rate_ms: 100 });
    const id = await plant.rule({ collection_id: fresh, tag: 'IDX-2', limLo: 0 });
    assert.equal((await call(admin, 'GET', `${M}/rule/${enc(id)}`)).body.tag_index, null);
    // The monitor has evaluated the rule while its tag did not exist yet; the tag comes later.
    await waitFor(async () => (await plant.snapshotTag(fresh, 'IDX-2')) !== undefined, 'a tick has evaluated the new rule', { timeoutMs: 15_000, intervalMs: 50 });
    assert.equal((await call(admin, 'GET', `${M}/rule/${enc(id)}`)).body.tag_index, null);
    const ts = nextTsRun(2);
    await plant.write(ACME_FRESH, { 'IDX-1': [[ts, 1]], 'IDX-2': [[ts + 1, 2]] });
    await plant.untilSeen(fresh, 'IDX-2', ts + 1);
    let rule: any;
    try {
      await waitFor(async () => {
        rule = (await call(admin, 'GET', `${M}/rule/${enc(id)}`)).body;
        return rule.tag_index !== null;
      }, 'the rule learns its tag_index once the tag is written', { timeoutMs: 5_000, intervalMs: 50 });
      assert.ok(Number.isInteger(rule.tag_index) && rule.tag_index >= 0, `tag_index ${rule.tag_index}`);
      assert.equal((await plant.snapshotTag(fresh, 'IDX-2')).tag_index, rule.tag_index, 'the snapshot shows the same index');
    } finally {
      await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
      await call(admin, 'PUT', `${M}/collections/${enc(fresh)}/disable`);
    }
  });

  test('rule list filters: collection_id, tag_index, enabled; bad filter values are 400 naming them', async () => {
    const aux = collectionIdOf(ACME_AUX);
    const ts = nextTsRun(2);
    await plant.write(ACME_AUX, { 'LF-1': [[ts, 1]], 'LF-2': [[ts + 1, 1]] });
    const a = await plant.rule({ collection_id: aux, tag: 'LF-1', limHi: 10 });
    const b = await plant.rule({ collection_id: aux, tag: 'LF-2', limHi: 10, enabled: false });
    const c = await plant.rule({ collection_id: cid, tag: 'LF-1', limHi: 10 });
    const ids = (list: any[]) => list.map((r) => r.id).filter((id) => [a, b, c].includes(id)).sort();
    const get = async (params: Record<string, string | number | boolean>) => {
      const res = await call(admin, 'GET', `${M}/rule?${q(params)}`);
      assert.equal(res.status, 200, `${JSON.stringify(params)}: ${res.text}`);
      return res.body as any[];
    };
    const byAux = await get({ collection_id: aux });
    assert.ok(byAux.every((r) => r.collection_id === aux));
    assert.deepEqual(ids(byAux), [a, b].sort());
    assert.deepEqual(ids(await get({ collection_id: aux, enabled: false })), [b]);
    assert.deepEqual(ids(await get({ collection_id: aux, enabled: true })), [a]);
    assert.ok((await get({ enabled: false })).every((r) => r.enabled === false));

    let lf1Index: number | null = null;
    await waitFor(async () => {
      lf1Index = (await call(admin, 'GET', `${M}/rule/${enc(a)}`)).body.tag_index;
      return lf1Index !== null;
    }, 'LF-1 has a tag_index', { timeoutMs: 15_000, intervalMs: 50 });
    const byIndex = await get({ collection_id: aux, tag_index: lf1Index! });
    assert.deepEqual(ids(byIndex), [a]);
    assert.ok(byIndex.every((r) => r.tag_index === lf1Index));

    assert.deepEqual(await get({ collection_id: 'acme/north/boiler-1/none' }).catch(() => []), [], 'an unknown collection has no rules');
    for (const [param, value] of [['tag_index', 'x'], ['tag_index', '1.5'], ['enabled', 'maybe']] as const) {
      const res = await call(admin, 'GET', `${M}/rule?${q({ [param]: value })}`);
      assert.equal(res.status, 400, `${param}=${value}: ${res.text}`);
      assert.match(res.body.error, new RegExp(param));
    }
    for (const id of [a, b, c]) await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
  });

  test('a disabled rule carries the tag_index of its tag too, so the tag_index filter finds it', async () => {
    const aux = collectionIdOf(ACME_AUX);
    const ts = nextTsRun(2);
    await plant.write(ACME_AUX, { 'DIS-1': [[ts, 1]], 'DIS-2': [[ts + 1, 1]] });
    const on = await plant.rule({ collection_id: aux, tag: 'DIS-1', limHi: 10 });
    const off = await plant.rule({ collection_id: aux, tag: 'DIS-2', limHi: 10, enabled: false });
    await waitFor(async () => (await call(admin, 'GET', `${M}/rule/${enc(on)}`)).body.tag_index !== null, 'the enabled rule learns its tag_index', { timeoutMs: 15_000, intervalMs: 50 });
    try {
      let rule: any;
      await waitFor(async () => (rule = (await call(admin, 'GET', `${M}/rule/${enc(off)}`)).body).tag_index !== null,
        'the disabled rule has the tag_index of DIS-2, a tag of the collection', { timeoutMs: 5_000, intervalMs: 50 });
      assert.ok(Number.isInteger(rule.tag_index));
      const found = (await call(admin, 'GET', `${M}/rule?${q({ collection_id: aux, tag_index: rule.tag_index })}`)).body.map((r: any) => r.id);
      assert.ok(found.includes(off));
    } finally {
      for (const id of [on, off]) await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
    }
  });

  test('monitor config: on by default, switched off and on; status follows; bad body 400', async () => {
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: true });
    const off = await call(admin, 'PUT', `${M}/config`, { enabled: false });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual(off.body, { ok: true });
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: false });
    assert.equal((await call(admin, 'GET', `${M}/status`)).body.enabled, false);
    for (const body of [{}, { enabled: 'no' }, { enabled: 1 }]) {
      const res = await call(admin, 'PUT', `${M}/config`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.body.error, /enabled/);
    }
    assert.deepEqual((await call(admin, 'PUT', `${M}/config`, { enabled: true })).body, { ok: true });
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: true });
    assert.equal((await call(admin, 'GET', `${M}/status`)).body.enabled, true);
  });

  test('monitored collections: every visible collection listed; enable with a tick rate, disable, tick-rate; 400 and 404', async () => {
    const spare = collectionIdOf(ACME_SPARE);
    const item = async (id: string) => {
      const res = await call(admin, 'GET', `${M}/collections`);
      assert.equal(res.status, 200, res.text);
      assert.ok(Array.isArray(res.body));
      return res.body.find((c: any) => c.id === id);
    };
    const initial = await item(spare);
    assert.ok(initial, 'a collection nobody monitors is still listed');
    assert.deepEqual(Object.keys(initial).sort(), ['description', 'enabled', 'id', 'tick_rate_ms']);
    assert.equal(initial.enabled, false);
    assert.equal(initial.tick_rate_ms, DEFAULT_TICK_MS);
    assert.equal(typeof initial.description, 'string');
    const all = (await call(admin, 'GET', `${M}/collections`)).body.map((c: any) => c.id);
    for (const s of [ACME, ACME_AUX, ACME_OFF, EVIL]) assert.ok(all.includes(collectionIdOf(s)), collectionIdOf(s));

    const statusBefore = (await call(admin, 'GET', `${M}/status`)).body.collection_count;
    const en = await call(admin, 'PUT', `${M}/collections/${enc(spare)}/enable`, { tick_rate_ms: 250 });
    assert.equal(en.status, 200, en.text);
    assert.deepEqual(en.body, { ok: true });
    assert.deepEqual(await item(spare), { ...initial, enabled: true, tick_rate_ms: 250 });
    assert.equal((await call(admin, 'GET', `${M}/status`)).body.collection_count, statusBefore + 1, 'status counts monitored, enabled collections');

    const rate = await call(admin, 'PUT', `${M}/collections/${enc(spare)}/tick-rate`, { tick_rate_ms: 100 });
    assert.deepEqual(rate.body, { ok: true });
    assert.equal((await item(spare)).tick_rate_ms, 100);

    const dis = await call(admin, 'PUT', `${M}/collections/${enc(spare)}/disable`);
    assert.equal(dis.status, 200, dis.text);
    assert.deepEqual(dis.body, { ok: true });
    assert.equal((await item(spare)).enabled, false);
    assert.equal((await call(admin, 'GET', `${M}/status`)).body.collection_count, statusBefore);

    // Enabling without a body keeps the rate it had.
    assert.deepEqual((await call(admin, 'PUT', `${M}/collections/${enc(spare)}/enable`)).body, { ok: true });
    assert.deepEqual(await item(spare), { ...initial, enabled: true, tick_rate_ms: 100 });

    for (const [what, method, url, body] of [
      ['tick rate under 100', 'PUT', `${M}/collections/${enc(spare)}/enable`, { tick_rate_ms: 99 }],
      ['tick rate fractional', 'PUT', `${M}/collections/${enc(spare)}/tick-rate`, { tick_rate_ms: 150.5 }],
      ['tick rate text', 'PUT', `${M}/collections/${enc(spare)}/tick-rate`, { tick_rate_ms: 'fast' }],
      ['tick rate missing', 'PUT', `${M}/collections/${enc(spare)}/tick-rate`, {}],
      ['tick rate negative', 'PUT', `${M}/collections/${enc(spare)}/tick-rate`, { tick_rate_ms: -1000 }],
    ] as const) {
      const res = await call(admin, method, url, body);
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.match(res.body.error, /tick_rate_ms/, what);
    }
    assert.equal((await item(spare)).tick_rate_ms, 100, 'refused changes changed nothing');

    const unknown = enc('acme/north/boiler-1/none');
    for (const [action, body] of [['enable', undefined], ['disable', undefined], ['tick-rate', { tick_rate_ms: 500 }]] as const) {
      const res = await call(admin, 'PUT', `${M}/collections/${unknown}/${action}`, body);
      assert.equal(res.status, 404, `${action} of an unknown collection: ${res.text}`);
    }
    await call(admin, 'PUT', `${M}/collections/${enc(spare)}/disable`);
  });

  test('creating a rule makes its collection monitored at the default rate, unless it was disabled before', async () => {
    const fresh = collectionIdOf(ACME_NEW);
    const off = collectionIdOf(ACME_OFF);
    const list = async () => (await call(admin, 'GET', `${M}/collections`)).body as any[];
    assert.equal((await list()).find((c) => c.id === fresh).enabled, false);
    assert.deepEqual((await call(admin, 'PUT', `${M}/collections/${enc(off)}/disable`)).body, { ok: true });
    const r1 = await plant.rule({ collection_id: fresh, tag: 'MON-1', limHi: 1 });
    const r2 = await plant.rule({ collection_id: off, tag: 'MON-1', limHi: 1 });
    const after = await list();
    assert.deepEqual(
      { enabled: after.find((c) => c.id === fresh).enabled, tick_rate_ms: after.find((c) => c.id === fresh).tick_rate_ms },
      { enabled: true, tick_rate_ms: DEFAULT_TICK_MS },
    );
    assert.equal(after.find((c) => c.id === off).enabled, false, 'an explicitly disabled collection stays disabled');
    for (const id of [r1, r2]) await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
  });

  test('status: its shape, rule_count follows creates and deletes, ticks advance while a collection is monitored', async () => {
    const res = await call(admin, 'GET', `${M}/status`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['collection_count', 'enabled', 'last_snapshot_ms', 'rule_count', 'tick_number']);
    assert.equal(typeof res.body.enabled, 'boolean');
    for (const key of ['collection_count', 'rule_count', 'tick_number']) assert.ok(Number.isInteger(res.body[key]) && res.body[key] >= 0, key);
    assert.ok(Number.isInteger(res.body.last_snapshot_ms) && res.body.last_snapshot_ms >= 0, 'last_snapshot_ms');

    const id = await plant.rule({ collection_id: cid, tag: 'ST-1', limHi: 1 });
    assert.equal((await call(admin, 'GET', `${M}/status`)).body.rule_count, res.body.rule_count + 1);
    // A fast tick for the main collection: the tick number moves on.
    await call(admin, 'PUT', `${M}/collections/${enc(cid)}/enable`, { tick_rate_ms: 100 });
    const t0 = (await call(admin, 'GET', `${M}/status`)).body.tick_number;
    let last: any;
    await waitFor(async () => {
      last = (await call(admin, 'GET', `${M}/status`)).body;
      return last.tick_number > t0;
    }, 'tick_number advances', { timeoutMs: 15_000, intervalMs: 50 });
    assert.ok(last.last_snapshot_ms > 0, 'a snapshot was taken');
    await call(admin, 'DELETE', `${M}/rule/${enc(id)}`);
    assert.equal((await call(admin, 'GET', `${M}/status`)).body.rule_count, res.body.rule_count);
  });

  test('without a token every monitor route is 401', async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `${M}/alarm/snapshot`], ['GET', `${M}/alarm/summary`], ['GET', `${M}/alarm/triggered-only`],
      ['GET', `${M}/alarm/events`], ['GET', `${M}/alarm/events/active`], ['GET', `${M}/alarm/events/stats?from_ms=0&to_ms=1`],
      ['GET', `${M}/alarm/events/e-x`], ['DELETE', `${M}/alarm/events/cleanup`, { older_than_ms: 0 }],
      ['POST', `${M}/alarm/events/e-x/ack`],
      ['POST', `${M}/rule`, { collection_id: cid, tag: 'X', limHi: 1 }], ['GET', `${M}/rule`], ['GET', `${M}/rule/r-x`],
      ['PUT', `${M}/rule/r-x`, { collection_id: cid, tag: 'X', limHi: 1 }], ['DELETE', `${M}/rule/r-x`],
      ['GET', `${M}/config`], ['PUT', `${M}/config`, { enabled: false }], ['GET', `${M}/collections`],
      ['PUT', `${M}/collections/${enc(cid)}/enable`], ['PUT', `${M}/collections/${enc(cid)}/disable`],
      ['PUT', `${M}/collections/${enc(cid)}/tick-rate`, { tick_rate_ms: 500 }], ['GET', `${M}/status`],
    ];
    for (const [method, url, body] of routes) {
      const res = await call(undefined, method, url, body);
      assert.equal(res.status, 401, `${method} ${url}: ${res.status} ${res.text}`);
      const bad = await call('not-a-token', method, url, body);
      assert.equal(bad.status, 401, `${method} ${url} with a bad token: ${bad.status}`);
    }
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: true }, 'the refused PUT /config changed nothing');
  });

  test('read-only: every read answers, every change is 403 and changes nothing', async () => {
    const ruleBody = { collection_id: cid, tag: 'RO-1', limHi: 50 };
    const id = await plant.rule(ruleBody);
    for (const url of [
      `${M}/alarm/snapshot`, `${M}/alarm/summary`, `${M}/alarm/triggered-only`, `${M}/alarm/events`, `${M}/alarm/events/active`,
      `${M}/alarm/events/stats?from_ms=0&to_ms=${Date.now()}`, `${M}/rule`, `${M}/rule/${enc(id)}`, `${M}/config`, `${M}/collections`, `${M}/status`,
    ]) {
      const res = await call(ro.token, 'GET', url);
      assert.equal(res.status, 200, `read-only GET ${url}: ${res.text}`);
    }
    assert.equal((await call(ro.token, 'GET', `${M}/rule/${enc(id)}`)).body.limHi, 50);
    const changes: Array<[string, string, unknown?]> = [
      ['POST', `${M}/rule`, ruleBody],
      ['PUT', `${M}/rule/${enc(id)}`, { ...ruleBody, limHi: 60 }],
      ['DELETE', `${M}/rule/${enc(id)}`],
      ['PUT', `${M}/config`, { enabled: false }],
      ['PUT', `${M}/collections/${enc(cid)}/enable`, { tick_rate_ms: 500 }],
      ['PUT', `${M}/collections/${enc(cid)}/disable`],
      ['PUT', `${M}/collections/${enc(cid)}/tick-rate`, { tick_rate_ms: 500 }],
      ['DELETE', `${M}/alarm/events/cleanup`, { older_than_ms: Date.now() }],
    ];
    const collectionsBefore = (await call(admin, 'GET', `${M}/collections`)).body;
    const rulesBefore = (await call(admin, 'GET', `${M}/rule`)).body;
    for (const [method, url, body] of changes) {
      const res = await call(ro.token, method, url, body);
      assert.equal(res.status, 403, `read-only ${method} ${url}: ${res.status} ${res.text}`);
    }
    assert.deepEqual((await call(admin, 'GET', `${M}/rule`)).body, rulesBefore);
    assert.deepEqual((await call(admin, 'GET', `${M}/collections`)).body, collectionsBefore);
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: true });

    // The same changes by a read-write account of that unit are allowed.
    assert.equal((await call(rw.token, 'PUT', `${M}/rule/${enc(id)}`, { ...ruleBody, limHi: 60 })).status, 200);
    assert.equal((await call(admin, 'GET', `${M}/rule/${enc(id)}`)).body.limHi, 60);
    const own = await plant.rule({ collection_id: cid, tag: 'RW-1', limHi: 1 }, rw.token);
    assert.equal((await call(rw.token, 'DELETE', `${M}/rule/${enc(own)}`)).status, 200);
    assert.equal((await call(rw.token, 'DELETE', `${M}/rule/${enc(id)}`)).status, 200);
  });

  test('another tenant sees nothing of a collection outside its grant: not listed, 404, and 400/404 naming collection_id', async () => {
    const acmeMain = collectionIdOf(ACME);
    const evilMain = collectionIdOf(EVIL);
    // An event in acme's collection (a spike above limHi) and a rule in evil's.
    await call(admin, 'PUT', `${M}/collections/${enc(acmeMain)}/enable`, { tick_rate_ms: 150 });
    const acmeRule = await plant.rule({ collection_id: acmeMain, tag: 'TEN-1', limHi: 100 });
    const ts = nextTsRun(2);
    await plant.write(ACME, { 'TEN-1': [[ts, 500], [ts + 1, 500]] });
    const acmeEvent = await plant.untilEvent(acmeRule, 'acme has an event');
    const evilRule = await plant.rule({ collection_id: evilMain, tag: 'EV-1', limHi: 100 }, evil.token);

    // Lists leave acme out.
    const collections = (await call(evil.token, 'GET', `${M}/collections`)).body.map((c: any) => c.id);
    assert.ok(collections.includes(evilMain), 'its own collection is listed');
    assert.ok(!collections.some((id: string) => id.startsWith('acme/')), `no acme collection: ${collections}`);
    const rules = (await call(evil.token, 'GET', `${M}/rule`)).body;
    assert.ok(rules.some((r: any) => r.id === evilRule));
    assert.ok(rules.every((r: any) => r.collection_id === evilMain), 'only rules of its own collection');
    const byAcme = await call(evil.token, 'GET', `${M}/rule?${q({ collection_id: acmeMain })}`);
    assert.ok(byAcme.status === 404 || (byAcme.status === 200 && byAcme.body.length === 0), `rules filtered on acme: ${byAcme.text}`);
    for (const url of [`${M}/alarm/events`, `${M}/alarm/events/active`]) {
      const events = (await call(evil.token, 'GET', url)).body.events;
      assert.ok(!events.some((e: any) => e.collection_id === acmeMain), url);
    }
    const evByAcme = await call(evil.token, 'GET', `${M}/alarm/events?${q({ collection_id: acmeMain })}`);
    assert.ok(evByAcme.status === 404 || (evByAcme.status === 200 && evByAcme.body.total_count === 0), `events filtered on acme: ${evByAcme.text}`);
    const window = { from_ms: acmeEvent.started_ms - 1, to_ms: acmeEvent.started_ms + 1 };
    assert.ok((await call(admin, 'GET', `${M}/alarm/events/stats?${q(window)}`)).body.total >= 1, 'the admin counts acme\'s event');
    assert.equal((await call(evil.token, 'GET', `${M}/alarm/events/stats?${q(window)}`)).body.total, 0, 'the stats count no acme event');
    for (const url of [`${M}/alarm/snapshot`, `${M}/alarm/triggered-only`]) {
      const snap = (await call(evil.token, 'GET', url)).body;
      assert.ok(!snap.collections.some((c: any) => String(c.collection_id).startsWith('acme/')), `${url}: ${JSON.stringify(snap.collections)}`);
    }

    // Direct access answers as if absent.
    assert.equal((await call(evil.token, 'GET', `${M}/rule/${enc(acmeRule)}`)).status, 404);
    assert.equal((await call(evil.token, 'PUT', `${M}/rule/${enc(acmeRule)}`, { collection_id: acmeMain, tag: 'TEN-1', limHi: 1e9 })).status, 404);
    assert.equal((await call(evil.token, 'PUT', `${M}/rule/${enc(acmeRule)}`, { collection_id: evilMain, tag: 'TEN-1', limHi: 1e9 })).status, 404, 'nor can it move acme\'s rule to its own collection');
    assert.equal((await call(evil.token, 'DELETE', `${M}/rule/${enc(acmeRule)}`)).status, 404);
    assert.equal((await call(evil.token, 'GET', `${M}/alarm/events/${enc(acmeEvent.id)}`)).status, 404);
    assert.equal((await call(evil.token, 'POST', `${M}/alarm/events/${enc(acmeEvent.id)}/ack`)).status, 404);
    for (const [action, body] of [['enable', { tick_rate_ms: 5000 }], ['disable', undefined], ['tick-rate', { tick_rate_ms: 5000 }]] as const) {
      const res = await call(evil.token, 'PUT', `${M}/collections/${enc(acmeMain)}/${action}`, body);
      assert.equal(res.status, 404, `${action} of acme's collection: ${res.text}`);
    }
    // Creating a rule there answers exactly like a collection that does not exist.
    const invisible = await call(evil.token, 'POST', `${M}/rule`, { collection_id: acmeMain, tag: 'X', limHi: 1 });
    const missing = await call(evil.token, 'POST', `${M}/rule`, { collection_id: 'acme/north/boiler-1/none', tag: 'X', limHi: 1 });
    assert.ok([400, 404].includes(invisible.status), invisible.text);
    assert.equal(invisible.status, missing.status, 'a collection outside the grant answers like a missing one');
    assert.match(invisible.body.error, /collection_id/);

    // Nothing of acme changed.
    const rule = (await call(admin, 'GET', `${M}/rule/${enc(acmeRule)}`)).body;
    assert.equal(rule.limHi, 100);
    const acmeItem = (await call(admin, 'GET', `${M}/collections`)).body.find((c: any) => c.id === acmeMain);
    assert.deepEqual({ enabled: acmeItem.enabled, tick_rate_ms: acmeItem.tick_rate_ms }, { enabled: true, tick_rate_ms: 150 });
    const event = (await call(admin, 'GET', `${M}/alarm/events/${enc(acmeEvent.id)}`)).body;
    assert.equal(event.acked_ms ?? null, null, 'not acknowledged');

    // And acme's own account does not see evil's rule.
    assert.equal((await call(rw.token, 'GET', `${M}/rule/${enc(evilRule)}`)).status, 404);
    assert.ok(!(await call(rw.token, 'GET', `${M}/rule`)).body.some((r: any) => r.id === evilRule));
    // Its own account sees acme's event.
    assert.equal((await call(rw.token, 'GET', `${M}/alarm/events/${enc(acmeEvent.id)}`)).status, 200);
    await call(admin, 'DELETE', `${M}/rule/${enc(acmeRule)}`);
    await call(admin, 'DELETE', `${M}/rule/${enc(evilRule)}`);
  });
});

describe('compat.openMonitorAndBackup', () => {
  test('on: monitor routes answer without a token (as the legacy build did) and the start logs a warning; off is the default', async () => {
    const open = await startService({ config: { compat: { openMonitorAndBackup: true } } });
    try {
      const status = await open.get(`${M}/status`);
      assert.equal(status.status, 200, status.text);
      assert.equal(typeof status.body.tick_number, 'number');
      assert.equal((await open.request('PUT', `${M}/config`, { body: { enabled: false } })).status, 200);
      assert.equal((await open.get(`${M}/config`)).body.enabled, false);
      assert.ok(open.logs().some((l) => l.level === 40 && String(l.msg).includes('compat.openMonitorAndBackup is on')), 'warning at start');
    } finally {
      await open.dispose();
    }
    const closed = await startService();
    try {
      assert.equal((await closed.get(`${M}/status`)).status, 401);
      assert.ok(!closed.logs().some((l) => String(l.msg).includes('compat.openMonitorAndBackup')));
    } finally {
      await closed.dispose();
    }
  });
});

describe('a running monitor with nothing to evaluate yet', () => {
  test('ticks all the same: tick_number and last_snapshot_ms advance while a collection is monitored without rules', async () => {
    const svc = await startService();
    try {
      const admin = await svc.adminToken();
      const plant = new Plant(() => svc, () => admin);
      await plant.collection(ACME);
      const call = (method: string, url: string, body?: unknown) => plant.call(admin, method, url, body);
      assert.equal((await call('PUT', `${M}/collections/${enc(collectionIdOf(ACME))}/enable`, {})).status, 200);
      const began = Date.now();
      let status = (await call('GET', `${M}/status`)).body;
      assert.equal(status.rule_count, 0);
      await waitFor(async () => (status = (await call('GET', `${M}/status`)).body).tick_number >= 2, 'the monitor ticks without rules');
      assert.ok(status.last_snapshot_ms >= began - DEFAULT_TICK_MS, `last_snapshot_ms ${status.last_snapshot_ms} is recent`);
      const summary = (await call('GET', `${M}/alarm/summary`)).body;
      assert.ok(summary.tick_number >= 2, 'the summary shows the same liveness');
    } finally {
      await svc.dispose();
    }
  });
});
