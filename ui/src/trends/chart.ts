// The trend chart: one uPlot with several series and a legend, drag-to-zoom on x, ←/→ pan and
// +/− zoom from the keyboard, sized by its container. It only draws what it is given; fetching,
// the URL and live data are the page's. The element carries the README's contract: role img
// with a name listing its series, data-state and data-points (plus the drawn range and value
// extent, which the browser test compares with what it wrote).

import uPlot from 'uplot';
import { h } from '../dom.js';
import { dateTime, value as formatValue } from '../format.js';
import { describe, type SeriesRef } from './model.js';
import type { Drawn } from './plot-data.js';

export const PALETTE_SIZE = 8;

export interface ChartActions {
  /** A range dragged across the plot (epoch ms). */
  zoom(from: number, to: number): void;
  /** ←/→: half a range earlier (-1) or later (1). */
  pan(direction: -1 | 1): void;
  /** +/−: the range times `factor` around its middle. */
  scale(factor: number): void;
  /** The plot's width changed (CSS px): the page decides whether to refetch. */
  resized(plotWidth: number): void;
}

export type ChartState = 'loading' | 'ready' | 'error';

const css = (name: string, fallback: string): string => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

/** Colour of the i-th series (the same custom properties colour the chips, so both themes match). */
export const seriesColor = (i: number): string => css(`--series-${(i % PALETTE_SIZE) + 1}`, '#1f6fb5');

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/**
 * Time axis labels in the console's 24-hour local time (uPlot's default is 12-hour): as fine as
 * the tick step, with the date under the first tick of each day.
 */
function timeLabels(_u: uPlot, splits: number[], _axis: number, _space: number, step: number): string[] {
  return splits.map((t, i) => {
    const d = new Date(t);
    const date = `${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    if (step >= 28 * 86_400_000) return `${d.getFullYear()}-${pad(d.getMonth() + 1)}`;
    if (step >= 86_400_000) return i === 0 || new Date(splits[i - 1]!).getFullYear() !== d.getFullYear() ? `${date}\n${d.getFullYear()}` : date;
    let time = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    if (step < 60_000) time += `:${pad(d.getSeconds())}`;
    if (step < 1000) time += `.${pad(d.getMilliseconds(), 3)}`;
    const newDay = i === 0 || new Date(splits[i - 1]!).toDateString() !== d.toDateString();
    return newDay ? `${time}\n${date}` : time;
  });
}

export class TrendChart {
  /** The box the page places: the chart, or a hint when nothing is picked. */
  readonly root: HTMLElement;
  /** role=img: the element the tests and screen readers find by its name. */
  readonly el: HTMLElement;
  private readonly hint: HTMLElement;
  private plot: uPlot | null = null;
  private series: SeriesRef[] = [];
  private view = { from: 0, to: 1 };
  private drawn: Drawn | null = null;
  private readonly observer: ResizeObserver;
  private readonly dark = matchMedia('(prefers-color-scheme: dark)');
  private readonly rebuild = () => this.build();

  constructor(private readonly actions: ChartActions) {
    this.el = h('div', {
      class: 'trend-chart', role: 'img', tabindex: 0, 'data-state': 'loading', 'data-points': 0,
      'aria-keyshortcuts': 'ArrowLeft ArrowRight + -', hidden: true,
    });
    this.hint = h('p', { class: 'trend-hint muted' }, 'Pick one or more series to draw a trend.');
    this.root = h('div', { class: 'chart-box' }, this.hint, this.el);
    this.el.addEventListener('keydown', (event) => this.key(event));
    this.observer = new ResizeObserver(() => this.fit());
    this.observer.observe(this.root);
    // Axis and grid colours are read once per uPlot: a theme change builds a new one.
    this.dark.addEventListener('change', this.rebuild);
  }

  /** The series to draw, in legend order; an empty list shows the hint instead of a chart. */
  setSeries(series: readonly SeriesRef[]): void {
    const same = series.length === this.series.length && series.every((s, i) => s.collection === this.series[i]!.collection && s.tag === this.series[i]!.tag);
    if (same) return;
    this.series = [...series];
    this.drawn = null;
    this.el.hidden = series.length === 0;
    this.hint.hidden = series.length > 0;
    this.el.setAttribute('aria-label', `Trend of ${series.map(describe).join(', ')}`);
    this.build();
  }

  setView(from: number, to: number): void {
    this.view = { from, to };
    this.el.dataset.from = String(Math.round(from));
    this.el.dataset.to = String(Math.round(to));
  }

  setState(state: ChartState): void {
    this.el.dataset.state = state;
    this.el.setAttribute('aria-busy', String(state === 'loading'));
  }

  /** Draws `drawn` (x range: the view) and updates the element's counters. */
  draw(drawn: Drawn, bucketMs: number): void {
    this.drawn = drawn;
    const d = this.el.dataset;
    d.points = String(drawn.points);
    d.bucketMs = String(bucketMs);
    d.gaps = drawn.gaps.join(',');
    if (drawn.yMin === null) {
      delete d.yMin;
      delete d.yMax;
    } else {
      d.yMin = String(drawn.yMin);
      d.yMax = String(drawn.yMax);
    }
    if (this.plot) {
      this.plot.setData(drawn.data);
      this.restLegend(this.plot);
    }
  }

  /** The plot area's width in CSS px (0 before it is laid out): how many buckets to ask for. */
  plotWidth(): number {
    return this.plot ? this.plot.over.getBoundingClientRect().width : 0;
  }

  dispose(): void {
    this.observer.disconnect();
    this.dark.removeEventListener('change', this.rebuild);
    this.plot?.destroy();
    this.plot = null;
  }

  private size(): { width: number; height: number } {
    const width = Math.floor(this.el.clientWidth);
    return { width, height: Math.round(Math.max(220, Math.min(420, width * 0.42))) };
  }

  private fit(): void {
    const { width, height } = this.size();
    if (width <= 0 || this.series.length === 0) return;
    if (!this.plot) this.build();
    else if (width !== this.plot.width || height !== this.plot.height) this.plot.setSize({ width, height });
  }

  private build(): void {
    this.plot?.destroy();
    this.plot = null;
    const { width, height } = this.size();
    if (width <= 0 || this.series.length === 0) return;
    const text = css('--text', '#1b2129');
    const grid = css('--grid', 'rgba(0,0,0,.08)');
    const font = `12px ${getComputedStyle(document.body).fontFamily || 'system-ui'}`;
    const tags = this.series.map((s) => s.tag);
    const colors = this.series.map((_s, i) => seriesColor(i));
    const axis: uPlot.Axis = { stroke: text, font, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts: uPlot.Options = {
      width, height, ms: 1,
      legend: { live: true, markers: { fill: (_u, i) => colors[i - 1] ?? 'transparent' } },
      cursor: { drag: { x: true, y: false, setScale: false, dist: 5 }, focus: { prox: 24 } },
      scales: { x: { time: true, range: () => [this.view.from, this.view.to] } },
      series: [
        { label: 'Time', value: (_u, v) => (v === null || v === undefined ? '—' : dateTime(v)) },
        ...this.series.map((s, i): uPlot.Series => ({
          // A tag name alone, unless two collections hold the same one.
          label: tags.indexOf(s.tag) === tags.lastIndexOf(s.tag) ? s.tag : describe(s),
          stroke: colors[i], width: 1.5, spanGaps: false,
          value: (_u, v) => formatValue(v),
        })),
      ],
      axes: [
        { ...axis, values: timeLabels },
        { ...axis, size: (_u, values) => 18 + 7.5 * Math.max(3, ...(values ?? []).map((v) => String(v).length)) },
      ],
      hooks: {
        // uPlot lays itself out in a microtask: the plot's width is known from here on.
        setSize: [() => this.actions.resized(this.plotWidth())],
        setSelect: [(u) => this.selected(u)],
        // With the cursor off the plot, the legend shows each series' latest value instead of blanks.
        setLegend: [(u) => { if (u.cursor.idx === null || u.cursor.idx === undefined) this.restLegend(u); }],
      },
    };
    this.plot = new uPlot(opts, this.drawn?.data ?? [[], ...this.series.map(() => [])], this.el);
    this.restLegend(this.plot);
  }

  private restLegend(u: uPlot): void {
    if (!this.drawn || (u.cursor.left ?? -1) >= 0) return;
    u.setLegend({ idxs: this.drawn.lastIdx }, false);
  }

  private selected(u: uPlot): void {
    const { left, width } = u.select;
    if (width < 5) return;
    const from = u.posToVal(left, 'x');
    const to = u.posToVal(left + width, 'x');
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (to > from) this.actions.zoom(Math.round(from), Math.round(to));
  }

  private key(event: KeyboardEvent): void {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === 'ArrowLeft') this.actions.pan(-1);
    else if (event.key === 'ArrowRight') this.actions.pan(1);
    else if (event.key === '+' || event.key === '=') this.actions.scale(0.5);
    else if (event.key === '-' || event.key === '_') this.actions.scale(2);
    else return;
    event.preventDefault();
  }
}
