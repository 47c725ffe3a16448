// Notifications: the producer API, the admin create route, mark-read and unread counts, the SSE
// streams with their fan-out, and the retention purge.

import { CREDENTIALS } from '../auth/api.js';
import { definePlugin, provide } from '../host/plugin.js';
import { PROCESS_LOG } from '../jobs/api.js';
import { DELIVERY_MARKS, NOTIFY } from './api.js';
import { notificationMetricSources } from './metrics.js';
import { notificationRoutes } from './routes.js';
import { NotificationService } from './service.js';

export const notificationsPlugin = definePlugin({
  name: 'notifications',
  settings: (config) => config.notifications,
  needs: { credentials: CREDENTIALS, jobs: PROCESS_LOG },
  provides: [NOTIFY, DELIVERY_MARKS],
  create({ settings, needs, meta, clock, log }) {
    const notifications = new NotificationService({ meta, verifyToken: (token) => needs.credentials.verifyHeader(token), clock, log, settings, jobs: needs.jobs });
    return {
      provide: [
        provide(NOTIFY, notifications),
        provide(DELIVERY_MARKS, { written: notifications.hub.marksWritten, merge: (marks) => notifications.hub.mergeMarks(marks) }),
      ],
      routes: notificationRoutes(notifications),
      entityHooks: notifications.entityHooks(),
      metrics: notificationMetricSources(notifications.hub),
      start: () => notifications.start(),
      stop: () => notifications.stop(),
    };
  },
});
