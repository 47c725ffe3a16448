/**
 * The few file-system moves that need care to survive a crash or power loss: complete writes
 * and reads (a syscall may move fewer bytes than asked), atomic replacement through a temporary
 * name, and fsync of the directory after a name appears, changes or disappears (the file's own
 * fsync does not make its directory entry durable).
 */

import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../shared/file-modes.js';
import { fsyncDir } from '../shared/fsync-dir.js';


export { fsyncDir } from '../shared/fsync-dir.js';

/** Writes all of bytes at the file's end (fd opened for append) or at `position`. */
export function writeFully(fd: number, bytes: Uint8Array, position: number | null = null): void {
  let done = 0;
  while (done < bytes.length) {
    const n = fs.writeSync(fd, bytes, done, bytes.length - done, position === null ? null : position + done);
    if (n <= 0) throw new Error(`write returned ${n}`);
    done += n;
  }
}

/** Reads up to `length` bytes at `position` into buf[offset..]; fewer only at the end of the file. */
export function readFully(fd: number, buf: Uint8Array, offset: number, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const n = fs.readSync(fd, buf, offset + done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** Replaces `file` with `content` atomically: tmp, fsync, rename, fsync of the folder. */
export function writeFileDurably(file: string, content: string | Uint8Array): void {
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    writeFully(fd, typeof content === 'string' ? Buffer.from(content, 'utf8') : content, 0);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  fsyncDir(path.dirname(file));
}

/** mkdir -p that fsyncs the parent of every folder it creates, so the new path is durable. */
export function makeDirsDurably(dir: string): void {
  const missing: string[] = [];
  let p = path.resolve(dir);
  while (!fs.existsSync(p)) {
    missing.push(p);
    const parent = path.dirname(p);
    if (parent === p) break;
    p = parent;
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    const created = missing[i]!;
    try {
      fs.mkdirSync(created, PRIVATE_DIR_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    fsyncDir(path.dirname(created));
  }
}

/** Removes a file if it is there; true when it was. */
export function removeIfPresent(file: string): boolean {
  try {
    fs.unlinkSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** A hard link of `from` at `to` (one inode, no bytes copied); where links are impossible, a copy of its first `size` bytes. */
export function linkOrCopy(from: string, to: string, size: number): void {
  try {
    fs.linkSync(from, to);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EMLINK') throw err;
  }
  const source = fs.openSync(from, 'r');
  const target = fs.openSync(to, 'w', PRIVATE_FILE_MODE);
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (let at = 0; at < size; ) {
      const n = fs.readSync(source, chunk, 0, Math.min(chunk.length, size - at), at);
      if (n === 0) break;
      fs.writeSync(target, chunk, 0, n);
      at += n;
    }
  } finally {
    fs.closeSync(source);
    fs.closeSync(target);
  }
}
