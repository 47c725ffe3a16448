// The MQTT collector end to end: a real mosquitto, the service started as a child process, a
// collector saved through POST /svcapi/collectors, publishers from the `mqtt` package playing a
// Sparkplug edge node with a device and plain JSON/value sources, and the values read back
// exactly with fast_query and lastlist. Also: QoS 1 messages published while the service is
// down (SIGTERM and kill -9) arrive after it comes back, a broker restart is reconnected, and
// refused credentials are `failed` with no password in the status, the answers or the log.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import mqtt from 'mqtt';
import { SparkplugType as T } from '../../native-free-codecs/sparkplug-b.js';
import { startService, type TestService } from '../api/harness.js';
import { Mosquitto, mosquittoSkip } from '../support/mosquitto.js';
import { EdgeNode } from '../support/sparkplug-edge.js';
import { waitFor } from '../support/wait-for.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const BROKER_PASSWORD = 'broker-secret-pw-4711';
const skip = mosquittoSkip;
/** An hour ago, on a whole second: timestamps the tests choose and then expect back exactly. */
const TS = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;

let broker: Mosquitto;
let svc: TestService;
let admin: string;
/** MQTT clients of the tests, ended at the end whatever failed. */
const clients: mqtt.MqttClient[] = [];

before(async () => {
  if (skip) return;
  broker = await Mosquitto.start({ users: { historian: BROKER_PASSWORD, edge: 'edge-pw' } });
  svc = await startService();
  admin = await svc.adminToken();
});
after(async () => {
  for (const c of clients) await c.endAsync(true);
  await svc?.dispose();
  await broker?.dispose();
});

async function createCollector(name: string, items: Array<Record<string, unknown>>, connection: Record<string, unknown> = {}): Promise<string> {
  const res = await svc.post('/svcapi/collectors', {
    name, kind: 'mqtt', enabled: true, ...SCOPE,
    connection: { url: broker.url, username: 'historian', password: BROKER_PASSWORD, clean: false, ...connection },
    items,
  }, admin);
  assert.equal(res.status, 200, res.text);
  return res.body.id as string;
}

async function status(id: string): Promise<Record<string, any>> {
  const res = await svc.get(`/svcapi/collectors/${id}/status`, admin);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function waitState(id: string, state: string, what = `collector ${state}`): Promise<void> {
  let last: unknown;
  await waitFor(async () => {
    last = await status(id);
    return (last as { state: string }).state === state;
  }, what, { timeoutMs: 20_000 }).catch((err: Error) => {
    throw new Error(`${err.message}; last status ${JSON.stringify(last)}`);
  });
}

async function query(tags: string[]): Promise<Record<string, Array<[number, number]>>> {
  const params = new URLSearchParams({ ...SCOPE, start: String(TS - 3_600_000), end: String(Date.now() + 3_600_000) });
  for (const t of tags) params.append('tags', t);
  const res = await svc.get(`/svcapi/fast_query?${params}`, admin);
  // The collection is made by the collector's first write.
  if (res.status === 404 && /collection .* not found/.test(res.text)) return {};
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function lastlist(tags: string[]): Promise<Record<string, [number, number] | null>> {
  const res = await svc.post('/svcapi/lastlist', { ...SCOPE, tags }, admin);
  if (res.status === 404 && /collection .* not found/.test(res.text)) return {};
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Waits until fast_query answers `expected` for its tags (exactly). */
async function expectValues(expected: Record<string, Array<[number, number]>>, what: string, timeoutMs = 20_000): Promise<void> {
  let got: unknown;
  await waitFor(async () => {
    got = await query(Object.keys(expected));
    try {
      assert.deepEqual(got, expected);
      return true;
    } catch {
      return false;
    }
  }, what, { timeoutMs }).catch((err: Error) => {
    throw new Error(`${err.message}\n got ${JSON.stringify(got)}\nwant ${JSON.stringify(expected)}`);
  });
}

async function publisher(): Promise<mqtt.MqttClient> {
  const client = await mqtt.connectAsync(broker.url, { username: 'edge', password: 'edge-pw', clientId: `pub-${Math.random().toString(36).slice(2)}` });
  clients.push(client);
  return client;
}

async function edgeNode(group: string, edge: string): Promise<EdgeNode> {
  const node = await EdgeNode.connect(broker.url, group, edge, { username: 'edge', password: 'edge-pw' });
  clients.push(node.client);
  return node;
}

test('sparkplug: an edge node and a device through POST /svcapi/collectors, values exact, rebirth asked, skips counted', { skip }, async () => {
  const id = await createCollector('plant sparkplug', [{ topic: 'spBv1.0/Plant/#', format: 'sparkplug_b' }]);
  await waitState(id, 'connected');
  const edge = await edgeNode('Plant', 'Edge1');
  await edge.birth([
    { name: 'Temperature', alias: 1, datatype: T.Double, value: 20.5, timestamp: TS },
    { name: 'Serial', alias: 2, datatype: T.String, value: 'SN-1' },
  ], TS);
  await edge.deviceBirth('Pump1', [
    { name: 'Speed', alias: 10, datatype: T.Int32, value: -5, timestamp: TS },
    { name: 'Running', alias: 11, datatype: T.Boolean, value: true, timestamp: TS },
    { name: 'Recipe', alias: 12, datatype: T.DataSet, value: new Uint8Array([8, 1, 18, 1, 0x78]) },
  ], TS);
  await edge.data([
    { alias: 10, datatype: T.Int32, omitDatatype: true, value: 1500, timestamp: TS + 1000 },
    { alias: 11, datatype: T.Boolean, omitDatatype: true, value: false, timestamp: TS + 1000 },
  ], { device: 'Pump1' });
  await edge.data([{ alias: 1, datatype: T.Double, omitDatatype: true, value: 21.25, timestamp: TS + 2000 }]);
  await expectValues({
    'Plant/Edge1/Temperature': [[TS, 20.5], [TS + 2000, 21.25]],
    'Plant/Edge1/Pump1/Speed': [[TS, -5], [TS + 1000, 1500]],
    'Plant/Edge1/Pump1/Running': [[TS, 1], [TS + 1000, 0]],
    'Plant/Edge1/Serial': [],
    'Plant/Edge1/Pump1/Recipe': [],
  }, 'sparkplug values stored');
  assert.deepEqual(await lastlist(['Plant/Edge1/Temperature', 'Plant/Edge1/Pump1/Speed']), {
    'Plant/Edge1/Temperature': [TS + 2000, 21.25],
    'Plant/Edge1/Pump1/Speed': [TS + 1000, 1500],
  });

  // an alias no birth defined: the edge node is asked for a rebirth
  await edge.data([{ alias: 77, datatype: T.Double, omitDatatype: true, value: 1 }], { device: 'Pump1' });
  await waitFor(() => edge.rebirthRequests() === 1, 'NCMD Node Control/Rebirth received by the edge node');
  const s = await status(id);
  assert.equal(s.values_stored, 6);
  assert.equal(s.values_skipped, 3, 'the string, the dataset, the unknown alias');
  assert.equal(s.items, 1);
  assert.ok(s.last_value_ms >= TS + 2000);
});

test('json and value topics: value_path and time_path, tag from the item or the topic', { skip }, async () => {
  const id = await createCollector('plant json', [
    { topic: 'acme/north/+/telemetry', format: 'json', value_path: 'reading.value', time_path: 'reading.ts' },
    { topic: 'acme/north/raw/pressure', format: 'value', tag: 'PI-202' },
  ]);
  await waitState(id, 'connected');
  const pub = await publisher();
  await pub.publishAsync('acme/north/ti101/telemetry', JSON.stringify({ reading: { value: 71.25, ts: TS } }), { qos: 1 });
  await pub.publishAsync('acme/north/ti101/telemetry', JSON.stringify({ reading: { value: 71.5, ts: new Date(TS + 1000).toISOString() } }), { qos: 1 });
  await pub.publishAsync('acme/north/ti101/telemetry', '{"reading": oops', { qos: 1 });
  await pub.publishAsync('acme/north/raw/pressure', '4.75', { qos: 1 });
  await expectValues({ 'acme/north/ti101/telemetry': [[TS, 71.25], [TS + 1000, 71.5]] }, 'json values');
  await waitFor(async () => (await lastlist(['PI-202']))['PI-202']?.[1] === 4.75, 'the plain value under its item tag');
  assert.equal((await status(id)).values_skipped, 1);
});

test('QoS 1 messages published while the service is down (SIGTERM, then kill -9 while publishing) all arrive', { skip }, async () => {
  const id = await createCollector('persistent', [
    { topic: 'persist/v', format: 'json', value_path: 'v', time_path: 't' },
    { topic: 'spBv1.0/Persist/#', format: 'sparkplug_b' },
  ]);
  await waitState(id, 'connected');
  const edge = await edgeNode('Persist', 'E');
  await edge.birth([{ name: 'Flow', alias: 1, datatype: T.Float, value: 0, timestamp: TS }], TS);
  const pub = await publisher();
  const sent: Array<[number, number]> = [];
  const send = async (i: number) => {
    await pub.publishAsync('persist/v', JSON.stringify({ v: i, t: TS + i }), { qos: 1 });
    sent.push([TS + i, i]);
  };
  await send(0);
  await expectValues({ 'persist/v': [[TS, 0]], 'Persist/E/Flow': [[TS, 0]] }, 'first values');

  // SIGTERM: the broker queues what comes meanwhile for the collector's session
  const dataDir = svc.dataDir;
  await svc.stop('SIGTERM');
  for (let i = 1; i <= 50; i++) await send(i);
  await edge.data([{ alias: 1, datatype: T.Float, omitDatatype: true, value: 2.5, timestamp: TS + 100 }]);
  svc = await startService({ dataDir });
  admin = await svc.adminToken();
  await expectValues({ 'persist/v': sent, 'Persist/E/Flow': [[TS, 0], [TS + 100, 2.5]] }, 'values published during the SIGTERM downtime', 30_000);

  // kill -9 in the middle of a stream: what the service had not stored it had not acknowledged
  let i = 51;
  const stream = (async () => {
    for (; i <= 400; i++) {
      await send(i);
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await waitFor(() => i > 150, 'stream under way');
  await svc.stop('SIGKILL');
  await waitFor(() => i > 250, 'stream goes on while the service is down');
  svc = await startService({ dataDir });
  admin = await svc.adminToken();
  await stream;
  await expectValues({ 'persist/v': sent }, 'every value of the stream, none lost to the kill', 30_000);
  assert.equal(sent.length, 401);
  void id;
});

test('a broker restart: reconnecting, then connected, and what is published after is stored', { skip }, async () => {
  const id = await createCollector('restarts', [{ topic: 'restart/#', format: 'value' }]);
  await waitState(id, 'connected');
  const states = new Set<string>();
  let watching = true;
  const watch = (async () => {
    while (watching) {
      states.add((await status(id)).state);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  await broker.stop();
  await waitFor(() => states.has('reconnecting'), 'status reconnecting while the broker is down');
  await broker.restart();
  await waitState(id, 'connected', 'connected again');
  watching = false;
  await watch;
  const pub = await publisher();
  await pub.publishAsync('restart/x', '12.5', { qos: 1 });
  await waitFor(async () => (await lastlist(['restart/x']))['restart/x']?.[1] === 12.5, 'value after the restart');
  // The lost connection was told (to the admins: this unit has no unit entity); the first connect was not news.
  const notes = (await svc.get('/svcapi/notifications', admin)).body as Array<{ title: string; source: string; severity: string; payload: Record<string, unknown> }>;
  const told = notes.filter((n) => n.payload?.collector_id === id);
  assert.deepEqual(told.map((n) => [n.title, n.source, n.severity]), [['Collector restarts reconnecting', 'system', 'warn']]);
  // /metrics: the per-kind families count what was stored (an admin token may scrape).
  const metrics = await svc.get('/metrics', admin);
  assert.equal(metrics.status, 200, metrics.text);
  const stored = Number(/^historian_collector_values_stored_total\{kind="mqtt"\} (\d+)/m.exec(metrics.text)?.[1]);
  assert.ok(stored >= 1, `historian_collector_values_stored_total{kind="mqtt"} counts the stored values: ${stored}`);
  assert.match(metrics.text, /^historian_collectors\{kind="mqtt",state="connected"\} [1-9]/m);
  assert.match(metrics.text, /^historian_collectors\{kind="opcua",state="connected"\} 0/m);
  assert.ok(!metrics.text.includes(id), 'no collector id in /metrics');
});

test('refused credentials: failed, and the password is in no status, answer or log line', { skip }, async () => {
  const wrong = 'wrong-secret-pw-0815';
  const id = await createCollector('bad login', [{ topic: 'x/#', format: 'value' }], { password: wrong });
  await waitState(id, 'failed');
  const s = await status(id);
  assert.match(s.error, /Not authorized|Bad User Name or Password/i);
  const got = await svc.get(`/svcapi/collectors/${id}`, admin);
  assert.equal(got.body.connection.password, '********');
  const list = await svc.get('/svcapi/collectors', admin);
  for (const secret of [wrong, BROKER_PASSWORD]) {
    assert.ok(!JSON.stringify(s).includes(secret));
    assert.ok(!list.text.includes(secret), 'list answer');
    assert.ok(!svc.logLines.some((l) => l.includes(secret)), 'log lines');
  }
});
