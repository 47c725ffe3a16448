// Blobs and attachments (WIRE.md part 2 "Blobs and attachments"): content-addressed files under
// <dataDir>/blobs, keys and entity attachments in the metadata store.

import { definePlugin } from '../host/plugin.js';
import { BlobService } from './blobs.js';
import { blobRoutes } from './routes.js';

export const blobsPlugin = definePlugin({
  name: 'blobs',
  settings: (config) => ({ ...config.blob, dataDir: config.dataDir }),
  create({ settings, meta, clock, log }) {
    const blobs = new BlobService({ tables: meta.blobs, dataDir: settings.dataDir, entities: meta.entities, log, now: clock.now });
    return {
      routes: blobRoutes(blobs, meta.registry, settings.maxBytes),
      entityHooks: blobs.entityHooks(),
      start: () => blobs.start(),
      stop: () => blobs.stop(),
      health: () => blobs.health(),
    };
  },
});
