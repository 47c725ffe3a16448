import fs from 'node:fs';

/**
 * Makes a directory's entries durable: a new, renamed or removed name survives a power loss only
 * once its directory is fsynced (the file's own fsync does not cover its directory entry).
 */
export function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
