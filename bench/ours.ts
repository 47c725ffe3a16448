// The phases that measure our service, shared by the ingest, peers and load
// scripts so the same figure is always measured the same way.

import https from 'node:https';
import path from 'node:path';
import { unpack } from 'msgpackr';
import { decodeFormat1, decodeFormat2 } from '../native-free-codecs/result-binary.js';
import { prng } from '../test/support/prng.js';
import type { JobRecord } from '../src/jobs/job-log.js';
import { STEP_MS, type Chunk, type Dataset, type Scope, hsw1, tagKeyedJson } from './dataset.js';
import { startHealthProbe } from './health-probe.js';
import { BenchError, describeReply, ingest, percentiles, rateLoop, rawQuery, sleep, type IngestResult, type RateResult, type QueryLoad, type RawQueryResult } from './runner.js';
import { cpuMeter, diskUsage, json, vmRssKb, type DiskUsage, type HttpsClient, type OurService, type Reply } from './service.js';

export const ORG = 'bench';
export const SITE = 'plant-1';

export const scopeFor = (unit: string): Scope => ({ organization: ORG, site: SITE, unit, grid: 'main' });

const enc = encodeURIComponent;
const scopeQuery = (s: Scope) => `organization=${enc(s.organization)}&site=${enc(s.site)}&unit=${enc(s.unit)}&grid=${enc(s.grid)}`;

export async function createCollection(client: HttpsClient, scope: Scope): Promise<void> {
  const reply = await client.postJson('/svcapi/create_collection', { ...scope, description: 'benchmark' });
  if (reply.status !== 200 || json(reply).success !== true) throw describeReply('POST /svcapi/create_collection', reply);
}

/** The collection's folder, `data/ts/<org>/<site>/<unit>/<grid>` (our names need no percent-encoding). */
export function collectionDir(service: OurService, scope: Scope): string {
  return path.join(service.dataDir, 'ts', scope.organization, scope.site, scope.unit, scope.grid);
}

export type Encoding = 'json' | 'hsw1';

/** Accepts `{success: true, points}` with the count sent; anything else is an error naming the reply. */
function checkWrite(route: string, reply: Reply, points: number): void {
  if (reply.status !== 200) throw describeReply(`POST ${route}`, reply);
  const answer = json(reply) as { success?: boolean; points?: number };
  if (answer.success !== true || answer.points !== points) throw describeReply(`POST ${route} (${points} points sent)`, reply);
}

export async function ingestOurs(o: {
  label: string;
  client: HttpsClient;
  connections: number;
  dataset: Dataset;
  scope: Scope;
  encoding: Encoding;
  route?: string;
  encodeWhileSending?: boolean;
}): Promise<IngestResult> {
  const route = o.route ?? '/svcapi/write_fast';
  const contentType = o.encoding === 'json' ? 'application/json' : 'application/octet-stream';
  return ingest<Chunk>({
    label: o.label,
    connections: o.connections,
    chunks: o.dataset.chunks(),
    totalPoints: o.dataset.totalPoints,
    encodeWhileSending: o.encodeWhileSending,
    encode: (chunk) => ({ bytes: o.encoding === 'json' ? tagKeyedJson(o.scope, chunk) : hsw1(o.scope, chunk), points: chunk.points }),
    send: (body) => o.client.request('POST', route, body.bytes, { 'content-type': contentType }),
    check: (reply, body) => checkWrite(route, reply, body.points),
  });
}

export interface HealthFigures {
  samples: number;
  p50: number;
  p99: number;
  max: number;
  failures: string[];
}

/** Runs `work` while the health probe polls /ingest/health every 10 ms. */
export async function withHealthProbe<T>(service: OurService, work: () => Promise<T>): Promise<{ result: T; health: HealthFigures }> {
  const probe = startHealthProbe(service.port, service.ca);
  const outcome = await work().then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  const probed = await probe.stop();
  if ('error' in outcome) throw outcome.error;
  return { result: outcome.value, health: { samples: probed.latencies.length, ...percentiles(probed.latencies), failures: probed.failures } };
}

export function fastQueryUrl(route: string, scope: Scope, tags: readonly string[], start: number, end: number): string {
  return `${route}?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=${start}&end=${end}&${scopeQuery(scope)}`;
}

/** Every tag's whole range, one request per tag, JSON (`fast_query`). */
export function rawQueryJson(label: string, client: HttpsClient, load: QueryLoad, dataset: Dataset, scope: Scope): Promise<RawQueryResult> {
  return rawQuery({
    label,
    load,
    tags: dataset.tagNames,
    request: (tag) => client.get(fastQueryUrl('/svcapi/fast_query', scope, [tag], dataset.startMs, dataset.endMs)),
    count: (body, tag) => {
      const points = (JSON.parse(body.toString('utf8')) as Record<string, unknown[]>)[tag];
      if (!Array.isArray(points)) throw new Error(`fast_query for ${tag}: no array for the tag in ${body.subarray(0, 200).toString()}`);
      return points.length;
    },
  });
}

/** Same, in binary format 1; 'absent' when the route is not there (404). */
export async function rawQueryBinary(label: string, client: HttpsClient, load: QueryLoad, dataset: Dataset, scope: Scope): Promise<RawQueryResult | 'absent'> {
  const route = '/svcapi/fast_query_binary';
  const probe = await client.get(fastQueryUrl(route, scope, [dataset.tagNames[0]], dataset.startMs, dataset.startMs));
  if (probe.status === 404) return 'absent';
  if (probe.status !== 200) throw describeReply(`GET ${route}`, probe);
  return rawQuery({
    label,
    load,
    tags: dataset.tagNames,
    request: (tag) => client.get(fastQueryUrl(route, scope, [tag], dataset.startMs, dataset.endMs)),
    count: (body) => decodeFormat1(body).reduce((n, t) => n + t.timestamps.length, 0),
  });
}

/** Same as rawQueryJson with `Accept: application/msgpack`. */
export function rawQueryMsgpack(label: string, client: HttpsClient, load: QueryLoad, dataset: Dataset, scope: Scope): Promise<RawQueryResult> {
  return rawQuery({
    label,
    load,
    tags: dataset.tagNames,
    request: (tag) => client.get(fastQueryUrl('/svcapi/fast_query', scope, [tag], dataset.startMs, dataset.endMs), { accept: 'application/msgpack' }),
    count: (body, tag) => (unpack(body) as Record<string, unknown[]>)[tag].length,
  });
}

/** Same as rawQueryJson as CSV (`format=csv`): rows counted, the header row aside. */
export function rawQueryCsv(label: string, client: HttpsClient, load: QueryLoad, dataset: Dataset, scope: Scope): Promise<RawQueryResult> {
  return rawQuery({
    label,
    load,
    tags: dataset.tagNames,
    request: (tag) => client.get(`${fastQueryUrl('/svcapi/fast_query', scope, [tag], dataset.startMs, dataset.endMs)}&format=csv`),
    count: (body, tag) => {
      if (!body.subarray(0, 16).equals(CSV_HEADER)) throw new Error(`CSV for ${tag} does not start with its header: ${body.subarray(0, 100).toString()}`);
      return lineCount(body) - 1;
    },
  });
}

const CSV_HEADER = Buffer.from('time,tag,value\r\n');

function lineCount(bytes: Uint8Array): number {
  let lines = 0;
  for (let at = bytes.indexOf(0x0a); at >= 0; at = bytes.indexOf(0x0a, at + 1)) lines++;
  return lines;
}

export interface ExportResult {
  points: number;
  bytes: number;
  seconds: number;
  pointsPerSecond: number;
  /** The server's resident memory just before the request, and the most seen while it streamed (sampled every 20 ms). */
  rssBeforeBytes: number;
  rssPeakBytes: number;
  otherCores: number;
}

/**
 * Every tag of the data set in one CSV request (`format=csv`, scope given, whole range), read as
 * it streams: rows counted, nothing kept, so the client holds no more than a chunk however large
 * the export. The server's VmRSS is sampled meanwhile: a streamed export should hold it flat.
 */
export async function csvExport(service: OurService, dataset: Dataset, scope: Scope): Promise<ExportResult> {
  const path = `${fastQueryUrl('/svcapi/fast_query', scope, dataset.tagNames, dataset.startMs, dataset.endMs)}&format=csv`;
  const rssBeforeBytes = (vmRssKb(service.process.pid) ?? NaN) * 1024;
  let rssPeakBytes = rssBeforeBytes;
  const sampler = setInterval(() => {
    const kb = vmRssKb(service.process.pid);
    if (kb !== null) rssPeakBytes = Math.max(rssPeakBytes, kb * 1024);
  }, 20);
  const other = cpuMeter();
  const started = performance.now();
  try {
    const { bytes, lines } = await new Promise<{ bytes: number; lines: number }>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', servername: 'localhost', port: service.port, path, ca: service.ca, agent: false, headers: { authorization: `Bearer ${service.token}` } },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            return reject(new BenchError(`CSV export answered ${res.statusCode}`));
          }
          let received = 0;
          let newlines = 0;
          res.on('data', (chunk: Buffer) => {
            received += chunk.length;
            newlines += lineCount(chunk);
          });
          res.on('end', () => (res.complete ? resolve({ bytes: received, lines: newlines }) : reject(new BenchError('CSV export cut short'))));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    const seconds = (performance.now() - started) / 1000;
    const points = lines - 1;
    return { points, bytes, seconds, pointsPerSecond: points / seconds, rssBeforeBytes, rssPeakBytes, otherCores: other() };
  } finally {
    clearInterval(sampler);
  }
}

/** Binary format 2 (`fast_query_optimised`), one tag per request like the others. */
export function rawQueryOptimised(label: string, client: HttpsClient, load: QueryLoad, dataset: Dataset, scope: Scope): Promise<RawQueryResult> {
  return rawQuery({
    label,
    load,
    tags: dataset.tagNames,
    request: (tag) => client.get(fastQueryUrl('/svcapi/fast_query_optimised', scope, [tag], dataset.startMs, dataset.endMs)),
    count: (body) => decodeFormat2(body).timestamps.length,
  });
}

/**
 * One-step aggregation (1-minute averages over the whole range) through POST
 * fast_query; counts RAW points consumed, so the figure compares with raw scans.
 */
export function aggregatedQuery(label: string, client: HttpsClient, load: QueryLoad, dataset: Dataset, scope: Scope): Promise<RawQueryResult> {
  return rawQuery({
    label,
    load,
    tags: dataset.tagNames,
    request: (tag) =>
      client.postJson('/svcapi/fast_query', {
        start_absolute: dataset.startMs, end_absolute: dataset.endMs, ...scope,
        metrics: [{ name: tag, aggregators: [{ name: 'avg', sampling: { value: 1, unit: 'minutes' } }] }],
      }),
    count: (body, tag) => {
      const buckets = (JSON.parse(body.toString('utf8')) as Record<string, unknown[]>)[tag].length;
      if (buckets === 0) throw new Error(`aggregated query for ${tag} returned no buckets`);
      return dataset.options.points;
    },
  });
}

/** Seals every finished day; answers how many days were sealed. */
export async function sealNow(client: HttpsClient): Promise<number> {
  const reply = await client.postJson('/svcapi/seal_now', {});
  if (reply.status !== 200 || json(reply).success !== true) throw describeReply('POST /svcapi/seal_now', reply);
  return json(reply).sealedDays as number;
}

/** Seals every finished day, then measures the collection's folder. */
export async function sealAndMeasure(client: HttpsClient, service: OurService, scope: Scope): Promise<{ sealedDays: number; disk: DiskUsage }> {
  const sealedDays = await sealNow(client);
  return { sealedDays, disk: diskUsage(collectionDir(service, scope)) };
}

/**
 * An `ingestconfigs` row (as the admin makes one): the ingest routes resolve
 * `clientId` to the collection `scope`, with `grid` unless a line or the URL names one.
 */
export async function createIngestClient(client: HttpsClient, clientId: string, scope: Omit<Scope, 'grid'> & { grid?: string }): Promise<void> {
  const reply = await client.postJson('/svcapi/ingestconfigs', { clientId, ...scope, enabled: true });
  if (reply.status !== 200) throw describeReply('POST /svcapi/ingestconfigs', reply);
}

/** Points stored per tag between `start` and `end` (inclusive), counted by the server (`count` per day). */
export async function countStoredPoints(client: HttpsClient, scope: Scope, tags: readonly string[], start: number, end: number): Promise<Map<string, number>> {
  const reply = await client.postJson('/svcapi/fast_query', {
    start_absolute: start, end_absolute: end, ...scope,
    metrics: tags.map((name) => ({ name, aggregators: [{ name: 'count', sampling: { value: 1, unit: 'days' } }] })),
  });
  if (reply.status !== 200) throw describeReply('POST /svcapi/fast_query (count)', reply);
  const answer = json(reply) as Record<string, Array<[number, number]> | undefined>;
  return new Map(tags.map((tag) => [tag, (answer[tag] ?? []).reduce((n, [, count]) => n + count, 0)]));
}

/** 1-minute windows of one tag at random places in the data set. */
export function smallRangeQueries(label: string, client: HttpsClient, connections: number, seconds: number, dataset: Dataset, scope: Scope): Promise<RateResult> {
  const random = prng(7);
  const minutes = Math.max(1, Math.floor((dataset.options.points * STEP_MS) / 60_000));
  const expected = Math.min(60, dataset.options.points);
  return rateLoop({
    label,
    connections,
    seconds,
    request: () => {
      const tag = dataset.tagNames[Math.floor(random() * dataset.tagNames.length)];
      const start = dataset.startMs + Math.floor(random() * minutes) * 60_000;
      return client.get(fastQueryUrl('/svcapi/fast_query', scope, [tag], start, start + 59_999));
    },
    check: (reply) => {
      if (reply.status !== 200) throw describeReply('GET /svcapi/fast_query (1 minute)', reply);
      const points = Object.values(JSON.parse(reply.body.toString('utf8')) as Record<string, unknown[]>)[0];
      if (points.length !== expected) throw describeReply(`GET /svcapi/fast_query (1 minute, ${points.length} points, expected ${expected})`, reply);
    },
  });
}

/** `lastlist` of 10 consecutive tags. */
export function lastlistQueries(label: string, client: HttpsClient, connections: number, seconds: number, dataset: Dataset, scope: Scope): Promise<RateResult> {
  const random = prng(11);
  const names = dataset.tagNames;
  const width = Math.min(10, names.length);
  return rateLoop({
    label,
    connections,
    seconds,
    request: () => {
      const first = Math.floor(random() * (names.length - width + 1));
      const tags = names.slice(first, first + width);
      return client.get(`/svcapi/lastlist?${tags.map((t) => `tags=${enc(t)}`).join('&')}&${scopeQuery(scope)}`);
    },
    check: (reply) => {
      if (reply.status !== 200) throw describeReply('GET /svcapi/lastlist', reply);
      const answer = json(reply) as Record<string, [number, number] | null>;
      for (const [tag, last] of Object.entries(answer)) {
        if (!last || last[0] !== dataset.endMs) throw describeReply(`GET /svcapi/lastlist (${tag} has ${JSON.stringify(last)}, expected ts ${dataset.endMs})`, reply);
      }
    },
  });
}

/** A process-log job as `GET /svcapi/process-log/{id}` answers it. */
export type { JobRecord };

/**
 * Polls a background job (backup, backfill) every `pollMs` until it is done; a failed job is an
 * error. Figures come from the job's own started_ms and finished_ms, so polling does not count.
 */
export async function waitForJob(client: HttpsClient, id: string, pollMs = 50, onProgress?: (job: JobRecord) => void): Promise<JobRecord> {
  for (;;) {
    const reply = await client.get(`/svcapi/process-log/${encodeURIComponent(id)}`);
    if (reply.status !== 200) throw describeReply(`GET /svcapi/process-log/${id}`, reply);
    const job = json(reply) as JobRecord;
    if (job.status === 'failed') throw new BenchError(`job ${id} failed: ${job.error}`);
    if (job.status === 'done' && job.finished_ms !== null) return job;
    onProgress?.(job);
    await sleep(pollMs);
  }
}
