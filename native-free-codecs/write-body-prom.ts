/**
 * A decoded Prometheus remote-write request (prom-remote.ts) as the columnar PointBatches the
 * store appends, one per collection (WIRE.md part 3 "Series identity", "Prometheus
 * compatibility"):
 *
 * - a series' collection is its labels `organization` `site` `unit` `grid` over the ingest
 *   client's scope (the caller checks the names: they become folders);
 * - its tag is the canonical series text `<__name__>{<k>="<v>",…}`: keys sorted, the scope labels
 *   and `__name__` left out of the braces, values escaped as Prometheus prints them (`\\`, `\"`,
 *   `\n`); no braces when no label remains, `{…}` alone for a series with no `__name__`;
 * - its labels, kept with the series, are all of them but the four scope labels (`__name__`
 *   stays), names sorted, as one frozen object per distinct series of the body;
 * - its samples keep the body's order: the store takes points in any order and keeps the later
 *   of two at one timestamp, so a timestamp sent twice stores the later sample, and two
 *   TimeSeries of one label set in one body are one tag, their samples in body order;
 * - values are copied as bytes, so NaN payloads (the stale marker) and ±Infinity arrive as sent.
 *
 * A tag name the tag-name rules refuse (longer than 256 bytes of UTF-8, a control character
 * other than the escaped newline) is malformed, naming the series. Pure TypeScript: runs in a
 * browser.
 */

import { isScopeField, SCOPE_FIELDS, type CollectionScope } from '../shared/scope.js';
import { malformed, q, tagNameProblem, type PointBatch, type SeriesLabels } from './point-batch.js';
import type { Label, RemoteWriteBatch } from './prom-remote.js';
import type { CollectionPoints } from './write-body-line.js';

export const METRIC_NAME_LABEL = '__name__';

/** A label value as Prometheus prints it between double quotes. */
export function escapeLabelValue(value: string): string {
  // Most values need nothing: one test instead of three replacements.
  if (!/[\\"\n]/.test(value)) return value;
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/**
 * The tag name of a series: `<__name__>{<k>="<v>",…}` over its labels sorted by name, without
 * the scope labels and `__name__` in the braces.
 */
export function promSeriesName(labels: readonly Label[]): string {
  let metric = '';
  let inner = '';
  for (const [name, value] of labels) {
    if (name === METRIC_NAME_LABEL) metric = value;
    else if (!isScopeField(name)) inner += `${inner === '' ? '' : ','}${name}="${escapeLabelValue(value)}"`;
  }
  return inner === '' && metric !== '' ? metric : `${metric}{${inner}}`;
}

/** The labels a series keeps: all but the scope labels, sorted (they come sorted), frozen. */
function keptLabels(labels: readonly Label[]): SeriesLabels {
  const kept: Record<string, string> = {};
  for (const [name, value] of labels) if (!isScopeField(name)) kept[name] = value;
  return Object.freeze(kept);
}

interface CollectionBuild {
  index: number;
  scope: CollectionScope;
  tagIds: Map<string, number>;
  tagNames: string[];
  labels: SeriesLabels[];
  counts: number[];
}

/** The samples of `request` grouped by collection; `base` gives the scope fields a series' labels do not name. */
export function promPointsByCollection(request: RemoteWriteBatch, base: CollectionScope): CollectionPoints[] {
  const collections: CollectionBuild[] = [];
  const byScope = new Map<string, CollectionBuild>();
  const seriesCollection = new Int32Array(request.series.length);
  const seriesTag = new Int32Array(request.series.length);
  const { seriesStart } = request;
  request.series.forEach((series, s) => {
    const count = seriesStart[s + 1] - seriesStart[s];
    seriesCollection[s] = -1;
    if (count === 0) return; // nothing to store: no tag either
    let scope = base;
    for (const [name, value] of series.labels) {
      if (isScopeField(name)) {
        if (scope === base) scope = { ...base };
        scope[name] = value;
      }
    }
    const scopeKey = scope === base ? '' : SCOPE_FIELDS.map((f) => scope[f]).join('\u0000');
    let c = byScope.get(scopeKey);
    if (c === undefined) {
      c = { index: collections.length, scope, tagIds: new Map(), tagNames: [], labels: [], counts: [] };
      byScope.set(scopeKey, c);
      collections.push(c);
    }
    const name = promSeriesName(series.labels);
    let tag = c.tagIds.get(name);
    if (tag === undefined) {
      const problem = tagNameProblem(name);
      if (problem !== null) malformed(`timeseries ${s} ${q(name)}: the series text is the tag name, and ${problem}`);
      tag = c.tagNames.length;
      c.tagIds.set(name, tag);
      c.tagNames.push(name);
      c.labels.push(keptLabels(series.labels));
      c.counts.push(0);
    }
    c.counts[tag] += count;
    seriesCollection[s] = c.index;
    seriesTag[s] = tag;
  });
  const batches = collections.map((c) => {
    const tagStart = new Uint32Array(c.tagNames.length + 1);
    for (let t = 0; t < c.tagNames.length; t++) tagStart[t + 1] = tagStart[t] + c.counts[t];
    const total = tagStart[c.tagNames.length];
    return { c, tagStart, fill: tagStart.slice(0, c.tagNames.length), timestamps: new Float64Array(total), values: new Float64Array(total) };
  });
  for (let s = 0; s < request.series.length; s++) {
    if (seriesCollection[s] < 0) continue;
    const b = batches[seriesCollection[s]];
    const from = seriesStart[s];
    const to = seriesStart[s + 1];
    const at = b.fill[seriesTag[s]];
    // Whole runs by set(): bytes move as they are, NaN payloads included.
    b.timestamps.set(request.timestamps.subarray(from, to), at);
    b.values.set(request.values.subarray(from, to), at);
    b.fill[seriesTag[s]] = at + to - from;
  }
  return batches.map(({ c, tagStart, timestamps, values }) => {
    const batch: PointBatch = { scope: c.scope, tagNames: c.tagNames, labels: c.labels, tagStart, timestamps, values, pointCount: timestamps.length };
    return { scope: c.scope, batch };
  });
}
