// The Notifications page (stub until it is written).

import type { AppContext, View } from '../app.js';
import { h } from '../dom.js';

export function openNotifications(_ctx: AppContext, _params: URLSearchParams): View {
  return { root: h('section', {}, h('h1', {}, 'Notifications')), dispose() {} };
}
