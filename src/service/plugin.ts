// The service's own routes (subsystem `service`): health, the OpenAPI document and the docs page
// built from every mounted route, the CA certificate, the LAN address, and the liveness probe.

import { SERVICE_INFO } from '../host/builtins.js';
import { definePlugin } from '../host/plugin.js';
import { utilityRoutes } from './routes.js';

export const servicePlugin = definePlugin({
  name: 'service',
  needs: { service: SERVICE_INFO },
  create({ needs }) {
    return { routes: utilityRoutes(needs.service) };
  },
});
