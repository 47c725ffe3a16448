// Runs parsed InfluxQL statements (influxql/ast.ts) over the caller's collections: SHOW answers
// from the series listing (model.ts), SELECT from the storage workers. Aggregations that combine
// per series (mean, sum, count, min, max, with buckets on the epoch grid) run in the workers
// during the scan, as the POST query pipeline does, so GROUP BY time over a year of 1 s data
// brings buckets to this thread, not points; the other functions, raw selects and field
// conditions read raw points here, bounded by `influx.maxPoints`-like byte limits.

import type { AccessGrant } from '../meta/access-grant.js';
import type { CollectedSeries, PointReader, SeriesRequest } from '../storage/api.js';
import type { AggregatorSpec } from '../../shared/aggregator-spec.js';
import { ServiceError } from '../../shared/errors.js';
import type { Dimension, Expr, SelectStatement, Source, Statement } from './influxql/ast.js';
import { aggregate, isTransform, SELECTORS, type Aggregate } from './functions.js';
import { byteOrder, influxSeriesOf, MeasurementIndex, tagValue, type InfluxSeries, type Measurement } from './model.js';
import type { Cell, ResultSeries, Row, StatementResult } from './results.js';
import { StatementError } from './errors.js';
import { evalCondition, matchesTags, regex, splitTime } from './conditions.js';
import { callsIn, columnName, evalAggregateExpr, evalMath, refsIn, uniqueNames, type CallInfo } from './expressions.js';
import { applyFill, applyTransforms, escapeGlob, mergeByTime, page } from './rows.js';


export interface ExecutorDeps {
  reader: PointReader;
  /** The collection id a `db` names for this caller, or null ("database not found"). */
  database(grant: AccessGrant, name: string): string | null;
  /** The databases the caller can see, sorted. */
  databases(grant: AccessGrant): string[];
  now(): number;
  /** Most bytes of raw points a statement may bring to the main thread. */
  maxRawBytes: number;
  /** Most buckets a GROUP BY time statement may make. */
  maxBuckets: number;
}

export interface ExecutionContext {
  grant: AccessGrant;
  /** The `db` parameter, or null. */
  db: string | null;
  signal: AbortSignal;
  /**
   * Bytes of points the whole request may still bring to the main thread (every statement and
   * group draws on it), so that many statements or series cannot add up past one limit.
   */
  budget: { remaining: number };
}

const MAX_LISTED_SERIES = 100_000;
/** How long a series listing may serve statements while no write added series (see index()). */
const INDEX_CACHE_MS = 5000;
const INDEX_CACHE_ENTRIES = 256;
/** The time of a row without a lower time bound (InfluxDB's minimum time shows as the epoch here: storage holds no earlier point). */
const MIN_TIME = 0;
const MAX_TIME = 9007199254740991;

export class Executor {
  constructor(private readonly deps: ExecutorDeps) {}

  /** What one request may bring to the main thread in all (ExecutionContext.budget). */
  get requestBudgetBytes(): number {
    return this.deps.maxRawBytes;
  }

  async run(statement: Statement, ctx: ExecutionContext): Promise<StatementResult> {
    try {
      return { series: await this.dispatch(statement, ctx) };
    } catch (err) {
      if (err instanceof StatementError) return { error: err.message };
      // A refusal of the storage layer (too many points, a bad regex) is this statement's error too.
      if (err instanceof ServiceError && err.status < 500) return { error: err.message };
      throw err;
    }
  }

  private async dispatch(s: Statement, ctx: ExecutionContext): Promise<ResultSeries[]> {
    switch (s.kind) {
      case 'show-databases':
        return [{ name: 'databases', columns: ['name'], rows: this.deps.databases(ctx.grant).map((d) => ({ time: 0, cells: [d] })), timeless: true }];
      case 'show-retention-policies':
        this.collectionOf(s.database, ctx);
        return [{ columns: ['name', 'duration', 'shardGroupDuration', 'replicaN', 'default'], rows: [{ time: 0, cells: ['autogen', '0s', '168h0m0s', 1, true] }], timeless: true }];
      case 'show-measurements': {
        const { index } = await this.index(s.database, ctx);
        let names = index.names();
        if (s.measurement) names = names.filter((n) => (s.measurement!.op === '=' ? n === s.measurement!.value : regex(s.measurement!.value).test(n)));
        if (s.condition) names = names.filter((n) => index.byName.get(n)!.series.some((series) => matchesTags(s.condition!, series, index.byName.get(n)!.tagKeys)));
        names = page(names, s.limit, s.offset);
        return names.length === 0 ? [] : [{ name: 'measurements', columns: ['name'], rows: names.map((n) => ({ time: 0, cells: [n] })), timeless: true }];
      }
      case 'show-tag-keys': {
        const { index } = await this.index(s.database, ctx, s.sources);
        return this.measurementsOf(index, s.sources).flatMap((m) => {
          const keys = page(m.sortedTagKeys().filter((k) => !s.condition || m.series.some((x) => tagValue(x, k) !== undefined && matchesTags(s.condition!, x, m.tagKeys))), s.limit, s.offset);
          return keys.length === 0 ? [] : [{ name: m.name, columns: ['tagKey'], rows: keys.map((k) => ({ time: 0, cells: [k] })), timeless: true }];
        });
      }
      case 'show-tag-values': {
        const { index } = await this.index(s.database, ctx, s.sources);
        const key = s.key;
        const keyMatches = (k: string): boolean => {
          switch (key.op) {
            case '=':
              return k === key.value;
            case '!=':
              return k !== key.value;
            case '=~':
              return regex(key.value).test(k);
            case '!~':
              return !regex(key.value).test(k);
            case 'in':
              return key.values.includes(k);
          }
        };
        return this.measurementsOf(index, s.sources).flatMap((m) => {
          const pairs = new Map<string, [string, string]>();
          for (const series of m.series) {
            if (s.condition && !matchesTags(s.condition, series, m.tagKeys)) continue;
            for (const [k, v] of series.tags) if (keyMatches(k)) pairs.set(`${k}\u0000${v}`, [k, v]);
          }
          const sorted = page([...pairs.values()].sort((a, b) => byteOrder(a[0], b[0]) || byteOrder(a[1], b[1])), s.limit, s.offset);
          return sorted.length === 0 ? [] : [{ name: m.name, columns: ['key', 'value'], rows: sorted.map(([k, v]) => ({ time: 0, cells: [k, v] })), timeless: true }];
        });
      }
      case 'show-field-keys': {
        const { index } = await this.index(s.database, ctx, s.sources);
        return this.measurementsOf(index, s.sources).flatMap((m) => {
          const fields = page(m.sortedFields(), s.limit, s.offset);
          return fields.length === 0 ? [] : [{ name: m.name, columns: ['fieldKey', 'fieldType'], rows: fields.map((f) => ({ time: 0, cells: [f, 'float'] })), timeless: true }];
        });
      }
      case 'show-series': {
        const { index } = await this.index(s.database, ctx, s.sources);
        const keys = new Set<string>();
        for (const m of this.measurementsOf(index, s.sources)) for (const series of m.series) if (!s.condition || matchesTags(s.condition, series, m.tagKeys)) keys.add(series.key);
        const sorted = page([...keys].sort(byteOrder), s.limit, s.offset);
        return sorted.length === 0 ? [] : [{ columns: ['key'], rows: sorted.map((k) => ({ time: 0, cells: [k] })), timeless: true }];
      }
      case 'select':
        return this.select(s, ctx);
      case 'unsupported':
        if (s.error !== undefined) throw new StatementError(s.error);
        throw new StatementError(`${s.what} is not supported here: this service answers the InfluxQL of SHOW and SELECT statements (WIRE.md part 3); write points through /write`);
    }
  }

  // ---- databases and measurements --------------------------------------------------------

  private collectionOf(database: string | null, ctx: ExecutionContext): string {
    const name = database ?? ctx.db;
    if (name === null || name === '') throw new StatementError('database name required');
    const id = this.deps.database(ctx.grant, name);
    if (id === null) throw new StatementError(`database not found: ${name}`);
    return id;
  }

  /**
   * The measurements of a database. With `sources` that name measurements (no regex), only the
   * series whose stored names start with those names are listed: the worker finds them by
   * binary search, however many series the collection holds.
   */
  private async index(database: string | null, ctx: ExecutionContext, sources: readonly Source[] = []): Promise<{ id: string; index: MeasurementIndex }> {
    const id = this.collectionOf(database, ctx);
    const named = sources.length > 0 && sources.every((src) => src.name !== null) ? [...new Set(sources.map((src) => src.name!))] : null;
    const globs = named ? named.map((name) => `${escapeGlob(name)}*`) : ['*'];
    // The same statement of a dashboard comes every few seconds: its listing is kept while no write
    // added series to the collection, and at most INDEX_CACHE_MS (labels given to old series, writes
    // replicated from another node).
    const version = this.deps.reader.seriesVersion(id);
    const cacheKey = `${id}\u0000${globs.join('\u0000')}`;
    const cached = this.indexes.get(cacheKey);
    const now = Date.now();
    if (cached && cached.version === version && cached.until > now) return { id, index: cached.index };
    const series: InfluxSeries[] = [];
    for (const glob of globs) {
      let listing;
      try {
        listing = await this.deps.reader.listSeries(ctx.grant, id, glob, MAX_LISTED_SERIES);
      } catch (err) {
        // A client whose collection has no data yet: an empty database.
        if (err instanceof ServiceError && err.status === 404) return { id, index: new MeasurementIndex([]) };
        throw err;
      }
      if (listing.has_more) throw new StatementError(`the query reaches more than ${MAX_LISTED_SERIES} series: narrow it with FROM and WHERE on its tags`);
      for (const listed of listing.series) {
        const s = influxSeriesOf(listed);
        if (!named || named.includes(s.measurement)) series.push(s);
      }
    }
    const index = new MeasurementIndex(series);
    if (this.indexes.size >= INDEX_CACHE_ENTRIES) this.indexes.clear();
    this.indexes.set(cacheKey, { version, until: now + INDEX_CACHE_MS, index });
    return { id, index };
  }

  /** Listings by collection and globs (see index()). Grants are checked before a listing is used, never cached. */
  private readonly indexes = new Map<string, { version: number; until: number; index: MeasurementIndex }>();

  private measurementsOf(index: MeasurementIndex, sources: readonly Source[]): Measurement[] {
    if (sources.length === 0) return index.names().map((n) => index.byName.get(n)!);
    const chosen = new Set<string>();
    for (const source of sources) {
      if (source.regex !== null) {
        const re = regex(source.regex);
        for (const name of index.names()) if (re.test(name)) chosen.add(name);
      } else if (source.name !== null && index.byName.has(source.name)) chosen.add(source.name);
    }
    return [...chosen].sort(byteOrder).map((n) => index.byName.get(n)!);
  }

  // ---- SELECT -------------------------------------------------------------------------------

  private async select(s: SelectStatement, ctx: ExecutionContext): Promise<ResultSeries[]> {
    if (s.into !== null) throw new StatementError('SELECT INTO is not supported here: this service changes no data through /query');
    const databases = new Set(s.sources.map((src) => src.database).filter((d): d is string => d !== null));
    if (databases.size > 1) throw new StatementError('one database per statement');
    const { id, index } = await this.index(databases.size === 1 ? [...databases][0]! : null, ctx, s.sources);
    const scope: Scope = { id, ctx };
    const measurements = this.measurementsOf(index, s.sources);
    const now = this.deps.now();
    const { range, rest } = splitTime(s.condition, now);
    const timeDim = s.dimensions.find((d): d is Extract<Dimension, { type: 'time' }> => d.type === 'time') ?? null;
    if (s.dimensions.filter((d) => d.type === 'time').length > 1) throw new StatementError('GROUP BY allows one time() dimension');
    const rawTransform = rawTransformOf(s);
    const fields = rawTransform ? [] : s.fields.map((f) => ({ ...f, calls: callsIn(f.expr) }));
    const aggregated = fields.some((f) => f.calls.length > 0);
    if (aggregated && fields.some((f) => f.calls.length === 0 && refsIn(f.expr).length > 0)) throw new StatementError('mixing aggregate and non-aggregate queries is not supported');
    if (!aggregated && !rawTransform && timeDim) throw new StatementError('GROUP BY requires at least one aggregate function');
    if (rawTransform && timeDim) throw new StatementError(`${rawTransform.name} over a raw field cannot be combined with GROUP BY time: use it over an aggregate, e.g. ${rawTransform.name}(mean("value"))`);
    const start = range.start ?? MIN_TIME;
    let end = range.end ?? (timeDim ? now : MAX_TIME);
    if (timeDim && range.start === null) throw new StatementError('too many points in the group by interval. maybe you forgot to specify a where time clause?');
    if (end > MAX_TIME) end = MAX_TIME;
    const out: ResultSeries[] = [];
    if (start > end) return out;
    for (const m of measurements) {
      const groups = groupSeries(m, s.dimensions, rest);
      for (const group of groups) {
        const result = rawTransform ? await this.rawTransformGroup(s, m, group, rawTransform, start, end, rest, scope) : aggregated ? await this.aggregateGroup(s, m, group, fields, start, end, timeDim, rest, scope) : await this.rawGroup(s, m, group, start, end, rest, scope);
        if (result) out.push(result);
      }
    }
    // ORDER BY time DESC also turns the order of the series around, as InfluxDB does.
    if (s.descending) out.reverse();
    return page(out, s.slimit, s.soffset);
  }

  /** Raw points of a group as rows: one per (series, time), fields as columns. */
  private async rawGroup(s: SelectStatement, m: Measurement, group: Group, start: number, end: number, rest: Expr | null, scope: Scope): Promise<ResultSeries | null> {
    const columns: Array<{ name: string; expr: Expr | null; tag: string | null; field: string | null }> = [];
    for (const f of s.fields) {
      if (f.expr.type === 'wildcard') {
        const names = [...(f.expr.only !== 'tag' ? m.sortedFields().map((x) => ({ n: x, tag: false })) : []), ...(f.expr.only !== 'field' ? m.sortedTagKeys().filter((k) => !group.keys.includes(k)).map((x) => ({ n: x, tag: true })) : [])];
        names.sort((a, b) => byteOrder(a.n, b.n));
        for (const { n, tag } of names) columns.push({ name: n, expr: null, tag: tag ? n : null, field: tag ? null : n });
        continue;
      }
      const refs = refsIn(f.expr);
      if (refs.length === 0) throw new StatementError('at least 1 non-time field must be queried');
      const name = f.alias ?? (f.expr.type === 'ref' ? f.expr.name : refs.map((r) => r.name).join('_'));
      if (f.expr.type === 'ref' && (f.expr.dataType === 'tag' || (!m.fields.has(f.expr.name) && m.tagKeys.has(f.expr.name)))) columns.push({ name, expr: null, tag: f.expr.name, field: null });
      else columns.push({ name, expr: f.expr, tag: null, field: f.expr.type === 'ref' ? f.expr.name : null });
    }
    const wanted = new Set<string>();
    for (const c of columns) {
      if (c.field) wanted.add(c.field);
      if (c.expr) for (const r of refsIn(c.expr)) wanted.add(r.name);
    }
    for (const r of rest ? refsIn(rest) : []) if (m.fields.has(r.name)) wanted.add(r.name);
    if (![...wanted].some((f) => m.fields.has(f))) return null;
    // Series keys of the group, each with its fields' stored series.
    const byKey = new Map<string, { series: InfluxSeries; fields: Map<string, string> }>();
    for (const series of group.series) {
      if (!wanted.has(series.field)) continue;
      let entry = byKey.get(series.key);
      if (!entry) byKey.set(series.key, (entry = { series, fields: new Map() }));
      entry.fields.set(series.field, series.tag);
    }
    const points = await this.collect(scope, [...byKey.values()].flatMap((e) => [...e.fields.values()]), start, end);
    const rows: Row[] = [];
    // Tag conditions chose the series already; only conditions on field values are asked per row.
    const rowCondition = rest && refsIn(rest).some((r) => m.fields.has(r.name)) ? rest : null;
    const plain = columns.every((c) => c.tag !== null || c.field !== null);
    for (const key of [...byKey.keys()].sort(byteOrder)) {
      const entry = byKey.get(key)!;
      if (plain && !rowCondition && entry.fields.size === 1) {
        // One field: its points are the rows, in time order already (no row maps).
        const [[field, tag]] = [...entry.fields];
        const got = points.get(tag!);
        if (!got) continue;
        if (columns.length === 1 && columns[0]!.field === field && byKey.size === 1) {
          // A time and one value column: the points as they are, no row objects.
          let { ts, values } = got;
          if (s.descending) {
            ts = ts.slice().reverse();
            values = values.slice().reverse();
          }
          const from = Math.min(ts.length, Math.max(0, s.offset));
          const to = s.limit > 0 ? Math.min(ts.length, from + s.limit) : ts.length;
          if (to <= from) return null;
          return { name: m.name, ...(group.keys.length > 0 ? { tags: group.tags } : {}), columns: ['time', ...uniqueNames(columns.map((c) => c.name))], rows: [], points: { ts: ts.subarray(from, to), values: values.subarray(from, to) } };
        }
        const tagCells = columns.map((c) => (c.tag !== null ? (tagValue(entry.series, c.tag) ?? null) : null));
        for (let i = 0; i < got.ts.length; i++) {
          const value = got.values[i]!;
          rows.push({ time: got.ts[i]!, cells: columns.map((c, k) => (c.field === field ? value : tagCells[k]!)) });
        }
        continue;
      }
      // The union of the timestamps of this series' fields, each field's value at each.
      const at = new Map<number, Map<string, number>>();
      for (const [field, tag] of entry.fields) {
        const got = points.get(tag);
        if (!got) continue;
        for (let i = 0; i < got.ts.length; i++) {
          let row = at.get(got.ts[i]!);
          if (!row) at.set(got.ts[i]!, (row = new Map()));
          row.set(field, got.values[i]!);
        }
      }
      for (const time of [...at.keys()].sort((a, b) => a - b)) {
        const values = at.get(time)!;
        if (rowCondition && !evalCondition(rowCondition, entry.series, values, m.tagKeys)) continue;
        const cells: Cell[] = columns.map((c) => (c.tag !== null ? (tagValue(entry.series, c.tag) ?? null) : c.field !== null ? (values.get(c.field) ?? null) : evalMath(c.expr!, values)));
        if (cells.every((cell, i) => cell === null || columns[i]!.tag !== null) && columns.some((c) => c.tag === null)) continue;
        rows.push({ time, cells });
      }
    }
    if (byKey.size > 1) rows.sort((a, b) => a.time - b.time);
    if (s.descending) rows.reverse();
    const paged = page(rows, s.limit, s.offset);
    if (paged.length === 0) return null;
    return { name: m.name, ...(group.keys.length > 0 ? { tags: group.tags } : {}), columns: ['time', ...uniqueNames(columns.map((c) => c.name))], rows: paged };
  }

  /** Aggregates of a group: one row per bucket (or one row without GROUP BY time). */
  private async aggregateGroup(
    s: SelectStatement, m: Measurement, group: Group, fields: Array<{ expr: Expr; alias: string | null; calls: CallInfo[] }>,
    start: number, end: number, timeDim: Extract<Dimension, { type: 'time' }> | null, rest: Expr | null, scope: Scope,
  ): Promise<ResultSeries | null> {
    const fieldCondition = rest && refsIn(rest).some((r) => m.fields.has(r.name)) ? rest : null;
    const interval = timeDim ? timeDim.intervalMs : null;
    // A transform over an aggregate (derivative(mean(x))) also reads the interval before the
    // range, as InfluxDB does, so the first bucket of the range has a value to differ from.
    const transformed = fields.some((f) => f.calls.some((c) => c.transform !== null));
    const shownFrom = start;
    if (interval && transformed) start = Math.max(0, start - interval);
    const offset = timeDim ? ((timeDim.offsetMs % (interval || 1)) + (interval || 1)) % (interval || 1) : 0;
    // The bucket grid: InfluxDB aligns buckets to the epoch plus the offset.
    const firstBucket = interval ? Math.floor((start - offset) / interval) * interval + offset : start;
    const bucketCount = interval ? Math.floor((end - firstBucket) / interval) + 1 : 1;
    if (bucketCount > this.deps.maxBuckets) throw new StatementError(`the query makes ${bucketCount} buckets, more than ${this.deps.maxBuckets}: use a longer GROUP BY time interval or a narrower range`);
    const bucketOf = (t: number) => (interval ? Math.floor((t - firstBucket) / interval) : 0);

    // Each call's per-bucket values and times.
    const calls = fields.flatMap((f) => f.calls);
    const computed = new Map<CallInfo, { values: Array<number | null>; times: Array<number | null> }>();
    let anyData = false;
    for (const call of calls) {
      const members = group.series.filter((x) => x.field === call.field);
      if (!m.fields.has(call.field)) {
        computed.set(call, { values: new Array(bucketCount).fill(null), times: new Array(bucketCount).fill(null) });
        continue;
      }
      const result = await this.computeCall(call, members, start, end, firstBucket, interval, bucketCount, bucketOf, scope, fieldCondition, group.series, m.tagKeys);
      if (result.values.some((v) => v !== null)) anyData = true;
      computed.set(call, result);
    }
    if (!anyData) return null;
    // Rows over the grid, then transforms, fill, order and paging.
    const columnNames = uniqueNames(fields.map((f) => f.alias ?? columnName(f.expr)));
    let rows: Row[] = [];
    const singleSelector = !timeDim && calls.length === 1 && SELECTORS.has(calls[0]!.fn) && fields.length === 1;
    for (let b = 0; b < bucketCount; b++) {
      const time = interval ? firstBucket + b * interval : singleSelector ? (computed.get(calls[0]!)!.times[0] ?? start) : start;
      const cells = fields.map((f) => evalAggregateExpr(f.expr, (call) => computed.get(call)!.values[b] ?? null, f.calls));
      rows.push({ time, cells });
    }
    rows = applyTransforms(fields, rows);
    if (interval && transformed) rows = rows.filter((r) => r.time >= Math.floor((shownFrom - offset) / interval) * interval + offset);
    rows = applyFill(s.fill, rows, fields.map((f) => f.expr.type === 'call' && f.expr.name.toLowerCase() === 'count'), !!timeDim);
    if (s.descending) rows.reverse();
    const paged = page(rows, s.limit, s.offset);
    if (paged.length === 0) return null;
    const head = { name: m.name, ...(group.keys.length > 0 ? { tags: group.tags } : {}), columns: ['time', ...columnNames] };
    if (columnNames.length === 1) {
      // One value column: written by the point writer (null as NaN, which it writes as null).
      const ts = Float64Array.from(paged, (r) => r.time);
      const values = Float64Array.from(paged, (r) => (typeof r.cells[0] === 'number' ? r.cells[0] : NaN));
      return { ...head, rows: [], points: { ts, values } };
    }
    return { ...head, rows: paged };
  }

  /** derivative, non_negative_derivative or difference over a raw field: between consecutive points of the group. */
  private async rawTransformGroup(s: SelectStatement, m: Measurement, group: Group, t: RawTransform, start: number, end: number, rest: Expr | null, scope: Scope): Promise<ResultSeries | null> {
    if (!m.fields.has(t.field)) return null;
    const members = group.series.filter((x) => x.field === t.field);
    const condition = rest && refsIn(rest).some((r) => m.fields.has(r.name)) ? rest : null;
    const parts = condition
      ? await this.filteredPoints(scope, members, group.series, condition, start, end, m.tagKeys)
      : await this.collect(scope, members.map((x) => x.tag), start, end).then((points) => members.map((x) => points.get(x.tag)).filter((p): p is CollectedSeries => p !== undefined));
    const merged = mergeByTime(parts);
    const rows: Row[] = [];
    for (let i = 1; i < merged.ts.length; i++) {
      const dt = merged.ts[i]! - merged.ts[i - 1]!;
      if (dt === 0) continue;
      let value = merged.values[i]! - merged.values[i - 1]!;
      if (t.name !== 'difference') value = value / (dt / t.unitMs);
      if (t.name === 'non_negative_derivative' && value < 0) continue;
      rows.push({ time: merged.ts[i]!, cells: [value] });
    }
    if (s.descending) rows.reverse();
    const paged = page(rows, s.limit, s.offset);
    if (paged.length === 0) return null;
    return { name: m.name, ...(group.keys.length > 0 ? { tags: group.tags } : {}), columns: ['time', t.alias ?? t.name], rows: paged };
  }

  /** One aggregate call over the members of a group, per bucket. */
  private async computeCall(
    call: CallInfo, members: InfluxSeries[], start: number, end: number, firstBucket: number, interval: number | null, bucketCount: number, bucketOf: (t: number) => number, scope: Scope,
    fieldCondition: Expr | null, groupSeries: InfluxSeries[], tagKeys: ReadonlySet<string>,
  ): Promise<{ values: Array<number | null>; times: Array<number | null> }> {
    const values: Array<number | null> = new Array(bucketCount).fill(null);
    const times: Array<number | null> = new Array(bucketCount).fill(null);
    // One series' mean is its worker's avg (one scan); several series' means combine sums and counts.
    const workerFn = call.fn === 'mean' && members.length === 1 ? (['avg'] as const) : WORKER_FUNCTIONS[call.fn as keyof typeof WORKER_FUNCTIONS];
    // In the workers when the grid is the epoch one (no offset) or one bucket over the range.
    const aligned = interval === null || (firstBucket % interval === 0 && Number.isInteger(interval));
    // A selector without GROUP BY time reports its point's time, which the worker buckets do not keep.
    const needsPointTime = interval === null && SELECTORS.has(call.fn);
    if (workerFn && aligned && !needsPointTime && !fieldCondition && members.length > 0) {
      const pipelines: Array<{ name: string; spec: AggregatorSpec[] }> = workerFn.map((name) => ({ name, spec: [samplingStep(name, interval ?? end - start + 1, interval !== null)] }));
      const requests: SeriesRequest[] = members.flatMap((x) => pipelines.map((p) => ({ tag: x.tag, pipeline: p.spec, label: `${p.name}\u0000${x.tag}` })));
      const got = await this.draw(scope, () => this.deps.reader.collect([{ collectionId: scope.id, series: requests }], start, end, scope.ctx.signal, scope.ctx.budget.remaining, 'storage.queryMemoryBytes'));
      const acc = new Array(bucketCount).fill(null).map(() => ({ sum: 0, count: 0, min: Infinity, max: -Infinity, n: 0 }));
      for (const x of members) {
        for (const name of workerFn) {
          const series = got.get(`${name}\u0000${x.tag}`);
          if (!series) continue;
          for (let i = 0; i < series.ts.length; i++) {
            const b = bucketOf(series.ts[i]!);
            if (b < 0 || b >= bucketCount) continue;
            const v = series.values[i]!;
            const a = acc[b]!;
            a.n++;
            if (name === 'avg') {
              a.sum += v;
              a.count += 1;
            } else if (name === 'sum') a.sum += v;
            else if (name === 'count') a.count += v;
            else if (name === 'min') a.min = Math.min(a.min, v);
            else if (name === 'max') a.max = Math.max(a.max, v);
          }
        }
      }
      for (let b = 0; b < bucketCount; b++) {
        const a = acc[b]!;
        if (a.n === 0) continue;
        values[b] = call.fn === 'count' ? a.count : call.fn === 'mean' ? a.sum / a.count : call.fn === 'sum' ? a.sum : call.fn === 'min' ? a.min : a.max;
      }
      return { values, times };
    }
    // Raw points of every member (only those that pass a field condition), merged by time, then the function per bucket.
    const parts = fieldCondition ? await this.filteredPoints(scope, members, groupSeries, fieldCondition, start, end, tagKeys) : await this.collect(scope, members.map((x) => x.tag), start, end).then((points) => members.map((x) => points.get(x.tag)).filter((p): p is CollectedSeries => p !== undefined));
    const merged = mergeByTime(parts);
    let from = 0;
    while (from < merged.ts.length) {
      const b = bucketOf(merged.ts[from]!);
      let to = from + 1;
      while (to < merged.ts.length && bucketOf(merged.ts[to]!) === b) to++;
      if (b >= 0 && b < bucketCount) {
        const r = aggregate(call.fn as Aggregate, merged.ts, merged.values, from, to, call.arg);
        values[b] = r.value;
        times[b] = r.time;
      }
      from = to;
    }
    return { values, times };
  }

  /**
   * The points of each member that pass a condition on field values: the condition's fields are
   * read beside them, and a point counts when the condition holds on the fields of its series
   * at its time (InfluxDB's rows).
   */
  private async filteredPoints(scope: Scope, members: InfluxSeries[], groupSeries: InfluxSeries[], condition: Expr, start: number, end: number, tagKeys: ReadonlySet<string>): Promise<CollectedSeries[]> {
    const conditionFields = new Set(refsIn(condition).map((r) => r.name));
    const siblings = groupSeries.filter((x) => conditionFields.has(x.field) && members.some((m) => m.key === x.key));
    const points = await this.collect(scope, [...new Set([...members, ...siblings].map((x) => x.tag))], start, end);
    return members.map((member) => {
      const rows = new Map<number, Map<string, number>>();
      for (const x of siblings) {
        if (x.key !== member.key) continue;
        const got = points.get(x.tag);
        if (!got) continue;
        for (let i = 0; i < got.ts.length; i++) {
          let row = rows.get(got.ts[i]!);
          if (!row) rows.set(got.ts[i]!, (row = new Map()));
          row.set(x.field, got.values[i]!);
        }
      }
      const own = points.get(member.tag) ?? { ts: new Float64Array(0), values: new Float64Array(0) };
      const keep: number[] = [];
      for (let i = 0; i < own.ts.length; i++) {
        const row = new Map(rows.get(own.ts[i]!) ?? []);
        row.set(member.field, own.values[i]!);
        if (evalCondition(condition, member, row, tagKeys)) keep.push(i);
      }
      return { ts: Float64Array.from(keep, (i) => own.ts[i]!), values: Float64Array.from(keep, (i) => own.values[i]!) };
    });
  }

  /** Raw points of stored series of the statement's collection. */
  private async collect(scope: Scope, tags: string[], start: number, end: number): Promise<Map<string, CollectedSeries>> {
    if (tags.length === 0) return new Map();
    return this.draw(scope, () => this.deps.reader.collect([{ collectionId: scope.id, series: tags.map((tag) => ({ tag, pipeline: [] })) }], start, end, scope.ctx.signal, scope.ctx.budget.remaining, 'storage.queryMemoryBytes'));
  }

  /** Runs a collect against the request's budget and takes what it brought (16 bytes a point) from it. */
  private async draw(scope: Scope, collect: () => Promise<Map<string, CollectedSeries>>): Promise<Map<string, CollectedSeries>> {
    if (scope.ctx.budget.remaining <= 0) throw new StatementError(`the request needs more than storage.queryMemoryBytes (${this.deps.maxRawBytes} bytes) of points on the main thread: narrow the time range, or aggregate (GROUP BY time)`);
    const got = await collect();
    for (const series of got.values()) scope.ctx.budget.remaining -= series.ts.length * 16;
    return got;
  }
}

/** The collection a SELECT reads, and the request it runs for. */
interface Scope {
  id: string;
  ctx: ExecutionContext;
}

// ---- helpers ----------------------------------------------------------------------------------

interface RawTransform {
  name: string;
  field: string;
  unitMs: number;
  alias: string | null;
}

/** The one field of a SELECT when it is a transform over a raw field (`difference("v")`), else null. */
function rawTransformOf(s: SelectStatement): RawTransform | null {
  const one = s.fields.length === 1 ? s.fields[0]! : null;
  const e = one?.expr;
  if (!e || e.type !== 'call' || !isTransform(e.name.toLowerCase()) || e.args[0]?.type !== 'ref') return null;
  const unit = e.args[1];
  return { name: e.name.toLowerCase(), field: e.args[0].name, unitMs: unit?.type === 'duration' ? unit.ms : 1000, alias: one!.alias };
}

/** The worker pipelines that give each function's partial results per series. */
const WORKER_FUNCTIONS = { mean: ['sum', 'count'], sum: ['sum'], count: ['count'], min: ['min'], max: ['max'] } as const;

function samplingStep(name: string, width: number, align: boolean): AggregatorSpec {
  return { name: name as 'sum', sampling: { value: width, unit: 'milliseconds' }, align_sampling: align, align_start_time: true, align_end_time: false };
}

interface Group {
  keys: string[];
  tags: Record<string, string>;
  series: InfluxSeries[];
}

/** The series of a measurement that pass the tag conditions, grouped by the GROUP BY tag keys. */
function groupSeries(m: Measurement, dimensions: readonly Dimension[], condition: Expr | null): Group[] {
  const keys = new Set<string>();
  for (const d of dimensions) {
    if (d.type === 'tag') keys.add(d.name);
    else if (d.type === 'wildcard') for (const k of m.tagKeys) keys.add(k);
    else if (d.type === 'regex') {
      const re = regex(d.source);
      for (const k of m.tagKeys) if (re.test(k)) keys.add(k);
    }
  }
  const sortedKeys = [...keys].sort(byteOrder);
  const groups = new Map<string, Group>();
  for (const series of m.series) {
    if (condition && !matchesTags(condition, series, m.tagKeys)) continue;
    const tags: Record<string, string> = {};
    for (const k of sortedKeys) tags[k] = tagValue(series, k) ?? '';
    const id = sortedKeys.map((k) => `${k}=${tags[k]}`).join(',');
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { keys: sortedKeys, tags, series: [] }));
    g.series.push(series);
  }
  return [...groups.entries()].sort((a, b) => byteOrder(a[0], b[0])).map(([, g]) => g);
}

