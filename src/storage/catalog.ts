// The list of collections, as the main thread knows it: loaded at start by
// scanning the data dir for collections that have metadata (meta.json, four
// folder levels under <dataDir>/ts), kept current as collections are created,
// moved (renames) and removed. Workers own the files; the catalog only reads
// meta.json at start and moves or removes whole folders after the owning
// worker has let go of them.

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { conflict } from '../../shared/errors.js';
import { OP, type CollectionRecord } from '../../shared/protocol.js';
import { SCOPE_FIELDS, type CollectionScope, type ScopeField } from '../../shared/scope.js';
import { collectionDir, encodeScopeName, collectionId as idOf, validateScopeName } from '../../shared/scope-path.js';
import type { ShardPool } from './shards.js';

/** Scope fields of the org, site and unit levels, outermost first. */
const LEVELS: readonly ScopeField[] = SCOPE_FIELDS.slice(0, 3);

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

  async create(scope: CollectionScope, extra: Record<string, unknown>): Promise<CollectionRecord> {
    const id = idOf(scope);
    const record = await this.shards.shardFor(id).call({ op: OP.CREATE_COLLECTION, scope, extra });
    this.remember(record);
    return record;
  }

  async update(id: string, fields: Record<string, unknown>): Promise<CollectionRecord> {
    const record = await this.shards.shardFor(id).call({ op: OP.UPDATE_COLLECTION, id, fields });
    this.remember(record);
    return record;
  }

  /** Collections under an org (`names` = [org]), a site ([org, site]) or a unit ([org, site, unit]). */
  under(names: readonly string[]): CollectionRecord[] {
    return this.list().filter((r) => names.every((name, i) => r[LEVELS[i]!] === name));
  }

  /** The folder of an org, site or unit (names as in `under`). */
  levelDir(names: readonly string[]): string {
    return path.join(this.root, ...names.map(encodeScopeName));
  }

  /**
   * Throws unless the collections under `from` can move to `to`: 400 when a new name cannot be
   * a folder name, 409 when collections or a folder are already there (a move never merges).
   */
  checkRelocation(from: readonly string[], to: readonly string[]): void {
    if (from.length !== to.length || to.length < 1 || to.length > LEVELS.length) throw new Error('a move stays on one level (org, site or unit)');
    to.forEach((name, i) => validateScopeName(LEVELS[i]!, name));
    if (this.under(to).length > 0) throw conflict(`DUPLICATE: collections already exist under ${to.join('/')}; a rename or move does not merge into them`);
    if (fs.existsSync(this.levelDir(to))) throw conflict(`DUPLICATE: the folder for ${to.join('/')} already exists in the data dir; a rename or move does not merge into it`);
  }

  /**
   * Moves every collection under an org, site or unit to new names (a rename, or a move under
   * another parent): owning workers close the collections, the folder moves in one rename,
   * meta.json is rewritten, new owners open them. All or nothing: a step that fails undoes the
   * steps before it (and the error is thrown). Returns the [old id, new id] pairs.
   */
  async relocate(from: readonly string[], to: readonly string[]): Promise<Array<[string, string]>> {
    const affected = this.under(from);
    if (affected.length === 0 || from.every((name, i) => name === to[i])) return [];
    this.checkRelocation(from, to);
    const now = Date.now();
    const moves = affected.map((before) => {
      const after: CollectionRecord = { ...before, updatedAt: now };
      to.forEach((name, i) => (after[LEVELS[i]!] = name));
      return { before, after };
    });
    const source = this.levelDir(from);
    const target = this.levelDir(to);
    const undo: Array<() => unknown> = [];
    try {
      for (const { before } of moves) {
        await this.call(OP.CLOSE_COLLECTION, before);
        undo.push(() => this.call(OP.OPEN_COLLECTION, before));
      }
      if (fs.mkdirSync(path.dirname(target), { recursive: true }) !== undefined) undo.push(() => this.removeEmptyParents(path.dirname(target)));
      fs.renameSync(source, target);
      undo.push(() => fs.renameSync(target, source));
      for (const { before, after } of moves) {
        // meta.json carries the names; rewrite it in the moved folder before the new owner opens it.
        this.writeRecord(after, after);
        undo.push(() => this.writeRecord(after, before));
      }
      for (const { after } of moves) {
        await this.call(OP.OPEN_COLLECTION, after);
        undo.push(() => this.call(OP.CLOSE_COLLECTION, after));
      }
    } catch (err) {
      for (const step of undo.reverse()) {
        try {
          await step();
        } catch (undoErr) {
          this.log.error({ err: undoErr, from: source, to: target }, 'could not undo a step of a failed collection move');
        }
      }
      throw err;
    }
    for (const { before, after } of moves) {
      this.records.delete(idOf(before));
      this.records.set(idOf(after), after);
    }
    this.removeEmptyParents(path.dirname(source));
    this.log.info({ from: source, to: target, collections: moves.length }, 'collections moved');
    return moves.map(({ before, after }) => [idOf(before), idOf(after)]);
  }

  private async call(op: typeof OP.OPEN_COLLECTION | typeof OP.CLOSE_COLLECTION, record: CollectionRecord): Promise<void> {
    const id = idOf(record);
    await this.shards.shardFor(id).call({ op, id });
  }

  /** Writes `record` into the meta.json of the collection folder of `at`. */
  private writeRecord(at: CollectionRecord, record: CollectionRecord): void {
    const metaFile = path.join(collectionDir(this.dataDir, at), 'meta.json');
    const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as { collection: CollectionRecord };
    meta.collection = record;
    const tmp = `${metaFile}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(meta));
    fs.renameSync(tmp, metaFile);
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
