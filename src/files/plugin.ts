// Blobs and attachments (WIRE.md part 2 "Blobs and attachments"): content-addressed files under
// <dataDir>/blobs, keys and entity attachments in the metadata store.

import { definePlugin, provide } from '../host/plugin.js';
import { DISK_FLOOR } from '../storage/api.js';
import { BLOB_CONTENTS } from './api.js';
import { BlobService } from './blobs.js';
import { blobRoutes } from './routes.js';

export const blobsPlugin = definePlugin({
  name: 'blobs',
  settings: (config) => ({ ...config.blob, dataDir: config.dataDir }),
  needs: { disk: DISK_FLOOR },
  provides: [BLOB_CONTENTS],
  create({ settings, needs, meta, clock, log }) {
    const blobs = new BlobService({
      tables: meta.blobs, dataDir: settings.dataDir, entities: meta.entities, log, now: clock.now,
      disk: needs.disk, quotaBytesPerUser: settings.quotaBytesPerUser,
    });
    return {
      // Backups carry the content files (in the time-series archive); restores bring them back.
      provide: [provide(BLOB_CONTENTS, { hold: () => blobs.hold(), linkInto: (dir) => blobs.files.linkInto(dir), adopt: (dir) => blobs.files.adopt(dir) })],
      routes: blobRoutes(blobs, meta.registry, settings.maxBytes),
      entityHooks: blobs.entityHooks(),
      start: () => blobs.start(),
      stop: () => blobs.stop(),
      health: () => blobs.health(),
    };
  },
});
