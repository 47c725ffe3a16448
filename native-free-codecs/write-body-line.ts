/**
 * Parsed line protocol (line-protocol.ts) as the columnar PointBatch the store appends, one per
 * collection: each series' scope is its scope tags over the ingest client's scope, and each point
 * goes to the historian tag `<series name>.<field key>`, in the order the lines gave them. Each
 * tag carries the labels the name flattens (lineLabels), which the store keeps with the series.
 * Pure TypeScript: runs in a browser.
 */

import { isScopeField, SCOPE_FIELDS, type CollectionScope } from '../shared/scope.js';
import { lineTagName, type LineProtocolBatch, type LineSeries } from './line-protocol.js';
import type { PointBatch, SeriesLabels } from './point-batch.js';

/** Series × field pairs up to which a table, not a Map, finds a point's tag. */
const DENSE_PAIRS = 1 << 16;

export interface CollectionPoints {
  scope: CollectionScope;
  batch: PointBatch;
}

/** The points of `lines` grouped by collection; `base` gives the scope fields a line does not name. */
export function linePointsByCollection(lines: LineProtocolBatch, base: CollectionScope): CollectionPoints[] {
  const n = lines.pointCount;
  // Each series' collection (a handful of distinct scopes, usually one).
  const collectionOfSeries = new Int32Array(lines.series.length);
  const collections: Array<{ scope: CollectionScope; tagNames: string[]; tagLabels: SeriesLabels[]; tagCounts: number[] }> = [];
  const collectionByKey = new Map<string, number>();
  lines.series.forEach((series, s) => {
    const scope = { ...base };
    for (const field of SCOPE_FIELDS) if (series.scope[field] !== undefined) scope[field] = series.scope[field]!;
    const key = SCOPE_FIELDS.map((f) => scope[f]).join('\u0000');
    let c = collectionByKey.get(key);
    if (c === undefined) {
      c = collections.length;
      collectionByKey.set(key, c);
      collections.push({ scope, tagNames: [], tagLabels: [], tagCounts: [] });
    }
    collectionOfSeries[s] = c;
  });
  // Each point's tag within its collection, keyed by (series, field): a table when the pairs are
  // few enough (the usual case, and a Map lookup per point was a third of this function).
  const fieldCount = lines.fieldKeys.length;
  const pairs = lines.series.length * fieldCount;
  const table = pairs <= DENSE_PAIRS ? new Int32Array(pairs).fill(-1) : null;
  const tagOfKey = table ? null : new Map<number, number>();
  const pointTag = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const s = lines.pointSeries[i];
    const key = s * fieldCount + lines.pointField[i];
    let tag = table ? table[key] : (tagOfKey!.get(key) ?? -1);
    const collection = collections[collectionOfSeries[s]];
    if (tag < 0) {
      tag = collection.tagNames.length;
      if (table) table[key] = tag;
      else tagOfKey!.set(key, tag);
      collection.tagNames.push(lineTagName(lines, i));
      collection.tagLabels.push(lineLabels(lines, i));
      collection.tagCounts.push(0);
    }
    collection.tagCounts[tag]++;
    pointTag[i] = tag;
  }
  // Two series of one collection can map to the same tag name (`m` with tag `a=b`, and a
  // measurement named `m,a=b`): merge them, so a name has one place in the batch.
  const builds = collections.map((c) => {
    const merged = new Map<string, number>();
    const labels: SeriesLabels[] = [];
    const alias = c.tagNames.map((name, t) => {
      let to = merged.get(name);
      if (to === undefined) {
        merged.set(name, (to = merged.size));
        labels.push(c.tagLabels[t]); // the first series of a shared name gives its labels
      }
      return to;
    });
    const names = [...merged.keys()];
    const counts = new Array<number>(names.length).fill(0);
    c.tagCounts.forEach((count, t) => (counts[alias[t]] += count));
    const tagStart = new Uint32Array(names.length + 1);
    for (let t = 0; t < names.length; t++) tagStart[t + 1] = tagStart[t] + counts[t];
    const total = tagStart[names.length];
    return { scope: c.scope, alias, names, labels, tagStart, fill: tagStart.slice(0, names.length), timestamps: new Float64Array(total), values: new Float64Array(total) };
  });
  if (builds.length === 1) {
    // One collection (the usual body): no per-point lookup of its build.
    const { fill, alias, timestamps, values } = builds[0];
    const ts = lines.timestamps;
    const vs = lines.values;
    for (let i = 0; i < n; i++) {
      const at = fill[alias[pointTag[i]]]++;
      timestamps[at] = ts[i];
      values[at] = vs[i];
    }
  } else {
    for (let i = 0; i < n; i++) {
      const b = builds[collectionOfSeries[lines.pointSeries[i]]];
      const at = b.fill[b.alias[pointTag[i]]]++;
      b.timestamps[at] = lines.timestamps[i];
      b.values[at] = lines.values[i];
    }
  }
  return builds
    .filter((b) => b.names.length > 0)
    .map((b) => ({
      scope: b.scope,
      batch: { scope: b.scope, tagNames: b.names, labels: b.labels, tagStart: b.tagStart, timestamps: b.timestamps, values: b.values, pointCount: b.timestamps.length },
    }));
}

/** Names a line protocol series keeps besides its tags; a line tag of the same name gives way to them. */
export const MEASUREMENT_LABEL = 'measurement';
export const FIELD_LABEL = 'field';

/**
 * The label set of point i's series (WIRE.md part 3 "Series identity"): its measurement, its
 * field key and its non-scope line tags, names sorted.
 */
export function lineLabels(lines: LineProtocolBatch, i: number): SeriesLabels {
  const series = lines.series[lines.pointSeries[i]];
  const field = lines.fieldKeys[lines.pointField[i]];
  // A collector sends the same series in every body, and the parser's series cache hands back
  // the same LineSeries for them: their label sets are made once, not once per body.
  let byField = labelsOfSeries.get(series);
  if (byField === undefined) labelsOfSeries.set(series, (byField = new Map()));
  let labels = byField.get(field);
  if (labels === undefined) byField.set(field, (labels = makeLabels(series, field)));
  return labels;
}

const labelsOfSeries = new WeakMap<LineSeries, Map<string, SeriesLabels>>();

function makeLabels(series: LineSeries, field: string): SeriesLabels {
  const entries: Array<[string, string]> = [[MEASUREMENT_LABEL, series.measurement], [FIELD_LABEL, field]];
  for (const [key, value] of series.tags) {
    if (key !== MEASUREMENT_LABEL && key !== FIELD_LABEL && !isScopeField(key)) entries.push([key, value]);
  }
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return Object.freeze(Object.fromEntries(entries));
}
