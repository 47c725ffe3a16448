// Live data over WebSocket (WIRE.md part 2 "Live data over WebSocket"): GET /svcapi/ws, served by
// the HTTP server itself (an upgrade), fed by the points of watched tags as they are written.

import { CREDENTIALS } from '../auth/api.js';
import { definePlugin } from '../host/plugin.js';
import { counter, gauge } from '../metric-source.js';
import { COLLECTIONS, LIVE_FEED } from '../storage/api.js';
import { LiveHub } from './hub.js';

export const livePlugin = definePlugin({
  name: 'live',
  settings: (config) => config.ws,
  needs: { feed: LIVE_FEED, collections: COLLECTIONS, credentials: CREDENTIALS },
  create({ settings, needs, meta, log }) {
    const hub = new LiveHub({ grantOf: (claims) => meta.grantOf(claims), tokens: needs.credentials, feed: needs.feed, collections: needs.collections, settings, log });
    return {
      webSocket: hub.endpoint(),
      metrics: [
        gauge('historian_websocket_sockets_open', 'Live data WebSocket connections (/svcapi/ws) open now.', () => hub.socketsOpen),
        counter('historian_websocket_messages_sent_total', 'Live data messages (points of a subscription) sent to WebSocket clients.', () => hub.messagesSent),
        counter('historian_websocket_slow_closes_total', 'Live data sockets closed (1013) for falling more than ws.maxBufferedBytes behind; what they had not read is lost.', () => hub.slowClosed),
      ],
    };
  },
});
