// The Alarms page (stub until it is written).

import type { AppContext, View } from '../app.js';
import { h } from '../dom.js';

export function openAlarms(_ctx: AppContext, _params: URLSearchParams): View {
  return { root: h('section', {}, h('h1', {}, 'Alarms')), dispose() {} };
}
