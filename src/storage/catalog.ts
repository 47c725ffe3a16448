// The list of collections, as the main thread knows it: loaded at start by
// scanning the data dir for collections that have metadata (meta.json, four
// folder levels under <dataDir>/ts), kept current as collections are created,
// renamed and removed. Workers own the files; the catalog only reads
// meta.json at start and moves or removes whole folders after the owning
// worker has let go of them.

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { HttpError } from '../http/errors.js';
import { OP, type CollectionRecord, type ScopeFields } from '../../workers/protocol.js';
import { collectionDir, collectionId as idOf } from '../../workers/scope-path.js';
import type { ShardPool } from './shards.js';

export type Scope4 = Required<ScopeFields>;

export class CollectionCatalog {
  private readonly records = new Map<string, CollectionRecord>();

  constructor(private readonly dataDir: string, private readonly shards: ShardPool, private readonly log: Logger) {}

  get root(): string {
    return path.join(this.dataDir, 'ts');
  }

  /** Scans the data dir; folders without a readable meta.json are not collections. */
  load(): void {
    this.records.clear();
    const levels = (dir: string, depth: number): string[] => {
      let names: string[];
      try {
        names = fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
      } catch {
        return [];
      }
      const paths = names.map((n) => path.join(dir, n));
      return depth === 1 ? paths : paths.flatMap((p) => levels(p, depth - 1));
    };
    for (const dir of levels(this.root, 4)) {
      try {
        const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as { collection?: CollectionRecord };
        if (meta.collection) this.records.set(idOf(meta.collection), meta.collection);
      } catch {
        // no metadata: not a collection
      }
    }
  }

  list(): CollectionRecord[] {
    return [...this.records.values()].sort((a, b) => idOf(a).localeCompare(idOf(b)));
  }

  get(id: string): CollectionRecord | undefined {
    return this.records.get(id);
  }

  remember(record: CollectionRecord): void {
    this.records.set(idOf(record), record);
  }

  async create(scope: Scope4, extra: Record<string, unknown>): Promise<CollectionRecord> {
    const id = idOf(scope);
    const reply = await this.shards.shardFor(id).call({ op: OP.CREATE_COLLECTION, scope, extra });
    this.remember(reply.collection!);
    return reply.collection!;
  }

  async update(id: string, fields: Record<string, unknown>): Promise<CollectionRecord> {
    const reply = await this.shards.shardFor(id).call({ op: OP.UPDATE_COLLECTION, id, fields });
    this.remember(reply.collection!);
    return reply.collection!;
  }

  /**
   * Renames one scope level (`level` 0 = organization .. 2 = unit) for every
   * collection under `parent` names: owning workers close the collections, the
   * folder moves in one rename, new owners open them. Returns the id pairs.
   */
  async renameLevel(level: 0 | 1 | 2, parents: string[], from: string, to: string): Promise<Array<[string, string]>> {
    const keys = ['organization', 'site', 'unit'] as const;
    const affected = this.list().filter((r) => keys.slice(0, level).every((k, i) => r[k] === parents[i]) && r[keys[level]] === from);
    if (affected.length === 0 || from === to) return [];
    const renamed = affected.map((r) => ({ before: r, after: { ...r, [keys[level]]: to, updatedAt: Date.now() } as CollectionRecord }));
    if (renamed.some(({ after }) => this.records.has(idOf(after)))) {
      throw new HttpError('CONFLICT', `DUPLICATE: a collection named ${to} already exists at that level`);
    }
    for (const { before } of renamed) await this.shards.shardFor(idOf(before)).call({ op: OP.CLOSE_COLLECTION, id: idOf(before) });
    const levelDir = (r: CollectionRecord) => path.resolve(collectionDir(this.dataDir, r), ...Array(3 - level).fill('..'));
    const source = levelDir(renamed[0].before);
    const target = levelDir(renamed[0].after);
    fs.renameSync(source, target);
    for (const { before, after } of renamed) {
      // meta.json carries the names; rewrite it in the moved folder before the new owner opens it.
      const metaFile = path.join(collectionDir(this.dataDir, after), 'meta.json');
      const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as { collection: CollectionRecord };
      meta.collection = after;
      const tmp = `${metaFile}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(meta));
      fs.renameSync(tmp, metaFile);
      this.records.delete(idOf(before));
      this.records.set(idOf(after), after);
      await this.shards.shardFor(idOf(after)).call({ op: OP.OPEN_COLLECTION, id: idOf(after) });
    }
    this.log.info({ from: source, to: target, collections: renamed.length }, 'collections renamed');
    return renamed.map(({ before, after }) => [idOf(before), idOf(after)]);
  }

  /** Unit, site and org folders go with their last collection. */
  private removeEmptyParents(dir: string): void {
    for (let level = 0; level < 3 && dir.startsWith(this.root + path.sep); level++, dir = path.dirname(dir)) {
      try {
        fs.rmdirSync(dir);
      } catch {
        return; // not empty (or already gone)
      }
    }
  }

  /** Removes collections (workers let go first, then the folders are deleted). */
  async remove(records: CollectionRecord[]): Promise<void> {
    for (const record of records) {
      const id = idOf(record);
      await this.shards.shardFor(id).call({ op: OP.REMOVE_COLLECTION, id });
      const dir = collectionDir(this.dataDir, record);
      fs.rmSync(dir, { recursive: true, force: true });
      this.removeEmptyParents(path.dirname(dir));
      this.records.delete(id);
      this.log.info({ collection: id }, 'collection removed');
    }
  }
}
