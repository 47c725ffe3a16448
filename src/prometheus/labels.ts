// Prometheus label sets over the historian's series (WIRE.md part 3 "Prometheus compatibility"):
// every visible series carries `__name__` (a remote-written series' own; `<measurement>_<field>`
// for a line protocol series; otherwise its tag name), the four scope labels of its collection,
// and its stored labels. A label set is an array of [name, value] sorted by name, as Prometheus
// keeps them; an empty value means "absent" and is never stored.

import type { SeriesLabels } from '../../shared/protocol.js';

export type Labels = ReadonlyArray<readonly [string, string]>;

export const METRIC_NAME = '__name__';
const SCOPE_LABELS = ['organization', 'site', 'unit', 'grid'] as const;

/** The labels a listed series answers to in PromQL. */
export function seriesLabels(collectionId: string, tag: string, stored: SeriesLabels | undefined): Labels {
  const map = new Map<string, string>();
  if (stored) for (const [k, v] of Object.entries(stored)) if (v !== '') map.set(k, v);
  const scope = collectionId.split('/');
  SCOPE_LABELS.forEach((name, i) => map.set(name, scope[i] ?? ''));
  if (!map.has(METRIC_NAME)) {
    const measurement = stored?.measurement;
    const field = stored?.field;
    map.set(METRIC_NAME, measurement !== undefined && field !== undefined ? `${measurement}_${field}` : tag);
  }
  return fromMap(map);
}

export function fromMap(map: ReadonlyMap<string, string>): Labels {
  const out: Array<[string, string]> = [];
  for (const [k, v] of map) if (v !== '') out.push([k, v]);
  return out.sort(byName);
}

export function fromRecord(record: Readonly<Record<string, string>>): Labels {
  return fromMap(new Map(Object.entries(record)));
}

function byName(a: readonly [string, string], b: readonly [string, string]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

export function get(labels: Labels, name: string): string {
  for (const [k, v] of labels) if (k === name) return v;
  return '';
}

/** A string that is equal for equal label sets (the key of maps and the identity of output series). */
export function keyOf(labels: Labels): string {
  let key = '';
  for (const [k, v] of labels) key += `${k}\u00ff${v}\u00fe`;
  return key;
}

export function withoutName(labels: Labels): Labels {
  return labels.some(([k]) => k === METRIC_NAME) ? labels.filter(([k]) => k !== METRIC_NAME) : labels;
}

/** Only the labels in `names`. */
export function keep(labels: Labels, names: ReadonlySet<string>): Labels {
  return labels.filter(([k]) => names.has(k));
}

/** All but the labels in `names`. */
export function drop(labels: Labels, names: ReadonlySet<string>): Labels {
  return labels.filter(([k]) => !names.has(k));
}

/** `labels` with `name` set to `value` (removed when value is empty). */
export function set(labels: Labels, name: string, value: string): Labels {
  const out = labels.filter(([k]) => k !== name);
  if (value !== '') out.push([name, value]);
  return out.sort(byName);
}

/** `{a="1", b="2"}` as Prometheus prints a label set in its messages. */
export function formatLabels(labels: Labels): string {
  return `{${labels.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}}`;
}

/** The object form of the JSON answers. */
export function toObject(labels: Labels): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of labels) out[k] = v;
  return out;
}
