// A real Prometheus (test/support/prometheus.ts) against our codecs and the service:
//
// - remote write: Prometheus scrapes itself every second and remote-writes to the service's
//   POST /api/v1/write over HTTPS (the service's CA, an API key as its credentials); its series
//   (`up`, `prometheus_build_info`, …) arrive with their labels, and the samples the service
//   stores are the ones Prometheus holds itself, timestamps and values exactly. Go's snappy
//   compressor and protobuf encoder against our decoders.
// - remote read: Prometheus reads from a loopback server of this test that answers with our
//   encodeReadResponse and snappyCompress; Prometheus' answers show the same samples (NaN and
//   ±Inf included) and labels. Go's snappy decoder and protobuf decoder against our encoders,
//   and our ReadRequest decoder against what Prometheus sends.

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { decodeReadRequest, encodeReadResponse, type EncodableSeries, type LabelMatcher, type RemoteReadRequest } from '../../native-free-codecs/prom-remote.js';
import { snappyCompress, snappyDecompress } from '../../native-free-codecs/snappy.js';
import { accountHelpers } from '../api/accounts.js';
import { startService, type TestService } from '../api/harness.js';
import { Prometheus, prometheusSkip } from '../support/prometheus.js';
import { waitFor } from '../support/wait-for.js';

const COLLECTION = 'acme/north/boiler-1/default';
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'default' };

interface Listed {
  tag: string;
  labels?: Record<string, string>;
  last_ms: number | null;
  last_value: number | null;
}

describe('a real Prometheus remote-writes into the service', { skip: prometheusSkip }, () => {
  let svc: TestService;
  let admin: string;
  let prometheus: Prometheus;

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    const helpers = accountHelpers(() => svc, () => admin);
    const org = await helpers.mk('orgs', { name: 'acme' });
    await helpers.mk('units', { name: 'boiler-1', siteId: await helpers.mk('sites', { name: 'north', orgsId: org }) });
    await helpers.mk('ingestconfigs', { clientId: 'prometheus', ...SCOPE });
    const writer = await helpers.account('prometheus@plant.test', { orgs: [org] });
    const made = await svc.post('/svcapi/api_keys', { name: 'prometheus remote write' }, writer.token);
    assert.equal(made.status, 201, made.text);
    prometheus = await Prometheus.start({
      files: { 'historian-ca.pem': svc.ca },
      config: (place) => ({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        scrape_configs: [{ job_name: 'prometheus', static_configs: [{ targets: [`127.0.0.1:${place.port}`] }] }],
        remote_write: [{
          url: `https://127.0.0.1:${svc.port}/api/v1/write?db=prometheus`,
          authorization: { credentials: made.body.key },
          tls_config: { ca_file: place.file('historian-ca.pem') },
          queue_config: { batch_send_deadline: '1s', min_backoff: '100ms', max_backoff: '1s' },
        }],
      }),
    });
  });
  after(async () => {
    await prometheus?.stop();
    await svc?.dispose();
  });

  async function listed(match: string): Promise<Listed[]> {
    const res = await svc.get(`/svcapi/series?collection=${encodeURIComponent(COLLECTION)}&match=${encodeURIComponent(match)}`, admin);
    if (res.status === 404) return []; // the first write has not come yet
    assert.equal(res.status, 200, res.text);
    return res.body.series;
  }

  test('up and prometheus_build_info arrive with their labels and values', async () => {
    const upTag = `up{instance="127.0.0.1:${prometheus.port}",job="prometheus"}`;
    let series: Listed[] = [];
    await waitFor(async () => {
      series = [...(await listed('up{*')), ...(await listed('prometheus_build_info*'))];
      return series.length >= 2;
    }, `remote-written series in the service\n${prometheus.log}\n${svc.logLines.slice(-20).join('\n')}`, { timeoutMs: 60_000, intervalMs: 250 });
    const up = series.find((s) => s.tag === upTag);
    assert.ok(up, `${upTag} among ${series.map((s) => s.tag).join(', ')}`);
    assert.deepEqual(up.labels, { __name__: 'up', instance: `127.0.0.1:${prometheus.port}`, job: 'prometheus' });
    assert.equal(up.last_value, 1);
    const build = series.find((s) => s.tag.startsWith('prometheus_build_info{'))!;
    assert.equal(build.labels?.__name__, 'prometheus_build_info');
    assert.match(build.labels?.version ?? '', /^2\.42\./);
    assert.deepEqual(Object.keys(build.labels!), Object.keys(build.labels!).sort(), 'label names sorted');
    assert.equal(build.last_value, 1);
    assert.ok(Math.abs(build.last_ms! - Date.now()) < 60_000, 'recent samples');
  });

  test('the stored samples are the ones Prometheus holds: timestamps and values exactly', async () => {
    const metric = 'scrape_duration_seconds';
    const tag = `${metric}{instance="127.0.0.1:${prometheus.port}",job="prometheus"}`;
    // Wait for a few samples, then compare a window both hold whole.
    let last = 0;
    await waitFor(async () => {
      const [s] = await listed(`${metric}{*`);
      last = s?.last_ms ?? 0;
      return last > 0 && (await prometheus.query(`count_over_time(${metric}[10s])`, last / 1000)).result[0]?.value[1] >= 4;
    }, `several ${metric} samples\n${prometheus.log}`, { timeoutMs: 60_000, intervalMs: 250 });
    const theirs = (await prometheus.query(`${metric}[10s]`, last / 1000)).result[0].values as Array<[number, string]>;
    const res = await svc.post('/svcapi/fast_query', { start_absolute: last - 9_999, end_absolute: last, ...SCOPE, metrics: [{ name: tag }] }, admin);
    assert.equal(res.status, 200, res.text);
    const ours = res.body[tag] as Array<[number, number]>;
    assert.deepEqual(ours, theirs.map(([t, v]) => [Math.round(t * 1000), Number(v)]));
    assert.ok(ours.length >= 4);
  });
});

describe('a real Prometheus remote-reads what our encoders answer', { skip: prometheusSkip }, () => {
  const now = Math.floor(Date.now() / 1000) * 1000;
  const T0 = now - 10 * 60_000;
  const SERIES: EncodableSeries[] = [
    { labels: [['job', 'plant'], ['__name__', 'remote_metric'], ['area', 'boiler "A"']], timestamps: [T0, T0 + 15_000, T0 + 30_000, T0 + 45_000, T0 + 60_000], values: Float64Array.of(1.5, NaN, Infinity, -Infinity, 1e-300) },
    { labels: [['__name__', 'remote_metric'], ['job', 'other'], ['area', 'ü']], timestamps: [T0, T0 + 60_000], values: Float64Array.of(-0.25, 123456789.125) },
    { labels: [['__name__', 'unrelated'], ['job', 'plant']], timestamps: [T0], values: Float64Array.of(7) },
  ];
  let server: http.Server;
  let prometheus: Prometheus;
  const requests: RemoteReadRequest[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          assert.equal(req.headers['content-encoding'], 'snappy');
          const request = decodeReadRequest(snappyDecompress(new Uint8Array(Buffer.concat(chunks)), 1 << 20));
          requests.push(request);
          const results = request.queries.map((q) => SERIES.filter((s) => q.matchers.every((m) => matches(m, s))).map((s) => window(s, q.startTimestampMs, q.endTimestampMs)));
          res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy' });
          res.end(snappyCompress(encodeReadResponse(results)));
        } catch (err) {
          res.writeHead(400).end(String(err));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const readPort = (server.address() as AddressInfo).port;
    prometheus = await Prometheus.start({ config: { global: { scrape_interval: '1h' }, remote_read: [{ url: `http://127.0.0.1:${readPort}/api/v1/read`, read_recent: true }] } });
  });
  after(async () => {
    await prometheus?.stop();
    await new Promise((resolve) => server?.close(resolve));
  });

  test('Prometheus shows the samples and labels our ReadResponse carried', async () => {
    const data = await prometheus.query('remote_metric[5m]', (T0 + 120_000) / 1000);
    const got = (data.result as Array<{ metric: Record<string, string>; values: Array<[number, string]> }>)
      .map((r) => ({ metric: r.metric, values: r.values.map(([t, v]) => [Math.round(t * 1000), v]) }))
      .sort((a, b) => (a.metric.job < b.metric.job ? -1 : 1));
    assert.deepEqual(got, [
      { metric: { __name__: 'remote_metric', area: 'ü', job: 'other' }, values: [[T0, '-0.25'], [T0 + 60_000, '123456789.125']] },
      { metric: { __name__: 'remote_metric', area: 'boiler "A"', job: 'plant' }, values: [[T0, '1.5'], [T0 + 15_000, 'NaN'], [T0 + 30_000, '+Inf'], [T0 + 45_000, '-Inf'], [T0 + 60_000, '1e-300']] },
    ]);
    const [request] = requests;
    assert.ok(request, 'our decoder read what Prometheus sent');
    assert.ok(request.acceptedResponseTypes.length === 0 || request.acceptedResponseTypes.includes(0), `SAMPLES accepted: ${request.acceptedResponseTypes}`);
    assert.deepEqual(request.queries[0].matchers, [{ type: 'EQ', name: '__name__', value: 'remote_metric' }]);
    assert.ok(request.queries[0].startTimestampMs <= T0 && request.queries[0].endTimestampMs >= T0 + 60_000, JSON.stringify(request.queries[0]));
  });

  test('a regular expression matcher goes over the wire as RE and selects as Prometheus would', async () => {
    const data = await prometheus.query('sum by (job) (count_over_time({__name__=~"remote_.*", job!="other"}[5m]))', (T0 + 120_000) / 1000);
    assert.deepEqual(data.result.map((r: { metric: Record<string, string>; value: [number, string] }) => [r.metric.job, r.value[1]]), [['plant', '5']]);
    const last = requests.at(-1)!;
    assert.deepEqual(last.queries[0].matchers.map((m) => m.type).sort(), ['NEQ', 'RE']);
  });
});

/** Whether a series' labels satisfy a matcher, as Prometheus does (a missing label is the empty string; regexps anchored). */
function matches(m: LabelMatcher, s: EncodableSeries): boolean {
  const value = s.labels.find(([name]) => name === m.name)?.[1] ?? '';
  switch (m.type) {
    case 'EQ': return value === m.value;
    case 'NEQ': return value !== m.value;
    case 'RE': return new RegExp(`^(?:${m.value})$`).test(value);
    case 'NRE': return !new RegExp(`^(?:${m.value})$`).test(value);
  }
}

/** The series' samples in [start, end]. */
function window(s: EncodableSeries, start: number, end: number): EncodableSeries {
  const keep = Array.from(s.timestamps, (t, i) => (t >= start && t <= end ? i : -1)).filter((i) => i >= 0);
  return { labels: s.labels, timestamps: keep.map((i) => s.timestamps[i]), values: Float64Array.from(keep, (i) => (s.values as Float64Array)[i]) };
}

