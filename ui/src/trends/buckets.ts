// The chart's data: min/max buckets, never raw points, so a year of 1 s data costs what an hour
// does (WIRE.md part 3 "Operator console"). Everything the chart knows about the server call is
// fetchBuckets: if the service later answers min and max in one request, only this file changes.

import type { Api } from '../api.js';
import { decodeFormat1 } from '../../../native-free-codecs/result-binary.js';
import { keyOf, scopeOf, type SeriesRef } from './model.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * Bucket widths a view may use. Rounding up to one of these makes the same view ask the same
 * question (cacheable, and ready for server-side rollups), and stays ≤ 2 points per pixel.
 */
export const NICE_WIDTHS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500,
  SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 90 * DAY, 365 * DAY,
];

/** The smallest nice width ≥ ceil(span / buckets) ms. */
export function bucketWidth(from: number, to: number, buckets: number): number {
  const need = Math.max(1, Math.ceil((to - from) / Math.max(1, Math.floor(buckets))));
  const nice = NICE_WIDTHS.find((w) => w >= need);
  return nice ?? Math.ceil(need / (365 * DAY)) * 365 * DAY;
}

/** Whole buckets covering [from, to], epoch-aligned: start is a multiple of w, end closes the last bucket (inclusive). */
export function bucketRange(from: number, to: number, w: number): { start: number; end: number } {
  const start = Math.floor(from / w) * w;
  return { start, end: Math.floor(to / w) * w + w - 1 };
}

/**
 * One series' drawn points, in time order: per non-empty bucket its min at the bucket start and,
 * when it differs, its max at start + w/2 (both inside the bucket, under a pixel apart), so the
 * line through them draws the band the bucket spans.
 */
export interface BucketPoints {
  ts: number[];
  values: number[];
}

export interface Buckets {
  /** Bucket width (ms). */
  w: number;
  start: number;
  end: number;
  /** By series key (keyOf), for every series asked. */
  points: Map<string, BucketPoints>;
}

type Aggregate = 'min' | 'max';

/** The failure of one collection's request, named so the page can say which. */
export class BucketError extends Error {
  constructor(readonly collection: string, cause: unknown) {
    super(`${collection}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

async function aggregate(api: Api, collection: string, tags: string[], name: Aggregate, start: number, end: number, w: number, signal?: AbortSignal): Promise<Map<string, { ts: Float64Array; values: Float32Array }>> {
  const body = {
    start_absolute: start, end_absolute: end, ...scopeOf(collection),
    metrics: tags.map((tag) => ({ name: tag, aggregators: [{ name, sampling: { value: w, unit: 'milliseconds' } }] })),
  };
  const response = await api.fetch('/svcapi/fast_query_binary', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal,
  });
  const result = new Map<string, { ts: Float64Array; values: Float32Array }>();
  for (const tag of decodeFormat1(new Uint8Array(await response.arrayBuffer()))) result.set(tag.name, { ts: tag.timestamps, values: tag.values });
  return result;
}

/** Min and max of one series, bucket by bucket, as drawn points (see BucketPoints). */
function interleave(min: { ts: Float64Array; values: Float32Array } | undefined, max: { ts: Float64Array; values: Float32Array } | undefined, w: number): BucketPoints {
  const out: BucketPoints = { ts: [], values: [] };
  if (!min) return out;
  let j = 0;
  for (let i = 0; i < min.ts.length; i++) {
    const t = min.ts[i]!;
    const lo = min.values[i]!;
    if (!Number.isFinite(lo)) continue;
    while (max && j < max.ts.length && max.ts[j]! < t) j++;
    const hi = max && j < max.ts.length && max.ts[j] === t ? max.values[j]! : lo;
    out.ts.push(t);
    out.values.push(lo);
    if (Number.isFinite(hi) && hi !== lo) {
      out.ts.push(t + w / 2);
      out.values.push(hi);
    }
  }
  return out;
}

/**
 * The min/max buckets of `series` over [from, to] at about `buckets` buckets (the plot's width in
 * pixels): per collection, a min request and a max request in parallel (results are keyed by tag,
 * so one request cannot carry both, nor two collections). Throws a BucketError naming the
 * collection that failed; an aborted `signal` rejects with the AbortError.
 */
export async function fetchBuckets(api: Api, series: readonly SeriesRef[], from: number, to: number, buckets: number, signal?: AbortSignal): Promise<Buckets> {
  const w = bucketWidth(from, to, buckets);
  const { start, end } = bucketRange(from, to, w);
  const byCollection = new Map<string, string[]>();
  for (const s of series) {
    const tags = byCollection.get(s.collection) ?? [];
    if (!tags.includes(s.tag)) tags.push(s.tag);
    byCollection.set(s.collection, tags);
  }
  const points = new Map<string, BucketPoints>();
  await Promise.all([...byCollection].map(async ([collection, tags]) => {
    let mins, maxes;
    try {
      [mins, maxes] = await Promise.all([
        aggregate(api, collection, tags, 'min', start, end, w, signal),
        aggregate(api, collection, tags, 'max', start, end, w, signal),
      ]);
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new BucketError(collection, err);
    }
    for (const tag of tags) points.set(keyOf({ collection, tag }), interleave(mins.get(tag), maxes.get(tag), w));
  }));
  return { w, start, end, points };
}
