/**
 * The operator console in headless Chromium (issue 30): how fast a trend draws, and what a live
 * tail costs the page.
 *
 *   npm run bench:console -- [--days 365] [--tags 10] [--runs 5] [--live-seconds 60] [--quick]
 *
 * Data (noisy analog: a slow random walk plus measurement noise, 2 decimals, 1 s apart), written
 * in HSW1 through /svcapi/write_fast, then sealed (`seal_now`):
 * - `day`: 1 tag × the last finished UTC day (86,400 points);
 * - `year`: `--tags` tags × `--days` days ending at the last UTC midnight (10 × 365 days =
 *   315 M points).
 *
 * Measured in the page (Debian's chromium through playwright-core, 1280×720, signed in by the
 * token in sessionStorage), from the chart's `data-state` (ui/README.md):
 * 1. first draw: navigation to `/ui/#/trends?s=…&from=…&to=…` until the chart is `ready`, as the
 *    page's own clock has it (performance.now() counts from navigation start); the first run
 *    (cold server caches) and the median of `--runs` more;
 * 2. zoom redraw: the hash moved to a narrower range on the open page, until the chart is
 *    `ready` again (the year to 30 days, to 1 day, to 1 hour);
 * 3. live tail: `--tags` series at 10 points/s each for `--live-seconds`, 15-minute window: frames
 *    longer than 50 ms seen by requestAnimationFrame, the points drawn at the end, and the JS heap
 *    after a forced GC at 10 s and at the end.
 * Beside the page figures, the server's time for the same min and max bucket requests.
 */

import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { encodeBinaryBatch } from '../native-free-codecs/write-body.js';
import { launchFor } from '../test/browser/chromium.js';
import { prng } from '../test/support/prng.js';
import { describeReply, markdownTable, ms, int, sleep, Progress } from './runner.js';
import { startOurService, type HttpsClient } from './service.js';

const { values } = parseArgs({ options: { days: { type: 'string' }, tags: { type: 'string' }, runs: { type: 'string' }, 'live-seconds': { type: 'string' }, quick: { type: 'boolean' } } });
const QUICK = values.quick ?? false;
const DAYS = Number(values.days ?? (QUICK ? 30 : 365));
const TAGS = Number(values.tags ?? 10);
const RUNS = Number(values.runs ?? (QUICK ? 2 : 5));
const LIVE_SECONDS = Number(values['live-seconds'] ?? (QUICK ? 15 : 60));
const DAY_MS = 86_400_000;
const TOKEN_KEY = 'historian.console.token';
const SCOPE = { organization: 'bench', site: 'console', unit: 'u1' };

const midnight = Math.floor(Date.now() / DAY_MS) * DAY_MS;

/** A slow walk plus measurement noise, rounded to 2 decimals, continuing across calls. */
function analog(seed: number): (out: Float64Array) => void {
  const random = prng(seed);
  let level = 100 + random() * 300;
  return (out) => {
    for (let i = 0; i < out.length; i++) {
      level += (random() - 0.5) * 0.1;
      out[i] = Math.round((level + (random() - 0.5) * 0.8) * 100) / 100;
    }
  };
}

async function writeSeries(client: HttpsClient, grid: string, tags: string[], from: number, to: number): Promise<number> {
  const signals = tags.map((_, i) => analog(1000 + i));
  const rows = 21_600;
  const timestamps = new Float64Array(rows);
  const columns = tags.map((name) => ({ name, values: new Float64Array(rows) }));
  const progress = new Progress(`write ${grid}`, ((to - from) / 1000) * tags.length, 'points');
  const started = performance.now();
  let written = 0;
  for (let t = from; t < to; t += rows * 1000) {
    const n = Math.min(rows, (to - t) / 1000);
    for (let i = 0; i < n; i++) timestamps[i] = t + i * 1000;
    for (let k = 0; k < tags.length; k++) signals[k]!(columns[k]!.values.subarray(0, n));
    const body = encodeBinaryBatch({ ...SCOPE, grid }, timestamps.subarray(0, n), columns.map((c) => ({ name: c.name, values: c.values.subarray(0, n) })));
    const reply = await client.request('POST', '/svcapi/write_fast', body, { 'content-type': 'application/octet-stream' });
    if (reply.status !== 200 || !reply.body.toString().includes('"success":true')) throw describeReply(`write ${grid}`, reply);
    written += n * tags.length;
    progress.update(written);
  }
  progress.done(written, (performance.now() - started) / 1000);
  return written;
}

const seriesParam = (grid: string, tags: string[]) => tags.map((t) => `s=${encodeURIComponent(`${SCOPE.organization}/${SCOPE.site}/${SCOPE.unit}/${grid}/${t}`)}`).join('&');
const trendHash = (grid: string, tags: string[], from: number, to: number) => `#/trends?${seriesParam(grid, tags)}&from=${from}&to=${to}`;

/** Navigates to the trend and answers the page's own time from navigation start to `ready`, and the points drawn. */
async function firstDraw(page: Page, baseUrl: string, hash: string): Promise<{ ms: number; points: number }> {
  await page.goto('about:blank');
  await page.goto(`${baseUrl}/ui/${hash}`);
  await page.waitForSelector('[role="img"][data-state="ready"]', { timeout: 120_000 });
  return page.evaluate(`({ ms: performance.now(), points: Number(document.querySelector('[role="img"]').getAttribute('data-points')) })`);
}

/** Moves the open page's hash and answers the time until the chart is `ready` again. */
// In-page code is text: the bench is compiled without the DOM library.
const REDRAW = `(target) => new Promise((resolve, reject) => {
  const chart = document.querySelector('[role="img"]');
  const started = performance.now();
  let loading = false;
  const timer = setTimeout(() => { observer.disconnect(); reject(new Error('no redraw within 120 s')); }, 120000);
  const observer = new MutationObserver(() => {
    const state = chart.getAttribute('data-state');
    if (state === 'loading') loading = true;
    else if (state === 'ready' && loading) {
      observer.disconnect();
      clearTimeout(timer);
      resolve({ ms: performance.now() - started, points: Number(chart.getAttribute('data-points')) });
    }
  });
  observer.observe(chart, { attributes: true, attributeFilter: ['data-state'] });
  location.hash = target;
})`;

const FRAME_COUNTER = `(() => {
  window.longFrames = 0;
  window.frameCount = 0;
  let last = performance.now();
  const tick = (now) => {
    if (now - last > 50) window.longFrames++;
    window.frameCount++;
    last = now;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})()`;

function redraw(page: Page, hash: string): Promise<{ ms: number; points: number }> {
  return page.evaluate(`(${REDRAW})(${JSON.stringify(hash)})`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function serverBuckets(client: HttpsClient, grid: string, tags: string[], from: number, to: number, width: number): Promise<number> {
  const started = performance.now();
  await Promise.all(['min', 'max'].map(async (name) => {
    const body = { start_absolute: from, end_absolute: to, ...SCOPE, grid, metrics: tags.map((t) => ({ name: t, aggregators: [{ name, sampling: { value: width, unit: 'milliseconds' } }] })) };
    const reply = await client.request('POST', '/svcapi/fast_query_binary', JSON.stringify(body), { 'content-type': 'application/json' });
    if (reply.status !== 200) throw describeReply('bucket query', reply);
  }));
  return performance.now() - started;
}

async function main(): Promise<void> {
  const svc = await startOurService({ storage: { autoCreateCollections: true } });
  const client = svc.client(2);
  const browser = await launchFor(svc);
  try {
    const yearTags = Array.from({ length: TAGS }, (_, i) => `TI-${String(101 + i)}`);
    const yearFrom = midnight - DAYS * DAY_MS;
    const dayFrom = midnight - DAY_MS;
    await writeSeries(client, 'day', ['FI-201'], dayFrom, midnight);
    await writeSeries(client, 'year', yearTags, yearFrom, midnight);
    const seal = await client.request('POST', '/svcapi/seal_now', '{}', { 'content-type': 'application/json' });
    if (seal.status !== 200) throw describeReply('seal_now', seal);

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 720 } })).newPage();
    const base = `https://localhost:${svc.port}`;
    await page.goto(`${base}/ui/`);
    await page.evaluate(`sessionStorage.setItem(${JSON.stringify(TOKEN_KEY)}, ${JSON.stringify(svc.token)})`);

    const rows: string[][] = [];
    const scenario = async (label: string, hash: string) => {
      const cold = await firstDraw(page, base, hash);
      const warm: number[] = [];
      for (let i = 0; i < RUNS; i++) warm.push((await firstDraw(page, base, hash)).ms);
      rows.push([label, ms(cold.ms), ms(median(warm)), int(cold.points)]);
    };
    await scenario(`1 series × 24 h at 1 s (86,400 points)`, trendHash('day', ['FI-201'], dayFrom, midnight));
    await scenario(`${TAGS} series × ${DAYS} d at 1 s (${int(TAGS * DAYS * 86_400)} points)`, trendHash('year', yearTags, yearFrom, midnight));

    // Zooms on the open year chart: each from the year view.
    const zooms: Array<[string, number]> = [['30 days', 30 * DAY_MS], ['1 day', DAY_MS], ['1 hour', 3_600_000]];
    for (const [label, span] of zooms) {
      const times: number[] = [];
      let points = 0;
      for (let i = 0; i < RUNS; i++) {
        await firstDraw(page, base, trendHash('year', yearTags, yearFrom, midnight));
        const from = midnight - Math.round(DAYS / 2) * DAY_MS - (i + 1) * 7_200_000;
        const r = await redraw(page, trendHash('year', yearTags, from, from + span).slice(1));
        times.push(r.ms);
        points = r.points;
      }
      rows.push([`zoom redraw, year → ${label}`, '', ms(median(times)), int(points)]);
    }
    console.log(markdownTable(['trend', 'first run', `median of ${RUNS}`, 'points drawn'], rows));

    const server: string[][] = [];
    for (const [label, grid, tags, from, to, width] of [
      ['24 h, 1 series, 1 min buckets', 'day', ['FI-201'], dayFrom, midnight, 60_000],
      [`${DAYS} d, ${TAGS} series, 6 h buckets`, 'year', yearTags, yearFrom, midnight, 21_600_000],
      [`30 d, ${TAGS} series, 30 min buckets`, 'year', yearTags, midnight - 30 * DAY_MS, midnight, 1_800_000],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) times.push(await serverBuckets(client, grid, [...tags], from, to, width));
      server.push([label, ms(median(times))]);
    }
    console.log(`\nServer side, min and max bucket requests in parallel (fast_query_binary), median of ${RUNS}:\n`);
    console.log(markdownTable(['query', 'time'], server));

    // Live tail: the writer sends one point per tag every 100 ms, stamped now.
    const liveTags = Array.from({ length: TAGS }, (_, i) => `LT-${i + 1}`);
    await writeSeries(client, 'live', liveTags, Date.now() - 60_000 - (Date.now() % 1000), Date.now() - (Date.now() % 1000));
    const cdp = await page.context().newCDPSession(page);
    await page.goto('about:blank');
    await page.goto(`${base}/ui/#/trends?${seriesParam('live', liveTags)}&range=15m&live=1`);
    await page.waitForSelector('[role="img"][data-state="ready"]');
    await page.evaluate(FRAME_COUNTER);
    const heap = async () => {
      await cdp.send('HeapProfiler.collectGarbage');
      const { metrics } = await cdp.send('Performance.getMetrics');
      return metrics.find((m) => m.name === 'JSHeapUsedSize')!.value;
    };
    await cdp.send('Performance.enable');
    let writing = true;
    let sent = 0;
    const writer = (async () => {
      const columns = liveTags.map((name) => ({ name, values: new Float64Array(1) }));
      const signals = liveTags.map((_, i) => analog(5000 + i));
      while (writing) {
        const t = Date.now();
        for (let k = 0; k < liveTags.length; k++) signals[k]!(columns[k]!.values);
        const body = encodeBinaryBatch({ ...SCOPE, grid: 'live' }, [t], columns);
        const reply = await client.request('POST', '/svcapi/write', body, { 'content-type': 'application/octet-stream' });
        if (reply.status !== 200) throw describeReply('live write', reply);
        sent += liveTags.length;
        await sleep(Math.max(0, 100 - (Date.now() - t)));
      }
    })();
    await sleep(10_000);
    const heapAt10 = await heap();
    const framesAt10 = (await page.evaluate('({ f: window.frameCount, l: window.longFrames })')) as { f: number; l: number };
    await sleep((LIVE_SECONDS - 10) * 1000);
    writing = false;
    await writer;
    await sleep(500);
    const heapAtEnd = await heap();
    const frames = (await page.evaluate('({ f: window.frameCount, l: window.longFrames })')) as { f: number; l: number };
    const drawn = Number(await page.getAttribute('[role="img"]', 'data-points'));
    console.log(`\nLive tail, ${TAGS} series × 10 points/s for ${LIVE_SECONDS} s (15-minute window):\n`);
    console.log(markdownTable(['figure', 'value'], [
      ['points written / drawn at the end', `${int(sent)} / ${int(drawn)}`],
      ['frames, and frames longer than 50 ms (10 s → end)', `${int(frames.f - framesAt10.f)}, ${int(frames.l - framesAt10.l)}`],
      ['JS heap after GC at 10 s → at the end', `${(heapAt10 / 2 ** 20).toFixed(1)} → ${(heapAtEnd / 2 ** 20).toFixed(1)} MiB`],
    ]));
  } finally {
    await browser.close();
    await svc.dispose();
  }
}

await main();
