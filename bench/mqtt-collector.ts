// The MQTT collector under load: 4 publisher threads, each an edge node with one device of 100
// Double metrics, send Sparkplug B DDATA (100 metrics a message, by alias, QoS 1) through a real
// mosquitto to a collector of our service at a fixed total rate (100,000 values/s by default) for
// N seconds. Every value is counted back (a count aggregator per metric), end-to-end latency is
// sampled with a marker edge node whose NDATA value is polled in `lastlist` until it shows, and
// the CPU of the service, the broker and the publishers is read from /proc.
//
//   node dist/bench/mqtt-collector.js [--seconds 20] [--rate 100000] [--publishers 4] [--qos 1]

import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import mqtt from 'mqtt';
import { encodeSparkplugPayload, SparkplugType, type SparkplugMetricInput } from '../native-free-codecs/sparkplug-b.js';
import { Mosquitto } from '../test/support/mosquitto.js';
import { EdgeNode } from '../test/support/sparkplug-edge.js';
import { percentiles, sleep } from './runner.js';
import { cpuMeter, json, processCpuSeconds, startOurService } from './service.js';

const METRICS = 100;
const SCOPE = { organization: 'bench', site: 'mqtt', unit: 'collector', grid: 'main' };

interface PublisherJob {
  url: string;
  index: number;
  messagesPerSecond: number;
  seconds: number;
  qos: 0 | 1;
  /** First timestamp; message k of this publisher carries base + k (unique per tag). */
  base: number;
}

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

// ---- publisher thread -----------------------------------------------------------------------

async function publish(job: PublisherJob): Promise<void> {
  const client = await mqtt.connectAsync(job.url, { clientId: `bench-pub-${job.index}`, clean: true, reconnectPeriod: 500 });
  const group = 'Bench';
  const edge = `Edge${job.index}`;
  const device = 'Dev';
  let seq = 0;
  const next = () => {
    const s = seq;
    seq = (seq + 1) % 256;
    return s;
  };
  const births: SparkplugMetricInput[] = [];
  for (let m = 0; m < METRICS; m++) births.push({ name: `m${m}`, alias: m + 1, datatype: SparkplugType.Double, value: 0, timestamp: job.base - 1 });
  await client.publishAsync(`spBv1.0/${group}/NBIRTH/${edge}`, Buffer.from(encodeSparkplugPayload({ timestamp: job.base - 1, seq: next(), metrics: [{ name: 'bdSeq', datatype: SparkplugType.UInt64, value: 0 }] })), { qos: 1 });
  await client.publishAsync(`spBv1.0/${group}/DBIRTH/${edge}/${device}`, Buffer.from(encodeSparkplugPayload({ timestamp: job.base - 1, seq: next(), metrics: births })), { qos: 1 });
  parentPort!.postMessage({ op: 'born' });
  await new Promise<void>((resolve) => parentPort!.once('message', () => resolve()));
  const topic = `spBv1.0/${group}/DDATA/${edge}/${device}`;
  const total = Math.round(job.messagesPerSecond * job.seconds);
  const metrics: SparkplugMetricInput[] = [];
  for (let m = 0; m < METRICS; m++) metrics.push({ alias: m + 1, datatype: SparkplugType.Double, omitDatatype: true, value: 0 });
  const start = performance.now();
  let sent = 0;
  let inFlight = 0;
  let maxLagMs = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * job.messagesPerSecond) + 1);
    maxLagMs = Math.max(maxLagMs, ((due - sent) / job.messagesPerSecond) * 1000);
    for (; sent < due; sent++) {
      const ts = job.base + sent;
      for (let m = 0; m < METRICS; m++) metrics[m]!.value = sent + m / 1000;
      const payload = Buffer.from(encodeSparkplugPayload({ timestamp: ts, seq: next(), metrics: metrics.map((x) => ({ ...x })) }));
      inFlight++;
      client.publish(topic, payload, { qos: job.qos }, () => inFlight--);
    }
    await sleep(5);
  }
  while (inFlight > 0) await sleep(10);
  const seconds = (performance.now() - start) / 1000;
  await client.endAsync();
  const usage = process.cpuUsage();
  parentPort!.postMessage({ op: 'done', sent, seconds, maxLagMs, cpuSeconds: (usage.user + usage.system) / 1e6 });
}

if (!isMainThread) {
  publish(workerData as PublisherJob).catch((err: unknown) => {
    parentPort!.postMessage({ op: 'error', message: String(err) });
  });
}

// ---- main -----------------------------------------------------------------------------------

async function main(): Promise<void> {
  const seconds = arg('seconds', 20);
  const rate = arg('rate', 100_000);
  const publishers = arg('publishers', 4);
  const qos = arg('qos', 1) as 0 | 1;
  const messagesPerSecond = rate / METRICS / publishers;
  process.stderr.write(`mosquitto and the service…\n`);
  const broker = await Mosquitto.start({ maxQueuedMessages: 10_000_000 });
  const svc = await startOurService({});
  const http = svc.client(4);
  const created = await http.postJson('/svcapi/collectors', {
    name: 'bench', kind: 'mqtt', enabled: true, ...SCOPE,
    connection: { url: broker.url, clean: false }, items: [{ topic: 'spBv1.0/#', format: 'sparkplug_b' }],
  });
  if (created.status !== 200) throw new Error(`create collector: ${created.status} ${created.body.toString()}`);
  const id = json(created).id as string;
  const status = async () => json(await http.get(`/svcapi/collectors/${id}/status`));
  while ((await status()).state !== 'connected') await sleep(50);

  const base = Date.now() - 3_600_000 * 24;
  const workers = Array.from({ length: publishers }, (_, index) => new Worker(new URL(import.meta.url), {
    workerData: { url: broker.url, index, messagesPerSecond, seconds, qos, base: base + index * 10_000_000 } satisfies PublisherJob,
  }));
  const messages = workers.map((w) => {
    const queue: any[] = [];
    const waiters: Array<(m: any) => void> = [];
    w.on('message', (m) => (waiters.length ? waiters.shift()!(m) : queue.push(m)));
    w.on('error', (err) => {
      throw err;
    });
    return () => new Promise<any>((resolve) => (queue.length ? resolve(queue.shift()) : waiters.push(resolve)));
  });
  for (const next of messages) {
    const m = await next();
    if (m.op !== 'born') throw new Error(`publisher: ${JSON.stringify(m)}`);
  }
  // the births reach storage first (their values count too: one per metric)
  while ((await status()).values_stored < publishers * METRICS) await sleep(50);

  const marker = await EdgeNode.connect(broker.url, 'Bench', 'Marker');
  await marker.birth([{ name: 'marker', alias: 1, datatype: SparkplugType.Double, value: -1, timestamp: Date.now() }]);
  const markerTag = 'Bench/Marker/marker';
  const lastOf = async (): Promise<number | null> => {
    const r = await http.postJson('/svcapi/lastlist', { ...SCOPE, tags: [markerTag] });
    return r.status === 200 ? (json(r)[markerTag]?.[1] ?? null) : null;
  };
  while ((await lastOf()) !== -1) await sleep(20);

  const storedBefore = (await status()).values_stored as number;
  const pid = svc.process.pid;
  const brokerPid = broker.pid;
  const cpu0 = { svc: processCpuSeconds(pid), broker: brokerPid ? processCpuSeconds(brokerPid) : 0 };
  const other = cpuMeter();
  const t0 = performance.now();
  for (const w of workers) w.postMessage('go');
  process.stderr.write(`publishing ${rate} values/s from ${publishers} publishers for ${seconds} s (QoS ${qos})…\n`);

  // markers: one every 200 ms, polled in lastlist until it shows
  const latencies: number[] = [];
  let k = 0;
  const done = Promise.all(messages.map((next) => next()));
  let finished = false;
  void done.then(() => (finished = true));
  while (!finished) {
    const value = ++k;
    const sentAt = performance.now();
    await marker.data([{ alias: 1, datatype: SparkplugType.Double, omitDatatype: true, value, timestamp: Date.now() }], { qos: 1 });
    while ((await lastOf()) !== value) {
      if (performance.now() - sentAt > 30_000) throw new Error(`marker ${value} not visible within 30 s`);
    }
    latencies.push(performance.now() - sentAt);
    await sleep(Math.max(0, 200 - (performance.now() - sentAt)));
  }
  const results = await done;
  const sendSeconds = (performance.now() - t0) / 1000;
  for (const r of results) if (r.op !== 'done') throw new Error(`publisher: ${JSON.stringify(r)}`);
  const expected = results.reduce((n, r) => n + r.sent * METRICS, 0);

  // every value stored: the collector's counter, then counted back per metric
  const drainStart = performance.now();
  while ((await status()).values_stored - storedBefore < expected + k) {
    if (performance.now() - drainStart > 120_000) break;
    await sleep(50);
  }
  const drainSeconds = (performance.now() - drainStart) / 1000;
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpu1 = { svc: processCpuSeconds(pid), broker: brokerPid ? processCpuSeconds(brokerPid) : 0 };
  const otherCores = other();
  let counted = 0;
  for (let p = 0; p < publishers; p++) {
    const metricsBody = Array.from({ length: METRICS }, (_, m) => ({ name: `Bench/Edge${p}/Dev/m${m}`, aggregators: [{ name: 'count', sampling: { value: 3650, unit: 'days' } }] }));
    const r = await http.postJson('/svcapi/fast_query', { ...SCOPE, start_absolute: base - 1000, end_absolute: base + 100_000_000, metrics: metricsBody });
    if (r.status !== 200) throw new Error(`count: ${r.status} ${r.body.toString().slice(0, 300)}`);
    for (const points of Object.values(json(r) as Record<string, Array<[number, number]>>)) for (const [, n] of points) counted += n;
  }
  counted -= publishers * METRICS; // the births' values
  const final = await status();
  const lat = percentiles(latencies);
  const benchCpu = (process.cpuUsage().user + process.cpuUsage().system) / 1e6;
  const rows: Array<[string, string]> = [
    ['values published', `${expected.toLocaleString('en-US')} in ${sendSeconds.toFixed(1)} s = ${Math.round(expected / sendSeconds).toLocaleString('en-US')} values/s (publishers' worst lag behind schedule ${Math.max(...results.map((r) => r.maxLagMs)).toFixed(0)} ms)`],
    ['values stored (counted back)', `${counted.toLocaleString('en-US')} (${counted === expected ? 'all' : `${expected - counted} missing`}); stored through ${wallSeconds.toFixed(1)} s = ${Math.round(counted / wallSeconds).toLocaleString('en-US')} values/s; drained ${drainSeconds.toFixed(1)} s after the last publish`],
    ['end-to-end latency (publish → lastlist)', `p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms, max ${lat.max.toFixed(1)} ms (${latencies.length} markers)`],
    ['service CPU', `${(cpu1.svc - cpu0.svc).toFixed(1)} s = ${((cpu1.svc - cpu0.svc) / wallSeconds).toFixed(2)} cores`],
    ['mosquitto CPU', `${(cpu1.broker - cpu0.broker).toFixed(1)} s = ${((cpu1.broker - cpu0.broker) / wallSeconds).toFixed(2)} cores`],
    ['bench process CPU (publisher threads, encoding, marker polling)', `${benchCpu.toFixed(1)} s since it started`],
    ['other processes (mosquitto included)', `${otherCores.toFixed(2)} cores`],
    ['collector status', `values_stored ${final.values_stored}, values_skipped ${final.values_skipped}, state ${final.state}`],
  ];
  console.log(`\n### MQTT collector: Sparkplug B DDATA, ${METRICS} metrics a message, QoS ${qos}, ${publishers} publishers, target ${rate.toLocaleString('en-US')} values/s, ${seconds} s\n`);
  console.log('| what | figure |\n|---|---|');
  for (const [what, figure] of rows) console.log(`| ${what} | ${figure} |`);
  for (const w of workers) await w.terminate();
  await marker.close();
  http.close();
  await svc.dispose();
  await broker.dispose();
}

if (isMainThread) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
