// Live data over WebSocket (WIRE.md part 2 "Live data over WebSocket"): GET /svcapi/ws, served by
// the HTTP server itself (an upgrade), fed by the points of watched tags as they are written.

import { CREDENTIALS } from '../auth/api.js';
import { definePlugin } from '../host/plugin.js';
import { COLLECTIONS, LIVE_FEED } from '../storage/api.js';
import { LiveHub } from './hub.js';

export const livePlugin = definePlugin({
  name: 'live',
  settings: (config) => config.ws,
  needs: { feed: LIVE_FEED, collections: COLLECTIONS, credentials: CREDENTIALS },
  create({ settings, needs, meta, log }) {
    const hub = new LiveHub({ grantOf: (claims) => meta.grantOf(claims), tokens: needs.credentials, feed: needs.feed, collections: needs.collections, settings, log });
    return { webSocket: hub.endpoint() };
  },
});
