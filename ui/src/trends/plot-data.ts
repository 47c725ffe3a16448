// The points the chart draws, per series, and their one x axis. uPlot wants every series aligned
// on one x array; series of different collections (and live points of one series) do not share
// timestamps, so alignment leaves holes. Holes are `undefined` (uPlot draws straight over them),
// and a real gap in a series' own data is `null` at every x across it (uPlot breaks the line
// there), so a live point of one series never breaks the line of another.

import type uPlot from 'uplot';
import type { Buckets } from './buckets.js';
import { keyOf, type SeriesRef } from './model.js';

interface Line {
  ts: number[];
  values: number[];
  /** Consecutive points further apart than this are not joined. */
  gapMs: number;
}

export interface Drawn {
  data: uPlot.AlignedData;
  /** Points of every series (gap markers excluded). */
  points: number;
  yMin: number | null;
  yMax: number | null;
  /** Per series: the real gaps its line breaks at. */
  gaps: number[];
  /** Per uPlot series (index 0 is x): the index of its latest point, for the legend at rest. */
  lastIdx: (number | null)[];
}

/**
 * A gap is longer than a few buckets and than a few of the series' own usual steps: 10 s data
 * drawn at 1 s buckets has a bucket every 10 s and must still draw as a line.
 */
function gapOf(ts: number[], w: number): number {
  const steps: number[] = [];
  let prev = -Infinity;
  for (const t of ts) {
    const b = Math.floor(t / w) * w;
    if (b !== prev && prev !== -Infinity) steps.push(b - prev);
    prev = b;
  }
  steps.sort((a, b) => a - b);
  const median = steps.length ? steps[Math.floor(steps.length / 2)]! : w;
  return 3 * Math.max(w, median);
}

export class PlotData {
  w = 0;
  private lines = new Map<string, Line>();

  get loaded(): boolean {
    return this.w > 0;
  }

  /** Replaces everything with a fetch's buckets. */
  load(buckets: Buckets): void {
    this.w = buckets.w;
    this.lines.clear();
    for (const [key, p] of buckets.points) this.lines.set(key, { ts: p.ts.slice(), values: p.values.slice(), gapMs: gapOf(p.ts, buckets.w) });
  }

  clear(): void {
    this.w = 0;
    this.lines.clear();
  }

  /**
   * Adds a live point into its bucket. Min/max merging makes this idempotent, so a point that
   * the last fetch already counted (subscription and fetch overlap) changes nothing.
   */
  addLive(key: string, t: number, v: number): void {
    const line = this.lines.get(key);
    if (!line || !this.loaded || !Number.isFinite(v) || !Number.isFinite(t)) return;
    const w = this.w;
    const b = Math.floor(t / w) * w;
    const { ts } = line;
    // Mostly the point belongs at the end; older ones are found by binary search.
    let i = ts.length;
    if (i > 0 && Math.floor(ts[i - 1]! / w) * w >= b) {
      let lo = 0;
      let hi = ts.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (Math.floor(ts[mid]! / w) * w < b) lo = mid + 1;
        else hi = mid;
      }
      i = lo;
    }
    let n = 0;
    let min = v;
    let max = v;
    while (i + n < ts.length && Math.floor(ts[i + n]! / w) * w === b) {
      min = Math.min(min, line.values[i + n]!);
      max = Math.max(max, line.values[i + n]!);
      n++;
    }
    const tsIn = max !== min ? [b, b + w / 2] : [b];
    const valuesIn = max !== min ? [min, max] : [min];
    ts.splice(i, n, ...tsIn);
    line.values.splice(i, n, ...valuesIn);
  }

  /** Drops points of buckets wholly before `from`: a live window slides with constant memory. */
  trim(from: number): void {
    const cut = Math.floor(from / this.w) * this.w;
    for (const line of this.lines.values()) {
      let i = 0;
      while (i < line.ts.length && line.ts[i]! < cut) i++;
      if (i > 0) {
        line.ts.splice(0, i);
        line.values.splice(0, i);
      }
    }
  }

  /** The aligned data of `series`, in that order (series without data draw nothing). */
  drawn(series: readonly SeriesRef[]): Drawn {
    const lines = series.map((s) => this.lines.get(keyOf(s)) ?? { ts: [], values: [], gapMs: Infinity });
    // Each line's own sequence: its points, and a null halfway across each real gap.
    const gaps: number[] = [];
    const seqs = lines.map((line) => {
      const t: number[] = [];
      const v: (number | null)[] = [];
      let n = 0;
      for (let i = 0; i < line.ts.length; i++) {
        if (i > 0 && line.ts[i]! - line.ts[i - 1]! > line.gapMs) {
          t.push((line.ts[i]! + line.ts[i - 1]!) / 2);
          v.push(null);
          n++;
        }
        t.push(line.ts[i]!);
        v.push(line.values[i]!);
      }
      gaps.push(n);
      return { t, v };
    });
    const all = new Float64Array(seqs.reduce((n, s) => n + s.t.length, 0));
    let k = 0;
    for (const s of seqs) for (const t of s.t) all[k++] = t;
    all.sort();
    const x: number[] = [];
    for (const t of all) if (x.length === 0 || x[x.length - 1] !== t) x.push(t);

    let points = 0;
    let yMin: number | null = null;
    let yMax: number | null = null;
    const lastIdx: (number | null)[] = [null];
    const ys = seqs.map(({ t, v }) => {
      const y: (number | null | undefined)[] = new Array<number | null | undefined>(x.length).fill(undefined);
      let j = 0;
      let last: number | null = null;
      let inGap = false;
      for (let i = 0; i < t.length; i++) {
        while (x[j]! < t[i]!) j++;
        const value = v[i];
        if (value === null || value === undefined) {
          inGap = true;
          continue;
        }
        // uPlot draws straight over undefined: across a gap every x between the two points
        // (other series' timestamps included) must be null, or the line is only nicked.
        if (inGap && last !== null) y.fill(null, last + 1, j);
        inGap = false;
        y[j] = value;
        points++;
        last = j;
        if (yMin === null || value < yMin) yMin = value;
        if (yMax === null || value > yMax) yMax = value;
      }
      lastIdx.push(last);
      return y;
    });
    lastIdx[0] = lastIdx.reduce<number | null>((m, i) => (i !== null && (m === null || i > m) ? i : m), null);
    return { data: [x, ...ys] as uPlot.AlignedData, points, yMin, yMax, gaps, lastIdx };
  }
}
