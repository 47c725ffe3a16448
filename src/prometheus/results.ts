// Prometheus' JSON answers, written as Prometheus writes them: sample values as strings
// (Go's `strconv.FormatFloat(v, 'f', -1, 64)`, goFloatText), times as
// seconds with at most three decimals, series of a range answer ordered by their labels.

import { goFloatText } from '../../native-free-codecs/number-text.js';
import type { Labels } from './labels.js';
import type { Grid, Value } from './promql/values.js';

/** Epoch ms as Prometheus prints a timestamp: seconds, then `.` and three digits when the ms are not 0. */
export function formatTime(ms: number): string {
  const negative = ms < 0;
  const abs = Math.abs(ms);
  const seconds = Math.floor(abs / 1000);
  const fraction = abs % 1000;
  const text = fraction === 0 ? String(seconds) : `${seconds}.${String(fraction).padStart(3, '0')}`;
  return negative ? `-${text}` : text;
}

function metric(labels: Labels): string {
  let out = '{';
  for (let i = 0; i < labels.length; i++) {
    if (i > 0) out += ',';
    out += `${JSON.stringify(labels[i]![0])}:${JSON.stringify(labels[i]![1])}`;
  }
  return `${out}}`;
}

function point(ms: number, v: number): string {
  return `[${formatTime(ms)},"${goFloatText(v)}"]`;
}

/** Label sets in Prometheus' order: name by name, then value by value; a shorter prefix first. */
export function compareLabels(a: Labels, b: Labels): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const [an, av] = a[i]!;
    const [bn, bv] = b[i]!;
    if (an !== bn) return an < bn ? -1 : 1;
    if (av !== bv) return av < bv ? -1 : 1;
  }
  return a.length - b.length;
}

/** Pieces of the JSON `data` of an instant query, evaluated at `time`. */
export function* instantData(value: Value, time: number): Generator<string> {
  switch (value.kind) {
    case 'scalar':
      yield `{"resultType":"scalar","result":${point(time, value.values[0]!)}}`;
      return;
    case 'string':
      yield `{"resultType":"string","result":[${formatTime(time)},${JSON.stringify(value.value)}]}`;
      return;
    case 'vector': {
      yield '{"resultType":"vector","result":[';
      let first = true;
      for (const s of value.series) {
        if (!s.present[0]) continue;
        yield `${first ? '' : ','}{"metric":${metric(s.labels)},"value":${point(time, s.values[0]!)}}`;
        first = false;
      }
      yield ']}';
      return;
    }
    case 'matrix': {
      yield '{"resultType":"matrix","result":[';
      const end = value.windowEnd(time);
      const start = end - value.rangeMs;
      let first = true;
      for (const s of [...value.series].sort((a, b) => compareLabels(a.labels, b.labels))) {
        const points: string[] = [];
        for (let i = 0; i < s.ts.length; i++) if (s.ts[i]! >= start && s.ts[i]! <= end) points.push(point(s.ts[i]!, s.values[i]!));
        if (points.length === 0) continue;
        yield `${first ? '' : ','}{"metric":${metric(s.labels)},"values":[${points.join(',')}]}`;
        first = false;
      }
      yield ']}';
    }
  }
}

/** Pieces of the JSON `data` of a range query (a scalar answers as one series without labels). */
export function* rangeData(value: Value, grid: Grid): Generator<string> {
  yield '{"resultType":"matrix","result":[';
  if (value.kind === 'scalar') {
    const points: string[] = [];
    for (let i = 0; i < grid.count; i++) points.push(point(grid.time(i), value.values[i]!));
    yield `{"metric":{},"values":[${points.join(',')}]}`;
  } else if (value.kind === 'vector') {
    // Every series shares the grid: each step's `[<time>,"` is formatted once, not once a point.
    const heads: string[] = new Array<string>(grid.count);
    for (let i = 0; i < grid.count; i++) heads[i] = `[${formatTime(grid.time(i))},"`;
    let first = true;
    for (const s of [...value.series].sort((a, b) => compareLabels(a.labels, b.labels))) {
      let body = '';
      for (let i = 0; i < grid.count; i++) {
        if (!s.present[i]) continue;
        body += `${body === '' ? '' : ','}${heads[i]!}${goFloatText(s.values[i]!)}"]`;
      }
      if (body === '') continue;
      yield `${first ? '' : ','}{"metric":${metric(s.labels)},"values":[${body}]}`;
      first = false;
    }
  }
  yield ']}';
}

export { metric as metricJson };
