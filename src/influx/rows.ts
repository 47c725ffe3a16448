// The rows of a SELECT after its buckets are computed: transforms between consecutive rows,
// fill(), merging series by time and paging. Pure.

import type { CollectedSeries } from '../storage/api.js';
import type { Expr, Fill } from './influxql/ast.js';
import { isTransform } from './functions.js';
import type { CallInfo } from './expressions.js';
import type { Cell, Row } from './results.js';

export function applyTransforms(fields: Array<{ expr: Expr; calls: CallInfo[] }>, rows: Row[]): Row[] {
  const transformed = fields.map((f) => (f.expr.type === 'call' && isTransform(f.expr.name.toLowerCase()) ? f.calls[0]!.transform : null));
  if (transformed.every((t) => t === null)) return rows;
  const previous = fields.map(() => null as null | { time: number; value: number });
  const out: Row[] = [];
  for (const row of rows) {
    const cells = row.cells.slice();
    let any = false;
    transformed.forEach((t, i) => {
      if (!t) return;
      const v = cells[i];
      if (typeof v !== 'number') {
        cells[i] = null;
        return;
      }
      const before = previous[i];
      previous[i] = { time: row.time, value: v };
      if (!before) {
        cells[i] = null;
        return;
      }
      let result: number | null = v - before.value;
      if (t.name !== 'difference') result = result / ((row.time - before.time) / t.unitMs);
      if (t.name === 'non_negative_derivative' && result < 0) result = null;
      cells[i] = result;
      if (result !== null) any = true;
    });
    if (any) out.push({ time: row.time, cells });
  }
  return out;
}

/** fill(): null (default), none, previous, linear, a number; count columns fill with 0 by InfluxDB's rule already. */
export function applyFill(fill: Fill | null, rows: Row[], countColumns: boolean[], grouped: boolean): Row[] {
  const kind = fill?.kind ?? 'null';
  if (!grouped) return rows.filter((r) => r.cells.some((c) => c !== null)).map((r) => zeroCounts(r, countColumns));
  if (kind === 'none') return rows.filter((r) => r.cells.some((c) => c !== null));
  // fill(null) leaves a count of an empty bucket at 0, as InfluxDB does.
  if (kind === 'null') return rows.map((r) => zeroCounts(r, countColumns));
  if (kind === 'number') {
    const value = (fill as { value: number }).value;
    return rows.map((r) => ({ time: r.time, cells: r.cells.map((c) => (c === null ? value : c)) }));
  }
  const width = rows[0]?.cells.length ?? 0;
  if (kind === 'previous') {
    const last: Cell[] = new Array(width).fill(null);
    return rows.map((r) => ({
      time: r.time,
      cells: r.cells.map((c, i) => {
        if (c !== null) last[i] = c;
        return c ?? last[i]!;
      }),
    }));
  }
  // linear: between two known values of a column, on the row times.
  const out = rows.map((r) => ({ time: r.time, cells: r.cells.slice() }));
  for (let i = 0; i < width; i++) {
    let prev = -1;
    for (let k = 0; k < out.length; k++) {
      const v = out[k]!.cells[i];
      if (typeof v !== 'number') continue;
      if (prev >= 0 && k - prev > 1) {
        const a = out[prev]!;
        const av = a.cells[i] as number;
        for (let j = prev + 1; j < k; j++) out[j]!.cells[i] = av + ((v - av) * (out[j]!.time - a.time)) / (out[k]!.time - a.time);
      }
      prev = k;
    }
  }
  return out;
}

function zeroCounts(row: Row, countColumns: boolean[]): Row {
  return countColumns.some((c, i) => c && row.cells[i] === null) ? { time: row.time, cells: row.cells.map((c, i) => (countColumns[i] && c === null ? 0 : c)) } : row;
}

export function mergeByTime(parts: CollectedSeries[]): CollectedSeries {
  if (parts.length === 1) return parts[0]!;
  const total = parts.reduce((n, p) => n + p.ts.length, 0);
  const order = new Uint32Array(total);
  const ts = new Float64Array(total);
  const values = new Float64Array(total);
  let k = 0;
  for (const p of parts) {
    ts.set(p.ts, k);
    values.set(p.values, k);
    k += p.ts.length;
  }
  for (let i = 0; i < total; i++) order[i] = i;
  const sorted = Array.from(order).sort((a, b) => ts[a]! - ts[b]! || a - b);
  return { ts: Float64Array.from(sorted, (i) => ts[i]!), values: Float64Array.from(sorted, (i) => values[i]!) };
}

/** `text` as a glob that matches only itself (series listing globs: `*`, `?` and `\\` are special). */
export function escapeGlob(text: string): string {
  return text.replace(/[*?\\]/g, (c) => `\\${c}`);
}

export function page<T>(items: T[], limit: number, offset: number): T[] {
  const from = Math.max(0, offset);
  return limit > 0 ? items.slice(from, from + limit) : items.slice(from);
}

