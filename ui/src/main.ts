// The console's shell: sign-in, the header (navigation, active alarm and unread counts, sign
// out), the hash router (`#/<page>?<params>`, so a link reopens the same view and the service
// serves one document), and the one notification stream every page listens to.

import { Api, savedToken, saveToken, sessionOf, signIn, type Session } from './api.js';
import type { AppContext, Notification, OpenPage, PageName, View } from './app.js';
import { h, replace } from './dom.js';
import { openAlarms } from './pages/alarms.js';
import { openNotifications } from './pages/notifications.js';
import { openSystem } from './pages/system.js';
import { openTrends } from './pages/trends.js';

const PAGES: Record<PageName, { label: string; open: OpenPage }> = {
  trends: { label: 'Trends', open: openTrends },
  alarms: { label: 'Alarms', open: openAlarms },
  notifications: { label: 'Notifications', open: openNotifications },
  system: { label: 'System', open: openSystem },
};

function route(): { page: PageName; params: URLSearchParams } {
  const hash = location.hash.replace(/^#\/?/, '');
  const [name = '', query = ''] = hash.split('?', 2) as [string, string?];
  const page = (name in PAGES ? name : 'trends') as PageName;
  return { page, params: new URLSearchParams(query) };
}

/** The sign-in form, with `message` (why it is shown) and, after an expiry, the email already filled in. */
function showSignIn(message?: string, email0?: string): void {
  document.title = 'Sign in · Historian console';
  const email = h('input', { id: 'sign-in-email', type: 'email', name: 'email', autocomplete: 'username', required: true, value: email0 });
  const password = h('input', { id: 'sign-in-password', type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const error = h('p', { class: 'error', role: 'alert' }, message ?? '');
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Historian console'),
    h('label', { for: 'sign-in-email' }, 'Email'), email,
    h('label', { for: 'sign-in-password' }, 'Password'), password,
    button, error,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    error.textContent = '';
    void (async () => {
      try {
        const token = await signIn(email.value.trim(), password.value);
        const session = await sessionOf(token);
        if (!session) throw new Error('the service did not accept the new token');
        saveToken(token);
        startConsole(session);
      } catch (err) {
        error.textContent = err instanceof Error ? err.message : String(err);
        button.disabled = false;
        password.select();
      }
    })();
  });
  replace(document.body, h('main', { class: 'sign-in-page' }, form));
  (email0 ? password : email).focus();
}

function startConsole(session: Session): void {
  const api = new Api(session);
  const canWrite = session.role !== 'read-only';
  const listeners = new Set<(n: Notification) => void>();
  let view: View | null = null;
  let current: PageName | null = null;
  let ended = false;

  const live = h('div', { class: 'visually-hidden', 'aria-live': 'polite', role: 'status' });
  const alarmBadge = h('span', { class: 'badge', hidden: true, 'aria-hidden': 'true' });
  const unreadBadge = h('span', { class: 'badge', hidden: true, 'aria-hidden': 'true' });
  const counts = h('span', { class: 'visually-hidden', id: 'header-counts' });
  const badges: Partial<Record<PageName, HTMLElement>> = { alarms: alarmBadge, notifications: unreadBadge };
  const links = Object.fromEntries(Object.entries(PAGES).map(([name, page]) => [name,
    h('a', { href: `#/${name}`, 'aria-describedby': badges[name as PageName] ? 'header-counts' : undefined }, page.label)])) as Record<PageName, HTMLAnchorElement>;
  const main = h('main', { id: 'main', tabindex: -1 });

  const end = (message?: string, email?: string) => {
    if (ended) return;
    ended = true;
    events?.close();
    clearInterval(countTimer);
    window.removeEventListener('hashchange', follow);
    view?.dispose();
    saveToken(null);
    showSignIn(message, email);
  };
  const expired = () => end('Your session has expired. Sign in again.', session.email);
  api.onExpired = expired;

  const refreshCounts = () => {
    void api.get<{ total_count: number }>('/svcapi/monitor/alarm/events/active').then((r) => setBadge(alarmBadge, r.total_count), () => setBadge(alarmBadge, null));
    void api.get<{ count: number }>('/svcapi/notifications/unread-count').then((r) => setBadge(unreadBadge, r.count), () => setBadge(unreadBadge, null));
  };
  const setBadge = (badge: HTMLElement, n: number | null) => {
    badge.hidden = !n;
    badge.textContent = n ? String(n) : '';
    counts.textContent = `${alarmBadge.textContent || 0} active alarms, ${unreadBadge.textContent || 0} unread notifications`;
  };

  const ctx: AppContext = {
    api, session, canWrite, isAdmin: session.role === 'admin',
    onNotification: (listener) => { listeners.add(listener); return () => listeners.delete(listener); },
    setParams: (params, mode) => {
      const text = params.toString();
      const url = `#/${current}${text ? `?${text}` : ''}`;
      if (current) links[current].setAttribute('href', url);
      if (url === location.hash) return;
      if (mode === 'push') history.pushState(null, '', url);
      else history.replaceState(null, '', url);
    },
    refreshCounts,
    announce: (text) => { live.textContent = ''; requestAnimationFrame(() => { live.textContent = text; }); },
  };

  const follow = () => {
    const { page, params } = route();
    if (page === current && view?.onParams) { view.onParams(params); return; }
    view?.dispose();
    current = page;
    for (const [name, link] of Object.entries(links)) {
      if (name === page) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    document.title = `${PAGES[page].label} · Historian console`;
    // Each link returns to its page as it was left (the trend with its series and range).
    const text = params.toString();
    links[page].setAttribute('href', `#/${page}${text ? `?${text}` : ''}`);
    view = PAGES[page].open(ctx, params);
    replace(main, view.root);
    // A page switch re-reads the counts: they stay current, and a token that expired meanwhile
    // brings back the sign-in form now, whatever the page calls (or does not).
    refreshCounts();
  };

  const signOut = h('button', { type: 'button', class: 'quiet' }, 'Sign out');
  signOut.addEventListener('click', () => end());
  // The hash is the router's: following `#main` would open the default page. Focus the content instead.
  const skip = h('a', { href: '#main', class: 'skip' }, 'Skip to content');
  skip.addEventListener('click', (event) => { event.preventDefault(); main.focus(); });
  replace(document.body,
    skip,
    h('header', { class: 'top' },
      h('span', { class: 'brand' }, 'Historian'),
      h('nav', { 'aria-label': 'Console' }, ...(['trends', 'alarms', 'notifications', 'system'] as const).map((name) =>
        h('span', { class: 'nav-item' }, links[name], badges[name] ?? null))),
      counts,
      h('span', { class: 'who', title: session.role }, session.email),
      signOut,
    ),
    main, live,
  );

  // One stream for the console: notifications (alarms open and resolve through it) reach every
  // page that listens, and the header counts follow them.
  const events = new EventSource(api.streamUrl('/svcapi/notifications/stream'));
  events.addEventListener('notification', (event) => {
    let n: Notification;
    try { n = JSON.parse((event as MessageEvent<string>).data) as Notification; } catch { return; }
    for (const listener of listeners) listener(n);
    refreshCounts();
  });
  events.addEventListener('error', () => {
    // EventSource retries by itself; a closed one was refused (401 after expiry, or a limit).
    if (events.readyState === EventSource.CLOSED) void sessionOf(session.token).then((s) => { if (!s) expired(); }, () => {});
  });
  const countTimer = setInterval(refreshCounts, 30_000);
  window.addEventListener('hashchange', follow);
  follow();
}

async function boot(): Promise<void> {
  const token = savedToken();
  if (!token) return showSignIn();
  try {
    const session = await sessionOf(token);
    if (session) return startConsole(session);
    saveToken(null);
    showSignIn('Your session has expired. Sign in again.');
  } catch (err) {
    showSignIn(`The service cannot be reached: ${err instanceof Error ? err.message : String(err)}`);
  }
}

void boot();
