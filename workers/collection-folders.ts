/**
 * The folders that can be collections: four levels below `<dataDir>/ts`, one encoded scope name
 * each. Recovery (ShardStore) and `historian check` (check-worker.ts) walk them with this one
 * walker, so the check looks at exactly the folders the service would open.
 */

import fs from 'node:fs';
import path from 'node:path';
import { decodeScopeName } from '../shared/scope-path.js';

export interface CollectionFolderVisitor {
  /** A folder four levels down; `names` are its decoded organization, site, unit and grid. */
  leaf(dir: string, names: readonly string[]): void;
  /** A folder on the way whose name is not an encoded scope name: the service passes it over. */
  undecodable(dir: string): void;
}

/** Visits every folder four levels below `<dataDir>/ts`, in name order. */
export function walkCollectionFolders(dataDir: string, visitor: CollectionFolderVisitor): void {
  const walk = (dir: string, names: string[]): void => {
    if (names.length === 4) return visitor.leaf(dir, names);
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (!entry.isDirectory()) continue;
      let name: string;
      try {
        name = decodeScopeName(entry.name);
      } catch {
        visitor.undecodable(path.join(dir, entry.name));
        continue;
      }
      walk(path.join(dir, entry.name), [...names, name]);
    }
  };
  walk(path.join(dataDir, 'ts'), []);
}
