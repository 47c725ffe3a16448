// InfluxDB 1.x JSON answers (WIRE.md part 3): `{"results":[{"statement_id":0,"series":[{"name",
// "tags"?, "columns", "values"}]}]}`, a failed statement as `{"statement_id", "error"}`. Times
// are RFC 3339 unless `epoch` asks for a unit; epoch nanoseconds of today's dates pass 2^53, so
// times are written as digit text, never through a double.

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

function cellText(cell: Cell): string {
  if (typeof cell === 'number') return Number.isFinite(cell) ? JSON.stringify(cell) : 'null';
  return JSON.stringify(cell);
}

function seriesText(s: ResultSeries, epoch: Epoch): string {
  const head: string[] = [];
  if (s.name !== undefined) head.push(`"name":${JSON.stringify(s.name)}`);
  if (s.tags !== undefined) head.push(`"tags":${JSON.stringify(s.tags)}`);
  head.push(`"columns":${JSON.stringify(s.columns)}`);
  const rows = s.rows.map((r) => `[${s.timeless ? r.cells.map(cellText).join(',') : [timeText(r.time, epoch), ...r.cells.map(cellText)].join(',')}]`);
  return `{${head.join(',')},"values":[${rows.join(',')}]}`;
}

/** The whole answer of a request's statements. */
export function resultsText(results: StatementResult[], epoch: Epoch): string {
  const parts = results.map((r, i) => {
    if ('error' in r) return `{"statement_id":${i},"error":${JSON.stringify(r.error)}}`;
    if (r.series.length === 0) return `{"statement_id":${i}}`;
    return `{"statement_id":${i},"series":[${r.series.map((s) => seriesText(s, epoch)).join(',')}]}`;
  });
  return `{"results":[${parts.join(',')}]}`;
}
