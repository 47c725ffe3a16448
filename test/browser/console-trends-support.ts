// What the Trends browser test needs besides the browser: the data it writes (relative to now, so
// presets find it), the buckets the chart must draw from it (computed here, independently of the
// console's code), signing in through the form, and a record of page errors.

import assert from 'node:assert/strict';
import type { ConsoleMessage, Locator, Page } from 'playwright-core';
import { prng } from '../support/prng.js';

export type Points = Array<[number, number]>;

export interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

export const idOf = (s: Scope) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;

export const STEP_MS = 10_000;
export const SPAN_MS = 2 * 3_600_000;

/**
 * Two hours of 10 s points ending before `now`, noisy values with 2 decimals around `base`;
 * `hole` (ages in ms, exclusive) leaves a real gap in the data.
 */
export function series(seed: number, now: number, base: number, spread: number, hole?: [number, number]): Points {
  const random = prng(seed);
  const last = Math.floor(now / STEP_MS) * STEP_MS - STEP_MS;
  const points: Points = [];
  for (let t = last - SPAN_MS + STEP_MS; t <= last; t += STEP_MS) {
    const value = Math.round((base + (random() - 0.5) * 2 * spread) * 100) / 100;
    if (hole && last - t > hole[0] && last - t < hole[1]) continue;
    points.push([t, value]);
  }
  return points;
}

export interface Expected {
  points: number;
  yMin: number | null;
  yMax: number | null;
  buckets: number;
}

/**
 * What the chart must draw for `lists` over the view [from, to] at bucket width w: epoch-aligned
 * buckets covering the view, per non-empty bucket one point (min = max) or two; values as
 * binary format 1 carries them (f32).
 */
export function expectedDraw(lists: Points[], from: number, to: number, w: number): Expected {
  const start = Math.floor(from / w) * w;
  const end = Math.floor(to / w) * w + w - 1;
  let points = 0;
  let yMin: number | null = null;
  let yMax: number | null = null;
  for (const list of lists) {
    const buckets = new Map<number, { min: number; max: number }>();
    for (const [t, v] of list) {
      if (t < start || t > end) continue;
      const b = Math.floor(t / w);
      const cur = buckets.get(b);
      if (!cur) buckets.set(b, { min: v, max: v });
      else {
        cur.min = Math.min(cur.min, v);
        cur.max = Math.max(cur.max, v);
      }
    }
    for (const { min, max } of buckets.values()) {
      const [lo, hi] = [Math.fround(min), Math.fround(max)];
      points += lo === hi ? 1 : 2;
      yMin = yMin === null ? lo : Math.min(yMin, lo);
      yMax = yMax === null ? hi : Math.max(yMax, hi);
    }
  }
  return { points, yMin, yMax, buckets: Math.round((end + 1 - start) / w) };
}

/** The chart element's data-* attributes, read at once (one draw's worth). */
export interface ChartInfo {
  state: string;
  points: number;
  from: number;
  to: number;
  bucketMs: number;
  yMin: number | null;
  yMax: number | null;
  gaps: number[];
  live: string;
}

export async function chartInfo(chart: Locator): Promise<ChartInfo> {
  const d = await chart.evaluate((el: any) => ({ ...el.dataset }) as Record<string, string | undefined>);
  const num = (s: string | undefined) => (s === undefined ? NaN : Number(s));
  return {
    state: d.state ?? '', points: num(d.points), from: num(d.from), to: num(d.to), bucketMs: num(d.bucketMs),
    yMin: d.yMin === undefined ? null : Number(d.yMin), yMax: d.yMax === undefined ? null : Number(d.yMax),
    gaps: d.gaps ? d.gaps.split(',').map(Number) : [], live: d.live ?? '',
  };
}

/**
 * Pixels of series `n`'s colour (--series-n) in single columns of the chart's canvas, at
 * fractions of the plot's width: whether a line is drawn there.
 */
export async function lineHits(page: Page, n: number, fractions: number[]): Promise<number[]> {
  return page.evaluate<number[]>(`(() => {
    const canvas = document.querySelector('.trend-chart canvas');
    const over = document.querySelector('.trend-chart .u-over').getBoundingClientRect();
    const box = canvas.getBoundingClientRect();
    const scale = canvas.width / box.width;
    const hex = getComputedStyle(document.documentElement).getPropertyValue('--series-${n}').trim();
    const rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    return ${JSON.stringify(fractions)}.map((f) => {
      const x = Math.round((over.left - box.left + f * over.width) * scale);
      const px = canvas.getContext('2d').getImageData(x, 0, 1, canvas.height).data;
      let hits = 0;
      for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i] - rgb[0]) + Math.abs(px[i + 1] - rgb[1]) + Math.abs(px[i + 2] - rgb[2]) < 90) hits++;
      return hits;
    });
  })()`);
}

/** Signs in through the console's form (the page shows it for any URL without a session). */
export async function signIn(page: Page, url: string, email: string, password: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('link', { name: 'Trends', exact: true }).waitFor();
}

/** The hash parameters of the page's URL (`#/trends?…`). */
export function hashParams(page: Page): URLSearchParams {
  const hash = new URL(page.url()).hash;
  return new URLSearchParams(hash.slice(hash.indexOf('?') + 1));
}

/** `2024-06-01 14:03:07` in local time: what ui/src/format.ts shows (browser and test share the zone). */
export function localTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Page errors and console errors (CSP violations are console errors), per page. */
export class PageProblems {
  readonly seen: string[] = [];

  watch(page: Page, name: string, allowed: RegExp[] = []): void {
    page.on('pageerror', (err) => this.seen.push(`${name}: page error: ${err.message}`));
    page.on('console', (msg: ConsoleMessage) => {
      if (msg.type() !== 'error' && !/Content.Security.Policy/i.test(msg.text())) return;
      if (allowed.some((re) => re.test(msg.text()))) return;
      this.seen.push(`${name}: console ${msg.type()}: ${msg.text()}`);
    });
  }

  assertNone(): void {
    assert.deepEqual(this.seen, [], 'no page errors, console errors or CSP violations');
  }
}
