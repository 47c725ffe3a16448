// What a trend view is, and how it reads from and writes to the URL (ui/README.md "Pages and the
// URL"): the series, the range (a preset relative to now, or absolute epoch ms) and live tail.
// The URL is the one source of truth, so a link or Back reopens exactly the same chart.

/** One stored series: its collection id `org/site/unit/grid` and its tag name. */
export interface SeriesRef {
  readonly collection: string;
  readonly tag: string;
}

/** The scope fields of a collection id, as every query and subscription names them. */
export interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

export const PRESETS = {
  '15m': 15 * 60_000,
  '1h': 3_600_000,
  '8h': 8 * 3_600_000,
  '24h': 24 * 3_600_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
  '1y': 365 * 86_400_000,
} as const;
export type Preset = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as Preset[];
export const DEFAULT_PRESET: Preset = '1h';

export type Range = { preset: Preset } | { from: number; to: number };

export interface TrendState {
  series: SeriesRef[];
  range: Range;
  /** Live tail; only ever true with a preset range. */
  live: boolean;
}

/** `org/site/unit/grid/tag`: the tag is everything after the fourth slash, so it may hold `/`. */
export const keyOf = (s: SeriesRef): string => `${s.collection}/${s.tag}`;

export function parseKey(text: string): SeriesRef | null {
  const parts = text.split('/');
  if (parts.length < 5 || parts.slice(0, 4).some((p) => p === '')) return null;
  const tag = parts.slice(4).join('/');
  return tag ? { collection: parts.slice(0, 4).join('/'), tag } : null;
}

export function scopeOf(collection: string): Scope {
  const [organization = '', site = '', unit = '', grid = ''] = collection.split('/');
  return { organization, site, unit, grid };
}

/** `TI-101 (acme/north/boiler/g1)`: how a series is named to people and screen readers. */
export const describe = (s: SeriesRef): string => `${s.tag} (${s.collection})`;

const isPreset = (text: string | null): text is Preset => text !== null && Object.hasOwn(PRESETS, text);

/** Epoch ms from a URL parameter, or null when it is not a whole non-negative number. */
function msParam(text: string | null): number | null {
  if (text === null || !/^\d{1,16}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

/** The view a URL asks for; anything unreadable falls back to the defaults rather than failing. */
export function parseState(params: URLSearchParams): TrendState {
  const seen = new Set<string>();
  const series: SeriesRef[] = [];
  for (const text of params.getAll('s')) {
    const ref = parseKey(text);
    if (ref && !seen.has(keyOf(ref))) {
      seen.add(keyOf(ref));
      series.push(ref);
    }
  }
  const from = msParam(params.get('from'));
  const to = msParam(params.get('to'));
  const preset = params.get('range');
  let range: Range;
  if (from !== null && to !== null && from < to) range = { from, to };
  else range = { preset: isPreset(preset) ? preset : DEFAULT_PRESET };
  return { series, range, live: 'preset' in range && params.get('live') === '1' };
}

export function stateParams(state: TrendState): URLSearchParams {
  const params = new URLSearchParams();
  for (const s of state.series) params.append('s', keyOf(s));
  if ('preset' in state.range) params.set('range', state.range.preset);
  else {
    params.set('from', String(state.range.from));
    params.set('to', String(state.range.to));
  }
  if (state.live && 'preset' in state.range) params.set('live', '1');
  return params;
}

/** The range in epoch ms as of `now`. */
export function resolveRange(range: Range, now: number): { from: number; to: number } {
  return 'preset' in range ? { from: now - PRESETS[range.preset], to: now } : { from: range.from, to: range.to };
}

/** The smallest preset at least `span` long (the longest when none is): where live goes from an absolute range. */
export function presetFor(span: number): Preset {
  return PRESET_NAMES.find((p) => PRESETS[p] >= span) ?? '1y';
}

export function sameState(a: TrendState, b: TrendState): boolean {
  return stateParams(a).toString() === stateParams(b).toString();
}
