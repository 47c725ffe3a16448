/**
 * What GET /metrics costs under full ingest: /svcapi/write_fast flat out for a fixed time, with
 * and without a Prometheus-like scraper (one GET /metrics every second with Prometheus's Accept
 * header, so OpenMetrics, and a read-only API key), in interleaved runs (off, on, then on, off,
 * and so on, so a drift of the machine falls on both), each run into a collection of its own.
 * Reports ingest points/s both ways and their ratio; the scrape's latency (client side: TLS,
 * gathering, rendering and transfer) under ingest and on an idle service, beside the latency of
 * `GET /ingest/health` (the cheapest route there is) asked right before each scrape on the same
 * connection, so what the machine's load does to any request is told apart from what the scrape
 * itself costs; and the server's own time per scrape (historian_metrics_scrape_duration_seconds).
 * The scraper runs in a worker thread, so the bench's own request loop does not count as server
 * latency.
 *
 * Each run cycles through one pass of the data set's bodies (built before the clock) until its
 * time is up: the same points are written again, which costs the storage what new ones would.
 * The points are today's (UTC), so no background seal of a finished day runs meanwhile.
 *
 *   npm run bench:metrics -- [--rounds 5] [--seconds 20] [--scrape-interval-ms 1000] [--encoding json|hsw1] [size flags] [--quick]
 */

import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { startWorkerLoop } from './worker-loop.js';
import { Dataset, hsw1, tagKeyedJson, type Scope } from './dataset.js';
import { createCollection, scopeFor } from './ours.js';
import { commandLine, describeReply, int, machine, markdownTable, ms, num, otherLoad, percentiles, Phases, positiveIntOption, runPool, sizeOptions, sleep } from './runner.js';
import { cpuMeter, HttpsClient, json, startOurService, waitForQuiet } from './service.js';

/** What Prometheus 2.42 sends when it scrapes. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

// ---- the scraper (a worker thread) ------------------------------------------------------------

interface ScraperData {
  port: number;
  ca: string;
  apiKey: string;
  /** Not `intervalMs`: health-probe.ts, imported through ours.ts, starts itself in any worker whose data has one. */
  everyMs: number;
}

interface ScrapeResult {
  latencies: number[];
  /** GET /ingest/health, asked just before each scrape. */
  healthLatencies: number[];
  bytes: number[];
  failures: string[];
}

/** Starts scraping at once; `stop()` ends it and hands back each scrape's latency (ms) and size. */
function startScraper(data: ScraperData): { stop(): Promise<ScrapeResult> } {
  return startWorkerLoop<ScrapeResult>(new URL(import.meta.url), data);
}

async function scrapeLoop({ port, ca, apiKey, everyMs }: ScraperData): Promise<void> {
  const client = new HttpsClient(port, ca, 1);
  client.headers.authorization = `Bearer ${apiKey}`;
  let stopping = false;
  parentPort!.once('message', () => {
    stopping = true;
  });
  const result: ScrapeResult = { latencies: [], healthLatencies: [], bytes: [], failures: [] };
  while (!stopping) {
    const began = performance.now();
    try {
      const health = await client.get('/ingest/health');
      if (health.status === 200) result.healthLatencies.push(health.ms);
      else result.failures.push(`/ingest/health: HTTP ${health.status}`);
      const reply = await client.get('/metrics', { accept: PROMETHEUS_ACCEPT });
      if (reply.status === 200 && String(reply.headers['content-type']).startsWith('application/openmetrics-text')) {
        result.latencies.push(reply.ms);
        result.bytes.push(reply.bodyLength);
      } else result.failures.push(`HTTP ${reply.status} ${String(reply.headers['content-type'])}: ${reply.body.subarray(0, 200).toString()}`);
    } catch (err) {
      result.failures.push(err instanceof Error ? err.message : String(err));
    }
    const wait = everyMs - (performance.now() - began);
    if (wait > 0 && !stopping) await sleep(wait);
  }
  client.close();
  parentPort!.postMessage({ ...result, failures: result.failures.slice(0, 20) } satisfies ScrapeResult);
}

// ---- the benchmark ----------------------------------------------------------------------------

/** The server's histogram of its own scrape times: cumulative counts per bucket bound, and the sum. */
interface ServerScrapes {
  buckets: Array<[bound: number, count: number]>;
  sum: number;
}

/** Reads historian_metrics_scrape_duration_seconds from a scrape in the text format. */
function serverScrapes(text: string): ServerScrapes {
  const buckets: Array<[number, number]> = [];
  for (const m of text.matchAll(/^historian_metrics_scrape_duration_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)) buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
  const sum = Number(/^historian_metrics_scrape_duration_seconds_sum (\S+)$/m.exec(text)?.[1] ?? NaN);
  return { buckets, sum };
}

/**
 * The scrapes between each pair of readings, together: their count, mean, and the bucket bounds
 * their p50 and p99 fall under. (A reading is a scrape too: it counts in the next pair, if any.)
 */
function describeServerScrapes(pairs: ReadonlyArray<[before: ServerScrapes, after: ServerScrapes]>): { count: number; meanMs: number; p50: string; p99: string } {
  const counts = pairs[0]![1].buckets.map(([bound], i) => [bound, pairs.reduce((n, [before, after]) => n + after.buckets[i]![1] - (before.buckets[i]?.[1] ?? 0), 0)] as [number, number]);
  const sum = pairs.reduce((n, [before, after]) => n + after.sum - before.sum, 0);
  const count = counts.at(-1)?.[1] ?? 0;
  const under = (q: number) => {
    const bound = counts.find(([, n]) => n >= q * count)?.[0] ?? Infinity;
    return Number.isFinite(bound) ? `≤ ${ms(bound * 1000)}` : 'over the last bound';
  };
  return { count, meanMs: (sum / count) * 1000, p50: under(0.5), p99: under(0.99) };
}

interface RunResult {
  points: number;
  seconds: number;
  pointsPerSecond: number;
  retries: number;
  otherCores: number;
  scrapes: ScrapeResult | null;
}

async function main(): Promise<void> {
  const { sizes, values } = sizeOptions({ rounds: { type: 'string' }, 'scrape-interval-ms': { type: 'string' }, encoding: { type: 'string' } });
  const rounds = positiveIntOption(values, 'rounds', 5);
  const seconds = positiveIntOption(values, 'seconds', sizes.quick ? 5 : 20);
  const intervalMs = positiveIntOption(values, 'scrape-interval-ms', 1000);
  const encoding = values.encoding === 'hsw1' ? 'hsw1' : 'json';
  // One pass of bodies, cycled: a tenth of the usual day by default keeps the client's memory small.
  const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  const dataset = new Dataset({ ...sizes, points: values.points === undefined ? 8640 : sizes.points, startMs: today });
  const phases = new Phases();
  const rows: string[][] = [];

  await waitForQuiet(sizes.waitIdle);
  const service = await startOurService({});
  const admin = service.client(1);
  const made = await admin.postJson('/svcapi/api_keys', { name: 'bench scraper', role: 'read-only' });
  if (made.status !== 201) throw describeReply('POST /svcapi/api_keys', made);
  const scraper: ScraperData = { port: service.port, ca: service.ca, apiKey: json(made).key as string, everyMs: intervalMs };
  const writer = service.client(sizes.connections);

  /** Writes the data set's bodies round and round into `scope` for `seconds`; retries 503s. */
  const run = async (scope: Scope, scraping: boolean): Promise<RunResult> => {
    await createCollection(admin, scope);
    const bodies = [...dataset.chunks()].map((chunk) => ({ bytes: encoding === 'json' ? Buffer.from(tagKeyedJson(scope, chunk)) : hsw1(scope, chunk), points: chunk.points }));
    const contentType = encoding === 'json' ? 'application/json' : 'application/octet-stream';
    let points = 0;
    let retries = 0;
    let next = 0;
    const deadline = performance.now() + seconds * 1000;
    function* jobs() {
      while (performance.now() < deadline) yield bodies[next++ % bodies.length]!;
    }
    const scrape = scraping ? startScraper(scraper) : null;
    const other = cpuMeter();
    const began = performance.now();
    let scrapes: ScrapeResult | null = null;
    try {
      await runPool(sizes.connections, jobs(), async (body) => {
        for (;;) {
          const reply = await writer.request('POST', '/svcapi/write_fast', body.bytes, { 'content-type': contentType });
          if (reply.status === 503) {
            retries++;
            await sleep(10);
            continue;
          }
          if (reply.status !== 200 || json(reply).points !== body.points) throw describeReply('POST /svcapi/write_fast', reply);
          points += body.points;
          return;
        }
      });
    } finally {
      scrapes = scrape ? await scrape.stop() : null;
    }
    const elapsed = (performance.now() - began) / 1000;
    return { points, seconds: elapsed, pointsPerSecond: points / elapsed, retries, otherCores: other(), scrapes };
  };

  const results: Record<'off' | 'on', RunResult[]> = { off: [], on: [] };
  const ratios: number[] = [];
  /** The server's scrape times, by the scrapes of the runs with the scraper and of the idle phase. */
  const readServerScrapes = async () => serverScrapes((await admin.get('/metrics')).body.toString());
  const serverDuringIngest: Array<[ServerScrapes, ServerScrapes]> = [];
  for (let round = 1; round <= rounds; round++) {
    const order: Array<'off' | 'on'> = round % 2 ? ['off', 'on'] : ['on', 'off'];
    const pair: Partial<Record<'off' | 'on', RunResult>> = {};
    for (const mode of order) {
      process.stderr.write(`round ${round}: ingest ${seconds} s, scraper ${mode}\n`);
      const before = mode === 'on' ? await readServerScrapes() : null;
      const result = await phases.run(`round ${round} scraper ${mode}`, () => run(scopeFor(`metrics-${round}-${mode}`), mode === 'on'));
      if (before) serverDuringIngest.push([before, await readServerScrapes()]);
      if (result) {
        results[mode].push(result);
        pair[mode] = result;
      }
    }
    if (pair.off && pair.on) ratios.push(pair.on.pointsPerSecond / pair.off.pointsPerSecond);
  }

  // The scrape on an idle service, for reference: no ingest, the same scraper.
  // After a pause for the writeback of the runs' data to settle.
  const idle = await phases.run('scrapes on an idle service', async () => {
    await sleep(5000);
    const before = await readServerScrapes();
    const scrape = startScraper({ ...scraper, everyMs: Math.min(intervalMs, 100) });
    await sleep(sizes.quick ? 3000 : 10_000);
    const scrapes = await scrape.stop();
    return { scrapes, server: [before, await readServerScrapes()] as [ServerScrapes, ServerScrapes] };
  });
  const exit = await service.stop();
  if (exit.code !== 0) phases.failures.push({ phase: 'shutdown', error: new Error(`service exited with ${exit.code ?? exit.signal}`) });

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  for (const mode of ['off', 'on'] as const) {
    const runs = results[mode];
    if (runs.length === 0) {
      rows.push([`ingest, scraper ${mode}`, 'FAILED', '']);
      continue;
    }
    rows.push([
      `/svcapi/write_fast ingest, ${mode === 'on' ? `scraped every ${intervalMs} ms` : 'no scraper'}`,
      `${int(median(runs.map((r) => r.pointsPerSecond)))} points/s`,
      `median of ${runs.length} runs of ${seconds} s: ${runs.map((r) => int(r.pointsPerSecond)).join(', ')} points/s; ${int(median(runs.map((r) => r.retries)))} 503s retried (median)${otherLoad(Math.max(...runs.map((r) => r.otherCores)))}`,
    ]);
  }
  if (ratios.length > 0) rows.push(['ingest with ÷ without the scraper', `${num(median(ratios))}×`, `median of the ${ratios.length} rounds' ratios (each round one run of each, back to back); range ${num(Math.min(...ratios))}-${num(Math.max(...ratios))}`]);
  const describeScrapes = (when: string, sets: ScrapeResult[], server: Array<[ServerScrapes, ServerScrapes]>) => {
    const latencies = sets.flatMap((s) => s.latencies);
    const failures = sets.flatMap((s) => s.failures);
    if (latencies.length === 0) return rows.push([`GET /metrics ${when}`, 'no scrape', failures.slice(0, 3).join('; ')]);
    const p = percentiles(latencies);
    const bytes = sets.flatMap((s) => s.bytes);
    rows.push([`GET /metrics ${when}, client side`, `p50 ${ms(p.p50)}, p99 ${ms(p.p99)}`, `${int(latencies.length)} scrapes, max ${ms(p.max)}, ${int(median(bytes))} bytes each (OpenMetrics)${failures.length > 0 ? `; ${failures.length} failed: ${failures.slice(0, 3).join('; ')}` : ''}`]);
    const h = percentiles(sets.flatMap((s) => s.healthLatencies));
    rows.push([`GET /ingest/health ${when}, just before each scrape`, `p50 ${ms(h.p50)}, p99 ${ms(h.p99)}`, `max ${ms(h.max)}: what the load does to the cheapest request`]);
    if (server.length === 0) return;
    const s = describeServerScrapes(server);
    rows.push([`GET /metrics ${when}, server side (gathered and rendered)`, `mean ${ms(s.meanMs)}`, `p50 ${s.p50}, p99 ${s.p99} (buckets of historian_metrics_scrape_duration_seconds), ${int(s.count)} scrapes`]);
  };
  describeScrapes('during ingest', results.on.flatMap((r) => (r.scrapes ? [r.scrapes] : [])), serverDuringIngest);
  if (idle) describeScrapes(`on an idle service, every ${Math.min(intervalMs, 100)} ms`, [idle.scrapes], [idle.server]);

  console.log('# GET /metrics under ingest\n');
  console.log(`\`${commandLine()}\`\n`);
  console.log(`${machine()}; ${rounds} rounds, ${sizes.connections} connections, ${encoding === 'json' ? 'tag-keyed JSON' : 'HSW1'} bodies of ${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points, default settings; each run writes into a new collection\n`);
  console.log(markdownTable(['figure', 'value', 'detail'], rows));
  console.log(phases.report(() => service.process.logTail(30)));
  await service.dispose();
  process.exitCode = phases.failures.length > 0 ? 1 : 0;
}

if (isMainThread) await main();
else if ((workerData as ScraperData | undefined)?.apiKey) void scrapeLoop(workerData as ScraperData);
