// The time-series store: one storage worker per shard (shards.ts), the shard gateway that
// reaches them (gateway.ts), the collection directory (directory.ts), store maintenance for
// backups and restores (maintenance.ts), and the collection, write, query and tag-mapping routes.

import os from 'node:os';
import { definePlugin, provide } from '../host/plugin.js';
import { PROCESS_LOG } from '../jobs/api.js';
import { Signal } from '../signal.js';
import { CollectionAccess } from './access.js';
import { COLLECTIONS, DISK_FLOOR, LIVE_FEED, MONITOR_SAMPLER, POINT_READER, POINT_WRITER, REPLICATION_HOOKS, STORE_MAINTENANCE } from './api.js';
import { CollectionCatalog } from './catalog.js';
import { collectionRoutes } from './collection-routes.js';
import { CollectionDirectory } from './directory.js';
import { DiskGuard } from './disk-guard.js';
import { FreedMemory } from './freed-memory.js';
import { ShardGateway } from './gateway.js';
import { Maintenance } from './maintenance.js';
import { storageMetricSources } from './metrics.js';
import { queryRoutes } from './query-routes.js';
import { seriesRoutes } from './series-routes.js';
import { RenameFollowing } from './rename-following.js';
import { ShardPool } from './shards.js';
import { StoreGate } from './store-gate.js';
import { tagMappingRoutes } from './tag-mapping-routes.js';
import { TagScopes } from './tag-scopes.js';

export const storagePlugin = definePlugin({
  name: 'storage',
  settings: (config) => ({ ...config.storage, dataDir: config.dataDir, logLevel: config.log.level, logFormat: config.log.format, logToStderr: config.log.toStderr === true, crashRoute: config.debug.crashRoute }),
  needs: { jobs: PROCESS_LOG },
  provides: [COLLECTIONS, POINT_WRITER, POINT_READER, MONITOR_SAMPLER, LIVE_FEED, STORE_MAINTENANCE, REPLICATION_HOOKS, DISK_FLOOR],
  create({ settings, needs, meta, clock, log }) {
    const workerRestarted = new Signal<[shardIndex: number]>();
    const shards = new ShardPool({
      // One core is left to the main thread (TLS, HTTP, copying bodies into the rings): on two
      // cores one worker ingested a single collection faster than two did, in 25 MiB less.
      count: settings.shards > 0 ? settings.shards : Math.max(1, os.availableParallelism() - 1),
      dataDir: settings.dataDir,
      requestRingBytes: settings.requestRingBytes,
      resultRingBytes: settings.resultRingBytes,
      bufferCapacityPoints: settings.bufferCapacityPoints,
      flushIntervalMs: settings.flushIntervalMs,
      sealGraceMs: settings.sealGraceMs,
      resultStallTimeoutMs: settings.resultStallTimeoutMs,
      writeTimeoutMs: settings.writeTimeoutMs,
      queryMemoryBytes: settings.queryMemoryBytes,
      maxSeriesPerCollection: settings.maxSeriesPerCollection,
      maxDaysPerWrite: settings.maxDaysPerWrite,
      maxUnsealedDaysPerCollection: settings.maxUnsealedDaysPerCollection,
      dayLogCompactBlocks: settings.dayLogCompactBlocks,
      dayLogCompactBytes: settings.dayLogCompactBytes,
      workerYoungGenerationMb: 6,
      workerRestarted,
      log,
      logLevel: settings.logLevel,
      logFormat: settings.logFormat,
      logToStderr: settings.logToStderr,
      minTimestampMs: settings.minTimestampMs,
    });
    const gate = new StoreGate();
    const disk = new DiskGuard(settings.dataDir, settings.minFreeBytes, log);
    const catalog = new CollectionCatalog(settings.dataDir, shards, log);
    const tagScopes = new TagScopes(meta.tagScopes, () => shards.tagMapChanged(), (id) => catalog.get(id) !== undefined);
    const directory = new CollectionDirectory(catalog, new CollectionAccess(meta.hierarchy), tagScopes, meta.hierarchy, gate, disk);
    const gateway = new ShardGateway(shards, directory, gate, disk, settings, log, clock.now);
    workerRestarted.subscribe((index) => gateway.rewatch(index));
    // A worker's death and its successor's start are the biggest burst of freed native memory.
    const freedMemory = new FreedMemory(settings.trimFreedMemoryMs, log);
    workerRestarted.subscribe((index) => freedMemory.now(`storage worker ${index} replaced`));
    const maintenance = new Maintenance(settings.dataDir, shards, directory, gate);
    let running = false;
    const following = new RenameFollowing(directory, meta.hierarchy, () => running, log);
    // The workers read the tag map from their own connection: a map replaced or replicated is read again.
    meta.events.replaced.subscribe((tables) => {
      if (tables.has('tag_scopes')) tagScopes.notifyChanged();
    });
    meta.events.tablesChanged.subscribe((change) => {
      if (change.tables.has('tag_scopes')) tagScopes.notifyChanged();
    });
    return {
      provide: [
        provide(COLLECTIONS, directory),
        provide(POINT_WRITER, gateway),
        provide(POINT_READER, {
          resolve: (grant, fields, tags) => directory.resolve(grant, fields, tags),
          query: (...args) => gateway.query(...args),
          lastValues: (groups) => gateway.lastValues(groups),
          listSeries: (...args) => gateway.listSeries(...args),
          seriesVersion: (id) => gateway.seriesVersion(id),
          collect: (...args) => gateway.collect(...args),
        }),
        provide(MONITOR_SAMPLER, gateway),
        provide(LIVE_FEED, gateway),
        provide(STORE_MAINTENANCE, maintenance),
        provide(DISK_FLOOR, { reserve: (bytes) => disk.reserve(bytes), release: (bytes) => disk.release(bytes) }),
        provide(REPLICATION_HOOKS, {
          recordWrites: (record) => gateway.recordWrites(record),
          collectionChanged: directory.changed,
          applyCollectionChange: (change, grant) => directory.applyReplicated(change, grant),
        }),
      ],
      routes: [
        ...collectionRoutes({ directory, gateway, shards, jobs: needs.jobs, flushIntervalMs: settings.flushIntervalMs, crashRoute: settings.crashRoute }),
        ...queryRoutes(directory, gateway, clock.now),
        ...seriesRoutes(gateway),
        ...tagMappingRoutes(meta.tagMappings, directory, gateway),
      ],
      entityHooks: following.entityHooks((job) => meta.entities.defer(job)),
      metrics: storageMetricSources(shards, gateway, disk, freedMemory),
      /** Recovers every shard and reads the collection list; on failure the workers are stopped again. */
      async start() {
        try {
          await shards.ready();
          catalog.load();
        } catch (err) {
          await shards.close().catch(() => {});
          throw err;
        }
        running = true;
        freedMemory.start();
      },
      stop: () => {
        freedMemory.stop();
        return shards.close();
      },
      /** The disk guard, and shards whose worker is being replaced. */
      health() {
        const full = disk.problem();
        if (full) return { status: 'degraded', reason: full, acceptsWrites: false };
        const restarting = shards.shards.filter((s) => s.restarting).map((s) => s.index);
        if (restarting.length > 0) return { status: 'degraded', reason: `storage shard(s) ${restarting.join(', ')} restarting after a worker failure` };
        return { status: 'ok' };
      },
    };
  },
});
