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
}

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

export class Dataset {
  readonly tagNames: string[];
  readonly startMs: number;
  private readonly seed: number;

  constructor(readonly options: DatasetOptions) {
    this.startMs = options.startMs ?? DEFAULT_START_MS;
    this.seed = options.seed ?? 20240101;
    this.tagNames = Array.from({ length: options.tags }, (_, i) => `${PREFIX[KINDS[i % KINDS.length]]}-${1001 + i}`);
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
    const signals = this.tagNames.map((_, i) => new TagSignal(KINDS[i % KINDS.length], this.seed + i * 7919));
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
