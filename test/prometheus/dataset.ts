// The samples the PromQL differential test remote-writes to the service (issue 29), as a
// Prometheus would scrape them: counters with resets, gauges with a gap and stale markers, a
// classic histogram, 0/1 states and NaN/±Inf values, 15 s apart with per-target offsets in ms,
// two hours from START_MS. Deterministic (seeded); analog values are a slow walk plus noise at 2
// decimals.

import { prng } from '../support/prng.js';
import { STALE_MARKER } from '../../src/prometheus/promql/values.js';

export const START_MS = Date.UTC(2026, 0, 5, 8, 0, 0);
export const MINUTE = 60_000;
export const END_MS = START_MS + 120 * MINUTE;
const SCRAPE_MS = 15_000;

export interface DatasetSeries {
  labels: Array<[string, string]>;
  timestamps: number[];
  values: Float64Array;
}

export function makeDataset(seed = 29): DatasetSeries[] {
  const random = prng(seed);
  const out: DatasetSeries[] = [];
  const add = (labels: Record<string, string>, offsetMs: number, value: (t: number, i: number) => number | 'stale' | null, until = END_MS) => {
    const timestamps: number[] = [];
    const values: number[] = [];
    const stale: number[] = [];
    let i = 0;
    for (let t = START_MS + offsetMs; t <= until; t += SCRAPE_MS, i++) {
      const v = value(t - START_MS, i);
      if (v === null) continue;
      if (v === 'stale') stale.push(values.length);
      timestamps.push(t);
      values.push(v === 'stale' ? 0 : v);
    }
    // A JavaScript array keeps no NaN payload: the stale markers go into the typed array itself.
    const typed = Float64Array.from(values);
    for (const k of stale) typed[k] = STALE_MARKER;
    out.push({ labels: Object.entries(labels), timestamps, values: typed });
  };

  // Counters: three instances × two methods; b resets at 50 min; c stops at 90 min (a stale marker).
  const offsets: Record<string, number> = { a: 0, b: 123, c: 4_456 };
  for (const instance of ['a', 'b', 'c']) {
    for (const method of ['get', 'post']) {
      let count = Math.floor(random() * 1000);
      let reset = false;
      add({ __name__: 'http_requests_total', job: 'api', instance, method }, offsets[instance]!, (t) => {
        if (instance === 'c' && t > 90 * MINUTE) return null;
        if (instance === 'c' && t > 90 * MINUTE - SCRAPE_MS) return 'stale';
        if (instance === 'b' && !reset && t >= 50 * MINUTE) {
          reset = true;
          count = Math.floor(random() * 5);
          return count;
        }
        count += Math.floor(random() * (method === 'get' ? 20 : 5));
        return count;
      });
    }
  }
  // Gauges: t2 has a gap (40–55 min, no marker); t3 goes stale at 60 min and comes back at 70 min.
  for (const [sensor, offset] of [['t1', 1_000], ['t2', 2_500], ['t3', 7_250]] as const) {
    let level = 20 + random() * 5;
    add({ __name__: 'temperature_celsius', job: 'plant', sensor }, offset, (t) => {
      level += (random() - 0.5) * 0.4;
      const v = Math.round((level + (random() - 0.5) * 0.1) * 100) / 100;
      if (sensor === 't2' && t >= 40 * MINUTE && t < 55 * MINUTE) return null;
      if (sensor === 't3' && t >= 60 * MINUTE && t < 70 * MINUTE) return t < 60 * MINUTE + SCRAPE_MS ? 'stale' : null;
      return v;
    });
  }
  // A classic histogram (cumulative buckets, _sum and _count), one target.
  const bounds = ['0.1', '0.5', '1', '+Inf'];
  const buckets = [0, 0, 0, 0];
  let sum = 0;
  const perScrape: number[][] = [];
  for (let t = START_MS; t <= END_MS; t += SCRAPE_MS) {
    const n = Math.floor(random() * 30);
    for (let k = 0; k < n; k++) {
      const d = random() * random() * 2;
      sum += d;
      for (let b = 0; b < bounds.length; b++) if (b === bounds.length - 1 || d <= Number(bounds[b])) buckets[b]!++;
    }
    perScrape.push([...buckets, sum]);
  }
  bounds.forEach((le, b) => add({ __name__: 'request_duration_seconds_bucket', job: 'api', le }, 500, (_t, i) => perScrape[i]![b]!));
  add({ __name__: 'request_duration_seconds_sum', job: 'api' }, 500, (_t, i) => Math.round(perScrape[i]![4]! * 1000) / 1000);
  add({ __name__: 'request_duration_seconds_count', job: 'api' }, 500, (_t, i) => perScrape[i]![3]!);
  // A 0/1 state and special values.
  let state = 0;
  add({ __name__: 'pump_running', job: 'plant', pump: 'p1' }, 3_000, () => (random() < 0.05 ? (state = 1 - state) : state));
  add({ __name__: 'odd_values', job: 'plant', kind: 'special' }, 6_000, (_t, i) => [1.5, NaN, Infinity, -Infinity, 0, -2.25][i % 6]!);
  return out;
}
