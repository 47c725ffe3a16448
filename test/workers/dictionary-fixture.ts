// One collection's store on real files in a temp dir, for the tests of the tag dictionary
// (tag-log.test.ts, dictionary-commit.test.ts): made fresh, reopened as after a restart, and fed
// one point per tag. The temp dirs go when the test file ends.

import { after } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PointBatch, SeriesLabels } from '../../native-free-codecs/write-body.js';
import type { CollectionScope } from '../../shared/scope.js';
import { collectionDir } from '../../shared/scope-path.js';
import { ShardStore } from '../../workers/shard-store.js';

export const SCOPE: CollectionScope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
export const ID = 'acme/north/boiler-1/main';
export const T0 = Date.UTC(2024, 5, 1, 12);

const roots: string[] = [];
after(() => {
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true });
});

/** A new data dir holding the collection, its store recovered. */
export function freshStore(prefix: string, maxSeriesPerCollection?: number): { dataDir: string; store: ShardStore; dir: string } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  roots.push(dataDir);
  const store = reopenStore(dataDir, maxSeriesPerCollection);
  store.createCollection(SCOPE);
  return { dataDir, store, dir: collectionDir(dataDir, SCOPE) };
}

/** The store of `dataDir` opened again, as a restarted worker opens it. */
export function reopenStore(dataDir: string, maxSeriesPerCollection?: number): ShardStore {
  const store = new ShardStore({ dataDir, owns: () => true, ...(maxSeriesPerCollection ? { maxSeriesPerCollection } : {}) });
  store.recover();
  return store;
}

/** One point per tag at `ts`, value = index; labels per tag where given. */
export function batchOf(tags: string[], ts: number, labels?: Array<SeriesLabels | null>): PointBatch {
  return {
    scope: SCOPE,
    tagNames: tags,
    ...(labels ? { labels } : {}),
    tagStart: Uint32Array.from({ length: tags.length + 1 }, (_, i) => i),
    timestamps: new Float64Array(tags.length).fill(ts),
    values: Float64Array.from(tags, (_, i) => i),
    pointCount: tags.length,
  };
}
