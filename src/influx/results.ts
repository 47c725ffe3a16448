// InfluxDB 1.x JSON answers (WIRE.md part 3): `{"results":[{"statement_id":0,"series":[{"name",
// "tags"?, "columns", "values"}]}]}`, a failed statement as `{"statement_id", "error"}`. Times
// are RFC 3339 unless `epoch` asks for a unit; epoch nanoseconds of today's dates pass 2^53, so
// times are written as digit text, never through a double. Raw points with epoch=ms (what
// Grafana asks for) go through the query results' point writer, a row allocating nothing.

import { JsonPointWriter } from '../../native-free-codecs/result-json.js';

export type Epoch = 'ns' | 'u' | 'ms' | 's' | 'm' | 'h' | null;

const EPOCHS: Record<string, Epoch> = { ns: 'ns', n: 'ns', u: 'u', µ: 'u', us: 'u', ms: 'ms', s: 's', m: 'm', h: 'h' };

/** The `epoch` parameter; undefined or empty is RFC 3339 (null). */
export function epochOf(value: unknown): Epoch | undefined {
  if (value === undefined || value === '') return null;
  return typeof value === 'string' ? EPOCHS[value] : undefined;
}

/** A row: its time (epoch ms) and its other cells. */
export interface Row {
  time: number;
  cells: Cell[];
}

export type Cell = number | string | boolean | null;

export interface ResultSeries {
  name?: string;
  tags?: Record<string, string>;
  columns: string[];
  /** Rows with a time column first; or, for SHOW answers, plain rows (`time` unused). */
  rows: Row[];
  /**
   * In place of `rows` for a time and one value column (a raw field): its points, written
   * straight into the answer's bytes without a row object each.
   */
  points?: { ts: Float64Array; values: Float64Array };
  /** SHOW answers have no time column. */
  timeless?: boolean;
}

export type StatementResult = { series: ResultSeries[] } | { error: string };

export function timeText(ms: number, epoch: Epoch): string {
  switch (epoch) {
    case 'ns':
      return ms === 0 ? '0' : `${ms}000000`;
    case 'u':
      return ms === 0 ? '0' : `${ms}000`;
    case 'ms':
      return String(ms);
    case 's':
      return String(Math.trunc(ms / 1000));
    case 'm':
      return String(Math.trunc(ms / 60_000));
    case 'h':
      return String(Math.trunc(ms / 3_600_000));
    default:
      return JSON.stringify(rfc3339(ms));
  }
}

/** RFC 3339 in UTC as Go's RFC3339Nano prints it: fraction digits only as far as needed. */
export function rfc3339(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2024-06-01T00:00:00.000Z
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction ? `.${fraction}` : ''}Z`;
}

/** A cell as JSON (a non-finite number, NaN standing for null in point arrays, is null). */
function cellText(cell: Cell): string {
  if (typeof cell === 'number') return Number.isFinite(cell) ? JSON.stringify(cell) : 'null';
  return JSON.stringify(cell);
}

/** The answer being written: text parts, and byte parts the point writer made. */
class AnswerBuilder {
  private readonly parts: Array<string | Uint8Array> = [];
  private text = '';
  private readonly writer = new JsonPointWriter(1 << 16);

  add(text: string): void {
    this.text += text;
  }

  /** `[t,v],…` of points, times in epoch ms (the writer of the query results). */
  points(ts: Float64Array, values: Float64Array): void {
    this.writer.reset();
    this.writer.points(ts, values, 0, ts.length, false);
    this.parts.push(this.text, this.writer.bytes().slice());
    this.text = '';
  }

  finish(): Buffer {
    this.parts.push(this.text);
    return Buffer.concat(this.parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
  }
}

function writeSeries(out: AnswerBuilder, s: ResultSeries, epoch: Epoch): void {
  const head: string[] = [];
  if (s.name !== undefined) head.push(`"name":${JSON.stringify(s.name)}`);
  if (s.tags !== undefined) head.push(`"tags":${JSON.stringify(s.tags)}`);
  head.push(`"columns":${JSON.stringify(s.columns)}`);
  out.add(`{${head.join(',')},"values":[`);
  if (s.points && epoch === 'ms') out.points(s.points.ts, s.points.values);
  else if (s.points) {
    const { ts, values } = s.points;
    const rows: string[] = new Array(ts.length);
    for (let i = 0; i < ts.length; i++) rows[i] = `[${timeText(ts[i]!, epoch)},${cellText(values[i]!)}]`;
    out.add(rows.join(','));
  } else {
    out.add(s.rows.map((r) => `[${s.timeless ? r.cells.map(cellText).join(',') : [timeText(r.time, epoch), ...r.cells.map(cellText)].join(',')}]`).join(','));
  }
  out.add(']}');
}

/** One statement's part of the answer (`{"statement_id": i, …}`), as bytes. */
export function statementBytes(r: StatementResult, i: number, epoch: Epoch): Buffer {
  const out = new AnswerBuilder();
  if ('error' in r) out.add(`{"statement_id":${i},"error":${JSON.stringify(r.error)}}`);
  else if (r.series.length === 0) out.add(`{"statement_id":${i}}`);
  else {
    out.add(`{"statement_id":${i},"series":[`);
    r.series.forEach((series, k) => {
      if (k > 0) out.add(',');
      writeSeries(out, series, epoch);
    });
    out.add(']}');
  }
  return out.finish();
}

export const RESULTS_HEAD = '{"results":[';
export const RESULTS_TAIL = ']}';
