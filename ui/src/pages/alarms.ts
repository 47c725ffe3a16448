// The Alarms page: the unresolved events (acknowledge them with the user's own token), and the
// recent events with a status filter and paging. Live: a `monitor` notification on the console's
// stream reloads both (debounced), and a 15 s poll catches what a dropped stream would miss.
// The server decides who may acknowledge; the button is only hidden from read-only users.

import type { AppContext, View } from '../app.js';
import { h } from '../dom.js';
import { dateTime, value } from '../format.js';
import { cell, dataTable, errorText, Panel, setText, sevBadge, when, type Column } from '../status/parts.js';
import { repeat } from '../status/repeat.js';

/** WIRE.md part 2 "Monitor": an alarm event. */
interface AlarmEvent {
  id: string;
  rule_id: string;
  collection_id: string;
  tag: string;
  kind: 'high' | 'low' | 'stale';
  status: 'active' | 'acknowledged' | 'resolved';
  severity: string;
  value: number | null;
  limit: number | null;
  started_ms: number;
  resolved_ms: number | null;
  acked_ms: number | null;
  acked_by: string | null;
  message: string;
}

const EVENTS = '/svcapi/monitor/alarm/events';
const POLL_MS = 15_000;
/** Notifications come in bursts (several tags of one tick): one reload after the burst. */
const DEBOUNCE_MS = 300;
const PAGE_SIZE = 50;
const RANGES: Record<string, { ms: number; label: string }> = {
  '1h': { ms: 3_600_000, label: 'Last hour' },
  '24h': { ms: 86_400_000, label: 'Last 24 hours' },
  '7d': { ms: 7 * 86_400_000, label: 'Last 7 days' },
  '30d': { ms: 30 * 86_400_000, label: 'Last 30 days' },
};
const STATUSES: Array<[string, string]> = [['', 'Any status'], ['unresolved', 'Unresolved'], ['active', 'Active'], ['acknowledged', 'Acknowledged'], ['resolved', 'Resolved']];

interface Filter { status: string; range: string; offset: number }

function filterOf(params: URLSearchParams): Filter {
  const status = params.get('status') ?? '';
  const range = params.get('range') ?? '24h';
  const offset = Number(params.get('offset') ?? 0);
  return {
    status: STATUSES.some(([v]) => v === status) ? status : '',
    range: range in RANGES ? range : '24h',
    offset: Number.isInteger(offset) && offset > 0 ? offset : 0,
  };
}

const stateBadge = (status: string) => h('span', { class: `alarm-state alarm-${status}` }, status);
const figure = (v: number | null) => cell(value(v), { title: v === null ? undefined : String(v) });
const ackedBy = (e: AlarmEvent) => (e.acked_by ? [h('span', {}, e.acked_by), h('span', { class: 'sub' }, dateTime(e.acked_ms))] : '—');

export function openAlarms(ctx: AppContext, params: URLSearchParams): View {
  let filter = filterOf(params);
  let lastActiveCount: number | null = null;
  /** Events whose acknowledgement is on its way: their button stays disabled across redraws. */
  const pending = new Set<string>();

  const updated = h('span', { class: 'muted updated' });
  const refreshButton = h('button', { type: 'button', onclick: () => poll.soon(0) }, 'Refresh');
  const activeCount = h('span', { class: 'muted' });
  const active = new Panel('alarms-active', 'Active events', activeCount);
  const ackError = h('p', { class: 'error', role: 'alert', hidden: true });
  active.root.insertBefore(ackError, active.body);

  const statusSelect = h('select', { id: 'alarms-status' }, ...STATUSES.map(([v, label]) => h('option', { value: v }, label)));
  const rangeSelect = h('select', { id: 'alarms-range' }, ...Object.entries(RANGES).map(([v, r]) => h('option', { value: v }, r.label)));
  const recent = new Panel('alarms-recent', 'Recent events',
    h('div', { class: 'row filters' },
      h('span', { class: 'field' }, h('label', { for: 'alarms-status' }, 'Status'), statusSelect),
      h('span', { class: 'field' }, h('label', { for: 'alarms-range' }, 'Period'), rangeSelect)));
  const previous = h('button', { type: 'button' }, 'Previous');
  const next = h('button', { type: 'button' }, 'Next');
  const pageInfo = h('span', { class: 'muted', 'aria-live': 'polite' });
  recent.root.append(h('div', { class: 'row pager' }, previous, next, pageInfo));

  const showFilter = () => {
    statusSelect.value = filter.status;
    rangeSelect.value = filter.range;
  };
  const setFilter = (change: Partial<Filter>) => {
    filter = { ...filter, ...change };
    const p = new URLSearchParams();
    if (filter.status) p.set('status', filter.status);
    if (filter.range !== '24h') p.set('range', filter.range);
    if (filter.offset) p.set('offset', String(filter.offset));
    ctx.setParams(p, 'replace');
    poll.soon(0);
  };
  statusSelect.addEventListener('change', () => setFilter({ status: statusSelect.value, offset: 0 }));
  rangeSelect.addEventListener('change', () => setFilter({ range: rangeSelect.value, offset: 0 }));
  previous.addEventListener('click', () => setFilter({ offset: Math.max(0, filter.offset - PAGE_SIZE) }));
  next.addEventListener('click', () => setFilter({ offset: filter.offset + PAGE_SIZE }));
  showFilter();

  const acknowledge = async (event: AlarmEvent, button: HTMLButtonElement) => {
    const buttons = [...active.body.querySelectorAll('button[data-ack]')];
    const place = buttons.indexOf(button);
    pending.add(event.id);
    button.disabled = true;
    ackError.hidden = true;
    try {
      await ctx.api.send('POST', `${EVENTS}/${encodeURIComponent(event.id)}/ack`);
      ctx.announce(`Acknowledged ${event.tag}`);
    } catch (err) {
      ackError.textContent = `Could not acknowledge ${event.tag}: ${errorText(err)}`;
      ackError.hidden = false;
    } finally {
      pending.delete(event.id);
    }
    ctx.refreshCounts();
    await poll.now();
    // The button is gone with its row's state: keep the keyboard in the table, on the next one.
    if (document.activeElement === button || document.activeElement === document.body || !document.activeElement?.isConnected) {
      const left = active.body.querySelectorAll<HTMLButtonElement>('button[data-ack]');
      (left[Math.min(place, left.length - 1)] ?? active.heading).focus();
    }
  };

  const activeColumns: Column[] = [
    { label: 'State' }, { label: 'Severity' }, { label: 'Tag' }, { label: 'Collection' }, { label: 'Kind' },
    { label: 'Value', class: 'num' }, { label: 'Limit', class: 'num' }, { label: 'Since' }, { label: 'Acknowledged by' },
  ];
  if (ctx.canWrite) activeColumns.push({ label: 'Action' });

  const drawActive = (events: AlarmEvent[]) => {
    if (events.length === 0) return [h('p', { class: 'empty' }, 'No active alarms.')];
    return [dataTable('Active alarm events', activeColumns, events.map((e) => {
      const tagId = `alarm-tag-${e.id}`;
      const row = [
        stateBadge(e.status), sevBadge(e.severity), cell(e.tag, { id: tagId, class: 'tag' }), e.collection_id, e.kind,
        figure(e.value), figure(e.limit), cell(when(e.started_ms)), cell(ackedBy(e)),
      ];
      if (ctx.canWrite) {
        // One name for every row (screen readers and tests find "Acknowledge"); the tag tells them apart.
        const button = h('button', { type: 'button', 'aria-describedby': tagId, 'data-ack': e.id, 'data-focus-key': `ack:${e.id}`, disabled: pending.has(e.id) }, 'Acknowledge');
        button.addEventListener('click', () => void acknowledge(e, button));
        row.push(e.status === 'active' ? cell(button, { class: 'actions' }) : cell('', { class: 'actions none' }));
      }
      return row;
    }), { stack: true, rowAttrs: (i) => ({ 'data-event': events[i]!.id, 'data-status': events[i]!.status }) })];
  };

  const recentColumns: Column[] = [
    { label: 'State' }, { label: 'Severity' }, { label: 'Tag' }, { label: 'Collection' }, { label: 'Kind' },
    { label: 'Value', class: 'num' }, { label: 'Limit', class: 'num' }, { label: 'Started' }, { label: 'Resolved' }, { label: 'Acknowledged by' },
  ];
  const drawRecent = (events: AlarmEvent[]) => {
    if (events.length === 0) return [h('p', { class: 'empty' }, `No events (${RANGES[filter.range]!.label.toLowerCase()}).`)];
    return [dataTable('Recent alarm events, newest first', recentColumns, events.map((e) => [
      stateBadge(e.status), sevBadge(e.severity), cell(e.tag, { class: 'tag' }), e.collection_id, e.kind,
      figure(e.value), figure(e.limit), cell(when(e.started_ms)), cell(e.resolved_ms === null ? '—' : dateTime(e.resolved_ms)), cell(ackedBy(e)),
    ]), { stack: true, rowAttrs: (i) => ({ 'data-event': events[i]!.id, 'data-status': events[i]!.status }) })];
  };

  const loadActive = async (signal: AbortSignal) => {
    try {
      const answer = await ctx.api.get<{ events: AlarmEvent[]; total_count: number }>(`${EVENTS}/active`, undefined, signal);
      const events = [...answer.events].sort((a, b) => b.started_ms - a.started_ms);
      // The header's count follows what this page sees, without waiting for the shell's own timer.
      if (lastActiveCount !== null && lastActiveCount !== answer.total_count) ctx.refreshCounts();
      lastActiveCount = answer.total_count;
      setText(activeCount, `${answer.total_count} unresolved`);
      active.show(JSON.stringify([events, [...pending]]), () => drawActive(events));
    } catch (err) {
      active.fail(err, 'Could not load the active events');
    }
  };

  const loadRecent = async (signal: AbortSignal) => {
    const asked = { ...filter };
    try {
      const answer = await ctx.api.get<{ events: AlarmEvent[]; total_count: number; has_more: boolean }>(EVENTS, {
        from_ms: Date.now() - RANGES[asked.range]!.ms, status: asked.status || undefined, limit: PAGE_SIZE, offset: asked.offset,
      }, signal);
      if (asked.offset > 0 && answer.events.length === 0 && answer.total_count > 0) {
        // The page asked for is past the end now (events were cleaned up): go to the last one.
        setFilter({ offset: Math.floor((answer.total_count - 1) / PAGE_SIZE) * PAGE_SIZE });
        return;
      }
      previous.disabled = asked.offset === 0;
      next.disabled = !answer.has_more;
      setText(pageInfo, answer.events.length === 0 ? '' : `${asked.offset + 1}–${asked.offset + answer.events.length} of ${answer.total_count}`);
      recent.show(JSON.stringify([asked, answer]), () => drawRecent(answer.events));
    } catch (err) {
      recent.fail(err, 'Could not load the recent events');
    }
  };

  const poll = repeat(async (signal) => {
    await Promise.all([loadActive(signal), loadRecent(signal)]);
    if (!signal.aborted) updated.textContent = `Updated ${dateTime(Date.now()).slice(11)}`;
  }, POLL_MS);

  const unsubscribe = ctx.onNotification((n) => {
    if (n.source !== 'monitor') return;
    ctx.announce(`Alarm: ${n.title}`);
    poll.soon(DEBOUNCE_MS);
  });

  const root = h('section', { class: 'status-page alarms' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Alarms'), updated, refreshButton),
    active.root, recent.root);
  return {
    root,
    onParams(p) {
      filter = filterOf(p);
      showFilter();
      poll.soon(0);
    },
    dispose() {
      unsubscribe();
      poll.stop();
    },
  };
}
