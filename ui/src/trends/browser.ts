// The series browser: a glob search over GET /svcapi/series (only what the signed-in user may
// see: the server filters, the console never widens it), a collection filter, each result with
// its last value and time and a checkbox, and the picked series as removable chips.

import type { Api } from '../api.js';
import { h, replace } from '../dom.js';
import { ago, dateTime, value as formatValue } from '../format.js';
import { PALETTE_SIZE } from './chart.js';
import { describe, keyOf, type SeriesRef } from './model.js';

const PAGE = 100;
const DEBOUNCE_MS = 250;

interface Listed {
  collection: string;
  tag: string;
  last_ms: number | null;
  last_value: number | null;
}

interface Listing {
  series: Listed[];
  total: number;
  has_more: boolean;
}

interface CollectionRecord {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

/** A plain word searches as `*word*`; a glob (`*`, `?`) is sent as typed; nothing is `*`. */
export function globOf(text: string): string {
  const t = text.trim();
  if (!t) return '*';
  return /[*?]/.test(t) ? t : `*${t}*`;
}

export class SeriesBrowser {
  readonly root: HTMLElement;
  private readonly search = h('input', { type: 'search', id: 'series-search', autocomplete: 'off', spellcheck: 'false', placeholder: 'TI-* or a word' });
  private readonly collection = h('select', { id: 'series-collection' }, h('option', { value: '' }, 'All collections'));
  private readonly count = h('p', { class: 'series-count muted', role: 'status' });
  private readonly error = h('p', { class: 'error', role: 'alert' });
  private readonly results = h('ul', { class: 'series-results', 'aria-label': 'Matching series' });
  private readonly chips = h('ul', { class: 'chips', 'aria-label': 'Picked series' });
  private picked: SeriesRef[] = [];
  private listed: Listed[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private request: AbortController | null = null;

  constructor(private readonly api: Api, private readonly toggle: (s: SeriesRef, on: boolean) => void) {
    this.root = h('section', { class: 'panel series-browser', 'aria-labelledby': 'series-title' },
      h('h2', { id: 'series-title' }, 'Series'),
      h('div', { class: 'field' }, h('label', { for: 'series-search' }, 'Search series'), this.search),
      h('div', { class: 'field' }, h('label', { for: 'series-collection' }, 'Collection'), this.collection),
      this.count, this.error,
      h('div', { class: 'series-list' }, this.results),
      h('h3', { class: 'picked-title' }, 'Picked'),
      this.chips,
    );
    this.search.addEventListener('input', () => this.schedule());
    // Enter searches at once instead of waiting out the debounce.
    this.search.addEventListener('keydown', (event) => { if (event.key === 'Enter') { event.preventDefault(); this.run(); } });
    this.collection.addEventListener('change', () => this.run());
    this.renderChips();
    void this.loadCollections();
    this.run();
  }

  /** The picked series (from the URL): chips and checkboxes follow. */
  setPicked(series: readonly SeriesRef[]): void {
    this.picked = [...series];
    this.renderChips();
    this.renderResults();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.request?.abort();
  }

  private async loadCollections(): Promise<void> {
    try {
      const records = await this.api.get<CollectionRecord[]>('/svcapi/collection');
      const ids = records.map((r) => `${r.organization}/${r.site}/${r.unit}/${r.grid}`).sort();
      for (const id of ids) this.collection.append(h('option', { value: id }, id));
    } catch (err) {
      this.error.textContent = `Collections could not be listed: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), DEBOUNCE_MS);
  }

  private run(): void {
    clearTimeout(this.timer);
    this.request?.abort();
    const request = new AbortController();
    this.request = request;
    const query = { match: globOf(this.search.value), collection: this.collection.value || undefined, limit: PAGE };
    this.root.setAttribute('aria-busy', 'true');
    this.api.get<Listing>('/svcapi/series', query, request.signal).then((listing) => {
      if (request.signal.aborted) return;
      this.listed = listing.series;
      this.error.textContent = '';
      this.count.textContent = `${listing.series.length} of ${listing.total} series${listing.has_more ? ' (more match: narrow the search)' : ''}`;
      this.renderResults();
    }, (err: unknown) => {
      if (request.signal.aborted) return;
      this.error.textContent = `Search failed: ${err instanceof Error ? err.message : String(err)}`;
    }).finally(() => {
      if (this.request === request) this.root.removeAttribute('aria-busy');
    });
  }

  private renderResults(): void {
    const picked = new Set(this.picked.map(keyOf));
    replace(this.results, ...this.listed.map((s) => {
      const ref = { collection: s.collection, tag: s.tag };
      const box = h('input', { type: 'checkbox', 'aria-label': describe(ref), checked: picked.has(keyOf(ref)) });
      box.addEventListener('change', () => this.toggle(ref, box.checked));
      return h('li', {},
        h('label', { class: 'series-item' }, box,
          h('span', { class: 'series-name' }, h('span', { class: 'series-tag' }, s.tag), h('span', { class: 'series-collection muted' }, s.collection)),
          h('span', { class: 'series-last', title: s.last_ms === null ? 'no value yet' : ago(s.last_ms) },
            h('span', { class: 'series-value' }, formatValue(s.last_value)), h('span', { class: 'series-time muted' }, dateTime(s.last_ms)))));
    }));
    if (this.listed.length === 0) this.results.append(h('li', { class: 'muted' }, 'No series match.'));
  }

  private renderChips(): void {
    replace(this.chips, ...this.picked.map((s, i) => {
      const remove = h('button', { type: 'button', class: 'chip-remove quiet', 'aria-label': `Remove ${describe(s)}`, title: 'Remove' }, '×');
      remove.addEventListener('click', () => {
        this.toggle(s, false);
        // The button is gone: keep the keyboard in the chips (the next one), else the search box.
        const next = this.chips.querySelectorAll<HTMLButtonElement>('.chip-remove')[Math.min(i, this.picked.length - 1)];
        (next ?? this.search).focus();
      });
      return h('li', { class: 'chip', title: describe(s) },
        h('span', { class: `swatch swatch-${(i % PALETTE_SIZE) + 1}`, 'aria-hidden': 'true' }),
        h('span', { class: 'chip-tag' }, s.tag), h('span', { class: 'chip-collection muted' }, s.collection), remove);
    }));
    if (this.picked.length === 0) this.chips.append(h('li', { class: 'muted' }, 'None yet.'));
  }
}
