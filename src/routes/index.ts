// The subsystems of the service, in start order: each names its routes and how it starts, stops
// and reports its health (subsystems.ts); main.ts hands the list to the SubsystemHost. Routes the
// contract lists as not mounted (update_password, /elog/*, /dataflow/ems/*) are deliberately
// absent, so they answer 404.

import type { Subsystem } from '../subsystems.js';
import { authRoutes } from './auth.js';
import type { ServiceContext } from './context.js';
import { entityRoutes } from './entities.js';
import { ingestRoutes } from './ingest.js';
import { IngestService } from '../ingest/service.js';
import { notificationRoutes } from './notifications.js';
import { monitorRoutes } from './monitor.js';
import { backupRoutes } from './backup.js';
import { blobRoutes } from './blobs.js';
import { connectorRoutes } from './connector.js';
import { clusterRoutes } from './cluster.js';
import { processLogRoutes } from './process-log.js';
import { proxyRoutes } from './proxies.js';
import { AdkProxy } from '../proxy/adk.js';
import { QdrantProxy } from '../proxy/qdrant.js';
import { queryRoutes } from './queries.js';
import { tagMappingRoutes } from './tag-mappings.js';
import { timeseriesRoutes } from './timeseries.js';
import { utilityRoutes } from './utility.js';

export function buildSubsystems(ctx: ServiceContext): Subsystem[] {
  const { vector, adk: adkSettings } = ctx.config;
  const qdrant = new QdrantProxy(vector.qdrantUrl, vector.timeoutMs);
  const adk = new AdkProxy(adkSettings.baseUrl, adkSettings.timeoutMs);
  return [
    { name: 'service', routes: () => utilityRoutes(ctx, () => ctx.routeTable()) },
    { name: 'auth', routes: () => authRoutes(ctx) },
    { name: 'metadata', routes: () => entityRoutes(ctx, ctx.entities) },
    {
      name: 'process-log',
      routes: () => processLogRoutes(ctx.jobs),
      start: () => ctx.jobs.start(),
      stop: () => ctx.jobs.stop(),
    },
    {
      name: 'notifications',
      routes: () => notificationRoutes(ctx, ctx.notifications),
      start: () => ctx.notifications.start(),
      stop: () => ctx.notifications.stop(),
      health: () => ctx.notifications.health(),
    },
    {
      name: 'storage',
      routes: () => [...timeseriesRoutes(ctx, ctx.storage), ...queryRoutes(ctx, ctx.storage), ...tagMappingRoutes(ctx, ctx.storage)],
      start: () => ctx.storage.start(),
      stop: () => ctx.storage.close(),
      health: () => ctx.storage.health(),
    },
    {
      name: 'ingest',
      routes: () => ingestRoutes(ctx, new IngestService(ctx)),
      start: () => {
        if (!ctx.storage.isRunning) throw new Error('the storage subsystem is not running');
      },
    },
    {
      name: 'backup',
      routes: () => backupRoutes(ctx, ctx.backups),
      start: () => ctx.backups.start(),
      stop: () => ctx.backups.stop(),
      health: () => ctx.backups.health(),
    },
    {
      name: 'connector',
      routes: () => connectorRoutes(ctx, ctx.connector),
      start: () => ctx.connector.start(),
      stop: () => ctx.connector.stop(),
      health: () => ctx.connector.health(),
    },
    {
      name: 'monitor',
      routes: () => monitorRoutes(ctx, ctx.monitor),
      start: () => ctx.monitor.start(),
      stop: () => ctx.monitor.stop(),
      health: () => ctx.monitor.health(),
    },
    {
      name: 'blobs',
      routes: () => blobRoutes(ctx, ctx.blobs),
      start: () => ctx.blobs.start(),
      stop: () => ctx.blobs.stop(),
      health: () => ctx.blobs.health(),
    },
    {
      // GET /svcapi/ws is a WebSocket upgrade, served by the HTTP server itself (src/live/hub.ts).
      name: 'live',
      routes: () => [],
      health: () => ({ status: 'ok' }),
    },
    {
      // Unset upstreams are a choice, not a fault: health stays ok and says which are set.
      name: 'proxies',
      routes: () => proxyRoutes(qdrant, adk),
      stop: () => adk.close(),
      health: () => ({ status: 'ok', configured: { 'vector.qdrantUrl': qdrant.configured, 'adk.baseUrl': adk.configured } }),
    },
    {
      // Last to start (campaign once everything serves), first to stop (hand leadership on at once).
      name: 'cluster',
      routes: () => clusterRoutes(ctx),
      start: () => ctx.cluster.start(),
      stop: () => ctx.cluster.stop(),
      health: () => ctx.cluster.health(),
    },
  ];
}
