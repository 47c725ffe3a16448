// The range toolbar: presets, earlier/later/zoom out, an absolute range, live tail and CSV. Plain
// buttons and a form, so every action is reachable with Tab and Enter/Space; aria-pressed tells
// which preset and whether live is on.

import { h, replace } from '../dom.js';
import { dateTime, duration, localInput } from '../format.js';
import { PRESET_NAMES, type Preset, type TrendState } from './model.js';

export interface ControlActions {
  preset(preset: Preset): void;
  pan(direction: -1 | 1): void;
  zoomOut(): void;
  absolute(from: number, to: number): void;
  live(on: boolean): void;
  csv(): void;
}

const PRESET_TITLES: Record<Preset, string> = {
  '15m': 'Last 15 minutes', '1h': 'Last hour', '8h': 'Last 8 hours', '24h': 'Last 24 hours',
  '7d': 'Last 7 days', '30d': 'Last 30 days', '1y': 'Last year',
};

export class RangeControls {
  readonly root: HTMLElement;
  private readonly presets = new Map<Preset, HTMLButtonElement>();
  private readonly from = h('input', { type: 'datetime-local', id: 'trend-from', step: 1, required: true });
  private readonly to = h('input', { type: 'datetime-local', id: 'trend-to', step: 1, required: true });
  // The dot is aria-hidden, so the button's name stays exactly "Live" (aria-pressed tells the state).
  private readonly liveButton = h('button', { type: 'button', 'aria-pressed': 'false', class: 'live-toggle' }, h('span', { class: 'live-dot', 'aria-hidden': 'true' }), 'Live');
  private readonly csvButton = h('button', { type: 'button' }, 'Download CSV');
  private readonly moveButtons: HTMLButtonElement[];
  private readonly message = h('p', { class: 'error', role: 'alert' });
  private readonly summary = h('p', { class: 'range-summary muted' });

  constructor(private readonly actions: ControlActions) {
    const presetGroup = h('div', { class: 'row presets', role: 'group', 'aria-label': 'Range presets' });
    for (const p of PRESET_NAMES) {
      const b = h('button', { type: 'button', 'aria-pressed': 'false', title: PRESET_TITLES[p] }, p);
      b.addEventListener('click', () => actions.preset(p));
      this.presets.set(p, b);
      presetGroup.append(b);
    }
    const button = (label: string, title: string, act: () => void) => {
      const b = h('button', { type: 'button', title }, label);
      b.addEventListener('click', act);
      return b;
    };
    this.moveButtons = [
      button('Earlier', 'Half a range earlier (← on the chart)', () => actions.pan(-1)),
      button('Later', 'Half a range later (→ on the chart)', () => actions.pan(1)),
      button('Zoom out', 'Twice the range (− on the chart)', () => actions.zoomOut()),
    ];
    const form = h('form', { class: 'row absolute', 'aria-label': 'Absolute range' },
      h('label', { for: 'trend-from' }, 'From'), this.from,
      h('label', { for: 'trend-to' }, 'To'), this.to,
      h('button', { type: 'submit' }, 'Apply'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const from = new Date(this.from.value).getTime();
      const to = new Date(this.to.value).getTime();
      if (!Number.isFinite(from) || !Number.isFinite(to)) this.say('Enter both times of the absolute range.');
      else if (from >= to) this.say('The range must end after it starts.');
      else {
        this.say('');
        actions.absolute(from, to);
      }
    });
    this.liveButton.addEventListener('click', () => actions.live(this.liveButton.getAttribute('aria-pressed') !== 'true'));
    this.csvButton.addEventListener('click', () => actions.csv());
    this.root = h('div', { class: 'panel trend-controls' },
      presetGroup,
      h('div', { class: 'row moves', role: 'group', 'aria-label': 'Move the range' }, ...this.moveButtons, this.liveButton, this.csvButton),
      form, this.summary, this.message);
  }

  /** Shows `state` with its range resolved to [from, to] and the chart's bucket width. */
  show(state: TrendState, from: number, to: number, bucketMs: number | null): void {
    const preset = 'preset' in state.range ? state.range.preset : null;
    for (const [p, b] of this.presets) b.setAttribute('aria-pressed', String(p === preset));
    this.liveButton.setAttribute('aria-pressed', String(state.live));
    this.liveButton.title = state.live ? 'Stop following new data' : preset ? 'Follow new data as it arrives' : 'Follow new data (switches to the nearest preset)';
    const empty = state.series.length === 0;
    this.csvButton.disabled = empty;
    this.liveButton.disabled = empty;
    // Typing a range must not be overwritten by a redraw under the cursor.
    if (document.activeElement !== this.from) this.from.value = localInput(from);
    if (document.activeElement !== this.to) this.to.value = localInput(to);
    replace(this.summary,
      `${dateTime(from)} – ${dateTime(to)} (${preset ? PRESET_TITLES[preset].toLowerCase() : duration(to - from)})`,
      bucketMs ? ` · ${duration(bucketMs)} buckets` : '');
  }

  /** A message about the controls (a bad absolute range, a failed download); '' clears it. */
  say(text: string): void {
    this.message.textContent = text;
  }

  csvBusy(busy: boolean): void {
    this.csvButton.disabled = busy;
    this.csvButton.setAttribute('aria-busy', String(busy));
  }
}
