// A deterministic, industrial-looking dataset: N tags × M points one second
// apart from a fixed UTC midnight, cut into requests of a few tags × a few
// hundred points, in time order (as a plant's collector would send them).
// Only the per-tag generator state lives in memory; each request's values
// and bytes are made when it is about to be sent.

import { encodeBinaryBatch } from '../native-free-codecs/write-body.js';
import { prng } from '../test/support/prng.js';

/** 2024-01-01T00:00:00Z: a finished UTC day, so it can be sealed at once. */
export const DEFAULT_START_MS = Date.UTC(2024, 0, 1);
export const STEP_MS = 1000;

export interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

export interface DatasetOptions {
  tags: number;
  points: number;
  tagsPerRequest: number;
  pointsPerRequest: number;
  startMs?: number;
  seed?: number;
  /** `plant` (the default): the four kinds below, no noise. `noisy`: what plants send (NoisySignal). */
  dataset?: DatasetKind;
}

export type DatasetKind = 'plant' | 'noisy';
export const DATASET_KINDS: readonly DatasetKind[] = ['plant', 'noisy'];

/** One request's worth of points: the same timestamps for every column. */
export interface Chunk {
  timestamps: Float64Array;
  columns: Array<{ name: string; values: Float64Array }>;
  points: number;
}

// Four kinds of signal, rotating over the tags. The prefix is the ISA-style
// letter code a plant would use.
type Kind = 'temperature' | 'setpoint' | 'state' | 'counter';
const KINDS: readonly Kind[] = ['temperature', 'setpoint', 'state', 'counter'];
const PREFIX: Record<Kind, string> = { temperature: 'TI', setpoint: 'TC', state: 'XS', counter: 'FQ' };

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Produces one tag's values, continuing where the previous call stopped. */
class TagSignal {
  private readonly random: () => number;
  private value: number;
  private holdFor = 0;
  private readonly step: number;

  constructor(readonly kind: Kind, seed: number) {
    this.random = prng(seed);
    const r = this.random;
    switch (kind) {
      case 'temperature':
        this.value = round2(80 + r() * 380);
        this.step = 0.05 + r() * 0.4;
        break;
      case 'setpoint':
        this.value = Math.round(100 + r() * 300);
        this.step = 0;
        break;
      case 'state':
        this.value = r() < 0.5 ? 0 : 1;
        this.step = 0;
        break;
      case 'counter':
        this.value = Math.floor(r() * 1e6);
        this.step = 1 + Math.floor(r() * 20);
        break;
    }
  }

  fill(out: Float64Array): void {
    const r = this.random;
    for (let i = 0; i < out.length; i++) {
      switch (this.kind) {
        case 'temperature': {
          // Random walk kept inside 50..500 by reflecting at the edges.
          let next = this.value + (r() - 0.5) * 2 * this.step;
          if (next < 50) next = 100 - next;
          if (next > 500) next = 1000 - next;
          this.value = round2(next);
          break;
        }
        case 'setpoint':
          // An operator moves it by a few degrees every 2 to 10 minutes.
          if (this.holdFor-- <= 0) {
            this.holdFor = 120 + Math.floor(r() * 480);
            this.value = Math.min(450, Math.max(100, this.value + Math.round((r() - 0.5) * 40) / 2));
          }
          break;
        case 'state':
          // About one flip every half hour.
          if (r() < 1 / 1800) this.value = 1 - this.value;
          break;
        case 'counter':
          // A totaliser: integer, never decreasing.
          this.value += Math.floor(r() * this.step);
          break;
      }
      out[i] = this.value;
    }
  }
}

/**
 * The noisy-analog data set of issue 33: out of every 20 tags, 17 noisy analog measurements,
 * 2 step signals and 1 counter. An analog tag is a slow random walk inside its range plus
 * Gaussian measurement noise of 0.1% of the range, quantised to 4 decimals. Ranges are narrow
 * (0.2 to 0.6 wide, around a level of 1 to 100) so the noise is a few units of the 4th decimal:
 * the value deltas of the whole set then carry about 0.5 bytes of entropy a point, the figure
 * the issue gives for the held-out data (`npm run bench:disk` prints it).
 */
export type NoisyKind = 'analog' | 'step' | 'counter';
// Spread over the cycle so a short run (--quick: 10 tags) still has a step signal and a counter.
const NOISY_KINDS: readonly NoisyKind[] = Array.from({ length: 20 }, (_, i): NoisyKind => (i === 4 || i === 14 ? 'step' : i === 9 ? 'counter' : 'analog'));
const NOISY_PREFIX: Record<NoisyKind, string> = { analog: 'PI', step: 'HC', counter: 'FQ' };
const round4 = (x: number) => Math.round(x * 1e4) / 1e4;

export class NoisySignal {
  private readonly random: () => number;
  private level = 0;
  private lo = 0;
  private hi = 0;
  private noise = 0;
  private value = 0;
  private holdFor = 0;
  private step = 0;
  /** Second normal deviate of the last Box-Muller pair, or NaN. */
  private spare = NaN;

  constructor(readonly kind: NoisyKind, seed: number) {
    this.random = prng(seed);
    const r = this.random;
    switch (kind) {
      case 'analog': {
        const span = [0.2, 0.4, 0.6][Math.floor(r() * 3)]!;
        this.lo = round4(1 + r() * 99);
        this.hi = this.lo + span;
        this.noise = span * 0.001;
        this.level = this.lo + span * (0.25 + r() * 0.5);
        break;
      }
      case 'step':
        this.value = round4(10 + r() * 90);
        break;
      case 'counter':
        this.value = Math.floor(r() * 1e6);
        this.step = 1 + Math.floor(r() * 20);
        break;
    }
  }

  private gaussian(): number {
    if (!Number.isNaN(this.spare)) {
      const g = this.spare;
      this.spare = NaN;
      return g;
    }
    const r = this.random;
    const u = 1 - r();
    const a = 2 * Math.PI * r();
    const m = Math.sqrt(-2 * Math.log(u));
    this.spare = m * Math.sin(a);
    return m * Math.cos(a);
  }

  fill(out: Float64Array): void {
    const r = this.random;
    for (let i = 0; i < out.length; i++) {
      switch (this.kind) {
        case 'analog': {
          // The process drifts a fifth of the noise a second, reflected at the range's edges.
          let next = this.level + this.gaussian() * this.noise * 0.2;
          if (next < this.lo) next = 2 * this.lo - next;
          if (next > this.hi) next = 2 * this.hi - next;
          this.level = next;
          this.value = round4(next + this.gaussian() * this.noise);
          break;
        }
        case 'step':
          // Holds for 1 to 20 minutes, then jumps to a new level.
          if (this.holdFor-- <= 0) {
            this.holdFor = 60 + Math.floor(r() * 1140);
            this.value = round4(10 + r() * 90);
          }
          break;
        case 'counter':
          // A totaliser that rolls over to 0 about once a day.
          if (r() < 1 / 86_400) this.value = 0;
          else this.value += Math.floor(r() * this.step);
          break;
      }
      out[i] = this.value;
    }
  }
}

export class Dataset {
  readonly tagNames: string[];
  readonly startMs: number;
  private readonly seed: number;

  constructor(readonly options: DatasetOptions) {
    this.startMs = options.startMs ?? DEFAULT_START_MS;
    this.seed = options.seed ?? 20240101;
    this.tagNames = Array.from({ length: options.tags }, (_, i) =>
      options.dataset === 'noisy' ? `${NOISY_PREFIX[NOISY_KINDS[i % NOISY_KINDS.length]]}-${1001 + i}` : `${PREFIX[KINDS[i % KINDS.length]]}-${1001 + i}`,
    );
  }

  get totalPoints(): number {
    return this.options.tags * this.options.points;
  }

  get requestCount(): number {
    const { tags, points, tagsPerRequest, pointsPerRequest } = this.options;
    return Math.ceil(tags / tagsPerRequest) * Math.ceil(points / pointsPerRequest);
  }

  /** Last timestamp of the data set (inclusive). */
  get endMs(): number {
    return this.startMs + (this.options.points - 1) * STEP_MS;
  }

  /**
   * The requests, time block by time block, each block cut into tag groups.
   * A fresh call starts over with the same values (the generators are re-seeded).
   */
  *chunks(): Generator<Chunk> {
    const { tags, points, tagsPerRequest, pointsPerRequest } = this.options;
    const signals: Array<{ fill(out: Float64Array): void }> = this.tagNames.map((_, i) =>
      this.options.dataset === 'noisy' ? new NoisySignal(NOISY_KINDS[i % NOISY_KINDS.length], this.seed + i * 7919) : new TagSignal(KINDS[i % KINDS.length], this.seed + i * 7919),
    );
    for (let first = 0; first < points; first += pointsPerRequest) {
      const rows = Math.min(pointsPerRequest, points - first);
      const timestamps = new Float64Array(rows);
      for (let i = 0; i < rows; i++) timestamps[i] = this.startMs + (first + i) * STEP_MS;
      for (let t0 = 0; t0 < tags; t0 += tagsPerRequest) {
        const columns: Chunk['columns'] = [];
        for (let t = t0; t < Math.min(tags, t0 + tagsPerRequest); t++) {
          const values = new Float64Array(rows);
          signals[t].fill(values);
          columns.push({ name: this.tagNames[t], values });
        }
        yield { timestamps, columns, points: rows * columns.length };
      }
    }
  }
}

// ---- encodings ------------------------------------------------------------------------------
// Plain string building: numbers print in their shortest round-trip form,
// the same text JSON.stringify would give. The per-row text around each
// timestamp is built once per request and shared by its tags, which made
// the JSON and line-protocol encoders about 3× cheaper (so the client takes
// less of the CPU it shares with the server under test).

/** Our tag-keyed JSON body, scope fields first (the server reads the scope from the body's head). */
export function tagKeyedJson(scope: Scope, chunk: Chunk): string {
  const rows = perRow(chunk.timestamps, (ts, i) => `${i === 0 ? '' : ','}[${ts},`);
  let s = `{"organization":${JSON.stringify(scope.organization)},"site":${JSON.stringify(scope.site)},"unit":${JSON.stringify(scope.unit)},"grid":${JSON.stringify(scope.grid)},"tags":{`;
  chunk.columns.forEach(({ name, values }, c) => {
    s += `${c === 0 ? '' : ','}${JSON.stringify(name)}:[`;
    for (let i = 0; i < values.length; i++) s += rows[i] + values[i] + ']';
    s += ']';
  });
  return `${s}}}`;
}

function perRow(timestamps: Float64Array, text: (ts: number, i: number) => string): string[] {
  const out = new Array<string>(timestamps.length);
  for (let i = 0; i < timestamps.length; i++) out[i] = text(timestamps[i], i);
  return out;
}

/** Our binary columnar batch (HSW1). */
export function hsw1(scope: Scope, chunk: Chunk): Uint8Array {
  return encodeBinaryBatch(scope, chunk.timestamps, chunk.columns);
}

/** VictoriaMetrics /api/v1/import: one JSON line per tag, the tag name as __name__. */
export function vmImportLines(scope: Scope, chunk: Chunk): string {
  const labels = `"organization":${JSON.stringify(scope.organization)},"site":${JSON.stringify(scope.site)},"unit":${JSON.stringify(scope.unit)},"grid":${JSON.stringify(scope.grid)}`;
  const timestamps = chunk.timestamps.join(',');
  let s = '';
  for (const { name, values } of chunk.columns) {
    s += `{"metric":{"__name__":${JSON.stringify(name)},${labels}},"values":[${values.join(',')}],"timestamps":[${timestamps}]}\n`;
  }
  return s;
}

/**
 * Order of the lines in a line protocol body: `tag`, each tag's rows together;
 * `time`, every tag's value at one timestamp, then the next timestamp (what a
 * collector such as Telegraf sends: it polls all its tags each interval and
 * flushes its buffer in the order the readings arrived).
 */
export type LineOrder = 'tag' | 'time';

/** InfluxDB line protocol, ms precision: `<measurement>,<scope tags>,tag=<tag> value=<v> <ts>`. */
export function influxLines(measurement: string, scope: Scope, chunk: Chunk, order: LineOrder = 'tag'): string {
  const tails = perRow(chunk.timestamps, (ts) => ` ${ts}\n`);
  // Tag keys in sorted order, which is the order Influx would sort them into anyway.
  const scopeTags = `grid=${influxEscape(scope.grid)},organization=${influxEscape(scope.organization)},site=${influxEscape(scope.site)}`;
  const heads = chunk.columns.map(({ name }) => `${influxEscape(measurement)},${scopeTags},tag=${influxEscape(name)},unit=${influxEscape(scope.unit)} value=`);
  let s = '';
  if (order === 'tag') {
    chunk.columns.forEach(({ values }, c) => {
      for (let i = 0; i < values.length; i++) s += heads[c] + values[i] + tails[i];
    });
  } else {
    for (let i = 0; i < chunk.timestamps.length; i++) {
      for (let c = 0; c < heads.length; c++) s += heads[c] + chunk.columns[c].values[i] + tails[i];
    }
  }
  return s;
}

/** Commas, spaces and equals signs are escaped in line-protocol measurement names and tag values. */
export function influxEscape(text: string): string {
  return text.replace(/[,= \\]/g, (c) => `\\${c}`);
}
