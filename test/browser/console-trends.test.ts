// The console's Trends page in a real browser (headless Chromium, playwright-core) against the
// real service: sign in through the form, find series by search, pick two from two collections,
// and check that the chart draws exactly the min/max buckets of what was written; drag to zoom,
// presets, Back, a link opened in a new page, live tail without refetching history, CSV of the
// shown range, another tenant's view, phone and desktop widths in light and dark.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { accountHelpers, USER_PASSWORD } from '../api/accounts.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, tempDir, type TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';
import { CHROMIUM, launchFor } from './chromium.js';
import { chartInfo, expectedDraw, hashParams, idOf, lineHits, localTime, PageProblems, series, signIn, type ChartInfo, type Points } from './console-trends-support.js';

const BOILER = { organization: 'trendco', site: 'north', unit: 'boiler', grid: 'g1' };
const TURBINE = { organization: 'trendco', site: 'north', unit: 'turbine', grid: 'g1' };
const RIVAL = { organization: 'rival', site: 's2', unit: 'press', grid: 'main' };
const HOLE: [number, number] = [25 * 60_000, 40 * 60_000];
const H = 3_600_000;
const NICE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, H, 2 * H, 3 * H, 6 * H, 12 * H, 24 * H, 48 * H, 168 * H, 336 * H, 720 * H, 2160 * H, 8760 * H];
const TI = `TI-101 (${idOf(BOILER)})`;
const FI = `FI-303 (${idOf(TURBINE)})`;
const SHOTS = '/tmp/console-shots';

describe('console Trends page in a real browser', () => {
  let svc: TestService;
  let admin: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let shots: string;
  let rival: { email: string };
  const problems = new PageProblems();
  const written: Record<string, Points> = {};
  const binaryRequests: string[] = [];
  let zoomedUrl = '';

  const chart = (p: Page = page): Locator => p.getByRole('img', { name: `Trend of ${TI}, ${FI}`, exact: true });
  const write = async (scope: typeof BOILER, tags: Record<string, Points>) => {
    const res = await svc.request('POST', '/svcapi/write', { token: admin, body: { ...scope, tags } });
    assert.equal(res.body?.success, true, `write ${idOf(scope)}: ${res.text}`);
  };
  /** Waits for a drawn chart (state ready) that satisfies `ok`; on failure says what it was. */
  const ready = async (c: Locator, ok: (info: ChartInfo) => boolean = () => true, what = 'the chart is drawn'): Promise<ChartInfo> => {
    let info: ChartInfo | null = null;
    try {
      await waitFor(async () => {
        info = await chartInfo(c);
        return info.state === 'ready' && ok(info);
      }, what, { timeoutMs: 20_000 });
    } catch (err) {
      throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(info)}`);
    }
    return info!;
  };
  /** The plot area's box, once laid out (a theme change rebuilds the plot). */
  const plotBox = async (c: Locator) => {
    let box: { x: number; y: number; width: number; height: number } | null = null;
    await waitFor(async () => (box = await c.locator('.u-over').boundingBox()) !== null && box.width > 0, 'the plot is laid out');
    return box!;
  };
  /** The drawn points, extent and gaps match the buckets of what was written, computed here. */
  const matchesWritten = async (c: Locator, info: ChartInfo) => {
    const expected = expectedDraw([written['TI-101']!, written['FI-303']!], info.from, info.to, info.bucketMs);
    assert.ok(NICE.includes(info.bucketMs), `bucket width ${info.bucketMs} is a nice width`);
    const plot = await plotBox(c);
    assert.ok(plot.width > 100, 'the plot has a width');
    // At most 2 points per pixel per series: no more buckets than pixels, and the next nicer width down would exceed that.
    assert.ok(expected.buckets <= Math.ceil(plot.width) + 1, `${expected.buckets} buckets for ${plot.width} px`);
    const smaller = NICE[NICE.indexOf(info.bucketMs) - 1];
    if (smaller) assert.ok((info.to - info.from) / smaller > plot.width, `${smaller} ms buckets would have fitted ${plot.width} px`);
    assert.ok(expected.points > 0, 'the view holds written points');
    assert.deepEqual({ points: info.points, yMin: info.yMin, yMax: info.yMax }, { points: expected.points, yMin: expected.yMin, yMax: expected.yMax });
  };

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium`);
    shots = tempDir('console-trends-');
    svc = await startService({ config: { storage: { autoCreateCollections: true } } });
    admin = await svc.adminToken();
    const { mk, account } = accountHelpers(() => svc, () => admin);
    const unit = await mk('units', { name: RIVAL.unit, siteId: await mk('sites', { name: RIVAL.site, orgsId: await mk('orgs', { name: RIVAL.organization }) }) });
    const now = Date.now();
    written['TI-101'] = series(1, now, 80, 5, HOLE);
    written['PI-202'] = series(2, now, 2.5, 0.5);
    written['FI-303'] = series(3, now, 300, 20);
    written['RX-900'] = series(4, now, 100, 1);
    await write(BOILER, { 'TI-101': written['TI-101'], 'PI-202': written['PI-202'] });
    await write(TURBINE, { 'FI-303': written['FI-303'] });
    await write(RIVAL, { 'RX-900': written['RX-900'] });
    rival = await account('rival-trends@plant.test', { units: [unit] });

    browser = await launchFor(svc);
    context = await browser.newContext({ viewport: { width: 1280, height: 720 }, colorScheme: 'light', acceptDownloads: true });
    page = await context.newPage();
    problems.watch(page, 'admin page');
    page.on('request', (r) => { if (r.url().includes('/svcapi/fast_query_binary')) binaryRequests.push(r.url()); });
  });
  after(async () => {
    await browser?.close();
    await svc?.dispose();
    if (shots) fs.rmSync(shots, { recursive: true, force: true });
  });

  test('sign in, search, see last values, pick two series: the chart draws the buckets of what was written', async () => {
    await signIn(page, `${svc.baseUrl}/ui/`, ADMIN_EMAIL, ADMIN_PASSWORD);
    await page.getByRole('link', { name: 'Trends', exact: true }).click();
    await page.getByText('Pick one or more series').waitFor();

    const search = page.getByLabel('Search series', { exact: true });
    assert.equal(await search.getAttribute('type'), 'search');
    // Before typing, every series the admin may see is listed.
    await waitFor(async () => (await page.getByRole('checkbox').count()) === 4, 'four series listed');
    await search.fill('101');
    const ti = page.getByRole('checkbox', { name: TI, exact: true });
    await waitFor(async () => (await page.getByRole('checkbox').count()) === 1, 'a plain word searches as *word*: only TI-101');
    await ti.waitFor();
    const [lastTs, lastValue] = written['TI-101']!.at(-1)!;
    const row = page.locator('.series-item', { has: ti });
    assert.equal(await row.locator('.series-value').textContent(), String(lastValue));
    assert.equal(await row.locator('.series-time').textContent(), localTime(lastTs));
    await ti.check();

    await search.fill('F?-*');
    const fi = page.getByRole('checkbox', { name: FI, exact: true });
    await fi.waitFor();
    assert.equal(await page.getByRole('checkbox').count(), 1, 'the glob matches FI-303 only');
    await fi.press('Space');
    assert.equal(await fi.isChecked(), true, 'picked by keyboard');

    const info = await ready(chart());
    await matchesWritten(chart(), info);
    assert.deepEqual(info.gaps, [1, 0], 'TI-101 breaks once, across its hole; FI-303 does not');
    // And the canvas shows it: no TI-101 colour in the middle of its hole, some where it has data.
    const last = written['TI-101']!.at(-1)![0];
    const frac = (age: number) => (last - age - info.from) / (info.to - info.from);
    const hole = [0.2, 0.5, 0.8].map((f) => frac(HOLE[0] + f * (HOLE[1] - HOLE[0])));
    const hits = await lineHits(page, 1, [...hole, frac(10 * 60_000), frac(50 * 60_000)]);
    assert.deepEqual(hits.slice(0, 3), [0, 0, 0], 'no line across the hole');
    assert.ok(hits[3]! > 0 && hits[4]! > 0, `the line where there is data (${hits})`);
    assert.equal(info.to - info.from, 3_600_000, 'the default range is the last hour');
    const params = hashParams(page);
    assert.deepEqual(params.getAll('s'), [`${idOf(BOILER)}/TI-101`, `${idOf(TURBINE)}/FI-303`]);
    assert.equal(params.get('range'), '1h');
    assert.equal(await page.getByRole('button', { name: '1h', exact: true }).getAttribute('aria-pressed'), 'true');
    // Two chips, each removable.
    assert.equal(await page.getByRole('button', { name: `Remove ${TI}`, exact: true }).count(), 1);
    assert.equal(await page.getByRole('button', { name: `Remove ${FI}`, exact: true }).count(), 1);

    // The collection filter narrows an empty search (every series) to one collection.
    await search.fill('');
    await waitFor(async () => (await page.getByRole('checkbox').count()) === 4, 'an empty search lists every series');
    await page.getByLabel('Collection', { exact: true }).selectOption(idOf(BOILER));
    await waitFor(async () => (await page.locator('.series-count').textContent()) === '2 of 2 series', 'two series in the boiler collection');
    assert.deepEqual((await page.getByRole('checkbox').evaluateAll((els: any[]) => els.map((e) => e.getAttribute('aria-label')))).sort(),
      [`PI-202 (${idOf(BOILER)})`, TI]);
    assert.equal(await page.getByRole('checkbox', { name: TI, exact: true }).isChecked(), true, 'a picked series shows as picked');
  });

  test('readable at 1280×720 in light and dark: no horizontal overflow; screenshots', async () => {
    await page.mouse.move(0, 0);
    const overflow = () => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    assert.ok(await overflow() <= 0, 'no horizontal overflow at 1280 px');
    const light = path.join(shots, 'trends-1280-light.png');
    await page.screenshot({ path: light });
    fs.mkdirSync(SHOTS, { recursive: true });
    fs.copyFileSync(light, path.join(SHOTS, 'trends.png'));
    // A theme change replaces the canvas: a shot that loses its element counts as "not yet".
    const canvasShot = () => chart().locator('canvas').screenshot({ timeout: 5000 }).catch(() => null);
    const canvasBefore = (await canvasShot())!;
    assert.ok(canvasBefore, 'the chart canvas');
    await page.emulateMedia({ colorScheme: 'dark' });
    // The chart rebuilds with the dark palette (no refetch needed); the pixels differ.
    await waitFor(async () => (await canvasShot())?.equals(canvasBefore) === false, 'the chart redraws in dark colours');
    await ready(chart());
    await page.screenshot({ path: path.join(shots, 'trends-1280-dark.png') });
    fs.copyFileSync(path.join(shots, 'trends-1280-dark.png'), path.join(SHOTS, 'trends-dark.png'));
    assert.ok(await overflow() <= 0, 'no horizontal overflow in dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await waitFor(async () => (await canvasShot())?.equals(canvasBefore) === true, 'the chart is light again, as before');
  });

  test('dragging across the plot zooms: from/to in the URL, a refetch at the new resolution', async () => {
    const before = await ready(chart());
    const requests = binaryRequests.length;
    const box = await plotBox(chart());
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 10 });
    await page.mouse.up();
    await waitFor(() => hashParams(page).has('from'), 'the URL gets from/to');
    const params = hashParams(page);
    const [from, to] = [Number(params.get('from')), Number(params.get('to'))];
    assert.equal(params.get('range'), null);
    const span = before.to - before.from;
    assert.ok(from > before.from && to < before.to, 'inside the range before');
    assert.ok(Math.abs((to - from) / span - 0.3) < 0.02, `a 30% drag gives 30% of the range (${(to - from) / span})`);
    const info = await ready(chart(), (i) => i.from === from && i.to === to, 'the chart shows the zoomed range');
    assert.ok(info.bucketMs < before.bucketMs, 'finer buckets');
    assert.equal(binaryRequests.length - requests, 4, 'min and max for each of the two collections, once');
    await matchesWritten(chart(), info);
    zoomedUrl = page.url();
  });

  test('a preset replaces the range; Back returns to the zoom and Forward to the preset', async () => {
    const preset = page.getByRole('button', { name: '15m', exact: true });
    await preset.click();
    await waitFor(() => hashParams(page).get('range') === '15m', 'the URL says range=15m');
    assert.equal(await preset.getAttribute('aria-pressed'), 'true');
    assert.equal(await page.getByRole('button', { name: '1h', exact: true }).getAttribute('aria-pressed'), 'false');
    assert.equal(hashParams(page).get('from'), null);
    const info = await ready(chart(), (i) => i.to - i.from === 15 * 60_000, 'a 15 minute chart');
    await matchesWritten(chart(), info);

    await page.goBack();
    const zoomed = new URL(zoomedUrl).hash;
    await waitFor(() => new URL(page.url()).hash === zoomed, 'Back restores the zoomed URL');
    const params = hashParams(page);
    await ready(chart(), (i) => i.from === Number(params.get('from')) && i.to === Number(params.get('to')), 'the chart follows Back');
    await page.goForward();
    await ready(chart(), (i) => i.to - i.from === 15 * 60_000, 'the chart follows Forward');
    assert.equal(await preset.getAttribute('aria-pressed'), 'true');
  });

  test('keyboard: ← on the focused chart pans half a range; an absolute range applies from the form', async () => {
    const before = await ready(chart());
    const span = before.to - before.from;
    await chart().focus();
    await page.keyboard.press('ArrowLeft');
    await waitFor(() => hashParams(page).has('from'), 'the URL gets from/to');
    let params = hashParams(page);
    assert.deepEqual([Number(params.get('from')), Number(params.get('to'))], [before.from - span / 2, before.to - span / 2]);
    await ready(chart(), (i) => i.from === before.from - span / 2 && i.to === before.to - span / 2, 'the chart moved half a range earlier');

    // 20 minutes about 50 minutes ago, typed into the form and submitted with Enter.
    const from = Math.floor((Date.now() - 50 * 60_000) / 60_000) * 60_000;
    const to = from + 20 * 60_000;
    await page.getByLabel('From', { exact: true }).fill(localTime(from).replace(' ', 'T'));
    await page.getByLabel('To', { exact: true }).fill(localTime(to).replace(' ', 'T'));
    await page.getByLabel('To', { exact: true }).press('Enter');
    await waitFor(() => hashParams(page).get('from') === String(from), 'the URL holds the typed range');
    params = hashParams(page);
    assert.equal(params.get('to'), String(to));
    const info = await ready(chart(), (i) => i.from === from && i.to === to, 'the chart shows the typed range');
    await matchesWritten(chart(), info);

    // Zoom out: twice the range around the same middle.
    await page.getByRole('button', { name: 'Zoom out', exact: true }).click();
    await waitFor(() => hashParams(page).get('from') === String(from - 10 * 60_000), 'the URL holds the doubled range');
    assert.equal(hashParams(page).get('to'), String(to + 10 * 60_000));
    await matchesWritten(chart(), await ready(chart(), (i) => i.from === from - 10 * 60_000, 'the chart shows the doubled range'));

    // A year draws from a few 12 h buckets, not from its points.
    await page.getByRole('button', { name: '1y', exact: true }).click();
    const year = await ready(chart(), (i) => i.to - i.from === 8760 * H, 'a one year chart');
    assert.ok(year.bucketMs >= 12 * H, `${year.bucketMs} ms buckets for a year`);
    await matchesWritten(chart(), year);

    // Back to a preset, by keyboard.
    await page.getByRole('button', { name: '15m', exact: true }).press('Enter');
    await ready(chart(), (i) => i.to - i.from === 15 * 60_000, 'a 15 minute chart again');
  });

  test('a link opens the same chart in a new page (signed in again); its CSV holds exactly the written points of the range', async () => {
    const other = await context.newPage();
    problems.watch(other, 'link page');
    await signIn(other, zoomedUrl, ADMIN_EMAIL, ADMIN_PASSWORD);
    const params = hashParams(other);
    const [from, to] = [Number(params.get('from')), Number(params.get('to'))];
    const info = await ready(chart(other), (i) => i.from === from && i.to === to, 'the linked chart shows the same range');
    await matchesWritten(chart(other), info);
    assert.equal(await other.getByRole('checkbox', { name: TI, exact: true }).isChecked(), true);

    const [download] = await Promise.all([other.waitForEvent('download'), other.getByRole('button', { name: 'Download CSV', exact: true }).click()]);
    assert.match(download.suggestedFilename(), /^trend-.*\.csv$/);
    const text = fs.readFileSync((await download.path())!, 'utf8');
    const rows = (tag: string) => written[tag]!.filter(([t]) => t >= from && t <= to).map(([t, v]) => `${t},${tag},${v}\r\n`);
    assert.ok(rows('TI-101').length > 10 && rows('FI-303').length > 10, 'the range holds points of both');
    assert.equal(text, `time,tag,value\r\n${rows('TI-101').join('')}${rows('FI-303').join('')}`);

    // Removing a chip removes the series from the chart and the URL.
    await other.getByRole('button', { name: `Remove ${FI}`, exact: true }).click();
    await waitFor(() => hashParams(other).getAll('s').join() === `${idOf(BOILER)}/TI-101`, 'the URL keeps TI-101 only');
    const alone = await ready(other.getByRole('img', { name: `Trend of ${TI}`, exact: true }));
    assert.deepEqual(alone.yMax, expectedDraw([written['TI-101']!], from, to, alone.bucketMs).yMax);
    await other.close();
  });

  test('live tail: a point written now arrives without refetching history; turning it off updates the URL', async () => {
    const liveButton = page.getByRole('button', { name: 'Live', exact: true });
    await liveButton.click();
    await waitFor(() => hashParams(page).get('live') === '1', 'the URL says live=1');
    assert.equal(await liveButton.getAttribute('aria-pressed'), 'true');
    const before = await ready(chart(), (i) => i.live === 'live', 'live and drawn');
    const requests = binaryRequests.length;
    // A new bucket (now), a second point into it (its min and max then differ), and a point
    // into an old bucket of the window: values above the rest, exact in f32 like the history.
    const now = Date.now();
    const old = written['TI-101']!.filter(([t]) => t > now - 6 * 60_000)[0]![0];
    const points: Points = [[now, 987.5], [now + 1, 950.25], [old + 1, 500.5]];
    await write(BOILER, { 'TI-101': points });
    written['TI-101'] = [...written['TI-101']!, ...points].sort((a, b) => a[0] - b[0]);
    const drawnAsWritten = (i: ChartInfo) => {
      const e = expectedDraw([written['TI-101']!, written['FI-303']!], i.from, i.to, i.bucketMs);
      return i.points === e.points && i.yMax === e.yMax && i.yMax === 987.5;
    };
    // Exactly the buckets of what was written, over the window as it has slid since.
    const info = await ready(chart(), drawnAsWritten, 'the live points are drawn, merged into their buckets');
    await matchesWritten(chart(), info);
    assert.equal(info.gaps[1], before.gaps[1], "FI-303's line is not broken by a TI-101 point");
    await page.mouse.move(0, 0);
    await waitFor(async () => (await chart().locator('.u-legend .u-series').nth(1).locator('.u-value').textContent()) === '987.5', 'the legend shows the latest value');
    assert.deepEqual(binaryRequests.slice(requests), [], 'no history refetch after the live point');

    await liveButton.click();
    await waitFor(() => !hashParams(page).has('live'), 'the URL drops live=1');
    await ready(chart(), (i) => i.live === 'off', 'live is off');
  });

  test('a phone at 390 px: no horizontal overflow, the chart fits; screenshot', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await waitFor(async () => ((await chart().locator('.u-over').boundingBox())?.width ?? 999) < 360, 'the chart shrinks');
    // A much narrower plot asks again, at its own resolution.
    await matchesWritten(chart(), await ready(chart(), (i) => i.bucketMs > 2000, 'coarser buckets for the narrow plot'));
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    assert.ok(overflow <= 0, `no horizontal overflow at 390 px (${overflow})`);
    const canvas = (await chart().locator('canvas').boundingBox())!;
    assert.ok(canvas.x >= 0 && canvas.x + canvas.width <= 390, 'the canvas is inside the viewport');
    await page.screenshot({ path: path.join(shots, 'trends-390.png'), fullPage: true });
    fs.copyFileSync(path.join(shots, 'trends-390.png'), path.join(SHOTS, 'trends-390.png'));
    await page.setViewportSize({ width: 1280, height: 720 });
  });

  test("another tenant's user sees only their own series, and a link to ours draws nothing of it", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const theirs = await ctx.newPage();
    // The foreign link below is refused (404, as for a collection that does not exist), which Chromium logs as a failed load.
    problems.watch(theirs, 'rival page', [/Failed to load resource: the server responded with a status of 404/]);
    await signIn(theirs, `${svc.baseUrl}/ui/#/trends`, rival.email, USER_PASSWORD);
    await theirs.getByLabel('Search series', { exact: true }).fill('*');
    await theirs.getByRole('checkbox', { name: `RX-900 (${idOf(RIVAL)})`, exact: true }).waitFor();
    await waitFor(async () => (await theirs.locator('.series-count').textContent()) === '1 of 1 series', 'one series in all');
    assert.deepEqual(await theirs.getByRole('checkbox').evaluateAll((els: any[]) => els.map((e) => e.getAttribute('aria-label'))), [`RX-900 (${idOf(RIVAL)})`]);
    assert.deepEqual(await theirs.locator('#series-collection option').allTextContents(), ['All collections', idOf(RIVAL)]);
    assert.equal(await theirs.getByText('trendco').count(), 0, 'nothing of trendco on the page');

    await theirs.goto(`${svc.baseUrl}/ui/#/trends?s=${idOf(BOILER)}/TI-101&range=1h`);
    const foreign = theirs.getByRole('img', { name: `Trend of ${TI}`, exact: true });
    await waitFor(async () => (await chartInfo(foreign)).state === 'error', 'the foreign series is refused');
    assert.equal((await chartInfo(foreign)).points, 0);
    assert.match((await theirs.locator('.chart-panel [role=alert]').first().textContent()) ?? '', /could not be loaded: .*trendco\/north\/boiler\/g1/);
    await ctx.close();
  });

  test('no page errors, console errors or CSP violations', () => {
    problems.assertNone();
  });
});
