// The Notifications page: the user's notifications newest first (50 at a time, "Show more"), the
// unread count, "Mark read" per row and "Mark all read". New ones arrive on the console's stream
// and are put on top. Titles and bodies are user data: they are only ever text, and a link is a
// link only when it leads to an http(s) page (a relative path resolves to this one).

import type { AppContext, Notification, View } from '../app.js';
import { h } from '../dom.js';
import { errorText, Panel, setText, sevBadge, updateAgo, when } from '../status/parts.js';
import { repeat } from '../status/repeat.js';

const BASE = '/svcapi/notifications';
const PAGE_SIZE = 50;
/** The unread count also changes elsewhere (another tab marks rows read). */
const COUNT_POLL_MS = 30_000;
/** Mark all read posts one row at a time per worker; a few at once keeps it quick without a flood. */
const MARK_WORKERS = 4;
const ORDER = ['createdAt DESC', 'id DESC'];

/** Ids are strings in the list and may be numbers on the stream: one key for both. */
const keyOf = (n: { id: unknown }) => String(n.id);

/** An http(s) address for `link`, or null (javascript:, data: and the like are never links). */
function safeHref(link: string | null): string | null {
  if (!link) return null;
  try {
    const url = new URL(link, location.href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

export function openNotifications(ctx: AppContext, _params: URLSearchParams): View {
  const rows = new Map<string, { n: Notification; li: HTMLLIElement }>();
  /** Rows fetched from the list plus rows put on top from the stream: the skip of the next page. */
  let loaded = 0;
  let disposed = false;
  /** The first page has been drawn (before that, the panel still says it is loading). */
  let listed = false;
  const controller = new AbortController();
  const signal = controller.signal;

  const unread = h('p', { id: 'notifications-unread', class: 'unread-count', role: 'status' });
  const markAll = h('button', { type: 'button' }, 'Mark all read');
  const actionError = h('p', { class: 'error', role: 'alert', hidden: true });
  const list = h('ul', { class: 'notes', 'aria-label': 'Notifications, newest first' });
  const more = h('button', { type: 'button', hidden: true }, 'Show more');
  const panel = new Panel('notifications-list', 'Newest first');
  panel.root.append(h('div', { class: 'row pager' }, more));

  const showError = (text: string) => {
    actionError.textContent = text;
    actionError.hidden = text === '';
  };

  const refreshUnread = async () => {
    try {
      const { count } = await ctx.api.get<{ count: number }>(`${BASE}/unread-count`, undefined, signal);
      unread.dataset.count = String(count);
      setText(unread, count === 0 ? 'No unread notifications' : `${count} unread`);
      markAll.disabled = count === 0;
    } catch (err) {
      if (!signal.aborted) setText(unread, `Unread count unavailable: ${errorText(err)}`);
    }
  };
  const counts = repeat(refreshUnread, COUNT_POLL_MS);
  const countsChanged = () => {
    counts.soon(0);
    ctx.refreshCounts();
  };

  const draw = (n: Notification): HTMLLIElement => {
    const id = keyOf(n);
    const titleId = `note-title-${id}`;
    const href = safeHref(n.link);
    const read = n.readAt !== null && n.readAt !== undefined;
    const li = h('li', { class: read ? 'note' : 'note unread', 'data-id': id, 'data-read': String(read), tabindex: -1 },
      h('div', { class: 'note-head' },
        sevBadge(n.severity),
        h('h3', { id: titleId, class: 'note-title' }, href ? h('a', { href, rel: 'noopener noreferrer' }, n.title) : n.title)),
      n.body ? h('p', { class: 'note-body' }, n.body) : null,
      h('div', { class: 'note-meta' },
        h('span', { class: 'note-source' }, n.source),
        h('span', { class: 'note-time' }, ...when(n.createdAt)),
        h('span', { class: read ? 'note-state' : 'note-state is-unread' }, read ? 'Read' : 'Unread'),
        read ? null : h('button', { type: 'button', 'aria-describedby': titleId, 'data-mark': id, onclick: () => void markRead(id) }, 'Mark read')),
    );
    return li;
  };

  /** Puts `n` in the list (new: at its place by time; known: redrawn in place, keeping focus near). */
  const put = (n: Notification, where: 'top' | 'bottom') => {
    const key = keyOf(n);
    const known = rows.get(key);
    const li = draw(n);
    if (known) {
      const hadFocus = known.li.contains(document.activeElement);
      known.li.replaceWith(li);
      if (hadFocus) li.focus();
    } else if (where === 'top') list.prepend(li);
    else list.append(li);
    rows.set(key, { n, li });
  };

  const markRead = async (id: string) => {
    const row = rows.get(id);
    if (!row) return;
    const button = row.li.querySelector<HTMLButtonElement>('button[data-mark]');
    const hadFocus = button !== null && document.activeElement === button;
    if (button) button.disabled = true;
    showError('');
    try {
      const answer = await ctx.api.send<{ id: string; readAt: number }>('POST', `${BASE}/${encodeURIComponent(id)}/read`, undefined, signal);
      put({ ...row.n, readAt: answer.readAt }, 'top');
      if (hadFocus) {
        // Its button is gone: the next unread row's button, else the row itself.
        const after = [...list.querySelectorAll<HTMLButtonElement>('button[data-mark]')].find((b) => rows.get(id)!.li.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
        (after ?? rows.get(id)!.li).focus();
      }
      ctx.announce(`Marked read: ${row.n.title}`);
    } catch (err) {
      if (signal.aborted) return;
      showError(`Could not mark "${row.n.title}" read: ${errorText(err)}`);
      if (button) button.disabled = false;
    }
    countsChanged();
  };

  markAll.addEventListener('click', () => void (async () => {
    markAll.disabled = true;
    showError('');
    let done = 0;
    let failed = 0;
    try {
      // Each round lists what is still unread (already marked rows drop out); a row that keeps
      // failing is counted once and ends the loop, so this always finishes.
      for (let round = 0; round < 20; round++) {
        const ids = (await ctx.api.get<Array<{ id: unknown }>>(BASE, { filter: JSON.stringify({ where: { readAt: null }, fields: ['id'], order: ORDER, limit: 500 }) }, signal)).map(keyOf);
        if (ids.length === 0 || failed > 0) break;
        const queue = [...ids];
        await Promise.all(Array.from({ length: MARK_WORKERS }, async () => {
          for (let id = queue.shift(); id !== undefined && !signal.aborted; id = queue.shift()) {
            try {
              const answer = await ctx.api.send<{ readAt: number }>('POST', `${BASE}/${encodeURIComponent(id)}/read`, undefined, signal);
              const row = rows.get(id);
              if (row) put({ ...row.n, readAt: answer.readAt }, 'top');
              done++;
            } catch (err) {
              if (signal.aborted) return;
              failed++;
              showError(`Could not mark every notification read: ${errorText(err)}`);
            }
          }
        }));
      }
      if (!signal.aborted) ctx.announce(`Marked ${done} notification${done === 1 ? '' : 's'} read`);
    } catch (err) {
      if (!signal.aborted) showError(`Could not mark every notification read: ${errorText(err)}`);
    }
    if (!disposed) countsChanged();
  })());

  const showList = () => panel.show(rows.size === 0 ? 'empty' : 'list', () => (rows.size === 0 ? [h('p', { class: 'empty' }, 'No notifications.')] : [list]));

  const loadPage = async () => {
    more.disabled = true;
    try {
      const page = await ctx.api.get<Notification[]>(BASE, { filter: JSON.stringify({ order: ORDER, limit: PAGE_SIZE, skip: loaded }) }, signal);
      loaded += page.length;
      listed = true;
      for (const n of page) if (!rows.has(keyOf(n))) put(n, 'bottom');
      showList();
      more.hidden = page.length < PAGE_SIZE;
    } catch (err) {
      panel.fail(err, 'Could not load the notifications');
    }
    more.disabled = false;
  };
  more.addEventListener('click', () => void loadPage());

  const unsubscribe = ctx.onNotification((n) => {
    if (rows.has(keyOf(n))) return;
    put(n, 'top');
    loaded++;
    if (listed) showList();
    ctx.announce(`New notification: ${n.title}`);
    counts.soon(0);
  });
  // "x min ago" moves on while the page is open.
  const clock = setInterval(() => updateAgo(list), 30_000);

  void loadPage();
  const root = h('section', { class: 'status-page notifications' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Notifications'), unread, markAll),
    actionError, panel.root);
  return {
    root,
    dispose() {
      disposed = true;
      unsubscribe();
      counts.stop();
      clearInterval(clock);
      controller.abort();
    },
  };
}
