// The points the differential test writes to both InfluxDB and the service (issue 28): plant
// and host data as Telegraf and collectors send it, deterministic for a given end time.
//
//   cpu,host=<a|b|c>,region=<eu|us>  usage_user, usage_system   10 s, 6 h   host c stops 40 min early
//   boiler,line=<A|B>                temp, pressure             1 s, 3 h    line B has a 10 min gap
//   pump,id=<p1|p2>                  starts (integer), running (boolean)    10 s + 250 ms, 3 h, p2 has a 1 h gap
//   ambient                          temp (no tags)             10 s, 6 h
//
// Analog values are a slow random walk plus noise, rounded to 2 decimals; `starts` only grows
// (a counter, for derivative and non_negative_derivative) except one reset; `running` flips
// now and then. The pump's points lie 250 ms after the 10 s marks, so epoch rounding and
// bucket edges see times that are not whole seconds. Every string a line holds is plain
// ASCII without characters that need escaping. Times are written with precision `ms`.

import { prng } from '../support/prng.js';

export interface DatasetPoint {
  measurement: string;
  tags: Record<string, string>;
  /** number = float, bigint = integer (`i`), boolean. */
  fields: Record<string, number | bigint | boolean>;
  /** Epoch ms. */
  timeMs: number;
}

export interface Dataset {
  /** The first and last point's time of all series (epoch ms). */
  startMs: number;
  endMs: number;
  points: DatasetPoint[];
  /** The points as line protocol, one line each, timestamps in ms. */
  lines: string[];
  /** The spans with no point of a series: `{measurement, tags, fromMs, toMs}` (exclusive of the points around them). */
  gaps: Array<{ measurement: string; tags: Record<string, string>; fromMs: number; toMs: number }>;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** The default end: whole 10 s, at least 5 minutes before `nowMs`, so that `now()`-relative windows hold every point. */
export function defaultEnd(nowMs = Date.now()): number {
  return Math.floor((nowMs - 5 * MINUTE) / (10 * SECOND)) * 10 * SECOND;
}

/** A walk around `base` with steps of at most `step`, plus noise of at most `noise`, at 2 decimals. */
function analog(random: () => number, base: number, step: number, noise: number, min: number, max: number): () => number {
  let level = base;
  return () => {
    level += (random() - 0.5) * 2 * step;
    if (level < min) level = min + (min - level);
    if (level > max) level = max - (level - max);
    return Math.round((level + (random() - 0.5) * 2 * noise) * 100) / 100;
  };
}

/** The dataset ending at `endMs` (a multiple of 10 s; defaultEnd() unless given). */
export function makeDataset(endMs = defaultEnd(), seed = 28): Dataset {
  if (endMs % (10 * SECOND) !== 0) throw new Error(`dataset end ${endMs} is not a multiple of 10 s`);
  const random = prng(seed);
  const points: DatasetPoint[] = [];
  const gaps: Dataset['gaps'] = [];

  // cpu: 3 hosts, 10 s, 6 h; host c stops 40 minutes before the end.
  const hosts: Array<[string, string, number]> = [['a', 'eu', 20], ['b', 'eu', 45], ['c', 'us', 70]];
  for (const [host, region, base] of hosts) {
    const user = analog(random, base, 0.8, 1.5, 0, 100);
    const system = analog(random, base / 4, 0.3, 0.6, 0, 100);
    const last = host === 'c' ? endMs - 40 * MINUTE : endMs;
    for (let t = endMs - 6 * HOUR; t <= last; t += 10 * SECOND) {
      points.push({ measurement: 'cpu', tags: { host, region }, fields: { usage_user: user(), usage_system: system() }, timeMs: t });
    }
  }

  // boiler: 2 lines, 1 s, 3 h; line B is silent for 10 minutes an hour before the end.
  const gapFrom = endMs - HOUR - 10 * MINUTE;
  const gapTo = endMs - HOUR;
  for (const [line, base] of [['A', 81], ['B', 64]] as const) {
    const temp = analog(random, base, 0.05, 0.2, 20, 120);
    const pressure = analog(random, 3.2, 0.004, 0.02, 0, 10);
    for (let t = endMs - 3 * HOUR; t <= endMs; t += SECOND) {
      const tv = temp();
      const pv = pressure();
      if (line === 'B' && t > gapFrom && t < gapTo) continue;
      points.push({ measurement: 'boiler', tags: { line }, fields: { temp: tv, pressure: pv }, timeMs: t });
    }
  }
  gaps.push({ measurement: 'boiler', tags: { line: 'B' }, fromMs: gapFrom, toMs: gapTo });

  // pump: 2 pumps, 10 s + 250 ms, 3 h; starts counts up (p1 is reset to 0 once), running flips.
  const pumpGapFrom = endMs - 2 * HOUR;
  const pumpGapTo = endMs - HOUR;
  for (const id of ['p1', 'p2']) {
    let starts = id === 'p1' ? 120n : 7n;
    let running = true;
    for (let t = endMs - 3 * HOUR; t < endMs; t += 10 * SECOND) {
      if (random() < 0.02) {
        running = !running;
        if (running) starts++;
      }
      if (id === 'p1' && t === endMs - 30 * MINUTE) starts = 0n;
      if (id === 'p2' && t + 250 > pumpGapFrom && t + 250 < pumpGapTo) continue;
      points.push({ measurement: 'pump', tags: { id }, fields: { starts, running }, timeMs: t + 250 });
    }
  }
  gaps.push({ measurement: 'pump', tags: { id: 'p2' }, fromMs: pumpGapFrom, toMs: pumpGapTo });

  // ambient: no tags, 10 s, 6 h.
  const ambient = analog(random, 18, 0.1, 0.3, -20, 45);
  for (let t = endMs - 6 * HOUR; t <= endMs; t += 10 * SECOND) {
    points.push({ measurement: 'ambient', tags: {}, fields: { temp: ambient() }, timeMs: t });
  }

  const startMs = Math.min(...points.map((p) => p.timeMs));
  const lastMs = Math.max(...points.map((p) => p.timeMs));
  return { startMs, endMs: lastMs, points, lines: points.map(lineOf), gaps };
}

/** One point as a line of line protocol (tags in key order, fields as given, ms timestamp). */
export function lineOf(p: DatasetPoint): string {
  const tags = Object.keys(p.tags)
    .sort()
    .map((k) => `,${k}=${p.tags[k]}`)
    .join('');
  const fields = Object.entries(p.fields)
    .map(([k, v]) => `${k}=${typeof v === 'bigint' ? `${v}i` : typeof v === 'boolean' ? String(v) : formatFloat(v)}`)
    .join(',');
  return `${p.measurement}${tags} ${fields} ${p.timeMs}`;
}

/** A float as line protocol takes it: always with a decimal point or exponent, so it is never read as an integer field. */
function formatFloat(v: number): string {
  const text = String(v);
  return /[.eE]/.test(text) ? text : `${text}.0`;
}

/** The series of the dataset as `measurement,k=v,…` keys, in InfluxDB's order (sorted). */
export function seriesKeys(ds: Dataset): string[] {
  const keys = new Set(ds.lines.map((line) => line.slice(0, line.indexOf(' '))));
  return [...keys].sort();
}
