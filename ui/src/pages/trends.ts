// The Trends page: find series, pick several, and draw them on one chart over a preset or an
// absolute range, zoomed by dragging, panned, followed live, downloaded as CSV. The URL holds the
// view (trends/model.ts), so every action writes it and a link, Back or Forward redraws the same
// chart. The parts live in ui/src/trends/; this file wires them.

import type { AppContext, View } from '../app.js';
import { h } from '../dom.js';
import { dateTime } from '../format.js';
import { SeriesBrowser } from '../trends/browser.js';
import { fetchBuckets } from '../trends/buckets.js';
import { TrendChart } from '../trends/chart.js';
import { RangeControls } from '../trends/controls.js';
import { downloadCsv } from '../trends/csv.js';
import { LiveTail, type LiveStatus } from '../trends/live.js';
import { keyOf, parseState, presetFor, resolveRange, sameState, stateParams, type Range, type SeriesRef, type TrendState } from '../trends/model.js';
import { PlotData } from '../trends/plot-data.js';

/** The narrowest range a zoom may reach (ms): below it buckets are single milliseconds anyway. */
const MIN_SPAN = 20;
/** A plot this much wider or narrower than the one the data was fetched for asks again. */
const REFETCH_WIDTH_CHANGE = 0.25;
/** Live points held while a fetch runs, at most (they merge into its result). */
const MAX_PENDING = 100_000;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function openTrends(ctx: AppContext, params: URLSearchParams): View {
  let state: TrendState = parseState(params);
  let view = resolveRange(state.range, Date.now());
  const data = new PlotData();
  let fetching: AbortController | null = null;
  let fetchedWidth = 0;
  /** The chart had no width yet when a fetch was due: fetch once it has one. */
  let waitingForWidth = false;
  let announce = false;
  let live: LiveTail | null = null;
  let liveKey = '';
  let liveFilling = false;
  let pending: Array<[string, number, number]> = [];
  let frame = 0;
  let slideTimer: ReturnType<typeof setInterval> | undefined;
  let resizeTimer: ReturnType<typeof setTimeout> | undefined;
  let csvRequest: AbortController | null = null;

  const loadError = h('p', { class: 'error trend-error', role: 'alert' });
  const liveError = h('p', { class: 'error trend-error', role: 'alert' });
  const liveStatus = h('p', { class: 'live-status muted', role: 'status' });

  const span = () => view.to - view.from;
  const absolute = (from: number, to: number): Range => {
    if (to - from < MIN_SPAN) {
      const mid = (from + to) / 2;
      [from, to] = [mid - MIN_SPAN / 2, mid + MIN_SPAN / 2];
    }
    return { from: Math.max(0, Math.round(from)), to: Math.round(to) };
  };
  /** A new view from a user action: into the URL, then drawn. Range changes push (Back undoes them). */
  const commit = (next: TrendState, mode: 'push' | 'replace') => {
    if (sameState(next, state)) return;
    state = next;
    announce = true;
    ctx.setParams(stateParams(state), mode);
    apply();
  };
  const setRange = (range: Range) => {
    const next = { ...state, range, live: state.live && 'preset' in range };
    // The active preset again: the same URL, but "the last hour" has moved on since.
    if (sameState(next, state)) refresh();
    else commit(next, 'push');
  };
  const pan = (direction: -1 | 1) => setRange(absolute(view.from + direction * span() / 2, view.to + direction * span() / 2));

  const chart = new TrendChart({
    zoom: (from, to) => setRange(absolute(from, to)),
    pan,
    scale: (factor) => {
      const mid = (view.from + view.to) / 2;
      setRange(absolute(mid - span() * factor / 2, mid + span() * factor / 2));
    },
    resized: (width) => {
      if (width <= 0) return;
      if (waitingForWidth) refresh();
      else if (fetchedWidth > 0 && Math.abs(width - fetchedWidth) / fetchedWidth > REFETCH_WIDTH_CHANGE) {
        clearTimeout(resizeTimer);
        resizeTimer = setTimeout(refresh, 300);
      }
    },
  });
  chart.el.setAttribute('aria-describedby', 'trend-keys');
  chart.el.dataset.live = 'off';

  const controls = new RangeControls({
    preset: (preset) => setRange({ preset }),
    pan,
    zoomOut: () => setRange(absolute(view.from - span() / 2, view.to + span() / 2)),
    absolute: (from, to) => setRange(absolute(from, to)),
    live: (on) => {
      // Live follows now, so it needs a preset: an absolute range becomes the nearest one.
      const range: Range = on && !('preset' in state.range) ? { preset: presetFor(span()) } : state.range;
      commit({ ...state, range, live: on }, range === state.range ? 'replace' : 'push');
    },
    csv: () => {
      csvRequest?.abort();
      const request = new AbortController();
      csvRequest = request;
      controls.csvBusy(true);
      controls.say('');
      downloadCsv(ctx.api, state.series, view.from, view.to, request.signal).then(
        () => ctx.announce('CSV downloaded'),
        (err: unknown) => { if (!request.signal.aborted) controls.say(`The CSV could not be downloaded: ${message(err)}`); },
      ).finally(() => controls.csvBusy(false));
    },
  });

  const browser = new SeriesBrowser(ctx.api, (series: SeriesRef, on: boolean) => {
    const rest = state.series.filter((s) => keyOf(s) !== keyOf(series));
    commit({ ...state, series: on ? [...rest, series] : rest }, 'replace');
  });

  /** Fetches the buckets of the current view and draws them; a newer call cancels an older one. */
  function refresh(): void {
    fetching?.abort();
    fetching = null;
    clearTimeout(resizeTimer);
    view = resolveRange(state.range, Date.now());
    chart.setView(view.from, view.to);
    controls.show(state, view.from, view.to, data.loaded ? data.w : null);
    loadError.textContent = '';
    if (state.series.length === 0) {
      data.clear();
      return;
    }
    chart.setState('loading');
    const width = Math.floor(chart.plotWidth());
    waitingForWidth = width <= 0;
    if (waitingForWidth) return;
    fetchedWidth = width;
    const request = new AbortController();
    fetching = request;
    const { from, to } = view;
    const series = state.series;
    fetchBuckets(ctx.api, series, from, to, width, request.signal).then((buckets) => {
      if (fetching !== request) return;
      fetching = null;
      data.load(buckets);
      for (const [key, t, v] of pending) data.addLive(key, t, v);
      pending = [];
      chart.draw(data.drawn(series), buckets.w);
      chart.setState('ready');
      controls.show(state, from, to, buckets.w);
      if (liveFilling && live) {
        liveFilling = false;
        chart.el.dataset.live = 'live';
      }
      if (announce) ctx.announce(`Trend from ${dateTime(from)} to ${dateTime(to)}`);
      announce = false;
    }, (err: unknown) => {
      if (fetching !== request) return;
      fetching = null;
      // Nothing of the previous view stays drawn under the new range.
      data.clear();
      chart.draw(data.drawn(series), 0);
      chart.setState('error');
      loadError.textContent = `The trend could not be loaded: ${message(err)}`;
    });
  }

  /** Coalesces live redraws to one per animation frame; a live window slides with now. */
  function scheduleDraw(): void {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      if (!data.loaded || fetching) return;
      if (state.live && 'preset' in state.range) {
        view = resolveRange(state.range, Date.now());
        chart.setView(view.from, view.to);
        data.trim(view.from);
      }
      chart.draw(data.drawn(state.series), data.w);
    });
  }

  const STATUS: Record<LiveStatus, string> = { connecting: 'Live: connecting…', live: 'Live: following new data', retrying: 'Live: connection lost, retrying…', stopped: 'Live: stopped' };

  /** One live tail for the picked series while live is on; a change of series starts a new one. */
  function syncLive(): void {
    const want = state.live && state.series.length > 0 ? state.series.map(keyOf).join('\n') : '';
    if (want === liveKey) return;
    live?.stop();
    live = null;
    liveKey = want;
    liveFilling = false;
    pending = [];
    clearInterval(slideTimer);
    liveError.textContent = '';
    liveStatus.textContent = '';
    chart.el.dataset.live = 'off';
    if (!want) return;
    live = new LiveTail(ctx.api, state.series, {
      points: (collection, tags) => {
        for (const [tag, points] of Object.entries(tags)) {
          const key = keyOf({ collection, tag });
          for (const [t, v] of points) {
            if (!fetching) data.addLive(key, t, v);
            else if (pending.length < MAX_PENDING) pending.push([key, t, v]);
          }
        }
        scheduleDraw();
      },
      // Points written between the last fetch and the subscription would be missing: fetch once
      // more now that nothing can slip between (live points merge idempotently into buckets).
      ready: () => {
        liveFilling = true;
        refresh();
      },
      error: (text) => { liveError.textContent = text; },
      status: (status) => {
        liveStatus.textContent = STATUS[status];
        if (status !== 'live') chart.el.dataset.live = status;
      },
    });
    // With no new points the window still slides.
    slideTimer = setInterval(scheduleDraw, 1000);
  }

  /** Draws `state`: picked series, chart, live tail, data. */
  function apply(): void {
    browser.setPicked(state.series);
    chart.setSeries(state.series);
    syncLive();
    refresh();
  }

  const root = h('section', { class: 'trends-page', 'aria-labelledby': 'trends-title' },
    h('h1', { id: 'trends-title' }, 'Trends'),
    h('div', { class: 'trends' },
      browser.root,
      h('div', { class: 'trend-main' },
        controls.root,
        h('div', { class: 'panel chart-panel' },
          loadError, liveError, chart.root, liveStatus,
          h('p', { id: 'trend-keys', class: 'trend-keys muted' }, 'Drag across the chart to zoom in. With the chart focused: ← and → move, + and − zoom.')))));
  apply();

  return {
    root,
    onParams(next) {
      const nextState = parseState(next);
      if (sameState(nextState, state)) return;
      state = nextState;
      apply();
    },
    dispose() {
      fetching?.abort();
      csvRequest?.abort();
      live?.stop();
      cancelAnimationFrame(frame);
      clearInterval(slideTimer);
      clearTimeout(resizeTimer);
      browser.dispose();
      chart.dispose();
    },
  };
}
