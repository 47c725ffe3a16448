// The proxied services (WIRE.md "Proxied services"): a Qdrant collection create and the agent
// service under /svcapi/adk/. Unset upstreams are a choice, not a fault: health stays ok and
// says which are set (their routes answer 501 naming the setting).

import { definePlugin } from '../host/plugin.js';
import { AdkProxy } from './adk.js';
import { QdrantProxy } from './qdrant.js';
import { proxyRoutes } from './routes.js';

export const proxiesPlugin = definePlugin({
  name: 'proxies',
  settings: (config) => ({ vector: config.vector, adk: config.adk }),
  create({ settings }) {
    const qdrant = new QdrantProxy(settings.vector.qdrantUrl, settings.vector.timeoutMs);
    const adk = new AdkProxy(settings.adk.baseUrl, settings.adk.timeoutMs);
    return {
      routes: proxyRoutes(qdrant, adk),
      stop: () => adk.close(),
      health: () => ({ status: 'ok', configured: { 'vector.qdrantUrl': qdrant.configured, 'adk.baseUrl': adk.configured } }),
    };
  },
});
