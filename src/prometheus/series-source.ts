// The series PromQL, remote read and the metadata routes see: every series of every collection
// the caller's grant reaches, with its Prometheus labels (labels.ts), chosen by label matchers
// (regular expressions fully anchored and run on the linear-time matcher, so no pattern can make
// a request backtrack), and their samples read through the storage workers. Listings are cached
// per collection while no write adds series to it (seriesVersion), at most a few seconds.

import type { AccessGrant } from '../meta/access-grant.js';
import { LinearRegExp } from '../meta/linear-regexp.js';
import type { Collections, PointReader, SeriesRequest } from '../storage/api.js';
import type { AggregatorSpec, PromqlGroupOp, PromqlWindowStep } from '../../shared/aggregator-spec.js';
import { StepAggregate } from '../../shared/promql-windows.js';
import { ServiceError } from '../../shared/errors.js';
import { collectionId as idOf } from '../../shared/scope-path.js';
import { keyOf, seriesLabels, type Labels } from './labels.js';
import type { LabelMatcher } from './promql/ast.js';
import { executionError, PromQLError, type RawSeries } from './promql/values.js';

const LISTING_CACHE_MS = 5_000;
const LISTING_CACHE_ENTRIES = 10_000;
const REGEX_STEPS = 5_000_000;
/** Most series of one collection a listing holds (storage.maxSeriesPerCollection's default). */
const MAX_LISTED_SERIES = 1_000_000;

export interface CatalogSeries {
  collectionId: string;
  tag: string;
  labels: Labels;
}

export interface SourceLimits {
  /** Most series one request may reach (a listing larger than this is refused). */
  maxSeries: number;
  /** Bytes of samples one request may hold on the main thread (storage.queryMemoryBytes). */
  maxBytes: number;
}

type Test = (value: string) => boolean;

/** A matcher as a test of a label's value ("" for an absent label). */
export function compileMatcher(m: LabelMatcher): Test {
  switch (m.type) {
    case '=':
      return (v) => v === m.value;
    case '!=':
      return (v) => v !== m.value;
    case '=~':
    case '!~': {
      const re = anchoredRegexp(m.value);
      return m.type === '=~' ? re : (v) => !re(v);
    }
  }
}

function anchoredRegexp(source: string): Test {
  // Go's leading flag group (?i) becomes the matcher's flag; the pattern matches the whole value.
  const flagged = /^\(\?([ims]+)\)/.exec(source);
  const body = flagged ? source.slice(flagged[0].length) : source;
  const flags = flagged ? [...new Set(flagged[1]!)].join('') : '';
  let re: LinearRegExp;
  try {
    re = new LinearRegExp(`^(?:${body})$`, flags);
  } catch (err) {
    throw new PromQLError('bad_data', `invalid regular expression ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
  return (v) => {
    try {
      return re.test(v, { remaining: REGEX_STEPS });
    } catch {
      throw executionError(`regular expression ${JSON.stringify(source)} is too costly for this value`);
    }
  };
}

export class SeriesSource {
  private readonly listings = new Map<string, { version: number; until: number; series: CatalogSeries[] }>();

  constructor(
    private readonly reader: PointReader,
    private readonly collections: Collections,
    private readonly limits: SourceLimits,
  ) {}

  /** Every series the grant reaches. */
  async catalog(grant: AccessGrant): Promise<CatalogSeries[]> {
    const ids = this.collections.visible(grant).map((record) => idOf(record));
    const lists = await Promise.all(ids.map((id) => this.listing(grant, id)));
    return lists.flat();
  }

  private tooMany(): PromQLError {
    return executionError(`the query reaches more than ${this.limits.maxSeries} series (promql.maxSeries): narrow its label matchers`);
  }

  private async listing(grant: AccessGrant, id: string): Promise<CatalogSeries[]> {
    const version = this.reader.seriesVersion(id);
    const cached = this.listings.get(id);
    const now = Date.now();
    if (cached && cached.version === version && cached.until > now) return cached.series;
    let listed;
    try {
      listed = await this.reader.listSeries(grant, id, '*', MAX_LISTED_SERIES);
    } catch (err) {
      if (err instanceof ServiceError && err.status === 404) return []; // removed meanwhile
      throw err;
    }
    if (listed.has_more) throw executionError(`collection ${id} holds more than ${MAX_LISTED_SERIES} series: PromQL cannot list it`);
    const series = listed.series.map((s) => ({ collectionId: id, tag: s.tag, labels: seriesLabels(id, s.tag, s.labels) }));
    if (this.listings.size >= LISTING_CACHE_ENTRIES) this.listings.clear();
    this.listings.set(id, { version, until: now + LISTING_CACHE_MS, series });
    return series;
  }

  /** The series whose labels satisfy every matcher (refused above limits.maxSeries). */
  async match(grant: AccessGrant, matchers: readonly LabelMatcher[]): Promise<CatalogSeries[]> {
    const tests = matchers.map((m) => ({ name: m.name, test: compileMatcher(m) }));
    const all = await this.catalog(grant);
    const found = all.filter((s) => tests.every(({ name, test }) => test(valueOf(s.labels, name))));
    if (found.length > this.limits.maxSeries) throw this.tooMany();
    return found;
  }

  /** The samples of `series` in [start, end], in the order given; with a pipeline, what it makes of them in the workers. */
  async samples(series: readonly CatalogSeries[], start: number, end: number, signal: AbortSignal, pipeline: AggregatorSpec[] = []): Promise<RawSeries[]> {
    if (series.length === 0) return [];
    const got = await this.samplesBy(series, series.map(() => pipeline), start, end, signal);
    const empty = new Float64Array(0);
    return series.map((s, i) => {
      const points = got.get(String(i));
      return { labels: s.labels, ts: points?.ts ?? empty, values: points?.values ?? empty };
    });
  }

  /** What the workers answer for each series with its own pipeline, by result key (the series' index, or a group's key). */
  async samplesBy(series: readonly CatalogSeries[], pipelines: AggregatorSpec[][], start: number, end: number, signal: AbortSignal): Promise<Map<string, { ts: Float64Array; values: Float64Array }>> {
    const groups = new Map<string, SeriesRequest[]>();
    series.forEach((s, i) => {
      let list = groups.get(s.collectionId);
      if (!list) groups.set(s.collectionId, (list = []));
      list.push({ tag: s.tag, pipeline: pipelines[i]!, label: String(i) });
    });
    try {
      return await this.reader.collect([...groups].map(([collectionId, requests]) => ({ collectionId, series: requests })), start, end, signal, this.limits.maxBytes, 'storage.queryMemoryBytes');
    } catch (err) {
      if (err instanceof ServiceError && err.status === 400) throw executionError(err.message);
      throw err;
    }
  }
}

/**
 * The series aggregated across series in the workers: each series' window results go into its
 * group (groupOf its labels) with `op`, shard by shard; the partials are merged here. One
 * RawSeries per group, labelled as the group, `ts` holding step indexes.
 */
export async function groupedWindows(
  source: SeriesSource,
  series: readonly CatalogSeries[],
  start: number,
  end: number,
  signal: AbortSignal,
  step: PromqlWindowStep,
  op: PromqlGroupOp,
  groupOf: (labels: Labels) => Labels,
): Promise<RawSeries[]> {
  const groups: Array<{ labels: Labels; aggregate: StepAggregate }> = [];
  const groupIndex = new Map<string, number>();
  const collectionIndex = new Map<string, number>();
  const requests = series.map((s) => {
    const labels = groupOf(s.labels);
    const key = keyOf(labels);
    let g = groupIndex.get(key);
    if (g === undefined) {
      groupIndex.set(key, (g = groups.length));
      groups.push({ labels, aggregate: new StepAggregate(op, step.steps) });
    }
    let c = collectionIndex.get(s.collectionId);
    if (c === undefined) collectionIndex.set(s.collectionId, (c = collectionIndex.size));
    // Unique per collection: every collection's partial comes back on its own.
    return { group: g, pipeline: [{ ...step, group: { key: `${g}@${c}`, op } }] };
  });
  const got = await source.samplesBy(series, requests.map((r) => r.pipeline), start, end, signal);
  for (const [key, partial] of got) {
    const g = Number(key.slice(0, key.indexOf('@')));
    const aggregate = groups[g]!.aggregate;
    for (let k = 0; k + 1 < partial.ts.length; k += 2) aggregate.merge(partial.ts[k]!, partial.values[k]!, partial.values[k + 1]!);
  }
  return groups.map(({ labels, aggregate }) => {
    const steps: number[] = [];
    for (let i = 0; i < aggregate.counts.length; i++) if (aggregate.counts[i]! > 0) steps.push(i);
    return { labels, ts: Float64Array.from(steps), values: Float64Array.from(steps, (i) => aggregate.values[i]!) };
  });
}

function valueOf(labels: Labels, name: string): string {
  for (const [k, v] of labels) if (k === name) return v;
  return '';
}
