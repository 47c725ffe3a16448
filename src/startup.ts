// What must hold before the service touches its data: a usable data dir that no other process
// serves. Failures are StartupErrors, printed as one line naming the problem (main.ts), never a
// stack trace.

import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** Less free space than this and the service cannot even open its metadata. */
const MIN_START_FREE_BYTES = 16 * 1024 * 1024;

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

/** The data dir exists (or is made), is a folder, can be written, and its volume is not full. */
export function checkDataDir(dataDir: string): void {
  let stat: fs.Stats | null = null;
  try {
    stat = fs.statSync(dataDir);
  } catch {
    // made below
  }
  if (stat && !stat.isDirectory()) throw new StartupError(`the data dir ${dataDir} is a file, not a folder (dataDir / HISTORIAN_DATA_DIR)`);
  if (!stat) {
    try {
      fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StartupError(`cannot create the data dir ${dataDir}: ${reason(err)}`);
    }
  }
  const probe = path.join(dataDir, `.write-test-${process.pid}`);
  try {
    fs.writeFileSync(probe, 'ok');
    fs.rmSync(probe);
  } catch (err) {
    throw new StartupError(`cannot write in the data dir ${dataDir}: ${reason(err)}`);
  }
  const volume = fs.statfsSync(dataDir);
  const free = volume.bavail * volume.bsize;
  if (free < MIN_START_FREE_BYTES) throw new StartupError(`the volume of the data dir ${dataDir} is full (${free} bytes free)`);
}

export interface DataDirLock {
  release(): void;
}

/**
 * One process per data dir. The lock is an exclusive SQLite transaction on `service.lock`,
 * held for the life of the process: an OS lock (fcntl) that the kernel drops when the process
 * dies, kill -9 included, so there is no stale lock to clean up. The holder's pid goes in
 * `service.pid` beside it, for the message a second start prints.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const lockFile = path.join(dataDir, 'service.lock');
  const pidFile = path.join(dataDir, 'service.pid');
  const db = new Database(lockFile, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
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
  fs.writeFileSync(pidFile, String(process.pid));
  return {
    release() {
      try {
        fs.rmSync(pidFile, { force: true });
        db.exec('ROLLBACK');
      } catch {
        // exiting anyway
      }
      db.close();
    },
  };
}

export const USAGE = `Usage: node dist/src/main.js [--help] [--version]

Starts the historian: HTTPS on server.port (3030), data under dataDir (./data).
Settings: config/default.json, then the JSON file named by HISTORIAN_CONFIG, then
HISTORIAN_PORT, HISTORIAN_DATA_DIR, HISTORIAN_CONFIG, HISTORIAN_LOG_LEVEL,
HISTORIAN_ADMIN_EMAIL, HISTORIAN_ADMIN_PASSWORD (see README.md).

  --help      print this and exit
  --version   print the version and exit
`;

/** What the command line asks for; anything else is a StartupError. */
export function parseArgs(argv: readonly string[]): 'run' | 'help' | 'version' {
  if (argv.length === 0) return 'run';
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) return 'help';
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) return 'version';
  throw new StartupError(`unknown argument ${JSON.stringify(argv.join(' '))}; try --help`);
}
