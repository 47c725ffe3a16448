// The data dir holds password hashes (metadata.sqlite and its -wal/-shm), the
// token signing secret, the CA and server keys and every stored value, so only
// the account the service runs as may read it: directories 0700, files 0600.
//
// Three layers, because each misses something the others catch:
// - the process umask (0077) covers every file any thread creates, including
//   SQLite's own -wal/-shm/-journal and the storage workers' files (a umask is
//   per process, so worker threads share it);
// - explicit modes where the service creates files (shared/file-modes.ts);
// - at start, a data dir made by an earlier version (0755/0644) is tightened
//   and the start log names what was changed.

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from './log.js';
import { PRIVATE_DIR_MODE } from '../shared/file-modes.js';

/** Strips group and other bits from every file the process creates from now on. */
export const PROCESS_UMASK = 0o077;

const GROUP_OR_OTHER = 0o077;

type WarnLogger = Pick<Logger, 'warn'>;

/** Sets the umask, creates the data dir (0700) if needed and tightens what an older version left readable. */
export function prepareDataDir(dataDir: string, log: WarnLogger): void {
  process.umask(PROCESS_UMASK);
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const tightened: string[] = [];
  const failed: Array<{ path: string; code: string | undefined }> = [];
  const tighten = (entry: string, stat: fs.Stats) => {
    try {
      fs.chmodSync(entry, stat.mode & 0o777 & ~GROUP_OR_OTHER);
      tightened.push(entry);
    } catch (err) {
      failed.push({ path: entry, code: (err as NodeJS.ErrnoException).code });
    }
  };

  const top = fs.statSync(dataDir); // the data dir itself may be a symbolic link to another disk
  for (const name of fs.readdirSync(dataDir)) tightenTree(path.join(dataDir, name), tighten);
  if ((top.mode & GROUP_OR_OTHER) !== 0) tighten(dataDir, top);

  if (tightened.length > 0) {
    // Shallow entries first: they say more than the thousandth day file.
    tightened.sort((a, b) => a.split(path.sep).length - b.split(path.sep).length);
    log.warn(
      { dataDir, count: tightened.length, paths: tightened.slice(0, 20).map((p) => path.relative(dataDir, p) || '.') },
      'data dir entries were open to other accounts; removed their group and other permissions',
    );
  }
  if (failed.length > 0) {
    log.warn({ dataDir, failed: failed.slice(0, 20) }, 'could not make these data dir entries private; check their owner');
  }
}

/**
 * Tightens `entry` and, for a folder, what is inside it. A folder that is
 * already private was tightened on an earlier start (a folder's mode is changed
 * only after its contents), so its contents are not walked again: a time-series
 * tree of many thousand files costs one stat per start. Symbolic links are
 * left alone (chmod would change their target, which may be outside the dir).
 */
function tightenTree(entry: string, tighten: (entry: string, stat: fs.Stats) => void): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(entry);
  } catch {
    return; // removed meanwhile
  }
  if (stat.isSymbolicLink() || (stat.mode & GROUP_OR_OTHER) === 0) return;
  if (stat.isDirectory()) {
    for (const name of fs.readdirSync(entry)) tightenTree(path.join(entry, name), tighten);
  }
  tighten(entry, stat);
}
