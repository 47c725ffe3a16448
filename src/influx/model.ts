// The InfluxDB view of a collection's series (WIRE.md part 3): a line protocol series is its
// measurement, field and tags, as its labels say; a series without labels is a measurement of
// its own name with the one field `value`. Everything the SHOW statements and SELECT planning
// need is derived here from one listing of the collection's series.

import type { SeriesListing } from '../storage/api.js';

/** One stored series as InfluxDB sees it. */
export interface InfluxSeries {
  /** The stored tag name (what a query of the storage names). */
  tag: string;
  measurement: string;
  field: string;
  /** Tag keys and values, keys sorted. */
  tags: Array<[string, string]>;
  /** `measurement,k=v,…` (tag keys sorted, unescaped): the InfluxDB series key. */
  key: string;
}

const MEASUREMENT = 'measurement';
const FIELD = 'field';

export function influxSeriesOf(listing: SeriesListing): InfluxSeries {
  const labels = listing.labels;
  if (!labels || labels[MEASUREMENT] === undefined || labels[FIELD] === undefined) {
    return { tag: listing.tag, measurement: listing.tag, field: 'value', tags: [], key: listing.tag };
  }
  const tags = Object.entries(labels)
    .filter(([k]) => k !== MEASUREMENT && k !== FIELD)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const measurement = labels[MEASUREMENT]!;
  return { tag: listing.tag, measurement, field: labels[FIELD]!, tags, key: [measurement, ...tags.map(([k, v]) => `${k}=${v}`)].join(',') };
}

/** The measurements of a collection, each with its series, field keys and tag keys. */
export class MeasurementIndex {
  readonly byName = new Map<string, Measurement>();

  constructor(series: readonly InfluxSeries[]) {
    for (const s of series) {
      let m = this.byName.get(s.measurement);
      if (!m) this.byName.set(s.measurement, (m = new Measurement(s.measurement)));
      m.add(s);
    }
  }

  /** Measurement names, sorted as InfluxDB sorts them (byte order). */
  names(): string[] {
    return [...this.byName.keys()].sort(byteOrder);
  }
}

export class Measurement {
  readonly series: InfluxSeries[] = [];
  readonly fields = new Set<string>();
  readonly tagKeys = new Set<string>();

  constructor(readonly name: string) {}

  add(s: InfluxSeries): void {
    this.series.push(s);
    this.fields.add(s.field);
    for (const [k] of s.tags) this.tagKeys.add(k);
  }

  sortedFields(): string[] {
    return [...this.fields].sort(byteOrder);
  }

  sortedTagKeys(): string[] {
    return [...this.tagKeys].sort(byteOrder);
  }
}

export function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function tagValue(s: InfluxSeries, key: string): string | undefined {
  for (const [k, v] of s.tags) if (k === key) return v;
  return undefined;
}
