// Live data over WebSocket (WIRE.md part 2 "Live data over WebSocket"): GET /svcapi/ws, served by
// the HTTP server itself (an upgrade), fed by the points of watched tags as they are written.

import { CREDENTIALS } from '../auth/api.js';
import { definePlugin } from '../host/plugin.js';
import { counter, gauge } from '../metric-source.js';
import { COLLECTIONS, LIVE_FEED } from '../storage/api.js';
import { LiveHub } from './hub.js';

/** Tables a change of which may change what a socket's caller reaches (accounts, grants, keys, the hierarchy). */
const ACCESS_TABLES = new Set(['users', 'userprofiles', 'revoked_subjects', 'api_keys', 'orgs', 'sites', 'units']);

export const livePlugin = definePlugin({
  name: 'live',
  settings: (config) => config.ws,
  needs: { feed: LIVE_FEED, collections: COLLECTIONS, credentials: CREDENTIALS },
  create({ settings, needs, meta, log }) {
    const hub = new LiveHub({ grantOf: (claims) => meta.grantOf(claims), tokens: needs.credentials, feed: needs.feed, collections: needs.collections, settings, log });
    // The same signals the notification streams follow: local entity writes, replicated changes, a restore.
    let touched = false;
    const touch = (table: string) => {
      if (ACCESS_TABLES.has(table)) touched = true;
    };
    const follow = (tables: ReadonlySet<string>) => {
      if ([...ACCESS_TABLES].some((t) => tables.has(t))) hub.grantsChanged();
    };
    meta.events.replaced.subscribe(follow);
    meta.events.tablesChanged.subscribe((change) => follow(change.tables));
    return {
      webSocket: hub.endpoint(),
      entityHooks: {
        afterCreate: (def) => touch(def.table),
        afterUpdate: (def) => touch(def.table),
        beforeDelete: (def) => touch(def.table),
        afterCommit: () => {
          if (touched) hub.grantsChanged();
          touched = false;
        },
        afterRollback: () => {
          touched = false;
        },
      },
      stop: () => hub.stop(),
      metrics: [
        gauge('historian_websocket_sockets_open', 'Live data WebSocket connections (/svcapi/ws) open now.', () => hub.socketsOpen),
        counter('historian_websocket_messages_sent_total', 'Live data messages (points of a subscription) sent to WebSocket clients.', () => hub.messagesSent),
        counter('historian_websocket_slow_closes_total', 'Live data sockets closed (1013) for falling more than ws.maxBufferedBytes behind; what they had not read is lost.', () => hub.slowClosed),
        gauge('historian_websocket_watched_tags', 'Tags the storage workers watch for live data subscriptions, as the workers last reported (0 once no socket subscribes).', () => needs.feed.watchedTags),
        counter('historian_websocket_watch_tags_sent_total', 'Tag names sent to the storage workers in live watch updates (each added or removed once, however many tags the collection already has watched).', () => hub.watchTagsSent),
      ],
    };
  },
});
