// Pieces the Alarms, Notifications and System pages share: a panel (its own heading, state and
// error line, so one failing section never blanks the others), data tables whose cells may carry
// a class or id (`table()` in dom.ts has plain cells), key/value tables, severity badges and
// "when" cells. Every node comes from h(), so server text stays text.

import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { ago, dateTime } from '../format.js';

type Content = Node | string | number | null | undefined | false;

/** A cell with attributes (class `num`, an id for aria-describedby), or plain content. */
export interface Cell {
  content: Content | Content[];
  class?: string;
  id?: string;
  title?: string;
}

export const cell = (content: Cell['content'], attrs: Omit<Cell, 'content'> = {}): Cell => ({ content, ...attrs });

export interface Column {
  label: string;
  /** `num` right-aligns figures; `wrap` lets long text wrap (other cells stay on one line). */
  class?: string;
}

const isCell = (c: unknown): c is Cell => typeof c === 'object' && c !== null && !(c instanceof Node) && 'content' in c;

export interface TableOptions {
  /** Attributes of each body row (data-* for tests and styles). */
  rowAttrs?: (index: number) => Record<string, string>;
  /**
   * On a phone each row becomes a card of "label value" lines (console.css), so the row's
   * action is on screen without scrolling sideways. Explicit table roles keep the table a table
   * for screen readers when CSS changes its display.
   */
  stack?: boolean;
}

/** A table in a horizontally scrolling box, so a narrow phone scrolls the table and not the page. */
export function dataTable(caption: string, columns: Column[], rows: Array<Array<Cell | Content>>, options: TableOptions = {}): HTMLElement {
  const role = (r: string) => (options.stack ? r : undefined);
  const body = rows.map((cells, i) => h('tr', { ...options.rowAttrs?.(i), role: role('row') }, ...cells.map((c, j) => {
    const col = columns[j];
    const attrs = isCell(c) ? { class: [col?.class, c.class].filter(Boolean).join(' ') || undefined, id: c.id, title: c.title } : { class: col?.class };
    const content = isCell(c) ? c.content : c;
    const parts = Array.isArray(content) ? content : [content];
    // Stacked: the label comes from data-label, the value stays one box beside it.
    return options.stack
      ? h('td', { ...attrs, role: 'cell', 'data-label': col?.label }, h('div', { class: 'cell-value' }, ...parts))
      : h('td', attrs, ...parts);
  })));
  return h('div', { class: 'scroll' }, h('table', { class: options.stack ? 'data stack' : 'data', role: role('table') },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', { role: role('rowgroup') }, h('tr', { role: role('row') }, ...columns.map((c) => h('th', { scope: 'col', class: c.class, role: role('columnheader') }, c.label)))),
    h('tbody', { role: role('rowgroup') }, ...body),
  ));
}

/** Facts as a two-column table: the name is a row header, so screen readers read "name: value". */
export function kvTable(caption: string, rows: Array<[string, Content | Content[]]>): HTMLElement {
  return h('div', { class: 'scroll' }, h('table', { class: 'kv' },
    h('caption', { class: 'visually-hidden' }, caption),
    h('tbody', {}, ...rows.map(([name, content]) => h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, ...(Array.isArray(content) ? content : [content]))))),
  ));
}

const counter = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
/** A whole count with the reader's digit grouping (12,345,678). */
export const count = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : counter.format(n));

export function sevBadge(severity: string): HTMLElement {
  const known = ['info', 'warn', 'error', 'critical'].includes(severity) ? severity : 'info';
  return h('span', { class: `sev sev-${known}` }, severity);
}

/** Local time, then how long ago on a second line; the full time stays in the title. */
export function when(ms: number | null | undefined): Content[] {
  if (ms === null || ms === undefined) return ['—'];
  return [h('time', { datetime: new Date(ms).toISOString() }, dateTime(ms)), h('span', { class: 'ago', 'data-ms': ms }, ago(ms))];
}

/** Brings every "x min ago" under `root` up to now, in place (no redraw, so focus and reading position stay). */
export function updateAgo(root: HTMLElement): void {
  for (const span of root.querySelectorAll<HTMLElement>('span.ago[data-ms]')) {
    const text = ago(Number(span.dataset.ms));
    if (span.textContent !== text) span.textContent = text;
  }
}

export const errorText = (err: unknown): string =>
  err instanceof ApiError ? `${err.message} (${err.status})` : err instanceof Error ? err.message : String(err);

/** Sets a text only when it changes: rewriting a live region with the same words makes screen readers repeat them. */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

export const isAbort = (err: unknown): boolean => err instanceof DOMException && err.name === 'AbortError';

/** A section of a page: a heading, a body replaced on each load, and its own error line. */
export class Panel {
  readonly root: HTMLElement;
  readonly heading: HTMLHeadingElement;
  readonly body: HTMLElement;
  private readonly error: HTMLElement;
  /** What was last drawn, so an unchanged answer does not redraw (and steal no focus or scroll). */
  private drawn: string | null = null;

  constructor(id: string, title: string, ...tools: Content[]) {
    this.heading = h('h2', { id: `${id}-title`, tabindex: -1 }, title);
    this.error = h('p', { class: 'error', role: 'alert' });
    this.body = h('div', { class: 'panel-body' });
    this.root = h('section', { class: 'panel', id, 'aria-labelledby': `${id}-title`, 'data-state': 'loading', 'aria-busy': 'true' },
      h('div', { class: 'panel-head' }, this.heading, ...tools), this.error, this.body);
  }

  /** Draws `build()` unless `key` (the data it draws) is what is already shown. */
  show(key: string, build: () => Content[]): void {
    this.setError('');
    this.root.dataset.state = 'ready';
    this.root.removeAttribute('aria-busy');
    if (key !== this.drawn) {
      this.drawn = key;
      keepFocus(this.body, () => replace(this.body, ...build()));
    }
    updateAgo(this.body);
  }

  /** Shows a failure in this panel only; the last data drawn stays, marked as possibly stale. */
  fail(err: unknown, what: string): void {
    if (isAbort(err)) return;
    this.root.dataset.state = 'error';
    this.root.removeAttribute('aria-busy');
    this.setError(`${what}: ${errorText(err)}`);
  }

  setError(text: string): void {
    setText(this.error, text);
    this.error.hidden = text === '';
  }
}

/** Keeps keyboard focus on "the same" control across a redraw: the control carries `data-focus-key`. */
export function keepFocus(within: HTMLElement, redraw: () => void): void {
  const active = document.activeElement;
  const key = active instanceof HTMLElement && within.contains(active) ? active.dataset.focusKey : undefined;
  redraw();
  if (!key) return;
  const again = [...within.querySelectorAll<HTMLElement>('[data-focus-key]')].find((el) => el.dataset.focusKey === key);
  again?.focus();
}
