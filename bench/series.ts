/**
 * Series identity (issue 27): what a million series cost and how fast they are found.
 *
 *   npm run bench:series -- [--series 1000000] [--collections 100] [--big 400000] [--runs 20]
 *
 * 1. `--series` line protocol series (with labels: measurement, field, two line tags) spread
 *    over `--collections` collections; the server's RSS before and after gives bytes per series.
 * 2. GET /svcapi/series, limit 1000, timed from the client over `--runs` runs: a `match` that
 *    selects 1% with a literal prefix, one that selects 1% with a leading `*` (every name is
 *    looked at), every series (no match), and one collection.
 * 3. Adding one new series to a collection that holds `--big` series already, against writing
 *    one point of a known series there: with the dictionary log this costs an append, not a
 *    rewrite of the whole dictionary (which cost 274 ms at 400 k tags before).
 */

import { parseArgs } from 'node:util';
import { createIngestClient } from './ours.js';
import { commandLine, describeReply, machine, markdownTable } from './runner.js';
import { startOurService, vmRssKb, type HttpsClient } from './service.js';

const { values } = parseArgs({ options: { series: { type: 'string' }, collections: { type: 'string' }, big: { type: 'string' }, runs: { type: 'string' } } });
const SERIES = Number(values.series ?? 1_000_000);
const COLLECTIONS = Number(values.collections ?? 100);
const BIG = Number(values.big ?? 400_000);
const RUNS = Number(values.runs ?? 20);
const LINES_PER_REQUEST = 20_000;
const T0 = Date.UTC(2026, 0, 1);
const CLIENT = 'bench-series';

/** The series of collection `c`: `meter,area=aNN,loop=L<k>.v`, area = k mod 100 (so one area is 1%). */
function linesOf(grid: string, from: number, to: number, ts: number): string {
  let out = '';
  for (let k = from; k < to; k++) out += `meter,grid=${grid},area=a${String(k % 100).padStart(2, '0')},loop=L${k} v=${((k * 7919) % 10_000) / 100} ${ts}\n`;
  return out;
}

async function post(client: HttpsClient, body: string): Promise<number> {
  const reply = await client.request('POST', `/ingest/v2/write?db=${CLIENT}&precision=ms`, body, { 'content-type': 'text/plain' });
  if (reply.status !== 204) throw describeReply('line protocol write', reply);
  return reply.ms;
}

async function writeSeries(client: HttpsClient, grid: string, count: number): Promise<void> {
  for (let from = 0; from < count; from += LINES_PER_REQUEST) await post(client, linesOf(grid, from, Math.min(count, from + LINES_PER_REQUEST), T0));
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function timed(client: HttpsClient, query: string): Promise<{ median: number; p95: number; total: number; page: number }> {
  const times: number[] = [];
  let total = 0;
  let page = 0;
  for (let i = 0; i < RUNS; i++) {
    const reply = await client.get(`/svcapi/series?${query}`);
    if (reply.status !== 200) throw describeReply(`series ${query}`, reply);
    const body = JSON.parse(reply.body.toString('utf8')) as { series: unknown[]; total: number };
    total = body.total;
    page = body.series.length;
    times.push(reply.ms);
  }
  times.sort((a, b) => a - b);
  return { median: percentile(times, 50), p95: percentile(times, 95), total, page };
}

const service = await startOurService({ ingest: { rateLimitPerMinute: 1_000_000, maxBodyBytes: 64 * 1024 * 1024 }, storage: { maxSeriesPerCollection: Math.max(1_000_000, BIG + 1000) } });
try {
  const client = service.client(2);
  await createIngestClient(client, CLIENT, { organization: 'bench', site: 'plant-1', unit: 'series' });
  await post(client, linesOf('warmup', 0, 10, T0)); // the worker and the route are warm before RSS is taken
  const rssBefore = vmRssKb(service.process.child.pid!)! * 1024;
  const started = performance.now();
  const perCollection = Math.ceil(SERIES / COLLECTIONS);
  for (let c = 0; c < COLLECTIONS; c++) await writeSeries(client, `g${String(c).padStart(3, '0')}`, perCollection);
  const writeSeconds = (performance.now() - started) / 1000;
  const rssAfter = vmRssKb(service.process.child.pid!)! * 1024;
  const total = perCollection * COLLECTIONS;

  // The first listing after new series sorts their names (merged into each collection's sorted order): timed apart.
  const firstListing = await client.get('/svcapi/series?limit=1000');
  if (firstListing.status !== 200) throw describeReply('first series listing', firstListing);
  const prefix = await timed(client, `match=${encodeURIComponent('meter,area=a07,*')}&limit=1000`);
  const infix = await timed(client, `match=${encodeURIComponent('*,area=a07,*')}&limit=1000`);
  const all = await timed(client, 'limit=1000');
  const one = await timed(client, `collection=${encodeURIComponent(`bench/plant-1/series/g${String(Math.floor(COLLECTIONS / 2)).padStart(3, '0')}`)}&limit=1000`);

  // 3. New series into a big collection.
  await writeSeries(client, 'big', BIG);
  const newSeries: number[] = [];
  const known: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    newSeries.push(await post(client, `meter,grid=big,area=new,loop=N${i} v=1 ${T0}\n`));
    known.push(await post(client, `meter,grid=big,area=a00,loop=L0 v=${i} ${T0 + i + 1}\n`));
  }
  newSeries.sort((a, b) => a - b);
  known.sort((a, b) => a - b);

  const ms = (x: number) => x.toFixed(1);
  console.log(`# Series identity (issue 27)\n\n${machine()}\n\`${commandLine()}\`\n`);
  console.log(`${total.toLocaleString('en')} line protocol series with labels in ${COLLECTIONS} collections, written in ${writeSeconds.toFixed(1)} s; server RSS ${(rssBefore / 2 ** 20).toFixed(0)} → ${(rssAfter / 2 ** 20).toFixed(0)} MiB: **${((rssAfter - rssBefore) / total).toFixed(0)} bytes per series** (names, labels, dictionary maps, last values, tag-to-scope map).\n`);
  console.log(markdownTable(
    ['GET /svcapi/series', 'matches', 'page', 'median ms', 'p95 ms'],
    [
      ['match `meter,area=a07,*` (1%, literal prefix)', String(prefix.total), String(prefix.page), ms(prefix.median), ms(prefix.p95)],
      ['match `*,area=a07,*` (1%, every name looked at)', String(infix.total), String(infix.page), ms(infix.median), ms(infix.p95)],
      ['no match (every series)', String(all.total), String(all.page), ms(all.median), ms(all.p95)],
      ['one collection', String(one.total), String(one.page), ms(one.median), ms(one.p95)],
    ],
  ));
  console.log(`\nThe first listing after the writes (it sorts the names of the new series, once): ${ms(firstListing.ms)} ms.`);
  console.log(`\nOne-line write into a collection of ${BIG.toLocaleString('en')} series, ${RUNS} runs: a new series median ${ms(percentile(newSeries, 50))} ms (p95 ${ms(percentile(newSeries, 95))}), a known series median ${ms(percentile(known, 50))} ms (p95 ${ms(percentile(known, 95))}).`);
} finally {
  await service.dispose();
}
