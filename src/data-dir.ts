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
//
// claimDataDir is the one way in: umask first (so nothing it makes is ever
// readable by others), then the checks a start can fail on, then the lock that
// keeps a second process out, and only then the tightening walk.

import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from './log.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../shared/file-modes.js';
import { StartupError } from './startup.js';

/** Strips group and other bits from every file the process creates from now on. */
export const PROCESS_UMASK = 0o077;

const GROUP_OR_OTHER = 0o077;

type WarnLogger = Pick<Logger, 'warn'>;

/**
 * Takes the data dir for this process: sets the umask, checks the dir (made 0700 if missing),
 * locks it, and tightens what an older version left readable. Throws StartupError naming the
 * problem; the lock is the caller's to release at exit.
 */
export function claimDataDir(dataDir: string, log: WarnLogger): DataDirLock {
  process.umask(PROCESS_UMASK);
  checkDataDir(dataDir, log);
  const lock = lockDataDir(dataDir);
  try {
    tightenDataDir(dataDir, log);
  } catch (err) {
    lock.release();
    throw err;
  }
  return lock;
}

/** Strips group and other bits from what an older version left readable, and logs what changed. */
function tightenDataDir(dataDir: string, log: WarnLogger): void {
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

/** Less free space than this and the service cannot even open its metadata. */
const MIN_START_FREE_BYTES = 16 * 1024 * 1024;

/**
 * Space kept back for a start on a full volume: SQLite needs a few pages to open the metadata
 * store (its -shm and -wal files), the storage workers to recover (about 40 KiB in a test).
 * Made at a start with room to spare, given back by a start that finds the volume full.
 */
const RESERVE_FILE = 'disk-reserve.bin';
const RESERVE_BYTES = 4 * 1024 * 1024;

const freeOf = (dir: string): number => {
  const volume = fs.statfsSync(dir);
  return volume.bavail * volume.bsize;
};

/** Makes the reserve file when the volume has room for it and a start besides; nothing when it cannot. */
function keepReserve(dataDir: string, log: WarnLogger): void {
  const file = path.join(dataDir, RESERVE_FILE);
  if (fs.existsSync(file) || freeOf(dataDir) < MIN_START_FREE_BYTES + RESERVE_BYTES) return;
  try {
    // Written, not sparse: a sparse file would hold back nothing.
    const block = Buffer.alloc(1024 * 1024);
    const fd = fs.openSync(file, 'wx', PRIVATE_FILE_MODE);
    try {
      for (let written = 0; written < RESERVE_BYTES; written += block.length) fs.writeSync(fd, block);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    fs.rmSync(file, { force: true });
    log.warn({ dataDir, err: String(err) }, 'could not make the disk reserve file');
  }
}

const REASONS: Record<string, string> = {
  EROFS: 'it is on a read-only file system',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOSPC: 'its volume is full',
  EDQUOT: 'the disk quota is used up',
  ENOTDIR: 'a part of its path is a file',
  ENOENT: 'a part of its path does not exist',
};

function reason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  return REASONS[code] ?? ((err as Error)?.message || String(err));
}

/**
 * The data dir exists (or is made), is a folder, can be written, and its volume is not full. A
 * full volume under a data dir that already holds a metadata store is no reason to refuse a
 * start: the service then starts read-only (reads, downloads and deletes work; the disk guard
 * answers writes 507 and /svcapi/health says why), which is how an operator makes room.
 */
function checkDataDir(dataDir: string, log: WarnLogger): void {
  let stat: fs.Stats | null = null;
  try {
    stat = fs.statSync(dataDir);
  } catch {
    // made below
  }
  if (stat && !stat.isDirectory()) throw new StartupError(`the data dir ${dataDir} is a file, not a folder (dataDir / HISTORIAN_DATA_DIR)`);
  if (!stat) {
    try {
      fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    } catch (err) {
      throw new StartupError(`cannot create the data dir ${dataDir}: ${reason(err)}`);
    }
  }
  const existing = fs.existsSync(path.join(dataDir, 'metadata.sqlite'));
  const reserve = path.join(dataDir, RESERVE_FILE);
  if (existing && fs.existsSync(reserve) && freeOf(dataDir) < MIN_START_FREE_BYTES) {
    fs.rmSync(reserve);
    log.warn({ dataDir, file: reserve, bytes: RESERVE_BYTES }, 'the volume of the data dir is full: gave back the disk reserve so the service can open its stores');
  }
  const probe = path.join(dataDir, `.write-test-${process.pid}`);
  try {
    fs.writeFileSync(probe, 'ok');
    fs.rmSync(probe);
  } catch (err) {
    fs.rmSync(probe, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (!existing || (code !== 'ENOSPC' && code !== 'EDQUOT')) throw new StartupError(`cannot write in the data dir ${dataDir}: ${reason(err)}`);
  }
  const free = freeOf(dataDir);
  if (free >= MIN_START_FREE_BYTES) {
    keepReserve(dataDir, log);
    return;
  }
  if (!existing) throw new StartupError(`the volume of the data dir ${dataDir} is full (${free} bytes free)`);
  log.warn({ dataDir, freeBytes: free }, 'the volume of the data dir is full: starting read-only (writes answer 507 until there is room above storage.minFreeBytes; deleting blobs or old data makes room)');
}

export interface DataDirLock {
  release(): void;
}

/** Where the process holding a data dir answers (`service.json` beside the lock), for the historian command. */
export interface ServiceAddress {
  pid: number;
  /** https://host:port, with a loopback host when the service listens on every address. */
  url: string;
  /** The CA the service's certificate chains to (made in the data dir), or null for configured certificates. */
  caFile: string | null;
}

const ADDRESS_FILE = 'service.json';

/** Written once the service listens; the lock's release removes it. */
export function recordServiceAddress(dataDir: string, address: ServiceAddress): void {
  const file = path.join(dataDir, ADDRESS_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(address)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export type DataDirState =
  | { held: false }
  /** `address` is null while the holder is still starting (or is not a service: another command). */
  | { held: true; pid: number | null; address: ServiceAddress | null };

/**
 * Whether a process holds `dataDir`, and where it answers. Takes the lock for an instant when it
 * is free (and releases it at once); makes nothing in a folder that has no lock file yet.
 */
export function probeDataDir(dataDir: string): DataDirState {
  const lockFile = path.join(dataDir, 'service.lock');
  if (!fs.existsSync(lockFile)) return { held: false };
  const db = new Database(lockFile, { timeout: 0, fileMustExist: true });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('ROLLBACK');
    return { held: false };
  } catch (err) {
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
  } finally {
    db.close();
  }
  let pid: number | null = null;
  let address: ServiceAddress | null = null;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, 'service.pid'), 'utf8')) || null;
  } catch {
    // the holder has not written it yet
  }
  try {
    const recorded = JSON.parse(fs.readFileSync(path.join(dataDir, ADDRESS_FILE), 'utf8')) as ServiceAddress;
    if (recorded.pid === pid && typeof recorded.url === 'string') address = recorded;
  } catch {
    // not listening yet, or not a service
  }
  return { held: true, pid, address };
}

/**
 * One process per data dir. The lock is an exclusive SQLite transaction on `service.lock`,
 * held for the life of the process: an OS lock (fcntl) that the kernel drops when the process
 * dies, kill -9 included, so there is no stale lock to clean up. The holder's pid goes in
 * `service.pid` beside it, for the message a second start prints.
 */
function lockDataDir(dataDir: string): DataDirLock {
  const lockFile = path.join(dataDir, 'service.lock');
  const pidFile = path.join(dataDir, 'service.pid');
  const db = new Database(lockFile, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // The transaction writes nothing: with no journal file it needs no byte of a full volume.
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    let holder = 'another process';
    try {
      holder = `process ${Number(fs.readFileSync(pidFile, 'utf8'))}`;
    } catch {
      // the holder has not written its pid yet
    }
    throw new StartupError(`the data dir ${dataDir} is in use by ${holder}; two processes must never serve one data dir`);
  }
  try {
    fs.writeFileSync(pidFile, String(process.pid));
  } catch (err) {
    // Only for the message a second start prints; a full volume must not stop this one.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOSPC' && code !== 'EDQUOT') throw err;
  }
  return {
    release() {
      try {
        fs.rmSync(pidFile, { force: true });
        fs.rmSync(path.join(dataDir, ADDRESS_FILE), { force: true });
        db.exec('ROLLBACK');
      } catch {
        // exiting anyway
      }
      db.close();
    },
  };
}
