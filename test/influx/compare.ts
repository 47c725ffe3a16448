// Compares two InfluxDB 1.x `/query` JSON answers, the reference (`influxd`) and ours, field by
// field: `results` (count, `statement_id`, `error`, `messages`, `partial`), then each result's
// `series` (order, `name`, `tags`, `columns`, `values`). Numbers are equal within a relative
// tolerance (1e-9 unless told): two sums of the same floats in another order differ in their
// last bits. Everything else is exact. A key one side lacks where the other has null is
// reported with that note, since clients treat the two alike but a diff should say which it was.
//
// Series are matched by name and tags, so a missing series is reported as one line rather than
// as every value after it; an order that differs is one line too. Rows of a series whose first
// column is `time` are matched by time when their counts differ, for the same reason.

export interface Difference {
  /** Where: `results[0].series[2]{cpu,host=b}.values[13].mean`. */
  path: string;
  /** What differs, in words, with both values. */
  message: string;
}

export interface CompareOptions {
  /** Numbers a and b are equal when |a − b| ≤ relTolerance · max(|a|, |b|). Default 1e-9. */
  relTolerance?: number;
  /** At most this many differences are listed (the count of the others is the last one). Default 50. */
  maxDifferences?: number;
  /** Names of the two sides in messages. Default `influxd` and `ours`. */
  names?: [string, string];
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Context {
  rel: number;
  names: [string, string];
  out: Difference[];
  max: number;
  dropped: number;
}

const MISSING = Symbol('missing');
type Maybe = Json | typeof MISSING;

/** The differences between two parsed `/query` answers; empty when they are equal. */
export function compareAnswers(expected: unknown, actual: unknown, opts: CompareOptions = {}): Difference[] {
  const cx: Context = { rel: opts.relTolerance ?? 1e-9, names: opts.names ?? ['influxd', 'ours'], out: [], max: opts.maxDifferences ?? 50, dropped: 0 };
  compareTop(cx, expected as Json, actual as Json);
  if (cx.dropped > 0) cx.out.push({ path: '', message: `… and ${cx.dropped} more differences` });
  return cx.out;
}

/** An HTTP answer of `/query`: status and parsed body. */
export interface QueryAnswer {
  status: number;
  json: unknown;
  text?: string;
}

/** Compares the statuses, then the bodies. */
export function compareHttpAnswers(expected: QueryAnswer, actual: QueryAnswer, opts: CompareOptions = {}): Difference[] {
  const names = opts.names ?? ['influxd', 'ours'];
  const out: Difference[] = [];
  if (expected.status !== actual.status) out.push({ path: 'status', message: `${names[0]} ${expected.status}, ${names[1]} ${actual.status}` });
  if (expected.json === undefined || actual.json === undefined) {
    if (expected.json !== actual.json || expected.text !== actual.text) {
      out.push({ path: 'body', message: `${names[0]} ${describeBody(expected)}, ${names[1]} ${describeBody(actual)}` });
    }
    return out;
  }
  return [...out, ...compareAnswers(expected.json, actual.json, opts)];
}

/** The differences as text, one per line, headed by `title`. */
export function formatDifferences(differences: readonly Difference[], title = ''): string {
  const lines = differences.map((d) => (d.path ? `  ${d.path}: ${d.message}` : `  ${d.message}`));
  return [title, ...lines].filter((l) => l !== '').join('\n');
}

function describeBody(answer: QueryAnswer): string {
  if (answer.json !== undefined) return `JSON ${short(answer.json as Json)}`;
  return answer.text === undefined ? 'no body' : `text ${JSON.stringify(answer.text.length > 200 ? `${answer.text.slice(0, 200)}…` : answer.text)}`;
}

function report(cx: Context, path: string, message: string): void {
  if (cx.out.length < cx.max) cx.out.push({ path, message });
  else cx.dropped++;
}

function isObject(v: unknown): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function compareTop(cx: Context, e: Json, a: Json): void {
  if (!isObject(e) || !isObject(a)) {
    compareValue(cx, '', e, a);
    return;
  }
  // A whole-query error: {"error": "..."}.
  compareKeys(cx, '', e, a, ['results']);
  const er = e.results;
  const ar = a.results;
  if (er === undefined && ar === undefined) return;
  if (!Array.isArray(er) || !Array.isArray(ar)) {
    compareField(cx, 'results', field(e, 'results'), field(a, 'results'));
    return;
  }
  if (er.length !== ar.length) report(cx, 'results', `${er.length} results from ${cx.names[0]}, ${ar.length} from ${cx.names[1]}`);
  for (let i = 0; i < Math.min(er.length, ar.length); i++) compareResult(cx, `results[${i}]`, er[i], ar[i]);
}

function compareResult(cx: Context, path: string, e: Json, a: Json): void {
  if (!isObject(e) || !isObject(a)) {
    compareValue(cx, path, e, a);
    return;
  }
  compareKeys(cx, path, e, a, ['series']);
  const es = e.series;
  const as = a.series;
  if (es === undefined && as === undefined) return;
  if (!Array.isArray(es) || !Array.isArray(as)) {
    compareField(cx, `${path}.series`, field(e, 'series'), field(a, 'series'));
    return;
  }
  compareSeriesList(cx, `${path}.series`, es, as);
}

/** `name` and sorted `tags` of a series: what identifies it in a result. */
function seriesKey(s: Json): string {
  if (!isObject(s)) return JSON.stringify(s);
  const name = typeof s.name === 'string' ? s.name : '';
  const tags = isObject(s.tags) ? Object.keys(s.tags).sort().map((k) => `${k}=${String((s.tags as Record<string, Json>)[k])}`) : [];
  return [name, ...tags].join(',');
}

function compareSeriesList(cx: Context, path: string, es: Json[], as: Json[]): void {
  const ek = es.map(seriesKey);
  const ak = as.map(seriesKey);
  const sameKeys = ek.length === ak.length && ek.every((k, i) => k === ak[i]);
  if (sameKeys) {
    for (let i = 0; i < es.length; i++) compareSeries(cx, `${path}[${i}]{${ek[i]}}`, es[i], as[i]);
    return;
  }
  const unique = new Set(ek).size === ek.length && new Set(ak).size === ak.length;
  if (!unique) {
    // Series that cannot be told apart by name and tags (SHOW answers without a name): by position.
    if (es.length !== as.length) report(cx, path, `${es.length} series from ${cx.names[0]}, ${as.length} from ${cx.names[1]}`);
    for (let i = 0; i < Math.min(es.length, as.length); i++) compareSeries(cx, `${path}[${i}]{${ek[i]}}`, es[i], as[i]);
    return;
  }
  const onlyE = ek.filter((k) => !ak.includes(k));
  const onlyA = ak.filter((k) => !ek.includes(k));
  if (onlyE.length > 0) report(cx, path, `series only in ${cx.names[0]}: ${list(onlyE)}`);
  if (onlyA.length > 0) report(cx, path, `series only in ${cx.names[1]}: ${list(onlyA)}`);
  const commonE = ek.filter((k) => ak.includes(k));
  const commonA = ak.filter((k) => ek.includes(k));
  if (commonE.some((k, i) => k !== commonA[i])) report(cx, path, `series order differs: ${cx.names[0]} ${list(commonE)}; ${cx.names[1]} ${list(commonA)}`);
  for (const k of commonE) compareSeries(cx, `${path}[${ek.indexOf(k)}]{${k}}`, es[ek.indexOf(k)], as[ak.indexOf(k)]);
}

function compareSeries(cx: Context, path: string, e: Json, a: Json): void {
  if (!isObject(e) || !isObject(a)) {
    compareValue(cx, path, e, a);
    return;
  }
  compareKeys(cx, path, e, a, ['values', 'columns']);
  const ec = e.columns;
  const ac = a.columns;
  compareField(cx, `${path}.columns`, field(e, 'columns'), field(a, 'columns'));
  const columns = Array.isArray(ec) && Array.isArray(ac) && JSON.stringify(ec) === JSON.stringify(ac) ? (ec as Json[]).map(String) : null;
  const ev = e.values;
  const av = a.values;
  if (!Array.isArray(ev) || !Array.isArray(av)) {
    compareField(cx, `${path}.values`, field(e, 'values'), field(a, 'values'));
    return;
  }
  compareRows(cx, `${path}.values`, ev, av, columns);
}

function compareRows(cx: Context, path: string, ev: Json[], av: Json[], columns: string[] | null): void {
  const rowPath = (i: number) => `${path}[${i}]`;
  if (ev.length === av.length || columns?.[0] !== 'time') {
    if (ev.length !== av.length) report(cx, path, `${ev.length} rows from ${cx.names[0]}, ${av.length} from ${cx.names[1]}`);
    for (let i = 0; i < Math.min(ev.length, av.length); i++) compareRow(cx, rowPath(i), ev[i], av[i], columns);
    return;
  }
  // Different counts with a time column: match rows by time.
  const timeOf = (row: Json) => (Array.isArray(row) ? JSON.stringify(row[0]) : JSON.stringify(row));
  const at = new Map<string, number>();
  av.forEach((row, i) => at.set(timeOf(row), i));
  const et = new Set(ev.map(timeOf));
  const onlyE = ev.map(timeOf).filter((t) => !at.has(t));
  const onlyA = av.map(timeOf).filter((t) => !et.has(t));
  report(cx, path, `${ev.length} rows from ${cx.names[0]}, ${av.length} from ${cx.names[1]}` +
    (onlyE.length ? `; times only in ${cx.names[0]}: ${list(onlyE)}` : '') +
    (onlyA.length ? `; times only in ${cx.names[1]}: ${list(onlyA)}` : ''));
  ev.forEach((row, i) => {
    const j = at.get(timeOf(row));
    if (j !== undefined) compareRow(cx, rowPath(i), row, av[j], columns);
  });
}

function compareRow(cx: Context, path: string, e: Json, a: Json, columns: string[] | null): void {
  if (!Array.isArray(e) || !Array.isArray(a)) {
    compareValue(cx, path, e, a);
    return;
  }
  if (e.length !== a.length) report(cx, path, `${e.length} cells from ${cx.names[0]}, ${a.length} from ${cx.names[1]}`);
  const time = columns?.[0] === 'time' && e.length > 0 ? ` (time ${JSON.stringify(e[0])})` : '';
  for (let i = 0; i < Math.min(e.length, a.length); i++) {
    const name = columns?.[i] !== undefined ? `.${columns[i]}` : `[${i}]`;
    // Times are exact: epoch ms are about 1.8e12, where 1e-9 relative would let 1.8 s pass.
    compareValue(cx, `${path}${name}`, e[i], a[i], time, columns?.[i] === 'time' ? 0 : cx.rel);
  }
}

/** Keys other than `handled`: present on both sides and equal. */
function compareKeys(cx: Context, path: string, e: Record<string, Json>, a: Record<string, Json>, handled: string[]): void {
  const keys = [...new Set([...Object.keys(e), ...Object.keys(a)])].filter((k) => !handled.includes(k));
  for (const k of keys) compareField(cx, path ? `${path}.${k}` : k, field(e, k), field(a, k));
}

function field(o: Record<string, Json>, key: string): Maybe {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : MISSING;
}

function compareField(cx: Context, path: string, e: Maybe, a: Maybe): void {
  if (e === MISSING && a === MISSING) return;
  if (e === MISSING || a === MISSING) {
    const present = e === MISSING ? a : e;
    const who = e === MISSING ? cx.names[1] : cx.names[0];
    const note = present === null ? ' (null vs missing)' : '';
    report(cx, path, `only ${who} has it: ${short(present as Json)}${note}`);
    return;
  }
  compareValue(cx, path, e, a);
}

function compareValue(cx: Context, path: string, e: Json, a: Json, context = '', rel = cx.rel): void {
  if (typeof e === 'number' && typeof a === 'number') {
    if (!numbersEqual(e, a, rel)) {
      const rel = Math.abs(e - a) / Math.max(Math.abs(e), Math.abs(a));
      report(cx, path, `${cx.names[0]} ${e}, ${cx.names[1]} ${a} (relative difference ${rel.toExponential(2)})${context}`);
    }
    return;
  }
  if (Array.isArray(e) && Array.isArray(a)) {
    if (e.length !== a.length) {
      report(cx, path, `${cx.names[0]} ${short(e)}, ${cx.names[1]} ${short(a)}${context}`);
      return;
    }
    for (let i = 0; i < e.length; i++) compareValue(cx, `${path}[${i}]`, e[i], a[i], context, rel);
    return;
  }
  if (isObject(e) && isObject(a)) {
    compareKeys(cx, path, e, a, []);
    return;
  }
  if (e !== a) report(cx, path, `${cx.names[0]} ${short(e)}, ${cx.names[1]} ${short(a)}${context}`);
}

function numbersEqual(e: number, a: number, rel: number): boolean {
  if (e === a) return true;
  return Math.abs(e - a) <= rel * Math.max(Math.abs(e), Math.abs(a));
}

function short(v: Json): string {
  const text = JSON.stringify(v);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

function list(items: string[]): string {
  const shown = items.slice(0, 8).join(' | ');
  return items.length > 8 ? `${shown} | … (${items.length} in all)` : shown;
}
