// Content files of blobs and attachments, named by the sha256 of their bytes:
//
//   <dataDir>/blobs/sha256/<first two hex digits>/<sha256>   one file per distinct content
//   <dataDir>/blobs/tmp/<random>.part                          uploads under way
//
// An upload streams into a temporary file (hashing as it goes), is fsynced, and only then renamed
// to its content name, so a content file is always whole. Nothing from a request (a blob key, an
// attachment name) ever becomes part of a path. Which contents are still referred to is the
// metadata store's business (blobs.ts); this file only moves bytes.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { fsyncDir } from '../../shared/fsync-dir.js';
import type { ContentFile } from './api.js';

/** An upload written to its temporary file, fsynced, not placed yet. */
export interface Received {
  tmpPath: string;
  sha256: string;
  size: number;
}

/** Bytes gathered before one write to the temporary file. */
const WRITE_BATCH_BYTES = 256 * 1024;

const SHA256 = /^[0-9a-f]{64}$/;
/** Where content files are, relative to the data dir (a backup archive keeps the same paths). */
const CONTENT_FOLDER = path.join('blobs', 'sha256');

export class ContentStore {
  readonly root: string;
  private readonly tmpDir: string;
  private readonly contentDir: string;

  constructor(dataDir: string) {
    this.root = path.join(dataDir, 'blobs');
    this.tmpDir = path.join(this.root, 'tmp');
    this.contentDir = path.join(dataDir, CONTENT_FOLDER);
  }

  /** Creates the folders and removes uploads a stop or crash left half-written. */
  open(): void {
    fs.mkdirSync(this.tmpDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.mkdirSync(this.contentDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    for (const name of fs.readdirSync(this.tmpDir)) fs.rmSync(path.join(this.tmpDir, name), { force: true });
  }

  pathOf(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return path.join(this.contentDir, sha256.slice(0, 2), sha256);
  }

  /**
   * Writes `body` to a new temporary file as it arrives, hashing it, and fsyncs it. Each write
   * is awaited before more is taken from `body`, so a body that arrives faster than the disk
   * takes it waits in its source (which pauses the socket), not here. Whatever fails (the body's
   * own 413, the client going away, the disk, `admit` refusing a chunk), the temporary file is
   * removed and the error thrown. `admit` sees each chunk's size before it is kept.
   */
  async receive(body: AsyncIterable<Uint8Array>, admit: (bytes: number) => void = () => {}): Promise<Received> {
    const tmpPath = path.join(this.tmpDir, `${crypto.randomBytes(12).toString('hex')}.part`);
    let file: fs.promises.FileHandle;
    try {
      file = await fs.promises.open(tmpPath, 'wx', PRIVATE_FILE_MODE);
    } catch (err) {
      await fs.promises.rm(tmpPath, { force: true });
      throw err;
    }
    const hash = crypto.createHash('sha256');
    let size = 0;
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    const flush = async () => {
      if (batchBytes === 0) return;
      const buffers = batch;
      batch = [];
      batchBytes = 0;
      await file.writev(buffers);
    };
    try {
      for await (const chunk of body) {
        admit(chunk.byteLength);
        hash.update(chunk);
        size += chunk.byteLength;
        batch.push(chunk);
        batchBytes += chunk.byteLength;
        if (batchBytes >= WRITE_BATCH_BYTES) await flush();
      }
      await flush();
      await file.sync();
      await file.close();
    } catch (err) {
      await file.close().catch(() => {});
      await fs.promises.rm(tmpPath, { force: true });
      throw err;
    }
    return { tmpPath, sha256: hash.digest('hex'), size };
  }

  /**
   * Moves a received upload to its content name, synchronously (callers run it and the metadata
   * rows in one turn of the event loop, so no removal of the same content can come in between).
   * When the content is there already, the upload is dropped instead: identical bytes are kept once.
   */
  place(received: Received): void {
    const target = this.pathOf(received.sha256);
    if (fs.existsSync(target)) {
      this.discard(received);
      return;
    }
    const dir = path.dirname(target);
    fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    fs.renameSync(received.tmpPath, target);
    fsyncDir(dir);
  }

  /** Removes an upload that will not be kept. */
  discard(received: Received): void {
    fs.rmSync(received.tmpPath, { force: true });
  }

  /** Removes a content file (nothing refers to it any more). */
  remove(sha256: string): void {
    fs.rmSync(this.pathOf(sha256), { force: true });
  }

  /**
   * Hard-links every content file into `dir` under its path relative to the data dir; a copy when
   * `dir` is on another file system. Files removed meanwhile are left out (a caller that needs
   * them all holds removals, blobs.ts).
   */
  async linkInto(dir: string): Promise<ContentFile[]> {
    const out: ContentFile[] = [];
    if (!fs.existsSync(this.contentDir)) return out; // the blobs subsystem never started here
    for (const sha256 of [...this.stored()]) {
      const relative = path.join(CONTENT_FOLDER, sha256.slice(0, 2), sha256);
      const target = path.join(dir, relative);
      try {
        await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
        try {
          await fs.promises.link(this.pathOf(sha256), target);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
          await fs.promises.copyFile(this.pathOf(sha256), target);
        }
        out.push({ path: relative.split(path.sep).join('/'), sha256, size: (await fs.promises.stat(target)).size });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return out;
  }

  /** Moves the content files under `dir` (laid out as linkInto writes them) that this store lacks into it; how many. */
  adopt(dir: string): number {
    const from = path.join(dir, CONTENT_FOLDER);
    let prefixes: string[];
    try {
      prefixes = fs.readdirSync(from);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    let moved = 0;
    for (const prefix of prefixes) {
      if (!/^[0-9a-f]{2}$/.test(prefix)) continue;
      const targetDir = path.join(this.contentDir, prefix);
      let movedHere = false;
      for (const name of fs.readdirSync(path.join(from, prefix))) {
        if (!SHA256.test(name) || !name.startsWith(prefix) || fs.existsSync(path.join(targetDir, name))) continue;
        fs.mkdirSync(targetDir, { recursive: true, mode: PRIVATE_DIR_MODE });
        fs.renameSync(path.join(from, prefix, name), path.join(targetDir, name));
        movedHere = true;
        moved++;
      }
      if (movedHere) fsyncDir(targetDir);
    }
    return moved;
  }

  /** The sha256 of every content file on disk (for the sweep at start). */
  *stored(): Generator<string> {
    for (const prefix of fs.readdirSync(this.contentDir)) {
      const dir = path.join(this.contentDir, prefix);
      if (!fs.statSync(dir).isDirectory()) continue;
      for (const name of fs.readdirSync(dir)) if (SHA256.test(name)) yield name;
    }
  }
}
