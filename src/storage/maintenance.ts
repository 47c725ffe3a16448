// Store maintenance: what a backup and a restore of the time-series store do with the workers.
// A backup's instant holds writes for the moment the workers hard-link their files; a restore
// takes the ts folder out of the workers' hands, swaps it, and has them open what is there.

import fs from 'node:fs';
import path from 'node:path';
import { OP, type BackupMark } from '../../shared/protocol.js';
import { collectionDir, collectionId as idOf, parseCollectionId } from '../../shared/scope-path.js';
import type { StoreMaintenance } from './api.js';
import type { CollectionDirectory } from './directory.js';
import type { ShardPool } from './shards.js';
import type { StoreGate } from './store-gate.js';

export class Maintenance implements StoreMaintenance {
  constructor(
    private readonly dataDir: string,
    private readonly shards: ShardPool,
    private readonly directory: CollectionDirectory,
    private readonly gate: StoreGate,
  ) {}

  /**
   * A time-series backup's instant: new writes wait, the ones under way finish, then every shard
   * flushes and hard-links its files under `stagingDir` at once; writes go on right after (the
   * links take milliseconds). Every write is then wholly before the instant or wholly after it.
   */
  async backupMark(stagingDir: string): Promise<BackupMark> {
    this.gate.refuseWhileRestoring();
    const resume = await this.gate.hold();
    try {
      const marks = await Promise.all(this.shards.shards.map((shard) => shard.call({ op: OP.BACKUP_MARK, stagingDir })));
      return { files: marks.flatMap((m) => m.files), collections: marks.flatMap((m) => m.collections) };
    } finally {
      resume();
    }
  }

  beginRestore(): () => void {
    return this.gate.beginReplacing();
  }

  /**
   * Runs `swap` with the ts folder out of the workers' hands: writes and queries answer 503, the
   * workers flush and close every collection, `swap` moves folders, and the workers open what is
   * there afterwards (also when `swap` failed, after it has put things back). The collection
   * catalog and the tag map are rebuilt from what the workers opened.
   */
  async withStoreDetached<T>(swap: () => Promise<T>): Promise<{ result: T; collections: number }> {
    return this.gate.exclusively(async () => {
      await Promise.all(this.shards.shards.map((shard) => shard.call({ op: OP.DETACH })));
      let result: T;
      try {
        result = await swap();
      } finally {
        await this.reattach();
      }
      return { result, collections: this.directory.catalog.list().length };
    });
  }

  /** Every shard opens its collections from disk; the catalog and the tag map follow. */
  private async reattach(): Promise<void> {
    await Promise.all(this.shards.shards.map((shard) => shard.call({ op: OP.ATTACH })));
    const { catalog, tagScopes } = this.directory;
    catalog.load();
    for (const record of catalog.list()) {
      const id = idOf(record);
      tagScopes.learn(id, await this.tagNamesOf(id));
    }
    tagScopes.notifyChanged();
  }

  /** The tag dictionary of a collection, from its meta.json. */
  private async tagNamesOf(collectionId: string): Promise<string[]> {
    try {
      const meta = JSON.parse(await fs.promises.readFile(path.join(collectionDir(this.dataDir, parseCollectionId(collectionId)), 'meta.json'), 'utf8')) as { tags?: unknown };
      return Array.isArray(meta.tags) ? meta.tags.filter((t): t is string => typeof t === 'string') : [];
    } catch {
      return [];
    }
  }
}
