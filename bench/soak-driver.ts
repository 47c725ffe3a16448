// The soak run (issue 34, "a long week in half an hour"): mixed load on one running service for
// `minutes`, everything at once, and what the service looked like meanwhile. bench/soak.ts
// starts a service and prints the report; test/soak.test.ts runs a small form against the test
// harness's service. The service must run with SOAK_SERVICE_SETTINGS.

import { fork } from 'node:child_process';
import fs from 'node:fs';
import type { Scope } from './dataset.js';
import { ask } from './client-processes.js';
import { startHealthProbe, type ProbeResult } from './health-probe.js';
import { MARKER_TAG, type FromClient } from './live-ws-client.js';
import { countStoredPoints, createCollection, createIngestClient, fastQueryUrl } from './ours.js';
import { runPool, sleep } from './runner.js';
import { diskUsage, HttpsClient, json, type Reply } from './service.js';
import { openStream, type OpenedStream } from './sse.js';
import { oddReader, Recorder, runWriter, writeOnce, writePath, MEASUREMENT, type OddRead, type PathName, type WritePath } from './soak-load.js';

/** What the run needs: the injected fault (a storage worker killed) needs the debug route. */
export const SOAK_SERVICE_SETTINGS = {
  debug: { crashRoute: true },
  // Line protocol at half of flat out sends more than the default 1,000 requests a minute per client.
  ingest: { rateLimitPerMinute: 1_000_000 },
  // The admin holds every notification stream (a plant has one or two per user); past the default 20 more are refused.
  notifications: { maxStreamsPerUser: 1000 },
  // The same admin holds every live-data socket and its markers' subscriptions (ws.maxSocketsPerUser is 16 by default).
  ws: { maxSocketsPerUser: 1000, maxWatchedTagsPerUser: 1_000_000 },
};

export interface SoakTarget {
  port: number;
  ca: string;
  /** The service process, for /proc (RSS, file descriptors). */
  pid: number;
  dataDir: string;
  adminEmail: string;
  adminPassword: string;
}

export interface SoakOptions {
  minutes: number;
  /**
   * Points/s of each write path; 0: measure each path alone flat out for `measureSeconds` first,
   * then run each at `rateFraction` of its maximum divided by the number of paths, so that the
   * four together keep the service at that fraction of its ingest capacity.
   */
  ratePerPath: number;
  rateFraction: number;
  measureSeconds: number;
  tags: number;
  rows: number;
  sseStreams: number;
  webSockets: number;
  /** Alarm rules, one per tag of the HSW1 path's collections (as many collections as it takes). */
  rules: number;
  tickMs: number;
  queryConnections: number;
  backupEveryMinutes: number;
  crashEveryMinutes: number;
  sampleSeconds: number;
  /** Left out of the growth figures (caches filling, JIT). */
  warmupMinutes: number;
  log(line: string): void;
}

export const DEFAULT_SOAK_OPTIONS: SoakOptions = {
  minutes: 30, ratePerPath: 0, rateFraction: 0.5, measureSeconds: 10, tags: 100, rows: 100, sseStreams: 500, webSockets: 200, rules: 10_000, tickMs: 1000,
  queryConnections: 2, backupEveryMinutes: 5, crashEveryMinutes: 7, sampleSeconds: 10, warmupMinutes: 5, log: (line) => process.stderr.write(`${line}\n`),
};

export interface Sample {
  minute: number;
  rssKb: number;
  heapUsedBytes: number;
  fds: number;
  dataFiles: number;
  dataBytes: number;
  /** Day-log blocks indexed in memory, summed over shards (historian_storage_day_log_blocks). */
  logBlocks: number;
  /** The storage workers' V8 heaps and ArrayBuffer memory, summed over shards. */
  workerHeapBytes: number;
  workerArrayBufferBytes: number;
  /** Of RSS, the anonymous part (heaps, buffers, malloc) as the kernel counts it (RssAnon). */
  rssAnonKb: number;
  /** The main thread's V8 heap as allocated (nodejs_heap_size_total_bytes) and its memory outside the heap (nodejs_external_memory_bytes). */
  heapTotalBytes: number;
  externalBytes: number;
  /** The compaction threads' V8 heaps and ArrayBuffer memory as they last answered, summed over shards. */
  compactionHeapBytes: number;
  compactionArrayBufferBytes: number;
  /** Trims of freed native memory so far, and what they gave back (historian_freed_memory_*). */
  freedMemoryTrims: number;
  freedMemoryReturnedBytes: number;
  freedMemoryTrimSeconds: number;
  /** The main thread's heap as its last full collection left it (historian_main_heap_live_bytes). */
  liveHeapBytes: number;
}

export interface PathCheck {
  path: PathName;
  tags: number;
  acknowledged: number;
  stored: number;
  /** Acknowledged points not found, summed over tags (each tag: max(0, acknowledged − stored)). */
  missing: number;
  requests: number;
  abandoned: number;
  measuredMax: number;
  rate: number;
}

export interface SoakResult {
  options: Omit<SoakOptions, 'log'>;
  rec: Recorder;
  samples: Sample[];
  paths: PathCheck[];
  health: ProbeResult;
  crashes: number;
  /** Minute of the run of each worker killed. */
  crashMinutes: number[];
  shards: number;
  backups: { done: number; failed: string[] };
  sse: { open: number; ended: number; posted: number; delivered: number; expected: number };
  /** Markers: acknowledged marker writes; delivered: (socket, marker) pairs received; missed: the first markers some socket did not get. */
  ws: { opened: number; failed: string[]; markers: number; delivered: number; closed: number; errors: string[]; missed: string[] };
  monitor: { rules: number; collections: number; ticksFirst: number; ticksLast: number };
  setupSeconds: number;
  runSeconds: number;
}

const enc = encodeURIComponent;

export async function runSoak(target: SoakTarget, options: Partial<SoakOptions> = {}): Promise<SoakResult> {
  const o: SoakOptions = { ...DEFAULT_SOAK_OPTIONS, ...options };
  const rec = new Recorder();
  const setupStart = performance.now();
  const token = await login(target);
  const admin = new HttpsClient(target.port, target.ca, 16);
  admin.headers.authorization = `Bearer ${token}`;
  const clients = [admin];
  const client = (sockets: number) => {
    const c = new HttpsClient(target.port, target.ca, sockets);
    c.headers.authorization = `Bearer ${token}`;
    clients.push(c);
    return c;
  };

  // ---- setup: collections, ingest clients, rules ----
  const scope = (unit: string, grid = 'main'): Scope => ({ organization: 'soak', site: 'plant-1', unit, grid });
  const monitorCollections = Math.max(1, Math.ceil(o.rules / o.tags));
  const paths: WritePath[] = [
    writePath('json /svcapi/write', [scope('json')], o.tags, o.rows),
    writePath('hsw1 /svcapi/write_fast', Array.from({ length: monitorCollections }, (_, k) => scope(`hsw1-${k}`)), o.tags, o.rows),
    writePath('line protocol /ingest/v2/write', [scope('lp', 'v2')], o.tags, o.rows, 'soak-v2'),
    writePath('line protocol /write', [scope('lp', 'root')], o.tags, o.rows, 'soak-root'),
  ];
  o.log(`setup: ${paths.reduce((n, p) => n + p.targets.length, 0)} collections, ${o.rules} rules over ${monitorCollections} of them`);
  for (const path of paths.slice(0, 2)) await runPool(8, path.targets.values(), (t) => createCollection(admin, t.scope));
  await createIngestClient(admin, 'soak-v2', { organization: 'soak', site: 'plant-1', unit: 'lp', grid: 'v2' });
  await createIngestClient(admin, 'soak-root', { organization: 'soak', site: 'plant-1', unit: 'lp', grid: 'root' });
  // One row of every tag first, so each tag has its index before its rule is made.
  for (const path of paths) await runPool(8, path.targets.values(), async (t) => void (await writeOnce(rec, admin, path, t, 1)));
  const hsw1Path = paths[1];
  const rules = hsw1Path.targets.flatMap((t) => t.tags.map((tag) => ({ t, tag }))).slice(0, o.rules);
  await runPool(8, rules.values(), async ({ t, tag }, i = 0) => {
    const id = `${t.scope.organization}/${t.scope.site}/${t.scope.unit}/${t.scope.grid}`;
    // Limits far outside the noisy analog range (0..100) except a few, so some events open and close.
    const near = tag.endsWith('7');
    const reply = await admin.postJson('/svcapi/monitor/rule', { collection_id: id, tag, name: `${tag} range`, limHi: near ? 50 : 1e9, limLo: -1e9, deadband: 0, on_delay_ms: 0, off_delay_ms: 0, severity: 'warn' });
    if (reply.status !== 201) throw new Error(`POST /svcapi/monitor/rule answered ${reply.status}: ${reply.body.toString().slice(0, 200)} (${i})`);
  });
  await runPool(8, hsw1Path.targets.values(), async (t) => {
    const id = `${t.scope.organization}/${t.scope.site}/${t.scope.unit}/${t.scope.grid}`;
    const reply = await admin.request('PUT', `/svcapi/monitor/collections/${enc(id)}/enable`, JSON.stringify({ tick_rate_ms: o.tickMs }), { 'content-type': 'application/json' });
    if (reply.status !== 200) throw new Error(`enable monitoring of ${id} answered ${reply.status}`);
  });
  const shards = await shardCount(admin);

  // ---- measure each write path flat out, then run at half ----
  const measured = new Map<PathName, number>();
  const rates = new Map<PathName, number>();
  for (const path of paths) {
    if (o.ratePerPath > 0) {
      rates.set(path.name, o.ratePerPath);
      continue;
    }
    const before = path.points;
    const start = performance.now();
    const end = start + o.measureSeconds * 1000;
    await runWriter(rec, client(4), path, { connections: 4, pointsPerSecond: 0, until: () => performance.now() > end });
    const max = (path.points - before) / ((performance.now() - start) / 1000);
    measured.set(path.name, max);
    rates.set(path.name, (max * o.rateFraction) / paths.length);
    o.log(`  ${path.name}: ${Math.round(max)} points/s flat out; running at ${Math.round((max * o.rateFraction) / paths.length)}`);
  }

  // ---- live data and notification streams ----
  const live = paths[0].targets[0];
  const maxSeq = Math.ceil(o.minutes * 60) + 60;
  const wsChild = fork(new URL('./live-ws-client.js', import.meta.url), [], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const opened = o.webSockets > 0
    ? await ask<FromClient, 'opened'>(wsChild, { op: 'open', url: `wss://localhost:${target.port}/svcapi/ws`, ca: target.ca, token, sockets: o.webSockets, first: 0, concurrency: 20, subscribe: { ...live.scope, tags: [MARKER_TAG, live.tags[0]], format: 'json' }, maxSeq }, 'opened')
    : { subscribedMs: [], failed: 0, failures: [] };
  o.log(`  ${opened.subscribedMs.length} WebSockets subscribed, ${opened.failed} failed`);
  const streams: OpenedStream[] = [];
  let streamsEnded = 0;
  let delivered = 0;
  await runPool(20, Array.from({ length: o.sseStreams }, (_, i) => i).values(), async () => {
    const start = performance.now();
    try {
      const s = await openStream(target, token, {}, (e) => {
        if (e.event === 'notification' && (JSON.parse(e.data) as { title?: string }).title?.startsWith('soak ')) delivered++;
      });
      rec.record('sse: open stream', s.status, performance.now() - start, s.status === 200, s.body);
      if (s.status === 200) {
        streams.push(s);
        void s.ended.then(() => streamsEnded++);
      }
    } catch (err) {
      rec.record('sse: open stream', rec.cutStatus(), performance.now() - start, false, String(err));
    }
  });
  o.log(`  ${streams.length} notification streams open`);
  const setupSeconds = (performance.now() - setupStart) / 1000;

  // ---- the run ----
  const runStart = performance.now();
  const runStartMs = Date.now();
  const endAt = runStart + o.minutes * 60_000;
  const over = () => performance.now() >= endAt;
  rec.restart(runStart); // setup and the measurement are not part of the figures
  const every = async (seconds: number, what: () => Promise<void>, first = seconds) => {
    let next = runStart + first * 1000;
    while (!over()) {
      const wait = next - performance.now();
      if (wait > 0) await sleep(Math.min(wait, Math.max(0, endAt - performance.now())));
      if (over()) return;
      next += seconds * 1000;
      await what();
    }
  };
  const probe = startHealthProbe(target.port, target.ca, 250);
  const samples: Sample[] = [];
  const sample = async () => {
    // A fresh connection each time: one kept idle for as long as the sampling interval meets the
    // server's idle timeout just as the next request goes out (a reset no server can avoid).
    const metricsClient = new HttpsClient(target.port, target.ca, 1);
    metricsClient.headers.authorization = `Bearer ${token}`;
    const status = readOr(`/proc/${target.pid}/status`);
    const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
    const rssAnonKb = Number(/^RssAnon:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
    const fds = countOr(`/proc/${target.pid}/fd`);
    const reply = await rec.timed('GET /metrics', () => metricsClient.get('/metrics'));
    metricsClient.close();
    const metrics = reply?.body.toString('utf8') ?? '';
    const gauge = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    const heapUsedBytes = gauge('nodejs_heap_size_used_bytes');
    const sum = (name: string) => [...metrics.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
    const logBlocks = sum('historian_storage_day_log_blocks');
    const workerHeapBytes = sum('historian_storage_worker_heap_used_bytes');
    const workerArrayBufferBytes = sum('historian_storage_worker_array_buffer_bytes');
    const disk = diskUsage(target.dataDir);
    samples.push({ minute: (performance.now() - runStart) / 60_000, rssKb, heapUsedBytes, fds, dataFiles: disk.files, dataBytes: disk.bytes, logBlocks, workerHeapBytes, workerArrayBufferBytes, rssAnonKb, heapTotalBytes: gauge('nodejs_heap_size_total_bytes'), externalBytes: gauge('nodejs_external_memory_bytes'),
      compactionHeapBytes: sum('historian_storage_compaction_heap_used_bytes'), compactionArrayBufferBytes: sum('historian_storage_compaction_array_buffer_bytes'),
      freedMemoryTrims: gauge('historian_freed_memory_trims_total'), freedMemoryReturnedBytes: gauge('historian_freed_memory_returned_bytes_total'),
      freedMemoryTrimSeconds: gauge('historian_freed_memory_trim_seconds_total'), liveHeapBytes: gauge('historian_main_heap_live_bytes') });
  };
  await sample();

  let markerSeq = 0;
  /** Minute of the run each marker's write was acknowledged in. */
  const markerAckedAt = new Map<number, number>();
  let posted = 0;
  let crashes = 0;
  const crashMinutes: number[] = [];
  const backups = { done: 0, failed: [] as string[] };
  const monitorTicks: number[] = [];
  const hsw1 = paths[1].targets[0];
  const queryTag = (k: number) => hsw1.tags[k % hsw1.tags.length];
  const lpTag = (k: number) => paths[2].targets[0].tags[k % o.tags];
  const recent = () => ({ end: Date.now(), start: Date.now() - 60_000 });
  const queries: Array<[string, (c: HttpsClient, k: number) => Promise<Reply>]> = [
    ['query: fast_query JSON', (c, k) => c.get(fastQueryUrl('/svcapi/fast_query', hsw1.scope, [queryTag(k)], recent().start, recent().end))],
    ['query: binary format 1', (c, k) => c.get(fastQueryUrl('/svcapi/fast_query_binary', hsw1.scope, [queryTag(k)], recent().start, recent().end))],
    ['query: binary format 2', (c, k) => c.get(fastQueryUrl('/svcapi/fast_query_optimised', hsw1.scope, [queryTag(k)], recent().start, recent().end))],
    ['query: CSV', (c, k) => c.get(`${fastQueryUrl('/svcapi/fast_query', hsw1.scope, [queryTag(k)], recent().start, recent().end)}&format=csv`)],
    ['query: msgpack', (c, k) => c.get(fastQueryUrl('/svcapi/fast_query', hsw1.scope, [queryTag(k)], recent().start, recent().end), { accept: 'application/msgpack' })],
    ['query: aggregated', (c, k) => c.postJson('/svcapi/fast_query', { start_absolute: Date.now() - 600_000, end_absolute: Date.now(), ...hsw1.scope, metrics: [{ name: queryTag(k), aggregators: [{ name: 'avg', sampling: { value: 10, unit: 'seconds' } }, { name: 'max', sampling: { value: 1, unit: 'minutes' } }] }] })],
    ['query: InfluxQL /query', (c, k) => c.get(`/query?db=soak-v2&epoch=ms&q=${enc(`SELECT mean("value") FROM "${MEASUREMENT}" WHERE "tag" = '${lpTag(k)}' AND time >= ${(Date.now() - 600_000) * 1e6} GROUP BY time(10s)`)}`)],
    ['query: PromQL query_range', (c, k) => c.get(`/api/v1/query_range?query=${enc(`avg_over_time(${MEASUREMENT}_value{tag="${lpTag(k)}",grid="v2"}[1m])`)}&start=${(Date.now() - 600_000) / 1000}&end=${Date.now() / 1000}&step=15`)],
    ['query: lastlist', (c, k) => c.get(`/svcapi/lastlist?tags=${enc(queryTag(k))}&tags=${enc(queryTag(k + 1))}&organization=soak&site=plant-1&unit=${enc(hsw1.scope.unit)}&grid=main`)],
  ];
  const bigQuery = () => `${fastQueryUrl('/svcapi/fast_query', hsw1.scope, hsw1.tags, 0, Date.now())}&format=csv`;
  const loops: Array<Promise<void>> = [
    ...paths.map((path) => runWriter(rec, client(2), path, { connections: 2, pointsPerSecond: rates.get(path.name)!, until: over })),
    ...Array.from({ length: o.queryConnections }, async (_, q) => {
      const c = client(1);
      for (let k = q; !over(); k += o.queryConnections) {
        const [cls, send] = queries[k % queries.length];
        await rec.timed(cls, () => send(c, k));
      }
    }),
    every(1, async () => {
      if (markerSeq >= maxSeq) return;
      const seq = markerSeq++;
      const r = await rec.timed('write: live marker', () => admin.postJson('/svcapi/write_fast', { ...live.scope, tags: { [MARKER_TAG]: [[Date.now(), seq]] } }));
      if (r?.status === 200) markerAckedAt.set(seq, (performance.now() - runStart) / 60_000);
    }),
    every(10, async () => {
      const r = await rec.timed('POST /svcapi/notifications', () => admin.postJson('/svcapi/notifications', { severity: 'info', source: 'admin', title: `soak ${posted}`, body: 'soak notification' }));
      if (r && r.status < 300) posted++;
    }, 5),
    every(10, async () => {
      const r = await rec.timed('POST /svcapi/login', () => loginReply(target, new HttpsClient(target.port, target.ca, 1)));
      if (r && r.status !== 200) o.log(`  login answered ${r.status}`);
    }, 3),
    every(2, async () => {
      const created = await rec.timed('entities: create', () => admin.postJson('/svcapi/orgs', { name: `soak org ${Date.now()}`, note: 'soak' }));
      const id = created && created.status === 200 ? String(json(created).id) : null;
      if (!id) return;
      await rec.timed('entities: read', () => admin.get(`/svcapi/orgs/${enc(id)}`));
      await rec.timed('entities: update', () => admin.request('PUT', `/svcapi/orgs/${enc(id)}`, JSON.stringify({ note: 'updated' }), { 'content-type': 'application/json' }));
      await rec.timed('entities: list', () => admin.get(`/svcapi/orgs?filter=${enc(JSON.stringify({ where: { note: 'updated' }, limit: 5 }))}`));
      await rec.timed('entities: delete', () => admin.request('DELETE', `/svcapi/orgs/${enc(id)}`));
    }, 1),
    every(5, async () => {
      const r = await rec.timed('GET /svcapi/monitor/status', () => admin.get('/svcapi/monitor/status'));
      if (r && r.status === 200) monitorTicks.push(Number(json(r).tick_number));
    }, 2),
    every(o.sampleSeconds, sample),
    every(o.backupEveryMinutes * 60, async () => {
      const kind = (backups.done + backups.failed.length) % 2 === 0 ? 'timeseries' : 'sqlite';
      const at = `minute ${((performance.now() - runStart) / 60_000).toFixed(2)}`;
      const started = await rec.timed('backup: start', () => admin.postJson('/api/admin/backup/run', { kind }));
      if (!started || started.status !== 200) return void backups.failed.push(`${kind} at ${at}: start answered ${started?.status ?? 'nothing'}`);
      const id = String(json(started).job_id);
      for (;;) {
        await sleep(500);
        const job = await rec.timed('backup: poll', () => admin.get(`/svcapi/process-log/${enc(id)}`));
        if (!job || job.status !== 200) continue;
        const status = json(job).status as string;
        if (status === 'done') return void backups.done++;
        if (status === 'failed') return void backups.failed.push(`${kind} at ${at}: ${String(json(job).error)}`);
      }
    }, Math.min(o.backupEveryMinutes * 60, 30)),
    every(o.crashEveryMinutes * 60, async () => {
      rec.crashes.push(performance.now());
      crashMinutes.push((performance.now() - runStart) / 60_000);
      await rec.timed('POST /svcapi/_debug/crash_shard', () => admin.postJson('/svcapi/_debug/crash_shard', { shard: crashes++ % shards }));
      o.log(`  min ${rec.minute()}: storage worker of shard ${(crashes - 1) % shards} killed`);
    }, Math.min(o.crashEveryMinutes * 60, o.minutes * 30)),
    every(20, async () => {
      const start = performance.now();
      const r = await oddReader({ ...target, token }, bigQuery(), { vanish: false, pauseMs: 500, seconds: 15 });
      rec.record('reader: slow (trickle)', readStatus(rec, r), performance.now() - start, typeof r === 'object' && r?.status === 200);
    }, 4),
    every(3, async () => {
      const start = performance.now();
      const r = await oddReader({ ...target, token }, bigQuery(), { vanish: true, pauseMs: 0, seconds: 10 });
      rec.record('reader: vanishing (drops mid-body)', readStatus(rec, r), performance.now() - start, typeof r === 'object' && r?.status === 200);
    }, 2),
    every(60, async () => o.log(`  min ${rec.minute()}: ${paths.map((p) => `${p.name.split(' ')[0]} ${p.points}`).join(', ')} points acknowledged; RSS ${Math.round((samples.at(-1)?.rssKb ?? 0) / 1024)} MiB`)),
  ];
  await Promise.all(loops);
  const runSeconds = (performance.now() - runStart) / 1000;
  await sample();
  const health = await probe.stop();

  // ---- the end: streams, sockets, every acknowledged point ----
  // The last notification and marker reach their listeners (or do not: then the figures say so).
  const settled = performance.now() + 15_000;
  const wsCount = async () => (o.webSockets > 0 ? (await ask<FromClient, 'count'>(wsChild, { op: 'count' }, 'count')).markers : 0);
  while (performance.now() < settled && (delivered < (streams.length - streamsEnded) * posted || (await wsCount()) < opened.subscribedMs.length * markerAckedAt.size)) await sleep(250);
  for (const s of streams) s.close();
  let ws = { opened: opened.subscribedMs.length, failed: opened.failures, markers: markerAckedAt.size, delivered: 0, closed: 0, errors: [] as string[], missed: [] as string[] };
  if (o.webSockets > 0) {
    const result = await ask<FromClient, 'result'>(wsChild, { op: 'finish' }, 'result');
    const received = result.received;
    let got = 0;
    const missedBy = new Map<number, number>();
    for (let s = 0; s < o.webSockets; s++) {
      for (const q of markerAckedAt.keys()) {
        if (!Number.isNaN(received[s * maxSeq + q])) got++;
        else missedBy.set(q, (missedBy.get(q) ?? 0) + 1);
      }
    }
    const missed = [...missedBy].slice(0, 10).map(([q, n]) => `#${q} (acknowledged at minute ${markerAckedAt.get(q)!.toFixed(2)}) missed by ${n} sockets`);
    ws = { ...ws, markers: markerAckedAt.size, delivered: got, closed: result.closed.length, errors: result.errors, missed };
  } else wsChild.kill();
  const checks: PathCheck[] = [];
  for (const path of paths) {
    let acknowledged = 0;
    let stored = 0;
    let missing = 0;
    for (const t of path.targets) {
      const counted = await countStoredPoints(admin, t.scope, t.stored, t.firstMs - 1, t.lastMs + 1);
      for (const name of t.stored) {
        const a = t.acked.get(name) ?? 0;
        const s = counted.get(name) ?? 0;
        acknowledged += a;
        stored += s;
        missing += Math.max(0, a - s);
      }
    }
    checks.push({ path: path.name, tags: path.targets.length * o.tags, acknowledged, stored, missing, requests: path.requests, abandoned: path.abandoned, measuredMax: measured.get(path.name) ?? NaN, rate: rates.get(path.name)! });
  }
  const markerCount = await countStoredPoints(admin, live.scope, [MARKER_TAG], runStartMs - 60_000, Date.now() + 60_000);
  const markersAcked = rec.figures('write: live marker').ok;
  checks.push({ path: 'json /svcapi/write' as PathName, tags: 1, acknowledged: markersAcked, stored: markerCount.get(MARKER_TAG) ?? 0, missing: Math.max(0, markersAcked - (markerCount.get(MARKER_TAG) ?? 0)), requests: markerSeq, abandoned: 0, measuredMax: NaN, rate: 1 });
  checks.at(-1)!.path = 'live marker /svcapi/write_fast (JSON)' as PathName;
  for (const c of clients) c.close();
  return {
    options: { ...o, log: undefined } as unknown as SoakResult['options'],
    rec,
    samples,
    paths: checks,
    health,
    crashes,
    crashMinutes,
    shards,
    backups,
    sse: { open: streams.length, ended: streamsEnded, posted, delivered, expected: streams.length * posted },
    ws,
    monitor: { rules: rules.length, collections: monitorCollections, ticksFirst: monitorTicks[0] ?? NaN, ticksLast: monitorTicks.at(-1) ?? NaN },
    setupSeconds,
    runSeconds,
  };
}

function readStatus(rec: Recorder, r: OddRead): string | number {
  if (r === 'timeout') return 'timeout';
  return r === null ? rec.cutStatus() : r.status;
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function countOr(dir: string): number {
  try {
    return fs.readdirSync(dir).length;
  } catch {
    return NaN;
  }
}

function loginReply(target: SoakTarget, c: HttpsClient): Promise<Reply> {
  return c.postJson('/svcapi/login', { email: target.adminEmail, password: target.adminPassword }).finally(() => c.close());
}

async function login(target: SoakTarget): Promise<string> {
  const reply = await loginReply(target, new HttpsClient(target.port, target.ca, 1));
  if (reply.status !== 200) throw new Error(`login answered ${reply.status}`);
  return json(reply).token as string;
}

/** The service's storage shard count, from the crash route's refusal of a shard it does not have. */
async function shardCount(admin: HttpsClient): Promise<number> {
  const reply = await admin.postJson('/svcapi/_debug/crash_shard', { shard: 1_000_000 });
  const below = /below (\d+)/.exec(reply.body.toString('utf8'));
  if (reply.status !== 400 || !below) throw new Error(`POST /svcapi/_debug/crash_shard is not mounted (answered ${reply.status}); start the service with debug.crashRoute`);
  return Number(below[1]);
}
