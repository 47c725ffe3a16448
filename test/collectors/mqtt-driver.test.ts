// The MQTT collector driver on its own against a real mosquitto, with a sink that records what
// it is given: the broker behaviours that are awkward to stage through the whole service (a
// relay that cuts every connection each second, a sink that holds a write forever while another
// client takes the session over, storage refusing a poison message). End to end through
// /svcapi/collectors: test/collectors/mqtt.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import mqtt from 'mqtt';
import pino from 'pino';
import { SparkplugType as T } from '../../native-free-codecs/sparkplug-b.js';
import type { CollectedValue, CollectorDefinition, CollectorSink, RunningCollector } from '../../src/collectors/driver.js';
import { mqttDriver } from '../../src/collectors/mqtt/driver.js';
import { badRequest, ServiceError } from '../../shared/errors.js';
import { tempDir } from '../api/harness.js';
import { flakyRelay, Mosquitto, mosquittoSkip } from '../support/mosquitto.js';
import { EdgeNode } from '../support/sparkplug-edge.js';
import { waitFor } from '../support/wait-for.js';

class RecordingSink implements CollectorSink {
  readonly values: CollectedValue[] = [];
  readonly backfilled: CollectedValue[] = [];
  readonly states: Array<[string, string | undefined]> = [];
  readonly skips = new Map<string, number>();
  readonly logLines: string[] = [];
  writes = 0;
  /** Replaces the write (a test's failure or hold). */
  intercept: ((values: readonly CollectedValue[]) => Promise<void> | null) | null = null;
  readonly log = pino({ level: 'debug' }, { write: (line: string) => void this.logLines.push(line) });

  async write(values: readonly CollectedValue[], options?: { backfill?: boolean }): Promise<void> {
    this.writes++;
    const intercepted = this.intercept?.(values);
    if (intercepted) await intercepted;
    (options?.backfill ? this.backfilled : this.values).push(...values);
  }
  async lastStored(tags: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const v of [...this.values, ...this.backfilled]) if (tags.includes(v.tag) && v.ts > (out.get(v.tag) ?? -Infinity)) out.set(v.tag, v.ts);
    return out;
  }
  skipped(count: number, reason: string): void {
    this.skips.set(reason, (this.skips.get(reason) ?? 0) + count);
  }
  state(state: string, error?: string): void {
    this.states.push([state, error]);
  }
  get lastState(): string | undefined {
    return this.states.at(-1)?.[0];
  }
  valuesOf(tag: string): Array<[number, number]> {
    return this.values.filter((v) => v.tag === tag).map((v) => [v.ts, v.value]);
  }
}

let broker: Mosquitto;
const dataDir = tempDir('mqtt-driver-');
const running: RunningCollector[] = [];
let nextId = 1;

before(async () => {
  if (!mosquittoSkip) broker = await Mosquitto.start({ users: { collector: 'collector-secret-pw', edge: 'edge-pw' }, tls: true });
});
after(async () => {
  for (const r of running) await r.stop();
  await broker?.dispose();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function definition(items: Array<Record<string, unknown>>, connection: Record<string, unknown> = {}): CollectorDefinition {
  return {
    id: `c${nextId++}-${process.pid}`,
    name: 'mqtt test',
    kind: 'mqtt',
    organization: 'acme',
    site: 'north',
    unit: 'boiler-1',
    grid: 'main',
    connection: { url: broker.url, username: 'collector', password: 'collector-secret-pw', ...connection },
    items,
  };
}

function start(def: CollectorDefinition, sink = new RecordingSink()): { sink: RecordingSink; collector: RunningCollector } {
  const collector = mqttDriver.start(def, sink, { secretsDir: `${dataDir}/secrets`, stateDir: `${dataDir}/collectors/${def.id}`, now: () => Date.now() });
  running.push(collector);
  return { sink, collector };
}

async function publisher(): Promise<mqtt.MqttClient> {
  return mqtt.connectAsync(broker.url, { username: 'edge', password: 'edge-pw', clientId: `pub-${nextId++}` });
}

const TS = 1_700_000_000_000;
const skip = mosquittoSkip;

test('validate names the bad field', { skip }, () => {
  const ok = [{ topic: 'spBv1.0/#', format: 'sparkplug_b' }];
  const cases: Array<[Record<string, unknown>, Array<Record<string, unknown>>, RegExp]> = [
    [{ url: 'http://x' }, ok, /connection\.url must be mqtt/],
    [{ url: 'mqtt://u:p@x' }, ok, /must not carry credentials/],
    [{ url: 'mqtt://x' }, [], /items must be a non-empty array/],
    [{ url: 'mqtt://x' }, [ok[0]!, { topic: 'a/#/b', format: 'json' }], /items\[1\]\.topic may have '#' only/],
    [{ url: 'mqtt://x' }, [{ topic: 'a/b+', format: 'json' }], /items\[0\]\.topic may have '\+' only/],
    [{ url: 'mqtt://x' }, [ok[0]!, ok[0]!, { topic: 'a', format: 'xml' }], /items\[2\]\.format must be one of sparkplug_b, json, value/],
    [{ url: 'mqtt://x' }, [{ topic: 'a', format: 'json', value_path: 3 }], /items\[0\]\.value_path must be a string/],
    [{ url: 'mqtt://x' }, [{ topic: 'plant/#', format: 'sparkplug_b' }], /items\[0\]\.topic must start with spBv1\.0\//],
    [{ url: 'mqtt://x', clean: 'no' }, ok, /connection\.clean must be a boolean/],
    [{ url: 'mqtt://x', ca_pem: 'x' }, ok, /connection\.ca_pem must be a PEM/],
  ];
  for (const [connection, items, message] of cases) {
    assert.throws(() => mqttDriver.validate(connection, items), (err: unknown) => err instanceof ServiceError && err.status === 400 && message.test(err.message), `${JSON.stringify([connection, items])}`);
  }
  mqttDriver.validate({ url: 'mqtts://broker:8883', username: 'u', password: 'p', client_id: 'x', clean: false, ca_pem: '-----BEGIN CERTIFICATE-----\n' }, [
    ...ok,
    { topic: 'plant/+/temp', format: 'json', value_path: 'data.v', time_path: 'data.t' },
    { topic: 'plant/raw', format: 'value', tag: 'TI-101' },
  ]);
  assert.deepEqual(mqttDriver.secretFields, ['password']);
});

test('sparkplug: births define aliases, data by alias becomes values with exact tags; strings and datasets are counted', { skip }, async () => {
  const { sink } = start(definition([{ topic: 'spBv1.0/G1/#', format: 'sparkplug_b' }]));
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  const edge = await EdgeNode.connect(broker.url, 'G1', 'E1', { username: 'edge', password: 'edge-pw' });
  await edge.birth([
    { name: 'Temperature', alias: 1, datatype: T.Double, value: 20.5, timestamp: TS },
    { name: 'Firmware', alias: 2, datatype: T.String, value: 'v1.2' },
  ], TS);
  await edge.deviceBirth('pump1', [
    { name: 'Speed', alias: 10, datatype: T.Int32, value: -5, timestamp: TS },
    { name: 'Running', alias: 11, datatype: T.Boolean, value: true, timestamp: TS },
    { name: 'Table', alias: 12, datatype: T.DataSet, value: new Uint8Array([8, 1]) },
    { name: 'Total', alias: 13, datatype: T.UInt64, value: 2 ** 40, timestamp: TS },
  ], TS);
  await edge.data([{ alias: 10, value: 1500, datatype: T.Int32, timestamp: TS + 1000 }, { alias: 11, datatype: T.Boolean, value: false, timestamp: TS + 1000 }, { alias: 12, datatype: T.DataSet, value: new Uint8Array([8, 1]) }], { device: 'pump1' });
  // DATA without datatypes (as the spec recommends): the birth's types apply
  await edge.publish('DDATA', [{ alias: 10, datatype: T.Int32, omitDatatype: true, value: 1600, timestamp: TS + 2000 }], { device: 'pump1' });
  await edge.data([{ alias: 1, datatype: T.Double, value: 21.25, timestamp: TS + 1000 }, { alias: 2, datatype: T.String, value: 'v1.3' }]);
  await waitFor(() => sink.valuesOf('G1/E1/Temperature').length === 2 && sink.valuesOf('G1/E1/pump1/Speed').length === 3, 'values stored').catch((err) => {
    throw new Error(`${err.message}: ${JSON.stringify(sink.values)} ${JSON.stringify([...sink.skips])}`);
  });
  assert.deepEqual(sink.valuesOf('G1/E1/Temperature'), [[TS, 20.5], [TS + 1000, 21.25]]);
  assert.deepEqual(sink.valuesOf('G1/E1/pump1/Speed'), [[TS, -5], [TS + 1000, 1500], [TS + 2000, 1600]]);
  assert.deepEqual(sink.valuesOf('G1/E1/pump1/Running'), [[TS, 1], [TS + 1000, 0]]);
  assert.deepEqual(sink.valuesOf('G1/E1/pump1/Total'), [[TS, 2 ** 40]]);
  assert.equal(sink.values.filter((v) => /bdSeq|Node Control/.test(v.tag)).length, 0, 'protocol metrics are not values');
  assert.equal(sink.skips.get('sparkplug string metric'), 2);
  assert.equal(sink.skips.get('sparkplug dataset metric'), 2);
  assert.equal(edge.rebirthRequests(), 0);

  // an alias no birth defined: skipped, counted, and the edge node is asked for a rebirth
  await edge.data([{ alias: 99, datatype: T.Double, value: 1 }], { device: 'pump1' });
  await waitFor(() => edge.rebirthRequests() === 1, 'NCMD Rebirth received');
  assert.equal(sink.skips.get('sparkplug unknown alias'), 1);

  // NDEATH: the node's aliases are forgotten, its data is no longer resolved until a new birth
  await edge.death();
  await edge.data([{ alias: 1, datatype: T.Double, value: 99, timestamp: TS + 5000 }]);
  await waitFor(() => (sink.skips.get('sparkplug unknown alias') ?? 0) === 2, 'data after death not resolved');
  assert.deepEqual(sink.valuesOf('G1/E1/Temperature'), [[TS, 20.5], [TS + 1000, 21.25]]);
  await edge.close();
});

test('sparkplug: a sequence gap is counted and asks for a rebirth; what decodes is stored; garbage does not stop the collector', { skip }, async () => {
  const { sink } = start(definition([{ topic: 'spBv1.0/#', format: 'sparkplug_b' }]));
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  const edge = await EdgeNode.connect(broker.url, 'G2', 'E2', { username: 'edge', password: 'edge-pw' });
  await edge.birth([{ name: 'Level', alias: 1, datatype: T.Float, value: 1.5, timestamp: TS }], TS);
  edge.skipSeq(3);
  await edge.data([{ alias: 1, datatype: T.Float, value: 2.5, timestamp: TS + 1 }]);
  await waitFor(() => edge.rebirthRequests() === 1, 'rebirth asked after the gap');
  const pub = await publisher();
  await pub.publishAsync('spBv1.0/G2/NDATA/E2', Buffer.from([0x12, 0x05, 0xff]), { qos: 1 });
  await pub.publishAsync('spBv1.0/G2/NDATA/E2', Buffer.alloc(0), { qos: 1 });
  await edge.data([{ alias: 1, datatype: T.Float, value: 3.5, timestamp: TS + 2 }]);
  await waitFor(() => sink.valuesOf('G2/E2/Level').length === 3, 'values after garbage');
  assert.deepEqual(sink.valuesOf('G2/E2/Level'), [[TS, 1.5], [TS + 1, 2.5], [TS + 2, 3.5]]);
  assert.equal(sink.skips.get('sparkplug payload does not decode'), 1);
  assert.ok(sink.logLines.some((l) => l.includes('sequence gap')));
  await pub.endAsync();
  await edge.close();
});

test('json and value topics: paths, times, tag from the item or the topic; bad payloads are counted', { skip }, async () => {
  const { sink } = start(definition([
    { topic: 'plant/+/temp', format: 'json', value_path: 'data.v', time_path: 'data.t' },
    { topic: 'plant/raw', format: 'value', tag: 'TI-101' },
    { topic: 'plant/values/#', format: 'value' },
  ]));
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  const pub = await publisher();
  await pub.publishAsync('plant/a/temp', JSON.stringify({ data: { v: 71.25, t: TS } }), { qos: 1 });
  await pub.publishAsync('plant/b/temp', JSON.stringify({ data: { v: '72', t: new Date(TS + 1000).toISOString() } }), { qos: 1 });
  await pub.publishAsync('plant/c/temp', JSON.stringify({ data: { v: 1, t: TS / 1000 + 2 } }), { qos: 1 });
  await pub.publishAsync('plant/d/temp', 'not json', { qos: 1 });
  await pub.publishAsync('plant/d/temp', JSON.stringify({ data: { v: 'x' } }), { qos: 1 });
  await pub.publishAsync('plant/raw', ' 42.5\n', { qos: 1 });
  await pub.publishAsync('plant/raw', 'NaN', { qos: 1 });
  await pub.publishAsync('plant/values/x/y', '-7', { qos: 0 });
  await waitFor(() => sink.values.length === 5 && sink.skips.size === 3, `values: ${JSON.stringify(sink.values)} skips: ${JSON.stringify([...sink.skips])}`);
  assert.deepEqual(sink.valuesOf('plant/a/temp'), [[TS, 71.25]]);
  assert.deepEqual(sink.valuesOf('plant/b/temp'), [[TS + 1000, 72]]);
  assert.deepEqual(sink.valuesOf('plant/c/temp'), [[TS + 2000, 1]]);
  assert.deepEqual(sink.valuesOf('TI-101').map(([, v]) => v), [42.5]);
  assert.deepEqual(sink.valuesOf('plant/values/x/y').map(([, v]) => v), [-7]);
  assert.deepEqual([...sink.skips].sort(), [['payload is not JSON', 1], ['payload is not a number', 1], ['value is not a number', 1]]);
  await pub.endAsync();
});

test('a QoS 1 message is acknowledged only once stored: a client that takes the session over gets it again', { skip }, async () => {
  const clientId = `historian-takeover-${process.pid}`;
  const def = definition([{ topic: 'held/#', format: 'value' }], { client_id: clientId });
  const first = start(def);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  first.sink.intercept = () => held;
  await waitFor(() => first.sink.lastState === 'connected', 'first connected');
  const pub = await publisher();
  await pub.publishAsync('held/a', '1', { qos: 1 });
  await waitFor(() => first.sink.writes === 1, 'first got the message');
  // the same client id: the broker closes the first connection and hands the session to the second
  const second = start({ ...def, id: `${def.id}-b` });
  await waitFor(() => second.sink.valuesOf('held/a').length === 1, 'the unacknowledged message is delivered again');
  assert.deepEqual(second.sink.valuesOf('held/a').map(([, v]) => v), [1]);
  release();
  await first.collector.stop();
  await pub.publishAsync('held/a', '2', { qos: 1 });
  await waitFor(() => second.sink.valuesOf('held/a').length === 2, 'later messages go on');
  await pub.endAsync();
});

test('storage: a refused message is counted and acknowledged, an unavailable one is retried until stored', { skip }, async () => {
  const { sink } = start(definition([{ topic: 'store/#', format: 'value' }]));
  let unavailable = 2;
  sink.intercept = (values) => {
    if (values.some((v) => v.tag === 'store/poison')) return Promise.reject(badRequest('tag "store/poison": refused'));
    if (values.some((v) => v.tag === 'store/busy') && unavailable-- > 0) return Promise.reject(new ServiceError('UNAVAILABLE', 'write buffer full'));
    return null;
  };
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  const pub = await publisher();
  await Promise.all([pub.publishAsync('store/ok1', '1', { qos: 1 }), pub.publishAsync('store/poison', '2', { qos: 1 }), pub.publishAsync('store/ok2', '3', { qos: 1 })]);
  await pub.publishAsync('store/busy', '4', { qos: 1 });
  await waitFor(() => sink.valuesOf('store/busy').length === 1, 'retried write stored');
  assert.deepEqual(['store/ok1', 'store/ok2'].map((t) => sink.valuesOf(t).length), [1, 1]);
  assert.equal(sink.valuesOf('store/poison').length, 0);
  assert.equal(sink.skips.get('refused by storage: tag "store/poison": refused'), 1);
  await pub.endAsync();
});

test('a broker that drops the connection every second: the collector reconnects and every QoS 1 value arrives', { skip }, async () => {
  const relay = await flakyRelay(broker.port, 1000);
  const { sink } = start(definition([{ topic: 'flaky/#', format: 'value' }], { url: `mqtt://127.0.0.1:${relay.port}` }));
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  const pub = await publisher();
  const count = 40;
  for (let i = 0; i < count; i++) {
    await pub.publishAsync(`flaky/v`, String(i), { qos: 1 });
    await new Promise((r) => setTimeout(r, 100));
  }
  await waitFor(() => new Set(sink.valuesOf('flaky/v').map(([, v]) => v)).size === count, `all ${count} values (got ${sink.valuesOf('flaky/v').length})`, { timeoutMs: 30_000 });
  assert.ok(relay.cuts() >= 2, `the relay cut ${relay.cuts()} connections`);
  assert.ok(sink.states.some(([s]) => s === 'reconnecting'));
  await pub.endAsync();
  await relay.close();
});

test('bad credentials: failed, with an error that does not hold the password; TLS with the broker CA connects', { skip }, async () => {
  const { sink } = start(definition([{ topic: 'x/#', format: 'value' }], { password: 'wrong-password-123' }));
  await waitFor(() => sink.lastState === 'failed', 'failed');
  const [, error] = sink.states.at(-1)!;
  assert.match(error ?? '', /Not authorized|Bad User Name or Password/i);
  assert.ok(!sink.states.some(([, e]) => e?.includes('wrong-password-123')));
  assert.ok(!sink.logLines.some((l) => l.includes('wrong-password-123')));

  const tls = start(definition([{ topic: 'tls/#', format: 'value' }], { url: broker.tlsUrl, ca_pem: broker.caPem, protocol_version: 4 }));
  await waitFor(() => tls.sink.lastState === 'connected', `TLS connected (${JSON.stringify(tls.sink.states)})`);
  const pub = await publisher();
  await pub.publishAsync('tls/v', '5', { qos: 1 });
  await waitFor(() => tls.sink.valuesOf('tls/v').length === 1, 'value over TLS');
  // without the CA the broker's certificate is not trusted: failed, naming why
  const untrusted = start(definition([{ topic: 'tls/#', format: 'value' }], { url: broker.tlsUrl }));
  await waitFor(() => untrusted.sink.lastState === 'failed', 'untrusted TLS failed');
  await pub.endAsync();
});

test('100,000 topics under one filter: every value stored', { skip }, async () => {
  const { sink } = start(definition([{ topic: 'many/+/+', format: 'value' }]));
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  const pub = await publisher();
  const n = 100_000;
  const sends: Array<Promise<unknown>> = [];
  for (let i = 0; i < n; i++) {
    sends.push(pub.publishAsync(`many/${i % 317}/t${i}`, String(i), { qos: 1 }));
    if (sends.length === 1000) await Promise.all(sends.splice(0));
  }
  await Promise.all(sends);
  await waitFor(() => sink.values.length >= n, `${n} values (got ${sink.values.length})`, { timeoutMs: 60_000 });
  assert.equal(new Set(sink.values.map((v) => v.tag)).size, n);
  assert.ok(sink.writes < n, `batched into ${sink.writes} writes`);
  await pub.endAsync();
});

test('a broker restart: reconnecting, then connected, and values published after are stored', { skip }, async () => {
  const { sink } = start(definition([{ topic: 'restart/#', format: 'value' }]));
  await waitFor(() => sink.lastState === 'connected', 'collector connected');
  await broker.restart();
  await waitFor(() => sink.states.some(([s]) => s === 'reconnecting') && sink.lastState === 'connected', `reconnected: ${JSON.stringify(sink.states)}`, { timeoutMs: 30_000 });
  const pub = await publisher();
  await pub.publishAsync('restart/v', '8', { qos: 1 });
  await waitFor(() => sink.valuesOf('restart/v').length === 1, 'value after the restart');
  await pub.endAsync();
});
