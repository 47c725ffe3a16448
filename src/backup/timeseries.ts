// Time-series backups and restores (WIRE.md part 2 "Backup").
//
// - A backup is as of one instant (StoreMaintenance.backupMark): writes wait a moment, every
//   shard flushes and hard-links its files into a staging folder, writes go on; the day logs'
//   linked inodes are then cut to their length at that instant, hashed, and packed with a
//   manifest into one tar (sealed files are already compressed, so the tar is not).
// - Blob and attachment content files go in the same tar (`blobs/sha256/...`): the caller holds
//   their removal for the whole backup (BlobContents.hold), so every content that the metadata
//   store named at any moment of it is there, whether that store's backup was taken before or
//   after the instant of the time series. They are immutable (named by their sha256), so a link
//   is a consistent copy; one whose bytes no longer match its name fails the backup.
// - A restore unpacks and verifies the tar in a staging folder, then, with the workers detached,
//   swaps the ts folder (restore-marker.ts makes a crash mid-swap recoverable). Every
//   verification happens before anything live is touched: a file that fails one leaves the live
//   store as it was. Content files are added to the live content store (never removed from
//   it): the live metadata may still name its own, and content nothing names goes at the next
//   start. Adding them comes before the swap; a restore that fails after it leaves only such
//   harmless extra files.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import type { Job } from '../jobs/api.js';
import type { BlobContents } from '../files/api.js';
import type { StoreMaintenance } from '../storage/api.js';
import { badRequest } from '../../shared/errors.js';
import { isCollectionFileName } from '../../shared/collection-files.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { fsyncDir } from '../../shared/fsync-dir.js';
import { decodeScopeName, validateScope } from '../../shared/scope-path.js';
import { newBackupName, sha256Of, writeSidecar, type BackupFileInfo } from './files.js';
import { forgetPartial, notePartial } from './leftovers.js';
import { clearMarker, swapBack, swapIn, writeMarker, type RestoreMarker } from './restore-marker.js';

/**
 * The manifest of a time-series backup, its first tar entry. Format 2 is an archive with blob
 * content files among `files` (`blobs` counts them); one without any is still format 1.
 */
interface Manifest {
  format: 1 | 2;
  kind: 'timeseries';
  created_ms: number;
  files: Array<{ path: string; size: number; sha256: string }>;
  collections: Array<{ id: string; points: number; first_ms: number | null; last_ms: number | null }>;
  blobs?: number;
}

const MANIFEST = 'manifest.json';

export interface TimeseriesArchiveOptions {
  dataDir: string;
  maintenance: StoreMaintenance;
  /** The blob and attachment content files. */
  contents: BlobContents;
  /** The largest restore (bytes the tar claims to hold): backup.maxRestoreBytes. */
  maxRestoreBytes: number;
  /** A pause between the steps of a restore (debug.restoreStepDelayMs; tests kill or probe the service in it). */
  stepDelay(): Promise<void>;
  now(): number;
}

export class TimeseriesArchives {
  constructor(private readonly o: TimeseriesArchiveOptions) {}

  /**
   * Writes a timeseries backup into `dir`; progress goes from `from` to 1 of `job`. With
   * `blobs`, the content files go in too (the caller holds their removal from before the
   * metadata store's backup of the same run, if any).
   */
  async write(dir: string, job: Job, from: number, blobs: boolean): Promise<BackupFileInfo> {
    const createdMs = this.o.now();
    const name = newBackupName(dir, 'timeseries', createdMs);
    const staging = path.join(this.o.dataDir, `backup-staging-${job.id}`);
    const partial = path.join(dir, `${name}.partial`);
    notePartial(this.o.dataDir, partial);
    try {
      fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
      job.progress(from, 'timeseries: marking the instant of the backup');
      const mark = await this.o.maintenance.backupMark(staging);
      const contents = blobs ? await this.o.contents.linkInto(staging) : [];
      const count = mark.files.length + contents.length;
      const totalBytes = mark.files.reduce((n, f) => n + f.size, 0) + contents.reduce((n, f) => n + f.size, 0);
      let doneBytes = 0;
      const files: Manifest['files'] = [];
      const progress = (size: number) => {
        doneBytes += size;
        job.progress(from + (1 - from) * 0.5 * (doneBytes / Math.max(1, totalBytes)), `timeseries: checksums (${files.length} of ${count} files)`);
      };
      for (const file of mark.files) {
        const staged = path.join(staging, file.path);
        // A day log's link sees what was appended after the instant: keep the bytes before it.
        if (file.growing) await cutCopy(staged, file.size);
        files.push({ path: file.path, size: file.size, sha256: await sha256Of(staged) });
        progress(file.size);
      }
      for (const content of contents) {
        const actual = await sha256Of(path.join(staging, content.path));
        if (actual !== content.sha256) throw new Error(`blob content ${content.sha256} is damaged on disk (its bytes hash to ${actual}); the backup would carry it wrong`);
        files.push({ path: content.path, size: content.size, sha256: actual });
        progress(content.size);
      }
      // Format 1 while there is no content file, so a node of the previous version still takes a cluster's snapshot.
      const manifest: Manifest = { format: contents.length > 0 ? 2 : 1, kind: 'timeseries', created_ms: createdMs, files, collections: mark.collections, blobs: contents.length };
      fs.writeFileSync(path.join(staging, MANIFEST), JSON.stringify(manifest), { mode: PRIVATE_FILE_MODE });
      job.progress(from + (1 - from) * 0.5, `timeseries: packing ${count} files into ${name}`);
      // The tar is hashed as it is written (one pass over the data, not a second read).
      const hash = crypto.createHash('sha256');
      let size = 0;
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          size += chunk.length;
          done(null, chunk);
        },
      });
      await pipeline(
        tar.c({ cwd: staging, portable: true, noDirRecurse: true }, [MANIFEST, ...files.map((f) => f.path)]),
        counted,
        fs.createWriteStream(partial, { mode: PRIVATE_FILE_MODE }),
      );
      await fsyncFile(partial);
      fs.renameSync(partial, path.join(dir, name));
      fsyncDir(dir);
      const points = mark.collections.reduce((n, c) => n + c.points, 0);
      const info: BackupFileInfo = {
        file_name: name, kind: 'timeseries', size_bytes: size, created_ms: createdMs,
        sha256: hash.digest('hex'), collections: mark.collections.length, points, blobs: contents.length,
      };
      writeSidecar(dir, info);
      return info;
    } catch (err) {
      fs.rmSync(partial, { force: true });
      throw err;
    } finally {
      forgetPartial(this.o.dataDir, partial);
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }

  /** Replaces the time-series store by the archive `file` (verified against its manifest first). */
  async install(file: string, job: Job): Promise<{ message: string; collections: number; points: number; blobs: number }> {
    const dataDir = this.o.dataDir;
    const marker: RestoreMarker = { id: job.id, phase: 'prepared', staging: `restore-staging-${job.id}`, previous: `ts-before-restore-${job.id}` };
    const staging = path.join(dataDir, marker.staging);
    let markerWritten = false;
    try {
      const manifest = await this.unpackVerified(file, staging, job);
      job.progress(0.75, 'verified');
      await this.o.stepDelay();
      const blobs = manifest.files.filter((f) => isBlobPath(f.path)).length;
      const added = this.o.contents.adopt(staging);
      writeMarker(dataDir, marker);
      markerWritten = true;
      job.progress(0.8, 'swapping');
      const { collections } = await this.o.maintenance.withStoreDetached(async () => {
        writeMarker(dataDir, { ...marker, phase: 'swapping' });
        try {
          await swapIn(dataDir, marker, () => this.o.stepDelay());
        } catch (err) {
          swapBack(dataDir, marker);
          throw err;
        }
        writeMarker(dataDir, { ...marker, phase: 'committed' });
      });
      const points = manifest.collections.reduce((n, c) => n + c.points, 0);
      const contents = blobs > 0 ? `, ${blobs} blob contents (${added} not here before)` : '';
      return { message: `restored ${collections} collections, ${points} points${contents} from ${path.basename(file)}`, collections, points, blobs };
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
      fs.rmSync(path.join(dataDir, marker.previous), { recursive: true, force: true });
      if (markerWritten) clearMarker(dataDir);
    }
  }

  /** Unpacks a timeseries tar into `staging` and checks it against its manifest; 400 on any mismatch. */
  private async unpackVerified(file: string, staging: string, job: Job): Promise<Manifest> {
    const name = path.basename(file);
    // Entry names and sizes first, so nothing is written for a tar with paths out of place or too much in it.
    const entries = new Map<string, number>();
    const odd: string[] = [];
    let claimed = 0;
    try {
      await tar.t({
        file,
        strict: true,
        // Never throw in here: node-tar does not turn it into a rejection (it would be uncaught).
        onReadEntry: (entry) => {
          if (entry.type === 'File' || entry.type === 'OldFile') entries.set(entry.path, entry.size ?? 0);
          else if (entry.type !== 'Directory') odd.push(`${entry.path} (${entry.type})`);
          claimed += entry.size ?? 0;
        },
      });
    } catch (err) {
      throw failedVerification(name, `the tar cannot be read (${(err as Error).message})`);
    }
    if (odd.length > 0) throw failedVerification(name, `entry ${odd[0]} is not a plain file`);
    if (claimed > this.o.maxRestoreBytes) throw failedVerification(name, `it holds ${claimed} bytes, more than backup.maxRestoreBytes (${this.o.maxRestoreBytes})`);
    for (const entry of entries.keys()) {
      if (entry !== MANIFEST && !isArchivePath(entry)) throw failedVerification(name, `entry ${JSON.stringify(entry)} is not a file of the time-series store or a blob content`);
    }
    if (!entries.has(MANIFEST)) throw failedVerification(name, `it has no ${MANIFEST}`);
    fs.rmSync(staging, { recursive: true, force: true });
    fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
    job.progress(0.1, 'unpacking');
    try {
      await tar.x({ file, cwd: staging, strict: true, preservePaths: false, preserveOwner: false });
    } catch (err) {
      throw failedVerification(name, `the tar cannot be unpacked (${(err as Error).message})`);
    }
    let manifest: Manifest;
    try {
      manifest = JSON.parse(fs.readFileSync(path.join(staging, MANIFEST), 'utf8')) as Manifest;
    } catch (err) {
      throw failedVerification(name, `${MANIFEST} is not JSON (${(err as Error).message})`);
    }
    if ((manifest.format !== 1 && manifest.format !== 2) || manifest.kind !== 'timeseries' || !Array.isArray(manifest.files) || !Array.isArray(manifest.collections)) {
      throw failedVerification(name, `${MANIFEST} is not a format 1 or 2 time-series manifest`);
    }
    const listed = new Set<string>();
    let doneBytes = 0;
    const totalBytes = manifest.files.reduce((n, f) => n + (typeof f.size === 'number' ? f.size : 0), 0);
    for (const entry of manifest.files) {
      if (typeof entry?.path !== 'string' || !(isStorePath(entry.path) || (manifest.format >= 2 && isBlobPath(entry.path)))) {
        throw failedVerification(name, `${MANIFEST} lists ${JSON.stringify(entry?.path)}, not a file of the store`);
      }
      // A content file is named by its sha256: one whose recorded sum is another would be served under a wrong name.
      if (isBlobPath(entry.path) && entry.sha256 !== path.posix.basename(entry.path)) throw failedVerification(name, `${entry.path} is not named by its sha256 in ${MANIFEST}`);
      const staged = path.join(staging, entry.path);
      let size: number;
      try {
        size = fs.statSync(staged).size;
      } catch {
        throw failedVerification(name, `${entry.path} is listed in ${MANIFEST} but missing`);
      }
      if (size !== entry.size) throw failedVerification(name, `${entry.path} has ${size} bytes, ${MANIFEST} says ${entry.size}`);
      if ((await sha256Of(staged)) !== entry.sha256) throw failedVerification(name, `${entry.path} does not match its sha256 in ${MANIFEST}`);
      listed.add(entry.path);
      doneBytes += size;
      job.progress(0.1 + 0.6 * (doneBytes / Math.max(1, totalBytes)), 'verifying checksums');
    }
    for (const entry of entries.keys()) {
      if (entry !== MANIFEST && !listed.has(entry)) throw failedVerification(name, `${entry} is in the tar but not in ${MANIFEST}`);
    }
    fs.rmSync(path.join(staging, MANIFEST));
    return manifest;
  }
}

export function failedVerification(file: string, why: string) {
  return badRequest(`backup ${path.basename(file)} failed verification: ${why}`);
}

/** A file a timeseries archive may hold: of the store, or a blob content. */
function isArchivePath(entry: string): boolean {
  return isStorePath(entry) || isBlobPath(entry);
}

/** `blobs/sha256/<2 hex>/<sha256>`, as the content store lays them out (files/content-store.ts). */
function isBlobPath(entry: string): boolean {
  return /^blobs\/sha256\/([0-9a-f]{2})\/\1[0-9a-f]{62}$/.test(entry);
}

/** `ts/<org>/<site>/<unit>/<grid>/<file>` with encoded names, as the store lays them out. */
function isStorePath(entry: string): boolean {
  const parts = entry.split('/');
  if (parts.length !== 6 || parts[0] !== 'ts') return false;
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return false;
  try {
    const [organization, site, unit, grid] = parts.slice(1, 5).map(decodeScopeName);
    validateScope({ organization, site, unit, grid });
  } catch {
    return false;
  }
  return isCollectionFileName(parts[5]!);
}

/**
 * Replaces a hard link by a copy of its first `size` bytes (the day log goes on growing): a
 * kernel-side copy off the main thread, then cut to length.
 */
async function cutCopy(file: string, size: number): Promise<void> {
  const tmp = `${file}.cut`;
  await fs.promises.copyFile(file, tmp);
  await fs.promises.truncate(tmp, size);
  if ((await fs.promises.stat(tmp)).size !== size) throw new Error(`${file} is shorter than its marked ${size} bytes`);
  await fs.promises.rename(tmp, file);
}

/** fsync off the main thread (a large file's flush takes hundreds of milliseconds). */
export async function fsyncFile(file: string): Promise<void> {
  const handle = await fs.promises.open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
