// The Trends page (stub until it is written).

import type { AppContext, View } from '../app.js';
import { h } from '../dom.js';

export function openTrends(_ctx: AppContext, _params: URLSearchParams): View {
  return { root: h('section', {}, h('h1', {}, 'Trends')), dispose() {} };
}
