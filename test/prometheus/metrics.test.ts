// GET /metrics (WIRE.md part 3 "Prometheus compatibility", README "Monitoring with Prometheus")
// against the real service over HTTPS: who may scrape (a token or an API key, read-only ones too;
// anyone with metrics.public), the text format as a Prometheus parser reads it (every family with
// HELP and TYPE), values that move with what the service does (points written by route and
// durability, HTTP requests by route pattern, seals), OpenMetrics when Accept asks for it,
// promtool's lint, and a real Prometheus 2.42 scraping the service with its CA and an API key.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { formatFor } from '../../src/metrics/negotiate.js';
import { startService, type HttpResult, type TestService } from '../api/harness.js';
import { Prometheus, prometheusSkip } from '../support/prometheus.js';
import { waitFor } from '../support/wait-for.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const T0 = Date.UTC(2026, 0, 10, 8);
const PROMTOOL = '/usr/bin/promtool';
/** What Prometheus 2.42 sends when it scrapes. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
/** promtool's findings on prom-client's own Node collectors (gauges whose standard names end in _total): nothing of ours. */
const PROM_CLIENT_FINDINGS = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

interface Family {
  help: string | null;
  type: string | null;
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

/**
 * Reads an exposition in text format 0.0.4 (or OpenMetrics): families by name, with their HELP,
 * TYPE and samples. A sample must belong to a family declared before it (a histogram's
 * `_bucket`, `_sum`, `_count`; an OpenMetrics counter's `_total`); anything else fails.
 */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { help: null, type: null, samples: [] }));
    return f;
  };
  for (const line of text.split('\n')) {
    if (line === '' || line === '# EOF') continue;
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (meta) {
      if (meta[1] === 'HELP') family(meta[2]!).help = meta[3]!;
      else family(meta[2]!).type = meta[3]!;
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(sample, `a sample line: ${line}`);
    const name = sample[1]!;
    const labels: Record<string, string> = {};
    for (const m of (sample[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const owner = [name, name.replace(/_(bucket|sum|count|total)$/, '')].find((n) => families.get(n)?.type);
    assert.ok(owner, `sample ${name} belongs to a family declared with TYPE before it`);
    families.get(owner)!.samples.push({ name, labels, value: Number(sample[4]) });
  }
  return families;
}

/** The value of the sample `name` whose labels include `labels` (0 when there is none). */
function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return 0;
}

describe('GET /metrics', () => {
  let svc: TestService;
  let admin: string;
  /** A read-only API key: what a Prometheus gets. */
  let apiKey: string;

  const scrape = (headers: Record<string, string> = {}) => svc.request('GET', '/metrics', { headers: { authorization: `Bearer ${apiKey}`, ...headers } });
  const scrapeParsed = async () => {
    const res = await scrape();
    assert.equal(res.status, 200, res.text);
    return parseExposition(res.text);
  };

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 } } });
    admin = await svc.adminToken();
    const made = await svc.post('/svcapi/api_keys', { name: 'prometheus', role: 'read-only' }, admin);
    assert.equal(made.status, 201, made.text);
    apiKey = made.body.key;
    assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).body.success, true);
  });
  after(() => svc.dispose());

  test('401 without credentials or with a bad one; 200 with a JWT and with a read-only API key', async () => {
    const none = await svc.get('/metrics');
    assert.equal(none.status, 401, none.text);
    assert.equal((await svc.request('GET', '/metrics', { headers: { authorization: 'Bearer hk_notakeynotakeynotakeynotakeynotakeynota' } })).status, 401);
    const jwt = await svc.get('/metrics', admin);
    assert.equal(jwt.status, 200, jwt.text);
    assert.equal(jwt.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const key = await scrape();
    assert.equal(key.status, 200, key.text);
    // HEAD, as on every GET route.
    const head = await svc.request('HEAD', '/metrics', { headers: { authorization: `Bearer ${apiKey}` } });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
  });

  test('text format 0.0.4: every family has HELP and TYPE; the process collectors and the service\'s own families are there', async () => {
    const res = await scrape();
    assert.ok(res.text.endsWith('\n'));
    const families = parseExposition(res.text);
    for (const [name, f] of families) {
      assert.ok(f.help, `${name} has HELP`);
      assert.ok(f.type && ['counter', 'gauge', 'histogram', 'summary'].includes(f.type), `${name} has a TYPE (${f.type})`);
      if (f.type === 'counter') assert.match(name, /_total$/, `counter ${name} ends in _total`);
    }
    for (const name of [
      'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes',
      'historian_http_requests_total', 'historian_http_request_duration_seconds', 'historian_points_written_total', 'historian_write_bytes_total',
      'historian_query_bytes_total', 'historian_shard_request_ring_fill_ratio', 'historian_shard_queue_depth', 'historian_storage_worker_restarts_total',
      'historian_seals_total', 'historian_storage_sealed_bytes', 'historian_storage_active_bytes', 'historian_disk_free_bytes',
      'historian_metadata_sqlite_bytes', 'historian_metadata_last_checkpoint_duration_seconds', 'historian_metadata_last_checkpoint_timestamp_seconds',
      'historian_sse_streams_open', 'historian_sse_events_delivered_total', 'historian_sse_events_dropped_total',
      'historian_websocket_sockets_open', 'historian_websocket_messages_sent_total', 'historian_websocket_slow_closes_total',
      'historian_monitor_tick_duration_seconds', 'historian_monitor_rules', 'historian_ingest_rejected_lines_total', 'historian_ingest_rate_limited_total',
      'historian_backup_last_success_timestamp_seconds', 'historian_backup_last_duration_seconds', 'historian_connector_backfills_running',
      'historian_ingest_client_last_seen_timestamp_seconds', 'historian_cluster_role', 'historian_cluster_peer_lag_seconds', 'historian_cluster_peer_queued_bytes',
      'historian_subsystem_up', 'historian_metrics_scrape_duration_seconds',
    ]) {
      assert.ok(families.has(name), `family ${name}`);
    }
    assert.equal(families.get('historian_http_request_duration_seconds')!.type, 'histogram');
    assert.equal(valueOf(families, 'historian_cluster_role', { role: 'leader' }), 1, 'a single node leads');
    assert.equal(valueOf(families, 'historian_subsystem_up', { subsystem: 'storage' }), 1);
    assert.ok(valueOf(families, 'historian_disk_free_bytes') > 0);
    assert.ok(valueOf(families, 'historian_metadata_sqlite_bytes', { file: 'database' }) > 0);
    // One ring and queue sample per shard, read on the main thread.
    assert.equal(families.get('historian_shard_request_ring_fill_ratio')!.samples.length, 2);
    assert.equal(families.get('historian_shard_queue_depth')!.samples.length, 6);
  });

  test('values move: points written by route and durability, write bytes, HTTP requests by route pattern and status class, seals', async () => {
    const before = await scrapeParsed();
    const fastBody = JSON.stringify({ ...SCOPE, tags: { 'TI-1': Array.from({ length: 25 }, (_, i) => [T0 + i * 1000, i]), 'TI-2': [[T0, 1], [T0 + 1000, 2]] } });
    const syncBody = JSON.stringify({ ...SCOPE, tags: { 'TI-3': Array.from({ length: 10 }, (_, i) => [T0 + i * 1000, i / 2]) } });
    const send = (route: string, body: string) => svc.request('POST', route, { rawBody: body, token: admin, headers: { 'content-type': 'application/json' } });
    const fast = await send('/svcapi/write_fast', fastBody);
    assert.deepEqual(fast.body, { success: true, points: 27 });
    assert.deepEqual((await send('/svcapi/write', syncBody)).body, { success: true, points: 10 });
    assert.equal((await svc.get('/svcapi/no-such-route', admin)).status, 404);
    const afterWrites = await scrapeParsed();
    const delta = (name: string, labels: Record<string, string>) => valueOf(afterWrites, name, labels) - valueOf(before, name, labels);
    assert.equal(delta('historian_points_written_total', { route: '/svcapi/write_fast', durability: 'fast' }), 27);
    assert.equal(delta('historian_points_written_total', { route: '/svcapi/write', durability: 'sync' }), 10);
    assert.equal(delta('historian_write_bytes_total', { route: '/svcapi/write_fast' }), Buffer.byteLength(fastBody));
    assert.equal(delta('historian_http_requests_total', { method: 'POST', route: '/svcapi/write_fast', status_class: '2xx' }), 1);
    assert.equal(delta('historian_http_request_duration_seconds_count', { method: 'POST', route: '/svcapi/write', status_class: '2xx' }), 1);
    assert.equal(delta('historian_http_requests_total', { route: '(unmatched)', status_class: '4xx' }), 1);
    // The scrape before this one is counted under its route pattern, by a read-only API key.
    assert.ok(delta('historian_http_requests_total', { method: 'GET', route: '/metrics', status_class: '2xx' }) >= 1);
    // Query bytes come out of the result ring.
    const query = await svc.get(`/svcapi/fast_query?tags=TI-1&start=${T0}&end=${T0 + 60_000}&${new URLSearchParams(SCOPE)}`, admin);
    assert.equal(query.status, 200, query.text);
    const afterQuery = await scrapeParsed();
    const queryBytes = (f: Map<string, Family>) => f.get('historian_query_bytes_total')!.samples.reduce((n, s) => n + s.value, 0);
    assert.ok(queryBytes(afterQuery) > queryBytes(afterWrites), 'query bytes grew');
    // Seals are counted by the workers, whose numbers a scrape waits for only briefly: a later scrape shows them.
    const sealed = await svc.post('/svcapi/seal_now', {}, admin);
    assert.ok(sealed.body.sealedDays >= 1, sealed.text);
    const seals = (f: Map<string, Family>) => f.get('historian_seals_total')!.samples.reduce((n, s) => n + s.value, 0);
    const sealedBytes = (f: Map<string, Family>) => f.get('historian_storage_sealed_bytes')!.samples.reduce((n, s) => n + s.value, 0);
    await waitFor(async () => {
      const now = await scrapeParsed();
      return seals(now) >= sealed.body.sealedDays && sealedBytes(now) > 0;
    }, 'the seals show in a scrape');
  });

  test('OpenMetrics when Accept asks for it, as Prometheus does; the classic format otherwise', async () => {
    for (const accept of [PROMETHEUS_ACCEPT, 'application/openmetrics-text']) {
      const res = await scrape({ accept });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'application/openmetrics-text; version=1.0.0; charset=utf-8', accept);
      assert.ok(res.text.endsWith('# EOF\n'), 'an OpenMetrics exposition ends with # EOF');
      const families = parseExposition(res.text);
      // OpenMetrics names a counter family without _total, its samples with it.
      const http = families.get('historian_http_requests');
      assert.equal(http?.type, 'counter');
      assert.ok(http.samples.every((s) => s.name === 'historian_http_requests_total'));
      assert.equal(families.get('process_cpu_seconds')?.type, 'counter');
    }
    // The OpenMetrics view renames nothing the classic format shows.
    const text = await scrape({ accept: 'text/plain;version=0.0.4' });
    assert.equal(text.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const families = parseExposition(text.text);
    assert.ok(families.has('historian_http_requests_total') && families.has('process_cpu_seconds_total'));
    assert.ok(!text.text.includes('# EOF'));
    // Negotiation by quality; a tie or a wildcard keeps the classic format.
    assert.equal(formatFor(PROMETHEUS_ACCEPT), 'openmetrics');
    assert.equal(formatFor(undefined), 'text');
    assert.equal(formatFor('*/*'), 'text');
    assert.equal(formatFor('text/plain, application/openmetrics-text'), 'text');
    assert.equal(formatFor('text/plain;q=0.2, application/openmetrics-text;q=0.9'), 'openmetrics');
    assert.equal(formatFor('application/openmetrics-text;version=0.0.1'), 'text', 'a version prom-client does not write');
  });

  test(`promtool check metrics finds nothing in the service's output but prom-client's own Node gauge names`, { skip: fs.existsSync(PROMTOOL) ? false : `${PROMTOOL} is not installed (apt-get install prometheus)` }, async () => {
    const res = await scrape();
    const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: res.text, encoding: 'utf8' });
    const findings = `${lint.stdout}${lint.stderr}`.split('\n').filter(Boolean);
    // 0: clean; 3: lint findings only (1 would be a text that does not parse).
    assert.ok(lint.status === 0 || lint.status === 3, `promtool exit ${lint.status}: ${findings.join('\n')}`);
    assert.deepEqual(findings.filter((f) => !PROM_CLIENT_FINDINGS.test(f)), []);
  });

  describe('with metrics.public', () => {
    let open: TestService;
    before(async () => {
      open = await startService({ config: { metrics: { public: true } } });
    });
    after(() => open.dispose());

    test('answers without credentials', async () => {
      const res: HttpResult = await open.get('/metrics');
      assert.equal(res.status, 200, res.text);
      assert.ok(parseExposition(res.text).has('historian_http_requests_total'));
    });
  });

  describe('a real Prometheus 2.42', { skip: prometheusSkip }, () => {
    let prometheus: Prometheus | null = null;
    after(() => prometheus?.stop());

    test('scrapes it over HTTPS with the service CA and an API key: up is 1 and the historian families are stored', async () => {
      prometheus = await Prometheus.start({
        config: {
          global: { scrape_interval: '1s' },
          scrape_configs: [{
            job_name: 'historian',
            scheme: 'https',
            metrics_path: '/metrics',
            tls_config: { ca_file: path.join(svc.dataDir, 'tls', 'ca.crt'), server_name: 'localhost' },
            authorization: { credentials: apiKey },
            static_configs: [{ targets: [`127.0.0.1:${svc.port}`] }],
          }],
        },
      });
      const server = prometheus;
      const explain = async () => `targets: ${JSON.stringify(await server.api('targets'))}\nprometheus log:\n${server.log}`;
      try {
        await waitFor(async () => (await server.query('up{job="historian"}')).result[0]?.value[1] === '1', 'up{job="historian"} is 1', { timeoutMs: 30_000, intervalMs: 250 });
        await waitFor(async () => (await server.query('historian_http_requests_total{route="/metrics",status_class="2xx"}')).result.length > 0, 'the scrapes are counted and stored', { timeoutMs: 30_000, intervalMs: 250 });
        const written = (await server.query('sum(historian_points_written_total{route="/svcapi/write_fast"})')).result;
        assert.ok(Number(written[0]?.value[1]) >= 27, JSON.stringify(written));
        const buckets = (await server.query('historian_http_request_duration_seconds_bucket{route="/metrics",le="+Inf"}')).result;
        assert.ok(buckets.length > 0, 'the histogram is stored with its buckets');
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${await explain()}`);
      }
    });
  });
});
