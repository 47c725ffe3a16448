// Alarm evaluation, events and notifications of the monitor (issue 15), checked from the contract
// alone: SPEC "Monitoring", WIRE part 2 "Monitor" and "Notifications", and the lead's decisions
// for issue 15. Collections tick every 150 ms (their tick_rate_ms). "A tick has seen a value" is
// read from the snapshot (the tag's `ts`), and "a whole tick has run since" from a heartbeat tag
// written and then seen, so no test sleeps for a tick or asserts how long anything took. The few
// waits for time to pass are for an on-delay or off-delay to run out, which nothing shows.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { ADMIN_EMAIL, startService, type TestService } from './harness.js';
import { M, NotificationStream, Plant, collectionIdOf, enc, nextTsRun, q, type Scope } from './monitor-support.js';

const TICK_MS = 150;
const MAIN: Scope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const AUX: Scope = { ...MAIN, grid: 'aux' };
const B2: Scope = { ...MAIN, unit: 'boiler-2' };
const B3_MAIN: Scope = { ...MAIN, unit: 'boiler-3' };
const B3_AUX: Scope = { ...B3_MAIN, grid: 'aux' };
const MAIN_ID = collectionIdOf(MAIN);
const AUX_ID = collectionIdOf(AUX);
const EVENT_KEYS = ['acked_by', 'acked_ms', 'collection_id', 'id', 'kind', 'limit', 'message', 'resolved_ms', 'rule_id', 'severity', 'started_ms', 'status', 'tag', 'tag_index', 'value'];
const PAYLOAD_KEYS = ['collection_id', 'event_id', 'limit', 'rule_id', 'tag', 'value'];

/** Resolves once the wall clock has passed `ms` (an on-delay or off-delay running out shows nowhere). */
const clockPast = (ms: number) => waitFor(() => Date.now() > ms, `the clock passes ${ms}`, { timeoutMs: Math.max(0, ms - Date.now()) + 10_000, intervalMs: 25 });

describe('monitor alarms', () => {
  let svc: TestService;
  let admin: string;
  let plant: Plant;
  let mainUnit: string;
  let operator: { email: string; token: string };
  let viewer: { email: string; token: string };
  let adminStream: NotificationStream;
  let operatorStream: NotificationStream;
  const call = (token: string | undefined, method: string, url: string, body?: unknown) => plant.call(token, method, url, body);
  const getEvent = async (id: string) => {
    const res = await call(admin, 'GET', `${M}/alarm/events/${enc(id)}`);
    assert.equal(res.status, 200, res.text);
    return res.body;
  };
  /** Writes `value` and waits until a tick has seen it and a whole tick more has run, so every transition it causes is stored. */
  const settle = async (s: Scope, tag: string, value: number) => {
    const ts = await plant.writeValue(s, tag, value);
    const entry = await plant.untilSeen(collectionIdOf(s), tag, ts);
    await plant.tickPassed(s);
    return entry;
  };

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    plant = new Plant(() => svc, () => admin);
    for (const s of [MAIN, AUX, B2]) {
      await plant.collection(s, TICK_MS);
      await plant.heartbeat(s);
    }
    await plant.collection(B3_MAIN);
    await plant.collection(B3_AUX);
    mainUnit = await plant.unitOf(MAIN);
    operator = await plant.account('operator@acme.test', 'read-write', [mainUnit]);
    viewer = await plant.account('viewer@acme.test', 'read-only', [mainUnit]);
    adminStream = new NotificationStream(svc, admin);
    operatorStream = new NotificationStream(svc, operator.token);
    await adminStream.ready();
    await operatorStream.ready();
  });
  after(async () => {
    adminStream?.close();
    operatorStream?.close();
    await svc.dispose();
  });

  test('above limHi: an active event and a notification on a connected stream; back to normal: resolved and a resolve notification', async () => {
    // The tag exists before its rule (tag_index of a tag written after its rule is checked in monitor.test.ts).
    await plant.writeValue(MAIN, 'HI-1', 100);
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'HI-1', limHi: 500, severity: 'error', name: 'Drum temperature' });
    await settle(MAIN, 'HI-1', 100);
    assert.deepEqual(await plant.ruleEvents(rule), [], 'a normal value opens nothing');

    await plant.writeValue(MAIN, 'HI-1', 512.5);
    const event = await plant.untilEvent(rule, 'HI-1 above limHi opens an event');
    assert.deepEqual(Object.keys(event).sort(), EVENT_KEYS);
    assert.match(event.id, /^e-/);
    assert.equal(event.rule_id, rule);
    assert.equal(event.collection_id, MAIN_ID);
    assert.equal(event.tag, 'HI-1');
    assert.ok(Number.isInteger(event.tag_index), `tag_index ${event.tag_index}`);
    assert.equal(event.kind, 'high');
    assert.equal(event.status, 'active');
    assert.equal(event.severity, 'error');
    assert.equal(event.value, 512.5);
    assert.equal(event.limit, 500);
    assert.ok(Number.isInteger(event.started_ms) && event.started_ms > 0);
    assert.equal(event.resolved_ms, null);
    assert.equal(event.acked_ms, null);
    assert.equal(event.acked_by, null);
    assert.equal(typeof event.message, 'string');
    assert.match(event.message, /HI-1/);
    assert.deepEqual(await getEvent(event.id), event);

    const opened = await adminStream.untilNotification('the notification of the opening', (n) => n.payload?.event_id === event.id);
    assert.equal(opened.source, 'monitor');
    assert.equal(opened.severity, 'error', 'the rule\'s severity');
    assert.equal(String(opened.unitsId), mainUnit, 'the unit of the collection');
    assert.equal(opened.orgsId ?? null, null, 'only unitsId is set');
    assert.equal(opened.sitesId ?? null, null, 'only unitsId is set');
    assert.equal(opened.userId ?? null, null, 'a broadcast to the unit');
    assert.match(opened.title, /HI-1/);
    assert.deepEqual(Object.keys(opened.payload).sort(), PAYLOAD_KEYS);
    assert.deepEqual(opened.payload, { rule_id: rule, event_id: event.id, collection_id: MAIN_ID, tag: 'HI-1', value: 512.5, limit: 500 });
    await operatorStream.untilNotification('the opening, for an operator granted the unit', (n) => n.payload?.event_id === event.id);

    await plant.writeValue(MAIN, 'HI-1', 499);
    const resolved = await plant.untilEvent(rule, 'HI-1 back under limHi resolves the event', (e) => e.id === event.id && e.status === 'resolved');
    assert.ok(Number.isInteger(resolved.resolved_ms) && resolved.resolved_ms >= resolved.started_ms);
    assert.equal(resolved.started_ms, event.started_ms);
    assert.equal(resolved.value, 512.5, 'the triggering value stays');
    const closing = await adminStream.untilNotification('the notification of the resolution', (n) => n.payload?.event_id === event.id && n.id !== opened.id);
    assert.equal(closing.source, 'monitor');
    assert.equal(closing.severity, 'info');
    assert.equal(String(closing.unitsId), mainUnit);
    assert.match(closing.title, /HI-1/);
    assert.deepEqual(Object.keys(closing.payload).sort(), PAYLOAD_KEYS);
    assert.equal(closing.payload.rule_id, rule);
    await plant.tickPassed(MAIN);
    assert.equal((await plant.ruleEvents(rule)).length, 1, 'one excursion, one event');
    assert.equal(adminStream.notifications().filter((n) => n.payload?.rule_id === rule).length, 2, 'one notification to open, one to resolve');
  });

  test('the deadband holds: between limHi - deadband and limHi stays high, at or below it resolves; the same for limLo', async () => {
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'DB-1', limHi: 500, limLo: 10, deadband: 20 });
    await settle(MAIN, 'DB-1', 100);
    await plant.writeValue(MAIN, 'DB-1', 510);
    const high = await plant.untilEvent(rule, 'DB-1 high');
    assert.equal(high.kind, 'high');

    const inBand = await settle(MAIN, 'DB-1', 490);
    assert.equal(inBand.state, 'high', 'inside the deadband the tag stays high');
    assert.equal((await getEvent(high.id)).status, 'active');
    await settle(MAIN, 'DB-1', 499.9);
    assert.equal((await getEvent(high.id)).status, 'active');
    await plant.writeValue(MAIN, 'DB-1', 480);
    await plant.untilEvent(rule, 'DB-1 at limHi - deadband resolves', (e) => e.id === high.id && e.status === 'resolved');

    await plant.writeValue(MAIN, 'DB-1', 5);
    const low = await plant.untilEvent(rule, 'DB-1 low', (e) => e.kind === 'low');
    assert.equal(low.limit, 10);
    assert.equal(low.value, 5);
    assert.equal(low.status, 'active');
    const lowBand = await settle(MAIN, 'DB-1', 25);
    assert.equal(lowBand.state, 'low', 'inside the deadband the tag stays low');
    assert.equal((await getEvent(low.id)).status, 'active');
    await plant.writeValue(MAIN, 'DB-1', 30);
    await plant.untilEvent(rule, 'DB-1 at limLo + deadband resolves', (e) => e.id === low.id && e.status === 'resolved');
    await plant.tickPassed(MAIN);
    assert.equal((await plant.ruleEvents(rule)).length, 2, 'no flapping: one event per excursion');
  });

  test('on-delay: an excursion shorter than on_delay_ms opens nothing; a longer one opens one event', async () => {
    const ON_DELAY = 3000;
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'ON-1', limHi: 500, on_delay_ms: ON_DELAY });
    await settle(MAIN, 'ON-1', 100);

    const shortTs = await plant.writeValue(MAIN, 'ON-1', 600);
    await plant.untilSeen(MAIN_ID, 'ON-1', shortTs);
    assert.deepEqual(await plant.ruleEvents(rule), [], 'no event while the on-delay runs');
    const backTs = await plant.writeValue(MAIN, 'ON-1', 100);
    await plant.untilSeen(MAIN_ID, 'ON-1', backTs);
    // Long enough for the first excursion to have opened an event had it not been cut short.
    await clockPast(shortTs + ON_DELAY + 500);
    await plant.tickPassed(MAIN);
    assert.deepEqual(await plant.ruleEvents(rule), [], 'the short excursion opened nothing');

    const longTs = await plant.writeValue(MAIN, 'ON-1', 600);
    await plant.untilSeen(MAIN_ID, 'ON-1', longTs);
    assert.deepEqual(await plant.ruleEvents(rule), [], 'still in the on-delay right after the first tick saw it');
    const event = await plant.untilEvent(rule, 'the held excursion opens an event once the on-delay has run', () => true, 20_000);
    assert.equal(event.status, 'active');
    assert.equal(event.value, 600);
    await plant.writeValue(MAIN, 'ON-1', 100);
    await plant.untilEvent(rule, 'ON-1 resolves', (e) => e.status === 'resolved');
    assert.equal((await plant.ruleEvents(rule)).length, 1);
  });

  test('off-delay: the event stays active until normal has held off_delay_ms; going back above meanwhile keeps it, without a second event', async () => {
    const OFF_DELAY = 2000;
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'OFF-1', limHi: 500, off_delay_ms: OFF_DELAY });
    await settle(MAIN, 'OFF-1', 100);
    await plant.writeValue(MAIN, 'OFF-1', 600);
    const event = await plant.untilEvent(rule, 'OFF-1 opens');

    const normal = await settle(MAIN, 'OFF-1', 100);
    assert.equal((await getEvent(event.id)).status, 'active', 'still active while the off-delay runs');
    const againTs = await plant.writeValue(MAIN, 'OFF-1', 600);
    await plant.untilSeen(MAIN_ID, 'OFF-1', againTs);
    // Past the off-delay counted from the first normal value: had the excursion not cancelled it, the event would be resolved now.
    await clockPast(normal.ts + OFF_DELAY + 500);
    await plant.tickPassed(MAIN);
    const events = await plant.ruleEvents(rule);
    assert.deepEqual(events.map((e) => [e.id, e.status]), [[event.id, 'active']], 'the same event, still active');

    await settle(MAIN, 'OFF-1', 100);
    assert.equal((await getEvent(event.id)).status, 'active', 'the off-delay starts again from this normal value, not from the first one');
    const resolved = await plant.untilEvent(rule, 'OFF-1 resolves once normal has held', (e) => e.id === event.id && e.status === 'resolved', 20_000);
    assert.ok(resolved.resolved_ms >= resolved.started_ms);
    assert.equal((await plant.ruleEvents(rule)).length, 1);
  });

  test('a spike written and undone between two ticks is caught: the event is opened and resolved, with the spike\'s value', async () => {
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'SP-1', limHi: 500, limLo: 0 });
    await settle(MAIN, 'SP-1', 100);

    const ts = nextTsRun(2);
    await plant.write(MAIN, { 'SP-1': [[ts, 600], [ts + 1, 100]] });
    const seen = await plant.untilSeen(MAIN_ID, 'SP-1', ts + 1);
    assert.equal(seen.value, 100, 'the last value is back to normal');
    await plant.tickPassed(MAIN);
    const high = await plant.ruleEvents(rule);
    assert.equal(high.length, 1, `one event for the spike: ${JSON.stringify(high)}`);
    assert.equal(high[0].kind, 'high');
    assert.equal(high[0].status, 'resolved');
    assert.equal(high[0].value, 600);
    assert.equal(high[0].limit, 500);
    assert.ok(high[0].resolved_ms >= high[0].started_ms);
    await adminStream.untilNotification('the spike\'s opening', (n) => n.payload?.event_id === high[0].id && n.severity === 'warn');
    await adminStream.untilNotification('the spike\'s resolution', (n) => n.payload?.event_id === high[0].id && n.severity === 'info');

    const lowTs = nextTsRun(2);
    await plant.write(MAIN, { 'SP-1': [[lowTs, -50], [lowTs + 1, 100]] });
    await plant.untilSeen(MAIN_ID, 'SP-1', lowTs + 1);
    await plant.tickPassed(MAIN);
    const low = (await plant.ruleEvents(rule)).filter((e) => e.kind === 'low');
    assert.equal(low.length, 1, 'a downward spike is caught too');
    assert.equal(low[0].status, 'resolved');
    assert.equal(low[0].value, -50);
    assert.equal(low[0].limit, 0);
  });

  test('a rule with notify false raises events but no notification', async () => {
    const quiet = await plant.rule({ collection_id: MAIN_ID, tag: 'NN-1', limHi: 500, notify: false });
    const loud = await plant.rule({ collection_id: MAIN_ID, tag: 'NY-1', limHi: 500 });
    await settle(MAIN, 'NN-1', 100);
    await settle(MAIN, 'NY-1', 100);
    let ts = nextTsRun(2);
    await plant.write(MAIN, { 'NN-1': [[ts, 600], [ts + 1, 100]] });
    const quietEvent = await plant.untilEvent(quiet, 'the quiet rule\'s event', (e) => e.status === 'resolved');
    ts = nextTsRun(2);
    await plant.write(MAIN, { 'NY-1': [[ts, 600], [ts + 1, 100]] });
    const loudEvent = await plant.untilEvent(loud, 'the loud rule\'s event', (e) => e.status === 'resolved');
    await adminStream.untilNotification('the loud rule\'s resolution', (n) => n.payload?.event_id === loudEvent.id && n.severity === 'info');
    assert.deepEqual(adminStream.notifications().filter((n) => n.payload?.rule_id === quiet || n.payload?.event_id === quietEvent.id), []);
  });

  test('stale: no new value for stale_after_ms opens a stale event, a fresh value resolves it; a tag never written is stale', async () => {
    const STALE = 800;
    await plant.writeValue(MAIN, 'ST-1', 42);
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'ST-1', stale_after_ms: STALE, severity: 'critical' });
    const event = await plant.untilEvent(rule, 'ST-1 goes stale', (e) => e.kind === 'stale' && e.status === 'active');
    assert.equal(event.limit, STALE);
    assert.equal(event.severity, 'critical');
    assert.equal((await plant.snapshotTag(MAIN_ID, 'ST-1')).state, 'stale');
    await plant.writeValue(MAIN, 'ST-1', 43);
    await plant.untilEvent(rule, 'a fresh value resolves the stale event', (e) => e.id === event.id && e.status === 'resolved');
    assert.deepEqual((await call(admin, 'DELETE', `${M}/rule/${enc(rule)}`)).body, { ok: true });

    const never = await plant.rule({ collection_id: MAIN_ID, tag: 'ST-NEVER', stale_after_ms: 300 });
    const neverEvent = await plant.untilEvent(never, 'a tag with no value at all is stale', (e) => e.kind === 'stale');
    assert.equal(neverEvent.tag, 'ST-NEVER');
    assert.deepEqual((await call(admin, 'DELETE', `${M}/rule/${enc(never)}`)).body, { ok: true });
  });

  test('ack: active → acknowledged (acked_ms, acked_by) → resolved keeps them; read-only 403; unknown 404; a resolved event 409', async () => {
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'AK-1', limHi: 500 });
    await settle(MAIN, 'AK-1', 100);
    await plant.writeValue(MAIN, 'AK-1', 600);
    const event = await plant.untilEvent(rule, 'AK-1 opens');
    const ackUrl = `${M}/alarm/events/${enc(event.id)}/ack`;

    assert.equal((await call(viewer.token, 'POST', ackUrl)).status, 403, 'read-only may not ack');
    assert.equal((await getEvent(event.id)).status, 'active');
    const ack = await call(admin, 'POST', ackUrl);
    assert.equal(ack.status, 200, ack.text);
    assert.deepEqual(ack.body, { ok: true });
    const acked = await getEvent(event.id);
    assert.equal(acked.status, 'acknowledged');
    assert.ok(Number.isInteger(acked.acked_ms) && acked.acked_ms >= acked.started_ms);
    assert.equal(acked.acked_by, ADMIN_EMAIL);
    assert.equal(acked.resolved_ms, null);

    const ids = async (params: Record<string, string>) => (await plant.events({ ...params, rule_id: rule })).events.map((e) => e.id);
    assert.deepEqual(await ids({ status: 'acknowledged' }), [event.id]);
    assert.deepEqual(await ids({ status: 'unresolved' }), [event.id], 'acknowledged is unresolved');
    assert.deepEqual(await ids({ status: 'active' }), []);
    assert.ok((await call(admin, 'GET', `${M}/alarm/events/active`)).body.events.some((e: any) => e.id === event.id && e.status === 'acknowledged'));

    await plant.writeValue(MAIN, 'AK-1', 100);
    const resolved = await plant.untilEvent(rule, 'AK-1 resolves', (e) => e.status === 'resolved');
    assert.equal(resolved.acked_ms, acked.acked_ms, 'resolution keeps acked_ms');
    assert.equal(resolved.acked_by, ADMIN_EMAIL, 'resolution keeps acked_by');
    assert.ok(!(await call(admin, 'GET', `${M}/alarm/events/active`)).body.events.some((e: any) => e.id === event.id));

    const again = await call(admin, 'POST', ackUrl);
    assert.equal(again.status, 409, `ack of a resolved event: ${again.text}`);
    assert.deepEqual(await getEvent(event.id), resolved, 'nothing changed');
    assert.equal((await call(admin, 'POST', `${M}/alarm/events/e-does-not-exist/ack`)).status, 404);

    // A read-write account granted the unit may ack.
    await plant.writeValue(MAIN, 'AK-1', 700);
    const second = await plant.untilEvent(rule, 'AK-1 opens again', (e) => e.id !== event.id);
    assert.deepEqual((await call(operator.token, 'POST', `${M}/alarm/events/${enc(second.id)}/ack`)).body, { ok: true });
    assert.equal((await getEvent(second.id)).acked_by, operator.email);
    await plant.writeValue(MAIN, 'AK-1', 100);
    await plant.untilEvent(rule, 'AK-1 resolves again', (e) => e.id === second.id && e.status === 'resolved');
  });

  test('events list: filters, newest first, paging with total_count and has_more, 400 on bad values; one event; stats', async () => {
    const first = nextTsRun(2);
    await plant.write(AUX, { 'L-1': [[first, 100]], 'L-2': [[first + 1, 100]] });
    const ruleA = await plant.rule({ collection_id: AUX_ID, tag: 'L-1', limHi: 500 });
    const ruleB = await plant.rule({ collection_id: AUX_ID, tag: 'L-2', limHi: 500 });
    await plant.tickPassed(AUX);
    const created: any[] = [];
    for (const [rule, tag] of [[ruleA, 'L-1'], [ruleB, 'L-2'], [ruleA, 'L-1'], [ruleB, 'L-2'], [ruleA, 'L-1']] as const) {
      const before = (await plant.ruleEvents(rule)).length;
      const ts = nextTsRun(2);
      await plant.write(AUX, { [tag]: [[ts, 900], [ts + 1, 100]] });
      let events: any[] = [];
      await waitFor(async () => (events = await plant.ruleEvents(rule)).length > before, `spike ${created.length + 1} is caught`, { timeoutMs: 15_000, intervalMs: 50 });
      created.push(events.find((e) => !created.some((c) => c.id === e.id)));
    }
    await plant.tickPassed(AUX);
    const ids = created.map((e) => e.id);
    const newestFirst = ids.slice().reverse();

    const all = await plant.events({ collection_id: AUX_ID });
    assert.deepEqual(Object.keys(all).sort(), ['events', 'has_more', 'total_count']);
    assert.equal(all.total_count, 5);
    assert.equal(all.has_more, false);
    assert.deepEqual(all.events.map((e) => e.id), newestFirst, 'newest first');
    for (const e of all.events) {
      assert.deepEqual(Object.keys(e).sort(), EVENT_KEYS);
      assert.equal(e.collection_id, AUX_ID);
      assert.equal(e.status, 'resolved');
      assert.equal(e.value, 900);
    }
    const started = all.events.map((e) => e.started_ms).reverse(); // oldest first
    for (let i = 1; i < started.length; i++) assert.ok(started[i] > started[i - 1], 'each spike is its own tick');

    const idsOf = async (params: Record<string, string | number>) => (await plant.events(params)).events.map((e) => e.id);
    assert.deepEqual(await idsOf({ rule_id: ruleA }), [ids[4], ids[2], ids[0]]);
    const l2Index = all.events.find((e) => e.tag === 'L-2').tag_index;
    assert.deepEqual(await idsOf({ collection_id: AUX_ID, tag_index: l2Index }), [ids[3], ids[1]]);
    assert.deepEqual(await idsOf({ collection_id: AUX_ID, status: 'resolved' }), newestFirst);
    for (const status of ['active', 'acknowledged', 'unresolved']) assert.deepEqual(await idsOf({ collection_id: AUX_ID, status }), [], status);
    assert.deepEqual(await idsOf({ collection_id: AUX_ID, from_ms: started[1] - 1, to_ms: started[3] + 1 }), [ids[3], ids[2], ids[1]]);
    assert.deepEqual(await idsOf({ collection_id: AUX_ID, from_ms: started[3] - 1 }), [ids[4], ids[3]]);
    assert.deepEqual(await idsOf({ collection_id: AUX_ID, to_ms: started[0] + 1 }), [ids[0]]);
    assert.deepEqual(await idsOf({ collection_id: 'acme/north/boiler-1/none' }).catch(() => []), []);

    const pages: string[] = [];
    for (const [offset, count, hasMore] of [[0, 2, true], [2, 2, true], [4, 1, false], [10, 0, false]] as const) {
      const page = await plant.events({ collection_id: AUX_ID, limit: 2, offset });
      assert.equal(page.total_count, 5, `offset ${offset}`);
      assert.equal(page.events.length, count, `offset ${offset}`);
      assert.equal(page.has_more, hasMore, `offset ${offset}`);
      pages.push(...page.events.map((e) => e.id));
    }
    assert.deepEqual(pages, newestFirst, 'the pages put together are the whole list');
    assert.equal((await plant.events({ collection_id: AUX_ID, limit: 1000 })).events.length, 5);

    for (const [param, value] of [
      ['status', 'bogus'], ['limit', 0], ['limit', 1001], ['limit', 'ten'], ['offset', -1], ['from_ms', 'yesterday'], ['to_ms', 'x'], ['tag_index', 'x'],
    ] as const) {
      const res = await call(admin, 'GET', `${M}/alarm/events?${q({ [param]: value })}`);
      assert.equal(res.status, 400, `${param}=${value}: ${res.text}`);
      assert.match(res.body.error, new RegExp(param), `${param}=${value}`);
    }

    assert.deepEqual(await getEvent(ids[2]), all.events[2]);
    assert.equal((await call(admin, 'GET', `${M}/alarm/events/e-does-not-exist`)).status, 404);

    // Stats over a window holding exactly these five events agree with the list over it.
    const window = { from_ms: started[0] - 1, to_ms: started[4] + 1 };
    const res = await call(admin, 'GET', `${M}/alarm/events/stats?${q(window)}`);
    assert.equal(res.status, 200, res.text);
    const stats = res.body;
    assert.deepEqual(Object.keys(stats).sort(), ['by_kind', 'by_severity', 'by_status', 'from_ms', 'mean_duration_ms', 'to_ms', 'top_rules', 'total']);
    assert.equal(stats.from_ms, window.from_ms);
    assert.equal(stats.to_ms, window.to_ms);
    const inWindow = (await plant.events({ ...window, limit: 1000 })).events;
    assert.equal(stats.total, inWindow.length);
    assert.equal(stats.total, 5, `only the five spikes started in the window: ${JSON.stringify(inWindow.map((e) => e.tag))}`);
    assert.equal(stats.by_kind.high, 5);
    assert.equal(stats.by_status.resolved, 5);
    assert.equal(stats.by_severity.warn, 5);
    for (const key of ['active', 'acknowledged']) assert.equal(stats.by_status[key] ?? 0, 0, key);
    assert.deepEqual(stats.top_rules.slice(0, 2), [{ rule_id: ruleA, count: 3 }, { rule_id: ruleB, count: 2 }]);
    assert.equal(typeof stats.mean_duration_ms, 'number');
    assert.ok(stats.mean_duration_ms >= 0);
    for (const missing of ['from_ms', 'to_ms']) {
      const params = { ...window } as Record<string, number>;
      delete params[missing];
      const bad = await call(admin, 'GET', `${M}/alarm/events/stats?${q(params)}`);
      assert.equal(bad.status, 400, `stats without ${missing}: ${bad.text}`);
      assert.match(bad.body.error, new RegExp(missing));
    }
  });

  test('active events: {events, total_count}, unresolved only', async () => {
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'AC-1', limHi: 500 });
    await settle(MAIN, 'AC-1', 100);
    await plant.writeValue(MAIN, 'AC-1', 600);
    const event = await plant.untilEvent(rule, 'AC-1 opens');
    const res = await call(admin, 'GET', `${M}/alarm/events/active`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['events', 'total_count']);
    assert.ok(res.body.events.some((e: any) => e.id === event.id));
    assert.ok(res.body.events.every((e: any) => e.status === 'active' || e.status === 'acknowledged'), 'unresolved only');
    assert.ok(!res.body.events.some((e: any) => e.collection_id === AUX_ID), 'the resolved spikes are not there');
    assert.equal(res.body.total_count, (await plant.events({ status: 'unresolved', limit: 1000 })).total_count);
    await plant.writeValue(MAIN, 'AC-1', 100);
    await plant.untilEvent(rule, 'AC-1 resolves', (e) => e.status === 'resolved');
    assert.ok(!(await call(admin, 'GET', `${M}/alarm/events/active`)).body.events.some((e: any) => e.id === event.id));
  });

  test('snapshot, summary and triggered-only: their shapes; summary per collection; only collections with a triggered tag', async () => {
    await plant.writeValue(MAIN, 'TR-1', 100);
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'TR-1', limHi: 500 });
    await settle(MAIN, 'TR-1', 600);
    await plant.untilEvent(rule, 'TR-1 opens');

    const snap = await plant.snapshot();
    assert.deepEqual(Object.keys(snap).sort(), ['collections', 'tick_number', 'timestamp_ms']);
    assert.ok(Number.isInteger(snap.tick_number) && Number.isInteger(snap.timestamp_ms));
    const main = snap.collections.find((c: any) => c.collection_id === MAIN_ID);
    const aux = snap.collections.find((c: any) => c.collection_id === AUX_ID);
    assert.ok(main && aux, 'both monitored collections are in the snapshot');
    assert.deepEqual(Object.keys(main).sort(), ['collection_id', 'tags']);
    const tr = main.tags.find((t: any) => t.tag === 'TR-1');
    assert.deepEqual(Object.keys(tr).sort(), ['rule_ids', 'state', 'tag', 'tag_index', 'ts', 'value']);
    assert.equal(tr.state, 'high');
    assert.equal(tr.value, 600);
    assert.ok(Number.isInteger(tr.tag_index));
    assert.ok(tr.rule_ids.includes(rule));
    for (const t of [...main.tags, ...aux.tags]) assert.ok(['normal', 'high', 'low', 'stale'].includes(t.state), t.state);
    assert.ok(aux.tags.every((t: any) => t.state === 'normal'), `aux is all normal: ${JSON.stringify(aux.tags)}`);

    const summary = await call(admin, 'GET', `${M}/alarm/summary`);
    assert.equal(summary.status, 200, summary.text);
    assert.deepEqual(Object.keys(summary.body).sort(), ['collection_count', 'evaluation_duration_ms', 'tick_number', 'timestamp_ms', 'triggered_tags']);
    assert.ok(summary.body.collection_count >= 3, 'main, aux and boiler-2 are monitored');
    assert.ok(summary.body.triggered_tags >= 1);
    assert.ok(Number.isInteger(summary.body.tick_number) && Number.isInteger(summary.body.timestamp_ms));
    assert.equal(typeof summary.body.evaluation_duration_ms, 'number');
    assert.ok(summary.body.evaluation_duration_ms >= 0);
    const mainSummary = (await call(admin, 'GET', `${M}/alarm/summary?${q({ collection_id: MAIN_ID })}`)).body;
    const triggeredInMain = (await plant.snapshot()).collections.find((c: any) => c.collection_id === MAIN_ID).tags.filter((t: any) => t.state !== 'normal').length;
    assert.equal(mainSummary.collection_count, 1);
    assert.equal(mainSummary.triggered_tags, triggeredInMain);
    assert.ok(mainSummary.triggered_tags >= 1);
    const auxSummary = (await call(admin, 'GET', `${M}/alarm/summary?${q({ collection_id: AUX_ID })}`)).body;
    assert.deepEqual([auxSummary.collection_count, auxSummary.triggered_tags], [1, 0]);

    const triggered = await call(admin, 'GET', `${M}/alarm/triggered-only`);
    assert.equal(triggered.status, 200, triggered.text);
    assert.deepEqual(Object.keys(triggered.body).sort(), ['collections', 'tick_number', 'timestamp_ms']);
    const ids = triggered.body.collections.map((c: any) => c.collection_id);
    assert.ok(ids.includes(MAIN_ID));
    assert.ok(!ids.includes(AUX_ID), 'a collection whose tags are all normal is left out');
    for (const c of triggered.body.collections) assert.ok(c.tags.some((t: any) => t.state !== 'normal'), c.collection_id);
    const filtered = (await call(admin, 'GET', `${M}/alarm/triggered-only?${q({ collection_id: AUX_ID })}`)).body;
    assert.deepEqual(filtered.collections, []);

    await plant.writeValue(MAIN, 'TR-1', 100);
    await plant.untilEvent(rule, 'TR-1 resolves', (e) => e.status === 'resolved');
  });

  test('monitor switched off: nothing is evaluated; switched on again, the value above the limit opens its event', async () => {
    const rule = await plant.rule({ collection_id: MAIN_ID, tag: 'CF-1', limHi: 500 });
    await settle(MAIN, 'CF-1', 100);
    assert.deepEqual((await call(admin, 'PUT', `${M}/config`, { enabled: false })).body, { ok: true });
    try {
      const ts = await plant.writeValue(MAIN, 'CF-1', 600);
      // No tick runs while the monitor is off, so nothing shows that one would have: give it several tick periods.
      await clockPast(ts + 8 * TICK_MS);
      assert.deepEqual(await plant.ruleEvents(rule), [], 'no evaluation while the monitor is off');
    } finally {
      assert.deepEqual((await call(admin, 'PUT', `${M}/config`, { enabled: true })).body, { ok: true });
    }
    const event = await plant.untilEvent(rule, 'CF-1 opens once the monitor is on');
    assert.equal(event.value, 600);
    await plant.writeValue(MAIN, 'CF-1', 100);
    await plant.untilEvent(rule, 'CF-1 resolves', (e) => e.status === 'resolved');
  });

  test('rules from tagmeta: limits and dataTagId make one rule; changing the limits updates it; deleting the tagmeta deletes it', async () => {
    const b2 = collectionIdOf(B2);
    const unit = await plant.unitOf(B2);
    await plant.writeValue(B2, 'TM-0', 100);
    await plant.writeValue(B2, 'TM-1', 100);
    const rulesOf = async () => (await call(admin, 'GET', `${M}/rule?${q({ collection_id: b2 })}`)).body as any[];

    const noLimits = await call(admin, 'POST', '/svcapi/tagmeta', { tagName: 'Flow', unitsId: unit, dataTagId: 'TM-0', unit: 'm3/h' });
    assert.equal(noLimits.status, 200, noLimits.text);
    const created = await call(admin, 'POST', '/svcapi/tagmeta', { tagName: 'Drum', unitsId: unit, dataTagId: 'TM-1', unit: 'degC', limLo: 10, limHi: 500 });
    assert.equal(created.status, 200, created.text);
    const tagmetaId = String(created.body.id);
    let rule: any;
    await waitFor(async () => (rule = (await rulesOf()).find((r) => String(r.tagmetaId) === tagmetaId)) !== undefined, 'the tagmeta row makes a rule', { timeoutMs: 15_000, intervalMs: 50 });
    assert.equal(rule.tagmetaId, tagmetaId);
    assert.equal(rule.collection_id, b2);
    assert.equal(rule.tag, 'TM-1');
    assert.equal(rule.limHi, 500);
    assert.equal(rule.limLo, 10);
    await waitFor(async () => Number.isInteger((rule = (await rulesOf()).find((r) => r.id === rule.id)).tag_index), 'the tag was written before, so the rule gets its index', { timeoutMs: 15_000, intervalMs: 50 });
    assert.ok(!(await rulesOf()).some((r) => r.tag === 'TM-0'), 'a tagmeta row without limits makes no rule');

    await plant.writeValue(B2, 'TM-1', 600);
    const event = await plant.untilEvent(rule.id, 'the tagmeta rule raises an event');
    assert.equal(event.limit, 500);

    const put = await call(admin, 'PUT', `/svcapi/tagmeta/${tagmetaId}`, { limHi: 700 });
    assert.equal(put.status, 200, put.text);
    await waitFor(async () => (rule = (await rulesOf()).find((r) => String(r.tagmetaId) === tagmetaId))?.limHi === 700, 'the rule takes the new limHi', { timeoutMs: 15_000, intervalMs: 50 });
    assert.equal(rule.limLo, 10);
    assert.equal((await rulesOf()).filter((r) => String(r.tagmetaId) === tagmetaId).length, 1, 'updated, not duplicated');
    await plant.untilEvent(rule.id, 'under the raised limit the event resolves', (e) => e.id === event.id && e.status === 'resolved');

    const del = await call(admin, 'DELETE', `/svcapi/tagmeta/${tagmetaId}`);
    assert.equal(del.status, 200, del.text);
    await waitFor(async () => !(await rulesOf()).some((r) => String(r.tagmetaId) === tagmetaId), 'deleting the tagmeta row deletes its rule', { timeoutMs: 15_000, intervalMs: 50 });
    assert.equal((await call(admin, 'GET', `${M}/rule/${enc(rule.id)}`)).status, 404);
  });

  test('update-all on units with limLo, limHi and dataTagId makes one rule per collection of the unit, and updates them', async () => {
    const collections = [collectionIdOf(B3_MAIN), collectionIdOf(B3_AUX)];
    const rulesFor = async () => {
      const out: any[] = [];
      for (const id of collections) out.push(...((await call(admin, 'GET', `${M}/rule?${q({ collection_id: id })}`)).body as any[]).filter((r) => r.tag === 'UA-1'));
      return out;
    };
    const where = enc(JSON.stringify({ name: B3_MAIN.unit }));
    const first = await call(admin, 'POST', `/svcapi/units/update?where=${where}`, { limLo: 5, limHi: 95, dataTagId: 'UA-1' });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { count: 1 });
    let rules: any[] = [];
    await waitFor(async () => (rules = await rulesFor()).length === 2, 'one rule in each collection of the unit', { timeoutMs: 15_000, intervalMs: 50 });
    assert.deepEqual(rules.map((r) => r.collection_id).sort(), collections.slice().sort());
    for (const r of rules) assert.deepEqual([r.limLo, r.limHi], [5, 95]);
    const ids = rules.map((r) => r.id).sort();

    const second = await call(admin, 'PUT', `/svcapi/units/update?where=${where}`, { limLo: 0, limHi: 90, dataTagId: 'UA-1' });
    assert.equal(second.status, 200, second.text);
    await waitFor(async () => (rules = await rulesFor()).every((r) => r.limHi === 90), 'the rules take the new limits', { timeoutMs: 15_000, intervalMs: 50 });
    assert.deepEqual(rules.map((r) => r.id).sort(), ids, 'the same rules, updated');
    for (const r of rules) assert.deepEqual([r.limLo, r.limHi], [0, 90]);
  });

  // Last: it deletes resolved events of the tests above.
  test('cleanup deletes the resolved events that started before older_than_ms and keeps every unresolved one', async () => {
    const open = await plant.rule({ collection_id: MAIN_ID, tag: 'CL-1', limHi: 500 });
    await plant.writeValue(MAIN, 'CL-1', 600);
    const openEvent = await plant.untilEvent(open, 'CL-1 opens');
    // No tick while counting and cleaning, so nothing resolves or opens in between.
    assert.deepEqual((await call(admin, 'PUT', `${M}/config`, { enabled: false })).body, { ok: true });
    try {
      const cut = Date.now();
      const resolvedBefore = (await plant.events({ status: 'resolved', to_ms: cut - 1, limit: 1 })).total_count;
      const unresolved = (await plant.events({ status: 'unresolved', limit: 1000 })).events.map((e) => e.id).sort();
      assert.ok(resolvedBefore >= 10, `the tests above left resolved events (${resolvedBefore})`);
      assert.ok(unresolved.includes(openEvent.id));

      for (const body of [{}, { older_than_ms: 'yesterday' }]) {
        const bad = await call(admin, 'DELETE', `${M}/alarm/events/cleanup`, body);
        assert.equal(bad.status, 400, `${JSON.stringify(body)}: ${bad.text}`);
        assert.match(bad.body.error, /older_than_ms/);
      }
      const res = await call(admin, 'DELETE', `${M}/alarm/events/cleanup`, { older_than_ms: cut });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { deleted_count: resolvedBefore });
      assert.equal((await plant.events({ status: 'resolved', to_ms: cut - 1 })).total_count, 0);
      assert.deepEqual((await plant.events({ status: 'unresolved', limit: 1000 })).events.map((e) => e.id).sort(), unresolved, 'unresolved events are never deleted');
      assert.equal((await call(admin, 'GET', `${M}/alarm/events/${enc(openEvent.id)}`)).status, 200);
      assert.deepEqual((await call(admin, 'DELETE', `${M}/alarm/events/cleanup`, { older_than_ms: cut })).body, { deleted_count: 0 });
    } finally {
      await call(admin, 'PUT', `${M}/config`, { enabled: true });
    }
  });
});

describe('monitor state survives a restart', () => {
  const ON_DELAY = 8000;
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    test(`${signal} in the middle of an on-delay: after the restart the event opens from the carried-over delay, exactly once; an open event stays open`, async () => {
      let svc = await startService();
      try {
        let admin = await svc.adminToken();
        const plant = new Plant(() => svc, () => admin);
        await plant.collection(MAIN, TICK_MS);
        await plant.heartbeat(MAIN);
        const delayed = await plant.rule({ collection_id: MAIN_ID, tag: 'RS-1', limHi: 500, on_delay_ms: ON_DELAY });
        const immediate = await plant.rule({ collection_id: MAIN_ID, tag: 'RS-2', limHi: 500 });
        const ts = nextTsRun(2);
        await plant.write(MAIN, { 'RS-1': [[ts, 600]], 'RS-2': [[ts + 1, 600]] });
        await plant.untilSeen(MAIN_ID, 'RS-1', ts);
        const seenBy = Date.now(); // the on-delay began at a tick before this
        const openEvent = await plant.untilEvent(immediate, 'RS-2 opens at once');
        assert.deepEqual(await plant.ruleEvents(delayed), [], 'RS-1 is in its on-delay when the service stops');

        await svc.stop(signal);
        // The on-delay runs out while the service is down (nothing to poll: there is no service).
        await clockPast(seenBy + ON_DELAY + 500);
        const restartedAt = Date.now();
        svc = await startService({ dataDir: svc.dataDir });
        admin = await svc.adminToken();

        const event = await plant.untilEvent(delayed, 'RS-1 opens after the restart', () => true, 30_000);
        assert.equal(event.status, 'active');
        assert.equal(event.value, 600);
        // An on-delay started afresh by the new process could not end before restartedAt + ON_DELAY.
        assert.ok(event.started_ms < restartedAt + ON_DELAY, `opened from the carried-over on-delay (started_ms ${event.started_ms}, restart at ${restartedAt})`);
        await plant.tickPassed(MAIN);
        await plant.tickPassed(MAIN);
        assert.equal((await plant.ruleEvents(delayed)).length, 1, 'exactly one event for the delayed rule');
        const immediateEvents = await plant.ruleEvents(immediate);
        assert.deepEqual(immediateEvents.map((e) => [e.id, e.status]), [[openEvent.id, 'active']], 'the event open before the restart is still the one open event');
        assert.equal(immediateEvents[0].started_ms, openEvent.started_ms);
      } finally {
        await svc.dispose();
      }
    });
  }
});
